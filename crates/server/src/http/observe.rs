//! What every request leaves behind: the `Audit-Id` header, the audit events of its stages and
//! the request metrics (`apiserver_request_total`, `apiserver_request_duration_seconds`).
//!
//! [`handle`](super::handle) opens an [`Observation`] when a request arrives, tells it what the
//! filters decided, and hands it the response; [`Observation::finish`] records the request once.
//! A streamed response (a watch) is recorded when its body is dropped, which happens exactly
//! once whether the stream ended or the client went away.
//!
//! Architecture Invariant: every request increments `apiserver_request_total` exactly once and,
//! when its audit level is above `None`, produces exactly one final audit event
//! (`ResponseComplete`; `ResponseStarted` for a failed authentication, as upstream).

use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use serde_json::Value;

use crate::audit::policy::{Attributes, Level, ResourceAttributes, Stage};
use crate::audit::{RequestAudit, RequestInfo};
use crate::auth::User;
use crate::body::{BoxBody, full};
use crate::metrics::{self, RequestLabels};
use crate::request::route::{Query, Route, Verb};
use crate::state::AppState;

/// The client's address, put into each request's extensions by the accept loop.
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub SocketAddr);

/// The header carrying the audit id, in both directions.
const AUDIT_ID: &str = "audit-id";

/// One request being observed.
pub struct Observation {
    started: Instant,
    audit_id: String,
    authenticated: bool,
    /// Boxed: most servers audit nothing, and every request's future holds its observation.
    audit: Option<Box<RequestAudit>>,
}

impl Observation {
    /// Starts observing a request: its audit id is the client's `Audit-ID`, or a new UUID.
    pub fn new(headers: &HeaderMap, started: Instant) -> Self {
        let audit_id = headers
            .get(AUDIT_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map_or_else(
                // A v4 UUID from the thread-local generator (no system call per request).
                || {
                    uuid::Builder::from_random_bytes(rand::random())
                        .into_uuid()
                        .to_string()
                },
                str::to_string,
            );
        Observation {
            started,
            audit_id,
            authenticated: true,
            audit: None,
        }
    }

    /// The request's user is known: decides its audit level and sends `RequestReceived`.
    pub async fn authenticated(
        &mut self,
        state: &AppState,
        user: &User,
        parts: &http::request::Parts,
        route: &Route,
    ) {
        let Some(auditor) = &state.auditor else {
            return;
        };
        // Boxed, as every audit step here: the request's future, which hyper moves whole,
        // holds only a pointer for the audit work a server without auditing never does.
        Box::pin(self.begin_audit(auditor, user, parts, route)).await;
    }

    /// [`Observation::authenticated`] on a server that audits.
    async fn begin_audit(
        &mut self,
        auditor: &std::sync::Arc<crate::audit::Auditor>,
        user: &User,
        parts: &http::request::Parts,
        route: &Route,
    ) {
        let method_verb;
        let (verb, resource, api_version) = if let Route::Resource(r) = route {
            (
                r.verb.as_str(),
                Some(ResourceAttributes {
                    group: &r.group,
                    resource: &r.resource,
                    subresource: r.subresource.as_deref().unwrap_or(""),
                    namespace: r.namespace.as_deref().unwrap_or(""),
                    name: r.name.as_deref().unwrap_or(""),
                }),
                r.version.clone(),
            )
        } else {
            method_verb = parts.method.as_str().to_ascii_lowercase();
            (method_verb.as_str(), None, String::new())
        };
        let attrs = Attributes {
            user: &user.name,
            groups: &user.groups,
            verb,
            resource,
            path: parts.uri.path(),
        };
        let info = RequestInfo {
            audit_id: self.audit_id.clone(),
            uri: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_string(), ToString::to_string),
            uid: user.uid.clone(),
            source_ips: source_ips(parts),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
            api_version,
        };
        self.audit = auditor.begin(&attrs, info).map(Box::new);
        if let Some(a) = &mut self.audit {
            a.stage(Stage::RequestReceived).await;
        }
    }

    /// Authentication failed: the request is audited as upstream's failed-authentication
    /// filter does, with no user and a single `ResponseStarted` event.
    pub fn unauthenticated(&mut self) {
        self.authenticated = false;
    }

    /// Records the impersonated user (audit's `impersonatedUser`).
    pub fn impersonated(&mut self, user: &User) {
        if let Some(a) = &mut self.audit {
            a.impersonated(user);
        }
    }

    /// Records the authorizer's decision.
    pub fn authorized(&mut self, allowed: bool, reason: &str) {
        if let Some(a) = &mut self.audit {
            a.authorized(allowed, reason);
        }
    }

    /// Records the audit annotations admission plugins left (`request_level` ones only at
    /// level `Request` and above).
    pub fn admission_annotations(
        &mut self,
        annotations: Vec<(String, String)>,
        request_level: Vec<(String, String)>,
    ) {
        let Some(a) = &mut self.audit else {
            return;
        };
        if !annotations.is_empty() {
            a.annotate(annotations);
        }
        if !request_level.is_empty() && a.level() >= Level::Request {
            a.annotate(request_level);
        }
    }

    /// Records the request body, for levels `Request` and `RequestResponse`.
    pub fn request_body(&mut self, headers: &HeaderMap, body: &Bytes) {
        let Some(a) = &mut self.audit else {
            return;
        };
        if body.is_empty() {
            return;
        }
        if a.level() < Level::Request {
            // Only the metadata, to name the object; the body is not logged.
            #[derive(serde::Deserialize, Default)]
            #[serde(default, rename_all = "camelCase")]
            struct Meta {
                name: String,
                namespace: String,
                uid: String,
                resource_version: String,
            }
            #[derive(serde::Deserialize)]
            struct Object {
                #[serde(default)]
                metadata: Meta,
            }
            if is_json(headers)
                && let Ok(o) = serde_json::from_slice::<Object>(body)
            {
                let m = o.metadata;
                a.object_meta(&m.name, &m.namespace, &m.uid, &m.resource_version);
            }
            return;
        }
        if let Some(v) = decode(headers, body) {
            let meta = |k: &str| v["metadata"][k].as_str().unwrap_or("").to_string();
            let (name, namespace, uid, rv) = (
                meta("name"),
                meta("namespace"),
                meta("uid"),
                meta("resourceVersion"),
            );
            a.object_meta(&name, &namespace, &uid, &rv);
            a.request_object(v);
        }
    }

    /// Records the finished request: sets `Audit-Id`, sends the final audit event and counts the
    /// request, or arranges both for when a streamed body is dropped.
    pub async fn finish(
        mut self,
        state: &AppState,
        parts: &http::request::Parts,
        route: &Route,
        query: &Query,
        mut resp: Response<BoxBody>,
    ) -> Response<BoxBody> {
        if let Ok(v) = HeaderValue::from_str(&self.audit_id) {
            resp.headers_mut().insert(AUDIT_ID, v);
        }
        let code = resp.status().as_u16();
        if !self.authenticated {
            Box::pin(self.audit_failed_authentication(state, parts, code)).await;
        }
        let streamed = resp.body().size_hint().exact().is_none();
        if streamed {
            let labels = OwnedLabels::of(parts, route, query, self.authenticated);
            let mut audit = self.audit.take();
            if let Some(a) = &mut audit {
                a.response(code, None);
                Box::pin(a.stage(Stage::ResponseStarted)).await;
            }
            let started = self.started;
            let (head, body) = resp.into_parts();
            let body = OnDrop {
                inner: body,
                done: Some(Box::new(move || {
                    metrics::request(&labels.borrow(), code, started.elapsed());
                    if let (Some(a), Ok(rt)) = (audit, tokio::runtime::Handle::try_current()) {
                        rt.spawn(a.complete());
                    }
                })),
            };
            return Response::from_parts(head, body.boxed_unsync());
        }
        if let Some(a) = self.audit.take() {
            resp = Box::pin(audit_response(*a, code, resp)).await;
        }
        let labels = borrowed_labels(parts, route, query, self.authenticated);
        metrics::request(&labels, code, self.started.elapsed());
        resp
    }

    async fn audit_failed_authentication(
        &mut self,
        state: &AppState,
        parts: &http::request::Parts,
        code: u16,
    ) {
        let Some(auditor) = &state.auditor else {
            return;
        };
        let verb = parts.method.as_str().to_ascii_lowercase();
        let attrs = Attributes {
            verb: &verb,
            path: parts.uri.path(),
            ..Attributes::default()
        };
        let info = RequestInfo {
            audit_id: self.audit_id.clone(),
            uri: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_string(), ToString::to_string),
            source_ips: source_ips(parts),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
            ..RequestInfo::default()
        };
        if let Some(mut a) = auditor.begin(&attrs, info) {
            a.response(code, None);
            a.stage(Stage::ResponseStarted).await;
        }
    }
}

/// Records a finished, not streamed, response in its audit (with its body when the level asks
/// for it) and sends the final event; returns the response as it was.
async fn audit_response(
    mut a: RequestAudit,
    code: u16,
    mut resp: Response<BoxBody>,
) -> Response<BoxBody> {
    let wanted = code >= 400 || a.wants_response_body();
    let mut value = None;
    if wanted {
        let (head, body) = resp.into_parts();
        let bytes = body
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        value = decode(&head.headers, &bytes);
        resp = Response::from_parts(head, full(bytes));
    }
    a.response(code, value);
    a.complete().await;
    resp
}

/// Whether a body is JSON by its `Content-Type` (JSON when none is given).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.contains("json"))
}

/// The body of a request or response as JSON (or YAML), when it is one.
fn decode(headers: &HeaderMap, body: &Bytes) -> Option<Value> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    if ct.contains("yaml") {
        serde_saphyr::from_slice(body).ok()
    } else if ct.contains("json") {
        serde_json::from_slice(body).ok()
    } else {
        None
    }
}

/// `X-Forwarded-For`, `X-Real-Ip`, then the peer, without repeats, as upstream's `SourceIPs`.
fn source_ips(parts: &http::request::Parts) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let mut push = |ip: &str| {
        let ip = ip.trim();
        if !ip.is_empty() && ip.parse::<std::net::IpAddr>().is_ok() && !ips.iter().any(|i| i == ip)
        {
            ips.push(ip.to_string());
        }
    };
    let header_str = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(fwd) = header_str("x-forwarded-for") {
        fwd.split(',').for_each(&mut push);
    }
    if let Some(real) = header_str("x-real-ip") {
        push(real);
    }
    if let Some(PeerAddr(peer)) = parts.extensions.get::<PeerAddr>() {
        push(&peer.ip().to_string());
    }
    ips
}

/// The metrics verb of a request, as upstream's `CleanVerb` reports it.
fn metrics_verb<'a>(parts: &'a http::request::Parts, route: &Route) -> &'a str {
    let Route::Resource(r) = route else {
        return parts.method.as_str();
    };
    match r.verb {
        Verb::Get => "GET",
        Verb::List => "LIST",
        Verb::Watch => "WATCH",
        Verb::Create => "POST",
        Verb::Update => "PUT",
        Verb::Patch => {
            let apply = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.starts_with("application/apply-patch"));
            if apply { "APPLY" } else { "PATCH" }
        }
        Verb::Delete => "DELETE",
        Verb::DeleteCollection => "DELETECOLLECTION",
    }
}

/// `dry_run`: empty, `All`, or `invalid`.
fn dry_run(query: &Query) -> &'static str {
    match query.get("dryRun") {
        None | Some("") => "",
        Some("All") => "All",
        Some(_) => "invalid",
    }
}

/// The path label of a non-resource request: health endpoints by their root, unknown paths
/// empty (their number is unbounded), others by path.
fn nonresource_path<'a>(parts: &'a http::request::Parts, route: &Route) -> &'a str {
    let path = parts.uri.path();
    match route {
        Route::Unknown | Route::WrongMethod(_) => "",
        Route::Health => ["/healthz", "/livez", "/readyz"]
            .into_iter()
            .find(|root| path.starts_with(root))
            .unwrap_or(""),
        _ => path,
    }
}

fn borrowed_labels<'a>(
    parts: &'a http::request::Parts,
    route: &'a Route,
    query: &Query,
    authenticated: bool,
) -> RequestLabels<'a> {
    let verb = metrics_verb(parts, route);
    let dry_run = dry_run(query);
    if !authenticated {
        // Labels of unauthenticated requests carry nothing the client chose.
        return RequestLabels {
            verb,
            dry_run,
            ..RequestLabels::default()
        };
    }
    match route {
        Route::Resource(r) => RequestLabels {
            verb,
            dry_run,
            group: &r.group,
            version: &r.version,
            resource: &r.resource,
            subresource: r.subresource.as_deref().unwrap_or(""),
            scope: if r.namespace.is_some() {
                "namespace"
            } else if r.name.is_some() {
                "resource"
            } else {
                "cluster"
            },
        },
        _ => RequestLabels {
            verb,
            dry_run,
            subresource: nonresource_path(parts, route),
            ..RequestLabels::default()
        },
    }
}

/// Labels kept past the request's frame, for streamed responses.
struct OwnedLabels {
    verb: String,
    dry_run: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
}

impl OwnedLabels {
    fn of(parts: &http::request::Parts, route: &Route, query: &Query, auth: bool) -> Self {
        let l = borrowed_labels(parts, route, query, auth);
        let scope = match l.scope {
            "namespace" => "namespace",
            "resource" => "resource",
            "cluster" => "cluster",
            _ => "",
        };
        OwnedLabels {
            verb: l.verb.to_string(),
            dry_run: dry_run(query),
            group: l.group.to_string(),
            version: l.version.to_string(),
            resource: l.resource.to_string(),
            subresource: l.subresource.to_string(),
            scope,
        }
    }

    fn borrow(&self) -> RequestLabels<'_> {
        RequestLabels {
            verb: &self.verb,
            dry_run: self.dry_run,
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
            scope: self.scope,
        }
    }
}

type Done = Box<dyn FnOnce() + Send>;

/// A body that runs a function once when dropped (the end of a streamed response).
struct OnDrop {
    inner: BoxBody,
    done: Option<Done>,
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            done();
        }
    }
}

impl Body for OnDrop {
    type Data = Bytes;
    type Error = crate::body::BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Keeps `apiserver_current_inflight_requests` while a request holds an in-flight slot.
pub fn inflight(method: &http::Method) -> metrics::InflightGuard {
    metrics::InflightGuard::new(!matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::route;

    fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
        let mut b = http::Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn labels_follow_upstream_clean_verb_and_scope() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/a/pods/p",
                "",
                "GET",
                "namespace",
                "",
            ),
            ("GET", "/api/v1/pods", "", "LIST", "cluster", ""),
            ("GET", "/api/v1/pods?watch=true", "", "WATCH", "cluster", ""),
            ("GET", "/api/v1/nodes/n", "", "GET", "resource", ""),
            (
                "POST",
                "/api/v1/namespaces/a/pods?dryRun=All",
                "",
                "POST",
                "namespace",
                "All",
            ),
            (
                "PUT",
                "/api/v1/namespaces/a/pods/p?dryRun=Some",
                "",
                "PUT",
                "namespace",
                "invalid",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/a/pods/p",
                "application/merge-patch+json",
                "PATCH",
                "namespace",
                "",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/a/pods/p",
                "application/apply-patch+yaml",
                "APPLY",
                "namespace",
                "",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/a/pods",
                "",
                "DELETECOLLECTION",
                "namespace",
                "",
            ),
            ("GET", "/readyz/etcd", "", "GET", "", ""),
        ];
        for (method, uri, ct, verb, scope, dry) in cases {
            let p = parts(method, uri, &[("content-type", ct)]);
            let q = Query::parse(p.uri.query());
            let r = route::parse(&p.method, p.uri.path(), &q);
            let l = borrowed_labels(&p, &r, &q, true);
            assert_eq!(
                (l.verb, l.scope, l.dry_run),
                (verb, scope, dry),
                "{method} {uri}"
            );
        }
        let p = parts("GET", "/readyz/etcd", &[]);
        let q = Query::default();
        let r = route::parse(&p.method, p.uri.path(), &q);
        assert_eq!(borrowed_labels(&p, &r, &q, true).subresource, "/readyz");
        let p = parts("GET", "/apis/x.io/v1/things", &[]);
        let r = route::parse(&p.method, p.uri.path(), &q);
        let l = borrowed_labels(&p, &r, &q, false);
        assert_eq!((l.verb, l.group, l.resource), ("LIST", "", ""));
        let p = parts("GET", "/no/such/path", &[]);
        let r = route::parse(&p.method, p.uri.path(), &q);
        assert_eq!(borrowed_labels(&p, &r, &q, true).subresource, "");
    }

    #[test]
    fn source_ips_list_forwarded_then_real_then_peer() {
        let mut p = parts(
            "GET",
            "/api",
            &[
                ("x-forwarded-for", "10.0.0.1, 10.0.0.2,bogus"),
                ("x-real-ip", "10.0.0.2"),
            ],
        );
        p.extensions
            .insert(PeerAddr(SocketAddr::from(([127, 0, 0, 1], 5000))));
        assert_eq!(source_ips(&p), ["10.0.0.1", "10.0.0.2", "127.0.0.1"]);
    }
}
