//! `events.k8s.io/v1` Events and core/v1 Events are one resource stored once, as core events
//! at `/registry/events/<namespace>/<name>` (upstream's events REST serves both groups from
//! the internal core Event). These are the two shapes' conversions, field by field as
//! upstream's `pkg/apis/events/v1` conversion does them:
//! `note`↔`message`, `regarding`↔`involvedObject`, `deprecatedSource`↔`source`,
//! `deprecatedFirstTimestamp`↔`firstTimestamp`, `deprecatedLastTimestamp`↔`lastTimestamp`,
//! `deprecatedCount`↔`count`, `reportingController`↔`reportingComponent`; `eventTime`,
//! `series`, `related`, `action`, `reason`, `type`, `reportingInstance` and `metadata` are the
//! same in both. Zero values are written the way Go serializes them (`{}` for the reference
//! and source structs, `null` for unset times, `""` for the reporting strings of core events).

use serde_json::{Map, Value, json};

/// Field renames, events.k8s.io/v1 name first.
const RENAMES: &[(&str, &str)] = &[
    ("note", "message"),
    ("regarding", "involvedObject"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// Fields with the same name in both shapes.
const SHARED: &[&str] = &[
    "metadata",
    "eventTime",
    "series",
    "related",
    "action",
    "reason",
    "type",
    "reportingInstance",
];

fn convert(obj: &Value, to_core: bool) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    if to_core {
        out.insert("kind".into(), json!("Event"));
        out.insert("apiVersion".into(), json!("v1"));
    } else {
        out.insert("kind".into(), json!("Event"));
        out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    }
    for k in SHARED {
        if let Some(v) = m.get(*k) {
            out.insert((*k).into(), v.clone());
        }
    }
    for (v1, core) in RENAMES {
        let (from, to) = if to_core { (v1, core) } else { (core, v1) };
        if let Some(v) = m.get(*from) {
            out.insert((*to).into(), v.clone());
        }
    }
    // Go's zero values as the other shape serializes them.
    if to_core {
        add_core_zeros(&mut out);
    } else {
        out.entry("eventTime").or_insert(Value::Null);
    }
    if !to_core {
        // events.k8s.io/v1 omits empty strings and zero counts (`omitempty`).
        for k in ["deprecatedCount"] {
            if out.get(k).and_then(Value::as_i64) == Some(0) {
                out.remove(k);
            }
        }
        for k in [
            "reportingController",
            "reportingInstance",
            "note",
            "action",
            "reason",
            "type",
        ] {
            if out.get(k).and_then(Value::as_str) == Some("") {
                out.remove(k);
            }
        }
    }
    Value::Object(out)
}

/// An `events.k8s.io/v1` Event in core/v1 shape (what is stored).
pub fn to_core(obj: &Value) -> Value {
    convert(obj, true)
}

/// A core/v1 Event in `events.k8s.io/v1` shape (what an events.k8s.io client reads).
pub fn from_core(obj: &Value) -> Value {
    convert(obj, false)
}

/// The fields of a core/v1 Event that Go's JSON writes even when unset (no `omitempty`, or a
/// struct or time that `omitempty` does not drop): empty `involvedObject` and `source`, `null`
/// times and empty reporting strings, as an Event written through `/api/v1` reads back upstream.
pub fn core_zero_values(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        add_core_zeros(m);
    }
}

fn add_core_zeros(out: &mut serde_json::Map<String, Value>) {
    let zeros = [
        ("involvedObject", json!({})),
        ("source", json!({})),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
        ("eventTime", Value::Null),
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
    ];
    for (k, v) in zeros {
        out.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_events_read_back_with_gos_zero_values() {
        let cases = [
            (
                json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "x"},
                       "reason": "R", "message": "m"}),
                json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "x"},
                       "reason": "R", "message": "m", "source": {}, "firstTimestamp": null,
                       "lastTimestamp": null, "eventTime": null, "reportingComponent": "",
                       "reportingInstance": ""}),
            ),
            (
                json!({"source": {"component": "c"}, "eventTime": "2024-01-01T00:00:00.000000Z",
                       "reportingComponent": "rc", "reportingInstance": "ri",
                       "firstTimestamp": "2024-01-01T00:00:00Z"}),
                json!({"involvedObject": {}, "source": {"component": "c"},
                       "eventTime": "2024-01-01T00:00:00.000000Z", "reportingComponent": "rc",
                       "reportingInstance": "ri", "firstTimestamp": "2024-01-01T00:00:00Z",
                       "lastTimestamp": null}),
            ),
        ];
        for (mut input, want) in cases {
            crate::get(crate::KindId::Event).apply_defaults(&mut input);
            assert_eq!(input, want);
        }
    }

    #[test]
    fn conversions_rename_fields_both_ways() {
        let v1 = json!({
            "kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e1", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2024-01-01T00:01:00.000000Z"},
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Scale", "reason": "Scaled",
            "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"},
            "related": {"kind": "ReplicaSet", "name": "web-1"},
            "note": "scaled up", "type": "Normal",
            "deprecatedSource": {"component": "ctl", "host": "h"},
            "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2024-01-01T00:01:00Z",
            "deprecatedCount": 2
        });
        let core = json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": "e1", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2024-01-01T00:01:00.000000Z"},
            "reportingComponent": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Scale", "reason": "Scaled",
            "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "default"},
            "related": {"kind": "ReplicaSet", "name": "web-1"},
            "message": "scaled up", "type": "Normal",
            "source": {"component": "ctl", "host": "h"},
            "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:01:00Z",
            "count": 2
        });
        assert_eq!(to_core(&v1), core);
        assert_eq!(from_core(&core), v1);
    }

    #[test]
    fn zero_values_are_written_as_go_serializes_them() {
        let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Started", "message": "m", "count": 1,
            "source": {"component": "kubelet"}, "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:00:00Z", "type": "Normal",
            "reportingComponent": "", "reportingInstance": ""});
        assert_eq!(
            from_core(&core),
            json!({"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": {"name": "e"},
                "eventTime": null, "reason": "Started", "type": "Normal",
                "regarding": {"kind": "Pod", "name": "p"}, "note": "m", "deprecatedCount": 1,
                "deprecatedSource": {"component": "kubelet"},
                "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
                "deprecatedLastTimestamp": "2024-01-01T00:00:00Z"})
        );
        assert_eq!(
            to_core(
                &json!({"metadata": {"name": "e"}, "eventTime": "2024-01-01T00:00:00.000000Z"})
            ),
            json!({"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"},
                "eventTime": "2024-01-01T00:00:00.000000Z", "involvedObject": {}, "source": {},
                "firstTimestamp": null, "lastTimestamp": null,
                "reportingComponent": "", "reportingInstance": ""})
        );
    }
}
