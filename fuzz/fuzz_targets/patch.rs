//! The patch engines over a fuzzed object and patch: JSON Patch, JSON merge patch, strategic
//! merge patch (typed by a fuzzed schema's `x-kubernetes-patch-*` metadata), server-side apply
//! and the update field manager (typed by the same schema as structured-merge-diff types), with
//! every `fieldValidation`. What the field manager writes must read back: the managed fields it
//! stores decode and (from inputs without managed fields of their own) pass the managed-fields validation
//! the server runs on writes.
//!
//! Input: a mode byte (engine and `fieldValidation`), the object as JSON, `%%`, the patch body
//! (for apply and update: the configuration or new object, as JSON), optionally `%%` and the
//! schema as JSON.
#![no_main]

use crd_merge::apply::{FieldManager, ManagedFields, Schema, validate_managed_fields};
use crd_merge::json_patch::FieldValidation;
use crd_merge::{json_patch, merge_patch, strategic};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const NOW: &str = "2026-01-02T03:04:05Z";

/// Checks what the field manager stored: it decodes, as a later write reads it, and when the
/// inputs carried no managed fields of their own (`fresh`), it passes the managed-fields
/// validation of writes.
fn check_managed_fields(obj: &Value, fresh: bool) {
    let list = obj.pointer("/metadata/managedFields");
    if let Err(e) = ManagedFields::decode(list) {
        panic!("stored managedFields do not decode: {e:?}\n{obj}");
    }
    if let Some(list) = list.filter(|_| fresh) {
        let violations = validate_managed_fields(list);
        assert!(violations.is_empty(), "{violations:?}\n{obj}");
    }
}

fuzz_target!(|data: &[u8]| {
    let (m, rest) = crd_apiserver_fuzz::mode(data, 15);
    let validation = [
        FieldValidation::Ignore,
        FieldValidation::Warn,
        FieldValidation::Strict,
    ][usize::from(m / 5)];
    let docs = crd_apiserver_fuzz::parts(rest, 3);
    let Some(mut doc) = crd_apiserver_fuzz::json(docs[0]) else {
        return;
    };
    let Some(patch) = docs.get(1).copied() else {
        return;
    };
    let schema = docs
        .get(2)
        .and_then(|d| crd_apiserver_fuzz::json(d))
        .unwrap_or(Value::Null);
    match m % 5 {
        0 => {
            let _ = json_patch::apply_with(&mut doc, patch, validation);
        }
        1 => {
            let _ = merge_patch::apply_with(&mut doc, patch, validation);
        }
        2 => {
            let _ = strategic::apply_with(&mut doc, patch, &schema, validation);
        }
        mode => {
            let Some(mut config) = crd_apiserver_fuzz::json(patch) else {
                return;
            };
            if let Some(o) = config.as_object_mut() {
                o.entry("apiVersion").or_insert_with(|| json!("v1"));
                o.entry("kind").or_insert_with(|| json!("Fuzz"));
            }
            let typed = if schema.is_null() {
                Schema::deduced()
            } else {
                Schema::from_json_schema(&schema)
            };
            let manager = FieldManager::new(&typed, "v1", "Fuzz");
            let fresh = doc.pointer("/metadata/managedFields").is_none()
                && config.pointer("/metadata/managedFields").is_none();
            let live = doc.is_object().then_some(&doc);
            if mode == 3 {
                for force in [false, true] {
                    if let Ok(out) = manager.apply(live, &config, "fuzzer", force, NOW) {
                        check_managed_fields(&out, fresh);
                    }
                }
            } else if config.is_object() {
                manager.update(live, &mut config, "fuzzer", NOW);
                check_managed_fields(&config, fresh);
            }
        }
    }
});
