//! The one protobuf message the server must read: kubectl 1.32 sends `kubectl create namespace`
//! as `application/vnd.kubernetes.protobuf` only. The envelope is the magic `k8s\0` followed by a
//! `runtime.Unknown` whose `raw` field holds a `v1.Namespace`. Responses are always JSON, which
//! kubectl accepts.

use std::collections::BTreeMap;

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

/// Decodes a protobuf-encoded `v1.Namespace` into its JSON form.
pub fn decode_namespace(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let unknown = Unknown::decode(rest).map_err(|e| e.to_string())?;
    let tm = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
    );
    if api_version != "v1" || kind != "Namespace" {
        return Err(format!("unexpected object {api_version}, Kind={kind}"));
    }
    let ns =
        Namespace::decode(unknown.raw.unwrap_or_default().as_slice()).map_err(|e| e.to_string())?;
    let m = ns.metadata.unwrap_or_default();
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
    Ok(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "spec": {}}))
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
    fn rejects_garbage() {
        assert!(decode_namespace(b"nope").is_err());
        assert!(decode_namespace(b"k8s\0\xff\xff\xff").is_err());
    }
}
