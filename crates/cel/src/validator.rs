//! Evaluation of every rule of a schema against an object, as Kubernetes' CEL `Validator` does
//! it: a walk of the schema and the object together, one cost budget per object, transition
//! rules only where an old value correlates, ratcheting of unchanged failures, and the error
//! texts of Kubernetes 1.32–1.34 (`spec: Invalid value: "object": <message>`).

use crd_core::{ErrorList, FieldError, Path};
use kube_cel::cel::Value;
use kube_cel::cel::objects::OptionalValue;
use serde_json::Value as Json;

use crate::compile::{CompiledRule, Node};
use crate::eval::{EvalError, run, to_cel};

/// apiserver `RuntimeCELCostBudget`: the total for all rules of one object.
pub(crate) const RUNTIME_BUDGET: i64 = 10_000_000;
/// apiserver `PerCallLimit`: the limit for one rule's evaluation.
pub(crate) const PER_CALL_LIMIT: i64 = 1_000_000;
/// apiserver `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5120;

/// How a node's value relates to the old object, for `oldSelf` and ratcheting
/// (Kubernetes' `ratchetingOptions`).
#[derive(Clone, Copy)]
enum Corr<'a> {
    /// The node correlates; the old value if there is one.
    Node(Option<&'a Json>),
    /// The node does not correlate; whether its nearest correlated ancestor is unchanged.
    Lost(bool),
}

impl<'a> Corr<'a> {
    fn old(self) -> Option<&'a Json> {
        match self {
            Corr::Node(old) => old,
            Corr::Lost(_) => None,
        }
    }

    fn ratchets(self, new: &Json) -> bool {
        match self {
            Corr::Node(old) => old == Some(new),
            Corr::Lost(parent_equal) => parent_equal,
        }
    }
}

/// One validation run: errors, ratcheted warnings and the budget left.
pub(crate) struct Run {
    pub errs: ErrorList,
    pub warnings: Vec<String>,
    budget: i64,
}

impl Run {
    /// Validates `new` (and `old` on update) against the compiled tree.
    pub(crate) fn validate(root: &Node, new: &Json, old: Option<&Json>) -> Run {
        let mut run = Run {
            errs: ErrorList::new(),
            warnings: Vec::new(),
            budget: RUNTIME_BUDGET,
        };
        // The validator starts with a nil path: root rules report `<nil>`.
        run.node(root, &Path::root(), new, Corr::Node(old), true);
        run
    }

    /// Evaluates the rules of `root` against a value with no old one, reporting under `base`
    /// (a default value checked when its CRD is written).
    pub(crate) fn validate_at(root: &Node, new: &Json, base: &Path) -> Run {
        let mut run = Run {
            errs: ErrorList::new(),
            warnings: Vec::new(),
            budget: RUNTIME_BUDGET,
        };
        run.node(root, base, new, Corr::Node(None), false);
        run
    }

    /// Returns false once the budget is gone (no further rules run).
    fn node(&mut self, n: &Node, path: &Path, new: &Json, corr: Corr<'_>, root: bool) -> bool {
        if new.is_null() {
            return true;
        }
        if !n.rules.is_empty() && !self.rules(n, path, new, corr) {
            return false;
        }
        match new {
            Json::Object(m) => {
                for (k, v) in m {
                    let sub = n
                        .properties
                        .get(k)
                        .or(n.additional.as_deref().filter(|_| n.properties.is_empty()));
                    let Some(sub) = sub else { continue };
                    let child_path = if n.properties.contains_key(k) {
                        path.child(k)
                    } else {
                        path.key(k)
                    };
                    let child_corr = match corr {
                        Corr::Lost(_) => corr,
                        // apiVersion and kind at the root never ratchet.
                        Corr::Node(_) if root && (k == "apiVersion" || k == "kind") => {
                            Corr::Lost(false)
                        }
                        Corr::Node(old) => Corr::Node(old.and_then(|o| o.get(k))),
                    };
                    if !self.node(sub, &child_path, v, child_corr, false) {
                        return false;
                    }
                }
            }
            Json::Array(items) => {
                let Some(sub) = n.items.as_deref() else {
                    return true;
                };
                for (i, item) in items.iter().enumerate() {
                    let child_corr = match (corr, &n.map_keys) {
                        (Corr::Lost(_), _) => corr,
                        (Corr::Node(old), Some(keys)) => Corr::Node(
                            old.and_then(Json::as_array)
                                .and_then(|olds| olds.iter().find(|o| same_keys(o, item, keys))),
                        ),
                        (Corr::Node(old), None) => Corr::Lost(old == Some(new)),
                    };
                    if !self.node(sub, &path.index(i), item, child_corr, false) {
                        return false;
                    }
                }
            }
            _ => {}
        }
        true
    }

    fn rules(&mut self, n: &Node, path: &Path, new: &Json, corr: Corr<'_>) -> bool {
        let ty = n.type_name.as_str();
        if self.budget <= 0 {
            self.errs.push(FieldError::invalid(
                path,
                ty,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            return false;
        }
        let self_val = to_cel(new, &n.schema, n.resource);
        let old = corr.old();
        let old_val = old.map(|o| to_cel(o, &n.schema, n.resource));
        for rule in &n.rules {
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let Some(program) = &rule.program else {
                continue;
            };
            let mut vars = vec![("self", self_val.clone())];
            if rule.optional_old_self {
                let opt = match &old_val {
                    Some(v) => OptionalValue::of(v.clone()),
                    None => OptionalValue::none(),
                };
                vars.push(("oldSelf", Value::Opaque(std::sync::Arc::new(opt))));
            } else if let Some(v) = &old_val {
                vars.push(("oldSelf", v.clone()));
            }
            let (result, cost) = run(program, &vars, PER_CALL_LIMIT);
            if cost > self.budget {
                self.errs.push(FieldError::invalid(
                    path,
                    ty,
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                return false;
            }
            self.budget -= cost;
            let passed = match result {
                Ok(Value::Bool(true)) => continue,
                Ok(Value::Bool(false)) => false,
                Ok(_) => {
                    self.errs.push(FieldError::invalid(
                        path,
                        ty,
                        format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        ),
                    ));
                    continue;
                }
                Err(EvalError::CostLimit) => {
                    self.errs.push(FieldError::invalid(
                        path,
                        ty,
                        format!(
                            "'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                            crate::eval::COST_LIMIT_EXCEEDED,
                            rule.error_string()
                        ),
                    ));
                    return false;
                }
                Err(EvalError::Runtime(e)) if e.starts_with("no such overload") => {
                    self.errs.push(FieldError::invalid(
                        path,
                        ty,
                        format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        ),
                    ));
                    continue;
                }
                Err(EvalError::Runtime(e)) => {
                    self.errs.push(FieldError::invalid(
                        path,
                        ty,
                        format!("{e} evaluating rule: {}", rule.error_string()),
                    ));
                    continue;
                }
            };
            debug_assert!(!passed);
            let field_path = match &rule.field_path {
                Some(fp) => path.child(fp),
                None => path.clone(),
            };
            let detail = match self.message(rule, &vars) {
                Ok(Some(m)) => m,
                Ok(None) => rule.default_message(),
                Err(stop) => {
                    self.push(rule, corr, new, FieldError::invalid(&field_path, ty, stop));
                    return false;
                }
            };
            let error = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(&field_path, detail),
                Some("FieldValueRequired") => FieldError::required(&field_path, detail),
                Some("FieldValueDuplicate") => FieldError::duplicate(&field_path, ty),
                _ => FieldError::invalid(&field_path, ty, detail),
            };
            self.push(rule, corr, new, error);
        }
        true
    }

    /// Ratcheting: a rule without oldSelf failing where the value is unchanged only warns.
    fn push(&mut self, rule: &CompiledRule, corr: Corr<'_>, new: &Json, error: FieldError) {
        if !rule.uses_old_self && corr.ratchets(new) {
            self.warnings.push(error.to_string());
        } else {
            self.errs.push(error);
        }
    }

    /// The evaluated messageExpression: `Ok(None)` falls back to the message; `Err` stops
    /// validation with the given detail (budget exhausted).
    fn message(
        &mut self,
        rule: &CompiledRule,
        vars: &[(&str, Value)],
    ) -> Result<Option<String>, String> {
        let Some(program) = rule.message_program.as_ref() else {
            return Ok(None);
        };
        let (result, cost) = run(program, vars, PER_CALL_LIMIT);
        if cost > self.budget {
            return Err("messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".into());
        }
        if result == Err(EvalError::CostLimit) {
            return Err(format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}",
                rule.message_expression.as_deref().unwrap_or("")
            ));
        }
        self.budget -= cost;
        Ok(match result {
            Ok(Value::String(s)) => {
                let t = s.trim();
                (!t.is_empty() && t.len() <= MAX_MESSAGE_BYTES && !t.contains('\n'))
                    .then(|| t.to_string())
            }
            _ => None,
        })
    }
}

/// Whether two items of a map list have the same values for every key.
fn same_keys(a: &Json, b: &Json, keys: &[String]) -> bool {
    keys.iter().all(|k| a.get(k) == b.get(k))
}
