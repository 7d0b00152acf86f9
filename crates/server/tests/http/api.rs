//! CRUD, status codes and errors, authentication, discovery, CRD validation and CRD deletion
//! over HTTP/1.1 and HTTP/2.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{CRDS, HttpVersion, Resp, TestServer, crd_json, eventually};

async fn crud_scenario(s: &TestServer, v: HttpVersion) {
    let api = s.api(v);
    let want_version = match v {
        HttpVersion::Http1 => reqwest::Version::HTTP_11,
        HttpVersion::Http2 => reqwest::Version::HTTP_2,
    };
    let group = match v {
        HttpVersion::Http1 => "h1.example.com",
        HttpVersion::Http2 => "h2.example.com",
    };
    api.create_crd(crd_json(group, "widgets", "Widget", "Namespaced"))
        .await;
    let base = format!("/apis/{group}/v1/namespaces/default/widgets");

    // Create: the server fills system fields.
    let obj = json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                     "metadata": {"name": "w1", "labels": {"app": "a"}}, "spec": {"size": 1}});
    let r = api.post(&base, obj.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.version, want_version);
    let created = r.json();
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["namespace"], "default");
    assert!(
        created["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );
    assert!(
        created["metadata"]["creationTimestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let rv1: i64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // AlreadyExists.
    let r = api.post(&base, obj.clone()).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["reason"], "AlreadyExists");
    assert_eq!(
        r.json()["message"],
        format!("widgets.{group} \"w1\" already exists")
    );

    // NotFound is a Status with details.
    let r = api.get(&format!("{base}/nope")).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("widgets.{group} \"nope\" not found"), "reason": "NotFound",
               "details": {"name": "nope", "group": group, "kind": "widgets"}, "code": 404})
    );

    // Update needs a resourceVersion, and the current one.
    let mut upd = created.clone();
    upd["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let r = api
        .call(
            Method::PUT,
            &format!("{base}/w1"),
            "application/json",
            Some(upd.clone()),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        format!(
            "widgets.{group} \"w1\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        )
    );
    upd["metadata"]["resourceVersion"] = json!("1");
    let r = api
        .call(
            Method::PUT,
            &format!("{base}/w1"),
            "application/json",
            Some(upd.clone()),
        )
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json()["message"],
        format!(
            "Operation cannot be fulfilled on widgets.{group} \"w1\": the object has been modified; please apply your changes to the latest version and try again"
        )
    );
    // A label change keeps the generation; a spec change bumps it.
    upd["metadata"]["resourceVersion"] = json!(rv1.to_string());
    upd["metadata"]["labels"]["app"] = json!("b");
    let r = api
        .call(
            Method::PUT,
            &format!("{base}/w1"),
            "application/json",
            Some(upd.clone()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let updated = r.json();
    assert_eq!(updated["metadata"]["generation"], 1);
    let rv2: i64 = updated["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    let r = api
        .call(
            Method::PATCH,
            &format!("{base}/w1"),
            "application/merge-patch+json",
            Some(json!({"spec": {"size": 2}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["metadata"]["generation"], 2);
    assert_eq!(r.json()["spec"]["size"], 2);
    let r = api
        .call(
            Method::PATCH,
            &format!("{base}/w1"),
            "application/json-patch+json",
            Some(json!([{"op": "test", "path": "/spec/size", "value": 5}])),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let r = api
        .call(
            Method::PATCH,
            &format!("{base}/w1"),
            "application/strategic-merge-patch+json",
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, 415);
    assert_eq!(
        r.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );

    // generateName.
    let r = api
        .post(&base, json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"generateName": "gen-"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let generated = r.json()["metadata"]["name"].as_str().unwrap().to_string();
    assert!(
        generated.starts_with("gen-") && generated.len() == 9,
        "{generated}"
    );

    // Lists, label selectors and paging.
    let r = api.get(&format!("{base}?labelSelector=app%3Db")).await;
    let list = r.json();
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let r = api.get(&format!("{base}?limit=1")).await;
    let page = r.json();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let r = api.get(&format!("{base}?limit=1&continue={token}")).await;
    let page2 = r.json();
    assert_eq!(page2["items"].as_array().unwrap().len(), 1);
    assert_ne!(
        page2["items"][0]["metadata"]["name"],
        page["items"][0]["metadata"]["name"]
    );
    assert!(page2["metadata"].get("continue").is_none());

    // Server-side Table.
    let table = api
        .get_as(
            &base,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .await
        .json();
    assert_eq!(table["kind"], "Table");
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Age"]);
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // Delete: a Success Status without a code.
    let r = api.delete(&format!("{base}/w1")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let st = r.json();
    assert_eq!(st["status"], "Success");
    assert!(st.get("code").is_none());
    assert_eq!(st["details"]["name"], "w1");
    // deletecollection answers with the list of what it deleted.
    let r = api.delete(&base).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 1);
    assert_eq!(api.get(&base).await.json()["items"], json!([]));
}

#[tokio::test]
async fn crud_over_http1_and_http2() {
    let s = TestServer::start().await;
    crud_scenario(&s, HttpVersion::Http1).await;
    crud_scenario(&s, HttpVersion::Http2).await;
}

#[tokio::test]
async fn auth_health_version_and_unknown_paths() {
    let s = TestServer::start().await;
    let client = s.client(HttpVersion::Http1);
    // Without credentials: the anonymous user, whom RBAC's bootstrap policy lets read health
    // and version, not discovery (system:discovery is bound to system:authenticated only).
    let r = client.get(format!("{}/apis", s.url)).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/apis\""
    );
    // A token nobody knows is never anonymous.
    let r = client
        .get(format!("{}/apis", s.url))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    for path in ["/healthz", "/livez", "/readyz"] {
        let r = client.get(format!("{}{path}", s.url)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.text().await.unwrap(), "ok");
    }
    for path in ["/version", "/version/"] {
        let v: Value = client
            .get(format!("{}{path}", s.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "32");
    }
    let api = s.api(HttpVersion::Http2);
    let r = api.get("/apis/nothing.example.com/v1/things").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.text, "404 page not found\n");
    let r = api.get("/api/v1/namespaces/default").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.json()["status"]["phase"], "Active");
}

#[tokio::test]
async fn discovery_follows_crds() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    let agg =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let get_agg = || async {
        let r = api.get_as("/apis", agg).await;
        assert_eq!(
            r.headers["content-type"],
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        r.json()
    };
    let before = get_agg().await;
    assert!(!before.to_string().contains("disco.example.com"));
    api.create_crd(crd_json("disco.example.com", "gizmos", "Gizmo", "Cluster"))
        .await;
    let after = get_agg().await;
    let group = after["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "disco.example.com")
        .unwrap();
    let res = &group["versions"][0]["resources"][0];
    assert_eq!(res["resource"], "gizmos");
    assert_eq!(res["scope"], "Cluster");
    assert_eq!(
        res["verbs"],
        json!([
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch"
        ])
    );
    let legacy = api.get("/apis/disco.example.com/v1").await.json();
    assert_eq!(legacy["resources"][0]["name"], "gizmos");
    assert_eq!(legacy["resources"][0]["namespaced"], false);
    let g = api.get("/apis/disco.example.com").await.json();
    assert_eq!(g["preferredVersion"]["version"], "v1");
    let idx = api.get("/openapi/v3").await.json();
    assert!(
        idx["paths"]["apis/disco.example.com/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .contains("hash=")
    );
    // Deleting the CRD removes it from discovery.
    let r = api
        .delete(&format!("{CRDS}/gizmos.disco.example.com"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the group is no longer served", || async {
        api.get("/apis/disco.example.com/v1").await.status == 404
    })
    .await;
    let after = get_agg().await;
    assert!(!after.to_string().contains("disco.example.com"), "{after}");
}

#[tokio::test]
async fn crd_validation_errors() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_json("v.example.com", "things", "Thing", "Namespaced");
    crd["metadata"]["name"] = json!("wrong.v.example.com");
    let r = api.post(CRDS, crd).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let st = r.json();
    assert_eq!(st["reason"], "Invalid");
    assert!(st["message"].as_str().unwrap().starts_with(
        "CustomResourceDefinition.apiextensions.k8s.io \"wrong.v.example.com\" is invalid: metadata.name: Invalid value: \"wrong.v.example.com\": must be spec.names.plural+\".\"+spec.group"
    ), "{st}");

    // Webhook conversion: https only, and a review version the server can send.
    let mut crd = crd_json("v.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v2"], "clientConfig": {"url": "http://example.com/convert?x=1"}}});
    let r = api.post(CRDS, crd).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let causes = r.causes();
    for want in [
        "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
        "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
    ] {
        assert!(
            causes.iter().any(|c| c == want),
            "missing {want} in {causes:?}"
        );
    }
}

#[tokio::test]
async fn crd_deletion_terminates_cleans_up_and_recreation_starts_empty() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    let crd = crd_json("d.example.com", "things", "Thing", "Namespaced");
    api.create_crd(crd.clone()).await;
    let base = "/apis/d.example.com/v1/namespaces/default/things";
    for i in 0..5 {
        let r = api
            .post(
                base,
                json!({"apiVersion": "d.example.com/v1", "kind": "Thing", "metadata": {"name": format!("t{i}")}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let crd_path = &format!("{CRDS}/things.d.example.com");
    let rv = api.get(crd_path).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut watch = api
        .request(
            Method::GET,
            &format!(
                "{CRDS}?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3Dthings.d.example.com&timeoutSeconds=20"
            ),
        )
        .send()
        .await
        .unwrap();
    // And one on the objects: the controller deletes each before the CRD goes.
    let objects_rv = api.get(base).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut object_watch = api
        .request(
            Method::GET,
            &format!("{base}?watch=true&resourceVersion={objects_rv}&timeoutSeconds=20"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);

    // The first DELETE answers with the CRD, now carrying a deletionTimestamp and the finalizer.
    let r = api.delete(crd_path).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );

    // The watch shows Terminating=True (InstanceDeletionInProgress) before the final DELETED.
    let mut text = String::new();
    while let Some(chunk) = watch.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if text.contains("\"DELETED\"") {
            break;
        }
    }
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let terminating = events.iter().any(|e| {
        e["object"]["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Terminating" && c["status"] == "True")
            })
    });
    assert!(terminating, "no Terminating condition in {text}");
    assert_eq!(events.last().unwrap()["type"], "DELETED", "{text}");
    // Every object got a DELETED event: the cleanup ran, the data did not merely become
    // unreachable with the resource.
    let mut deleted = std::collections::BTreeSet::new();
    let mut text = String::new();
    while deleted.len() < 5 {
        let Some(chunk) = object_watch.chunk().await.unwrap() else {
            panic!("the object watch ended before every object was deleted: {text}");
        };
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find('\n') {
            let line: String = text.drain(..=end).collect();
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "DELETED" {
                deleted.insert(
                    event["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
        }
    }
    assert_eq!(deleted.len(), 5, "{deleted:?}");

    // The objects went with it, the resource is gone, and a re-created CRD starts empty.
    let r = api.get(base).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.text.trim(), "404 page not found");
    api.create_crd(crd).await;
    let list = api.get(base).await.json();
    assert_eq!(list["items"], json!([]), "{list}");
}

/// Strict decoding of typed kinds: unknown fields in a CRD or a Namespace are a 400 with
/// upstream's text under `fieldValidation=Strict` (kubectl's default), warnings under `Warn`
/// and dropped; a CRD body without `apiVersion`/`kind` takes them from the URL.
#[tokio::test]
async fn typed_kinds_decode_strictly() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    let mut crd = crd_json("strict.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["scpoe"] = json!("Namespaced");
    crd["spec"]["subresource"] = json!({"status": {}});
    let r = api
        .call(
            Method::POST,
            &format!("{CRDS}?fieldValidation=Strict"),
            "application/json",
            Some(crd.clone()),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: strict decoding error: unknown field \"spec.scpoe\", unknown field \"spec.subresource\""
    );
    // Warn (the server default): created, with the warnings, and the fields dropped.
    let r = api.post(CRDS, crd).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let warnings = r.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w == "299 - \"unknown field \\\"spec.scpoe\\\"\""),
        "{warnings:?}"
    );
    assert!(r.json()["spec"].get("scpoe").is_none(), "{}", r.text);

    // Without apiVersion and kind.
    let mut bare = crd_json("bare.example.com", "things", "Thing", "Namespaced");
    let m = bare.as_object_mut().unwrap();
    m.remove("apiVersion");
    m.remove("kind");
    let r = api.post(CRDS, bare).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["kind"], "CustomResourceDefinition");

    // Namespaces.
    let ns =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}, "spce": {}});
    let r = api
        .call(
            Method::POST,
            "/api/v1/namespaces?fieldValidation=Strict",
            "application/json",
            Some(ns.clone()),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "Namespace in version \"v1\" cannot be handled as a Namespace: strict decoding error: unknown field \"spce\""
    );
    let r = api.post("/api/v1/namespaces", ns).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.json().get("spce").is_none(), "{}", r.text);
}

/// Managed fields written by clients: invalid entries are a 422 with upstream's field errors,
/// and `managedFields: [{}]` resets them (the write's own Update entry remains).
#[tokio::test]
async fn client_written_managed_fields() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_json("mf.example.com", "things", "Thing", "Namespaced"))
        .await;
    let base = "/apis/mf.example.com/v1/namespaces/default/things";
    let r = api
        .post(
            base,
            json!({"apiVersion": "mf.example.com/v1", "kind": "Thing",
                   "metadata": {"name": "a", "labels": {"app": "a"}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json();
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{created}");
    assert_eq!(entries[0]["operation"], "Update");

    // Entries that decode are kept as the client wrote them, and validated: a manager name past
    // 128 bytes. (Entries that do not decode are replaced by the stored ones, as upstream's
    // field manager does, so they never reach validation.)
    let mut bad = created.clone();
    bad["metadata"]["managedFields"][0]["manager"] = json!("m".repeat(200));
    let r = api
        .call(
            Method::PUT,
            &format!("{base}/a"),
            "application/json",
            Some(bad),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let msg = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"),
        "{msg}"
    );

    // `[{}]` resets: only this write's own entry is left, by the manager given.
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    reset["metadata"]["labels"] = json!({"x": "y"});
    let r = api
        .call(
            Method::PUT,
            &format!("{base}/a?fieldManager=resetter"),
            "application/json",
            Some(reset),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let entries = r.json()["metadata"]["managedFields"].clone();
    let managers: Vec<&str> = entries
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(managers, vec!["resetter"], "{entries}");
}

/// Duplicate JSON fields in a body: a 400 listing them with the unknown fields in document
/// order under `Strict`, warnings under `Warn` (the last value wins, as Go's decoder keeps it).
#[tokio::test]
async fn duplicate_fields_in_bodies() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d","bogus":1},"data":{"a":"1","a":"2"}}"#;
    let send = |query: &'static str| {
        api.request(
            Method::POST,
            &format!("/api/v1/namespaces/default/configmaps{query}"),
        )
        .header("Content-Type", "application/json")
        .body(body)
        .send()
    };
    let r = send("?fieldValidation=Strict").await.unwrap();
    assert_eq!(r.status(), 400);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", unknown field \"metadata.bogus\", duplicate field \"data.a\""
    );
    let r = send("").await.unwrap();
    assert_eq!(r.status(), 201);
    let warnings: Vec<String> = r
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(String::from))
        .collect();
    assert!(
        warnings.contains(&"299 - \"duplicate field \\\"data.a\\\"\"".to_string()),
        "{warnings:?}"
    );
    let created: Value = r.json().await.unwrap();
    assert_eq!(created["data"]["a"], "2");
}

/// A write through `/scale` is recorded as the manager's entry with subresource `scale`, owning
/// the object's replicas field, as upstream records it.
#[tokio::test]
async fn scale_writes_are_owned_through_the_scale_subresource() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_json("sc.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["versions"][0]["subresources"] = json!({"scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
    api.create_crd(crd).await;
    let base = "/apis/sc.example.com/v1/namespaces/default/things";
    let r = api
        .post(
            base,
            json!({"apiVersion": "sc.example.com/v1", "kind": "Thing",
                   "metadata": {"name": "t"}, "spec": {"replicas": 1}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .call(
            Method::PATCH,
            &format!("{base}/t/scale?fieldManager=autoscaler"),
            "application/merge-patch+json",
            Some(json!({"spec": {"replicas": 3}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let obj = api.get(&format!("{base}/t")).await.json();
    assert_eq!(obj["spec"]["replicas"], 3);
    let entry = managed_entry(&obj, "autoscaler");
    assert_eq!(entry["subresource"], "scale", "{entry}");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));

    // Server-side apply of a Scale: owned through the scale subresource, conflicts included.
    let scale_apply = |manager: &str, replicas: i64, force: bool| {
        let query = format!(
            "{base}/t/scale?fieldManager={manager}{}",
            if force { "&force=true" } else { "" }
        );
        let body = format!(
            "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: t\nspec:\n  replicas: {replicas}\n"
        );
        api.request(Method::PATCH, &query)
            .header("Content-Type", "application/apply-patch+yaml")
            .body(body)
            .send()
    };
    let r = scale_apply("hpa", 5, true).await.unwrap();
    assert_eq!(r.status(), 200);
    let scale: Value = r.json().await.unwrap();
    assert_eq!(scale["spec"]["replicas"], 5, "{scale}");
    let obj = api.get(&format!("{base}/t")).await.json();
    let entry = managed_entry(&obj, "hpa");
    assert_eq!(entry["operation"], "Apply", "{entry}");
    assert_eq!(entry["subresource"], "scale", "{entry}");
    assert!(
        entry["fieldsV1"]["f:spec"]["f:replicas"].is_object(),
        "{entry}"
    );
    let r = scale_apply("other", 7, false).await.unwrap();
    assert_eq!(r.status(), 409);
    let st: Value = r.json().await.unwrap();
    let message = st["message"].as_str().unwrap_or("");
    assert!(
        message.contains("conflict with \"hpa\"") && message.ends_with(".spec.replicas"),
        "{st}"
    );
}

/// A resourceVersion in a server-side apply configuration is a precondition (upstream carries it
/// into the object its update checks): a stale one is a 409, the current one applies.
#[tokio::test]
async fn apply_with_a_resource_version_is_a_precondition() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let url = "/api/v1/namespaces/default/configmaps/ssa1?fieldManager=m1";
    let apply = |body: Value| {
        api.request(Method::PATCH, url)
            .header("Content-Type", "application/apply-patch+yaml")
            .body(body.to_string())
            .send()
    };
    let cm = |data: &str, rv: Option<&str>| {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ssa1"}, "data": {"a": data}});
        if let Some(rv) = rv {
            o["metadata"]["resourceVersion"] = json!(rv);
        }
        o
    };
    let r = apply(cm("1", None)).await.unwrap();
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    let r = apply(cm("2", Some("1"))).await.unwrap();
    assert_eq!(r.status(), 409);
    let st: Value = r.json().await.unwrap();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on configmaps \"ssa1\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let unchanged = api
        .get("/api/v1/namespaces/default/configmaps/ssa1")
        .await
        .json();
    assert_eq!(unchanged["data"], json!({"a": "1"}));

    let r = apply(cm("3", Some(&rv))).await.unwrap();
    assert_eq!(r.status(), 200);
    let applied: Value = r.json().await.unwrap();
    assert_eq!(applied["data"], json!({"a": "3"}));
}

/// A custom object must be of its CRD's kind (upstream's `ValidateTypeMeta`): another kind in
/// the right group and version is a 422 on create, update and patch, qualified by the kind the
/// object claims; nothing is stored.
#[tokio::test]
async fn a_custom_object_of_another_kind_is_invalid() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_json(
        "kinds.example.com",
        "crontabs",
        "CronTab",
        "Namespaced",
    ))
    .await;
    let base = "/apis/kinds.example.com/v1/namespaces/default/crontabs";
    let want = |name: &str, kind: &str| {
        format!(
            "{kind}.kinds.example.com \"{name}\" is invalid: kind: Invalid value: \"{kind}\": must be CronTab"
        )
    };
    let r = api
        .post(
            base,
            json!({"apiVersion": "kinds.example.com/v1", "kind": "Other", "metadata": {"name": "s0"}}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["message"], want("s0", "Other"));
    assert_eq!(api.get(&format!("{base}/s0")).await.status, 404);

    let r = api
        .post(
            base,
            json!({"apiVersion": "kinds.example.com/v1", "kind": "CronTab", "metadata": {"name": "s1"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut put = r.json();
    put["kind"] = json!("Foo");
    let r = api
        .call(
            Method::PUT,
            &format!("{base}/s1"),
            "application/json",
            Some(put),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["message"], want("s1", "Foo"));
    let r = api
        .call(
            Method::PATCH,
            &format!("{base}/s1"),
            "application/merge-patch+json",
            Some(json!({"kind": "Foo"})),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        api.get(&format!("{base}/s1")).await.json()["kind"],
        "CronTab"
    );
}

/// A body that is not JSON is a 400 in kube-apiserver's words: Go's scanner error, before any
/// kind is known, and the body's first 30 bytes; for built-in kinds and custom resources, on
/// create and update.
#[tokio::test]
async fn malformed_json_bodies_are_described_as_kube_apiserver_describes_them() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    api.create_crd(crd_json(
        "stable.example.com",
        "crontabs",
        "CronTab",
        "Namespaced",
    ))
    .await;
    // (method, path, body, message)
    let cases = [
        (
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}"#,
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)"#,
        ),
        (
            Method::PUT,
            "/api/v1/namespaces/default/configmaps/x",
            r#"{"apiVersion":"v1","kind":"ConfigMap",}"#,
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '}' looking for beginning of object key string ({"apiVersion":"v1","kind":"Con ...)"#,
        ),
        (
            Method::POST,
            "/apis/stable.example.com/v1/namespaces/default/crontabs",
            r#"{"spec": [1 2]}"#,
            r#"the object provided is unrecognized (must be of type CronTab): couldn't get version/kind; json parse error: invalid character '2' after array element ({"spec": [1 2]})"#,
        ),
    ];
    for (method, path, body, message) in cases {
        let r = api
            .request(method.clone(), path)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let r = crate::support::read(r).await;
        assert_eq!(r.status, 400, "{method} {path}: {}", r.text);
        let status = r.json();
        assert_eq!(status["reason"], "BadRequest");
        assert_eq!(status["message"], message, "{method} {path}");
    }
}

/// Values Go's decoding of a typed kind refuses are a 400 with its words, and nothing is
/// stored: `[]byte` fields are standard base64, quantities parse, times are RFC 3339 (with six
/// fractional digits for a `MicroTime`), int32 fields hold an int32. Valid ones are stored.
#[tokio::test]
async fn typed_values_decode_as_go_decodes_them() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let cases = [
        (
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "data": {"a": "not base64!"}}),
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3",
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "binaryData": {"a": "YQ"}}),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: illegal base64 data at input byte 0",
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                   "spec": {"renewTime": "yesterday"}}),
            "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"yesterday\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"yesterday\" as \"2006\"",
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                   "spec": {"renewTime": "2024-01-01T00:00:00Z"}}),
            "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"2024-01-01T00:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\"",
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                   "spec": {"leaseDurationSeconds": 99_999_999_999_i64}}),
            "Lease in version \"v1\" cannot be handled as a Lease: json: cannot unmarshal number 99999999999 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
        ),
        (
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                   "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                   "lastTimestamp": "garbage"}),
            "Event in version \"v1\" cannot be handled as a Event: parsing time \"garbage\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"garbage\" as \"2006\"",
        ),
        (
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "image": "i",
                            "resources": {"requests": {"memory": "1Gb"}}}]}}),
            "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ];
    for (path, body, want) in cases {
        let r = api.post(path, body).await;
        assert_eq!(r.status, 400, "{}", r.text);
        let st = r.json();
        assert_eq!(st["reason"], "BadRequest");
        assert_eq!(st["message"], want);
    }
    for (path, kind) in [
        ("/api/v1/namespaces/default/secrets/s", "secret"),
        ("/api/v1/namespaces/default/configmaps/c", "configmap"),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
            "lease",
        ),
        ("/api/v1/namespaces/default/pods/p", "pod"),
    ] {
        assert_eq!(api.get(path).await.status, 404, "a {kind} was stored");
    }
    // Valid values of the same fields are stored, in UTC at the precision of their Go type
    // (regression: they were stored with the client's offset, as the Python client sends them).
    let r = api
        .post(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                   "spec": {"renewTime": "2024-01-01T01:00:00.123456+01:00", "leaseDurationSeconds": 15}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["spec"]["renewTime"], "2024-01-01T00:00:00.123456Z");
    let r = api
        .get("/apis/coordination.k8s.io/v1/namespaces/default/leases/l")
        .await;
    assert_eq!(r.json()["spec"]["renewTime"], "2024-01-01T00:00:00.123456Z");
    let r = api
        .post(
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "data": {"a": "YQ=="}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// A server-side apply configuration with a field the kind's schema does not declare is refused
/// whole, as upstream's typed conversion refuses it: a 500 with no reason and SMD's text, for
/// built-in kinds and custom resources alike; nothing is written. A schema that preserves
/// unknown fields takes anything.
#[tokio::test]
async fn apply_of_an_undeclared_field_is_refused() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let apply = |path: String, body: Value| {
        api.request(Method::PATCH, &path)
            .header("Content-Type", "application/apply-patch+yaml")
            .body(body.to_string())
            .send()
    };
    let r = apply(
        "/api/v1/namespaces/default/configmaps/ssa9?fieldManager=m1".into(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "ssa9", "namespace": "default"},
               "data": {"a": "1"}, "bogus": 1}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 500);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "failed to create typed patch object (default/ssa9; /v1, Kind=ConfigMap): .bogus: field not declared in schema"
    );
    // A value of the wrong scalar type is refused the same way (SMD's `validateScalar`).
    let r = apply(
        "/api/v1/namespaces/default/configmaps/ssa9?fieldManager=m1".into(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "ssa9", "namespace": "default"},
               "data": {"a": 1}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 500);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "failed to create typed patch object (default/ssa9; /v1, Kind=ConfigMap): .data.a: expected string, got &value.valueUnstructured{Value:1}"
    );
    assert_eq!(
        api.get("/api/v1/namespaces/default/configmaps/ssa9")
            .await
            .status,
        404
    );
    // A structural custom resource, and one that preserves unknown fields.
    let mut crd = crd_json("ssa.example.com", "gadgets", "Gadget", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
    api.create_crd(crd).await;
    api.create_crd(crd_json("ssa.example.com", "blobs", "Blob", "Namespaced"))
        .await;
    let r = apply(
        "/apis/ssa.example.com/v1/namespaces/default/gadgets/g?fieldManager=m1".into(),
        json!({"apiVersion": "ssa.example.com/v1", "kind": "Gadget",
               "metadata": {"name": "g", "namespace": "default"},
               "spec": {"size": 1, "bogus": 1}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 500);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "failed to create typed patch object (default/g; ssa.example.com/v1, Kind=Gadget): .spec.bogus: field not declared in schema"
    );
    assert!(st.get("reason").is_none(), "{st}");
    assert_eq!(
        api.get("/apis/ssa.example.com/v1/namespaces/default/gadgets/g")
            .await
            .status,
        404
    );
    let r = apply(
        "/apis/ssa.example.com/v1/namespaces/default/blobs/b?fieldManager=m1".into(),
        json!({"apiVersion": "ssa.example.com/v1", "kind": "Blob", "metadata": {"name": "b"},
               "spec": {"anything": {"goes": true}}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
}

/// A subresource a kind does not serve: built-in kinds have no route for it, and paths under a
/// built-in group version are go-restful's, whose misses are a JSON `Status` naming nothing
/// (`NewGenericServerResponse`: 404 `NotFound`, 405 `MethodNotAllowed` for a method the route does
/// not serve); a custom resource's CRD handler answers NotFound naming the object. Outside any
/// served group version the answer is the plain `404 page not found`.
#[tokio::test]
async fn unserved_subresources_are_not_routes_for_built_in_kinds() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let r = api
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    for path in [
        "/api/v1/namespaces/default/configmaps/app/foo",
        "/api/v1/namespaces/default/configmaps/app/status",
        "/api/v1/namespaces/default/configmaps/app/log",
        "/api/v1/namespaces/default/foos",
        "/apis/apps/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/namespaces/x",
    ] {
        let r = api.get(path).await;
        assert_eq!(
            (r.status.as_u16(), r.json()),
            (
                404,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "the server could not find the requested resource",
                    "reason": "NotFound", "details": {}, "code": 404})
            ),
            "{path}"
        );
    }
    let not_allowed = |r: &Resp| {
        assert_eq!(r.status, 405, "{}", r.text);
        assert_eq!(r.json()["reason"], "MethodNotAllowed", "{}", r.text);
        assert_eq!(
            r.json()["message"],
            "the server does not allow this method on the requested resource"
        );
    };
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    not_allowed(
        &api.post("/api/v1/namespaces/default/configmaps/app", cm.clone())
            .await,
    );
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let put = |path: &'static str| api.call(Method::PUT, path, "application/json", Some(json!({})));
    not_allowed(&put(deployments).await);
    not_allowed(&api.delete("/api/v1/namespaces/default/pods/p/status").await);
    let r = api
        .get("/apis/nothing.example.com/v1/namespaces/default/things")
        .await;
    assert_eq!(
        (r.status.as_u16(), r.text.as_str()),
        (404, "404 page not found\n")
    );
    api.create_crd(crd_json(
        "subs.example.com",
        "widgets",
        "Widget",
        "Namespaced",
    ))
    .await;
    let r = api
        .get("/apis/subs.example.com/v1/namespaces/default/widgets/w/status")
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    let st = r.json();
    assert_eq!(st["reason"], "NotFound");
    assert_eq!(st["message"], "widgets.subs.example.com \"w\" not found");
    // The CRD handler takes PUT to a collection as an update and finds no name.
    let r = put("/apis/subs.example.com/v1/namespaces/default/widgets").await;
    assert_eq!(
        (r.status.as_u16(), r.json()["message"].clone()),
        (400, json!("name parameter required."))
    );
}

/// Built-in kinds are applied with their schema, as upstream types them: two managers applying
/// different containers of one Deployment each own their own (`containers` merge by `name`,
/// keyed `k:{"name":...}` in managedFields) instead of conflicting over one atomic list.
#[tokio::test]
async fn built_in_lists_merge_by_their_keys_on_apply() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let url = |manager: &str| {
        format!("/apis/apps/v1/namespaces/default/deployments/web?fieldManager={manager}")
    };
    let deployment = |container: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": container, "image": container}]}}}})
    };
    for (manager, container) in [("app", "main"), ("injector", "sidecar")] {
        let r = api
            .request(Method::PATCH, &url(manager))
            .header("Content-Type", "application/apply-patch+yaml")
            .body(deployment(container).to_string())
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap();
        assert!(status.is_success(), "{manager}: {body}");
    }
    let obj = api
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .await
        .json();
    let names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main", "sidecar"], "{obj}");
    let injector = managed_entry(&obj, "injector");
    let owned = &injector["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"];
    assert!(
        owned.get("k:{\"name\":\"sidecar\"}").is_some() && owned.as_object().unwrap().len() == 1,
        "{injector}"
    );
}

/// A built-in kind with a status subresource resets as upstream's `GetResetFields`: an apply to
/// the main endpoint does not own `status` (which it cannot change), one to `/status` does not
/// own `spec`.
#[tokio::test]
async fn built_in_applies_do_not_own_what_their_endpoint_resets() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let base = "/apis/apps/v1/namespaces/default/deployments/web";
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": "main"}]}}},
        "status": {"observedGeneration": 7}});
    let mut status_apply = deployment.clone();
    status_apply["spec"]["replicas"] = json!(5);
    status_apply["status"] = json!({"replicas": 3});
    for (url, manager, body) in [
        (base.to_string(), "app", &deployment),
        (format!("{base}/status"), "controller", &status_apply),
    ] {
        let r = api
            .request(
                Method::PATCH,
                &format!("{url}?fieldManager={manager}&force=true"),
            )
            .header("Content-Type", "application/apply-patch+yaml")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let code = r.status();
        let body: Value = r.json().await.unwrap();
        assert!(code.is_success(), "{manager}: {body}");
    }
    let obj = api.get(base).await.json();
    // The data: the main endpoint kept the stored status, `/status` the stored spec.
    assert_eq!(obj["spec"]["replicas"], 2, "{obj}");
    assert_eq!(obj["status"]["replicas"], 3, "{obj}");
    assert_eq!(obj["status"].get("observedGeneration"), None, "{obj}");
    let app = managed_entry(&obj, "app");
    // Still the owner of the replicas the forced `/status` apply sent and could not change.
    assert_eq!(app["fieldsV1"]["f:spec"]["f:replicas"], json!({}), "{app}");
    assert_eq!(app["fieldsV1"].get("f:status"), None, "{app}");
    let controller = managed_entry(&obj, "controller");
    assert_eq!(controller["subresource"], "status", "{controller}");
    assert_eq!(
        controller["fieldsV1"],
        json!({"f:status": {"f:replicas": {}}}),
        "{controller}"
    );
}

/// Per-kind status strategies, as upstream's: a Deployment's `/status` keeps its labels and does
/// not own them (1.33+'s reset set), a Pod's `/status` keeps its owner references and does not
/// own them or its deletion timestamp; other metadata changes pass through `/status`.
#[tokio::test]
async fn status_writes_keep_what_the_kinds_status_strategy_keeps() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    // An owner of a kind this server does not serve: the garbage collector leaves the pod be
    // (it deletes a pod whose served owner is missing, as it did once Nodes were served).
    let owner =
        json!([{"apiVersion": "example.com/v1", "kind": "Machine", "name": "n", "uid": "u-1"}]);
    let deploy = "/apis/apps/v1/namespaces/default/deployments/web";
    let pod = "/api/v1/namespaces/default/pods/p";
    let created = [
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"tier": "a"}},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        ),
        (
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"tier": "a"}, "ownerReferences": owner},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        ),
    ];
    for (url, body) in created {
        let r = api.post(url, body).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    // A merge patch through `/status` that changes labels, annotations and owner references.
    let patch = json!({"metadata": {"labels": {"tier": "b"}, "annotations": {"k": "v"},
                                    "ownerReferences": null},
                       "status": {"observedGeneration": 1}});
    for url in [deploy, pod] {
        let r = api
            .call(
                Method::PATCH,
                &format!("{url}/status"),
                "application/merge-patch+json",
                Some(patch.clone()),
            )
            .await;
        assert_eq!(r.status, 200, "{url}: {}", r.text);
    }
    let d = api.get(deploy).await.json();
    assert_eq!(d["metadata"]["labels"], json!({"tier": "a"}), "{d}");
    assert_eq!(d["metadata"]["annotations"], json!({"k": "v"}), "{d}");
    assert_eq!(d["status"]["observedGeneration"], 1, "{d}");
    let p = api.get(pod).await.json();
    assert_eq!(p["metadata"]["labels"], json!({"tier": "b"}), "{p}");
    assert_eq!(p["metadata"]["ownerReferences"], owner, "{p}");
    // A forced apply through a Pod's `/status` with owner references owns only its status.
    let apply = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "m", "uid": "u-2"}]},
        "status": {"message": "hi"}});
    let r = api
        .call(
            Method::PATCH,
            &format!("{pod}/status?fieldManager=kubelet&force=true"),
            "application/apply-patch+yaml",
            Some(apply),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let p = r.json();
    assert_eq!(p["metadata"]["ownerReferences"], owner, "{p}");
    let kubelet = managed_entry(&p, "kubelet");
    assert_eq!(
        kubelet["fieldsV1"],
        json!({"f:status": {"f:message": {}}}),
        "{kubelet}"
    );
    // A Deployment's `/status` apply with labels owns only its status.
    let apply = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"viastatus": "1"}},
        "status": {"readyReplicas": 1}});
    let r = api
        .call(
            Method::PATCH,
            &format!("{deploy}/status?fieldManager=controller&force=true"),
            "application/apply-patch+yaml",
            Some(apply),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let d = r.json();
    assert_eq!(d["metadata"]["labels"], json!({"tier": "a"}), "{d}");
    let controller = managed_entry(&d, "controller");
    assert_eq!(
        controller["fieldsV1"],
        json!({"f:status": {"f:readyReplicas": {}}}),
        "{controller}"
    );
}

/// The `managedFields` entry of `manager` in `obj`.
fn managed_entry(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .cloned()
        .unwrap_or_else(|| panic!("no {manager} entry: {obj}"))
}

/// Stored objects are read through their version's current schema once the CRD's spec has
/// changed, as upstream's schema-coercing decoder prunes every read (`TestPruningFromStorage`):
/// a property removed from the schema disappears from gets, lists and watches before the
/// object is written again.
#[tokio::test]
async fn a_property_removed_from_the_schema_is_pruned_on_read() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_json("prune.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "keep": {"type": "string"}, "drop": {"type": "string"}}}}});
    api.create_crd(crd).await;
    let base = "/apis/prune.example.com/v1/namespaces/default/things";
    let r = api
        .post(
            base,
            json!({"apiVersion": "prune.example.com/v1", "kind": "Thing",
                   "metadata": {"name": "t1"}, "spec": {"keep": "k", "drop": "d"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rv = r.json()["metadata"]["resourceVersion"].clone();
    assert_eq!(
        api.get(&format!("{base}/t1")).await.json()["spec"],
        json!({"keep": "k", "drop": "d"})
    );

    let crd_path = format!("{CRDS}/things.prune.example.com");
    let r = api
        .call(
            Method::PATCH,
            &crd_path,
            "application/json-patch+json",
            Some(json!([{"op": "remove",
                "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/drop"}])),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let pruned = json!({"keep": "k"});
    eventually("reads prune the removed property", || async {
        api.get(&format!("{base}/t1")).await.json()["spec"] == pruned
    })
    .await;
    let got = api.get(&format!("{base}/t1")).await.json();
    assert_eq!(got["metadata"]["resourceVersion"], rv, "not rewritten");
    let list = api.get(base).await.json();
    assert_eq!(list["items"][0]["spec"], pruned);
    let list = api.get(&format!("{base}?resourceVersion=0")).await.json();
    assert_eq!(list["items"][0]["spec"], pruned);
    let watch = api
        .get(&format!("{base}?watch=true&timeoutSeconds=1"))
        .await
        .lines();
    assert_eq!(watch[0]["object"]["spec"], pruned);
}

/// A CRD's `selectableFields` are checked against its schema when it is written, at upstream's
/// internal path (`spec.selectableFields` when every version declares the same ones).
#[tokio::test]
async fn selectable_fields_are_validated_against_the_schema() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_json("sel.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string"}, "obj": {"type": "object"}}}}});
    crd["spec"]["versions"][0]["selectableFields"] =
        json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.obj"}, {"jsonPath": ".spec.nope"}]);
    let r = api.post(CRDS, crd.clone()).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let causes = r.causes();
    assert_eq!(
        causes,
        [
            "spec.selectableFields[1].jsonPath: Invalid value: \".spec.obj\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            "spec.selectableFields[2].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
        ]
    );
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    let r = api.post(CRDS, crd).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// A default that fails the CEL rules over it is refused when the CRD is written (upstream's
/// default validation runs the CEL validator), rather than on every create that omits it.
#[tokio::test]
async fn a_default_failing_its_rules_refuses_the_crd() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_json("dflt.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
        "properties": {"spec": {"type": "object", "properties": {"mode": {
            "type": "string", "default": "b",
            "x-kubernetes-validations": [{"rule": "self == 'a'"}]}}}}});
    let r = api.post(CRDS, crd).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.causes(),
        [
            "spec.validation.openAPIV3Schema.properties[spec].properties[mode].default: Invalid value: \"string\": failed rule: self == 'a'"
        ]
    );
}

/// DELETE answers as each kind's upstream store does: Pods (and Services, service accounts,
/// volumes and claims) with the deleted object, other kinds with a success `Status`; a scheduled
/// Pod is deleted gracefully (`CheckGracefulDelete`): it stays, its `deletionTimestamp` its
/// grace period ahead, until a DELETE with a shorter period (`--grace-period=0 --force`); a
/// repeated DELETE and an update leave it pending.
#[tokio::test]
async fn pods_answer_deletes_with_themselves_and_are_deleted_gracefully_when_scheduled() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let pods = "/api/v1/namespaces/default/pods";
    let pod = |name: &str, node: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        p
    };
    assert_eq!(api.post(pods, pod("loose", None)).await.status, 201);
    let r = api.delete(&format!("{pods}/loose")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let out = r.json();
    assert_eq!(
        (out["kind"].as_str(), out["metadata"]["name"].as_str()),
        (Some("Pod"), Some("loose")),
        "{out}"
    );
    assert_eq!(api.get(&format!("{pods}/loose")).await.status, 404);
    // A ConfigMap's delete answers a Status.
    let r = api
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "c"}}),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = api.delete("/api/v1/namespaces/default/configmaps/c").await;
    assert_eq!(r.json()["kind"], "Status", "{}", r.text);

    // Scheduled: graceful, 30 s (the defaulted terminationGracePeriodSeconds).
    assert_eq!(
        api.post(pods, pod("running", Some("node-a"))).await.status,
        201
    );
    let path = format!("{pods}/running");
    let delete_within = |seconds: i64| {
        api.call(
            Method::DELETE,
            &path,
            "application/json",
            Some(json!({"gracePeriodSeconds": seconds})),
        )
    };
    let r = api.delete(&path).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let out = r.json();
    assert_eq!(out["metadata"]["deletionGracePeriodSeconds"], 30, "{out}");
    let at: jiff::Timestamp = out["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        at > jiff::Timestamp::now() + jiff::SignedDuration::from_secs(20),
        "{at}"
    );
    // Again, and an update: still pending.
    let r = api.delete(&path).await;
    assert_eq!(
        r.json()["metadata"]["deletionTimestamp"],
        out["metadata"]["deletionTimestamp"]
    );
    let r = api
        .call(
            Method::PATCH,
            &path,
            "application/merge-patch+json",
            Some(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.get(&path).await.status, 200);
    // A longer period changes nothing; a shorter one moves the timestamp back.
    let r = delete_within(60).await;
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 30);
    let r = delete_within(10).await;
    let short = r.json();
    assert_eq!(
        short["metadata"]["deletionGracePeriodSeconds"], 10,
        "{short}"
    );
    let moved: jiff::Timestamp = short["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        at.duration_since(moved),
        jiff::SignedDuration::from_secs(20)
    );
    // Forced: gone.
    let r = delete_within(0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.get(&path).await.status, 404);
}

/// An object without its replicas field: reading its Scale is upstream's internal error, but a
/// write that sets the replicas creates the field (`kubectl scale` works), and one that leaves
/// them unset is a 400 (`scaleUpdatedObjectInfo`'s sentinel).
#[tokio::test]
async fn scaling_an_object_without_replicas_sets_them() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let mut crd = crd_json("unset.example.com", "things", "Thing", "Namespaced");
    crd["spec"]["versions"][0]["subresources"] = json!({"scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
    api.create_crd(crd).await;
    let base = "/apis/unset.example.com/v1/namespaces/default/things";
    let r = api
        .post(
            base,
            json!({"apiVersion": "unset.example.com/v1", "kind": "Thing",
                   "metadata": {"name": "t"}, "spec": {}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let scale = format!("{base}/t/scale");
    let r = api.get(&scale).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: the spec replicas field \".spec.replicas\" does not exist"
    );
    let patch = |body: Value| {
        api.call(
            Method::PATCH,
            &scale,
            "application/merge-patch+json",
            Some(body),
        )
    };
    let r = patch(json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "the spec replicas field \".spec.replicas\" cannot be empty"
    );
    let r = patch(json!({"spec": {"replicas": 2}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["spec"]["replicas"], 2);
    assert_eq!(
        api.get(&format!("{base}/t")).await.json()["spec"]["replicas"],
        2
    );
}

/// Empty maps and lists are stored as Go's `omitempty` leaves them: gone from a built-in
/// object's optional map and list fields (metadata included) and from a custom resource's
/// metadata (`objectmeta.Coerce`), so no managed-fields entry lists them either; structs stay
/// (`resources: {}`), a custom resource's own fields stay, and an empty `managedFields` still
/// clears them.
#[tokio::test]
async fn empty_maps_and_lists_are_dropped_as_go_drops_them() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(
            "/api/v1/namespaces/default/configmaps?fieldManager=m",
            json!({"metadata": {"name": "c", "labels": {}, "annotations": {}, "finalizers": [],
                                "ownerReferences": []},
                   "data": {}, "binaryData": {}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let cm = r.json();
    for gone in ["labels", "annotations", "finalizers", "ownerReferences"] {
        assert!(cm["metadata"].get(gone).is_none(), "{gone}: {cm}");
    }
    assert!(
        cm.get("data").is_none() && cm.get("binaryData").is_none(),
        "{cm}"
    );
    // The create owned nothing, so it has no entry (upstream records none for an empty set).
    assert!(cm["metadata"].get("managedFields").is_none(), "{cm}");
    // Removing the last label leaves no `labels: {}`.
    let path = "/api/v1/namespaces/default/configmaps/c";
    let r = api
        .call(
            Method::PATCH,
            path,
            "application/merge-patch+json",
            Some(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=unlabel"),
            "application/strategic-merge-patch+json",
            Some(json!({"metadata": {"labels": {"a": null}}})),
        )
        .await;
    let cm = r.json();
    assert!(cm["metadata"].get("labels").is_none(), "{cm}");

    let r = api
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                    "nodeSelector": {}, "tolerations": [], "securityContext": {},
                    "containers": [{"name": "c", "image": "i", "env": [], "args": [],
                                    "resources": {"limits": {}}}]}}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let deployment = r.json();
    let pod = &deployment["spec"]["template"]["spec"];
    assert!(
        pod.get("nodeSelector").is_none() && pod.get("tolerations").is_none(),
        "{pod}"
    );
    assert_eq!(pod["securityContext"], json!({}));
    let container = &pod["containers"][0];
    assert!(
        container.get("env").is_none() && container.get("args").is_none(),
        "{container}"
    );
    assert_eq!(container["resources"], json!({}), "{container}");

    api.create_crd(crd_json(
        "empty.example.com",
        "things",
        "Thing",
        "Namespaced",
    ))
    .await;
    let r = api
        .post(
            "/apis/empty.example.com/v1/namespaces/default/things",
            json!({"apiVersion": "empty.example.com/v1", "kind": "Thing",
                   "metadata": {"name": "t", "labels": {}, "finalizers": []},
                   "spec": {"list": [], "map": {}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let thing = r.json();
    assert!(
        thing["metadata"].get("labels").is_none() && thing["metadata"].get("finalizers").is_none(),
        "{thing}"
    );
    assert_eq!(thing["spec"], json!({"list": [], "map": {}}));
    // An empty managedFields list still clears them.
    let r = api
        .call(
            Method::PATCH,
            path,
            "application/merge-patch+json",
            Some(json!({"metadata": {"managedFields": []}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.json()["metadata"].get("managedFields").is_none(),
        "{}",
        r.text
    );
}

/// A strict strategic merge patch with an unknown field: 422 on `patch` whose value is the
/// patch as Go prints the decoded map (`applyPatchToObject`); a merge patch shows the patched
/// object's JSON instead.
#[tokio::test]
async fn strict_patch_errors_show_the_patch_as_upstream_shows_it() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "p"}, "data": {"a": "1"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let url = "/api/v1/namespaces/default/configmaps/p?fieldValidation=Strict";
    let patch = json!({"data": {"b": "2"}, "bogus": {"x": [1, true]}});
    let r = api
        .call(
            Method::PATCH,
            url,
            "application/strategic-merge-patch+json",
            Some(patch.clone()),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        " \"\" is invalid: patch: Invalid value: \"map[bogus:map[x:[1 true]] data:map[b:2]]\": strict decoding error: unknown field \"bogus\""
    );
    let r = api
        .call(
            Method::PATCH,
            url,
            "application/merge-patch+json",
            Some(patch),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{")
            && message.contains("\\\"bogus\\\""),
        "{message}"
    );
}

/// A patch whose result the kind's Go type cannot hold: 422 on `patch`, in the JSON decoder's
/// words for merge and JSON patches (the value is the patched object) and the unstructured
/// converter's for strategic merge patches (the value is the patch), as upstream's patchers.
#[tokio::test]
async fn patches_of_the_wrong_type_are_invalid_as_upstream_says() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                             "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let url = "/apis/apps/v1/namespaces/default/deployments/d";
    let patch = |content_type: &'static str, body: Value| {
        api.call(Method::PATCH, url, content_type, Some(body))
    };
    let r = patch(
        "application/merge-patch+json",
        json!({"spec": {"replicas": "abc"}}),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{")
            && message.ends_with("\": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        "{message}"
    );
    for (body, want) in [
        (
            json!({"spec": {"replicas": "abc"}}),
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[replicas:abc]]\": unrecognized type: int32",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": {"name": "c"}}}}}),
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[template:map[spec:map[containers:map[name:c]]]]]\": cannot restore slice from map",
        ),
    ] {
        let r = patch("application/strategic-merge-patch+json", body).await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert_eq!(r.json()["message"], want);
    }
    // The stored object is unchanged.
    assert_eq!(api.get(url).await.json()["spec"]["replicas"], 1);
}

/// client-go's typed clients (controller-runtime's `client.Delete`) send `DeleteOptions` as a
/// protobuf body with every DELETE of a built-in object; its options apply as a JSON body's do.
#[tokio::test]
async fn a_protobuf_delete_options_body_is_read() {
    fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![tag << 3 | 2, u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    }
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let base = "/api/v1/namespaces/default/configmaps";
    let r = api
        .post(base, json!({"metadata": {"name": "pb-delete"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let options = |raw: &[u8]| {
        let type_meta = [field(1, b"v1"), field(2, b"DeleteOptions")].concat();
        [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
    };
    // A stale uid precondition refuses the delete, as it would in JSON.
    let stale = options(&field(2, &field(1, b"not-the-uid")));
    let r = api
        .request(Method::DELETE, &format!("{base}/pb-delete"))
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .body(stale)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let background = options(&field(4, b"Background"));
    let r = api
        .request(Method::DELETE, &format!("{base}/pb-delete"))
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .body(background)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(api.get(&format!("{base}/pb-delete")).await.status, 404);
}

/// controller-runtime's `Status().Update` sends the object as protobuf to `/status`: a
/// Deployment's status is read and stored (tests fake readiness this way); a kind whose status
/// the protobuf tables do not read refuses it rather than dropping it.
#[tokio::test]
async fn protobuf_status_writes_store_the_status_or_are_refused() {
    fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![tag << 3 | 2, u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    }
    fn int(tag: u8, v: u8) -> Vec<u8> {
        vec![tag << 3, v]
    }
    fn envelope(api_version: &[u8], kind: &[u8], raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version), field(2, kind)].concat();
        [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
    }
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let base = "/apis/apps/v1/namespaces/default/deployments";
    let r = api
        .post(
            base,
            json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let condition = [field(1, b"Available"), field(2, b"True")].concat();
    let status = [int(2, 3), int(7, 3), int(4, 3), field(6, &condition)].concat();
    let raw = [
        field(1, &[field(1, b"web"), field(3, b"default")].concat()),
        field(3, &status),
    ]
    .concat();
    let r = api
        .request(Method::PUT, &format!("{base}/web/status"))
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .body(envelope(b"apps/v1", b"Deployment", &raw))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let d = api.get(&format!("{base}/web")).await.json();
    assert_eq!(d["status"]["readyReplicas"], 3);
    assert_eq!(d["status"]["conditions"][0]["type"], "Available");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );

    let r = api
        .post(
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let raw = field(1, &[field(1, b"p"), field(3, b"default")].concat());
    let r = api
        .request(Method::PUT, "/api/v1/namespaces/default/pods/p/status")
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .body(envelope(b"v1", b"Pod", &raw))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("the status of a protobuf v1 Pod is not read by this server"),
        "{body}"
    );
}

/// Regression: a patch that renamed or moved an object got a 422 "field is immutable"; upstream's
/// `checkName` refuses it with a 400 before validation, as a PUT is refused.
#[tokio::test]
async fn a_patch_cannot_rename_or_move_an_object() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let cms = "/api/v1/namespaces/default/configmaps";
    let r = api
        .post(cms, json!({"metadata": {"name": "jp"}, "data": {"a": "b"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let cases = [
        (
            "application/merge-patch+json",
            json!({"metadata": {"namespace": "kube-system"}}),
            "the namespace of the object (kube-system) does not match the namespace on the request (default)",
        ),
        (
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/metadata/name", "value": "other"}]),
            "the name of the object (other) does not match the name on the URL (jp)",
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"metadata": {"name": "other"}}),
            "the name of the object (other) does not match the name on the URL (jp)",
        ),
    ];
    for (ct, patch, want) in cases {
        let r = api
            .call(Method::PATCH, &format!("{cms}/jp"), ct, Some(patch))
            .await;
        assert_eq!(r.status, 400, "{ct}: {}", r.text);
        assert_eq!(r.json()["reason"], "BadRequest");
        assert_eq!(r.json()["message"], want, "{ct}");
    }
}
