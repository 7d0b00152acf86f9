//! Table tests: literal schema in, expected Kubernetes error strings out.

use super::*;
use serde_json::json;

const P: &str = "spec.validation.openAPIV3Schema";

fn root() -> Path {
    Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema")
}

fn run(schema: &Value, opts: &CheckOptions) -> Vec<String> {
    check_schema(schema, &root(), opts)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Expands `P` in expected strings.
fn exp(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.replace("{P}", P)).collect()
}

fn create() -> CheckOptions {
    CheckOptions::create()
}

/// (name, schema, options, expected errors)
fn cases() -> Vec<(&'static str, Value, CheckOptions, Vec<&'static str>)> {
    let crontab_defaults = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$", "default": "5 0 * * *"},
            "image": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
        }}}
    });
    vec![
        (
            "seed: crontab schema with defaults is valid",
            crontab_defaults,
            create(),
            vec![],
        ),
        (
            "seed: non-structural example 3",
            json!({
                "properties": {
                    "foo": {"pattern": "abc"},
                    "metadata": {"type": "object", "properties": {
                        "name": {"type": "string", "pattern": "^a"},
                        "finalizers": {"type": "array", "items": {"type": "string", "pattern": "my-finalizer"}}
                    }}
                },
                "anyOf": [{
                    "properties": {"bar": {"type": "integer", "minimum": 42}},
                    "required": ["bar"],
                    "description": "foo bar object"
                }]
            }),
            create(),
            vec![
                "{P}.anyOf[0].description: Forbidden: must be empty to be structural",
                "{P}.anyOf[0].properties[bar].type: Forbidden: must be empty to be structural",
                "{P}.properties[bar]: Required value: because it is defined in {P}.anyOf[0].properties[bar]",
                "{P}.properties[foo].type: Required value: must not be empty for specified object fields",
                "{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
                "{P}.type: Required value: must not be empty at the root",
            ],
        ),
        (
            "seed: the structural counterpart of example 3",
            json!({
                "type": "object",
                "description": "foo bar object",
                "properties": {
                    "foo": {"type": "string", "pattern": "abc"},
                    "bar": {"type": "integer"},
                    "metadata": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}}
                },
                "anyOf": [{"properties": {"bar": {"minimum": 42}}, "required": ["bar"]}]
            }),
            create(),
            vec![],
        ),
        (
            "seed: non-structural example 1 (property only inside allOf)",
            json!({"type": "object", "allOf": [{"properties": {"foo": {"pattern": "x"}}}]}),
            create(),
            vec![
                "{P}.properties[foo]: Required value: because it is defined in {P}.allOf[0].properties[foo]",
            ],
        ),
        (
            "seed: example 1 corrected",
            json!({"type": "object", "properties": {"foo": {"type": "string"}},
                   "allOf": [{"properties": {"foo": {"pattern": "x"}}}]}),
            create(),
            vec![],
        ),
        (
            "seed: non-structural example 2 (items only inside allOf)",
            json!({"type": "object", "allOf": [{"items": {"properties": {"foo": {"pattern": "x"}}}}]}),
            create(),
            vec!["{P}.items: Required value: because it is defined in {P}.allOf[0].items"],
        ),
        (
            "seed: example 2 corrected",
            json!({"type": "object",
                   "items": {"type": "object", "properties": {"foo": {"type": "string"}}},
                   "allOf": [{"items": {"properties": {"foo": {"pattern": "x"}}}}]}),
            create(),
            vec![],
        ),
        (
            "completeness is only checked from the root (as upstream)",
            json!({"type": "object", "properties": {"spec": {"type": "object",
                   "anyOf": [{"properties": {"undeclared": {"pattern": "x"}}}]}}}),
            create(),
            vec![],
        ),
        (
            "seed: int-or-string without type is structural",
            json!({"type": "object", "properties": {"foo": {"x-kubernetes-int-or-string": true}}}),
            create(),
            vec![],
        ),
        (
            "int-or-string anyOf and allOf patterns may carry types",
            json!({"type": "object", "properties": {
                "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "b": {"x-kubernetes-int-or-string": true, "allOf": [
                    {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    {"pattern": "^[0-9]+%?$"}
                ]}
            }}),
            create(),
            vec![],
        ),
        (
            "int-or-string anyOf in another order is not the pattern",
            json!({"type": "object", "properties": {
                "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
            create(),
            vec![
                "{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
                "{P}.properties[a].anyOf[1].type: Forbidden: must be empty to be structural",
            ],
        ),
        (
            "int-or-string cannot preserve unknown fields or be embedded",
            json!({"type": "object", "properties": {"a": {
                "type": "object",
                "x-kubernetes-int-or-string": true,
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-embedded-resource": true}}}),
            create(),
            vec![
                "{P}.properties[a].x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
                "{P}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            ],
        ),
        (
            "seed: RawExtension as written lacks type: object (upstream rejects it)",
            json!({"type": "object", "properties": {"foo": {
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
            create(),
            vec![
                "{P}.properties[foo].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            ],
        ),
        (
            "RawExtension with type: object",
            json!({"type": "object", "properties": {"foo": {"type": "object",
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
            create(),
            vec![],
        ),
        (
            "seed: preserve-unknown-fields subtree",
            json!({"type": "object", "properties": {"json": {
                "x-kubernetes-preserve-unknown-fields": true, "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "foo": {"type": "string"}, "bar": {"type": "string"}}}}}}}),
            create(),
            vec![],
        ),
        (
            "embedded resource without properties or preserve",
            json!({"type": "object", "properties": {"e": {"x-kubernetes-embedded-resource": true}}}),
            create(),
            vec![
                "{P}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                "{P}.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            ],
        ),
        (
            "embedded resource with additionalProperties, bad kind and metadata types",
            json!({"type": "object", "properties": {
                "e": {"type": "object", "x-kubernetes-embedded-resource": true,
                      "x-kubernetes-preserve-unknown-fields": true,
                      "additionalProperties": {"type": "string"}},
                "f": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                    "kind": {"type": "integer"}, "apiVersion": {"type": "string"}, "metadata": {"type": "string"}}}
            }}),
            create(),
            vec![
                "{P}.properties[e].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set",
                "{P}.properties[f].properties[kind].type: Invalid value: \"integer\": must be string",
                "{P}.properties[f].properties[metadata].type: Invalid value: \"string\": must be object",
            ],
        ),
        (
            "x-kubernetes-embedded-resource inside resource meta",
            json!({"type": "object", "properties": {"e": {"type": "object",
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"metadata": {"type": "object", "x-kubernetes-embedded-resource": true,
                                            "x-kubernetes-preserve-unknown-fields": true}}}}}),
            create(),
            vec![
                "{P}.properties[e].properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta",
            ],
        ),
        (
            "root: additionalProperties, wrong type, apiVersion type",
            json!({"type": "string", "additionalProperties": {"type": "string"},
                   "properties": {"apiVersion": {"type": "integer"}}}),
            create(),
            vec![
                "{P}.additionalProperties: Forbidden: must not be used at the root",
                "{P}.properties[apiVersion].type: Invalid value: \"integer\": must be string",
                "{P}.type: Invalid value: \"string\": must be object at the root",
                "{P}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            ],
        ),
        (
            "root metadata may restrict name and generateName",
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 5}, "generateName": {"type": "string"}}}}}),
            create(),
            vec![],
        ),
        (
            "root metadata may not restrict labels",
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}),
            create(),
            vec![
                "{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ],
        ),
        (
            "array without items, items without type",
            json!({"type": "object", "properties": {
                "l": {"type": "array"},
                "m": {"type": "array", "items": {}}}}),
            create(),
            vec![
                "{P}.properties[l].items: Required value: must be specified",
                "{P}.properties[m].items.type: Required value: must not be empty for specified array items",
            ],
        ),
        (
            "uniqueItems true",
            json!({"type": "object", "properties": {"spec": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}),
            create(),
            vec![
                "{P}.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ],
        ),
        (
            "unsupported keywords",
            json!({"type": "object", "properties": {
                "a": {"type": "string", "id": "x"},
                "b": {"type": "string", "$ref": "#/definitions/x"},
                "c": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
                "d": {"type": "object", "definitions": {"x": {"type": "string"}}},
                "e": {"type": "object", "dependencies": {"x": ["y"]}},
                "f": {"type": "array", "items": {"type": "string"}, "additionalItems": false},
                "g": {"type": "array", "items": [{"type": "string"}]},
                "h": {"type": "string", "readOnly": true, "writeOnly": false, "xml": {"name": "x"},
                      "deprecated": true, "discriminator": {"propertyName": "k"}}
            }}),
            create(),
            vec![
                "{P}.properties[a].id: Forbidden: id is not supported",
                "{P}.properties[b].$ref: Forbidden: $ref is not supported",
                "{P}.properties[c].patternProperties: Forbidden: patternProperties is not supported",
                "{P}.properties[d].definitions: Forbidden: definitions is not supported",
                "{P}.properties[e].dependencies: Forbidden: dependencies is not supported",
                "{P}.properties[f].additionalItems: Forbidden: additionalItems is not supported",
                "{P}.properties[g].items: Forbidden: items must be a schema object and not an array",
                "{P}.properties[h].deprecated: Forbidden: deprecated is not supported",
                "{P}.properties[h].discriminator: Forbidden: discriminator is not supported",
                "{P}.properties[h].readOnly: Forbidden: readOnly is not supported",
                "{P}.properties[h].writeOnly: Forbidden: writeOnly is not supported",
                "{P}.properties[h].xml: Forbidden: xml is not supported",
            ],
        ),
        (
            "the NewStructural error shows only when nothing else is wrong",
            json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}),
            create(),
            vec!["{P}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"],
        ),
        (
            "type values",
            json!({"type": "object", "properties": {
                "a": {"type": "null"}, "b": {"type": "foo"}}}),
            create(),
            vec![
                "{P}.properties[a].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
                "{P}.properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative",
                "{P}.properties[b].type: Unsupported value: \"foo\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            ],
        ),
        (
            "additionalProperties and properties",
            json!({"type": "object", "properties": {
                "a": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
                "b": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": false},
                "c": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": true}}}),
            create(),
            vec![
                "{P}.properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
                "{P}.properties[b].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            ],
        ),
        (
            "x-kubernetes-preserve-unknown-fields: false",
            json!({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
            create(),
            vec![
                "{P}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            ],
        ),
        (
            "map types",
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-kubernetes-map-type": "atomic"},
                "b": {"type": "object", "x-kubernetes-map-type": "foo"}}}),
            create(),
            vec![
                "{P}.properties[a].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified",
                "{P}.properties[b].x-kubernetes-map-type: Unsupported value: \"foo\": supported values: \"atomic\", \"granular\"",
            ],
        ),
        (
            "set items must be atomic",
            json!({"type": "object", "properties": {
                "a": {"type": "array", "x-kubernetes-list-type": "set",
                      "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                "b": {"type": "array", "x-kubernetes-list-type": "set",
                      "items": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}},
                "c": {"type": "array", "x-kubernetes-list-type": "set",
                      "items": {"type": "object", "x-kubernetes-map-type": "atomic"}},
                "d": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "nullable": true}}}}),
            create(),
            vec![
                "{P}.properties[a].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
                "{P}.properties[b].items.x-kubernetes-list-type: Invalid value: \"set\": must be atomic as item of a list with x-kubernetes-list-type=set",
                "{P}.properties[d].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set",
            ],
        ),
        (
            "list types",
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-kubernetes-list-type": "atomic"},
                "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "foo"},
                "c": {"type": "array", "x-kubernetes-list-map-keys": ["k"],
                      "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}},
                "d": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
                "e": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                      "items": {"type": "string"}}}}),
            create(),
            vec![
                "{P}.properties[a].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified",
                "{P}.properties[b].x-kubernetes-list-type: Unsupported value: \"foo\": supported values: \"atomic\", \"set\", \"map\"",
                "{P}.properties[c].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
                "{P}.properties[d].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
                "{P}.properties[e].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map",
            ],
        ),
        (
            "map list keys",
            json!({"type": "object", "properties": {"l": {
                "type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k", "o", "z", "k"],
                "items": {"type": "object", "properties": {
                    "k": {"type": "string"}, "o": {"type": "object"}, "n": {"type": "string", "nullable": true}}}}}}),
            create(),
            vec![
                "{P}.properties[l].items.properties[o].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map",
                "{P}.properties[l].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"o\",\"z\",\"k\"]: entries must all be names of item properties",
                "{P}.properties[l].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"o\",\"z\",\"k\"]: must not contain duplicate entries",
                "{P}.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                "{P}.properties[l].items.properties[o].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                "{P}.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ],
        ),
        (
            "map list keys: required or defaulted, not nullable",
            json!({"type": "object", "properties": {"l": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b", "c"],
                "items": {"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "string"},
                    "b": {"type": "string", "default": "x"},
                    "c": {"type": "string", "nullable": true, "default": "y"}}}}}}),
            create(),
            vec![
                "{P}.properties[l].items.properties[c].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ],
        ),
        (
            "ratcheted map-list rules are skipped",
            json!({"type": "object", "properties": {"l": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"],
                "items": {"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}}}}}),
            CheckOptions {
                require_map_list_keys_map_set_validation: false,
                ..create()
            },
            vec![],
        ),
        (
            "defaults in top-level metadata, apiVersion and kind",
            json!({"type": "object", "properties": {
                "metadata": {"type": "object", "default": {}},
                "kind": {"type": "string", "default": "X"}}}),
            create(),
            vec![
                "{P}.properties[kind].default: Forbidden: must not be set in top-level kind",
                "{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata",
            ],
        ),
        (
            "defaults inside additionalProperties applying to object metadata",
            json!({"type": "object", "properties": {"e": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {"metadata": {"type": "object", "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "v"}}}}}}}}),
            create(),
            vec![
                "{P}.properties[e].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata",
            ],
        ),
        (
            "defaults need spec.preserveUnknownFields false",
            json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}),
            create().with_preserve_unknown_fields(true),
            vec![
                "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
            ],
        ),
        (
            "defaults may be disallowed",
            json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}),
            CheckOptions {
                allow_defaults: false,
                ..create()
            },
            vec!["{P}.properties[a].default: Forbidden: must not be set"],
        ),
        (
            "defaults must be pruned",
            json!({"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}}}}),
            create(),
            vec![
                "{P}.properties[spec].default: Invalid value: {\"a\":\"x\",\"b\":\"y\"}: must not have unknown fields",
            ],
        ),
        (
            "unpruned defaults ratcheted",
            json!({"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}}}}),
            CheckOptions {
                require_pruned_defaults: false,
                ..create()
            },
            vec![],
        ),
        (
            "embedded defaults keep apiVersion, kind and metadata",
            json!({"type": "object", "properties": {"e": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "default": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "b"}}}}}),
            create(),
            vec![],
        ),
        (
            "root nullable",
            json!({"type": "object", "nullable": true}),
            create(),
            vec!["{P}.nullable: Forbidden: nullable cannot be true at the root"],
        ),
        (
            "status subresource: root type",
            json!({"type": "array", "items": {"type": "string"}}),
            create().with_status_subresource(true),
            vec![
                "{P}.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                "{P}.type: Invalid value: \"array\": must be object at the root",
            ],
        ),
        (
            "status subresource: root fields",
            json!({"type": "object", "minProperties": 1, "properties": {"a": {"type": "string"}}}),
            create().with_status_subresource(true),
            vec![
                "{P}: Invalid value: {\"minProperties\":1,\"properties\":{\"a\":{\"type\":\"string\"}},\"type\":\"object\"}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
            ],
        ),
        (
            "status subresource: allowed root fields",
            json!({"type": "object", "description": "d", "required": ["spec"], "x-kubernetes-preserve-unknown-fields": true,
                   "properties": {"spec": {"type": "object"}}}),
            create().with_status_subresource(true),
            vec![],
        ),
        (
            "pattern must be a Go regular expression",
            json!({"type": "object", "properties": {
                "a": {"type": "string", "pattern": "(abc"},
                "b": {"type": "string", "pattern": "a{,5}"},
                "c": {"type": "string", "allOf": [{"pattern": "x**"}]}}}),
            create(),
            vec![
                "{P}.properties[a].pattern: Invalid value: \"(abc\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(abc`",
                "{P}.properties[c].allOf[0].pattern: Invalid value: \"x**\": must be a valid regular expression, but isn't: error parsing regexp: invalid nested repetition operator: `**`",
            ],
        ),
        (
            "nested value validations: forbidden generics and extensions",
            json!({"type": "object", "properties": {"a": {"type": "object", "allOf": [{
                "description": "d", "title": "t", "nullable": true, "default": "x",
                "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true,
                "x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "true"}],
                "properties": {"metadata": {}}}]}}}),
            create(),
            vec![
                "{P}.properties[a].allOf[0].default: Forbidden: must be undefined to be structural",
                "{P}.properties[a].allOf[0].description: Forbidden: must be empty to be structural",
                "{P}.properties[a].allOf[0].nullable: Forbidden: must be false to be structural",
                "{P}.properties[a].allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                "{P}.properties[a].allOf[0].title: Forbidden: must be empty to be structural",
                "{P}.properties[a].allOf[0].x-kubernetes-embedded-resource: Forbidden: must be false to be structural",
                "{P}.properties[a].allOf[0].x-kubernetes-int-or-string: Forbidden: must be false to be structural",
                "{P}.properties[a].allOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural",
                "{P}.properties[a].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
            ],
        ),
        (
            "nested value validations: type, additionalProperties, map type",
            json!({"type": "object", "properties": {"a": {"type": "object", "anyOf": [{
                "type": "object", "additionalProperties": {}, "x-kubernetes-map-type": "atomic"}]}}}),
            create(),
            vec![
                "{P}.properties[a].anyOf[0].additionalProperties: Forbidden: must be undefined to be structural",
                "{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
                "{P}.properties[a].anyOf[0].x-kubernetes-map-type: Forbidden: must be undefined to be structural",
            ],
        ),
        (
            "x-kubernetes-validations static checks",
            json!({"type": "object", "properties": {"a": {"type": "string", "x-kubernetes-validations": [
                {"rule": " "},
                {"rule": "self.size() > 1", "message": " "},
                {"rule": "self.size() > 1 &&\nself.size() < 5"},
                {"rule": "true", "messageExpression": " ", "reason": "Bogus", "fieldPath": ".foo"}
            ]}}}),
            create(),
            vec![
                "{P}.properties[a].x-kubernetes-validations[0].rule: Required value: rule is not specified",
                "{P}.properties[a].x-kubernetes-validations[1].message: Invalid value: \" \": message must be non-empty if specified",
                "{P}.properties[a].x-kubernetes-validations[2].message: Required value: message must be specified if rule contains line breaks",
                "{P}.properties[a].x-kubernetes-validations[3].messageExpression: Required value: messageExpression must be non-empty if specified",
                "{P}.properties[a].x-kubernetes-validations[3].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
                "{P}.properties[a].x-kubernetes-validations[3].fieldPath: Invalid value: \".foo\": fieldPath must be a valid path",
            ],
        ),
        (
            "x-kubernetes-validations fieldPath into properties",
            json!({"type": "object", "x-kubernetes-validations": [
                {"rule": "true", "fieldPath": ".spec.a", "reason": "FieldValueForbidden"}],
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            create(),
            vec![],
        ),
        (
            "legacy CRD with preserveUnknownFields and a non-structural schema (ratcheted)",
            json!({"properties": {"a": {}}}),
            CheckOptions {
                require_structural: false,
                ..create().with_preserve_unknown_fields(true)
            },
            vec![],
        ),
        (
            "extensions force structural checks even for legacy CRDs",
            json!({"properties": {"a": {"x-kubernetes-int-or-string": true}}}),
            CheckOptions {
                require_structural: false,
                ..create().with_preserve_unknown_fields(true)
            },
            vec!["{P}.type: Required value: must not be empty at the root"],
        ),
        ("null schema has no errors", Value::Null, create(), vec![]),
    ]
}

#[test]
fn check_schema_table() {
    let mut failures = Vec::new();
    for (name, schema, opts, want) in cases() {
        let got = run(&schema, &opts);
        let want = exp(&want);
        if got != want {
            failures.push(format!("case {name}:\n  got:  {got:#?}\n  want: {want:#?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn versions_path() {
    let path = Path::new("spec")
        .child("versions")
        .index(1)
        .child("schema")
        .child("openAPIV3Schema");
    let schema = json!({"type": "object", "properties": {"spec": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}});
    let got: Vec<String> = check_schema(&schema, &path, &create())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        vec!["spec.versions[1].schema.openAPIV3Schema.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic".to_string()]
    );
}

#[test]
fn warnings() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "format": "foo"},
        "b": {"type": "string", "format": "date-time"},
        "c": {"type": "integer", "format": "int32"},
        "d": {"type": "integer", "format": "uint8"},
        "e": {"type": "boolean", "format": "x"},
        "f": {"type": "string", "format": "k8s-short-name"},
        "g": {"type": "number", "format": "double"},
        "l": {"type": "array", "x-kubernetes-list-type": "set",
              "items": {"type": "object", "x-kubernetes-map-type": "atomic"}},
        "m": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "format": "email"}}
    }});
    assert_eq!(
        format_warnings(&schema),
        vec![
            "unrecognized format \"foo\"".to_string(),
            "unrecognized format \"uint8\"".to_string(),
            "x-kubernetes-list-type: set for items of type \"object\" is not supported by server-side apply or CEL validation rules".to_string(),
        ]
    );
    assert!(format_warnings(&json!(null)).is_empty());
}

#[test]
fn structural_helpers() {
    let good = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert!(is_structural(&good));
    assert!(structural_errors(&good, &root()).is_empty());

    let bad = json!({"type": "object", "properties": {"a": {}}});
    assert!(!is_structural(&bad));
    let errs: Vec<String> = structural_errors(&bad, &root())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        exp(&[
            "{P}.properties[a].type: Required value: must not be empty for specified object fields"
        ])
    );

    let array_items = json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}});
    assert_eq!(
        structural_conversion_error(&array_items).as_deref(),
        Some("OpenAPIV3Schema 'items' must be a schema, but is an array")
    );
    let errs: Vec<String> = structural_errors(&array_items, &root())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        exp(&[
            "{P}: Invalid value: \"\": OpenAPIV3Schema 'items' must be a schema, but is an array"
        ])
    );
}

#[test]
fn ratcheting() {
    let old_bad_types = json!({"type": "object", "properties": {"a": {"type": "foo"}}});
    let old_non_structural = json!({"properties": {"a": {}}});
    let old_unpruned =
        json!({"type": "object", "properties": {"s": {"type": "object", "default": {"x": 1}}}});
    let old_set = json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}});
    let old_map_list = json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}});
    let good = json!({"type": "object", "properties": {"a": {"type": "string"}}});

    assert_eq!(create().ratcheted([&good]), create());
    let r = create().ratcheted([&old_bad_types]);
    assert!(!r.require_valid_property_type && r.require_structural);
    let r = create().ratcheted([&old_non_structural]);
    assert!(!r.require_structural && r.require_valid_property_type);
    let r = create().ratcheted([&old_unpruned]);
    assert!(!r.require_pruned_defaults);
    let r = create().ratcheted([&old_set]);
    assert!(!r.require_atomic_set_type);
    let r = create().ratcheted([&old_map_list]);
    assert!(!r.require_map_list_keys_map_set_validation);

    // A ratcheted rule lets the same violation through on update.
    let opts = create().ratcheted([&old_bad_types]);
    assert!(run(&old_bad_types, &opts).is_empty());
    let opts = create().ratcheted([&old_set]);
    assert!(run(&old_set, &opts).is_empty());
}

#[test]
fn never_panics_on_odd_schemas() {
    let odd = [
        json!(1),
        json!("x"),
        json!([]),
        json!({"type": 5, "properties": [], "items": 3, "allOf": {}, "anyOf": [1, null], "not": 2,
               "additionalProperties": "x", "x-kubernetes-list-map-keys": [1, {}],
               "x-kubernetes-list-type": "map", "x-kubernetes-validations": [1, {"rule": 2}],
               "pattern": "\\", "default": {"a": 1}}),
        json!({"type": "object", "properties": {"a": null, "b": 1, "metadata": true}}),
        json!({"type": "array", "items": [], "x-kubernetes-list-type": "set"}),
    ];
    for s in &odd {
        for status in [true, false] {
            let _ = check_schema(s, &root(), &create().with_status_subresource(status));
        }
        let _ = format_warnings(s);
        let _ = structural_errors(s, &root());
        let _ = create().ratcheted([s]);
    }
}

/// `ValidateCustomResourceSelectableFields`' cases: required, invalid paths (array notation,
/// unknown fields), metadata, types, duplicates by the path they name, and the limit of 8.
#[test]
fn selectable_fields_table() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
        "spec": {"type": "object", "properties": {
            "color": {"type": "string", "enum": ["red"]}, "size": {"type": "integer"},
            "on": {"type": "boolean"}, "ratio": {"type": "number"},
            "obj": {"type": "object"}, "arr": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
    let path = Path::new("spec").child("selectableFields");
    let run = |paths: &[&str]| -> Vec<String> {
        let fields: Vec<Value> = paths.iter().map(|p| json!({"jsonPath": p})).collect();
        check_selectable_fields(&fields, &schema, &path)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![".spec.color", ".spec.size", ".spec.on", ".spec.labels.team"],
            vec![],
        ),
        (
            vec![
                "",
                ".spec.obj",
                ".spec.ratio",
                ".spec.nope",
                ".spec.arr[0]",
                ".metadata.name",
            ],
            vec![
                "spec.selectableFields[0].jsonPath: Required value",
                "spec.selectableFields[1].jsonPath: Invalid value: \".spec.obj\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                "spec.selectableFields[2].jsonPath: Invalid value: \".spec.ratio\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                "spec.selectableFields[3].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
                "spec.selectableFields[4].jsonPath: Invalid value: \".spec.arr[0]\": is an invalid path: array notation is not allowed",
                "spec.selectableFields[5].jsonPath: Invalid value: \".metadata.name\": must not point to fields in metadata",
            ],
        ),
        (
            vec![".spec.color", ".spec.color"],
            vec!["spec.selectableFields[1].jsonPath: Duplicate value: \".spec.color\""],
        ),
    ];
    for (paths, want) in cases {
        assert_eq!(run(&paths), exp(&want), "{paths:?}");
    }
    let many: Vec<String> = (0..9).map(|i| format!(".spec.labels.k{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(
        run(&many),
        exp(&["spec.selectableFields: Too many: 9: must have at most 8 items"])
    );
}
