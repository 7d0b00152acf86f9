//! A custom resource's schema as kube-apiserver's CRD OpenAPI builder publishes it
//! (`apiextensions-apiserver/pkg/controller/openapi/builder`): the CRD's `openAPIV3Schema`
//! unfolded, converted for OpenAPI v2 where published there, with `apiVersion`, `kind` and
//! `metadata` on the kind and on every embedded resource.
//!
//! Each transform is its own step: [`unfold`], [`to_v2`], [`embedded_properties`].

use serde_json::{Map, Value, json};

/// Which document the schema is published in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Flavor {
    /// `/openapi/v3`: the schema as written (unfolded).
    V3,
    /// `/openapi/v2`: through upstream's `ToStructuralOpenAPIV2`, which removes what kubectl's
    /// and Helm's v2 validation cannot read (nullable types, junctors, fields under
    /// `x-kubernetes-preserve-unknown-fields`).
    V2,
}

/// `TypeMeta`'s field texts, as upstream's builder writes them on embedded resources.
const EMBEDDED_API_VERSION_DOC: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DOC: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The kind's schema before `apiVersion`, `kind` and `metadata` are set on it, or `None` where
/// upstream publishes a bare `{type: object}`: a version without a schema, and, in v2, a kind
/// that preserves unknown fields at its root (kubectl would refuse every field otherwise).
pub(super) fn kind_body(
    schema: Option<&Value>,
    crd_preserves_unknown_fields: bool,
    flavor: Flavor,
) -> Option<Value> {
    let schema = schema.filter(|s| s.is_object())?;
    if flavor == Flavor::V2 && (preserves(schema) || crd_preserves_unknown_fields) {
        return None;
    }
    let mut schema = schema.clone();
    unfold(&mut schema);
    if flavor == Flavor::V2 {
        to_v2(&mut schema);
    }
    embedded_properties(&mut schema, flavor);
    Some(schema)
}

fn preserves(s: &Value) -> bool {
    s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

/// Every child schema of a node: its properties, its items, its additional properties.
fn children(m: &mut Map<String, Value>) -> impl Iterator<Item = &mut Value> {
    let mut out: Vec<&mut Value> = Vec::new();
    for (k, v) in m.iter_mut() {
        match k.as_str() {
            "properties" => out.extend(v.as_object_mut().into_iter().flat_map(|p| p.values_mut())),
            "items" | "additionalProperties" if v.is_object() => out.push(v),
            _ => {}
        }
    }
    out.into_iter()
}

/// Upstream's `Structural.Unfold`: an `x-kubernetes-int-or-string` node states its two types
/// as `anyOf` (or, when it has an `anyOf` of its own, as the first `allOf` entry), unless it
/// already does.
fn unfold(v: &mut Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    if m.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) && !states_int_or_string(m) {
        let both = json!([{"type": "integer"}, {"type": "string"}]);
        if m.contains_key("anyOf") {
            let mut all_of = vec![json!({"anyOf": both})];
            if let Some(Value::Array(rest)) = m.remove("allOf") {
                all_of.extend(rest);
            }
            m.insert("allOf".into(), Value::Array(all_of));
        } else {
            m.insert("anyOf".into(), both);
        }
    }
    children(m).for_each(unfold);
}

/// Whether the node's `anyOf` (or its first `allOf` entry's) already is
/// `[{type: integer}, {type: string}]`.
fn states_int_or_string(m: &Map<String, Value>) -> bool {
    let pattern = |any_of: Option<&Value>| {
        any_of.and_then(Value::as_array).is_some_and(|a| {
            a.len() == 2 && a[0] == json!({"type": "integer"}) && a[1] == json!({"type": "string"})
        })
    };
    pattern(m.get("anyOf"))
        || m.get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .is_some_and(|first| pattern(first.get("anyOf")))
}

/// Upstream's `ToStructuralOpenAPIV2`, node by node, parent before children: no junctors; a
/// nullable node loses its type and structure; a node preserving unknown fields loses its
/// structure (and an object's type); an array without items loses its type; nullable fields
/// are not required.
fn to_v2(v: &mut Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(junctor);
    }
    if m.remove("nullable") == Some(Value::Bool(true)) {
        m.remove("type");
        m.remove("items");
        m.remove("properties");
    }
    let preserves = m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if preserves {
        m.remove("items");
        m.remove("properties");
    }
    let type_is =
        |m: &Map<String, Value>, t: &str| m.get("type").and_then(Value::as_str) == Some(t);
    if !m.contains_key("items") && type_is(m, "array") {
        m.remove("type");
    }
    if preserves && type_is(m, "object") {
        m.remove("type");
    }
    let is_nullable = |s: &Value| s.get("nullable") == Some(&Value::Bool(true));
    let nullable_fields: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, s)| is_nullable(s))
        .map(|(k, _)| k.clone())
        .collect();
    let nullable_values = m.get("additionalProperties").is_some_and(is_nullable);
    if let Some(Value::Array(required)) = m.get_mut("required") {
        if nullable_values {
            required.clear();
        }
        required.retain(|r| {
            r.as_str()
                .is_none_or(|r| !nullable_fields.iter().any(|f| f == r))
        });
        if required.is_empty() {
            m.remove("required");
        }
    }
    children(m).for_each(to_v2);
}

/// Upstream's `addEmbeddedProperties`: every `x-kubernetes-embedded-resource` node gets
/// `apiVersion`, `kind` and `metadata` and requires the first two; in v2 not where it preserves
/// unknown fields (kubectl would then refuse its other fields).
fn embedded_properties(v: &mut Value, flavor: Flavor) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    children(m).for_each(|c| embedded_properties(c, flavor));
    let preserves = m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if (preserves && flavor == Flavor::V2)
        || m.get("x-kubernetes-embedded-resource") != Some(&Value::Bool(true))
    {
        return;
    }
    let props = m
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": EMBEDDED_API_VERSION_DOC}),
        );
        props.insert(
            "kind".into(),
            json!({"type": "string", "description": EMBEDDED_KIND_DOC}),
        );
        props.insert("metadata".into(), super::metadata_property());
    }
    let required = m
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(required) = required.as_array_mut() {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(Value::from(field));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Literal schemas in and out, from upstream's `ToStructuralOpenAPIV2` and builder cases.
    #[test]
    fn schemas_are_published_as_upstream_publishes_them() {
        let cases: &[(&str, Flavor, Value, Option<Value>)] = &[
            (
                "v2: a nullable field loses its type and is not required",
                Flavor::V2,
                json!({"type": "object", "required": ["a", "b"], "properties": {
                    "a": {"type": "string", "nullable": true},
                    "b": {"type": "object", "nullable": true, "properties": {"c": {"type": "string"}}},
                }}),
                Some(json!({"type": "object", "properties": {"a": {}, "b": {}}})),
            ),
            (
                "v3 keeps nullable",
                Flavor::V3,
                json!({"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "string", "nullable": true}}}),
                Some(json!({"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "string", "nullable": true}}})),
            ),
            (
                "v2: nullable map values drop the whole required list",
                Flavor::V2,
                json!({"type": "object", "required": ["x"], "additionalProperties":
                    {"type": "string", "nullable": true}}),
                Some(json!({"type": "object", "additionalProperties": {}})),
            ),
            (
                "v2: junctors go, value validations stay",
                Flavor::V2,
                json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3,
                    "anyOf": [{"pattern": "a"}], "not": {"pattern": "b"}}}}),
                Some(
                    json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}),
                ),
            ),
            (
                "v2: a field preserving unknown fields loses its structure and object type",
                Flavor::V2,
                json!({"type": "object", "properties": {"p": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"q": {"type": "string"}}}}}),
                Some(json!({"type": "object", "properties": {"p": {
                    "x-kubernetes-preserve-unknown-fields": true}}})),
            ),
            (
                "v2: an array left without items loses its type",
                Flavor::V2,
                json!({"type": "object", "properties": {"l": {"type": "array", "nullable": false,
                    "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}}}}),
                Some(json!({"type": "object", "properties": {"l": {
                    "x-kubernetes-preserve-unknown-fields": true}}})),
            ),
            (
                "v2: a root preserving unknown fields is a bare object",
                Flavor::V2,
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"spec": {"type": "object"}}}),
                None,
            ),
            (
                "int-or-string unfolds into anyOf, and v2 drops it again",
                Flavor::V3,
                json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
                Some(
                    json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
                ),
            ),
            (
                "int-or-string with an anyOf of its own: the pair comes first in allOf",
                Flavor::V3,
                json!({"x-kubernetes-int-or-string": true, "anyOf": [{"maximum": 3}]}),
                Some(
                    json!({"x-kubernetes-int-or-string": true, "anyOf": [{"maximum": 3}],
                    "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]}),
                ),
            ),
            (
                "int-or-string already stated is left as is",
                Flavor::V3,
                json!({"x-kubernetes-int-or-string": true,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]}),
                Some(json!({"x-kubernetes-int-or-string": true,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]})),
            ),
            (
                "v2 int-or-string",
                Flavor::V2,
                json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
                Some(
                    json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
                ),
            ),
        ];
        for (name, flavor, input, want) in cases {
            assert_eq!(&kind_body(Some(input), false, *flavor), want, "{name}");
        }
    }

    #[test]
    fn embedded_resources_get_type_and_object_metadata() {
        let schema = json!({"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "required": ["spec"], "properties": {"spec": {"type": "object"}}},
            "raw": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true},
        }});
        let v3 = kind_body(Some(&schema), false, Flavor::V3).unwrap();
        let template = &v3["properties"]["template"];
        assert_eq!(template["required"], json!(["spec", "kind", "apiVersion"]));
        assert_eq!(
            template["properties"]["apiVersion"]["description"],
            EMBEDDED_API_VERSION_DOC
        );
        assert_eq!(template["properties"]["kind"]["type"], "string");
        assert_eq!(
            template["properties"]["metadata"],
            super::super::metadata_property()
        );
        assert!(v3["properties"]["raw"]["properties"]["metadata"].is_object());
        // v2 leaves an embedded resource that preserves unknown fields alone.
        let v2 = kind_body(Some(&schema), false, Flavor::V2).unwrap();
        assert!(v2["properties"]["template"]["properties"]["metadata"].is_object());
        assert_eq!(
            v2["properties"]["raw"],
            json!({"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true})
        );
    }

    #[test]
    fn no_schema_and_v1beta1_preserve_unknown_fields_publish_a_bare_object() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        assert_eq!(kind_body(None, false, Flavor::V3), None);
        assert_eq!(kind_body(Some(&schema), true, Flavor::V2), None);
        assert!(kind_body(Some(&schema), true, Flavor::V3).is_some());
    }
}
