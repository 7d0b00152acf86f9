//! Hostile inputs (huge, deeply nested, invalid or explosive bodies) get a Status, quickly, and
//! the server stays healthy.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, crd_json};

const BASE: &str = "/apis/r.example.com/v1/namespaces/default/records";

async fn send(s: &TestServer, ct: &str, body: Vec<u8>) -> (u16, Value) {
    let r = s
        .api(HttpVersion::Http2)
        .request(Method::POST, BASE)
        .header("Content-Type", ct)
        .body(body)
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn hostile_inputs_get_a_status_and_the_server_stays_healthy() {
    // Without `--max-object-size`, so the storage engine's own limit (6 MiB) is what refuses.
    let s = TestServer::start_with(|c| c.limits.max_object_size = 0).await;
    s.api(HttpVersion::Http2)
        .create_crd(crd_json("r.example.com", "records", "Record", "Namespaced"))
        .await;
    let obj = |extra: &str| {
        format!(r#"{{"apiVersion":"r.example.com/v1","kind":"Record","metadata":{{"name":"x"}},"spec":{extra}}}"#)
            .into_bytes()
    };
    let cases: Vec<(&str, &str, Vec<u8>, u16)> = vec![
        ("body over 3 MiB", "application/json", obj(&format!("{{\"a\":\"{}\"}}", "x".repeat(3 * 1024 * 1024))), 413),
        ("JSON nested 10,000 levels", "application/json", obj(&format!("{}{}", "[".repeat(10_000), "]".repeat(10_000))), 400),
        ("invalid UTF-8", "application/json", [&obj("{\"a\":\"")[..], &[0xff, 0xfe], b"\"}}"].concat(), 400),
        (
            "YAML bomb",
            "application/yaml",
            b"apiVersion: r.example.com/v1\nkind: Record\nmetadata: {name: bomb}\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\nspec: [*i,*i,*i,*i,*i,*i,*i,*i,*i]\n".to_vec(),
            400,
        ),
        ("number out of range", "application/json", obj(r#"{"n":1e400}"#), 400),
    ];
    for (what, ct, body, want) in cases {
        let started = Instant::now();
        let (code, status) = send(&s, ct, body).await;
        assert_eq!(code, want, "{what}: {status}");
        assert_eq!(status["kind"], "Status", "{what}: {status}");
        assert_eq!(status["code"], want, "{what}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what} took {:?}",
            started.elapsed()
        );
    }
    // A huge integer is accepted as a number, not a crash.
    let (code, created) = send(
        &s,
        "application/json",
        obj(r#"{"n":123456789012345678901234567890}"#),
    )
    .await;
    assert_eq!(code, 201, "{created}");

    // An object that grows past the storage engine's limit through a patch: 413, nothing stored.
    let big = "y".repeat(2 * 1024 * 1024);
    let (code, _) = send(
        &s,
        "application/json",
        format!(r#"{{"apiVersion":"r.example.com/v1","kind":"Record","metadata":{{"name":"big"}},"spec":{{"a":"{big}"}}}}"#).into_bytes(),
    )
    .await;
    assert_eq!(code, 201);
    let patch_status = |ops: Value| {
        let s = &s;
        async move {
            let r = s
                .api(HttpVersion::Http2)
                .request(Method::PATCH, &format!("{BASE}/big"))
                .header("Content-Type", "application/json-patch+json")
                .body(ops.to_string())
                .send()
                .await
                .unwrap();
            let code = r.status();
            let mut status = r.json::<Value>().await.unwrap();
            // Keep failure messages short: an accepted patch answers with the 4 MiB object.
            status["spec"] = Value::Null;
            (code, status)
        }
    };
    // Each patch body stays under the 3 MiB request limit; the second grows the object past the
    // storage engine's limit (6 MiB): 413 RequestEntityTooLarge.
    let (code, status) =
        patch_status(json!([{"op": "add", "path": "/spec/b", "value": big}])).await;
    assert_eq!(code, 200, "{status}");
    let (code, status) =
        patch_status(json!([{"op": "add", "path": "/spec/c", "value": big}])).await;
    assert_eq!(code, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge", "{status}");
    // Copies beyond JSON Patch's 3 MiB copy budget: evanphx/json-patch refuses them and
    // kube-apiserver answers 422 with its generic message.
    let (code, status) = patch_status(json!([
        {"op": "copy", "from": "/spec/a", "path": "/spec/c"},
        {"op": "copy", "from": "/spec/a", "path": "/spec/d"},
    ]))
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(
        status["message"],
        "the server rejected our request due to an error in our request"
    );

    // Still healthy.
    let r = s
        .client(HttpVersion::Http1)
        .get(format!("{}/readyz", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// `--max-object-size` (default 1.5 MiB, etcd's request limit): a write whose stored object
/// passes it gets the error a cluster gives, and nothing is stored.
#[tokio::test]
async fn objects_past_the_max_object_size_are_refused_as_etcd_refuses_them() {
    let s = TestServer::start().await;
    s.api(HttpVersion::Http2)
        .create_crd(crd_json("r.example.com", "records", "Record", "Namespaced"))
        .await;
    let body = |name: &str, size: usize| {
        format!(
            r#"{{"apiVersion":"r.example.com/v1","kind":"Record","metadata":{{"name":"{name}"}},"spec":{{"a":"{}"}}}}"#,
            "y".repeat(size)
        )
        .into_bytes()
    };
    let (code, _) = send(&s, "application/json", body("fits", 1024 * 1024)).await;
    assert_eq!(code, 201);
    let (code, status) = send(&s, "application/json", body("too-big", 1_600_000)).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["message"], "etcdserver: request is too large");
    let r = s
        .api(HttpVersion::Http1)
        .get(&format!("{BASE}/too-big"))
        .await;
    assert_eq!(r.status, 404, "nothing stored");
}

/// Past `--max-requests-inflight` a request is refused with 429 and `Retry-After`, but never one
/// of `system:masters` (kube-apiserver's max-in-flight filter exempts them, so an
/// administrator is not locked out under load). The one slot is held by a list that waits for
/// a future resourceVersion.
#[tokio::test]
async fn system_masters_are_never_refused_for_requests_in_flight() {
    let s = TestServer::start_with(|c| c.limits.max_requests_inflight = 1).await;
    // A service account that may list ConfigMaps holds the slot.
    let api = s.api(HttpVersion::Http1);
    let r = api
        .post(
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"metadata": {"name": "reader"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"metadata": {"name": "reader"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            "/api/v1/namespaces/default/serviceaccounts/reader/token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let token = r.json()["status"]["token"].as_str().unwrap().to_string();
    let list = format!(
        "{}/api/v1/namespaces/default/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan",
        s.url
    );
    crate::support::eventually("the reader may list ConfigMaps", || async {
        s.client(HttpVersion::Http1)
            .get(format!("{}/api/v1/namespaces/default/configmaps", s.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status()
            == 200
    })
    .await;
    // Anonymous requests (allowed `/version`) are refused while the slot is held. Each one takes
    // the slot for a moment too, so the list may itself be refused (429) if it arrives during
    // one: then it is sent again.
    let anonymous = s.client(HttpVersion::Http1);
    let url = format!("{}/version", s.url);
    let mut attempts = 0;
    let (held, refused) = loop {
        attempts += 1;
        assert!(attempts <= 20, "never refused");
        let held = {
            let client = s.client(HttpVersion::Http1);
            let url = list.clone();
            let token = token.clone();
            tokio::spawn(async move { client.get(url).bearer_auth(token).send().await })
        };
        let mut refused = None;
        while !held.is_finished() {
            let r = anonymous.get(&url).send().await.unwrap();
            if r.status() == 429 {
                refused = Some(r);
                break;
            }
        }
        if let Some(r) = refused {
            break (held, r);
        }
    };
    assert_eq!(refused.headers()["retry-after"], "1");
    // The administrator's own request is served meanwhile.
    let r = s.api(HttpVersion::Http1).get("/version").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        !held.is_finished(),
        "the slot was released before the check"
    );
    held.await.unwrap().unwrap();
}
