//! JSON merge patch (RFC 7386) as kube-apiserver 1.32–1.34 applies it: the body checks of
//! `handlers/patch.go` (`applyJSPatch`, `MergePatchType`) and the merge of
//! `gopkg.in/evanphx/json-patch.v4` `MergePatch`.
//!
//! Upstream behaviour pinned (see `tests/patch_merge_patch.rs`):
//! - `null` members delete; nulls inside a value that is added or replaces a non-object are
//!   pruned from objects (recursively, also inside arrays) but kept as array elements;
//! - a patch value that is not an object replaces the current value as it is (an object
//!   replaced by an array keeps the array's nested nulls);
//! - a body that is not valid JSON, is `null`, or is a scalar is 400 "Invalid JSON Patch" (with
//!   `fieldValidation` `Warn`/`Strict`, the default, a non-object body is first refused by the
//!   strict decode: "error decoding patch: json: cannot unmarshal …").

use serde_json::{Map, Value};

use crate::json_patch::{FieldValidation, PatchError, Strict, go_kind, parse};

/// Applies a merge patch body to `doc` with the default `fieldValidation` (`Warn`), dropping
/// the strict-decoding problems.
pub fn apply(doc: &mut Value, patch: &[u8]) -> Result<(), PatchError> {
    apply_with(doc, patch, FieldValidation::Warn).map(drop)
}

/// Applies a merge patch body to `doc`, decoding it as upstream does for `validation`. Returns
/// the strict-decoding problems of the body (`duplicate field "x"`; none with `Ignore`), for
/// warnings (`Warn`) or [`crate::json_patch::strict_decoding_error`] (`Strict`).
pub fn apply_with(
    doc: &mut Value,
    patch: &[u8],
    validation: FieldValidation,
) -> Result<Vec<String>, PatchError> {
    let strict = validation != FieldValidation::Ignore;
    let mode = if strict { Strict::Map } else { Strict::Off };
    let (patch, problems) = match parse(patch, mode) {
        Ok(p) => p,
        Err(e) if strict => {
            return Err(PatchError::bad_request(format!(
                "error decoding patch: {e}"
            )));
        }
        Err(_) => return Err(bad_patch()),
    };
    match patch {
        Value::Object(patch) => {
            match doc {
                Value::Object(map) => merge_docs(map, patch),
                other => {
                    let mut patch = Value::Object(patch);
                    prune_nulls(&mut patch);
                    *other = patch;
                }
            }
            Ok(problems)
        }
        Value::Null => Err(bad_patch()),
        other if strict => Err(PatchError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_kind(&other)
        ))),
        Value::Array(mut items) => {
            // evanphx returns the (pruned) array as the document; decoding it into an object
            // then fails in the apiserver as an invalid patch.
            for item in &mut items {
                prune_nulls(item);
            }
            let text = crate::json_patch::go_json(&Value::Array(items));
            Err(PatchError::invalid_patch(
                &text,
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ))
        }
        _ => Err(bad_patch()),
    }
}

/// `jsonpatch.ErrBadJSONPatch`, which the apiserver answers as 400.
fn bad_patch() -> PatchError {
    PatchError::bad_request("Invalid JSON Patch")
}

/// RFC 7386 `MergePatch` on objects, taking the patch by value so nothing is cloned.
pub(crate) fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, v) in patch {
        if v.is_null() {
            doc.remove(&k);
            continue;
        }
        match doc.get_mut(&k) {
            Some(cur) if !cur.is_null() => merge(cur, v),
            _ => {
                let mut v = v;
                prune_nulls(&mut v);
                doc.insert(k, v);
            }
        }
    }
}

fn merge(cur: &mut Value, patch: Value) {
    match (cur, patch) {
        (Value::Object(cur), Value::Object(patch)) => merge_docs(cur, patch),
        (cur @ Value::Object(_), patch) => *cur = patch,
        (cur, mut patch) => {
            prune_nulls(&mut patch);
            *cur = patch;
        }
    }
}

/// Drops `null` members of objects, recursively (array elements stay, even `null` ones).
fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}
