//! Auditing as kube-apiserver's `--audit-policy-file` and `--audit-log-*` flags set it up: the
//! [`policy`] decides each request's level and omitted stages, [`RequestAudit`] builds the
//! request's [`event::Event`] once and sends a copy per stage to the [`log`] backend (a bounded
//! channel to a writer thread, so requests never wait for the disk).
//!
//! The HTTP layer drives it: `RequestReceived` after authentication, `ResponseStarted` when a
//! watch starts streaming, `ResponseComplete` when the response is done (for a watch, when its
//! stream ends).

pub mod event;
pub mod log;
pub mod policy;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use event::{Event, ObjectReference, ResponseStatus, UserInfo};
use policy::{Attributes, Decision, Level, Policy, Stage};

/// The audit settings (`--audit-policy-file`, `--audit-log-*`).
#[derive(Clone, Debug, Default)]
pub struct AuditOptions {
    /// `--audit-policy-file`: without it nothing is audited.
    pub policy_file: Option<PathBuf>,
    /// `--audit-log-path` and its companions: without it nothing is audited.
    pub log: Option<log::LogOptions>,
}

/// A policy and a backend.
pub struct Auditor {
    policy: Policy,
    backend: log::LogBackend,
}

impl Auditor {
    /// Loads the policy and starts the backend; `None` when auditing is not configured (no
    /// policy file or no log path, as upstream audits nothing without both).
    pub fn start(opts: &AuditOptions) -> anyhow::Result<Option<Arc<Self>>> {
        let policy = match &opts.policy_file {
            Some(p) => Some(Policy::from_file(p)?),
            None => None,
        };
        let (Some(policy), Some(log)) = (policy, &opts.log) else {
            return Ok(None);
        };
        Ok(Some(Arc::new(Auditor {
            policy,
            backend: log::LogBackend::start(log)?,
        })))
    }

    /// Starts auditing one request; `None` when the policy's level for it is `None`.
    pub fn begin(
        self: &Arc<Self>,
        attrs: &Attributes<'_>,
        request: RequestInfo,
    ) -> Option<RequestAudit> {
        let decision = self.policy.decide(attrs);
        if decision.level == Level::None {
            return None;
        }
        let object_ref = attrs.resource.map(|r| ObjectReference {
            resource: r.resource.to_string(),
            namespace: r.namespace.to_string(),
            name: r.name.to_string(),
            api_group: r.group.to_string(),
            api_version: request.api_version,
            subresource: r.subresource.to_string(),
            ..ObjectReference::default()
        });
        let now = event::micro_time_now();
        Some(RequestAudit {
            auditor: self.clone(),
            decision,
            event: Event {
                kind: "Event",
                api_version: "audit.k8s.io/v1",
                level: decision.level,
                audit_id: request.audit_id,
                stage: Stage::RequestReceived,
                request_uri: request.uri,
                verb: attrs.verb.to_string(),
                user: UserInfo {
                    username: attrs.user.to_string(),
                    uid: request.uid,
                    groups: attrs.groups.to_vec(),
                },
                impersonated_user: None,
                source_ips: request.source_ips,
                user_agent: request.user_agent,
                object_ref,
                response_status: None,
                request_object: None,
                response_object: None,
                stage_timestamp: now.clone(),
                request_received_timestamp: now,
                annotations: BTreeMap::new(),
            },
        })
    }
}

/// What the event records besides the policy's attributes.
#[derive(Clone, Debug, Default)]
pub struct RequestInfo {
    /// The audit id (also sent as `Audit-Id`).
    pub audit_id: String,
    /// Path and query.
    pub uri: String,
    /// The user's UID.
    pub uid: String,
    /// Client addresses.
    pub source_ips: Vec<String>,
    /// `User-Agent`.
    pub user_agent: String,
    /// The API version of a resource request.
    pub api_version: String,
}

/// One request being audited.
pub struct RequestAudit {
    auditor: Arc<Auditor>,
    decision: Decision,
    event: Event,
}

impl RequestAudit {
    /// The level the policy chose.
    pub fn level(&self) -> Level {
        self.decision.level
    }

    /// Records whom the request acts as, when it impersonates.
    pub fn impersonated(&mut self, user: &crate::auth::User) {
        self.event.impersonated_user = Some(UserInfo {
            username: user.name.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
        });
    }

    /// Records the authorizer's decision (`authorization.k8s.io/decision` and `/reason`).
    pub fn authorized(&mut self, allowed: bool, reason: &str) {
        let decision = if allowed { "allow" } else { "forbid" };
        self.event
            .annotations
            .insert("authorization.k8s.io/decision".into(), decision.into());
        self.event
            .annotations
            .insert("authorization.k8s.io/reason".into(), reason.into());
    }

    /// Records the audit annotations admission plugins left (`AddAnnotation`).
    pub fn annotate(&mut self, annotations: Vec<(String, String)>) {
        self.event.annotations.extend(annotations);
    }

    /// Completes the object reference from the request body's metadata, as upstream's
    /// `LogRequestObject` does at every level (a create names its object only in the body).
    pub fn object_meta(&mut self, name: &str, namespace: &str, uid: &str, resource_version: &str) {
        let Some(r) = &mut self.event.object_ref else {
            return;
        };
        for (field, value) in [
            (&mut r.name, name),
            (&mut r.namespace, namespace),
            (&mut r.uid, uid),
            (&mut r.resource_version, resource_version),
        ] {
            if field.is_empty() {
                value.clone_into(field);
            }
        }
    }

    /// Records the request body (level `Request` and above).
    pub fn request_object(&mut self, mut obj: Value) {
        if self.decision.level >= Level::Request {
            if self.decision.omit_managed_fields {
                event::strip_managed_fields(&mut obj);
            }
            self.event.request_object = Some(obj);
        }
    }

    /// Records the response: its code, the Status fields when the body is a Status, and the
    /// body itself at level `RequestResponse`.
    pub fn response(&mut self, code: u16, body: Option<Value>) {
        self.event.response_status = Some(ResponseStatus::from_response(code, body.as_ref()));
        if self.decision.level >= Level::RequestResponse
            && let Some(mut obj) = body
        {
            if self.decision.omit_managed_fields {
                event::strip_managed_fields(&mut obj);
            }
            self.event.response_object = Some(obj);
        }
    }

    /// Whether the response body is wanted (level `RequestResponse`).
    pub fn wants_response_body(&self) -> bool {
        self.decision.level >= Level::RequestResponse
    }

    /// Sends the event of a stage, unless the policy omits it.
    pub async fn stage(&mut self, stage: Stage) {
        if self.decision.omit_stages.contains(stage) {
            return;
        }
        let mut ev = self.event.clone();
        ev.stage = stage;
        if stage != Stage::RequestReceived {
            ev.stage_timestamp = event::micro_time_now();
        }
        // The RequestReceived event carries no bodies or response.
        if stage == Stage::RequestReceived {
            ev.request_object = None;
            ev.response_status = None;
        }
        self.auditor.backend.send(ev).await;
    }

    /// Sends the `ResponseComplete` event (unless omitted), moving the event rather than
    /// copying its bodies.
    pub async fn complete(self) {
        if self.decision.omit_stages.contains(Stage::ResponseComplete) {
            return;
        }
        let mut ev = self.event;
        ev.stage = Stage::ResponseComplete;
        ev.stage_timestamp = event::micro_time_now();
        self.auditor.backend.send(ev).await;
    }
}
