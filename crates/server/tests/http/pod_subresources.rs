//! `pods/binding` and `pods/eviction`: what a scheduler and `kubectl drain` send, answered as
//! upstream's `BindingREST` and `EvictionREST` answer them (status codes, reasons, messages,
//! causes and `Retry-After`), with the disruption budget's status as the test writes it.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, HttpVersion, TestServer};

const PODS: &str = "/api/v1/namespaces/default/pods";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

/// Creates a pod labelled `app`; with `running`, it is on node `n1` and its status says
/// Running and (when `ready`) Ready, as a kubelet would have written it.
async fn pod(api: &Api<'_>, name: &str, app: &str, running: bool, ready: bool) {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    if running {
        spec["nodeName"] = json!("n1");
    }
    let created = api
        .post(
            PODS,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "labels": {"app": app}}, "spec": spec}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    if running {
        let status = if ready { "True" } else { "False" };
        let patched = api
            .call(
                Method::PATCH,
                &format!("{PODS}/{name}/status"),
                "application/merge-patch+json",
                Some(json!({"status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": status}]}})),
            )
            .await;
        assert_eq!(patched.status, 200, "{}", patched.text);
    }
}

/// Writes a budget's status as a disruption controller would.
async fn budget_status(api: &Api<'_>, name: &str, status: Value) {
    let patched = api
        .call(
            Method::PATCH,
            &format!("{PDBS}/{name}/status"),
            "application/merge-patch+json",
            Some(json!({"status": status})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
}

fn retry_after(r: &crate::support::Resp) -> Option<String> {
    r.headers
        .get("retry-after")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

#[tokio::test]
async fn a_binding_assigns_an_unassigned_pod_once() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    pod(&api, "web", "web", false, false).await;
    let bind = |target: Value| {
        json!({"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "web", "annotations": {"scheduler": "mine"}}, "target": target})
    };
    let r = api
        .post(
            &format!("{PODS}/web/binding"),
            bind(json!({"kind": "Pod", "name": ""})),
        )
        .await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
    );
    let r = api
        .post(
            &format!("{PODS}/other/binding"),
            bind(json!({"name": "n1"})),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "name in URL does not match name in Binding object"
    );
    let r = api
        .post(
            &format!("{PODS}/web/binding"),
            bind(json!({"kind": "Node", "name": "n1"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(r.json()["code"], 201);
    let got = api.get(&format!("{PODS}/web")).await.json();
    assert_eq!(got["spec"]["nodeName"], "n1");
    assert_eq!(got["metadata"]["annotations"]["scheduler"], "mine");
    let scheduled = &got["status"]["conditions"][0];
    assert_eq!(scheduled["type"], "PodScheduled");
    assert_eq!(scheduled["status"], "True");
    assert!(scheduled["lastTransitionTime"].is_string(), "{got}");
    let r = api
        .post(
            &format!("{PODS}/web/binding"),
            bind(json!({"kind": "Node", "name": "n2"})),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on binding \"web\": pod web is already assigned to node \"n1\""
    );
    let r = api
        .post(
            &format!("{PODS}/missing/binding"),
            json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "missing"},
                   "target": {"name": "n1"}}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.json()["message"], "pods \"missing\" not found");
}

/// The namespace's `bindings` resource (what the Python client's `create_namespaced_binding`
/// posts) binds the pod its body names, as `pods/<name>/binding` does, and discovery lists it.
#[tokio::test]
async fn the_bindings_resource_binds_the_pod_its_body_names() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    pod(&api, "web", "web", false, false).await;
    let bindings = "/api/v1/namespaces/default/bindings";
    let bind = |name: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
               "target": {"kind": "Node", "name": node}})
    };
    let r = api.post(bindings, bind("web", "n1")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(
        api.get(&format!("{PODS}/web")).await.json()["spec"]["nodeName"],
        "n1"
    );
    let r = api.post(bindings, bind("web", "n2")).await;
    assert_eq!(r.status, 409, "{}", r.text);
    let r = api.post(bindings, bind("missing", "n1")).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.json()["message"], "pods \"missing\" not found");
    let r = api.get(bindings).await;
    assert_eq!(r.status, 405, "{}", r.text);

    let core = api.get("/api/v1").await.json();
    let listed: Vec<&Value> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "bindings")
        .collect();
    assert_eq!(
        listed,
        [
            &json!({"name": "bindings", "singularName": "binding", "namespaced": true,
                 "kind": "Binding", "verbs": ["create"]})
        ]
    );
    let groups = api.get("/apis").await.json();
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["name"] != ""),
        "{groups}"
    );
}

#[tokio::test]
async fn an_eviction_honours_the_disruption_budget() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    // A pending pod disrupts nothing: evicted without looking at budgets.
    pod(&api, "pending", "db", false, false).await;
    let r = api
        .post(&format!("{PODS}/pending/eviction"), eviction("pending"))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(api.get(&format!("{PODS}/pending")).await.status, 404);

    pod(&api, "db-0", "db", true, true).await;
    pod(&api, "db-1", "db", true, true).await;
    let created = api
        .post(
            PDBS,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "db"},
                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    // No controller has observed the budget yet.
    let r = api
        .post(&format!("{PODS}/db-0/eviction"), eviction("db-0"))
        .await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(retry_after(&r).as_deref(), Some("10"));
    let body = r.json();
    assert_eq!(body["reason"], "TooManyRequests");
    assert_eq!(
        body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
                "message": "The disruption budget db is still being processed by the server."}])
    );
    // Observed, one disruption allowed: the first eviction takes it, the second is refused.
    budget_status(
        &api,
        "db",
        json!({"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2,
               "desiredHealthy": 1, "expectedPods": 2}),
    )
    .await;
    let r = api
        .post(&format!("{PODS}/db-0/eviction"), eviction("db-0"))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let status = api.get(&format!("{PDBS}/db")).await.json()["status"].clone();
    assert_eq!(status["disruptionsAllowed"], 0, "{status}");
    assert!(status["disruptedPods"]["db-0"].is_string(), "{status}");
    assert_eq!(status["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(status["conditions"][0]["reason"], "InsufficientPods");
    // Scheduled, with a grace period and no kubelet: the pod is terminating, not gone.
    let evicted = api.get(&format!("{PODS}/db-0")).await.json();
    assert!(
        evicted["metadata"]["deletionTimestamp"].is_string(),
        "{evicted}"
    );
    let r = api
        .post(&format!("{PODS}/db-1/eviction"), eviction("db-1"))
        .await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(retry_after(&r), None);
    assert_eq!(
        r.json()["details"]["causes"][0]["message"],
        "The disruption budget db needs 1 healthy pods and has 2 currently"
    );
    // Dry run: answered, nothing written.
    budget_status(&api, "db", json!({"disruptionsAllowed": 1})).await;
    let r = api
        .post(
            &format!("{PODS}/db-1/eviction?dryRun=All"),
            eviction("db-1"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let pod = api.get(&format!("{PODS}/db-1")).await.json();
    assert!(pod["metadata"]["deletionTimestamp"].is_null(), "{pod}");
    let status = api.get(&format!("{PDBS}/db")).await.json()["status"].clone();
    assert_eq!(status["disruptionsAllowed"], 1, "{status}");
    // A zero grace period removes it at once.
    let r = api
        .post(
            &format!("{PODS}/db-1/eviction"),
            json!({"apiVersion": "policy/v1beta1", "kind": "Eviction",
                   "metadata": {"name": "db-1"}, "deleteOptions": {"gracePeriodSeconds": 0}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(api.get(&format!("{PODS}/db-1")).await.status, 404);
}

#[tokio::test]
async fn an_eviction_refuses_a_pod_with_two_budgets_and_unknown_pods() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    pod(&api, "p", "x", true, true).await;
    for name in ["a", "b"] {
        let created = api
            .post(
                PDBS,
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                       "metadata": {"name": name},
                       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}}}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
    }
    let r = api.post(&format!("{PODS}/p/eviction"), eviction("p")).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    // An unready pod is not healthy: while the budget is met, evicting it takes nothing.
    pod(&api, "u", "y", true, false).await;
    let created = api
        .post(
            PDBS,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "c"},
                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "y"}}}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    budget_status(
        &api,
        "c",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1,
               "desiredHealthy": 1, "expectedPods": 2}),
    )
    .await;
    let r = api.post(&format!("{PODS}/u/eviction"), eviction("u")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let status = api.get(&format!("{PDBS}/c")).await.json()["status"].clone();
    assert_eq!(status["disruptionsAllowed"], 0, "{status}");
    assert!(status["disruptedPods"].is_null(), "{status}");
    let r = api
        .post(&format!("{PODS}/nope/eviction"), eviction("nope"))
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = api.post(&format!("{PODS}/p/eviction"), eviction("q")).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "name in URL does not match name in Eviction object"
    );
}

/// Answered subresources go through admission as upstream's do: a validating admission policy on
/// `pods/eviction` and `serviceaccounts/token` sees the request's resource (core `pods`,
/// subresource `eviction`), the body's own kind (`policy/v1` Eviction) and the object's name,
/// and its denial stops the eviction before any pod is deleted.
#[tokio::test]
async fn answered_subresources_are_admitted_with_their_own_kind() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    pod(&api, "protected", "db", false, false).await;
    pod(&api, "free", "db", false, false).await;
    for sa in ["robot", "protected"] {
        let r = api
            .post(
                "/api/v1/namespaces/default/serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "guard"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods/eviction", "serviceaccounts/token"],
            }]},
            "validations": [
                {"expression": "request.subResource != 'eviction' || (request.kind.group == 'policy' && request.kind.version == 'v1' && request.kind.kind == 'Eviction' && request.resource.group == '' && request.resource.version == 'v1' && request.resource.resource == 'pods' && object.kind == 'Eviction')",
                 "message": "eviction attributes"},
                {"expression": "request.subResource != 'token' || (request.kind.group == 'authentication.k8s.io' && request.kind.version == 'v1' && request.kind.kind == 'TokenRequest' && request.resource.resource == 'serviceaccounts' && request.namespace == 'default')",
                 "message": "token attributes"},
                {"expression": "request.name != 'protected'", "message": "protected", "reason": "Forbidden"},
            ],
        },
    });
    let r = api
        .post(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            policy,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "guard-binding"},
        "spec": {"policyName": "guard", "validationActions": ["Deny"]},
    });
    let r = api
        .post(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
            binding,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    crate::support::eventually("the policy is in effect", || async {
        api.post(
            &format!("{PODS}/protected/eviction?dryRun=All"),
            eviction("protected"),
        )
        .await
        .status
            == 403
    })
    .await;

    let r = api
        .post(&format!("{PODS}/protected/eviction"), eviction("protected"))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let body = r.json();
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "pods \"protected\" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard-binding' denied request: protected"
    );
    assert_eq!(api.get(&format!("{PODS}/protected")).await.status, 200);
    // Every attribute check held for the other pod: evicted.
    let r = api
        .post(&format!("{PODS}/free/eviction"), eviction("free"))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(api.get(&format!("{PODS}/free")).await.status, 404);

    let token =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let sa = "/api/v1/namespaces/default/serviceaccounts";
    let r = api
        .post(&format!("{sa}/protected/token"), token.clone())
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = api.post(&format!("{sa}/robot/token"), token).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.json()["status"]["token"].is_string(), "{}", r.text);
}
