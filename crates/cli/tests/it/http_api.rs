//! HTTP behaviour that needs the binary: a restart (SIGTERM, then a new process on the same data
//! dir). The HTTP semantics themselves (status codes, discovery, watch, errors, HTTP/2) are tested
//! in-process in `crates/server/tests/http`.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Resp, TestServer, crd_json};

async fn post(s: &TestServer, path: &str, body: Value) -> Resp {
    s.call(
        Method::POST,
        path,
        "application/json",
        Some(body.to_string()),
    )
    .await
}

#[tokio::test]
async fn restart_keeps_everything() {
    let s = tokio::task::spawn_blocking(TestServer::start)
        .await
        .unwrap();
    s.create_crd(&crd_json(
        "r.example.com",
        "records",
        "Record",
        "Namespaced",
    ))
    .await;
    let base = "/apis/r.example.com/v1/namespaces/default/records";
    let r = post(&s, base, json!({"apiVersion": "r.example.com/v1", "kind": "Record", "metadata": {"name": "keep"}, "spec": {"x": 1}})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rv: i64 = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // SIGTERM: the binary exits successfully (`stop` asserts it), and a new one on the same
    // data dir has everything.
    let s = tokio::task::spawn_blocking(move || TestServer::start_in(s.stop()))
        .await
        .unwrap();
    let got = s.get(&format!("{base}/keep")).await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json()["spec"]["x"], 1);
    let r = post(
        &s,
        base,
        json!({"apiVersion": "r.example.com/v1", "kind": "Record", "metadata": {"name": "next"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rv2: i64 = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv, "revisions keep increasing across restarts");
}

/// The request deadline's parameter on the real binary: a `timeout` Go cannot parse is
/// upstream's 400 (before authentication: a bad token gets it too), a good one is served.
#[tokio::test]
async fn a_bad_timeout_parameter_is_a_400() {
    let s = tokio::task::spawn_blocking(TestServer::start)
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/configmaps?timeout=soon";
    let r = s.call(Method::GET, path, "application/json", None).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        r#"invalid timeout specified in the request URL - time: invalid duration "soon""#
    );
    let unauthenticated = s
        .client(crate::support::HttpVersion::Http1)
        .get(format!("{}{path}", s.url))
        .bearer_auth("not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 400);
    let r = s
        .call(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?timeout=5s",
            "application/json",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}
