//! `MutatingAdmissionPolicy` (`admissionregistration.k8s.io/v1beta1`) end to end: policies and
//! bindings created through the API, both patch types, params, the failure policy, the
//! re-validation of a mutated object, reinvocation, and the kinds' discovery and validation.
//! Each test first waits until its binding is in effect (a dry-run create comes back mutated),
//! since policies reach the dispatcher through an informer.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, HttpVersion, TestServer, crd_json, eventually};

const MAP: &str = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies";
const MAPB: &str = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn cm(name: &str, labels: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

/// A policy on `ConfigMap` creates with the given mutations and extra spec fields.
fn policy(name: &str, mutations: &Value, extra: &Value) -> Value {
    let mut p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }]},
            "matchConditions": [{"name": "not-probe-exempt", "expression": "object.metadata.name != 'exempt'"}],
            "reinvocationPolicy": "Never",
            "mutations": mutations,
        },
    });
    if let (Some(spec), Some(e)) = (p["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            spec.insert(k.clone(), v.clone());
        }
    }
    p
}

fn apply(expression: &str) -> Value {
    json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}])
}

fn binding(name: &str, policy: &str, extra: &Value) -> Value {
    let mut b = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy},
    });
    if let (Some(spec), Some(e)) = (b["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            spec.insert(k.clone(), v.clone());
        }
    }
    b
}

async fn create(api: &Api<'_>, path: &str, body: Value) -> Value {
    let r = api.post(path, body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()
}

/// Waits until a dry-run create of a `ConfigMap` satisfies `done` (the policies are in effect).
async fn until(api: &Api<'_>, what: &str, done: impl Fn(&Value) -> bool) {
    eventually(what, || async {
        let r = api
            .post(&format!("{CMS}?dryRun=All"), cm("probe", &json!({})))
            .await;
        r.status == 201 && done(&r.json())
    })
    .await;
}

#[tokio::test]
async fn apply_configuration_sets_defaults_and_is_revalidated() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    create(
        &api,
        MAP,
        policy(
            "team-label",
            &apply(
                "Object{metadata: Object.metadata{labels: {'team': 'platform'}}, data: {'added': 'yes'}}",
            ),
            &json!({}),
        ),
    )
    .await;
    create(&api, MAPB, binding("team-label", "team-label", &json!({}))).await;
    until(&api, "the policy labels new config maps", |o| {
        o["metadata"]["labels"]["team"] == "platform"
    })
    .await;

    // The label and data are merged in; what the object had stays.
    let out = create(&api, CMS, cm("one", &json!({"app": "web"}))).await;
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "team": "platform"})
    );
    assert_eq!(out["data"], json!({"k": "v", "added": "yes"}));
    let stored = api.get(&format!("{CMS}/one")).await.json();
    assert_eq!(stored["metadata"]["labels"]["team"], "platform");

    // Match conditions are honoured.
    let out = create(&api, CMS, cm("exempt", &json!({}))).await;
    assert!(out["metadata"]["labels"].get("team").is_none(), "{out}");

    // Updates are not matched (the rule names CREATE only).
    let r = api
        .call(
            Method::PATCH,
            &format!("{CMS}/exempt"),
            "application/merge-patch+json",
            Some(json!({"data": {"x": "1"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.json()["metadata"]["labels"].get("team").is_none());

    // The mutated object is validated again: an invalid label value set by a policy is a 422.
    create(
        &api,
        MAP,
        policy(
            "bad-label",
            &apply("Object{metadata: Object.metadata{labels: {'bad': 'not a valid value!'}}}"),
            &json!({"matchConditions": [{"name": "only-bad", "expression": "object.metadata.name == 'gets-bad'"}]}),
        ),
    )
    .await;
    create(&api, MAPB, binding("bad-label", "bad-label", &json!({}))).await;
    eventually("the bad-label policy is in effect", || async {
        api.post(&format!("{CMS}?dryRun=All"), cm("gets-bad", &json!({})))
            .await
            .status
            == 422
    })
    .await;
    let r = api.post(CMS, cm("gets-bad", &json!({}))).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.labels");

    // The printer columns are upstream's.
    let t = api
        .get_as(
            MAP,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .await
        .json();
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Mutations", "ParamKind", "Age"]);
    assert_eq!(t["rows"][0]["cells"][1], 1);
    assert_eq!(t["rows"][0]["cells"][2], "<unset>");
}

#[tokio::test]
async fn json_patch_and_params() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    // The param: which owner to record.
    create(
        &api,
        CMS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}, "data": {"owner": "team-a"}}),
    )
    .await;
    let patch = "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/owner'), value: params.data.owner}]";
    create(
        &api,
        MAP,
        policy(
            "owner",
            &json!([{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}]),
            &json!({
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConditions": [{"name": "not-param", "expression": "object.metadata.name != 'owner'"}],
            }),
        ),
    )
    .await;
    create(
        &api,
        MAPB,
        binding(
            "owner",
            "owner",
            &json!({"paramRef": {"name": "owner", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    until(&api, "the owner annotation is set", |o| {
        o["metadata"]["annotations"]["example.com/owner"] == "team-a"
    })
    .await;
    let out = create(&api, CMS, cm("two", &json!({}))).await;
    assert_eq!(
        out["metadata"]["annotations"],
        json!({"example.com/owner": "team-a"})
    );

    // The param drives the value.
    let r = api
        .call(
            Method::PATCH,
            &format!("{CMS}/owner"),
            "application/merge-patch+json",
            Some(json!({"data": {"owner": "team-b"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Params are read through an informer, as upstream's are: the change applies shortly after.
    until(&api, "the new param applies", |o| {
        o["metadata"]["annotations"]["example.com/owner"] == "team-b"
    })
    .await;
    let out = create(&api, CMS, cm("three", &json!({}))).await;
    assert_eq!(
        out["metadata"]["annotations"]["example.com/owner"],
        "team-b"
    );

    // Without the param, `Deny` refuses the request: a 403 naming policy and binding.
    let r = api.delete(&format!("{CMS}/owner")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    eventually("the deleted param is missed", || async {
        let r = api
            .post(&format!("{CMS}?dryRun=All"), cm("four", &json!({})))
            .await;
        r.status == 403
    })
    .await;
    let r = api.post(CMS, cm("four", &json!({}))).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let s = r.json();
    let message = "policy 'owner' with binding 'owner' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction";
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(s["message"], message);
    assert_eq!(s["details"]["causes"], json!([{"message": message}]));
}

#[tokio::test]
async fn failure_policy_and_reinvocation() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    // `a-reads-b` runs first (policies run in name order) and copies label `b` into an
    // annotation; `b-sets-b` sets the label afterwards. Only reinvocation lets `a` see it.
    let copy = "Object{metadata: Object.metadata{annotations: {'saw-b': has(object.metadata.labels) && 'b' in object.metadata.labels ? 'yes' : 'no'}}}";
    create(
        &api,
        MAP,
        policy(
            "a-reads-b",
            &apply(copy),
            &json!({"reinvocationPolicy": "IfNeeded"}),
        ),
    )
    .await;
    create(&api, MAPB, binding("a-reads-b", "a-reads-b", &json!({}))).await;
    create(
        &api,
        MAP,
        policy(
            "b-sets-b",
            &apply("Object{metadata: Object.metadata{labels: {'b': 'set'}}}"),
            &json!({}),
        ),
    )
    .await;
    create(&api, MAPB, binding("b-sets-b", "b-sets-b", &json!({}))).await;
    until(&api, "both policies ran", |o| {
        o["metadata"]["labels"]["b"] == "set" && o["metadata"]["annotations"]["saw-b"].is_string()
    })
    .await;
    let out = create(&api, CMS, cm("reinvoked", &json!({}))).await;
    assert_eq!(out["metadata"]["annotations"]["saw-b"], "yes", "{out}");

    // With `Never`, the first policy's view stays.
    let r = api
        .call(
            Method::PATCH,
            &format!("{MAP}/a-reads-b"),
            "application/merge-patch+json",
            Some(json!({"spec": {"reinvocationPolicy": "Never"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    until(&api, "the first policy is no longer reinvoked", |o| {
        o["metadata"]["annotations"]["saw-b"] == "no"
    })
    .await;

    // A runtime error under `failurePolicy: Fail` refuses the request...
    create(
        &api,
        MAP,
        policy(
            "c-fails",
            &apply("Object{metadata: Object.metadata{labels: {'x': object.data.missing}}}"),
            &json!({}),
        ),
    )
    .await;
    create(&api, MAPB, binding("c-fails", "c-fails", &json!({}))).await;
    eventually("the failing policy is in effect", || async {
        api.post(&format!("{CMS}?dryRun=All"), cm("probe", &json!({})))
            .await
            .status
            == 403
    })
    .await;
    let r = api.post(CMS, cm("five", &json!({}))).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(
        s["message"],
        "policy 'c-fails' with binding 'c-fails' denied request: expression 'Object{metadata: Object.metadata{labels: {'x': object.data.missing}}}' resulted in error: no such key: missing"
    );

    // ... and is ignored under `Ignore`.
    let r = api
        .call(
            Method::PATCH,
            &format!("{MAP}/c-fails"),
            "application/merge-patch+json",
            Some(json!({"spec": {"failurePolicy": "Ignore"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    until(&api, "the failing policy is ignored", |_| true).await;
    let out = create(&api, CMS, cm("six", &json!({}))).await;
    assert_eq!(out["metadata"]["labels"]["b"], "set");
}

#[tokio::test]
async fn custom_resources_merge_by_list_type() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let mut crd = crd_json("mut.example.com", "widgets", "Widget", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
        }}},
    });
    api.create_crd(crd).await;
    let mut p = policy(
        "widget-defaults",
        &apply(
            "Object{spec: Object.spec{tags: ['managed'], size: has(object.spec.size) ? object.spec.size : 3}}",
        ),
        &json!({}),
    );
    p["spec"]["matchConstraints"]["resourceRules"] = json!([{
        "operations": ["CREATE"], "apiGroups": ["mut.example.com"], "apiVersions": ["v1"],
        "resources": ["widgets"],
    }]);
    create(&api, MAP, p).await;
    create(
        &api,
        MAPB,
        binding("widget-defaults", "widget-defaults", &json!({})),
    )
    .await;
    let widgets = "/apis/mut.example.com/v1/namespaces/default/widgets";
    let widget = |name: &str, spec: Value| json!({"apiVersion": "mut.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec});
    eventually("the widget policy is in effect", || async {
        let r = api
            .post(&format!("{widgets}?dryRun=All"), widget("probe", json!({})))
            .await;
        r.status == 201 && r.json()["spec"]["size"] == 3
    })
    .await;
    let out = create(
        &api,
        widgets,
        widget("w", json!({"tags": ["a"], "size": 1})),
    )
    .await;
    assert_eq!(out["spec"], json!({"tags": ["a", "managed"], "size": 1}));

    // Setting an atomic list is refused (upstream's check, not a silent replace).
    let mut p = policy(
        "widget-args",
        &apply("Object{spec: Object.spec{args: ['x']}}"),
        &json!({"matchConditions": [{"name": "only", "expression": "object.metadata.name == 'atomic'"}]}),
    );
    p["spec"]["matchConstraints"]["resourceRules"] = json!([{
        "operations": ["CREATE"], "apiGroups": ["mut.example.com"], "apiVersions": ["v1"],
        "resources": ["widgets"],
    }]);
    create(&api, MAP, p).await;
    create(
        &api,
        MAPB,
        binding("widget-args", "widget-args", &json!({})),
    )
    .await;
    eventually("the atomic policy is in effect", || async {
        api.post(
            &format!("{widgets}?dryRun=All"),
            widget("atomic", json!({})),
        )
        .await
        .status
            == 403
    })
    .await;
    let r = api.post(widgets, widget("atomic", json!({}))).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "policy 'widget-args' with binding 'widget-args' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.args"
    );
}

#[tokio::test]
async fn kinds_are_served_and_validated() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let g = api.get("/apis/admissionregistration.k8s.io").await.json();
    assert_eq!(
        g["versions"],
        json!([
            {"groupVersion": "admissionregistration.k8s.io/v1", "version": "v1"},
            {"groupVersion": "admissionregistration.k8s.io/v1beta1", "version": "v1beta1"},
        ])
    );
    assert_eq!(g["preferredVersion"]["version"], "v1");
    let rl = api
        .get("/apis/admissionregistration.k8s.io/v1beta1")
        .await
        .json();
    let names: Vec<&str> = rl["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings"
        ]
    );

    // OpenAPI v3 describes the v1beta1 kinds.
    let r = api
        .get("/openapi/v3/apis/admissionregistration.k8s.io/v1beta1")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let doc = r.json();
    assert_eq!(
        doc["components"]["schemas"]["io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicy"]
            ["x-kubernetes-group-version-kind"][0],
        json!({"group": "admissionregistration.k8s.io", "version": "v1beta1", "kind": "MutatingAdmissionPolicy"})
    );
    assert!(
        doc["paths"]["/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings/{name}"]
            .is_object()
    );

    // Defaults, then validation with upstream's paths.
    let out = create(
        &api,
        MAP,
        policy("defaulted", &apply("Object{}"), &json!({})),
    )
    .await;
    assert_eq!(out["spec"]["failurePolicy"], "Fail");
    assert_eq!(out["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
    let r = api
        .post(
            MAP,
            policy(
                "bad",
                &json!([{"patchType": "JSONPatch", "jsonPatch": {"expression": "Object{}"}}]),
                &json!({"reinvocationPolicy": "Sometimes"}),
            ),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let s = r.json();
    let fields: Vec<&str> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.mutations[0].jsonPatch.expression",
            "spec.reinvocationPolicy"
        ]
    );
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("must evaluate to list(JSONPatch)"),
        "{s}"
    );
    let r = api.post(MAPB, binding("nameless", "", &json!({}))).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "spec.policyName");
}

/// `authorizer` asks the server's authorizer for the requesting user (the admin here).
#[tokio::test]
async fn the_authorizer_variable_asks_the_server_authorizer() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http2);
    let patch = "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'can-list-secrets': authorizer.group('').resource('secrets').namespace('default').check('list').allowed() ? 'yes' : 'no'}}]";
    create(
        &api,
        MAP,
        policy(
            "who",
            &json!([{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}]),
            &json!({}),
        ),
    )
    .await;
    create(&api, MAPB, binding("who", "who", &json!({}))).await;
    until(&api, "the authorizer's answer is recorded", |o| {
        o["metadata"]["annotations"]["can-list-secrets"] == "yes"
    })
    .await;
}

/// The series of `apiserver_mutating_admission_policy_check_total` for a policy, as `/metrics`
/// prints them (labels sorted by name), with their values.
async fn mutation_checks(api: &Api<'_>, policy: &str) -> Vec<(String, u64)> {
    let r = api.get("/metrics").await;
    assert_eq!(r.status, 200);
    r.text
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_mutating_admission_policy_check_total{")
                && l.contains(&format!("policy=\"{policy}\""))
        })
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn mutations_are_counted_with_upstream_labels() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    // One mutation that applies and one that fails at run time (`Ignore`: the request passes).
    let mutations = json!([
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            "Object{metadata: Object.metadata{labels: {'counted': 'yes'}}}"}},
        {"patchType": "JSONPatch", "jsonPatch": {"expression":
            "[JSONPatch{op: 'add', path: '/data/x', value: object.missing}]"}},
    ]);
    create(
        &api,
        MAP,
        policy("counted", &mutations, &json!({"failurePolicy": "Ignore"})),
    )
    .await;
    create(&api, MAPB, binding("counted-b", "counted", &json!({}))).await;
    until(&api, "the policy labels new config maps", |o| {
        o["metadata"]["labels"]["counted"] == "yes"
    })
    .await;
    let series = |error_type: &str| {
        format!(
            "apiserver_mutating_admission_policy_check_total{{error_type=\"{error_type}\",policy=\"counted\",policy_binding=\"counted-b\"}}"
        )
    };
    let count = |lines: &[(String, u64)], error_type: &str| {
        lines
            .iter()
            .find(|(s, _)| *s == series(error_type))
            .map_or(0, |(_, v)| *v)
    };
    let before = mutation_checks(&api, "counted").await;
    let out = create(&api, CMS, cm("one", &json!({}))).await;
    assert_eq!(out["metadata"]["labels"]["counted"], "yes", "{out}");
    let after = mutation_checks(&api, "counted").await;
    // Each mutation is counted once: the apply configuration without error, the JSON patch
    // whose expression failed as `invalid_error`.
    assert_eq!(
        count(&after, "no_error"),
        count(&before, "no_error") + 1,
        "{after:?}"
    );
    assert_eq!(
        count(&after, "invalid_error"),
        count(&before, "invalid_error") + 1,
        "{after:?}"
    );
    let r = api.get("/metrics").await;
    assert!(
        r.text.contains(
            "# TYPE apiserver_mutating_admission_policy_check_duration_seconds histogram"
        ),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn apply_configurations_are_typed_by_the_kind_schema() {
    let server = TestServer::start().await;
    let api = server.api(HttpVersion::Http1);
    let mut crd = crd_json("typed.example.com", "widgets", "Widget", "Namespaced");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    });
    api.create_crd(crd).await;
    // `spec.replica` is not in the schema: upstream's typed conversion refuses the configuration
    // (a field the schema declares goes through).
    let mut p = policy(
        "typo",
        &apply("Object{spec: Object.spec{size: 1, replica: 3}}"),
        &json!({}),
    );
    p["spec"]["matchConstraints"]["resourceRules"] = json!([{
        "operations": ["CREATE"], "apiGroups": ["typed.example.com"], "apiVersions": ["v1"],
        "resources": ["widgets"],
    }]);
    create(&api, MAP, p).await;
    create(&api, MAPB, binding("typo", "typo", &json!({}))).await;
    let widgets = "/apis/typed.example.com/v1/namespaces/default/widgets";
    let widget = |name: &str| json!({"apiVersion": "typed.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {}});
    eventually("the policy is in effect", || async {
        api.post(&format!("{widgets}?dryRun=All"), widget("probe"))
            .await
            .status
            == 403
    })
    .await;
    let r = api.post(widgets, widget("w")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let message = "policy 'typo' with binding 'typo' denied request: error applying patch: failed to convert patch object to typed object: .spec.replica: field not declared in schema";
    let s = r.json();
    assert_eq!(s["reason"], "Invalid", "{s}");
    assert_eq!(s["message"], message);
    assert_eq!(s["details"]["causes"], json!([{"message": message}]));
}
