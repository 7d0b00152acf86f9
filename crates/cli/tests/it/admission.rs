//! kubectl and an admission webhook, as a user meets them: a `ValidatingWebhookConfiguration`
//! applied with kubectl, listed with its printer columns, and the denial kubectl prints.

use base64::Engine as _;
use serde_json::json;

use crate::support::{TestServer, eventually, https_json_service};

/// A webhook that denies `ConfigMaps` whose name starts with `forbidden` with 403 Forbidden.
/// Returns its URL and `caBundle`.
fn start_webhook(rt: &tokio::runtime::Runtime) -> (String, String) {
    let (base, ca) = https_json_service(rt, |review| {
        let req = &review["request"];
        let name = req["name"].as_str().unwrap_or("");
        let mut response = json!({"uid": req["uid"], "allowed": true});
        if name.starts_with("forbidden") {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "reason": "Forbidden",
                "message": format!("configmaps named {name} are not allowed")});
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    });
    (
        format!("{base}/validate"),
        base64::engine::general_purpose::STANDARD.encode(ca),
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
