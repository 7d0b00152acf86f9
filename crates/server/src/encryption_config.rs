//! `--encryption-provider-config`: kube-apiserver's `EncryptionConfiguration` file, read and
//! checked at start-up (upstream's field errors), and turned into the [`Resolve`] of a
//! [`crd_storage::encryption::EncryptedStore`]: which storage keys' values go through which
//! providers. A key is mapped to its resource as the metrics map it (the kinds' key roots:
//! `/registry/secrets/...` is `secrets`, `/registry/deployments/...` `deployments.apps`; custom
//! resources by their `/registry/<group>/<plural>/` layout); the first `resources` entry naming
//! it (exactly, as `*.<group>`, `*.` for the core group, or `*.*`) gives its providers.

use std::sync::Arc;

use base64::Engine as _;
use crd_core::{ErrorList, FieldError, Path};
use crd_storage::encryption::{NamedKeys, Provider, Resolve, Transformer};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    // Checked by `config_file::decode`; declared for the strict decoding.
    #[serde(default, rename = "apiVersion")]
    _api_version: String,
    #[serde(default, rename = "kind")]
    _kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResourceConfig {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfig>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProviderConfig {
    identity: Option<Value>,
    aescbc: Option<Keys>,
    aesgcm: Option<Keys>,
    secretbox: Option<Keys>,
    kms: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Keys {
    #[serde(default)]
    keys: Vec<Key>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// Which resources a `resources` entry names.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Matcher {
    /// `*.*`.
    All,
    /// `*.<group>` (`*.` for the core group).
    Group(String),
    /// `<resource>` or `<resource>.<group>`.
    Resource { group: String, resource: String },
}

impl Matcher {
    fn parse(text: &str) -> Matcher {
        if text == "*.*" {
            return Matcher::All;
        }
        if let Some(group) = text.strip_prefix("*.") {
            return Matcher::Group(group.to_string());
        }
        match text.split_once('.') {
            Some((resource, group)) => Matcher::Resource {
                group: group.to_string(),
                resource: resource.to_string(),
            },
            None => Matcher::Resource {
                group: String::new(),
                resource: text.to_string(),
            },
        }
    }

    fn matches(&self, group: &str, resource: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Group(g) => g == group,
            Matcher::Resource {
                group: g,
                resource: r,
            } => g == group && r == resource,
        }
    }
}

/// The encryption configuration: its entries in order.
pub struct EncryptionConfig {
    entries: Vec<(Vec<Matcher>, Arc<Transformer>)>,
}

/// The key provider sizes upstream accepts.
const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
const SECRETBOX_KEY_SIZES: &[usize] = &[32];

impl EncryptionConfig {
    /// Reads a file's text (YAML or JSON, strictly). `Err` is upstream's message.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: File = crate::config_file::decode(
            text,
            "EncryptionConfiguration",
            &["apiserver.config.k8s.io/v1"],
        )
        .map_err(|e| format!("error while parsing file: {e}"))?;
        let mut errors = ErrorList::new();
        let root = Path::new("resources");
        if file.resources.is_empty() {
            errors.push(FieldError::required(
                &root,
                "at least one resources is required",
            ));
        }
        let mut entries = Vec::new();
        for (i, conf) in file.resources.iter().enumerate() {
            let r = root.index(i).child("resources");
            let p = root.index(i).child("providers");
            if conf.resources.is_empty() {
                errors.push(FieldError::required(
                    &r,
                    format!("at least one {} is required", r.as_str()),
                ));
            }
            if conf.providers.is_empty() {
                errors.push(FieldError::required(
                    &p,
                    format!("at least one {} is required", p.as_str()),
                ));
            }
            for (k, resource) in conf.resources.iter().enumerate() {
                if *resource != resource.to_lowercase() {
                    errors.push(FieldError::invalid(
                        &r.index(k),
                        resource.as_str(),
                        "resource name must be lowercase",
                    ));
                }
            }
            let mut providers = Vec::new();
            for (j, provider) in conf.providers.iter().enumerate() {
                let path = p.index(j);
                if let Some(p) = single_provider(provider, &path, &mut errors) {
                    providers.push(p);
                }
            }
            if let Some(t) = Transformer::new(providers) {
                entries.push((
                    conf.resources.iter().map(|r| Matcher::parse(r)).collect(),
                    Arc::new(t),
                ));
            }
        }
        if errors.is_empty() {
            Ok(EncryptionConfig { entries })
        } else {
            Err(format!(
                "error while validating encryption config: {}",
                errors.aggregate()
            ))
        }
    }

    /// The transformer of a resource: the first entry naming it.
    fn transformer(&self, group: &str, resource: &str) -> Option<Arc<Transformer>> {
        self.entries
            .iter()
            .find(|(matchers, _)| matchers.iter().any(|m| m.matches(group, resource)))
            .map(|(_, t)| t.clone())
    }

    /// Which transformer each storage key goes through: its resource is the one
    /// [`crate::metrics::key_group_resource`] names (the kinds' key roots, custom resources'
    /// `/registry/<group>/<plural>/`); keys outside `/registry/` are no resource's.
    pub fn resolve(self) -> Resolve {
        Arc::new(move |key: &str| {
            if !key.starts_with("/registry/") {
                return None;
            }
            let (group, resource) = crate::metrics::key_group_resource(key);
            self.transformer(group, resource)
        })
    }
}

/// One `providers[j]`: exactly one provider, with valid keys.
fn single_provider(p: &ProviderConfig, path: &Path, errors: &mut ErrorList) -> Option<Provider> {
    let set = [
        p.identity.is_some(),
        p.aescbc.is_some(),
        p.aesgcm.is_some(),
        p.secretbox.is_some(),
        p.kms.is_some(),
    ]
    .iter()
    .filter(|s| **s)
    .count();
    if set == 0 {
        errors.push(FieldError::invalid_printed(
            path,
            "{}",
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
        ));
        return None;
    }
    if set > 1 {
        errors.push(FieldError::invalid_printed(
            path,
            "{...}",
            "more than one provider specified in a single element, should split into different list elements",
        ));
        return None;
    }
    if p.kms.is_some() {
        errors.push(FieldError::forbidden(
            &path.child("kms"),
            "KMS providers are not supported by this server; use aescbc, aesgcm or secretbox",
        ));
        return None;
    }
    if p.identity.is_some() {
        return Some(Provider::Identity);
    }
    let (keys, name, sizes, make): (_, _, _, fn(NamedKeys) -> Provider) = if let Some(k) = &p.aescbc
    {
        (k, "aescbc", AES_KEY_SIZES, Provider::AesCbc)
    } else if let Some(k) = &p.aesgcm {
        (k, "aesgcm", AES_KEY_SIZES, Provider::AesGcm)
    } else {
        (
            p.secretbox.as_ref()?,
            "secretbox",
            SECRETBOX_KEY_SIZES,
            Provider::Secretbox,
        )
    };
    let kp = path.child(name).child("keys");
    if keys.keys.is_empty() {
        errors.push(FieldError::required(&kp, "at least one keys is required"));
        return None;
    }
    let before = errors.len();
    let mut out = Vec::new();
    for (i, key) in keys.keys.iter().enumerate() {
        let at = kp.index(i);
        if key.name.is_empty() {
            errors.push(FieldError::required(
                &at.child("name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errors.push(FieldError::required(
                &at.child("secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        let Ok(secret) = base64::engine::general_purpose::STANDARD.decode(&key.secret) else {
            errors.push(FieldError::invalid(
                &at.child("secret"),
                "REDACTED",
                "secrets must be base64 encoded",
            ));
            continue;
        };
        if !sizes.contains(&secret.len()) {
            errors.push(FieldError::invalid(
                &at.child("secret"),
                "REDACTED",
                format!(
                    "secret is not of the expected length, got {}, expected one of [{}]",
                    secret.len(),
                    sizes
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            ));
            continue;
        }
        out.push((key.name.clone(), secret));
    }
    (errors.len() == before).then(|| make(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn parse(body: &str) -> Result<EncryptionConfig, String> {
        EncryptionConfig::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n{body}"
        ))
    }

    /// Files in, upstream's validation message out.
    #[test]
    fn files_are_validated_as_upstream_validates_them() {
        let cases: &[(&str, &str)] = &[
            (
                "resources: []",
                "error while validating encryption config: resources: Required value: at least one resources is required",
            ),
            (
                "resources: [{resources: [secrets]}]",
                "error while validating encryption config: resources[0].providers: Required value: at least one resources[0].providers is required",
            ),
            (
                "resources: [{resources: [Secrets], providers: [{identity: {}}]}]",
                r#"error while validating encryption config: resources[0].resources[0]: Invalid value: "Secrets": resource name must be lowercase"#,
            ),
            (
                "resources: [{resources: [secrets], providers: [{aescbc: {keys: [{name: k, secret: 'AAEC'}]}}]}]",
                r#"error while validating encryption config: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 3, expected one of [16 24 32]"#,
            ),
            (
                "resources: [{resources: [secrets], providers: [{secretbox: {keys: [{name: k, secret: 'not base64!'}]}}]}]",
                r#"error while validating encryption config: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded"#,
            ),
            (
                "resources: [{resources: [secrets], providers: [{aesgcm: {keys: []}}]}]",
                "error while validating encryption config: resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required",
            ),
            (
                "resources: [{resources: [secrets], providers: [{identity: {}, aescbc: {keys: []}}]}]",
                "error while validating encryption config: resources[0].providers[0]: Invalid value: {...}: more than one provider specified in a single element, should split into different list elements",
            ),
            (
                "resources: [{resources: [secrets], providers: [{kms: {name: x}}]}]",
                "error while validating encryption config: resources[0].providers[0].kms: Forbidden: KMS providers are not supported by this server; use aescbc, aesgcm or secretbox",
            ),
        ];
        for (body, want) in cases {
            assert_eq!(parse(body).err().as_deref(), Some(*want), "{body}");
        }
        let typo = parse("resource: []").err().unwrap();
        assert!(
            typo.starts_with("error while parsing file: strict decoding error: "),
            "{typo}"
        );
    }

    /// Keys in, whether they are encrypted out: roots of built-in kinds, custom resources by
    /// their layout, the first matching entry winning.
    #[test]
    fn keys_resolve_to_their_resources_entry() {
        let config = parse(&format!(
            "resources:
- resources: [secrets, deployments.apps]
  providers: [{{aescbc: {{keys: [{{name: one, secret: {KEY32}}}]}}}}]
- resources: ['*.stable.example.com']
  providers: [{{secretbox: {{keys: [{{name: two, secret: {KEY32}}}]}}}}]
- resources: ['*.']
  providers: [{{identity: {{}}}}]
- resources: ['*.*']
  providers: [{{aesgcm: {{keys: [{{name: three, secret: {KEY32}}}]}}}}]
"
        ))
        .unwrap();
        let resolve = config.resolve();
        // What a write of `x` stores at `key` (`None`: not encrypted at all).
        let stored = |key: &str| {
            resolve(key)
                .map(|t| String::from_utf8_lossy(&t.to_storage(key, b"x").unwrap()).into_owned())
        };
        let starts = |key: &str, want: Option<&str>| {
            let got = stored(key);
            match want {
                None => assert!(got.is_none(), "{key}: {got:?}"),
                Some(w) => assert!(
                    got.as_deref().is_some_and(|g| g.starts_with(w)),
                    "{key}: {got:?} (want {w})"
                ),
            }
        };
        starts(
            "/registry/secrets/default/s",
            Some("k8s:enc:aescbc:v1:one:"),
        );
        starts(
            "/registry/deployments/default/d",
            Some("k8s:enc:aescbc:v1:one:"),
        );
        starts(
            "/registry/stable.example.com/crontabs/default/c",
            Some("k8s:enc:secretbox:v1:two"),
        );
        // `*.` (core) is identity: written as it is.
        starts("/registry/configmaps/default/c", Some("x"));
        starts("/registry/services/endpoints/default/e", Some("x"));
        // `*.*`: everything else.
        starts(
            "/registry/other.io/things/a",
            Some("k8s:enc:aesgcm:v1:three"),
        );
        // Not a resource key.
        assert!(resolve("/conformance/x").is_none());
    }
}
