//! CEL validation rules: a fuzzed rule over a fuzzed object. The rule sits at the root of a
//! structural schema inferred from the object (so `self.<field>` is typed as the server types
//! it); it goes through the checks a CRD write runs (parse, type check, static cost limits),
//! and when they pass, compilation and evaluation against the object (and the old object, so
//! transition rules run) under the runtime cost limits. The same text is also compiled and run
//! as an admission expression over `dyn` variables with the per-call limit. Nothing may panic,
//! and a run must end within libFuzzer's `-timeout` (`scripts/fuzz` sets it): the cost limits
//! must bound the time an evaluation takes.
//!
//! Input: the rule on the first line, then the object as JSON, optionally `%%` and the old
//! object.
#![no_main]

use crd_cel::{CompiledRules, Expression};
use crd_core::Path;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// Kubernetes' per-call cost limit for admission expressions (`PerCallLimit`).
const PER_CALL_LIMIT: i64 = 1_000_000;

/// A structural schema that types `v`: objects by their properties (an empty object preserves
/// unknown fields), arrays by their first item, scalars by their JSON type.
fn infer(v: &Value, depth: usize) -> Value {
    match v {
        Value::Object(m) if !m.is_empty() && depth < 16 => {
            let props: Map<String, Value> = m
                .iter()
                .map(|(k, v)| (k.clone(), infer(v, depth + 1)))
                .collect();
            json!({"type": "object", "properties": props})
        }
        Value::Object(_) => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        Value::Array(a) => {
            let items = a
                .first()
                .filter(|_| depth < 16)
                .map_or_else(|| json!({"type": "string"}), |f| infer(f, depth + 1));
            json!({"type": "array", "items": items})
        }
        Value::String(_) | Value::Null => json!({"type": "string"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
    }
}

fuzz_target!(|data: &[u8]| {
    let (line, rest) = crd_apiserver_fuzz::first_line(data);
    let Ok(rule) = std::str::from_utf8(line) else {
        return;
    };
    let docs = crd_apiserver_fuzz::parts(rest, 2);
    let obj = crd_apiserver_fuzz::json(docs[0]).unwrap_or_else(|| json!({}));
    let old = docs.get(1).and_then(|d| crd_apiserver_fuzz::json(d));

    let mut schema = infer(&obj, 0);
    if !schema.is_object() || schema.get("type") != Some(&json!("object")) {
        schema = json!({"type": "object", "properties": {"value": schema}});
    }
    schema["x-kubernetes-validations"] = json!([{"rule": rule, "messageExpression": rule}]);
    let path = Path::new("spec")
        .child("versions")
        .index(0)
        .child("schema")
        .child("openAPIV3Schema");
    let errs = crd_cel::check_rules(&schema, &path, &[]);
    if errs.is_empty() {
        let rules = CompiledRules::compile(&schema);
        let _ = crd_cel::validate(&rules, &obj, None);
        let _ = crd_cel::validate(&rules, &obj, Some(old.as_ref().unwrap_or(&obj)));
    }

    const VARS: &[&str] = &["object", "oldObject", "request", "params"];
    let request = json!({"operation": "CREATE", "name": "x", "namespace": "default"});
    let null = Value::Null;
    let vars = [
        ("object", &obj),
        ("oldObject", old.as_ref().unwrap_or(&null)),
        ("request", &request),
        ("params", &null),
    ];
    if let Ok(e) = Expression::compile_bool(rule, VARS) {
        let _ = e.eval(&vars, PER_CALL_LIMIT);
    }
    if let Ok(e) = Expression::compile_value(rule, VARS) {
        let _ = e.eval(&vars, PER_CALL_LIMIT);
    }
});
