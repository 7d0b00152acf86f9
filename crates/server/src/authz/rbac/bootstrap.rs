//! The bootstrap RBAC policy (upstream's `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`),
//! limited to the resources this server serves, and its reconciliation
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

/// The bootstrap `ClusterRoles`.
pub fn cluster_roles() -> Vec<Value> {
    let r = PolicyRule::resource;
    let to_admin = aggregate_label("admin");
    let to_edit = aggregate_label("edit");
    let to_view = aggregate_label("view");
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            &[
                r(&["*"], &["*"], &["*"]),
                PolicyRule::non_resource(&["*"], &["*"]),
            ],
            None,
        ),
        cluster_role("admin", &[], &[], Some("admin")),
        cluster_role("edit", &[(&to_admin, "true")], &[], Some("edit")),
        cluster_role(
            "view",
            &[(&to_admin, "true"), (&to_edit, "true")],
            &[],
            Some("view"),
        ),
        cluster_role(
            "system:aggregate-to-admin",
            &[(&to_admin, "true")],
            &[r(READ_WRITE, &[GROUP], &["rolebindings", "roles"])],
            None,
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(&to_edit, "true")],
            &[
                r(READ, &[""], &["secrets"]),
                r(WRITE, &[""], &["pods"]),
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
                    ],
                ),
                r(
                    WRITE,
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                ),
                r(WRITE, &["batch"], &["cronjobs", "jobs"]),
                r(WRITE, &["policy"], &["poddisruptionbudgets"]),
                r(WRITE, &["networking.k8s.io"], &["ingresses"]),
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
                        "replicationcontrollers/status",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                ),
                r(READ, &[""], &["events", "pods/status"]),
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
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                ),
                r(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                r(
                    READ,
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:discovery",
            &[],
            &[PolicyRule::non_resource(
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
            &[PolicyRule::non_resource(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
            None,
        ),
        cluster_role(
            "system:monitoring",
            &[],
            &[PolicyRule::non_resource(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
            None,
        ),
    ]
}

/// The bootstrap `ClusterRoleBindings` (each named after its role, binding groups).
pub fn cluster_role_bindings() -> Vec<Value> {
    let binding = |role: &str, groups: &[&str]| {
        json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": {BOOTSTRAPPING.0: BOOTSTRAPPING.1},
                         "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
            "subjects": groups.iter()
                .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
                .collect::<Vec<_>>(),
        })
    };
    vec![
        binding("cluster-admin", &["system:masters"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        binding("system:monitoring", &["system:monitoring"]),
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

    #[test]
    fn every_bootstrap_resource_is_served_and_bindings_name_roles() {
        let served = |group: &str, resource: &str| {
            let base = resource.split('/').next().unwrap_or(resource);
            crd_builtin::lookup(group, base).is_some()
                || (group.is_empty() && base == "namespaces")
                || group == GROUP
                || group == "*"
                || matches!(group, "authorization.k8s.io" | "authentication.k8s.io")
        };
        let roles = cluster_roles();
        for role in &roles {
            assert_eq!(role["metadata"]["labels"][BOOTSTRAPPING.0], BOOTSTRAPPING.1);
            assert_eq!(role["metadata"]["annotations"][AUTOUPDATE], "true");
            for rule in PolicyRule::list_from(role) {
                for g in &rule.api_groups {
                    for r in &rule.resources {
                        assert!(served(g, r), "{g}/{r} in {}", role["metadata"]["name"]);
                    }
                }
            }
        }
        for b in cluster_role_bindings() {
            assert!(
                roles
                    .iter()
                    .any(|r| r["metadata"]["name"] == b["roleRef"]["name"])
            );
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
