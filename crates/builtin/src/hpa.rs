//! `autoscaling/v1` and `autoscaling/v2` `HorizontalPodAutoscalers` are one resource stored once,
//! at v2 (upstream's storage version), and converted as `pkg/apis/autoscaling/v1/conversion.go`
//! converts them through the internal type: v1's `targetCPUUtilizationPercentage` is v2's CPU
//! utilization metric, and what v1 cannot say travels in annotations — the other metrics
//! (`autoscaling.alpha.kubernetes.io/metrics`), the current metrics (`.../current-metrics`), the
//! conditions (`.../conditions`) and the behavior (`.../behavior`), in v1's metric shapes
//! (`metricName`, `targetAverageValue`, ...). A v1 object without a CPU target and without
//! other metrics gets the controller's old implicit default, 80%.

use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// The v2 metric types and the field holding each one's source.
const SOURCES: &[(&str, &str)] = &[
    ("Resource", "resource"),
    ("ContainerResource", "containerResource"),
    ("Pods", "pods"),
    ("Object", "object"),
    ("External", "external"),
];

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// Inserts `key: value` when `value` is there.
fn put(m: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(v) = value {
        m.insert(key.into(), v.clone());
    }
}

fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && field(
            metric.pointer("/resource/target").unwrap_or(&Value::Null),
            "averageUtilization",
        )
        .is_some()
}

/// A v2 `MetricSpec` (or `MetricStatus`, `status` true) in v1's shape.
fn metric_to_v1(m: &Value, status: bool) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    let Some((_, key)) = SOURCES.iter().find(|(t, _)| *t == kind) else {
        return Value::Object(out);
    };
    let src = m.get(*key).cloned().unwrap_or(Value::Null);
    let (values, prefix) = if status {
        (
            src.get("current").cloned().unwrap_or(Value::Null),
            "current",
        )
    } else {
        (src.get("target").cloned().unwrap_or(Value::Null), "target")
    };
    let mut s = Map::new();
    match kind {
        "Resource" | "ContainerResource" => {
            put(&mut s, "name", field(&src, "name"));
            put(&mut s, "container", field(&src, "container"));
            let (util, avg) = if status {
                ("currentAverageUtilization", "currentAverageValue")
            } else {
                ("targetAverageUtilization", "targetAverageValue")
            };
            put(&mut s, util, field(&values, "averageUtilization"));
            put(&mut s, avg, field(&values, "averageValue"));
        }
        "Pods" => {
            put(&mut s, "metricName", src.pointer("/metric/name"));
            put(&mut s, "selector", src.pointer("/metric/selector"));
            put(
                &mut s,
                &format!("{prefix}AverageValue"),
                field(&values, "averageValue"),
            );
        }
        "Object" => {
            put(&mut s, "target", field(&src, "describedObject"));
            put(&mut s, "metricName", src.pointer("/metric/name"));
            put(&mut s, "selector", src.pointer("/metric/selector"));
            put(&mut s, &format!("{prefix}Value"), field(&values, "value"));
            put(&mut s, "averageValue", field(&values, "averageValue"));
        }
        _ => {
            put(&mut s, "metricName", src.pointer("/metric/name"));
            put(&mut s, "metricSelector", src.pointer("/metric/selector"));
            put(&mut s, &format!("{prefix}Value"), field(&values, "value"));
            put(
                &mut s,
                &format!("{prefix}AverageValue"),
                field(&values, "averageValue"),
            );
        }
    }
    out.insert((*key).into(), Value::Object(s));
    Value::Object(out)
}

/// A v1 `MetricSpec` (or `MetricStatus`) in v2's shape.
fn metric_to_v2(m: &Value, status: bool) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    let Some((_, key)) = SOURCES.iter().find(|(t, _)| *t == kind) else {
        return Value::Object(out);
    };
    let src = m.get(*key).cloned().unwrap_or(Value::Null);
    let prefix = if status { "current" } else { "target" };
    let mut s = Map::new();
    let mut values = Map::new();
    let mut metric = Map::new();
    match kind {
        "Resource" | "ContainerResource" => {
            put(&mut s, "name", field(&src, "name"));
            put(&mut s, "container", field(&src, "container"));
            let util = field(&src, &format!("{prefix}AverageUtilization"));
            put(&mut values, "averageUtilization", util);
            put(
                &mut values,
                "averageValue",
                field(&src, &format!("{prefix}AverageValue")),
            );
            if !status {
                let t = if util.is_some() {
                    "Utilization"
                } else {
                    "AverageValue"
                };
                values.insert("type".into(), json!(t));
            }
        }
        "Pods" => {
            put(&mut metric, "name", field(&src, "metricName"));
            put(&mut metric, "selector", field(&src, "selector"));
            put(
                &mut values,
                "averageValue",
                field(&src, &format!("{prefix}AverageValue")),
            );
            if !status {
                values.insert("type".into(), json!("AverageValue"));
            }
        }
        "Object" => {
            put(&mut s, "describedObject", field(&src, "target"));
            put(&mut metric, "name", field(&src, "metricName"));
            put(&mut metric, "selector", field(&src, "selector"));
            put(&mut values, "value", field(&src, &format!("{prefix}Value")));
            let avg = field(&src, "averageValue");
            put(&mut values, "averageValue", avg);
            if !status {
                let t = if avg.is_some() {
                    "AverageValue"
                } else {
                    "Value"
                };
                values.insert("type".into(), json!(t));
            }
        }
        _ => {
            put(&mut metric, "name", field(&src, "metricName"));
            put(&mut metric, "selector", field(&src, "metricSelector"));
            put(&mut values, "value", field(&src, &format!("{prefix}Value")));
            let avg = field(&src, &format!("{prefix}AverageValue"));
            put(&mut values, "averageValue", avg);
            if !status {
                let t = if avg.is_some() {
                    "AverageValue"
                } else {
                    "Value"
                };
                values.insert("type".into(), json!(t));
            }
        }
    }
    if !metric.is_empty() {
        s.insert("metric".into(), Value::Object(metric));
    }
    s.insert(prefix.into(), Value::Object(values));
    out.insert((*key).into(), Value::Object(s));
    Value::Object(out)
}

/// The annotations map of `obj`, created when missing.
fn annotations(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()?
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// A stored (v2) `HorizontalPodAutoscaler` as `autoscaling/v1` serves it.
pub fn to_v1(v2: &Value) -> Value {
    let mut out = v2.clone();
    let spec = v2.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = v2.get("status").cloned();
    let metrics: Vec<Value> = spec
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut v1_spec = Map::new();
    for k in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        put(&mut v1_spec, k, field(&spec, k));
    }
    // The first CPU resource metric gives the target, if it is a utilization.
    if let Some(cpu) = metrics.iter().find(|m| {
        m.get("type").and_then(Value::as_str) == Some("Resource")
            && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
    }) && let Some(u) = cpu.pointer("/resource/target/averageUtilization")
        && !u.is_null()
    {
        v1_spec.insert("targetCPUUtilizationPercentage".into(), u.clone());
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(|m| metric_to_v1(m, false))
        .collect();
    let mut v1_status = Map::new();
    let current: Vec<Value> = status
        .as_ref()
        .and_then(|s| s.get("currentMetrics"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let conditions = status
        .as_ref()
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(st) = &status {
        for k in ["observedGeneration", "lastScaleTime"] {
            put(&mut v1_status, k, field(st, k));
        }
        for k in ["currentReplicas", "desiredReplicas"] {
            v1_status.insert(k.into(), st.get(k).cloned().unwrap_or(json!(0)));
        }
        for m in &current {
            if m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
                && let Some(u) = m.pointer("/resource/current/averageUtilization")
                && !u.is_null()
            {
                v1_status.insert("currentCPUUtilizationPercentage".into(), u.clone());
            }
        }
    }
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), json!("autoscaling/v1"));
        m.insert("spec".into(), Value::Object(v1_spec));
        if status.is_some() {
            m.insert("status".into(), Value::Object(v1_status));
        }
    }
    let encode = |items: Vec<Value>| Value::String(Value::Array(items).to_string());
    let mut extra: Vec<(&str, Value)> = Vec::new();
    if !others.is_empty() {
        extra.push((METRICS, encode(others)));
    }
    if !current.is_empty() {
        let current = current.iter().map(|m| metric_to_v1(m, true)).collect();
        extra.push((CURRENT_METRICS, encode(current)));
    }
    if !conditions.is_empty() {
        extra.push((CONDITIONS, encode(conditions)));
    }
    if let Some(b) = field(&spec, "behavior") {
        extra.push((BEHAVIOR, Value::String(b.to_string())));
    }
    if !extra.is_empty()
        && let Some(a) = annotations(&mut out)
    {
        for (k, v) in extra {
            a.insert(k.into(), v);
        }
    }
    out
}

/// An `autoscaling/v1` `HorizontalPodAutoscaler` as it is stored (v2).
pub fn to_v2(v1: &Value) -> Value {
    let mut out = v1.clone();
    let spec = v1.get("spec").cloned().unwrap_or_else(|| json!({}));
    let taken = |key: &str| -> Option<Vec<Value>> {
        let text = v1.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))?;
        serde_json::from_str(text.as_str()?).ok()
    };
    let mut v2_spec = Map::new();
    for k in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        put(&mut v2_spec, k, field(&spec, k));
    }
    let mut metrics: Vec<Value> = taken(METRICS)
        .unwrap_or_default()
        .iter()
        .map(|m| metric_to_v2(m, false))
        .collect();
    if let Some(cpu) = field(&spec, "targetCPUUtilizationPercentage") {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if metrics.is_empty() {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    let behavior = v1
        .pointer(&format!(
            "/metadata/annotations/{}",
            BEHAVIOR.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Value>(t).ok());
    put(&mut v2_spec, "behavior", behavior.as_ref());
    let status = v1.get("status").cloned();
    let mut v2_status = Map::new();
    if let Some(st) = &status {
        for k in ["observedGeneration", "lastScaleTime", "currentReplicas"] {
            put(&mut v2_status, k, field(st, k));
        }
        v2_status.insert(
            "desiredReplicas".into(),
            st.get("desiredReplicas").cloned().unwrap_or(json!(0)),
        );
        let current = match taken(CURRENT_METRICS) {
            Some(list) => list.iter().map(|m| metric_to_v2(m, true)).collect(),
            None => field(st, "currentCPUUtilizationPercentage")
                .map(|u| {
                    vec![json!({"type": "Resource", "resource": {"name": "cpu",
                        "current": {"averageUtilization": u}}})]
                })
                .unwrap_or_default(),
        };
        if !current.is_empty() {
            v2_status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = taken(CONDITIONS) {
            v2_status.insert("conditions".into(), Value::Array(c));
        }
    }
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), json!("autoscaling/v2"));
        m.insert("spec".into(), Value::Object(v2_spec));
        if status.is_some() {
            m.insert("status".into(), Value::Object(v2_status));
        }
    }
    if let Some(a) = out
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for k in [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR] {
            a.remove(k);
        }
        if a.is_empty()
            && let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("annotations");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Data-driven cases from upstream's conversion: (v1, v2) pairs that convert into each
    /// other.
    #[test]
    fn v1_and_v2_convert_as_upstream() {
        let cases = [
            // `kubectl autoscale`: a CPU target.
            (
                json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "web"},
                    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
                    "status": {"currentReplicas": 0, "desiredReplicas": 0}}),
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "web"},
                    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "minReplicas": 1, "maxReplicas": 5, "metrics": [{"type": "Resource",
                            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]},
                    "status": {"currentReplicas": 0, "desiredReplicas": 0}}),
            ),
            // Other metrics, current metrics and the behavior travel in annotations.
            (
                json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "web", "annotations": {
                        METRICS: r#"[{"type":"Pods","pods":{"metricName":"rps","targetAverageValue":"10"}}]"#,
                        CURRENT_METRICS: r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"100m"}}]"#,
                        BEHAVIOR: r#"{"scaleDown":{"selectPolicy":"Max"}}"#}},
                    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                        "targetCPUUtilizationPercentage": 70},
                    "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 40}}),
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "web"},
                    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                        "metrics": [
                            {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
                        "behavior": {"scaleDown": {"selectPolicy": "Max"}}},
                    "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [
                        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40, "averageValue": "100m"}}}]}}),
            ),
        ];
        for (v1, v2) in cases {
            assert_eq!(to_v2(&v1), v2, "{v1}");
            assert_eq!(to_v2(&to_v1(&v2)), v2, "round trip of {v2}");
        }
        // Without a target or other metrics, v1 means the old implicit 80%.
        let bare = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
        assert_eq!(
            to_v2(&bare)["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert_eq!(
            to_v1(&to_v2(&bare))["spec"]["targetCPUUtilizationPercentage"],
            80
        );
    }
}
