//! A create's answer is the object as stored and read back (upstream decodes what etcd stored
//! into the answer): the same object a GET returns right after, at the request's version, with
//! read-time defaults, managed fields and `resourceVersion`; also for a generated name.

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer};

const GROUP: &str = "answers.example.com";

/// v1 (storage) and v1beta1 (served, converted by `None`), both defaulting `spec.replicas`.
fn crd() -> Value {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "default": 1},
        "image": {"type": "string"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "port": {"type": "integer"}}}}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}},
                    {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema}}]}
    })
}

#[tokio::test]
async fn a_creates_answer_is_the_object_a_get_returns() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd()).await;
    for (version, metadata) in [
        ("v1", json!({"name": "a", "labels": {"app": "x"}})),
        (
            "v1beta1",
            json!({"name": "b", "annotations": {"note": "y"}}),
        ),
        ("v1", json!({"generateName": "gen-"})),
    ] {
        let path = format!("/apis/{GROUP}/{version}/namespaces/default/widgets");
        let created = api
            .post(
                &path,
                json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "Widget",
                       "metadata": metadata,
                       "spec": {"image": "i", "ports": [{"name": "http", "port": 80}]}}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
        let created = created.json();
        assert_eq!(created["apiVersion"], format!("{GROUP}/{version}"));
        assert_eq!(created["spec"]["replicas"], 1, "{created}");
        let fields = &created["metadata"]["managedFields"][0];
        assert_eq!(fields["operation"], "Update", "{created}");
        assert_eq!(
            fields["fieldsV1"],
            json!({"f:metadata": metadata_fields(&created),
                   "f:spec": {".": {}, "f:image": {}, "f:replicas": {},
                              "f:ports": {".": {}, "k:{\"name\":\"http\"}": {
                                  ".": {}, "f:name": {}, "f:port": {}}}}}),
            "{created}"
        );
        let name = created["metadata"]["name"].as_str().expect("name");
        let got = api.get(&format!("{path}/{name}")).await;
        assert_eq!(got.status, 200, "{}", got.text);
        assert_eq!(got.json(), created);
    }
}

/// The `fieldsV1` of the metadata a test object was created with.
fn metadata_fields(obj: &Value) -> Value {
    let m = &obj["metadata"];
    if m.get("labels").is_some() {
        json!({"f:labels": {".": {}, "f:app": {}}})
    } else if m.get("annotations").is_some() {
        json!({"f:annotations": {".": {}, "f:note": {}}})
    } else {
        json!({"f:generateName": {}})
    }
}
