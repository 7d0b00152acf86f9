//! Accessors for `metadata` on objects held as JSON, and the time format Kubernetes uses
//! (`crd_core::time`'s, re-exported).

use serde_json::{Map, Value};

pub use crd_core::time::rfc3339_seconds;

/// The current time as `metav1.Time` prints it (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    rfc3339_seconds(jiff::Timestamp::now())
}

/// `metadata` as an object, created when missing or not an object.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(map) = obj else {
        unreachable!("made an object above")
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Value::Object(meta) = meta else {
        unreachable!("made an object above")
    };
    meta
}

/// A string field of `metadata`, or "".
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

/// `metadata.resourceVersion`.
pub fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

/// Encodes an object for storage; an encoding failure is an error, never empty bytes.
pub fn encode(obj: &Value) -> Result<bytes::Bytes, crd_storage::StorageError> {
    serde_json::to_vec(obj)
        .map(bytes::Bytes::from)
        .map_err(|e| crd_storage::StorageError::Engine(format!("encoding an object: {e}")))
}

/// Step: `ObjectMeta` as Go re-encodes it (upstream's `objectmeta.Coerce` for custom resources,
/// the typed decode for everything else): empty `labels`, `annotations`, `ownerReferences`
/// and `finalizers` are dropped (`omitempty`). An empty `managedFields` stays: it asks the
/// field manager to clear them.
pub fn drop_empty_collections(obj: &mut Value) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.retain(|k, v| {
            !(matches!(
                k.as_str(),
                "labels" | "annotations" | "ownerReferences" | "finalizers"
            ) && is_empty_collection(v))
        });
    }
}

/// An empty JSON object or array.
pub fn is_empty_collection(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// `metadata.deletionGracePeriodSeconds`, 0 when unset.
pub fn deletion_grace_period(obj: &Value) -> i64 {
    obj.pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Starts a graceful deletion of `period` seconds (upstream's `rest.BeforeDelete`):
/// `deletionTimestamp` that far ahead, `deletionGracePeriodSeconds: period`, and `generation`
/// bumped when the kind tracks it.
pub fn mark_deleting_gracefully(obj: &mut Value, period: i64) {
    let generation = generation(obj);
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(period);
    let m = meta_mut(obj);
    m.insert(
        "deletionTimestamp".into(),
        Value::String(rfc3339_seconds(at)),
    );
    m.insert("deletionGracePeriodSeconds".into(), Value::from(period));
    if generation > 0 {
        m.insert("generation".into(), Value::from(generation + 1));
    }
}

/// Shortens a pending graceful deletion to `period` seconds, moving its `deletionTimestamp`
/// back by the difference.
pub fn shorten_grace_period(obj: &mut Value, period: i64) {
    let current = deletion_grace_period(obj);
    let at = meta_str(obj, "deletionTimestamp")
        .parse::<jiff::Timestamp>()
        .unwrap_or_else(|_| jiff::Timestamp::now())
        - jiff::SignedDuration::from_secs(current - period);
    let m = meta_mut(obj);
    m.insert(
        "deletionTimestamp".into(),
        Value::String(rfc3339_seconds(at)),
    );
    m.insert("deletionGracePeriodSeconds".into(), Value::from(period));
}

/// Marks an object as being deleted, as the generic store's graceful deletion does:
/// `deletionTimestamp` now, `deletionGracePeriodSeconds: 0`, and `generation` bumped when the
/// kind tracks it. An object already being deleted is left as it is.
pub fn mark_deleting(obj: &mut Value) {
    if is_deleting(obj) {
        return;
    }
    let generation = generation(obj);
    let m = meta_mut(obj);
    m.insert("deletionTimestamp".into(), Value::String(now_rfc3339()));
    m.insert("deletionGracePeriodSeconds".into(), Value::from(0));
    if generation > 0 {
        m.insert("generation".into(), Value::from(generation + 1));
    }
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    !meta_str(obj, "deletionTimestamp").is_empty()
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers`, removing the field when the list is empty.
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let meta = meta_mut(obj);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(finalizers.to_vec()));
    }
}

/// `metadata.generation`, or 0.
pub fn generation(obj: &Value) -> i64 {
    obj.get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Sets `metadata.resourceVersion`.
pub fn set_resource_version(obj: &mut Value, rv: i64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

/// Removes `metadata.resourceVersion` (it is never stored; the storage revision is).
pub fn clear_resource_version(obj: &mut Value) {
    meta_mut(obj).remove("resourceVersion");
}

/// The object's labels (for selectors).
pub fn labels(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| m.get("labels"))
}

/// Whether two objects are equal ignoring `metadata.resourceVersion` and `managedFields`
/// timestamps, so that no-op updates do not create a new revision.
pub fn same_ignoring_rv(a: &Value, b: &Value) -> bool {
    let mut a = a.clone();
    let mut b = b.clone();
    clear_resource_version(&mut a);
    clear_resource_version(&mut b);
    a == b
}
