//! The checks run when a CRD is written (apiextensions `validation.go` for
//! `x-kubernetes-validations`): rule fields, `oldSelf` placement, parsing, type checking against
//! the schema in the environment of the rule's age, result types, and estimated cost.

use std::collections::HashSet;

use crd_core::{ErrorList, FieldError, Path};
use serde_json::Value;

use crate::checker::types::Compat;
use crate::checker::{Env, check as type_check, require_bool, require_string};
use crate::compile::uses_old_self;
use crate::parse::parse;

/// The reasons a rule may give (`reason`).
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Rules and messageExpressions already present before a write (upstream
/// `preexistingExpressions`): they compile in the `StoredExpressions` environment.
struct Preexisting(HashSet<String>);

impl Preexisting {
    fn of(old_schemas: &[Value]) -> Self {
        fn collect(v: &Value, out: &mut HashSet<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array)
                    {
                        for r in rules {
                            for k in ["rule", "messageExpression"] {
                                if let Some(s) = r.get(k).and_then(Value::as_str) {
                                    out.insert(s.to_string());
                                }
                            }
                        }
                    }
                    m.values().for_each(|c| collect(c, out));
                }
                Value::Array(a) => a.iter().for_each(|c| collect(c, out)),
                _ => {}
            }
        }
        let mut out = HashSet::new();
        for s in old_schemas {
            collect(s, &mut out);
        }
        Preexisting(out)
    }

    fn compat(&self, expr: &str) -> Compat {
        if self.0.contains(expr) {
            Compat::StoredExpressions
        } else {
            Compat::NewExpressions
        }
    }
}

/// See [`crate::check_rules`].
pub(crate) fn check(schema: &Value, path: &Path, old_schemas: &[Value]) -> ErrorList {
    let mut errs = ErrorList::new();
    let pre = Preexisting::of(old_schemas);
    walk(schema, path, None, true, &pre, &mut errs);
    errs
}

fn walk(
    node: &Value,
    path: &Path,
    uncorrelatable: Option<&Path>,
    root: bool,
    pre: &Preexisting,
    errs: &mut ErrorList,
) {
    let Some(m) = node.as_object() else {
        return;
    };
    if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
        let base = path.child("x-kubernetes-validations");
        for (i, r) in rules.iter().enumerate() {
            let at = Site {
                node,
                root,
                path: base.index(i),
                uncorrelatable,
            };
            check_one(r, &at, pre, errs);
        }
    }
    let list_type = m
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str)
        .unwrap_or("atomic");
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let p = path.child("properties").key(k);
            walk(v, &p, uncorrelatable, false, pre, errs);
        }
    }
    if let Some(items) = m.get("items") {
        let lost;
        let below = if list_type == "map" {
            uncorrelatable
        } else {
            lost = uncorrelatable.cloned().unwrap_or_else(|| path.clone());
            Some(&lost)
        };
        walk(items, &path.child("items"), below, false, pre, errs);
    }
    if let Some(ap) = m.get("additionalProperties").filter(|a| a.is_object()) {
        let p = path.child("additionalProperties");
        walk(ap, &p, uncorrelatable, false, pre, errs);
    }
}

/// Where a rule sits.
struct Site<'a> {
    node: &'a Value,
    root: bool,
    path: Path,
    uncorrelatable: Option<&'a Path>,
}

fn check_fields(r: &Value, rule: &str, p: &Path, errs: &mut ErrorList) {
    match r.get("message").and_then(Value::as_str) {
        Some(m) if m.trim().is_empty() => {
            errs.push(FieldError::invalid(
                &p.child("message"),
                m,
                "must be non-empty if specified",
            ));
        }
        Some(m) if m.contains('\n') => {
            errs.push(FieldError::invalid(
                &p.child("message"),
                m,
                "must not contain line breaks",
            ));
        }
        None if rule.contains('\n') => errs.push(FieldError::required(
            &p.child("message"),
            "message must be specified if rule contains line breaks",
        )),
        _ => {}
    }
    if let Some(me) = r.get("messageExpression").and_then(Value::as_str)
        && me.trim().is_empty()
    {
        errs.push(FieldError::required(
            &p.child("messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = r.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        errs.push(FieldError::not_supported(
            &p.child("reason"),
            reason,
            &REASONS,
        ));
    }
}

fn check_one(r: &Value, at: &Site<'_>, pre: &Preexisting, errs: &mut ErrorList) {
    let p = &at.path;
    let rule = r.get("rule").and_then(Value::as_str).unwrap_or("");
    if rule.trim().is_empty() {
        errs.push(FieldError::required(
            &p.child("rule"),
            "rule is not specified",
        ));
        return;
    }
    check_fields(r, rule, p, errs);
    let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let parsed = match parse(rule) {
        Ok(e) => e,
        Err(e) => {
            errs.push(FieldError::invalid(
                &p.child("rule"),
                rule,
                format!("compilation failed: {e}"),
            ));
            return;
        }
    };
    let uses_old = uses_old_self(&parsed);
    if optional_old_self && !uses_old {
        errs.push(FieldError::invalid(
            &p.child("optionalOldSelf"),
            true,
            "may not be set if oldSelf is not used in rule",
        ));
    }
    if uses_old && let Some(list) = at.uncorrelatable {
        errs.push(FieldError::invalid(
            &p.child("rule"),
            rule,
            format!(
                "oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
            ),
        ));
    }
    let env = Env {
        self_schema: at.node,
        resource_root: at.root,
        old_self: true,
        optional_old_self,
        compat: pre.compat(rule),
    };
    let checked = match type_check(&parsed, rule, &env).and_then(|c| require_bool(&c).map(|()| c)) {
        Ok(c) => c,
        Err(e) => {
            errs.push(FieldError::invalid(
                &p.child("rule"),
                rule,
                format!("compilation failed: {e}"),
            ));
            return;
        }
    };
    if let Some(me) = r.get("messageExpression").and_then(Value::as_str)
        && !me.trim().is_empty()
    {
        let env = Env {
            compat: pre.compat(me),
            ..env
        };
        let result = parse(me).and_then(|e| {
            let c = type_check(&e, me, &env)?;
            require_string(&c)
        });
        if let Err(e) = result {
            errs.push(FieldError::invalid(
                &p.child("messageExpression"),
                me,
                format!("messageExpression compilation failed: {e}"),
            ));
        }
    }
    let _ = checked;
    for w in legacy_cost(r, rule, at.node) {
        errs.push(FieldError::forbidden(&p.child("rule"), w));
    }
}

fn legacy_cost(r: &Value, rule: &str, node: &Value) -> Vec<String> {
    let mut single = node.clone();
    if let Some(m) = single.as_object_mut() {
        m.insert(
            "x-kubernetes-validations".into(),
            Value::Array(vec![r.clone()]),
        );
    }
    let compiled = kube_cel::compile_schema(&single);
    kube_cel::estimate_rule_cost(rule, &compiled)
        .into_iter()
        .filter(|w| w.kind == kube_cel::WarningKind::CostExceeded)
        .map(|w| format!(
            "estimated rule cost exceeds budget by factor of {} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
            cost_factor(&w.message)
        ))
        .collect()
}
/// Upstream's factor text from kube-cel's `estimated cost N exceeds K8s budget M`:
/// `more than 100x`, `%fx` below 1.5, else `%.1fx`.
fn cost_factor(message: &str) -> String {
    let after = |word: &str| -> Option<f64> {
        let rest = &message[message.find(word)? + word.len()..];
        rest.split_whitespace()
            .next()?
            .trim_end_matches([';', ','])
            .parse()
            .ok()
    };
    let factor = match (after("cost "), after("budget ")) {
        (Some(cost), Some(budget)) if budget > 0.0 => cost / budget,
        _ => f64::INFINITY,
    };
    if factor > 100.0 {
        "more than 100x".into()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    }
}
