//! `metav1.Status`, the body of every API error, and constructors that produce Kubernetes' exact
//! codes, reasons and messages (apimachinery `pkg/api/errors`).
//!
//! Main types: [`Status`], [`StatusDetails`], [`StatusCause`], [`GroupResource`].

use serde::{Deserialize, Serialize};

use crate::field::{ErrorList, go_quote};

/// A resource name qualified by its group, printed `<resource>.<group>` (or `<resource>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The plural resource name (or a Kind, for Invalid errors).
    pub resource: String,
}

impl GroupResource {
    /// Builds a group-qualified name.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// One cause of a failure, usually a field error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// A machine-readable reason such as `FieldValueInvalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path the cause refers to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// Structured details of a failure: which object, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The resource (plural) or Kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// How long a client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i32>,
}

impl StatusDetails {
    fn named(gr: &GroupResource, name: &str) -> Self {
        StatusDetails {
            name: name.to_string(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        }
    }
}

/// List metadata of a Status: empty, except the fresh `continue` token of an expired list
/// (upstream's `ErrStatus.ListMeta.Continue`), with which a client may go on inconsistently.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusMetadata {
    /// The token to continue an expired list with, at the latest revision.
    #[serde(rename = "continue", default, skip_serializing_if = "String::is_empty")]
    pub continue_token: String,
}

/// `metav1.Status`. Field order matches Go's JSON output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Always `Status`.
    pub kind: String,
    /// Always `v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Always `{}`.
    #[serde(default)]
    pub metadata: StatusMetadata,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A machine-readable reason such as `NotFound`; omitted when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code; omitted on a Success status from delete.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(c: &u16) -> bool {
    *c == 0
}

impl Status {
    /// A failure with a code, reason and message.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusMetadata::default(),
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: None,
            code,
        }
    }

    /// The Success status returned by a delete that removed the object (no `code`).
    pub fn success_deleted(gr: &GroupResource, name: &str, uid: &str) -> Self {
        let mut details = StatusDetails::named(gr, name);
        details.uid = uid.to_string();
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusMetadata::default(),
            status: "Success".into(),
            message: String::new(),
            reason: String::new(),
            details: Some(details),
            code: 0,
        }
    }

    /// Attaches details.
    #[must_use]
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// 404 `<resource>.<group> "<name>" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::failure(
            404,
            "NotFound",
            format!("{gr} {} not found", go_quote(name)),
        )
        .with_details(StatusDetails::named(gr, name))
    }

    /// 409 `<resource>.<group> "<name>" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::failure(
            409,
            "AlreadyExists",
            format!("{gr} {} already exists", go_quote(name)),
        )
        .with_details(StatusDetails::named(gr, name))
    }

    /// 409 `AlreadyExists` after `generateName` retries ran out.
    pub fn generate_name_conflict(gr: &GroupResource, name: &str) -> Self {
        let mut details = StatusDetails::named(gr, name);
        details.retry_after_seconds = Some(1);
        Self::failure(
            409,
            "AlreadyExists",
            format!(
                "{gr} {} already exists, the server was not able to generate a unique name for the object",
                go_quote(name)
            ),
        )
        .with_details(details)
    }

    /// 409 `Operation cannot be fulfilled on <resource>.<group> "<name>": <why>`.
    pub fn conflict(gr: &GroupResource, name: &str, why: &str) -> Self {
        Self::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {gr} {}: {why}",
                go_quote(name)
            ),
        )
        .with_details(StatusDetails::named(gr, name))
    }

    /// The usual optimistic-concurrency conflict.
    pub fn conflict_modified(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 `<Kind>.<group> "<name>" is invalid: <aggregate>` with one cause per field error. A
    /// cause's `field` is the path as the message prints it: `<nil>` for an error about the whole
    /// object, as upstream's `field.Invalid(nil, ...)` gives.
    pub fn invalid(gk: &GroupResource, name: &str, errors: &ErrorList) -> Self {
        let causes = errors
            .iter()
            .map(|e| StatusCause {
                reason: e.kind.as_str().to_string(),
                message: e.body(),
                field: e.field.to_string(),
            })
            .collect();
        let mut details = StatusDetails::named(gk, name);
        details.causes = causes;
        let subject = if gk.resource.is_empty() && gk.group.is_empty() {
            String::new()
        } else {
            gk.to_string()
        };
        Self::failure(
            422,
            "Invalid",
            format!(
                "{subject} {} is invalid: {}",
                go_quote(name),
                errors.aggregate()
            ),
        )
        .with_details(details)
    }

    /// 400 `BadRequest` with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::failure(400, "BadRequest", message)
    }

    /// 403 `<resource>.<group> "<name>" is forbidden: <why>`.
    pub fn forbidden(gr: &GroupResource, name: &str, why: &str) -> Self {
        let message = if name.is_empty() {
            format!("{gr} is forbidden: {why}")
        } else {
            format!("{gr} {} is forbidden: {why}", go_quote(name))
        };
        Self::failure(403, "Forbidden", message).with_details(StatusDetails::named(gr, name))
    }

    /// 404 for a path under a built-in group version that no route serves, as kube-apiserver's
    /// go-restful container answers it (`NewGenericServerResponse`).
    pub fn route_not_found() -> Self {
        Self::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 405 for a method a built-in route does not serve, as go-restful answers it.
    pub fn route_method_not_allowed() -> Self {
        Self::failure(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 405 `<verb> is not supported on resources of kind "<resource>.<group>"`.
    pub fn method_not_supported(gr: &GroupResource, verb: &str) -> Self {
        Self::failure(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind {}",
                go_quote(&gr.to_string())
            ),
        )
        .with_details(StatusDetails {
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        })
    }

    /// 500 `Internal error occurred: <err>`.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        let msg = err.to_string();
        Self::failure(
            500,
            "InternalError",
            format!("Internal error occurred: {msg}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                message: msg,
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    /// 410 Expired with a message.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::failure(410, "Expired", message)
    }

    /// 415 for a body in a media type the endpoint does not accept.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::failure(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 for an Accept header the endpoint cannot satisfy.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::failure(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 413 `Request entity too large: limit is <n>`.
    pub fn too_large(limit: usize) -> Self {
        Self::failure(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::failure(401, "Unauthorized", "Unauthorized")
    }

    /// 503 `ServiceUnavailable` with a message.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::failure(503, "ServiceUnavailable", message)
    }

    /// 503 for a request that arrives before the server has installed every path (its CRDs
    /// and informers synced), as kube-apiserver's not-found handler answers during start-up.
    pub fn paths_not_installed() -> Self {
        Self::service_unavailable(
            "the request has been made before all known HTTP paths have been installed, please try again",
        )
        .with_details(StatusDetails {
            retry_after_seconds: Some(5),
            ..StatusDetails::default()
        })
    }

    /// 504 `Timeout: <message>`, with upstream's empty `details` (`NewTimeoutError` with no
    /// retry delay).
    pub fn timeout(message: &str) -> Self {
        Self::failure(504, "Timeout", format!("Timeout: {message}"))
            .with_details(StatusDetails::default())
    }

    /// The HTTP status code to answer with (200 for a Success status).
    pub fn http_code(&self) -> u16 {
        if self.code == 0 { 200 } else { self.code }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{FieldError, Path};
    use serde_json::json;

    #[test]
    fn not_found_body_matches_kubernetes() {
        let s = Status::not_found(&GroupResource::new("stable.example.com", "crontabs"), "x");
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"crontabs.stable.example.com \"x\" not found","reason":"NotFound",
                   "details":{"name":"x","group":"stable.example.com","kind":"crontabs"},"code":404})
        );
        // Field order is Go's.
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.starts_with(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message""#
        ));
    }

    #[test]
    fn invalid_has_causes() {
        let errs = ErrorList(vec![FieldError::required(
            &Path::new("spec").child("group"),
            "",
        )]);
        let s = Status::invalid(
            &GroupResource::new("apiextensions.k8s.io", "CustomResourceDefinition"),
            "a.b.c",
            &errs,
        );
        assert_eq!(s.code, 422);
        assert_eq!(
            s.message,
            "CustomResourceDefinition.apiextensions.k8s.io \"a.b.c\" is invalid: spec.group: Required value"
        );
        let d = s.details.unwrap();
        assert_eq!(d.causes[0].reason, "FieldValueRequired");
        assert_eq!(d.causes[0].message, "Required value");
        assert_eq!(d.causes[0].field, "spec.group");
    }

    /// Regression: an error about the whole object had the cause field "", where upstream's
    /// nil path gives "<nil>" (kubectl prints `* <nil>: ...`).
    #[test]
    fn an_error_about_the_whole_object_has_the_field_nil() {
        let errs = ErrorList(vec![FieldError::invalid(&Path::root(), "null", "checked")]);
        let s = Status::invalid(&GroupResource::new("g.io", "things"), "n", &errs);
        assert_eq!(
            s.message,
            "things.g.io \"n\" is invalid: <nil>: Invalid value: \"null\": checked"
        );
        assert_eq!(s.details.unwrap().causes[0].field, "<nil>");
    }

    #[test]
    fn delete_success_has_no_code() {
        let s = Status::success_deleted(&GroupResource::new("g.io", "things"), "n", "u");
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("code").is_none());
        assert_eq!(v["status"], "Success");
        assert_eq!(s.http_code(), 200);
    }
}
