//! The decision table: literal RBAC objects, then (user, groups, request) → allowed or
//! denied with upstream's reason (after `rbac_test.go` and `rule_test.go`).

use serde_json::{Value, json};

use super::*;

fn user(name: &str, groups: &[&str]) -> User {
    User {
        extra: std::collections::BTreeMap::default(),
        name: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| (*g).to_string()).collect(),
    }
}

#[allow(clippy::needless_pass_by_value)]
fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

#[allow(clippy::needless_pass_by_value)]
fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "rules": rules})
}

#[allow(clippy::needless_pass_by_value)]
fn binding(ns: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role},
           "subjects": subjects})
}

fn policy() -> Policy {
    let mut p = Policy::default();
    for cr in [
        cluster_role(
            "all",
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
        ),
        cluster_role(
            "pod-reader",
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
        ),
        cluster_role(
            "scaler",
            json!([{"verbs": ["get", "update"], "apiGroups": ["*"], "resources": ["*/scale"]}]),
        ),
        cluster_role(
            "health",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz*"]}]),
        ),
    ] {
        p.upsert(RbacKind::ClusterRole, &cr);
    }
    p.upsert(
        RbacKind::Role,
        &role("ns1", "cm", json!([{"verbs": ["create", "list"], "apiGroups": [""], "resources": ["configmaps"]},
                                  {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]}])),
    );
    p.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "root-all",
            "ClusterRole",
            "all",
            json!([{"kind": "User", "name": "root"}]),
        ),
    );
    p.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "readers",
            "ClusterRole",
            "pod-reader",
            json!([{"kind": "User", "name": "nobody"}, {"kind": "Group", "name": "readers"}]),
        ),
    );
    p.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "ns2-scalers",
            "ClusterRole",
            "scaler",
            json!([{"kind": "Group", "name": "system:serviceaccounts:ns2"}]),
        ),
    );
    p.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "health",
            "ClusterRole",
            "health",
            json!([{"kind": "Group", "name": "system:authenticated"},
                        // A service account without a namespace names nobody in a cluster binding.
                        {"kind": "ServiceAccount", "name": "builder"}]),
        ),
    );
    p.upsert(
        RbacKind::RoleBinding,
        &binding(
            "ns1",
            "jane-cm",
            "Role",
            "cm",
            json!([{"kind": "User", "name": "jane"}]),
        ),
    );
    p.upsert(
        RbacKind::RoleBinding,
        &binding(
            "ns1",
            "builder-pods",
            "ClusterRole",
            "pod-reader",
            json!([{"kind": "ServiceAccount", "name": "builder"}]),
        ),
    );
    p.upsert(
        RbacKind::RoleBinding,
        &binding(
            "ns1",
            "dangling",
            "ClusterRole",
            "missing",
            json!([{"kind": "User", "name": "ghost"}]),
        ),
    );
    p
}

fn res(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    Attributes::Resource {
        verb: verb.into(),
        group: group.into(),
        version: String::new(),
        resource: resource.into(),
        namespace: (!ns.is_empty()).then(|| ns.to_string()),
        name: (!name.is_empty()).then(|| name.to_string()),
    }
}

fn url(verb: &str, path: &str) -> Attributes {
    Attributes::NonResource {
        verb: verb.into(),
        path: path.into(),
    }
}

#[test]
fn decision_table() {
    let p = policy();
    let sa = "system:serviceaccount:ns1:builder";
    let sa2 = "system:serviceaccount:ns2:deployer";
    let cases: Vec<(&str, &[&str], Attributes, bool, &str)> = vec![
        (
            "root",
            &[],
            res("delete", "apps", "deployments", "x", "d"),
            true,
            r#"RBAC: allowed by ClusterRoleBinding "root-all" of ClusterRole "all" to User "root""#,
        ),
        ("root", &[], url("get", "/metrics"), false, ""),
        (
            "ann",
            &["readers"],
            res("list", "", "pods", "any", ""),
            true,
            r#"RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "readers""#,
        ),
        (
            "ann",
            &["readers"],
            res("watch", "", "pods", "any", ""),
            false,
            "",
        ),
        (
            "ann",
            &["readers"],
            res("get", "", "pods/log", "any", "p"),
            false,
            "",
        ),
        (
            "jane",
            &[],
            res("create", "", "configmaps", "ns1", ""),
            true,
            r#"RBAC: allowed by RoleBinding "jane-cm/ns1" of Role "cm" to User "jane""#,
        ),
        (
            "jane",
            &[],
            res("create", "", "configmaps", "ns2", ""),
            false,
            "",
        ),
        (
            "jane",
            &[],
            res("create", "", "configmaps", "", ""),
            false,
            "",
        ),
        (
            "jane",
            &[],
            res("get", "", "configmaps", "ns1", "settings"),
            true,
            r#"RBAC: allowed by RoleBinding "jane-cm/ns1" of Role "cm" to User "jane""#,
        ),
        (
            "jane",
            &[],
            res("get", "", "configmaps", "ns1", "other"),
            false,
            "",
        ),
        (
            "jane",
            &[],
            res("delete", "", "configmaps", "ns1", "settings"),
            false,
            "",
        ),
        (
            sa,
            &["system:serviceaccounts", "system:serviceaccounts:ns1"],
            res("get", "", "pods", "ns1", "p"),
            true,
            r#"RBAC: allowed by RoleBinding "builder-pods/ns1" of ClusterRole "pod-reader" to ServiceAccount "builder/ns1""#,
        ),
        (
            sa,
            &["system:serviceaccounts", "system:serviceaccounts:ns1"],
            res("get", "", "pods", "ns2", "p"),
            false,
            "",
        ),
        (
            "system:serviceaccount:ns2:builder",
            &[],
            res("get", "", "pods", "ns1", "p"),
            false,
            "",
        ),
        (
            sa2,
            &["system:serviceaccounts", "system:serviceaccounts:ns2"],
            res("update", "apps", "deployments/scale", "ns9", "d"),
            true,
            r#"RBAC: allowed by ClusterRoleBinding "ns2-scalers" of ClusterRole "scaler" to Group "system:serviceaccounts:ns2""#,
        ),
        (
            sa2,
            &["system:serviceaccounts", "system:serviceaccounts:ns2"],
            res("update", "apps", "deployments", "ns9", "d"),
            false,
            "",
        ),
        (
            sa2,
            &["system:serviceaccounts", "system:serviceaccounts:ns2"],
            res("update", "apps", "deployments/status", "ns9", "d"),
            false,
            "",
        ),
        (
            "bob",
            &["system:authenticated"],
            url("get", "/healthz"),
            true,
            r#"RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated""#,
        ),
        (
            "bob",
            &["system:authenticated"],
            url("get", "/readyz/ping"),
            true,
            r#"RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated""#,
        ),
        (
            "bob",
            &["system:authenticated"],
            url("get", "/healthz/ping"),
            false,
            "",
        ),
        (
            "bob",
            &["system:authenticated"],
            url("post", "/healthz"),
            false,
            "",
        ),
        ("bob", &[], url("get", "/healthz"), false, ""),
        (
            "ghost",
            &[],
            res("get", "", "pods", "ns1", "p"),
            false,
            r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#,
        ),
        ("ghost", &[], res("get", "", "pods", "ns2", "p"), false, ""),
    ];
    for (name, groups, attrs, allowed, reason) in cases {
        let d = p.authorize(&user(name, groups), &attrs);
        assert_eq!(
            (d.allowed, d.reason.as_str()),
            (allowed, reason),
            "{name} {groups:?} {attrs:?}"
        );
    }
}

#[test]
fn index_follows_updates_and_deletes() {
    let mut p = policy();
    let jane = user("jane", &[]);
    let create = res("create", "", "configmaps", "ns1", "");
    assert!(p.authorize(&jane, &create).allowed);
    // The binding now names someone else: jane's index entry goes.
    p.upsert(
        RbacKind::RoleBinding,
        &binding(
            "ns1",
            "jane-cm",
            "Role",
            "cm",
            json!([{"kind": "User", "name": "joe"}]),
        ),
    );
    assert!(!p.authorize(&jane, &create).allowed);
    assert!(p.authorize(&user("joe", &[]), &create).allowed);
    p.remove(RbacKind::Role, "ns1", "cm");
    assert_eq!(
        p.authorize(&user("joe", &[]), &create).reason,
        r#"RBAC: role.rbac.authorization.k8s.io "cm" not found"#
    );
    p.remove(RbacKind::RoleBinding, "ns1", "jane-cm");
    assert_eq!(p.authorize(&user("joe", &[]), &create), Decision::deny(""));
    assert_eq!(p.len(), [0, 4, 2, 4]);
}

#[test]
fn rules_for_lists_cluster_then_namespace_rules() {
    let p = policy();
    let (rules, errors) = p.rules_for(&user("jane", &["readers", "system:authenticated"]), "ns1");
    let described: Vec<String> = rules
        .iter()
        .map(rules::PolicyRule::compact_string)
        .collect();
    assert_eq!(
        described,
        [
            r#"{NonResourceURLs:["/healthz" "/readyz*"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}"#,
            r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["create" "list"]}"#,
            r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["settings"], Verbs:["get" "update"]}"#,
        ]
    );
    assert!(errors.is_empty());
    let (_, errors) = p.rules_for(&user("ghost", &[]), "ns1");
    assert_eq!(
        errors,
        [r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#]
    );
}

#[test]
fn escalation_messages() {
    let rbac = RbacAuthorizer::new();
    rbac.write(|p| *p = policy());
    rbac.set_synced();
    let authz = crate::authz::Authorizer::new(vec![crate::authz::Member::Rbac(rbac)]);
    let jane = user("jane", &["system:authenticated"]);
    let write = escalation::Write {
        kind: RbacKind::Role,
        namespace: "ns1",
        name: "r",
    };
    let holds =
        json!({"rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]});
    assert!(escalation::guard(&authz, &jane, write, &holds, None).is_ok());
    let more = json!({"rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "configmaps"]}]});
    let err = escalation::guard(&authz, &jane, write, &more, None).unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\"]}\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}"
    );
    // Same rules as stored: an update that changes only finalizers passes.
    assert!(escalation::guard(&authz, &jane, write, &more, Some(&more)).is_ok());
    // Bindings: jane holds Role cm in ns1, not ClusterRole all.
    let rb = |role_kind: &str, role: &str| {
        json!({"roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role},
               "subjects": [{"kind": "User", "name": "joe"}]})
    };
    let bw = escalation::Write {
        kind: RbacKind::RoleBinding,
        namespace: "ns1",
        name: "b",
    };
    assert!(escalation::guard(&authz, &jane, bw, &rb("Role", "cm"), None).is_ok());
    let err = escalation::guard(&authz, &jane, bw, &rb("Role", "nope"), None).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "roles.rbac.authorization.k8s.io \"nope\" not found")
    );
    let err = escalation::guard(&authz, &jane, bw, &rb("ClusterRole", "nope"), None).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            404,
            "clusterroles.rbac.authorization.k8s.io \"nope\" not found"
        )
    );
    let err = escalation::guard(&authz, &jane, bw, &rb("ClusterRole", "all"), None).unwrap_err();
    assert!(
        err.message.ends_with(
            "not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"
        ),
        "{}",
        err.message
    );
    // root holds everything; masters are exempt.
    assert!(
        escalation::guard(
            &authz,
            &user("root", &[]),
            bw,
            &rb("ClusterRole", "all"),
            None
        )
        .is_ok()
    );
    assert!(
        escalation::guard(
            &authz,
            &user("x", &["system:masters"]),
            bw,
            &rb("ClusterRole", "all"),
            None
        )
        .is_ok()
    );
    // Aggregation needs full authority.
    let cw = escalation::Write {
        kind: RbacKind::ClusterRole,
        namespace: "",
        name: "agg",
    };
    let agg = json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}, "rules": []});
    assert_eq!(
        escalation::guard(&authz, &jane, cw, &agg, None)
            .unwrap_err()
            .message,
        "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );
}

#[test]
fn unsynced_authorizer_has_no_opinion() {
    let rbac = RbacAuthorizer::new();
    rbac.write(|p| *p = policy());
    let root = user("root", &[]);
    let attrs = res("get", "", "pods", "x", "p");
    assert!(!rbac.authorize(&root, &attrs).allowed);
    rbac.set_synced();
    assert!(rbac.authorize(&root, &attrs).allowed);
}

#[test]
fn service_account_names() {
    assert_eq!(
        service_account_of("system:serviceaccount:ns:sa"),
        Some(("ns", "sa"))
    );
    assert_eq!(service_account_of("system:serviceaccount:ns"), None);
    assert_eq!(service_account_of("system:serviceaccount::sa"), None);
    assert_eq!(service_account_of("system:serviceaccounts:ns"), None);
    assert_eq!(service_account_of("jane"), None);
}
