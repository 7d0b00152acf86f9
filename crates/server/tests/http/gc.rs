//! DELETE's propagation policies over HTTP: the GC finalizers a DELETE adds (`foregroundDeletion`,
//! `orphan`, both dropped by `Background` and `orphanDependents: false`), and the garbage
//! collector taking them off again.

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
            let r = api
                .call(Method::DELETE, path, "application/json", Some(body))
                .await;
            assert_eq!(r.status, 200, "{}", r.text);
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
    // Background and `orphanDependents: false` add nothing.
    for options in [
        json!({"propagationPolicy": "Background"}),
        json!({"orphanDependents": false}),
    ] {
        let out = delete(options).await;
        assert_eq!(finalizers(out), json!(["example.com/hold"]));
    }
}
