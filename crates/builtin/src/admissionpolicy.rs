//! CEL admission policies: `admissionregistration.k8s.io/v1` `ValidatingAdmissionPolicy` and
//! `ValidatingAdmissionPolicyBinding`, `v1beta1` `MutatingAdmissionPolicy` and
//! `MutatingAdmissionPolicyBinding` (which share every field but validations and mutations):
//! upstream's defaults (`SetDefaults_*AdmissionPolicy*`,
//! `SetDefaults_MatchResources`, `SetDefaults_ParamRef`) and the key rules of
//! `pkg/apis/admissionregistration/validation` with their messages. Expressions are compiled
//! (crd-cel) over the policy variables, each typed `dyn`.

use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Value, json};

use crate::validation::validate_label_selector;

/// The variables a policy's expressions may use (`authorizer` is bound to the server's authorizer
/// for the requesting user).
pub const POLICY_VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
    "authorizer",
];

/// The reasons a validation may name (`supportedValidationPolicyReason`).
const REASONS: &[&str] = &[
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];

fn set_default(m: &mut Map<String, Value>, key: &str, v: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), v);
    }
}

fn match_resources_defaults(mr: &mut Value) {
    let Some(m) = mr.as_object_mut() else {
        return;
    };
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = m.get_mut(key).and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_default(rule, "scope", json!("*"));
            }
        }
    }
}

/// Fills the v1 defaults of a policy (`binding` false) or a binding.
pub fn apply_defaults(obj: &mut Value, binding: bool) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if binding {
        if let Some(mr) = spec.get_mut("matchResources") {
            match_resources_defaults(mr);
        }
        if let Some(pr) = spec.get_mut("paramRef").and_then(Value::as_object_mut) {
            set_default(pr, "parameterNotFoundAction", json!("Deny"));
        }
    } else {
        set_default(spec, "failurePolicy", json!("Fail"));
        if let Some(mc) = spec.get_mut("matchConstraints") {
            match_resources_defaults(mc);
        }
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

fn not_supported(path: &Path, v: Option<&Value>, allowed: &[&str], errs: &mut ErrorList) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        let s = v.as_str().unwrap_or("");
        if !allowed.contains(&s) {
            errs.push(FieldError::not_supported(path, s, allowed));
        }
    }
}

fn compile(
    path: &Path,
    expr: &str,
    f: fn(&str, &'static [&'static str]) -> Result<crd_cel::Expression, String>,
    errs: &mut ErrorList,
) {
    if let Err(e) = f(expr, POLICY_VARIABLES) {
        errs.push(FieldError::invalid(
            path,
            expr,
            format!("compilation failed: {e}"),
        ));
    }
}

/// `validateMatchResources`.
fn match_resources(mr: &Value, p: &Path, errs: &mut ErrorList) {
    match mr.get("matchPolicy").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(&p.child("matchPolicy"), "")),
        v => not_supported(&p.child("matchPolicy"), v, &["Equivalent", "Exact"], errs),
    }
    for sel in ["namespaceSelector", "objectSelector"] {
        match mr.get(sel).filter(|v| !v.is_null()) {
            None => errs.push(FieldError::required(&p.child(sel), "")),
            Some(s) => errs.extend(validate_label_selector(s, &p.child(sel))),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(mr, key).iter().enumerate() {
            let rp = p.child(key).index(i);
            if items(rule, "operations").is_empty() {
                errs.push(FieldError::required(&rp.child("operations"), ""));
            }
            if items(rule, "resources").is_empty() {
                errs.push(FieldError::required(&rp.child("resources"), ""));
            }
        }
    }
}

/// The spec fields validating and mutating policies share: `failurePolicy`, `paramKind`,
/// `matchConstraints`, `matchConditions` and `variables`.
fn policy_common(spec: &Value, p: &Path, errs: &mut ErrorList) {
    match spec.get("failurePolicy").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(&p.child("failurePolicy"), "")),
        v => not_supported(&p.child("failurePolicy"), v, &["Fail", "Ignore"], errs),
    }
    if let Some(pk) = spec.get("paramKind").filter(|v| !v.is_null()) {
        for key in ["apiVersion", "kind"] {
            if str_at(pk, key).is_empty() {
                errs.push(FieldError::required(&p.child("paramKind").child(key), ""));
            }
        }
    }
    match spec.get("matchConstraints").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(&p.child("matchConstraints"), "")),
        Some(mc) => {
            match_resources(mc, &p.child("matchConstraints"), errs);
            if items(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(
                    &p.child("matchConstraints").child("resourceRules"),
                    "",
                ));
            }
        }
    }
    for (i, c) in items(spec, "matchConditions").iter().enumerate() {
        let cp = p.child("matchConditions").index(i);
        let e = str_at(c, "expression").trim();
        if e.is_empty() {
            errs.push(FieldError::required(&cp.child("expression"), ""));
        } else {
            compile(
                &cp.child("expression"),
                e,
                crd_cel::Expression::compile_bool,
                errs,
            );
        }
        if str_at(c, "name").is_empty() {
            errs.push(FieldError::required(&cp.child("name"), ""));
        }
    }
    for (i, v) in items(spec, "variables").iter().enumerate() {
        let vp = p.child("variables").index(i);
        let name = str_at(v, "name");
        if name.trim().is_empty() {
            errs.push(FieldError::required(
                &vp.child("name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(name) {
            errs.push(FieldError::invalid(
                &vp.child("name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        let e = str_at(v, "expression");
        if e.trim().is_empty() {
            errs.push(FieldError::required(
                &vp.child("expression"),
                "expression is not specified",
            ));
        } else {
            compile(
                &vp.child("expression"),
                e,
                crd_cel::Expression::compile_value,
                errs,
            );
        }
    }
}

/// Validates a `ValidatingAdmissionPolicy` (`validateValidatingAdmissionPolicySpec`).
pub fn validate_policy(obj: &Value, errs: &mut ErrorList) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    policy_common(spec, &p, errs);
    let validations = items(spec, "validations");
    let audit = items(spec, "auditAnnotations");
    if validations.is_empty() && audit.is_empty() {
        let m = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required(&p.child("validations"), m));
        errs.push(FieldError::required(&p.child("auditAnnotations"), m));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        let vp = p.child("validations").index(i);
        let e = str_at(v, "expression").trim();
        if e.is_empty() {
            errs.push(FieldError::required(
                &vp.child("expression"),
                "expression is not specified",
            ));
        } else {
            compile(
                &vp.child("expression"),
                e,
                crd_cel::Expression::compile_bool,
                errs,
            );
        }
        let msg = str_at(v, "message");
        if !msg.is_empty() && msg.trim().is_empty() {
            errs.push(FieldError::invalid(
                &vp.child("message"),
                msg,
                "message must be non-empty if specified",
            ));
        } else if msg.contains('\n') {
            errs.push(FieldError::invalid(
                &vp.child("message"),
                msg,
                "message must not contain line breaks",
            ));
        }
        let me = str_at(v, "messageExpression");
        if !me.is_empty() {
            compile(
                &vp.child("messageExpression"),
                me,
                crd_cel::Expression::compile_message,
                errs,
            );
        }
        not_supported(&vp.child("reason"), v.get("reason"), REASONS, errs);
    }
    for (i, a) in audit.iter().enumerate() {
        let ap = p.child("auditAnnotations").index(i);
        if str_at(a, "key").is_empty() {
            errs.push(FieldError::required(&ap.child("key"), ""));
        }
        let e = str_at(a, "valueExpression");
        if e.trim().is_empty() {
            errs.push(FieldError::required(&ap.child("valueExpression"), ""));
        } else {
            compile(
                &ap.child("valueExpression"),
                e,
                crd_cel::Expression::compile_value,
                errs,
            );
        }
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The spec fields validating and mutating bindings share: `policyName`, `paramRef` and
/// `matchResources`.
fn binding_common(spec: &Value, p: &Path, errs: &mut ErrorList) {
    if str_at(spec, "policyName").is_empty() {
        errs.push(FieldError::required(&p.child("policyName"), ""));
    }
    if let Some(pr) = spec.get("paramRef").filter(|v| !v.is_null()) {
        let pp = p.child("paramRef");
        let has_name = !str_at(pr, "name").is_empty();
        let has_selector = pr.get("selector").is_some_and(|s| !s.is_null());
        match (has_name, has_selector) {
            (false, false) => errs.push(FieldError::required(
                &pp,
                "one of name or selector must be specified",
            )),
            (true, true) => errs.push(FieldError::forbidden(
                &pp.child("name"),
                "name and selector are mutually exclusive",
            )),
            (false, true) => {
                errs.extend(validate_label_selector(
                    pr.get("selector").unwrap_or(&Value::Null),
                    &pp.child("selector"),
                ));
            }
            (true, false) => {}
        }
        match pr.get("parameterNotFoundAction").filter(|v| !v.is_null()) {
            None => errs.push(FieldError::required(
                &pp.child("parameterNotFoundAction"),
                "",
            )),
            v => not_supported(
                &pp.child("parameterNotFoundAction"),
                v,
                &["Allow", "Deny"],
                errs,
            ),
        }
    }
    if let Some(mr) = spec.get("matchResources").filter(|v| !v.is_null()) {
        match_resources(mr, &p.child("matchResources"), errs);
    }
}

/// Validates a `ValidatingAdmissionPolicyBinding` (`validateValidatingAdmissionPolicyBindingSpec`).
pub fn validate_binding(obj: &Value, errs: &mut ErrorList) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    binding_common(spec, &p, errs);
    let ap = p.child("validationActions");
    let actions = items(spec, "validationActions");
    let mut seen = std::collections::BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        let a = a.as_str().unwrap_or("");
        if !["Audit", "Deny", "Warn"].contains(&a) {
            errs.push(FieldError::not_supported(
                &ap.index(i),
                a,
                &["Audit", "Deny", "Warn"],
            ));
        }
        if !seen.insert(a) {
            errs.push(FieldError::duplicate(&ap.index(i), a));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errs.push(FieldError::invalid(
            &ap,
            Value::Array(actions.to_vec()),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(
            &ap,
            "at least one validation action is required",
        ));
    }
}

/// Validates a `v1beta1` `MutatingAdmissionPolicy` (`validateMutatingAdmissionPolicySpec`):
/// the shared policy fields, then `mutations` (each with its `patchType`'s expression, typed as
/// an apply configuration or a JSON patch) and `reinvocationPolicy`.
pub fn validate_mutating_policy(obj: &Value, errs: &mut ErrorList) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    policy_common(spec, &p, errs);
    let mutations = items(spec, "mutations");
    if mutations.is_empty() {
        errs.push(FieldError::required(
            &p.child("mutations"),
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        mutation(m, &p.child("mutations").index(i), errs);
    }
    match spec.get("reinvocationPolicy").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(&p.child("reinvocationPolicy"), "")),
        v => not_supported(
            &p.child("reinvocationPolicy"),
            v,
            &["IfNeeded", "Never"],
            errs,
        ),
    }
}

/// One `mutations[]` entry: the member its `patchType` names is required, the other forbidden.
fn mutation(m: &Value, p: &Path, errs: &mut ErrorList) {
    type Compile = fn(&str, &'static [&'static str]) -> Result<crd_cel::Expression, String>;
    let (member, other, compile): (&str, &str, Compile) = match str_at(m, "patchType") {
        "ApplyConfiguration" => (
            "applyConfiguration",
            "jsonPatch",
            crd_cel::Expression::compile_apply_configuration,
        ),
        "JSONPatch" => (
            "jsonPatch",
            "applyConfiguration",
            crd_cel::Expression::compile_json_patch,
        ),
        pt => {
            errs.push(FieldError::not_supported(
                &p.child("patchType"),
                pt,
                &["ApplyConfiguration", "JSONPatch"],
            ));
            return;
        }
    };
    let patch_type = str_at(m, "patchType");
    match m.get(member).filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(
            &p.child(member),
            format!("must be specified when patchType is {patch_type}"),
        )),
        Some(body) => {
            let ep = p.child(member).child("expression");
            let e = str_at(body, "expression");
            if e.trim().is_empty() {
                errs.push(FieldError::required(&ep, ""));
            } else if let Err(detail) = compile(e, POLICY_VARIABLES) {
                let typed = [
                    crd_cel::mutation::NOT_OBJECT,
                    crd_cel::mutation::NOT_JSON_PATCH,
                ];
                let detail = if typed.contains(&detail.as_str()) {
                    detail
                } else {
                    format!("compilation failed: {detail}")
                };
                errs.push(FieldError::invalid(&ep, e, detail));
            }
        }
    }
    if let Some(v) = m.get(other).filter(|v| !v.is_null()) {
        errs.push(FieldError::invalid(
            &p.child(other),
            v.clone(),
            format!("must not be specified when patchType is {patch_type}"),
        ));
    }
}

/// Validates a `v1beta1` `MutatingAdmissionPolicyBinding`
/// (`validateMutatingAdmissionPolicyBindingSpec`): the shared binding fields.
pub fn validate_mutating_binding(obj: &Value, errs: &mut ErrorList) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    binding_common(spec, &Path::new("spec"), errs);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: &Value) -> Value {
        let mut p = json!({"spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.data.size() < 3"}],
        }});
        if let (Some(m), Some(e)) = (p["spec"].as_object_mut(), spec.as_object()) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
        apply_defaults(&mut p, false);
        p
    }

    fn errors(obj: &Value, binding: bool) -> Vec<String> {
        let mut errs = ErrorList::new();
        if binding {
            validate_binding(obj, &mut errs);
        } else {
            validate_policy(obj, &mut errs);
        }
        errs.0.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_are_upstreams() {
        let p = policy(&json!({}));
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        let mc = &p["spec"]["matchConstraints"];
        assert_eq!(mc["matchPolicy"], "Equivalent");
        assert_eq!(mc["namespaceSelector"], json!({}));
        assert_eq!(mc["objectSelector"], json!({}));
        assert_eq!(mc["resourceRules"][0]["scope"], "*");
        let mut b =
            json!({"spec": {"policyName": "p", "paramRef": {"name": "x"}, "matchResources": {}}});
        apply_defaults(&mut b, true);
        assert_eq!(b["spec"]["paramRef"]["parameterNotFoundAction"], "Deny");
        assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    }

    #[test]
    fn policy_validation_messages() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({}), vec![]),
            (
                json!({"validations": []}),
                vec![
                    "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                    "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
                ],
            ),
            (
                json!({"validations": [{"expression": "object.x +"}]}),
                vec![
                    "spec.validations[0].expression: Invalid value: \"object.x +\": compilation failed: ERROR: <input>:1:11: Syntax error:",
                ],
            ),
            (
                json!({"validations": [{"expression": "'a'"}]}),
                vec![
                    "spec.validations[0].expression: Invalid value: \"'a'\": compilation failed: cel expression must evaluate to a bool",
                ],
            ),
            (
                json!({"validations": [{"expression": "self.x"}]}),
                vec!["compilation failed: ERROR: <input>:1:1: undeclared reference to 'self'"],
            ),
            (
                json!({"validations": [{"expression": "true", "reason": "Teapot"}]}),
                vec![
                    "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
                ],
            ),
            (
                json!({"failurePolicy": "Maybe"}),
                vec![
                    "spec.failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"",
                ],
            ),
            (
                json!({"matchConstraints": {"resourceRules": []}}),
                vec!["spec.matchConstraints.resourceRules: Required value"],
            ),
            (
                json!({"paramKind": {"apiVersion": "v1"}}),
                vec!["spec.paramKind.kind: Required value"],
            ),
            (
                json!({"variables": [{"name": "1x", "expression": "object"}]}),
                vec![
                    "spec.variables[0].name: Invalid value: \"1x\": name is not a valid CEL identifier",
                ],
            ),
            (
                json!({"variables": [{"name": "n", "expression": "params.data.size()"}], "validations": [{"expression": "variables.n > 1", "messageExpression": "'n is ' + string(variables.n)"}]}),
                vec![],
            ),
        ];
        for (spec, want) in cases {
            let got = errors(&policy(&spec), false);
            assert_eq!(got.len(), want.len(), "{spec}: {got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(g.contains(w), "{spec}: {g} does not contain {w}");
            }
        }
    }

    #[test]
    fn binding_validation_messages() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                json!({"policyName": "p", "validationActions": ["Deny"]}),
                vec![],
            ),
            (
                json!({"validationActions": ["Deny"]}),
                vec!["spec.policyName: Required value"],
            ),
            (
                json!({"policyName": "p"}),
                vec![
                    "spec.validationActions: Required value: at least one validation action is required",
                ],
            ),
            (
                json!({"policyName": "p", "validationActions": ["Deny", "Warn"]}),
                vec![
                    "spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
                ],
            ),
            (
                json!({"policyName": "p", "validationActions": ["Audit", "Audit"]}),
                vec!["spec.validationActions[1]: Duplicate value: \"Audit\""],
            ),
            (
                json!({"policyName": "p", "validationActions": ["Block"]}),
                vec![
                    "spec.validationActions[0]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
                ],
            ),
            (
                json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {"parameterNotFoundAction": "Deny"}}),
                vec!["spec.paramRef: Required value: one of name or selector must be specified"],
            ),
        ];
        for (spec, want) in cases {
            let mut b = json!({ "spec": spec });
            apply_defaults(&mut b, true);
            let got = errors(&b, true);
            assert_eq!(got.len(), want.len(), "{spec}: {got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(g.contains(w), "{spec}: {g} does not contain {w}");
            }
        }
    }

    #[test]
    fn mutating_policy_validation_messages() {
        let base = |extra: Value| {
            let mut p = json!({"spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}],
            }});
            if let (Some(m), Some(e)) = (p["spec"].as_object_mut(), extra.as_object()) {
                for (k, v) in e {
                    m.insert(k.clone(), v.clone());
                }
            }
            apply_defaults(&mut p, false);
            p
        };
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({}), vec![]),
            (
                json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b'), value: 'x'}]"}}]}),
                vec![],
            ),
            (
                json!({"mutations": []}),
                vec!["spec.mutations: Required value: mutations must contain at least one item"],
            ),
            (
                json!({"reinvocationPolicy": null}),
                vec!["spec.reinvocationPolicy: Required value"],
            ),
            (
                json!({"reinvocationPolicy": "Always"}),
                vec![
                    "spec.reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"",
                ],
            ),
            (
                json!({"mutations": [{"patchType": "Merge"}]}),
                vec![
                    "spec.mutations[0].patchType: Unsupported value: \"Merge\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
                ],
            ),
            (
                json!({"mutations": [{"patchType": "JSONPatch"}]}),
                vec![
                    "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
                ],
            ),
            (
                json!({"mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "object"}}]}),
                vec![
                    "spec.mutations[0].applyConfiguration.expression: Invalid value: \"object\": must evaluate to Object",
                ],
            ),
            (
                json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "Object{}"}, "applyConfiguration": {"expression": "Object{}"}}]}),
                vec![
                    "spec.mutations[0].jsonPatch.expression: Invalid value: \"Object{}\": must evaluate to list(JSONPatch)",
                    "spec.mutations[0].applyConfiguration: Invalid value:",
                ],
            ),
            (
                json!({"mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{"}}]}),
                vec![
                    "spec.mutations[0].applyConfiguration.expression: Invalid value: \"Object{\": compilation failed: ERROR: <input>:1:8: Syntax error:",
                ],
            ),
        ];
        for (extra, want) in cases {
            let mut errs = ErrorList::new();
            validate_mutating_policy(&base(extra.clone()), &mut errs);
            let got: Vec<String> = errs.0.iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), want.len(), "{extra}: {got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(g.contains(w), "{extra}: {g} does not contain {w}");
            }
        }
        let mut errs = ErrorList::new();
        validate_mutating_binding(&json!({"spec": {}}), &mut errs);
        let got: Vec<String> = errs.0.iter().map(ToString::to_string).collect();
        assert_eq!(got, vec!["spec.policyName: Required value".to_string()]);
    }
}
