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
    // Params are read through an informer, as upstream's are: the change applies shortly after.
    eventually("the new param applies", || async {
        let r = api
            .post(
                &format!("{CMS}?dryRun=All"),
                cm("big", &json!({"a": "1", "b": "2", "c": "3"})),
            )
            .await;
        r.status == 201
    })
    .await;
    let r = api
        .post(CMS, cm("big", &json!({"a": "1", "b": "2", "c": "3"})))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);

    // Without the param, `parameterNotFoundAction: Deny` refuses every matched request.
    let r = api.delete(&format!("{CMS}/limits")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the deleted param is missed", || async {
        let r = api
            .post(
                &format!("{CMS}?dryRun=All"),
                cm("after", &json!({"a": "1"})),
            )
            .await;
        r.status == 422
    })
    .await;
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
    let (server, log) = TestServer::start_audited(AUDIT_POLICY).await;
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
    let warnings = r.warnings();
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'soft' with binding 'soft-binding': failed expression: !has(object.data) || !('forbidden' in object.data)\""
        ]
    );
    let id = r.headers["audit-id"].to_str().unwrap();
    let annotations = log.completed(id).await["annotations"].clone();
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

/// The series of `apiserver_validating_admission_policy_check_total` for a policy, as
/// `/metrics` prints them (labels sorted by name), with their values.
async fn policy_checks(api: &Api<'_>, policy: &str) -> Vec<String> {
    let r = api.get("/metrics").await;
    assert_eq!(r.status, 200);
    r.text
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_validating_admission_policy_check_total{")
                && l.contains(&format!("policy=\"{policy}\""))
        })
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn policy_checks_are_counted_with_upstream_labels() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    create(&api, CMS, cm("limits", &json!({"max": "2"}))).await;
    create(&api, VAP, policy("counted", &json!({}))).await;
    create(
        &api,
        VAPB,
        binding("counted-deny", "counted", &["Deny"], "limits"),
    )
    .await;
    create(
        &api,
        VAPB,
        binding("counted-warn", "counted", &["Warn", "Audit"], "limits"),
    )
    .await;
    // Both bindings in effect: the probe is denied and warned.
    eventually("both bindings are in effect", || async {
        let r = api
            .post(
                &format!("{CMS}?dryRun=All"),
                cm("probe", &json!({"forbidden": "x"})),
            )
            .await;
        r.status == 422 && r.headers.get("warning").is_some()
    })
    .await;
    let before = policy_checks(&api, "counted").await;
    let count = |lines: &[String], binding: &str, action: &str| -> u64 {
        lines
            .iter()
            .find(|l| {
                l.contains(&format!("policy_binding=\"{binding}\""))
                    && l.contains(&format!("enforcement_action=\"{action}\""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    let r = api.post(CMS, cm("bad", &json!({"forbidden": "1"}))).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let after = policy_checks(&api, "counted").await;
    // One failed validation: a deny on one binding, a warn and an audit on the other.
    for (binding, action) in [
        ("counted-deny", "deny"),
        ("counted-warn", "warn"),
        ("counted-warn", "audit"),
    ] {
        assert_eq!(
            count(&after, binding, action),
            count(&before, binding, action) + 1,
            "{binding} {action}: {after:?}"
        );
    }
    // A plain denial is `invalid_error`, as upstream's ErrorType reports an EvalDeny.
    assert!(
        after.iter().any(|l| l.starts_with(
            "apiserver_validating_admission_policy_check_total{enforcement_action=\"deny\",error_type=\"invalid_error\",policy=\"counted\",policy_binding=\"counted-deny\"}"
        )),
        "{after:?}"
    );
    // Passing requests are not counted.
    let r = api.post(CMS, cm("fine", &json!({"a": "1"}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(policy_checks(&api, "counted").await, after);
    let r = api.get("/metrics").await;
    assert!(
        r.text.contains(
            "# TYPE apiserver_validating_admission_policy_check_duration_seconds histogram"
        ),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn status_reports_type_checking_warnings() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let mut p = policy("typed", &json!({}));
    p["spec"]["validations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"expression": "object.nope == 'x'", "messageExpression": "object.missing"}));
    create(&api, VAP, p).await;
    let path = format!("{VAP}/typed");
    let status_at = |generation: i64| {
        let api = &api;
        let path = path.clone();
        async move {
            eventually("the status controller observes the generation", || async {
                api.get(&path).await.json()["status"]["observedGeneration"] == generation
            })
            .await;
            api.get(&path).await.json()["status"].clone()
        }
    };
    let status = status_at(1).await;
    assert_eq!(
        status,
        json!({"observedGeneration": 1, "typeChecking": {"expressionWarnings": [
            {
                "fieldRef": "spec.validations[2].expression",
                "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'nope'\n | object.nope == 'x'\n | ......^\n",
            },
            {
                "fieldRef": "spec.validations[2].messageExpression",
                "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'missing'\n | object.missing\n | ......^\n",
            },
        ]}})
    );
    // A spec change is a new generation, checked again.
    let r = api
        .call(
            Method::PATCH,
            &path,
            "application/merge-patch+json",
            Some(json!({"spec": {"validations": [{"expression": "object.data.size() < 10"}]}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let status = status_at(2).await;
    assert_eq!(status, json!({"observedGeneration": 2, "typeChecking": {}}));
}

#[tokio::test]
async fn the_authorizer_variable_asks_the_server_authorizer() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "authz"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }]},
            "validations": [
                {
                    "expression": "authorizer.requestResource.check('create').allowed()",
                    "message": "the requester cannot create it",
                },
                {
                    "expression": "authorizer.serviceAccount('default', 'reader').group('').resource('secrets').namespace('default').check('list').allowed()",
                    "messageExpression": "'reader: ' + authorizer.serviceAccount('default', 'reader').group('').resource('secrets').namespace('default').check('list').reason()",
                },
            ],
        },
    });
    create(&api, VAP, p).await;
    create(
        &api,
        VAPB,
        json!({"metadata": {"name": "authz"}, "spec": {"policyName": "authz", "validationActions": ["Deny"]}}),
    )
    .await;
    // The service account cannot list secrets yet: denied with RBAC's (empty) reason, the
    // message trimmed as upstream trims a messageExpression's result.
    eventually("the binding is in effect", || async {
        let r = api
            .post(&format!("{CMS}?dryRun=All"), cm("probe", &json!({})))
            .await;
        r.status == 422
    })
    .await;
    let r = api.post(CMS, cm("first", &json!({}))).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "configmaps \"first\" is forbidden: ValidatingAdmissionPolicy 'authz' with binding 'authz' denied request: reader:"
    );
    // Granting the account `list secrets` makes the same request pass (the admin passes the
    // requestResource check as a member of system:masters).
    create(
        &api,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        json!({"metadata": {"name": "secret-reader"}, "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}),
    )
    .await;
    create(
        &api,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        json!({"metadata": {"name": "reader"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "secret-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}]}),
    )
    .await;
    eventually("the role binding reaches the authorizer", || async {
        api.post(&format!("{CMS}?dryRun=All"), cm("probe", &json!({})))
            .await
            .status
            == 201
    })
    .await;
    let r = api.post(CMS, cm("second", &json!({}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
}
