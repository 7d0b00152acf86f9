//! `AdmissionReview` handling for validating and mutating admission webhooks: pure, no IO.
//!
//! A webhook author writes one function:
//! - a [`Validator`] looks at the request (`request.object`, `request.oldObject`,
//!   `request.operation`, `request.userInfo`, ...) and allows it, with optional warnings, or
//!   denies it with a [`Denial`];
//! - a [`Mutator`] returns the object it wants stored; the JSON Patch the API server needs is
//!   computed here (`patchType: JSONPatch`, base64 in `patch`), and nothing is sent when the
//!   object did not change.
//!
//! The response follows what kube-apiserver checks: the request's `uid` is echoed, the
//! review's `apiVersion` (`admission.k8s.io/v1` or `v1beta1`) is kept, and a denial carries a
//! `status` with the code and message the client will see (`admission webhook "<name>" denied
//! the request: <message>`). A panicking function denies the request with code 500 instead of
//! dropping the connection.

use std::panic::{AssertUnwindSafe, catch_unwind};

use base64::Engine;
use serde_json::{Value, json};

use crate::review::ReviewError;

/// `apiVersion` of the v1 `AdmissionReview`.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// `apiVersion` of the v1beta1 `AdmissionReview`.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";

/// Why a request is refused: the HTTP code and message the API server's client sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The status code (403 is what most webhooks use; upstream's default is 400).
    pub code: u16,
    /// The message, shown after `admission webhook "<name>" denied the request: `.
    pub message: String,
}

impl Denial {
    /// A 403 Forbidden denial.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Denial {
            code: 403,
            message: message.into(),
        }
    }
}

/// The function a validating webhook author writes: `Ok(warnings)` allows the request (each
/// warning becomes a `Warning` header for the client), `Err` denies it.
///
/// Implemented for every `Fn(&Value) -> Result<Vec<String>, Denial> + Send + Sync`; the
/// argument is the review's `request`.
pub trait Validator: Send + Sync {
    /// Judges one request.
    fn validate(&self, request: &Value) -> Result<Vec<String>, Denial>;
}

impl<F> Validator for F
where
    F: Fn(&Value) -> Result<Vec<String>, Denial> + Send + Sync,
{
    fn validate(&self, request: &Value) -> Result<Vec<String>, Denial> {
        self(request)
    }
}

/// The function a mutating webhook author writes: given `request.object` and the request,
/// return the object as it should be stored (or deny).
///
/// Implemented for every `Fn(Value, &Value) -> Result<Value, Denial> + Send + Sync`.
pub trait Mutator: Send + Sync {
    /// Mutates one object.
    fn mutate(&self, object: Value, request: &Value) -> Result<Value, Denial>;
}

impl<F> Mutator for F
where
    F: Fn(Value, &Value) -> Result<Value, Denial> + Send + Sync,
{
    fn mutate(&self, object: Value, request: &Value) -> Result<Value, Denial> {
        self(object, request)
    }
}

/// One of the two kinds of admission webhook, as [`handle_admission_review`] runs it.
pub enum Admission<'a> {
    /// A validating webhook.
    Validating(&'a dyn Validator),
    /// A mutating webhook.
    Mutating(&'a dyn Mutator),
}

/// Answers a parsed `AdmissionReview` (v1 or v1beta1) with the `AdmissionReview` to send back
/// with status 200.
pub fn handle_admission_review(review: &Value, hook: &Admission<'_>) -> Result<Value, ReviewError> {
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if api_version != ADMISSION_V1 && api_version != ADMISSION_V1BETA1 {
        return Err(ReviewError::InvalidRequest(format!(
            "unsupported AdmissionReview apiVersion {api_version:?}: expected {ADMISSION_V1:?} or {ADMISSION_V1BETA1:?}"
        )));
    }
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != "AdmissionReview" {
        return Err(ReviewError::InvalidRequest(format!(
            "expected kind \"AdmissionReview\", got {kind:?}"
        )));
    }
    let request = review
        .get("request")
        .filter(|r| r.is_object())
        .ok_or(ReviewError::MissingRequest)?;
    let uid = request
        .get("uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ReviewError::InvalidRequest("request.uid is required".into()))?;
    let mut response = json!({"uid": uid, "allowed": true});
    let outcome = catch_unwind(AssertUnwindSafe(|| run(hook, request))).unwrap_or_else(|_| {
        Err(Denial {
            code: 500,
            message: "the webhook panicked".into(),
        })
    });
    match outcome {
        Ok((warnings, patch)) => {
            if !warnings.is_empty() {
                response["warnings"] = json!(warnings);
            }
            if let Some(patch) = patch {
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
            }
        }
        Err(d) => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": d.code, "message": d.message,
                "reason": reason(d.code)});
        }
    }
    Ok(json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": response}))
}

/// Runs the hook: warnings, and the serialized JSON Patch when a mutator changed the object.
fn run(hook: &Admission<'_>, request: &Value) -> Result<(Vec<String>, Option<Vec<u8>>), Denial> {
    match hook {
        Admission::Validating(v) => Ok((v.validate(request)?, None)),
        Admission::Mutating(m) => {
            let original = request.get("object").cloned().unwrap_or(Value::Null);
            let mutated = m.mutate(original.clone(), request)?;
            let patch = json_patch::diff(&original, &mutated);
            if patch.0.is_empty() {
                return Ok((Vec::new(), None));
            }
            let bytes = serde_json::to_vec(&patch).map_err(|e| Denial {
                code: 500,
                message: format!("encoding the patch: {e}"),
            })?;
            Ok((Vec::new(), Some(bytes)))
        }
    }
}

/// The `reason` of a denial's status, as `metav1.StatusReason` names the code.
fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        422 => "Invalid",
        429 => "TooManyRequests",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::needless_pass_by_value)] // Called with literals.
    fn review(object: Value) -> Value {
        json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "object": object}})
    }

    #[test]
    fn validators_allow_with_warnings_and_deny_with_a_status() {
        let v = |r: &Value| -> Result<Vec<String>, Denial> {
            if r.pointer("/object/metadata/name") == Some(&json!("bad")) {
                Err(Denial::forbidden("bad is not welcome"))
            } else {
                Ok(vec!["looked at it".into()])
            }
        };
        let ok = handle_admission_review(
            &review(json!({"metadata": {"name": "good"}})),
            &Admission::Validating(&v),
        )
        .unwrap();
        assert_eq!(
            ok,
            json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview",
                "response": {"uid": "u-1", "allowed": true, "warnings": ["looked at it"]}})
        );
        let denied = handle_admission_review(
            &review(json!({"metadata": {"name": "bad"}})),
            &Admission::Validating(&v),
        )
        .unwrap();
        assert_eq!(
            denied["response"],
            json!({"uid": "u-1", "allowed": false,
                "status": {"code": 403, "message": "bad is not welcome", "reason": "Forbidden"}})
        );
    }

    #[test]
    fn mutators_answer_with_a_json_patch_only_when_the_object_changed() {
        let m = |mut o: Value, _: &Value| -> Result<Value, Denial> {
            o["metadata"]["labels"] = json!({"team": "a"});
            Ok(o)
        };
        let out = handle_admission_review(
            &review(json!({"metadata": {"name": "x"}})),
            &Admission::Mutating(&m),
        )
        .unwrap();
        let r = &out["response"];
        assert_eq!(r["patchType"], "JSONPatch");
        let patch: Value = serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(r["patch"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"team": "a"}}])
        );
        let same = |o: Value, _: &Value| -> Result<Value, Denial> { Ok(o) };
        let out = handle_admission_review(
            &review(json!({"metadata": {"name": "x"}})),
            &Admission::Mutating(&same),
        )
        .unwrap();
        assert_eq!(out["response"], json!({"uid": "u-1", "allowed": true}));
    }

    #[test]
    fn malformed_reviews_and_panics() {
        let v = |_: &Value| -> Result<Vec<String>, Denial> { panic!("boom") };
        let out = handle_admission_review(&review(json!({})), &Admission::Validating(&v)).unwrap();
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["code"], 500);
        for bad in [
            json!({"apiVersion": "v1", "kind": "AdmissionReview", "request": {"uid": "u"}}),
            json!({"apiVersion": ADMISSION_V1, "kind": "ConversionReview", "request": {"uid": "u"}}),
            json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview", "request": {}}),
            json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview"}),
        ] {
            assert!(
                handle_admission_review(&bad, &Admission::Validating(&v)).is_err(),
                "{bad}"
            );
        }
    }
}
