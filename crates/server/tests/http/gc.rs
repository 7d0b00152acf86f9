//! DELETE's propagation policies over HTTP: the GC finalizers a DELETE adds (`foregroundDeletion`,
//! `orphan`, both dropped by `Background`; `orphanDependents: false` is `Foreground`), and the
//! garbage collector taking them off again.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, crd_json, eventually};

#[tokio::test]
async fn propagation_policies_set_gc_finalizers_the_collector_removes() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    api.create_crd(crd_json("p.example.com", "things", "Thing", "Namespaced"))
        .await;
    let base = "/apis/p.example.com/v1/namespaces/default/things";
    let held = json!({"apiVersion": "p.example.com/v1", "kind": "Thing",
                      "metadata": {"name": "t", "finalizers": ["example.com/hold"]}});
    assert_eq!(api.post(base, held).await.status, 201);
    let path = format!("{base}/t");
    let delete = |body: Value| {
        let api = &api;
        let path = &path;
        async move {
            // An object left waiting after `orphanDependents: false` is 202.
            let want = if body["orphanDependents"] == json!(false) {
                202
            } else {
                200
            };
            let r = api
                .call(Method::DELETE, path, "application/json", Some(body))
                .await;
            assert_eq!(r.status, want, "{}", r.text);
            r.json()
        }
    };
    let finalizers = |api_obj: Value| api_obj["metadata"]["finalizers"].clone();
    // (DeleteOptions, the finalizers the DELETE answers with)
    let cases = [
        (
            json!({"propagationPolicy": "Foreground"}),
            json!(["example.com/hold", "foregroundDeletion"]),
        ),
        (
            json!({"propagationPolicy": "Orphan"}),
            json!(["example.com/hold", "orphan"]),
        ),
        // The legacy `orphanDependents: false` is a foreground deletion.
        (
            json!({"orphanDependents": false}),
            json!(["example.com/hold", "foregroundDeletion"]),
        ),
    ];
    for (options, want) in cases {
        let out = delete(options.clone()).await;
        assert_eq!(finalizers(out.clone()), want, "{options}");
        assert!(out["metadata"]["deletionTimestamp"].is_string());
        // No dependents: the collector takes its finalizer off at once.
        eventually("the collector removes its finalizer", || async {
            finalizers(api.get(&path).await.json()) == json!(["example.com/hold"])
        })
        .await;
    }
    // Dry run shows the finalizer without writing it.
    let r = api
        .call(
            Method::DELETE,
            &format!("{path}?dryRun=All"),
            "application/json",
            Some(json!({"propagationPolicy": "Foreground"})),
        )
        .await;
    assert_eq!(
        finalizers(r.json()),
        json!(["example.com/hold", "foregroundDeletion"])
    );
    assert_eq!(
        finalizers(api.get(&path).await.json()),
        json!(["example.com/hold"])
    );
    // Background adds nothing.
    let out = delete(json!({"propagationPolicy": "Background"})).await;
    assert_eq!(finalizers(out), json!(["example.com/hold"]));
}

/// The legacy `orphanDependents: false` deletes dependents first, as `Foreground` does, and the
/// owner left waiting for them is answered `202 Accepted` (the delete handler's rule for it).
#[tokio::test]
async fn orphan_dependents_false_is_a_foreground_deletion_answered_202() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let base = "/api/v1/namespaces/default/configmaps";
    let r = api.post(base, json!({"metadata": {"name": "owner"}})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let uid = r.json()["metadata"]["uid"].as_str().unwrap().to_string();
    let child = json!({"metadata": {"name": "child", "finalizers": ["example.com/hold"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                             "uid": uid, "blockOwnerDeletion": true}]}});
    assert_eq!(api.post(base, child).await.status, 201);
    let r = api
        .call(
            Method::DELETE,
            &format!("{base}/owner"),
            "application/json",
            Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": false})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let owner = r.json();
    assert_eq!(
        owner["metadata"]["finalizers"],
        json!(["foregroundDeletion"]),
        "{owner}"
    );
    // The owner waits for its held dependent.
    eventually("the dependent is being deleted", || async {
        let c = api.get(&format!("{base}/child")).await.json();
        c["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    assert_eq!(api.get(&format!("{base}/owner")).await.status, 200);
    // Released, the dependent goes, then the owner.
    let r = api
        .call(
            Method::PATCH,
            &format!("{base}/child"),
            "application/merge-patch+json",
            Some(json!({"metadata": {"finalizers": null}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the owner goes after its dependent", || async {
        api.get(&format!("{base}/owner")).await.status == 404
    })
    .await;
}
