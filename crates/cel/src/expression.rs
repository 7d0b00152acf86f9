//! Admission expressions: a CEL expression over named `dyn` variables (`object`, `oldObject`,
//! `request`, ...), as webhook `matchConditions` and admission policies declare them. Compiled
//! once (parse, type check in the stored-expressions environment, lower) and evaluated with JSON
//! values under a per-call cost limit.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::Value;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value as Json;

use crate::checker::{Compat, Env, check, require_bool};
use crate::eval::{EvalError, Program, lower, run};
use crate::parse::parse;

/// A compiled admission expression.
#[derive(Debug)]
pub struct Expression {
    program: Program,
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
        let expr = parse(source)?;
        let env = Env {
            dyn_vars: vars,
            self_schema: &Json::Null,
            resource_root: false,
            old_self: false,
            optional_old_self: false,
            compat: Compat::StoredExpressions,
        };
        let checked = check(&expr, source, &env)?;
        require_bool(&checked)?;
        Ok(Expression {
            program: lower(expr, &checked),
        })
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
}
