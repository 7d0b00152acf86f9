//! Strategic merge patch cases carried from upstream `strategicpatch/patch_test.go`
//! (`tests/patch_smp/upstream.yaml`), applied over a schema equivalent to upstream's `MergeItem`
//! test type and its patch tags.

use crd_merge::strategic;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    description: String,
    original: Value,
    patch: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

/// Upstream's `MergeItem` (recursive), unrolled to `depth` levels.
fn merge_item(depth: usize) -> Value {
    if depth == 0 {
        return json!({});
    }
    let item = merge_item(depth - 1);
    json!({"properties": {
        "name": {"type": "string"}, "value": {"type": "string"}, "other": {"type": "string"},
        "mergingList": {"type": "array", "items": item,
            "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
        "nonMergingList": {"type": "array", "items": item},
        "mergingIntList": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-patch-strategy": "merge"},
        "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
        "mergeItemPtr": {"type": "object", "properties": item.get("properties").cloned().unwrap_or_default(),
            "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
        "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
        "replacingItem": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
        "retainKeysMap": {"type": "object", "x-kubernetes-patch-strategy": "retainKeys", "properties": {
            "name": {"type": "string"}, "value": {"type": "string"}, "other": {"type": "string"},
            "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
            "mergingIntList": {"type": "array", "x-kubernetes-patch-strategy": "merge"},
            "mergingList": {"type": "array", "items": item,
                "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
            "nonMergingList": {"type": "array", "items": item}
        }},
        "retainKeysMergingList": {"type": "array", "items": item,
            "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name"}
    }})
}

#[test]
fn upstream_strategic_merge_patch_cases() {
    let text = include_str!("patch_smp/upstream.yaml");
    let cases: Cases = serde_saphyr::from_str(text).expect("upstream.yaml");
    let schema = merge_item(4);
    assert!(cases.cases.len() >= 40);
    let mut failures = Vec::new();
    for case in cases.cases {
        let mut doc = case.original.clone();
        let patch = serde_json::to_vec(&case.patch).expect("patch");
        let res = strategic::apply(&mut doc, &patch, &schema);
        let ok = match (&case.result, &case.error, &res) {
            (Some(want), None, Ok(())) => doc == *want,
            (None, Some(want), Err(e)) => e.message.contains(want.as_str()),
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {res:?} / {doc}", case.description));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
