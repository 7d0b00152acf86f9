//! `APIService`s (`controllers::apiservices`): the local ones kube-apiserver keeps for every
//! built-in group version and for every group version a CRD serves, put back when deleted or
//! edited; a registered one with a Service is validated, defaulted and reported unavailable
//! (nothing is proxied); and the aggregator's own group comes first in `/apis`.

use serde_json::{Value, json};

use crate::support::{Api, CRDS, HttpVersion, TestServer, column_names, crd_json, eventually};

const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// The `APIService` called `name`, once it exists and `check` holds of it.
async fn until(api: &Api<'_>, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let path = format!("{API_SERVICES}/{name}");
    eventually(what, || async {
        let r = api.get(&path).await;
        r.status == 200 && check(&r.json())
    })
    .await;
    api.get(&path).await.json()
}

fn available(obj: &Value) -> (String, String) {
    let c = obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .cloned()
        .unwrap_or_default();
    (
        c["status"].as_str().unwrap_or("").into(),
        c["reason"].as_str().unwrap_or("").into(),
    )
}

#[tokio::test]
async fn built_in_and_crd_group_versions_have_local_api_services() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    let apps = until(&api, "v1.apps", "v1.apps is registered", |o| {
        available(o).0 == "True"
    })
    .await;
    assert_eq!(
        apps["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    assert_eq!(
        apps["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    assert_eq!(available(&apps), ("True".to_string(), "Local".to_string()));
    assert_eq!(
        apps["status"]["conditions"][0]["message"],
        "Local APIServices are always available"
    );
    let names = || async {
        let list = api.get(API_SERVICES).await.json();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect::<Vec<String>>()
    };
    let wanted = [
        "v1.",
        "v1.apiregistration.k8s.io",
        "v1.apiextensions.k8s.io",
        "v2.autoscaling",
        "v1.authorization.k8s.io",
        "v1beta1.admissionregistration.k8s.io",
        "v1alpha1.storagemigration.k8s.io",
    ];
    eventually("every built-in group version is registered", || async {
        let names = names().await;
        wanted.iter().all(|w| names.iter().any(|n| n == w))
    })
    .await;
    // The aggregator's group is first in `/apis`, as on a cluster.
    let groups = api.get("/apis").await.json();
    assert_eq!(groups["groups"][0]["name"], "apiregistration.k8s.io");

    // A CRD's group version is registered while a CRD serves it.
    api.create_crd(crd_json("s.example.com", "widgets", "Widget", "Namespaced"))
        .await;
    let crd = until(
        &api,
        "v1.s.example.com",
        "the CRD's group version is registered",
        |o| available(o).0 == "True",
    )
    .await;
    assert_eq!(
        crd["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(crd["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(crd["spec"]["versionPriority"], 100);
    let r = api.delete(&format!("{CRDS}/widgets.s.example.com")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the CRD's APIService is removed", || async {
        api.get(&format!("{API_SERVICES}/v1.s.example.com"))
            .await
            .status
            == 404
    })
    .await;

    // A deleted or edited automanaged APIService is put back.
    let r = api.delete(&format!("{API_SERVICES}/v1.apps")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let back = until(&api, "v1.apps", "v1.apps is re-created", |o| {
        o["metadata"]["uid"] != apps["metadata"]["uid"]
    })
    .await;
    let mut edited = back.clone();
    edited["spec"]["versionPriority"] = json!(7);
    let r = api.put(&format!("{API_SERVICES}/v1.apps"), edited).await;
    assert_eq!(r.status, 200, "{}", r.text);
    until(&api, "v1.apps", "v1.apps's spec is restored", |o| {
        o["spec"]["versionPriority"] == 15
    })
    .await;
}

#[tokio::test]
async fn a_registered_api_service_is_validated_and_reported_unavailable() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let metrics = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "insecureSkipTLSVerify": true,
                 "service": {"namespace": "kube-system", "name": "metrics-server"}}});
    let mut misnamed = metrics.clone();
    misnamed["metadata"]["name"] = json!("metrics");
    let r = api.post(API_SERVICES, misnamed).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.causes(),
        [
            "metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""
        ]
    );
    assert_eq!(
        r.json()["message"],
        "APIService.apiregistration.k8s.io \"metrics\" is invalid: metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""
    );

    let r = api.post(API_SERVICES, metrics).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["spec"]["service"]["port"], 443);
    let name = "v1beta1.metrics.k8s.io";
    let missing = until(&api, name, "the missing Service is reported", |o| {
        !available(o).0.is_empty()
    })
    .await;
    assert_eq!(
        available(&missing),
        ("False".to_string(), "ServiceNotFound".to_string())
    );
    assert_eq!(
        missing["status"]["conditions"][0]["message"],
        "service/metrics-server in \"kube-system\" is not present"
    );
    // Not automanaged: kept as written.
    assert!(missing["metadata"]["labels"].is_null());
    let r = api
        .post(
            "/api/v1/namespaces/kube-system/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics-server"},
                   "spec": {"ports": [{"port": 443, "targetPort": 4443}]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let found = until(&api, name, "the Service is seen", |o| {
        available(o).1 == "FailedDiscoveryCheck"
    })
    .await;
    assert_eq!(available(&found).0, "False");

    // The Table kubectl prints.
    let table = api
        .get_as(
            &format!("{API_SERVICES}/{name}"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await
        .json();
    let columns = column_names(&table);
    assert_eq!(columns, ["Name", "Service", "Available", "Age"]);
    assert_eq!(
        table["rows"][0]["cells"].as_array().unwrap()[..3],
        [
            json!(name),
            json!("kube-system/metrics-server"),
            json!("False (FailedDiscoveryCheck)")
        ]
    );

    // A status write is checked as upstream checks it.
    let mut bad = found.clone();
    bad["status"]["conditions"][0]["status"] = json!("Maybe");
    let r = api.put(&format!("{API_SERVICES}/{name}/status"), bad).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.causes(),
        [
            "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""
        ]
    );
}
