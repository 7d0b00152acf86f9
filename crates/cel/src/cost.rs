//! Step 3 of a rule's pipeline: the cost model. One table of call costs ([`call`]) serves both
//! the static estimate at CRD write (with the schema's worst-case sizes) and the runtime
//! accounting (with the actual sizes), as cel-go's estimator and runtime tracker share their
//! formulas.
//!
//! Sizes follow Kubernetes' `SchemaDeclType`: `maxLength` × 4 bytes for strings (a code point is
//! up to 4 bytes), `maxItems`, `maxProperties`; without them, the most a 3 MiB request can hold.

use std::collections::HashMap;

use kube_cel::cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use crate::checker::Checked;
use crate::checker::types::Type;
use crate::eval::NAMESPACES;

/// apiserver `StaticEstimatedCostLimit`: one rule × the times it can run.
pub(crate) const RULE_LIMIT: u64 = 10_000_000;
/// apiserver `StaticEstimatedCRDCostLimit`: every rule of one schema.
pub(crate) const CRD_LIMIT: u64 = 100_000_000;
/// apiserver `MaxRequestSizeBytes`.
const MAX_REQUEST: u64 = 3 * 1024 * 1024;
/// cel-go `StringTraversalCostFactor`.
const TRAVERSAL: f64 = 0.1;
/// cel-go `RegexStringLengthCostFactor`.
const REGEX: f64 = 0.25;
/// A size nothing bounds.
const UNBOUNDED: u64 = u64::MAX / 4;

fn factor(size: u64, f: f64) -> u64 {
    // Sizes are far below 2^53 where they matter; larger ones saturate anyway.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let v = (size as f64 * f).ceil() as u64;
    v
}

/// The cost of one call given the sizes of its target and arguments (string and bytes lengths,
/// list and map lengths; 0 for scalars): cel-go's and Kubernetes' library formulas.
pub(crate) fn call(name: &str, target: Option<u64>, args: &[u64]) -> u64 {
    let first = target.or(args.first().copied()).unwrap_or(0);
    let second = if target.is_some() {
        args.first().copied()
    } else {
        args.get(1).copied()
    }
    .unwrap_or(0);
    let traverse = |n: u64| 1u64.saturating_add(factor(n, TRAVERSAL));
    match name {
        "_&&_" | "_||_" | "_?_:_" => 0,
        "check" => crate::authz::CHECK_COST,
        "_==_" | "_!=_" | "@listEq" | "@listNe" => traverse(first.min(second)),
        // Strings and bytes are copied; lists are not (`@listAdd`, below).
        "_+_" => traverse(first.saturating_add(second)),
        "contains" | "startsWith" | "endsWith" | "indexOf" | "lastIndexOf" | "lowerAscii"
        | "upperAscii" | "trim" | "replace" | "split" | "substring" | "reverse" | "join"
        | "url" | "isURL" | "quantity" | "isQuantity" | "ip" | "isIP" | "cidr" | "isCIDR"
        | "semver" | "isSemver" | "string" | "bytes" | "base64.encode" | "base64.decode" => {
            traverse(first.saturating_add(second))
        }
        "matches" | "find" | "findAll" => 1u64
            .saturating_add(factor(first, TRAVERSAL).saturating_mul(factor(second, REGEX).max(1))),
        // Membership and the lists library walk the list.
        "@in" | "isSorted" | "sum" | "min" | "max" | "sets.contains" | "sets.equivalent"
        | "sets.intersects" | "distinct" | "flatten" | "sort" => {
            let list = if name == "@in" { second } else { first };
            1u64.saturating_add(list)
        }
        // Everything else is O(1), list concatenation (`@listAdd`) included: cel-go's estimator
        // and runtime tracker alike charge it 1, as the result shares its operands.
        _ => 1,
    }
}

/// Whether values of a type have no size the cost model charges for (numbers, booleans, times).
pub(crate) fn sizeless(t: Option<&Type>) -> bool {
    matches!(
        t,
        Some(
            Type::Bool
                | Type::Int
                | Type::Uint
                | Type::Double
                | Type::Null
                | Type::Timestamp
                | Type::Duration
        )
    )
}

/// Whether [`call`]'s cost for `name` depends on operand sizes.
pub(crate) fn size_dependent(name: &str) -> bool {
    call(name, Some(1_000), &[1_000, 1_000]) != call(name, Some(0), &[0, 0])
}

/// A schema node's size: the most elements (bytes of a string) it can hold.
pub(crate) fn schema_size(node: &Value) -> u64 {
    let n = |k: &str| node.get(k).and_then(Value::as_u64);
    match node.get("type").and_then(Value::as_str).unwrap_or("") {
        "string" => {
            if let Some(max) = n("maxLength") {
                return max.saturating_mul(4);
            }
            if let Some(e) = node.get("enum").and_then(Value::as_array) {
                return e
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.len() as u64)
                    .max()
                    .unwrap_or(0);
            }
            match node.get("format").and_then(Value::as_str).unwrap_or("") {
                "date" => 10,
                "date-time" => 35,
                _ => MAX_REQUEST - 2,
            }
        }
        "array" => n("maxItems").unwrap_or_else(|| {
            let item = node.get("items").map_or(1, min_serialized);
            (MAX_REQUEST - 2) / (item + 1)
        }),
        "object" => n("maxProperties").unwrap_or_else(|| {
            let value = node
                .get("additionalProperties")
                .filter(|a| a.is_object())
                .map_or(1, min_serialized);
            // `"":v,` per entry.
            (MAX_REQUEST - 2) / (value + 4)
        }),
        _ => 0,
    }
}

/// The fewest bytes a value of this schema takes in a JSON request.
fn min_serialized(node: &Value) -> u64 {
    if node
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return 1;
    }
    match node.get("type").and_then(Value::as_str).unwrap_or("") {
        "boolean" => 4,
        "integer" | "number" => 1,
        // `""`, `[]`, `{}`.
        _ => 2,
    }
}

/// Static estimate of one checked expression's worst-case cost (cel-go `checker/cost.go`).
pub(crate) fn estimate(e: &IdedExpr, checked: &Checked) -> u64 {
    Estimator {
        checked,
        bounded_scalar_strings: false,
    }
    .cost(e)
}

/// [`estimate`] for a conversion rule's transformation (no upstream counterpart): `string()` of
/// a number or boolean is bounded by the longest text of one (24 bytes) instead of unbounded,
/// so `duration(string(self) + 's')` is not refused.
pub(crate) fn estimate_conversion(e: &IdedExpr, checked: &Checked) -> u64 {
    Estimator {
        checked,
        bounded_scalar_strings: true,
    }
    .cost(e)
}

/// The longest text of a number or boolean (`-1.7976931348623157e+308`).
const SCALAR_TEXT: u64 = 24;

struct Estimator<'a> {
    checked: &'a Checked,
    /// See [`estimate_conversion`].
    bounded_scalar_strings: bool,
}

impl Estimator<'_> {
    /// The most elements the value of `e` can have.
    fn size(&self, e: &IdedExpr) -> u64 {
        if let Some(schema) = self.checked.schemas.get(&e.id) {
            return schema_size(schema);
        }
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => s.inner().len() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
            Expr::Literal(_) => 0,
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            Expr::Call(c) => match c.func_name.as_str() {
                "_+_" => c
                    .args
                    .iter()
                    .map(|a| self.size(a))
                    .fold(0u64, u64::saturating_add),
                "_?_:_" => c
                    .args
                    .iter()
                    .skip(1)
                    .map(|a| self.size(a))
                    .max()
                    .unwrap_or(0),
                _ if self.scalar(e) => 0,
                "string"
                    if self.bounded_scalar_strings
                        && c.args.len() == 1
                        && sizeless(self.checked.types.get(&c.args[0].id)) =>
                {
                    SCALAR_TEXT
                }
                _ => UNBOUNDED,
            },
            Expr::Comprehension(c) => {
                if self.scalar(e) {
                    0
                } else {
                    self.size(&c.iter_range)
                }
            }
            _ if self.scalar(e) => 0,
            _ => UNBOUNDED,
        }
    }

    /// Values without a size (numbers, booleans, times, types, optionals of them) cost nothing
    /// to traverse.
    fn scalar(&self, e: &IdedExpr) -> bool {
        !matches!(
            self.checked.types.get(&e.id),
            Some(Type::String | Type::Bytes | Type::List(_) | Type::Map(..) | Type::Dyn) | None
        )
    }

    fn cost(&self, e: &IdedExpr) -> u64 {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => 0,
            Expr::Ident(_) => 1,
            // Presence tests cost nothing in Kubernetes (`PresenceTestHasCost(false)`).
            Expr::Select(s) if s.test => self.cost(&s.operand),
            Expr::Select(s) => self.cost(&s.operand).saturating_add(1),
            Expr::List(l) => l
                .elements
                .iter()
                .map(|x| self.cost(x))
                .fold(10, u64::saturating_add),
            Expr::Map(m) => {
                let mut sum = 30u64;
                crate::parse::children(e, &mut |c| sum = sum.saturating_add(self.cost(c)));
                let _ = m;
                sum
            }
            Expr::Struct(_) => {
                let mut sum = 40u64;
                crate::parse::children(e, &mut |c| sum = sum.saturating_add(self.cost(c)));
                sum
            }
            Expr::Comprehension(c) => {
                let per_iteration = self
                    .cost(&c.loop_cond)
                    .saturating_add(self.cost(&c.loop_step));
                self.cost(&c.iter_range)
                    .saturating_add(self.cost(&c.accu_init))
                    .saturating_add(self.size(&c.iter_range).saturating_mul(per_iteration))
                    .saturating_add(self.cost(&c.result))
            }
            Expr::Call(c) => {
                let operands = if c.func_name == "_?_:_" {
                    // Only one branch runs.
                    let cond = c.args.first().map_or(0, |a| self.cost(a));
                    let branch = c
                        .args
                        .iter()
                        .skip(1)
                        .map(|a| self.cost(a))
                        .max()
                        .unwrap_or(0);
                    cond.saturating_add(branch)
                } else {
                    let mut sum = 0u64;
                    crate::parse::children(e, &mut |a| sum = sum.saturating_add(self.cost(a)));
                    sum
                };
                let (name, target) = match c.target.as_deref() {
                    Some(IdedExpr {
                        expr: Expr::Ident(ns),
                        ..
                    }) if NAMESPACES.contains(&ns.as_str()) => {
                        (format!("{ns}.{}", c.func_name), None)
                    }
                    t => (
                        list_concat_name(c, &self.checked.types).to_string(),
                        t.map(|t| self.size(t)),
                    ),
                };
                let args: Vec<u64> = c.args.iter().map(|a| self.size(a)).collect();
                operands.saturating_add(call(&name, target, &args))
            }
        }
    }
}

/// The name a call is costed under: `_+_` of lists is list concatenation (`@listAdd`, O(1)),
/// of strings and bytes a copy of both; any other call keeps its name.
pub(crate) fn list_concat_name<'a>(c: &'a CallExpr, types: &HashMap<u64, Type>) -> &'a str {
    let concat = c.func_name == "_+_"
        && c.args
            .iter()
            .any(|a| matches!(types.get(&a.id), Some(Type::List(_))));
    if concat { "@listAdd" } else { &c.func_name }
}

/// Upstream's `getCostErrorMessage`.
pub(crate) fn error_message(description: &str, cost: u64, limit: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{description} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn factors_print_as_upstream() {
        let m = |c| error_message("estimated rule cost", c, RULE_LIMIT);
        assert!(m(2_000_000_000).contains("by factor of more than 100x ("));
        assert!(m(25_000_000).contains("by factor of 2.5x ("));
        assert!(m(12_000_000).contains("by factor of 1.200000x ("));
    }

    #[test]
    fn sizes_follow_the_schema() {
        let cases = [
            (json!({"type": "string", "maxLength": 10}), 40),
            (json!({"type": "string", "enum": ["a", "abc"]}), 3),
            (json!({"type": "string", "format": "date-time"}), 35),
            (json!({"type": "string"}), 3_145_726),
            (
                json!({"type": "array", "maxItems": 25, "items": {"type": "string"}}),
                25,
            ),
            (
                json!({"type": "array", "items": {"type": "string"}}),
                1_048_575,
            ),
            (
                json!({"type": "array", "items": {"type": "integer"}}),
                1_572_863,
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                524_287,
            ),
        ];
        for (schema, want) in cases {
            assert_eq!(schema_size(&schema), want, "{schema}");
        }
    }

    #[test]
    fn call_costs() {
        assert_eq!(call("size", Some(100), &[]), 1);
        assert_eq!(call("contains", Some(40), &[8]), 6);
        assert_eq!(call("_==_", None, &[100, 3]), 2);
        assert_eq!(call("matches", Some(100), &[8]), 21);
        assert_eq!(call("@in", None, &[0, 50]), 51);
        assert_eq!(call("_&&_", None, &[0, 0]), 0);
    }
}
