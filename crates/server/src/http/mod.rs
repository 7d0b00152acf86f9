//! The HTTP layer: one request's way through the server. [`accept`] takes connections;
//! [`handle`] parses the route and options, sets the request's [`deadline`], runs the
//! [`filters`] (authentication, authorization),
//! bounds requests in flight, reads the body, and hands the request to [`nonresource`] endpoints
//! or to the resource handlers; [`render`] turns replies and errors into responses, and
//! [`compress`] gzips them for clients that ask.

pub mod accept;
pub mod compress;
pub mod deadline;
pub mod filters;
pub mod nonresource;
pub mod observe;
pub mod render;

use std::sync::Arc;

use crd_core::Status;
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

pub use accept::serve;
pub use render::{add_warnings, error_response, status_response};

use crate::body::BoxBody;
use crate::error::ApiError;
use crate::handlers::{self, Ctx};
use crate::registry::Subresource;
use crate::request::negotiate;
use crate::request::options::RequestOptions;
use crate::request::route::{self, Query, Route, Verb};
use crate::state::AppState;

/// kube-apiserver's default `--max-request-body-bytes`.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Handles one request end to end; every request is observed once (metrics, audit, `Audit-Id`).
pub async fn handle(
    state: Arc<AppState>,
    server_address: &str,
    certificate: Option<&crate::auth::ClientCertificate>,
    req: Request<Incoming>,
) -> Response<BoxBody> {
    let received = std::time::Instant::now();
    let mut obs = observe::Observation::new(req.headers(), received);
    let (parts, body) = req.into_parts();
    let query = Query::parse(parts.uri.query());
    let route = route::parse(&parts.method, parts.uri.path(), &query);
    // Outside authentication, as upstream's deadline filter wraps it.
    let resp = match deadline::of(&route, &query, state.limits.request_timeout()) {
        Err(s) => status_response(&s, &[]),
        Ok(timeout) => {
            let serve = serve_request(
                &state,
                server_address,
                certificate,
                &parts,
                body,
                &query,
                &route,
                &mut obs,
            );
            match timeout {
                None => serve.await,
                Some(t) => {
                    let at = tokio::time::Instant::from_std(received) + t;
                    match tokio::time::timeout_at(at, serve).await {
                        Ok(resp) => resp,
                        Err(_) => status_response(&deadline::timed_out(), &[]),
                    }
                }
            }
        }
    };
    let resp = obs.finish(&state, &parts, &route, &query, resp).await;
    // After the observation, so that audit records the body as rendered, not as sent.
    compress::negotiate(&parts.headers, &route, resp).await
}

/// The request's way from the filters to a response, telling `obs` what the filters decided.
#[allow(clippy::too_many_arguments)]
async fn serve_request(
    state: &Arc<AppState>,
    server_address: &str,
    certificate: Option<&crate::auth::ClientCertificate>,
    parts: &http::request::Parts,
    body: Incoming,
    query: &Query,
    route: &Route,
    obs: &mut observe::Observation,
) -> Response<BoxBody> {
    let user =
        match filters::authenticate(state, &parts.headers, certificate, parts.uri.path()).await {
            Ok(u) => u,
            Err(s) => {
                obs.unauthenticated();
                return status_response(&s, &[]);
            }
        };
    obs.authenticated(state, &user, parts, route).await;
    let user = match filters::impersonate(state, user, &parts.headers).await {
        Ok(u) => u,
        Err(s) => {
            obs.authorized(false, "");
            return status_response(&s, &[]);
        }
    };
    // Every impersonation names a user (groups alone are refused above).
    if parts.headers.contains_key("impersonate-user") {
        obs.impersonated(&user);
    }
    let authorized = filters::authorize(
        state,
        &user,
        &parts.method,
        parts.uri.path(),
        parts.uri.query(),
        route,
    )
    .await;
    obs.authorized(authorized.denial.is_none(), &authorized.reason);
    if let Some(s) = authorized.denial {
        return status_response(&s, &[]);
    }
    // Watches are long-running and not counted, as in kube-apiserver's max-in-flight filter
    // (which follows impersonation); past the limit, `system:masters` is served uncounted
    // ("a super-admin or a loopback connection ... should always get an answer").
    let long_running = matches!(route, Route::Resource(r) if r.verb == Verb::Watch);
    let _in_flight = if long_running {
        None
    } else {
        match state.limits.try_acquire(&parts.method) {
            Some(p) => Some((p, observe::inflight(&parts.method))),
            None if user
                .groups
                .iter()
                .any(|g| g == crate::authz::PRIVILEGED_GROUP) =>
            {
                None
            }
            None => return too_many_requests(),
        }
    };
    let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return status_response(&Status::too_large(MAX_BODY_BYTES), &[]);
        }
        Err(e) => {
            return status_response(
                &Status::bad_request(format!("reading the request body: {e}")),
                &[],
            );
        }
    };
    obs.request_body(&parts.headers, &body);
    // Until start-up has finished (CRDs served, policy and admission informers synced) the
    // port is open for health checks, but no resource is served and an unknown path may only
    // be unknown yet: both are 503, as kube-apiserver's not-found handler answers then.
    let ready = state.is_ready();
    let Route::Resource(req) = route else {
        // Boxed: the resource path's future need not hold this one's state.
        return match Box::pin(nonresource::handle(
            state,
            server_address,
            parts,
            route.clone(),
            query,
            &body,
        ))
        .await
        {
            Ok(resp) => resp,
            Err(ApiError::NoRoute) if !ready => {
                status_response(&Status::paths_not_installed(), &[])
            }
            Err(e) => error_response(&e),
        };
    };
    if !ready {
        return status_response(&Status::paths_not_installed(), &[]);
    }
    let restful = |e: ApiError| match e {
        ApiError::NoRoute => no_route(state, &req.group, &req.version),
        e => e,
    };
    let strategy = match handlers::resolve(state, req) {
        Ok(s) => s,
        Err(e) => return error_response(&restful(e)),
    };
    let prepared = negotiate::choose_output(&parts.headers, false)
        .and_then(|output| Ok((output, RequestOptions::parse(query, req.verb, &body)?)));
    let (output, opts) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let mut resp = error_response(&e);
            add_warnings(resp.headers_mut(), &strategy.warnings());
            return resp;
        }
    };
    let mut ctx = Ctx {
        state,
        user: &user,
        req,
        opts,
        headers: &parts.headers,
        body,
        output,
        sub: Subresource::Main,
        admission: std::sync::Mutex::default(),
    };
    let dispatched = handlers::dispatch(&mut ctx, strategy).await;
    let (admission_warnings, admission_annotations, request_annotations) = ctx
        .admission
        .get_mut()
        .map(|r| {
            (
                std::mem::take(&mut r.warnings),
                std::mem::take(&mut r.audit_annotations),
                std::mem::take(&mut r.request_audit_annotations),
            )
        })
        .unwrap_or_default();
    obs.admission_annotations(admission_annotations, request_annotations);
    match dispatched.result {
        Ok(mut r) => {
            r.warnings.extend(admission_warnings);
            render::render(r, output)
        }
        Err(e) => {
            let mut resp = error_response(&restful(e));
            add_warnings(resp.headers_mut(), &dispatched.warnings);
            add_warnings(resp.headers_mut(), &admission_warnings);
            resp
        }
    }
}

/// What a path under `group`/`version` that no route serves gets: under a built-in group
/// version, go-restful's JSON 404 (upstream routes every such path through it); elsewhere the
/// plain `404 page not found`.
fn no_route(state: &AppState, group: &str, version: &str) -> ApiError {
    if state.kinds.serves_group_version(group, version) {
        Status::route_not_found().into()
    } else {
        ApiError::NoRoute
    }
}

/// 429, as kube-apiserver's max-in-flight filter answers.
fn too_many_requests() -> Response<BoxBody> {
    let mut resp = status_response(
        &Status::failure(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        ),
        &[],
    );
    resp.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}
