//! Pruning: removing the fields of an object that its structural schema does not specify.
//!
//! This mirrors apiextensions' `pruning.PruneWithOptions` and
//! `defaulting.PruneNonNullableNullsWithoutDefaults`. Only the structural part of a schema is
//! consulted (`properties`, `additionalProperties`, `items` and the
//! `x-kubernetes-preserve-unknown-fields` / `x-kubernetes-embedded-resource` flags); value
//! validations (`allOf`, `anyOf`, `oneOf`, `not`) never keep a field.
//!
//! Main entry points: [`prune`] (which also drops unknown `metadata` keys, as the Go decode
//! through `ObjectMeta` does) and [`prune_nulls`].

use serde_json::{Map, Value};

/// `x-kubernetes-preserve-unknown-fields`.
pub(crate) const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
/// `x-kubernetes-embedded-resource`.
pub(crate) const EMBEDDED: &str = "x-kubernetes-embedded-resource";
/// `x-kubernetes-int-or-string`.
pub(crate) const INT_OR_STRING: &str = "x-kubernetes-int-or-string";

/// The keys of a resource that pruning never touches at a resource root.
pub(crate) const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The JSON fields of `ObjectMeta`; any other key inside `metadata` is unknown.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The JSON fields of `OwnerReference`.
const OWNER_REFERENCE_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// The JSON fields of `ManagedFieldsEntry`.
const MANAGED_FIELDS_FIELDS: [&str; 7] = [
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// What a schema's `additionalProperties` says.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Additional<'a> {
    /// Not set (or `null`).
    Absent,
    /// `true` or `false`, without a schema.
    Bool(bool),
    /// A schema object.
    Schema(&'a Value),
}

impl<'a> Additional<'a> {
    /// Whether `additionalProperties` is set at all (Go: `AdditionalProperties != nil`).
    pub(crate) fn is_set(self) -> bool {
        !matches!(self, Additional::Absent)
    }

    /// The schema, if any (Go: `AdditionalProperties.Structural`).
    pub(crate) fn schema(self) -> Option<&'a Value> {
        match self {
            Additional::Schema(s) => Some(s),
            _ => None,
        }
    }
}

/// The `additionalProperties` of a schema node.
pub(crate) fn additional(s: &Value) -> Additional<'_> {
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Bool(*b),
        Some(v @ Value::Object(_)) => Additional::Schema(v),
        _ => Additional::Absent,
    }
}

/// The non-empty `properties` map of a schema node (Go's structural `Properties`).
pub(crate) fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

/// The schema of one declared property.
pub(crate) fn property<'a>(s: &'a Value, key: &str) -> Option<&'a Value> {
    properties(s).and_then(|m| m.get(key))
}

/// The single `items` schema of a node (an `items` array is not structural and yields `None`).
pub(crate) fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

/// Whether a boolean keyword is `true`.
pub(crate) fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

/// A string keyword, or `""` when unset (Go's zero value).
pub(crate) fn str_of<'a>(s: &'a Value, key: &str) -> &'a str {
    s.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The `default` of a node; `null` counts as no default (Go's `Default.Object == nil`).
pub(crate) fn default_of(s: &Value) -> Option<&Value> {
    s.get("default").filter(|v| !v.is_null())
}

/// Removes the fields of `object` that `schema` does not specify and returns their paths, sorted.
///
/// Paths join keys with `.` and print indexes as `[i]` (`spec.foo`, `spec.list[2].bar`); they are
/// what `fieldValidation=Strict|Warn` reports. With `is_resource_root` the root is treated as an
/// embedded resource: `apiVersion`, `kind` and `metadata` are kept. In the root `metadata` and in
/// the `metadata` of every `x-kubernetes-embedded-resource` object, keys that are not
/// `ObjectMeta` fields are dropped and reported as `metadata.<key>` (as the round trip through
/// Go's `ObjectMeta` does), and `null` values of known keys are dropped silently.
pub fn prune(object: &mut Value, schema: &Value, is_resource_root: bool) -> Vec<String> {
    let mut p = Pruner {
        unknown: Vec::new(),
        clean_meta: true,
    };
    let embedded = is_resource_root || flag(schema, EMBEDDED);
    let mut path = String::new();
    p.prune(object, Some(schema), embedded, &mut path);
    p.unknown.sort();
    p.unknown
}

/// Prunes like [`prune`] but leaves `metadata` contents alone, as upstream's `pruning.Prune` does
/// when checking that CRD defaults are pruned.
pub(crate) fn prune_structural(object: &mut Value, schema: &Value, is_resource_root: bool) {
    let mut p = Pruner {
        unknown: Vec::new(),
        clean_meta: false,
    };
    let embedded = is_resource_root || flag(schema, EMBEDDED);
    let mut path = String::new();
    p.prune(object, Some(schema), embedded, &mut path);
}

struct Pruner {
    unknown: Vec<String>,
    clean_meta: bool,
}

fn append_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn append_index(path: &mut String, i: usize) {
    path.push('[');
    path.push_str(&i.to_string());
    path.push(']');
}

impl Pruner {
    fn record(&mut self, path: &str, key: &str) {
        let mut p = path.to_string();
        append_key(&mut p, key);
        self.unknown.push(p);
    }

    /// Go's `prune`: `s == None` is a nil schema.
    fn prune(&mut self, x: &mut Value, s: Option<&Value>, embedded: bool, path: &mut String) {
        if let Some(sv) = s
            && flag(sv, PRESERVE)
        {
            self.skip_prune(x, sv, embedded, path);
            return;
        }
        let origin = path.len();
        match x {
            Value::Object(map) => {
                let Some(sv) = s else {
                    for k in map.keys() {
                        let mut p = path.clone();
                        append_key(&mut p, k);
                        self.unknown.push(p);
                    }
                    map.clear();
                    return;
                };
                if embedded && self.clean_meta {
                    self.clean_metadata(map, path);
                }
                // In place, without a copy of the keys: pruning walks every object read at
                // another version.
                map.retain(|k, v| {
                    if embedded && META_FIELDS.contains(&k.as_str()) {
                        return true;
                    }
                    let child_schema = if let Some(prop) = property(sv, k) {
                        Some(Some(prop))
                    } else {
                        match additional(sv) {
                            Additional::Absent => None,
                            a => Some(a.schema()),
                        }
                    };
                    if let Some(cs) = child_schema {
                        append_key(path, k);
                        let emb = cs.is_some_and(|c| flag(c, EMBEDDED));
                        self.prune(v, cs, emb, path);
                        path.truncate(origin);
                        true
                    } else {
                        if !META_FIELDS.contains(&k.as_str()) || !path.is_empty() {
                            self.record(path, k);
                        }
                        false
                    }
                });
            }
            Value::Array(list) => {
                let is = s.and_then(items);
                let emb = is.is_some_and(|c| flag(c, EMBEDDED));
                for (i, v) in list.iter_mut().enumerate() {
                    append_index(path, i);
                    self.prune(v, is, emb, path);
                    path.truncate(origin);
                }
            }
            _ => {}
        }
    }

    /// Go's `skipPrune`: unknown keys are kept, declared ones are still pruned.
    fn skip_prune(&mut self, x: &mut Value, s: &Value, embedded: bool, path: &mut String) {
        let origin = path.len();
        match x {
            Value::Object(map) => {
                if embedded && self.clean_meta {
                    self.clean_metadata(map, path);
                }
                for (k, v) in map.iter_mut() {
                    if embedded && META_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    let cs = if let Some(prop) = property(s, k) {
                        Some(prop)
                    } else if additional(s).is_set() {
                        additional(s).schema()
                    } else {
                        continue;
                    };
                    append_key(path, k);
                    let emb = cs.is_some_and(|c| flag(c, EMBEDDED));
                    self.prune(v, cs, emb, path);
                    path.truncate(origin);
                }
            }
            Value::Array(list) => {
                let Some(is) = items(s) else {
                    return;
                };
                let emb = flag(is, EMBEDDED);
                for (i, v) in list.iter_mut().enumerate() {
                    append_index(path, i);
                    self.skip_prune(v, is, emb, path);
                    path.truncate(origin);
                }
            }
            _ => {}
        }
    }

    /// Drops what the round trip through Go's `ObjectMeta` drops from `metadata`.
    fn clean_metadata(&mut self, map: &mut Map<String, Value>, path: &str) {
        let Some(Value::Object(meta)) = map.get_mut("metadata") else {
            return;
        };
        let mut prefix = path.to_string();
        append_key(&mut prefix, "metadata");
        // In place, and the paths of list items built only for what is dropped.
        meta.retain(|k, v| {
            if !OBJECT_META_FIELDS.contains(&k.as_str()) {
                self.record(&prefix, k);
                return false;
            }
            if v.is_null() {
                return false;
            }
            let allowed: &[&str] = match k.as_str() {
                "ownerReferences" => &OWNER_REFERENCE_FIELDS,
                "managedFields" => &MANAGED_FIELDS_FIELDS,
                _ => return true,
            };
            if let Value::Array(list) = v {
                for (i, item) in list.iter_mut().enumerate() {
                    let Value::Object(entry) = item else {
                        continue;
                    };
                    entry.retain(|ek, _| {
                        if allowed.contains(&ek.as_str()) {
                            return true;
                        }
                        let mut item_path = prefix.clone();
                        append_key(&mut item_path, k);
                        append_index(&mut item_path, i);
                        self.record(&item_path, ek);
                        false
                    });
                }
            }
            true
        });
    }
}

/// Removes map entries whose value is `null` when their schema is known, not `nullable` and has
/// no `default` (Go's `PruneNonNullableNullsWithoutDefaults`).
///
/// This runs after [`prune`] and before defaulting, so that non-nullable nulls either disappear
/// or get their default. Array items are never removed (they fail type validation instead), and
/// nulls without a schema (inside preserved unknown fields) stay.
pub fn prune_nulls(object: &mut Value, schema: &Value) {
    prune_nulls_inner(object, Some(schema));
}

fn prune_nulls_inner(x: &mut Value, s: Option<&Value>) {
    match x {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let fs = s.and_then(|s| property(s, &k).or_else(|| additional(s).schema()));
                let Some(v) = map.get_mut(&k) else {
                    continue;
                };
                let drop = v.is_null()
                    && fs.is_some_and(|fs| !flag(fs, "nullable") && default_of(fs).is_none());
                if drop {
                    map.remove(&k);
                } else {
                    prune_nulls_inner(v, fs);
                }
            }
        }
        Value::Array(list) => {
            let is = s.and_then(items);
            for v in list.iter_mut() {
                prune_nulls_inner(v, is);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crontab_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "cronSpec": {"type": "string"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer"}
                    }
                }
            }
        })
    }

    /// One pruning case: name, schema, `is_resource_root`, object in, object out, unknown paths.
    type Case = (&'static str, Value, bool, Value, Value, Vec<&'static str>);

    fn cases() -> Vec<Case> {
        vec![
            (
                "seed: someRandomField is pruned",
                crontab_schema(),
                true,
                json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                       "metadata": {"name": "my-new-cron-object"},
                       "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "someRandomField": 42}}),
                json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                       "metadata": {"name": "my-new-cron-object"},
                       "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}}),
                vec!["spec.someRandomField"],
            ),
            (
                "seed: preserve-unknown-fields keeps any JSON",
                json!({"type": "object", "properties": {"json": {"x-kubernetes-preserve-unknown-fields": true}}}),
                true,
                json!({"json": {"a": [1, {"b": 2}], "c": "d"}, "other": 1}),
                json!({"json": {"a": [1, {"b": 2}], "c": "d"}}),
                vec!["other"],
            ),
            (
                "seed: pruning is enabled again for specified properties",
                json!({"type": "object", "properties": {"json": {
                    "x-kubernetes-preserve-unknown-fields": true, "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "foo": {"type": "string"}, "bar": {"type": "string"}}}}}}}),
                true,
                json!({"json": {"spec": {"foo": "abc", "bar": "def", "something": "x"}, "status": {"something": "x"}}}),
                json!({"json": {"spec": {"foo": "abc", "bar": "def"}, "status": {"something": "x"}}}),
                vec!["json.spec.something"],
            ),
            (
                "seed: int-or-string field keeps its value",
                json!({"type": "object", "properties": {"foo": {"x-kubernetes-int-or-string": true}}}),
                true,
                json!({"foo": 42, "bar": "x"}),
                json!({"foo": 42}),
                vec!["bar"],
            ),
            (
                "seed: RawExtension (embedded + preserve) keeps everything",
                json!({"type": "object", "properties": {"foo": {
                    "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
                true,
                json!({"foo": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}}),
                json!({"foo": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}}),
                vec![],
            ),
            (
                "embedded without preserve keeps type and object meta, prunes the rest",
                json!({"type": "object", "properties": {"foo": {
                    "type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}),
                true,
                json!({"foo": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1},
                               "spec": {"a": "x", "b": "y"}, "status": {}}}),
                json!({"foo": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"a": "x"}}}),
                vec!["foo.metadata.junk", "foo.spec.b", "foo.status"],
            ),
            (
                "root metadata: unknown keys dropped, nulls dropped, nested owner references",
                crontab_schema(),
                true,
                json!({"metadata": {"name": "x", "foo": 1, "labels": null,
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u", "bogus": true}]}}),
                json!({"metadata": {"name": "x",
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"}]}}),
                vec!["metadata.foo", "metadata.ownerReferences[0].bogus"],
            ),
            (
                "not a resource root: apiVersion/kind/metadata are pruned silently",
                json!({"type": "object", "properties": {"a": {"type": "string"}}}),
                false,
                json!({"a": "x", "apiVersion": "v1", "kind": "K", "metadata": {}, "b": 1}),
                json!({"a": "x"}),
                vec!["b"],
            ),
            (
                "lists: items pruned with indexes in paths",
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "list": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}}),
                true,
                json!({"spec": {"list": [{"name": "a"}, {"name": "b", "bar": 1}, {"bar": 2, "baz": 3}]}}),
                json!({"spec": {"list": [{"name": "a"}, {"name": "b"}, {}]}}),
                vec!["spec.list[1].bar", "spec.list[2].bar", "spec.list[2].baz"],
            ),
            (
                "map keys are joined with a dot",
                json!({"type": "object", "properties": {"m": {"type": "object",
                    "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}}}}),
                true,
                json!({"m": {"key1": {"v": "a", "w": "b"}}}),
                json!({"m": {"key1": {"v": "a"}}}),
                vec!["m.key1.w"],
            ),
            (
                "additionalProperties true: keys kept, nested objects pruned with a nil schema",
                json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": true}}}),
                true,
                json!({"m": {"s": "x", "n": 1, "l": [1, 2], "o": {"a": 1, "b": {"c": 2}}, "lo": [{"z": 1}]}}),
                json!({"m": {"s": "x", "n": 1, "l": [1, 2], "o": {}, "lo": [{}]}}),
                vec!["m.lo[0].z", "m.o.a", "m.o.b"],
            ),
            (
                "object without properties or additionalProperties loses every key",
                json!({"type": "object", "properties": {"o": {"type": "object"}}}),
                true,
                json!({"o": {"a": 1, "b": 2}}),
                json!({"o": {}}),
                vec!["o.a", "o.b"],
            ),
            (
                "allOf/anyOf properties do not keep fields",
                json!({"type": "object", "properties": {"a": {"type": "string"}},
                       "anyOf": [{"properties": {"b": {}}}], "allOf": [{"properties": {"c": {}}}]}),
                true,
                json!({"a": "x", "b": 1, "c": 2}),
                json!({"a": "x"}),
                vec!["b", "c"],
            ),
            (
                "preserve with additionalProperties true prunes nested objects",
                json!({"type": "object", "properties": {"p": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": true}}}),
                true,
                json!({"p": {"a": {"b": 1}, "c": 2}}),
                json!({"p": {"a": {}, "c": 2}}),
                vec!["p.a.b"],
            ),
            (
                "preserved array items inherit preservation",
                json!({"type": "object", "properties": {"l": {"type": "array",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "items": {"type": "object", "properties": {"k": {"type": "object", "properties": {}}}}}}}),
                true,
                json!({"l": [{"k": {"x": 1}, "other": 2}]}),
                json!({"l": [{"k": {}, "other": 2}]}),
                vec!["l[0].k.x"],
            ),
            (
                "root preserve keeps unknown top-level fields",
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                       "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
                true,
                json!({"metadata": {"name": "n", "zz": 1}, "spec": {"a": "x", "b": 1}, "extra": {"y": 1}}),
                json!({"metadata": {"name": "n"}, "spec": {"a": "x"}, "extra": {"y": 1}}),
                vec!["metadata.zz", "spec.b"],
            ),
        ]
    }

    #[test]
    fn pruning_table() {
        for (name, schema, root, mut obj, want, paths) in cases() {
            let got = prune(&mut obj, &schema, root);
            assert_eq!(obj, want, "case {name}: object");
            assert_eq!(got, paths, "case {name}: unknown paths");
        }
    }

    #[test]
    fn prune_structural_leaves_metadata_alone() {
        let schema = json!({"type": "object", "x-kubernetes-embedded-resource": true,
                            "properties": {"spec": {"type": "object"}}});
        let mut obj = json!({"metadata": {"junk": 1}, "spec": {"a": 1}, "x": 1});
        prune_structural(&mut obj, &schema, false);
        assert_eq!(obj, json!({"metadata": {"junk": 1}, "spec": {}}));
    }

    /// (name, schema, object in, object out)
    fn null_cases() -> Vec<(&'static str, Value, Value, Value)> {
        let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "foo": {"type": "string", "nullable": false, "default": "default"},
            "bar": {"type": "string", "nullable": true},
            "baz": {"type": "string"},
            "list": {"type": "array", "items": {"type": "string"}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "any": {"type": "object", "additionalProperties": true},
            "keep": {"x-kubernetes-preserve-unknown-fields": true}
        }}}});
        vec![
            (
                "seed: non-nullable without default is removed, default and nullable stay",
                schema.clone(),
                json!({"spec": {"foo": null, "bar": null, "baz": null}}),
                json!({"spec": {"foo": null, "bar": null}}),
            ),
            (
                "array items are untouched; map values with a schema are removed",
                schema.clone(),
                json!({"spec": {"list": ["a", null], "map": {"a": null, "b": "x"}, "any": {"c": null}}}),
                json!({"spec": {"list": ["a", null], "map": {"b": "x"}, "any": {"c": null}}}),
            ),
            (
                "unknown fields and preserved subtrees keep nulls",
                schema.clone(),
                json!({"spec": {"keep": {"x": null}, "unknown": null}, "other": null}),
                json!({"spec": {"keep": {"x": null}, "unknown": null}, "other": null}),
            ),
            (
                "a null spec is removed at the root",
                schema,
                json!({"spec": null}),
                json!({}),
            ),
        ]
    }

    #[test]
    fn prune_nulls_table() {
        for (name, schema, mut obj, want) in null_cases() {
            prune_nulls(&mut obj, &schema);
            assert_eq!(obj, want, "case {name}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        let schemas = [
            json!(null),
            json!(true),
            json!({"properties": 1, "items": [], "additionalProperties": "x"}),
            json!({"x-kubernetes-preserve-unknown-fields": true, "items": {"x-kubernetes-embedded-resource": true}}),
        ];
        let objs = [
            json!(null),
            json!(3),
            json!({"metadata": 1, "a": {"b": [1, null]}}),
            json!([{"metadata": {"ownerReferences": [1, {"x": 1}]}}]),
        ];
        for s in &schemas {
            for root in [true, false] {
                for o in &objs {
                    let mut o = o.clone();
                    let _ = prune(&mut o, s, root);
                    prune_nulls(&mut o, s);
                }
            }
        }
    }
}
