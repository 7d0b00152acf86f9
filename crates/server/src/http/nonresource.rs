//! Non-resource endpoints: health (`/healthz`, `/livez`, `/readyz`), `/version`, `/metrics`,
//! discovery (`/api`, `/apis`, ...), OpenAPI (`/openapi/v2`, `/openapi/v3/...`) and the debug
//! endpoints (`/debug/storage`, `/debug/storage-versions`, `/debug/upgrade-check`).

use std::sync::Arc;

use http::{HeaderValue, Method, Response, StatusCode, header};

use super::render::{aggregated_response, if_none_match, json_response, not_modified};
use crate::body::{BoxBody, full};
use crate::discovery;
use crate::error::ApiError;
use crate::request::negotiate::{self, Output};
use crate::request::route::{Query, Route};
use crate::state::AppState;

/// Serves a non-resource route.
pub async fn handle(
    state: &Arc<AppState>,
    server_address: &str,
    parts: &http::request::Parts,
    route: Route,
    query: &Query,
    body: &[u8],
) -> Result<Response<BoxBody>, ApiError> {
    let get_only = |m: &Method| m == Method::GET || m == Method::HEAD;
    match route {
        Route::Health if get_only(&parts.method) => {
            let excludes: Vec<String> =
                form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
                    .filter(|(k, _)| k == "exclude")
                    .map(|(_, v)| v.into_owned())
                    .collect();
            let verbose = query.get("verbose").is_some();
            let reply = crate::health::serve(
                parts.uri.path(),
                &excludes,
                verbose,
                &state.health,
                state.store.as_ref(),
            )
            .await
            .ok_or(ApiError::NoRoute)?;
            let code =
                StatusCode::from_u16(reply.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = Response::new(full(reply.body));
            *resp.status_mut() = code;
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            Ok(resp)
        }
        Route::Metrics if get_only(&parts.method) => {
            update_storage_objects(state).await;
            let mut resp = Response::new(full(crate::metrics::metrics().render_body()));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            Ok(resp)
        }
        Route::OpenIdConfiguration if get_only(&parts.method) => {
            let doc = state
                .token_issuer()
                .map(|i| i.openid_configuration(&format!("https://{server_address}")));
            openid_response(doc)
        }
        Route::OpenIdKeys if get_only(&parts.method) => match state.token_issuer() {
            Some(i) => Ok(json_response(
                StatusCode::OK,
                &i.jwks(),
                "application/jwk-set+json",
                &[],
            )),
            None => Err(ApiError::NoRoute),
        },
        Route::Version => Ok(json_response(
            StatusCode::OK,
            &crate::version::version_info(),
            "application/json",
            &[],
        )),
        Route::CoreVersions | Route::Groups if get_only(&parts.method) => {
            let output = negotiate::choose_output(&parts.headers, true)?;
            let core = route == Route::CoreVersions;
            if output == Output::AggregatedDiscovery {
                let doc = state.discovery.aggregated(&state.registry, core);
                return Ok(aggregated_response(&doc, &parts.headers));
            }
            if core {
                let doc = discovery::core_versions(server_address);
                return Ok(json_response(StatusCode::OK, &doc, "application/json", &[]));
            }
            let mut resp = Response::new(full(state.discovery.legacy_groups(&state.registry)));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Ok(resp)
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
        Route::DebugUpgradeCheck if parts.method == Method::POST => {
            let proposed: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
                crd_core::Status::bad_request(format!("the body is not a CRD as JSON: {e}"))
            })?;
            let report = crate::registry::upgrade_check::check_proposal(
                state.store.as_ref(),
                &state.registry,
                proposed,
            )
            .await?;
            let doc = serde_json::to_value(&report)
                .map_err(|e| crd_core::Status::internal(e.to_string()))?;
            Ok(json_response(StatusCode::OK, &doc, "application/json", &[]))
        }
        Route::OpenApiV2 if get_only(&parts.method) => {
            let docs = state.openapi.get(&state.registry).await;
            let (hash, bytes) = docs.v2();
            // kubectl asks for gnostic's protobuf encoding, as kube-apiserver serves it.
            let protobuf = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains(crate::openapi_pb::MEDIA_TYPE));
            let etag = format!("\"{hash}\"");
            // kube-openapi serves it with `http.ServeContent`: a matching `If-None-Match` is
            // answered `304` without the (multi-megabyte) body.
            let (mut resp, content_type) = if if_none_match(&parts.headers, &etag) {
                (not_modified(), "application/json")
            } else if protobuf {
                (
                    Response::new(full(docs.v2_protobuf().to_vec())),
                    crate::openapi_pb::CONTENT_TYPE,
                )
            } else {
                (
                    Response::new(full(bytes.as_ref().clone())),
                    "application/json",
                )
            };
            let headers = resp.headers_mut();
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static(content_type),
            );
            if let Ok(etag) = http::HeaderValue::from_str(&etag) {
                headers.insert(http::header::ETAG, etag);
            }
            Ok(resp)
        }
        Route::OpenApiIndex if get_only(&parts.method) => {
            let docs = state.openapi.get(&state.registry).await;
            let mut resp = Response::new(full(docs.index().as_ref().clone()));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Ok(resp)
        }
        Route::OpenApiDocument(path) if get_only(&parts.method) => {
            let docs = state.openapi.get(&state.registry).await;
            let (hash, bytes) = docs.docs.get(&path).ok_or(ApiError::NoRoute)?;
            let mut resp = if if_none_match(&parts.headers, &format!("\"{hash}\"")) {
                not_modified()
            } else {
                Response::new(full(bytes.as_ref().clone()))
            };
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if let Ok(v) = HeaderValue::from_str(&format!("\"{hash}\"")) {
                h.insert(header::ETAG, v);
            }
            let immutable = query.get("hash") == Some(&**hash);
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
        Route::WrongMethod(w) => Err(
            if state
                .kinds
                .lookup(&w.group, &w.version, &w.resource)
                .is_some()
            {
                crd_core::Status::route_method_not_allowed().into()
            } else if !state.kinds.serves_group_version(&w.group, &w.version)
                && !w.named
                && matches!(parts.method, Method::PUT | Method::PATCH)
                && state
                    .registry
                    .strategy(&w.group, &w.resource, &w.version)
                    .is_some()
            {
                // The CRD handler takes the method's verb and finds no name in the path.
                crd_core::Status::bad_request("name parameter required.").into()
            } else {
                super::no_route(state, &w.group, &w.version)
            },
        ),
        _ => Err(ApiError::NoRoute),
    }
}

/// An OIDC discovery document (`application/json`, as upstream serves both), or 404 when
/// service-account tokens are off.
fn openid_response(doc: Option<serde_json::Value>) -> Result<Response<BoxBody>, ApiError> {
    match doc {
        Some(d) => Ok(json_response(StatusCode::OK, &d, "application/json", &[])),
        None => Err(ApiError::NoRoute),
    }
}

/// How long `apiserver_storage_objects` counts are reused (upstream refreshes them every
/// minute); a scrape within this time of the last count costs no storage call.
const STORAGE_OBJECTS_TTL: std::time::Duration = std::time::Duration::from_secs(5);

/// Refreshes `apiserver_storage_objects`: one `count` per storage prefix of each fixed kind
/// and each CRD, at most once per [`STORAGE_OBJECTS_TTL`].
async fn update_storage_objects(state: &AppState) {
    {
        let mut at = state
            .storage_objects_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if at.is_some_and(|t| t.elapsed() < STORAGE_OBJECTS_TTL) {
            return;
        }
        *at = Some(std::time::Instant::now());
    }
    let mut resources: Vec<(String, String)> = state
        .kinds
        .all()
        .map(|s| {
            let info = s.info();
            (
                info.group_resource().to_string(),
                format!("{}/", info.key_root),
            )
        })
        .collect();
    resources.extend(state.registry.all().iter().map(|crd| {
        (
            crd_core::GroupResource::new(&crd.group, &crd.plural).to_string(),
            format!("{}/", crd.key_root()),
        )
    }));
    resources.sort();
    resources.dedup();
    let mut counted: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for (resource, prefix) in resources {
        let n = if let Some(n) = counted.get(&prefix) {
            *n
        } else {
            let n = state
                .store
                .count(&prefix)
                .await
                .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
            counted.insert(prefix, n);
            n
        };
        crate::metrics::metrics().set_storage_objects(&resource, n);
    }
}
