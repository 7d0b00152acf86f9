//! Reliability against the real binary: SIGKILL during a write load (every acknowledged write
//! survives, revisions keep increasing), and hostile inputs answered with a Status while the
//! server stays healthy.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer};

const CRD: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"records.r.example.com"},
"spec":{"group":"r.example.com","scope":"Namespaced",
"names":{"plural":"records","singular":"record","kind":"Record"},
"versions":[{"name":"v1","served":true,"storage":true,
"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}"#;

const BASE: &str = "/apis/r.example.com/v1/namespaces/default/records";

async fn setup(s: &TestServer) {
    let client = s.client(HttpVersion::Http2);
    let r = client
        .post(format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            s.url
        ))
        .bearer_auth(&s.token)
        .header("Content-Type", "application/json")
        .body(CRD)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    for _ in 0..500 {
        let r = client
            .get(format!("{}{BASE}", s.url))
            .bearer_auth(&s.token)
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("CRD never served");
}

/// One acknowledged write: the object's name, its resourceVersion and its payload.
type Acked = HashMap<String, (i64, u64)>;

/// Writes (creates and updates) from 16 clients until `deadline`; returns what was acknowledged.
/// Requests cut off by the kill are simply not acknowledged.
async fn write_load(s: &TestServer, cycle: usize, deadline: Instant) -> Acked {
    let client = s.client(HttpVersion::Http1);
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (client, url, token) = (client.clone(), s.url.clone(), s.token.clone());
        tasks.push(tokio::spawn(async move {
            let mut acked = Acked::new();
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let name = format!("c{cycle}-w{w}-{i}");
                let body = json!({"apiVersion": "r.example.com/v1", "kind": "Record",
                                  "metadata": {"name": name}, "spec": {"payload": i, "cycle": cycle}});
                let Ok(r) = client
                    .post(format!("{url}{BASE}"))
                    .bearer_auth(&token)
                    .header("Content-Type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                else {
                    break;
                };
                if r.status() != 201 {
                    break;
                }
                let Ok(v) = r.json::<Value>().await else { break };
                let rv: i64 = v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                acked.insert(name, (rv, i));
            }
            acked
        }));
    }
    let mut all = Acked::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

#[test]
fn sigkill_during_writes_loses_nothing_acknowledged() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut s = TestServer::start();
    rt.block_on(setup(&s));
    let mut acked = Acked::new();
    let mut previous_revision = 0i64;
    for cycle in 0..20 {
        // Kill with SIGKILL while the load is running.
        let killer = {
            let pid = s.pid();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(250));
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            })
        };
        let got = rt.block_on(write_load(
            &s,
            cycle,
            Instant::now() + Duration::from_secs(2),
        ));
        killer.join().unwrap();
        assert!(!got.is_empty(), "cycle {cycle}: no write was acknowledged");
        acked.extend(got);
        let dir = s.kill_and_keep();
        s = TestServer::start_in(dir);
        // Every acknowledged write is present and intact.
        let list: Value = rt.block_on(async {
            s.client(HttpVersion::Http2)
                .get(format!("{}{BASE}", s.url))
                .bearer_auth(&s.token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        let stored: HashMap<String, &Value> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["metadata"]["name"].as_str().unwrap().to_string(), o))
            .collect();
        for (name, (rv, payload)) in &acked {
            let obj = stored
                .get(name)
                .unwrap_or_else(|| panic!("cycle {cycle}: acknowledged {name} is lost"));
            assert_eq!(obj["spec"]["payload"], *payload, "{name} damaged");
            assert_eq!(obj["metadata"]["resourceVersion"], rv.to_string(), "{name}");
        }
        // Revisions keep increasing across the kill.
        let list_rv: i64 = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            list_rv >= previous_revision,
            "revision went back: {list_rv} < {previous_revision}"
        );
        let max_acked = acked.values().map(|(rv, _)| *rv).max().unwrap_or(0);
        assert!(list_rv >= max_acked);
        previous_revision = list_rv;
    }
}

async fn send(s: &TestServer, ct: &str, body: Vec<u8>) -> (u16, Value) {
    let r = s
        .client(HttpVersion::Http2)
        .post(format!("{}{BASE}", s.url))
        .bearer_auth(&s.token)
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
    let s = tokio::task::spawn_blocking(TestServer::start)
        .await
        .unwrap();
    setup(&s).await;
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
    // Patches that grow the object past the storage limit (6 MiB) are refused with 413
    // RequestEntityTooLarge; each patch body stays under the 3 MiB request limit.
    let patch_status = |ops: Value| {
        let s = &s;
        async move {
            let r = s
                .client(HttpVersion::Http2)
                .patch(format!("{}{BASE}/big", s.url))
                .bearer_auth(&s.token)
                .header("Content-Type", "application/json-patch+json")
                .body(ops.to_string())
                .send()
                .await
                .unwrap();
            let code = r.status();
            let mut status = r.json::<Value>().await.unwrap();
            status["message"] = Value::String(
                status["message"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect(),
            );
            status["spec"] = Value::Null;
            (code, status)
        }
    };
    let (code, status) =
        patch_status(json!([{"op": "add", "path": "/spec/b", "value": big}])).await;
    assert_eq!(code, 200, "{status}");
    let (code, status) =
        patch_status(json!([{"op": "add", "path": "/spec/c", "value": big}])).await;
    assert_eq!(code, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge", "{status}");
    // Three copies exceed the copy budget: evanphx/json-patch refuses them, and kube-apiserver
    // answers 422 with its generic message.
    let (code, status) = patch_status(json!([
        {"op": "copy", "from": "/spec/a", "path": "/spec/b"},
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
