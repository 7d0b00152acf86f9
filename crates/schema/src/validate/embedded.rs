//! Embedded resources (`x-kubernetes-embedded-resource`): `apiVersion` and `kind` are required
//! strings and `metadata` is a valid `ObjectMeta` (apiextensions `schema/objectmeta`), with the
//! structural walk (`properties`, `additionalProperties`, `items`) and its `[key]` map paths.

use std::sync::LazyLock;

use crd_core::validation::{NameValidation, Scope, is_dns1035_label, validate_object_meta};
use crd_core::{ErrorList, FieldError, Path};
use regex::Regex;
use serde_json::{Map, Value};

fn get<'a>(s: &'a Value, key: &str) -> Option<&'a Value> {
    s.as_object().and_then(|m| m.get(key))
}

fn is_embedded(s: &Value) -> bool {
    get(s, "x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn sorted(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<(&String, &Value)> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// The schema of a map value: a property, else the `additionalProperties` schema. The second
/// value says whether the path continues with `[key]` rather than `.key`.
fn sub_schema<'a>(s: &'a Value, k: &str) -> Option<(&'a Value, bool)> {
    if let Some(p) = get(s, "properties").and_then(|p| get(p, k)) {
        return Some((p, false));
    }
    get(s, "additionalProperties")
        .filter(|a| a.is_object())
        .map(|a| (a, true))
}

/// `objectmeta.Validate`: every embedded resource under `x`. `is_resource_root` treats `x` itself
/// as an embedded resource, as the defaults check does for a CRD's root schema.
pub(crate) fn validate(path: &Path, x: &Value, s: &Value, is_resource_root: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    walk(path, x, Some(s), is_resource_root, &mut errs);
    errs
}

fn walk(path: &Path, x: &Value, s: Option<&Value>, force_embedded: bool, errs: &mut ErrorList) {
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(m) => {
            if force_embedded || is_embedded(s) {
                validate_embedded_resource(path, m, errs);
            }
            for (k, v) in sorted(m) {
                match sub_schema(s, k) {
                    Some((sub, false)) => walk(&path.child(k), v, Some(sub), false, errs),
                    Some((sub, true)) => walk(&path.key(k), v, Some(sub), false, errs),
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            let item_schema = get(s, "items").filter(|i| i.is_object());
            for (i, v) in items.iter().enumerate() {
                walk(&path.index(i), v, item_schema, false, errs);
            }
        }
        _ => {}
    }
}

/// apimachinery's `ParseGroupVersion` error, if any.
fn group_version_error(gv: &str) -> Option<String> {
    if gv.matches('/').count() > 1 {
        Some(format!("unexpected GroupVersion string: {gv}"))
    } else {
        None
    }
}

fn validate_embedded_resource(path: &Path, m: &Map<String, Value>, errs: &mut ErrorList) {
    if !m.contains_key("apiVersion") {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        errs.push(FieldError::required(&path.child("kind"), ""));
    }
    if let Some(v) = m.get("apiVersion") {
        let p = path.child("apiVersion");
        match v.as_str() {
            None => errs.push(FieldError::invalid(&p, v.clone(), "must be a string")),
            Some("") => errs.push(FieldError::invalid(&p, "", "must not be empty")),
            Some(gv) => {
                if let Some(e) = group_version_error(gv) {
                    errs.push(FieldError::invalid(&p, gv, e));
                }
            }
        }
    }
    if let Some(v) = m.get("kind") {
        let p = path.child("kind");
        match v.as_str() {
            None => errs.push(FieldError::invalid(&p, v.clone(), "must be a string")),
            Some("") => errs.push(FieldError::invalid(&p, "", "must not be empty")),
            Some(kind) => {
                let msgs = is_dns1035_label(&kind.to_lowercase());
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        &p,
                        kind,
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            msgs.join(",")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(v) = m.get("metadata") {
        let p = path.child("metadata");
        match object_meta_error(v) {
            Some(e) => errs.push(FieldError::invalid(&p, v.clone(), e)),
            None => errs.extend(validate_embedded_meta(v, &p)),
        }
    }
}

/// apimachinery's `IsValidPathSegmentName` / `IsValidPathSegmentPrefix`.
fn path_segment_messages(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `ValidateObjectMeta` with path-segment names; namespace required only when set, as
/// apiextensions does for embedded resources.
fn validate_embedded_meta(meta: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let text = |k: &str| get(meta, k).and_then(Value::as_str).unwrap_or("");
    let generate_name = text("generateName");
    if !generate_name.is_empty() {
        for m in path_segment_messages(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                generate_name,
                m,
            ));
        }
    }
    let name = text("name");
    if !name.is_empty() {
        for m in path_segment_messages(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, m));
        }
    }
    let scope = if text("namespace").is_empty() {
        Scope::Cluster
    } else {
        Scope::Namespaced
    };
    // The name rules above replace the DNS rules of the shared ObjectMeta check.
    let mut rest = meta.as_object().cloned().unwrap_or_default();
    rest.insert("name".to_string(), Value::from("fakename"));
    rest.remove("generateName");
    errs.extend(validate_object_meta(
        &Value::Object(rest),
        scope,
        NameValidation::Dns1123Subdomain,
        path,
    ));
    errs
}

fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(_) => "bool".to_string(),
        Value::String(_) => "string".to_string(),
        Value::Number(_) => "number".to_string(),
        Value::Array(_) => "array".to_string(),
        Value::Object(_) => "object".to_string(),
    }
}

fn field_error(value: &str, field: &str, ty: &str) -> String {
    format!("json: cannot unmarshal {value} into Go struct field {field} of type {ty}")
}

fn check_string(v: &Value, field: &str, ty: &str) -> Option<String> {
    match v {
        Value::Null | Value::String(_) => None,
        other => Some(field_error(&json_kind(other), field, ty)),
    }
}

fn check_int(v: &Value, field: &str) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Number(n) if n.is_i64() => None,
        Value::Number(n) => Some(field_error(&format!("number {n}"), field, "int64")),
        other => Some(field_error(&json_kind(other), field, "int64")),
    }
}

fn check_string_map(v: &Value, field: &str) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Object(m) => sorted(m)
            .into_iter()
            .find_map(|(_, x)| check_string(x, field, "string")),
        other => Some(field_error(&json_kind(other), field, "map[string]string")),
    }
}

static RFC3339: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$")
        .unwrap_or_else(|_| unreachable!("static regex"))
});

fn check_time(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) if RFC3339.is_match(s) => None,
        Value::String(s) => Some(format!(
            "parsing time {q} as \"2006-01-02T15:04:05Z07:00\": cannot parse {q} as \"2006\"",
            q = crd_core::field::go_quote(s)
        )),
        other => Some(format!(
            "json: cannot unmarshal {} into Go value of type string",
            json_kind(other)
        )),
    }
}

fn check_owner_reference(item: &Value, field: &str) -> Option<String> {
    match item {
        Value::Null => None,
        Value::Object(reference) => sorted(reference).into_iter().find_map(|(key, value)| {
            let sub = format!("OwnerReference.ownerReferences.{key}");
            match key.as_str() {
                "apiVersion" | "kind" | "name" => check_string(value, &sub, "string"),
                "uid" => check_string(value, &sub, "types.UID"),
                "controller" | "blockOwnerDeletion" => match value {
                    Value::Null | Value::Bool(_) => None,
                    other => Some(field_error(&json_kind(other), &sub, "bool")),
                },
                _ => None,
            }
        }),
        other => Some(field_error(&json_kind(other), field, "v1.OwnerReference")),
    }
}

fn check_meta_field(key: &str, value: &Value) -> Option<String> {
    let field = format!("ObjectMeta.{key}");
    match key {
        "name" | "generateName" | "namespace" | "selfLink" | "resourceVersion" => {
            check_string(value, &field, "string")
        }
        "uid" => check_string(value, &field, "types.UID"),
        "generation" | "deletionGracePeriodSeconds" => check_int(value, &field),
        "labels" | "annotations" => check_string_map(value, &field),
        "creationTimestamp" | "deletionTimestamp" => check_time(value),
        "finalizers" => match value {
            Value::Null => None,
            Value::Array(list) => list
                .iter()
                .find_map(|item| check_string(item, &field, "string")),
            other => Some(field_error(&json_kind(other), &field, "[]string")),
        },
        "ownerReferences" => match value {
            Value::Null => None,
            Value::Array(list) => list
                .iter()
                .find_map(|item| check_owner_reference(item, &field)),
            other => Some(field_error(
                &json_kind(other),
                &field,
                "[]v1.OwnerReference",
            )),
        },
        "managedFields" => match value {
            Value::Null | Value::Array(_) => None,
            other => Some(field_error(
                &json_kind(other),
                &field,
                "[]v1.ManagedFieldsEntry",
            )),
        },
        _ => None,
    }
}

/// The error decoding `metadata` into Go's `ObjectMeta` would give, if any (`GetObjectMeta`):
/// the first field, in key order, whose JSON type does not fit.
pub(crate) fn object_meta_error(meta: &Value) -> Option<String> {
    match meta {
        Value::Null => None,
        Value::Object(fields) => sorted(fields)
            .into_iter()
            .find_map(|(key, value)| check_meta_field(key, value)),
        other => Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            json_kind(other)
        )),
    }
}

/// `objectmeta.Coerce` without dropping: the first embedded `apiVersion`/`kind` that is not a
/// string, or `metadata` that does not decode.
pub(crate) fn coerce_error(
    path: &Path,
    x: &Value,
    s: &Value,
    is_resource_root: bool,
) -> Option<FieldError> {
    coerce_walk(path, x, Some(s), is_resource_root)
}

fn coerce_walk(path: &Path, x: &Value, s: Option<&Value>, force: bool) -> Option<FieldError> {
    let s = s?;
    match x {
        Value::Object(m) => {
            for (k, v) in sorted(m) {
                if force || is_embedded(s) {
                    match k.as_str() {
                        "apiVersion" | "kind" if !v.is_string() => {
                            return Some(FieldError::invalid(
                                &path.child(k),
                                v.clone(),
                                "must be a string",
                            ));
                        }
                        "metadata" => {
                            if let Some(e) = object_meta_error(v) {
                                return Some(FieldError::invalid(
                                    &path.child("metadata"),
                                    v.clone(),
                                    e,
                                ));
                            }
                        }
                        _ => {}
                    }
                }
                let err = match sub_schema(s, k) {
                    Some((sub, false)) => coerce_walk(&path.child(k), v, Some(sub), false),
                    Some((sub, true)) => coerce_walk(&path.key(k), v, Some(sub), false),
                    None => None,
                };
                if err.is_some() {
                    return err;
                }
            }
            None
        }
        Value::Array(items) => {
            let item_schema = get(s, "items").filter(|i| i.is_object());
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| coerce_walk(&path.index(i), v, item_schema, false))
        }
        _ => None,
    }
}
