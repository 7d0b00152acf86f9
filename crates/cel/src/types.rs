//! A small static type check of rules against the schema, for what kube-cel's parser does not
//! catch: comparison and arithmetic operators applied to operands whose types cannot meet
//! (`self == true` on an integer), reported as cel-go reports them
//! (`found no matching overload for '_==_' applied to '(int, bool)'`).
//!
//! Only the types of `self`, `self.<field>...` and literals are inferred; everything else is
//! `dyn` and never reported, so the check has no false positives by construction.

use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::Value;

/// A CEL type, as far as this check knows it.
#[derive(Clone, Debug, PartialEq)]
enum Ty<'a> {
    Int,
    Uint,
    Double,
    Bool,
    String,
    Bytes,
    Null,
    Timestamp,
    Duration,
    List,
    Map,
    Object(&'a Value),
    Dyn,
}

impl Ty<'_> {
    fn name(&self) -> String {
        match self {
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::Bool => "bool".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Null => "null_type".into(),
            Ty::Timestamp => "google.protobuf.Timestamp".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::List => "list".into(),
            Ty::Map => "map".into(),
            Ty::Object(_) => "object".into(),
            Ty::Dyn => "dyn".into(),
        }
    }

    fn numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }
}

/// The CEL type of a schema node (Kubernetes' `SchemaDeclType`).
fn of_schema(node: &Value) -> Ty<'_> {
    if node
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Ty::Dyn;
    }
    let format = node.get("format").and_then(Value::as_str).unwrap_or("");
    match node.get("type").and_then(Value::as_str).unwrap_or("") {
        "integer" => Ty::Int,
        "number" => Ty::Double,
        "boolean" => Ty::Bool,
        "string" => match format {
            "date" | "date-time" | "datetime" => Ty::Timestamp,
            "duration" => Ty::Duration,
            "byte" => Ty::Bytes,
            _ => Ty::String,
        },
        "array" => Ty::List,
        "object" if node.get("properties").is_some() => Ty::Object(node),
        "object"
            if node
                .get("additionalProperties")
                .is_some_and(Value::is_object) =>
        {
            Ty::Map
        }
        _ => Ty::Dyn,
    }
}

fn infer<'a>(e: &IdedExpr, node: &'a Value) -> Ty<'a> {
    match &e.expr {
        Expr::Ident(name) if name == "self" => of_schema(node),
        Expr::Select(sel) if !sel.test => match infer(&sel.operand, node) {
            Ty::Object(obj) => obj
                .get("properties")
                .and_then(|p| p.get(&sel.field))
                .map_or(Ty::Dyn, of_schema),
            _ => Ty::Dyn,
        },
        Expr::Literal(lit) => match lit {
            LiteralValue::Boolean(_) => Ty::Bool,
            LiteralValue::Int(_) => Ty::Int,
            LiteralValue::UInt(_) => Ty::Uint,
            LiteralValue::Double(_) => Ty::Double,
            LiteralValue::String(_) => Ty::String,
            LiteralValue::Bytes(_) => Ty::Bytes,
            LiteralValue::Null => Ty::Null,
        },
        _ => Ty::Dyn,
    }
}

/// Whether an operator has an overload for two operand types (with Kubernetes' cross-type
/// numeric comparisons).
fn compatible(op: &str, a: &Ty<'_>, b: &Ty<'_>) -> bool {
    if *a == Ty::Dyn || *b == Ty::Dyn || matches!(a, Ty::Object(_)) || matches!(b, Ty::Object(_)) {
        return true;
    }
    match op {
        "_==_" | "_!=_" => {
            a == b || (a.numeric() && b.numeric()) || *a == Ty::Null || *b == Ty::Null
        }
        "_<_" | "_<=_" | "_>_" | "_>=_" => {
            (a == b && !matches!(a, Ty::List | Ty::Map | Ty::Null)) || (a.numeric() && b.numeric())
        }
        _ => true,
    }
}

/// The first operator in `rule` whose operands cannot meet, as cel-go's message.
pub fn type_errors(rule: &str, node: &Value) -> Option<String> {
    let program = kube_cel::cel::Program::compile(rule).ok()?;
    let mut found = None;
    visit(program.expression(), node, rule, &mut found);
    found
}

fn visit(e: &IdedExpr, node: &Value, rule: &str, found: &mut Option<String>) {
    if found.is_some() {
        return;
    }
    match &e.expr {
        Expr::Call(call) => {
            if let [left, right] = call.args.as_slice() {
                let (a, b) = (infer(left, node), infer(right, node));
                if !compatible(&call.func_name, &a, &b) {
                    let token = call.func_name.trim_matches('_');
                    let column = rule.find(token).map_or(1, |i| i + 1);
                    *found = Some(format!(
                        "ERROR: <input>:1:{column}: found no matching overload for '{}' applied to '({}, {})'",
                        call.func_name,
                        a.name(),
                        b.name()
                    ));
                    return;
                }
            }
            for arg in &call.args {
                visit(arg, node, rule, found);
            }
        }
        Expr::Select(sel) => visit(&sel.operand, node, rule, found),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn operand_types_must_meet() {
        let int = json!({"type": "integer"});
        assert_eq!(
            type_errors("self == true", &int).as_deref(),
            Some(
                "ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'"
            )
        );
        assert_eq!(
            type_errors("self == 1.5", &int),
            None,
            "numeric comparisons cross types"
        );
        assert_eq!(type_errors("self > 3 && self < 10", &int), None);
        let obj = json!({"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}});
        assert_eq!(
            type_errors("self.name < 3", &obj).as_deref(),
            Some(
                "ERROR: <input>:1:11: found no matching overload for '_<_' applied to '(string, int)'"
            )
        );
        assert_eq!(type_errors("self.name == 'x' && self.n >= 0", &obj), None);
        assert_eq!(
            type_errors("self.other == true", &obj),
            None,
            "unknown is dyn"
        );
        let ios = json!({"x-kubernetes-int-or-string": true});
        assert_eq!(type_errors("self == '100%'", &ios), None);
    }
}
