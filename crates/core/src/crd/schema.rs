//! Static checks of a version's `openAPIV3Schema` when a CRD is written.
//!
//! This covers the root rules a CRD needs to be served (a structural root of type object and
//! the status-subresource root restrictions). The full structural-schema rule set grows here.

use serde_json::Value;

use crate::field::{ErrorList, FieldError, Path};

/// Validates one schema (`schema` is the JSON of a `JSONSchemaProps`) found at `path`.
pub fn validate(schema: &Value, path: &Path, status_subresource: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    let preserve = schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true);
    if schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(
            &path.child("nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if status_subresource && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            ty,
            "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
        ));
    }
    if ty.is_empty() && !int_or_string && !preserve {
        errs.push(FieldError::required(
            &path.child("type"),
            "must not be empty at the root",
        ));
    } else if !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            ty,
            "must be object at the root",
        ));
    }
    errs
}
