//! Identity flows through the real kubectl: `auth whoami`, `auth can-i` (and `--list`),
//! `--as`/`--as-group` impersonation, and `create token` for a service account whose token then
//! authenticates, as a user types them.

use crate::support::TestServer;

const POLICY: &str = r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"jane","namespace":"team-a","resource":"configmaps","apiGroup":"","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","namespace":"*","resource":"*","apiGroup":"authorization.k8s.io"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","namespace":"*","resource":"*","apiGroup":"authentication.k8s.io"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","nonResourcePath":"*","readonly":true}}
"#;

fn server() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.jsonl"), POLICY).unwrap();
    let policy = dir.path().join("policy.jsonl");
    TestServer::start_with(
        dir,
        &[
            "--authorization-mode=ABAC",
            "--authorization-policy-file",
            policy.to_str().unwrap(),
        ],
    )
}

/// The two lines of `kubectl auth whoami`'s table that name the user and the groups.
fn whoami(out: &str) -> (String, String) {
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    (field("Username"), field("Groups"))
}

#[test]
fn whoami_can_i_and_impersonation() {
    let s = server();
    let (user, groups) = whoami(&s.kubectl_ok(&["auth", "whoami"]));
    assert_eq!(user, "admin");
    assert_eq!(groups, "[system:masters system:authenticated]");
    let (user, groups) = whoami(&s.kubectl_ok(&["auth", "whoami", "--as=jane", "--as-group=devs"]));
    assert_eq!(
        (user.as_str(), groups.as_str()),
        ("jane", "[devs system:authenticated]")
    );

    assert_eq!(
        s.kubectl_ok(&["auth", "can-i", "create", "configmaps"])
            .trim(),
        "yes"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "auth",
            "can-i",
            "list",
            "configmaps",
            "-n",
            "team-a",
            "--as=jane"
        ])
        .trim(),
        "yes"
    );
    // "no" exits 1, with the authorizer's reason, as kubectl prints it.
    let out = s.kubectl(&[
        "auth",
        "can-i",
        "list",
        "configmaps",
        "-n",
        "team-b",
        "--as=jane",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "no - No policy matched."
    );

    // The rules jane holds in team-a.
    let list = s.kubectl_ok(&["auth", "can-i", "--list", "-n", "team-a", "--as=jane"]);
    let row = list
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.ends_with("[get list watch]"), "{row}");

    // Acting as jane: jane's denial, printed by kubectl.
    let out = s.kubectl(&["get", "configmaps", "-n", "team-b", "--as=jane"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\": No policy matched."
    );
}

#[test]
fn create_token_then_use_it() {
    let s = server();
    s.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let token = s.kubectl_ok(&["create", "token", "robot", "--duration=10m"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let (user, groups) = whoami(&s.kubectl_ok(&["auth", "whoami", "--token", token]));
    assert_eq!(user, "system:serviceaccount:default:robot");
    assert_eq!(
        groups,
        "[system:serviceaccounts system:serviceaccounts:default system:authenticated]"
    );
    // Too short a duration: upstream's validation error.
    let out = s.kubectl(&["create", "token", "robot", "--duration=5m"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The account goes, and so does its token.
    s.kubectl_ok(&["delete", "serviceaccount", "robot"]);
    let out = s.kubectl(&["auth", "whoami", "--token", token]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
