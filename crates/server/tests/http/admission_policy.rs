//! `ValidatingAdmissionPolicy` end to end: policies and bindings created through the API, a
//! param `ConfigMap`, and each validation action (`Deny`, `Warn`, `Audit`). Each test first waits
//! until its binding is in effect (a dry-run create is refused or warned), since policies reach
//! the dispatcher through an informer.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, HttpVersion, TestServer, eventually};

const VAP: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const VAPB: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn cm(name: &str, data: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// A policy on `ConfigMap` creates and updates: no key named `forbidden`, and no more keys than
/// the param's `max`.
fn policy(name: &str, extra: &Value) -> Value {
    let mut p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }]},
            "matchConditions": [{"name": "not-params", "expression": "object.metadata.name != 'limits'"}],
            "variables": [{"name": "keys", "expression": "has(object.data) ? object.data.size() : 0"}],
            "validations": [
                {"expression": "!has(object.data) || !('forbidden' in object.data)"},
                {
                    "expression": "variables.keys <= int(params.data.max)",
                    "messageExpression": "'too many keys: ' + string(variables.keys) + ' > ' + params.data.max",
                    "reason": "Forbidden",
                },
            ],
        },
    });
    if let (Some(spec), Some(e)) = (p["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            spec.insert(k.clone(), v.clone());
        }
    }
    p
}

fn binding(name: &str, policy: &str, actions: &[&str], param: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": policy,
            "validationActions": actions,
            "paramRef": {"name": param, "namespace": "default", "parameterNotFoundAction": "Deny"},
        },
    })
}

async fn create(api: &Api<'_>, path: &str, body: Value) {
    let r = api.post(path, body).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// Waits until a dry-run create of a `ConfigMap` with a `forbidden` key is no longer a plain
/// success without warnings.
async fn until_in_effect(api: &Api<'_>) {
    eventually("the policy binding is in effect", || async {
        let r = api
            .post(
                &format!("{CMS}?dryRun=All"),
                cm("probe", &json!({"forbidden": "x"})),
            )
            .await;
        r.status != 201 || r.headers.get("warning").is_some()
    })
    .await;
}

#[tokio::test]
async fn deny_with_a_param_config_map() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    create(&api, CMS, cm("limits", &json!({"max": "2"}))).await;
    create(&api, VAP, policy("max-keys", &json!({}))).await;
    create(
        &api,
        VAPB,
        binding("max-keys-binding", "max-keys", &["Deny"], "limits"),
    )
    .await;
    until_in_effect(&api).await;

    let r = api.post(CMS, cm("ok", &json!({"a": "1", "b": "2"}))).await;
    assert_eq!(r.status, 201, "{}", r.text);

    // The default reason is Invalid (422); the message names the failed expression.
    let r = api.post(CMS, cm("bad", &json!({"forbidden": "1"}))).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let expected = "ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: failed expression: !has(object.data) || !('forbidden' in object.data)";
    let s = r.json();
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(s["code"], 422);
    assert_eq!(
        s["message"],
        format!("configmaps \"bad\" is forbidden: {expected}")
    );
    assert_eq!(s["details"]["name"], "bad");
    assert_eq!(s["details"]["kind"], "configmaps");
    assert_eq!(s["details"]["causes"], json!([{"message": expected}]));

    // A validation's reason gives the code; messageExpression reads params and variables.
    let r = api
        .post(CMS, cm("big", &json!({"a": "1", "b": "2", "c": "3"})))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.json()["reason"], "Forbidden");
    assert_eq!(
        r.json()["message"],
        "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: too many keys: 3 > 2"
    );

    // Updates are validated too, against the current param.
    let r = api
        .call(
            Method::PATCH,
            &format!("{CMS}/limits"),
            "application/merge-patch+json",
            Some(json!({"data": {"max": "3"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api
        .post(CMS, cm("big", &json!({"a": "1", "b": "2", "c": "3"})))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);

    // Without the param, `parameterNotFoundAction: Deny` refuses every matched request.
    let r = api.delete(&format!("{CMS}/limits")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.post(CMS, cm("after", &json!({"a": "1"}))).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "configmaps \"after\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );

    // Other kinds are not matched.
    let r = api
        .post(
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"forbidden": "x"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);

    // The printer columns are upstream's.
    let r = api
        .get_as(
            VAP,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .await;
    let t = r.json();
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Validations", "ParamKind", "Age"]);
    assert_eq!(t["rows"][0]["cells"][1], 2);
    assert_eq!(t["rows"][0]["cells"][2], "v1/ConfigMap");
}

const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n    resources:\n      - group: \"\"\n        resources: [\"configmaps\"]\n";

#[tokio::test]
async fn warn_and_audit_actions() {
    let dir = tempfile::tempdir().unwrap();
    let audit_policy = dir.path().join("policy.yaml");
    std::fs::write(&audit_policy, AUDIT_POLICY).unwrap();
    let log = dir.path().join("audit.log");
    let log_path = log.clone();
    let server = TestServer::start_with(move |c| {
        c.audit = crd_server::audit::AuditOptions {
            policy_file: Some(audit_policy),
            log: Some(crd_server::audit::log::LogOptions {
                path: log_path,
                ..Default::default()
            }),
        };
    })
    .await;
    let api = server.api(HttpVersion::Http2);
    create(&api, CMS, cm("limits", &json!({"max": "5"}))).await;
    create(
        &api,
        VAP,
        policy(
            "soft",
            &json!({"auditAnnotations": [{"key": "keys", "valueExpression": "string(variables.keys)"}]}),
        ),
    )
    .await;
    create(
        &api,
        VAPB,
        binding("soft-binding", "soft", &["Warn", "Audit"], "limits"),
    )
    .await;
    until_in_effect(&api).await;

    let r = api
        .post(CMS, cm("warned", &json!({"forbidden": "1"})))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let warnings: Vec<&str> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap_or(""))
        .collect();
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'soft' with binding 'soft-binding': failed expression: !has(object.data) || !('forbidden' in object.data)\""
        ]
    );
    let id = r.headers["audit-id"].to_str().unwrap().to_string();
    let event = || -> Option<Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["auditID"] == id.as_str() && e["stage"] == "ResponseComplete")
    };
    eventually("the create's audit event is written", || async {
        event().is_some()
    })
    .await;
    let annotations = event().unwrap()["annotations"].clone();
    let failure: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("{annotations}")),
    )
    .unwrap();
    assert_eq!(
        failure,
        json!([{
            "message": "failed expression: !has(object.data) || !('forbidden' in object.data)",
            "policy": "soft",
            "binding": "soft-binding",
            "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"],
        }])
    );
    assert_eq!(annotations["soft/keys"], "1");
}

#[tokio::test]
async fn invalid_policies_and_bindings_are_refused() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let bad = policy(
        "bad",
        &json!({"validations": [{"expression": "object.data.size( > 1"}]}),
    );
    let r = api.post(VAP, bad).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid");
    let cause = &s["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.validations[0].expression");
    let message = cause["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Invalid value: \"object.data.size( > 1\": compilation failed: ERROR: <input>:1:"
        ),
        "{message}"
    );
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .starts_with("ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad\" is invalid: spec.validations[0].expression: Invalid value"),
        "{s}"
    );

    let r = api
        .post(VAPB, binding("b", "p", &["Deny", "Warn"], "limits"))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"
    );

    // Defaults are upstream's.
    let r = api
        .post(VAP, policy("good", &json!({"matchConditions": []})))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let p = r.json();
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    assert_eq!(p["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(
        p["spec"]["matchConstraints"]["namespaceSelector"],
        json!({})
    );
    assert_eq!(p["spec"]["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(
        p["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
}

#[tokio::test]
async fn equivalent_match_policy_sees_the_matched_version() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let group = "vap.example.com";
    let mut crd = crate::support::crd_json(group, "gadgets", "Gadget", "Namespaced");
    let v1beta1 = json!({"name": "v1beta1", "served": true, "storage": false,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    crd["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .push(v1beta1);
    api.create_crd(crd).await;
    let policy = |name: &str, match_policy: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "matchConstraints": {"matchPolicy": match_policy, "resourceRules": [{
                    "operations": ["CREATE"], "apiGroups": [group], "apiVersions": ["v1beta1"],
                    "resources": ["gadgets"],
                }]},
                "validations": [{
                    "expression": "object.apiVersion == 'vap.example.com/v1beta1' && request.kind.version == 'v1beta1' && object.spec.size < 5",
                    "message": format!("{name}: too big"),
                }],
            },
        })
    };
    let bind = |name: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        })
    };
    create(&api, VAP, policy("equivalent", "Equivalent")).await;
    create(&api, VAP, policy("exact", "Exact")).await;
    create(&api, VAPB, bind("equivalent")).await;
    create(&api, VAPB, bind("exact")).await;
    let base = format!("/apis/{group}/v1/namespaces/default/gadgets");
    let gadget = |name: &str, size: i64| {
        json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
               "metadata": {"name": name}, "spec": {"size": size}})
    };
    eventually("the policy denies", || async {
        api.post(&format!("{base}?dryRun=All"), gadget("probe", 10))
            .await
            .status
            == 422
    })
    .await;
    // A v1 request matches the v1beta1 rule through Equivalent only, and the policy sees the
    // object and the request at v1beta1.
    let r = api.post(&base, gadget("big", 10)).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        format!(
            "gadgets.{group} \"big\" is forbidden: ValidatingAdmissionPolicy 'equivalent' with binding 'equivalent' denied request: equivalent: too big"
        )
    );
    let r = api.post(&base, gadget("small", 1)).await;
    assert_eq!(r.status, 201, "{}", r.text);
}
