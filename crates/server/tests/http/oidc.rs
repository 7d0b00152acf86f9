//! OpenID Connect ID tokens (`--oidc-*`, `--authentication-config`) end to end: issuers in the
//! test ([`HttpsServer`] serving a discovery document and JWKS) and tokens signed with the RSA
//! key in `tests/fixtures/oidc-rsa.pem` (its public half: `oidc-rsa.jwk.json`).

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use crd_server::auth::oidc::OidcOptions;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, HttpsServer, TestServer, as_token, eventually};

const KEY_PEM: &[u8] = include_bytes!("../fixtures/oidc-rsa.pem");
const JWK: &str = include_str!("../fixtures/oidc-rsa.jwk.json");

/// An issuer whose JWKS is whatever the test puts in `keys`.
struct Issuer {
    server: HttpsServer,
    keys: Arc<Mutex<Vec<Value>>>,
    _ca: tempfile::NamedTempFile,
    ca_file: std::path::PathBuf,
}

impl Issuer {
    async fn start(keys: Vec<Value>) -> Issuer {
        let keys = Arc::new(Mutex::new(keys));
        let base: Arc<Mutex<String>> = Arc::default();
        let (served_keys, served_base) = (keys.clone(), base.clone());
        let server = HttpsServer::start(Arc::new(move |path: String, _: Bytes| {
            let base = served_base.lock().unwrap().clone();
            let keys = served_keys.lock().unwrap().clone();
            Box::pin(async move {
                match path.as_str() {
                    "/.well-known/openid-configuration" => (
                        200,
                        json!({"issuer": base, "jwks_uri": format!("{base}/keys")}).to_string(),
                    ),
                    "/keys" => (200, json!({"keys": keys}).to_string()),
                    _ => (404, "{}".into()),
                }
            })
        }))
        .await;
        base.lock().unwrap().clone_from(&server.base);
        let ca = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(ca.path(), &server.ca_pem).unwrap();
        Issuer {
            ca_file: ca.path().to_path_buf(),
            _ca: ca,
            server,
            keys,
        }
    }

    fn options(&self) -> OidcOptions {
        OidcOptions {
            issuer_url: self.server.base.clone(),
            client_id: "kubernetes".into(),
            ca_file: Some(self.ca_file.clone()),
            username_claim: "sub".into(),
            groups_claim: Some("groups".into()),
            groups_prefix: "oidc:".into(),
            ..OidcOptions::default()
        }
    }

    /// An RS256 token of `claims`, with `iss` and a 10-minute `exp` unless `claims` sets them.
    fn token(&self, claims: &Value) -> String {
        let mut all = json!({"iss": self.server.base, "aud": "kubernetes", "exp": now() + 600});
        for (k, v) in claims.as_object().unwrap() {
            if v.is_null() {
                all.as_object_mut().unwrap().remove(k);
            } else {
                all[k] = v.clone();
            }
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some("rsa-1".into());
        jsonwebtoken::encode(
            &header,
            &all,
            &jsonwebtoken::EncodingKey::from_rsa_pem(KEY_PEM).unwrap(),
        )
        .unwrap()
    }
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

fn jwk() -> Value {
    serde_json::from_str(JWK).unwrap()
}

async fn whoami(s: &TestServer, token: &str) -> (u16, Value) {
    as_token(
        s,
        Method::POST,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        token,
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await
}

/// `TokenReview`'s verdict on `token`, asked by the admin.
async fn review(s: &TestServer, token: &str) -> Value {
    let r = s
        .api(HttpVersion::Http2)
        .post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()["status"].clone()
}

#[tokio::test]
async fn an_id_token_authenticates_as_its_claims_say_and_rbac_judges_the_groups() {
    let issuer = Issuer::start(vec![jwk()]).await;
    let options = issuer.options();
    let s = TestServer::start_with(move |c| c.oidc = Some(options)).await;
    let token = issuer.token(&json!({"sub": "alice", "groups": ["dev", "ops"]}));
    let (code, body) = whoami(&s, &token).await;
    assert_eq!(code, 201, "{body}");
    let alice = format!("{}#alice", issuer.server.base);
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": alice, "groups": ["oidc:dev", "oidc:ops", "system:authenticated"]})
    );
    let status = review(&s, &token).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["username"], alice);
    // Authorized as that user and those groups.
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, body) = as_token(&s, Method::GET, path, &token, None).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            "configmaps is forbidden: User \"{alice}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        )
    );
    let binding = s
        .api(HttpVersion::Http2)
        .post(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "devs-view"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oidc:dev"}],
            }),
        )
        .await;
    assert_eq!(binding.status, 201, "{}", binding.text);
    eventually("the group's binding takes effect", || async {
        as_token(&s, Method::GET, path, &token, None).await.0 == 200
    })
    .await;
}

#[tokio::test]
async fn refused_id_tokens_are_401_and_token_review_says_why() {
    let issuer = Issuer::start(vec![jwk()]).await;
    let options = issuer.options();
    let s = TestServer::start_with(move |c| c.oidc = Some(options)).await;
    let good = issuer.token(&json!({"sub": "alice"}));
    let mut parts: Vec<String> = good.split('.').map(String::from).collect();
    // Another payload under the same signature.
    parts[1] = {
        use base64::Engine as _;
        let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut claims: Value = serde_json::from_slice(&enc.decode(&parts[1]).unwrap()).unwrap();
        claims["sub"] = json!("mallory");
        enc.encode(claims.to_string())
    };
    let tampered = parts.join(".");
    let es256 = {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some("rsa-1".into());
        jsonwebtoken::encode(
            &header,
            &json!({"iss": issuer.server.base, "aud": "kubernetes", "sub": "x", "exp": now() + 600}),
            &jsonwebtoken::EncodingKey::from_ec_pem(key.serialize_pem().as_bytes()).unwrap(),
        )
        .unwrap()
    };
    let expired_at = now() - 120;
    let cases: Vec<(&str, String, String)> = vec![
        (
            "expired",
            issuer.token(&json!({"sub": "a", "exp": expired_at})),
            "oidc: verify token: oidc: token is expired (Token Expiry: ".into(),
        ),
        (
            "for another client",
            issuer.token(&json!({"sub": "a", "aud": ["other", "more"]})),
            r#"oidc: verify token: oidc: expected audience "kubernetes" got ["other" "more"]"#.into(),
        ),
        (
            "not valid for another hour",
            issuer.token(&json!({"sub": "a", "nbf": now() + 3600})),
            "oidc: verify token: oidc: current time ".into(),
        ),
        (
            "signed with an algorithm not allowed",
            es256,
            r#"oidc: verify token: oidc: id token signed with unsupported algorithm, expected ["RS256"] got "ES256""#.into(),
        ),
        (
            "tampered",
            tampered,
            "oidc: verify token: failed to verify signature: failed to verify id token signature".into(),
        ),
        (
            "without a username",
            issuer.token(&json!({"sub": null})),
            r#"oidc: parse username claims "sub": claim not present"#.into(),
        ),
    ];
    for (what, token, why) in cases {
        let (code, body) = whoami(&s, &token).await;
        assert_eq!(code, 401, "{what}: {body}");
        assert_eq!(body["reason"], "Unauthorized", "{what}");
        let status = review(&s, &token).await;
        assert_eq!(status["authenticated"], Value::Null, "{what}: {status}");
        let error = status["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with(&format!("[invalid bearer token, {why}")),
            "{what}: {error}"
        );
    }
    // Another issuer's token is not OIDC's to judge: the bearer-token authenticators' error.
    let other = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &json!({"iss": "https://elsewhere.example", "aud": "kubernetes", "sub": "a", "exp": now() + 600}),
        &jsonwebtoken::EncodingKey::from_rsa_pem(KEY_PEM).unwrap(),
    )
    .unwrap();
    assert_eq!(whoami(&s, &other).await.0, 401);
    assert_eq!(review(&s, &other).await["error"], "invalid bearer token");
    // The good token still works.
    assert_eq!(whoami(&s, &good).await.0, 201);
}

#[tokio::test]
async fn a_key_the_issuer_publishes_later_is_fetched_when_a_token_needs_it() {
    // The issuer starts without keys, as one that is rotating them.
    let issuer = Issuer::start(Vec::new()).await;
    let options = OidcOptions {
        username_prefix: Some("-".into()),
        ..issuer.options()
    };
    let s = TestServer::start_with(move |c| c.oidc = Some(options)).await;
    let token = issuer.token(&json!({"sub": "carol"}));
    assert_eq!(whoami(&s, &token).await.0, 401);
    issuer.keys.lock().unwrap().push(jwk());
    eventually("the new key is fetched", || async {
        whoami(&s, &token).await.0 == 201
    })
    .await;
    assert_eq!(
        whoami(&s, &token).await.1["status"]["userInfo"]["username"],
        "carol"
    );
}

#[tokio::test]
async fn bad_oidc_flags_stop_start_up_with_upstreams_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crd_server::ServerConfig::loopback(dir.path());
    config.oidc = Some(OidcOptions {
        issuer_url: "http://127.0.0.1:1".into(),
        client_id: "kubernetes".into(),
        ..OidcOptions::default()
    });
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let store: Arc<dyn crd_storage::Store> =
        crd_storage::sqlite::SqliteStore::open(&dir.path().join("state.db")).unwrap();
    let err = crd_server::run(config, store, rx, |_| {})
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid authentication configuration: jwt[0].issuer.url: Invalid value: "http://127.0.0.1:1": URL scheme must be https"#
    );
}

/// Two issuers of one `AuthenticationConfiguration` file: the first maps claims with CEL (a
/// username from `email` with `email_verified` checked, groups from roles, a uid, an extra) and
/// validates claims and the resulting user; the second maps plain claims for several audiences.
/// Anonymous requests are served on `/livez` only.
#[tokio::test]
async fn an_authentication_configuration_file_sets_up_several_issuers_with_cel_mappings() {
    let corp = Issuer::start(vec![jwk()]).await;
    let partner = Issuer::start(vec![jwk()]).await;
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("      {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let file = format!(
        r#"apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {corp_url}
    audiences: [kubernetes]
    certificateAuthority: |
{corp_ca}
  claimMappings:
    username:
      expression: 'claims.email + ":corp"'
    groups:
      expression: 'claims.roles.map(r, "corp:" + r)'
    uid:
      claim: sub
    extra:
    - key: example.com/tenant
      valueExpression: 'has(claims.tenant) ? claims.tenant : ""'
  claimValidationRules:
  - expression: 'claims.email_verified == true'
    message: the email must be verified
  - claim: hd
    requiredValue: example.com
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: no system users
- issuer:
    url: {partner_url}
    audiences: [kubernetes, partner-cli]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
{partner_ca}
  claimMappings:
    username:
      claim: sub
      prefix: "partner:"
anonymous:
  enabled: true
  conditions:
  - path: /livez
"#,
        corp_url = corp.server.base,
        corp_ca = indent(&corp.server.ca_pem),
        partner_url = partner.server.base,
        partner_ca = indent(&partner.server.ca_pem),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("authn.yaml");
    std::fs::write(&path, file).unwrap();
    let s = TestServer::start_with(move |c| c.authentication_config = Some(path)).await;

    let jane = corp.token(&json!({
        "sub": "u-1", "email": "jane@example.com", "email_verified": true,
        "roles": ["dev", "ops"], "hd": "example.com", "tenant": "blue",
    }));
    let (code, body) = whoami(&s, &jane).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({
            "username": "jane@example.com:corp", "uid": "u-1",
            "groups": ["corp:dev", "corp:ops", "system:authenticated"],
            "extra": {"example.com/tenant": ["blue"]},
        })
    );
    // The second issuer, for its second audience.
    let bob = partner.token(&json!({"sub": "bob", "aud": "partner-cli"}));
    let (code, body) = whoami(&s, &bob).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "partner:bob", "groups": ["system:authenticated"]})
    );
    // Refusals, each in upstream's words.
    let base = json!({"sub": "u-2", "email": "x@example.com", "email_verified": true, "roles": [], "hd": "example.com"});
    let with = |patch: Value| {
        let mut claims = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            claims[k] = v.clone();
        }
        corp.token(&claims)
    };
    let cases = [
        (
            with(json!({"email_verified": false})),
            "[invalid bearer token, oidc: error evaluating claim validation expression: validation expression 'claims.email_verified == true' failed: the email must be verified]",
        ),
        (
            with(json!({"hd": "example.org"})),
            "[invalid bearer token, oidc: required claim hd value does not match. Got = example.org, want = example.com]",
        ),
        (
            with(json!({"email": "system:admin"})),
            "[invalid bearer token, oidc: error evaluating user info validation rule: validation expression '!user.username.startsWith('system:')' failed: no system users]",
        ),
        (
            partner.token(&json!({"sub": "bob", "aud": "elsewhere"})),
            r#"[invalid bearer token, oidc: verify token: oidc: expected audience in ["kubernetes" "partner-cli"] got ["elsewhere"]]"#,
        ),
    ];
    for (token, why) in cases {
        assert_eq!(whoami(&s, &token).await.0, 401, "{why}");
        assert_eq!(review(&s, &token).await["error"], why);
    }
    // Anonymous requests: `/livez` only.
    let anonymous = |path: &'static str| {
        let client = s.client(HttpVersion::Http1);
        let url = format!("{}{path}", s.url);
        async move { client.get(url).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(anonymous("/livez").await, 200);
    assert_eq!(anonymous("/readyz").await, 401);
    assert_eq!(anonymous("/version").await, 401);
}

#[tokio::test]
async fn a_bad_authentication_configuration_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let start = |file: &str, configure: &dyn Fn(&mut crd_server::ServerConfig)| {
        let path = dir.path().join("authn.yaml");
        std::fs::write(&path, file).unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut config = crd_server::ServerConfig::loopback(data.path());
        config.authentication_config = Some(path);
        configure(&mut config);
        async move {
            let (_tx, rx) = tokio::sync::watch::channel(false);
            let store: Arc<dyn crd_storage::Store> =
                crd_storage::sqlite::SqliteStore::open(&data.path().join("state.db")).unwrap();
            crd_server::run(config, store, rx, |_| {})
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let header = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\n";
    let invalid = format!(
        "{header}jwt:\n- issuer: {{url: https://kubernetes.default.svc.cluster.local, audiences: [a]}}\n  claimMappings: {{username: {{claim: sub}}}}\n"
    );
    assert_eq!(
        start(&invalid, &|_| {}).await,
        "invalid authentication configuration: [jwt[0].issuer.url: Invalid value: \"https://kubernetes.default.svc.cluster.local\": URL must not overlap with disallowed issuers: [https://kubernetes.default.svc.cluster.local], jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing]"
    );
    let anonymous = format!("{header}anonymous: {{enabled: true}}\n");
    assert_eq!(
        start(&anonymous, &|c| c.anonymous_auth_flag_set = true).await,
        "anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file"
    );
    assert_eq!(
        start(&anonymous, &|c| {
            c.oidc = Some(OidcOptions {
                issuer_url: "https://i.example".into(),
                client_id: "k".into(),
                ..OidcOptions::default()
            });
        })
        .await,
        "authentication-config file and oidc-* flags are mutually exclusive"
    );
    let typo = start(&format!("{header}jwts: []\n"), &|_| {}).await;
    assert!(
        typo.starts_with("failed to load authentication configuration from file ")
            && typo.contains("strict decoding error: "),
        "{typo}"
    );
}

/// The reload counter's value for `status`, from `/metrics`.
async fn reloads(s: &TestServer, status: &str) -> u64 {
    crate::support::metric(
        s,
        &format!(
            "apiserver_authentication_config_controller_automatic_reloads_total{{status=\"{status}\"}}"
        ),
    )
    .await
}

/// A changed file takes effect while the server runs; an invalid one is refused and the
/// authenticators in effect stay, as kube-apiserver reloads its authentication configuration.
#[tokio::test]
async fn a_changed_authentication_configuration_takes_effect_without_a_restart() {
    let one = Issuer::start(vec![jwk()]).await;
    let two = Issuer::start(vec![jwk()]).await;
    let entry = |issuer: &Issuer, prefix: &str| {
        let ca: Vec<String> = issuer
            .server
            .ca_pem
            .lines()
            .map(|l| format!("      {l}"))
            .collect();
        format!(
            "- issuer:\n    url: {}\n    audiences: [kubernetes]\n    certificateAuthority: |\n{}\n  claimMappings:\n    username: {{claim: sub, prefix: \"{prefix}\"}}\n",
            issuer.server.base,
            ca.join("\n")
        )
    };
    let header =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("authn.yaml");
    std::fs::write(&path, format!("{header}{}", entry(&one, "one:"))).unwrap();
    let file = path.clone();
    let s = TestServer::start_with(move |c| c.authentication_config = Some(file)).await;
    let (alice, bob) = (
        one.token(&json!({"sub": "alice"})),
        two.token(&json!({"sub": "bob"})),
    );
    assert_eq!(whoami(&s, &alice).await.0, 201);
    assert_eq!(whoami(&s, &bob).await.0, 401);

    // An invalid file: counted as a failure, and the first issuer still authenticates.
    let failures = reloads(&s, "failure").await;
    std::fs::write(&path, format!("{header}- issuer: {{url: http://nope}}\n")).unwrap();
    eventually("the invalid file is refused", || async {
        reloads(&s, "failure").await > failures
    })
    .await;
    assert_eq!(whoami(&s, &alice).await.0, 201);
    assert_eq!(whoami(&s, &bob).await.0, 401);

    // Both issuers, the first with another prefix.
    std::fs::write(
        &path,
        format!(
            "{header}{}{}",
            entry(&one, "first:"),
            entry(&two, "second:")
        ),
    )
    .unwrap();
    eventually("the second issuer is served", || async {
        whoami(&s, &bob).await.0 == 201
    })
    .await;
    assert_eq!(
        whoami(&s, &alice).await.1["status"]["userInfo"]["username"],
        "first:alice"
    );
    assert_eq!(
        whoami(&s, &bob).await.1["status"]["userInfo"]["username"],
        "second:bob"
    );
}
