//! `conversion::partial` through the real read (`read_stored_in_process`): the partial path
//! equals the full path, byte for byte, for every KEP-3945 use case and for
//! objects and CRDs where its preconditions fail.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion;
use serde_json::{Value, json};

use crate::conversion::partial::{Plan, kept_paths};
use crate::conversion::{ConversionOptions, Converter};
use crate::registry::pipeline::{ConversionPlan, read_stored_in_process};

const GROUP: &str = "example.com";

/// The `metadata` fields kept when rules reach no further than labels and annotations (the
/// tests list them as one entry).
const META: &str = "metadata.*";

struct Case {
    name: &'static str,
    v1: Value,
    v2: Value,
    rules: Value,
    /// The stored object's `spec` (and other top-level fields), at v1.
    stored: Value,
    /// The fields the plan keeps out (dotted paths), whatever the object holds.
    kept: &'static [&'static str],
}

fn spec(props: &Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

fn plan_of(c: &Case, from: &str, to: &str) -> ConversionPlan {
    let crd = json!({"spec": {"group": GROUP, "versions": [
        {"name": "v1", "schema": {"openAPIV3Schema": c.v1}},
        {"name": "v2", "schema": {"openAPIV3Schema": c.v2}}],
        "conversion": {"strategy": "ConversionRules", "conversionRules": c.rules}}});
    let conversion = CustomResourceConversion {
        strategy: "ConversionRules".into(),
        webhook: None,
    };
    let converter = Converter::build(Some(&conversion), &crd, &ConversionOptions::default());
    let schemas: BTreeMap<String, Arc<Value>> = [("v1", &c.v1), ("v2", &c.v2)]
        .into_iter()
        .map(|(v, s)| (v.to_string(), Arc::new(s.clone())))
        .collect();
    ConversionPlan {
        converter,
        request: format!("{GROUP}/{to}"),
        storage: format!("{GROUP}/{from}"),
        schemas: Arc::new(schemas),
        prune: true,
    }
}

/// The kept fields' dotted paths, the `metadata` ones as one entry when all are kept.
fn kept(plan: &Plan) -> Vec<String> {
    let mut out = kept_paths(plan);
    let all_meta = [
        "metadata.creationTimestamp",
        "metadata.deletionGracePeriodSeconds",
        "metadata.deletionTimestamp",
        "metadata.generateName",
        "metadata.generation",
        "metadata.managedFields",
    ];
    if all_meta.iter().all(|m| out.iter().any(|o| o == m)) {
        out.retain(|o| !o.starts_with("metadata."));
        out.insert(0, META.to_string());
    }
    out
}

/// Runs `stored` (bytes at `from`) through the full and the partial path to `to`; both must
/// give the same bytes (or both fail). Returns whether the partial path decoded the object.
fn same(c: &Case, stored: &[u8], from: &str, to: &str) -> bool {
    let plan = plan_of(c, from, to);
    let full = serde_json::from_slice::<Value>(stored)
        .ok()
        .map(|v| read_stored_in_process(&plan, v, true, 0).expect("in process"));
    let full = full.map(|r| r.map(|v| serde_json::to_vec(&v).expect("encodes")));
    let Some(fast) = plan.partial() else {
        return false;
    };
    let Some(decoded) = fast.decode(stored) else {
        return false;
    };
    let out = read_stored_in_process(&plan, decoded.value, true, 0).expect("in process");
    match (full, out) {
        (Some(Ok(full)), Ok(obj)) => {
            let partial = fast
                .encode(&obj, &decoded.slots, stored.len())
                .expect("encodes");
            assert_eq!(
                String::from_utf8_lossy(&partial),
                String::from_utf8_lossy(&full),
                "{}: partial and full path differ",
                c.name
            );
        }
        (Some(Err(_)), Err(_)) => {}
        (full, out) => panic!("{}: full {full:?}, partial {out:?}", c.name),
    }
    true
}

fn object(version: &str, rest: &Value) -> Value {
    let mut o = json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 2,
            "managedFields": [{"apiVersion": format!("{GROUP}/{version}"), "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:note": {}}}, "manager": "kubectl",
                "operation": "Update", "time": "2026-01-01T00:00:00Z"}]}});
    if let (Some(o), Some(rest)) = (o.as_object_mut(), rest.as_object()) {
        for (k, v) in rest {
            o.insert(k.clone(), v.clone());
        }
    }
    o
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "rename",
            v1: spec(&json!({"firstName": {"type": "string"}, "note": {"type": "string"}})),
            v2: spec(&json!({"givenName": {"type": "string"}, "note": {"type": "string"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.firstName", "toField": ".spec.givenName"}]}]),
            stored: json!({"spec": {"firstName": "Ada", "note": "kept as it is"}}),
            kept: &[META, "spec.note"],
        },
        Case {
            name: "relocate into a sub-object; the rule's parents are not kept",
            v1: spec(&json!({"firstName": {"type": "string"}, "note": {"type": "string"}})),
            v2: spec(&json!({"name": {"type": "object", "properties": {
                "first": {"type": "string"}, "last": {"type": "string"}}},
                "note": {"type": "string"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.firstName", "toField": ".spec.name.first"}]}]),
            stored: json!({"spec": {"firstName": "Ada", "note": "n"}}),
            kept: &[META, "spec.note"],
        },
        Case {
            name: "a sibling below a nested parent a rule empties is not kept",
            v1: spec(&json!({"a": {"type": "object", "properties": {
                "x": {"type": "string"}, "y": {"type": "string"}}}})),
            v2: spec(
                &json!({"x": {"type": "string"}, "a": {"type": "object", "properties": {
                "y": {"type": "string"}}}}),
            ),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.a.x", "toField": ".spec.x"}]}]),
            stored: json!({"spec": {"a": {"x": "moved", "y": "stays"}}}),
            kept: &[META],
        },
        Case {
            name: "split a field into two",
            v1: spec(&json!({"image": {"type": "string"}, "size": {"type": "integer"}})),
            v2: spec(
                &json!({"repository": {"type": "string"}, "tag": {"type": "string"},
                "size": {"type": "integer"}}),
            ),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.image", "toField": ".spec.repository", "transformation": "self.split(':')[0]"},
                {"fromField": ".spec.image", "toField": ".spec.tag", "transformation": "self.split(':')[1]"}]}]),
            stored: json!({"spec": {"image": "nginx:1.25", "size": 3}}),
            kept: &[META, "spec.size"],
        },
        Case {
            name: "join: a rule on the whole spec keeps nothing of it",
            v1: spec(
                &json!({"repository": {"type": "string"}, "tag": {"type": "string"},
                "size": {"type": "integer"}}),
            ),
            v2: spec(&json!({"image": {"type": "string"}, "size": {"type": "integer"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec", "toField": ".spec.image", "transformation": "self.repository + ':' + self.tag"},
                {"fromField": ".spec.repository"}, {"fromField": ".spec.tag"}]}]),
            stored: json!({"spec": {"repository": "nginx", "tag": "1.25", "size": 3}}),
            kept: &[META],
        },
        Case {
            name: "scalar to list",
            v1: spec(&json!({"command": {"type": "string"}, "on": {"type": "boolean"}})),
            v2: spec(
                &json!({"commands": {"type": "array", "items": {"type": "string"}},
                "on": {"type": "boolean"}}),
            ),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.command", "toField": ".spec.commands", "transformation": "[self]"}]}]),
            stored: json!({"spec": {"command": "run", "on": true}}),
            kept: &[META, "spec.on"],
        },
        Case {
            name: "conditional conversion",
            v1: spec(&json!({"replicas": {"type": "integer"}, "ratio": {"type": "number"}})),
            v2: spec(
                &json!({"scale": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                "ratio": {"type": "number"}}),
            ),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.replicas", "toField": ".spec.scale.replicas",
                 "transformation": "self > 0 ? optional.of(self) : optional.none()"}]}]),
            stored: json!({"spec": {"replicas": 0, "ratio": 0.25}}),
            kept: &[META, "spec.ratio"],
        },
        Case {
            name: "type change: seconds to a duration string",
            v1: spec(
                &json!({"timeoutSeconds": {"type": "integer"}, "payload": {"type": "string"}}),
            ),
            v2: spec(&json!({"timeout": {"type": "string"}, "payload": {"type": "string"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.timeoutSeconds", "toField": ".spec.timeout",
                 "transformation": "duration(string(self) + 's')"}]}]),
            stored: json!({"spec": {"timeoutSeconds": 90, "payload": "x\"y\\z \u{e9}"}}),
            kept: &[META, "spec.payload"],
        },
        Case {
            name: "field to annotation (lossy, kept for the way back)",
            v1: spec(&json!({"legacy": {"type": "string"}, "payload": {"type": "string"}})),
            v2: spec(&json!({"payload": {"type": "string"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.legacy", "toField": ".metadata.annotations['example.com/legacy']"}]}]),
            stored: json!({"spec": {"legacy": "kept", "payload": "p"}}),
            kept: &[META, "spec.payload"],
        },
        Case {
            name: "a rule writing metadata as a whole keeps no metadata field",
            v1: spec(&json!({"owner": {"type": "string"}, "payload": {"type": "string"}})),
            v2: spec(&json!({"payload": {"type": "string"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".metadata", "toField": ".metadata"}]}]),
            stored: json!({"spec": {"owner": "o", "payload": "p"}}),
            kept: &["spec.payload"],
        },
        Case {
            name: "deletion",
            v1: spec(&json!({"old": {"type": "string"}, "payload": {"type": "string"}})),
            v2: spec(&json!({"payload": {"type": "string"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [{"fromField": ".spec.old"}]}]),
            stored: json!({"spec": {"old": "gone", "payload": "p"}}),
            kept: &[META, "spec.payload"],
        },
        Case {
            name: "a transform on every element of a list",
            v1: spec(
                &json!({"ports": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "integer"}}}}, "note": {"type": "string"}}),
            ),
            v2: spec(
                &json!({"ports": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "string"}}}}, "note": {"type": "string"}}),
            ),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.ports[*].port", "toField": ".spec.ports[*].port", "transformation": "string(self)"}]}]),
            stored: json!({"spec": {"ports": [{"port": 80}, {"port": 443}], "note": "n"}}),
            kept: &[META, "spec.note"],
        },
        Case {
            name: "a default in the source schema, and a field the target drops, are not kept",
            v1: spec(
                &json!({"mode": {"type": "string", "default": "auto"}, "gone": {"type": "string"},
                "x": {"type": "integer"}}),
            ),
            v2: spec(&json!({"mode": {"type": "string"}, "y": {"type": "integer"}})),
            rules: json!([{"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.x", "toField": ".spec.y"}]}]),
            stored: json!({"spec": {"gone": "pruned", "x": 1}}),
            kept: &[META],
        },
    ]
}

#[test]
fn the_partial_path_writes_what_the_full_path_writes() {
    for c in cases() {
        let plan = plan_of(&c, "v1", "v2").partial();
        let got = plan.as_ref().map(kept).unwrap_or_default();
        assert_eq!(got, c.kept, "{}: kept fields", c.name);
        let stored = serde_json::to_vec(&object("v1", &c.stored)).expect("encodes");
        assert!(
            same(&c, &stored, "v1", "v2"),
            "{}: the partial path refused",
            c.name
        );
    }
}

#[test]
fn objects_failing_a_kept_fields_check_are_decoded_as_usual() {
    let c = &cases()[7]; // payload (string) and managedFields kept
    let odd = [
        // A kept scalar holding null, an object, a list: decoded into the Value, still equal.
        json!({"spec": {"timeoutSeconds": 1, "payload": null}}),
        json!({"spec": {"timeoutSeconds": 1, "payload": {"a": 1, "b": [1, 2]}}}),
        json!({"spec": {"timeoutSeconds": 1, "payload": [1, "x"]}}),
        // Strings written back without escaping, and with it.
        json!({"spec": {"timeoutSeconds": 1, "payload": "\u{e9} \u{65e5}\u{672c} \u{1f600}"}}),
        json!({"spec": {"timeoutSeconds": 1, "payload": "tab\tquote\"nul\u{0}del\u{7f}"}}),
        // Numbers as Value decodes them.
        json!({"spec": {"timeoutSeconds": 1, "payload": 1.5e300}}),
        json!({"spec": {"timeoutSeconds": 1, "payload": -12}}),
        // managedFields with a key pruning drops, and a null list.
        json!({"metadata": {"name": "w", "uid": "u", "managedFields": [{"manager": "m", "junk": 1}]},
               "spec": {"timeoutSeconds": 1, "payload": "p"}}),
        json!({"metadata": {"name": "w", "uid": "u", "managedFields": null},
               "spec": {"timeoutSeconds": 1, "payload": "p"}}),
        // Kept metadata scalars holding null (pruning drops it) and a string.
        json!({"metadata": {"name": "w", "uid": "u", "creationTimestamp": null, "generation": "x"},
               "spec": {"timeoutSeconds": 1, "payload": "p"}}),
        // No spec at all, and a spec without the kept field.
        json!({"spec": {"timeoutSeconds": 1}}),
    ];
    for rest in odd {
        let stored = serde_json::to_vec(&object("v1", &rest)).expect("encodes");
        assert!(same(c, &stored, "v1", "v2"), "refused {rest}");
    }
}

#[test]
fn the_partial_path_refuses_what_it_cannot_keep_exactly() {
    let c = &cases()[7];
    let refused: [&[u8]; 5] = [
        // Stored at another version than the plan's.
        br#"{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"spec":{"payload":"p"}}"#,
        // A repeated kept key.
        br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"payload":"p","payload":"q"}}"#,
        // A non-object where the plan looks into an object.
        br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":"text"}"#,
        // Invalid JSON.
        br#"{"apiVersion":"example.com/v1","spec":{"payload":"p"}"#,
        br#"{"apiVersion":"example.com/v1","spec":{}} trailing"#,
    ];
    for stored in refused {
        assert!(
            !same(c, stored, "v1", "v2"),
            "{}",
            String::from_utf8_lossy(stored)
        );
    }
    // Unsorted and escaped stored bytes: still the full path's bytes.
    let unsorted = br#"{"spec":{"payload":"a\u00e9\/b","timeoutSeconds":5},"kind":"Widget","apiVersion":"example.com/v1",
        "metadata":{"uid":"u","name":"w","managedFields":[{"time":"t","manager":"m","manager":"n"}]}}"#;
    assert!(same(c, unsorted, "v1", "v2"));
}

#[test]
fn no_plan_without_rules_or_at_the_same_version() {
    let c = &cases()[0];
    assert!(plan_of(c, "v1", "v1").partial().is_none());
    let none = Converter::None;
    assert!(
        none.partial_plan(&BTreeMap::new(), GROUP, "v1", "v2")
            .is_none()
    );
}

#[test]
fn the_benchmark_crd_both_ways() {
    // `crd-apiserver bench --only-conversion-rules`: a rename into a sub-object, seconds to a
    // duration, a field kept in an annotation, a large untouched payload.
    let c = Case {
        name: "bench",
        v1: spec(
            &json!({"firstName": {"type": "string"}, "timeoutSeconds": {"type": "integer"},
            "legacy": {"type": "string"}, "payload": {"type": "string"}}),
        ),
        v2: spec(
            &json!({"name": {"type": "object", "properties": {"first": {"type": "string"}}},
            "timeout": {"type": "string", "format": "duration"}, "payload": {"type": "string"}}),
        ),
        rules: json!([
            {"from": "v1", "to": "v2", "rules": [
                {"fromField": ".spec.firstName", "toField": ".spec.name.first"},
                {"fromField": ".spec.timeoutSeconds", "toField": ".spec.timeout",
                 "transformation": "duration(string(self) + 's')"},
                {"fromField": ".spec.legacy", "toField": ".metadata.annotations['v1.example.com/legacy']"}]},
            {"from": "v2", "to": "v1", "rules": [
                {"fromField": ".spec.name.first", "toField": ".spec.firstName"},
                {"fromField": ".spec.timeout", "toField": ".spec.timeoutSeconds",
                 "transformation": "self.getSeconds()"},
                {"fromField": ".metadata.annotations['v1.example.com/legacy']", "toField": ".spec.legacy"}]}]),
        stored: json!({}),
        kept: &[META, "spec.payload"],
    };
    for (from, to, rest) in [
        (
            "v1",
            "v2",
            json!({"spec": {"firstName": "n", "timeoutSeconds": 7, "legacy": "kept", "payload": "x".repeat(900)}}),
        ),
        (
            "v2",
            "v1",
            json!({"metadata": {"name": "w", "uid": "u", "generation": 1,
                "annotations": {"v1.example.com/legacy": "kept", "other": "o"}},
                "spec": {"name": {"first": "n"}, "timeout": "1m30s", "payload": "p"}}),
        ),
    ] {
        let plan = plan_of(&c, from, to).partial();
        assert_eq!(plan.as_ref().map(kept).unwrap_or_default(), c.kept);
        let stored = serde_json::to_vec(&object(from, &rest)).expect("encodes");
        assert!(same(&c, &stored, from, to), "{from} to {to}");
    }
}
