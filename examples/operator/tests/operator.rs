//! The example operator against its own API server per test: reconcile and status, printer
//! columns, Events, owned-object garbage collection, finalizer cleanup, leader failover and
//! the validating webhook's denial.

use std::time::Duration;

use crd_apiserver_testing::TestServer;
use crd_apiserver_testing::k8s_openapi::api::core::v1::ConfigMap;
use crd_apiserver_testing::kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use crd_apiserver_testing::kube::runtime::wait::conditions;
use crd_apiserver_testing::kube::{Resource, ResourceExt};
use example_operator::{FINALIZER, Page, page_resource};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(10);

/// A server with the CRD, the operator running, and the Page `home` created.
async fn start() -> (TestServer, tokio::task::JoinHandle<()>, Api<Page>) {
    let server = TestServer::builder()
        .crd_yaml(example_operator::CRD_YAML)
        .start()
        .await
        .unwrap();
    let operator = tokio::spawn(example_operator::run(server.client()));
    let pages: Api<Page> = Api::namespaced_with(server.client(), "default", &page_resource());
    let page: Page = serde_json::from_value(json!({
        "apiVersion": "demo.example.com/v1", "kind": "Page",
        "metadata": {"name": "home"}, "spec": {"content": "<h1>Hello</h1>"},
    }))
    .unwrap();
    pages.create(&PostParams::default(), &page).await.unwrap();
    (server, operator, pages)
}

fn ready_at(generation: i64) -> impl Fn(Option<&Page>) -> bool {
    move |p: Option<&Page>| {
        p.and_then(|p| p.status.as_ref())
            .is_some_and(|s| s.ready && s.observed_generation == Some(generation))
    }
}

#[tokio::test]
async fn a_page_is_served_from_an_owned_configmap_and_reports_status() {
    let (server, operator, pages) = start().await;
    let page = server
        .wait_for(&pages, "home", ready_at(1), TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.status.as_ref().unwrap().config_map, "page-home");
    assert_eq!(page.finalizers(), [FINALIZER]);

    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm = configmaps.get("page-home").await.unwrap();
    assert_eq!(cm.owner_references()[0].uid, page.uid().unwrap());
    assert_eq!(cm.data.unwrap()["index.html"], "<h1>Hello</h1>");

    // A new generation is reconciled into the ConfigMap and the status.
    let patch = Patch::Merge(json!({"spec": {"content": "<h1>Bye</h1>"}}));
    pages
        .patch("home", &PatchParams::default(), &patch)
        .await
        .unwrap();
    server
        .wait_for(&pages, "home", ready_at(2), TIMEOUT)
        .await
        .unwrap();
    let cm = configmaps.get("page-home").await.unwrap();
    assert_eq!(cm.data.unwrap()["index.html"], "<h1>Bye</h1>");

    // The Recorder's events.k8s.io Events are there, about this Page.
    let events = server
        .events_about(&page.object_ref(&page_resource()))
        .await
        .unwrap();
    assert!(!events.is_empty());
    assert!(
        events
            .iter()
            .all(|e| e.reason.as_deref() == Some("Reconciled"))
    );
    assert_eq!(
        events[0].message.as_deref(),
        Some("ConfigMap page-home serves the content")
    );

    // kubectl shows the printer columns.
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args(["get", "pages", "--no-headers=false"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "CONFIGMAP", "AGE"]);
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["home", "true", "page-home"]);
    operator.abort();
}

#[tokio::test]
async fn deleting_a_page_archives_it_and_collects_its_configmap() {
    let (server, operator, pages) = start().await;
    let page = server
        .wait_for(&pages, "home", ready_at(1), TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm_uid = configmaps.get("page-home").await.unwrap().uid().unwrap();

    pages
        .delete("home", &DeleteParams::default())
        .await
        .unwrap();
    // The finalizer ran (the archive holds the content), then let the Page go.
    let uid = page.uid().unwrap();
    server
        .wait_for(&pages, "home", conditions::is_deleted(&uid), TIMEOUT)
        .await
        .unwrap();
    let archive = configmaps.get("page-archive").await.unwrap();
    assert_eq!(archive.data.unwrap()["home"], "<h1>Hello</h1>");
    // The garbage collector removes the ConfigMap the Page owned.
    server
        .wait_for(
            &configmaps,
            "page-home",
            conditions::is_deleted(&cm_uid),
            TIMEOUT,
        )
        .await
        .unwrap();
    operator.abort();
}

#[tokio::test]
async fn a_second_instance_takes_over_when_the_leader_stops() {
    use crd_apiserver_testing::k8s_openapi::api::coordination::v1::Lease;
    let server = TestServer::builder()
        .crd_yaml(example_operator::CRD_YAML)
        .start()
        .await
        .unwrap();
    let lease = Duration::from_secs(1);
    let leases: Api<Lease> = Api::namespaced(server.client(), "default");
    let holder = |who: &'static str| {
        move |l: Option<&Lease>| {
            l.and_then(|l| l.spec.as_ref())
                .and_then(|s| s.holder_identity.as_deref())
                == Some(who)
        }
    };
    let a = tokio::spawn(example_operator::run_elected(server.client(), "a", lease));
    server
        .wait_for(&leases, "page-operator", holder("a"), TIMEOUT)
        .await
        .unwrap();
    let b = tokio::spawn(example_operator::run_elected(server.client(), "b", lease));

    let pages: Api<Page> = Api::namespaced_with(server.client(), "default", &page_resource());
    let page = |name: &str| -> Page {
        serde_json::from_value(json!({
            "apiVersion": "demo.example.com/v1", "kind": "Page",
            "metadata": {"name": name}, "spec": {"content": name},
        }))
        .unwrap()
    };
    pages
        .create(&PostParams::default(), &page("one"))
        .await
        .unwrap();
    server
        .wait_for(&pages, "one", ready_at(1), TIMEOUT)
        .await
        .unwrap();
    // b stood by: the lease is still a's.
    let l = leases.get("page-operator").await.unwrap();
    assert_eq!(l.spec.unwrap().holder_identity.as_deref(), Some("a"));

    // The leader dies without a word; b takes over once the lease expires, and reconciles.
    a.abort();
    let l = server
        .wait_for(&leases, "page-operator", holder("b"), TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(l.spec.unwrap().lease_transitions, Some(1));
    pages
        .create(&PostParams::default(), &page("two"))
        .await
        .unwrap();
    server
        .wait_for(&pages, "two", ready_at(1), TIMEOUT)
        .await
        .unwrap();
    b.abort();
}

#[tokio::test]
async fn the_webhook_refuses_a_page_with_a_script() {
    use example_operator::webhook;
    // The configuration the operator deploys and the function its webhook binary serves.
    let server = TestServer::builder()
        .crd_yaml(example_operator::CRD_YAML)
        .validating_webhook(webhook::configuration(), webhook::validate_page)
        .start()
        .await
        .unwrap();
    let pages: Api<Page> = Api::namespaced_with(server.client(), "default", &page_resource());
    let page = |content: &str| -> Page {
        serde_json::from_value(json!({
            "apiVersion": "demo.example.com/v1", "kind": "Page",
            "metadata": {"name": "home"}, "spec": {"content": content},
        }))
        .unwrap()
    };
    let err = pages
        .create(&PostParams::default(), &page("<script>alert(1)</script>"))
        .await
        .unwrap_err();
    let crd_apiserver_testing::kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        "admission webhook \"pages.demo.example.com\" denied the request: spec.content must not contain <script>: pages are served as static files"
    );

    // A static page passes; an UPDATE that adds a script is refused as well.
    pages
        .create(&PostParams::default(), &page("<h1>Hello</h1>"))
        .await
        .unwrap();
    let patch = Patch::Merge(json!({"spec": {"content": "<script></script>"}}));
    let err = pages
        .patch("home", &PatchParams::default(), &patch)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("denied the request: spec.content must not contain <script>"),
        "{err}"
    );
    assert_eq!(
        pages.get("home").await.unwrap().spec.content,
        "<h1>Hello</h1>"
    );
}
