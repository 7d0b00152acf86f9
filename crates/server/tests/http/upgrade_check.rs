//! The upgrade check over HTTP: a server-side dry run of a CRD update answers with one `Warning`
//! header per finding (upstream's `299 - "<text>"` format), stores nothing, and
//! `POST /debug/upgrade-check` returns the structured report.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, CRDS, HttpVersion, Resp, TestServer, crd_json};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const NAME: &str = "widgets.example.com";

fn crd(max: i64, with_color: bool) -> Value {
    let mut props = json!({"replicas": {"type": "integer", "maximum": max}});
    if with_color {
        props["color"] = json!({"type": "string"});
    }
    let mut crd = crd_json("example.com", "widgets", "Widget", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": props}}
    });
    crd
}

async fn seed(api: &Api<'_>) {
    api.create_crd(crd(20, true)).await;
    for (name, replicas) in [("a", 5), ("b", 15), ("c", 12)] {
        let r = api
            .post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": name}, "spec": {"replicas": replicas, "color": "red"}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
}

async fn dry_run_put(api: &Api<'_>, mut new: Value) -> Resp {
    let current = api.get(&format!("{CRDS}/{NAME}")).await.json();
    new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    api.call(
        Method::PUT,
        &format!("{CRDS}/{NAME}?dryRun=All"),
        "application/json",
        Some(new),
    )
    .await
}

#[tokio::test]
async fn a_dry_run_crd_update_warns_about_stored_objects_and_changes_nothing() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    seed(&api).await;

    let r = dry_run_put(&api, crd(10, false)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.warnings(),
        vec![
            "299 - \"upgrade check: 2 stored object(s) would be invalid at v1: spec.replicas: Invalid value: spec.replicas in body should be less than or equal to 10 (e.g. default/b)\"",
            "299 - \"upgrade check: 3 stored object(s) hold data at spec.color that would be pruned at v1 (e.g. default/a)\"",
        ]
    );
    // Nothing was stored: the CRD still has the old schema.
    let stored = api.get(&format!("{CRDS}/{NAME}")).await.json();
    assert_eq!(
        stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["replicas"]["maximum"],
        20
    );

    // A harmless change: no warnings.
    let r = dry_run_put(&api, crd(30, true)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.warnings(), Vec::<String>::new());
}

#[tokio::test]
async fn a_real_crd_update_is_not_checked() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    seed(&api).await;
    let current = api.get(&format!("{CRDS}/{NAME}")).await.json();
    let mut new = crd(10, true);
    new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    let r = api
        .call(
            Method::PUT,
            &format!("{CRDS}/{NAME}"),
            "application/json",
            Some(new),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.warnings().iter().all(|w| !w.contains("upgrade check")),
        "{:?}",
        r.warnings()
    );
}

#[tokio::test]
async fn the_debug_endpoint_returns_the_structured_report() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    seed(&api).await;
    let r = api.post("/debug/upgrade-check", crd(10, true)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let report = r.json();
    assert_eq!(report["crd"], NAME);
    assert_eq!(report["objects"], 3);
    assert_eq!(report["storedVersions"], json!({"v1": 3}));
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{report}");
    let f = &findings[0];
    assert_eq!(f["kind"], "Invalid");
    assert_eq!(f["field"], "spec.replicas");
    assert_eq!(
        f["message"],
        "spec.replicas: Invalid value: spec.replicas in body should be less than or equal to 10"
    );
    assert_eq!(f["breaking"], true);
    assert_eq!(f["count"], 2);
    assert_eq!(
        f["examples"],
        json!([
            {"name": "default/b", "message": "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10"},
            {"name": "default/c", "message": "spec.replicas: Invalid value: 12: spec.replicas in body should be less than or equal to 10"},
        ])
    );

    // An unknown CRD is a Kubernetes NotFound; a body that is not JSON a BadRequest.
    let mut other = crd(10, true);
    other["metadata"]["name"] = json!("gadgets.example.com");
    other["spec"]["names"]["plural"] = json!("gadgets");
    let r = api.post("/debug/upgrade-check", other).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.json()["reason"], "NotFound");
    let r = api
        .request(Method::POST, "/debug/upgrade-check")
        .body("not json")
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 400);
}

/// `widgets.<group>` with versions `v1` and `v1beta1`, `storage` naming the storage version.
fn two_versions(group: &str, storage: &str) -> Value {
    let mut crd = crd(20, true);
    crd["metadata"]["name"] = json!(format!("widgets.{group}"));
    crd["spec"]["group"] = json!(group);
    let v1 = crd["spec"]["versions"][0].clone();
    let mut beta = v1.clone();
    beta["name"] = json!("v1beta1");
    crd["spec"]["versions"] = json!([v1, beta]);
    for v in crd["spec"]["versions"].as_array_mut().expect("versions") {
        v["storage"] = json!(v["name"] == storage);
    }
    crd
}

fn kinds(report: &Value) -> Vec<(String, String, u64, bool)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or("").to_string(),
                f["version"].as_str().unwrap_or("").to_string(),
                f["count"].as_u64().unwrap_or(0),
                f["breaking"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[tokio::test]
async fn removing_a_version_objects_are_stored_at_is_reported_with_its_count_and_the_migration() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let group = "stored.upgrade.example.com";
    api.create_crd(two_versions(group, "v1beta1")).await;
    for name in ["a", "b"] {
        let r = api
            .post(
                &format!("/apis/{group}/v1beta1/namespaces/default/widgets"),
                json!({"apiVersion": format!("{group}/v1beta1"), "kind": "Widget",
                       "metadata": {"name": name}, "spec": {"replicas": 1}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let mut only_v1 = two_versions(group, "v1");
    only_v1["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .truncate(1);
    let report = api.post("/debug/upgrade-check", only_v1).await.json();
    let s = |x: &str| x.to_string();
    assert_eq!(
        kinds(&report),
        vec![
            (s("InvalidDefinition"), s(""), 1, true),
            (s("VersionRemoved"), s("v1beta1"), 2, true),
            (s("Migration"), s("v1"), 2, false),
        ],
        "{report}"
    );
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert!(
        messages[0].contains(
            "status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions"
        ),
        "{messages:?}"
    );
    assert!(
        messages[1].contains(&format!("crd-apiserver migrate widgets.{group}")),
        "{messages:?}"
    );
}

#[tokio::test]
async fn removing_a_version_clients_read_is_reported_from_the_request_metrics() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let group = "reads.upgrade.example.com";
    api.create_crd(two_versions(group, "v1")).await;
    let mut only_v1 = two_versions(group, "v1");
    only_v1["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .truncate(1);
    // Nobody has read v1beta1 yet, and nothing is stored: removing it is harmless.
    let report = api
        .post("/debug/upgrade-check", only_v1.clone())
        .await
        .json();
    assert_eq!(kinds(&report), vec![], "{report}");
    let r = api.get(&format!("/apis/{group}/v1beta1/widgets")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    crate::support::eventually("the v1beta1 read is counted", || async {
        let report = api
            .post("/debug/upgrade-check", only_v1.clone())
            .await
            .json();
        kinds(&report) == vec![("VersionRemoved".to_string(), "v1beta1".to_string(), 1, true)]
    })
    .await;
}
