//! Name and `ObjectMeta` validation with apimachinery's exact messages
//! (`pkg/util/validation/validation.go`, `pkg/api/validation/objectmeta.go`).
//!
//! Clients and users read these messages, so each function returns the upstream text verbatim.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::field::{ErrorList, FieldError, Path};

/// Whether an object lives in a namespace; decides if `metadata.namespace` is required or forbidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace.
    Namespaced,
    /// Objects are global.
    Cluster,
}

impl Scope {
    /// The spelling used by `spec.scope` and discovery.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Namespaced => "Namespaced",
            Scope::Cluster => "Cluster",
        }
    }
}

/// Which name rule applies to `metadata.name` (custom objects use subdomains, namespaces labels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameValidation {
    /// `IsDNS1123Subdomain`.
    Dns1123Subdomain,
    /// `IsDNS1123Label`.
    Dns1123Label,
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// The largest total size of all annotations of one object, in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn anchored(fmt: &str) -> Regex {
    Regex::new(&format!("^(?:{fmt})$")).expect("static regex compiles")
}

static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static DNS1035_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035_LABEL_FMT));
static QUALIFIED_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));

/// apimachinery's `RegexError`, including its odd double space before `or`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// apimachinery's `MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `IsDNS1123Label`: the messages for an invalid value, empty when valid.
pub fn is_dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1123_LABEL.is_match(v) {
        errs.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// `IsDNS1123Subdomain`: the messages for an invalid value, empty when valid.
pub fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !DNS1123_SUBDOMAIN.is_match(v) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: the messages for an invalid value, empty when valid.
pub fn is_dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1035_LABEL.is_match(v) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName` (label keys, annotation keys, finalizers).
pub fn is_qualified_name(v: &str) -> Vec<String> {
    qualified_name_errors(v, "a qualified name")
}

/// `IsQualifiedName`'s messages, naming what was checked (`a qualified name`, `a valid label
/// key`) in the message for a value with more than one '/'.
pub fn qualified_name_errors(v: &str, what: &str) -> Vec<String> {
    let msg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "{what} {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(msg, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(msg, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn is_valid_label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !LABEL_VALUE.is_match(v) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

fn name_messages(rule: NameValidation, name: &str, prefix: bool) -> Vec<String> {
    // `generateName` is a prefix: a trailing dash is allowed (`maskTrailingDash`).
    let masked;
    let name = if prefix && name.len() > 1 && name.ends_with('-') {
        masked = format!("{}a", &name[..name.len() - 1]);
        masked.as_str()
    } else {
        name
    };
    match rule {
        NameValidation::Dns1123Subdomain => is_dns1123_subdomain(name),
        NameValidation::Dns1123Label => is_dns1123_label(name),
    }
}

fn str_field<'a>(meta: &'a Value, key: &str) -> &'a str {
    meta.get(key).and_then(Value::as_str).unwrap_or("")
}

fn string_map(v: Option<&Value>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The strings of a JSON array (empty when absent or not an array; non-string items skipped):
/// how every list-of-strings field (finalizers, rule lists, audiences) is read.
pub fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `ValidateLabels`.
pub fn validate_labels(labels: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in string_map(labels) {
        for m in is_qualified_name(&k) {
            errs.push(FieldError::invalid(path, k.clone(), m));
        }
        for m in is_valid_label_value(&v) {
            errs.push(FieldError::invalid(path, v.clone(), m));
        }
    }
    errs
}

/// `ValidateAnnotations`: qualified keys and the 256 KiB total.
pub fn validate_annotations(annotations: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut total = 0usize;
    for (k, v) in string_map(annotations) {
        for m in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, k.clone(), m));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// A finalizer's name is a qualified name (apimachinery's `ValidateFinalizerName`).
pub fn validate_finalizer_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for m in is_qualified_name(name) {
        errs.push(FieldError::invalid(path, name, m));
    }
    errs
}

/// Whether a finalizer name without a domain is one of Kubernetes' own (upstream's
/// `IsStandardFinalizerName`: `kubernetes`, `orphan`, `foregroundDeletion`).
pub fn is_standard_finalizer(name: &str) -> bool {
    matches!(name, "kubernetes" | "orphan" | "foregroundDeletion")
}

fn validate_finalizers(finalizers: &[String], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for f in finalizers {
        errs.extend(validate_finalizer_name(f, path));
    }
    if finalizers.iter().any(|f| f == "orphan")
        && finalizers.iter().any(|f| f == "foregroundDeletion")
    {
        errs.push(FieldError::invalid(
            path,
            Value::from(finalizers.to_vec()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

fn validate_owner_references(refs: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(refs) = refs.and_then(Value::as_array) else {
        return errs;
    };
    let mut controllers = Vec::new();
    for r in refs {
        let api_version = str_field(r, "apiVersion");
        let kind = str_field(r, "kind");
        let name = str_field(r, "name");
        let uid = str_field(r, "uid");
        if api_version.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("kind"),
                kind,
                "kind must not be empty",
            ));
        }
        if name.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("name"),
                name,
                "name must not be empty",
            ));
        }
        if uid.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("uid"),
                uid,
                "uid must not be empty",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            controllers.push(format!("Kind={kind}, Name={name}"));
        }
    }
    if controllers.len() > 1 {
        errs.push(FieldError::invalid(
            path,
            refs.clone(),
            format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
    errs
}

/// `ValidateObjectMeta` for a create: name or generateName, namespace by scope, labels,
/// annotations, owner references and finalizers. `meta` is the `metadata` value.
pub fn validate_object_meta(
    meta: &Value,
    scope: Scope,
    rule: NameValidation,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_field(meta, "name");
    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        for m in name_messages(rule, generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                generate_name,
                m,
            ));
        }
    }
    if name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for m in name_messages(rule, name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, m));
        }
    }
    let namespace = str_field(meta, "namespace");
    match scope {
        Scope::Namespaced => {
            if namespace.is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            } else {
                for m in is_dns1123_label(namespace) {
                    errs.push(FieldError::invalid(&path.child("namespace"), namespace, m));
                }
            }
        }
        Scope::Cluster => {
            if !namespace.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("namespace"),
                    "not allowed on this type",
                ));
            }
        }
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64)
        && g < 0
    {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            g,
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(meta.get("labels"), &path.child("labels")));
    errs.extend(validate_annotations(
        meta.get("annotations"),
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        meta.get("ownerReferences"),
        &path.child("ownerReferences"),
    ));
    errs.extend(validate_finalizers(
        &string_list(meta.get("finalizers")),
        &path.child("finalizers"),
    ));
    errs
}

fn immutable(new: &Value, old: &Value, key: &str, path: &Path, errs: &mut ErrorList) {
    let n = new.get(key).unwrap_or(&Value::Null);
    let o = old.get(key).unwrap_or(&Value::Null);
    let empty = |v: &Value| v.is_null() || v.as_str() == Some("");
    if n != o && !(empty(n) && empty(o)) {
        errs.push(FieldError::invalid(
            &path.child(key),
            n.clone(),
            "field is immutable",
        ));
    }
}

/// `ValidateObjectMetaUpdate`: identity fields are immutable, generation never decreases, and
/// no finalizer may be added once deletion started.
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.get("deletionTimestamp").is_some_and(|v| !v.is_null()) {
        let old_f = string_list(old.get("finalizers"));
        let mut extra: Vec<String> = string_list(new.get("finalizers"))
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            let quoted: Vec<String> = extra.iter().map(|f| crate::field::go_quote(f)).collect();
            errs.push(FieldError::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }
    let gen_new = new.get("generation").and_then(Value::as_i64).unwrap_or(0);
    let gen_old = old.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if gen_new < gen_old {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            gen_new,
            "must not be decremented",
        ));
    }
    for key in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        immutable(new, old, key, path, &mut errs);
    }
    errs
}

/// Warnings for newly added finalizers that are not domain-qualified (upstream
/// `validateKubeFinalizerName` run as warnings). `obj` and `old` are whole objects.
pub fn finalizer_warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let new = string_list(obj.pointer("/metadata/finalizers"));
    let old = old
        .map(|o| string_list(o.pointer("/metadata/finalizers")))
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in new.iter().filter(|f| !old.contains(f)) {
        for m in is_qualified_name(f) {
            out.push(format!(
                "metadata.finalizers: {}: {m}",
                crate::field::go_quote(f)
            ));
        }
        if f.contains('/') || is_standard_finalizer(f) {
            continue;
        }
        let detail = if f.contains('.') {
            "prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
        } else {
            "prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        };
        out.push(format!(
            "metadata.finalizers: {}: {detail}",
            crate::field::go_quote(f)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rendered(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn names_follow_apimachinery_messages() {
        let cases: &[(&str, NameValidation, &[&str])] = &[
            ("my-cron", NameValidation::Dns1123Subdomain, &[]),
            ("a.b.c", NameValidation::Dns1123Subdomain, &[]),
            (
                "My_Cron",
                NameValidation::Dns1123Subdomain,
                &[
                    "metadata.name: Invalid value: \"My_Cron\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
            (
                "a.b",
                NameValidation::Dns1123Label,
                &[
                    "metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
        ];
        for (name, rule, want) in cases {
            let meta = json!({"name": name});
            let got = rendered(&validate_object_meta(
                &meta,
                Scope::Cluster,
                *rule,
                &Path::new("metadata"),
            ));
            assert_eq!(got, *want, "name {name}");
        }
    }

    #[test]
    fn object_meta_cases() {
        let cases = [
            (
                json!({}),
                Scope::Cluster,
                vec!["metadata.name: Required value: name or generateName is required"],
            ),
            (
                json!({"generateName": "cron-", "name": "cron-x2b7k"}),
                Scope::Cluster,
                vec![],
            ),
            (
                json!({"name": "a"}),
                Scope::Namespaced,
                vec!["metadata.namespace: Required value"],
            ),
            (
                json!({"name": "a", "namespace": "x"}),
                Scope::Cluster,
                vec!["metadata.namespace: Forbidden: not allowed on this type"],
            ),
            (
                json!({"name": "a", "labels": {"app": "bad value"}}),
                Scope::Cluster,
                vec![
                    "metadata.labels: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                ],
            ),
            (
                json!({"name": "a", "annotations": {"/x": "1"}}),
                Scope::Cluster,
                vec!["metadata.annotations: Invalid value: \"/x\": prefix part must be non-empty"],
            ),
            (
                json!({"name": "a", "finalizers": ["orphan", "foregroundDeletion"]}),
                Scope::Cluster,
                vec![
                    "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set",
                ],
            ),
        ];
        for (meta, scope, want) in cases {
            let got = rendered(&validate_object_meta(
                &meta,
                scope,
                NameValidation::Dns1123Subdomain,
                &Path::new("metadata"),
            ));
            assert_eq!(got, want, "meta {meta}");
        }
    }

    #[test]
    fn update_rules() {
        let old = json!({"name": "a", "uid": "1", "generation": 2, "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["a.io/x"]});
        let new = json!({"name": "b", "uid": "1", "generation": 1, "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["a.io/x", "a.io/y"]});
        let got = rendered(&validate_object_meta_update(
            &new,
            &old,
            &Path::new("metadata"),
        ));
        assert_eq!(
            got,
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a.io/y\"}",
                "metadata.generation: Invalid value: 1: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
            ]
        );
    }

    #[test]
    fn finalizer_warning_cases() {
        let obj = json!({"metadata": {"finalizers": ["kubernetes", "example.com/f", "my", "a.b", "old"]}});
        let old = json!({"metadata": {"finalizers": ["old"]}});
        assert_eq!(
            finalizer_warnings(&obj, Some(&old)),
            vec![
                "metadata.finalizers: \"my\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                "metadata.finalizers: \"a.b\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
            ]
        );
    }
}
