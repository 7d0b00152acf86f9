//! Request decoding: a request line (`/path?query`) and a body, decoded as the server decodes
//! create, update, patch and delete bodies: JSON, YAML and the protobuf envelopes kubectl sends
//! (every kind that takes protobuf), strict-decoding scans, query options per verb and routes;
//! Go's JSON syntax errors never contradict serde_json.
//!
//! Input: a mode byte (content type and kind), the request line, a newline, the body.
#![no_main]

use crd_server::request::negotiate::{BodyFormat, decode_document, decode_object};
use crd_server::request::options::{ContinueToken, RequestOptions};
use crd_server::request::route::{self, Query, Verb};
use http::{HeaderMap, HeaderValue, Method, header::CONTENT_TYPE};
use libfuzzer_sys::fuzz_target;

/// (apiVersion, kind) of the kinds with a protobuf decoder, and one without.
const KINDS: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("networking.k8s.io/v1", "Ingress"),
    ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "Node"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("v1", "Pod"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "ResourceQuota"),
    ("v1", "Event"),
    ("events.k8s.io/v1", "Event"),
    ("coordination.k8s.io/v1", "Lease"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ReplicaSet"),
    ("autoscaling/v1", "HorizontalPodAutoscaler"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("v1", "Binding"),
    ("policy/v1", "Eviction"),
    ("stable.example.com/v1", "CronTab"),
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

const VERBS: &[Verb] = &[
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Delete,
    Verb::DeleteCollection,
];

fuzz_target!(|data: &[u8]| {
    // Every kind with every content type (the count was once fixed at 39, which left all
    // kinds after the thirteenth unfuzzed).
    let modes = u8::try_from(KINDS.len() * CONTENT_TYPES.len()).unwrap_or(u8::MAX);
    let (m, rest) = crd_apiserver_fuzz::mode(data, modes);
    let (line, body) = crd_apiserver_fuzz::first_line(rest);
    let content_type = CONTENT_TYPES[usize::from(m) % CONTENT_TYPES.len()];
    let (api_version, kind) = KINDS[usize::from(m) / CONTENT_TYPES.len()];

    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    let protobuf = |b: &[u8]| {
        if kind == "Namespace" {
            Some(crd_server::protobuf::decode_namespace(b))
        } else {
            crd_server::protobuf::decode_builtin(b, api_version, kind)
                .or_else(|| crd_server::protobuf::decode_review(b, api_version, kind))
        }
    };
    let _ = decode_object(&headers, body, kind, "v1", &protobuf);
    let json = decode_document(BodyFormat::Json, body);
    // Go's scanner finds no syntax error in what serde_json accepts (the converse does not
    // hold: Go takes invalid UTF-8 and numbers past f64, serde_json does not).
    let syntax = crd_core::go_json::syntax_error(body);
    assert!(json.is_err() || syntax.is_none(), "{syntax:?}");
    let _ = crd_core::go_json::summarize(body);
    let _ = decode_document(BodyFormat::Yaml, body);
    let _ = crd_core::strict::scan(body);

    if let Ok(line) = std::str::from_utf8(line) {
        let (path, query) = match line.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (line, None),
        };
        let query = Query::parse(query);
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ] {
            let _ = route::parse(&method, path, &query);
        }
        for &verb in VERBS {
            let _ = RequestOptions::parse(&query, verb, body);
        }
        let _ = ContinueToken::decode(path);
    }
});
