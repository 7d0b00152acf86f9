//! Full lists streamed page by page (`handlers::list_stream`): a list spanning several storage
//! pages is byte for byte the list the unstreamed path renders, in every form (JSON, Table,
//! `PartialObjectMetadataList`, YAML) and with selectors, and a storage error after the first
//! page aborts the response instead of ending it as if it were whole.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crd_server::handlers::list_stream::PAGE;
use crd_storage::StorageError;
use reqwest::Method;
use serde_json::json;

use crate::support::{Api, BeforeList, HttpVersion, TestServer, crd_json, list_hook};

const BASE: &str = "/apis/s.example.com/v1/namespaces/default/widgets";

/// Creates `n` widgets, 32 at a time, each labelled `app=all` and `parity=even|odd`. The CRD's
/// printer columns have no age, so that Tables read at different times are equal.
async fn create_widgets(api: &Api<'_>, n: usize) {
    let mut crd = crd_json("s.example.com", "widgets", "Widget", "Namespaced");
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
        {"name": "I", "type": "integer", "jsonPath": ".spec.i"},
        {"name": "Text", "type": "string", "jsonPath": ".spec.text", "priority": 1}]);
    api.create_crd(crd).await;
    post_widgets(
        api,
        n,
        |i| {
            json!({"name": format!("w-{i:05}"),
               "labels": {"app": "all", "parity": if i % 2 == 0 { "even" } else { "odd" }}})
        },
        |i| json!({"i": i, "text": "x\"y\u{e9}"}),
    )
    .await;
}

/// Posts widgets `0..n`, 32 at a time, with the metadata and spec the closures give.
async fn post_widgets(
    api: &Api<'_>,
    n: usize,
    metadata: impl Fn(usize) -> serde_json::Value,
    spec: impl Fn(usize) -> serde_json::Value,
) {
    let mut start = 0;
    while start < n {
        let end = (start + 32).min(n);
        let posts = (start..end).map(|i| {
            api.post(
                BASE,
                json!({"apiVersion": "s.example.com/v1", "kind": "Widget",
                       "metadata": metadata(i), "spec": spec(i)}),
            )
        });
        for r in futures::future::join_all(posts).await {
            assert_eq!(r.status, 201, "{}", r.text);
        }
        start = end;
    }
}

#[tokio::test]
async fn a_full_list_spanning_pages_is_the_unstreamed_list_byte_for_byte() {
    let s = TestServer::start().await;
    let n = 2 * PAGE + 100;
    create_widgets(&s.api(HttpVersion::Http2), n).await;
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        let api = s.api(version);
        let streamed = api.get(BASE).await;
        assert_eq!(streamed.status, 200, "{}", streamed.text);
        assert_eq!(streamed.headers["content-type"], "application/json");
        // A limit above the count is the unstreamed verbatim path: one body built at once. The
        // same snapshot (nothing was written since) gives the same bytes.
        let unstreamed = api.get(&format!("{BASE}?limit={}", 10 * n)).await;
        assert_eq!(unstreamed.status, 200, "{}", unstreamed.text);
        let at = streamed
            .text
            .bytes()
            .zip(unstreamed.text.bytes())
            .position(|(a, b)| a != b);
        assert!(
            streamed.text == unstreamed.text,
            "{version:?}: the streamed list differs from the unstreamed one ({} vs {} bytes) at \
             {at:?}: {:?} vs {:?}",
            streamed.text.len(),
            unstreamed.text.len(),
            at.map(|i| &streamed.text[i.saturating_sub(80)..(i + 80).min(streamed.text.len())]),
            at.map(|i| &unstreamed.text[i.saturating_sub(80)..(i + 80).min(unstreamed.text.len())]),
        );
        // A selector every object matches goes through the decoding path: the same JSON.
        let decoded = api.get(&format!("{BASE}?labelSelector=app%3Dall")).await;
        let list = streamed.json();
        assert_eq!(list, decoded.json());
        assert_eq!(list["kind"], "WidgetList");
        assert_eq!(list["apiVersion"], "s.example.com/v1");
        let items = list["items"].as_array().expect("items");
        let names: Vec<String> = items
            .iter()
            .map(|o| o["metadata"]["name"].as_str().expect("name").to_string())
            .collect();
        let want: Vec<String> = (0..n).map(|i| format!("w-{i:05}")).collect();
        assert_eq!(names, want);
        assert!(
            streamed
                .text
                .starts_with(r#"{"apiVersion":"s.example.com/v1","items":[{"#)
        );
        let rv: i64 = list["metadata"]["resourceVersion"]
            .as_str()
            .expect("resourceVersion")
            .parse()
            .expect("numeric");
        assert!(items.iter().all(|o| {
            o["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v <= rv)
        }));
        // Paging with limit/continue is not streamed and returns the same items.
        let first = api.get(&format!("{BASE}?limit={PAGE}")).await.json();
        assert_eq!(first["items"].as_array().map(Vec::len), Some(PAGE));
        assert_eq!(first["metadata"]["remainingItemCount"], n - PAGE);
    }
    // A list that fits one page is one whole body, as before.
    let small = s
        .api(HttpVersion::Http1)
        .get("/apis/s.example.com/v1/namespaces/other/widgets")
        .await;
    assert_eq!(small.status, 200, "{}", small.text);
    assert!(small.headers.contains_key("content-length"));
}

/// A page larger than one body piece (`list::BODY_PIECE`) is sent in pieces: its bytes are the
/// streamed list's, split anywhere, and it still says its exact length, as a whole body does.
#[tokio::test]
async fn a_page_sent_in_pieces_is_the_whole_list_with_its_length() {
    let s = TestServer::start().await;
    let writer = s.api(HttpVersion::Http2);
    let crd = crd_json("s.example.com", "widgets", "Widget", "Namespaced");
    writer.create_crd(crd).await;
    // Items of about 2 KiB: enough for three pieces, with one item across each boundary.
    let n = 3 * crd_server::handlers::list::BODY_PIECE / 2048 + 7;
    post_widgets(
        &writer,
        n,
        |i| json!({"name": format!("w-{i:05}")}),
        |i| json!({"i": i, "text": "\u{e9}".repeat(1000)}),
    )
    .await;
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        let api = s.api(version);
        let streamed = api.get(BASE).await;
        let paged = api.get(&format!("{BASE}?limit={}", n + 1)).await;
        assert_eq!(paged.status, 200, "{}", paged.text);
        assert!(paged.text.len() > 2 * crd_server::handlers::list::BODY_PIECE);
        assert_same_body(&format!("{version:?}"), &streamed.text, &paged.text);
        assert_eq!(
            paged.headers["content-length"],
            paged.text.len().to_string(),
            "{version:?}"
        );
        let items = paged.json()["items"].as_array().map(Vec::len);
        assert_eq!(items, Some(n));
    }
}

/// Asserts that two bodies are equal, showing where they first differ.
fn assert_same_body(what: &str, streamed: &str, unstreamed: &str) {
    let at = streamed
        .bytes()
        .zip(unstreamed.bytes())
        .position(|(a, b)| a != b);
    assert!(
        streamed == unstreamed,
        "{what}: the streamed list differs from the unstreamed one ({} vs {} bytes) at {at:?}: \
         {:?} vs {:?}",
        streamed.len(),
        unstreamed.len(),
        at.map(|i| &streamed[i.saturating_sub(80)..(i + 80).min(streamed.len())]),
        at.map(|i| &unstreamed[i.saturating_sub(80)..(i + 80).min(unstreamed.len())]),
    );
}

const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const METADATA: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

#[tokio::test]
async fn tables_metadata_yaml_and_selector_lists_stream_the_unstreamed_bytes() {
    let s = TestServer::start().await;
    let n = 2 * PAGE + 100;
    create_widgets(&s.api(HttpVersion::Http2), n).await;
    let by_name = format!("fieldSelector=metadata.name%3Dw-{:05}", 2 * PAGE + 2);
    let by_name = by_name.as_str();
    // (query, Accept, items expected): every form, with and without selectors; the indexed
    // selectors (`parity=even`, `metadata.name`) and one the index cannot answer (`!=`).
    let cases = [
        ("", TABLE, n),
        ("includeObject=Object", TABLE, n),
        ("includeObject=None&noHeaders=true", TABLE, n),
        ("", METADATA, n),
        ("", "application/yaml", n),
        ("labelSelector=parity%3Deven", "application/json", n / 2),
        ("labelSelector=parity%21%3Deven", "application/json", n / 2),
        ("labelSelector=parity%3Deven", TABLE, n / 2),
        ("labelSelector=parity%3Dodd", METADATA, n / 2),
        (
            "labelSelector=parity%3Dodd,app%3Dall",
            "application/yaml",
            n / 2,
        ),
        ("labelSelector=app%3Dnone", "application/json", 0),
        ("labelSelector=app%3Dnone", "application/yaml", 0),
        ("labelSelector=app%3Dnone", TABLE, 0),
        (by_name, "application/json", 1),
        (by_name, TABLE, 1),
        (
            "fieldSelector=metadata.namespace%3Ddefault&labelSelector=parity%3Deven",
            METADATA,
            n / 2,
        ),
    ];
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        let api = s.api(version);
        for (query, accept, want) in &cases {
            let what = format!("{version:?} {accept} ?{query}");
            let sep = if query.is_empty() { "" } else { "&" };
            let streamed = api.get_as(&format!("{BASE}?{query}"), accept).await;
            assert_eq!(streamed.status, 200, "{what}: {}", streamed.text);
            // A limit above the count is the unstreamed path: one body built at once. The same
            // snapshot (nothing was written since) gives the same bytes.
            let unstreamed = api
                .get_as(&format!("{BASE}?{query}{sep}limit={}", 10 * n), accept)
                .await;
            assert_eq!(unstreamed.status, 200, "{what}: {}", unstreamed.text);
            assert_eq!(
                streamed.headers["content-type"], unstreamed.headers["content-type"],
                "{what}"
            );
            assert_same_body(&what, &streamed.text, &unstreamed.text);
            let count = if *accept == "application/yaml" {
                // Each item's kind (the list's is `WidgetList`).
                streamed.text.matches("kind: Widget\n").count()
            } else {
                let v = streamed.json();
                let key = if *accept == TABLE { "rows" } else { "items" };
                v[key].as_array().map_or(0, Vec::len)
            };
            assert_eq!(count, *want, "{what}: item count");
        }
    }
    // The Table names its columns once, with the rows of every page in order.
    let table = s.api(HttpVersion::Http1).get_as(BASE, TABLE).await.json();
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Name", "I", "Text"]);
    let rows = table["rows"].as_array().expect("rows");
    assert_eq!(
        rows[PAGE + 1]["cells"],
        json!([format!("w-{:05}", PAGE + 1), PAGE + 1, "x\"y\u{e9}"])
    );
    assert_eq!(rows[n - 1]["object"]["kind"], "PartialObjectMetadata");
    let meta = s.api(HttpVersion::Http1).get_as(BASE, METADATA).await;
    assert_eq!(meta.json()["kind"], "PartialObjectMetadataList");
    assert_eq!(
        meta.json()["items"][n - 1]["metadata"]["name"],
        format!("w-{:05}", n - 1)
    );
    assert!(meta.json()["items"][0].get("spec").is_none());
}

#[tokio::test]
async fn a_storage_error_after_the_first_page_aborts_the_response() {
    let armed = Arc::new(AtomicBool::new(false));
    let flag = armed.clone();
    // Without the watch cache every page reaches the failing store.
    let s = TestServer::start_wrapped(
        |c| c.watch_cache = false,
        move |inner| {
            // Fails every list of widgets after its first page while armed.
            let before_list: BeforeList = Box::new(move |request| {
                let fail = flag.load(Ordering::SeqCst)
                    && request.start_after.is_some()
                    && request.prefix.contains("/widgets/");
                Box::pin(async move {
                    if fail {
                        Err(StorageError::Unavailable("injected failure".into()))
                    } else {
                        Ok(())
                    }
                })
            });
            list_hook(inner, before_list)
        },
    )
    .await;
    let n = PAGE + 10;
    create_widgets(&s.api(HttpVersion::Http2), n).await;
    armed.store(true, Ordering::SeqCst);
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        let api = s.api(version);
        let r = api
            .request(Method::GET, BASE)
            .send()
            .await
            .expect("headers");
        // The first page was read before the response started.
        assert_eq!(r.status(), 200);
        let body = r.bytes().await;
        assert!(
            body.is_err(),
            "{version:?}: a list whose second page failed ended as if whole: {} bytes",
            body.map(|b| b.len()).unwrap_or_default()
        );
        // Every form and selector lists abort the same way.
        for (query, accept) in [
            ("", TABLE),
            ("", METADATA),
            ("", "application/yaml"),
            ("?labelSelector=app%3Dall", "application/json"),
        ] {
            let r = api
                .request(Method::GET, &format!("{BASE}{query}"))
                .header("Accept", accept)
                .send()
                .await
                .expect("headers");
            assert_eq!(r.status(), 200);
            assert!(
                r.bytes().await.is_err(),
                "{version:?} {accept} {query}: a failed list ended as if whole"
            );
        }
        // Paging with a continue token is not streamed: its failure is an ordinary Status.
        let first = api.get(&format!("{BASE}?limit=5")).await.json();
        let token = first["metadata"]["continue"].as_str().expect("continue");
        let next = api.get(&format!("{BASE}?limit=5&continue={token}")).await;
        assert_eq!(next.status, 503, "{}", next.text);
        assert_eq!(next.json()["kind"], "Status");
    }
    // The server is fine afterwards.
    armed.store(false, Ordering::SeqCst);
    let list = s.api(HttpVersion::Http1).get(BASE).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.json()["items"].as_array().map(Vec::len), Some(n));
}
