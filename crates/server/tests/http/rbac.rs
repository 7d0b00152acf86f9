//! RBAC over HTTP: a token user without bindings gets upstream's 403, a `RoleBinding` grants
//! one namespace and not another, a CRD's `ClusterRole` aggregates into `edit`, and writes that
//! would grant permissions the writer lacks are refused with upstream's message.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, Resp, TestServer, crd_json, eventually};

const JANE: &str = "jane-token-0123456789";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

async fn server() -> TestServer {
    TestServer::start_with_tokens(&format!(
        "admin-token-0123456789,admin,admin,\"system:masters\"\n{JANE},jane,jane-uid\n"
    ))
    .await
}

async fn as_jane(s: &TestServer, method: Method, path: &str, body: Option<Value>) -> Resp {
    let mut req = s
        .client(HttpVersion::Http1)
        .request(method, format!("{}{path}", s.url))
        .bearer_auth(JANE)
        .header("Content-Type", "application/json");
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    let r = req.send().await.unwrap();
    Resp {
        status: r.status(),
        version: r.version(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

#[allow(clippy::needless_pass_by_value)]
fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn binding(ns: &str, name: &str, role_kind: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]})
}

#[tokio::test]
async fn token_user_is_denied_then_granted_per_namespace() {
    let s = server().await;
    let api = s.api(HttpVersion::Http1);
    for ns in ["team-a", "team-b"] {
        let r = api
            .post("/api/v1/namespaces", json!({"metadata": {"name": ns}}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    // No bindings: upstream's 403, with the Status details.
    let r = as_jane(
        &s,
        Method::GET,
        "/api/v1/namespaces/team-a/configmaps",
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    let body = r.json();
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-a\""
    );
    assert_eq!(body["details"], json!({"kind": "configmaps"}));
    // Discovery is allowed by the bootstrap system:discovery binding.
    assert_eq!(as_jane(&s, Method::GET, "/apis", None).await.status, 200);

    let r = api
        .post(
            &format!("{RBAC}/namespaces/team-a/roles"),
            role("team-a", "cm", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create"]},
                                       {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create"]}])),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            &format!("{RBAC}/namespaces/team-a/rolebindings"),
            binding("team-a", "jane-cm", "Role", "cm"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Defaulting: the subject and roleRef keep their group; the binding reads back whole.
    assert_eq!(
        r.json()["subjects"][0]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    eventually("jane may list configmaps in team-a", || async {
        as_jane(
            &s,
            Method::GET,
            "/api/v1/namespaces/team-a/configmaps",
            None,
        )
        .await
        .status
            == 200
    })
    .await;
    let r = as_jane(
        &s,
        Method::GET,
        "/api/v1/namespaces/team-b/configmaps",
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json()["message"],
        "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
    );

    // Escalation: jane may create roles in team-a, but not with rules she does not hold.
    let r = as_jane(
        &s,
        Method::POST,
        &format!("{RBAC}/namespaces/team-a/roles"),
        Some(role("team-a", "pods", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                                           {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]))),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let body = r.json();
    assert_eq!(
        body["message"],
        "roles.rbac.authorization.k8s.io \"pods\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}"
    );
    assert_eq!(
        body["details"],
        json!({"name": "pods", "group": "rbac.authorization.k8s.io", "kind": "roles"})
    );
    // Rules she holds are fine.
    let r = as_jane(
        &s,
        Method::POST,
        &format!("{RBAC}/namespaces/team-a/roles"),
        Some(role(
            "team-a",
            "reader",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
        )),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Binding a role she does not hold is refused.
    let r = as_jane(
        &s,
        Method::POST,
        &format!("{RBAC}/namespaces/team-a/rolebindings"),
        Some(binding(
            "team-a",
            "jane-admin",
            "ClusterRole",
            "cluster-admin",
        )),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let msg = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        msg.starts_with("rolebindings.rbac.authorization.k8s.io \"jane-admin\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"),
        "{msg}"
    );
}

#[tokio::test]
async fn crd_rules_aggregate_into_edit() {
    let s = server().await;
    let api = s.api(HttpVersion::Http2);
    api.create_crd(crd_json(
        "stable.example.com",
        "crontabs",
        "CronTab",
        "Namespaced",
    ))
    .await;
    let r = api
        .post("/api/v1/namespaces", json!({"metadata": {"name": "team"}}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            &format!("{RBAC}/clusterroles"),
            json!({"metadata": {"name": "crontabs-edit",
                                "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
                   "rules": [{"apiGroups": ["stable.example.com"], "resources": ["crontabs"],
                              "verbs": ["create", "get", "list"]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            &format!("{RBAC}/namespaces/team/rolebindings"),
            binding("team", "jane-edit", "ClusterRole", "edit"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    eventually("edit aggregates the crontab rules", || async {
        let edit = api.get(&format!("{RBAC}/clusterroles/edit")).await.json();
        edit["rules"].as_array().is_some_and(|rs| {
            rs.iter()
                .any(|r| r["apiGroups"] == json!(["stable.example.com"]))
        })
    })
    .await;
    let crontab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                         "metadata": {"name": "c1"}, "spec": {}});
    eventually("jane may create crontabs in team", || async {
        as_jane(
            &s,
            Method::POST,
            "/apis/stable.example.com/v1/namespaces/team/crontabs",
            Some(crontab.clone()),
        )
        .await
        .status
            == 201
    })
    .await;
    let r = as_jane(
        &s,
        Method::POST,
        "/apis/stable.example.com/v1/namespaces/default/crontabs",
        Some(crontab.clone()),
    )
    .await;
    assert_eq!(r.status, 403);
    // Discovery and OpenAPI come from the kinds' rows.
    let list = api.get(RBAC).await.json();
    let names: Vec<(String, bool)> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["namespaced"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("clusterrolebindings".to_string(), false),
            ("clusterroles".to_string(), false),
            ("rolebindings".to_string(), true),
            ("roles".to_string(), true),
        ]
    );
    let doc = api
        .get("/openapi/v3/apis/rbac.authorization.k8s.io/v1")
        .await
        .json();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["io.k8s.api.rbac.v1.ClusterRole"]["x-kubernetes-group-version-kind"][0],
        json!({"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole"})
    );
    assert!(doc["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"].is_object());
    // The bootstrap roles are served with upstream's label and annotation.
    let view = api.get(&format!("{RBAC}/clusterroles/view")).await.json();
    assert_eq!(
        view["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        view["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    // roleRef is immutable.
    let path = format!("{RBAC}/namespaces/team/rolebindings/jane-edit");
    let mut b = api.get(&path).await.json();
    b["roleRef"]["name"] = json!("view");
    let r = api
        .call(Method::PUT, &path, "application/json", Some(b))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "RoleBinding.rbac.authorization.k8s.io \"jane-edit\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"view\"}: cannot change roleRef"
    );
}

/// A PUT of a missing object creates it for the kinds upstream allows (`AllowCreateOnUpdate`:
/// Leases, Roles, Events, Services, ...) when the user may `create` it, answered 201; other
/// kinds answer 404. Leases still need a resourceVersion to overwrite (no unconditional update).
#[tokio::test]
async fn put_creates_a_missing_lease_or_role_for_users_who_may_create() {
    let s = server().await;
    let api = s.api(HttpVersion::Http1);
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": name, "resourceVersion": "12345"},
               "spec": {"holderIdentity": "me"}})
    };
    let r = api
        .post(
            &format!("{RBAC}/namespaces/default/roles"),
            role(
                "default",
                "lease-updater",
                json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                        "verbs": ["get", "update"]}]),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            &format!("{RBAC}/namespaces/default/rolebindings"),
            binding("default", "jane-leases", "Role", "lease-updater"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let path = format!("{leases}/l1");
    eventually("jane may update leases", || async {
        as_jane(&s, Method::PUT, &path, Some(lease("l1")))
            .await
            .status
            != 404
    })
    .await;
    // Updating is not creating: upstream asks for `create` before creating on update.
    let r = as_jane(&s, Method::PUT, &path, Some(lease("l1"))).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("leases.coordination.k8s.io \"l1\" is forbidden"),
        "{}",
        r.text
    );
    assert_eq!(api.get(&path).await.status, 404);
    // The admin may: created (the stale resourceVersion is dropped), answered 201.
    let r = api.put(&path, lease("l1")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json();
    assert_eq!(created["spec"]["holderIdentity"], "me");
    assert!(created["metadata"]["uid"].is_string(), "{created}");
    assert_ne!(created["metadata"]["resourceVersion"], "12345");
    // An existing Lease is overwritten only at the revision read.
    let mut unconditional = lease("l1");
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let r = api.put(&path, unconditional).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "leases.coordination.k8s.io \"l1\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );
    let mut update = created.clone();
    update["spec"]["holderIdentity"] = json!("you");
    let r = api.put(&path, update).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // A uid in the body is a precondition a missing object fails.
    let mut with_uid = role("default", "r1", json!([]));
    with_uid["metadata"]["uid"] = json!("abc");
    let r = api
        .put(&format!("{RBAC}/namespaces/default/roles/r1"), with_uid)
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on roles.rbac.authorization.k8s.io \"r1\": Precondition failed: UID in precondition: abc, UID in object meta: "
    );
    let r = api
        .put(
            &format!("{RBAC}/namespaces/default/roles/r1"),
            role("default", "r1", json!([])),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // ConfigMaps are not created by a PUT.
    let r = api
        .put(
            "/api/v1/namespaces/default/configmaps/c1",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
}
