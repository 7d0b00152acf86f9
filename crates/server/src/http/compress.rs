//! Response compression, negotiated as kube-apiserver negotiates it, so that a large list
//! crosses a slow link gzipped for the clients that ask (client-go asks on every request).
//!
//! - API responses (objects, lists, Tables, discovery, errors) follow upstream's
//!   `APIResponseCompression` (on by default since 1.16): a body over 128 KiB is gzipped at
//!   level 1 when the request's `Accept-Encoding` lists the token `gzip` exactly. A streamed list
//!   is held back until 128 KiB of it has been produced, as upstream's deferred writer holds its
//!   first writes, so a small list is sent as it was.
//! - The OpenAPI documents follow kube-openapi's gzip handler: 1,400 bytes or more, the default
//!   level, `q` values honoured, and `Vary: Accept-Encoding` on every answer.
//! - Watches and the other paths are never compressed.
//!
//! Compression runs as the body is sent, in slices of at most [`SLICE`] bytes, so no poll of
//! the body holds a worker thread for long and no compressed copy of a whole body is built.

use std::collections::VecDeque;
use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Body, Frame};

use crate::body::{BodyError, BoxBody, pieces};
use crate::request::route::{Route, Verb};

/// Upstream's `defaultGzipThresholdBytes`: an API body must be longer than this.
pub const API_THRESHOLD: usize = 128 * 1024;

/// gziphandler's `DefaultMinSize`: an OpenAPI body must be at least this long.
pub const OPENAPI_MIN_SIZE: usize = 1400;

/// The most input compressed in one poll of a gzipped body.
const SLICE: usize = 64 * 1024;

/// Which negotiation a route's responses follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The API handlers' (`responsewriters.SerializeObject`).
    Api,
    /// kube-openapi's (`gziphandler.GzipHandler`).
    OpenApi,
}

impl Policy {
    /// The policy of `route`'s responses; `None` for those never compressed (watches, health,
    /// `/version`, `/metrics`, the debug and OIDC paths, unknown paths).
    pub fn of(route: &Route) -> Option<Policy> {
        match route {
            Route::Resource(r) if r.verb == Verb::Watch => None,
            Route::Resource(_)
            | Route::WrongMethod(_)
            | Route::CoreVersions
            | Route::CoreResources
            | Route::Groups
            | Route::Group(_)
            | Route::GroupVersion(..) => Some(Policy::Api),
            Route::OpenApiV2 | Route::OpenApiIndex | Route::OpenApiDocument(_) => {
                Some(Policy::OpenApi)
            }
            _ => None,
        }
    }

    /// Whether the request's `Accept-Encoding` lets this policy answer in gzip.
    pub fn accepts_gzip(self, headers: &HeaderMap) -> bool {
        // Both read the first header line only (Go's `Header.Get`).
        let Some(value) = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        match self {
            Policy::Api => value.split(',').any(|token| token.trim() == "gzip"),
            Policy::OpenApi => qvalues(value)
                .into_iter()
                .rev()
                .find(|(coding, _)| coding == "gzip")
                .is_some_and(|(_, q)| q > 0.0),
        }
    }

    /// Whether a body of `len` bytes is long enough to compress.
    fn long_enough(self, len: usize) -> bool {
        match self {
            Policy::Api => len > API_THRESHOLD,
            Policy::OpenApi => len >= OPENAPI_MIN_SIZE,
        }
    }

    fn level(self) -> Compression {
        match self {
            // Upstream's `gzipContentEncodingLevel`: level 1, whose CPU cost is a fraction of
            // the default's for most of its size gain (kubernetes/kubernetes#112296).
            Policy::Api => Compression::fast(),
            Policy::OpenApi => Compression::default(),
        }
    }
}

/// gziphandler's `parseEncodings`: each coding (lowercased) with its `q` value (1 unless the
/// coding's last parameter is `q=`, clamped to 0..1); a coding whose `q` is not a number is left
/// out. Later codings of the same name win (the caller reads from the end).
fn qvalues(header: &str) -> Vec<(String, f64)> {
    header
        .split(',')
        .filter_map(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next()?.to_ascii_lowercase();
            let mut q = 1.0;
            let mut bad = false;
            for part in parts {
                q = 1.0;
                if let Some(v) = part.strip_prefix("q=") {
                    match v.parse::<f64>() {
                        Ok(v) if v.is_nan() => bad = true,
                        Ok(v) => q = v.clamp(0.0, 1.0),
                        Err(_) => bad = true,
                    }
                }
            }
            (!name.is_empty() && !bad).then_some((name, q))
        })
        .collect()
}

/// The response as `route`'s policy sends it to a client that sent `headers`: gzipped when the
/// client accepts it and the body is long enough, otherwise the same response (a streamed API
/// body is then replayed from what was read while deciding).
pub async fn negotiate(
    headers: &HeaderMap,
    route: &Route,
    response: Response<BoxBody>,
) -> Response<BoxBody> {
    let Some(policy) = Policy::of(route) else {
        return response;
    };
    let (mut head, body) = response.into_parts();
    if policy == Policy::OpenApi {
        head.headers
            .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    let compressible = policy.accepts_gzip(headers)
        && !head.headers.contains_key(header::CONTENT_ENCODING)
        && !matches!(
            head.status,
            StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
        );
    if !compressible {
        return Response::from_parts(head, body);
    }
    let body = match body.size_hint().exact() {
        Some(len) if !policy.long_enough(usize::try_from(len).unwrap_or(usize::MAX)) => {
            return Response::from_parts(head, body);
        }
        Some(_) => Gzip::new(policy, VecDeque::new(), body),
        None => {
            let (prefix, rest) = read_prefix(body, policy).await;
            let len = prefix.iter().map(Bytes::len).sum();
            if !policy.long_enough(len) {
                let body = match rest {
                    // Ended within the threshold: one whole body, as upstream writes it.
                    None => pieces(prefix.into()),
                    Some(rest) => replay(prefix, rest),
                };
                return Response::from_parts(head, body);
            }
            Gzip::new(policy, prefix, rest.unwrap_or_else(empty))
        }
    };
    head.headers.remove(header::CONTENT_LENGTH);
    head.headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    if policy == Policy::Api {
        head.headers
            .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    Response::from_parts(head, body.boxed_unsync())
}

/// Reads a streamed body's data until it is long enough for `policy`, or ends, or fails: the
/// data read, and what is left of the body (`None` when it ended; a body yielding the error when
/// it failed, so that the response still aborts).
async fn read_prefix(mut body: BoxBody, policy: Policy) -> (VecDeque<Bytes>, Option<BoxBody>) {
    let mut prefix = VecDeque::new();
    let mut len = 0;
    while !policy.long_enough(len) {
        match body.frame().await {
            None => return (prefix, None),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    len += data.len();
                    prefix.push_back(data);
                }
            }
            Some(Err(e)) => {
                let failed = futures::stream::once(async move { Err::<Frame<Bytes>, _>(e) });
                return (
                    prefix,
                    Some(http_body_util::StreamBody::new(failed).boxed_unsync()),
                );
            }
        }
    }
    (prefix, Some(body))
}

fn empty() -> BoxBody {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// A body that sends what was read of it while deciding, then the rest.
fn replay(prefix: VecDeque<Bytes>, rest: BoxBody) -> BoxBody {
    use futures::StreamExt;
    let frames = futures::stream::iter(prefix.into_iter().map(Ok))
        .chain(rest.into_data_stream())
        .map(|data| data.map(Frame::data));
    http_body_util::StreamBody::new(frames).boxed_unsync()
}

/// A gzipped body: the input read so far (`pending`), then the rest of `inner`, compressed a
/// slice at a time as the connection asks for data.
struct Gzip {
    pending: VecDeque<Bytes>,
    inner: BoxBody,
    /// `None` once the gzip trailer has been sent.
    encoder: Option<GzEncoder<Vec<u8>>>,
    inner_done: bool,
}

impl Gzip {
    fn new(policy: Policy, pending: VecDeque<Bytes>, inner: BoxBody) -> Gzip {
        Gzip {
            pending,
            inner,
            encoder: Some(GzEncoder::new(Vec::new(), policy.level())),
            inner_done: false,
        }
    }

    /// Compresses the next slice of `pending`: the compressed bytes it completed (often none,
    /// as deflate holds its window until it fills).
    fn compress_pending(&mut self) -> Result<Option<Bytes>, BodyError> {
        let Some(encoder) = self.encoder.as_mut() else {
            return Ok(None);
        };
        while let Some(mut data) = self.pending.pop_front() {
            if data.len() > SLICE {
                let rest = data.split_off(SLICE);
                self.pending.push_front(rest);
            }
            encoder.write_all(&data)?;
            let out = std::mem::take(encoder.get_mut());
            if !out.is_empty() {
                return Ok(Some(out.into()));
            }
        }
        Ok(None)
    }
}

impl Body for Gzip {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        loop {
            match this.compress_pending() {
                Ok(Some(out)) => return Poll::Ready(Some(Ok(Frame::data(out)))),
                Ok(None) => {}
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
            if this.inner_done {
                let Some(encoder) = this.encoder.take() else {
                    return Poll::Ready(None);
                };
                return Poll::Ready(Some(
                    encoder
                        .finish()
                        .map(|out| Frame::data(out.into()))
                        .map_err(Into::into),
                ));
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.inner_done = true,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        this.pending.push_back(data);
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.encoder.is_none()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::GzDecoder;
    use http::Request;
    use tokio::sync::mpsc;

    use super::*;
    use crate::body::{fallible_stream_body, full};

    fn headers(accept_encoding: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(accept_encoding).unwrap(),
        );
        h
    }

    #[test]
    fn the_api_policy_takes_the_gzip_token_only_as_upstream_does() {
        // (Accept-Encoding, accepted): upstream's `ContentEncodingSupported` compares each
        // comma-separated token, trimmed, with "gzip".
        let cases = [
            ("gzip", true),
            ("deflate, gzip", true),
            (" gzip ,br", true),
            ("br,gzip", true),
            ("gzip;q=1.0", false),
            ("GZIP", false),
            ("x-gzip", false),
            ("identity", false),
            ("*", false),
            ("", false),
        ];
        for (value, accepted) in cases {
            assert_eq!(
                Policy::Api.accepts_gzip(&headers(value)),
                accepted,
                "{value:?}"
            );
        }
        assert!(!Policy::Api.accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn the_openapi_policy_honours_q_values_as_gziphandler_does() {
        let cases = [
            ("gzip", true),
            ("GZip", true),
            ("gzip;q=0.5", true),
            ("deflate;q=1, gzip;q=0.001", true),
            ("gzip;q=0", false),
            ("gzip; q=0.0", false),
            ("gzip;q=-1", false),
            ("gzip;q=2", true),
            // gziphandler resets `q` for every parameter: only the last one counts.
            ("gzip;q=0;level=1", true),
            ("gzip;q=abc", false),
            ("gzip;q=0, gzip", true),
            ("gzip, gzip;q=0", false),
            ("identity", false),
            ("", false),
        ];
        for (value, accepted) in cases {
            assert_eq!(
                Policy::OpenApi.accepts_gzip(&headers(value)),
                accepted,
                "{value:?}"
            );
        }
    }

    fn route(path: &str, query: &str) -> Route {
        let req = Request::get(format!("{path}?{query}")).body(()).unwrap();
        let q = crate::request::route::Query::parse(req.uri().query());
        crate::request::route::parse(req.method(), req.uri().path(), &q)
    }

    #[test]
    fn each_route_has_upstreams_policy() {
        let cases = [
            (
                "/api/v1/namespaces/default/configmaps",
                "",
                Some(Policy::Api),
            ),
            (
                "/api/v1/namespaces/default/configmaps/a",
                "",
                Some(Policy::Api),
            ),
            ("/api/v1/configmaps", "watch=true", None),
            ("/api/v1/watch/configmaps", "", None),
            ("/apis", "", Some(Policy::Api)),
            ("/api", "", Some(Policy::Api)),
            ("/apis/apps/v1", "", Some(Policy::Api)),
            ("/openapi/v2", "", Some(Policy::OpenApi)),
            ("/openapi/v3", "", Some(Policy::OpenApi)),
            ("/openapi/v3/api/v1", "", Some(Policy::OpenApi)),
            ("/version", "", None),
            ("/healthz", "", None),
            ("/metrics", "", None),
        ];
        for (path, query, policy) in cases {
            assert_eq!(Policy::of(&route(path, query)), policy, "{path}?{query}");
        }
    }

    async fn collect(resp: Response<BoxBody>) -> (http::response::Parts, Vec<u8>) {
        let (head, body) = resp.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        (head, bytes)
    }

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
        out
    }

    /// `len` bytes of JSON-like text that compresses but is not one repeated byte.
    fn text(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"{\"name\":\"w-0001\",\"i\":12}, "[i % 26])
            .collect()
    }

    #[tokio::test]
    async fn whole_bodies_are_compressed_past_the_threshold_only() {
        let list = route("/api/v1/namespaces/default/configmaps", "");
        let gzip = headers("gzip");
        for (len, compressed) in [
            (API_THRESHOLD, false),
            (API_THRESHOLD + 1, true),
            (3 * SLICE + 17, true),
        ] {
            let body = text(len);
            let resp = Response::new(full(body.clone()));
            let (head, out) = collect(negotiate(&gzip, &list, resp).await).await;
            if compressed {
                assert_eq!(head.headers[header::CONTENT_ENCODING], "gzip", "{len}");
                assert_eq!(head.headers[header::VARY], "Accept-Encoding");
                assert!(out.len() < len / 4, "{len}: {} bytes", out.len());
                assert_eq!(gunzip(&out), body, "{len}");
            } else {
                assert!(
                    !head.headers.contains_key(header::CONTENT_ENCODING),
                    "{len}"
                );
                assert!(!head.headers.contains_key(header::VARY), "{len}");
                assert_eq!(out, body, "{len}");
            }
        }
        // Not asked for, or a watch: the body as it was.
        let body = text(API_THRESHOLD * 2);
        for (h, r) in [
            (HeaderMap::new(), list.clone()),
            (
                gzip.clone(),
                route("/api/v1/namespaces/default/configmaps", "watch=1"),
            ),
        ] {
            let resp = Response::new(full(body.clone()));
            let (head, out) = collect(negotiate(&h, &r, resp).await).await;
            assert!(!head.headers.contains_key(header::CONTENT_ENCODING));
            assert_eq!(out, body);
        }
    }

    #[tokio::test]
    async fn openapi_documents_are_compressed_from_1400_bytes_and_always_vary() {
        let doc = route("/openapi/v3/api/v1", "");
        for (len, accept, compressed) in [
            (OPENAPI_MIN_SIZE - 1, "gzip", false),
            (OPENAPI_MIN_SIZE, "gzip", true),
            (OPENAPI_MIN_SIZE * 10, "gzip;q=0", false),
        ] {
            let body = text(len);
            let resp = Response::new(full(body.clone()));
            let (head, out) = collect(negotiate(&headers(accept), &doc, resp).await).await;
            assert_eq!(head.headers[header::VARY], "Accept-Encoding", "{len}");
            assert_eq!(
                head.headers.contains_key(header::CONTENT_ENCODING),
                compressed,
                "{len} {accept}"
            );
            let plain = if compressed { gunzip(&out) } else { out };
            assert_eq!(plain, body, "{len} {accept}");
        }
        // A 304 has no body to compress.
        let mut resp = Response::new(full(Vec::new()));
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        let (head, _) = collect(negotiate(&headers("gzip"), &doc, resp).await).await;
        assert!(!head.headers.contains_key(header::CONTENT_ENCODING));
    }

    /// A streamed body of the given chunks, and an optional error after them.
    fn streamed(chunks: Vec<Vec<u8>>, fail: bool) -> BoxBody {
        let (tx, rx) = mpsc::channel(chunks.len() + 1);
        for c in chunks {
            tx.try_send(Ok(Bytes::from(c))).unwrap();
        }
        if fail {
            tx.try_send(Err("storage failed".into())).unwrap();
        }
        fallible_stream_body(rx)
    }

    #[tokio::test]
    async fn a_streamed_list_is_held_back_until_it_proves_long() {
        let list = route("/api/v1/namespaces/default/configmaps", "");
        let gzip = headers("gzip");
        // Short: replayed whole, with its length.
        let chunks = vec![b"{".to_vec(), text(1000), b"]}".to_vec()];
        let plain: Vec<u8> = chunks.concat();
        let resp = negotiate(&gzip, &list, Response::new(streamed(chunks, false))).await;
        assert_eq!(resp.body().size_hint().exact(), Some(plain.len() as u64));
        let (head, out) = collect(resp).await;
        assert!(!head.headers.contains_key(header::CONTENT_ENCODING));
        assert_eq!(out, plain);
        // Long: gzipped from its first byte.
        let chunks: Vec<Vec<u8>> = (0..40).map(|_| text(5000)).collect();
        let plain = chunks.concat();
        let resp = negotiate(&gzip, &list, Response::new(streamed(chunks, false))).await;
        let (head, out) = collect(resp).await;
        assert_eq!(head.headers[header::CONTENT_ENCODING], "gzip");
        assert_eq!(gunzip(&out), plain);
    }

    #[tokio::test]
    async fn a_streamed_list_that_fails_still_aborts_compressed_or_not() {
        let list = route("/api/v1/namespaces/default/configmaps", "");
        for chunks in [vec![text(100)], (0..40).map(|_| text(5000)).collect()] {
            let gzip = headers("gzip");
            let resp = negotiate(&gzip, &list, Response::new(streamed(chunks, true))).await;
            let (_, body) = resp.into_parts();
            let err = body
                .collect()
                .await
                .expect_err("the error reaches the connection");
            assert_eq!(err.to_string(), "storage failed");
        }
    }
}
