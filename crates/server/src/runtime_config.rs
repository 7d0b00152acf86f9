//! `--runtime-config`: which optional API group versions are served, parsed as kube-apiserver
//! parses it (`cliflag.ConfigurationMap`, then `resourceconfig.MergeAPIResourceConfigs`): a
//! comma-separated list of `key=value`, keys `api/all`, `api/ga`, `api/beta`, `api/alpha` or
//! `<group>/<version>[/<resource>]`, values Go booleans (an empty value is `true`).
//!
//! The one version it can turn on is `apiextensions.k8s.io/v1beta1` (CustomResourceDefinitions
//! as Kubernetes 1.16–1.21 served them), off by default. Every other registered group version
//! is always served, so setting one `true` changes nothing and setting one `false` is refused
//! rather than silently ignored.

/// The group versions this server serves besides the built-in kinds' rows (`crd_builtin`).
const FIXED: &[(&str, &str)] = &[
    ("apiextensions.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1beta1"),
    ("storagemigration.k8s.io", "v1alpha1"),
    ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
];

/// The group version `--runtime-config` turns on.
const CRD_V1BETA1: (&str, &str) = ("apiextensions.k8s.io", "v1beta1");

/// The optional APIs enabled by `--runtime-config`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// `apiextensions.k8s.io/v1beta1=true`: serve the v1beta1 CustomResourceDefinition API.
    pub crd_v1beta1: bool,
}

fn registered_group(group: &str) -> bool {
    FIXED.iter().any(|(g, _)| *g == group) || crd_builtin::KINDS.iter().any(|k| k.group == group)
}

fn registered_version(group: &str, version: &str) -> bool {
    FIXED.contains(&(group, version))
        || crd_builtin::KINDS
            .iter()
            .any(|k| k.group == group && k.version == version)
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl RuntimeConfig {
    /// Parses the flag's value; the error is kube-apiserver's message for the same input
    /// (or, for disabling an API this server always serves, why it is refused).
    ///
    /// # Errors
    /// An invalid key or value, a version not registered in a known group, or disabling an
    /// always-served API.
    pub fn parse(flag: &str) -> Result<Self, String> {
        let mut config = RuntimeConfig::default();
        let mut entries: Vec<(String, String)> = Vec::new();
        for item in flag.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            entries.push((key.trim().to_string(), value.trim().to_string()));
        }
        for matcher in ["api/all", "api/ga", "api/beta", "api/alpha"] {
            let Some((_, value)) = entries.iter().rev().find(|(k, _)| k == matcher) else {
                continue;
            };
            match value.as_str() {
                "true" => {
                    if matches!(matcher, "api/all" | "api/beta") {
                        config.crd_v1beta1 = true;
                    }
                }
                "false" => {
                    return Err(format!(
                        "{matcher}=false is not supported: crd-apiserver always serves its GA and built-in APIs"
                    ));
                }
                other => return Err(format!("invalid value {matcher}={other}")),
            }
        }
        for (key, value) in &entries {
            if ["api/all", "api/ga", "api/beta", "api/alpha"].contains(&key.as_str()) {
                continue;
            }
            let tokens: Vec<&str> = key.split('/').collect();
            if tokens.len() != 2 && tokens.len() != 3 {
                return Err(format!("runtime-config invalid key {key}"));
            }
            let (group, version) = (tokens[0], tokens[1]);
            if version.is_empty() {
                return Err(format!("runtime-config invalid key {key}"));
            }
            if !registered_group(group) {
                // kube-apiserver ignores groups it does not have.
                continue;
            }
            if !registered_version(group, version) {
                return Err(format!(
                    "group version {group}/{version} that has not been registered"
                ));
            }
            if let Some(resource) = tokens.get(2)
                && resource.to_lowercase() != *resource
            {
                return Err(format!(
                    "invalid key {key}: group/version/resource and resource is always lowercase plural, not {resource:?}"
                ));
            }
            let enabled = if value.is_empty() {
                true
            } else {
                parse_bool(value).ok_or_else(|| {
                    format!(
                        "invalid value of {key}: {value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
                    )
                })?
            };
            if (group, version) == CRD_V1BETA1 {
                config.crd_v1beta1 = enabled;
            } else if !enabled {
                return Err(format!(
                    "{key}=false is not supported: crd-apiserver always serves {group}/{version}"
                ));
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_kube_apiserver() {
        let on = Ok(RuntimeConfig { crd_v1beta1: true });
        let off = Ok(RuntimeConfig::default());
        let cases: &[(&str, Result<RuntimeConfig, String>)] = &[
            ("", off.clone()),
            ("apiextensions.k8s.io/v1beta1=true", on.clone()),
            ("apiextensions.k8s.io/v1beta1", on.clone()),
            (" apiextensions.k8s.io/v1beta1 = T ,", on.clone()),
            ("apiextensions.k8s.io/v1beta1=true,apiextensions.k8s.io/v1beta1=false", off.clone()),
            ("apiextensions.k8s.io/v1beta1/customresourcedefinitions=true", on.clone()),
            ("api/beta=true", on.clone()),
            ("api/all=true", on.clone()),
            ("api/ga=true", off.clone()),
            ("apps/v1=true,example.com/v9=false", off.clone()),
            (
                "apiextensions.k8s.io/v1beta1=yes",
                Err("invalid value of apiextensions.k8s.io/v1beta1: yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax".into()),
            ),
            (
                "apiextensions.k8s.io/v2=true",
                Err("group version apiextensions.k8s.io/v2 that has not been registered".into()),
            ),
            ("apiextensions.k8s.io", Err("runtime-config invalid key apiextensions.k8s.io".into())),
            ("a/b/c/d=true", Err("runtime-config invalid key a/b/c/d".into())),
            ("api/all=maybe", Err("invalid value api/all=maybe".into())),
            (
                "apiextensions.k8s.io/v1beta1/CRDs=true",
                Err("invalid key apiextensions.k8s.io/v1beta1/CRDs: group/version/resource and resource is always lowercase plural, not \"CRDs\"".into()),
            ),
            (
                "apps/v1=false",
                Err("apps/v1=false is not supported: crd-apiserver always serves apps/v1".into()),
            ),
        ];
        for (flag, want) in cases {
            assert_eq!(&RuntimeConfig::parse(flag), want, "{flag:?}");
        }
    }
}
