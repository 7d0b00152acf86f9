//! Admission webhooks end to end: a small HTTPS webhook server in the test
//! ([`HttpsServer`]) answering `AdmissionReview`s by path, and webhook configurations
//! created through the API. Each test first waits until its configuration is in effect (the
//! webhook has seen a dry-run probe), since configurations reach the dispatcher through an
//! informer.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, HttpVersion, HttpsServer, TestServer, crd_json, eventually};

const VWC: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MWC: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// The in-test webhook: answers by path (see [`answer`]) and records every review it gets.
struct Hook {
    server: HttpsServer,
    ca_bundle: String,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Hook {
    async fn start() -> Hook {
        let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let record = seen.clone();
        let server = HttpsServer::start(Arc::new(move |path: String, body: Bytes| {
            let record = record.clone();
            Box::pin(async move {
                let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                record
                    .lock()
                    .expect("lock")
                    .push((path.clone(), review.clone()));
                answer(&path, &review).await
            })
        }))
        .await;
        Hook {
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(&server.ca_pem),
            server,
            seen,
        }
    }

    /// The `clientConfig` of one path.
    fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("{}{path}", self.server.base), "caBundle": self.ca_bundle})
    }

    /// Reviews received on `path` for objects (or old objects) named `name`.
    fn reviews(&self, path: &str, name: &str) -> Vec<Value> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, r)| p == path && r["request"]["name"] == name)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

/// How the webhook answers, by path.
async fn answer(path: &str, review: &Value) -> (u16, String) {
    let uid = review["request"]["uid"].clone();
    let resp = |extra: Value| {
        let mut r = json!({"uid": uid, "allowed": true});
        for (k, v) in extra.as_object().into_iter().flatten() {
            r[k] = v.clone();
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r})
            .to_string()
    };
    let json_patch = |ops: &Value| {
        json!({"patchType": "JSONPatch",
               "patch": base64::engine::general_purpose::STANDARD.encode(ops.to_string())})
    };
    let name = review["request"]["name"].as_str().unwrap_or("");
    match path {
        "/deny" if name.starts_with("bad") => (
            200,
            resp(json!({"allowed": false,
                        "status": {"code": 403, "reason": "Forbidden", "message": format!("{name} is not welcome")}})),
        ),
        "/deny-plain" if name.starts_with("bad") => (200, resp(json!({"allowed": false}))),
        "/warn" => (
            200,
            resp(json!({"warnings": ["careful with that", "second \"quoted\""]})),
        ),
        "/label" if review["request"]["operation"] != "DELETE" => {
            let has_labels = review["request"]["object"]["metadata"]["labels"].is_object();
            let ops = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
            };
            (200, resp(json_patch(&ops)))
        }
        "/bad-patch-type" => (
            200,
            resp(json!({"patchType": "MergePatch", "patch": "e30="})),
        ),
        "/wrong-uid" => (
            200,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "response": {"uid": "nope", "allowed": true}})
            .to_string(),
        ),
        "/slow" => {
            std::future::pending::<()>().await;
            (200, resp(json!({})))
        }
        _ => (200, resp(json!({}))),
    }
}

fn webhook(name: &str, cc: Value, resources: &[&str], extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    h["clientConfig"] = cc;
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            h[k] = v;
        }
    }
    h
}

async fn configure(api: &Api<'_>, collection: &str, kind: &str, name: &str, hooks: Vec<Value>) {
    let r = api
        .post(
            collection,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                   "metadata": {"name": name}, "webhooks": hooks}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// Waits until `hook` has seen a review on `path` for a dry-run create of `obj` at `collection`.
async fn until_called(api: &Api<'_>, hook: &Hook, path: &str, collection: &str, obj: Value) {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    eventually(&format!("{path} is called"), || async {
        api.post(&format!("{collection}?dryRun=All"), obj.clone())
            .await;
        !hook.reviews(path, &name).is_empty()
    })
    .await;
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}})
}

#[tokio::test]
async fn mutating_and_validating_webhooks_on_custom_objects() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    let hook = Hook::start().await;
    api.create_crd(crd_json(
        "hooks.example.com",
        "widgets",
        "Widget",
        "Namespaced",
    ))
    .await;
    let widgets = "/apis/hooks.example.com/v1/namespaces/default/widgets";
    let widget = |name: &str| json!({"apiVersion": "hooks.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1}});
    configure(
        &api,
        MWC,
        "MutatingWebhookConfiguration",
        "label",
        vec![webhook(
            "label.example.com",
            hook.client_config("/label"),
            &["widgets"],
            json!({}),
        )],
    )
    .await;
    configure(
        &api,
        VWC,
        "ValidatingWebhookConfiguration",
        "deny",
        vec![webhook(
            "deny.example.com",
            hook.client_config("/deny"),
            &["widgets"],
            json!({}),
        )],
    )
    .await;
    until_called(&api, &hook, "/deny", widgets, widget("probe")).await;

    let r = api.post(widgets, widget("w1")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["metadata"]["labels"], json!({"mutated": "yes"}));
    let stored = api.get(&format!("{widgets}/w1")).await.json();
    assert_eq!(stored["metadata"]["labels"]["mutated"], "yes");

    // The review as upstream builds it.
    let review = &hook.reviews("/label", "w1")[0];
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    let req = &review["request"];
    assert_eq!(
        req["kind"],
        json!({"group": "hooks.example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "hooks.example.com", "version": "v1", "resource": "widgets"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert_eq!(req["userInfo"]["username"], "admin");
    assert_eq!(req["object"]["spec"], json!({"size": 1}));
    // The validating webhook sees the mutated object.
    let validated = &hook.reviews("/deny", "w1")[0]["request"]["object"];
    assert_eq!(validated["metadata"]["labels"]["mutated"], "yes");

    let r = api.post(widgets, widget("bad-1")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let s = r.json();
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(
        s["message"],
        "admission webhook \"deny.example.com\" denied the request: bad-1 is not welcome"
    );
    assert_eq!(api.get(&format!("{widgets}/bad-1")).await.status, 404);
    // Every call is counted and timed under upstream's metric names.
    let metrics = api.get("/metrics").await.text;
    let line = |name: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with(name)
                    && l.contains("name=\"deny.example.com\"")
                    && l.contains("rejected=\"true\"")
            })
            .map(String::from)
    };
    let total = line("apiserver_admission_webhook_request_total{").expect("a request_total sample");
    assert!(
        total.contains("type=\"validating\"") && total.contains("operation=\"CREATE\""),
        "{total}"
    );
    assert!(
        line("apiserver_admission_webhook_admission_duration_seconds_count{").is_some(),
        "{metrics}"
    );

    // UPDATE carries the old object.
    let mut w = stored.clone();
    w["spec"]["size"] = json!(2);
    let r = api
        .call(
            Method::PUT,
            &format!("{widgets}/w1"),
            "application/json",
            Some(w),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let update = hook
        .reviews("/deny", "w1")
        .into_iter()
        .find(|r| r["request"]["operation"] == "UPDATE")
        .expect("an UPDATE review");
    assert_eq!(update["request"]["oldObject"]["spec"]["size"], 1);
    assert_eq!(update["request"]["object"]["spec"]["size"], 2);
    assert_eq!(update["request"]["options"]["kind"], "UpdateOptions");

    // DELETE: no object, the stored one as oldObject.
    let r = api.delete(&format!("{widgets}/w1")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let delete = hook
        .reviews("/deny", "w1")
        .into_iter()
        .find(|r| r["request"]["operation"] == "DELETE")
        .expect("a DELETE review");
    assert_eq!(delete["request"]["object"], Value::Null);
    assert_eq!(delete["request"]["oldObject"]["metadata"]["name"], "w1");
    assert_eq!(delete["request"]["options"]["kind"], "DeleteOptions");
}

#[tokio::test]
async fn config_maps_warnings_plain_denials_and_dry_run() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let hook = Hook::start().await;
    configure(
        &api,
        VWC,
        "ValidatingWebhookConfiguration",
        "cm",
        vec![
            webhook(
                "warn.example.com",
                hook.client_config("/warn"),
                &["configmaps"],
                json!({}),
            ),
            webhook(
                "plain.example.com",
                hook.client_config("/deny-plain"),
                &["configmaps"],
                json!({}),
            ),
        ],
    )
    .await;
    until_called(&api, &hook, "/warn", CMS, cm("probe")).await;
    let probe = &hook.reviews("/warn", "probe")[0]["request"];
    assert_eq!(probe["dryRun"], true);
    assert_eq!(probe["options"]["dryRun"], json!(["All"]));

    let r = api.post(CMS, cm("c1")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let warnings = r.warnings();
    assert_eq!(
        warnings,
        vec![
            "299 - \"careful with that\"",
            "299 - \"second \\\"quoted\\\"\""
        ]
    );

    let r = api.post(CMS, cm("bad-c")).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "admission webhook \"plain.example.com\" denied the request without explanation"
    );
    // Warnings of the webhooks that ran are sent with the denial too.
    assert!(
        r.headers
            .get_all("warning")
            .iter()
            .any(|v| v == "299 - \"careful with that\""),
        "{:?}",
        r.headers
    );
}

#[tokio::test]
async fn failure_policies_timeouts_and_bad_answers() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    let hook = Hook::start().await;
    let unreachable = json!({"url": "https://127.0.0.1:1/x", "caBundle": hook.ca_bundle});
    configure(
        &api,
        VWC,
        "ValidatingWebhookConfiguration",
        "failures",
        vec![
            webhook(
                "seen.example.com",
                hook.client_config("/allow"),
                &["configmaps"],
                json!({}),
            ),
            webhook(
                "ignore.example.com",
                unreachable.clone(),
                &["configmaps"],
                json!({"failurePolicy": "Ignore"}),
            ),
            webhook(
                "fail.example.com",
                unreachable,
                &["configmaps"],
                json!({"objectSelector": {"matchLabels": {"fail": "yes"}}}),
            ),
            webhook(
                "slow.example.com",
                hook.client_config("/slow"),
                &["configmaps"],
                json!({"timeoutSeconds": 1, "objectSelector": {"matchLabels": {"slow": "yes"}}}),
            ),
            webhook(
                "uid.example.com",
                hook.client_config("/wrong-uid"),
                &["configmaps"],
                json!({"objectSelector": {"matchLabels": {"uid": "yes"}}}),
            ),
        ],
    )
    .await;
    until_called(&api, &hook, "/allow", CMS, cm("probe")).await;

    // Ignore: the unreachable webhook is skipped.
    let r = api.post(CMS, cm("ok")).await;
    assert_eq!(r.status, 201, "{}", r.text);

    let labelled = |name: &str, key: &str| {
        let mut c = cm(name);
        c["metadata"]["labels"] = json!({key: "yes"});
        c
    };
    let r = api.post(CMS, labelled("f", "fail")).await;
    assert_eq!(r.status, 500, "{}", r.text);
    let s = r.json();
    assert_eq!(s["reason"], "InternalError");
    let msg = s["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with(
            "Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://127.0.0.1:1/x?timeout=10s\": "
        ),
        "{msg}"
    );

    let r = api.post(CMS, labelled("s", "slow")).await;
    assert_eq!(r.status, 500, "{}", r.text);
    let url = format!("{}/slow?timeout=1s", hook.server.base);
    assert_eq!(
        r.json()["message"],
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{url}\": context deadline exceeded"
        )
    );

    let r = api.post(CMS, labelled("u", "uid")).await;
    assert_eq!(r.status, 500, "{}", r.text);
    let msg = r.json()["message"].as_str().unwrap_or("").to_string();
    assert!(
        msg.starts_with("Internal error occurred: failed calling webhook \"uid.example.com\": received invalid webhook response: expected response.uid="),
        "{msg}"
    );
}

#[tokio::test]
async fn selectors_and_match_conditions() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    let hook = Hook::start().await;
    for (ns, labels) in [
        ("prod", json!({"env": "prod"})),
        ("dev", json!({"env": "dev"})),
    ] {
        let r = api
            .post(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    configure(
        &api,
        VWC,
        "ValidatingWebhookConfiguration",
        "selective",
        vec![
            webhook("ns.example.com", hook.client_config("/deny"), &["configmaps"],
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})),
            webhook("obj.example.com", hook.client_config("/deny-plain"), &["configmaps"],
                json!({"objectSelector": {"matchExpressions": [{"key": "guarded", "operator": "Exists"}]}})),
            webhook("cond.example.com", hook.client_config("/deny"), &["secrets"],
                json!({"matchConditions": [
                    {"name": "only-bad-x", "expression": "object.metadata.name.startsWith('bad-x')"},
                    {"name": "not-admins-dry", "expression": "request.userInfo.username == 'admin'"},
                    {"name": "authorized", "expression": "authorizer.requestResource.check('create').allowed() && !authorizer.serviceAccount('dev', 'nobody').group('').resource('secrets').check('create').allowed()"}]})),
            webhook("err.example.com", hook.client_config("/deny"), &["serviceaccounts"],
                json!({"matchConditions": [
                    {"name": "labelled", "expression": "object.metadata.labels.team == 'a'"}]})),
        ],
    )
    .await;
    until_called(
        &api,
        &hook,
        "/deny",
        "/api/v1/namespaces/prod/configmaps",
        cm("probe"),
    )
    .await;

    // namespaceSelector: only objects in namespaces labelled env=prod.
    let r = api
        .post("/api/v1/namespaces/dev/configmaps", cm("bad-dev"))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post("/api/v1/namespaces/prod/configmaps", cm("bad-prod"))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);

    // objectSelector: only objects with the label.
    let mut guarded = cm("bad-guarded");
    guarded["metadata"]["labels"] = json!({"guarded": "true"});
    let r = api.post("/api/v1/namespaces/dev/configmaps", guarded).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(hook.reviews("/deny-plain", "bad-dev").is_empty());

    // matchConditions: the webhook is not even called when one is false.
    let secret =
        |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    let r = api
        .post("/api/v1/namespaces/dev/secrets", secret("bad-y"))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(hook.reviews("/deny", "bad-y").is_empty());
    let r = api
        .post("/api/v1/namespaces/dev/secrets", secret("bad-x1"))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    // The `authorizer` condition asked the server's authorizer (the admin may create secrets, a
    // service account without bindings may not), so the webhook was called.
    assert!(!hook.reviews("/deny", "bad-x1").is_empty());

    // A condition that fails to evaluate fails closed with the CEL filter's text.
    let r = api
        .post(
            "/api/v1/namespaces/dev/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "serviceaccounts \"robot\" is forbidden: expression 'object.metadata.labels.team == 'a'' resulted in error: no such key: labels",
    );
}

/// Gadgets are audited at level `Request`, so the webhooks' patch annotations are logged.
const GADGET_AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Request\n    resources:\n      - group: sub.example.com\n        resources: [\"gadgets\"]\n";

/// Also: the audit annotations upstream's dispatchers leave, keyed by round and index: each
/// mutating call's `mutation.`, an applied patch's `patch.`, and a validating webhook that failed
/// open its `failed-open.validating.`.
#[tokio::test]
async fn reinvocation_and_status_rules() {
    let (server, log) = TestServer::start_audited(GADGET_AUDIT_POLICY).await;
    let api = server.api(HttpVersion::Http2);
    let hook = Hook::start().await;
    let mut crd = crd_json("sub.example.com", "gadgets", "Gadget", "Namespaced");
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    api.create_crd(crd).await;
    let gadgets = "/apis/sub.example.com/v1/namespaces/default/gadgets";
    configure(
        &api,
        MWC,
        "MutatingWebhookConfiguration",
        "mutators",
        vec![
            // Called first, allowed without a patch, reinvoked after the second one patches.
            webhook(
                "first.example.com",
                hook.client_config("/allow"),
                &["gadgets"],
                json!({"reinvocationPolicy": "IfNeeded"}),
            ),
            webhook(
                "second.example.com",
                hook.client_config("/label"),
                &["gadgets"],
                json!({}),
            ),
        ],
    )
    .await;
    let mut unreachable = hook.client_config("/x");
    unreachable["url"] = json!("https://127.0.0.1:1/x");
    configure(
        &api,
        VWC,
        "ValidatingWebhookConfiguration",
        "status",
        vec![
            webhook(
                "status.example.com",
                hook.client_config("/deny"),
                &["*/status"],
                json!({}),
            ),
            webhook(
                "gone.example.com",
                unreachable,
                &["gadgets"],
                json!({"failurePolicy": "Ignore"}),
            ),
        ],
    )
    .await;
    let gadget = |name: &str| json!({"apiVersion": "sub.example.com/v1", "kind": "Gadget", "metadata": {"name": name}});
    until_called(&api, &hook, "/label", gadgets, gadget("probe")).await;

    let r = api.post(gadgets, gadget("bad-g")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let first = hook.reviews("/allow", "bad-g");
    assert_eq!(
        first.len(),
        2,
        "IfNeeded reinvokes once after a later patch"
    );
    assert_eq!(
        first[1]["request"]["object"]["metadata"]["labels"]["mutated"],
        "yes"
    );
    assert_eq!(hook.reviews("/label", "bad-g").len(), 1);
    let id = r.headers["audit-id"].to_str().unwrap();
    let annotations = log.completed(id).await["annotations"].clone();
    // Values in Go's field order.
    let mutation = |webhook: &str, mutated: bool| {
        format!(r#"{{"configuration":"mutators","webhook":"{webhook}","mutated":{mutated}}}"#)
    };
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"],
        mutation("first.example.com", false),
    );
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_1"],
        mutation("second.example.com", true),
    );
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_1_index_0"],
        mutation("first.example.com", false),
    );
    assert_eq!(
        annotations["patch.webhook.admission.k8s.io/round_0_index_1"],
        r#"{"configuration":"mutators","webhook":"second.example.com","patch":[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}],"patchType":"JSONPatch"}"#,
    );
    assert_eq!(
        annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"],
        "gone.example.com"
    );
    // The `*/status` rule did not match the main resource; it matches /status.
    assert!(hook.reviews("/deny", "bad-g").is_empty());
    let mut obj = r.json();
    obj["status"] = json!({"phase": "x"});
    let r = api
        .call(
            Method::PUT,
            &format!("{gadgets}/bad-g/status"),
            "application/json",
            Some(obj),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let review = &hook.reviews("/deny", "bad-g")[0]["request"];
    assert_eq!(review["subResource"], "status");
    assert_eq!(review["requestSubResource"], "status");
    assert_eq!(review["operation"], "UPDATE");
}

#[tokio::test]
async fn configurations_are_validated_and_defaulted() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let cc = json!({"url": "https://127.0.0.1:9443/x"});
    let r = api
        .post(
            VWC,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                   "metadata": {"name": "bad"},
                   "webhooks": [webhook("short", cc.clone(), &["pods"], json!({"sideEffects": "Unknown", "timeoutSeconds": 40}))]}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: [webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots, webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\", webhooks[0].timeoutSeconds: Invalid value: 40: the timeout value must be between 1 and 30 seconds]"
    );
    let r = api
        .post(
            MWC,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                   "metadata": {"name": "good"}, "webhooks": [webhook("a.b.c", cc, &["pods"], json!({}))]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let h = &r.json()["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["rules"][0]["scope"], "*");
    assert_eq!(h["namespaceSelector"], json!({}));
}

#[tokio::test]
async fn equivalent_match_policy_converts_to_the_registered_version() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    let hook = Hook::start().await;
    let mut crd = crd_json("multi.example.com", "things", "Thing", "Namespaced");
    let schema = crd["spec"]["versions"][0]["schema"].clone();
    crd["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true, "schema": schema},
        {"name": "v2", "served": true, "storage": false, "schema": schema},
    ]);
    api.create_crd(crd).await;
    let rule = |path: &str, name: &str, policy: &str| {
        let mut h = webhook(
            name,
            hook.client_config(path),
            &["things"],
            json!({"matchPolicy": policy}),
        );
        h["rules"][0]["apiGroups"] = json!(["multi.example.com"]);
        h["rules"][0]["apiVersions"] = json!(["v2"]);
        h
    };
    configure(
        &api,
        MWC,
        "MutatingWebhookConfiguration",
        "versions",
        vec![
            rule("/label", "equivalent.example.com", "Equivalent"),
            rule("/allow", "exact.example.com", "Exact"),
        ],
    )
    .await;
    let things = "/apis/multi.example.com/v1/namespaces/default/things";
    let thing = |name: &str| json!({"apiVersion": "multi.example.com/v1", "kind": "Thing", "metadata": {"name": name}});
    until_called(&api, &hook, "/label", things, thing("probe")).await;

    let r = api.post(things, thing("t1")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let body = r.json();
    assert_eq!(body["apiVersion"], "multi.example.com/v1");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes");
    let req = &hook.reviews("/label", "t1")[0]["request"];
    assert_eq!(req["kind"]["version"], "v2");
    assert_eq!(req["resource"]["version"], "v2");
    assert_eq!(req["requestKind"]["version"], "v1");
    assert_eq!(req["requestResource"]["version"], "v1");
    assert_eq!(req["object"]["apiVersion"], "multi.example.com/v2");
    // Exact: a webhook registered for v2 only is not called for a v1 request.
    assert!(hook.reviews("/allow", "t1").is_empty());
}

/// Mutating admission policies run before mutating webhooks, and a webhook's patch reinvokes
/// an `IfNeeded` policy, whose change in turn reinvokes the `IfNeeded` webhook (one second
/// pass for both, as upstream's reinvocation handler runs the chain).
#[tokio::test]
async fn mutating_policies_run_before_webhooks_and_reinvoke() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let hook = Hook::start().await;
    configure(
        &api,
        MWC,
        "MutatingWebhookConfiguration",
        "labeller",
        vec![webhook(
            "label.example.com",
            hook.client_config("/label"),
            &["configmaps"],
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    let map = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies";
    let r = api
        .post(
            map,
            json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
                   "metadata": {"name": "saw"}, "spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                    "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                "reinvocationPolicy": "IfNeeded",
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{annotations: {'saw-mutated': has(object.metadata.labels) && 'mutated' in object.metadata.labels ? 'yes' : 'no'}}}"}}]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = api
        .post(
            "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings",
            json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
                   "metadata": {"name": "saw"}, "spec": {"policyName": "saw"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    eventually("the policy and the webhook both mutate", || async {
        let r = api.post(&format!("{CMS}?dryRun=All"), cm("probe")).await;
        let o = r.json();
        o["metadata"]["annotations"]["saw-mutated"].is_string()
            && o["metadata"]["labels"]["mutated"] == "yes"
    })
    .await;

    let r = api.post(CMS, cm("ordered")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let reviews = hook.reviews("/label", "ordered");
    // The webhook saw the policy's first answer: the policy ran first.
    assert_eq!(
        reviews[0]["request"]["object"]["metadata"]["annotations"]["saw-mutated"],
        "no"
    );
    // The webhook's label reinvoked the policy, which changed the object again, so the
    // webhook was reinvoked too; no third pass.
    assert_eq!(reviews.len(), 2);
    assert_eq!(
        reviews[1]["request"]["object"]["metadata"]["annotations"]["saw-mutated"],
        "yes"
    );
    assert_eq!(r.json()["metadata"]["annotations"]["saw-mutated"], "yes");
}
