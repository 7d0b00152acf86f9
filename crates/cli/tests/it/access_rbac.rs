//! RBAC as a user drives it with kubectl against the real binary (default
//! `--authorization-mode=RBAC`): `kubectl create role/rolebinding/clusterrole/
//! clusterrolebinding`, `kubectl get -o wide`, a `--token-auth-file` user allowed in one
//! namespace and refused in another with kubectl's printed error, and a CRD's rules aggregated
//! into `edit`.

use crate::support::{TestServer, crontab_crd, eventually, my_crontab};

const JANE: &str = "jane-token-0123456789";

fn start() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let tokens = data.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("admin-token-0123456789,admin,admin,\"system:masters\"\n{JANE},jane,jane-uid\n"),
    )
    .unwrap();
    TestServer::start_with(dir, &["--token-auth-file", tokens.to_str().unwrap()])
}

/// kubectl as jane: (success, stdout, stderr).
fn as_jane(s: &TestServer, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["--token", JANE];
    all.extend_from_slice(args);
    let out = s.kubectl(&all);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kubectl_rbac_user_flow() {
    let s = start();
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    s.kubectl_ok(&["create", "namespace", "team-b"]);
    s.kubectl_ok(&[
        "create",
        "role",
        "cm-reader",
        "-n",
        "team-a",
        "--verb=get,list",
        "--resource=configmaps",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "jane-cm",
        "-n",
        "team-a",
        "--role=cm-reader",
        "--user=jane",
        "--group=devs",
        "--serviceaccount=team-a:builder",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "ns-reader",
        "--verb=get,list,watch",
        "--resource=namespaces",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "jane-ns",
        "--clusterrole=ns-reader",
        "--user=jane",
    ]);

    let out = s.kubectl_ok(&["get", "roles,rolebindings", "-n", "team-a", "-o", "wide"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("CREATED AT"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("role.rbac.authorization.k8s.io/cm-reader"),
        "{out}"
    );
    let header = lines
        .iter()
        .find(|l| l.contains("ROLE") && l.contains("SERVICEACCOUNTS"))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        cols,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    let row = lines
        .iter()
        .find(|l| l.starts_with("rolebinding.rbac.authorization.k8s.io/jane-cm"))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1], "Role/cm-reader");
    assert_eq!(&cells[3..], ["jane", "devs", "team-a:builder"]);
    let out = s.kubectl_ok(&["get", "clusterrolebindings", "jane-ns", "cluster-admin"]);
    assert!(
        out.contains("ClusterRole/ns-reader") && out.contains("ClusterRole/cluster-admin"),
        "{out}"
    );

    // jane: allowed in team-a, refused in team-b with kubectl's printed error.
    eventually("jane may list configmaps in team-a", || {
        as_jane(&s, &["get", "configmaps", "-n", "team-a"]).0
    });
    let (ok, _, err) = as_jane(&s, &["get", "configmaps", "-n", "team-b"]);
    assert!(!ok);
    assert_eq!(
        err.trim_end(),
        "Error from server (Forbidden): configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
    );
    let (ok, _, err) = as_jane(&s, &["create", "configmap", "x", "-n", "team-a"]);
    assert!(!ok);
    // `kubectl create` wraps the server's message in its own.
    assert!(
        err.contains("configmaps is forbidden: User \"jane\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"team-a\""),
        "{err}"
    );
    eventually("jane may list namespaces", || {
        as_jane(&s, &["get", "namespaces"]).0
    });

    // A CRD's rules aggregated into `edit`, bound in team-b only.
    s.apply_crd("crd.yaml", &crontab_crd(), "crontabs.stable.example.com");
    s.write(
        "crontab-edit.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: crontabs-edit\n  labels:\n    rbac.authorization.k8s.io/aggregate-to-edit: \"true\"\nrules:\n- apiGroups: [\"stable.example.com\"]\n  resources: [\"crontabs\"]\n  verbs: [\"get\", \"list\", \"watch\", \"create\", \"update\", \"patch\", \"delete\"]\n",
    );
    s.kubectl_ok(&["apply", "-f", "crontab-edit.yaml"]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "jane-edit",
        "-n",
        "team-b",
        "--clusterrole=edit",
        "--user=jane",
    ]);
    s.write("my-crontab.yaml", &my_crontab());
    eventually("jane may create crontabs in team-b", || {
        as_jane(&s, &["apply", "-n", "team-b", "-f", "my-crontab.yaml"]).0
    });
    let (ok, out, _) = as_jane(&s, &["get", "crontabs", "-n", "team-b"]);
    assert!(ok && out.contains("my-new-cron-object"), "{out}");
    let (ok, _, err) = as_jane(&s, &["apply", "-n", "team-a", "-f", "my-crontab.yaml"]);
    assert!(!ok);
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    let edit = s.kubectl_ok(&["get", "clusterrole", "edit", "-o", "yaml"]);
    assert!(
        edit.contains("stable.example.com") && edit.contains("aggregationRule"),
        "{edit}"
    );

    // Escalation: as a namespace admin jane may create bindings, but not grant herself
    // cluster-admin.
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "jane-admin",
        "-n",
        "team-b",
        "--clusterrole=admin",
        "--user=jane",
    ]);
    eventually("jane may list rolebindings in team-b", || {
        as_jane(&s, &["get", "rolebindings", "-n", "team-b"]).0
    });
    let (ok, _, err) = as_jane(
        &s,
        &[
            "create",
            "rolebinding",
            "x",
            "-n",
            "team-b",
            "--clusterrole=cluster-admin",
            "--user=jane",
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:"),
        "{err}"
    );
}

#[test]
fn always_allow_mode_lets_token_users_do_everything() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let tokens = data.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("admin-token-0123456789,admin,admin,\"system:masters\"\n{JANE},jane,jane-uid\n"),
    )
    .unwrap();
    let s = TestServer::start_with(
        dir,
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--authorization-mode",
            "AlwaysAllow",
        ],
    );
    let (ok, _, err) = as_jane(&s, &["create", "namespace", "janes"]);
    assert!(ok, "{err}");
}

/// `kubectl auth reconcile` creates RBAC objects, then updates them: the update PUTs the object
/// kubectl read back, `managedFields` included, as protobuf (regression: the protobuf decoder
/// refused ObjectMeta's field 17).
#[test]
fn kubectl_auth_reconcile_creates_and_updates() {
    let s = TestServer::start();
    let role = |verbs: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: reader\n  namespace: default\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [{verbs}]\n"
        )
    };
    s.write("role.yaml", &role("get"));
    let out = s.kubectl_ok(&["auth", "reconcile", "-f", "role.yaml"]);
    assert!(
        out.contains("role.rbac.authorization.k8s.io/reader"),
        "{out}"
    );
    s.write("role.yaml", &role("get, list"));
    let out = s.kubectl_ok(&["auth", "reconcile", "-f", "role.yaml"]);
    assert!(out.contains("reconciled"), "{out}");
    // Reconciling adds the rule not yet covered and keeps the old one.
    let verbs = s.kubectl_ok(&["get", "role", "reader", "-o", "jsonpath={.rules[*].verbs}"]);
    assert_eq!(verbs.trim(), r#"["get"] ["list"]"#);
}

/// Authorization sees requests as upstream's request info does: a tenant bound to `edit` in
/// its namespace may read that Namespace, and a `resourceNames` rule covers lists and watches
/// that select the named object by `metadata.name`, as single-object informers send them.
#[test]
fn namespace_reads_and_named_lists_are_authorized_as_upstream() {
    let s = start();
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    s.kubectl_ok(&["create", "namespace", "team-b"]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "jane-edit",
        "-n",
        "team-a",
        "--clusterrole=edit",
        "--user=jane",
    ]);
    let (ok, out, err) = as_jane(&s, &["get", "namespace", "team-a", "-o", "name"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "namespace/team-a");
    let (ok, _, err) = as_jane(&s, &["get", "namespace", "team-b"]);
    assert!(!ok);
    assert!(
        err.contains(r#"namespaces "team-b" is forbidden: User "jane" cannot get resource "namespaces" in API group "" in the namespace "team-b""#),
        "{err}"
    );

    s.kubectl_ok(&["create", "configmap", "allowed", "-n", "team-b"]);
    s.kubectl_ok(&["create", "configmap", "other", "-n", "team-b"]);
    s.kubectl_ok(&[
        "create",
        "role",
        "one-cm",
        "-n",
        "team-b",
        "--verb=get,list,watch",
        "--resource=configmaps",
        "--resource-name=allowed",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "jane-one-cm",
        "-n",
        "team-b",
        "--role=one-cm",
        "--user=jane",
    ]);
    let (ok, out, err) = as_jane(
        &s,
        &[
            "get",
            "cm",
            "-n",
            "team-b",
            "--field-selector",
            "metadata.name=allowed",
            "-o",
            "name",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "configmap/allowed");
    let (ok, out, err) = as_jane(
        &s,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/team-b/configmaps?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dallowed",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains(r#""name":"allowed""#), "{out}");
    let (ok, _, err) = as_jane(
        &s,
        &[
            "get",
            "cm",
            "-n",
            "team-b",
            "--field-selector",
            "metadata.name=other",
        ],
    );
    assert!(!ok);
    assert!(
        err.contains(
            r#"configmaps "other" is forbidden: User "jane" cannot list resource "configmaps""#
        ),
        "{err}"
    );
    let (ok, _, _) = as_jane(&s, &["get", "cm", "-n", "team-b"]);
    assert!(!ok, "an unnamed list stays forbidden");
}
