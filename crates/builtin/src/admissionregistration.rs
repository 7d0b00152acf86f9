//! `admissionregistration.k8s.io/v1` webhook configurations (`ValidatingWebhookConfiguration`,
//! `MutatingWebhookConfiguration`): upstream's v1 defaults (`SetDefaults_ValidatingWebhook`,
//! `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`, `SetDefaults_ServiceReference`) and the key
//! rules of `pkg/apis/admissionregistration/validation` with their messages.
//!
//! `matchConditions` expressions are compiled (crd-cel) over `object`, `oldObject`, `request` and
//! `authorizer`, each typed `dyn`; upstream types `request` and `authorizer` precisely, so a few
//! type errors it finds at write time surface here only when the condition is evaluated.

use crd_core::validation::{is_dns1035_label, is_dns1123_subdomain, is_qualified_name};
use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Value, json};

use crate::validation::validate_label_selector;

/// The variables a webhook match condition may use.
pub const MATCH_CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request", "authorizer"];

/// `AdmissionReview` versions the server understands, in upstream's order.
pub const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

fn set_default(m: &mut Map<String, Value>, key: &str, v: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), v);
    }
}

/// Fills the v1 defaults of every webhook of a configuration (`mutating` adds
/// `reinvocationPolicy: Never`).
pub fn apply_defaults(obj: &mut Value, mutating: bool) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        set_default(hook, "failurePolicy", json!("Fail"));
        set_default(hook, "matchPolicy", json!("Equivalent"));
        set_default(hook, "namespaceSelector", json!({}));
        set_default(hook, "objectSelector", json!({}));
        set_default(hook, "timeoutSeconds", json!(10));
        if mutating {
            set_default(hook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_default(rule, "scope", json!("*"));
            }
        }
        if let Some(svc) = hook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            set_default(svc, "port", json!(443));
        }
    }
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// What an update relaxes: checks that only apply when the old object already passed them
/// (`validationOptions` computed from the old configuration).
#[derive(Clone, Copy)]
struct Options {
    require_no_side_effects: bool,
    require_recognized_version: bool,
    require_unique_names: bool,
}

/// Validates the `webhooks` of a configuration; `old` relaxes the rules the old object broke, as
/// upstream's `Validate*WebhookConfigurationUpdate` does.
pub fn validate(obj: &Value, old: Option<&Value>, mutating: bool, errs: &mut ErrorList) {
    let old_hooks = old.map(|o| {
        o.get("webhooks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    });
    let opts = match &old_hooks {
        None => Options {
            require_no_side_effects: true,
            require_recognized_version: true,
            require_unique_names: true,
        },
        Some(hooks) => Options {
            require_no_side_effects: hooks
                .iter()
                .all(|h| matches!(str_at(h, "sideEffects"), Some("None" | "NoneOnDryRun"))),
            require_recognized_version: hooks.iter().all(|h| {
                let v = strs(h.get("admissionReviewVersions"));
                v.is_empty()
                    || v.iter()
                        .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str()))
            }),
            require_unique_names: {
                let mut seen = std::collections::HashSet::new();
                hooks
                    .iter()
                    .all(|h| seen.insert(str_at(h, "name").unwrap_or("").to_string()))
            },
        },
    };
    let hooks = obj
        .get("webhooks")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut names = std::collections::HashSet::new();
    for (i, hook) in hooks.iter().enumerate() {
        let p = Path::new("webhooks").index(i);
        validate_webhook(hook, opts, mutating, &p, errs);
        review_versions(
            &strs(hook.get("admissionReviewVersions")),
            opts.require_recognized_version,
            &p.child("admissionReviewVersions"),
            errs,
        );
        let name = str_at(hook, "name").unwrap_or("");
        if opts.require_unique_names && !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
    }
}

/// `IsFullyQualifiedName`.
fn fully_qualified_name(path: &Path, name: &str, errs: &mut ErrorList) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let dns = is_dns1123_subdomain(name);
    if !dns.is_empty() {
        errs.push(FieldError::invalid(path, name, dns.join(",")));
        return;
    }
    if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

fn not_supported(path: &Path, v: Option<&Value>, allowed: &[&str], errs: &mut ErrorList) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        let s = v.as_str().unwrap_or("");
        if !allowed.contains(&s) {
            errs.push(FieldError::not_supported(path, s, allowed));
        }
    }
}

fn validate_webhook(hook: &Value, opts: Options, mutating: bool, p: &Path, errs: &mut ErrorList) {
    fully_qualified_name(&p.child("name"), str_at(hook, "name").unwrap_or(""), errs);
    if let Some(rules) = hook.get("rules").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            validate_rule(rule, &p.child("rules").index(i), errs);
        }
    }
    not_supported(
        &p.child("failurePolicy"),
        hook.get("failurePolicy"),
        &["Fail", "Ignore"],
        errs,
    );
    not_supported(
        &p.child("matchPolicy"),
        hook.get("matchPolicy"),
        &["Equivalent", "Exact"],
        errs,
    );
    let allowed: &[&str] = if opts.require_no_side_effects {
        &["None", "NoneOnDryRun"]
    } else {
        &["None", "NoneOnDryRun", "Some", "Unknown"]
    };
    match hook.get("sideEffects").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(
            &p.child("sideEffects"),
            format!("must specify one of {}", allowed.join(", ")),
        )),
        v => not_supported(&p.child("sideEffects"), v, allowed, errs),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        errs.push(FieldError::invalid(
            &p.child("timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for sel in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = hook.get(sel).filter(|v| !v.is_null()) {
            errs.extend(validate_label_selector(s, &p.child(sel)));
        }
    }
    if mutating {
        not_supported(
            &p.child("reinvocationPolicy"),
            hook.get("reinvocationPolicy"),
            &["IfNeeded", "Never"],
            errs,
        );
    }
    let cc = hook.get("clientConfig").unwrap_or(&Value::Null);
    let ccp = p.child("clientConfig");
    let url = cc.get("url").filter(|v| !v.is_null());
    let service = cc.get("service").filter(|v| !v.is_null());
    match (url, service) {
        (Some(u), None) => errs.extend(crd_core::crd::validate_webhook_url(
            &ccp.child("url"),
            u.as_str().unwrap_or(""),
        )),
        (None, Some(s)) => errs.extend(crd_core::crd::validate_webhook_service_parts(
            &ccp.child("service"),
            str_at(s, "name").unwrap_or(""),
            str_at(s, "namespace").unwrap_or(""),
            str_at(s, "path"),
            s.get("port")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(443),
        )),
        _ => errs.push(FieldError::required(
            &ccp,
            "exactly one of url or service is required",
        )),
    }
    match_conditions(
        hook.get("matchConditions"),
        &p.child("matchConditions"),
        errs,
    );
}

fn match_conditions(v: Option<&Value>, p: &Path, errs: &mut ErrorList) {
    let Some(conds) = v.and_then(Value::as_array) else {
        return;
    };
    if conds.len() > 64 {
        errs.push(FieldError::too_many(p, conds.len(), 64));
    }
    let mut names = std::collections::HashSet::new();
    for (i, c) in conds.iter().enumerate() {
        let cp = p.index(i);
        let expression = str_at(c, "expression").unwrap_or("").trim();
        if expression.is_empty() {
            errs.push(FieldError::required(&cp.child("expression"), ""));
        } else if let Err(e) =
            crd_cel::Expression::compile_bool(expression, MATCH_CONDITION_VARIABLES)
        {
            errs.push(FieldError::invalid(
                &cp.child("expression"),
                expression,
                format!("compilation failed: {e}"),
            ));
        }
        let name = str_at(c, "name").unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&cp.child("name"), ""));
        } else {
            for m in is_qualified_name(name) {
                errs.push(FieldError::invalid(&cp.child("name"), name, m));
            }
        }
        if !name.is_empty() && !names.insert(name) {
            errs.push(FieldError::duplicate(&cp.child("name"), name));
        }
    }
}

fn has_wildcard(v: &[String]) -> bool {
    v.iter().any(|s| s == "*")
}

/// The operations a rule may name, as upstream lists them.
const OPS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

/// `validateRuleWithOperations` and `validateRule` (subresources allowed).
fn validate_rule(rule: &Value, p: &Path, errs: &mut ErrorList) {
    let ops = strs(rule.get("operations"));
    let op_path = p.child("operations");
    if ops.is_empty() {
        errs.push(FieldError::required(&op_path, ""));
    }
    if ops.len() > 1 && has_wildcard(&ops) {
        errs.push(FieldError::invalid(
            &op_path,
            Value::from(ops.clone()),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPS.contains(&op.as_str()) {
            errs.push(FieldError::not_supported(
                &op_path.index(i),
                op.as_str(),
                OPS,
            ));
        }
    }
    let groups = strs(rule.get("apiGroups"));
    if groups.is_empty() {
        errs.push(FieldError::required(&p.child("apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        errs.push(FieldError::invalid(
            &p.child("apiGroups"),
            Value::from(groups.clone()),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strs(rule.get("apiVersions"));
    let vp = p.child("apiVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(&vp, ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        errs.push(FieldError::invalid(
            &vp,
            Value::from(versions.clone()),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(&vp.index(i), ""));
        }
    }
    validate_resources(&strs(rule.get("resources")), &p.child("resources"), errs);
    not_supported(
        &p.child("scope"),
        rule.get("scope"),
        &["*", "Cluster", "Namespaced"],
        errs,
    );
}

/// `validateResources`.
fn validate_resources(resources: &[String], p: &Path, errs: &mut ErrorList) {
    if resources.is_empty() {
        errs.push(FieldError::required(p, ""));
    }
    let mut with_wildcard_sub = std::collections::HashSet::new();
    let mut sub_with_wildcard_res = std::collections::HashSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, rs) in resources.iter().enumerate() {
        if rs.is_empty() {
            errs.push(FieldError::required(&p.index(i), ""));
            continue;
        }
        double |= rs == "*/*";
        single |= rs == "*";
        let Some((res, sub)) = rs.split_once('/') else {
            plain = rs != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            errs.push(FieldError::invalid(
                &p.index(i),
                rs.as_str(),
                format!("if '{res}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            errs.push(FieldError::invalid(
                &p.index(i),
                rs.as_str(),
                format!("if '*/{sub}' is present, must not specify {rs}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res.to_string());
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub.to_string());
        }
    }
    if resources.len() > 1 && double {
        errs.push(FieldError::invalid(
            p,
            Value::from(resources.to_vec()),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(FieldError::invalid(
            p,
            Value::from(resources.to_vec()),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `validateAdmissionReviewVersions`.
fn review_versions(versions: &[String], require_recognized: bool, p: &Path, errs: &mut ErrorList) {
    if versions.is_empty() {
        errs.push(FieldError::required(
            p,
            format!(
                "must specify one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            errs.push(FieldError::invalid(
                &p.index(i),
                v.as_str(),
                "duplicate version",
            ));
            continue;
        }
        for m in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&p.index(i), v.as_str(), m));
        }
        accepted |= ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str());
    }
    if require_recognized && !accepted {
        errs.push(FieldError::invalid(
            p,
            Value::from(versions.to_vec()),
            format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(extra: &Value) -> Value {
        let mut h = json!({
            "name": "deny.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        if let (Some(m), Some(e)) = (h.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
        h
    }

    fn errors(obj: &Value, old: Option<&Value>) -> Vec<String> {
        let mut errs = ErrorList::new();
        validate(obj, old, true, &mut errs);
        errs.0.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_are_upstreams() {
        let mut obj = json!({"webhooks": [hook(&json!({"clientConfig": {"service": {"namespace": "ns", "name": "svc"}}}))]});
        apply_defaults(&mut obj, true);
        let h = &obj["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["objectSelector"], json!({}));
        assert_eq!(h["rules"][0]["scope"], "*");
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        let mut validating = json!({"webhooks": [hook(&json!({}))]});
        apply_defaults(&mut validating, false);
        assert!(
            validating["webhooks"][0]
                .get("reinvocationPolicy")
                .is_none()
        );
    }

    #[test]
    fn validation_messages() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (hook(&json!({})), vec![]),
            (
                hook(&json!({"name": "deny"})),
                vec![
                    "webhooks[0].name: Invalid value: \"deny\": should be a domain with at least three segments separated by dots",
                ],
            ),
            (
                hook(&json!({"sideEffects": null})),
                vec![
                    "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                ],
            ),
            (
                hook(&json!({"sideEffects": "Unknown"})),
                vec![
                    "webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\"",
                ],
            ),
            (
                hook(&json!({"timeoutSeconds": 31})),
                vec![
                    "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                ],
            ),
            (
                hook(&json!({"admissionReviewVersions": []})),
                vec![
                    "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                ],
            ),
            (
                hook(&json!({"admissionReviewVersions": ["v2"]})),
                vec![
                    "webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
                ],
            ),
            (
                hook(&json!({"clientConfig": {}})),
                vec![
                    "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
                ],
            ),
            (
                hook(&json!({"clientConfig": {"url": "http://example.com/x"}})),
                vec![
                    "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                ],
            ),
            (
                hook(
                    &json!({"rules": [{"operations": ["CREATE", "*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*", "pods"], "scope": "Both"}]}),
                ),
                vec![
                    "webhooks[0].rules[0].operations: Invalid value: [\"CREATE\",\"*\"]: if '*' is present, must not specify other operations",
                    "webhooks[0].rules[0].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources without subresources",
                    "webhooks[0].rules[0].scope: Unsupported value: \"Both\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
                ],
            ),
        ];
        for (h, want) in cases {
            let obj = json!({"webhooks": [h]});
            assert_eq!(errors(&obj, None), want, "{obj}");
        }
        let bad_condition = json!({"webhooks": [hook(&json!({"matchConditions": [
            {"name": "ok", "expression": "request.operation == 'CREATE' && authorizer != null"},
            {"name": "bad", "expression": "nope == 1"}]}))]});
        assert_eq!(
            errors(&bad_condition, None),
            vec![
                "webhooks[0].matchConditions[1].expression: Invalid value: \"nope == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope == 1\n | ^"
            ]
        );
        let dup = json!({"webhooks": [hook(&json!({})), hook(&json!({}))]});
        assert_eq!(
            errors(&dup, None),
            vec!["webhooks[1].name: Duplicate value: \"deny.example.com\""]
        );
        // An update keeps what the old object already had.
        let old = json!({"webhooks": [hook(&json!({"sideEffects": "Some"}))]});
        let new = json!({"webhooks": [hook(&json!({"sideEffects": "Some"}))]});
        assert!(errors(&new, Some(&old)).is_empty());
    }
}
