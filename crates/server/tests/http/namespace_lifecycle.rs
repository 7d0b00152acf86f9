//! `NamespaceLifecycle` admission as creates see it: a namespace created just before is found
//! (the live read after a cache miss), a missing one is `404`, and once a namespace's deletion
//! was admitted, creates in it are refused at once (upstream's force-live-lookup), even though
//! the namespace read is otherwise answered by the watch cache without waiting; the terminating
//! namespace's conditions say which content and finalizers hold it.

use serde_json::json;

use reqwest::Method;

use crate::support::{HttpVersion, TestServer, condition, eventually};

#[tokio::test]
async fn creates_follow_namespace_creation_and_deletion_at_once() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});

    // Missing namespace.
    let r = api
        .post("/api/v1/namespaces/nowhere/configmaps", cm("a"))
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    let s = r.json();
    assert_eq!(s["reason"], "NotFound");
    assert_eq!(s["message"], "namespaces \"nowhere\" not found");

    for round in 0..3 {
        let ns = format!("lifecycle-{round}");
        // Created just before: the next create finds it.
        let r = api
            .post("/api/v1/namespaces", json!({"metadata": {"name": ns}}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        // The namespace's own ServiceAccount and CA ConfigMap are there before it is deleted
        // (they are deleted with it; they have no finalizer).
        let cm_path = format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
        let sa_path = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
        eventually("the namespace's defaults", || async {
            api.get(&cm_path).await.status == 200 && api.get(&sa_path).await.status == 200
        })
        .await;
        for name in ["held", "held2"] {
            let mut held = cm(name);
            held["metadata"]["finalizers"] = json!(["example.com/hold"]);
            let r = api
                .post(&format!("/api/v1/namespaces/{ns}/configmaps"), held)
                .await;
            assert_eq!(r.status, 201, "{}", r.text);
        }

        // Deleted: the very next create is refused (the namespace stays Terminating for the
        // finalizer of its content).
        let r = api.delete(&format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = api
            .post(&format!("/api/v1/namespaces/{ns}/configmaps"), cm("late"))
            .await;
        assert_eq!(r.status, 403, "{}", r.text);
        let s = r.json();
        assert_eq!(s["reason"], "Forbidden");
        assert_eq!(
            s["message"],
            format!(
                "configmaps \"late\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"
            )
        );
        assert_eq!(s["details"]["causes"][0]["reason"], "NamespaceTerminating");
        assert_eq!(
            s["details"]["causes"][0]["message"],
            format!("namespace {ns} is being terminated")
        );
        // Refused before the name is generated (and before validation, which this body
        // fails): named by its generateName, as upstream's NamespaceLifecycle names it.
        let r = api
            .post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"generateName": "gen-"}, "data": {"bad key": "x"}}),
            )
            .await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert_eq!(
            r.json()["message"],
            format!(
                "configmaps \"gen-\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"
            )
        );

        // The namespace says what holds it, in the namespace controller's words.
        let path = format!("/api/v1/namespaces/{ns}");
        let said = |kind: &'static str| {
            let path = path.clone();
            let api = &api;
            async move {
                let ns = api.get(&path).await.json();
                ns["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["type"] == kind)
                    .map(|c| {
                        (
                            c["status"].clone(),
                            c["reason"].clone(),
                            c["message"].clone(),
                        )
                    })
            }
        };
        let content = |n: u32| {
            Some((
                json!("True"),
                json!("SomeResourcesRemain"),
                json!(format!(
                    "Some resources are remaining: configmaps. has {n} resource instances"
                )),
            ))
        };
        let finalizers = |n: u32| {
            Some((
                json!("True"),
                json!("SomeFinalizersRemain"),
                json!(format!(
                    "Some content in the namespace has finalizers remaining: example.com/hold \
                     in {n} resource instances"
                )),
            ))
        };
        eventually("the namespace has its deletion conditions", || async {
            said("NamespaceFinalizersRemaining").await.is_some()
        })
        .await;
        assert_eq!(said("NamespaceContentRemaining").await, content(2));
        assert_eq!(said("NamespaceFinalizersRemaining").await, finalizers(2));
        assert_eq!(
            said("NamespaceDeletionContentFailure").await,
            Some((
                json!("False"),
                json!("ContentDeleted"),
                json!("All content successfully deleted, may be waiting on finalization")
            ))
        );

        // One held object let go: the conditions say so while the other still holds the kind.
        let r = api
            .call(
                Method::PATCH,
                &format!("/api/v1/namespaces/{ns}/configmaps/held2"),
                "application/merge-patch+json",
                Some(json!({"metadata": {"finalizers": null}})),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        eventually("the conditions count the one left", || async {
            said("NamespaceFinalizersRemaining").await == finalizers(1)
        })
        .await;
        assert_eq!(said("NamespaceContentRemaining").await, content(1));
    }
}

/// The namespace of a create is read by key, never listed: with the watch cache the cache
/// answers (the engine sees no read), without it the engine sees one point read per create (a
/// create used to list the namespace's key prefix, which without the cache was a range scan of
/// the engine per create).
#[tokio::test]
async fn a_create_reads_its_namespace_by_key() {
    for cache in [true, false] {
        let server = TestServer::start_with(|c| c.watch_cache = cache).await;
        let api = server.api(HttpVersion::Http1);
        // The objects every namespace gets are created first (each create reads its namespace).
        eventually(
            "every namespace's ServiceAccount and CA ConfigMap",
            || async {
                let cms = api
                    .get("/api/v1/configmaps?fieldSelector=metadata.name=kube-root-ca.crt")
                    .await
                    .json();
                let sas = api
                    .get("/api/v1/serviceaccounts?fieldSelector=metadata.name=default")
                    .await
                    .json();
                cms["items"].as_array().map(Vec::len) == Some(4)
                    && sas["items"].as_array().map(Vec::len) == Some(4)
            },
        )
        .await;
        let namespace_reads = || async {
            let text = api.get("/metrics").await.text;
            ["get", "list"].map(|op| {
                let series = format!(
                    "etcd_request_duration_seconds_count{{operation=\"{op}\",type=\"namespaces\"}} "
                );
                text.lines()
                    .find_map(|l| l.strip_prefix(&series)?.parse::<u64>().ok())
                    .unwrap_or(0)
            })
        };
        let before = namespace_reads().await;
        for i in 0..5 {
            let r = api
                .post(
                    "/api/v1/namespaces/default/configmaps",
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": format!("cm-{i}")}}),
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.text);
        }
        let after = namespace_reads().await;
        let gets = if cache { 0 } else { 5 };
        assert_eq!(
            after,
            [before[0] + gets, before[1]],
            "cache {cache}: namespace [gets, lists] of the engine"
        );
    }
}

/// `namespaces/finalize` (update only) sets `spec.finalizers` and keeps the stored `status`;
/// each finalizer is a qualified name or a standard one; emptying them releases a terminating
/// namespace at once, whatever content remains (the usual way out of a stuck namespace).
#[tokio::test]
async fn finalize_releases_a_terminating_namespace() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post("/api/v1/namespaces", json!({"metadata": {"name": "fin"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let r = api.post("/api/v1/namespaces/fin/configmaps", held).await;
    assert_eq!(r.status, 201, "{}", r.text);
    // `namespaces/<name>/status` is the namespace's subresource, not a resource in it.
    let r = api.get("/api/v1/namespaces/fin/status").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["status"], json!({"phase": "Active"}), "{}", r.text);
    let path = "/api/v1/namespaces/fin/finalize";
    let r = api.get(path).await;
    assert_eq!(r.status, 405, "{}", r.text);
    assert_eq!(r.json()["reason"], "MethodNotAllowed", "{}", r.text);

    // Active: finalizers are set, the status the body sends is not.
    let mut ns = api.get("/api/v1/namespaces/fin").await.json();
    ns["spec"]["finalizers"] = json!(["kubernetes", "example.com/mine"]);
    ns["status"] = json!({"phase": "Terminating"});
    let r = api
        .call(Method::PUT, path, "application/json", Some(ns.clone()))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let got = r.json();
    assert_eq!(
        got["spec"]["finalizers"],
        json!(["kubernetes", "example.com/mine"])
    );
    assert_eq!(got["status"], json!({"phase": "Active"}));

    let mut ns = got;
    ns["spec"]["finalizers"] = json!(["kubernetes", "mine"]);
    let r = api
        .call(Method::PUT, path, "application/json", Some(ns))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let s = r.json();
    assert_eq!(
        s["message"],
        "Namespace \"fin\" is invalid: spec.finalizers[1]: Invalid value: \"mine\": name is \
         neither a standard finalizer name nor is it fully qualified"
    );

    // Terminating, held by its content: emptying the finalizers releases it.
    // The body names no resourceVersion (namespaces allow unconditional updates): the
    // namespace controller writes its conditions meanwhile, which a stale one would conflict
    // with.
    let r = api.delete("/api/v1/namespaces/fin").await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the namespace says what holds it", || async {
        let ns = api.get("/api/v1/namespaces/fin").await.json();
        condition(&ns, "NamespaceFinalizersRemaining") == Some("True")
    })
    .await;
    let mut ns = api.get("/api/v1/namespaces/fin").await.json();
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    ns["spec"]["finalizers"] = json!([]);
    ns["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("resourceVersion");
    let r = api
        .call(Method::PUT, path, "application/json", Some(ns))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.get("/api/v1/namespaces/fin").await;
    assert_eq!(r.status, 404, "{}", r.text);
}

/// `NamespaceLifecycle` keeps the system namespaces: deleting `default`, `kube-system` or
/// `kube-public` is 403; namespaces serve no `deletecollection` (405); a deleted namespace
/// carries a `deletionTimestamp` but no `deletionGracePeriodSeconds`, as upstream's namespace
/// `REST.Delete` writes it.
#[tokio::test]
async fn system_namespaces_cannot_be_deleted_nor_namespaces_all_at_once() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    for ns in ["default", "kube-system", "kube-public"] {
        let r = api.delete(&format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(r.status, 403, "{ns}: {}", r.text);
        let s = r.json();
        assert_eq!(s["reason"], "Forbidden");
        assert_eq!(
            s["message"],
            format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted")
        );
        let r = api.get(&format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(r.json()["status"]["phase"], "Active", "{ns}");
    }
    let r = api
        .call(
            Method::DELETE,
            "/api/v1/namespaces",
            "application/json",
            None,
        )
        .await;
    assert_eq!(r.status, 405, "{}", r.text);
    assert_eq!(r.json()["reason"], "MethodNotAllowed");
    assert_eq!(api.get("/api/v1/namespaces/default").await.status, 200);

    let r = api
        .post("/api/v1/namespaces", json!({"metadata": {"name": "gone"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut held = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    held["metadata"]["namespace"] = json!("gone");
    let r = api.post("/api/v1/namespaces/gone/configmaps", held).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api.delete("/api/v1/namespaces/gone").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ns = r.json();
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
    assert!(
        ns["metadata"].get("deletionGracePeriodSeconds").is_none(),
        "{ns}"
    );
}

/// The `default/kubernetes` Service, Endpoints and `EndpointSlice` exist from the start and name
/// this server's port, as kube-apiserver's bootstrap controller keeps them; `default` holds them
/// as on a cluster.
#[tokio::test]
async fn the_kubernetes_service_names_this_server() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let port: u16 = server
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("the server URL has a port");
    let r = api
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let svc = r.json();
    assert_eq!(svc["spec"]["ports"][0]["name"], "https");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], port);
    assert_eq!(svc["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(svc["metadata"]["labels"]["component"], "apiserver");
    let r = api
        .get("/api/v1/namespaces/default/endpoints/kubernetes")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["subsets"][0]["ports"][0]["port"], port);
    let r = api
        .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let slice = r.json();
    assert_eq!(slice["endpoints"][0]["addresses"][0], "127.0.0.1");
    assert_eq!(slice["ports"][0]["port"], port);

    // Deleted, the service comes back (with a new uid) within the controller's interval, as
    // upstream's bootstrap controller re-creates it.
    let uid = svc["metadata"]["uid"].clone();
    let r = api
        .delete("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    crate::support::eventually("the service is re-created", || async {
        let r = api
            .get("/api/v1/namespaces/default/services/kubernetes")
            .await;
        r.status == 200 && r.json()["metadata"]["uid"] != uid
    })
    .await;
}

/// A terminating namespace's content stays for the grace period (kube-controller-manager waits
/// 5 s before deleting it), so a client that deletes the namespace and then its objects, as
/// `kubectl delete -f` does for a file listing the namespace first, deletes them itself.
#[tokio::test]
async fn content_waits_for_the_namespace_deletion_grace_period() {
    let server = TestServer::start_with(|c| {
        c.namespace_deletion_grace = std::time::Duration::from_mins(10);
    })
    .await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post("/api/v1/namespaces", json!({"metadata": {"name": "app"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    for name in ["a", "b"] {
        let r = api
            .post(
                "/api/v1/namespaces/app/configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let r = api.delete("/api/v1/namespaces/app").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.json()["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.text
    );
    // Within the grace period the content is there, and deleting it is the client's success.
    let r = api.get("/api/v1/namespaces/app/configmaps/a").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.delete("/api/v1/namespaces/app/configmaps/b").await;
    assert_eq!(r.status, 200, "{}", r.text);
    // New content is refused meanwhile, as for any terminating namespace.
    let r = api
        .post(
            "/api/v1/namespaces/app/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
}

/// Every active namespace gets the `default` `ServiceAccount` and the `kube-root-ca.crt`
/// `ConfigMap` with the server's CA, as kube-controller-manager's controllers keep them: a deleted
/// one comes back, an edited CA is restored, and a terminating namespace gets nothing new.
#[tokio::test]
async fn namespaces_get_the_default_service_account_and_the_root_ca() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let r = api
        .post(
            "/api/v1/namespaces",
            json!({"metadata": {"name": "team-a"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let sa = "/api/v1/namespaces/team-a/serviceaccounts/default";
    let cm = "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt";
    let ca = String::from_utf8(server.ca_pem.clone()).unwrap();
    let published = || async {
        let r = api.get(cm).await;
        r.status == 200 && r.json()["data"] == json!({"ca.crt": ca})
    };
    eventually("the namespace's defaults", || async {
        api.get(sa).await.status == 200 && published().await
    })
    .await;
    let got = api.get(cm).await.json();
    assert_eq!(
        got["metadata"]["annotations"]["kubernetes.io/description"],
        "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
    );
    let uid = api.get(sa).await.json()["metadata"]["uid"].clone();
    assert_eq!(api.delete(sa).await.status, 200);
    eventually("a new default ServiceAccount", || async {
        let r = api.get(sa).await;
        r.status == 200 && r.json()["metadata"]["uid"] != uid
    })
    .await;
    let r = api
        .call(
            Method::PATCH,
            cm,
            "application/merge-patch+json",
            Some(json!({"data": {"ca.crt": "tampered"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the CA restored", published).await;
    assert_eq!(api.delete(cm).await.status, 200);
    eventually("the CA ConfigMap back", published).await;

    // A terminating namespace (held by a finalizer) is not given them again.
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let r = api.post("/api/v1/namespaces/team-a/configmaps", held).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(api.delete("/api/v1/namespaces/team-a").await.status, 200);
    eventually("the namespace's content swept", || async {
        api.get(sa).await.status == 404 && api.get(cm).await.status == 404
    })
    .await;
    // A later change in the namespace brings nothing back while it terminates.
    let r = api
        .call(
            Method::PATCH,
            "/api/v1/namespaces/team-a/configmaps/held",
            "application/merge-patch+json",
            Some(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let list = api
        .get("/api/v1/namespaces/team-a/serviceaccounts")
        .await
        .json();
    assert_eq!(list["items"], json!([]));
}
