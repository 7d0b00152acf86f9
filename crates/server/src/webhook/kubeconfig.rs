//! The kubeconfig files that point kube-apiserver at its authentication and authorization
//! webhooks (`--authentication-token-webhook-config-file`, `--authorization-webhook-config-file`,
//! an authorization configuration's `connectionInfo.kubeConfigFile`). Upstream reads them with
//! client-go's `clientcmd`: the current context names the cluster (the webhook's URL and whom to
//! trust) and the user (how the API server authenticates to it). Relative file paths are
//! relative to the kubeconfig's own directory, as `clientcmd` resolves them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use super::{ClientConfig, WebhookClient};

/// Where one webhook is and how to call it, as a kubeconfig's current context says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// `cluster.server`: the exact URL called (no API path is appended).
    pub server: String,
    /// `certificate-authority(-data)`: the roots trusted for the server (system roots if empty).
    pub ca: Vec<u8>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// `client-certificate(-data)` then `client-key(-data)`, in one PEM buffer.
    pub identity: Option<Vec<u8>>,
    /// `token` (or the contents of `tokenFile`).
    pub token: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct File {
    clusters: Vec<Named<Cluster>>,
    users: Vec<NamedUser>,
    contexts: Vec<Named<Context>>,
    #[serde(rename = "current-context")]
    current_context: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named<T: Default> {
    name: String,
    #[serde(alias = "cluster", alias = "context")]
    value: T,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct NamedUser {
    name: String,
    user: User,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: String,
    certificate_authority_data: String,
    insecure_skip_tls_verify: bool,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Context {
    cluster: String,
    user: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct User {
    client_certificate: String,
    client_certificate_data: String,
    client_key: String,
    client_key_data: String,
    token: String,
    #[serde(rename = "tokenFile")]
    token_file: String,
}

impl Target {
    /// Reads a kubeconfig file; `Err` says why it cannot be used (the server refuses to start).
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        Self::parse(&text, dir).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads a kubeconfig's text; relative paths are resolved against `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<Self, String> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if file.current_context.is_empty() {
            return Err("invalid configuration: no configuration has been provided".into());
        }
        let context = file
            .contexts
            .iter()
            .find(|c| c.name == file.current_context)
            .ok_or_else(|| {
                format!(
                    "context was not found for specified context: {}",
                    file.current_context
                )
            })?;
        let cluster = file
            .clusters
            .iter()
            .find(|c| c.name == context.value.cluster)
            .map(|c| &c.value)
            .ok_or_else(|| {
                format!(
                    "invalid configuration: context {:?} has no cluster {:?}",
                    file.current_context, context.value.cluster
                )
            })?;
        if cluster.server.is_empty() {
            return Err("invalid configuration: no server found for cluster".into());
        }
        let user = file
            .users
            .iter()
            .find(|u| u.name == context.value.user)
            .map(|u| &u.user);
        let resolve = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.into()
            } else {
                dir.join(p)
            }
        };
        let data_or_file = |data: &str, file: &str, what: &str| -> Result<Vec<u8>, String> {
            if !data.is_empty() {
                return base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|e| format!("{what}-data: {e}"));
            }
            if file.is_empty() {
                return Ok(Vec::new());
            }
            let path = resolve(file);
            std::fs::read(&path).map_err(|e| format!("reading {what} {}: {e}", path.display()))
        };
        let ca = data_or_file(
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
            "certificate-authority",
        )?;
        let mut target = Target {
            server: cluster.server.clone(),
            ca,
            insecure: cluster.insecure_skip_tls_verify,
            identity: None,
            token: None,
        };
        if let Some(u) = user {
            let cert = data_or_file(
                &u.client_certificate_data,
                &u.client_certificate,
                "client-certificate",
            )?;
            let key = data_or_file(&u.client_key_data, &u.client_key, "client-key")?;
            match (cert.is_empty(), key.is_empty()) {
                (true, true) => {}
                (false, false) => {
                    let mut pem = cert;
                    pem.push(b'\n');
                    pem.extend_from_slice(&key);
                    target.identity = Some(pem);
                }
                (false, true) => {
                    return Err(
                        "invalid configuration: client-cert-data and client-cert are both specified for user but client-key-data and client-key are missing".into(),
                    );
                }
                (true, false) => {
                    return Err(
                        "invalid configuration: client-key-data or client-key found for user but no client-cert-data or client-cert".into(),
                    );
                }
            }
            if !u.token.is_empty() {
                target.token = Some(u.token.clone());
            } else if !u.token_file.is_empty() {
                let path = resolve(&u.token_file);
                let token = std::fs::read_to_string(&path)
                    .map_err(|e| format!("reading tokenFile {}: {e}", path.display()))?;
                target.token = Some(token.trim().to_string());
            }
        }
        Ok(target)
    }

    /// A client calling the server with `timeout`, sending `?timeout=<timeout>` as client-go's
    /// REST client does.
    pub fn client(&self, timeout: Duration) -> Result<WebhookClient, String> {
        let nanos = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        let sep = if self.server.contains('?') { '&' } else { '?' };
        let query = format!("{sep}timeout={}", crd_core::time::format_go_duration(nanos));
        let cc = ClientConfig {
            url: Some(&self.server),
            service: None,
            ca_bundle: &self.ca,
            identity: self.identity.as_deref(),
            bearer_token: self.token.as_deref(),
            insecure: self.insecure,
            user_agent: Some(concat!("crd-apiserver/", env!("CARGO_PKG_VERSION"))),
        };
        WebhookClient::build(&cc, &HashMap::new(), timeout, &query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_context_names_the_server_and_the_credentials() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("ca.pem"), "CA").expect("ca");
        std::fs::write(dir.path().join("token"), "s3cret\n").expect("token");
        let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: authz\n  cluster:\n    server: https://127.0.0.1:9443/authorize\n    certificate-authority: ca.pem\n- name: other\n  cluster:\n    server: https://other\nusers:\n- name: apiserver\n  user:\n    tokenFile: token\ncontexts:\n- name: webhook\n  context:\n    cluster: authz\n    user: apiserver\ncurrent-context: webhook\n";
        let t = Target::parse(text, dir.path()).expect("parsed");
        assert_eq!(
            t,
            Target {
                server: "https://127.0.0.1:9443/authorize".into(),
                ca: b"CA".to_vec(),
                insecure: false,
                identity: None,
                token: Some("s3cret".into()),
            }
        );
        let data = base64::engine::general_purpose::STANDARD.encode("CERT");
        let key = base64::engine::general_purpose::STANDARD.encode("KEY");
        let text = format!(
            "clusters:\n- name: c\n  cluster:\n    server: https://h\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    client-certificate-data: {data}\n    client-key-data: {key}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
        );
        let t = Target::parse(&text, dir.path()).expect("parsed");
        assert!(t.insecure);
        assert_eq!(t.identity.as_deref(), Some(&b"CERT\nKEY"[..]));
    }

    #[test]
    fn unusable_files_are_refused_with_a_reason() {
        let dir = Path::new("/nonexistent");
        // (kubeconfig, error)
        let cases = [
            (
                "clusters: []\n",
                "invalid configuration: no configuration has been provided",
            ),
            (
                "current-context: x\n",
                "context was not found for specified context: x",
            ),
            (
                "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
                "invalid configuration: context \"x\" has no cluster \"c\"",
            ),
            (
                "clusters:\n- name: c\n  cluster: {}\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
                "invalid configuration: no server found for cluster",
            ),
            (
                "clusters:\n- name: c\n  cluster: {server: 'https://h', certificate-authority: ca.pem}\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
                "reading certificate-authority /nonexistent/ca.pem: No such file or directory (os error 2)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(Target::parse(text, dir), Err(want.to_string()), "{text}");
        }
    }
}
