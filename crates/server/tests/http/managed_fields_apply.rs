//! Field ownership across client-side apply, other writers and the move to server-side apply,
//! as kube-apiserver keeps it:
//! - a manager never regains fields other managers took from it when a third manager writes
//!   something else (SMD no longer expands a granular map or struct owned as a whole);
//! - a create records its manager's fields from the object as the client sent it, before
//!   mutating admission and the kind's `PrepareForCreate` (a Job's generated selector and
//!   template labels belong to nobody), so kubectl's client-side to server-side apply migration
//!   of a Job keeps them.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, HttpVersion, TestServer};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const CSA: &str = "kubectl-client-side-apply";

/// The `managedFields` entry of `manager` in `obj`, if any.
fn entry(obj: &Value, manager: &str) -> Option<Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
        .cloned()
}

/// The `fieldsV1` of `manager`'s entry in `obj`; panics when it has none.
fn fields(obj: &Value, manager: &str) -> Value {
    entry(obj, manager)
        .unwrap_or_else(|| panic!("no {manager} entry: {obj}"))
        .get("fieldsV1")
        .cloned()
        .unwrap_or(Value::Null)
}

/// `obj` with kubectl's last-applied annotation holding `obj` itself, as `kubectl apply` (client
/// side) creates objects.
fn with_last_applied(mut obj: Value) -> Value {
    let text = format!("{obj}\n");
    obj["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": text});
    obj
}

async fn patch(api: &Api<'_>, path: &str, content_type: &str, body: Value) -> Value {
    let r = api
        .call(Method::PATCH, path, content_type, Some(body))
        .await;
    assert_eq!(r.status, 200, "PATCH {path}: {}", r.text);
    r.json()
}

/// `kubectl apply` (client side), then a patch taking its data keys, then an unrelated patch:
/// the client-side applier keeps `f:data: {}` and nothing more, whatever writes come after.
#[tokio::test]
async fn a_manager_does_not_regain_fields_when_someone_else_writes() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "mf", "namespace": "default"}, "data": {"a": "1", "b": "2"}});
    let r = api
        .post(&format!("{CMS}?fieldManager={CSA}"), with_last_applied(cm))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json();
    assert_eq!(
        fields(&created, CSA)["f:data"],
        json!({".": {}, "f:a": {}, "f:b": {}}),
        "{created}"
    );

    let path = format!("{CMS}/mf");
    let smp = "application/strategic-merge-patch+json";
    let taken = patch(
        &api,
        &format!("{path}?fieldManager=B"),
        smp,
        json!({"data": {"a": "9", "b": "9"}}),
    )
    .await;
    assert_eq!(fields(&taken, CSA)["f:data"], json!({}), "{taken}");
    assert_eq!(
        fields(&taken, "B"),
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );

    // Writes by others that do not touch `data`: a strategic merge patch, a merge patch, a
    // JSON patch and a PUT.
    let unrelated = patch(
        &api,
        &format!("{path}?fieldManager=C"),
        smp,
        json!({"metadata": {"labels": {"x": "1"}}}),
    )
    .await;
    let merged = patch(
        &api,
        &format!("{path}?fieldManager=D"),
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"y": "1"}}}),
    )
    .await;
    let json_patched = patch(
        &api,
        &format!("{path}?fieldManager=E"),
        "application/json-patch+json",
        json!([{"op": "add", "path": "/data/c", "value": "3"}]),
    )
    .await;
    let mut put = json_patched.clone();
    put["metadata"]["labels"]["z"] = json!("1");
    let r = api
        .call(
            Method::PUT,
            &format!("{path}?fieldManager=F"),
            "application/json",
            Some(put),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let replaced = r.json();
    for obj in [&unrelated, &merged, &json_patched, &replaced] {
        assert_eq!(fields(obj, CSA)["f:data"], json!({}), "{obj}");
        assert_eq!(
            fields(obj, "B"),
            json!({"f:data": {"f:a": {}, "f:b": {}}}),
            "{obj}"
        );
    }
    assert_eq!(
        fields(&unrelated, "C"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
    );
    assert_eq!(fields(&json_patched, "E"), json!({"f:data": {"f:c": {}}}));
    assert_eq!(
        fields(&replaced, "F"),
        json!({"f:metadata": {"f:labels": {"f:z": {}}}})
    );
    let stored = api.get(&path).await.json();
    assert_eq!(
        stored["metadata"]["managedFields"],
        replaced["metadata"]["managedFields"]
    );
}

fn job() -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"template": {"spec": {
            "containers": [{"name": "pi", "image": "busybox", "command": ["sh", "-c", "echo hi"]}],
            "restartPolicy": "Never"}}}})
}

/// The labels a Job's `PrepareForCreate` adds to its template.
const GENERATED_LABELS: [&str; 4] = [
    "controller-uid",
    "job-name",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
];

/// A Job created by client-side apply: the creator owns what it sent, not the selector and
/// template labels the Job's `PrepareForCreate` generates.
fn assert_generated_fields_unowned(created: &Value, manager: &str) {
    let owned = fields(created, manager);
    let spec = &owned["f:spec"];
    assert!(spec.is_object(), "{owned}");
    assert!(spec.get("f:selector").is_none(), "{owned}");
    let labels = &spec["f:template"]["f:metadata"]["f:labels"];
    for label in GENERATED_LABELS {
        assert!(labels.get(format!("f:{label}")).is_none(), "{owned}");
    }
    assert!(
        spec["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"pi\"}"]["f:image"].is_object(),
        "{owned}"
    );
    // The generated fields are there all the same.
    let uid = created["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        created["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid,
        "{created}"
    );
    for label in GENERATED_LABELS {
        assert!(
            created["spec"]["template"]["metadata"]["labels"][label].is_string(),
            "{label}: {created}"
        );
    }
}

/// `kubectl apply` of a Job without a selector, then `kubectl apply --server-side`: kubectl
/// first turns its client-side entry into a `kubectl` Apply entry (`csaupgrade`), then applies
/// the same configuration; the selector and template labels nobody owns stay.
#[tokio::test]
async fn a_job_created_by_client_side_apply_migrates_to_server_side_apply() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(
            &format!("{JOBS}?fieldManager={CSA}"),
            with_last_applied(job()),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json();
    assert_generated_fields_unowned(&created, CSA);
    let path = format!("{JOBS}/pi");
    assert_eq!(api.get(&path).await.json(), created);

    // kubectl's `csaupgrade`: the client-side entry becomes the `kubectl` Apply entry.
    let upgraded: Vec<Value> = created["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if e["manager"] == CSA {
                e["manager"] = json!("kubectl");
                e["operation"] = json!("Apply");
            }
            e
        })
        .collect();
    let rv = created["metadata"]["resourceVersion"].clone();
    let migrated = patch(
        &api,
        &path,
        "application/json-patch+json",
        json!([
            {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        ]),
    )
    .await;
    let kubectl = entry(&migrated, "kubectl").expect("kubectl entry");
    assert_eq!(kubectl["operation"], "Apply", "{migrated}");

    // The server-side apply of the same configuration changes nothing.
    let mut config = job();
    config["metadata"]["annotations"] = created["metadata"]["annotations"].clone();
    let r = api
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=kubectl"),
            "application/apply-patch+yaml",
            Some(config),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let applied = r.json();
    assert_eq!(applied["spec"]["selector"], created["spec"]["selector"]);
    assert_eq!(
        applied["spec"]["template"]["metadata"]["labels"],
        created["spec"]["template"]["metadata"]["labels"]
    );
    assert!(
        fields(&applied, "kubectl")["f:spec"]
            .get("f:selector")
            .is_none(),
        "{applied}"
    );
}

/// A Job created by a plain POST or by a server-side apply: nobody owns the generated fields.
#[tokio::test]
async fn generated_job_fields_are_owned_by_nobody() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(&format!("{JOBS}?fieldManager=creator"), job())
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_generated_fields_unowned(&r.json(), "creator");

    let mut config = job();
    config["metadata"]["name"] = json!("applied");
    let r = api
        .call(
            Method::PATCH,
            &format!("{JOBS}/applied?fieldManager=applier"),
            "application/apply-patch+yaml",
            Some(config),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json();
    assert_generated_fields_unowned(&created, "applier");
    assert_eq!(
        created["metadata"]["managedFields"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{created}"
    );
}

/// A namespace's name label is a default of its decoding (`SetDefaults_Namespace`), so the
/// creator owns it, as on a cluster, although managed fields are recorded before the
/// namespace strategy prepares the create.
#[tokio::test]
async fn a_namespace_creator_owns_its_name_label() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(
            "/api/v1/namespaces?fieldManager=kubectl-create",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "owned"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let ns = r.json();
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "owned"
    );
    assert_eq!(
        fields(&ns, "kubectl-create")["f:metadata"]["f:labels"],
        json!({".": {}, "f:kubernetes.io/metadata.name": {}})
    );
}
