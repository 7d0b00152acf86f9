//! The server with `--watch-cache`: label and name selectors answered through the cache's
//! indexes (with paging), read-your-writes on consistent lists, watches from a list's
//! resourceVersion, and `410 Gone` for a watch from compacted history.

use serde_json::{Value, json};

use crate::support::{HttpVersion, Resp, TestServer, crd_json, eventually, watch_from_1_expires};

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().expect("name"))
        .collect()
}

#[tokio::test]
async fn selectors_paging_and_watches_through_the_cache() {
    let s = TestServer::start_with(|c| {
        c.watch_cache = true;
        c.compaction_interval = std::time::Duration::from_secs(1);
    })
    .await;
    let api = s.api(HttpVersion::Http2);
    api.create_crd(crd_json("c.example.com", "widgets", "Widget", "Namespaced"))
        .await;
    let base = "/apis/c.example.com/v1/namespaces/default/widgets";
    for i in 0..10 {
        let r = api
            .post(
                base,
                json!({"apiVersion": "c.example.com/v1", "kind": "Widget",
                       "metadata": {"name": format!("w{i}"),
                                    "labels": {"shard": (i % 3).to_string(), "app": "x"}}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        // Read-your-writes: a consistent list right after the write has the object.
        let list = api
            .get(&format!("{base}?labelSelector=app%3Dx"))
            .await
            .json();
        assert_eq!(names(&list).len(), i + 1, "after creating w{i}");
    }
    let list = api
        .get(&format!("{base}?labelSelector=shard%3D1"))
        .await
        .json();
    assert_eq!(names(&list), ["w1", "w4", "w7"]);
    let list = api
        .get(&format!(
            "{base}?labelSelector=shard%3D1,app%3Dx&fieldSelector=metadata.name%3Dw4"
        ))
        .await
        .json();
    assert_eq!(names(&list), ["w4"]);
    let list = api
        .get(&format!("{base}?labelSelector=shard%20in%20(1),shard!%3D2"))
        .await
        .json();
    assert_eq!(names(&list), ["w1", "w4", "w7"]);
    let list = api
        .get(&format!("{base}?labelSelector=shard%3D9"))
        .await
        .json();
    assert!(names(&list).is_empty());

    // Paging a selector: continue tokens from the snapshot.
    let page1 = api
        .get(&format!("{base}?labelSelector=shard%3D0&limit=2"))
        .await
        .json();
    assert_eq!(names(&page1), ["w0", "w3"]);
    let token = page1["metadata"]["continue"].as_str().expect("continue");
    assert!(page1["metadata"].get("remainingItemCount").is_none());
    let page2 = api
        .get(&format!(
            "{base}?labelSelector=shard%3D0&limit=2&continue={token}"
        ))
        .await
        .json();
    assert_eq!(names(&page2), ["w6", "w9"]);
    assert!(page2["metadata"].get("continue").is_none(), "{page2}");

    // A watch from the list's resourceVersion sees the next change, filtered by the selector.
    let rv = page1["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let mut resp = api
        .request(
            reqwest::Method::GET,
            &format!(
                "{base}?watch=true&resourceVersion={rv}&labelSelector=shard%3D2&timeoutSeconds=2"
            ),
        )
        .send()
        .await
        .expect("watch");
    assert_eq!(resp.status(), 200);
    let r = api.delete(&format!("{base}/w1")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.delete(&format!("{base}/w2")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.expect("chunk") {
        buf.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(buf).expect("utf-8");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["type"], "DELETED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "w2");

    // Compacted history leaves the cache's window too: 410 with upstream's text.
    watch_from_1_expires(&api, base).await;
}

/// The value of the sample `name{labels}` in a `/metrics` text, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn metrics_show_the_watch_cache_at_work() {
    let s = TestServer::start_with(|c| c.watch_cache = true).await;
    let api = s.api(HttpVersion::Http2);
    let group = "wcm.example.com";
    api.create_crd(crd_json(group, "widgets", "Widget", "Namespaced"))
        .await;
    let base = format!("/apis/{group}/v1/namespaces/default/widgets");
    for i in 0..5 {
        let r = api
            .post(
                &base,
                json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                       "metadata": {"name": format!("w{i}")}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    // A consistent list waits (briefly) for the cache to be fresh.
    let list = api.get(&base).await.json();
    assert_eq!(names(&list).len(), 5);
    let labels = format!(r#"{{group="{group}",resource="widgets"}}"#);
    eventually("the cache's metrics count the writes", || async {
        let text = api.get("/metrics").await.text;
        let at_least = |series: &str, n: f64| sample(&text, series).is_some_and(|v| v >= n);
        at_least(
            &format!("apiserver_watch_cache_events_received_total{labels}"),
            5.0,
        ) && at_least(
            &format!("apiserver_watch_cache_events_dispatched_total{labels}"),
            5.0,
        ) && at_least(
            &format!("apiserver_watch_cache_read_wait_seconds_count{labels}"),
            1.0,
        )
    })
    .await;
    let text = api.get("/metrics").await.text;
    for help in [
        "# HELP apiserver_watch_cache_events_received_total [ALPHA] Counter of events received in watch cache broken by resource type.",
        "# HELP apiserver_watch_cache_events_dispatched_total [ALPHA] Counter of events dispatched in watch cache broken by resource type.",
        "# HELP apiserver_watch_cache_read_wait_seconds [ALPHA] Histogram of time spent waiting for a watch cache to become fresh.",
        "# TYPE apiserver_watch_cache_read_wait_seconds histogram",
        "# HELP apiserver_watch_cache_initializations_total [ALPHA] Counter of watch cache initializations broken by resource type.",
        "# HELP watch_cache_capacity [ALPHA] Total capacity of watch cache broken by resource type.",
    ] {
        assert!(text.contains(help), "{help}\n{text}");
    }
    let read_waits = sample(
        &text,
        &format!("apiserver_watch_cache_read_wait_seconds_count{labels}"),
    )
    .expect("read waits");
    let within_3s = sample(
        &text,
        &format!(
            r#"apiserver_watch_cache_read_wait_seconds_bucket{{group="{group}",resource="widgets",le="3"}}"#
        ),
    )
    .expect("3 s bucket");
    assert!(within_3s <= read_waits && within_3s >= 1.0, "{text}");
    assert!(
        sample(
            &text,
            r#"apiserver_watch_cache_initializations_total{group="",resource=""}"#
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    // Upstream's window holds 100 to 102,400 events.
    assert!(
        sample(&text, r#"watch_cache_capacity{group="",resource=""}"#)
            .is_some_and(|v| (100.0..=102_400.0).contains(&v)),
        "{text}"
    );
}

/// An object's `metadata.resourceVersion` as a number.
fn resource_version(object: &Value) -> i64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .parse()
        .expect("a number")
}

/// `got` is upstream's 504 "Too large resource version: {future}, current: C" with its
/// `ResourceVersionTooLarge` cause, C from `at_least` on and below `future`.
fn assert_too_large(got: &Resp, future: i64, at_least: i64, what: &str) {
    assert_eq!(got.status, 504, "{what}: {}", got.text);
    assert_too_large_status(&got.json(), future, at_least, what);
}

/// `status` is the `Status` of [`assert_too_large`] (a response's body, or a watch's ERROR
/// event's object).
fn assert_too_large_status(status: &Value, future: i64, at_least: i64, what: &str) {
    assert_eq!(status["code"], 504, "{what}: {status}");
    assert_eq!(status["reason"], "Timeout", "{what}: {status}");
    assert_eq!(
        status["details"]["retryAfterSeconds"], 1,
        "{what}: {status}"
    );
    let message = status["message"].as_str().expect("message");
    let current: i64 = message
        .strip_prefix(&format!(
            "Timeout: Too large resource version: {future}, current: "
        ))
        .unwrap_or_else(|| panic!("{what}: {message}"))
        .parse()
        .expect("a revision");
    assert!(current >= at_least && current < future, "{what}: {message}");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]),
        "{what}: {status}"
    );
}

/// The collection of Widgets in `default` (served by [`widgets_with_a`]).
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A Widget named `name`.
fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}})
}

/// Serves the Widget CRD and creates Widget `a`; its revision.
async fn widgets_with_a(api: &crate::support::Api<'_>) -> i64 {
    api.create_crd(crd_json("example.com", "widgets", "Widget", "Namespaced"))
        .await;
    let created = api.post(WIDGETS, widget("a")).await;
    assert_eq!(created.status, 201, "{}", created.text);
    resource_version(&created.json())
}

/// A list at a `resourceVersion` the cache has not reached waits for it, as upstream's cacher
/// does (`NotOlderThan`, and without a limit): a write landing during the wait answers the list
/// with it. One the store does not reach is upstream's 504 "Too large resource version" naming
/// the store's revision: after the cache's wait, or at once without the cache.
#[tokio::test]
async fn lists_wait_for_their_resource_version() {
    for cache in [true, false] {
        let s = TestServer::start_with(|c| c.watch_cache = cache).await;
        let api = s.api(HttpVersion::Http1);
        let base = WIDGETS;
        let rv = widgets_with_a(&api).await;
        if cache {
            // The list is in flight (the scrape holds the other read-only slot) before the
            // write that satisfies it lands. Any write advances the cache's revision, so one
            // elsewhere in the store (a controller's) may satisfy the wait first: the list is
            // then answered at that revision, without the new object, and the round is tried
            // again from the store's new revision.
            let mut answered_by_the_write = false;
            for round in 0..5 {
                let current = api.get(base).await;
                assert_eq!(current.status, 200, "{}", current.text);
                let next = resource_version(&current.json()) + 1;
                let path =
                    format!("{base}?resourceVersion={next}&resourceVersionMatch=NotOlderThan");
                let list = api.get(&path);
                let name = format!("b{round}");
                let write = async {
                    eventually("the list waits", || async {
                        let text = api.get("/metrics").await.text;
                        sample(
                            &text,
                            "apiserver_current_inflight_requests{request_kind=\"readOnly\"}",
                        )
                        .is_some_and(|n| n >= 2.0)
                    })
                    .await;
                    api.post(base, widget(&name)).await
                };
                let (listed, second) = tokio::join!(list, write);
                assert_eq!(second.status, 201, "{}", second.text);
                assert_eq!(listed.status, 200, "{}", listed.text);
                let listed = listed.json();
                let at = resource_version(&listed);
                assert!(at >= next, "answered before {next}: {listed}");
                if names(&listed).contains(&name.as_str()) {
                    answered_by_the_write = true;
                    break;
                }
                assert!(
                    at < resource_version(&second.json()),
                    "answered at or after the write without it: {listed}"
                );
            }
            assert!(
                answered_by_the_write,
                "every wait was satisfied by another write"
            );
        }
        let future = rv + 1000;
        for query in [
            format!("resourceVersion={future}"),
            format!("resourceVersion={future}&resourceVersionMatch=NotOlderThan"),
        ] {
            let got = api.get(&format!("{base}?{query}")).await;
            assert_too_large(&got, future, rv, &format!("cache {cache}, {query}"));
        }
    }
}

/// A watch with `sendInitialEvents=true` and `resourceVersion=N` starts from a state at least as
/// fresh as N, as upstream's cacher waits for it: a write landing during the wait is in the
/// initial events, which are the state at the initial-events-end bookmark. A revision the store
/// does not reach ends the watch (status 200) with an ERROR event carrying upstream's 504 "Too
/// large resource version": after the cache's wait, or at once without the cache.
#[tokio::test]
async fn watch_lists_wait_for_their_resource_version() {
    for cache in [true, false] {
        let s = TestServer::start_with(|c| c.watch_cache = cache).await;
        let api = s.api(HttpVersion::Http1);
        let base = WIDGETS;
        let rv = widgets_with_a(&api).await;
        // The watch's own timeout outlasts the cache's 3 s wait where that must end it.
        let watch_path = |at: i64, timeout: u32| {
            format!(
                "{base}?watch=true&sendInitialEvents=true&resourceVersion={at}\
                 &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true\
                 &timeoutSeconds={timeout}"
            )
        };
        if cache {
            // The watch's response has begun (its revision read) before the write lands; the
            // write lands during the wait or before it begins, and either way the initial
            // state must have it.
            let current = api.get(base).await;
            let next = resource_version(&current.json()) + 1;
            let started = api
                .request(reqwest::Method::GET, &watch_path(next, 1))
                .send()
                .await
                .expect("watch");
            assert_eq!(started.status(), 200);
            let second = api.post(base, widget("b")).await;
            assert_eq!(second.status, 201, "{}", second.text);
            let watched = crate::support::read(started).await;
            let events = watched.lines();
            let end = events
                .iter()
                .position(|e| {
                    e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
                })
                .unwrap_or_else(|| panic!("no initial-events-end bookmark: {}", watched.text));
            let at = resource_version(&events[end]["object"]);
            assert!(
                at >= next,
                "initial state older than {next}: {}",
                watched.text
            );
            let initial: Vec<&str> = events[..end]
                .iter()
                .map(|e| {
                    assert_eq!(e["type"], "ADDED", "{e}");
                    e["object"]["metadata"]["name"].as_str().expect("name")
                })
                .collect();
            let exact = api
                .get(&format!(
                    "{base}?resourceVersion={at}&resourceVersionMatch=Exact"
                ))
                .await;
            assert_eq!(exact.status, 200, "{}", exact.text);
            assert_eq!(initial, names(&exact.json()), "{}", watched.text);
        }
        // A resourceVersion that is not a number is refused before the watch starts, with or
        // without the initial events.
        for query in [
            "watch=true&resourceVersion=abc",
            "watch=true&sendInitialEvents=true&resourceVersion=abc\
             &resourceVersionMatch=NotOlderThan",
        ] {
            let r = api.get(&format!("{base}?{query}")).await;
            assert_eq!(r.status, 400, "cache {cache}, {query}: {}", r.text);
            assert_eq!(
                r.json()["message"],
                "invalid resource version: abc",
                "cache {cache}, {query}"
            );
        }
        let future = rv + 1000;
        let watched = api.get(&watch_path(future, 30)).await;
        assert_eq!(watched.status, 200, "cache {cache}: {}", watched.text);
        let events = watched.lines();
        assert_eq!(events.len(), 1, "cache {cache}: {}", watched.text);
        assert_eq!(
            events[0]["type"], "ERROR",
            "cache {cache}: {}",
            watched.text
        );
        assert_too_large_status(&events[0]["object"], future, rv, &format!("cache {cache}"));
    }
}

/// A GET's `resourceVersion` (`GetOptions`): `0` and a reached revision answer from the cache; a
/// revision the cache does not reach within its wait is upstream's 504 "Too large resource
/// version" naming the cache's revision (the engine's, at once, without the cache); a value that
/// is not an unsigned integer is the versioner's error as `ErrorToAPIStatus` passes it on.
#[tokio::test]
async fn gets_read_at_their_resource_version() {
    for cache in [true, false] {
        let s = TestServer::start_with(|c| c.watch_cache = cache).await;
        let api = s.api(HttpVersion::Http1);
        api.create_crd(crd_json("g.example.com", "widgets", "Widget", "Namespaced"))
            .await;
        let base = "/apis/g.example.com/v1/namespaces/default/widgets";
        let created = api
            .post(
                base,
                json!({"apiVersion": "g.example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w"}}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
        let rv = resource_version(&created.json());
        // `0` is "any state": the cache may answer it before the create reaches it, so it is
        // read after the read at `rv` (a cache never goes back), as the conformance check does.
        for at in [rv.to_string(), "0".to_string()] {
            let got = api.get(&format!("{base}/w?resourceVersion={at}")).await;
            assert_eq!(got.status, 200, "cache {cache}, at {at}: {}", got.text);
            assert_eq!(got.json(), created.json(), "cache {cache}, at {at}");
        }
        let future = rv + 1000;
        let got = api.get(&format!("{base}/w?resourceVersion={future}")).await;
        assert_too_large(&got, future, rv, &format!("cache {cache}"));
        for (at, why) in [
            (
                "abc",
                r#""abc": strconv.ParseUint: parsing "abc": invalid syntax"#,
            ),
            (
                "-1",
                r#""-1": strconv.ParseUint: parsing "-1": invalid syntax"#,
            ),
            (
                "18446744073709551616",
                r#""18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range"#,
            ),
        ] {
            let got = api.get(&format!("{base}/w?resourceVersion={at}")).await;
            assert_eq!(got.status, 500, "{}", got.text);
            let status = got.json();
            assert_eq!(
                status["message"],
                format!("resourceVersion: Invalid value: {why}"),
                "{status}"
            );
            assert_eq!(status.get("reason"), None, "{status}");
        }
    }
}
