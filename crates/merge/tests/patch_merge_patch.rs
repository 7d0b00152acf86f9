//! JSON merge patch as kube-apiserver applies it (evanphx/json-patch v4 `MergePatch` behind
//! `handlers/patch.go`): a table of (document, patch, result or error).

use crd_merge::json_patch::FieldValidation;
use crd_merge::merge_patch;
use serde_json::Value;

/// The patched document, or an error code and message.
enum Want {
    Doc(&'static str),
    Error(u16, &'static str),
}
use Want::{Doc, Error};

#[rustfmt::skip]
const CASES: &[(&str, &str, &str, FieldValidation, Want)] = &[
    ("nested merge with deletion", r#"{"a":1,"b":{"c":2,"e":4}}"#, r#"{"b":{"c":null,"d":3}}"#, FieldValidation::Warn,
     Doc(r#"{"a":1,"b":{"d":3,"e":4}}"#)),
    ("null deletes a member", r#"{"a":1,"b":2}"#, r#"{"a":null}"#, FieldValidation::Warn, Doc(r#"{"b":2}"#)),
    ("null for a missing member", r#"{"a":1}"#, r#"{"z":null}"#, FieldValidation::Warn, Doc(r#"{"a":1}"#)),
    ("arrays are replaced", r#"{"l":[1,2]}"#, r#"{"l":[3]}"#, FieldValidation::Warn, Doc(r#"{"l":[3]}"#)),
    ("new member loses nested nulls", "{}", r#"{"a":{"b":null,"c":{"d":null,"e":1}}}"#, FieldValidation::Warn,
     Doc(r#"{"a":{"c":{"e":1}}}"#)),
    ("new array keeps null elements, prunes their members", "{}", r#"{"a":[null,{"x":null,"y":1}]}"#, FieldValidation::Warn,
     Doc(r#"{"a":[null,{"y":1}]}"#)),
    ("an object replaced by an array keeps nested nulls", r#"{"a":{"b":1}}"#, r#"{"a":[{"x":null}]}"#, FieldValidation::Warn,
     Doc(r#"{"a":[{"x":null}]}"#)),
    ("a scalar replaced by an object loses nested nulls", r#"{"a":1}"#, r#"{"a":{"x":null,"y":2}}"#, FieldValidation::Warn,
     Doc(r#"{"a":{"y":2}}"#)),
    ("a null member is treated as missing", r#"{"a":null}"#, r#"{"a":{"b":null,"c":1}}"#, FieldValidation::Warn,
     Doc(r#"{"a":{"c":1}}"#)),
    ("empty patch", r#"{"a":1}"#, "{}", FieldValidation::Warn, Doc(r#"{"a":1}"#)),
    ("deep merge keeps siblings", r#"{"m":{"labels":{"a":"1","b":"2"}}}"#, r#"{"m":{"labels":{"b":"3","c":"4"}}}"#, FieldValidation::Warn,
     Doc(r#"{"m":{"labels":{"a":"1","b":"3","c":"4"}}}"#)),
    ("null body", "{}", "null", FieldValidation::Warn, Error(400, "Invalid JSON Patch")),
    ("array body, strict decode", "{}", "[1]", FieldValidation::Warn,
     Error(400, "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}")),
    ("string body, strict decode", "{}", r#""x""#, FieldValidation::Strict,
     Error(400, "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}")),
    ("string body, no strict decode", "{}", r#""x""#, FieldValidation::Ignore, Error(400, "Invalid JSON Patch")),
    ("syntax error, strict decode", "{}", "{x}", FieldValidation::Warn,
     Error(400, "error decoding patch: invalid character 'x' looking for beginning of object key string")),
    ("syntax error, no strict decode", "{}", "{x}", FieldValidation::Ignore, Error(400, "Invalid JSON Patch")),
    ("array body, no strict decode: the result is not an object", "{}", "[1,null]", FieldValidation::Ignore,
     Error(422, r#" "" is invalid: patch: Invalid value: "[1,null]": json: cannot unmarshal array into Go value of type map[string]interface {}"#)),
];

#[test]
fn merge_patch_table() {
    let mut failures = Vec::new();
    for (name, doc, patch, validation, want) in CASES {
        let mut got: Value = serde_json::from_str(doc).expect("test document");
        let res = merge_patch::apply_with(&mut got, patch.as_bytes(), *validation);
        let ok = match (want, &res) {
            (Doc(want), Ok(_)) => got == serde_json::from_str::<Value>(want).expect("want"),
            (Error(code, message), Err(e)) => e.code == *code && e.message == *message,
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}: got {res:?} / {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn duplicate_fields_are_strict_decoding_problems() {
    let mut doc: Value = serde_json::from_str(r#"{"a":1}"#).expect("doc");
    let patch = br#"{"a":2,"b":{"c":1,"c":3},"a":4}"#;
    let problems =
        merge_patch::apply_with(&mut doc, patch, FieldValidation::Warn).expect("patched");
    assert_eq!(doc, serde_json::json!({"a": 4, "b": {"c": 3}}));
    assert_eq!(
        problems,
        [r#"duplicate field "c""#, r#"duplicate field "a""#]
    );
}
