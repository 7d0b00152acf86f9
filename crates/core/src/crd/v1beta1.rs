//! The `apiextensions.k8s.io/v1beta1` CustomResourceDefinition as Kubernetes 1.16–1.21 served
//! it: its defaults (`v1beta1/defaults.go`), its conversion to and from v1 through the
//! internal type (`v1beta1` ↔ internal is field for field; `v1/conversion.go` moves the
//! top-level `validation`, `subresources`, `additionalPrinterColumns` and `selectableFields` into
//! every version and back when all versions agree), and the checks only a v1beta1 body can
//! fail (`spec.version`, top-level against per-version fields).
//!
//! The v1beta1 object is handled as JSON: k8s-openapi no longer has the type, and every field
//! but the few renamed here has the same JSON in both versions.

use serde_json::{Map, Value, json};

use crate::field::{ErrorList, FieldError, Path};
use crate::validation::is_dns1035_label;

/// The `apiVersion` of the v1beta1 API.
pub const API_VERSION: &str = "apiextensions.k8s.io/v1beta1";

/// The `apiVersion` of the v1 API (the storage version).
pub const V1_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The warning every v1beta1 request carries, as Kubernetes 1.21 printed it
/// (`k8s.io/apiserver/pkg/endpoints/deprecation`: the group, version and kind, the release that
/// deprecated it, the release that removes it, and the replacement).
pub const DEPRECATION_WARNING: &str = "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition";

/// Applies the v1beta1 defaults (`SetDefaults_CustomResourceDefinition`) to a decoded body:
/// scope, names, `versions` from `version` and back, the `None` conversion,
/// `conversionReviewVersions: [v1beta1]` for webhooks, `preserveUnknownFields: true`, the
/// service port, and `status.storedVersions`.
pub fn set_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if str_of(spec.get("scope")).is_empty() {
        spec.insert("scope".into(), json!("Namespaced"));
    }
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = str_of(names.get("kind")).to_string();
        if str_of(names.get("singular")).is_empty() {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if str_of(names.get("listKind")).is_empty() && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    let version = str_of(spec.get("version")).to_string();
    let no_versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_versions && !version.is_empty() {
        spec.insert(
            "versions".into(),
            json!([{"name": version, "served": true, "storage": true}]),
        );
    }
    if version.is_empty()
        && let Some(first) = spec
            .get("versions")
            .and_then(Value::as_array)
            .and_then(|vs| vs.first())
            .and_then(|v| v.get("name"))
            .cloned()
    {
        spec.insert("version".into(), first);
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if !conversion.is_object() {
        *conversion = json!({"strategy": "None"});
    }
    if let Some(c) = conversion.as_object_mut() {
        let no_review_versions = c
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if str_of(c.get("strategy")) == "Webhook" && no_review_versions {
            c.insert("conversionReviewVersions".into(), json!(["v1beta1"]));
        }
        if let Some(service) = c
            .get_mut("webhookClientConfig")
            .and_then(|w| w.get_mut("service"))
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), json!(443));
        }
    }
    if spec.get("preserveUnknownFields").is_none_or(Value::is_null) {
        spec.insert("preserveUnknownFields".into(), json!(true));
    }
    super::default_stored_versions(obj);
}

/// Converts a v1beta1 CRD to v1 (v1beta1 → internal → v1): the top-level per-CRD fields are
/// copied into every version, `version` alone becomes a one-element `versions`, printer
/// columns' `JSONPath` becomes `jsonPath`, the webhook settings move under
/// `conversion.webhook`, and `preserveUnknownFields: false` is dropped (v1 omits it).
pub fn to_v1(mut obj: Value) -> Value {
    if let Some(root) = obj.as_object_mut() {
        root.insert("apiVersion".into(), json!(V1_API_VERSION));
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return obj;
    };
    let version = spec.remove("version");
    let no_versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_versions && let Some(name) = version.filter(|v| !str_of(Some(v)).is_empty()) {
        spec.insert(
            "versions".into(),
            json!([{"name": name, "served": true, "storage": true}]),
        );
    }
    let shared: Vec<(&str, &str, Option<Value>)> = vec![
        ("subresources", "subresources", spec.remove("subresources")),
        ("validation", "schema", spec.remove("validation")),
        (
            "additionalPrinterColumns",
            "additionalPrinterColumns",
            spec.remove("additionalPrinterColumns").map(columns_to_v1),
        ),
        (
            "selectableFields",
            "selectableFields",
            spec.remove("selectableFields"),
        ),
    ];
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions.iter_mut() {
            let Some(v) = v.as_object_mut() else { continue };
            if let Some(cols) = v.remove("additionalPrinterColumns") {
                v.insert("additionalPrinterColumns".into(), columns_to_v1(cols));
            }
            for (_, per_version, value) in &shared {
                if let Some(value) = value.as_ref().filter(|x| !x.is_null()) {
                    v.insert((*per_version).into(), value.clone());
                }
            }
        }
    }
    if let Some(c) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        let client = c.remove("webhookClientConfig").filter(|x| !x.is_null());
        let review = c
            .remove("conversionReviewVersions")
            .filter(|x| !x.is_null());
        if client.is_some() || review.is_some() {
            let mut webhook = Map::new();
            if let Some(review) = review {
                webhook.insert("conversionReviewVersions".into(), review);
            }
            if let Some(client) = client {
                webhook.insert("clientConfig".into(), client);
            }
            c.insert("webhook".into(), Value::Object(webhook));
        }
    }
    if spec.get("preserveUnknownFields").and_then(Value::as_bool) != Some(true) {
        spec.remove("preserveUnknownFields");
    }
    obj
}

/// Converts a v1 CRD to v1beta1 (v1 → internal → v1beta1): `version` is the first version's
/// name, per-version fields equal in every version are hoisted to the top level (schemas to
/// `validation`), `jsonPath` becomes `JSONPath`, `conversion.webhook` is flattened, and
/// `preserveUnknownFields` is always written.
pub fn from_v1(mut obj: Value) -> Value {
    if let Some(root) = obj.as_object_mut() {
        root.insert("apiVersion".into(), json!(API_VERSION));
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return obj;
    };
    let preserve = spec
        .get("preserveUnknownFields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    spec.insert("preserveUnknownFields".into(), json!(preserve));
    if let Some(c) = spec.get_mut("conversion").and_then(Value::as_object_mut)
        && let Some(webhook) = c.remove("webhook")
    {
        if let Some(review) = webhook
            .get("conversionReviewVersions")
            .filter(|x| !x.is_null())
        {
            c.insert("conversionReviewVersions".into(), review.clone());
        }
        if let Some(client) = webhook.get("clientConfig").filter(|x| !x.is_null()) {
            c.insert("webhookClientConfig".into(), client.clone());
        }
    }
    let Some(Value::Array(mut versions)) = spec.remove("versions") else {
        return obj;
    };
    if versions.is_empty() {
        spec.insert("versions".into(), Value::Array(versions));
        return obj;
    }
    for v in &mut versions {
        if let Some(v) = v.as_object_mut()
            && let Some(cols) = v.remove("additionalPrinterColumns")
        {
            v.insert("additionalPrinterColumns".into(), columns_from_v1(cols));
        }
    }
    let identical = |field: &str| {
        let first = normalized(versions[0].get(field));
        versions.iter().all(|v| normalized(v.get(field)) == first)
    };
    let subresources = identical("subresources");
    let schema = identical("schema");
    let columns = identical("additionalPrinterColumns");
    let selectable = schema && identical("selectableFields");
    let first = versions[0].clone();
    for (hoist, per_version, top) in [
        (subresources, "subresources", "subresources"),
        (schema, "schema", "validation"),
        (
            columns,
            "additionalPrinterColumns",
            "additionalPrinterColumns",
        ),
        (selectable, "selectableFields", "selectableFields"),
    ] {
        if !hoist {
            continue;
        }
        for v in &mut versions {
            if let Some(v) = v.as_object_mut() {
                v.remove(per_version);
            }
        }
        if let Some(value) = normalized(first.get(per_version)) {
            spec.insert(top.into(), value.clone());
        }
    }
    if let Some(name) = first.get("name") {
        spec.insert("version".into(), name.clone());
    }
    spec.insert("versions".into(), Value::Array(versions));
    obj
}

/// The checks only a v1beta1 body can fail, at upstream's internal paths: `spec.version`
/// against `spec.versions`, top-level fields next to per-version ones, and per-version fields
/// all set to one value (the top-level field should be used).
pub fn validate_shape(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(spec) = obj.get("spec") else {
        return errs;
    };
    let path = Path::new("spec");
    let empty = Vec::new();
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let per_version = |field: &str| {
        versions
            .iter()
            .any(|v| v.get(field).is_some_and(|x| !x.is_null()))
    };
    let set = |field: &str| normalized(spec.get(field)).is_some();
    for (top, per, what) in [
        ("validation", "schema", "schemas"),
        ("subresources", "subresources", "subresources"),
        (
            "additionalPrinterColumns",
            "additionalPrinterColumns",
            "additionalPrinterColumns",
        ),
    ] {
        if set(top) && per_version(per) {
            errs.push(FieldError::forbidden(
                &path.child(top),
                format!("top-level and per-version {what} are mutually exclusive"),
            ));
        }
    }
    for (per, what, top) in [
        ("schema", "schemas", "validation"),
        ("subresources", "subresources", "subresources"),
        (
            "additionalPrinterColumns",
            "additionalPrinterColumns",
            "additionalPrinterColumns",
        ),
    ] {
        let identical = !versions.is_empty() && {
            let first = normalized(versions[0].get(per));
            first.is_some() && versions.iter().all(|v| normalized(v.get(per)) == first)
        };
        if identical {
            errs.push(FieldError::invalid(
                &path.child("versions"),
                Value::Array(versions.clone()),
                format!(
                    "per-version {what} may not all be set to identical values (top-level {top} should be used instead)"
                ),
            ));
        }
    }
    let version = str_of(spec.get("version"));
    if !version.is_empty() {
        let msgs = is_dns1035_label(version);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("version"),
                version,
                msgs.join(","),
            ));
        }
        let first = versions.first().map(|v| str_of(v.get("name")));
        if first.is_some_and(|f| f != version) {
            errs.push(FieldError::invalid(
                &path.child("version"),
                version,
                "must match the first version in spec.versions",
            ));
        }
    }
    errs
}

/// `Some` of a present value that is not null nor an empty list or object (Go's semantic
/// equality treats a nil and an empty slice alike).
fn normalized(v: Option<&Value>) -> Option<&Value> {
    v.filter(|x| match x {
        Value::Null => false,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    })
}

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

fn rename_key(cols: Value, from: &str, to: &str) -> Value {
    match cols {
        Value::Array(cols) => Value::Array(
            cols.into_iter()
                .map(|mut c| {
                    if let Some(c) = c.as_object_mut()
                        && let Some(p) = c.remove(from)
                    {
                        c.insert(to.into(), p);
                    }
                    c
                })
                .collect(),
        ),
        other => other,
    }
}

fn columns_to_v1(cols: Value) -> Value {
    rename_key(cols, "JSONPath", "jsonPath")
}

fn columns_from_v1(cols: Value) -> Value {
    rename_key(cols, "jsonPath", "JSONPath")
}

#[cfg(test)]
mod tests;
