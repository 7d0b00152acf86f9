//! The protobuf messages the server must read: kubectl 1.32 sends `kubectl create namespace`,
//! `create configmap`, `create secret`, `create serviceaccount` and `create role|clusterrole|
//! rolebinding|clusterrolebinding` as
//! `application/vnd.kubernetes.protobuf` only. The envelope is the magic `k8s\0` followed by a
//! `runtime.Unknown` whose `raw` field holds the object (`v1.Namespace`, `v1.ConfigMap`, ...). Responses are always JSON, which
//! kubectl accepts.

use std::collections::BTreeMap;

use base64::Engine;
use prost::Message;
use serde_json::{Value, json};

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

#[derive(Clone, PartialEq, Message)]
struct Namespace {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<NamespaceSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
    #[prost(string, repeated, tag = "14")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct Secret {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    type_: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct LocalObjectReference {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceAccount {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "3")]
    image_pull_secrets: Vec<LocalObjectReference>,
    #[prost(bool, optional, tag = "4")]
    automount_service_account_token: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    non_resource_urls: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct LabelSelectorRequirement {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(string, optional, tag = "2")]
    operator: Option<String>,
    #[prost(string, repeated, tag = "3")]
    values: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct LabelSelector {
    #[prost(btree_map = "string, string", tag = "1")]
    match_labels: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "2")]
    match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Clone, PartialEq, Message)]
struct AggregationRule {
    #[prost(message, repeated, tag = "1")]
    cluster_role_selectors: Vec<LabelSelector>,
}

/// `rbac/v1` Role and `ClusterRole` (Role has no aggregation rule).
#[derive(Clone, PartialEq, Message)]
struct RbacRole {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    rules: Vec<PolicyRule>,
    #[prost(message, optional, tag = "3")]
    aggregation_rule: Option<AggregationRule>,
}

#[derive(Clone, PartialEq, Message)]
struct Subject {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RoleRef {
    #[prost(string, optional, tag = "1")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
}

/// `rbac/v1` `RoleBinding` and `ClusterRoleBinding`.
#[derive(Clone, PartialEq, Message)]
struct RbacBinding {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    role_ref: Option<RoleRef>,
}

/// Decodes the RBAC kinds kubectl sends as protobuf (`kubectl create role|clusterrole|
/// rolebinding|clusterrolebinding`).
fn decode_rbac(raw: &[u8], out: &mut Value, kind: &str) -> Result<(), String> {
    let opt = |s: Option<String>| s.unwrap_or_default();
    if kind.ends_with("Binding") {
        let o = RbacBinding::decode(raw).map_err(|e| e.to_string())?;
        out["metadata"] = meta_json(o.metadata.unwrap_or_default());
        let subjects: Vec<Value> = o
            .subjects
            .into_iter()
            .map(|s| {
                let mut v = json!({"kind": opt(s.kind), "name": opt(s.name)});
                if let Some(g) = s.api_group.filter(|g| !g.is_empty()) {
                    v["apiGroup"] = json!(g);
                }
                if let Some(n) = s.namespace.filter(|n| !n.is_empty()) {
                    v["namespace"] = json!(n);
                }
                v
            })
            .collect();
        if !subjects.is_empty() {
            out["subjects"] = Value::from(subjects);
        }
        let r = o.role_ref.unwrap_or_default();
        out["roleRef"] =
            json!({"apiGroup": opt(r.api_group), "kind": opt(r.kind), "name": opt(r.name)});
        return Ok(());
    }
    let o = RbacRole::decode(raw).map_err(|e| e.to_string())?;
    out["metadata"] = meta_json(o.metadata.unwrap_or_default());
    let rules: Vec<Value> = o
        .rules
        .into_iter()
        .map(|r| {
            let mut v = json!({"verbs": r.verbs});
            for (k, list) in [
                ("apiGroups", r.api_groups),
                ("resources", r.resources),
                ("resourceNames", r.resource_names),
                ("nonResourceURLs", r.non_resource_urls),
            ] {
                if !list.is_empty() {
                    v[k] = json!(list);
                }
            }
            v
        })
        .collect();
    out["rules"] = Value::from(rules);
    if let Some(a) = o.aggregation_rule {
        let selectors: Vec<Value> = a
            .cluster_role_selectors
            .into_iter()
            .map(|s| {
                let mut v = json!({});
                if !s.match_labels.is_empty() {
                    v["matchLabels"] = json!(s.match_labels);
                }
                if !s.match_expressions.is_empty() {
                    let exprs: Vec<Value> = s
                        .match_expressions
                        .into_iter()
                        .map(|e| json!({"key": opt(e.key), "operator": opt(e.operator), "values": e.values}))
                        .collect();
                    v["matchExpressions"] = Value::from(exprs);
                }
                v
            })
            .collect();
        out["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
    }
    Ok(())
}

/// Opens the envelope: checks the magic and the type meta, returns the raw object bytes.
#[derive(Clone, PartialEq, Message)]
struct ResourceAttributes {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
    #[prost(string, optional, tag = "3")]
    group: Option<String>,
    #[prost(string, optional, tag = "4")]
    version: Option<String>,
    #[prost(string, optional, tag = "5")]
    resource: Option<String>,
    #[prost(string, optional, tag = "6")]
    subresource: Option<String>,
    #[prost(string, optional, tag = "7")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct NonResourceAttributes {
    #[prost(string, optional, tag = "1")]
    path: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct AccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributes>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReviewSpec {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct BoundObjectReference {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    uid: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenRequestSpec {
    #[prost(string, repeated, tag = "1")]
    audiences: Vec<String>,
    #[prost(message, optional, tag = "3")]
    bound_object_ref: Option<BoundObjectReference>,
    #[prost(int64, optional, tag = "4")]
    expiration_seconds: Option<i64>,
}

/// `metadata` (1) and a `spec` (2) of type `S`: the shape of every review kubectl sends.
#[derive(Clone, PartialEq, Message)]
struct Review<S: Message + Default + std::fmt::Debug> {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<S>,
}

/// Strings as JSON fields, leaving out empty ones (Go's `omitempty`).
fn strings(fields: &[(&str, &Option<String>)]) -> Value {
    let mut m = serde_json::Map::new();
    for (k, v) in fields {
        if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
            m.insert((*k).to_string(), Value::String(v.clone()));
        }
    }
    Value::Object(m)
}

/// The reviews and token requests kubectl sends as protobuf (`auth can-i`, `auth can-i
/// --list`, `auth whoami`, `create token`), as JSON objects; `None` for other kinds.
pub fn decode_review(body: &[u8], api_version: &str, kind: &str) -> Option<Result<Value, String>> {
    let spec = |raw: &[u8]| -> Result<Value, String> {
        let e = |e: prost::DecodeError| e.to_string();
        Ok(match kind {
            "SelfSubjectAccessReview" => {
                let r = Review::<AccessReviewSpec>::decode(raw).map_err(e)?;
                let s = r.spec.unwrap_or_default();
                let mut spec = json!({});
                if let Some(a) = s.resource_attributes {
                    spec["resourceAttributes"] = strings(&[
                        ("namespace", &a.namespace),
                        ("verb", &a.verb),
                        ("group", &a.group),
                        ("version", &a.version),
                        ("resource", &a.resource),
                        ("subresource", &a.subresource),
                        ("name", &a.name),
                    ]);
                }
                if let Some(a) = s.non_resource_attributes {
                    spec["nonResourceAttributes"] =
                        strings(&[("path", &a.path), ("verb", &a.verb)]);
                }
                spec
            }
            "SelfSubjectRulesReview" => {
                let r = Review::<RulesReviewSpec>::decode(raw).map_err(e)?;
                strings(&[("namespace", &r.spec.unwrap_or_default().namespace)])
            }
            "TokenRequest" => {
                let r = Review::<TokenRequestSpec>::decode(raw).map_err(e)?;
                let s = r.spec.unwrap_or_default();
                let mut spec = json!({"audiences": s.audiences});
                if let Some(x) = s.expiration_seconds {
                    spec["expirationSeconds"] = json!(x);
                }
                if let Some(b) = s.bound_object_ref {
                    spec["boundObjectRef"] = strings(&[
                        ("kind", &b.kind),
                        ("apiVersion", &b.api_version),
                        ("name", &b.name),
                        ("uid", &b.uid),
                    ]);
                }
                spec
            }
            // SelfSubjectReview has no spec.
            _ => Value::Null,
        })
    };
    if !matches!(
        kind,
        "SelfSubjectAccessReview" | "SelfSubjectRulesReview" | "SelfSubjectReview" | "TokenRequest"
    ) {
        return None;
    }
    Some(open(body, api_version, kind).and_then(|raw| {
        let spec = spec(&raw)?;
        let mut out = json!({"apiVersion": api_version, "kind": kind});
        if !spec.is_null() {
            out["spec"] = spec;
        }
        Ok(out)
    }))
}

fn open(body: &[u8], want_api_version: &str, want_kind: &str) -> Result<Vec<u8>, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let unknown = Unknown::decode(rest).map_err(|e| e.to_string())?;
    let tm = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
    );
    if api_version != want_api_version || kind != want_kind {
        return Err(format!("unexpected object {api_version}, Kind={kind}"));
    }
    Ok(unknown.raw.unwrap_or_default())
}

/// Decodes a protobuf-encoded `v1.Namespace` into its JSON form.
pub fn decode_namespace(body: &[u8]) -> Result<Value, String> {
    let raw = open(body, "v1", "Namespace")?;
    let ns = Namespace::decode(raw.as_slice()).map_err(|e| e.to_string())?;
    Ok(json!({"apiVersion": "v1", "kind": "Namespace",
              "metadata": meta_json(ns.metadata.unwrap_or_default()), "spec": {}}))
}

/// Decodes a protobuf body of a built-in kind kubectl sends as protobuf (`kubectl create
/// configmap|secret|serviceaccount`); `None` for kinds this server reads only as JSON or YAML.
pub fn decode_builtin(body: &[u8], api_version: &str, kind: &str) -> Option<Result<Value, String>> {
    let b64 = |v: &[u8]| base64::engine::general_purpose::STANDARD.encode(v);
    let decode = |raw: &[u8]| -> Result<Value, String> {
        let mut out = json!({"apiVersion": api_version, "kind": kind});
        match kind {
            "ConfigMap" => {
                let o = ConfigMap::decode(raw).map_err(|e| e.to_string())?;
                out["metadata"] = meta_json(o.metadata.unwrap_or_default());
                if !o.data.is_empty() {
                    out["data"] = json!(o.data);
                }
                if !o.binary_data.is_empty() {
                    let m: BTreeMap<&String, String> =
                        o.binary_data.iter().map(|(k, v)| (k, b64(v))).collect();
                    out["binaryData"] = json!(m);
                }
                if let Some(i) = o.immutable {
                    out["immutable"] = json!(i);
                }
            }
            "Secret" => {
                let o = Secret::decode(raw).map_err(|e| e.to_string())?;
                out["metadata"] = meta_json(o.metadata.unwrap_or_default());
                if !o.data.is_empty() {
                    let m: BTreeMap<&String, String> =
                        o.data.iter().map(|(k, v)| (k, b64(v))).collect();
                    out["data"] = json!(m);
                }
                if !o.string_data.is_empty() {
                    out["stringData"] = json!(o.string_data);
                }
                if let Some(t) = o.type_.filter(|t| !t.is_empty()) {
                    out["type"] = json!(t);
                }
                if let Some(i) = o.immutable {
                    out["immutable"] = json!(i);
                }
            }
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => {
                decode_rbac(raw, &mut out, kind)?;
            }
            _ => {
                let o = ServiceAccount::decode(raw).map_err(|e| e.to_string())?;
                out["metadata"] = meta_json(o.metadata.unwrap_or_default());
                if !o.image_pull_secrets.is_empty() {
                    let refs: Vec<Value> = o
                        .image_pull_secrets
                        .into_iter()
                        .map(|r| json!({"name": r.name.unwrap_or_default()}))
                        .collect();
                    out["imagePullSecrets"] = Value::from(refs);
                }
                if let Some(a) = o.automount_service_account_token {
                    out["automountServiceAccountToken"] = json!(a);
                }
            }
        }
        Ok(out)
    };
    let core = api_version == "v1" && matches!(kind, "ConfigMap" | "Secret" | "ServiceAccount");
    let rbac = api_version == "rbac.authorization.k8s.io/v1"
        && matches!(
            kind,
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        );
    if !core && !rbac {
        return None;
    }
    Some(open(body, api_version, kind).and_then(|raw| decode(&raw)))
}

fn meta_json(m: ObjectMeta) -> Value {
    let mut meta = json!({});
    for (k, v) in [
        ("name", m.name),
        ("generateName", m.generate_name),
        ("namespace", m.namespace),
    ] {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            meta[k] = Value::String(v);
        }
    }
    if !m.labels.is_empty() {
        meta["labels"] = json!(m.labels);
    }
    if !m.annotations.is_empty() {
        meta["annotations"] = json!(m.annotations);
    }
    if !m.finalizers.is_empty() {
        meta["finalizers"] = json!(m.finalizers);
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_kubectl_create_namespace() {
        // The exact bytes kubectl 1.32 sends for `kubectl create namespace probe-ns`.
        let hex = "6b3873000a0f0a02763112094e616d65737061636512200a180a0870726f62652d6e7312001a00220\
                   02a0032003800420012001a020a001a002200";
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let ns = decode_namespace(&bytes).unwrap();
        assert_eq!(
            ns,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe-ns"}, "spec": {}})
        );
    }

    #[test]
    fn decodes_kubectl_create_configmap_and_serviceaccount() {
        // The exact bytes kubectl 1.32 sends for `kubectl create configmap x --from-literal=a=b`
        // and `kubectl create sa s`.
        let cm = b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1b\n\x11\n\x01x\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x06\n\x01a\x12\x01b\x1a\x00\"\x00";
        assert_eq!(
            decode_builtin(cm, "v1", "ConfigMap").unwrap().unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}})
        );
        let sa = b"k8s\x00\n\x14\n\x02v1\x12\x0eServiceAccount\x12\x13\n\x11\n\x01s\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x1a\x00\"\x00";
        assert_eq!(
            decode_builtin(sa, "v1", "ServiceAccount").unwrap().unwrap(),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s"}})
        );
        assert!(decode_builtin(cm, "v1", "Secret").unwrap().is_err());
        assert!(decode_builtin(cm, "apps/v1", "Deployment").is_none());
    }

    #[test]
    fn decodes_kubectl_create_rolebinding_and_clusterrole() {
        let binding = RbacBinding {
            metadata: Some(ObjectMeta {
                name: Some("b".into()),
                ..Default::default()
            }),
            subjects: vec![Subject {
                kind: Some("User".into()),
                api_group: Some("rbac.authorization.k8s.io".into()),
                name: Some("jane".into()),
                namespace: None,
            }],
            role_ref: Some(RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: Some("ClusterRole".into()),
                name: Some("edit".into()),
            }),
        };
        let wrap = |kind: &str, raw: Vec<u8>| {
            let mut body = MAGIC.to_vec();
            Unknown {
                type_meta: Some(TypeMeta {
                    api_version: Some("rbac.authorization.k8s.io/v1".into()),
                    kind: Some(kind.into()),
                }),
                raw: Some(raw),
            }
            .encode(&mut body)
            .unwrap();
            body
        };
        let v = decode_builtin(
            &wrap("RoleBinding", binding.encode_to_vec()),
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "b"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}})
        );
        let role = RbacRole {
            metadata: Some(ObjectMeta {
                name: Some("r".into()),
                ..Default::default()
            }),
            rules: vec![PolicyRule {
                verbs: vec!["get".into()],
                api_groups: vec![String::new()],
                resources: vec!["pods".into()],
                ..Default::default()
            }],
            aggregation_rule: Some(AggregationRule {
                cluster_role_selectors: vec![LabelSelector {
                    match_labels: [("a".to_string(), "b".to_string())].into(),
                    match_expressions: vec![],
                }],
            }),
        };
        let v = decode_builtin(
            &wrap("ClusterRole", role.encode_to_vec()),
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            v["rules"],
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
        );
        assert_eq!(
            v["aggregationRule"],
            json!({"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]})
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode_namespace(b"nope").is_err());
        assert!(decode_namespace(b"k8s\0\xff\xff\xff").is_err());
    }
}
