//! Structural-schema rules: upstream's `NewStructural` conversion errors and `ValidateStructural`
//! (`pkg/apiserver/schema/{convert,validation,complete}.go`).

use crd_core::field::{ErrorList, FieldError, Path};
use serde_json::{Map, Value};

use super::regexp::go_regexp_error;
use crate::prune::{
    EMBEDDED, INT_OR_STRING, PRESERVE, additional, default_of, flag, items, properties, str_of,
};

/// The position of a node, which decides the wording of "type must not be empty".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Whether a keyword holding a list or map is set to something non-empty.
fn non_empty(s: &Value, key: &str) -> bool {
    match s.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::String(x)) => !x.is_empty(),
        Some(_) => true,
    }
}

/// Whether a keyword is present with a non-null value (Go: a non-nil pointer).
fn present(s: &Value, key: &str) -> bool {
    s.get(key).is_some_and(|v| !v.is_null())
}

fn array<'a>(s: &'a Value, key: &str) -> &'a [Value] {
    s.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn schema_map<'a>(s: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    s.get(key).and_then(Value::as_object)
}

/// The first error of upstream's `NewStructural` conversion, in its traversal order, e.g.
/// `OpenAPIV3Schema 'items' must be a schema, but is an array`.
pub(crate) fn conversion_error(s: &Value) -> Option<String> {
    if !s.is_object() {
        return None;
    }
    unsupported_fields(s)
        .or_else(|| value_validation_error(s))
        .or_else(|| generics_error(s))
        .or_else(|| extensions_error(s))
        .or_else(|| items_error(s, conversion_error))
        .or_else(|| properties_error(s, conversion_error))
}

fn unsupported_fields(s: &Value) -> Option<String> {
    let msg = |f: &str| Some(format!("OpenAPIV3Schema '{f}' is not supported"));
    if !str_of(s, "id").is_empty() {
        return msg("id");
    }
    if !str_of(s, "$schema").is_empty() {
        return msg("schema");
    }
    if !str_of(s, "$ref").is_empty() {
        return msg("$ref");
    }
    if non_empty(s, "patternProperties") {
        return msg("patternProperties");
    }
    if non_empty(s, "dependencies") {
        return msg("dependencies");
    }
    if present(s, "additionalItems") {
        return msg("additionalItems");
    }
    if non_empty(s, "definitions") {
        return msg("definitions");
    }
    None
}

fn value_validation_error(s: &Value) -> Option<String> {
    if let Some(not) = s.get("not").filter(|v| v.is_object())
        && let Some(e) = nested_conversion_error(not)
    {
        return Some(e);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for x in array(s, key) {
            if let Some(e) = nested_conversion_error(x) {
                return Some(e);
            }
        }
    }
    None
}

fn generics_error(s: &Value) -> Option<String> {
    additional(s).schema().and_then(conversion_error)
}

fn extensions_error(s: &Value) -> Option<String> {
    if s.get(PRESERVE) == Some(&Value::Bool(false)) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    None
}

fn items_error(s: &Value, recurse: fn(&Value) -> Option<String>) -> Option<String> {
    match s.get("items") {
        Some(Value::Array(a)) if !a.is_empty() => {
            Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into())
        }
        Some(v @ Value::Object(_)) => recurse(v),
        _ => None,
    }
}

fn properties_error(s: &Value, recurse: fn(&Value) -> Option<String>) -> Option<String> {
    schema_map(s, "properties")?.values().find_map(recurse)
}

fn nested_conversion_error(s: &Value) -> Option<String> {
    if !s.is_object() {
        return None;
    }
    unsupported_fields(s)
        .or_else(|| value_validation_error(s))
        .or_else(|| generics_error(s))
        .or_else(|| extensions_error(s))
        .or_else(|| items_error(s, nested_conversion_error))
        .or_else(|| properties_error(s, nested_conversion_error))
}

/// Upstream's `ValidateStructural`: invariants and completeness, sorted by message.
pub(crate) fn validate_structural(s: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs);
    completeness(s, path, &mut errs);
    errs.sort_by_cached_key(ToString::to_string);
    ErrorList(errs)
}

/// Whether the node's `anyOf` is exactly `[{type: integer}, {type: string}]`.
fn is_int_or_string_any_of(any_of: &[Value]) -> bool {
    fn only_type(v: &Value, t: &str) -> bool {
        let Some(m) = v.as_object() else {
            return false;
        };
        str_of(v, "type") == t
            && m.iter()
                .all(|(k, v)| k == "type" || !super::is_known_keyword(k) || is_zero_keyword(k, v))
    }
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// Whether a keyword value is Go's zero value after decoding (so it does not count as "set").
fn is_zero_keyword(key: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b && key != PRESERVE,
        Value::String(s) => s.is_empty() && !key.starts_with("x-kubernetes-"),
        Value::Array(a) => a.is_empty() && matches!(key, "enum" | "allOf" | "oneOf" | "anyOf"),
        _ => false,
    }
}

fn invariants(s: &Value, lvl: Level, path: &Path, errs: &mut Vec<FieldError>) {
    if !s.is_object() {
        return;
    }
    let ty = str_of(s, "type");
    if ty == "array" && items(s).is_none() {
        errs.push(FieldError::required(
            &path.child("items"),
            "must be specified",
        ));
    }
    if let Some(it) = items(s) {
        invariants(it, Level::Item, &path.child("items"), errs);
    }
    if let Some(props) = properties(s) {
        for (k, v) in props {
            invariants(v, Level::Field, &path.child("properties").key(k), errs);
        }
    }
    let ap = additional(s);
    if ap.is_set() {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(aps) = ap.schema() {
            invariants(aps, Level::Field, &path.child("additionalProperties"), errs);
        }
    }

    let preserve = flag(s, PRESERVE);
    let embedded = flag(s, EMBEDDED);
    let int_or_string = flag(s, INT_OR_STRING);
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            &path.child(PRESERVE),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            &path.child(EMBEDDED),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(array(s, "anyOf"));
    let skip_first_all_of_any_of = array(s, "allOf")
        .first()
        .is_some_and(|first| is_int_or_string_any_of(array(first, "anyOf")));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errs);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        let p = path.child("type");
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            FieldError::required(&p, msg)
        } else {
            FieldError::invalid(&p, ty, msg)
        });
    } else if ty.is_empty() && !int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&path.child("type"), msg));
    }
    if embedded && ap.is_set() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            ty,
            "must be object at the root",
        ));
    }
    if check_metadata {
        for key in ["kind", "apiVersion"] {
            if let Some(p) = properties(s).and_then(|m| m.get(key)) {
                let t = str_of(p, "type");
                if t != "string" {
                    errs.push(FieldError::invalid(
                        &path.child("properties").key(key).child("type"),
                        t,
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(meta) = properties(s).and_then(|m| m.get("metadata")) {
        metadata_invariants(
            meta,
            check_metadata,
            lvl,
            &path.child("properties").key("metadata"),
            errs,
        );
    }
    if embedded && !preserve && properties(s).is_none() {
        errs.push(FieldError::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The keywords (besides `type`, `default` and `properties` with only `name`/`generateName`)
/// whose presence makes a root `metadata` schema restrict more than the name.
const METADATA_FORBIDDEN_BOOLS: [&str; 6] = [
    "nullable",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "uniqueItems",
    EMBEDDED,
    INT_OR_STRING,
];
const METADATA_FORBIDDEN_STRINGS: [&str; 4] = ["description", "title", "format", "pattern"];
const METADATA_FORBIDDEN_PRESENT: [&str; 18] = [
    "items",
    "additionalProperties",
    "externalDocs",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "not",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
];
/// Lists that upstream's conversion rebuilds by appending, so an empty list is unset.
const METADATA_FORBIDDEN_LISTS: [&str; 4] = ["enum", "allOf", "oneOf", "anyOf"];

fn metadata_invariants(
    s: &Value,
    check_metadata: bool,
    lvl: Level,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let ty = str_of(s, "type");
    if check_metadata && ty != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            ty,
            "must be object",
        ));
    }
    if lvl != Level::Root {
        return;
    }
    let props_ok = match properties(s) {
        None => true,
        Some(m) => {
            let name = m.contains_key("name");
            let generate = m.contains_key("generateName");
            (name && generate && m.len() == 2) || ((name || generate) && m.len() == 1)
        }
    };
    let restricted = !props_ok
        || METADATA_FORBIDDEN_BOOLS.iter().any(|k| flag(s, k))
        || METADATA_FORBIDDEN_STRINGS
            .iter()
            .any(|k| !str_of(s, k).is_empty())
        || METADATA_FORBIDDEN_PRESENT.iter().any(|k| present(s, k))
        || METADATA_FORBIDDEN_LISTS.iter().any(|k| non_empty(s, k))
        || flag(s, PRESERVE);
    if restricted {
        errs.push(FieldError::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `validateValueValidation`: the junctors of a node (structural or nested) and its pattern.
fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, x) in array(s, "anyOf").iter().enumerate() {
            nested(x, false, &path.child("anyOf").index(i), errs);
        }
    }
    for (i, x) in array(s, "allOf").iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(x, skip, &path.child("allOf").index(i), errs);
    }
    for (i, x) in array(s, "oneOf").iter().enumerate() {
        nested(x, false, &path.child("oneOf").index(i), errs);
    }
    if let Some(not) = s.get("not").filter(|v| v.is_object()) {
        nested(not, false, &path.child("not"), errs);
    }
    let pattern = str_of(s, "pattern");
    if !pattern.is_empty()
        && let Some(e) = go_regexp_error(pattern)
    {
        errs.push(FieldError::invalid(
            &path.child("pattern"),
            pattern,
            format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`: a schema under `allOf`, `anyOf`, `oneOf` or `not`.
fn nested(v: &Value, skip_any_of: bool, path: &Path, errs: &mut Vec<FieldError>) {
    if !v.is_object() {
        return;
    }
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(it) = items(v) {
        nested(it, false, &path.child("items"), errs);
    }
    if let Some(props) = schema_map(v, "properties") {
        for (k, p) in props {
            nested(p, false, &path.child("properties").key(k), errs);
        }
    }
    let forbid = |errs: &mut Vec<FieldError>, key: &str, detail: &str| {
        errs.push(FieldError::forbidden(&path.child(key), detail));
    };
    if !str_of(v, "type").is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if additional(v).is_set() {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if default_of(v).is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !str_of(v, "title").is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !str_of(v, "description").is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if flag(v, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if present(v, "externalDocs") {
        forbid(errs, "externalDocs", "must be undefined to be structural");
    }
    for key in [PRESERVE, EMBEDDED, INT_OR_STRING] {
        if flag(v, key) {
            forbid(errs, key, "must be false to be structural");
        }
    }
    if non_empty(v, "x-kubernetes-list-map-keys") {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for key in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if present(v, key) {
            forbid(errs, key, "must be undefined to be structural");
        }
    }
    if non_empty(v, "x-kubernetes-validations") {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if schema_map(v, "properties").is_some_and(|m| m.contains_key("metadata")) {
        errs.push(FieldError::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: every field or items named inside the root's junctors must
/// also be specified structurally. (Upstream only starts this walk at the root.)
fn completeness(s: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if !s.is_object() {
        return;
    }
    value_validation_completeness(s, Some(s), path, path, errs);
}

fn required_because(s_path: &Path, v_path: &Path) -> FieldError {
    FieldError::required(s_path, format!("because it is defined in {v_path}"))
}

fn value_validation_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &Path,
    v_path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(required_because(s_path, v_path));
        return;
    };
    if let Some(not) = v.get("not").filter(|x| x.is_object()) {
        nested_completeness(not, Some(s), s_path, &v_path.child("not"), errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, x) in array(v, key).iter().enumerate() {
            if x.is_object() {
                nested_completeness(x, Some(s), s_path, &v_path.child(key).index(i), errs);
            }
        }
    }
}

fn nested_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &Path,
    v_path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(required_because(s_path, v_path));
        return;
    };
    value_validation_completeness(v, Some(s), s_path, v_path, errs);
    if let Some(vi) = items(v) {
        nested_completeness(
            vi,
            items(s),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    if let Some(props) = schema_map(v, "properties") {
        for (k, vf) in props {
            let sp = s_path.child("properties").key(k);
            let vp = v_path.child("properties").key(k);
            match properties(s).and_then(|m| m.get(k)) {
                Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, errs),
                None => errs.push(required_because(&sp, &vp)),
            }
        }
    }
}
