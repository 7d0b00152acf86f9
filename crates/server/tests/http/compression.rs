//! Gzipped responses (`http::compress`), as a client that sends `Accept-Encoding: gzip` sees
//! them: a list over 128 KiB (streamed, paged, as a Table) comes gzipped with `Vary`, and
//! decompresses to the objects an identity request gets; small bodies and watches come as they
//! were; an OpenAPI document is gzipped from 1,400 bytes with its `ETag` unchanged.

use std::io::Read;

use flate2::read::GzDecoder;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, HttpVersion, TestServer};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A response read as bytes, undecoded.
struct Raw {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Raw {
    fn encoding(&self) -> Option<&str> {
        self.headers
            .get("content-encoding")
            .map(|v| v.to_str().unwrap())
    }

    /// The body, decompressed when it is gzipped.
    fn plain(&self) -> Vec<u8> {
        match self.encoding() {
            Some("gzip") => {
                let mut out = Vec::new();
                GzDecoder::new(&self.body[..])
                    .read_to_end(&mut out)
                    .expect("a gzip body");
                out
            }
            None => self.body.clone(),
            Some(other) => panic!("unexpected Content-Encoding {other}"),
        }
    }
}

async fn raw(api: &Api<'_>, path: &str, headers: &[(&str, &str)]) -> Raw {
    let mut req = api.request(Method::GET, path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("request");
    Raw {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        body: r.bytes().await.expect("body").to_vec(),
    }
}

/// The items of a JSON or YAML list that [`big_configmaps`] made, whole.
fn big_items(body: &[u8], accept: &str) -> Vec<Value> {
    let list: Value = if accept.contains("yaml") {
        serde_saphyr::from_str(std::str::from_utf8(body).expect("UTF-8 YAML")).expect("a YAML list")
    } else {
        serde_json::from_slice(body).expect("a JSON list")
    };
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| {
            i["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("big-"))
        })
        .cloned()
        .collect()
}

/// Five `ConfigMaps` of 40 KiB each: their list is over 128 KiB, each one under it.
async fn big_configmaps(api: &Api<'_>) {
    for i in 0..5 {
        let data: String = (0..40 * 1024)
            .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
            .collect();
        let r = api
            .post(
                CONFIGMAPS,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": format!("big-{i}")}, "data": {"blob": data}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
}

#[tokio::test]
async fn lists_over_128_kib_are_gzipped_for_clients_that_ask() {
    let s = TestServer::start().await;
    big_configmaps(&s.api(HttpVersion::Http2)).await;
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        let api = s.api(version);
        for (path, accept) in [
            // Streamed (no limit), built whole (a limit), and a Table.
            (CONFIGMAPS.to_string(), "application/json"),
            (format!("{CONFIGMAPS}?limit=4"), "application/json"),
            (format!("{CONFIGMAPS}?includeObject=Object"), table),
            ("/api/v1/configmaps".to_string(), "application/yaml"),
        ] {
            let plain = raw(&api, &path, &[("Accept", accept)]).await;
            assert_eq!(plain.status, 200);
            assert_eq!(plain.encoding(), None, "{path}");
            assert!(
                plain.body.len() > 128 * 1024,
                "{path}: {}",
                plain.body.len()
            );
            let gzipped = raw(
                &api,
                &path,
                &[("Accept", accept), ("Accept-Encoding", "deflate, gzip")],
            )
            .await;
            assert_eq!(gzipped.status, 200, "{path}");
            assert_eq!(gzipped.encoding(), Some("gzip"), "{path} {accept}");
            assert_eq!(gzipped.headers["vary"], "Accept-Encoding");
            assert_eq!(
                gzipped.headers["content-type"], plain.headers["content-type"],
                "{path}"
            );
            assert!(
                gzipped.body.len() < plain.body.len() / 4,
                "{path}: {} of {} bytes",
                gzipped.body.len(),
                plain.body.len()
            );
            let unzipped = gzipped.plain();
            if accept == table {
                // A Table's rows carry ages; compare what does not move.
                let (a, b): (Value, Value) = (
                    serde_json::from_slice(&unzipped).unwrap(),
                    serde_json::from_slice(&plain.body).unwrap(),
                );
                // Five and the namespace's `kube-root-ca.crt`.
                assert_eq!(a["rows"].as_array().map(Vec::len), Some(6));
                assert_eq!(a["columnDefinitions"], b["columnDefinitions"]);
            } else {
                // Controllers may write other objects between the two reads (the list's
                // `resourceVersion` moves with them), so compare the five objects this test made.
                let ours = big_items(&plain.body, accept);
                assert_eq!(
                    ours.len(),
                    if path.contains("limit") { 4 } else { 5 },
                    "{path}"
                );
                assert_eq!(
                    big_items(&unzipped, accept),
                    ours,
                    "{path}: the decompressed body differs"
                );
            }
            // `gzip;q=1` is not the token `gzip`: upstream answers in identity.
            let q = raw(
                &api,
                &path,
                &[("Accept", accept), ("Accept-Encoding", "gzip;q=1")],
            )
            .await;
            assert_eq!(q.encoding(), None, "{path}");
        }
    }
}

#[tokio::test]
async fn small_bodies_and_watches_are_never_gzipped() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    big_configmaps(&api).await;
    let gzip = [("Accept-Encoding", "gzip")];
    // One ConfigMap, 40 KiB: under the threshold.
    let one = raw(&api, &format!("{CONFIGMAPS}/big-0"), &gzip).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.encoding(), None);
    assert!(!one.headers.contains_key("vary"));
    // A short list, streamed: held back, then sent whole with its length.
    let short = raw(&api, "/api/v1/namespaces/kube-system/configmaps", &gzip).await;
    assert_eq!(short.status, 200);
    assert_eq!(short.encoding(), None);
    assert!(short.headers.contains_key("content-length"));
    // An error is an API response too, and short.
    let missing = raw(&api, &format!("{CONFIGMAPS}/nope"), &gzip).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.encoding(), None);
    // A watch that replays more than 128 KiB of events.
    let watch = raw(
        &api,
        &format!("{CONFIGMAPS}?watch=1&resourceVersion=0&timeoutSeconds=1"),
        &gzip,
    )
    .await;
    assert_eq!(watch.status, 200);
    assert_eq!(watch.encoding(), None);
    assert!(watch.body.len() > 128 * 1024);
    let events = String::from_utf8(watch.body).unwrap();
    // One ADDED event per ConfigMap, `kube-root-ca.crt` included.
    assert_eq!(events.lines().count(), 6, "{events:.200}");
}

#[tokio::test]
async fn openapi_documents_are_gzipped_as_kube_openapi_does() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let plain = raw(&api, "/openapi/v3/api/v1", &[]).await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.encoding(), None);
    // kube-openapi's handler varies on every answer.
    assert_eq!(plain.headers["vary"], "Accept-Encoding");
    let gzipped = raw(
        &api,
        "/openapi/v3/api/v1",
        &[("Accept-Encoding", "gzip;q=0.5")],
    )
    .await;
    assert_eq!(gzipped.encoding(), Some("gzip"));
    assert_eq!(gzipped.headers["etag"], plain.headers["etag"]);
    assert!(
        gzipped.plain() == plain.body,
        "the decompressed document differs"
    );
    let refused = raw(
        &api,
        "/openapi/v3/api/v1",
        &[("Accept-Encoding", "gzip;q=0")],
    )
    .await;
    assert_eq!(refused.encoding(), None);
    // Revalidated: a 304 without a body, so nothing to compress.
    let etag = plain.headers["etag"].to_str().unwrap();
    let again = raw(
        &api,
        "/openapi/v3/api/v1",
        &[("Accept-Encoding", "gzip"), ("If-None-Match", etag)],
    )
    .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.encoding(), None);
    // The Swagger document, in protobuf as kubectl asks for it.
    let pb = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let v2 = raw(
        &api,
        "/openapi/v2",
        &[("Accept", pb), ("Accept-Encoding", "gzip")],
    )
    .await;
    assert_eq!(v2.status, 200);
    assert_eq!(v2.encoding(), Some("gzip"));
    let v2_plain = raw(&api, "/openapi/v2", &[("Accept", pb)]).await;
    assert!(
        v2.plain() == v2_plain.body,
        "the decompressed document differs"
    );
    // `/version` is not an API response: never gzipped.
    let version = raw(&api, "/version", &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(version.encoding(), None);
}
