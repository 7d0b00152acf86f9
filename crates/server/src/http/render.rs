//! Rendering: handler replies, Status errors, plain text and discovery documents become HTTP
//! responses here, and only here.
//!
//! Architecture Invariant: every error leaving the server is a `Status`, produced in
//! [`error_response`], except the plain `404 page not found` kube-apiserver itself sends for
//! unknown paths.

use bytes::Bytes;
use crd_core::Status;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::Value;

use crate::body::{BoxBody, full};
use crate::error::ApiError;
use crate::handlers::{Reply, ReplyBody};
use crate::request::negotiate::Output;

/// Renders a handler's reply in the negotiated output.
pub fn render(reply: Reply, output: Output) -> Response<BoxBody> {
    let code = StatusCode::from_u16(reply.code).unwrap_or(StatusCode::OK);
    let mut resp = match reply.body {
        ReplyBody::Value(v) => {
            let ct = reply.content_type.unwrap_or(match output {
                Output::Table => crate::table::TABLE_CONTENT_TYPE,
                Output::PartialObjectMetadata if v["kind"] == "PartialObjectMetadataList" => {
                    crate::table::METADATA_LIST_CONTENT_TYPE
                }
                Output::PartialObjectMetadata => crate::table::METADATA_CONTENT_TYPE,
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
        // A streamed or assembled list says its own type (a Table, YAML); JSON otherwise.
        ReplyBody::Stream(body) => with_type(
            Response::new(body),
            reply.content_type.unwrap_or("application/json"),
        ),
        ReplyBody::RawJson(bytes) => with_type(
            Response::new(full(bytes)),
            reply.content_type.unwrap_or("application/json"),
        ),
    };
    *resp.status_mut() = code;
    add_warnings(resp.headers_mut(), &reply.warnings);
    resp
}

/// Sets the content type and `Cache-Control: no-cache, private`.
pub fn with_type(mut resp: Response<BoxBody>, ct: &'static str) -> Response<BoxBody> {
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}

/// A JSON response with a content type and warnings.
pub fn json_response(
    code: StatusCode,
    v: &Value,
    ct: &'static str,
    warnings: &[String],
) -> Response<BoxBody> {
    let Ok(bytes) = serde_json::to_vec(v) else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "encoding the response failed\n",
        );
    };
    let mut resp = with_type(Response::new(full(bytes)), ct);
    *resp.status_mut() = code;
    add_warnings(resp.headers_mut(), warnings);
    resp
}

/// Renders a Status with its HTTP code.
/// A Status that asks the client to wait (`details.retryAfterSeconds`) also says so in
/// `Retry-After`, as upstream's `ErrorNegotiated` does.
pub fn status_response(s: &Status, warnings: &[String]) -> Response<BoxBody> {
    let v = serde_json::to_value(s).unwrap_or(Value::Null);
    let mut resp = json_response(
        StatusCode::from_u16(s.http_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &v,
        "application/json",
        warnings,
    );
    if let Some(seconds) = s
        .details
        .as_ref()
        .and_then(|d| d.retry_after_seconds)
        .filter(|s| *s > 0)
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, value);
    }
    resp
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

/// A plain-text response.
pub fn text(code: StatusCode, body: &'static str) -> Response<BoxBody> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Aggregated discovery, with kube-apiserver's `ETag` and 304 handling: a request whose
/// `If-None-Match` is the document's `ETag` gets `304 Not Modified` and no body.
pub fn aggregated_response(
    doc: &crate::discovery::Rendered,
    headers: &http::HeaderMap,
) -> Response<BoxBody> {
    let mut resp = if if_none_match(headers, &doc.etag) {
        not_modified()
    } else {
        Response::new(full(doc.bytes.clone()))
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
    if let Ok(v) = HeaderValue::from_str(&doc.etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

/// Whether the request's `If-None-Match` names `etag` (quoted), as one of its comma-separated
/// tags or as `*` (Go's `http.ServeContent`, which kube-openapi's handlers use).
pub fn if_none_match(headers: &http::HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

/// An empty `304 Not Modified`.
pub fn not_modified() -> Response<BoxBody> {
    let mut r = Response::new(full(Bytes::new()));
    *r.status_mut() = StatusCode::NOT_MODIFIED;
    r
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
