//! kube-rs against the real binary, as an operator uses it: the client from the generated
//! kubeconfig, JSON patches as kube-runtime sends them, and kube-runtime's `finalizer()` helper
//! adding, running and removing its finalizer.

use std::sync::Arc;

use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use serde_json::json;

use crate::support::{TestServer, crontab_crd};

const CRD: &str = "crontabs.stable.example.com";
const FINALIZER: &str = "crontabs.stable.example.com/cleanup";

async fn client(server: &TestServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    kube::Client::try_from(config).expect("client builds")
}

fn crontabs(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "crontabs");
    Api::namespaced_with(client, "default", &ar)
}

fn crontab(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name},
        "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"},
    }))
    .expect("a valid object")
}

/// Regression: kube-runtime's finalizer patch tests a missing path against `null`, which
/// kube-apiserver's JSON Patch library accepts (it was a 422 here).
#[tokio::test]
async fn json_patch_test_of_a_missing_path_with_null_succeeds() {
    let server = TestServer::start();
    server.apply_crd("crontab.yaml", &crontab_crd(), CRD);
    let api = crontabs(client(&server).await);
    api.create(&PostParams::default(), &crontab("a"))
        .await
        .expect("created");
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
    ]))
    .expect("a JSON patch");
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .expect("the test of a missing path with null passes");
    assert_eq!(
        patched.metadata.finalizers,
        Some(vec![FINALIZER.to_string()])
    );
}

/// kube-runtime's `finalizer()` helper: the first call adds the finalizer, the next reconciles
/// (Apply), deletion turns into Cleanup, and the helper's removal lets the object go.
#[tokio::test]
async fn kube_runtime_finalizer_helper_adds_and_removes_its_finalizer() {
    let server = TestServer::start();
    server.apply_crd("crontab.yaml", &crontab_crd(), CRD);
    let api = crontabs(client(&server).await);
    api.create(&PostParams::default(), &crontab("b"))
        .await
        .expect("created");

    let seen = Arc::new(std::sync::Mutex::new(Vec::<&'static str>::new()));
    let run = |obj: DynamicObject| {
        let api = api.clone();
        let seen = seen.clone();
        async move {
            finalizer(&api, FINALIZER, Arc::new(obj), |event| async move {
                let what = match event {
                    Event::Apply(_) => "apply",
                    Event::Cleanup(_) => "cleanup",
                };
                seen.lock().expect("not poisoned").push(what);
                Ok::<_, std::convert::Infallible>(Action::await_change())
            })
            .await
        }
    };

    run(api.get("b").await.expect("read"))
        .await
        .expect("finalizer added");
    let obj = api.get("b").await.expect("read");
    assert_eq!(obj.metadata.finalizers, Some(vec![FINALIZER.to_string()]));
    run(obj).await.expect("reconciled");
    assert_eq!(*seen.lock().expect("not poisoned"), vec!["apply"]);

    api.delete("b", &DeleteParams::default())
        .await
        .expect("delete accepted");
    let deleting = api
        .get("b")
        .await
        .expect("still there while the finalizer holds it");
    assert!(
        deleting.metadata.deletion_timestamp.is_some(),
        "the object is being deleted"
    );
    run(deleting).await.expect("cleaned up");
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        vec!["apply", "cleanup"]
    );
    let gone = api.get_opt("b").await.expect("a read");
    assert!(
        gone.is_none(),
        "the object went once the helper removed its finalizer"
    );
}

const WIDGETS: &str = r"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.ops.example.com
spec:
  group: ops.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
          status:
            type: object
            properties:
              ready: {type: boolean}
";

fn widgets(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ops.example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(client, "default", &ar)
}

/// `Patch::Apply` as kube-rs controllers write objects and status: creation by apply, a status
/// apply through `/status` by another manager, and a conflict between two managers.
#[tokio::test]
async fn patch_apply_on_objects_and_status_with_conflicts() {
    let server = TestServer::start();
    server.apply_crd("widgets.yaml", WIDGETS, "widgets.ops.example.com");
    let api = widgets(client(&server).await);
    let desired = json!({
        "apiVersion": "ops.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 3, "color": "red"},
    });
    let created = api
        .patch(
            "w",
            &PatchParams::apply("widget-controller"),
            &Patch::Apply(&desired),
        )
        .await
        .expect("apply creates the object");
    assert_eq!(created.data["spec"]["size"], 3);

    let status = json!({
        "apiVersion": "ops.example.com/v1", "kind": "Widget",
        "status": {"ready": true},
    });
    let with_status = api
        .patch_status(
            "w",
            &PatchParams::apply("widget-status"),
            &Patch::Apply(&status),
        )
        .await
        .expect("status apply");
    assert_eq!(with_status.data["status"]["ready"], true);
    assert_eq!(
        with_status.data["spec"]["size"], 3,
        "a status apply leaves spec alone"
    );
    let entries: Vec<(String, Option<String>)> = with_status
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.manager.unwrap_or_default(), e.subresource))
        .collect();
    assert!(
        entries.contains(&("widget-status".to_string(), Some("status".to_string()))),
        "{entries:?}"
    );

    // Another manager sets a field the controller owns to another value: a conflict.
    let other = json!({
        "apiVersion": "ops.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 5},
    });
    let err = api
        .patch("w", &PatchParams::apply("intruder"), &Patch::Apply(&other))
        .await
        .expect_err("a conflict");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "Conflict");
            assert_eq!(
                status.message,
                "Apply failed with 1 conflict: conflict with \"widget-controller\": .spec.size"
            );
        }
        other => panic!("expected a Status, got {other:?}"),
    }
    let forced = api
        .patch(
            "w",
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(&other),
        )
        .await
        .expect("forced");
    assert_eq!(forced.data["spec"]["size"], 5);
    assert_eq!(
        forced.data["spec"]["color"], "red",
        "fields only the controller set stay"
    );
}
