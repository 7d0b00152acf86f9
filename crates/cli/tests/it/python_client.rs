//! The Python `kubernetes` client (installed by `.ci/run`) against the real server.

use std::process::Command;

use crate::support::{TestServer, repo_root};

#[test]
fn python_kubernetes_client_flow() {
    let s = TestServer::start();
    let script = repo_root().join("crates/cli/tests/python/client_flow.py");
    let out = Command::new("python3")
        .arg(&script)
        .env("KUBECONFIG", s.kubeconfig())
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
