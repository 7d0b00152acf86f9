//! An apply configuration merged into an object without field ownership, as a mutating
//! admission policy's `ApplyConfiguration` patch is applied (apiserver's
//! `policy/mutating/patch/smd.go`, `ApplyStructuredMergeDiff`): the configuration is typed by
//! the object's schema (a field the schema does not declare is refused), refused when it sets
//! an atomic list, map or struct (the whole value would be replaced), and merged with SMD's
//! `Merge` (granular maps by key, lists of type `map` by their keys, sets by value, atomic
//! values replaced).

use serde_json::Value;

use super::fieldset::PathElement;
use super::schema::{ListKind, Node, ScalarType, Schema, TypeId};
use super::typed::{merge, to_field_set};
use crate::strategic::{go_type, go_v};

/// Merges `config` into `live`; no `managedFields` change. `Err` is upstream's text (after
/// `error applying patch: `): `failed to convert patch object to typed object: ...`,
/// `invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.x`,
/// `failed to convert original object to typed object: ...` or `failed to merge patch: ...`.
pub fn merge_configuration(schema: &Schema, live: &Value, config: &Value) -> Result<Value, String> {
    if let Some(e) = undeclared_fields(schema, config) {
        return Err(format!(
            "failed to convert patch object to typed object: {e}"
        ));
    }
    to_field_set(schema, config)
        .map_err(|e| format!("failed to convert patch object to typed object: {e}"))?;
    let mut atomics = Vec::new();
    find_atomics(schema, schema.root(), config, &mut Vec::new(), &mut atomics);
    if !atomics.is_empty() {
        return Err(format!(
            "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    to_field_set(schema, live)
        .map_err(|e| format!("failed to convert original object to typed object: {e}"))?;
    merge(schema, live, config).map_err(|e| format!("failed to merge patch: {e}"))
}

/// The fields of `config` its schema does not declare, in SMD's words (`.spec.x: field not
/// declared in schema`, several as `errors:` lines), or `None`: what refuses a configuration
/// before any merge, in an apply as in a mutating admission policy's patch.
pub(crate) fn undeclared_fields(schema: &Schema, config: &Value) -> Option<String> {
    let mut undeclared = Vec::new();
    find_undeclared(
        schema,
        schema.root(),
        config,
        &mut Vec::new(),
        &mut undeclared,
    );
    let errors = undeclared;
    match errors.len() {
        0 => None,
        1 => Some(errors.join("")),
        _ => Some(format!("errors:\n  {}", errors.join("\n  "))),
    }
}

/// SMD's typed conversion of the configuration (`validatingObjectWalker`): the errors, at their
/// paths (`.spec.x`), of fields a struct does not declare (and whose map takes no other keys),
/// where a struct stops at its first such field as SMD's walk does, and of scalars of another
/// type than their schema's (`validateScalar`). Lists are walked by their items' path elements;
/// schemaless (deduced) parts take anything.
fn find_undeclared(
    schema: &Schema,
    ty: TypeId,
    v: &Value,
    path: &mut Vec<PathElement>,
    out: &mut Vec<String>,
) {
    let text = |path: &[PathElement]| path.iter().map(ToString::to_string).collect::<String>();
    match (schema.node(ty), v) {
        (Node::Map { fields, elem, .. }, Value::Object(m)) => {
            for (k, child) in m {
                let Some(ct) = fields.get(k).copied().or(*elem) else {
                    path.push(PathElement::Field(k.clone()));
                    out.push(format!("{}: field not declared in schema", text(path)));
                    path.pop();
                    return;
                };
                path.push(PathElement::Field(k.clone()));
                find_undeclared(schema, ct, child, path, out);
                path.pop();
            }
        }
        (Node::List { elem, kind }, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Ok(pe) = super::typed::item_element(kind, i, item) else {
                    continue;
                };
                path.push(pe);
                find_undeclared(schema, *elem, item, path, out);
                path.pop();
            }
        }
        (Node::Scalar(ty), v) => {
            if let Some(e) = scalar_error(*ty, v) {
                out.push(format!("{}: {e}", text(path)));
            }
        }
        _ => {}
    }
}

/// SMD's `validateScalar`, in its words: the type Go's `%T` names for a non-number, `%#v` of the
/// value for a non-string, `%v` for a non-boolean, where the value is the unstructured value SMD
/// wraps (`&value.valueUnstructured{Value:1}`, `&{big}`). Null fits every type.
fn scalar_error(ty: ScalarType, v: &Value) -> Option<String> {
    match (ty, v) {
        (_, Value::Null)
        | (ScalarType::String, Value::String(_))
        | (ScalarType::Numeric, Value::Number(_))
        | (ScalarType::Boolean, Value::Bool(_))
        | (ScalarType::Untyped, Value::String(_) | Value::Number(_) | Value::Bool(_)) => None,
        (ScalarType::Numeric, v) => Some(format!(
            "expected numeric (int or float), got {}",
            go_type(v)
        )),
        (ScalarType::String, v) => Some(format!(
            "expected string, got &value.valueUnstructured{{Value:{}}}",
            go_sharp_v(v)
        )),
        (ScalarType::Boolean, v) => Some(format!("expected boolean, got &{{{}}}", go_v(v))),
        (ScalarType::Untyped, v) => Some(format!("expected any scalar, got &{{{}}}", go_v(v))),
    }
}

/// Go's `%#v` of a decoded JSON value (numbers are `float64`s).
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let entries: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), go_sharp_v(&m[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
    }
}

/// SMD's `findAtomics`: the paths (`.spec.selector`, `.spec.items[0].tags`) of atomic maps,
/// structs and lists the configuration sets. Only declared fields are descended into.
fn find_atomics(
    schema: &Schema,
    ty: TypeId,
    v: &Value,
    path: &mut Vec<PathElement>,
    out: &mut Vec<String>,
) {
    let text = |path: &[PathElement]| path.iter().map(ToString::to_string).collect::<String>();
    match (schema.node(ty), v) {
        (Node::Map { fields, atomic, .. }, Value::Object(m)) => {
            if *atomic {
                out.push(text(path));
            }
            for (k, child) in m {
                if let Some(ft) = fields.get(k) {
                    path.push(PathElement::Field(k.clone()));
                    find_atomics(schema, *ft, child, path, out);
                    path.pop();
                }
            }
        }
        (Node::List { elem, kind }, Value::Array(items)) => {
            if matches!(kind, ListKind::Atomic) {
                out.push(text(path));
            }
            for (i, item) in items.iter().enumerate() {
                path.push(PathElement::Index(i64::try_from(i).unwrap_or(i64::MAX)));
                find_atomics(schema, *elem, item, path, out);
                path.pop();
            }
        }
        // Deduced (schemaless) lists are atomic.
        (Node::Deduced, Value::Array(_)) => out.push(text(path)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::from_json_schema(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer"},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "args": {"type": "array", "items": {"type": "string"}},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer"},
                                "protocol": {"type": "string"},
                            }},
                        },
                        "selector": {
                            "type": "object",
                            "x-kubernetes-map-type": "atomic",
                            "additionalProperties": {"type": "string"},
                        },
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                },
            },
        }))
    }

    #[test]
    fn configurations_merge_by_list_and_map_type() {
        let live = json!({
            "apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "labels": {"keep": "1"}},
            "spec": {
                "replicas": 1,
                "tags": ["a", "b"],
                "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
                "labels": {"x": "1"},
            },
        });
        // (configuration, result or error)
        let cases = [
            (
                json!({"spec": {"replicas": 3}}),
                Ok(json!({"replicas": 3, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}], "labels": {"x": "1"}})),
            ),
            // A set keeps its live values and gains the new ones, in SMD's merge order.
            (
                json!({"spec": {"tags": ["c", "a"]}}),
                Ok(json!({"replicas": 1, "tags": ["c", "a", "b"], "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}], "labels": {"x": "1"}})),
            ),
            // A map list merges items by key; other items stay.
            (
                json!({"spec": {"ports": [{"name": "http", "protocol": "TCP"}, {"name": "grpc", "port": 81}]}}),
                Ok(json!({"replicas": 1, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "metrics", "port": 9090}, {"name": "grpc", "port": 81}], "labels": {"x": "1"}})),
            ),
            (
                json!({"spec": {"labels": {"y": "2"}}}),
                Ok(json!({"replicas": 1, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}], "labels": {"x": "1", "y": "2"}})),
            ),
            (
                json!({"spec": {"args": ["x"], "selector": {"a": "b"}}}),
                Err("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.args, .spec.selector".to_string()),
            ),
            // Fields the schema does not declare are refused, as SMD's typed conversion does.
            (
                json!({"spec": {"replicas": 2, "unknown": 1}}),
                Err("failed to convert patch object to typed object: .spec.unknown: field not declared in schema".to_string()),
            ),
            (
                json!({"spec": {"ports": [{"name": "http", "bogus": 1}]}}),
                Err("failed to convert patch object to typed object: .spec.ports[name=\"http\"].bogus: field not declared in schema".to_string()),
            ),
            (
                json!({"metadata": {"labels": {"a": "b"}, "bogus": 1}}),
                Err("failed to convert patch object to typed object: .metadata.bogus: field not declared in schema".to_string()),
            ),
            (
                json!({"spec": {"ports": [{"port": 1}]}}),
                Err("failed to convert patch object to typed object: .spec.ports: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)".to_string()),
            ),
            // Scalars of another type than their schema's, in SMD's `validateScalar` words.
            (
                json!({"spec": {"replicas": "three"}}),
                Err("failed to convert patch object to typed object: .spec.replicas: expected numeric (int or float), got string".to_string()),
            ),
            (
                json!({"spec": {"labels": {"a": 1}}}),
                Err("failed to convert patch object to typed object: .spec.labels.a: expected string, got &value.valueUnstructured{Value:1}".to_string()),
            ),
            (
                json!({"spec": {"ports": [{"name": "http", "protocol": {"a": [true, 1.5]}}]}}),
                Err("failed to convert patch object to typed object: .spec.ports[name=\"http\"].protocol: expected string, got &value.valueUnstructured{Value:map[string]interface {}{\"a\":[]interface {}{true, 1.5}}}".to_string()),
            ),
            (
                json!({"spec": {"replicas": [1], "tags": ["a", false]}}),
                Err("failed to convert patch object to typed object: errors:\n  .spec.replicas: expected numeric (int or float), got []interface {}\n  .spec.tags[=false]: expected string, got &value.valueUnstructured{Value:false}".to_string()),
            ),
            // Null fits every type.
            (
                json!({"spec": {"replicas": null}}),
                Ok(json!({"replicas": null, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}], "labels": {"x": "1"}})),
            ),
        ];
        for (config, want) in cases {
            let got = merge_configuration(&schema(), &live, &config).map(|o| o["spec"].clone());
            assert_eq!(got, want, "{config}");
        }
        let labelled = merge_configuration(
            &schema(),
            &live,
            &json!({"metadata": {"labels": {"team": "a"}}}),
        )
        .map(|o| o["metadata"]["labels"].clone());
        assert_eq!(labelled, Ok(json!({"keep": "1", "team": "a"})));
    }
}
