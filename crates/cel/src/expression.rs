//! Admission expressions: a CEL expression over named `dyn` variables (`object`, `oldObject`,
//! `request`, ...), as webhook `matchConditions` and admission policies declare them. Compiled
//! once (parse, type check in the stored-expressions environment, lower) and evaluated with JSON
//! values under a per-call cost limit.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::common::ast::{Expr, IdedExpr};
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, Value};
use serde_json::Value as Json;

use crate::checker::types::Type;
use crate::checker::{Compat, Env, check};
use crate::eval::{EvalError, Program, lower, run, run_in, scope};
use crate::parse::parse;

/// A compiled admission expression.
#[derive(Debug)]
pub struct Expression {
    program: Program,
}

/// Variables converted once to the interpreter's values and bound in one scope, shared by
/// several evaluations (an admission policy's conditions, variables and validations see the
/// same object). Binding converts a whole value (cel 0.13 copies it into its own
/// representation), so bind once per request, not once per expression.
pub struct Bindings {
    scope: Context<'static>,
    names: Vec<&'static str>,
}

impl std::fmt::Debug for Bindings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bindings")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl Default for Bindings {
    fn default() -> Self {
        Bindings {
            scope: scope(),
            names: Vec::new(),
        }
    }
}

impl Bindings {
    /// Binds each variable to a JSON value (`null` for an absent one).
    pub fn new(vars: &[(&'static str, &Json)]) -> Self {
        let mut b = Bindings::default();
        for (name, v) in vars {
            b.set(name, v);
        }
        b
    }

    /// Binds (or rebinds) `name` to an authorizer (the `authorizer` variable).
    pub fn set_authorizer(&mut self, name: &'static str, authorizer: &crate::Authorizer) {
        self.bind(name, authorizer.value());
    }

    /// Binds (or rebinds) one variable.
    pub fn set(&mut self, name: &'static str, value: &Json) {
        self.bind(name, to_dyn(value));
    }

    fn bind(&mut self, name: &'static str, value: Value) {
        if !self.names.contains(&name) {
            self.names.push(name);
        }
        self.scope.add_variable_from_value(name, value);
    }
}

/// The parts of a variable's value some expressions read: the value's fields along select
/// chains (`object.spec.replicas` reads `spec.replicas`), or the whole value when an expression
/// uses the variable any other way (`object.size()` reads `object`'s whole `...`, an index, an
/// optional select, the variable alone). Binding only what is read saves converting the rest of
/// a large object (its `managedFields`, say) for every request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    whole: bool,
    paths: Vec<Vec<String>>,
}

impl Reads {
    /// Reads of the whole value (what to bind when nothing is known).
    pub fn whole() -> Self {
        Reads {
            whole: true,
            paths: Vec::new(),
        }
    }

    /// Whether the variable's field `field` is read by a select (`claims.email`), as
    /// kube-apiserver's `hasSelectExp` asks of authentication expressions.
    pub fn selects(&self, field: &str) -> bool {
        self.paths
            .iter()
            .any(|p| p.first().is_some_and(|f| f == field))
    }

    /// Adds what `other` reads.
    pub fn add(&mut self, other: &Reads) {
        self.whole |= other.whole;
        for p in &other.paths {
            if !self.paths.contains(p) {
                self.paths.push(p.clone());
            }
        }
    }

    /// `value` with only what is read: every read path that exists, each with its whole
    /// subtree (a path through something other than an object keeps that whole value).
    pub fn prune<'v>(&self, value: &'v Json) -> std::borrow::Cow<'v, Json> {
        if self.whole || !value.is_object() {
            return std::borrow::Cow::Borrowed(value);
        }
        let mut out = Json::Object(serde_json::Map::new());
        for path in &self.paths {
            keep(value, &mut out, path);
        }
        std::borrow::Cow::Owned(out)
    }
}

/// Copies `src` at `path` into `dst` (both at the same place of the value).
fn keep(src: &Json, dst: &mut Json, path: &[String]) {
    let (Some((key, rest)), Json::Object(m)) = (path.split_first(), src) else {
        *dst = src.clone();
        return;
    };
    let Some(child) = m.get(key) else {
        return;
    };
    let Some(d) = dst.as_object_mut() else {
        return;
    };
    let slot = d.entry(key.clone()).or_insert_with(|| {
        if rest.is_empty() || !child.is_object() {
            child.clone()
        } else {
            Json::Object(serde_json::Map::new())
        }
    });
    if !rest.is_empty() {
        keep(child, slot, rest);
    }
}

/// Collects what `e` reads of `var` into `out`.
fn collect_reads(e: &mut IdedExpr, var: &str, out: &mut Reads) {
    // A select chain rooted at the variable: its fields, outermost last.
    let mut fields = Vec::new();
    let mut at: &IdedExpr = e;
    while let Expr::Select(s) = &at.expr {
        fields.push(s.field.clone());
        at = &s.operand;
    }
    if matches!(&at.expr, Expr::Ident(n) if n == var) {
        if fields.is_empty() {
            out.whole = true;
        } else {
            fields.reverse();
            if !out.paths.contains(&fields) {
                out.paths.push(fields);
            }
        }
        return;
    }
    crate::parse::children_mut(e, &mut |c| collect_reads(c, var, out));
}

/// Why an evaluation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpressionError {
    /// The per-call cost limit was passed.
    CostLimit,
    /// A runtime error in cel-go's words (`no such key: x`).
    Runtime(String),
    /// The result was not a bool.
    NotBool,
}

impl Expression {
    /// Compiles a boolean expression over `vars` (each typed `dyn`). `Err` is the compilation
    /// error text Kubernetes prints after `compilation failed: `.
    pub fn compile_bool(source: &str, vars: &'static [&'static str]) -> Result<Self, String> {
        Self::compile_with(source, vars, |t| {
            if *t == Type::Bool {
                Ok(())
            } else {
                Err(crate::checker::RULE_NOT_BOOL.to_string())
            }
        })
    }

    /// Compiles an expression of any type over `vars` (an admission policy's `variables`).
    pub fn compile_value(source: &str, vars: &'static [&'static str]) -> Result<Self, String> {
        Self::compile_with(source, vars, |_| Ok(()))
    }

    /// Compiles a `messageExpression`: its type must be `string` (or `dyn`, checked when it
    /// runs).
    pub fn compile_message(source: &str, vars: &'static [&'static str]) -> Result<Self, String> {
        Self::compile_with(source, vars, |t| {
            if matches!(t, Type::String | Type::Dyn) {
                Ok(())
            } else {
                Err(crate::checker::MESSAGE_NOT_STRING.to_string())
            }
        })
    }

    /// Compiles a mutating admission policy's `applyConfiguration.expression`: an `Object{...}`
    /// initializer (`Err("must evaluate to Object")` for any other type). Evaluate it with
    /// [`Expression::eval_with`] and read the result with [`crate::mutation::object_value`].
    pub fn compile_apply_configuration(
        source: &str,
        vars: &'static [&'static str],
    ) -> Result<Self, String> {
        Self::compile_in(source, vars, true, |t| match t {
            Type::Opaque(n, _) if *n == crate::checker::MUTATION_OBJECT => Ok(()),
            _ => Err(crate::mutation::NOT_OBJECT.to_string()),
        })
    }

    /// Compiles a mutating admission policy's `jsonPatch.expression`: a list of `JSONPatch{...}`
    /// (`Err("must evaluate to list(JSONPatch)")` for any other type). Read the result with
    /// [`crate::mutation::json_patch`].
    pub fn compile_json_patch(source: &str, vars: &'static [&'static str]) -> Result<Self, String> {
        Self::compile_in(source, vars, true, |t| match t {
            // An empty list types as `list(dyn)`; its elements are checked when read.
            Type::List(e)
                if matches!(e.as_ref(), Type::Opaque(n, _) if *n == crate::checker::JSON_PATCH)
                    || matches!(e.as_ref(), Type::Dyn | Type::Var(_)) =>
            {
                Ok(())
            }
            _ => Err(crate::mutation::NOT_JSON_PATCH.to_string()),
        })
    }

    fn compile_with(
        source: &str,
        vars: &'static [&'static str],
        want: impl Fn(&Type) -> Result<(), String>,
    ) -> Result<Self, String> {
        Self::compile_in(source, vars, false, want)
    }

    fn compile_in(
        source: &str,
        vars: &'static [&'static str],
        mutation: bool,
        want: impl Fn(&Type) -> Result<(), String>,
    ) -> Result<Self, String> {
        let expr = parse(source)?;
        let env = Env {
            dyn_vars: vars,
            self_schema: &Json::Null,
            resource_root: false,
            old_self: false,
            optional_old_self: false,
            compat: Compat::StoredExpressions,
            typed_vars: &[],
            mutation,
        };
        let checked = check(&expr, source, &env)?;
        want(&checked.result)?;
        Ok(Expression {
            program: lower(expr, &checked),
        })
    }

    /// What this expression reads of the variable `var` (see [`Reads`]).
    pub fn reads(&self, var: &str) -> Reads {
        let mut out = Reads::default();
        let mut expr = self.program.expr.clone();
        collect_reads(&mut expr, var, &mut out);
        out
    }

    /// Evaluates to a JSON value (timestamps, durations and bytes as their strings), with each
    /// variable bound to a JSON value, under `cost_limit`.
    pub fn eval(&self, vars: &[(&str, &Json)], cost_limit: i64) -> Result<Json, ExpressionError> {
        let bound: Vec<(&str, Value)> = vars.iter().map(|(n, v)| (*n, to_dyn(v))).collect();
        match run(&self.program, &bound, cost_limit).0 {
            Ok(v) => Ok(from_cel(&v)),
            Err(EvalError::CostLimit) => Err(ExpressionError::CostLimit),
            Err(EvalError::Runtime(e)) => Err(ExpressionError::Runtime(e)),
        }
    }

    /// Evaluates to a bool with pre-converted [`Bindings`], under `cost_limit`.
    pub fn eval_bool_with(&self, b: &Bindings, cost_limit: i64) -> Result<bool, ExpressionError> {
        match self.eval_cel(b, cost_limit)? {
            Value::Bool(v) => Ok(v),
            _ => Err(ExpressionError::NotBool),
        }
    }

    /// Evaluates to JSON with pre-converted [`Bindings`], under `cost_limit`.
    pub fn eval_with(&self, b: &Bindings, cost_limit: i64) -> Result<Json, ExpressionError> {
        self.eval_cel(b, cost_limit).map(|v| from_cel(&v))
    }

    fn eval_cel(&self, b: &Bindings, cost_limit: i64) -> Result<Value, ExpressionError> {
        match run_in(&self.program, &b.scope, cost_limit).0 {
            Ok(v) => Ok(v),
            Err(EvalError::CostLimit) => Err(ExpressionError::CostLimit),
            Err(EvalError::Runtime(e)) => Err(ExpressionError::Runtime(e)),
        }
    }

    /// Evaluates with each variable bound to a JSON value (`null` for an absent one), under
    /// `cost_limit`.
    pub fn eval_bool(
        &self,
        vars: &[(&str, &Json)],
        cost_limit: i64,
    ) -> Result<bool, ExpressionError> {
        let bound: Vec<(&str, Value)> = vars.iter().map(|(n, v)| (*n, to_dyn(v))).collect();
        match run(&self.program, &bound, cost_limit).0 {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(_) => Err(ExpressionError::NotBool),
            Err(EvalError::CostLimit) => Err(ExpressionError::CostLimit),
            Err(EvalError::Runtime(e)) => Err(ExpressionError::Runtime(e)),
        }
    }
}

/// A CEL value as JSON (what a policy's variables hold between expressions).
fn from_cel(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => Json::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.to_string()),
        Value::List(l) => Json::Array(l.iter().map(from_cel).collect()),
        Value::Map(m) => Json::Object(
            m.map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => s.to_string(),
                        Key::Int(i) => i.to_string(),
                        Key::Uint(u) => u.to_string(),
                        Key::Bool(b) => b.to_string(),
                    };
                    (key, from_cel(v))
                })
                .collect(),
        ),
        other => Json::String(format!("{other:?}")),
    }
}

/// A JSON value as an untyped CEL value (maps with string keys, integers where exact).
fn to_dyn(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n
            .as_i64()
            .map_or_else(|| n.as_f64().map_or(Value::Null, Value::Float), Value::Int),
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(a) => Value::List(Arc::new(a.iter().map(to_dyn).collect())),
        Json::Object(m) => {
            let map: HashMap<Key, Value> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_dyn(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VARS: &[&str] = &["object", "oldObject", "request"];

    #[test]
    fn compiles_and_evaluates_over_dyn_variables() {
        let obj = json!({"metadata": {"name": "a", "labels": {"env": "prod"}}});
        let req = json!({"operation": "CREATE", "userInfo": {"username": "alice"}});
        let cases = [
            ("object.metadata.labels.env == 'prod'", Ok(true)),
            ("request.operation == 'UPDATE'", Ok(false)),
            ("oldObject == null", Ok(true)),
            ("request.userInfo.username.startsWith('al')", Ok(true)),
            (
                "object.spec.x == 1",
                Err(ExpressionError::Runtime("no such key: spec".into())),
            ),
        ];
        for (src, want) in cases {
            let e = Expression::compile_bool(src, VARS).unwrap_or_else(|e| panic!("{src}: {e}"));
            let got = e.eval_bool(
                &[
                    ("object", &obj),
                    ("oldObject", &Json::Null),
                    ("request", &req),
                ],
                1_000_000,
            );
            assert_eq!(got, want, "{src}");
        }
        let err = Expression::compile_bool("self == 1", VARS).unwrap_err();
        assert!(err.contains("undeclared reference to 'self'"), "{err}");
        assert_eq!(
            Expression::compile_bool("'a'", VARS).unwrap_err(),
            "cel expression must evaluate to a bool"
        );
    }

    #[test]
    fn string_converts_as_cel_go() {
        let obj = json!({"spec": {"enabled": true, "off": false, "n": 3, "s": "x"}});
        // (expression, result): cel-go's `string` overloads, on typed and `dyn` operands.
        let cases = [
            ("string(true)", "true"),
            ("string(false)", "false"),
            ("string(object.spec.enabled)", "true"),
            ("string(object.spec.off)", "false"),
            ("string(1 < 2)", "true"),
            ("string(object.spec.n)", "3"),
            ("string(-7)", "-7"),
            ("string(7u)", "7"),
            ("string(1.5)", "1.5"),
            ("string(object.spec.s)", "x"),
            ("string(b'abc')", "abc"),
            ("string(duration('90s'))", "1m30s"),
            ("string(ip('10.0.0.1'))", "10.0.0.1"),
            ("string(cidr('10.0.0.0/8'))", "10.0.0.0/8"),
            ("'enabled=' + string(object.spec.enabled)", "enabled=true"),
        ];
        for (src, want) in cases {
            let e = Expression::compile_value(src, VARS).unwrap_or_else(|e| panic!("{src}: {e}"));
            let got = e.eval(&[("object", &obj)], 1_000_000);
            assert_eq!(got, Ok(json!(want)), "{src}");
        }
        // A bool-typed conversion type-checks as a string.
        let e = Expression::compile_bool("string(true) == 'true'", VARS).expect("compiles");
        assert_eq!(e.eval_bool(&[], 1_000_000), Ok(true));
        assert_eq!(
            Expression::compile_bool("string(true)", VARS).unwrap_err(),
            "cel expression must evaluate to a bool"
        );
    }

    #[test]
    fn reads_name_what_expressions_select_and_prune_the_rest() {
        let obj = json!({"metadata": {"name": "a", "managedFields": [{"manager": "m"}]},
            "spec": {"replicas": 3, "big": {"x": 1}}, "status": {"ok": true}});
        // (expressions, what `object` keeps)
        let cases = [
            (
                vec![
                    "object.spec.replicas < 5",
                    "object.metadata.name.size() < 64",
                ],
                json!({"metadata": {"name": "a"}, "spec": {"replicas": 3}}),
            ),
            (vec!["has(object.spec.missing)"], json!({"spec": {}})),
            (
                vec!["object.spec.size() > 0", "object.spec.replicas > 1"],
                json!({"spec": {"replicas": 3, "big": {"x": 1}}}),
            ),
            (
                vec!["object.spec.all(k, k != 'x')"],
                json!({"spec": {"replicas": 3, "big": {"x": 1}}}),
            ),
            // The variable used whole, indexed or with an optional select: everything.
            (vec!["object != null"], obj.clone()),
            (vec!["object['spec'].replicas > 1"], obj.clone()),
            (vec!["object.?spec.orValue(1) != 1"], obj.clone()),
            (vec!["oldObject == null"], json!({})),
        ];
        for (sources, want) in cases {
            let mut reads = Reads::default();
            for src in &sources {
                let e =
                    Expression::compile_bool(src, VARS).unwrap_or_else(|e| panic!("{src}: {e}"));
                reads.add(&e.reads("object"));
                // The pruned object gives the same result as the whole one.
                assert_eq!(
                    e.eval_bool(
                        &[("object", &reads.prune(&obj)), ("oldObject", &Json::Null)],
                        1_000_000
                    ),
                    e.eval_bool(&[("object", &obj), ("oldObject", &Json::Null)], 1_000_000),
                    "{src}"
                );
            }
            assert_eq!(*reads.prune(&obj), want, "{sources:?}");
        }
    }
}
