//! The HTTP layer: the TLS accept loop (HTTP/1.1 and HTTP/2 via ALPN), authentication, body
//! limits, dispatch on the parsed [`route::Route`], and rendering of replies and errors.
//!
//! Modules: [`route`] (URL grammar), [`negotiate`] (media types), [`error`] (errors → Status).

pub mod error;
pub mod negotiate;
pub mod route;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use crd_core::Status;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use sha2::{Digest, Sha512};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;

use crate::auth::User;
use crate::discovery;
use crate::handlers::{self, Ctx, Reply, ReplyBody};
use crate::registry::Subresource;
use crate::state::AppState;
use error::ApiError;
use negotiate::Output;
use route::{Query, Route};

/// The response body type: whole bodies and watch streams alike.
pub type BoxBody = UnsyncBoxBody<Bytes, Infallible>;

/// kube-apiserver's default `--max-request-body-bytes`.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The Kubernetes version reported by `/version`; kubectl picks its own version from `minor`.
pub const KUBE_MINOR: &str = "32";

fn full(bytes: impl Into<Bytes>) -> BoxBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A streaming body fed by a channel (one chunk per watch event).
pub fn stream_body(rx: mpsc::Receiver<Bytes>) -> BoxBody {
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let stream = futures::StreamExt::map(stream, |b| Ok::<_, Infallible>(Frame::data(b)));
    StreamBody::new(stream).boxed_unsync()
}

/// Accepts TLS connections until `shutdown` turns true, then drains for a bounded time.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<AppState>,
    mut shutdown: watch::Receiver<bool>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    loop {
        let (tcp, _peer) = tokio::select! {
            conn = listener.accept() => match conn {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            _ = shutdown.changed() => break,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let state = state.clone();
        let local = local.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Ok(Ok(tls)) =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
            else {
                return;
            };
            // A verified client certificate (`--client-ca-file`) is an identity for the
            // whole connection.
            let cert_user: Option<Arc<User>> = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .and_then(|leaf| crate::tls::user_of_certificate(leaf.as_ref()))
                .map(Arc::new);
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                let local = local.clone();
                let cert_user = cert_user.clone();
                async move {
                    Ok::<_, Infallible>(handle(state, &local, cert_user.as_deref(), req).await)
                }
            });
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder.http2().max_concurrent_streams(1000);
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            let _ = watcher.watch(conn.into_owned()).await;
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("shutdown grace period over; closing remaining connections");
    }
}

/// Handles one request end to end.
pub async fn handle(
    state: Arc<AppState>,
    server_address: &str,
    cert_user: Option<&User>,
    req: Request<Incoming>,
) -> Response<BoxBody> {
    let (parts, body) = req.into_parts();
    let query = Query::parse(parts.uri.query());
    let route = route::parse(&parts.method, parts.uri.path(), &query);
    let public = matches!(route, Route::Health | Route::Version);
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !public {
        // A bearer token wins over a client certificate, as in kube-apiserver's union
        // authenticator (tokens are checked first).
        let Some(user) = state.auth.authenticate(authorization).or(cert_user) else {
            return status_response(&Status::unauthorized(), &[]);
        };
        let mut user = user.clone();
        user.groups.push("system:authenticated".into());
        let attrs = authorization_attributes(&parts.method, parts.uri.path(), &route);
        if !state.authorizer.allowed(&user, &attrs) {
            return status_response(&crate::authz::Authorizer::denial(&user, &attrs), &[]);
        }
    }
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
    let result = route_request(&state, server_address, &parts, route, &query, body).await;
    match result {
        Ok(resp) => resp,
        Err(e) => error_response(&e),
    }
}

/// The authorizer's view of a request.
fn authorization_attributes(
    method: &Method,
    path: &str,
    route: &Route,
) -> crate::authz::Attributes {
    match route {
        Route::Resource(r) => crate::authz::Attributes::Resource {
            verb: r.verb.as_str().to_string(),
            group: r.group.clone(),
            resource: match &r.subresource {
                Some(sub) => format!("{}/{sub}", r.resource),
                None => r.resource.clone(),
            },
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        },
        _ => crate::authz::Attributes::NonResource {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
        },
    }
}

async fn route_request(
    state: &Arc<AppState>,
    server_address: &str,
    parts: &http::request::Parts,
    route: Route,
    query: &Query,
    body: Bytes,
) -> Result<Response<BoxBody>, ApiError> {
    let get_only = |m: &Method| m == Method::GET || m == Method::HEAD;
    match route {
        Route::Health => {
            let path = parts.uri.path();
            if path.starts_with("/readyz") && !state.is_ready() {
                return Ok(text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "[-]storage not ready\nreadyz check failed\n",
                ));
            }
            Ok(text(StatusCode::OK, "ok"))
        }
        Route::Version => Ok(json_response(
            StatusCode::OK,
            &version_info(),
            "application/json",
            &[],
        )),
        Route::CoreVersions | Route::Groups if get_only(&parts.method) => {
            let output = negotiate::choose_output(&parts.headers, true)?;
            let core = route == Route::CoreVersions;
            if output == Output::AggregatedDiscovery {
                let doc = discovery::aggregated(&state.registry, core);
                return Ok(aggregated_response(&doc, &parts.headers));
            }
            let doc = if core {
                discovery::core_versions(server_address)
            } else {
                discovery::groups(&state.registry)
            };
            Ok(json_response(StatusCode::OK, &doc, "application/json", &[]))
        }
        Route::CoreResources if get_only(&parts.method) => Ok(json_response(
            StatusCode::OK,
            &discovery::core_resources(),
            "application/json",
            &[],
        )),
        Route::Group(g) if get_only(&parts.method) => {
            let doc = discovery::group(&state.registry, &g).ok_or(ApiError::NoRoute)?;
            Ok(json_response(StatusCode::OK, &doc, "application/json", &[]))
        }
        Route::GroupVersion(g, v) if get_only(&parts.method) => {
            let doc = discovery::group_version(&state.registry, &g, &v).ok_or(ApiError::NoRoute)?;
            Ok(json_response(StatusCode::OK, &doc, "application/json", &[]))
        }
        Route::DebugStorage(key) if get_only(&parts.method) => {
            let gr = crd_core::GroupResource::new("", "storage");
            let kv = state
                .store
                .get(&key)
                .await
                .map_err(|e| ApiError::storage(&gr, &key, e))?
                .ok_or_else(|| crd_core::Status::not_found(&gr, &key))?;
            let value: serde_json::Value = serde_json::from_slice(&kv.value).unwrap_or_else(|_| {
                serde_json::Value::String(String::from_utf8_lossy(&kv.value).into())
            });
            let doc = serde_json::json!({
                "key": kv.key,
                "createRevision": kv.create_revision,
                "modRevision": kv.mod_revision,
                "value": value,
            });
            Ok(json_response(StatusCode::OK, &doc, "application/json", &[]))
        }
        Route::DebugStorageVersions(name) if get_only(&parts.method) => {
            let gr =
                crd_core::GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
            let crd = state
                .registry
                .get(&name)
                .ok_or_else(|| crd_core::Status::not_found(&gr, &name))?;
            let counts = crate::registry::storage_versions::count_stored_versions(
                state.store.as_ref(),
                &crd,
            )
            .await
            .map_err(|e| ApiError::storage(&gr, &name, e))?;
            let doc = serde_json::json!({
                "crd": name,
                "storageVersion": crd.storage_version,
                "counts": counts,
            });
            Ok(json_response(StatusCode::OK, &doc, "application/json", &[]))
        }
        Route::OpenApiV2 if get_only(&parts.method) => {
            let docs = state.openapi.get(&state.registry);
            let (hash, bytes) = &docs.v2;
            let mut resp = Response::new(full(bytes.as_ref().clone()));
            let headers = resp.headers_mut();
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            if let Ok(etag) = http::HeaderValue::from_str(&format!("\"{hash}\"")) {
                headers.insert(http::header::ETAG, etag);
            }
            Ok(resp)
        }
        Route::OpenApiIndex if get_only(&parts.method) => {
            let docs = state.openapi.get(&state.registry);
            Ok(json_response(
                StatusCode::OK,
                &docs.index(),
                "application/json",
                &[],
            ))
        }
        Route::OpenApiDocument(path) if get_only(&parts.method) => {
            let docs = state.openapi.get(&state.registry);
            let (hash, bytes) = docs.docs.get(&path).ok_or(ApiError::NoRoute)?;
            let mut resp = Response::new(full(bytes.as_ref().clone()));
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if let Ok(v) = HeaderValue::from_str(&format!("\"{hash}\"")) {
                h.insert(header::ETAG, v);
            }
            let immutable = query.get("hash") == Some(hash.as_str());
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static(if immutable {
                    "public, immutable"
                } else {
                    "no-cache, private"
                }),
            );
            Ok(resp)
        }
        Route::Resource(req) => {
            let output = negotiate::choose_output(&parts.headers, false)?;
            let mut ctx = Ctx {
                state,
                req: &req,
                query,
                headers: &parts.headers,
                body,
                output,
                sub: Subresource::Main,
            };
            let reply = handlers::dispatch(&mut ctx).await;
            match reply {
                Ok(r) => Ok(render(r, output)),
                Err(e) => {
                    let mut resp = error_response(&e);
                    // Warnings (deprecation) accompany errors as well.
                    if let Some(w) = deprecation_warnings(&ctx) {
                        add_warnings(resp.headers_mut(), &w);
                    }
                    Ok(resp)
                }
            }
        }
        _ => Err(ApiError::NoRoute),
    }
}

fn deprecation_warnings(ctx: &Ctx<'_>) -> Option<Vec<String>> {
    let crd = ctx
        .state
        .registry
        .lookup(&ctx.req.group, &ctx.req.resource)?;
    let w = crd
        .served_version(&ctx.req.version)?
        .deprecation_warning
        .clone()?;
    Some(vec![w])
}

/// `/version`.
pub fn version_info() -> Value {
    serde_json::json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "emulationMajor": "1",
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "31",
        "gitVersion": format!("v1.{KUBE_MINOR}.0+crd-apiserver-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}

fn render(reply: Reply, output: Output) -> Response<BoxBody> {
    let code = StatusCode::from_u16(reply.code).unwrap_or(StatusCode::OK);
    let mut resp = match reply.body {
        ReplyBody::Value(v) => {
            let ct = reply.content_type.unwrap_or(match output {
                Output::Table => "application/json;as=Table;v=v1;g=meta.k8s.io",
                Output::PartialObjectMetadata => {
                    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
                }
                _ => "application/json",
            });
            if output == Output::Yaml {
                match serde_saphyr::to_string(&v) {
                    Ok(y) => with_type(Response::new(full(y)), "application/yaml"),
                    Err(e) => return status_response(&Status::internal(e), &[]),
                }
            } else {
                json_response(code, &v, ct, &[])
            }
        }
        ReplyBody::Status(s) => status_response(&s, &[]),
        ReplyBody::Stream(body) => with_type(Response::new(body), "application/json"),
        ReplyBody::RawJson(bytes) => with_type(Response::new(full(bytes)), "application/json"),
    };
    *resp.status_mut() = code;
    add_warnings(resp.headers_mut(), &reply.warnings);
    resp
}

fn with_type(mut resp: Response<BoxBody>, ct: &'static str) -> Response<BoxBody> {
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}

fn json_response(
    code: StatusCode,
    v: &Value,
    ct: &'static str,
    warnings: &[String],
) -> Response<BoxBody> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    let mut resp = with_type(Response::new(full(bytes)), ct);
    *resp.status_mut() = code;
    add_warnings(resp.headers_mut(), warnings);
    resp
}

/// Renders a Status with its HTTP code.
pub fn status_response(s: &Status, warnings: &[String]) -> Response<BoxBody> {
    let v = serde_json::to_value(s).unwrap_or(Value::Null);
    json_response(
        StatusCode::from_u16(s.http_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &v,
        "application/json",
        warnings,
    )
}

/// The single place where errors become HTTP responses.
pub fn error_response(e: &ApiError) -> Response<BoxBody> {
    if let Some(s) = e.to_status() {
        status_response(&s, &[])
    } else {
        let mut resp = text(StatusCode::NOT_FOUND, "404 page not found\n");
        resp.headers_mut().insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        resp
    }
}

fn text(code: StatusCode, body: &'static str) -> Response<BoxBody> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

fn aggregated_response(doc: &Value, headers: &http::HeaderMap) -> Response<BoxBody> {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    let etag = format!("\"{}\"", crate::openapi::hex_upper(&Sha512::digest(&bytes)));
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str());
    let mut resp = if matches {
        let mut r = Response::new(full(Bytes::new()));
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(full(bytes))
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ),
    );
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

/// Adds `Warning: 299 - "<text>"` headers, escaped as an RFC 7230 quoted-string, deduplicated.
pub fn add_warnings(headers: &mut http::HeaderMap, warnings: &[String]) {
    let mut seen = std::collections::HashSet::new();
    for w in warnings {
        if !seen.insert(w) {
            continue;
        }
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            headers.append(header::WARNING, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_escaped_and_deduplicated() {
        let mut h = http::HeaderMap::new();
        add_warnings(
            &mut h,
            &[
                "unknown field \"spec.foo\"".into(),
                "unknown field \"spec.foo\"".into(),
            ],
        );
        let all: Vec<_> = h.get_all(header::WARNING).iter().collect();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0], "299 - \"unknown field \\\"spec.foo\\\"\"");
    }
}
