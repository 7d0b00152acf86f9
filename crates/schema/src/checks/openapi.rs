//! Per-node schema checks: upstream's `ValidateCustomResourceDefinitionOpenAPISchema` and
//! `specStandardValidatorV3.validate` (forbidden keywords, list and map types, defaults placement,
//! `x-kubernetes-validations` static checks). CEL compilation is not done here.

use crd_core::field::{ErrorList, FieldError, Path};
use serde_json::Value;

use super::fieldpath::valid_field_path;
use super::structural::conversion_error;
use super::{CheckOptions, TYPES};
use crate::prune::{EMBEDDED, META_FIELDS, PRESERVE, additional, default_of, flag, str_of};

/// Keywords of the OpenAPI v3 / JSON Schema vocabulary that Kubernetes' `JSONSchemaProps` does
/// not have; a CRD that sets them is rejected.
const UNSUPPORTED_KEYWORDS: [&str; 5] = [
    "deprecated",
    "discriminator",
    "readOnly",
    "writeOnly",
    "xml",
];

/// The reasons an `x-kubernetes-validations` rule may name (sorted, as Go's `sets.List`).
const VALIDATION_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The state `specStandardValidatorV3` carries down the schema.
#[derive(Clone)]
pub(super) struct NodeCtx {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
}

impl NodeCtx {
    pub(super) fn new(opts: &CheckOptions) -> Self {
        NodeCtx {
            allow_defaults: opts.allow_defaults,
            disallow_defaults_reason: String::new(),
            inside_resource_meta: false,
        }
    }

    fn with_forbidden_defaults(&self, reason: &str) -> Self {
        let mut c = self.clone();
        c.allow_defaults = false;
        c.disallow_defaults_reason = reason.to_string();
        c
    }

    fn with_inside_resource_meta(&self) -> Self {
        let mut c = self.clone();
        c.inside_resource_meta = true;
        c
    }
}

fn present(s: &Value, key: &str) -> bool {
    s.get(key).is_some_and(|v| !v.is_null())
}

fn array<'a>(s: &'a Value, key: &str) -> &'a [Value] {
    s.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn opt_str<'a>(s: &'a Value, key: &str) -> Option<&'a str> {
    s.get(key).and_then(Value::as_str)
}

/// `specStandardValidatorV3.validate`.
fn standard(s: &Value, path: &Path, ctx: &NodeCtx, opts: &CheckOptions, errs: &mut ErrorList) {
    let ty = str_of(s, "type");
    if opts.require_valid_property_type && !ty.is_empty() && !TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(&path.child("type"), ty, &TYPES));
    }
    if default_of(s).is_some() && !ctx.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ctx.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ctx.disallow_defaults_reason);
        }
        errs.push(FieldError::forbidden(&path.child("default"), detail));
    }
    if !str_of(s, "id").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("id"),
            "id is not supported",
        ));
    }
    if present(s, "additionalItems") {
        errs.push(FieldError::forbidden(
            &path.child("additionalItems"),
            "additionalItems is not supported",
        ));
    }
    if s.get("patternProperties")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        errs.push(FieldError::forbidden(
            &path.child("patternProperties"),
            "patternProperties is not supported",
        ));
    }
    if s.get("definitions")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        errs.push(FieldError::forbidden(
            &path.child("definitions"),
            "definitions is not supported",
        ));
    }
    if present(s, "dependencies") {
        errs.push(FieldError::forbidden(
            &path.child("dependencies"),
            "dependencies is not supported",
        ));
    }
    if present(s, "$ref") {
        errs.push(FieldError::forbidden(
            &path.child("$ref"),
            "$ref is not supported",
        ));
    }
    if ty == "null" {
        errs.push(FieldError::forbidden(
            &path.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if s.get("items")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(FieldError::forbidden(
            &path.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if ctx.inside_resource_meta && flag(s, EMBEDDED) {
        errs.push(FieldError::forbidden(
            &path.child(EMBEDDED),
            "must not be used inside of resource meta",
        ));
    }
    for key in UNSUPPORTED_KEYWORDS {
        if present(s, key) {
            errs.push(FieldError::forbidden(
                &path.child(key),
                format!("{key} is not supported"),
            ));
        }
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` (schema errors only, in upstream's order).
pub(super) fn check_node(
    s: &Value,
    path: &Path,
    ctx: &NodeCtx,
    is_root: bool,
    opts: &CheckOptions,
    errs: &mut ErrorList,
) {
    if !s.is_object() {
        return;
    }
    standard(s, path, ctx, opts, errs);

    if flag(s, "uniqueItems") {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }

    let props = s
        .get("properties")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty());
    let ap = additional(s);
    if ap.is_set() {
        if props.is_some() && (!matches!(ap, crate::prune::Additional::Bool(true))) {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ctx.inside_resource_meta {
            ctx.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ctx.clone()
        };
        if let Some(aps) = ap.schema() {
            check_node(
                aps,
                &path.child("additionalProperties"),
                &sub,
                false,
                opts,
                errs,
            );
        }
    }

    if let Some(props) = props {
        let embedded = flag(s, EMBEDDED);
        for (k, v) in props {
            let mut sub = ctx.clone();
            if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
                sub = sub.with_inside_resource_meta();
                if is_root {
                    sub = sub.with_forbidden_defaults(&format!("in top-level {k}"));
                }
            }
            check_node(v, &path.child("properties").key(k), &sub, false, opts, errs);
        }
    }

    if let Some(not) = s.get("not") {
        check_node(not, &path.child("not"), ctx, false, opts, errs);
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, x) in array(s, key).iter().enumerate() {
            check_node(x, &path.child(key).index(i), ctx, false, opts, errs);
        }
    }
    if let Some(defs) = s.get("definitions").and_then(Value::as_object) {
        for (k, v) in defs {
            check_node(v, &path.child("definitions").key(k), ctx, false, opts, errs);
        }
    }
    match s.get("items") {
        Some(it @ Value::Object(_)) => check_node(it, &path.child("items"), ctx, false, opts, errs),
        Some(Value::Array(list)) => {
            for (i, it) in list.iter().enumerate() {
                check_node(it, &path.child("items").index(i), ctx, false, opts, errs);
            }
        }
        _ => {}
    }
    if let Some(deps) = s.get("dependencies").and_then(Value::as_object) {
        for (k, v) in deps {
            if v.is_object() {
                check_node(
                    v,
                    &path.child("dependencies").key(k),
                    ctx,
                    false,
                    opts,
                    errs,
                );
            }
        }
    }

    if s.get(PRESERVE) == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            &path.child(PRESERVE),
            false,
            "must be true or undefined",
        ));
    }

    list_and_map_types(s, path, opts, errs);
    if opts.require_map_list_keys_map_set_validation {
        map_list_keys_map_set(s, path, errs);
    }
    x_validations(s, path, errs);
}

fn list_and_map_types(s: &Value, path: &Path, opts: &CheckOptions, errs: &mut ErrorList) {
    let ty = str_of(s, "type");
    let map_type = opt_str(s, "x-kubernetes-map-type");
    let list_type = opt_str(s, "x-kubernetes-list-type");
    let item = s.get("items").filter(|v| v.is_object());

    if let Some(mt) = map_type {
        if ty != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            errs.push(if ty.is_empty() {
                FieldError::required(&path.child("type"), msg)
            } else {
                FieldError::invalid(&path.child("type"), ty, msg)
            });
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }

    if list_type.is_some() && ty != "array" {
        let msg = "must be array if x-kubernetes-list-type is specified";
        errs.push(if ty.is_empty() {
            FieldError::required(&path.child("type"), msg)
        } else {
            FieldError::invalid(&path.child("type"), ty, msg)
        });
    } else if opts.require_atomic_set_type
        && list_type == Some("set")
        && let Some(is) = item
    {
        let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let item_list_type = is
            .get("x-kubernetes-list-type")
            .cloned()
            .unwrap_or(Value::Null);
        match str_of(is, "type") {
            "array" if opt_str(is, "x-kubernetes-list-type").is_some_and(|lt| lt != "atomic") => {
                errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-list-type"),
                    item_list_type,
                    msg,
                ));
            }
            "object" if opt_str(is, "x-kubernetes-map-type") != Some("atomic") => {
                // Upstream prints the item's list type here, which is usually null.
                errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-map-type"),
                    item_list_type,
                    msg,
                ));
            }
            _ => {}
        }
    }

    if let Some(lt) = list_type
        && !matches!(lt, "atomic" | "set" | "map")
    {
        errs.push(FieldError::not_supported(
            &path.child("x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }

    let keys = array(s, "x-kubernetes-list-map-keys");
    let keys_value = s
        .get("x-kubernetes-list-map-keys")
        .cloned()
        .unwrap_or(Value::Null);
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(_) => {}
        }
    }

    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(FieldError::required(
                &path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match s.get("items") {
            None | Some(Value::Null) => errs.push(FieldError::required(
                &path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(v) if !v.is_object() => errs.push(FieldError::invalid(
                &path.child("items"),
                v.clone(),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(_) => {}
        }
        if let Some(is) = item {
            let item_type = str_of(is, "type");
            if item_type == "object" {
                let mut seen: Vec<&str> = Vec::new();
                for k in keys {
                    let k = k.as_str().unwrap_or("");
                    match crate::prune::property(is, k) {
                        Some(p) => {
                            if matches!(str_of(p, "type"), "array" | "object") {
                                errs.push(FieldError::invalid(
                                    &path.child("items").child("properties").key(k).child("type"),
                                    item_type,
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldError::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            keys_value.clone(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(&k) {
                        errs.push(FieldError::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            keys_value.clone(),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(k);
                }
            } else {
                errs.push(FieldError::invalid(
                    &path.child("items").child("type"),
                    item_type,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            }
        }
    }
}

/// `validateMapListKeysMapSet`.
fn map_list_keys_map_set(s: &Value, path: &Path, errs: &mut ErrorList) {
    for e in map_list_keys_map_set_errors(s, path) {
        errs.push(e);
    }
}

/// The errors of `validateMapListKeysMapSet` for one node (also used for ratcheting).
pub(super) fn map_list_keys_map_set_errors(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(is) = s.get("items").filter(|v| v.is_object()) else {
        return errs;
    };
    let Some(lt) = opt_str(s, "x-kubernetes-list-type") else {
        return errs;
    };
    if lt != "set" && lt != "map" {
        return errs;
    }
    if flag(is, "nullable") {
        errs.push(FieldError::forbidden(
            &path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required: Vec<&str> = array(is, "required")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for k in array(s, "x-kubernetes-list-map-keys") {
            let k = k.as_str().unwrap_or("");
            let Some(p) = is
                .get("properties")
                .and_then(Value::as_object)
                .and_then(|m| m.get(k))
            else {
                continue;
            };
            if !required.contains(&k) && default_of(p).is_none() {
                errs.push(FieldError::required(
                    &path.child("items").child("properties").key(k).child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if flag(p, "nullable") {
                errs.push(FieldError::forbidden(
                    &path
                        .child("items")
                        .child("properties")
                        .key(k)
                        .child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The static (non-CEL) checks of `x-kubernetes-validations`.
fn x_validations(s: &Value, path: &Path, errs: &mut ErrorList) {
    let rules = array(s, "x-kubernetes-validations");
    for (i, rule) in rules.iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let text = str_of(rule, "rule");
        let message = str_of(rule, "message");
        let message_expression = str_of(rule, "messageExpression");
        let trimmed_rule = text.trim();
        let trimmed_msg = message.trim();
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                &rp.child("rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                message,
                "message must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").filter(|v| !v.is_null()) {
            let r = reason.as_str().unwrap_or("");
            if !VALIDATION_REASONS.contains(&r) {
                errs.push(FieldError::not_supported(
                    &rp.child("reason"),
                    reason.clone(),
                    &VALIDATION_REASONS,
                ));
            }
        }
        let field_path = str_of(rule, "fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("fieldPath"),
                field_path,
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newlines(field_path) {
            errs.push(FieldError::invalid(
                &rp.child("fieldPath"),
                field_path,
                "fieldPath must not contain line breaks",
            ));
        }
        if !field_path.is_empty()
            && conversion_error(s).is_none()
            && valid_field_path(field_path, s, true).is_err()
        {
            errs.push(FieldError::invalid(
                &rp.child("fieldPath"),
                field_path,
                "fieldPath must be a valid path",
            ));
        }
    }
}
