//! CEL validation rules (`x-kubernetes-validations`) for crd-apiserver. kube-cel supplies the
//! cel 0.13 parser and interpreter and the Kubernetes libraries; the Kubernetes semantics on top
//! are this crate's own, one module per step: `parse` (optional syntax, two-variable
//! comprehensions), `checker` (a CEL type checker with cel-go's texts, schema types and the
//! Kubernetes library declarations by release), `cost` (the static estimate and runtime
//! accounting of the Kubernetes cost model), `eval` (lowering and evaluation under a cost limit)
//! and `validator` (walking an object: budgets, transition rules, ratcheting, error texts).
//!
//! - [`CompiledRules`]: every rule of one version's schema, compiled once per CRD revision.
//! - [`check_rules`]: the checks run when a CRD is written (rule fields, type checking,
//!   `oldSelf` placement, undeclared fields, the per-rule and per-CRD cost limits);
//!   [`check_default_rules`]: defaults against the rules over them.
//! - [`Expression`]: an admission expression (webhook `matchConditions`) over `dyn` variables;
//!   [`Authorizer`] binds the `authorizer` variable to the caller's [`Authorize`].
//! - [`PolicyTypes`]: an admission policy's expressions type-checked against a matched kind's
//!   schema (the policy's `status.typeChecking`).
//! - [`conversion`]: declarative CRD conversion (`strategy: ConversionRules`, KEP-3945):
//!   transformations over `self` applied between versions, their CRD-write checks and the
//!   round-trip check.
//! - [`mutation`]: what a mutating admission policy's `Object{...}` / `JSONPatch{...}`
//!   expressions produce, read back as JSON.
//! - [`validate`]: evaluation against an object (and the old object on update), as field errors
//!   with Kubernetes' texts (1.32–1.34 form: `<path>: Invalid value: "object": <message>`).
//!
//! Architecture Invariant: this crate does no IO; schemas and objects in, field errors out.

mod authz;
mod checker;
mod compile;
pub mod conversion;
mod cost;
mod crd_checks;
mod eval;
mod expression;
pub mod mutation;
mod parse;
mod policy_check;
mod validator;

pub use authz::{Authorize, Authorizer, AuthzCheck, AuthzDecision};
pub use expression::{Bindings, Expression, ExpressionError, Reads};
pub use policy_check::PolicyTypes;

use crd_core::{ErrorList, Path};
use serde_json::Value;

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
/// `old_schemas` are the schemas of the CRD before this write: rules and messageExpressions
/// already in them compile with every library (Kubernetes' `StoredExpressions` environment); new
/// ones only with the libraries of the compatibility version.
pub fn check_rules(schema: &Value, path: &Path, old_schemas: &[Value]) -> ErrorList {
    crd_checks::check(schema, path, old_schemas)
}

/// Every `default` of the schema at `path` checked against the rules of the schema it sits in
/// (and those below it), as upstream's `structuraldefaulting` validation runs the CEL validator
/// on each default when a CRD is written: a default no object could keep is refused then, not
/// on every create that leaves the field out. Errors are at `<schema path>.default`.
pub fn check_default_rules(schema: &Value, path: &Path) -> ErrorList {
    fn walk(node: &Value, path: &Path, errs: &mut ErrorList) {
        let Some(m) = node.as_object() else { return };
        if let Some(default) = m.get("default")
            && let Some(rules) = compile::tree(node, false)
        {
            let run = validator::Run::validate_at(&rules, default, &path.child("default"));
            errs.extend(run.errs);
        }
        if let Some(props) = m.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                walk(v, &path.child("properties").key(k), errs);
            }
        }
        if let Some(items) = m.get("items") {
            walk(items, &path.child("items"), errs);
        }
        if let Some(more) = m.get("additionalProperties").filter(|a| a.is_object()) {
            walk(more, &path.child("additionalProperties"), errs);
        }
    }
    let mut errs = ErrorList::new();
    walk(schema, path, &mut errs);
    errs
}

#[cfg(test)]
mod tests;
