//! The authorization webhook (`--authorization-mode=Webhook,RBAC`) and the token webhook
//! (`--authentication-token-webhook-config-file`) over HTTP: services in the test
//! ([`HttpsServer`]) answer `SubjectAccessReview`s and `TokenReview`s, reached through the
//! kubeconfig files kube-apiserver takes.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, HttpsServer, TestServer, as_token, metric};

const JANE: &str = "jane-token-0123456789";
const MALLORY: &str = "mallory-token-0123456789";
const BOB: &str = "bob-token-0123456789";

/// A webhook service that records the reviews it is sent and answers each with `answer`.
struct Service {
    server: HttpsServer,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Service {
    async fn start(answer: fn(&Value) -> Value) -> Service {
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let log = received.clone();
        let server = HttpsServer::start(Arc::new(move |path: String, body: Bytes| {
            let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock()
                .unwrap()
                .push(json!({"path": path, "review": review}));
            let status = answer(&review);
            let mut out = review.clone();
            out["status"] = status;
            Box::pin(async move { (200, out.to_string()) })
        }))
        .await;
        Service { server, received }
    }

    /// A kubeconfig for `url`, trusting the service's CA.
    fn kubeconfig(&self, dir: &std::path::Path, url: &str) -> std::path::PathBuf {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.server.ca_pem);
        let path = dir.join(format!("webhook-{}.kubeconfig", rand_suffix()));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: apiserver\n  user:\n    token: apiserver-secret\ncontexts:\n- name: webhook\n  context:\n    cluster: hook\n    user: apiserver\ncurrent-context: webhook\n"
            ),
        )
        .unwrap();
        path
    }

    fn reviews(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }
}

fn rand_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A token file with the admin, jane, mallory and bob.
fn tokens(c: &mut crd_server::ServerConfig) {
    std::fs::create_dir_all(&c.data_dir).unwrap();
    let tokens = c.data_dir.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!(
            "admin-token-0123456789,admin,admin,\"system:masters\"\n{JANE},jane,jane-uid,dev\n{MALLORY},mallory,mallory-uid\n{BOB},bob,bob-uid\n"
        ),
    )
    .unwrap();
    c.token_file = Some(tokens);
}

/// The test's policy: jane may do anything in `team`, mallory is denied outright, anyone else
/// gets no opinion (so RBAC decides).
fn policy(review: &Value) -> Value {
    let spec = &review["spec"];
    match spec["user"].as_str() {
        Some("jane") if spec["resourceAttributes"]["namespace"] == "team" => {
            json!({"allowed": true, "reason": "jane owns team"})
        }
        Some("mallory") => {
            json!({"allowed": false, "denied": true, "reason": "mallory is banned"})
        }
        _ => json!({"allowed": false}),
    }
}

#[tokio::test]
async fn the_authorization_webhook_allows_denies_and_defers_to_rbac() {
    let service = Service::start(policy).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = service.kubeconfig(dir.path(), &format!("{}/authorize", service.server.base));
    let s = TestServer::start_with(move |c| {
        tokens(c);
        c.authorization.modes = vec!["Webhook".into(), "RBAC".into()];
        c.authorization.webhook.config_file = Some(kubeconfig);
    })
    .await;
    let admin = s.api(HttpVersion::Http2);
    assert_eq!(
        admin
            .post("/api/v1/namespaces", json!({"metadata": {"name": "team"}}))
            .await
            .status,
        201
    );

    // Allowed by the webhook; the review is upstream's default v1beta1 (groups as `group`).
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/team/configmaps",
        JANE,
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let sent = service.reviews();
    let last = sent.last().expect("a review was sent");
    assert_eq!(last["path"], "/authorize");
    assert_eq!(
        last["review"],
        json!({
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1beta1",
            "metadata": {"creationTimestamp": null},
            "spec": {
                "resourceAttributes": {"namespace": "team", "verb": "list", "version": "v1", "resource": "configmaps"},
                "user": "jane",
                "group": ["dev", "system:authenticated"],
                "uid": "jane-uid",
            },
            "status": {"allowed": false},
        })
    );
    // The same request again is answered from the cache.
    let before = service.reviews().len();
    let (code, _) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/team/configmaps",
        JANE,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(service.reviews().len(), before);

    // No opinion: RBAC decides (jane has no bindings outside `team`).
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/default/configmaps",
        JANE,
        None,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );

    // A denial stops the union: RBAC's binding for mallory is never consulted.
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "mallory-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "mallory", "apiGroup": "rbac.authorization.k8s.io"}]});
    assert_eq!(
        admin
            .post(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                binding
            )
            .await
            .status,
        201
    );
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/team/configmaps",
        MALLORY,
        None,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"mallory\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team\": mallory is banned"
    );

    // Access reviews ask the same union: `denied` and the reason are reported.
    let r = admin
        .post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                   "spec": {"user": "mallory", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.json()["status"],
        json!({"allowed": false, "denied": true, "reason": "mallory is banned"})
    );
    // The webhook cannot list rules: a rules review is incomplete, with upstream's error.
    let (code, body) = as_token(
        &s,
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        BOB,
        Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team"}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["incomplete"], true);
    assert_eq!(
        body["status"]["evaluationError"],
        "webhook authorizer does not support user rule resolution"
    );
    // kube-apiserver's metrics count the calls and the terminal decisions (process-wide, so
    // other tests' calls may add to them).
    for series in [
        "apiserver_authorization_webhook_evaluations_total{name=\"webhook\",result=\"success\"}",
        "apiserver_authorization_webhook_duration_seconds_count{name=\"webhook\",result=\"success\"}",
        "apiserver_authorization_decisions_total{decision=\"allowed\",name=\"webhook\",type=\"Webhook\"}",
        "apiserver_authorization_decisions_total{decision=\"denied\",name=\"webhook\",type=\"Webhook\"}",
    ] {
        assert!(metric(&s, series).await >= 1, "{series}");
    }
}

#[tokio::test]
async fn an_unreachable_authorization_webhook_is_a_500_unless_another_authorizer_allows() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("hook.kubeconfig");
    let url = format!("https://127.0.0.1:{port}/authorize");
    std::fs::write(
        &kubeconfig,
        format!("clusters:\n- name: c\n  cluster:\n    server: {url}\ncontexts:\n- name: x\n  context: {{cluster: c}}\ncurrent-context: x\n"),
    )
    .unwrap();
    let s = TestServer::start_with(move |c| {
        tokens(c);
        c.authorization.modes = vec!["Webhook".into(), "RBAC".into()];
        c.authorization.webhook.config_file = Some(kubeconfig);
        c.authorization.webhook.version = "v1".into();
    })
    .await;
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/default/configmaps",
        BOB,
        None,
    )
    .await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(body["reason"], "InternalError");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "Internal error occurred: Post \"{url}?timeout=30s\": "
        )),
        "{message}"
    );
    // RBAC's own grants still work: every user may read `/version` (system:public-info-viewer).
    let (code, _) = as_token(&s, Method::GET, "/version", BOB, None).await;
    assert_eq!(code, 200);
    // The failure had no opinion: counted as failing open.
    let series = "apiserver_authorization_webhook_evaluations_fail_open_total{name=\"webhook\",result=\"error\"}";
    assert!(metric(&s, series).await >= 1, "{series}");
    // And system:masters never asks the webhook.
    let r = s
        .api(HttpVersion::Http2)
        .get("/api/v1/namespaces/default/configmaps")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

/// The test's token service: `good` is hook-user, `broken` is an error, anything else unknown.
fn token_policy(review: &Value) -> Value {
    match review["spec"]["token"].as_str() {
        Some("good") => json!({"authenticated": true, "user": {
            "username": "hook-user", "uid": "h-1", "groups": ["hookers"], "extra": {"scopes": ["read"]}}}),
        Some("broken") => json!({"authenticated": false, "error": "token service is sad"}),
        _ => json!({"authenticated": false}),
    }
}

#[tokio::test]
async fn the_token_webhook_authenticates_tokens_no_other_authenticator_knows() {
    let service = Service::start(token_policy).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig =
        service.kubeconfig(dir.path(), &format!("{}/authenticate", service.server.base));
    let s = TestServer::start_with(move |c| {
        tokens(c);
        c.token_webhook.config_file = Some(kubeconfig);
        c.token_webhook.version = "v1".into();
    })
    .await;
    let whoami = |token: &'static str| {
        let s = &s;
        async move {
            as_token(
                s,
                Method::POST,
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                token,
                Some(
                    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
                ),
            )
            .await
        }
    };
    let (code, body) = whoami("good").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "hook-user", "uid": "h-1", "groups": ["hookers", "system:authenticated"], "extra": {"scopes": ["read"]}})
    );
    let sent = service.reviews();
    assert_eq!(sent.len(), 1);
    let review = &sent[0]["review"];
    assert_eq!(sent[0]["path"], "/authenticate");
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(review["kind"], "TokenReview");
    assert_eq!(review["spec"]["token"], "good");
    assert_eq!(
        review["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    // Cached: asking again sends nothing.
    assert_eq!(whoami("good").await.0, 201);
    assert_eq!(service.reviews().len(), 1);
    // Tokens the file knows never reach the webhook.
    assert_eq!(whoami(JANE).await.0, 201);
    assert_eq!(service.reviews().len(), 1);
    // Unknown and failing tokens are 401s; a failure is not cached.
    for token in ["nobody", "broken"] {
        let (code, body) = whoami(token).await;
        assert_eq!(code, 401, "{body}");
        assert_eq!(body["reason"], "Unauthorized");
    }
    assert_eq!(whoami("broken").await.0, 401);
    let broken = service
        .reviews()
        .iter()
        .filter(|r| r["review"]["spec"]["token"] == "broken")
        .count();
    assert_eq!(broken, 2);
    // TokenReview asks the webhook as well.
    let r = s
        .api(HttpVersion::Http2)
        .post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "good"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["status"]["authenticated"], true);
    assert_eq!(r.json()["status"]["user"]["username"], "hook-user");
}

/// A change to a server's configuration.
type Configure<'a> = Box<dyn Fn(&mut crd_server::ServerConfig) + 'a>;

#[tokio::test]
async fn bad_webhook_flags_stop_start_up_with_upstreams_message() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("hook.kubeconfig");
    std::fs::write(
        &kubeconfig,
        "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.kubeconfig");
    // (configure, error)
    let cases: Vec<(Configure, String)> = vec![
        (
            Box::new(|c| c.authorization.modes = vec!["Webhook".into()]),
            "authorization-mode Webhook's authorization config file not passed".into(),
        ),
        (
            Box::new(|c| c.authorization.webhook.config_file = Some(kubeconfig.clone())),
            "cannot specify --authorization-webhook-config-file without mode Webhook".into(),
        ),
        (
            Box::new(|c| {
                c.authorization.modes = vec!["Webhook".into()];
                c.authorization.webhook.config_file = Some(kubeconfig.clone());
                c.authorization.webhook.version = "v2".into();
            }),
            "unsupported webhook authorizer version \"v2\", supported versions are \"v1\", \"v1beta1\"".into(),
        ),
        (
            Box::new(|c| {
                c.token_webhook.config_file = Some(kubeconfig.clone());
                c.token_webhook.version = "v3".into();
            }),
            "unsupported authentication webhook version \"v3\", supported versions are \"v1\", \"v1beta1\"".into(),
        ),
        (
            Box::new(|c| c.token_webhook.config_file = Some(missing.clone())),
            format!(
                "reading {}: No such file or directory (os error 2)",
                missing.display()
            ),
        ),
    ];
    for (configure, want) in cases {
        let data = tempfile::tempdir().unwrap();
        let mut config = crd_server::ServerConfig::loopback(data.path());
        configure(&mut config);
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let store: Arc<dyn crd_storage::Store> =
            crd_storage::sqlite::SqliteStore::open(&data.path().join("state.db")).unwrap();
        let err = crd_server::run(config, store, rx, |_| {})
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), want);
    }
}

/// An `--authorization-config` file: a webhook asked only about namespace `team` (a match
/// condition), a failing-closed webhook asked only about secrets, then RBAC.
#[tokio::test]
async fn an_authorization_configuration_orders_webhooks_with_match_conditions() {
    let service = Service::start(policy).await;
    let dir = tempfile::tempdir().unwrap();
    let team = service.kubeconfig(dir.path(), &format!("{}/team", service.server.base));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = dir.path().join("dead.kubeconfig");
    std::fs::write(
        &dead,
        format!("clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}/\ncontexts:\n- name: x\n  context: {{cluster: c}}\ncurrent-context: x\n"),
    )
    .unwrap();
    let file = dir.path().join("authz.yaml");
    std::fs::write(
        &file,
        format!(
            r"apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: team-owner
  webhook:
    timeout: 3s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: NoOpinion
    authorizedTTL: 5m
    unauthorizedTTL: 30s
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: {team}
    matchConditions:
    - expression: request.resourceAttributes.namespace == 'team'
- type: Webhook
  name: secrets-guard
  webhook:
    timeout: 1s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: Deny
    authorizedTTL: 5m
    unauthorizedTTL: 30s
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: {dead}
    matchConditions:
    - expression: has(request.resourceAttributes) && request.resourceAttributes.resource == 'secrets'
- type: RBAC
  name: rbac
",
            team = team.display(),
            dead = dead.display()
        ),
    )
    .unwrap();
    let s = TestServer::start_with(move |c| {
        tokens(c);
        c.authorization.config_file = Some(file);
    })
    .await;
    // The first webhook allows jane in `team`; it is sent a v1 review.
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/team/configmaps",
        JANE,
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let sent = service.reviews();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["path"], "/team");
    assert_eq!(sent[0]["review"]["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(
        sent[0]["review"]["spec"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    // Outside `team` neither webhook is asked, and RBAC has no binding for jane.
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/default/configmaps",
        JANE,
        None,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(service.reviews().len(), 1);
    // Secrets go to the unreachable webhook, which fails closed: a 500, RBAC never asked.
    let (code, body) = as_token(
        &s,
        Method::GET,
        "/api/v1/namespaces/default/secrets",
        JANE,
        None,
    )
    .await;
    assert_eq!(code, 500, "{body}");
    assert!(
        body["message"].as_str().unwrap().starts_with(&format!(
            "Internal error occurred: Post \"https://127.0.0.1:{port}/?timeout=1s\": "
        )),
        "{body}"
    );
    // A condition that fails to evaluate (no resourceAttributes on /api) makes the first
    // webhook have no opinion with an error; RBAC then allows discovery.
    let (code, body) = as_token(&s, Method::GET, "/api", JANE, None).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(service.reviews().len(), 1);
    // With nobody allowing, the condition's error is the 500.
    let (code, body) = as_token(&s, Method::GET, "/metrics", JANE, None).await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "Internal error occurred: cel evaluation error: expression 'request.resourceAttributes.namespace == 'team'' resulted in error: no such key: resourceAttributes"
    );

    // Skips and condition errors are counted per webhook; a failing-closed webhook's error is
    // not failing open.
    for (series, at_least) in [
        (
            "apiserver_authorization_match_condition_exclusions_total{name=\"team-owner\",type=\"Webhook\"}",
            1,
        ),
        (
            "apiserver_authorization_match_condition_evaluation_errors_total{name=\"team-owner\",type=\"Webhook\"}",
            1,
        ),
        (
            "apiserver_authorization_webhook_evaluations_total{name=\"secrets-guard\",result=\"error\"}",
            1,
        ),
        (
            "apiserver_authorization_webhook_evaluations_fail_open_total{name=\"secrets-guard\",result=\"error\"}",
            0,
        ),
    ] {
        let got = metric(&s, series).await;
        assert!(
            if at_least == 0 {
                got == 0
            } else {
                got >= at_least
            },
            "{series}: {got}"
        );
    }

    // The file and the legacy flags exclude each other.
    let data = tempfile::tempdir().unwrap();
    let mut config = crd_server::ServerConfig::loopback(data.path());
    config.authorization.config_file = Some(dir.path().join("authz.yaml"));
    config.authorization.flags_set = true;
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let store: Arc<dyn crd_storage::Store> =
        crd_storage::sqlite::SqliteStore::open(&data.path().join("state.db")).unwrap();
    let err = crd_server::run(config, store, rx, |_| {})
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"
    );
}

/// The authorization reload counter's value for `status`, from `/metrics`.
async fn authz_reloads(s: &TestServer, status: &str) -> u64 {
    crate::support::metric(
        s,
        &format!(
            "apiserver_authorization_config_controller_automatic_reloads_total{{status=\"{status}\"}}"
        ),
    )
    .await
}

#[tokio::test]
async fn a_changed_authorization_configuration_takes_effect_without_a_restart() {
    let header =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("authz.yaml");
    std::fs::write(&path, format!("{header}- {{type: RBAC, name: rbac}}\n")).unwrap();
    let file = path.clone();
    let s = TestServer::start_with(move |c| {
        tokens(c);
        c.authorization.config_file = Some(file);
    })
    .await;
    let list = || {
        as_token(
            &s,
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            JANE,
            None,
        )
    };
    assert_eq!(list().await.0, 403);

    // An invalid file: counted as a failure, and RBAC still decides.
    let failures = authz_reloads(&s, "failure").await;
    std::fs::write(&path, format!("{header}- {{type: Node, name: node}}\n")).unwrap();
    crate::support::eventually("the invalid file is refused", || async {
        authz_reloads(&s, "failure").await > failures
    })
    .await;
    assert_eq!(list().await.0, 403);

    // AlwaysAllow before RBAC: jane may list.
    let successes = authz_reloads(&s, "success").await;
    std::fs::write(
        &path,
        format!("{header}- {{type: AlwaysAllow, name: open}}\n- {{type: RBAC, name: rbac}}\n"),
    )
    .unwrap();
    crate::support::eventually("the new authorizers decide", || async {
        list().await.0 == 200
    })
    .await;
    assert!(authz_reloads(&s, "success").await > successes);
}
