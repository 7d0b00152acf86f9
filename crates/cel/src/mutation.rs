//! What a mutating admission policy's expressions produce, read back as JSON: an apply
//! configuration (`Object{spec: Object.spec{...}}`, with its initializers' type names checked
//! against their field paths as `CheckTypeNamesMatchFieldPathNames` does) and a JSON patch (a
//! list of `JSONPatch{op, path, from, value}`, as the operations evanphx/json-patch applies).
//!
//! The evaluator lowers initializers to maps; an `Object` initializer keeps its type name under
//! a key no field can spell, which [`object_value`] checks and removes.

use serde_json::{Map, Value};

use crate::eval::TYPE_NAME_KEY;

/// The compilation error of an `applyConfiguration.expression` of another type.
pub const NOT_OBJECT: &str = "must evaluate to Object";
/// The compilation error of a `jsonPatch.expression` of another type.
pub const NOT_JSON_PATCH: &str = "must evaluate to list(JSONPatch)";

/// Reads an evaluated apply configuration: checks that every nested initializer is named after
/// its field path from `Object` (`Object.spec.selector` under `spec.selector`) and returns the
/// plain object. `Err` is upstream's text after `type mismatch: `.
pub fn object_value(v: Value) -> Result<Value, String> {
    let mut errs = Vec::new();
    let root = vec!["Object".to_string()];
    let out = strip(v, &root, &mut errs);
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs.join("\n"))
    }
}

/// Removes the type names of initializers, collecting mismatches (`path` is the expected
/// name's parts; lists and plain maps keep their parent's).
fn strip(v: Value, path: &[String], errs: &mut Vec<String>) -> Value {
    match v {
        Value::Object(mut m) => {
            let typed = match m.remove(TYPE_NAME_KEY) {
                Some(Value::String(name)) => {
                    let want = path.join(".");
                    if name != want {
                        errs.push(format!(
                            "unexpected type name \"{name}\", expected \"{want}\", which matches field name path from root Object type"
                        ));
                    }
                    true
                }
                _ => false,
            };
            let out: Map<String, Value> = m
                .into_iter()
                .map(|(k, v)| {
                    let v = if typed {
                        let mut child = path.to_vec();
                        child.push(k.clone());
                        strip(v, &child, errs)
                    } else {
                        strip(v, path, errs)
                    };
                    (k, v)
                })
                .collect();
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|i| strip(i, path, errs)).collect())
        }
        other => other,
    }
}

/// Reads an evaluated JSON patch into the operations upstream builds from it: `op` and `path`
/// always, `from` when not empty, `value` when set (an `Object` initializer as its plain
/// object). `Err` is the text after `type mismatch: `.
pub fn json_patch(v: Value) -> Result<Value, String> {
    let Value::Array(items) = v else {
        return Err("JSONPatchType.expression should evaluate to array".into());
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(mut m) = item else {
            return Err("JSONPatchType.expression should evaluate to array of JSONPatch".into());
        };
        let text = |m: &Map<String, Value>, k: &str| {
            m.get(k).and_then(Value::as_str).unwrap_or("").to_string()
        };
        let mut op = Map::new();
        op.insert("op".into(), Value::String(text(&m, "op")));
        op.insert("path".into(), Value::String(text(&m, "path")));
        let from = text(&m, "from");
        if !from.is_empty() {
            op.insert("from".into(), Value::String(from));
        }
        if let Some(value) = m.remove("value") {
            let typed = value
                .as_object()
                .and_then(|o| o.get(TYPE_NAME_KEY))
                .and_then(Value::as_str)
                .map(|name| vec![name.to_string()]);
            let mut errs = Vec::new();
            // An `Object.x{}` value is checked from its own name.
            let value = if let Some(root) = typed {
                let v = strip(value, &root, &mut errs);
                if !errs.is_empty() {
                    return Err(errs.join("\n"));
                }
                v
            } else {
                strip(value, &[], &mut errs)
            };
            op.insert("value".into(), value);
        }
        ops.push(Value::Object(op));
    }
    Ok(Value::Array(ops))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Expression;

    const VARS: &[&str] = &["object", "oldObject", "params", "variables"];

    fn eval(e: &Expression, obj: &Value) -> Value {
        e.eval(&[("object", obj)], 1_000_000)
            .unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn apply_configurations_evaluate_to_plain_objects() {
        let obj = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}});
        // (expression, object or type-mismatch error)
        let cases = [
            (
                "Object{metadata: Object.metadata{labels: {'team': 'a'}}}",
                Ok(json!({"metadata": {"labels": {"team": "a"}}})),
            ),
            (
                "Object{spec: Object.spec{replicas: object.spec.replicas + 1, tags: ['a', 'b']}}",
                Ok(json!({"spec": {"replicas": 3, "tags": ["a", "b"]}})),
            ),
            (
                "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'c'}]}}",
                Ok(json!({"spec": {"containers": [{"name": "c"}]}})),
            ),
            (
                "Object{spec: Object.spec{selector: Object.spec.wrong{}}}",
                Err("unexpected type name \"Object.spec.wrong\", expected \"Object.spec.selector\", which matches field name path from root Object type".to_string()),
            ),
        ];
        for (src, want) in cases {
            let e = Expression::compile_apply_configuration(src, VARS)
                .unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(object_value(eval(&e, &obj)), want, "{src}");
        }
    }

    #[test]
    fn json_patches_evaluate_to_operations() {
        let obj = json!({"metadata": {"name": "a"}});
        let cases = [
            (
                "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]",
                json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
            ),
            (
                "[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/a~b'), value: 'x'}]",
                json!([{"op": "add", "path": "/metadata/annotations/example.com~1a~0b", "value": "x"}]),
            ),
            (
                "[JSONPatch{op: 'remove', path: '/spec/x'}, JSONPatch{op: 'move', from: '/a', path: '/b'}]",
                json!([{"op": "remove", "path": "/spec/x"}, {"op": "move", "from": "/a", "path": "/b"}]),
            ),
            (
                "[JSONPatch{op: 'replace', path: '/spec', value: Object.spec{replicas: 1}}]",
                json!([{"op": "replace", "path": "/spec", "value": {"replicas": 1}}]),
            ),
            ("[]", json!([])),
        ];
        for (src, want) in cases {
            let e =
                Expression::compile_json_patch(src, VARS).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(json_patch(eval(&e, &obj)), Ok(want), "{src}");
        }
    }

    #[test]
    fn mutation_expressions_are_typed() {
        // (expression, apply configuration?, compilation error it contains)
        let cases = [
            ("object", true, NOT_OBJECT),
            ("Object.spec{}", true, NOT_OBJECT),
            ("[JSONPatch{op: 'add', path: '/a'}]", true, NOT_OBJECT),
            ("Object{}", false, NOT_JSON_PATCH),
            (
                "[JSONPatch{op: 1, path: '/a'}]",
                false,
                "expected type of field 'op' is 'string' but provided type is 'int'",
            ),
            ("[JSONPatch{nope: 'x'}]", false, "undefined field 'nope'"),
            ("[Foo{}]", false, "undeclared reference to 'Foo'"),
        ];
        for (src, apply, want) in cases {
            let r = if apply {
                Expression::compile_apply_configuration(src, VARS)
            } else {
                Expression::compile_json_patch(src, VARS)
            };
            let err = r.err().unwrap_or_default();
            assert!(err.contains(want), "{src}: {err}");
        }
        // Outside the mutation environment initializers and the library are undeclared.
        let err = Expression::compile_value("Object{}", VARS).unwrap_err();
        assert!(err.contains("undeclared reference to 'Object'"), "{err}");
        let err = Expression::compile_value("jsonpatch.escapeKey('a')", VARS).unwrap_err();
        assert!(err.contains("undeclared reference"), "{err}");
    }
}
