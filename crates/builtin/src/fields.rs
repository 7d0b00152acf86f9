//! Field selectors of the built-in kinds: the value of each field label upstream's
//! `*ToSelectableFields` functions expose, after the field label conversion functions
//! accepted the label (`Kind::field_labels`).

use serde_json::Value;

use crate::{Kind, KindId};

fn s(obj: &Value, ptr: &str) -> String {
    match obj.pointer(ptr) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

impl Kind {
    /// The value of field label `field` on `obj` (in this kind's own shape), or `None` when
    /// this kind does not support the label (upstream answers 400
    /// `field label not supported: <field>`).
    pub fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "metadata.name" => return Some(s(obj, "/metadata/name")),
            "metadata.namespace" if self.namespaced() => {
                return Some(s(obj, "/metadata/namespace"));
            }
            _ => {}
        }
        if !self.field_labels.contains(&field) {
            return None;
        }
        let v = match (self.id, field) {
            (KindId::Pod, "spec.hostNetwork") | (KindId::Node, "spec.unschedulable") => {
                let b = obj
                    .pointer(&format!("/{}", field.replace('.', "/")))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                b.to_string()
            }
            (KindId::Pod, "status.podIP" | "status.podIPs") => {
                // Upstream selects on the first pod IP.
                match obj.pointer("/status/podIPs/0/ip").and_then(Value::as_str) {
                    Some(ip) => ip.to_string(),
                    None => s(obj, "/status/podIP"),
                }
            }
            (KindId::Job, "status.successful") => {
                let n = obj
                    .pointer("/status/succeeded")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                n.to_string()
            }
            (KindId::ReplicaSet | KindId::ReplicationController, "status.replicas") => {
                let n = obj
                    .pointer("/status/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                n.to_string()
            }
            (KindId::Event, "source") => s(obj, "/source/component"),
            (KindId::EventsV1Event, "deprecatedSource") => s(obj, "/deprecatedSource/component"),
            _ => s(obj, &format!("/{}", field.replace('.', "/"))),
        };
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{KindId, get};

    #[test]
    fn field_values_follow_upstream_selectable_fields() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "serviceAccountName": "sa"},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}});
        let secret =
            json!({"metadata": {"name": "s", "namespace": "ns"}, "type": "kubernetes.io/tls"});
        let event = json!({"metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u1", "apiVersion": "v1"},
            "reason": "Started", "source": {"component": "kubelet", "host": "n1"}, "type": "Normal",
            "reportingComponent": "kubelet"});
        let ev1 = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Pod", "name": "p"},
            "deprecatedSource": {"component": "kubelet"}, "reportingController": "kubelet"});
        let rs = json!({"metadata": {"name": "r"}, "status": {"replicas": 3}});
        let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 1}});
        let cm = json!({"metadata": {"name": "c", "namespace": "ns"}});
        let node = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
        let cases: &[(KindId, &serde_json::Value, &str, Option<&str>)] = &[
            (KindId::Pod, &pod, "metadata.name", Some("p")),
            (KindId::Pod, &pod, "metadata.namespace", Some("ns")),
            (KindId::Pod, &pod, "spec.nodeName", Some("n1")),
            (KindId::Pod, &pod, "spec.restartPolicy", Some("Always")),
            (
                KindId::Pod,
                &pod,
                "spec.schedulerName",
                Some("default-scheduler"),
            ),
            (KindId::Pod, &pod, "spec.serviceAccountName", Some("sa")),
            (KindId::Pod, &pod, "spec.hostNetwork", Some("false")),
            (KindId::Node, &node, "spec.unschedulable", Some("true")),
            (
                KindId::Node,
                &json!({}),
                "spec.unschedulable",
                Some("false"),
            ),
            (KindId::Node, &node, "metadata.namespace", None),
            (KindId::Pod, &pod, "status.phase", Some("Running")),
            (KindId::Pod, &pod, "status.podIP", Some("10.0.0.1")),
            (KindId::Pod, &pod, "status.nominatedNodeName", Some("")),
            (KindId::Pod, &pod, "spec.containers", None),
            (KindId::Secret, &secret, "type", Some("kubernetes.io/tls")),
            (KindId::Event, &event, "involvedObject.kind", Some("Pod")),
            (KindId::Event, &event, "involvedObject.uid", Some("u1")),
            (KindId::Event, &event, "involvedObject.fieldPath", Some("")),
            (KindId::Event, &event, "source", Some("kubelet")),
            (KindId::Event, &event, "reportingComponent", Some("kubelet")),
            (KindId::Event, &event, "type", Some("Normal")),
            (KindId::EventsV1Event, &ev1, "regarding.name", Some("p")),
            (
                KindId::EventsV1Event,
                &ev1,
                "deprecatedSource",
                Some("kubelet"),
            ),
            (
                KindId::EventsV1Event,
                &ev1,
                "reportingController",
                Some("kubelet"),
            ),
            (KindId::EventsV1Event, &ev1, "involvedObject.name", None),
            (KindId::ReplicaSet, &rs, "status.replicas", Some("3")),
            (KindId::Job, &job, "status.successful", Some("1")),
            (KindId::ConfigMap, &cm, "data", None),
        ];
        for (id, obj, field, want) in cases {
            assert_eq!(
                get(*id).field_value(obj, field).as_deref(),
                *want,
                "{id:?} {field}"
            );
            assert_eq!(
                get(*id).supports_field(field),
                want.is_some(),
                "{id:?} {field}"
            );
        }
    }
}
