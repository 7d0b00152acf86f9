//! Generates `data/definitions.json`, the OpenAPI definitions of every built-in kind, from
//! k8s-openapi's `schemars` impls (descriptions, types, formats, required fields) plus the patch
//! metadata upstream's OpenAPI carries: the list and map strategies mined from k8s-openapi's
//! `DeepMerge` impls (`data/merge_strategies.json`, see `tools/mine_merge_strategies.py`) and a
//! short curated table of what that source cannot tell (multi-key list maps, `retainKeys`,
//! atomic structs).
//!
//! `cargo run -p crd-builtin --example gen_schemas --features regenerate` rewrites the file;
//! with `-- --check` it exits 1 when the committed file is not current.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// Lists upstream declares `+listType=map` with keys the strategic merge key does not show.
const LIST_MAPS: &[(&str, &str, &[&str])] = &[
    (
        "io.k8s.api.core.v1.Container",
        "ports",
        &["containerPort", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "ports",
        &["containerPort", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.ServiceSpec",
        "ports",
        &["port", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "topologySpreadConstraints",
        &["topologyKey", "whenUnsatisfiable"],
    ),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", &["name"]),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", &["name"]),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "ownerReferences",
        &["uid"],
    ),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", &["type"]),
    (
        "io.k8s.api.apps.v1.DeploymentStatus",
        "conditions",
        &["type"],
    ),
    (
        "io.k8s.api.apps.v1.ReplicaSetStatus",
        "conditions",
        &["type"],
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetStatus",
        "conditions",
        &["type"],
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "conditions",
        &["type"],
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "conditions",
        &["type"],
    ),
];

/// Lists upstream declares `+listType=atomic` although they have a strategic merge key.
const ATOMIC_LISTS: &[(&str, &str)] = &[
    ("io.k8s.api.batch.v1.JobStatus", "conditions"),
    ("io.k8s.api.rbac.v1.Role", "rules"),
    ("io.k8s.api.rbac.v1.ClusterRole", "rules"),
    ("io.k8s.api.rbac.v1.AggregationRule", "clusterRoleSelectors"),
    ("io.k8s.api.rbac.v1.RoleBinding", "subjects"),
    ("io.k8s.api.rbac.v1.ClusterRoleBinding", "subjects"),
    ("io.k8s.api.rbac.v1.PolicyRule", "verbs"),
    ("io.k8s.api.rbac.v1.PolicyRule", "apiGroups"),
    ("io.k8s.api.rbac.v1.PolicyRule", "resources"),
    ("io.k8s.api.rbac.v1.PolicyRule", "resourceNames"),
    ("io.k8s.api.rbac.v1.PolicyRule", "nonResourceURLs"),
];

/// Fields whose strategic patch strategy is not plain `merge`.
const PATCH_STRATEGIES: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.PodSpec", "volumes", "merge,retainKeys"),
    (
        "io.k8s.api.core.v1.PodSpec",
        "resourceClaims",
        "merge,retainKeys",
    ),
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        "strategy",
        "retainKeys",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "finalizers",
        "merge",
    ),
];

/// Structs upstream marks `+structType=atomic` (`x-kubernetes-map-type: atomic`).
const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.api.rbac.v1.Subject",
];

/// Types whose content is free-form JSON.
const FREE_FORM: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn field<'a>(defs: &'a mut Map<String, Value>, def: &str, field: &str) -> &'a mut Value {
    defs.get_mut(def)
        .and_then(|d| d.pointer_mut(&format!("/properties/{field}")))
        .unwrap_or_else(|| panic!("{def}.{field} exists"))
}

/// The `admissionregistration.k8s.io/v1beta1` mutating admission policy types Kubernetes 1.34
/// serves: k8s-openapi's `v1_33` feature has them as `v1alpha1`, with the same fields; they are
/// renamed (definitions and references).
fn beta_admission_policies(defs: Map<String, Value>) -> Map<String, Value> {
    const ALPHA: &str = "io.k8s.api.admissionregistration.v1alpha1.";
    const BETA: &str = "io.k8s.api.admissionregistration.v1beta1.";
    let text = serde_json::to_string(&Value::Object(defs)).expect("serializes");
    match serde_json::from_str(&text.replace(ALPHA, BETA)).expect("parses") {
        Value::Object(m) => m,
        _ => unreachable!("definitions are an object"),
    }
}

fn generate() -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    generator.subschema_for::<api::core::v1::ConfigMap>();
    generator.subschema_for::<api::core::v1::Secret>();
    generator.subschema_for::<api::core::v1::ServiceAccount>();
    generator.subschema_for::<api::core::v1::Service>();
    generator.subschema_for::<api::core::v1::Endpoints>();
    generator.subschema_for::<api::core::v1::Pod>();
    generator.subschema_for::<api::core::v1::PersistentVolumeClaim>();
    generator.subschema_for::<api::core::v1::PersistentVolume>();
    generator.subschema_for::<api::core::v1::ReplicationController>();
    generator.subschema_for::<api::core::v1::Event>();
    generator.subschema_for::<api::apps::v1::Deployment>();
    generator.subschema_for::<api::apps::v1::StatefulSet>();
    generator.subschema_for::<api::apps::v1::DaemonSet>();
    generator.subschema_for::<api::apps::v1::ReplicaSet>();
    generator.subschema_for::<api::batch::v1::Job>();
    generator.subschema_for::<api::batch::v1::CronJob>();
    generator.subschema_for::<api::networking::v1::Ingress>();
    generator.subschema_for::<api::discovery::v1::EndpointSlice>();
    generator.subschema_for::<api::policy::v1::PodDisruptionBudget>();
    generator.subschema_for::<api::apps::v1::ControllerRevision>();
    generator.subschema_for::<api::scheduling::v1::PriorityClass>();
    generator.subschema_for::<api::core::v1::Node>();
    generator.subschema_for::<api::node::v1::RuntimeClass>();
    generator.subschema_for::<api::storage::v1::CSIDriver>();
    generator.subschema_for::<api::core::v1::PodTemplate>();
    generator.subschema_for::<api::certificates::v1::CertificateSigningRequest>();
    generator
        .subschema_for::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(
        );
    generator.subschema_for::<api::networking::v1::NetworkPolicy>();
    generator.subschema_for::<api::networking::v1::IngressClass>();
    generator.subschema_for::<api::autoscaling::v2::HorizontalPodAutoscaler>();
    generator.subschema_for::<api::autoscaling::v1::HorizontalPodAutoscaler>();
    generator.subschema_for::<api::core::v1::ResourceQuota>();
    generator.subschema_for::<api::core::v1::LimitRange>();
    generator.subschema_for::<api::storage::v1::StorageClass>();
    generator.subschema_for::<api::coordination::v1::Lease>();
    generator.subschema_for::<api::events::v1::Event>();
    generator.subschema_for::<api::autoscaling::v1::Scale>();
    // Lists' metadata, which custom resources' `<Kind>List` schemas reference.
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta>();
    generator.subschema_for::<api::rbac::v1::Role>();
    generator.subschema_for::<api::rbac::v1::ClusterRole>();
    generator.subschema_for::<api::rbac::v1::RoleBinding>();
    generator.subschema_for::<api::rbac::v1::ClusterRoleBinding>();
    generator.subschema_for::<api::admissionregistration::v1::ValidatingWebhookConfiguration>();
    generator.subschema_for::<api::admissionregistration::v1::MutatingWebhookConfiguration>();
    generator.subschema_for::<api::admissionregistration::v1::ValidatingAdmissionPolicy>();
    generator.subschema_for::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>();
    generator.subschema_for::<api::admissionregistration::v1alpha1::MutatingAdmissionPolicy>();
    generator
        .subschema_for::<api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding>();
    let mut defs = beta_admission_policies(generator.take_definitions(true));

    // k8s-openapi requires `metadata` on resources because its Rust field is not optional;
    // upstream's OpenAPI does not.
    for d in defs.values_mut() {
        if let Some(req) = d.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| r != "metadata");
            if req.is_empty() {
                d.as_object_mut().map(|m| m.remove("required"));
            }
        }
    }

    let mined: BTreeMap<String, BTreeMap<String, Value>> = serde_json::from_str(
        &std::fs::read_to_string(crate_dir().join("data/merge_strategies.json"))
            .expect("data/merge_strategies.json"),
    )
    .expect("merge strategies parse");
    let names: Vec<String> = defs.keys().cloned().collect();
    for name in names {
        // The renamed v1beta1 policy types carry what was mined for their v1alpha1 originals.
        let Some(fields) = mined.get(&name).or_else(|| {
            mined.get(&name.replace(
                "io.k8s.api.admissionregistration.v1beta1.",
                "io.k8s.api.admissionregistration.v1alpha1.",
            ))
        }) else {
            continue;
        };
        for (f, how) in fields {
            let Some(prop) = defs
                .get_mut(&name)
                .and_then(|d| d.pointer_mut(&format!("/properties/{f}")))
            else {
                continue;
            };
            match how["strategy"].as_str() {
                Some("map") => {
                    let keys = how["keys"].as_array().cloned().unwrap_or_default();
                    if let [key] = keys.as_slice() {
                        prop["x-kubernetes-patch-strategy"] = json!("merge");
                        prop["x-kubernetes-patch-merge-key"] = key.clone();
                    }
                }
                Some("set") => prop["x-kubernetes-list-type"] = json!("set"),
                Some("atomic-map") => prop["x-kubernetes-map-type"] = json!("atomic"),
                _ => {}
            }
        }
    }
    for (def, f, keys) in LIST_MAPS {
        let prop = field(&mut defs, def, f);
        prop["x-kubernetes-list-type"] = json!("map");
        prop["x-kubernetes-list-map-keys"] = json!(keys);
    }
    for (def, f) in ATOMIC_LISTS {
        field(&mut defs, def, f)["x-kubernetes-list-type"] = json!("atomic");
    }
    for (def, f, s) in PATCH_STRATEGIES {
        field(&mut defs, def, f)["x-kubernetes-patch-strategy"] = json!(s);
    }
    for def in ATOMIC_STRUCTS {
        if let Some(d) = defs.get_mut(*def) {
            d["x-kubernetes-map-type"] = json!("atomic");
        }
    }
    for def in FREE_FORM {
        if let Some(d) = defs.get_mut(*def) {
            d["x-kubernetes-preserve-unknown-fields"] = json!(true);
        }
    }
    let mut sorted = Map::new();
    let mut keys: Vec<&String> = defs.keys().collect();
    keys.sort();
    for k in keys {
        sorted.insert(k.clone(), defs[k].clone());
    }
    Value::Object(sorted)
}

fn main() {
    let path = crate_dir().join("data/definitions.json");
    let mut text = serde_json::to_string_pretty(&generate()).expect("serializes");
    text.push('\n');
    if std::env::args().any(|a| a == "--check") {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != text {
            eprintln!("{} is not current; rerun without --check", path.display());
            std::process::exit(1);
        }
        println!("{} is current", path.display());
    } else {
        std::fs::write(&path, text).expect("writes data/definitions.json");
        println!("wrote {}", path.display());
    }
}
