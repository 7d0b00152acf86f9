//! Strategic merge patch as kube-apiserver applies it to built-in kinds: a table of
//! (document, patch, result or error) over a Pod-like schema carrying the patch tags the
//! apiserver's OpenAPI publishes. Cases follow upstream `strategicpatch/patch_test.go`.

use crd_merge::strategic;
use serde_json::Value;

const SCHEMA: &str = r#"{
  "properties": {
    "metadata": {"properties": {
      "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"},
      "labels": {"type": "object", "additionalProperties": {"type": "string"}},
      "ownerReferences": {"type": "array", "items": {"type": "object"},
        "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "uid"}
    }},
    "spec": {"properties": {
      "containers": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
        "items": {"properties": {
          "env": {"type": "array", "items": {"type": "object"},
            "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
          "args": {"type": "array", "items": {"type": "string"}}
        }}},
      "initContainers": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
        "items": {"type": "object"}},
      "volumes": {"type": "array", "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name",
        "items": {"type": "object"}},
      "tolerations": {"type": "array", "items": {"type": "object"}},
      "hostAliases": {"type": "array", "items": {"type": "object"},
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["ip"]},
      "strategy": {"type": "object", "x-kubernetes-patch-strategy": "retainKeys"},
      "selector": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
      "matrix": {"type": "array", "x-kubernetes-patch-strategy": "merge"}
    }}
  }
}"#;

/// The patched document, or an error code and message (422 errors: the cause).
enum Want {
    Doc(&'static str),
    Error(u16, &'static str),
}
use Want::{Doc, Error};

const POD: &str = r#"{"metadata":{"name":"p","finalizers":["a","b"],"labels":{"x":"1","y":"2"}},
  "spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1","env":[{"name":"E","value":"1"}]},{"name":"c","image":"c:1"}],
  "tolerations":[{"key":"t1"}],"hostAliases":[{"ip":"1.1.1.1","hostnames":["a"]}],
  "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"selector":{"a":"1","b":"2"}}}"#;

#[rustfmt::skip]
const CASES: &[(&str, &str, &str, Want)] = &[
    ("merge a list element by key", r#"{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}"#,
     r#"{"spec":{"containers":[{"name":"b","image":"b:2"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:2"}]}}"#)),
    // Without $setElementOrder, items the server lacks go before the server-only items that
    // follow them (upstream mergeSortedSlice); kubectl always sends $setElementOrder.
    ("a new list element goes first", r#"{"spec":{"containers":[{"name":"a"}]}}"#,
     r#"{"spec":{"containers":[{"name":"z","image":"z:1"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"z","image":"z:1"},{"name":"a"}]}}"#)),
    ("a patched element keeps its place", r#"{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#,
     r#"{"spec":{"containers":[{"name":"b","image":"b2"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"a"},{"name":"b","image":"b2"},{"name":"c"}]}}"#)),
    ("delete a list element with $patch: delete", r#"{"spec":{"containers":[{"name":"a"},{"name":"b"}]}}"#,
     r#"{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"b"}]}}"#)),
    ("replace a list with $patch: replace", r#"{"spec":{"containers":[{"name":"a"},{"name":"b"}]}}"#,
     r#"{"spec":{"containers":[{"name":"c"},{"$patch":"replace"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"c"}]}}"#)),
    ("replace a map with $patch: replace", POD, r#"{"metadata":{"labels":{"$patch":"replace","z":"9"}}}"#,
     Doc(r#"{"metadata":{"name":"p","finalizers":["a","b"],"labels":{"z":"9"}},
  "spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1","env":[{"name":"E","value":"1"}]},{"name":"c","image":"c:1"}],
  "tolerations":[{"key":"t1"}],"hostAliases":[{"ip":"1.1.1.1","hostnames":["a"]}],
  "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"selector":{"a":"1","b":"2"}}}"#)),
    ("$patch: delete on an existing map leaves it empty", r#"{"metadata":{"labels":{"x":"1"}}}"#,
     r#"{"metadata":{"labels":{"$patch":"delete"}}}"#, Doc(r#"{"metadata":{"labels":{}}}"#)),
    ("$patch: delete on a missing map adds nothing", r#"{"metadata":{}}"#,
     r#"{"metadata":{"labels":{"$patch":"delete"}}}"#, Doc(r#"{"metadata":{}}"#)),
    ("null deletes", r#"{"metadata":{"labels":{"x":"1","y":"2"}}}"#, r#"{"metadata":{"labels":{"x":null}}}"#,
     Doc(r#"{"metadata":{"labels":{"y":"2"}}}"#)),
    ("nulls in new values are discarded", r#"{"metadata":{}}"#, r#"{"metadata":{"labels":{"x":null,"y":"2"}}}"#,
     Doc(r#"{"metadata":{"labels":{"y":"2"}}}"#)),
    ("primitive merge list: union in patch order", r#"{"metadata":{"finalizers":["a","b"]}}"#,
     r#"{"metadata":{"finalizers":["c","a"]}}"#, Doc(r#"{"metadata":{"finalizers":["c","a","b"]}}"#)),
    ("primitive merge list: duplicates collapse", r#"{"metadata":{"finalizers":["a","a","b"]}}"#,
     r#"{"metadata":{"finalizers":["b"]}}"#, Doc(r#"{"metadata":{"finalizers":["a","b"]}}"#)),
    ("$deleteFromPrimitiveList", r#"{"metadata":{"finalizers":["a","b","c"]}}"#,
     r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["b","z"]}}"#, Doc(r#"{"metadata":{"finalizers":["a","c"]}}"#)),
    ("$deleteFromPrimitiveList with an addition", r#"{"metadata":{"finalizers":["a","b"]}}"#,
     r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"finalizers":["c"]}}"#, Doc(r#"{"metadata":{"finalizers":["c","b"]}}"#)),
    ("$deleteFromPrimitiveList on a missing list", r#"{"metadata":{}}"#,
     r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}"#, Doc(r#"{"metadata":{}}"#)),
    ("$deleteFromPrimitiveList with a bad prefix", r#"{"metadata":{}}"#,
     r#"{"metadata":{"$deleteFromPrimitiveListX/finalizers":["a"]}}"#, Error(400, "invalid patch format of primitive list")),
    ("$setElementOrder reorders a list of maps", r#"{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#,
     r#"{"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"b"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"c"},{"name":"a"},{"name":"b"}]}}"#)),
    ("$setElementOrder with a patched and a new element", r#"{"spec":{"containers":[{"name":"a"},{"name":"b"}]}}"#,
     r#"{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"n"},{"name":"a"}],"containers":[{"name":"n","image":"n"},{"name":"a","image":"a2"}]}}"#,
     Doc(r#"{"spec":{"containers":[{"name":"b"},{"name":"n","image":"n"},{"name":"a","image":"a2"}]}}"#)),
    ("$setElementOrder out of the patch list's order", r#"{"spec":{"containers":[{"name":"a"}]}}"#,
     r#"{"spec":{"$setElementOrder/containers":[{"name":"n"},{"name":"a"}],"containers":[{"name":"a","image":"a2"},{"name":"n","image":"n"}]}}"#,
     Error(500, "the order in patch list:\n[map[image:a2 name:a] map[image:n name:n]]\n doesn't match $setElementOrder list:\n[map[name:n] map[name:a]]")),
    ("$setElementOrder of primitives", r#"{"metadata":{"finalizers":["a","b"]}}"#,
     r#"{"metadata":{"$setElementOrder/finalizers":["b","c","a"],"finalizers":["c"]}}"#,
     Doc(r#"{"metadata":{"finalizers":["b","c","a"]}}"#)),
    ("$setElementOrder keeps server-only items", r#"{"metadata":{"finalizers":["a","s","b"]}}"#,
     r#"{"metadata":{"$setElementOrder/finalizers":["b","a"]}}"#,
     Doc(r#"{"metadata":{"finalizers":["s","b","a"]}}"#)),
    ("$setElementOrder that is not a list", r#"{"metadata":{"finalizers":["a"]}}"#,
     r#"{"metadata":{"$setElementOrder/finalizers":"a"}}"#, Error(500, "expected a []interface {}, but received a string")),
    ("$setElementOrder on an empty list", r#"{"metadata":{"finalizers":[]}}"#,
     r#"{"metadata":{"$setElementOrder/finalizers":[]}}"#, Error(500, "no elements in any of the given slices")),
    ("$retainKeys clears other keys", r#"{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}}"#,
     r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#, Doc(r#"{"spec":{"strategy":{"type":"Recreate"}}}"#)),
    ("$retainKeys missing a patched key", r#"{"spec":{"strategy":{}}}"#,
     r#"{"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":{}}}}"#, Error(400, "invalid patch format of retainKeys")),
    ("$retainKeys that is not a list", r#"{"spec":{"strategy":{}}}"#,
     r#"{"spec":{"strategy":{"$retainKeys":"type"}}}"#, Error(400, "invalid patch format of retainKeys")),
    ("$retainKeys inside a merged list element", r#"{"spec":{"volumes":[{"name":"v","emptyDir":{},"hostPath":{"path":"/x"}}]}}"#,
     r#"{"spec":{"volumes":[{"name":"v","$retainKeys":["name","hostPath"],"hostPath":{"path":"/y"}}]}}"#,
     Doc(r#"{"spec":{"volumes":[{"name":"v","hostPath":{"path":"/y"}}]}}"#)),
    ("retainKeys strategy without the directive merges", r#"{"spec":{"strategy":{"type":"A","rollingUpdate":{"maxSurge":1}}}}"#,
     r#"{"spec":{"strategy":{"type":"B"}}}"#, Doc(r#"{"spec":{"strategy":{"type":"B","rollingUpdate":{"maxSurge":1}}}}"#)),
    ("lists without strategy are replaced", r#"{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}"#,
     r#"{"spec":{"tolerations":[{"key":"c"}]}}"#, Doc(r#"{"spec":{"tolerations":[{"key":"c"}]}}"#)),
    ("list-type map is merged on its key", r#"{"spec":{"hostAliases":[{"ip":"1","hostnames":["a"]}]}}"#,
     r#"{"spec":{"hostAliases":[{"ip":"2","hostnames":["b"]}]}}"#,
     Doc(r#"{"spec":{"hostAliases":[{"ip":"2","hostnames":["b"]},{"ip":"1","hostnames":["a"]}]}}"#)),
    ("list-type map merges a matching element", r#"{"spec":{"hostAliases":[{"ip":"1","hostnames":["a"]}]}}"#,
     r#"{"spec":{"hostAliases":[{"ip":"1","hostnames":["b"]}]}}"#,
     Doc(r#"{"spec":{"hostAliases":[{"ip":"1","hostnames":["b"]}]}}"#)),
    ("maps with replace strategy are replaced", r#"{"spec":{"selector":{"a":"1","b":"2"}}}"#,
     r#"{"spec":{"selector":{"c":"3"}}}"#, Doc(r#"{"spec":{"selector":{"c":"3"}}}"#)),
    ("nested list merge inside a merged element", POD,
     r#"{"spec":{"containers":[{"name":"b","env":[{"name":"F","value":"2"},{"name":"E","value":"9"}]}]}}"#,
     Doc(r#"{"metadata":{"name":"p","finalizers":["a","b"],"labels":{"x":"1","y":"2"}},
  "spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1","env":[{"name":"F","value":"2"},{"name":"E","value":"9"}]},{"name":"c","image":"c:1"}],
  "tolerations":[{"key":"t1"}],"hostAliases":[{"ip":"1.1.1.1","hostnames":["a"]}],
  "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"selector":{"a":"1","b":"2"}}}"#)),
    ("a new list drops $patch elements", r#"{"spec":{}}"#,
     r#"{"spec":{"initContainers":[{"name":"x"},{"name":"y","$patch":"delete"}]}}"#,
     Doc(r#"{"spec":{"initContainers":[{"name":"x"}]}}"#)),
    ("a type change replaces", r#"{"spec":{"replicas":1}}"#, r#"{"spec":{"replicas":"two"}}"#, Doc(r#"{"spec":{"replicas":"two"}}"#)),
    ("unknown fields merge as plain maps", r#"{"spec":{"other":{"a":1}}}"#, r#"{"spec":{"other":{"b":2}}}"#,
     Doc(r#"{"spec":{"other":{"a":1,"b":2}}}"#)),
    ("unknown $patch on a map", r#"{"metadata":{"labels":{}}}"#, r#"{"metadata":{"labels":{"$patch":"frob","a":"1"}}}"#,
     Error(500, "unknown patch type: frob in map: map[$patch:frob a:1]")),
    ("$patch: merge in a list", r#"{"spec":{"containers":[{"name":"a"}]}}"#, r#"{"spec":{"containers":[{"$patch":"merge"}]}}"#,
     Error(500, "merging lists cannot yet be specified in the patch")),
    ("$patch: delete without merge key", r#"{"spec":{"containers":[{"name":"a"}]}}"#, r#"{"spec":{"containers":[{"$patch":"delete"}]}}"#,
     Error(500, "map: map[$patch:delete] does not contain declared merge key: name")),
    ("element without merge key", r#"{"spec":{"containers":[{"name":"a"}]}}"#, r#"{"spec":{"containers":[{"image":"x"}]}}"#,
     Error(500, "map: map[image:x] does not contain declared merge key: name")),
    ("mixed element types", r#"{"metadata":{"finalizers":["a"]}}"#, r#"{"metadata":{"finalizers":[1]}}"#,
     Error(500, "list element types are not identical: [[a] [1]]")),
    ("lists of lists", r#"{"spec":{"matrix":[[1]]}}"#, r#"{"spec":{"matrix":[[2]]}}"#, Error(422, "lists of lists are not supported")),
    ("null body", r#"{"a":1}"#, "null", Doc(r#"{"a":1}"#)),
    ("array body", "{}", "[]", Error(400, "json: cannot unmarshal array into Go value of type map[string]interface {}")),
    ("syntax error", "{}", "{", Error(400, "unexpected end of JSON input")),
];

#[test]
fn strategic_merge_patch_table() {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema");
    let mut failures = Vec::new();
    for (name, doc, patch, want) in CASES {
        let mut got: Value = serde_json::from_str(doc).expect("test document");
        let res = strategic::apply(&mut got, patch.as_bytes(), &schema);
        let ok = match (want, &res) {
            (Doc(want), Ok(())) => got == serde_json::from_str::<Value>(want).expect("want"),
            (Error(422, cause), Err(e)) => e.code == 422 && e.cause.as_deref() == Some(*cause),
            (Error(code, message), Err(e)) => e.code == *code && e.message == *message,
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}: got {res:?} / {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn large_merge_lists_stay_linear() {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema");
    let n = 20_000;
    let containers: Vec<Value> = (0..n)
        .map(|i| serde_json::json!({"name": format!("c{i}")}))
        .collect();
    let mut doc = serde_json::json!({"spec": {"containers": containers}});
    let patch: Vec<Value> = (0..n)
        .step_by(2)
        .map(|i| serde_json::json!({"name": format!("c{i}"), "image": "x"}))
        .collect();
    let patch = serde_json::json!({"spec": {"containers": patch}}).to_string();
    strategic::apply(&mut doc, patch.as_bytes(), &schema).expect("patch");
    assert_eq!(doc["spec"]["containers"][0]["image"], "x");
    assert_eq!(doc["spec"]["containers"].as_array().map(Vec::len), Some(n));
    let deletes: Vec<Value> = (0..n)
        .step_by(2)
        .map(|i| serde_json::json!({"name": format!("c{i}"), "$patch": "delete"}))
        .collect();
    let patch = serde_json::json!({"spec": {"containers": deletes}}).to_string();
    strategic::apply(&mut doc, patch.as_bytes(), &schema).expect("patch");
    assert_eq!(
        doc["spec"]["containers"].as_array().map(Vec::len),
        Some(n / 2)
    );
    assert_eq!(doc["spec"]["containers"][0]["name"], "c1");
}

#[test]
fn all_of_wrapped_types_are_followed() {
    // OpenAPI v3 wraps `$ref`'d types in a single-entry `allOf`; the patch tags stay outside.
    let schema: Value = serde_json::from_str(
        r#"{"properties": {"spec": {"allOf": [{"properties": {
            "containers": {"type": "array", "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
                "items": {"allOf": [{"properties": {"ports": {"type": "array",
                    "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "containerPort"}}}]}}
        }}]}}}"#,
    )
    .expect("schema");
    let mut doc: Value = serde_json::from_str(
        r#"{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80}]}]}}"#,
    )
    .expect("doc");
    let patch = br#"{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80,"name":"http"},{"containerPort":443}]}]}}"#;
    strategic::apply(&mut doc, patch, &schema).expect("patch");
    assert_eq!(
        doc,
        serde_json::json!({"spec": {"containers": [{"name": "a", "ports": [
            {"containerPort": 80, "name": "http"}, {"containerPort": 443}
        ]}]}})
    );
}

#[test]
fn duplicate_fields_are_strict_decoding_problems() {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema");
    let mut doc: Value = serde_json::from_str(r#"{"metadata":{}}"#).expect("doc");
    let patch = br#"{"metadata":{"labels":{"a":"1","a":"2"}}}"#;
    let problems = strategic::apply_with(
        &mut doc,
        patch,
        &schema,
        crd_merge::json_patch::FieldValidation::Strict,
    )
    .expect("patched");
    assert_eq!(doc, serde_json::json!({"metadata": {"labels": {"a": "2"}}}));
    assert_eq!(problems, [r#"duplicate field "a""#]);
}
