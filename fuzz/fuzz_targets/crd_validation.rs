//! CRD validation as a write of `customresourcedefinitions` runs it: unknown fields dropped,
//! CRD defaults, typed decoding, then the server's whole validation chain (typed CRD checks,
//! structural-schema checks, CEL rule checks with cost limits), format warnings, and, for a CRD
//! that passes, building what the server serves from it.
//!
//! Input: the CRD as JSON, optionally `%%` and the old CRD (then the update checks run).
#![no_main]

use crd_server::registry::{crds, pipeline, serving::ServingCrd};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The CRD as the strategy admits it: unknown fields removed, defaults set; `None` when it does
/// not decode as a CRD (a 400 before validation).
fn admit(mut obj: Value) -> Option<Value> {
    let unknown = pipeline::typed_unknown_fields::<CustomResourceDefinition>(&obj);
    pipeline::remove_fields(&mut obj, &unknown);
    crd_core::crd::set_defaults(&mut obj);
    serde_json::from_value::<CustomResourceDefinition>(obj.clone()).ok()?;
    Some(obj)
}

fuzz_target!(|data: &[u8]| {
    let docs = crd_apiserver_fuzz::parts(data, 2);
    let Some(new) = crd_apiserver_fuzz::json(docs[0]).and_then(admit) else {
        return;
    };
    let old = docs
        .get(1)
        .and_then(|d| crd_apiserver_fuzz::json(d))
        .and_then(admit);
    let errs = crds::validate_typed(&new, old.as_ref());
    if let Some(versions) = new.pointer("/spec/versions").and_then(Value::as_array) {
        for v in versions {
            if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
                let _ = crd_schema::checks::format_warnings(schema);
            }
        }
    }
    if errs.is_empty() {
        let _ = ServingCrd::build(&new);
    }
});
