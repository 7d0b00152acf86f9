//! OpenAPI v3 validation of custom objects, with kube-apiserver's exact field errors.
//!
//! [`validate`] is what a create runs on a whole object (strategy steps 3, 5 and 6 of
//! crd-semantics §4.10): kube-openapi's schema validation, embedded-resource checks and
//! `x-kubernetes-list-type` uniqueness. [`validate_update`] is the same with ratcheting.
//! [`validate_at`] validates a subtree on its own (the `/status` schema, a `default`), and
//! [`validate_embedded_resources`] and [`validate_list_sets_and_maps`] are the other two steps
//! alone, for callers that order them differently.
//!
//! Schemas are the JSON of a `JSONSchemaProps`. Messages, paths and the printing of values follow
//! kube-openapi's `pkg/validation/validate` and apiextensions' `kubeOpenAPIResultToFieldErrors`;
//! errors come in a stable order (properties in sorted key order). Nothing here panics on any
//! schema or value: a pattern that does not compile is reported as an `Invalid` error.

mod embedded;
pub(crate) mod formats;
pub mod gofmt;
mod listtype;
mod openapi;
mod pattern;

use crd_core::{ErrorList, FieldError, Path};
use serde_json::Value;

/// Validates a whole custom object against its version's `openAPIV3Schema`, as a create does:
/// schema validation (only `metadata.name`/`generateName` constraints apply to the root
/// `metadata`; `apiVersion` and `kind` are the server's), then embedded resources, then list-set
/// and list-map uniqueness.
pub fn validate(schema: &Value, object: &Value) -> ErrorList {
    let root = Path::root();
    let mut errs = openapi::validate(schema, object, None, &root, true);
    errs.extend(embedded::validate(&root, object, schema, false));
    errs.extend(listtype::validate(&root, schema, object));
    errs
}

/// Validates an updated object with ratcheting (KEP-4008): schema errors inside parts of the
/// object that equal their old value are dropped, and list uniqueness is only enforced when the
/// old object satisfied it, as kube-apiserver does on update.
pub fn validate_update(schema: &Value, new: &Value, old: &Value) -> ErrorList {
    let root = Path::root();
    let mut errs = openapi::validate(schema, new, Some(old), &root, true);
    errs.extend(embedded::validate(&root, new, schema, false));
    if listtype::validate(&root, schema, old).is_empty() {
        errs.extend(listtype::validate(&root, schema, new));
    }
    errs
}

/// Validates a value against a schema node on its own, errors prefixed with `path` (for example
/// the `status` schema with path `status`). Only the schema keywords are checked; messages name
/// fields relative to the value, as kube-openapi's validator does with a root path of `""`.
pub fn validate_at(schema: &Value, value: &Value, path: &Path) -> ErrorList {
    openapi::validate(schema, value, None, path, false)
}

/// [`validate_at`] with ratcheting against the old value (`Value::Null` when there was none),
/// as a `/status` update does.
pub fn validate_update_at(schema: &Value, new: &Value, old: &Value, path: &Path) -> ErrorList {
    openapi::validate(schema, new, Some(old), path, false)
}

/// Checks every `x-kubernetes-embedded-resource` object under `value`: `apiVersion` and `kind`
/// present, non-empty strings, and `metadata` a valid `ObjectMeta`. Map entries are named
/// `path[key]`, as upstream's structural walk names them.
pub fn validate_embedded_resources(schema: &Value, value: &Value, path: &Path) -> ErrorList {
    embedded::validate(path, value, schema, false)
}

/// Checks `x-kubernetes-list-type: set` and `map` lists under `value` for duplicates (and map
/// lists for non-object items).
pub fn validate_list_sets_and_maps(schema: &Value, value: &Value, path: &Path) -> ErrorList {
    listtype::validate(path, schema, value)
}

/// What checks/defaults.rs needs beyond the public API: the embedded-resource checks with the
/// "treat this node as a resource root" switch, and the coercion error that precedes them.
pub(crate) fn embedded_resource_errors(
    schema: &Value,
    value: &Value,
    path: &Path,
    is_resource_root: bool,
) -> ErrorList {
    embedded::validate(path, value, schema, is_resource_root)
}

/// `objectmeta.Coerce` (without dropping): the first non-string embedded `apiVersion`/`kind` or
/// undecodable embedded `metadata`.
pub(crate) fn embedded_coerce_error(
    schema: &Value,
    value: &Value,
    path: &Path,
    is_resource_root: bool,
) -> Option<FieldError> {
    embedded::coerce_error(path, value, schema, is_resource_root)
}
