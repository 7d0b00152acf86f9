//! The builder's webhooks: admission and conversion functions served in the test process,
//! registered with the server (URL and CA filled in) and in force when `start` returns.

use crd_apiserver_testing::TestServer;
use crd_apiserver_testing::k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use crd_apiserver_testing::k8s_openapi::api::core::v1::ConfigMap;
use crd_apiserver_testing::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use crd_apiserver_testing::kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use crd_apiserver_testing::webhook::Denial;
use serde_json::{Value, json};

/// The configuration as an operator ships it: a `service` reference the harness replaces.
fn deny_configuration() -> ValidatingWebhookConfiguration {
    serde_saphyr::from_str(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: deny.example.com}
webhooks:
- name: deny.example.com
  clientConfig:
    service: {namespace: system, name: webhook-service, path: /validate}
  rules:
  - {operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps]}
  sideEffects: None
  admissionReviewVersions: [v1]
",
    )
    .unwrap()
}

/// Refuses `ConfigMaps` whose name starts with `forbidden`.
fn deny_forbidden(request: &Value) -> Result<Vec<String>, Denial> {
    let name = request
        .pointer("/object/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.starts_with("forbidden") {
        Err(Denial::forbidden(format!("{name} is not allowed here")))
    } else {
        Ok(vec![format!("{name} looked at")])
    }
}

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

#[tokio::test]
async fn a_validating_webhook_denies_with_its_message_as_soon_as_start_returns() {
    let server = TestServer::builder()
        .validating_webhook(deny_configuration(), deny_forbidden)
        .start()
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    // No waiting: the first request after start is judged by the webhook.
    let err = configmaps
        .create(&PostParams::default(), &configmap("forbidden-1"))
        .await
        .unwrap_err();
    let crd_apiserver_testing::kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "admission webhook \"deny.example.com\" denied the request: forbidden-1 is not allowed here"
    );
    configmaps
        .create(&PostParams::default(), &configmap("fine"))
        .await
        .unwrap();

    // The stored configuration reaches the test's server: the URL and CA replaced the service.
    let stored = Api::<ValidatingWebhookConfiguration>::all(server.client())
        .get("deny.example.com")
        .await
        .unwrap();
    let hook = server.webhook("deny.example.com").unwrap();
    let client_config = &stored.webhooks.unwrap()[0].client_config;
    assert_eq!(client_config.url.as_deref(), Some(hook.url().as_str()));
    assert!(client_config.service.is_none());
    let ca = String::from_utf8(client_config.ca_bundle.clone().unwrap().0).unwrap();
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    assert!(hook.requests() >= 2, "{}", hook.requests());
    // The harness's own sentinels are gone.
    let names: Vec<String> = Api::<ValidatingWebhookConfiguration>::all(server.client())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["deny.example.com"]);
}

/// Labels every `ConfigMap` with `team: a`.
#[allow(clippy::unnecessary_wraps)] // The `Mutator` signature.
fn label_team(mut object: Value, _request: &Value) -> Result<Value, Denial> {
    object["metadata"]["labels"]["team"] = json!("a");
    Ok(object)
}

#[tokio::test]
async fn mutating_and_validating_webhooks_together() {
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "label.example.com"},
        "webhooks": [{
            "name": "label.example.com",
            "clientConfig": {},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))
    .unwrap();
    let server = TestServer::builder()
        .mutating_webhook(mutating, label_team)
        .validating_webhook(deny_configuration(), deny_forbidden)
        .start()
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = configmaps
        .create(&PostParams::default(), &configmap("plain"))
        .await
        .unwrap();
    assert_eq!(created.metadata.labels.unwrap()["team"], "a");
    let err = configmaps
        .create(&PostParams::default(), &configmap("forbidden-2"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("denied the request: forbidden-2 is not allowed here"),
        "{err}"
    );
    assert!(server.webhook("label.example.com").unwrap().requests() >= 1);
}

const COLOURS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: paints.example.com}
spec:
  group: example.com
  names: {plural: paints, singular: paint, kind: Paint}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {colour: {type: string}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
";

/// v1 spells it `colour`, v2 `color`.
fn convert(mut object: Value, desired: &str) -> Result<Value, String> {
    let spec = object["spec"].as_object_mut().ok_or("no spec")?;
    let (from, to) = if desired.ends_with("/v2") {
        ("colour", "color")
    } else {
        ("color", "colour")
    };
    if let Some(v) = spec.remove(from) {
        spec.insert(to.into(), v);
    }
    Ok(object)
}

fn paints(server: &TestServer, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "example.com".into(),
        version: version.into(),
        api_version: format!("example.com/{version}"),
        kind: "Paint".into(),
        plural: "paints".into(),
    };
    Api::namespaced_with(server.client(), "default", &resource)
}

#[tokio::test]
async fn a_conversion_webhook_converts_between_versions() {
    let server = TestServer::builder()
        .crd_yaml(COLOURS)
        .conversion_webhook("paints.example.com", convert)
        .start()
        .await
        .unwrap();
    let crd = Api::<CustomResourceDefinition>::all(server.client())
        .get("paints.example.com")
        .await
        .unwrap();
    let conversion = crd.spec.conversion.unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.unwrap();
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    assert_eq!(
        webhook.client_config.unwrap().url,
        Some(server.webhook("paints.example.com").unwrap().url())
    );

    // Written at v2, stored at v1, read at both.
    let paint: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v2", "kind": "Paint",
        "metadata": {"name": "red"}, "spec": {"color": "red"},
    }))
    .unwrap();
    paints(&server, "v2")
        .create(&PostParams::default(), &paint)
        .await
        .unwrap();
    let v1 = paints(&server, "v1").get("red").await.unwrap();
    assert_eq!(v1.data["spec"], json!({"colour": "red"}));
    let v2 = paints(&server, "v2").get("red").await.unwrap();
    assert_eq!(v2.data["spec"], json!({"color": "red"}));
    assert!(server.webhook("paints.example.com").unwrap().requests() >= 2);
}

#[tokio::test]
async fn a_conversion_webhook_for_a_crd_not_given_fails_start() {
    let err = TestServer::builder()
        .conversion_webhook("paints.example.com", convert)
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "conversion_webhook(\"paints.example.com\"): no CRD of that name was given to the builder"
    );
}

#[tokio::test]
async fn a_configuration_without_a_name_fails_start() {
    let err = TestServer::builder()
        .validating_webhook(ValidatingWebhookConfiguration::default(), deny_forbidden)
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "validating_webhook: the configuration needs metadata.name"
    );
}

#[tokio::test]
async fn a_configuration_the_server_rejects_fails_start_with_its_message() {
    let mut config = deny_configuration();
    config.webhooks.as_mut().unwrap()[0].side_effects = "Some".into();
    let err = TestServer::builder()
        .validating_webhook(config, deny_forbidden)
        .start()
        .await
        .unwrap_err();
    let chain = format!("{err:#}");
    assert!(
        chain.starts_with("registering the validating webhook deny.example.com: "),
        "{chain}"
    );
    assert!(chain.contains("webhooks[0].sideEffects"), "{chain}");
}
