//! The request deadline: a request that is not long-running is answered 504 `Timeout` once its
//! `timeout` parameter or `--request-timeout` has passed, however long storage takes; a bad
//! `timeout` is a 400 before authentication; watches are not cut.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crd_storage::hook::HookStore;
use futures::FutureExt;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, read};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A server whose creates of `ConfigMaps` named `stuck*` are stored but never answered by storage,
/// as a write to an etcd that stopped responding after applying it.
async fn stalling_server(request_timeout: Duration) -> TestServer {
    TestServer::start_wrapped(
        |c| c.limits.request_timeout = request_timeout,
        |store| {
            Arc::new(HookStore::new(store).after_create(Box::new(|key: &str| {
                if key.contains("/configmaps/default/stuck") {
                    futures::future::pending::<()>().boxed()
                } else {
                    futures::future::ready(()).boxed()
                }
            })))
        },
    )
    .await
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

/// Upstream's timeout filter's Status.
fn assert_timeout(status: &Value, what: &str) {
    assert_eq!(
        status,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Timeout: request did not complete within the allotted timeout",
            "reason": "Timeout", "details": {}, "code": 504,
        }),
        "{what}"
    );
}

#[tokio::test]
async fn a_request_past_its_timeout_parameter_is_answered_504_and_the_server_goes_on() {
    let s = stalling_server(Duration::from_mins(1)).await;
    let api = s.api(HttpVersion::Http2);
    let started = Instant::now();
    let r = api
        .post(&format!("{CONFIGMAPS}?timeout=1s"), configmap("stuck"))
        .await;
    let took = started.elapsed();
    assert_eq!(r.status, 504, "{}", r.text);
    assert_timeout(&r.json(), "a stalled create");
    assert!(took >= Duration::from_secs(1), "answered after {took:?}");
    // Others are served meanwhile and after; the stalled write itself was applied, as upstream's
    // 504 warns ("may still be processing").
    let r = api.post(CONFIGMAPS, configmap("fine")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(api.get(&format!("{CONFIGMAPS}/stuck")).await.status, 200);
    // HTTP/1.1 too: the connection stays usable.
    let api1 = s.api(HttpVersion::Http1);
    let r = api1
        .post(&format!("{CONFIGMAPS}?timeout=300ms"), configmap("stuck-2"))
        .await;
    assert_eq!(r.status, 504, "{}", r.text);
    assert_eq!(api1.get(CONFIGMAPS).await.status, 200);
}

#[tokio::test]
async fn the_request_timeout_flag_bounds_every_request_and_caps_the_parameter() {
    let s = stalling_server(Duration::from_millis(500)).await;
    let api = s.api(HttpVersion::Http2);
    for path in [
        CONFIGMAPS.to_string(),
        format!("{CONFIGMAPS}?timeout=1h"),
        format!("{CONFIGMAPS}?timeout=0s"),
    ] {
        let started = Instant::now();
        let r = api.post(&path, configmap("stuck")).await;
        assert_eq!(r.status, 504, "{path}: {}", r.text);
        assert_timeout(&r.json(), &path);
        // The cap, not the hour: well under the client's own 30 s limit.
        assert!(started.elapsed() < Duration::from_secs(20), "{path}");
        // Gone already (stored), so the next round's create would be a 409: delete it.
        assert_eq!(api.delete(&format!("{CONFIGMAPS}/stuck")).await.status, 200);
    }
}

#[tokio::test]
async fn a_bad_timeout_is_a_400_before_authentication() {
    let s = TestServer::start().await;
    let cases = [
        (
            "foo",
            r#"invalid timeout specified in the request URL - time: invalid duration "foo""#,
        ),
        (
            "10",
            r#"invalid timeout specified in the request URL - time: missing unit in duration "10""#,
        ),
        (
            "1d",
            r#"invalid timeout specified in the request URL - time: unknown unit "d" in duration "1d""#,
        ),
    ];
    for (timeout, message) in cases {
        let path = format!("{CONFIGMAPS}?timeout={timeout}");
        // With the admin's token, and with none at all (still a 400, not a 401).
        let with_token = s.api(HttpVersion::Http2).get(&path).await;
        let anonymous = read(
            s.client(HttpVersion::Http1)
                .get(format!("{}{path}", s.url))
                .header("Authorization", "Bearer not-a-token")
                .send()
                .await
                .unwrap(),
        )
        .await;
        for r in [with_token, anonymous] {
            assert_eq!(r.status, 400, "{timeout}: {}", r.text);
            let status = r.json();
            assert_eq!(status["reason"], "BadRequest", "{timeout}");
            assert_eq!(status["message"], message, "{timeout}");
        }
    }
    // A good one is served as usual.
    let r = s
        .api(HttpVersion::Http2)
        .get(&format!("{CONFIGMAPS}?timeout=30s"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn a_watch_outlives_its_timeout_parameter() {
    let s = stalling_server(Duration::from_mins(1)).await;
    let api = s.api(HttpVersion::Http2);
    let mut watch = api
        .request(
            Method::GET,
            &format!("{CONFIGMAPS}?watch=true&timeout=1s&timeoutSeconds=30"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    // The server's own clock says a second has passed once this 504 arrives.
    let r = api
        .post(&format!("{CONFIGMAPS}?timeout=1s"), configmap("stuck"))
        .await;
    assert_eq!(r.status, 504, "{}", r.text);
    assert_eq!(api.post(CONFIGMAPS, configmap("after")).await.status, 201);
    let mut seen = String::new();
    while !seen.contains("\"name\":\"after\"") {
        let chunk = tokio::time::timeout(Duration::from_secs(20), watch.chunk())
            .await
            .expect("the watch went quiet")
            .expect("the watch failed")
            .expect("the watch ended early");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}
