//! Data-driven tests of `crd_schema::validate`: schema, object, and the exact `FieldError`
//! texts kube-apiserver produces (crd-semantics §7, §6.3, §4.10 steps 5-6).

use crd_core::validation::{is_dns1035_label, is_dns1123_label, regex_error};
use crd_core::{ErrorList, Path};
use crd_schema::validate::{
    validate, validate_at, validate_embedded_resources, validate_list_sets_and_maps,
    validate_update, validate_update_at,
};
use serde_json::{Value, json};

fn texts(errs: &ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

/// A root schema with one `spec` object holding `props`.
fn spec_schema(props: &Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

fn object(spec: &Value) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": spec,
    })
}

fn run_table(cases: &[(Value, Value, &[&str])]) {
    for (i, (props, spec, want)) in cases.iter().enumerate() {
        let got = texts(&validate(&spec_schema(props), &object(spec)));
        let want: Vec<String> = want.iter().map(ToString::to_string).collect();
        assert_eq!(got, want, "case {i}: props {props} spec {spec}");
    }
}

fn crontab_schema() -> Value {
    spec_schema(&json!({
        "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
        "image": {"type": "string"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    }))
}

#[test]
fn crontab_seed_example() {
    let bad =
        object(&json!({"cronSpec": "* * * *", "image": "my-awesome-cron-image", "replicas": 15}));
    assert_eq!(
        texts(&validate(&crontab_schema(), &bad)),
        [
            r#"spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
            "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
        ]
    );
    let good = object(
        &json!({"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 5}),
    );
    assert!(validate(&crontab_schema(), &good).is_empty());
    let eleven = object(&json!({"replicas": 11}));
    assert_eq!(
        texts(&validate(&crontab_schema(), &eleven)),
        [
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        ]
    );
}

#[test]
fn keyword_messages() {
    run_table(&[
        // type
        (
            json!({"replicas": {"type": "integer"}}),
            json!({"replicas": "string"}),
            &[
                r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
            ],
        ),
        (
            json!({"b": {"type": "boolean"}}),
            json!({"b": {"x": 1}}),
            &[
                r#"spec.b: Invalid value: "object": spec.b in body must be of type boolean: "object""#,
            ],
        ),
        (
            json!({"s": {"type": "string"}}),
            json!({"s": [1]}),
            &[r#"spec.s: Invalid value: "array": spec.s in body must be of type string: "array""#],
        ),
        (
            json!({"o": {"type": "object"}}),
            json!({"o": true}),
            &[
                r#"spec.o: Invalid value: "boolean": spec.o in body must be of type object: "boolean""#,
            ],
        ),
        // integer accepts integral floats, number accepts integers
        (json!({"n": {"type": "integer"}}), json!({"n": 2.0}), &[]),
        (
            json!({"n": {"type": "integer"}}),
            json!({"n": 2.5}),
            &[
                r#"spec.n: Invalid value: "number": spec.n in body must be of type integer: "number""#,
            ],
        ),
        (json!({"n": {"type": "number"}}), json!({"n": 3}), &[]),
        // required
        (json!({"cronSpec": {"type": "string"}}), json!({}), &[]),
        // enum
        (
            json!({"color": {"type": "string", "enum": ["red", "green"]}}),
            json!({"color": "purple"}),
            &[r#"spec.color: Unsupported value: "purple": supported values: "red", "green""#],
        ),
        (
            json!({"n": {"type": "integer", "enum": [1, 2]}}),
            json!({"n": 3}),
            &[r#"spec.n: Unsupported value: 3: supported values: "1", "2""#],
        ),
        (
            json!({"x": {"enum": [{"a": 1}, true, 1.5, null]}}),
            json!({"x": "y"}),
            &[
                r#"spec.x: Unsupported value: "y": supported values: "{\"a\":1}", "true", "1.5", "null""#,
            ],
        ),
        (
            json!({"n": {"type": "number", "enum": [1]}}),
            json!({"n": 1.0}),
            &[],
        ),
        // Go converts the float to the enum's int64 before comparing
        (
            json!({"n": {"type": "number", "enum": [1]}}),
            json!({"n": 1.5}),
            &[],
        ),
        (
            json!({"x": {"type": "string", "nullable": true, "enum": ["a"]}}),
            json!({"x": null}),
            &[r#"spec.x: Unsupported value: null: supported values: "a""#],
        ),
        // maxLength / minLength, in runes
        (
            json!({"name": {"type": "string", "maxLength": 10}}),
            json!({"name": "abcdefghijk"}),
            &["spec.name: Too long: may not be more than 10 bytes"],
        ),
        (
            json!({"name": {"type": "string", "maxLength": 3}}),
            json!({"name": "ééé"}),
            &[],
        ),
        (
            json!({"name": {"type": "string", "maxLength": 1}}),
            json!({"name": "ab"}),
            &["spec.name: Too long: may not be more than 1 byte"],
        ),
        (
            json!({"name": {"type": "string", "minLength": 3}}),
            json!({"name": "ab"}),
            &[
                r#"spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long"#,
            ],
        ),
        // the first failing string check wins
        (
            json!({"name": {"type": "string", "maxLength": 2, "pattern": "^a$"}}),
            json!({"name": "bcd"}),
            &["spec.name: Too long: may not be more than 2 bytes"],
        ),
        // pattern
        (
            json!({"cronSpec": {"type": "string", "pattern": r"^\d+$"}}),
            json!({"cronSpec": "x"}),
            &[r#"spec.cronSpec: Invalid value: "x": spec.cronSpec in body should match '^\d+$'"#],
        ),
        (
            json!({"d": {"type": "string", "pattern": r"^\d+$"}}),
            json!({"d": "١٢"}),
            &[r#"spec.d: Invalid value: "١٢": spec.d in body should match '^\d+$'"#],
        ),
        // maximum / minimum and exclusive forms
        (
            json!({"replicas": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}}),
            json!({"replicas": 10}),
            &["spec.replicas: Invalid value: 10: spec.replicas in body should be less than 10"],
        ),
        (
            json!({"replicas": {"type": "integer", "minimum": 1}}),
            json!({"replicas": 0}),
            &[
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            ],
        ),
        (
            json!({"replicas": {"type": "integer", "minimum": 1, "exclusiveMinimum": true}}),
            json!({"replicas": 1}),
            &["spec.replicas: Invalid value: 1: spec.replicas in body should be greater than 1"],
        ),
        // integer values truncate the bound
        (
            json!({"n": {"type": "integer", "maximum": 10.5}}),
            json!({"n": 11}),
            &["spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10"],
        ),
        // float values use float bounds, printed like Go's %v
        (
            json!({"f": {"type": "number", "maximum": 1.5}}),
            json!({"f": 2.5}),
            &["spec.f: Invalid value: 2.5: spec.f in body should be less than or equal to 1.5"],
        ),
        (
            json!({"f": {"type": "number", "maximum": 1e21}}),
            json!({"f": 3e21}),
            &["spec.f: Invalid value: 3e+21: spec.f in body should be less than or equal to 1e+21"],
        ),
        (
            json!({"f": {"type": "number", "minimum": 3}}),
            json!({"f": 2.0}),
            &["spec.f: Invalid value: 2: spec.f in body should be greater than or equal to 3"],
        ),
        // multipleOf
        (
            json!({"n": {"type": "integer", "multipleOf": 5}}),
            json!({"n": 7}),
            &["spec.n: Invalid value: 7: spec.n in body should be a multiple of 5"],
        ),
        (
            json!({"n": {"type": "integer", "multipleOf": 5}}),
            json!({"n": 10}),
            &[],
        ),
        (
            json!({"f": {"type": "number", "multipleOf": 0.1}}),
            json!({"f": 0.3}),
            &[],
        ),
        (
            json!({"f": {"type": "number", "multipleOf": 0.5}}),
            json!({"f": 0.7}),
            &["spec.f: Invalid value: 0.7: spec.f in body should be a multiple of 0.5"],
        ),
        // multipleOf, minimum and maximum are all reported
        (
            json!({"n": {"type": "integer", "multipleOf": 2, "minimum": 5, "maximum": 0}}),
            json!({"n": 3}),
            &[
                "spec.n: Invalid value: 3: spec.n in body should be a multiple of 2",
                "spec.n: Invalid value: 3: spec.n in body should be greater than or equal to 5",
                "spec.n: Invalid value: 3: spec.n in body should be less than or equal to 0",
            ],
        ),
        // items, minItems, maxItems
        (
            json!({"list": {"type": "array", "maxItems": 3, "items": {"type": "string"}}}),
            json!({"list": ["a", "b", "c", "d", "e"]}),
            &["spec.list: Too many: 5: must have at most 3 items"],
        ),
        (
            json!({"list": {"type": "array", "maxItems": 1, "items": {"type": "string"}}}),
            json!({"list": ["a", "b"]}),
            &["spec.list: Too many: 2: must have at most 1 item"],
        ),
        (
            json!({"list": {"type": "array", "minItems": 2, "items": {"type": "string"}}}),
            json!({"list": ["a"]}),
            &["spec.list: Invalid value: 1: spec.list in body should have at least 2 items"],
        ),
        (
            json!({"list": {"type": "array", "maxItems": 1, "items": {"type": "string"}}}),
            json!({"list": [1, "b"]}),
            &[
                r#"spec.list[0]: Invalid value: "integer": spec.list[0] in body must be of type string: "integer""#,
                "spec.list: Too many: 2: must have at most 1 item",
            ],
        ),
        // maxProperties / minProperties
        (
            json!({"map": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string"}}}),
            json!({"map": {"a": "1", "b": "2", "c": "3", "d": "4"}}),
            &["spec.map: Too many: 4: must have at most 3 items"],
        ),
        (
            json!({"map": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}}}),
            json!({"map": {}}),
            &["spec.map: Invalid value: 0: spec.map in body should have at least 1 properties"],
        ),
        // additionalProperties: map keys become `.key`
        (
            json!({"labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
            json!({"labels": {"key": 5, "ok": "x"}}),
            &[
                r#"spec.labels.key: Invalid value: "integer": spec.labels.key in body must be of type string: "integer""#,
            ],
        ),
        (
            json!({"o": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}}),
            json!({"o": {"a": "x", "b": 1}}),
            &[r#"spec.o: Invalid value: "b": spec.o.b in body is a forbidden property"#],
        ),
        // format
        (
            json!({"email": {"type": "string", "format": "email"}}),
            json!({"email": "x"}),
            &[r#"spec.email: Invalid value: "x": spec.email in body must be of type email: "x""#],
        ),
        (
            json!({"t": {"type": "string", "format": "date-time"}}),
            json!({"t": "yesterday"}),
            &[
                r#"spec.t: Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday""#,
            ],
        ),
        (
            json!({"t": {"type": "string", "format": "date-time"}}),
            json!({"t": "2024-01-01T10:00:00Z"}),
            &[],
        ),
        (
            json!({"u": {"type": "string", "format": "no-such-format"}}),
            json!({"u": "x"}),
            &[],
        ),
        (
            json!({"u": {"type": "integer", "format": "int32"}}),
            json!({"u": 9_999_999_999_i64}),
            &[],
        ),
        (
            json!({"e": {"type": "string", "format": "email"}}),
            json!({"e": 5}),
            &[r#"spec.e: Invalid value: "int64": spec.e in body must be of type email: "int64""#],
        ),
        // unknown fields are not validation errors
        (
            json!({"a": {"type": "string"}}),
            json!({"a": "x", "other": {"deep": 1}}),
            &[],
        ),
        (
            json!({"free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}),
            json!({"free": {"anything": [1, "two"]}}),
            &[],
        ),
    ]);
}

#[test]
fn required_paths() {
    let schema = spec_schema(&json!({}));
    let mut schema = schema;
    schema["properties"]["spec"]["required"] = json!(["cronSpec", "image"]);
    schema["required"] = json!(["spec", "status"]);
    assert_eq!(
        texts(&validate(&schema, &object(&json!({"image": "x"})))),
        ["spec.cronSpec: Required value", "status: Required value"]
    );
    let nested = spec_schema(&json!({
        "list": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}
    }));
    assert_eq!(
        texts(&validate(
            &nested,
            &object(&json!({"list": [{"name": "a"}, {}]}))
        )),
        ["spec.list[1].name: Required value"]
    );
}

#[test]
fn nullable_seed_example() {
    let schema = spec_schema(&json!({
        "foo": {"type": "string", "nullable": false, "default": "default"},
        "bar": {"type": "string", "nullable": true},
        "baz": {"type": "string"},
    }));
    let obj = object(&json!({"foo": null, "bar": null, "baz": null}));
    assert_eq!(
        texts(&validate(&schema, &obj)),
        [
            r#"spec.baz: Invalid value: "null": spec.baz in body must be of type string: "null""#,
            r#"spec.foo: Invalid value: "null": spec.foo in body must be of type string: "null""#,
        ]
    );
    // After pruning and defaulting, the object of the seed validates.
    let pruned = object(&json!({"foo": "default", "bar": null}));
    assert!(validate(&schema, &pruned).is_empty());
    // Null list items are never removed, and fail type validation.
    let list = spec_schema(&json!({"list": {"type": "array", "items": {"type": "string"}}}));
    assert_eq!(
        texts(&validate(&list, &object(&json!({"list": ["a", null]})))),
        [
            r#"spec.list[1]: Invalid value: "null": spec.list[1] in body must be of type string: "null""#
        ]
    );
}

#[test]
fn int_or_string() {
    let plain = json!({"port": {"x-kubernetes-int-or-string": true}});
    let any_of = json!({"port": {
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    }});
    let all_of = json!({"port": {
        "x-kubernetes-int-or-string": true,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"maximum": 10}],
    }});
    run_table(&[
        (plain.clone(), json!({"port": 80}), &[]),
        (plain.clone(), json!({"port": "http"}), &[]),
        (plain.clone(), json!({"port": 80.0}), &[]),
        (
            plain.clone(),
            json!({"port": 1.5}),
            &[
                r#"spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number""#,
            ],
        ),
        (
            plain,
            json!({"port": true}),
            &[
                r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
            ],
        ),
        (any_of.clone(), json!({"port": 80}), &[]),
        (any_of.clone(), json!({"port": "80%"}), &[]),
        (
            any_of,
            json!({"port": 1.5}),
            &[
                r#"spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number""#,
                r#"<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)"#,
                r#"spec.port: Invalid value: "number": spec.port in body must be of type integer: "number""#,
            ],
        ),
        (all_of.clone(), json!({"port": 8}), &[]),
        (all_of.clone(), json!({"port": "x"}), &[]),
        (
            all_of,
            json!({"port": 11}),
            &[
                "spec.port: Invalid value: 11: spec.port in body should be less than or equal to 10",
                r#"<nil>: Invalid value: "": "spec.port" must validate all the schemas (allOf)"#,
            ],
        ),
    ]);
}

#[test]
fn composite_keywords() {
    let props = || json!({"a": {"type": "integer"}, "b": {"type": "integer"}});
    let one_of = json!({"o": {"type": "object", "properties": props(), "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}});
    let any_of = json!({"o": {"type": "object", "properties": props(), "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}});
    let all_of = json!({"o": {"type": "object", "properties": props(), "allOf": [{"required": ["a"]}, {"required": ["b"]}]}});
    let not = json!({"o": {"type": "object", "properties": props(), "not": {"required": ["a"]}}});
    run_table(&[
        (one_of.clone(), json!({"o": {"a": 1}}), &[]),
        (
            one_of.clone(),
            json!({"o": {"a": 1, "b": 2}}),
            &[
                r#"<nil>: Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
            ],
        ),
        (
            one_of,
            json!({"o": {}}),
            &[
                r#"<nil>: Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found none valid"#,
                "spec.o.a: Required value",
            ],
        ),
        (any_of.clone(), json!({"o": {"b": 1}}), &[]),
        (
            any_of,
            json!({"o": {}}),
            &[
                r#"<nil>: Invalid value: "": "spec.o" must validate at least one schema (anyOf)"#,
                "spec.o.a: Required value",
            ],
        ),
        (
            all_of.clone(),
            json!({"o": {"a": 1}}),
            &[
                "spec.o.b: Required value",
                r#"<nil>: Invalid value: "": "spec.o" must validate all the schemas (allOf)"#,
            ],
        ),
        (
            all_of,
            json!({"o": {}}),
            &[
                "spec.o.a: Required value",
                "spec.o.b: Required value",
                r#"<nil>: Invalid value: "": "spec.o" must validate all the schemas (allOf). None validated"#,
            ],
        ),
        (not.clone(), json!({"o": {"b": 1}}), &[]),
        (
            not,
            json!({"o": {"a": 1}}),
            &[r#"<nil>: Invalid value: "": "spec.o" must not validate the schema (not)"#],
        ),
    ]);
    // Composite errors name the root as "".
    let root = json!({"type": "object", "anyOf": [{"required": ["x"]}]});
    assert_eq!(
        texts(&validate(&root, &object(&json!({})))),
        [
            r#"<nil>: Invalid value: "": "" must validate at least one schema (anyOf)"#,
            "x: Required value",
        ]
    );
}

#[test]
fn pattern_errors_do_not_panic() {
    let errs = validate(
        &spec_schema(&json!({"s": {"type": "string", "pattern": "(unclosed"}})),
        &object(&json!({"s": "x"})),
    );
    let got = texts(&errs);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with(r#"spec.s: Invalid value: "x": spec.s in body should match '(unclosed, but pattern is invalid: error parsing regexp: "#),
        "{}",
        got[0]
    );
}

#[test]
fn root_metadata_only_name_constraints() {
    let schema = json!({
        "type": "object",
        "properties": {
            "metadata": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z-]+$"},
                    "labels": {"type": "object", "maxProperties": 0},
                },
                "required": ["annotations"],
                "additionalProperties": false,
            },
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
        },
    });
    let obj = json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "toolongname", "labels": {"a": "b"}, "uid": "u"},
    });
    assert_eq!(
        texts(&validate(&schema, &obj)),
        ["metadata.name: Too long: may not be more than 5 bytes"]
    );
    let ok = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "abc", "labels": {"a": "b"}}});
    assert!(validate(&schema, &ok).is_empty());
    let gen_schema = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"generateName": {"type": "string", "maxLength": 3}}}}});
    let gen_obj = json!({"metadata": {"generateName": "abcd-"}});
    assert_eq!(
        texts(&validate(&gen_schema, &gen_obj)),
        ["metadata.generateName: Too long: may not be more than 3 bytes"]
    );
}

#[test]
fn list_type_set_and_map() {
    let set = json!({"set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}});
    let nums = json!({"set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}});
    let map1 = json!({"items": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}},
    }});
    let map2 = json!({"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "proto"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "proto": {"type": "string"}}},
    }});
    let in_map = json!({"m": {"type": "object", "additionalProperties": {
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"},
    }}});
    run_table(&[
        (set.clone(), json!({"set": ["a", "b"]}), &[]),
        (
            set.clone(),
            json!({"set": ["a", "b", "a", "a", "b"]}),
            &[
                r#"spec.set[2]: Duplicate value: "a""#,
                r#"spec.set[4]: Duplicate value: "b""#,
            ],
        ),
        (
            nums,
            json!({"set": [1, 2, 1]}),
            &["spec.set[2]: Duplicate value: 1"],
        ),
        (
            map1.clone(),
            json!({"items": [{"name": "a", "v": 1}, {"name": "b", "v": 1}]}),
            &[],
        ),
        (
            map1.clone(),
            json!({"items": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
            &[r#"spec.items[1]: Duplicate value: {"name":"a"}"#],
        ),
        (
            map1,
            json!({"items": [{"name": "a"}, "x"]}),
            &[
                r#"spec.items[1]: Invalid value: "string": spec.items[1] in body must be of type object: "string""#,
                r#"spec.items[1]: Invalid value: "x": must be an object for an array of list-type map"#,
            ],
        ),
        (
            map2,
            json!({"ports": [
                {"name": "a", "proto": "TCP"}, {"name": "a", "proto": "UDP"}, {"name": "a", "proto": "TCP"},
            ]}),
            &[r#"spec.ports[2]: Duplicate value: {"name":"a","proto":"TCP"}"#],
        ),
        (
            in_map,
            json!({"m": {"k": ["x", "x"]}}),
            &[r#"spec.m[k][1]: Duplicate value: "x""#],
        ),
    ]);
    let direct = validate_list_sets_and_maps(
        &json!({"type": "array", "x-kubernetes-list-type": "set"}),
        &json!([true, true]),
        &Path::new("spec").child("flags"),
    );
    assert_eq!(texts(&direct), ["spec.flags[1]: Duplicate value: true"]);
}

fn embedded_schema() -> Value {
    spec_schema(&json!({
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "templates": {"type": "object", "additionalProperties": {
            "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
        }},
    }))
}

#[test]
fn embedded_resources() {
    let schema = embedded_schema();
    let check = |spec: Value, want: &[String]| {
        assert_eq!(texts(&validate(&schema, &object(&spec))), want, "{spec}");
    };
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "spec": {"x": 1}}}),
        &[],
    );
    check(
        json!({"template": {}}),
        &[
            "spec.template.apiVersion: Required value".into(),
            "spec.template.kind: Required value".into(),
        ],
    );
    let kind_msg = is_dns1035_label("foo_bar").join(",");
    check(
        json!({"template": {"apiVersion": "", "kind": "Foo_Bar"}}),
        &[
            r#"spec.template.apiVersion: Invalid value: "": must not be empty"#.into(),
            format!(
                r#"spec.template.kind: Invalid value: "Foo_Bar": may have mixed case, but should otherwise match: {kind_msg}"#
            ),
        ],
    );
    check(
        json!({"template": {"apiVersion": "a/b/c", "kind": 5}}),
        &[
            r#"spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#.into(),
            "spec.template.kind: Invalid value: 5: must be a string".into(),
        ],
    );
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": "x"}}),
        &[r#"spec.template.metadata: Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta"#.into()],
    );
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": 1}}}}),
        &[r#"spec.template.metadata: Invalid value: {"labels":{"a":1}}: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"#.into()],
    );
    let ns_msg = is_dns1123_label("Bad_NS").join("");
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b", "namespace": "Bad_NS"}}}),
        &[
            r#"spec.template.metadata.name: Invalid value: "a/b": may not contain '/'"#.into(),
            format!(r#"spec.template.metadata.namespace: Invalid value: "Bad_NS": {ns_msg}"#),
        ],
    );
    // Names are path segments, not DNS names; no name is fine.
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Not_DNS"}}}),
        &[],
    );
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}}}),
        &[],
    );
    check(
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ".."}}}),
        &[r#"spec.template.metadata.name: Invalid value: "..": may not be '..'"#.into()],
    );
    // Embedded resources in a map are named with brackets.
    check(
        json!({"templates": {"a": {"apiVersion": "v1"}}}),
        &["spec.templates[a].kind: Required value".into()],
    );
    let label_msg = regex_error(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
        &["MyValue", "my_value", "12345"],
    );
    let direct = validate_embedded_resources(
        &json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "-bad-"}}}),
        &Path::new("spec").child("template"),
    );
    assert_eq!(
        texts(&direct),
        [format!(
            r#"spec.template.metadata.labels: Invalid value: "-bad-": {label_msg}"#
        )]
    );
}

#[test]
fn subtree_validation_for_status() {
    let status = json!({"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 3}}, "required": ["replicas"]});
    let path = Path::new("status");
    assert_eq!(
        texts(&validate_at(&status, &json!({"replicas": 5}), &path)),
        ["status.replicas: Invalid value: 5: replicas in body should be less than or equal to 3"]
    );
    assert_eq!(
        texts(&validate_at(&status, &json!({}), &path)),
        ["status.replicas: Required value"]
    );
    assert_eq!(
        texts(&validate_at(&status, &json!(null), &path)),
        [r#"status: Invalid value: "null":  in body must be of type object: "null""#]
    );
    assert!(validate_at(&status, &json!({"replicas": 2}), &path).is_empty());
}

#[test]
fn ratcheting_on_update() {
    let schema = spec_schema(&json!({
        "replicas": {"type": "integer", "maximum": 10},
        "name": {"type": "string", "maxLength": 3},
    }));
    let old = object(&json!({"replicas": 15, "name": "ab"}));
    // The invalid field is unchanged: ratcheted.
    let same = object(&json!({"replicas": 15, "name": "abc"}));
    assert!(validate_update(&schema, &same, &old).is_empty());
    // A changed invalid field is reported.
    let changed = object(&json!({"replicas": 16, "name": "abcd"}));
    assert_eq!(
        texts(&validate_update(&schema, &changed, &old)),
        [
            "spec.name: Too long: may not be more than 3 bytes",
            "spec.replicas: Invalid value: 16: spec.replicas in body should be less than or equal to 10",
        ]
    );
    // Without ratcheting the same object fails.
    assert_eq!(validate(&schema, &same).len(), 1);
    // A status update ratchets against the old status.
    let status = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}});
    let path = Path::new("status");
    assert!(validate_update_at(&status, &json!({"n": 0}), &json!({"n": 0}), &path).is_empty());
    assert_eq!(
        texts(&validate_update_at(
            &status,
            &json!({"n": 0}),
            &Value::Null,
            &path
        )),
        ["status.n: Invalid value: 0: n in body should be greater than or equal to 1"]
    );
    // List-type uniqueness is only enforced when the old object satisfied it.
    let set = spec_schema(
        &json!({"s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}),
    );
    let dup_old = object(&json!({"s": ["a", "a"]}));
    let dup_new = object(&json!({"s": ["b", "b"]}));
    assert!(validate_update(&set, &dup_new, &dup_old).is_empty());
    assert_eq!(
        texts(&validate_update(&set, &dup_new, &object(&json!({"s": []})))),
        [r#"spec.s[1]: Duplicate value: "b""#]
    );
    // List-map items are correlated by key.
    let lm = spec_schema(&json!({"l": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer", "maximum": 1}}},
    }}));
    let old_l = object(&json!({"l": [{"k": "a", "v": 5}]}));
    let new_l = object(&json!({"l": [{"k": "b", "v": 0}, {"k": "a", "v": 5}]}));
    assert!(validate_update(&lm, &new_l, &old_l).is_empty());
}

#[test]
fn never_panics_on_odd_input() {
    let schemas = [
        json!(null),
        json!(true),
        json!({"type": 5}),
        json!({"type": "object", "properties": {"a": 1}}),
        json!({"items": [{"type": "string"}], "maxItems": "x"}),
        json!({"type": "integer", "multipleOf": 0}),
        json!({"type": "integer", "multipleOf": -2}),
        json!({"type": "integer", "multipleOf": 0.5}),
        json!({"type": "string", "pattern": "\\"}),
        json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []}),
        json!({"anyOf": [], "oneOf": [{}], "not": {}}),
    ];
    let values = [
        json!(null),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e300),
        json!("s"),
        json!([null, {}, []]),
        json!({"a": {"b": [1]}}),
    ];
    for s in &schemas {
        for v in &values {
            let _ = validate(s, v);
            let _ = validate_at(s, v, &Path::new("x"));
            let _ = validate_update(s, v, v);
        }
    }
}
