//! Defaulting: filling in the `default` values a structural schema declares.
//!
//! This mirrors apiextensions' `defaulting.Default`. It runs after pruning and
//! [`prune_nulls`](crate::prune::prune_nulls), on request bodies (request-version schema) and on
//! objects read from storage (storage-version schema).

use serde_json::Value;

use crate::prune::{additional, default_of, flag, items, properties, property};

/// Applies the defaults of `schema` to `object`, in place.
///
/// A declared property with a `default` is set (deep copy) when its key is absent, or present
/// with `null` while the property is not `nullable`; then every present key is recursed into, so
/// defaults nested inside a freshly set default apply too. An `additionalProperties` default only
/// replaces non-nullable `null` values of existing keys, and an `items` default replaces
/// non-nullable `null` items: neither adds entries.
pub fn apply_defaults(object: &mut Value, schema: &Value) {
    default_inner(object, schema);
}

/// Whether `schema` declares a `default` anywhere [`apply_defaults`] can apply one (a node
/// reached through `properties`, an `additionalProperties` schema or `items`). Without one,
/// applying the schema's defaults changes nothing: a caller that decides this once per schema
/// skips the walk over every object it reads.
pub fn declares_defaults(schema: &Value) -> bool {
    default_of(schema).is_some()
        || properties(schema).is_some_and(|m| m.values().any(declares_defaults))
        || additional(schema).schema().is_some_and(declares_defaults)
        || items(schema).is_some_and(declares_defaults)
}

fn is_non_nullable_null(x: &Value, s: &Value) -> bool {
    x.is_null() && !flag(s, "nullable")
}

fn default_inner(x: &mut Value, s: &Value) {
    match x {
        Value::Object(map) => {
            if let Some(props) = properties(s) {
                for (k, prop) in props {
                    let Some(d) = default_of(prop) else {
                        continue;
                    };
                    let set = match map.get(k) {
                        None => true,
                        Some(v) => is_non_nullable_null(v, prop),
                    };
                    if set {
                        map.insert(k.clone(), d.clone());
                    }
                }
            }
            let ap = additional(s);
            for (k, v) in map.iter_mut() {
                if let Some(prop) = property(s, k) {
                    default_inner(v, prop);
                } else if let Some(aps) = ap.schema() {
                    if is_non_nullable_null(v, aps) {
                        *v = default_of(aps).cloned().unwrap_or(Value::Null);
                    }
                    default_inner(v, aps);
                }
            }
        }
        Value::Array(list) => {
            let Some(is) = items(s) else {
                return;
            };
            for v in list.iter_mut() {
                if is_non_nullable_null(v, is) {
                    *v = default_of(is).cloned().unwrap_or(Value::Null);
                }
                default_inner(v, is);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::prune_nulls;
    use serde_json::json;

    /// (name, schema, object in, object out after `prune_nulls` and `apply_defaults`)
    fn cases() -> Vec<(&'static str, Value, Value, Value)> {
        let cron = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "cronSpec": {
                            "type": "string",
                            "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$",
                            "default": "5 0 * * *"
                        },
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                    }
                }
            }
        });
        let nullable = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "foo": {"type": "string", "nullable": false, "default": "default"},
                        "bar": {"type": "string", "nullable": true},
                        "baz": {"type": "string"}
                    }
                }
            }
        });
        vec![
            (
                "seed: cronSpec and replicas defaulted",
                cron.clone(),
                json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                       "metadata": {"name": "my-new-cron-object"},
                       "spec": {"image": "my-awesome-cron-image"}}),
                json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                       "metadata": {"name": "my-new-cron-object"},
                       "spec": {"cronSpec": "5 0 * * *", "image": "my-awesome-cron-image", "replicas": 1}}),
            ),
            (
                "present values are kept",
                cron.clone(),
                json!({"spec": {"cronSpec": "1 1 1 1 1", "replicas": 3}}),
                json!({"spec": {"cronSpec": "1 1 1 1 1", "replicas": 3}}),
            ),
            (
                "no spec, no defaults inside it",
                cron,
                json!({"metadata": {"name": "x"}}),
                json!({"metadata": {"name": "x"}}),
            ),
            (
                "seed: foo/bar/baz nullable example",
                nullable,
                json!({"spec": {"foo": null, "bar": null, "baz": null}}),
                json!({"spec": {"foo": "default", "bar": null}}),
            ),
            (
                "parent default makes child defaults apply",
                json!({"type": "object", "properties": {"spec": {
                    "type": "object", "default": {},
                    "properties": {"a": {"type": "integer", "default": 5},
                                   "b": {"type": "object", "default": {"c": 1},
                                         "properties": {"c": {"type": "integer"}, "d": {"type": "string", "default": "x"}}}}
                }}}),
                json!({}),
                json!({"spec": {"a": 5, "b": {"c": 1, "d": "x"}}}),
            ),
            (
                "nullable with default keeps explicit null, fills absent",
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "nullable": true, "default": "d"},
                    "b": {"type": "string", "nullable": true, "default": "d"}}}),
                json!({"a": null}),
                json!({"a": null, "b": "d"}),
            ),
            (
                "additionalProperties default only replaces nulls",
                json!({"type": "object", "properties": {"m": {"type": "object",
                    "additionalProperties": {"type": "string", "default": "dflt"}}}}),
                json!({"m": {"x": null, "y": "set"}}),
                json!({"m": {"x": "dflt", "y": "set"}}),
            ),
            (
                "additionalProperties object defaults recurse",
                json!({"type": "object", "properties": {"m": {"type": "object",
                    "additionalProperties": {"type": "object", "properties": {"p": {"type": "integer", "default": 7}}}}}}),
                json!({"m": {"x": {}, "y": {"p": 1}}}),
                json!({"m": {"x": {"p": 7}, "y": {"p": 1}}}),
            ),
            (
                "items default replaces null items, items recursed",
                json!({"type": "object", "properties": {
                    "l": {"type": "array", "items": {"type": "string", "default": "i"}},
                    "o": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer", "default": 0}}}}}}),
                json!({"l": ["a", null, "b"], "o": [{}, {"n": 2}]}),
                json!({"l": ["a", "i", "b"], "o": [{"n": 0}, {"n": 2}]}),
            ),
            (
                "null array item without items default stays null",
                json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}}}),
                json!({"l": ["a", null]}),
                json!({"l": ["a", null]}),
            ),
            (
                "nulls under preserved unknown fields stay",
                json!({"type": "object", "properties": {"p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
                json!({"p": {"q": null}}),
                json!({"p": {"q": null}}),
            ),
            (
                "null default counts as no default",
                json!({"type": "object", "properties": {"a": {"type": "string", "default": null}}}),
                json!({"a": null}),
                json!({}),
            ),
            (
                "defaults inside embedded resources apply",
                json!({"type": "object", "properties": {"e": {"type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "properties": {"r": {"type": "integer", "default": 2}}, "default": {}}}}}}),
                json!({"e": {"apiVersion": "v1", "kind": "Pod"}}),
                json!({"e": {"apiVersion": "v1", "kind": "Pod", "spec": {"r": 2}}}),
            ),
            (
                "scalars and mismatched types are left alone",
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"default": 1}}}}}),
                json!({"spec": "not-an-object"}),
                json!({"spec": "not-an-object"}),
            ),
        ]
    }

    #[test]
    fn defaulting_table() {
        for (name, schema, mut obj, want) in cases() {
            prune_nulls(&mut obj, &schema);
            apply_defaults(&mut obj, &schema);
            assert_eq!(obj, want, "case {name}");
        }
    }

    /// Where a schema declares a default, and that a schema without one defaults nothing.
    #[test]
    fn declared_defaults() {
        let schemas = [
            (json!({"type": "object"}), false),
            (json!({"properties": {"a": {"type": "string"}}}), false),
            (json!({"properties": {"a": {"default": "x"}}}), true),
            (json!({"properties": {"a": {"default": null}}}), false),
            (
                json!({"properties": {"a": {"properties": {"b": {"default": 1}}}}}),
                true,
            ),
            (json!({"additionalProperties": {"default": 1}}), true),
            (json!({"additionalProperties": true}), false),
            (
                json!({"properties": {"l": {"items": {"default": {}}}}}),
                true,
            ),
            (
                json!({"properties": {"l": {"items": [{"default": 1}]}}}),
                false,
            ),
        ];
        for (schema, want) in schemas {
            assert_eq!(declares_defaults(&schema), want, "{schema}");
        }
        for (name, schema, mut obj, _) in cases() {
            if !declares_defaults(&schema) {
                prune_nulls(&mut obj, &schema);
                let before = obj.clone();
                apply_defaults(&mut obj, &schema);
                assert_eq!(obj, before, "case {name}");
            }
        }
    }

    #[test]
    fn default_values_are_copies() {
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "object", "default": {"x": 1}}}});
        let mut o1 = json!({});
        apply_defaults(&mut o1, &schema);
        if let Some(a) = o1.get_mut("a") {
            a["x"] = json!(2);
        }
        let mut o2 = json!({});
        apply_defaults(&mut o2, &schema);
        assert_eq!(o2, json!({"a": {"x": 1}}));
    }

    #[test]
    fn never_panics_on_odd_input() {
        let schemas = [
            json!(null),
            json!(1),
            json!("x"),
            json!([]),
            json!({"properties": 3, "items": [1], "additionalProperties": "z"}),
        ];
        let objs = [
            json!(null),
            json!(1),
            json!({"a": null}),
            json!([null, {"b": 1}]),
        ];
        for s in &schemas {
            for o in &objs {
                let mut o = o.clone();
                prune_nulls(&mut o, s);
                apply_defaults(&mut o, s);
            }
        }
    }
}
