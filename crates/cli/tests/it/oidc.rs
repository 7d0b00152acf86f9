//! OpenID Connect through the real kubectl: an issuer (Python's `http.server` over TLS, serving
//! a discovery document and JWKS from a directory), a server started with `--oidc-*` flags, and
//! `kubectl --token <ID token>` as a user of an identity provider types it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::json;

use crate::support::{TestServer, eventually};

/// Serves the files of a directory over HTTPS on a free port of 127.0.0.1.
const ISSUER_PY: &str = r#"
import functools, http.server, ssl, sys
root, cert, key = sys.argv[1:4]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"#;

/// An identity provider: its URL, CA file, and signing key (ES256, `kid` `ec-1`).
struct Idp {
    child: Child,
    dir: tempfile::TempDir,
    url: String,
    key: KeyPair,
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Idp {
    fn start() -> Idp {
        let dir = tempfile::tempdir().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let signer = Issuer::new(ca_params, ca_key);
        let tls_key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&tls_key, &signer)
            .unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.path().join("tls.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("tls.key"), tls_key.serialize_pem()).unwrap();
        let root = dir.path().join("www");
        std::fs::create_dir_all(root.join(".well-known")).unwrap();
        let mut child = Command::new("python3")
            .args(["-c", ISSUER_PY])
            .arg(&root)
            .arg(dir.path().join("tls.pem"))
            .arg(dir.path().join("tls.key"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the test's identity provider");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let url = format!("https://127.0.0.1:{}", port.trim());
        // The signing key's public half, as a JWK (the point's X and Y after the 0x04 byte).
        let key = KeyPair::generate().unwrap();
        let point = key.public_key_raw();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "ec-1",
            "x": b64(&point[1..33]), "y": b64(&point[33..65]),
        }]});
        std::fs::write(root.join("jwks.json"), jwks.to_string()).unwrap();
        std::fs::write(
            root.join(".well-known/openid-configuration"),
            json!({"issuer": url, "jwks_uri": format!("{url}/jwks.json")}).to_string(),
        )
        .unwrap();
        Idp {
            child,
            dir,
            url,
            key,
        }
    }

    /// An ID token for the `kubectl` client with these claims, valid for ten minutes.
    fn token(&self, claims: &serde_json::Value) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut all = json!({"iss": self.url, "aud": "kubectl", "iat": now, "exp": now + 600});
        for (k, v) in claims.as_object().unwrap() {
            all[k] = v.clone();
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some("ec-1".into());
        jsonwebtoken::encode(
            &header,
            &all,
            &jsonwebtoken::EncodingKey::from_ec_pem(self.key.serialize_pem().as_bytes()).unwrap(),
        )
        .unwrap()
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn kubectl_authenticates_with_an_id_token_and_rbac_judges_its_groups() {
    let idp = Idp::start();
    let ca = idp.dir.path().join("ca.pem");
    let s = TestServer::start_with(
        tempfile::tempdir().unwrap(),
        &[
            "--oidc-issuer-url",
            &idp.url,
            "--oidc-client-id=kubectl",
            "--oidc-ca-file",
            ca.to_str().unwrap(),
            "--oidc-username-claim=email",
            "--oidc-groups-claim=groups",
            "--oidc-signing-algs=ES256",
            "--oidc-required-claim=hd=example.com",
        ],
    );
    let jane = idp.token(&json!({
        "sub": "1234", "email": "jane@example.com", "email_verified": true,
        "groups": ["platform"], "hd": "example.com",
    }));
    let out = s.kubectl_ok(&["auth", "whoami", "--token", &jane]);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().eq(["Username", "jane@example.com"])),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.split_whitespace().eq([
            "Groups",
            "[platform",
            "system:authenticated]"
        ])),
        "{out}"
    );
    // Refused tokens: kubectl's Unauthorized.
    for (what, token) in [
        (
            "another hosted domain",
            idp.token(&json!({"email": "eve@example.org", "hd": "example.org"})),
        ),
        (
            "an unverified email",
            idp.token(
                &json!({"email": "jane@example.com", "email_verified": false, "hd": "example.com"}),
            ),
        ),
    ] {
        let out = s.kubectl(&["auth", "whoami", "--token", &token]);
        assert!(!out.status.success(), "{what}");
        assert!(
            stderr(&out).contains("error: You must be logged in to the server (Unauthorized)"),
            "{what}: {}",
            stderr(&out)
        );
    }
    // Authorized as jane, in `platform`.
    let create: &[&str] = &[
        "--token",
        &jane,
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=strict",
    ];
    let out = s.kubectl(create);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "configmaps is forbidden: User \"jane@example.com\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
        ),
        "{}",
        stderr(&out)
    );
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "platform-edit",
        "--clusterrole=edit",
        "--group=platform",
    ]);
    eventually("the group's binding lets jane create", || {
        s.kubectl(create).status.success()
    });
    let owner = s.kubectl_ok(&[
        "get",
        "configmap",
        "settings",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[0].manager}",
    ]);
    assert_eq!(owner, "kubectl-create");
}

#[test]
fn bad_oidc_flags_stop_start_up_with_kube_apiservers_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--oidc-issuer-url=http://127.0.0.1:1", "--oidc-client-id=k"],
            r#"issuer.url: Invalid value: "http://127.0.0.1:1": URL scheme must be https"#,
        ),
        (
            &["--oidc-issuer-url=https://127.0.0.1:1"],
            "oidc-issuer-url and oidc-client-id must be specified together",
        ),
        (
            &[
                "--oidc-issuer-url=https://127.0.0.1:1",
                "--oidc-client-id=k",
                "--oidc-signing-algs=HS256",
            ],
            r#"oidc: unsupported signing alg: "HS256""#,
        ),
    ];
    for (flags, message) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
            .args(["serve", "--ephemeral", "--secure-port=0"])
            .args(*flags)
            .output()
            .expect("running crd-apiserver");
        assert!(!out.status.success(), "{flags:?}");
        assert!(
            stderr(&out).contains(message),
            "{flags:?}: {}",
            stderr(&out)
        );
    }
}

/// The same identity provider through an `AuthenticationConfiguration` file, as a platform team
/// writes one: a CEL username, groups from a claim, a claim validation rule.
#[test]
fn kubectl_authenticates_through_an_authentication_configuration_file() {
    let idp = Idp::start();
    let ca = std::fs::read_to_string(idp.dir.path().join("ca.pem")).unwrap();
    let ca: Vec<String> = ca.lines().map(|l| format!("      {l}")).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("authn.yaml");
    std::fs::write(
        &file,
        format!(
            r#"apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {url}
    audiences: [kubectl]
    certificateAuthority: |
{ca}
  claimMappings:
    username:
      expression: '"idp:" + claims.preferred_username'
    groups:
      claim: groups
      prefix: "idp:"
  claimValidationRules:
  - expression: 'claims.preferred_username != "root"'
    message: root may not log in
anonymous:
  enabled: true
  conditions:
  - path: /livez
"#,
            url = idp.url,
            ca = ca.join("\n"),
        ),
    )
    .unwrap();
    let s = TestServer::start_with(dir, &["--authentication-config", file.to_str().unwrap()]);
    let sam = idp.token(&json!({"preferred_username": "sam", "groups": ["sre"]}));
    let out = s.kubectl_ok(&["auth", "whoami", "--token", &sam]);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().eq(["Username", "idp:sam"])),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.split_whitespace().eq([
            "Groups",
            "[idp:sre",
            "system:authenticated]"
        ])),
        "{out}"
    );
    // Anonymous requests reach `/livez` only.
    let anonymous = |path: &str| {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
            .arg(s.data_dir().join("ca.crt"))
            .arg(format!("{}{path}", s.url))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap()
    };
    assert_eq!(anonymous("/livez"), "200");
    assert_eq!(anonymous("/version"), "401");
    let root = idp.token(&json!({"preferred_username": "root"}));
    let out = s.kubectl(&["auth", "whoami", "--token", &root]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
    // A changed file takes effect without a restart (read again every 2 s).
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(r#"'"idp:" + claims"#, r#"'"corp:" + claims"#),
    )
    .unwrap();
    eventually("the changed username mapping takes effect", || {
        s.kubectl_ok(&["auth", "whoami", "--token", &sam])
            .lines()
            .any(|l| l.split_whitespace().eq(["Username", "corp:sam"]))
    });
    // The file and the flags are exclusive, as for kube-apiserver.
    let out = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args([
            "serve",
            "--ephemeral",
            "--secure-port=0",
            "--authentication-config",
        ])
        .arg(&file)
        .args(["--oidc-issuer-url", &idp.url, "--oidc-client-id=kubectl"])
        .output()
        .expect("running crd-apiserver");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("authentication-config file and oidc-* flags are mutually exclusive"),
        "{}",
        stderr(&out)
    );
}
