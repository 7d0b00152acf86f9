//! Watch over HTTP: events and timeouts, metadata-only responses, `sendInitialEvents` with
//! bookmarks, and 410 Gone after compaction.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{CRDS, HttpVersion, TestServer, crd_json, eventually, watch_from_1_expires};

#[tokio::test]
async fn watch_streams_events_and_times_out() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_json("w.example.com", "events", "Event", "Namespaced"))
        .await;
    let base = "/apis/w.example.com/v1/namespaces/default/events";
    let list = api.get(base).await.json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut resp = api
        .request(
            Method::GET,
            &format!("{base}?watch=true&resourceVersion={rv}&timeoutSeconds=2"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let r = api
        .post(
            base,
            json!({"apiVersion": "w.example.com/v1", "kind": "Event", "metadata": {"name": "e1"}}),
        )
        .await;
    assert_eq!(r.status, 201);
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        buf.extend_from_slice(&chunk);
    }
    // The stream ended by itself after timeoutSeconds.
    let text = String::from_utf8(buf).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "e1");
}

/// The CronTab CRD of the serving tests: printer columns, subresources and a selectable field.
const CRD: &str = include_str!("../../../../examples/crds/crontab-serving.yaml");

#[tokio::test]
async fn metadata_only_responses_and_watch_details() {
    let s = TestServer::start_with(|c| c.compaction_interval = Duration::from_secs(1)).await;
    let api = s.api(HttpVersion::Http2);
    let r = api
        .request(Method::POST, CRDS)
        .header("Content-Type", "application/yaml")
        .body(CRD)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    eventually("the CronTab CRD is Established", || async {
        let crd = api
            .get(&format!("{CRDS}/crontabs.stable.example.com"))
            .await
            .json();
        crate::support::condition(&crd, "Established") == Some("True")
    })
    .await;
    let base = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    for (name, env) in [("a", "prod"), ("b", "dev")] {
        let r = api
            .post(
                base,
                json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                       "metadata": {"name": name, "labels": {"env": env}},
                       "spec": {"cronSpec": "* * * * */5", "replicas": 1}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }

    // PartialObjectMetadata and its List form.
    let r = api
        .get_as(
            base,
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let list = r.json();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["metadata"]["name"], "a");
    assert!(list["items"][0].get("spec").is_none());
    let one = api
        .get_as(
            &format!("{base}/b"),
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        )
        .await
        .json();
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["labels"]["env"], "dev");

    // resourceVersionMatch needs a resourceVersion.
    let r = api
        .get(&format!("{base}?resourceVersionMatch=NotOlderThan"))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.text
            .contains("resourceVersionMatch is forbidden unless resourceVersion is provided"),
        "{}",
        r.text
    );

    // sendInitialEvents with bookmarks: the current objects, then the initial-events-end bookmark.
    let r = api
        .get(&format!("{base}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=env%3Dprod&timeoutSeconds=1"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events = r.lines();
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "a");
    assert_eq!(events.len(), 2, "label selector filters: {}", r.text);
    assert_eq!(events[1]["type"], "BOOKMARK");
    assert_eq!(
        events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    // The compactor (every second) drops history up to the revision of its previous run: wait
    // until a list at resourceVersion 1 is refused as too old, then watch from there.
    watch_from_1_expires(&api, base).await;
}
