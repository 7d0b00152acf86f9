//! The harness on etcd (feature `etcd`): servers sharing one etcd stay apart, each under its
//! own key prefix. The test starts its own etcd (`$ETCD_BIN` or `etcd` on PATH).
//! `start_etcd` repeats the one in `crates/cli/tests/it/etcd.rs` on purpose (see there).
#![cfg(feature = "etcd")]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crd_apiserver_testing::TestServer;
use crd_apiserver_testing::k8s_openapi::api::core::v1::ConfigMap;
use crd_apiserver_testing::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use crd_apiserver_testing::kube::ResourceExt;
use crd_apiserver_testing::kube::api::{Api, ListParams, PostParams};

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
    let client_url = format!("http://127.0.0.1:{}", free_port());
    let peer_url = format!("http://127.0.0.1:{}", free_port());
    let child = Command::new(&binary)
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
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("this test needs an etcd binary ({binary}: {e})"));
    let etcd = Etcd {
        child,
        _dir: dir,
        endpoint: client_url,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let health = Command::new("curl")
            .args(["-s", &format!("{}/health", etcd.endpoint)])
            .output();
        if health.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("true")) {
            return etcd;
        }
        assert!(Instant::now() < deadline, "etcd did not become healthy");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, kind: Widget}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
";

#[tokio::test]
async fn servers_sharing_an_etcd_are_isolated() {
    let etcd = tokio::task::spawn_blocking(start_etcd).await.unwrap();
    let endpoint = etcd.endpoint.as_str();
    let a = TestServer::builder()
        .etcd(&[endpoint])
        .crd_yaml(WIDGETS)
        .start()
        .await
        .unwrap();
    let b = TestServer::builder()
        .etcd(&[endpoint])
        .start()
        .await
        .unwrap();
    for (server, owner) in [(&a, "a"), (&b, "b")] {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("same-name".into());
        cm.data = Some([("owner".to_string(), owner.to_string())].into());
        Api::<ConfigMap>::namespaced(server.client(), "default")
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    for (server, owner) in [(&a, "a"), (&b, "b")] {
        let cm = Api::<ConfigMap>::namespaced(server.client(), "default")
            .get("same-name")
            .await
            .unwrap();
        assert_eq!(cm.data.unwrap()["owner"], owner);
    }
    let crds = |s: &TestServer| {
        let api: Api<CustomResourceDefinition> = Api::all(s.client());
        async move {
            api.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(crds(&a).await, ["widgets.example.com"]);
    assert!(crds(&b).await.is_empty());
    drop((a, b));
    drop(etcd);
}
