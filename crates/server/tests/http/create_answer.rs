//! A create's answer is the object as stored and read back (upstream decodes what etcd stored
//! into the answer): the same object a GET returns right after, at the request's version, with
//! read-time defaults, managed fields and `resourceVersion`; also for a generated name.

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer};

const GROUP: &str = "answers.example.com";

/// v1 (storage) and v1beta1 (served, converted by `None`), both defaulting `spec.replicas`.
fn crd() -> Value {
    two_version_crd(
        "widgets",
        "Widget",
        &json!({
            "replicas": {"type": "integer", "default": 1},
            "image": {"type": "string"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}}}),
    )
}

/// A namespaced CRD served at v1 (storage) and v1beta1, with `spec_properties` in both schemas.
fn two_version_crd(plural: &str, kind: &str, spec_properties: &Value) -> Value {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": spec_properties}}});
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": schema.clone()}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind},
                 "versions": [version("v1", true), version("v1beta1", false)]}
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

/// A CRD whose reads add nothing (no defaults): at its storage version a create answers with
/// the bytes it stored and the resourceVersion spliced in (`handlers::verbatim_answer`).
fn crd_without_defaults() -> Value {
    two_version_crd(
        "gadgets",
        "Gadget",
        &json!({"image": {"type": "string"}, "note": {"type": "string"}}),
    )
}

#[tokio::test]
async fn a_creates_answer_is_a_gets_bytes_in_every_output() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_without_defaults()).await;
    let cases = [
        // (version, metadata, Accept)
        (
            "v1",
            json!({"name": "a", "labels": {"app": "x"}}),
            "application/json",
        ),
        (
            "v1",
            json!({"name": "f", "annotations": {"example.com/note": "é\n\"q\\"}}),
            "application/json",
        ),
        ("v1", json!({"generateName": "gen-"}), "application/json"),
        ("v1beta1", json!({"name": "b"}), "application/json"),
        ("v1", json!({"name": "c"}), "application/yaml"),
        (
            "v1",
            json!({"name": "d"}),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        ),
        (
            "v1",
            json!({"name": "e"}),
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        ),
    ];
    for (version, metadata, accept) in cases {
        let path = format!("/apis/{GROUP}/{version}/namespaces/default/gadgets");
        let created = api
            .request(
                reqwest::Method::POST,
                &format!("{path}?fieldValidation=Warn"),
            )
            .header("Content-Type", "application/json")
            .header("Accept", accept)
            .body(
                json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "Gadget",
                       "metadata": metadata,
                       "spec": {"image": "i", "unknown": 1}})
                .to_string(),
            )
            .send()
            .await
            .expect("request");
        let warnings: Vec<String> = created
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let content_type = created.headers().get("content-type").cloned();
        assert_eq!(created.status(), 201);
        let created = created.text().await.expect("body");
        assert!(
            warnings.iter().any(|w| w.contains("unknown field")),
            "{accept}: {warnings:?}"
        );
        let name = if let Some(n) = metadata["name"].as_str() {
            n.to_string()
        } else {
            let v: Value = serde_json::from_str(&created).expect("JSON");
            v["metadata"]["name"].as_str().expect("name").to_string()
        };
        let got = api.get_as(&format!("{path}/{name}"), accept).await;
        assert_eq!(got.status, 200, "{}", got.text);
        assert_eq!(got.headers.get("content-type"), content_type.as_ref());
        let (created, got) = if accept.contains("as=Table") {
            // A Table's rows carry the object's age, which may tick between the two requests.
            let strip = |t: &str| {
                let mut v: Value = serde_json::from_str(t).expect("JSON");
                v["rows"][0]["cells"][1] = Value::Null;
                v.to_string()
            };
            (strip(&created), strip(&got.text))
        } else {
            (created, got.text)
        };
        assert_eq!(created, got, "{version} {accept}");
    }
}

/// A GET of an object stored at the request's version answers with the stored bytes and the
/// resourceVersion spliced in (`handlers::verbatim_read`): those bytes must be exactly what
/// decoding the object and encoding it again gives (sorted keys, compact, the resourceVersion
/// in its place among the metadata keys; `uid` follows it), whatever metadata precedes it; through
/// the main endpoint and `/status`, and at a version that converts.
#[tokio::test]
async fn a_gets_bytes_are_the_objects_encoding() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_without_defaults();
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    crd["spec"]["versions"][1]["subresources"] = json!({"status": {}});
    api.create_crd(crd).await;
    let path = format!("/apis/{GROUP}/v1/namespaces/default/gadgets");
    for metadata in [
        json!({"name": "a"}),
        json!({"name": "b", "labels": {"app": "x"}, "annotations": {"k": "é\n\"q\\"},
               "finalizers": ["example.com/f"], "generateName": "b-"}),
        json!({"name": "c", "annotations": {"zz": "{\"metadata\":{}}"}}),
    ] {
        let name = metadata["name"].as_str().expect("name").to_string();
        let created = api
            .post(
                &path,
                json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
                       "metadata": metadata, "spec": {"image": "i\u{1}", "note": "😀"}}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
        for url in [
            format!("{path}/{name}"),
            format!("{path}/{name}/status"),
            format!("/apis/{GROUP}/v1beta1/namespaces/default/gadgets/{name}"),
        ] {
            let got = api.get(&url).await;
            assert_eq!(got.status, 200, "{}", got.text);
            let decoded: Value = serde_json::from_str(&got.text).expect("JSON");
            assert_eq!(got.text, decoded.to_string(), "{url}");
            assert_eq!(
                decoded["metadata"]["resourceVersion"],
                created.json()["metadata"]["resourceVersion"],
                "{url}"
            );
        }
    }
}
