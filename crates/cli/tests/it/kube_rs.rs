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
