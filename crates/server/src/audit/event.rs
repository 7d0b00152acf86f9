//! The `audit.k8s.io/v1` `Event`, serialized field for field as kube-apiserver writes it (field
//! order, `omitempty`, `MicroTime` timestamps).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::policy::{Level, Stage};

/// One audit event.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `Event`.
    pub kind: &'static str,
    /// `audit.k8s.io/v1`.
    pub api_version: &'static str,
    /// The level the policy chose.
    pub level: Level,
    /// The request's unique id (also the `Audit-Id` response header).
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event records.
    pub stage: Stage,
    /// The request URI, path and query.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb, or the lowercase HTTP method for non-resource requests.
    pub verb: String,
    /// Who made the request.
    pub user: UserInfo,
    /// Whom the request acted as (`Impersonate-*` headers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<UserInfo>,
    /// Client addresses: `X-Forwarded-For`, `X-Real-Ip`, then the peer.
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The `User-Agent` header.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object addressed, for resource requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The response's status (code; status, reason and message for failures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body (level Request and above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    /// The response body (level `RequestResponse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    /// When the request arrived.
    pub request_received_timestamp: String,
    /// When this stage was reached.
    pub stage_timestamp: String,
    /// Annotations (authorization decision and reason, admission plugins' annotations).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `authentication.k8s.io/v1` `UserInfo`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UserInfo {
    /// The user name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The UID.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// The audited object's reference.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The plural resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's UID, from the request body.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion, from the request body.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The bounded part of a response's `metav1.Status` that upstream copies into events.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ResponseStatus {
    /// Always empty.
    pub metadata: BTreeMap<String, String>,
    /// `Failure` or `Success` when the response was a Status.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The Status message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The Status reason.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The Status details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The HTTP status code.
    pub code: u16,
}

impl ResponseStatus {
    /// The status of a response with this code, and the Status fields when `body` is a
    /// `Status` object.
    pub fn from_response(code: u16, body: Option<&Value>) -> Self {
        let mut s = ResponseStatus {
            code,
            ..ResponseStatus::default()
        };
        if let Some(b) = body.filter(|b| b.get("kind").and_then(Value::as_str) == Some("Status")) {
            let field = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            s.status = field("status");
            s.message = field("message");
            s.reason = field("reason");
            s.details = b.get("details").cloned();
        }
        s
    }
}

/// A `metav1.MicroTime` for now: RFC 3339 in UTC with microseconds.
pub fn micro_time_now() -> String {
    micro_time(jiff::Timestamp::now())
}

/// Formats a timestamp as `metav1.MicroTime` (`2006-01-02T15:04:05.000000Z`).
pub fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Removes `metadata.managedFields` from a logged object (and from each item of a list), as
/// the policy's `omitManagedFields` asks.
pub fn strip_managed_fields(v: &mut Value) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_as_upstream() {
        let ev = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: Level::Metadata,
            audit_id: "a1".into(),
            stage: Stage::ResponseComplete,
            request_uri: "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create".into(),
            verb: "create".into(),
            user: UserInfo {
                username: "admin".into(),
                uid: String::new(),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
            },
            impersonated_user: None,
            source_ips: vec!["127.0.0.1".into()],
            user_agent: "kubectl/v1.33.0".into(),
            object_ref: Some(ObjectReference {
                resource: "configmaps".into(),
                namespace: "default".into(),
                name: "cm".into(),
                api_version: "v1".into(),
                ..ObjectReference::default()
            }),
            response_status: Some(ResponseStatus::from_response(201, None)),
            request_object: None,
            response_object: None,
            request_received_timestamp: micro_time(
                "2025-01-02T03:04:05.123456789Z".parse().unwrap(),
            ),
            stage_timestamp: micro_time("2025-01-02T03:04:05.2Z".parse().unwrap()),
            annotations: [
                (
                    "authorization.k8s.io/decision".to_string(),
                    "allow".to_string(),
                ),
                ("authorization.k8s.io/reason".to_string(), String::new()),
            ]
            .into(),
        };
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create","verb":"create","user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.33.0","objectRef":{"resource":"configmaps","namespace":"default","name":"cm","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2025-01-02T03:04:05.123456Z","stageTimestamp":"2025-01-02T03:04:05.200000Z","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#
        );
    }

    #[test]
    fn failure_status_fields_are_copied() {
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "nope", "reason": "Forbidden", "code": 403});
        let s = ResponseStatus::from_response(403, Some(&body));
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"metadata": {}, "status": "Failure", "message": "nope",
                "reason": "Forbidden", "code": 403})
        );
    }
}
