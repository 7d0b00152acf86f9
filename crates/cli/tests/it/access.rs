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

/// Client certificates as the Kubernetes documentation makes them with openssl (`x509 -req`
/// without extensions gives an X.509 v1 certificate, which Go accepts), used with kubectl's
/// `--client-certificate`; a certificate wins over a token, a certificate that does not verify
/// lets a valid token through and is 401 alone, never a failed handshake.
#[test]
fn openssl_client_certificates_with_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(&pki)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for ca in ["ca", "other-ca"] {
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{ca}.key"),
            "-out",
            &format!("{ca}.crt"),
            "-days",
            "1",
            "-subj",
            &format!("/CN={ca}"),
        ]);
    }
    for (user, ca) in [("alice", "ca"), ("mallory", "other-ca")] {
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{user}.key"),
            "-out",
            &format!("{user}.csr"),
            "-subj",
            &format!("/CN={user}/O=devs"),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            &format!("{user}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{user}.crt"),
            "-days",
            "1",
        ]);
    }
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let tokens = data.join("tokens.csv");
    std::fs::write(
        &tokens,
        "admin-token-0123456789,admin,admin,\"system:masters\"\nbob-token-0123456789,bob,bob-uid\n",
    )
    .unwrap();
    let ca = pki.join("ca.crt");
    let s = TestServer::start_with(
        dir,
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--client-ca-file",
            ca.to_str().unwrap(),
        ],
    );
    let whoami = |user: &str, token: Option<&str>| {
        let (cert, key) = (
            pki.join(format!("{user}.crt")),
            pki.join(format!("{user}.key")),
        );
        let mut args = vec![
            "auth".to_string(),
            "whoami".into(),
            "-o".into(),
            "jsonpath={.status.userInfo.username}".into(),
            format!("--client-certificate={}", cert.display()),
            format!("--client-key={}", key.display()),
        ];
        if let Some(t) = token {
            args.push(format!("--token={t}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = s.kubectl(&args);
        (
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The kubeconfig's admin token goes with every kubectl call; `--token` replaces it.
    let (user, err) = whoami("alice", Some("wrong-token"));
    assert_eq!(user, "alice", "{err}");
    let (user, err) = whoami("mallory", Some("bob-token-0123456789"));
    assert_eq!(user, "bob", "{err}");
    // Alone, a certificate that does not verify is a 401 (not anonymous, not a TLS failure).
    let server_ca = pki.join("server-ca.crt");
    std::fs::write(&server_ca, &s.ca_pem).unwrap();
    let curl = |user: &str| {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
            .arg(&server_ca)
            .arg("--cert")
            .arg(pki.join(format!("{user}.crt")))
            .arg("--key")
            .arg(pki.join(format!("{user}.key")))
            .arg(format!("{}/api", s.url))
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(curl("mallory"), "401");
    assert_eq!(curl("alice"), "200");
}
