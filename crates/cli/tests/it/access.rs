//! Authentication and authorization against the real binary: tokens from `--token-auth-file`,
//! client certificates from `--client-ca-file`, and an ABAC `--authorization-policy-file`
//! (`--authorization-mode=ABAC`, whose denials end with upstream's `: No policy matched.`).

use serde_json::{Value, json};

use crate::support::TestServer;

const POLICY: &str = r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","nonResourcePath":"*","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"team-a","resource":"crontabs","apiGroup":"stable.example.com","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"devs","namespace":"*","resource":"*","apiGroup":"*"}}
"#;

/// PEM texts of a client CA, and a certificate and key it signed.
struct ClientCert {
    ca: String,
    cert: String,
    key: String,
}

fn client_cert(cn: &str, org: &str) -> ClientCert {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, "client-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params
        .distinguished_name
        .push(DnType::OrganizationName, org);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    ClientCert {
        ca: ca_cert.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

#[tokio::test]
async fn tokens_certificates_and_policy() {
    let carol = client_cert("carol", "devs");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("tokens.csv"),
        "admin-token-0123456789,admin,admin,\"system:masters\"\nbob-token-0123456789,bob,bob-uid\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("policy.jsonl"), POLICY).unwrap();
    std::fs::write(dir.path().join("client-ca.crt"), &carol.ca).unwrap();
    let tokens = data.join("tokens.csv");
    let policy = dir.path().join("policy.jsonl");
    let ca = dir.path().join("client-ca.crt");
    let s = tokio::task::spawn_blocking(move || {
        let s = TestServer::start_with(
            dir,
            &[
                "--token-auth-file",
                tokens.to_str().unwrap(),
                "--authorization-mode",
                "ABAC",
                "--authorization-policy-file",
                policy.to_str().unwrap(),
                "--client-ca-file",
                ca.to_str().unwrap(),
                // Requests without credentials are refused (401), not anonymous.
                "--anonymous-auth=false",
            ],
        );
        s.apply_crd(
            "crd.yaml",
            &crate::support::crontab_crd(),
            "crontabs.stable.example.com",
        );
        s.kubectl_ok(&["create", "namespace", "team-a"]);
        s
    })
    .await
    .unwrap();

    let _ = rustls::crypto::ring::default_provider().install_default();
    let server_ca = reqwest::Certificate::from_pem(&s.ca_pem).unwrap();
    let plain = reqwest::Client::builder()
        .tls_certs_only([server_ca.clone()])
        .build()
        .unwrap();
    let identity =
        reqwest::Identity::from_pem(format!("{}{}", carol.cert, carol.key).as_bytes()).unwrap();
    let with_cert = reqwest::Client::builder()
        .tls_certs_only([server_ca])
        .identity(identity)
        .build()
        .unwrap();
    let get = |client: &reqwest::Client, path: &str, token: Option<&str>| {
        let mut req = client.get(format!("{}{path}", s.url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let crontabs = "/apis/stable.example.com/v1/namespaces/team-a/crontabs";

    // Authentication: no credentials and a wrong token are 401.
    for token in [None, Some("wrong")] {
        let r = get(&plain, crontabs, token).await.unwrap();
        assert_eq!(r.status(), 401);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["reason"], "Unauthorized");
    }
    // The client certificate is an identity (CN carol, group devs: allowed everything).
    let r = with_cert
        .post(format!("{}/api/v1/namespaces", s.url))
        .header("Content-Type", "application/json")
        .body(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "by-carol"}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    // bob may read crontabs in team-a, and nothing else.
    let bob_token = "bob-token-0123456789";
    let bob = Some(bob_token);
    assert_eq!(get(&plain, crontabs, bob).await.unwrap().status(), 200);
    assert_eq!(get(&plain, "/apis", bob).await.unwrap().status(), 200);
    let r = get(&plain, "/api/v1/namespaces", bob).await.unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"bob\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope: No policy matched."
    );
    let r = plain
        .post(format!("{}{crontabs}", s.url))
        .bearer_auth(bob_token)
        .header("Content-Type", "application/json")
        .body(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["message"],
        "crontabs.stable.example.com is forbidden: User \"bob\" cannot create resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"team-a\": No policy matched."
    );

    // kubectl shows the denial as Kubernetes' Forbidden error.
    let kubeconfig = s.kubeconfig();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .args([
                "--token",
                "bob-token-0123456789",
                "-n",
                "team-b",
                "get",
                "crontabs",
            ])
            .env("KUBECONFIG", kubeconfig)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error from server (Forbidden): crontabs.stable.example.com is forbidden: User \"bob\" cannot list resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"team-b\": No policy matched."),
        "{err}"
    );
}
