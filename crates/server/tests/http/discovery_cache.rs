//! Discovery and OpenAPI documents are served from a cache per registry generation with an
//! `ETag`: a client that sends the `ETag` back in `If-None-Match` gets `304 Not Modified` and no
//! body while nothing changed, and the new document once a CRD changes, as kube-apiserver's
//! aggregated discovery handler and kube-openapi's handlers answer.

use reqwest::Method;

use crate::support::{CRDS, HttpVersion, TestServer, crd_json, eventually};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// GET `path` with `Accept: accept` and, when given, `If-None-Match: etag`.
async fn get(
    api: &crate::support::Api<'_>,
    path: &str,
    accept: &str,
    etag: Option<&str>,
) -> (u16, Option<String>, String) {
    let mut req = api.request(Method::GET, path).header("Accept", accept);
    if let Some(tag) = etag {
        req = req.header("If-None-Match", tag);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let etag = r
        .headers()
        .get("etag")
        .map(|v| v.to_str().expect("ascii etag").to_string());
    (status, etag, r.text().await.expect("body"))
}

fn group_names(doc: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(doc).expect("JSON");
    v["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn aggregated_discovery_answers_304_to_its_etag_until_a_crd_changes_it() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    let (status, etag, body) = get(&api, "/apis", AGGREGATED, None).await;
    assert_eq!(status, 200, "{body}");
    let etag = etag.expect("an ETag");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(!group_names(&body).contains(&"stable.example.com".to_string()));

    // The same document: 304, no body, the same ETag; a different tag gets the document.
    let (status, again, body) = get(&api, "/apis", AGGREGATED, Some(&etag)).await;
    assert_eq!(
        (status, again.as_deref(), body.as_str()),
        (304, Some(&*etag), "")
    );
    let (status, _, body) = get(&api, "/apis", AGGREGATED, Some("\"other\"")).await;
    assert_eq!(status, 200);
    assert!(!body.is_empty());
    // `/api` has its own document and ETag.
    let (status, core_etag, _) = get(&api, "/api", AGGREGATED, None).await;
    assert_eq!(status, 200);
    let core_etag = core_etag.expect("an ETag for /api");
    assert_ne!(core_etag, etag);
    let (status, _, _) = get(&api, "/api", AGGREGATED, Some(&core_etag)).await;
    assert_eq!(status, 304);

    // A new CRD: the old ETag gets the new document, which lists the group.
    api.create_crd(crd_json(
        "stable.example.com",
        "widgets",
        "Widget",
        "Namespaced",
    ))
    .await;
    let (status, new_etag, body) = get(&api, "/apis", AGGREGATED, Some(&etag)).await;
    assert_eq!(status, 200, "{body}");
    let new_etag = new_etag.expect("an ETag");
    assert_ne!(new_etag, etag);
    assert!(
        group_names(&body).contains(&"stable.example.com".to_string()),
        "{body}"
    );
    let (status, _, _) = get(&api, "/apis", AGGREGATED, Some(&new_etag)).await;
    assert_eq!(status, 304);
    // The legacy group list follows the same change.
    let legacy = api.get("/apis").await.json();
    assert!(
        legacy["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .any(|g| g["name"] == "stable.example.com"),
        "{legacy}"
    );

    // Deleting the CRD takes the group out again, under a new ETag.
    let r = api
        .delete(&format!("{CRDS}/widgets.stable.example.com"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the deleted CRD's group leaves /apis", || async {
        let (status, tag, body) = get(&api, "/apis", AGGREGATED, Some(&new_etag)).await;
        status == 200
            && tag.as_deref() != Some(&*new_etag)
            && !group_names(&body).contains(&"stable.example.com".to_string())
    })
    .await;
}

#[tokio::test]
async fn openapi_documents_answer_304_to_their_etag() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    for (path, accept) in [
        ("/openapi/v2", "application/json"),
        (
            "/openapi/v2",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        ),
        ("/openapi/v3/api/v1", "application/json"),
    ] {
        let (status, etag, body) = get(&api, path, accept, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        let etag = etag.unwrap_or_else(|| panic!("{path}: an ETag"));
        let (status, again, body) = get(&api, path, accept, Some(&etag)).await;
        assert_eq!(
            (status, again.as_deref(), body.as_str()),
            (304, Some(&*etag), ""),
            "{path} {accept}"
        );
        let (status, _, body) = get(&api, path, accept, Some("\"stale\"")).await;
        assert_eq!(status, 200, "{path}");
        assert!(!body.is_empty(), "{path}");
    }
}

/// A custom resource's schema is published in `/openapi/v3` as written (int-or-string unfolded,
/// embedded resources with type and object metadata) and in `/openapi/v2` as upstream's
/// `ToStructuralOpenAPIV2` leaves it: nullable fields untyped and not required, so that v2
/// validators (old kubectl, Helm) accept their `null`.
#[tokio::test]
async fn custom_resource_schemas_are_published_for_v3_and_for_v2() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let mut crd = crd_json("nulls.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = serde_json::json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "required": ["owner", "size"],
            "properties": {
                "owner": {"type": "string", "nullable": true},
                "size": {"type": "integer"},
                "port": {"x-kubernetes-int-or-string": true},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
            },
        }},
    });
    api.create_crd(crd).await;
    let name = "com.example.nulls.v1.Thing";
    let v3 = api
        .get("/openapi/v3/apis/nulls.example.com/v1")
        .await
        .json();
    let spec = &v3["components"]["schemas"][name]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["owner"],
        serde_json::json!({"type": "string", "nullable": true})
    );
    assert_eq!(spec["required"], serde_json::json!(["owner", "size"]));
    assert_eq!(
        spec["properties"]["port"]["anyOf"],
        serde_json::json!([{"type": "integer"}, {"type": "string"}])
    );
    let template = &spec["properties"]["template"];
    assert_eq!(
        template["required"],
        serde_json::json!(["kind", "apiVersion"])
    );
    assert_eq!(
        template["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );

    let v2 = api.get("/openapi/v2").await.json();
    let kind = &v2["definitions"][name];
    let spec = &kind["properties"]["spec"];
    assert_eq!(spec["properties"]["owner"], serde_json::json!({}), "{spec}");
    assert_eq!(spec["required"], serde_json::json!(["size"]));
    assert_eq!(
        spec["properties"]["port"],
        serde_json::json!({"x-kubernetes-int-or-string": true})
    );
    assert_eq!(
        spec["properties"]["template"],
        serde_json::json!({"x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        kind["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "{kind}"
    );
    assert!(kind["properties"]["metadata"]["description"].is_string());
}
