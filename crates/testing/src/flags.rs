//! `Builder::flag`: the `crd-apiserver serve` flags a test most often changes, by their command
//! line names, so a test reads like the server's invocation. Anything else goes through
//! `Builder::configure`.

use std::path::PathBuf;

use crd_server::ServerConfig;

/// Applies `--name=value` to `config`; an unknown flag or a bad value is an error naming it.
pub(crate) fn apply(config: &mut ServerConfig, name: &str, value: &str) -> anyhow::Result<()> {
    let name = name.trim_start_matches('-');
    let list = || {
        value
            .split(',')
            .map(str::trim)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let number = || {
        value
            .parse::<usize>()
            .map_err(|e| anyhow::anyhow!("--{name}={value}: {e}"))
    };
    match name {
        "authorization-mode" => {
            config.authorization.modes = list();
            config.authorization.flags_set = true;
        }
        "authorization-policy-file" => {
            config.authorization.policy_file = Some(PathBuf::from(value));
        }
        "authorization-webhook-config-file" => {
            config.authorization.webhook.config_file = Some(PathBuf::from(value));
            config.authorization.flags_set = true;
        }
        "authorization-webhook-version" => config.authorization.webhook.version = value.into(),
        "authorization-config" => config.authorization.config_file = Some(PathBuf::from(value)),
        "authentication-token-webhook-config-file" => {
            config.token_webhook.config_file = Some(PathBuf::from(value));
        }
        "authentication-token-webhook-version" => config.token_webhook.version = value.into(),
        "anonymous-auth" => {
            config.anonymous_auth = value
                .parse()
                .map_err(|e| anyhow::anyhow!("--{name}={value}: {e}"))?;
            config.anonymous_auth_flag_set = true;
        }
        "token-auth-file" => config.token_file = Some(PathBuf::from(value)),
        "authentication-config" => config.authentication_config = Some(PathBuf::from(value)),
        "encryption-provider-config" => {
            config.encryption_provider_config = Some(PathBuf::from(value));
        }
        "request-timeout" => {
            let nanos = crd_core::time::parse_go_duration(value)
                .map_err(|e| anyhow::anyhow!("--{name}={value}: {e}"))?;
            config.limits.request_timeout = std::time::Duration::from_nanos(
                u64::try_from(nanos).map_err(|_| anyhow::anyhow!("--{name}={value}: negative"))?,
            );
        }
        "client-ca-file" => config.client_ca_file = Some(PathBuf::from(value)),
        "api-audiences" => config.api_audiences = list(),
        "service-account-issuer" => config.service_account.issuer = Some(value.to_string()),
        "service-account-key-file" => config.service_account.key_files.push(value.into()),
        "max-requests-inflight" => config.limits.max_requests_inflight = number()?,
        "max-mutating-requests-inflight" => {
            config.limits.max_mutating_requests_inflight = number()?;
        }
        "max-object-size" => config.limits.max_object_size = number()?,
        "audit-policy-file" => config.audit.policy_file = Some(PathBuf::from(value)),
        "runtime-config" => {
            config.runtime_config = crd_server::runtime_config::RuntimeConfig::parse(value)
                .map_err(|e| anyhow::anyhow!("--{name}={value}: {e}"))?;
        }
        other => {
            anyhow::bail!("--{other} is not a flag the harness sets; use Builder::configure for it")
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ServerConfig {
        crate::server::default_config(std::path::Path::new("/nonexistent"))
    }

    #[test]
    fn flags_set_their_fields() {
        let mut c = config();
        for (name, value) in [
            ("--authorization-mode", "ABAC, RBAC"),
            ("anonymous-auth", "false"),
            ("--max-object-size", "1024"),
            ("--api-audiences", "a,b"),
            ("--runtime-config", "apiextensions.k8s.io/v1beta1=true"),
            ("--request-timeout", "1m30s"),
            ("--authentication-config", "/etc/authn.yaml"),
        ] {
            apply(&mut c, name, value).unwrap();
        }
        assert_eq!(c.authorization.modes, ["ABAC", "RBAC"]);
        assert!(c.authorization.flags_set);
        assert!(!c.anonymous_auth);
        assert!(c.anonymous_auth_flag_set);
        assert_eq!(c.limits.request_timeout, std::time::Duration::from_secs(90));
        assert_eq!(
            c.authentication_config.as_deref(),
            Some(std::path::Path::new("/etc/authn.yaml"))
        );
        assert_eq!(c.limits.max_object_size, 1024);
        assert_eq!(c.api_audiences, ["a", "b"]);
        assert!(c.runtime_config.crd_v1beta1);
    }

    #[test]
    fn unknown_flags_and_bad_values_are_errors() {
        let mut c = config();
        for (name, value, message) in [
            (
                "--secure-port",
                "1",
                "--secure-port is not a flag the harness sets; use Builder::configure for it",
            ),
            (
                "--anonymous-auth",
                "no",
                "--anonymous-auth=no: provided string was not `true` or `false`",
            ),
            (
                "--max-object-size",
                "big",
                "--max-object-size=big: invalid digit found in string",
            ),
            (
                "--request-timeout",
                "soon",
                r#"--request-timeout=soon: time: invalid duration "soon""#,
            ),
        ] {
            assert_eq!(apply(&mut c, name, value).unwrap_err().to_string(), message);
        }
    }
}
