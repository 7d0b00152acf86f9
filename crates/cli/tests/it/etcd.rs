//! Several servers on one etcd (feature `etcd`): CRDs, watches and conflicts are shared, as
//! with several kube-apiservers. Each test starts its own etcd (`$ETCD_BIN` or `etcd` on PATH);
//! a missing binary fails the test.
//!
//! `start_etcd` has a twin in `crates/testing/tests/etcd.rs` (and a third, async one in
//! crd-storage's etcd tests): the test crates share no support code (this crate's tests do not
//! depend on the harness crate, whose public API is for operators, not for starting etcd), so
//! each keeps its own small copy.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, crd_json};

struct Etcd {
    child: Child,
    _dir: tempfile::TempDir,
    endpoint: String,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_etcd() -> Etcd {
    let binary = std::env::var("ETCD_BIN").unwrap_or_else(|_| "etcd".into());
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut child = Command::new(&binary)
        .arg("--name=test")
        .arg(format!("--data-dir={}", dir.path().join("data").display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster=test={peer_url}"))
        .args([
            "--heartbeat-interval=10",
            "--election-timeout=100",
            "--log-level=error",
        ])
        .arg("--experimental-watch-progress-notify-interval=1s")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("these tests need an etcd binary ({binary}: {e}); .ci/run installs etcd-server")
        });
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let health = Command::new("curl")
            .args(["-s", &format!("{client_url}/health")])
            .output();
        if health.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("true")) {
            return Etcd {
                child,
                _dir: dir,
                endpoint: client_url,
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("etcd did not become healthy");
}

fn server_on(etcd: &Etcd) -> TestServer {
    TestServer::start_with(
        tempfile::tempdir().unwrap(),
        &["--etcd-servers", &etcd.endpoint],
    )
}

/// An etcd and two servers on it, started off the async runtime.
async fn two_servers_on_one_etcd() -> (Etcd, TestServer, TestServer) {
    tokio::task::spawn_blocking(|| {
        let etcd = start_etcd();
        let a = server_on(&etcd);
        let b = server_on(&etcd);
        (etcd, a, b)
    })
    .await
    .unwrap()
}

const BASE: &str = "/apis/e.example.com/v1/namespaces/default/things";

/// Sends a JSON request through the shared helper; answers the status and the JSON body.
async fn call(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    body: Option<String>,
) -> (u16, Value) {
    let r = s.call(method, path, "application/json", body).await;
    (
        r.status.as_u16(),
        serde_json::from_str(&r.text).unwrap_or(Value::Null),
    )
}

async fn served_within(s: &TestServer, path: &str, want: u16, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (code, _) = call(s, reqwest::Method::GET, path, None).await;
        if code == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{path} never answered {want} (last {code})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_share_crds_watches_and_conflicts() {
    let (etcd, a, b) = two_servers_on_one_etcd().await;

    // A CRD created through A is served by B within a second.
    let crd = crd_json("e.example.com", "things", "Thing", "Namespaced");
    let (code, _) = call(
        &a,
        reqwest::Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some(crd.to_string()),
    )
    .await;
    assert_eq!(code, 201);
    let took = served_within(&b, BASE, 200, Duration::from_secs(5)).await;
    assert!(
        took < Duration::from_secs(1),
        "B served the CRD after {took:?}"
    );

    // A watch on B sees a write made through A.
    let (code, list) = call(&b, reqwest::Method::GET, BASE, None).await;
    assert_eq!(code, 200, "{list}");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion: {list}"))
        .to_string();
    let mut watch = b
        .client(HttpVersion::Http2)
        .get(format!(
            "{}{BASE}?watch=true&resourceVersion={rv}&timeoutSeconds=5",
            b.url
        ))
        .bearer_auth(&b.token)
        .send()
        .await
        .unwrap();
    let obj = json!({"apiVersion": "e.example.com/v1", "kind": "Thing", "metadata": {"name": "t1"}, "spec": {"v": 1}});
    let (code, created) = call(&a, reqwest::Method::POST, BASE, Some(obj.to_string())).await;
    assert_eq!(code, 201, "{created}");
    let chunk = tokio::time::timeout(Duration::from_secs(5), watch.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let event: Value =
        serde_json::from_slice(chunk.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "t1");
    assert_eq!(
        event["object"]["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // Conflicting updates through both: one succeeds, the other is a 409.
    let mut first = created.clone();
    first["spec"]["v"] = json!("from-a");
    let mut second = created.clone();
    second["spec"]["v"] = json!("from-b");
    let path = format!("{BASE}/t1");
    let (ra, rb) = tokio::join!(
        call(&a, reqwest::Method::PUT, &path, Some(first.to_string())),
        call(&b, reqwest::Method::PUT, &path, Some(second.to_string())),
    );
    let mut codes = [ra.0, rb.0];
    codes.sort_unstable();
    assert_eq!(codes, [200, 409], "{ra:?} {rb:?}");
    let loser = if ra.0 == 409 { &ra.1 } else { &rb.1 };
    assert_eq!(loser["reason"], "Conflict");
    assert!(
        loser["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );

    // Deleting the CRD through B removes it from both.
    let (code, _) = call(
        &b,
        reqwest::Method::DELETE,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.e.example.com",
        None,
    )
    .await;
    assert_eq!(code, 200);
    served_within(&a, BASE, 404, Duration::from_secs(10)).await;
    served_within(&b, BASE, 404, Duration::from_secs(10)).await;
    drop((a, b, etcd));
}

/// Regression: two servers on one etcd, each with its own generated CA, rewrote every
/// namespace's `kube-root-ca.crt` with their own CA in turn, about 150 writes a second, for as
/// long as both ran. Each now adds its CA to the bundle, and the bundle stays once it holds both.
#[tokio::test]
async fn two_servers_with_their_own_cas_publish_one_bundle() {
    let (etcd, a, b) = two_servers_on_one_etcd().await;
    let path = "/api/v1/namespaces/default/configmaps/kube-root-ca.crt";
    let (ca_a, ca_b) = (
        String::from_utf8(a.ca_pem.clone()).unwrap(),
        String::from_utf8(b.ca_pem.clone()).unwrap(),
    );
    assert_ne!(ca_a, ca_b);
    let started = Instant::now();
    let cm = loop {
        let (code, cm) = call(&a, reqwest::Method::GET, path, None).await;
        let bundle = cm["data"]["ca.crt"].as_str().unwrap_or("");
        if code == 200 && bundle.contains(ca_a.trim()) && bundle.contains(ca_b.trim()) {
            break cm;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the bundle never held both CAs: {cm}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // No write follows: a watch from the bundle's revision sees no event before it times out.
    let rv = cm["metadata"]["resourceVersion"].as_str().unwrap();
    let r = b
        .call(
            reqwest::Method::GET,
            &format!(
                "/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name=kube-root-ca.crt&resourceVersion={rv}&timeoutSeconds=2"
            ),
            "application/json",
            None,
        )
        .await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(r.text.trim(), "", "the bundle was written again");
    drop((a, b, etcd));
}

#[test]
fn the_walkthrough_runs_on_etcd() {
    let etcd = start_etcd();
    let s = server_on(&etcd);
    s.apply_crd(
        "crd.yaml",
        &crate::support::crontab_crd(),
        "crontabs.stable.example.com",
    );
    s.write("ct.yaml", &crate::support::my_crontab());
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    let out = s.kubectl_ok(&["get", "ct"]);
    assert!(out.contains("my-new-cron-object"), "{out}");
    s.kubectl_ok(&["delete", "-f", "crd.yaml"]);
    let out = s.kubectl(&["get", "crontabs"]);
    assert!(!out.status.success());
    // Keys are laid out as kube-apiserver lays them out.
    let keys = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &etcd.endpoint,
            "get",
            "/registry/",
            "--prefix",
            "--keys-only",
        ])
        .output()
        .expect("etcdctl");
    let keys = String::from_utf8_lossy(&keys.stdout);
    assert!(keys.contains("/registry/namespaces/default"), "{keys}");
}

/// With etcd frozen (SIGSTOP: it neither answers nor closes its connections), reads and writes
/// are answered 504 once `--request-timeout` has passed, instead of waiting until the client
/// gives up; once etcd runs again the server serves as before. (Whether the timed-out create is
/// applied once etcd resumes is etcd's to decide, as upstream's 504 says: "may still be
/// processing".)
#[tokio::test(flavor = "multi_thread")]
async fn requests_to_a_frozen_etcd_are_answered_504_at_the_request_timeout() {
    let (etcd, s) = tokio::task::spawn_blocking(|| {
        let etcd = start_etcd();
        let s = TestServer::start_with(
            tempfile::tempdir().unwrap(),
            &["--etcd-servers", &etcd.endpoint, "--request-timeout", "2s"],
        );
        (etcd, s)
    })
    .await
    .unwrap();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let body = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).to_string()
    };
    let signal = |sig: &str| {
        let pid = etcd.child.id().to_string();
        assert!(
            Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    let (code, _) = call(&s, reqwest::Method::POST, configmaps, Some(body("before"))).await;
    assert_eq!(code, 201);
    signal("-STOP");
    let requests = [
        (
            reqwest::Method::POST,
            configmaps.to_string(),
            Some(body("during")),
        ),
        (reqwest::Method::GET, configmaps.to_string(), None),
        // A shorter `timeout` wins over the flag.
        (
            reqwest::Method::GET,
            format!("{configmaps}/before?timeout=500ms"),
            None,
        ),
    ];
    for (method, path, body) in requests {
        let started = Instant::now();
        let (code, status) = call(&s, method.clone(), &path, body).await;
        let took = started.elapsed();
        assert_eq!(code, 504, "{method} {path}: {status}");
        assert_eq!(status["reason"], "Timeout", "{method} {path}");
        assert_eq!(
            status["message"], "Timeout: request did not complete within the allotted timeout",
            "{method} {path}"
        );
        // Well before the test client's own 30 s.
        assert!(
            took < Duration::from_secs(15),
            "{method} {path} took {took:?}"
        );
    }
    signal("-CONT");
    served_within(
        &s,
        &format!("{configmaps}/before"),
        200,
        Duration::from_secs(30),
    )
    .await;
    let (code, _) = call(&s, reqwest::Method::POST, configmaps, Some(body("after"))).await;
    assert!(code == 201, "create after etcd resumed: {code}");
    drop((s, etcd));
}
