//! Condition bookkeeping on `status.conditions`, as upstream's `SetCRDCondition`: the
//! transition time changes only when the status changes; reason and message are always
//! overwritten. Pure functions on JSON, shared by strategies (the CRD's Terminating condition on
//! delete) and controllers (NamesAccepted, Established, migration conditions).

use serde_json::{Value, json};

use super::meta::now_rfc3339;

/// Sets a condition on an object's `status.conditions`.
pub fn set(obj: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let st = root.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let Some(st) = st.as_object_mut() else { return };
    let conds = st.entry("conditions").or_insert_with(|| json!([]));
    if !conds.is_array() {
        *conds = json!([]);
    }
    let Some(list) = conds.as_array_mut() else {
        return;
    };
    if let Some(existing) = list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        let changed = existing.get("status").and_then(Value::as_str) != Some(status);
        let missing_time = existing
            .get("lastTransitionTime")
            .and_then(Value::as_str)
            .is_none();
        existing["status"] = Value::from(status);
        existing["reason"] = Value::from(reason);
        existing["message"] = Value::from(message);
        if changed || missing_time {
            existing["lastTransitionTime"] = Value::from(now_rfc3339());
        }
    } else {
        list.push(json!({
            "type": kind, "status": status, "lastTransitionTime": now_rfc3339(),
            "reason": reason, "message": message,
        }));
    }
}

/// The status of a condition, if present.
pub fn get<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?
        .get("status")?
        .as_str()
}

/// Removes a condition.
pub fn remove(obj: &mut Value, kind: &str) {
    if let Some(list) = obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_changes_only_with_status() {
        let mut obj = json!({});
        set(&mut obj, "Established", "False", "Installing", "a");
        obj["status"]["conditions"][0]["lastTransitionTime"] = json!("T0");
        set(&mut obj, "Established", "False", "Other", "b");
        assert_eq!(obj["status"]["conditions"][0]["lastTransitionTime"], "T0");
        assert_eq!(obj["status"]["conditions"][0]["reason"], "Other");
        set(&mut obj, "Established", "True", "InitialNamesAccepted", "c");
        assert_ne!(obj["status"]["conditions"][0]["lastTransitionTime"], "T0");
        assert_eq!(get(&obj, "Established"), Some("True"));
        remove(&mut obj, "Established");
        assert_eq!(get(&obj, "Established"), None);
    }
}
