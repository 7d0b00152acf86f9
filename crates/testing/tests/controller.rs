//! The README's example, run: a kube-runtime controller that turns each `Greeting` into a
//! `ConfigMap` it owns, tested against its own server.

use std::sync::Arc;
use std::time::Duration;

use crd_apiserver_testing::TestServer;
use crd_apiserver_testing::k8s_openapi::api::core::v1::ConfigMap;
use crd_apiserver_testing::kube;
use crd_apiserver_testing::kube::api::{
    Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams,
};
use crd_apiserver_testing::kube::runtime::controller::{Action, Controller};
use crd_apiserver_testing::kube::runtime::watcher;
use crd_apiserver_testing::kube::{Client, Resource, ResourceExt};
use futures::StreamExt;
use serde_json::json;

const GREETINGS: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greetings.example.com}
spec:
  group: example.com
  names: {plural: greetings, singular: greeting, kind: Greeting}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {message: {type: string}}}
";

fn greeting_resource() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Greeting".into(),
        plural: "greetings".into(),
    }
}

/// Reconcile: the `ConfigMap` `<name>` holds the greeting's message and is owned by it.
async fn reconcile(
    greeting: Arc<DynamicObject>,
    client: Arc<Client>,
) -> Result<Action, kube::Error> {
    let ns = greeting.namespace().unwrap_or_default();
    let owner = greeting.controller_owner_ref(&greeting_resource()).unwrap();
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": greeting.name_any(), "ownerReferences": [owner]},
        "data": {"message": greeting.data["spec"]["message"]},
    });
    Api::<ConfigMap>::namespaced((*client).clone(), &ns)
        .patch(
            &greeting.name_any(),
            &PatchParams::apply("greeter").force(),
            &Patch::Apply(cm),
        )
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<DynamicObject>, _: &kube::Error, _: Arc<Client>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn the_controller_writes_an_owned_configmap() {
    let server = TestServer::builder()
        .crd_yaml(GREETINGS)
        .start()
        .await
        .unwrap();
    let client = server.client();

    // Run the controller for the length of the test.
    let greetings: Api<DynamicObject> = Api::all_with(client.clone(), &greeting_resource());
    let controller =
        Controller::new_with(greetings, watcher::Config::default(), greeting_resource())
            .run(reconcile, error_policy, Arc::new(client.clone()))
            .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    let greeting: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Greeting",
        "metadata": {"name": "hello"}, "spec": {"message": "Hello, world"},
    }))
    .unwrap();
    let greetings: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &greeting_resource());
    let greeting = greetings
        .create(&PostParams::default(), &greeting)
        .await
        .unwrap();

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let has_message = |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref())
            .is_some_and(|d| d.get("message").map(String::as_str) == Some("Hello, world"))
    };
    let cm = server
        .wait_for(&configmaps, "hello", has_message, Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    let owner = &cm.owner_references()[0];
    assert_eq!(owner.uid, greeting.uid().unwrap());
    assert_eq!(owner.controller, Some(true));

    // Editing the greeting is reconciled too.
    let patch = Patch::Merge(json!({"spec": {"message": "Bye"}}));
    greetings
        .patch("hello", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let says_bye = |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref())
            .is_some_and(|d| d.get("message").map(String::as_str) == Some("Bye"))
    };
    server
        .wait_for(&configmaps, "hello", says_bye, Duration::from_secs(10))
        .await
        .unwrap();
    controller.abort();
}
