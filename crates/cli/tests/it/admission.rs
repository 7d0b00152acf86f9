//! kubectl and an admission webhook, as a user meets them: a `ValidatingWebhookConfiguration`
//! applied with kubectl, listed with its printer columns, and the denial kubectl prints.

use std::sync::Arc;

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{TestServer, eventually};

/// A one-path HTTPS webhook (HTTP/1.1, one request per connection) that denies `ConfigMaps` whose
/// name starts with `forbidden` with 403 Forbidden. Returns its URL and `caBundle`.
fn start_webhook(rt: &tokio::runtime::Runtime) -> (String, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("ca key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("cert");
    let tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).expect("pem")],
            PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("key pem"),
        )
        .expect("tls config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let body = loop {
                    let Ok(n) = tls.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some(end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + length {
                        break buf[end + 4..end + 4 + length].to_vec();
                    }
                };
                let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let req = &review["request"];
                let name = req["name"].as_str().unwrap_or("");
                let mut response = json!({"uid": req["uid"], "allowed": true});
                if name.starts_with("forbidden") {
                    response["allowed"] = json!(false);
                    response["status"] = json!({"code": 403, "reason": "Forbidden",
                        "message": format!("configmaps named {name} are not allowed")});
                }
                let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                 "response": response})
                .to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}",
                    out.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (
        format!("https://{addr}/validate"),
        base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
    )
}

#[test]
fn kubectl_prints_a_webhook_denial() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, ca_bundle) = start_webhook(&rt);
    let server = TestServer::start();
    server.write(
        "webhook.yaml",
        &format!(
            "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deny-forbidden
webhooks:
- name: deny.example.com
  clientConfig:
    url: {url}
    caBundle: {ca_bundle}
  rules:
  - operations: [CREATE]
    apiGroups: [\"\"]
    apiVersions: [v1]
    resources: [configmaps]
  sideEffects: None
  admissionReviewVersions: [v1]
"
        ),
    );
    server.kubectl_ok(&["apply", "-f", "webhook.yaml"]);
    let listed = server.kubectl_ok(&["get", "validatingwebhookconfigurations"]);
    let header: Vec<&str> = listed
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"], "{listed}");
    assert!(
        listed
            .lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().take(2).eq(["deny-forbidden", "1"])),
        "{listed}"
    );

    // The configuration reaches the dispatcher through an informer: wait for a first denial.
    let mut attempt = 0;
    eventually("the webhook denies", || {
        attempt += 1;
        let out = server.kubectl(&[
            "create",
            "configmap",
            &format!("forbidden-probe-{attempt}"),
            "--dry-run=server",
        ]);
        String::from_utf8_lossy(&out.stderr).contains("denied the request")
    });

    server.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forbidden-cm\ndata:\n  a: b\n",
    );
    let out = server.kubectl(&["create", "-f", "cm.yaml"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error from server (Forbidden): error when creating \"cm.yaml\": admission webhook \"deny.example.com\" denied the request: configmaps named forbidden-cm are not allowed\n"
    );
    server.write(
        "ok.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: allowed-cm\n",
    );
    assert_eq!(
        server.kubectl_ok(&["create", "-f", "ok.yaml"]),
        "configmap/allowed-cm created\n"
    );
}
