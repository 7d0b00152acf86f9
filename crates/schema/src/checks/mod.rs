//! The rules a CRD's `openAPIV3Schema` must follow when the CRD is written, with Kubernetes'
//! paths and messages (`validateCustomResourceDefinitionValidation` and what it calls).
//!
//! Main entry points: [`check_schema`] (all errors for one schema), [`CheckOptions`] (create
//! defaults and update ratcheting), [`format_warnings`] (the warnings a write returns) and
//! [`structural_errors`] (the `NonStructuralSchema` condition).
//!
//! Layout: `structural` holds `NewStructural`/`ValidateStructural`, `openapi` the per-node
//! keyword checks, `regexp` a Go RE2 syntax checker for `pattern`, `fieldpath` the JSON path
//! check for `fieldPath`/`selectableFields`, and `defaults` the validation of default values.

mod defaults;
mod fieldpath;
mod openapi;
mod regexp;
mod structural;

#[cfg(test)]
mod tests;

use crd_core::field::{ErrorList, FieldError, Path};
use serde_json::Value;

use crate::prune::{
    EMBEDDED, INT_OR_STRING, META_FIELDS, PRESERVE, additional, default_of, flag, items,
    properties, prune_structural, str_of,
};

pub use fieldpath::{check_selectable_fields, valid_field_path};

/// The OpenAPI v3 types a schema may name (sorted, as printed in the `Unsupported value` error).
pub(crate) const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Which rules apply to a schema. Upstream relaxes some of them on update when the stored CRD
/// already broke them ("ratcheting"), so that existing CRDs stay writable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // One switch per upstream validation option.
pub struct CheckOptions {
    /// The version has the `/status` subresource, which restricts the root schema.
    pub status_subresource: bool,
    /// `spec.preserveUnknownFields` of the CRD (forbids defaults; without it, structural
    /// schemas are required anyway).
    pub preserve_unknown_fields: bool,
    /// The schema must be structural (only relaxed on update of a non-structural legacy CRD).
    pub require_structural: bool,
    /// `default` may be used at all.
    pub allow_defaults: bool,
    /// `type` must be one of the OpenAPI v3 types.
    pub require_valid_property_type: bool,
    /// Defaults must not contain fields that pruning would remove.
    pub require_pruned_defaults: bool,
    /// Items of `x-kubernetes-list-type: set` lists must be atomic.
    pub require_atomic_set_type: bool,
    /// Map-list keys must be required or defaulted and not nullable; set/map items not nullable.
    pub require_map_list_keys_map_set_validation: bool,
}

impl Default for CheckOptions {
    /// The options for a create: every rule applies.
    fn default() -> Self {
        CheckOptions::create()
    }
}

impl CheckOptions {
    /// The options for a create: every rule applies, no status subresource.
    pub fn create() -> Self {
        CheckOptions {
            status_subresource: false,
            preserve_unknown_fields: false,
            require_structural: true,
            allow_defaults: true,
            require_valid_property_type: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set_validation: true,
        }
    }

    /// Sets whether the version has the status subresource.
    #[must_use]
    pub fn with_status_subresource(mut self, enabled: bool) -> Self {
        self.status_subresource = enabled;
        self
    }

    /// Sets `spec.preserveUnknownFields`.
    #[must_use]
    pub fn with_preserve_unknown_fields(mut self, preserve: bool) -> Self {
        self.preserve_unknown_fields = preserve;
        self
    }

    /// Relaxes each rule that one of the old CRD's schemas (all versions, and the top-level
    /// one) already broke, as upstream's `requireXxx(oldSpec)` functions do on update.
    #[must_use]
    pub fn ratcheted<'a>(mut self, old_schemas: impl IntoIterator<Item = &'a Value>) -> Self {
        for s in old_schemas {
            if has_invalid_types(s) {
                self.require_valid_property_type = false;
            }
            if !is_structural(s) {
                self.require_structural = false;
            }
            if has_unpruned_defaults(s) {
                self.require_pruned_defaults = false;
            }
            if has_non_atomic_set_type(s) {
                self.require_atomic_set_type = false;
            }
            if has_invalid_map_list_keys_map_set(s) {
                self.require_map_list_keys_map_set_validation = false;
            }
        }
        self
    }
}

/// Returns every error of one version's schema, in upstream's order.
///
/// `path` is where the schema sits, e.g. `spec.validation.openAPIV3Schema` or
/// `spec.versions[1].schema.openAPIV3Schema`. Structural-schema errors come sorted by message;
/// defaults are checked only for structural schemas; the `NewStructural` conversion error
/// (`<path>: Invalid value: "": ...`) is shown only when nothing else is wrong. When
/// `preserve_unknown_fields` is set and the schema has defaults, the spec-level
/// `spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in
/// the schema` is included (callers checking several versions should keep one copy).
/// CEL rules are not compiled here.
pub fn check_schema(schema: &Value, path: &Path, opts: &CheckOptions) -> ErrorList {
    let mut errs = ErrorList::new();
    if schema.is_null() {
        return errs;
    }
    let defaults = has_defaults(schema);
    if opts.allow_defaults && opts.preserve_unknown_fields && defaults {
        errs.push(FieldError::invalid(
            &Path::new("spec").child("preserveUnknownFields"),
            true,
            "must be false in order to use defaults in the schema",
        ));
    }
    let require_structural = opts.require_structural
        || !opts.preserve_unknown_fields
        || (opts.allow_defaults && defaults)
        || has_kubernetes_extensions(schema);

    if opts.status_subresource {
        status_root(schema, path, &mut errs);
    }
    if flag(schema, "nullable") {
        errs.push(FieldError::forbidden(
            &path.child("nullable"),
            "nullable cannot be true at the root",
        ));
    }

    let mut deferred = None;
    if require_structural {
        if let Some(e) = structural::conversion_error(schema) {
            deferred = Some(FieldError::invalid(path, "", e));
        } else {
            let st = structural::validate_structural(schema, path);
            if st.is_empty() {
                default_errors(schema, path, opts, &mut errs);
            } else {
                errs.extend(st);
            }
        }
    }

    openapi::check_node(
        schema,
        path,
        &openapi::NodeCtx::new(opts),
        true,
        opts,
        &mut errs,
    );

    if errs.is_empty()
        && let Some(d) = deferred
    {
        errs.push(d);
    }
    errs
}

/// How a `JSONSchemaProps` field counts as set (non-zero) in Go.
#[derive(Clone, Copy)]
enum Kind {
    /// A string: set when non-empty.
    Str,
    /// A bool: set when true.
    Bool,
    /// A pointer, slice or map: set when present.
    Ptr,
}

/// The fields of Go's internal `JSONSchemaProps`, in declaration order: JSON name, Go name.
const FIELDS: [(&str, &str, Kind); 44] = [
    ("id", "ID", Kind::Str),
    ("$schema", "Schema", Kind::Str),
    ("$ref", "Ref", Kind::Ptr),
    ("description", "Description", Kind::Str),
    ("type", "Type", Kind::Str),
    ("format", "Format", Kind::Str),
    ("title", "Title", Kind::Str),
    ("default", "Default", Kind::Ptr),
    ("maximum", "Maximum", Kind::Ptr),
    ("exclusiveMaximum", "ExclusiveMaximum", Kind::Bool),
    ("minimum", "Minimum", Kind::Ptr),
    ("exclusiveMinimum", "ExclusiveMinimum", Kind::Bool),
    ("maxLength", "MaxLength", Kind::Ptr),
    ("minLength", "MinLength", Kind::Ptr),
    ("pattern", "Pattern", Kind::Str),
    ("maxItems", "MaxItems", Kind::Ptr),
    ("minItems", "MinItems", Kind::Ptr),
    ("uniqueItems", "UniqueItems", Kind::Bool),
    ("multipleOf", "MultipleOf", Kind::Ptr),
    ("enum", "Enum", Kind::Ptr),
    ("maxProperties", "MaxProperties", Kind::Ptr),
    ("minProperties", "MinProperties", Kind::Ptr),
    ("required", "Required", Kind::Ptr),
    ("items", "Items", Kind::Ptr),
    ("allOf", "AllOf", Kind::Ptr),
    ("oneOf", "OneOf", Kind::Ptr),
    ("anyOf", "AnyOf", Kind::Ptr),
    ("not", "Not", Kind::Ptr),
    ("properties", "Properties", Kind::Ptr),
    ("additionalProperties", "AdditionalProperties", Kind::Ptr),
    ("patternProperties", "PatternProperties", Kind::Ptr),
    ("dependencies", "Dependencies", Kind::Ptr),
    ("additionalItems", "AdditionalItems", Kind::Ptr),
    ("definitions", "Definitions", Kind::Ptr),
    ("externalDocs", "ExternalDocs", Kind::Ptr),
    ("example", "Example", Kind::Ptr),
    ("nullable", "Nullable", Kind::Bool),
    (PRESERVE, "XPreserveUnknownFields", Kind::Ptr),
    (EMBEDDED, "XEmbeddedResource", Kind::Bool),
    (INT_OR_STRING, "XIntOrString", Kind::Bool),
    ("x-kubernetes-list-map-keys", "XListMapKeys", Kind::Ptr),
    ("x-kubernetes-list-type", "XListType", Kind::Ptr),
    ("x-kubernetes-map-type", "XMapType", Kind::Ptr),
    ("x-kubernetes-validations", "XValidations", Kind::Ptr),
];

/// The root fields allowed when the status subresource is enabled (upstream's
/// `allowedFieldsAtRootSchema`).
const ALLOWED_AT_ROOT: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// Whether `key` is a field of `JSONSchemaProps` (other keys are dropped when Go decodes).
pub(crate) fn is_known_keyword(key: &str) -> bool {
    FIELDS.iter().any(|(k, _, _)| *k == key)
}

fn is_set(s: &Value, key: &str, kind: Kind) -> bool {
    match (kind, s.get(key)) {
        (Kind::Str, Some(Value::String(x))) => !x.is_empty(),
        (Kind::Bool, Some(Value::Bool(b))) => *b,
        (_, None | Some(Value::Null)) | (Kind::Bool, Some(_)) => false,
        _ => true,
    }
}

/// The status-subresource restriction of the root schema.
fn status_root(schema: &Value, path: &Path, errs: &mut ErrorList) {
    for (key, go_name, kind) in FIELDS {
        if !is_set(schema, key, kind) {
            continue;
        }
        if go_name == "Type" {
            let ty = str_of(schema, "type");
            if ty != "object" {
                errs.push(FieldError::invalid(
                    &path.child("type"),
                    ty,
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                ));
                break;
            }
            continue;
        }
        if !ALLOWED_AT_ROOT.contains(&go_name) {
            errs.push(FieldError::invalid(
                path,
                schema.clone(),
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    ALLOWED_AT_ROOT.join(" ")
                ),
            ));
            break;
        }
    }
}

/// The detail of the "defaults must be pruned" error.
const UNPRUNED_DEFAULT: &str = "must not have unknown fields";

/// Upstream's `ValidateDefaults`: defaults must be pruned (unless ratcheted off) and valid.
///
/// `defaults::validate_defaults` checks validity and, per node, prunedness too; the pruned check
/// here only adds what it did not already report, and its errors are dropped when the rule is
/// relaxed.
fn default_errors(schema: &Value, path: &Path, opts: &CheckOptions, errs: &mut ErrorList) {
    let validated = defaults::validate_defaults(schema, path);
    if opts.require_pruned_defaults {
        let mut unpruned = ErrorList::new();
        unpruned_defaults(schema, path, false, true, &mut unpruned);
        for e in unpruned {
            if !validated.iter().any(|v| *v == e) {
                errs.push(e);
            }
        }
        errs.extend(validated);
    } else {
        for e in validated {
            if e.detail != UNPRUNED_DEFAULT {
                errs.push(e);
            }
        }
    }
}

/// The "defaults must be pruned" part of upstream's `ValidateDefaults` (walks `properties` and
/// `items`, not `additionalProperties`; defaults inside resource metadata are not pruned here).
fn unpruned_defaults(
    s: &Value,
    path: &Path,
    inside_meta: bool,
    is_root: bool,
    errs: &mut ErrorList,
) {
    if !s.is_object() {
        return;
    }
    let embedded = is_root || flag(s, EMBEDDED);
    let inside_meta = inside_meta && !embedded;
    if let Some(d) = default_of(s)
        && !inside_meta
    {
        let mut pruned = d.clone();
        prune_structural(&mut pruned, s, embedded);
        if pruned != *d {
            errs.push(FieldError::invalid(
                &path.child("default"),
                d.clone(),
                UNPRUNED_DEFAULT,
            ));
        }
    }
    if let Some(it) = items(s) {
        unpruned_defaults(it, &path.child("items"), inside_meta, false, errs);
    }
    if let Some(props) = properties(s) {
        for (k, v) in props {
            let sub = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
            unpruned_defaults(v, &path.child("properties").key(k), sub, false, errs);
        }
    }
}

/// Visits `s` and every schema below it (upstream's `SchemaHas` order) until `pred` holds.
fn schema_has(s: &Value, pred: &mut dyn FnMut(&Value) -> bool) -> bool {
    if !s.is_object() {
        return false;
    }
    if pred(s) {
        return true;
    }
    let in_items = match s.get("items") {
        Some(v @ Value::Object(_)) => schema_has(v, pred),
        Some(Value::Array(list)) => list.iter().any(|v| schema_has(v, pred)),
        _ => false,
    };
    if in_items {
        return true;
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = s.get(key).and_then(Value::as_array)
            && list.iter().any(|v| schema_has(v, pred))
        {
            return true;
        }
    }
    if let Some(not) = s.get("not")
        && schema_has(not, pred)
    {
        return true;
    }
    if let Some(m) = s.get("properties").and_then(Value::as_object)
        && m.values().any(|v| schema_has(v, pred))
    {
        return true;
    }
    if let Some(ap) = additional(s).schema()
        && schema_has(ap, pred)
    {
        return true;
    }
    if let Some(m) = s.get("patternProperties").and_then(Value::as_object)
        && m.values().any(|v| schema_has(v, pred))
    {
        return true;
    }
    if let Some(ai) = s.get("additionalItems")
        && schema_has(ai, pred)
    {
        return true;
    }
    for key in ["definitions", "dependencies"] {
        if let Some(m) = s.get(key).and_then(Value::as_object)
            && m.values().any(|v| schema_has(v, pred))
        {
            return true;
        }
    }
    false
}

/// Whether any node of the schema has a `default` (forces structural schemas and forbids
/// `spec.preserveUnknownFields`).
pub fn has_defaults(schema: &Value) -> bool {
    schema_has(schema, &mut |s| default_of(s).is_some())
}

/// Whether the schema uses a Kubernetes extension that requires a structural schema
/// (`x-kubernetes-embedded-resource`, `-preserve-unknown-fields`, `-int-or-string`,
/// `-list-map-keys`, `-list-type`, `-validations`).
pub fn has_kubernetes_extensions(schema: &Value) -> bool {
    schema_has(schema, &mut |s| {
        flag(s, EMBEDDED)
            || s.get(PRESERVE).is_some_and(|v| !v.is_null())
            || flag(s, INT_OR_STRING)
            || s.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
            || s.get("x-kubernetes-list-type")
                .is_some_and(|v| !v.is_null())
            || s.get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    })
}

fn has_invalid_types(schema: &Value) -> bool {
    schema_has(schema, &mut |s| {
        let t = str_of(s, "type");
        !t.is_empty() && !TYPES.contains(&t)
    })
}

fn has_non_atomic_set_type(schema: &Value) -> bool {
    schema_has(schema, &mut |s| {
        if s.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("set") {
            return false;
        }
        let Some(is) = items(s) else {
            return false;
        };
        match str_of(is, "type") {
            "array" => is
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .is_some_and(|lt| lt != "atomic"),
            "object" => is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic"),
            _ => false,
        }
    })
}

fn has_invalid_map_list_keys_map_set(schema: &Value) -> bool {
    schema_has(schema, &mut |s| {
        !openapi::map_list_keys_map_set_errors(s, &Path::root()).is_empty()
    })
}

/// Upstream's `schemaHasUnprunedDefaults`: some default changes when pruned with its own node.
fn has_unpruned_defaults(schema: &Value) -> bool {
    fn walk(s: &Value) -> bool {
        if !s.is_object() {
            return false;
        }
        if let Some(d) = default_of(s) {
            let mut pruned = d.clone();
            prune_structural(&mut pruned, s, flag(s, EMBEDDED));
            if pruned != *d {
                return true;
            }
        }
        items(s).is_some_and(walk)
            || properties(s).is_some_and(|m| m.values().any(walk))
            || additional(s).schema().is_some_and(walk)
    }
    has_defaults(schema) && is_structural(schema) && walk(schema)
}

/// The structural-schema violations of `schema` at `path`, as the `NonStructuralSchema`
/// condition lists them: the `NewStructural` conversion error as `Invalid value: ""`, else the
/// `ValidateStructural` errors sorted by message. Empty for a structural schema.
pub fn structural_errors(schema: &Value, path: &Path) -> ErrorList {
    if let Some(e) = structural::conversion_error(schema) {
        return ErrorList(vec![FieldError::invalid(path, "", e)]);
    }
    structural::validate_structural(schema, path)
}

/// The error upstream's `NewStructural` reports for `schema`, if any (e.g.
/// `OpenAPIV3Schema 'items' must be a schema, but is an array`); the `NonStructuralSchema`
/// condition shows it as `failed to check validation schema: <err>`.
pub fn structural_conversion_error(schema: &Value) -> Option<String> {
    structural::conversion_error(schema)
}

/// Whether `schema` is a structural schema (what enables pruning and defaulting).
pub fn is_structural(schema: &Value) -> bool {
    structural_errors(schema, &Path::root()).is_empty()
}

/// Go's `regexp.Compile` error text for a `pattern` (`error parsing regexp: ...`), or `None`
/// when Go accepts it; Go's grammar differs from the `regex` crate's in places.
pub fn regexp_syntax_error(pattern: &str) -> Option<String> {
    regexp::go_regexp_error(pattern)
}

fn is_unrecognized_format(ty: &str, format: &str) -> bool {
    if format.is_empty() {
        return false;
    }
    match ty {
        "string" => !crate::validate::formats::is_supported(format),
        "integer" => !matches!(format, "int32" | "int64"),
        "number" => !matches!(format, "float" | "double"),
        _ => false,
    }
}

/// The warnings a CRD write returns for one schema: `unrecognized format "<fmt>"` for each
/// format the validator ignores, and `x-kubernetes-list-type: set for items of type "object" is
/// not supported by server-side apply or CEL validation rules` (also `"array"`).
///
/// Upstream only returns warnings that the old object did not already produce; callers compare
/// with the warnings of the old schemas on update.
pub fn format_warnings(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    schema_has(schema, &mut |s| {
        let format = str_of(s, "format");
        if is_unrecognized_format(str_of(s, "type"), format) {
            out.push(format!(
                "unrecognized format {}",
                crd_core::field::go_quote(format)
            ));
        }
        false
    });
    schema_has(schema, &mut |s| {
        if s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("set")
            && let Some(is) = items(s)
        {
            let t = str_of(is, "type");
            if t == "object" || t == "array" {
                out.push(format!(
                    "x-kubernetes-list-type: set for items of type {} is not supported by server-side apply or CEL validation rules",
                    crd_core::field::go_quote(t)
                ));
            }
        }
        false
    });
    out
}
