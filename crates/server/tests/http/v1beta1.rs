//! The `apiextensions.k8s.io/v1beta1` CRD API behind `--runtime-config`: routes, the
//! deprecation warning on every response, v1beta1 defaults and checks with upstream's
//! messages, reads at both versions, discovery and OpenAPI with and without the flag.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, condition, eventually};

const V1BETA1: &str = "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions";
const V1: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WARNING: &str = "299 - \"apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition\"";

async fn with_flag() -> TestServer {
    TestServer::start_with(|c| c.runtime_config.crd_v1beta1 = true).await
}

fn crontab_v1beta1() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "version": "v1",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "validation": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [
                {"name": "Replicas", "type": "integer", "JSONPath": ".spec.replicas"}]
        }
    })
}

#[tokio::test]
async fn create_and_read_at_both_versions() {
    let server = with_flag().await;
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        let api = server.api(version);
        let r = api.post(V1BETA1, crontab_v1beta1()).await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.warnings(), [WARNING]);
        let created = r.json();
        assert_eq!(created["apiVersion"], "apiextensions.k8s.io/v1beta1");
        // v1beta1's defaults.
        assert_eq!(created["spec"]["preserveUnknownFields"], true);
        assert_eq!(created["spec"]["names"]["listKind"], "CronTabList");
        assert_eq!(created["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(
            created["spec"]["versions"],
            json!([{"name": "v1", "served": true, "storage": true}])
        );
        assert_eq!(
            created["spec"]["additionalPrinterColumns"][0]["JSONPath"],
            ".spec.replicas"
        );

        let path = format!("{V1}/crontabs.stable.example.com");
        eventually("the CRD is Established", || async {
            condition(&api.get(&path).await.json(), "Established") == Some("True")
        })
        .await;
        let v1 = api.get(&path).await;
        assert!(v1.warnings().is_empty(), "{:?}", v1.warnings());
        let v1 = v1.json();
        assert_eq!(v1["spec"]["preserveUnknownFields"], true);
        assert!(v1["spec"].get("validation").is_none());
        let version = &v1["spec"]["versions"][0];
        assert_eq!(version["schema"], crontab_v1beta1()["spec"]["validation"]);
        assert_eq!(
            version["subresources"],
            crontab_v1beta1()["spec"]["subresources"]
        );
        assert_eq!(
            version["additionalPrinterColumns"][0]["jsonPath"],
            ".spec.replicas"
        );

        let beta = api
            .get(&format!("{V1BETA1}/crontabs.stable.example.com"))
            .await;
        assert_eq!(beta.warnings(), [WARNING]);
        let beta = beta.json();
        for field in [
            "validation",
            "subresources",
            "additionalPrinterColumns",
            "version",
        ] {
            assert_eq!(beta["spec"][field], created["spec"][field], "{field}");
        }
        assert!(beta["spec"]["versions"][0].get("schema").is_none());

        // The list at v1beta1 converts every item.
        let list = api.get(V1BETA1).await.json();
        assert_eq!(list["kind"], "CustomResourceDefinitionList");
        assert_eq!(
            list["items"][0]["apiVersion"],
            "apiextensions.k8s.io/v1beta1"
        );

        // The printer column written as `JSONPath` prints.
        let r = api
            .post(
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                       "metadata": {"name": "a"}, "spec": {"replicas": 3}, "extra": "kept"}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        // preserveUnknownFields: true: nothing is pruned.
        assert_eq!(r.json()["extra"], "kept");
        let table = api
            .get_as(
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                "application/json;as=Table;v=v1;g=meta.k8s.io",
            )
            .await
            .json();
        let at = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c["name"] == "Replicas")
            .expect("the Replicas column");
        assert_eq!(table["rows"][0]["cells"][at], 3, "{table}");

        let r = api
            .delete(&format!("{V1BETA1}/crontabs.stable.example.com"))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.warnings(), [WARNING]);
        eventually("the CRD is gone", || async {
            api.get(&path).await.status == 404
        })
        .await;
    }
}

#[tokio::test]
async fn v1beta1_checks_have_upstreams_messages() {
    let server = with_flag().await;
    let api = server.api(HttpVersion::Http1);
    let mut both = crontab_v1beta1();
    both["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": false}]);
    both["spec"]["version"] = json!("v2");
    let r = api.post(V1BETA1, both).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.warnings(), [WARNING]);
    let causes = r.causes();
    assert!(
        causes.contains(
            &"spec.validation: Forbidden: top-level and per-version schemas are mutually exclusive"
                .to_string()
        ),
        "{causes:?}"
    );
    assert!(
        causes.contains(
            &"spec.version: Invalid value: \"v2\": must match the first version in spec.versions"
                .to_string()
        ),
        "{causes:?}"
    );

    // Pruning needs a schema for every served version.
    let mut pruning = crontab_v1beta1();
    pruning["spec"]["preserveUnknownFields"] = json!(false);
    pruning["spec"]
        .as_object_mut()
        .unwrap()
        .remove("validation");
    let r = api.post(V1BETA1, pruning).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.json()["message"].as_str().unwrap().contains(
            "spec.versions[0].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
        ),
        "{}",
        r.text
    );

    // No defaults at v1beta1.
    let mut defaulted = crontab_v1beta1();
    defaulted["spec"]["preserveUnknownFields"] = json!(false);
    defaulted["spec"]["validation"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"]
        ["default"] = json!(1);
    let r = api.post(V1BETA1, defaulted).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Forbidden: must not be set"
    );

    // No schema and no pruning: accepted at v1beta1 (not at v1).
    let mut bare = crontab_v1beta1();
    bare["spec"].as_object_mut().unwrap().remove("validation");
    let r = api.post(V1BETA1, bare).await;
    assert_eq!(r.status, 201, "{}", r.text);

    // A v1 body at the v1beta1 endpoint.
    let mut wrong = crontab_v1beta1();
    wrong["apiVersion"] = json!("apiextensions.k8s.io/v1");
    let r = api
        .call(
            Method::PUT,
            &format!("{V1BETA1}/crontabs.stable.example.com"),
            "application/json",
            Some(wrong),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "the object provided is unrecognized (must be of type CustomResourceDefinition): apiextensions.k8s.io/v1, Kind=CustomResourceDefinition"
    );
}

#[tokio::test]
async fn discovery_and_openapi_list_v1beta1_only_with_the_flag() {
    for (flag, listed) in [(false, false), (true, true)] {
        let server = TestServer::start_with(|c| c.runtime_config.crd_v1beta1 = flag).await;
        let api = server.api(HttpVersion::Http1);
        let group = api.get("/apis/apiextensions.k8s.io").await.json();
        let versions: Vec<&str> = group["versions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["version"].as_str())
            .collect();
        let want: &[&str] = if listed { &["v1", "v1beta1"] } else { &["v1"] };
        assert_eq!(versions, want);
        assert_eq!(group["preferredVersion"]["version"], "v1");

        let r = api.get("/apis/apiextensions.k8s.io/v1beta1").await;
        if listed {
            let doc = r.json();
            assert_eq!(doc["resources"][0]["name"], "customresourcedefinitions");
            assert_eq!(doc["resources"][0]["kind"], "CustomResourceDefinition");
        } else {
            assert_eq!(r.status, 404);
        }
        let all = api.get("/apis").await.text;
        assert_eq!(
            all.contains("apiextensions.k8s.io/v1beta1"),
            listed,
            "{all}"
        );
        let aggregated = api
            .get_as(
                "/apis",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )
            .await
            .json();
        let ext = aggregated["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == "apiextensions.k8s.io")
            .unwrap();
        assert_eq!(
            ext["versions"].as_array().unwrap().len(),
            if listed { 2 } else { 1 }
        );

        let index = api.get("/openapi/v3").await.json();
        assert_eq!(
            index["paths"]
                .get("apis/apiextensions.k8s.io/v1beta1")
                .is_some(),
            listed,
            "{index}"
        );
        let r = api.get(V1BETA1).await;
        assert_eq!(r.status, if listed { 200 } else { 404 }, "{}", r.text);
    }
}
