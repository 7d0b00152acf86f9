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
    // Regression: the list said `as=PartialObjectMetadata`.
    assert_eq!(
        r.headers["content-type"],
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    );
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
    // Regression: a metadata watch's bookmarks kept the resource's kind, which client-go's
    // metadata informers cannot decode.
    let r = api
        .get_as(
            &format!("{base}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"),
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events = r.lines();
    let bookmark = events
        .iter()
        .find(|e| e["type"] == "BOOKMARK")
        .expect("the initial-events-end bookmark");
    assert_eq!(bookmark["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(bookmark["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

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

/// A watch with bookmarks gets a BOOKMARK two seconds before its timeout (upstream's
/// cacheWatcher `nextBookmarkTime`), at the revision of the last event it saw, even one its
/// label selector filtered out; none without `allowWatchBookmarks`.
#[tokio::test]
async fn a_bookmark_comes_right_before_the_watch_times_out() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let base = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str, app: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "labels": {"app": app}}})
    };
    let rv = |r: &crate::support::Resp| {
        r.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = api.post(base, cm("a", "web")).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let filtered = api.post(base, cm("b", "db")).await;
    assert_eq!(filtered.status, 201, "{}", filtered.text);
    let from = rv(&first);
    let watch = |bookmarks: bool| {
        format!(
            "{base}?watch=true&resourceVersion={from}&labelSelector=app%3Dweb\
             &allowWatchBookmarks={bookmarks}&timeoutSeconds=3"
        )
    };
    let r = api.get(&watch(true)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events = r.lines();
    assert_eq!(events.len(), 1, "{}", r.text);
    assert_eq!(events[0]["type"], "BOOKMARK");
    assert_eq!(
        events[0]["object"]["metadata"]["resourceVersion"],
        rv(&filtered).as_str()
    );
    let r = api.get(&watch(false)).await;
    assert_eq!((r.status.as_u16(), r.text.as_str()), (200, ""));
}

/// Watchers without selectors share each event's encoded line (`handlers/watch_lines.rs`): every
/// watcher still gets its own form (full objects, metadata only), selectors still filter, and
/// two plain watchers get the same bytes with the right types and resourceVersions.
#[tokio::test]
async fn watchers_sharing_encoded_events_each_get_their_own_form() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_json(
        "shared.example.com",
        "things",
        "Thing",
        "Namespaced",
    ))
    .await;
    let base = "/apis/shared.example.com/v1/namespaces/default/things";
    let rv = api.get(base).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let watch = |query: &str, accept: &str| {
        api.request(
            Method::GET,
            &format!("{base}?watch=true&resourceVersion={rv}&timeoutSeconds=3{query}"),
        )
        .header("Accept", accept.to_string())
        .send()
    };
    let json = "application/json";
    let metadata = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let mut streams = Vec::new();
    for (query, accept) in [
        ("", json),
        ("", json),
        ("", metadata),
        ("&labelSelector=keep%3Dyes", json),
    ] {
        let r = watch(query, accept).await.unwrap();
        assert_eq!(r.status(), 200);
        streams.push(r);
    }
    let thing = |keep: &str, n: i64| {
        json!({"apiVersion": "shared.example.com/v1", "kind": "Thing",
               "metadata": {"name": "t1", "labels": {"keep": keep}}, "spec": {"n": n}})
    };
    let created = api.post(base, thing("yes", 1)).await;
    assert_eq!(created.status, 201);
    let updated = api
        .request(Method::PUT, &format!("{base}/t1"))
        .json(&{
            let mut t = thing("no", 2);
            t["metadata"]["resourceVersion"] =
                created.json()["metadata"]["resourceVersion"].clone();
            t
        })
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), 200);
    let updated: Value = updated.json().await.unwrap();
    assert_eq!(api.delete(&format!("{base}/t1")).await.status, 200);
    let mut bodies = Vec::new();
    for mut r in streams {
        let mut buf = Vec::new();
        while let Some(chunk) = r.chunk().await.unwrap() {
            buf.extend_from_slice(&chunk);
        }
        bodies.push(String::from_utf8(buf).unwrap());
    }
    let events = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // The two plain watchers: the same bytes.
    assert_eq!(bodies[0], bodies[1]);
    let plain = events(&bodies[0]);
    let types: Vec<&str> = plain.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{}", bodies[0]);
    assert_eq!(plain[0]["object"]["spec"]["n"], 1);
    assert_eq!(
        plain[0]["object"]["metadata"]["resourceVersion"],
        created.json()["metadata"]["resourceVersion"]
    );
    assert_eq!(plain[1]["object"]["spec"]["n"], 2);
    assert_eq!(
        plain[1]["object"]["metadata"]["resourceVersion"],
        updated["metadata"]["resourceVersion"]
    );
    assert_eq!(plain[2]["object"]["kind"], "Thing");
    // Metadata only: the same events, without the spec.
    let meta = events(&bodies[2]);
    let types: Vec<&str> = meta.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{}", bodies[2]);
    for e in &meta {
        assert_eq!(e["object"]["kind"], "PartialObjectMetadata", "{e}");
        assert!(e["object"].get("spec").is_none(), "{e}");
    }
    // The selector: the object stops matching at the update (a DELETED), then nothing.
    let selected = events(&bodies[3]);
    let types: Vec<&str> = selected
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["ADDED", "DELETED"], "{}", bodies[3]);
    assert_eq!(selected[1]["object"]["metadata"]["labels"]["keep"], "yes");
}

/// Shutdown ends open watches cleanly once the server drains (upstream's
/// `ShutdownWatchTerminationGracePeriod` of 0), instead of cutting them off when its grace
/// period runs out: a test server with a controller's watch open stops at once.
#[tokio::test]
async fn shutdown_ends_watches_cleanly() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut resp = api
        .request(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=3600",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    s.begin_shutdown();
    // The body ends with its terminating chunk: a connection closed mid-stream is an error.
    while let Some(chunk) = resp.chunk().await.expect("the watch ends cleanly") {
        let _ = chunk;
    }
}

/// Reads a watch to its end, with the event types it carried.
async fn to_the_end(mut resp: reqwest::Response) -> Vec<String> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.expect("the watch ends cleanly") {
        body.extend_from_slice(&chunk);
    }
    String::from_utf8_lossy(&body)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Watches of a custom resource end (cleanly) once its CRD's spec changes or the CRD goes,
/// as upstream's CRD handler tears the storage down: after the objects' DELETED events when
/// the CRD is deleted.
#[tokio::test]
async fn custom_resource_watches_end_when_their_crd_changes_or_goes() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_json(
        "gone.example.com",
        "things",
        "Thing",
        "Namespaced",
    ))
    .await;
    let base = "/apis/gone.example.com/v1/namespaces/default/things";
    let r = api
        .post(
            base,
            json!({"apiVersion": "gone.example.com/v1", "kind": "Thing",
                               "metadata": {"name": "t"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let watch = || async {
        let resp = api
            .request(
                Method::GET,
                &format!("{base}?watch=true&timeoutSeconds=3600"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp
    };
    // A spec change: the watch ends.
    let first = watch().await;
    let crd = format!("{CRDS}/things.gone.example.com");
    let r = api
        .call(
            Method::PATCH,
            &crd,
            "application/merge-patch+json",
            Some(json!({"spec": {"names": {"shortNames": ["th"]}}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ended = tokio::time::timeout(Duration::from_secs(30), to_the_end(first))
        .await
        .expect("the watch ends after the CRD's spec changed");
    assert_eq!(ended, ["ADDED"]);
    // The CRD goes: its objects' DELETED events, then the end.
    let second = watch().await;
    assert_eq!(api.delete(&crd).await.status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(30), to_the_end(second))
        .await
        .expect("the watch ends after the CRD is deleted");
    assert_eq!(ended, ["ADDED", "DELETED"]);
}

/// A continue token whose snapshot was compacted is 410 `Expired` carrying upstream's fresh
/// token (the same start at revision -1), and that token lists the rest at the latest
/// revision, as a client that accepts an inconsistent list may do.
#[tokio::test]
async fn an_expired_continue_token_offers_an_inconsistent_continuation() {
    let s = TestServer::start_with(|c| c.compaction_interval = Duration::from_secs(1)).await;
    let api = s.api(HttpVersion::Http1);
    let base = "/api/v1/namespaces/default/configmaps";
    // The namespace's own CA ConfigMap is listed too, last.
    eventually("the namespace's CA ConfigMap exists", || async {
        api.get(&format!("{base}/kube-root-ca.crt")).await.status == 200
    })
    .await;
    for i in 0..5 {
        let r = api
            .post(base, json!({"metadata": {"name": format!("cm{i}")}}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let first = api.get(&format!("{base}?limit=2")).await.json();
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    // Later writes move the revision on, so compaction passes the first page's snapshot.
    let r = api
        .request(Method::PATCH, &format!("{base}/cm0"))
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"data":{"k":"v"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let url = format!("{base}?limit=2&continue={token}");
    eventually("the first page's snapshot is compacted", || async {
        api.get(&url).await.status == 410
    })
    .await;
    let expired = api.get(&url).await.json();
    assert_eq!(expired["reason"], "Expired");
    let fresh = expired["metadata"]["continue"]
        .as_str()
        .expect("a fresh token");
    let r = api.get(&format!("{base}?limit=10&continue={fresh}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let rest = r.json();
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["cm2", "cm3", "cm4", "kube-root-ca.crt"]);
}
