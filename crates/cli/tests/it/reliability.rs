//! Reliability against the real binary: SIGKILL during a write load (every acknowledged write
//! survives, revisions keep increasing). Hostile inputs are tested in-process in
//! `crates/server/tests/http/hostile.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, crd_json, eventually};

const BASE: &str = "/apis/r.example.com/v1/namespaces/default/records";

/// How many writes each cycle sees acknowledged before the kill.
const ACKED_BEFORE_KILL: usize = 200;

/// One acknowledged write: the object's name, its resourceVersion and its payload.
type Acked = HashMap<String, (i64, u64)>;

/// Creates from 16 clients until the server stops answering (or `deadline`, which fails the
/// test); returns what was acknowledged and counts it in `acks` as it goes. Requests cut off by
/// the kill are simply not acknowledged.
async fn write_load(
    s: &TestServer,
    cycle: usize,
    acks: Arc<AtomicUsize>,
    deadline: Instant,
) -> Acked {
    let client = s.client(HttpVersion::Http1);
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (client, url, token, acks) = (
            client.clone(),
            s.url.clone(),
            s.token.clone(),
            Arc::clone(&acks),
        );
        tasks.push(tokio::spawn(async move {
            let mut acked = Acked::new();
            let mut i = 0u64;
            loop {
                assert!(Instant::now() < deadline, "the server was never killed");
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
                acks.fetch_add(1, Ordering::SeqCst);
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
    rt.block_on(s.create_crd(&crd_json(
        "r.example.com",
        "records",
        "Record",
        "Namespaced",
    )));
    let mut acked = Acked::new();
    let mut previous_revision = 0i64;
    for cycle in 0..20 {
        // Kill with SIGKILL while the load is running, once it has seen writes acknowledged.
        let acks = Arc::new(AtomicUsize::new(0));
        let killer = {
            let (pid, acks) = (s.pid(), Arc::clone(&acks));
            std::thread::spawn(move || {
                eventually(
                    &format!("{ACKED_BEFORE_KILL} writes are acknowledged"),
                    || acks.load(Ordering::SeqCst) >= ACKED_BEFORE_KILL,
                );
                let status = std::process::Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status()
                    .expect("running kill");
                assert!(status.success(), "kill -KILL {pid} failed");
            })
        };
        let got = rt.block_on(write_load(
            &s,
            cycle,
            acks,
            Instant::now() + Duration::from_mins(1),
        ));
        killer
            .join()
            .expect("the killer observed the writes and killed the server");
        assert!(
            got.len() >= ACKED_BEFORE_KILL,
            "cycle {cycle}: {} acknowledged",
            got.len()
        );
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
