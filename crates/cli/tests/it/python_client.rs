//! The Python `kubernetes` client (installed by `.ci/run`) against the real server.

use std::process::Command;

use crate::support::{TestServer, repo_root};

#[test]
fn python_kubernetes_client_flow() {
    let s = TestServer::start();
    let script = repo_root().join("crates/cli/tests/python/client_flow.py");
    // A signed PKCS#10 request and a certificate for the certificate signing request's flow.
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["py.example.com".into()]).unwrap();
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    let certificate = params.self_signed(&key).unwrap().pem();
    let out = Command::new("python3")
        .arg(&script)
        .env("KUBECONFIG", s.kubeconfig())
        .env("CSR_PEM", &csr)
        .env("CERT_PEM", &certificate)
        .output()
        .expect(
            "running python3 (the kubernetes package must be installed: pip install kubernetes)",
        );
    assert!(
        out.status.success(),
        "python client flow failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("python client flow: ok"));
}
