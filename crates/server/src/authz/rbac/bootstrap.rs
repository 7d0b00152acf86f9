//! The bootstrap RBAC policy (upstream's `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`:
//! its `ClusterRoles` and `ClusterRoleBindings` whole, resources this server does not serve
//! included, so roles and escalation checks behave as on any cluster), and its reconciliation
//! (`pkg/registry/rbac/reconciliation`): missing rules, aggregation selectors, labels,
//! annotations and subjects are added; what users added stays; objects annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` are left alone; a binding whose
//! `roleRef` differs is recreated.
//!
//! Pure: objects in, objects out; `controllers::rbac` reads and writes the store.

use serde_json::{Value, json};

use super::GROUP;
use super::rules::{PolicyRule, covers};

/// The annotation that lets reconciliation update an object.
pub const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The label every bootstrap object carries.
pub const BOOTSTRAPPING: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn aggregate_label(to: &str) -> String {
    format!("{GROUP}/aggregate-to-{to}")
}

fn cluster_role(
    name: &str,
    labels: &[(&str, &str)],
    rules: &[PolicyRule],
    aggregate: Option<&str>,
) -> Value {
    let mut l = serde_json::Map::new();
    l.insert(BOOTSTRAPPING.0.into(), json!(BOOTSTRAPPING.1));
    for (k, v) in labels {
        l.insert((*k).to_string(), json!(v));
    }
    let mut obj = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": l, "annotations": {AUTOUPDATE: "true"}},
        "rules": rules.iter().map(PolicyRule::to_json).collect::<Vec<_>>(),
    });
    if let Some(to) = aggregate {
        obj["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {aggregate_label(to): "true"}}]});
    }
    obj
}

/// `eventsRule()`: recording events through either events API.
fn events_rule() -> PolicyRule {
    PolicyRule::resource(
        &["create", "patch", "update"],
        &["", "events.k8s.io"],
        &["events"],
    )
}

/// A certificate signer's approver role (`approve` on `signers` named `signer`).
fn approver(name: &str, signer: &str) -> Value {
    cluster_role(
        name,
        &[],
        &[
            PolicyRule::resource(&["approve"], &["certificates.k8s.io"], &["signers"])
                .names(&[signer]),
        ],
        None,
    )
}

/// The bootstrap `ClusterRoles`: upstream's `ClusterRoles()` with the default feature gates
/// (`testdata/cluster-roles.yaml`), rules in upstream's order. Some name resources this
/// server does not serve; upstream's do too, and keeping them whole lets a namespace admin
/// grant them in Roles (the escalation check compares rules, not served resources).
pub fn cluster_roles() -> Vec<Value> {
    let r = PolicyRule::resource;
    let urls = PolicyRule::non_resource;
    let to_admin = aggregate_label("admin");
    let to_edit = aggregate_label("edit");
    let to_view = aggregate_label("view");
    let mut roles = vec![
        cluster_role(
            "cluster-admin",
            &[],
            &[r(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
            None,
        ),
        cluster_role("admin", &[], &[], Some("admin")),
        cluster_role("edit", &[(&to_admin, "true")], &[], Some("edit")),
        cluster_role("view", &[(&to_edit, "true")], &[], Some("view")),
        cluster_role(
            "system:aggregate-to-admin",
            &[(&to_admin, "true")],
            &[
                r(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                r(READ_WRITE, &[GROUP], &["rolebindings", "roles"]),
            ],
            None,
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(&to_edit, "true")],
            &[
                // Reading what edit can write to, and the escalating subresources.
                r(
                    READ,
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                r(&["impersonate"], &[""], &["serviceaccounts"]),
                r(
                    WRITE,
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                ),
                r(&["create"], &[""], &["pods/eviction"]),
                r(
                    WRITE,
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                ),
                r(&["create"], &[""], &["serviceaccounts/token"]),
                r(
                    WRITE,
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                ),
                r(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                r(WRITE, &["batch"], &["cronjobs", "jobs"]),
                r(
                    WRITE,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                ),
                r(WRITE, &["policy"], &["poddisruptionbudgets"]),
                r(
                    WRITE,
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                ),
                r(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
            ],
            None,
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(&to_view, "true")],
            &[
                r(
                    READ,
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                ),
                r(
                    READ,
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                ),
                // Reading a namespace at namespace scope means reading *this* namespace.
                r(READ, &[""], &["namespaces"]),
                r(READ, &["discovery.k8s.io"], &["endpointslices"]),
                r(
                    READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                ),
                r(
                    READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                r(
                    READ,
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                ),
                r(
                    READ,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                ),
                r(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                r(
                    READ,
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:discovery",
            &[],
            &[urls(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
            None,
        ),
        cluster_role(
            "system:basic-user",
            &[],
            &[
                r(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                r(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            &[urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
            None,
        ),
        cluster_role(
            "system:monitoring",
            &[],
            &[urls(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
            None,
        ),
        cluster_role(
            "system:auth-delegator",
            &[],
            &[
                r(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                r(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            &[urls(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
            None,
        ),
        cluster_role(
            "system:kube-aggregator",
            &[],
            &[r(READ, &[""], &["endpoints", "services"])],
            None,
        ),
        cluster_role(
            "system:heapster",
            &[],
            &[
                r(READ, &[""], &["events", "namespaces", "nodes", "pods"]),
                r(READ, &["extensions"], &["deployments"]),
            ],
            None,
        ),
        cluster_role(
            "system:kube-dns",
            &[],
            &[r(&["list", "watch"], &[""], &["endpoints", "services"])],
            None,
        ),
        cluster_role(
            "system:node-proxier",
            &[],
            &[
                r(&["list", "watch"], &[""], &["endpoints", "services"]),
                r(READ, &[""], &["nodes"]),
                events_rule(),
                r(
                    &["list", "watch"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            &[],
            &[
                r(
                    &["create", "delete", "get", "list", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                // update lets the provisioner annotate claims.
                r(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                r(READ, &["storage.k8s.io"], &["storageclasses"]),
                // Events to look for provisioning failures, and to record them.
                r(&["watch"], &[""], &["events"]),
                events_rule(),
            ],
            None,
        ),
        cluster_role(
            "system:volume-scheduler",
            &[],
            &[
                r(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                r(READ, &["storage.k8s.io"], &["storageclasses"]),
                r(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            &[],
            &[r(
                &["create"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/nodeclient"],
            )],
            None,
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            &[],
            &[r(
                &["create"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/selfnodeclient"],
            )],
            None,
        ),
        approver(
            "system:certificates.k8s.io:legacy-unknown-approver",
            "kubernetes.io/legacy-unknown",
        ),
        approver(
            "system:certificates.k8s.io:kubelet-serving-approver",
            "kubernetes.io/kubelet-serving",
        ),
        approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
    ];
    roles.extend(component_roles());
    roles
}

/// The roles of the control-plane components and nodes upstream bootstraps (kubelets,
/// kube-controller-manager, kube-scheduler and their helpers), with the default feature
/// gates: clusters whose components authenticate to this server find them bound as upstream.
fn component_roles() -> Vec<Value> {
    let r = PolicyRule::resource;
    vec![
        cluster_role(
            "system:node",
            &[],
            &[
                // Checking API access (non-mutating creates).
                r(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                r(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews", "subjectaccessreviews"],
                ),
                r(READ, &[""], &["services"]),
                r(&["create", "get", "list", "watch"], &[""], &["nodes"]),
                r(&["patch", "update"], &[""], &["nodes/status"]),
                r(&["patch", "update"], &[""], &["nodes"]),
                r(&["create", "patch", "update"], &[""], &["events"]),
                r(READ, &[""], &["pods"]),
                // Mirror pods.
                r(&["create", "delete"], &[""], &["pods"]),
                r(&["patch", "update"], &[""], &["pods/status"]),
                r(&["create"], &[""], &["pods/eviction"]),
                r(READ, &[""], &["configmaps", "secrets"]),
                r(
                    &["get"],
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                ),
                r(&["get"], &[""], &["endpoints"]),
                r(
                    &["create", "get", "list", "watch"],
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                ),
                r(
                    &["create", "delete", "get", "patch", "update"],
                    &["coordination.k8s.io"],
                    &["leases"],
                ),
                r(&["get"], &["storage.k8s.io"], &["volumeattachments"]),
                r(&["create"], &[""], &["serviceaccounts/token"]),
                r(
                    &["get", "patch", "update"],
                    &[""],
                    &["persistentvolumeclaims/status"],
                ),
                r(READ, &["storage.k8s.io"], &["csidrivers"]),
                r(
                    &["create", "delete", "get", "patch", "update"],
                    &["storage.k8s.io"],
                    &["csinodes"],
                ),
                r(READ, &["node.k8s.io"], &["runtimeclasses"]),
            ],
            None,
        ),
        cluster_role(
            "system:node-problem-detector",
            &[],
            &[
                r(&["get"], &[""], &["nodes"]),
                r(&["patch"], &[""], &["nodes/status"]),
                events_rule(),
            ],
            None,
        ),
        cluster_role(
            "system:kubelet-api-admin",
            &[],
            &[
                r(READ, &[""], &["nodes"]),
                r(&["proxy"], &[""], &["nodes"]),
                r(
                    &["*"],
                    &[""],
                    &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:node-bootstrapper",
            &[],
            &[r(
                &["create", "get", "list", "watch"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
            )],
            None,
        ),
        cluster_role(
            "system:kube-controller-manager",
            &[],
            &[
                events_rule(),
                // Leader election.
                r(&["create"], &["coordination.k8s.io"], &["leases"]),
                r(&["get", "update"], &["coordination.k8s.io"], &["leases"])
                    .names(&["kube-controller-manager"]),
                // Creating the controllers' own service accounts and tokens.
                r(&["create"], &[""], &["secrets", "serviceaccounts"]),
                r(&["delete"], &[""], &["secrets"]),
                r(
                    &["get"],
                    &[""],
                    &["configmaps", "namespaces", "secrets", "serviceaccounts"],
                ),
                r(&["update"], &[""], &["secrets", "serviceaccounts"]),
                r(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                r(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                // Every shared informer.
                r(&["list", "watch"], &["*"], &["*"]),
                r(&["create"], &[""], &["serviceaccounts/token"]),
            ],
            None,
        ),
        cluster_role(
            "system:kube-scheduler",
            &[],
            &[
                events_rule(),
                // Leader election.
                r(&["create"], &["coordination.k8s.io"], &["leases"]),
                r(&["get", "update"], &["coordination.k8s.io"], &["leases"])
                    .names(&["kube-scheduler"]),
                r(READ, &[""], &["nodes"]),
                r(&["delete", "get", "list", "watch"], &[""], &["pods"]),
                r(&["create"], &[""], &["bindings", "pods/binding"]),
                r(&["patch", "update"], &[""], &["pods/status"]),
                // What selects pods.
                r(READ, &[""], &["replicationcontrollers", "services"]),
                r(READ, &["apps", "extensions"], &["replicasets"]),
                r(READ, &["apps"], &["statefulsets"]),
                r(READ, &["policy"], &["poddisruptionbudgets"]),
                r(
                    READ,
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                ),
                // Delegated authentication and authorization.
                r(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                r(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                r(READ, &["storage.k8s.io"], &["csinodes"]),
                r(READ, &[""], &["namespaces"]),
                r(READ, &["storage.k8s.io"], &["csidrivers"]),
                r(READ, &["storage.k8s.io"], &["csistoragecapacities"]),
            ],
            None,
        ),
    ]
}

/// A group subject.
fn group(name: &str) -> Value {
    json!({"apiGroup": GROUP, "kind": "Group", "name": name})
}

/// A user subject.
fn user(name: &str) -> Value {
    json!({"apiGroup": GROUP, "kind": "User", "name": name})
}

/// The bootstrap `ClusterRoleBindings`: upstream's `ClusterRoleBindings()`, each named after
/// its role (`testdata/cluster-role-bindings.yaml`).
pub fn cluster_role_bindings() -> Vec<Value> {
    let binding = |role: &str, subjects: Vec<Value>| {
        let mut b = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": {BOOTSTRAPPING.0: BOOTSTRAPPING.1},
                         "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        });
        // Go's `omitempty`: the subject-less `system:node` binding has no `subjects`.
        if !subjects.is_empty() {
            b["subjects"] = json!(subjects);
        }
        b
    };
    vec![
        binding("cluster-admin", vec![group("system:masters")]),
        binding("system:monitoring", vec![group("system:monitoring")]),
        binding("system:discovery", vec![group("system:authenticated")]),
        binding("system:basic-user", vec![group("system:authenticated")]),
        binding(
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        binding("system:node-proxier", vec![user("system:kube-proxy")]),
        binding(
            "system:kube-controller-manager",
            vec![user("system:kube-controller-manager")],
        ),
        binding(
            "system:kube-dns",
            vec![json!({"kind": "ServiceAccount", "name": "kube-dns",
                        "namespace": "kube-system"})],
        ),
        binding("system:kube-scheduler", vec![user("system:kube-scheduler")]),
        binding(
            "system:volume-scheduler",
            vec![user("system:kube-scheduler")],
        ),
        // Deprecated since the Node authorizer: kept without subjects, as upstream.
        binding("system:node", vec![]),
        // Every in-cluster workload may read the OIDC discovery document and keys.
        binding(
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
    ]
}

fn protected(existing: &Value) -> bool {
    existing
        .pointer(&format!(
            "/metadata/annotations/{}",
            AUTOUPDATE.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        == Some("false")
}

/// Adds the expected labels and annotations the existing object lacks (existing values win).
fn merge_meta(out: &mut Value, expected: &Value) -> bool {
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let Some(want) = expected
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let have = meta.entry(field).or_insert_with(|| json!({}));
        if !have.is_object() {
            *have = json!({});
        }
        if let Some(have) = have.as_object_mut() {
            for (k, v) in want {
                if !have.contains_key(k) {
                    have.insert(k.clone(), v.clone());
                    changed = true;
                }
            }
        }
    }
    changed
}

/// `computeReconciledRole` for a `ClusterRole`: the object to write, or `None` when the
/// stored one already holds everything expected (or is protected by `autoupdate: "false"`).
pub fn reconcile_role(existing: &Value, expected: &Value) -> Option<Value> {
    if protected(existing) {
        return None;
    }
    let mut out = existing.clone();
    let mut changed = merge_meta(&mut out, expected);
    if let Some(want) = expected
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    {
        // Aggregated roles: add missing selectors; their rules belong to the aggregation
        // controller.
        let have: Vec<Value> = out
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut merged = have.clone();
        for sel in want {
            if !merged.contains(sel) {
                merged.push(sel.clone());
            }
        }
        if merged != have {
            out["aggregationRule"] = json!({"clusterRoleSelectors": merged});
            changed = true;
        }
    } else {
        let have = PolicyRule::list_from(&out);
        let (_, missing) = covers(&have, &PolicyRule::list_from(expected));
        if !missing.is_empty() {
            // Upstream appends the missing (broken-down) rules after the existing ones.
            let mut rules: Vec<Value> = out
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            rules.extend(missing.iter().map(PolicyRule::to_json));
            out["rules"] = json!(rules);
            changed = true;
        }
    }
    changed.then_some(out)
}

/// What reconciling a binding asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum BindingChange {
    /// Update the binding in place.
    Update(Value),
    /// The role reference differs: delete and create this object.
    Recreate(Value),
}

/// `computeReconciledRoleBinding`: missing subjects, labels and annotations added; a different
/// `roleRef` means recreate; `None` when nothing is missing or the binding is protected.
pub fn reconcile_binding(existing: &Value, expected: &Value) -> Option<BindingChange> {
    if protected(existing) {
        return None;
    }
    if existing.get("roleRef") != expected.get("roleRef") {
        let mut out = expected.clone();
        if let Some(subs) = existing.get("subjects").and_then(Value::as_array) {
            let mut merged: Vec<Value> = subs.clone();
            for s in expected
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !merged.contains(s) {
                    merged.push(s.clone());
                }
            }
            out["subjects"] = json!(merged);
        }
        return Some(BindingChange::Recreate(out));
    }
    let mut out = existing.clone();
    let mut changed = merge_meta(&mut out, expected);
    let mut subjects: Vec<Value> = out
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for s in expected
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !subjects.contains(s) {
            subjects.push(s.clone());
            changed = true;
        }
    }
    out["subjects"] = json!(subjects);
    changed.then_some(BindingChange::Update(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml`
    /// (default feature gates, Kubernetes 1.32/1.33), copied verbatim.
    const UPSTREAM_CLUSTER_ROLES: &str = include_str!("testdata/cluster-roles.yaml");

    /// Upstream's `ClusterRoleBindings()` as `testdata/cluster-role-bindings.yaml` lists them.
    const UPSTREAM_CLUSTER_ROLE_BINDINGS: &str =
        include_str!("testdata/cluster-role-bindings.yaml");

    fn name(v: &Value) -> &str {
        v["metadata"]["name"].as_str().unwrap()
    }

    fn upstream(yaml: &str) -> Vec<Value> {
        let list: Value = serde_saphyr::from_str(yaml).unwrap();
        list["items"].as_array().unwrap().clone()
    }

    /// Asserts `ours` holds exactly the objects of `theirs`, compared field by field
    /// (upstream's `creationTimestamp: null` and `rules: null` aside).
    fn assert_same(ours: &[Value], theirs: &[Value], fields: &[&str]) {
        let mut have: Vec<&str> = ours.iter().map(name).collect();
        let mut want: Vec<&str> = theirs.iter().map(name).collect();
        have.sort_unstable();
        want.sort_unstable();
        assert_eq!(have, want);
        for want in theirs {
            let n = name(want);
            let have = ours.iter().find(|o| name(o) == n).unwrap();
            for f in ["apiVersion", "kind"].iter().chain(fields) {
                assert_eq!(have.get(f), want.get(f), "{n}: {f}");
            }
            for f in ["labels", "annotations"] {
                assert_eq!(
                    have["metadata"][f], want["metadata"][f],
                    "{n}: metadata.{f}"
                );
            }
        }
    }

    #[test]
    fn cluster_roles_are_upstreams() {
        let theirs = upstream(UPSTREAM_CLUSTER_ROLES);
        let ours = cluster_roles();
        assert_same(&ours, &theirs, &["aggregationRule"]);
        for want in &theirs {
            let have = ours.iter().find(|o| name(o) == name(want)).unwrap();
            if want["rules"].is_null() {
                // Aggregated: the aggregation controller writes the rules.
                assert_eq!(have["rules"], json!([]), "{}", name(want));
            } else {
                // Same rules, same order, same lists.
                assert_eq!(have["rules"], want["rules"], "{}", name(want));
            }
        }
    }

    #[test]
    fn cluster_role_bindings_are_upstreams() {
        let theirs = upstream(UPSTREAM_CLUSTER_ROLE_BINDINGS);
        let ours = cluster_role_bindings();
        assert_same(&ours, &theirs, &["roleRef", "subjects"]);
        let roles = cluster_roles();
        for b in &ours {
            assert!(roles.iter().any(|r| name(r) == b["roleRef"]["name"]));
        }
    }

    /// The rules of `role` once the aggregation controller has settled (aggregated roles
    /// feed each other: view into edit into admin).
    fn aggregated(role: &str) -> Vec<PolicyRule> {
        let mut roles = cluster_roles();
        loop {
            let snapshot = roles.clone();
            let all: Vec<&Value> = snapshot.iter().collect();
            let mut changed = false;
            for r in &mut roles {
                if let Some(rules) = super::super::aggregation::aggregated_rules(r, &all)
                    && PolicyRule::list_from(r) != rules
                {
                    r["rules"] = json!(rules.iter().map(PolicyRule::to_json).collect::<Vec<_>>());
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let r = roles.iter().find(|r| name(r) == role).unwrap();
        PolicyRule::list_from(r)
    }

    #[test]
    fn admin_edit_and_view_aggregate_upstreams_rules() {
        let theirs = upstream(UPSTREAM_CLUSTER_ROLES);
        let rules_of =
            |n: &str| PolicyRule::list_from(theirs.iter().find(|r| name(r) == n).unwrap());
        let (to_admin, to_edit, to_view) = (
            rules_of("system:aggregate-to-admin"),
            rules_of("system:aggregate-to-edit"),
            rules_of("system:aggregate-to-view"),
        );
        let union = |parts: &[&[PolicyRule]]| {
            let mut out: Vec<PolicyRule> = Vec::new();
            for r in parts.iter().copied().flatten() {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
            out
        };
        let view = aggregated("view");
        assert_eq!(view, to_view);
        let edit = aggregated("edit");
        assert_eq!(edit, union(&[&to_edit, &view]));
        // Matching roles in name order, as upstream's controller: `edit` before
        // `system:aggregate-to-admin`.
        assert_eq!(aggregated("admin"), union(&[&edit, &to_admin]));
        // What tenant admins can hand out: the escalating subresources and tokens.
        let admin = aggregated("admin");
        for (verb, group, resource) in [
            ("create", "", "serviceaccounts/token"),
            ("impersonate", "", "serviceaccounts"),
            ("create", "", "pods/exec"),
            ("get", "", "pods/log"),
            ("create", "", "pods/eviction"),
            ("update", "autoscaling", "horizontalpodautoscalers"),
            ("delete", "networking.k8s.io", "networkpolicies"),
            ("patch", "extensions", "deployments"),
            ("list", "", "limitranges"),
            ("get", "", "namespaces/status"),
            ("create", "rbac.authorization.k8s.io", "rolebindings"),
        ] {
            let want = [PolicyRule::resource(&[verb], &[group], &[resource])];
            assert!(covers(&admin, &want).0, "{verb} {group}/{resource}");
        }
        // view reads neither secrets nor the exec family.
        for resource in ["secrets", "pods/exec"] {
            let want = [PolicyRule::resource(&["get"], &[""], &[resource])];
            assert!(!covers(&view, &want).0, "{resource}");
        }
    }

    #[test]
    fn reconcile_adds_missing_keeps_additions_and_respects_autoupdate() {
        let expected = cluster_roles()
            .into_iter()
            .find(|r| r["metadata"]["name"] == "system:public-info-viewer")
            .unwrap();
        assert_eq!(reconcile_role(&expected, &expected), None);
        // A user narrowed the rule and added one of their own: the missing URLs come back,
        // the addition stays.
        let mut edited = expected.clone();
        edited["rules"] = json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez"]},
                                 {"verbs": ["get"], "nonResourceURLs": ["/custom"]}]);
        edited["metadata"]["labels"] = json!({"mine": "x"});
        let out = reconcile_role(&edited, &expected).unwrap();
        assert_eq!(
            out["rules"],
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez"]},
                   {"verbs": ["get"], "nonResourceURLs": ["/custom"]},
                   {"verbs": ["get"], "nonResourceURLs": ["/readyz"]},
                   {"verbs": ["get"], "nonResourceURLs": ["/version"]},
                   {"verbs": ["get"], "nonResourceURLs": ["/version/"]}])
        );
        assert_eq!(
            out["metadata"]["labels"],
            json!({"mine": "x", "kubernetes.io/bootstrapping": "rbac-defaults"})
        );
        let mut protected = edited.clone();
        protected["metadata"]["annotations"] = json!({AUTOUPDATE: "false"});
        assert_eq!(reconcile_role(&protected, &expected), None);

        let edit = cluster_roles()
            .into_iter()
            .find(|r| r["metadata"]["name"] == "edit")
            .unwrap();
        let mut aggregated = edit.clone();
        aggregated["rules"] = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
        assert_eq!(reconcile_role(&aggregated, &edit), None);

        let binding = cluster_role_bindings().remove(0);
        let mut more = binding.clone();
        more["subjects"] = json!([{"apiGroup": GROUP, "kind": "User", "name": "root"}]);
        let Some(BindingChange::Update(out)) = reconcile_binding(&more, &binding) else {
            panic!("update expected")
        };
        assert_eq!(
            out["subjects"],
            json!([{"apiGroup": GROUP, "kind": "User", "name": "root"},
                   {"apiGroup": GROUP, "kind": "Group", "name": "system:masters"}])
        );
        let mut other_role = binding.clone();
        other_role["roleRef"]["name"] = json!("view");
        assert!(matches!(
            reconcile_binding(&other_role, &binding),
            Some(BindingChange::Recreate(_))
        ));
        assert_eq!(reconcile_binding(&binding, &binding), None);
    }
}
