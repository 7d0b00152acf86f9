//! The protobuf bodies the server reads. kubectl sends `kubectl create namespace|configmap|
//! secret|serviceaccount|deployment|job|cronjob|service|ingress|poddisruptionbudget|role|
//! clusterrole|rolebinding|clusterrolebinding|token` and `kubectl auth can-i|whoami` as
//! `application/vnd.kubernetes.protobuf` only. The envelope is the magic `k8s\0` followed by a
//! `runtime.Unknown` whose `raw` field holds the object, read by its kind's table
//! ([`kinds`], [`table`]) into the JSON Go would encode. Responses are always JSON, which
//! kubectl accepts.

use prost::Message;
use serde_json::{Map, Value};

mod kinds;
mod table;

const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

/// Opens the envelope: checks the magic and the type meta (any version when
/// `want_api_version` is `None`), returns the raw object bytes.
fn open(body: &[u8], want_api_version: Option<&str>, want_kind: &str) -> Result<Vec<u8>, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let unknown = Unknown::decode(rest).map_err(|e| e.to_string())?;
    let tm = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
    );
    if want_api_version.is_some_and(|v| v != api_version) || kind != want_kind {
        return Err(format!("unexpected object {api_version}, Kind={kind}"));
    }
    Ok(unknown.raw.unwrap_or_default())
}

/// Reads a body of `api_version`/`kind` with its table into a JSON object.
fn decode(
    body: &[u8],
    api_version: &str,
    kind: &str,
    msg: &'static table::Msg,
) -> Result<Value, String> {
    let raw = open(body, Some(api_version), kind)?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from(api_version));
    out.insert("kind".into(), Value::from(kind));
    out.extend(table::decode(msg, &raw)?);
    Ok(Value::Object(out))
}

/// Decodes a protobuf `DeleteOptions` body into its JSON form. client-go (and so
/// controller-runtime's typed client) sends one with every DELETE of a built-in object, typed
/// with the resource's group version (`v1`, `apps/v1`, ...), so any version is taken.
pub fn decode_delete_options(body: &[u8]) -> Result<Value, String> {
    let raw = open(body, None, "DeleteOptions")?;
    Ok(Value::Object(table::decode(&kinds::DELETE_OPTIONS, &raw)?))
}

/// Whether a body is in the protobuf envelope.
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Decodes a protobuf-encoded `v1.Namespace` into its JSON form.
pub fn decode_namespace(body: &[u8]) -> Result<Value, String> {
    decode(body, "v1", "Namespace", &kinds::NAMESPACE)
}

/// Decodes a protobuf body of a built-in kind this server reads as protobuf (see the module
/// docs); `None` for kinds it reads only as JSON or YAML.
pub fn decode_builtin(body: &[u8], api_version: &str, kind: &str) -> Option<Result<Value, String>> {
    let msg = kinds::of(api_version, kind)?;
    Some(decode(body, api_version, kind, msg))
}

/// Decodes a protobuf `/status` write of a kind whose status the tables read (the apps
/// workloads and Jobs); `None` for other kinds.
pub fn decode_builtin_status(
    body: &[u8],
    api_version: &str,
    kind: &str,
) -> Option<Result<Value, String>> {
    let msg = kinds::with_status(api_version, kind)?;
    Some(decode(body, api_version, kind, msg))
}

/// Whether the table of `api_version`/`kind` skips the object's status (read for
/// well-formedness only): such a body cannot be a `/status` write.
pub fn skips_status(api_version: &str, kind: &str) -> bool {
    kinds::of(api_version, kind).is_some_and(|m| {
        m.fields
            .iter()
            .any(|f| f.json == "status" && matches!(f.ty, table::Ty::Ignored))
    })
}

/// The reviews and token requests kubectl sends as protobuf (`auth can-i`, `auth can-i
/// --list`, `auth whoami`, `create token`), as JSON objects; `None` for other kinds.
pub fn decode_review(body: &[u8], api_version: &str, kind: &str) -> Option<Result<Value, String>> {
    let msg = kinds::review(api_version, kind)?;
    Some(decode(body, api_version, kind, msg))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A length-delimited protobuf field.
    fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![tag << 3 | 2, u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), field(1, &type_meta), field(2, raw)].concat()
    }

    fn varint(tag: u8, mut v: u64) -> Vec<u8> {
        let mut out = vec![tag << 3];
        loop {
            let byte = u8::try_from(v & 0x7f).unwrap();
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    /// What leader election and event recorders send: a Lease with micro-times, core and
    /// events.k8s.io Events.
    #[test]
    fn decodes_leases_and_events() {
        let micro = [varint(1, 1_700_000_000), varint(2, 123_456_000)].concat();
        let meta = field(1, &field(1, b"leader"));
        let spec = [
            field(1, b"pod-a"),
            varint(2, 15),
            field(4, &micro),
            varint(5, 2),
        ]
        .concat();
        let lease = envelope(
            "coordination.k8s.io/v1",
            "Lease",
            &[meta.clone(), field(2, &spec)].concat(),
        );
        assert_eq!(
            decode_builtin(&lease, "coordination.k8s.io/v1", "Lease")
                .unwrap()
                .unwrap(),
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": "leader"},
                   "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
                            "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 2}})
        );
        let involved = [field(1, b"Widget"), field(3, b"w1")].concat();
        let event = [
            meta,
            field(2, &involved),
            field(3, b"Created"),
            field(5, &field(1, b"widget-controller")),
            varint(8, 1),
            field(9, b"Normal"),
        ]
        .concat();
        assert_eq!(
            decode_builtin(&envelope("v1", "Event", &event), "v1", "Event")
                .unwrap()
                .unwrap(),
            json!({"apiVersion": "v1", "kind": "Event",
                   "metadata": {"name": "leader"},
                   "involvedObject": {"kind": "Widget", "name": "w1"}, "reason": "Created",
                   "source": {"component": "widget-controller"}, "count": 1, "type": "Normal"})
        );
    }

    /// What controller-runtime's typed client sends for a test's Node (status included: a
    /// node's create keeps it), and the Eviction `kubectl drain` sends.
    #[test]
    fn decodes_nodes_and_evictions() {
        let meta = field(1, &field(1, b"n1"));
        let taint = [
            field(1, b"dedicated"),
            field(2, b"gpu"),
            field(3, b"NoSchedule"),
        ]
        .concat();
        let spec = [field(7, b"10.0.0.0/24"), varint(4, 1), field(5, &taint)].concat();
        let quantity = |q: &[u8]| field(2, &field(1, q));
        let capacity = [field(1, b"cpu"), quantity(b"4")].concat();
        let condition = [field(1, b"Ready"), field(2, b"True")].concat();
        let address = [field(1, b"InternalIP"), field(2, b"10.0.0.5")].concat();
        let endpoints = field(1, &varint(1, 10250));
        let info = [field(7, b"v1.32.0"), field(10, b"amd64")].concat();
        let status = [
            field(1, &capacity),
            field(4, &condition),
            field(5, &address),
            field(6, &endpoints),
            field(7, &info),
        ]
        .concat();
        // Longer than 127 bytes: lengths as varints.
        let type_meta = [field(1, b"v1"), field(2, b"Node")].concat();
        let raw = [meta, field(2, &spec), field_n(3, &status)].concat();
        let node = [MAGIC.to_vec(), field(1, &type_meta), field_n(2, &raw)].concat();
        assert_eq!(
            decode_builtin(&node, "v1", "Node").unwrap().unwrap(),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                   "spec": {"podCIDRs": ["10.0.0.0/24"], "unschedulable": true,
                            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
                   "status": {"capacity": {"cpu": "4"},
                              "conditions": [{"type": "Ready", "status": "True"}],
                              "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                              "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                              "nodeInfo": {"kubeletVersion": "v1.32.0", "architecture": "amd64"}}})
        );
        assert!(!skips_status("v1", "Node"));
        let options = [varint(1, 0), field(5, b"All")].concat();
        let eviction = envelope(
            "policy/v1",
            "Eviction",
            &[field(1, &field(1, b"p")), field(2, &options)].concat(),
        );
        assert_eq!(
            decode_review(&eviction, "policy/v1", "Eviction")
                .unwrap()
                .unwrap(),
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"},
                   "deleteOptions": {"gracePeriodSeconds": 0, "dryRun": ["All"]}})
        );
    }

    /// A length-delimited field of any tag (the key as a varint).
    fn field_n(tag: u64, bytes: &[u8]) -> Vec<u8> {
        let mut key = varint(0, (tag << 3) | 2);
        key.remove(0);
        let mut len = varint(0, u64::try_from(bytes.len()).unwrap());
        len.remove(0);
        [key, len, bytes.to_vec()].concat()
    }

    /// A pod spec with what operators' workloads carry: a config map volume
    /// (inline reference), a projected token, and node affinity.
    #[test]
    fn decodes_pod_volumes_and_affinity() {
        let config_map = [field(1, &field(1, b"settings")), varint(3, 420)].concat();
        let token = field(4, &[field(1, b"vault"), field(3, b"token")].concat());
        let volumes = [
            field(
                1,
                &[field(1, b"cfg"), field(2, &field_n(19, &config_map))].concat(),
            ),
            field(
                1,
                &[field(1, b"tok"), field(2, &field_n(26, &field(1, &token)))].concat(),
            ),
        ]
        .concat();
        let requirement = [field(1, b"zone"), field(2, b"In"), field(3, b"a")].concat();
        let term = field(1, &field(1, &requirement));
        let affinity = field(1, &field(1, &term));
        let container = [field(1, b"c"), field(2, b"nginx")].concat();
        let spec = [volumes, field(2, &container), field_n(18, &affinity)].concat();
        let pod = envelope(
            "v1",
            "Pod",
            &[field(1, &field(1, b"p")), field(2, &spec)].concat(),
        );
        assert_eq!(
            decode_builtin(&pod, "v1", "Pod").unwrap().unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"volumes": [
                        {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}},
                        {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"audience": "vault", "path": "token"}}]}}],
                    "containers": [{"name": "c", "image": "nginx"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}})
        );
    }

    /// client-go's DELETE body: `DeleteOptions` typed with the resource's group version.
    #[test]
    fn decodes_delete_options_of_any_group_version() {
        let preconditions = [field(1, b"uid-1"), field(2, b"42")].concat();
        let raw = [
            vec![1 << 3, 30],
            field(2, &preconditions),
            field(4, b"Foreground"),
            field(5, b"All"),
        ]
        .concat();
        for api_version in ["v1", "apps/v1"] {
            let body = envelope(api_version, "DeleteOptions", &raw);
            assert!(is_protobuf(&body));
            assert_eq!(
                decode_delete_options(&body).unwrap(),
                json!({"gracePeriodSeconds": 30, "preconditions": {"uid": "uid-1", "resourceVersion": "42"},
                       "propagationPolicy": "Foreground", "dryRun": ["All"]})
            );
        }
        let wrong = envelope("v1", "ConfigMap", &raw);
        assert!(decode_delete_options(&wrong).is_err());
    }

    #[test]
    fn decodes_kubectl_create_namespace() {
        // The exact bytes kubectl 1.32 sends for `kubectl create namespace probe-ns`.
        let bytes = hex(
            "6b3873000a0f0a02763112094e616d65737061636512200a180a0870726f62652d6e7312001a00220\
             02a0032003800420012001a020a001a002200",
        );
        assert_eq!(
            decode_namespace(&bytes).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "probe-ns", "creationTimestamp": null}, "spec": {}})
        );
    }

    #[test]
    fn decodes_kubectl_create_configmap_and_serviceaccount() {
        // The exact bytes kubectl 1.32 sends for `kubectl create configmap x --from-literal=a=b`
        // and `kubectl create sa s`.
        let cm = b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1b\n\x11\n\x01x\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x06\n\x01a\x12\x01b\x1a\x00\"\x00";
        assert_eq!(
            decode_builtin(cm, "v1", "ConfigMap").unwrap().unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "x", "creationTimestamp": null}, "data": {"a": "b"}})
        );
        let sa = b"k8s\x00\n\x14\n\x02v1\x12\x0eServiceAccount\x12\x13\n\x11\n\x01s\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x1a\x00\"\x00";
        assert_eq!(
            decode_builtin(sa, "v1", "ServiceAccount").unwrap().unwrap(),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "s", "creationTimestamp": null}})
        );
        assert!(decode_builtin(cm, "v1", "Secret").unwrap().is_err());
        assert!(decode_builtin(cm, "v1", "Endpoints").is_none());
    }

    #[test]
    fn decodes_rbac_kinds_and_deployments() {
        let meta = field(1, &field(1, b"b"));
        let subject = [
            field(1, b"User"),
            field(2, b"rbac.authorization.k8s.io"),
            field(3, b"jane"),
            field(4, b""),
        ]
        .concat();
        let role_ref = [
            field(1, b"rbac.authorization.k8s.io"),
            field(2, b"ClusterRole"),
            field(3, b"edit"),
        ]
        .concat();
        let raw = [meta.clone(), field(2, &subject), field(3, &role_ref)].concat();
        let api = "rbac.authorization.k8s.io/v1";
        assert_eq!(
            decode_builtin(&envelope(api, "RoleBinding", &raw), api, "RoleBinding")
                .unwrap()
                .unwrap(),
            json!({"apiVersion": api, "kind": "RoleBinding", "metadata": {"name": "b"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}})
        );
        // A Deployment as `kubectl create deployment web --image=nginx --replicas=0` sends it:
        // replicas 0 (a pointer) stays, the empty strategy and resources are written.
        let container = [
            field(1, b"nginx"),
            field(2, b"nginx"),
            field(8, b""),
            field(13, b""),
        ]
        .concat();
        let labels = field(11, &[field(1, b"app"), field(2, b"web")].concat());
        let template = [field(1, &labels), field(2, &field(2, &container))].concat();
        let selector = field(1, &[field(1, b"app"), field(2, b"web")].concat());
        let spec = [
            vec![0x08, 0x00],
            field(2, &selector),
            field(3, &template),
            field(4, b""),
        ]
        .concat();
        let raw = [
            field(1, &[field(1, b"web"), labels.clone()].concat()),
            field(2, &spec),
            field(3, &[0x08, 0x00]),
        ]
        .concat();
        assert_eq!(
            decode_builtin(
                &envelope("apps/v1", "Deployment", &raw),
                "apps/v1",
                "Deployment"
            )
            .unwrap()
            .unwrap(),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "labels": {"app": "web"}},
                   "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                            "strategy": {}}})
        );
        // A field the tables do not read, set: refused by name, not dropped.
        let raw = [meta, field(2, &field(8, &field(1, b"x")))].concat();
        let err = decode_builtin(
            &envelope("apps/v1", "Deployment", &raw),
            "apps/v1",
            "Deployment",
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(
            err,
            "protobuf field 8 of v1.DeploymentSpec is not read by this server (send the object as JSON or YAML)"
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode_namespace(b"nope").is_err());
        assert!(decode_namespace(b"k8s\0\xff\xff\xff").is_err());
    }
}
