//! `--authorization-config`: kube-apiserver's `AuthorizationConfiguration` file
//! (`apiserver.config.k8s.io/v1`, `v1beta1` or `v1alpha1`, KEP-3221): an ordered list of
//! authorizers, any number of them webhooks, each with its own timeout, TTLs, failure policy and
//! CEL `matchConditions` over the `SubjectAccessReview` it would send (`request`). Read and checked
//! at start-up with upstream's field errors (`ValidateAuthorizationConfiguration`); an invalid file
//! stops the server before it listens.

use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crd_core::{ErrorList, FieldError, Path};

use super::webhook::{MatchCondition, WebhookOptions};
use crate::webhook::kubeconfig::Target;

/// The file's API versions kube-apiserver 1.34 reads.
const API_VERSIONS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1beta1",
    "apiserver.config.k8s.io/v1alpha1",
];

/// The authorizer types this server has (upstream's also has `Node`).
const KNOWN_TYPES: &[&str] = &["ABAC", "AlwaysAllow", "AlwaysDeny", "RBAC", "Webhook"];

/// One authorizer of the file, in order.
#[derive(Clone, Debug)]
pub enum Configured {
    /// `type: Webhook`.
    Webhook(Box<WebhookOptions>),
    /// Another type (`RBAC`, `ABAC`, `AlwaysAllow`, `AlwaysDeny`), as its mode name.
    Mode(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    // Checked by `config_file::decode`; declared for the strict decoding.
    #[serde(default, rename = "apiVersion")]
    _api_version: String,
    #[serde(default, rename = "kind")]
    _kind: String,
    #[serde(default)]
    authorizers: Vec<Authorizer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Authorizer {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    webhook: Option<Webhook>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Webhook {
    #[serde(default)]
    timeout: String,
    #[serde(default, rename = "authorizedTTL")]
    authorized_ttl: String,
    #[serde(default)]
    cache_authorized_requests: Option<bool>,
    #[serde(default, rename = "unauthorizedTTL")]
    unauthorized_ttl: String,
    #[serde(default)]
    cache_unauthorized_requests: Option<bool>,
    #[serde(default)]
    subject_access_review_version: String,
    #[serde(default)]
    match_condition_subject_access_review_version: String,
    #[serde(default)]
    failure_policy: String,
    #[serde(default)]
    connection_info: ConnectionInfo,
    #[serde(default)]
    match_conditions: Vec<Condition>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConnectionInfo {
    #[serde(default, rename = "type")]
    kind: String,
    kube_config_file: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Condition {
    #[serde(default)]
    expression: String,
}

/// Reads and checks an authorization configuration file's text (YAML or JSON, strictly: an
/// unknown field is refused). `Err` is what kube-apiserver prints.
pub fn parse(text: &str) -> Result<Vec<Configured>, String> {
    let file: File = crate::config_file::decode(text, "AuthorizationConfiguration", API_VERSIONS)?;
    let mut errors = ErrorList::new();
    let root = Path::new("authorizers");
    if file.authorizers.is_empty() {
        errors.push(FieldError::required(
            &root,
            "at least one authorization mode must be defined",
        ));
    }
    let mut seen_types: Vec<&str> = Vec::new();
    let mut seen_names: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (i, a) in file.authorizers.iter().enumerate() {
        let at = root.index(i);
        if a.kind.is_empty() {
            errors.push(FieldError::required(&at.child("type"), ""));
            continue;
        }
        if !KNOWN_TYPES.contains(&a.kind.as_str()) {
            errors.push(FieldError::not_supported(
                &at.child("type"),
                a.kind.as_str(),
                KNOWN_TYPES,
            ));
            continue;
        }
        if seen_types.contains(&a.kind.as_str()) && a.kind != "Webhook" {
            errors.push(FieldError::duplicate(&at.child("type"), a.kind.as_str()));
            continue;
        }
        seen_types.push(&a.kind);
        if a.name.is_empty() {
            errors.push(FieldError::required(&at.child("name"), ""));
        } else if seen_names.contains(&a.name.as_str()) {
            errors.push(FieldError::duplicate(&at.child("name"), a.name.as_str()));
        } else {
            let bad = crd_core::validation::is_dns1123_subdomain(&a.name);
            if !bad.is_empty() {
                errors.push(FieldError::invalid(
                    &at.child("name"),
                    a.name.as_str(),
                    format!("authorizer name is invalid: {}", bad.join(", ")),
                ));
            }
        }
        seen_names.push(&a.name);
        match (a.kind.as_str(), &a.webhook) {
            ("Webhook", None) => {
                errors.push(FieldError::required(
                    &at.child("webhook"),
                    "required when type=Webhook",
                ));
            }
            ("Webhook", Some(w)) => {
                if let Some(options) = webhook(&a.name, w, &at, &mut errors) {
                    out.push(Configured::Webhook(Box::new(options)));
                }
            }
            (_, Some(_)) => errors.push(FieldError::invalid(
                &at.child("webhook"),
                "non-null",
                "may only be specified when type=Webhook",
            )),
            (kind, None) => out.push(Configured::Mode(kind.to_string())),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.aggregate())
    }
}

/// A required positive duration field, at most `max` (pushes upstream's errors; `None` when
/// it has one).
fn duration(
    text: &str,
    max: Option<Duration>,
    at: &Path,
    errors: &mut ErrorList,
) -> Option<Duration> {
    let detail = if max.is_some() {
        "must be > 0s and <= 30s"
    } else {
        "must be > 0s"
    };
    match crd_core::time::parse_go_duration(if text.is_empty() { "0" } else { text }) {
        Ok(0) => {
            errors.push(FieldError::required(at, ""));
            None
        }
        Ok(n) if n < 0 || max.is_some_and(|m| n.unsigned_abs() > m.as_nanos() as u64) => {
            errors.push(FieldError::invalid(at, text, detail));
            None
        }
        Ok(n) => Some(Duration::from_nanos(n.unsigned_abs())),
        Err(e) => {
            errors.push(FieldError::invalid(at, text, e));
            None
        }
    }
}

/// One `webhook`, checked (`ValidateWebhookConfiguration`); `None` when it has errors.
fn webhook(name: &str, w: &Webhook, at: &Path, errors: &mut ErrorList) -> Option<WebhookOptions> {
    let at = at.child("webhook");
    let before = errors.len();
    let timeout = duration(
        &w.timeout,
        Some(Duration::from_secs(30)),
        &at.child("timeout"),
        errors,
    );
    let authorized_ttl = duration(&w.authorized_ttl, None, &at.child("authorizedTTL"), errors);
    let unauthorized_ttl = duration(
        &w.unauthorized_ttl,
        None,
        &at.child("unauthorizedTTL"),
        errors,
    );
    match w.subject_access_review_version.as_str() {
        "" => errors.push(FieldError::required(
            &at.child("subjectAccessReviewVersion"),
            "",
        )),
        "v1" | "v1beta1" => {}
        other => errors.push(FieldError::not_supported(
            &at.child("subjectAccessReviewVersion"),
            other,
            &["v1", "v1beta1"],
        )),
    }
    match w.match_condition_subject_access_review_version.as_str() {
        "" if !w.match_conditions.is_empty() => errors.push(FieldError::required(
            &at.child("matchConditionSubjectAccessReviewVersion"),
            "required if match conditions are specified",
        )),
        "" | "v1" => {}
        other => errors.push(FieldError::not_supported(
            &at.child("matchConditionSubjectAccessReviewVersion"),
            other,
            &["v1"],
        )),
    }
    match w.failure_policy.as_str() {
        "" => errors.push(FieldError::required(&at.child("failurePolicy"), "")),
        "NoOpinion" | "Deny" => {}
        other => errors.push(FieldError::not_supported(
            &at.child("failurePolicy"),
            other,
            &["NoOpinion", "Deny"],
        )),
    }
    let ci = at.child("connectionInfo");
    let mut target = None;
    match w.connection_info.kind.as_str() {
        "" => errors.push(FieldError::required(&ci.child("type"), "")),
        "InClusterConfig" => errors.push(FieldError::not_supported(
            &ci.child("type"),
            "InClusterConfig",
            &["KubeConfigFile"],
        )),
        "KubeConfigFile" => match w.connection_info.kube_config_file.as_deref() {
            None | Some("") => errors.push(FieldError::required(&ci.child("kubeConfigFile"), "")),
            Some(file) if !FsPath::new(file).is_absolute() => errors.push(FieldError::invalid(
                &ci.child("kubeConfigFile"),
                file,
                "must be an absolute path",
            )),
            Some(file) => match std::fs::metadata(file) {
                Err(e) => errors.push(FieldError::invalid(
                    &ci.child("kubeConfigFile"),
                    file,
                    format!("error loading file: {}", go_stat_error(file, &e)),
                )),
                Ok(m) if !m.is_file() => errors.push(FieldError::invalid(
                    &ci.child("kubeConfigFile"),
                    file,
                    "must be a regular file",
                )),
                Ok(_) => match Target::load(FsPath::new(file)) {
                    Ok(t) => target = Some(t),
                    Err(e) => errors.push(FieldError::invalid(
                        &ci.child("kubeConfigFile"),
                        file,
                        format!("error loading file: {e}"),
                    )),
                },
            },
        },
        other => errors.push(FieldError::not_supported(
            &ci.child("type"),
            other,
            &["InClusterConfig", "KubeConfigFile"],
        )),
    }
    let conditions = match_conditions(&w.match_conditions, &at, errors);
    if errors.len() > before {
        return None;
    }
    Some(WebhookOptions {
        name: name.to_string(),
        target: target?,
        version: w.subject_access_review_version.clone(),
        timeout: timeout?,
        authorized_ttl: if w.cache_authorized_requests == Some(false) {
            Duration::ZERO
        } else {
            authorized_ttl?
        },
        unauthorized_ttl: if w.cache_unauthorized_requests == Some(false) {
            Duration::ZERO
        } else {
            unauthorized_ttl?
        },
        deny_on_error: w.failure_policy == "Deny",
        retry_delay: crate::webhook::FIRST_RETRY_DELAY,
        match_conditions: conditions,
    })
}

/// Go's `os.Stat` error text.
fn go_stat_error(file: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("stat {file}: no such file or directory"),
        std::io::ErrorKind::PermissionDenied => format!("stat {file}: permission denied"),
        _ => format!("stat {file}: {e}"),
    }
}

/// `matchConditions`: at most 64, each a non-empty, unique boolean expression over `request`.
fn match_conditions(
    conditions: &[Condition],
    at: &Path,
    errors: &mut ErrorList,
) -> Vec<MatchCondition> {
    let root = at.child("matchConditions");
    if conditions.len() > 64 {
        errors.push(FieldError::too_many(&root, conditions.len(), 64));
        return Vec::new();
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = root.index(i).child("expression");
        if c.expression.trim().is_empty() {
            errors.push(FieldError::required(&at, ""));
            continue;
        }
        if seen.contains(&c.expression.as_str()) {
            errors.push(FieldError::duplicate(&at, c.expression.as_str()));
            continue;
        }
        seen.push(&c.expression);
        match crd_cel::Expression::compile_bool(&c.expression, &["request"]) {
            Ok(program) => out.push(MatchCondition {
                program: Arc::new(program),
                source: c.expression.clone(),
            }),
            // Upstream reports a result type that is not bool without the prefix.
            Err(e) if e == "cel expression must evaluate to a bool" => errors.push(
                FieldError::invalid(&at, c.expression.as_str(), "must evaluate to bool"),
            ),
            Err(e) => errors.push(FieldError::invalid(
                &at,
                c.expression.as_str(),
                format!("compilation failed: {e}"),
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(dir: &FsPath) -> String {
        let path = dir.join("hook.kubeconfig");
        std::fs::write(
            &path,
            "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1/authorize\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
        )
        .unwrap();
        path.display().to_string()
    }

    #[test]
    fn a_valid_file_lists_its_authorizers_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: corp\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    authorizedTTL: 1m\n    unauthorizedTTL: 10s\n    cacheUnauthorizedRequests: false\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: {}\n    matchConditions:\n    - expression: has(request.resourceAttributes)\n- type: RBAC\n  name: rbac\n",
            kubeconfig(dir.path())
        );
        let got = parse(&file).unwrap();
        assert_eq!(got.len(), 2);
        let Configured::Webhook(w) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(w.name, "corp");
        assert_eq!(w.target.server, "https://127.0.0.1:1/authorize");
        assert_eq!(w.version, "v1");
        assert_eq!(w.timeout, Duration::from_secs(3));
        assert_eq!(w.authorized_ttl, Duration::from_mins(1));
        assert_eq!(w.unauthorized_ttl, Duration::ZERO);
        assert!(w.deny_on_error);
        assert_eq!(w.match_conditions.len(), 1);
        assert!(matches!(&got[1], Configured::Mode(m) if m == "RBAC"));
    }

    #[test]
    fn files_are_validated_as_upstream_validates_them() {
        let dir = tempfile::tempdir().unwrap();
        let kc = kubeconfig(dir.path());
        let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n";
        let hook = |extra: &str| {
            format!(
                "{head}authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    failurePolicy: NoOpinion\n    authorizedTTL: 1m\n    unauthorizedTTL: 10s\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {kc}}}\n{extra}"
            )
        };
        // (file, error)
        let cases = [
            (
                format!("{head}authorizers: []\n"),
                "authorizers: Required value: at least one authorization mode must be defined".to_string(),
            ),
            (
                format!("{head}authorizers:\n- type: Node\n  name: node\n"),
                "authorizers[0].type: Unsupported value: \"Node\": supported values: \"ABAC\", \"AlwaysAllow\", \"AlwaysDeny\", \"RBAC\", \"Webhook\"".into(),
            ),
            (
                format!("{head}authorizers:\n- type: RBAC\n  name: a\n- type: RBAC\n  name: b\n"),
                "authorizers[1].type: Duplicate value: \"RBAC\"".into(),
            ),
            (
                format!("{head}authorizers:\n- type: RBAC\n- type: AlwaysAllow\n  name: Bad_Name\n"),
                "[authorizers[0].name: Required value, authorizers[1].name: Invalid value: \"Bad_Name\": authorizer name is invalid: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]".into(),
            ),
            (
                format!("{head}authorizers:\n- type: Webhook\n  name: w\n"),
                "authorizers[0].webhook: Required value: required when type=Webhook".into(),
            ),
            (
                format!("{head}authorizers:\n- type: Webhook\n  name: w\n  webhook: {{}}\n"),
                "[authorizers[0].webhook.timeout: Required value, authorizers[0].webhook.authorizedTTL: Required value, authorizers[0].webhook.unauthorizedTTL: Required value, authorizers[0].webhook.subjectAccessReviewVersion: Required value, authorizers[0].webhook.failurePolicy: Required value, authorizers[0].webhook.connectionInfo.type: Required value]".into(),
            ),
            (
                hook("    matchConditions:\n    - expression: 'true'\n"),
                "authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Required value: required if match conditions are specified".into(),
            ),
            (
                hook("    matchConditionSubjectAccessReviewVersion: v1\n    matchConditions:\n    - expression: 'request.user'\n    - expression: ''\n    - expression: 'request.user =='\n"),
                "[authorizers[0].webhook.matchConditions[0].expression: Invalid value: \"request.user\": must evaluate to bool, authorizers[0].webhook.matchConditions[1].expression: Required value, authorizers[0].webhook.matchConditions[2].expression: Invalid value: \"request.user ==\": compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | request.user ==\n | ...............^]".into(),
            ),
            (
                format!("{head}authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 31s\n    subjectAccessReviewVersion: v2\n    failurePolicy: Maybe\n    authorizedTTL: 1m\n    unauthorizedTTL: 10s\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: relative.yaml}}\n"),
                "[authorizers[0].webhook.timeout: Invalid value: \"31s\": must be > 0s and <= 30s, authorizers[0].webhook.subjectAccessReviewVersion: Unsupported value: \"v2\": supported values: \"v1\", \"v1beta1\", authorizers[0].webhook.failurePolicy: Unsupported value: \"Maybe\": supported values: \"NoOpinion\", \"Deny\", authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"relative.yaml\": must be an absolute path]".into(),
            ),
            (
                format!("{head}authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    authorizedTTL: 1m\n    unauthorizedTTL: 10s\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: /nonexistent.yaml}}\n"),
                "authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"/nonexistent.yaml\": error loading file: stat /nonexistent.yaml: no such file or directory".into(),
            ),
            (
                format!("{head}authorizers:\n- type: RBAC\n  name: rbac\n  webhook: {{}}\n"),
                "authorizers[0].webhook: Invalid value: \"non-null\": may only be specified when type=Webhook".into(),
            ),
            (
                "apiVersion: v1\nkind: Config\n".into(),
                "no kind \"Config\" is registered for version \"v1\" in scheme".into(),
            ),
        ];
        for (file, want) in cases {
            assert_eq!(parse(&file).unwrap_err(), want, "{file}");
        }
        assert!(
            parse(&format!(
                "{head}authorizers:\n- type: RBAC\n  name: rbac\n  extra: 1\n"
            ))
            .unwrap_err()
            .starts_with("strict decoding error: ")
        );
    }
}
