//! What must hold however many CRDs there are: OpenAPI documents are rebuilt per group (an
//! unchanged group keeps its bytes and `ETag`), and during start-up the port answers with
//! `/readyz` failing and resources refused until every stored CRD is served.

use reqwest::Method;
use serde_json::json;
use tokio::sync::watch;

use crate::support::{BeforeList, CRDS, HttpVersion, TestServer, crd_json, eventually, list_hook};

/// A CRD in `group` whose `spec` schema has the given properties.
fn crd_with(group: &str, properties: &serde_json::Value) -> serde_json::Value {
    let mut crd = crd_json(group, "widgets", "Widget", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": properties}}
    });
    crd
}

fn index_hash(index: &serde_json::Value, path: &str) -> String {
    let url = index["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} in the index: {index}"));
    url.split_once("?hash=").expect("a hash").1.to_string()
}

#[tokio::test]
async fn a_crd_change_rebuilds_its_group_document_and_leaves_the_others_byte_identical() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    api.create_crd(crd_with(
        "one.example.com",
        &json!({"size": {"type": "integer"}}),
    ))
    .await;
    api.create_crd(crd_with(
        "two.example.com",
        &json!({"size": {"type": "integer"}}),
    ))
    .await;
    let (one, two) = ("apis/one.example.com/v1", "apis/two.example.com/v1");
    let before = api.get("/openapi/v3").await.json();
    let (one_hash, two_hash) = (index_hash(&before, one), index_hash(&before, two));
    let two_doc = api.get(&format!("/openapi/v3/{two}")).await;
    assert_eq!(two_doc.status, 200, "{}", two_doc.text);
    assert_eq!(two_doc.headers["etag"], format!("\"{two_hash}\"").as_str());
    let core_hash = index_hash(&before, "api/v1");

    let patch = json!({"spec": {"versions": crd_with(
        "one.example.com",
        &json!({"size": {"type": "integer"}, "color": {"type": "string"}})
    )["spec"]["versions"]}});
    let r = api
        .call(
            Method::PATCH,
            &format!("{CRDS}/widgets.one.example.com"),
            "application/merge-patch+json",
            Some(patch),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    eventually("the changed group's hash changes", || async {
        index_hash(&api.get("/openapi/v3").await.json(), one) != one_hash
    })
    .await;
    let after = api.get("/openapi/v3").await.json();
    // The changed group's document has the new field, under its new hash.
    let new_one_hash = index_hash(&after, one);
    let one_doc = api
        .get(&format!("/openapi/v3/{one}?hash={new_one_hash}"))
        .await;
    assert_eq!(one_doc.status, 200, "{}", one_doc.text);
    assert_eq!(
        one_doc.headers["etag"],
        format!("\"{new_one_hash}\"").as_str()
    );
    assert_eq!(one_doc.headers["cache-control"], "public, immutable");
    let schema = &one_doc.json()["components"]["schemas"]["com.example.one.v1.Widget"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["color"]["type"], "string",
        "{schema}"
    );
    // Every other document is the same bytes under the same hash.
    assert_eq!(index_hash(&after, two), two_hash);
    assert_eq!(index_hash(&after, "api/v1"), core_hash);
    let two_again = api.get(&format!("/openapi/v3/{two}")).await;
    assert_eq!(two_again.text, two_doc.text);
    assert_eq!(two_again.headers["etag"], two_doc.headers["etag"]);
    assert_eq!(
        after["paths"].as_object().map(serde_json::Map::len),
        before["paths"].as_object().map(serde_json::Map::len)
    );

    // A deleted CRD's group leaves the index.
    let r = api.delete(&format!("{CRDS}/widgets.one.example.com")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the deleted CRD's group leaves the index", || async {
        api.get("/openapi/v3").await.json()["paths"]
            .get(one)
            .is_none()
    })
    .await;
    assert_eq!(api.get(&format!("/openapi/v3/{one}")).await.status, 404);
    assert_eq!(
        index_hash(&api.get("/openapi/v3").await.json(), two),
        two_hash
    );
}

#[tokio::test]
async fn the_port_answers_before_crds_are_served_with_readyz_failing_and_resources_refused() {
    let (gate, open) = watch::channel(false);
    let server = TestServer::start_unready(move |inner| {
        // Any list that would see CRDs waits: the CRD informer's, and the watch cache's
        // first load of everything under `/registry/` (which would otherwise answer the
        // informer).
        let before_list: BeforeList = Box::new(move |request| {
            const CRDS: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions";
            let gated =
                request.prefix.starts_with(CRDS) || CRDS.starts_with(request.prefix.as_str());
            let mut open = open.clone();
            Box::pin(async move {
                if gated {
                    let _ = open.wait_for(|o| *o).await;
                }
                Ok(())
            })
        });
        list_hook(inner, before_list)
    })
    .await;
    let api = server.api(HttpVersion::Http1);

    let readyz = api.get("/readyz?verbose").await;
    assert_eq!(readyz.status, 500, "{}", readyz.text);
    assert!(
        readyz
            .text
            .contains("[-]poststarthook/crd-informer-synced failed: reason withheld\n"),
        "{}",
        readyz.text
    );
    assert!(
        readyz.text.ends_with("readyz check failed\n"),
        "{}",
        readyz.text
    );
    assert_eq!(
        api.get("/readyz/poststarthook/crd-informer-synced")
            .await
            .status,
        500
    );
    // Liveness includes the post-start hooks, as upstream's; its own checks pass.
    assert_eq!(api.get("/livez").await.status, 500);
    assert_eq!(api.get("/livez/ping").await.status, 200);
    assert_eq!(api.get("/version").await.status, 200);

    // Resources, and paths that may only be unknown yet, are refused as upstream's not-found
    // handler refuses them during start-up.
    for path in ["/api/v1/namespaces", "/apis/stable.example.com/v1/crontabs"] {
        let r = api.get(path).await;
        assert_eq!(r.status, 503, "{path}: {}", r.text);
        assert_eq!(r.headers["retry-after"], "5");
        assert_eq!(
            r.json(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the request has been made before all known HTTP paths have been installed, please try again",
                   "reason": "ServiceUnavailable", "details": {"retryAfterSeconds": 5}, "code": 503}),
            "{path}"
        );
    }

    gate.send_replace(true);
    eventually("/readyz passes once CRDs are served", || async {
        api.get("/readyz").await.status == 200
    })
    .await;
    let r = api.get("/api/v1/namespaces").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        api.get("/apis/stable.example.com/v1/crontabs").await.status,
        404
    );
}
