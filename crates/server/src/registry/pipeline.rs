//! The custom-object pipeline: each transform a custom object goes through between the wire and
//! storage, as a named step. Handlers call these in a fixed order (see ARCHITECTURE.md):
//!
//! - write: [`check_type_meta`] → (schema steps) → strategy prepare/validate → [`to_storage`];
//! - read: [`read_stored`].
//!
//! Architecture Invariant: no transform hides in a codec; every step is a call here.

use crd_core::Status;
use serde_json::Value;

use super::serving::ServingCrd;
use crate::conversion::Converter;
use crate::http::error::ApiError;

/// Checks `kind` and `apiVersion` of a decoded body against the URL, with kube-apiserver's
/// decode errors (400).
pub fn check_type_meta(crd: &ServingCrd, version: &str, obj: &Value) -> Result<(), ApiError> {
    let expected = format!("{}/{version}", crd.group);
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
    if api_version != expected {
        return Err(Status::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        ))
        .into());
    }
    Ok(())
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
}

impl ConversionPlan {
    /// The plan of a request at `version` of `crd`.
    pub fn new(crd: &ServingCrd, version: &str) -> Self {
        ConversionPlan {
            converter: crd.converter.clone(),
            request: format!("{}/{version}", crd.group),
            storage: format!("{}/{}", crd.group, crd.storage_version),
        }
    }
}

/// Converts an object in the request version to the storage version. A failure here is
/// Kubernetes' plain 500 (no reason), as on its encode path.
pub async fn to_storage(plan: &ConversionPlan, obj: Value) -> Result<Value, ApiError> {
    let mut out = plan
        .converter
        .convert(vec![obj], &plan.storage, false)
        .await
        .map_err(|e| Status::failure(500, "", e.0))?;
    out.pop()
        .ok_or_else(|| Status::internal("conversion returned no object").into())
}

/// Turns stored objects (at whatever versions they were stored) into the request version, in one
/// batch. A failure is an `InternalError`, as on Kubernetes' decode path.
pub async fn read_stored(
    plan: &ConversionPlan,
    objs: Vec<Value>,
    is_list: bool,
) -> Result<Vec<Value>, ApiError> {
    plan.converter
        .convert(objs, &plan.request, is_list)
        .await
        .map_err(|e| Status::internal(e.0).into())
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
