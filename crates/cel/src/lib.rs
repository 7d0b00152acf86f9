//! CEL validation rules (`x-kubernetes-validations`) for crd-apiserver, built on kube-cel (the
//! kube-rs port of the Kubernetes CEL libraries and rule evaluator).
//!
//! - [`CompiledRules`]: every rule of one version's schema, compiled once per CRD revision.
//! - [`check_rules`]: the checks run when a CRD is written (rule fields, compilation, `oldSelf`
//!   placement, fields a rule names that the schema does not declare, a coarse cost bound).
//! - [`validate`]: evaluation against an object (and the old object on update), as field errors
//!   with Kubernetes' texts (1.32–1.34 form: `<path>: Invalid value: "object": <message>`).
//!
//! What kube-cel does not provide is approximated and said so where it matters: there is no full
//! CEL type checker or Kubernetes cost model; runtime cost is bounded by kube-cel's own limits.
//!
//! Architecture Invariant: this crate does no IO; schemas and objects in, field errors out.

mod checker;
mod compile;
mod eval;
mod parse;
mod types;
mod validator;

use crd_core::{ErrorList, FieldError, Path};
use kube_cel::compile_schema;
use serde_json::Value;

/// The reasons a rule may give (`reason`).
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Every rule of one version's `openAPIV3Schema`, compiled once per CRD revision.
#[derive(Debug)]
pub struct CompiledRules {
    root: Option<compile::Node>,
}

impl CompiledRules {
    /// Compiles every rule and `messageExpression` in the schema.
    pub fn compile(schema: &Value) -> Self {
        CompiledRules {
            root: compile::tree(schema, true),
        }
    }

    /// Whether the schema has no rule at all (the server then skips evaluation).
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }
}

/// Evaluates the rules against an object; `old` is the current object on update (transition
/// rules run only then). Returns field errors, and warnings for failures ratcheted because the
/// value they judge is unchanged from the old object.
pub fn validate(
    rules: &CompiledRules,
    new: &Value,
    old: Option<&Value>,
) -> (ErrorList, Vec<String>) {
    let Some(root) = &rules.root else {
        return (ErrorList::new(), Vec::new());
    };
    let run = validator::Run::validate(root, new, old);
    (run.errs, run.warnings)
}

/// The checks run when a CRD is written, for the rules of the schema at `path`
/// (`spec.validation.openAPIV3Schema` or `spec.versions[i].schema.openAPIV3Schema`).
pub fn check_rules(schema: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    walk(schema, path, None, &mut errs);
    errs
}

/// Escapes a property name as the Kubernetes CEL environment exposes it.
pub(crate) fn escape(name: &str) -> Option<String> {
    const RESERVED: [&str; 22] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
        "__",
    ];
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let escaped = name
        .replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__");
    let ok = escaped
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && escaped
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(escaped)
}

/// Fields a rule reads from `self` (`self.a`, `has(self.a)`) that the node does not declare.
fn undefined_fields(rule: &str, node: &Value) -> Vec<String> {
    let Some(props) = node.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let declared: Vec<String> = props.keys().filter_map(|k| escape(k)).collect();
    let mut out = Vec::new();
    let bytes = rule.as_bytes();
    let mut i = 0;
    while let Some(pos) = rule[i..].find("self.") {
        let start = i + pos;
        let preceded = start > 0
            && (bytes[start - 1].is_ascii_alphanumeric()
                || bytes[start - 1] == b'_'
                || bytes[start - 1] == b'.');
        let ident: String = rule[start + 5..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let is_call = rule[start + 5 + ident.len()..].starts_with('(');
        if !preceded
            && !ident.is_empty()
            && !is_call
            && !declared.contains(&ident)
            && !out.contains(&ident)
        {
            out.push(ident.clone());
        }
        i = start + 5 + ident.len().max(1);
        if i >= rule.len() {
            break;
        }
    }
    out
}

fn walk(node: &Value, path: &Path, uncorrelatable: Option<&Path>, errs: &mut ErrorList) {
    let Some(m) = node.as_object() else {
        return;
    };
    if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
        let base = path.child("x-kubernetes-validations");
        for (i, r) in rules.iter().enumerate() {
            check_one(r, node, &base.index(i), uncorrelatable, errs);
        }
    }
    let list_type = m
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str)
        .unwrap_or("atomic");
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            walk(v, &path.child("properties").key(k), uncorrelatable, errs);
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
        walk(items, &path.child("items"), below, errs);
    }
    if let Some(ap) = m.get("additionalProperties").filter(|a| a.is_object()) {
        walk(
            ap,
            &path.child("additionalProperties"),
            uncorrelatable,
            errs,
        );
    }
}

fn check_one(
    r: &Value,
    node: &Value,
    p: &Path,
    uncorrelatable: Option<&Path>,
    errs: &mut ErrorList,
) {
    let rule = r.get("rule").and_then(Value::as_str).unwrap_or("");
    if rule.trim().is_empty() {
        errs.push(FieldError::required(
            &p.child("rule"),
            "rule is not specified",
        ));
        return;
    }
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
    let uses_old_self = rule.contains("oldSelf");
    if r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true) && !uses_old_self {
        errs.push(FieldError::invalid(
            &p.child("optionalOldSelf"),
            true,
            "may not be set if oldSelf is not used in rule",
        ));
    }
    if uses_old_self && let Some(list) = uncorrelatable {
        errs.push(FieldError::invalid(
            &p.child("rule"),
            rule,
            format!(
                "oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
            ),
        ));
    }
    if let Err(e) = parse::parse(rule) {
        errs.push(FieldError::invalid(
            &p.child("rule"),
            rule,
            format!("compilation failed: {e}"),
        ));
        return;
    }
    if let Some(me) = r.get("messageExpression").and_then(Value::as_str)
        && !me.trim().is_empty()
        && let Err(e) = parse::parse(me)
    {
        errs.push(FieldError::invalid(
            &p.child("messageExpression"),
            me,
            format!("messageExpression compilation failed: {e}"),
        ));
    }
    if let Some(e) = types::type_errors(rule, node) {
        errs.push(FieldError::invalid(
            &p.child("rule"),
            rule,
            format!("compilation failed: {e}"),
        ));
        return;
    }
    let undefined = undefined_fields(rule, node);
    if !undefined.is_empty() {
        errs.push(FieldError::invalid(
            &p.child("rule"),
            rule,
            format!(
                "compilation failed: ERROR: <input>:1:1: undefined field '{}'",
                undefined[0]
            ),
        ));
    }
    let mut single = node.clone();
    if let Some(m) = single.as_object_mut() {
        m.insert(
            "x-kubernetes-validations".into(),
            Value::Array(vec![r.clone()]),
        );
    }
    let compiled = compile_schema(&single);
    for w in kube_cel::estimate_rule_cost(rule, &compiled) {
        if w.kind == kube_cel::WarningKind::CostExceeded {
            errs.push(FieldError::forbidden(
                &p.child("rule"),
                format!(
                    "estimated rule cost exceeds budget by factor of {} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                    cost_factor(&w.message)
                ),
            ));
        }
    }
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod factor_tests {
    #[test]
    fn factors_print_as_upstream() {
        assert_eq!(
            super::cost_factor("estimated cost 2000000000 exceeds K8s budget 10000000"),
            "more than 100x"
        );
        assert_eq!(
            super::cost_factor("estimated cost 25000000 exceeds K8s budget 10000000"),
            "2.5x"
        );
        assert_eq!(
            super::cost_factor("estimated cost 12000000 exceeds K8s budget 10000000"),
            "1.200000x"
        );
    }
}
