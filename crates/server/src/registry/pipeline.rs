//! The custom-object pipeline: each transform a custom object goes through between the wire and
//! storage, as a named step. Handlers call these in a fixed order (see ARCHITECTURE.md):
//!
//! - write: [`check_type_meta`] → [`prune_unknown_fields`] (with `fieldValidation`) →
//!   [`default`] → strategy prepare → validate (incl. [`validate_schema`]) → [`to_storage`];
//! - read: [`read_stored`]: default with the stored version's schema → convert → prune with the
//!   request version's schema.
//!
//! Architecture Invariant: no transform hides in a codec; every step is a call here.

use std::collections::BTreeMap;
use std::sync::Arc;

use crd_core::{ErrorList, Path, Status};
use serde_json::Value;

use super::serving::{ServedVersion, ServingCrd};
use super::{Admission, Subresource};
use crate::conversion::Converter;
use crate::error::ApiError;

/// Checks `kind` and `apiVersion` of a decoded body against the URL, with kube-apiserver's
/// decode errors (400).
pub fn check_type_meta(crd: &ServingCrd, version: &str, obj: &Value) -> Result<(), ApiError> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        let body = obj.to_string();
        let head: String = body.chars().take(30).collect();
        return Err(Status::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{body}' ({head})",
            crd.kind
        ))
        .into());
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    // Compared in parts: the expected string is built only for the error.
    let matches = api_version
        .strip_prefix(crd.group.as_str())
        .and_then(|rest| rest.strip_prefix('/'))
        == Some(version);
    if !matches {
        let expected = format!("{}/{version}", crd.group);
        return Err(Status::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        ))
        .into());
    }
    // Upstream's `customResourceValidator.ValidateTypeMeta`, which runs before any other check
    // of a create or update; the error is qualified by the kind the object claims, as upstream's
    // `rest.BeforeCreate` qualifies it.
    if kind != crd.kind {
        let errors = ErrorList(vec![crd_core::FieldError::invalid(
            &Path::new("kind"),
            kind,
            format!("must be {}", crd.kind),
        )]);
        return Err(Status::invalid(
            &crd_core::GroupResource::new(&crd.group, kind),
            super::meta::name(obj),
            &errors,
        )
        .into());
    }
    Ok(())
}

pub use crate::request::options::FieldValidation;

/// The unknown fields of an object of a typed kind: what decoding it as `T` drops, found by
/// comparing the object with its typed round trip (paths as upstream's strict decoder prints
/// them: `spec.scpoe`, `spec.versions[0].x`).
pub fn typed_unknown_fields<T>(obj: &Value) -> Vec<String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let Ok(typed) = serde_json::from_value::<T>(obj.clone()) else {
        return Vec::new();
    };
    let Ok(back) = serde_json::to_value(&typed) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    dropped_fields(obj, &back, "", &mut out);
    out
}

/// Removes the fields `typed_unknown_fields` found, as decoding into the typed object drops
/// them.
pub fn remove_fields(obj: &mut Value, paths: &[String]) {
    for path in paths {
        remove_path(obj, path);
    }
}

/// Removes a dotted field path (`spec.x`) from an object; array steps (`[0]`) are followed.
fn remove_path(obj: &mut Value, path: &str) {
    let mut cur = obj;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let (name, indices) = match part.find('[') {
            Some(p) => (&part[..p], &part[p..]),
            None => (*part, ""),
        };
        let last = i + 1 == parts.len() && indices.is_empty();
        if last {
            if let Some(m) = cur.as_object_mut() {
                m.remove(name);
            }
            return;
        }
        let Some(next) = cur.get_mut(name) else {
            return;
        };
        cur = next;
        for idx in indices
            .split(['[', ']'])
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse::<usize>().ok())
        {
            let Some(next) = cur.get_mut(idx) else {
                return;
            };
            cur = next;
        }
    }
}

fn dropped_fields(given: &Value, kept: &Value, path: &str, out: &mut Vec<String>) {
    match (given, kept) {
        (Value::Object(g), Value::Object(k)) => {
            for (name, v) in g {
                let child = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                match k.get(name) {
                    Some(kv) => dropped_fields(v, kv, &child, out),
                    None if !v.is_null() => out.push(child),
                    None => {}
                }
            }
        }
        (Value::Array(g), Value::Array(k)) if g.len() == k.len() => {
            for (i, (gv, kv)) in g.iter().zip(k).enumerate() {
                dropped_fields(gv, kv, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Step: removes fields the request version's schema does not know (and non-nullable nulls
/// without defaults), then answers `fieldValidation`: warnings (Warn), nothing (Ignore), or
/// Kubernetes' strict decoding error (Strict: 400, or 422 for patches).
pub fn prune_unknown_fields(
    crd: &ServingCrd,
    version: &ServedVersion,
    obj: &mut Value,
    how: &Admission,
) -> Result<Vec<String>, ApiError> {
    let Some(schema) = version
        .schema
        .as_ref()
        .filter(|_| !crd.preserve_unknown_fields)
    else {
        return Ok(Vec::new());
    };
    prune_with_schema(schema, &crd.kind, &version.name, obj, how)
}

/// [`prune_unknown_fields`] with an explicit structural schema, Kind and version (the built-in
/// kinds prune with their own schemas the same way).
pub fn prune_with_schema(
    schema: &Value,
    kind: &str,
    version: &str,
    obj: &mut Value,
    how: &Admission,
) -> Result<Vec<String>, ApiError> {
    let before =
        (how.patch && how.field_validation == FieldValidation::Strict).then(|| obj.to_string());
    let unknown = crd_schema::prune::prune(obj, schema, true);
    crd_schema::prune::prune_nulls(obj, schema);
    unknown_fields_outcome(kind, version, &unknown, how, before)
}

/// What `fieldValidation` makes of the unknown fields a decode found (paths such as
/// `spec.scpoe`): nothing (`Ignore`), warnings (`Warn`), or upstream's strict decoding error
/// (400 for bodies, 422 on the field `patch` for patched objects, whose JSON is `before`).
pub fn unknown_fields_outcome(
    kind: &str,
    version: &str,
    unknown: &[String],
    how: &Admission,
    before: Option<String>,
) -> Result<Vec<String>, ApiError> {
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<String> = unknown
        .iter()
        .map(|p| format!("unknown field {}", crd_core::field::go_quote(p)))
        .collect();
    match how.field_validation {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(items),
        FieldValidation::Strict if how.patch => {
            let errors = ErrorList(vec![crd_core::FieldError::invalid(
                &Path::new("patch"),
                how.patch_value.clone().or(before).unwrap_or_default(),
                format!("strict decoding error: {}", items.join(", ")),
            )]);
            Err(Status::invalid(&crd_core::GroupResource::new("", ""), "", &errors).into())
        }
        FieldValidation::Strict => Err(Status::bad_request(format!(
            "{kind} in version {v} cannot be handled as a {kind}: strict decoding error: {}",
            items.join(", "),
            v = crd_core::field::go_quote(version),
        ))
        .into()),
    }
}

/// Step: applies the schema's defaults (request version on writes, stored version on reads).
pub fn default(version: &ServedVersion, obj: &mut Value) {
    if let Some(schema) = &version.schema {
        crd_schema::default::apply_defaults(obj, schema);
    }
}

/// Step: OpenAPI v3 validation of a written object, ratcheted on update (errors in parts equal
/// to the old object are dropped). Through `/status` only the status schema applies, with paths
/// under `status`.
pub fn validate_schema(
    version: &ServedVersion,
    obj: &Value,
    old: Option<&Value>,
    sub: Subresource,
) -> ErrorList {
    let Some(schema) = &version.schema else {
        return ErrorList::new();
    };
    let mut errs = openapi_errors(schema, obj, old, sub);
    if let Some(rules) = version.rules() {
        // CEL rules are skipped when the object is already badly invalid (4.10 step 7).
        let blocking = errs.iter().any(|e| {
            matches!(
                e.kind,
                crd_core::ErrorType::NotSupported
                    | crd_core::ErrorType::Required
                    | crd_core::ErrorType::TooLong
                    | crd_core::ErrorType::TooMany
                    | crd_core::ErrorType::TypeInvalid
            )
        });
        if blocking {
            errs.push(crd_core::FieldError::invalid(
                &Path::root(),
                "null",
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            errs.extend(crd_cel::validate(rules, obj, old).0);
        }
    }
    errs
}

/// Step: warnings for CEL failures ratcheted on update (the value they judge is unchanged).
pub fn cel_warnings(version: &ServedVersion, obj: &Value, old: Option<&Value>) -> Vec<String> {
    match (version.rules(), old) {
        (Some(rules), Some(_)) => crd_cel::validate(rules, obj, old).1,
        _ => Vec::new(),
    }
}

fn openapi_errors(schema: &Value, obj: &Value, old: Option<&Value>, sub: Subresource) -> ErrorList {
    match (sub, old) {
        (Subresource::Status, _) => match (schema.pointer("/properties/status"), obj.get("status"))
        {
            (Some(status_schema), Some(status)) => crd_schema::validate::validate_update_at(
                status_schema,
                status,
                old.and_then(|o| o.get("status")).unwrap_or(&Value::Null),
                &Path::new("status"),
            ),
            _ => ErrorList::new(),
        },
        (_, None) => crd_schema::validate::validate(schema, obj),
        (_, Some(old)) => crd_schema::validate::validate_update(schema, obj, old),
    }
}

/// What a request at one version converts between: the request version and the storage
/// version, with the CRD's converter.
#[derive(Clone, Debug)]
pub struct ConversionPlan {
    /// The CRD's converter.
    pub converter: Converter,
    /// `<group>/<version>` of the request.
    pub request: String,
    /// `<group>/<version>` of the storage version.
    pub storage: String,
    /// Every version's schema, by version name (defaulting on read, pruning after conversion).
    pub schemas: Arc<BTreeMap<String, Arc<Value>>>,
    /// The versions whose schema declares a default: the others are not defaulted on read.
    pub defaulted: Arc<std::collections::BTreeSet<String>>,
    /// Whether converted objects are pruned (not for `preserveUnknownFields: true`).
    pub prune: bool,
    /// Whether stored objects are pruned by their own version's schema when read
    /// ([`ServingCrd::pruned_on_read`]).
    pub pruned_on_read: bool,
}

impl ConversionPlan {
    /// The plan of a request at `version` of `crd`.
    pub fn new(crd: &ServingCrd, version: &str) -> Self {
        ConversionPlan {
            converter: crd.converter.clone(),
            // Built per request: `concat` costs a fraction of `format!`.
            request: [crd.group.as_str(), "/", version].concat(),
            storage: [crd.group.as_str(), "/", crd.storage_version.as_str()].concat(),
            schemas: crd.schemas.clone(),
            defaulted: crd.defaulted.clone(),
            prune: !crd.preserve_unknown_fields,
            pruned_on_read: crd.pruned_on_read,
        }
    }
}

impl ConversionPlan {
    /// Step: coerces a stored object to the schema of `own`, the version it was stored at, as
    /// Kubernetes' decoding of a stored object does: prunes what the schema no longer declares
    /// (once the CRD's spec has changed), then applies its defaults (nothing for a schema
    /// without defaults).
    fn coerce_stored(&self, obj: &mut Value, own: Option<&str>) {
        let Some((version, schema)) = own.and_then(|v| self.schemas.get_key_value(v)) else {
            return;
        };
        if self.pruned_on_read {
            crd_schema::prune::prune(obj, schema, true);
        }
        if self.defaulted.contains(version) {
            crd_schema::default::apply_defaults(obj, schema);
        }
    }
}

/// Converts an object in the request version to the storage version, and prunes what the
/// conversion left that the storage version's schema does not know (a webhook's extra field, a
/// rule's leftover), as upstream's schema-coercing converter does after converting. A failure
/// here is Kubernetes' plain 500 (no reason), as on its encode path.
pub async fn to_storage(plan: &ConversionPlan, obj: Value) -> Result<Value, ApiError> {
    let storage = plan.storage.rsplit_once('/').map(|(_, v)| v);
    let converted = version_of(&obj).as_deref() != storage;
    let mut out = plan
        .converter
        .convert(vec![obj], &plan.storage, false)
        .await
        .map_err(|e| Status::failure(500, "", e.0))?;
    let mut out = out
        .pop()
        .ok_or_else(|| ApiError::from(Status::internal("conversion returned no object")))?;
    if let Some(schema) = storage
        .and_then(|v| plan.schemas.get(v))
        .filter(|_| plan.prune && converted)
    {
        crd_schema::prune::prune(&mut out, schema, true);
    }
    Ok(out)
}

/// [`read_stored`] of one object (at `index` of its batch) when the CRD's converter runs in
/// process ([`Converter::in_process`]), so that a list converts its objects one at a time, on
/// several threads; `None` for a webhook, which converts a batch in one call.
pub fn read_stored_in_process(
    plan: &ConversionPlan,
    mut obj: Value,
    is_list: bool,
    index: usize,
) -> Option<Result<Value, ApiError>> {
    let own = version_of(&obj);
    plan.coerce_stored(&mut obj, own.as_deref());
    let request = plan.request.rsplit_once('/').map(|(_, v)| v);
    let converted = own.as_deref() != request;
    let mut out = match plan
        .converter
        .convert_in_process(obj, &plan.request, is_list, index)?
    {
        Ok(out) => out,
        Err(e) => return Some(Err(Status::internal(e.0).into())),
    };
    if let Some(schema) = request
        .and_then(|v| plan.schemas.get(v))
        .filter(|_| plan.prune && converted)
    {
        crd_schema::prune::prune(&mut out, schema, true);
    }
    Some(Ok(out))
}

/// The version (`v1`) an object's `apiVersion` names.
fn version_of(o: &Value) -> Option<String> {
    o.get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|av| av.rsplit_once('/'))
        .map(|(_, v)| v.to_string())
}

/// Turns stored objects (at whatever versions they were stored) into the request version, in one
/// batch. A failure is an `InternalError`, as on Kubernetes' decode path.
pub async fn read_stored(
    plan: &ConversionPlan,
    objs: Vec<Value>,
    is_list: bool,
) -> Result<Vec<Value>, ApiError> {
    let mut objs = objs;
    let mut converted = Vec::with_capacity(objs.len());
    for obj in &mut objs {
        let own = version_of(obj);
        plan.coerce_stored(obj, own.as_deref());
        converted.push(own.as_deref() != plan.request.rsplit_once('/').map(|(_, v)| v));
    }
    let mut out = plan
        .converter
        .convert(objs, &plan.request, is_list)
        .await
        .map_err(|e| -> ApiError { Status::internal(e.0).into() })?;
    if let Some(schema) = plan
        .request
        .rsplit_once('/')
        .and_then(|(_, v)| plan.schemas.get(v))
        .filter(|_| plan.prune)
    {
        for (obj, was_converted) in out.iter_mut().zip(converted) {
            if was_converted {
                crd_schema::prune::prune(obj, schema, true);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> ServingCrd {
        ServingCrd::build(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                     "versions": [{"name": "v1", "served": true, "storage": true},
                                  {"name": "v1beta1", "served": true, "storage": false}]}
        }))
        .unwrap()
    }

    #[test]
    fn type_meta_errors_match_kubernetes() {
        let c = crd();
        let err = check_type_meta(&c, "v1", &json!({"apiVersion": "stable.example.com/v1"}))
            .unwrap_err()
            .to_status()
            .unwrap();
        assert_eq!(err.code, 400);
        assert!(err.message.starts_with("the object provided is unrecognized (must be of type CronTab): Object 'Kind' is missing in '"));
        let err = check_type_meta(&c, "v1", &json!({"kind": "CronTab", "apiVersion": "x/v1"}))
            .unwrap_err()
            .to_status()
            .unwrap();
        assert_eq!(
            err.message,
            "the API version in the data (x/v1) does not match the expected API version (stable.example.com/v1)"
        );
        assert!(
            check_type_meta(
                &c,
                "v1",
                &json!({"kind": "CronTab", "apiVersion": "stable.example.com/v1"})
            )
            .is_ok()
        );
        // Another kind in the right group and version: upstream's 422 from ValidateTypeMeta.
        let err = check_type_meta(
            &c,
            "v1",
            &json!({"kind": "Foo", "apiVersion": "stable.example.com/v1", "metadata": {"name": "s1"}}),
        )
        .unwrap_err()
        .to_status()
        .unwrap();
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            err.message,
            "Foo.stable.example.com \"s1\" is invalid: kind: Invalid value: \"Foo\": must be CronTab"
        );
    }

    /// The apiVersion is compared in parts (group, `/`, version): near misses are still errors.
    #[test]
    fn api_versions_match_only_group_slash_version() {
        let c = crd();
        for (version, api_version, ok) in [
            ("v1", "stable.example.com/v1", true),
            ("v1beta1", "stable.example.com/v1beta1", true),
            ("v1", "stable.example.com/v1beta1", false),
            ("v1beta1", "stable.example.com/v1", false),
            ("v1", "stable.example.comm/v1", false),
            ("v1", "stable.example.co/v1", false),
            ("v1", "stable.example.com//v1", false),
            ("v1", "stable.example.com:v1", false),
            ("v1", "stable.example.com", false),
            ("v1", "/v1", false),
            ("v1", "v1", false),
            ("v1", "", false),
        ] {
            let got = check_type_meta(
                &c,
                version,
                &json!({"kind": "CronTab", "apiVersion": api_version}),
            );
            assert_eq!(got.is_ok(), ok, "{version} {api_version}");
        }
    }

    #[tokio::test]
    async fn none_conversion_changes_only_api_version() {
        let c = crd();
        let plan = ConversionPlan::new(&c, "v1beta1");
        let obj = json!({"apiVersion": "stable.example.com/v1beta1", "kind": "CronTab", "spec": {"a": 1}});
        let stored = to_storage(&plan, obj).await.unwrap();
        assert_eq!(
            stored,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "spec": {"a": 1}})
        );
        let back = read_stored(&plan, vec![stored], false).await.unwrap();
        assert_eq!(back[0]["apiVersion"], "stable.example.com/v1beta1");
    }
}
