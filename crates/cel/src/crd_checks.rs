//! The checks run when a CRD is written (apiextensions `validation.go` for
//! `x-kubernetes-validations`): rule fields, `oldSelf` placement, parsing, type checking against
//! the schema in the environment of the rule's age, result types, and estimated cost.

use std::collections::HashSet;

use crd_core::{ErrorList, FieldError, Path};
use serde_json::Value;

use crate::checker::types::Compat;
use crate::checker::{Env, check as type_check, require_bool, require_string};
use crate::compile::uses_old_self;
use crate::cost;
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
    let mut totals = Totals::default();
    let mut w = Walk {
        pre: &pre,
        totals: &mut totals,
        errs: &mut errs,
    };
    w.node(schema, path, None, true, 1);
    totals.report(path, &mut errs);
    errs
}

/// The walk over a schema's nodes.
struct Walk<'a> {
    pre: &'a Preexisting,
    totals: &'a mut Totals,
    errs: &'a mut ErrorList,
}

impl Walk<'_> {
    fn node(
        &mut self,
        node: &Value,
        path: &Path,
        uncorrelatable: Option<&Path>,
        root: bool,
        cardinality: u64,
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
                    cardinality,
                };
                check_one(r, &at, self.pre, self.totals, self.errs);
            }
        }
        let list_type = m
            .get("x-kubernetes-list-type")
            .and_then(Value::as_str)
            .unwrap_or("atomic");
        if let Some(props) = m.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                let p = path.child("properties").key(k);
                self.node(v, &p, uncorrelatable, false, cardinality);
            }
        }
        // Items and map values run once per element.
        let many = cardinality.saturating_mul(cost::schema_size(node).max(1));
        if let Some(items) = m.get("items") {
            let lost;
            let below = if list_type == "map" {
                uncorrelatable
            } else {
                lost = uncorrelatable.cloned().unwrap_or_else(|| path.clone());
                Some(&lost)
            };
            self.node(items, &path.child("items"), below, false, many);
        }
        if let Some(ap) = m.get("additionalProperties").filter(|a| a.is_object()) {
            let p = path.child("additionalProperties");
            self.node(ap, &p, uncorrelatable, false, many);
        }
    }
}

/// Where a rule sits.
struct Site<'a> {
    node: &'a Value,
    root: bool,
    path: Path,
    uncorrelatable: Option<&'a Path>,
    /// How many times a rule here can run for one object (upstream `MaxCardinality`).
    cardinality: u64,
}

/// The estimated cost of every expression of one schema (upstream `TotalCost`).
#[derive(Default)]
struct Totals {
    total: u64,
    costs: Vec<(Path, u64)>,
}

impl Totals {
    fn observe(&mut self, path: Path, cost: u64) {
        self.total = self.total.saturating_add(cost);
        self.costs.push((path, cost));
    }

    /// Upstream keeps the four most expensive expressions to name them.
    fn report(mut self, schema_path: &Path, errs: &mut ErrorList) {
        if self.total <= cost::CRD_LIMIT {
            return;
        }
        self.costs.sort_by_key(|c| std::cmp::Reverse(c.1));
        for (path, _) in self.costs.iter().take(4) {
            errs.push(FieldError::forbidden(
                path,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(FieldError::forbidden(
            schema_path,
            cost::error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                self.total,
                cost::CRD_LIMIT,
            ),
        ));
    }
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

fn check_one(
    r: &Value,
    at: &Site<'_>,
    pre: &Preexisting,
    totals: &mut Totals,
    errs: &mut ErrorList,
) {
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
        dyn_vars: &[],
        self_schema: at.node,
        resource_root: at.root,
        old_self: true,
        optional_old_self,
        compat: pre.compat(rule),
        typed_vars: &[],
        mutation: false,
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
            typed_vars: &[],
            ..env
        };
        let result = parse(me).and_then(|e| {
            let c = type_check(&e, me, &env)?;
            require_string(&c)?;
            Ok(cost::estimate(&e, &c).saturating_mul(at.cardinality))
        });
        match result {
            Err(e) => errs.push(FieldError::invalid(
                &p.child("messageExpression"),
                me,
                format!("messageExpression compilation failed: {e}"),
            )),
            Ok(cost) => {
                totals.observe(p.child("messageExpression"), cost);
                if cost > cost::RULE_LIMIT {
                    errs.push(FieldError::forbidden(
                        &p.child("messageExpression"),
                        cost::error_message(
                            "estimated messageExpression cost",
                            cost,
                            cost::RULE_LIMIT,
                        ),
                    ));
                }
            }
        }
    }
    let cost = cost::estimate(&parsed, &checked).saturating_mul(at.cardinality);
    totals.observe(p.child("rule"), cost);
    if cost > cost::RULE_LIMIT {
        errs.push(FieldError::forbidden(
            &p.child("rule"),
            cost::error_message("estimated rule cost", cost, cost::RULE_LIMIT),
        ));
    }
}
