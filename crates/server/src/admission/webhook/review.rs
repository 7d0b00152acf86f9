//! The `AdmissionReview` wire format (apiserver's `webhook/request`): the request a webhook gets
//! (v1, or v1beta1 when that is the only version it lists) and the checks on its response
//! (`VerifyAdmissionResponse`), plus `ToStatusErr`, which turns a denial into a Status.

use base64::Engine as _;
use crd_core::{Status, StatusDetails};
use serde_json::{Map, Value, json};

use super::super::Attributes;

/// The group/version/kind and group/version/resource a webhook is sent: the request's own, or
/// an equivalent version's under `matchPolicy: Equivalent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Resource (plural).
    pub resource: String,
    /// The kind's group and version where they differ from the resource's: an answered
    /// subresource's own kind (`policy/v1` Eviction for core `pods/eviction`,
    /// `authentication.k8s.io/v1` `TokenRequest` for `serviceaccounts/token`).
    pub kind_group_version: Option<(String, String)>,
}

/// Builds the `AdmissionReview` sent to a webhook. `object`/`old` are the (possibly converted)
/// objects; `review_version` is `v1` or `v1beta1`.
pub fn request(
    review_version: &str,
    uid: &str,
    attrs: &Attributes<'_>,
    sent: &Versioned,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let gvk = |v: &Versioned| {
        let (group, version) = v
            .kind_group_version
            .as_ref()
            .map_or((&v.group, &v.version), |(g, ver)| (g, ver));
        json!({"group": group, "version": version, "kind": v.kind})
    };
    let gvr =
        |v: &Versioned| json!({"group": v.group, "version": v.version, "resource": v.resource});
    let mut req = Map::new();
    req.insert("uid".into(), json!(uid));
    req.insert("kind".into(), gvk(sent));
    req.insert("resource".into(), gvr(sent));
    if !attrs.subresource.is_empty() {
        req.insert("subResource".into(), json!(attrs.subresource));
    }
    req.insert("requestKind".into(), gvk(&attrs.request));
    req.insert("requestResource".into(), gvr(&attrs.request));
    if !attrs.subresource.is_empty() {
        req.insert("requestSubResource".into(), json!(attrs.subresource));
    }
    if !attrs.name.is_empty() {
        req.insert("name".into(), json!(attrs.name));
    }
    if !attrs.namespace.is_empty() {
        req.insert("namespace".into(), json!(attrs.namespace));
    }
    req.insert("operation".into(), json!(attrs.operation.as_str()));
    let mut user = Map::new();
    if !attrs.user.name.is_empty() {
        user.insert("username".into(), json!(attrs.user.name));
    }
    if !attrs.user.uid.is_empty() {
        user.insert("uid".into(), json!(attrs.user.uid));
    }
    if !attrs.user.groups.is_empty() {
        user.insert("groups".into(), json!(attrs.user.groups));
    }
    req.insert("userInfo".into(), Value::Object(user));
    req.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    req.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
    req.insert("dryRun".into(), json!(attrs.dry_run));
    req.insert("options".into(), attrs.options.clone());
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{review_version}"),
        "request": req,
    })
}

/// A webhook's verified answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    /// `allowed`.
    pub allowed: bool,
    /// `status`, when given.
    pub status: Option<Value>,
    /// The decoded `patch` (mutating webhooks only).
    pub patch: Option<Vec<u8>>,
    /// `patchType`.
    pub patch_type: String,
    /// `warnings`.
    pub warnings: Vec<String>,
    /// `auditAnnotations`.
    pub audit_annotations: Vec<(String, String)>,
}

/// `VerifyAdmissionResponse`: `Err` is the reason after `received invalid webhook response: `.
pub fn verify(
    review: &Value,
    review_version: &str,
    uid: &str,
    mutating: bool,
) -> Result<Response, String> {
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    if review_version == "v1" {
        let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if got_uid != uid {
            return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
        }
        let api = review
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
        if api != "admission.k8s.io/v1" || kind != "AdmissionReview" {
            let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
            let got = if group.is_empty() {
                format!("/{version}, Kind={kind}")
            } else {
                format!("{group}/{version}, Kind={kind}")
            };
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
            ));
        }
    }
    let mut out = Response {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        ..Response::default()
    };
    if mutating
        && let Some(p) = response.get("patch").and_then(Value::as_str)
        && !p.is_empty()
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(p)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?;
        let patch_type = response
            .get("patchType")
            .and_then(Value::as_str)
            .unwrap_or("");
        if patch_type.is_empty() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        out.patch_type = patch_type.to_string();
        out.patch = Some(bytes);
    }
    out.warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(a) = response.get("auditAnnotations").and_then(Value::as_object) {
        out.audit_annotations = a
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
    }
    Ok(out)
}

/// `ToStatusErr`: a denial as the Status the client gets. The webhook's code (at least 400),
/// reason and details are kept; the message names the webhook.
pub fn denial(webhook: &str, result: Option<&Value>) -> Status {
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let empty = json!({});
    let result = result.unwrap_or(&empty);
    let code = result
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let message = result.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = result.get("reason").and_then(Value::as_str).unwrap_or("");
    let text = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let mut status = Status::failure(code, reason, text);
    status.details = result
        .get("details")
        .and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok());
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_rules() {
        let ok = |extra: Value| {
            let mut r = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "u1", "allowed": true}});
            if let (Some(resp), Some(e)) = (r["response"].as_object_mut(), extra.as_object()) {
                for (k, v) in e {
                    resp.insert(k.clone(), v.clone());
                }
            }
            r
        };
        let cases: Vec<(Value, &str, bool, Result<bool, &str>)> = vec![
            (ok(json!({})), "v1", false, Ok(true)),
            (
                ok(json!({"uid": "u2"})),
                "v1",
                false,
                Err("expected response.uid=\"u1\", got \"u2\""),
            ),
            (
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
                "v1",
                false,
                Err("webhook response was absent"),
            ),
            (
                json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": "u1"}}),
                "v1",
                false,
                Err(
                    "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview",
                ),
            ),
            // v1beta1 answers are not checked for uid or kind.
            (
                json!({"response": {"uid": "x", "allowed": false}}),
                "v1beta1",
                false,
                Ok(false),
            ),
            (
                ok(json!({"patch": "W10="})),
                "v1",
                true,
                Err("webhook returned response.patch but not response.patchType"),
            ),
            // A validating webhook's patch is ignored.
            (ok(json!({"patch": "W10="})), "v1", false, Ok(true)),
        ];
        for (review, version, mutating, want) in cases {
            let got = verify(&review, version, "u1", mutating).map(|r| r.allowed);
            assert_eq!(got, want.map_err(String::from), "{review}");
        }
        let r = verify(
            &ok(json!({"patch": "W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d", "patchType": "JSONPatch",
                "warnings": ["w1"], "auditAnnotations": {"k": "v"}})),
            "v1",
            "u1",
            true,
        )
        .unwrap();
        assert_eq!(
            r.patch.as_deref(),
            Some(br#"[{"op":"add","path":"/a","value":1}]"#.as_slice())
        );
        assert_eq!(r.warnings, vec!["w1"]);
        assert_eq!(r.audit_annotations, vec![("k".into(), "v".into())]);
    }

    #[test]
    fn denials() {
        let cases = [
            (
                json!({"code": 403, "reason": "Forbidden", "message": "no"}),
                403,
                "Forbidden",
                "admission webhook \"x.example.com\" denied the request: no",
            ),
            (
                json!({"message": "no"}),
                400,
                "",
                "admission webhook \"x.example.com\" denied the request: no",
            ),
            (
                json!({"code": 200, "reason": "Because"}),
                400,
                "Because",
                "admission webhook \"x.example.com\" denied the request: Because",
            ),
            (
                json!({}),
                400,
                "",
                "admission webhook \"x.example.com\" denied the request without explanation",
            ),
        ];
        for (result, code, reason, message) in cases {
            let s = denial("x.example.com", Some(&result));
            assert_eq!(
                (s.code, s.reason.as_str(), s.message.as_str()),
                (code, reason, message)
            );
        }
        assert_eq!(denial("x.example.com", None).code, 400);
    }
}
