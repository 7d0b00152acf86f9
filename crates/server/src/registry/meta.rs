//! Accessors for `metadata` on objects held as JSON, and the time format Kubernetes uses.

use serde_json::{Map, Value};

/// The current time as `metav1.Time` prints it (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    rfc3339_seconds(jiff::Timestamp::now())
}

/// `t` as `metav1.Time` prints it (RFC 3339, whole seconds, UTC; a fraction is dropped). Years
/// 1970 to 9999 are written digit by digit (every create writes two times, and the general
/// formatter was 1% of a create's instructions); other times by jiff's `strftime`, as before.
pub fn rfc3339_seconds(t: jiff::Timestamp) -> String {
    const END_OF_9999: i64 = 253_402_300_800;
    let secs = t.as_second();
    // A time in the second before 1970 has `as_second() == 0` and a negative fraction: the
    // digit-by-digit path would print 1970; `strftime` floors to 1969-12-31T23:59:59Z.
    if !(0..END_OF_9999).contains(&secs) || t.subsec_nanosecond() < 0 {
        return t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    }
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = [0u8; 20];
    let mut put = |at: usize, value: i64, width: usize| {
        let mut v = value;
        for i in (at..at + width).rev() {
            // `v % 10` is a digit: the value is non-negative.
            out[i] = b'0' + u8::try_from(v % 10).unwrap_or(0);
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, rem / 3600, 2);
    put(14, rem % 3600 / 60, 2);
    put(17, rem % 60, 2);
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ] {
        out[at] = sep;
    }
    out.iter().map(|&b| char::from(b)).collect()
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), for days from 0 on.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_strftime_writes_them() {
        let strftime = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let mut seconds: Vec<i64> = vec![
            0,
            1,
            59,
            60,
            3_599,
            3_600,
            86_399,
            86_400,
            // 2000-02-28, -29, -03-01 (a leap year divisible by 400) and 2100-02-28, -03-01
            // (not a leap year), 2038-01-19T03:14:08Z (past 32 bits), jiff's latest time (in
            // 9999-12-30), and before 1970 (jiff's formatter).
            951_696_000,
            951_782_400,
            951_868_800,
            4_107_456_000,
            4_107_542_400,
            2_147_483_648,
            253_402_207_199,
            253_402_207_200,
            -1,
            -86_401,
            -62_135_596_800,
        ];
        // Every day of four years around a leap day, at a varying time of day, and a spread
        // over the whole range.
        seconds.extend((0..4 * 366).map(|d| 946_684_800 + d * 86_400 + d * 3_607 % 86_400));
        seconds.extend((0..2_000).map(|i| i * 126_701_100));
        for s in seconds {
            let t = jiff::Timestamp::from_second(s).unwrap();
            assert_eq!(rfc3339_seconds(t), strftime(t), "{s}");
        }
        assert_eq!(now_rfc3339().len(), 20);
    }
}
