//! The authentication and authorization webhooks through the real binary and kubectl, as a
//! platform team wires its identity service in: `--authentication-token-webhook-config-file`
//! turns kubectl's `--token` into a user, and `--authorization-mode=Webhook,RBAC` with
//! `--authorization-webhook-config-file` lets the service allow, deny or defer to RBAC.

use serde_json::{Value, json};

use crate::support::{TestServer, https_json_service};

/// The service: `TokenReview`s know the token `hook-jane` (jane, group dev) and
/// `hook-mallory`; `SubjectAccessReview`s allow jane in `team`, deny mallory outright (but for
/// access reviews) and have no opinion otherwise.
fn answer(mut review: Value) -> Value {
    let spec = &review["spec"];
    let status = match review["kind"].as_str() {
        Some("TokenReview") => match spec["token"].as_str() {
            Some("hook-jane") => json!({"authenticated": true,
                "user": {"username": "jane", "uid": "j-1", "groups": ["dev"]}}),
            Some("hook-mallory") => json!({"authenticated": true,
                "user": {"username": "mallory", "groups": ["dev"]}}),
            _ => json!({"authenticated": false}),
        },
        _ => match spec["user"].as_str() {
            Some("jane") if spec["resourceAttributes"]["namespace"] == "team" => {
                json!({"allowed": true})
            }
            // Mallory may still ask what she may do.
            Some("mallory") if spec["resourceAttributes"]["group"] != "authorization.k8s.io" => {
                json!({"allowed": false, "denied": true, "reason": "mallory is banned"})
            }
            _ => json!({"allowed": false}),
        },
    };
    review["status"] = status;
    review
}

fn kubeconfig(dir: &std::path::Path, name: &str, url: &str, ca_pem: &str) -> String {
    std::fs::write(dir.join(format!("{name}-ca.pem")), ca_pem).unwrap();
    let path = dir.join(format!("{name}.kubeconfig"));
    // The CA by a relative path, resolved against the kubeconfig's directory as clientcmd does.
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {url}\n    certificate-authority: {name}-ca.pem\nusers:\n- name: apiserver\n  user: {{}}\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: apiserver\ncurrent-context: {name}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn kubectl_users_from_the_token_webhook_judged_by_the_authorization_webhook() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, ca) = https_json_service(&rt, answer);
    let dir = tempfile::tempdir().unwrap();
    let token_hook = kubeconfig(dir.path(), "authn", &format!("{base}/authenticate"), &ca);
    let authz = kubeconfig(dir.path(), "authz", &format!("{base}/authorize"), &ca);
    let s = TestServer::start_with(
        dir,
        &[
            "--authentication-token-webhook-config-file",
            &token_hook,
            "--authentication-token-webhook-version=v1",
            "--authorization-mode=Webhook,RBAC",
            "--authorization-webhook-config-file",
            &authz,
            "--authorization-webhook-version=v1",
        ],
    );
    s.kubectl_ok(&["create", "namespace", "team"]);

    let out = s.kubectl_ok(&["--token=hook-jane", "auth", "whoami"]);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().eq(["Username", "jane"])),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l
            .split_whitespace()
            .eq(["Groups", "[dev", "system:authenticated]"])),
        "{out}"
    );
    // The authorization webhook allows jane in `team`.
    assert_eq!(
        s.kubectl_ok(&[
            "--token=hook-jane",
            "-n",
            "team",
            "create",
            "configmap",
            "settings"
        ]),
        "configmap/settings created\n"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "--token=hook-jane",
            "-n",
            "team",
            "get",
            "configmap",
            "settings",
            "-o",
            "name"
        ]),
        "configmap/settings\n"
    );
    // Elsewhere it has no opinion and RBAC, with no binding for jane, refuses.
    let out = s.kubectl(&["--token=hook-jane", "-n", "default", "get", "configmaps"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "Error from server (Forbidden): configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"\n"
    );
    // A binding then lets RBAC allow what the webhook defers.
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "jane-view",
        "--clusterrole=view",
        "--user=jane",
        "-n",
        "default",
    ]);
    crate::support::eventually("RBAC sees the binding", || {
        s.kubectl(&["--token=hook-jane", "-n", "default", "get", "configmaps"])
            .status
            .success()
    });
    // The webhook's denial wins over RBAC's grant, and kubectl prints its reason.
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "mallory-view",
        "--clusterrole=view",
        "--user=mallory",
    ]);
    let out = s.kubectl(&["--token=hook-mallory", "-n", "team", "get", "configmaps"]);
    assert_eq!(
        stderr(&out),
        "Error from server (Forbidden): configmaps is forbidden: User \"mallory\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team\": mallory is banned\n"
    );
    let out = s.kubectl(&[
        "auth",
        "can-i",
        "list",
        "pods",
        "-n",
        "team",
        "--as=mallory",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "no - mallory is banned"
    );
    // Tokens neither the file nor the webhook knows are 401s.
    let out = s.kubectl(&["--token=nobody", "get", "configmaps"]);
    assert_eq!(
        stderr(&out).lines().last(),
        Some("error: You must be logged in to the server (Unauthorized)")
    );
}

#[test]
fn an_authorization_configuration_file_through_the_binary() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, ca) = https_json_service(&rt, answer);
    let dir = tempfile::tempdir().unwrap();
    let authz = kubeconfig(dir.path(), "authz", &format!("{base}/authorize"), &ca);
    let file = dir.path().join("authz.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: corp\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: NoOpinion\n    authorizedTTL: 5m\n    unauthorizedTTL: 30s\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: {authz}\n    matchConditions:\n    - expression: has(request.resourceAttributes)\n    - expression: request.resourceAttributes.namespace == 'team'\n- type: RBAC\n  name: rbac\n"
        ),
    )
    .unwrap();
    // The harness reads the admin token from the data dir's `tokens.csv`.
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let tokens = dir.path().join("data/tokens.csv");
    let file_arg = file.display().to_string();
    std::fs::write(
        &tokens,
        "admin-token,admin,admin,\"system:masters\"\njane-token,jane,jane-uid\n",
    )
    .unwrap();
    let tokens_arg = tokens.display().to_string();
    let s = TestServer::start_with(
        dir,
        &[
            "--authorization-config",
            &file_arg,
            "--token-auth-file",
            &tokens_arg,
        ],
    );
    s.kubectl_ok(&["create", "namespace", "team"]);
    // kubectl's answer to jane's `auth can-i delete secrets -n <ns>`.
    let can_i = |ns: &str| {
        let out = s.kubectl(&[
            "--token=jane-token",
            "auth",
            "can-i",
            "delete",
            "secrets",
            "-n",
            ns,
        ]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(can_i("team"), "yes");
    assert_eq!(can_i("default"), "no");

    // The file is reloaded while the server runs: with AlwaysAllow added after RBAC, what
    // neither the webhook nor RBAC allows is allowed.
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "  name: rbac\n",
        "  name: rbac\n- type: AlwaysAllow\n  name: open\n",
    );
    std::fs::write(&file, text).unwrap();
    crate::support::eventually("the reloaded file decides", || can_i("default") == "yes");

    // A bad file stops the server with upstream's field errors.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 45s\n    subjectAccessReviewVersion: v1\n    failurePolicy: NoOpinion\n    authorizedTTL: 5m\n    unauthorizedTTL: 30s\n    connectionInfo: {type: KubeConfigFile, kubeConfigFile: /nonexistent}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args([
            "serve",
            "--ephemeral",
            "--secure-port=0",
            "--authorization-config",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("invalid authorization configuration: [authorizers[0].webhook.timeout: Invalid value: \"45s\": must be > 0s and <= 30s, authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"/nonexistent\": error loading file: stat /nonexistent: no such file or directory]"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args([
            "serve",
            "--ephemeral",
            "--secure-port=0",
            "--authorization-mode=RBAC",
            "--authorization-config",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"),
        "{}",
        stderr(&out)
    );
}
