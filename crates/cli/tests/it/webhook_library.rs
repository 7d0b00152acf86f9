//! The project's webhook library as an operator author uses it: one function for a validating
//! webhook and one for a mutating webhook, registered with kubectl, and what kubectl shows:
//! the denial, the added label, and `failurePolicy` Ignore/Fail once the webhook is down.

use crd_webhook::{Denial, WebhookServer, self_signed};
use serde_json::Value;

use crate::support::{TestServer, eventually};

/// Refuses `ConfigMaps` whose name starts with `forbidden`.
fn deny_forbidden(request: &Value) -> Result<Vec<String>, Denial> {
    let name = request
        .pointer("/object/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.starts_with("forbidden") {
        Err(Denial::forbidden(format!("{name} is not allowed here")))
    } else {
        Ok(Vec::new())
    }
}

/// Labels every `ConfigMap` with `team: a`.
#[allow(clippy::unnecessary_wraps)] // The `Mutator` signature.
fn label_team(mut object: Value, _request: &Value) -> Result<Value, Denial> {
    object["metadata"]["labels"]["team"] = Value::from("a");
    Ok(object)
}

fn configuration(kind: &str, name: &str, url: &str, ca: &str, failure: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: {kind}
metadata:
  name: {name}
webhooks:
- name: {name}
  clientConfig:
    url: {url}
    caBundle: {ca}
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  failurePolicy: {failure}
  sideEffects: None
  admissionReviewVersions: [v1]
"
    )
}

#[test]
fn validating_and_mutating_webhooks_written_with_the_library() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let certs = self_signed(&["127.0.0.1"]).unwrap();
    let serve = || {
        WebhookServer::new(&certs.cert_pem, &certs.key_pem)
            .unwrap()
            .bind("127.0.0.1:0".parse().unwrap())
    };
    let validating = rt
        .block_on(serve().spawn_validating(deny_forbidden))
        .unwrap();
    let mutating = rt.block_on(serve().spawn_mutating(label_team)).unwrap();
    let s = TestServer::start();
    let ca = &certs.ca_bundle_base64;
    s.write(
        "hooks.yaml",
        &format!(
            "{}---\n{}",
            configuration(
                "ValidatingWebhookConfiguration",
                "deny.example.com",
                &validating.url(),
                ca,
                "Fail"
            ),
            configuration(
                "MutatingWebhookConfiguration",
                "label.example.com",
                &mutating.url(),
                ca,
                "Fail"
            ),
        ),
    );
    s.kubectl_ok(&["apply", "-f", "hooks.yaml"]);

    // The denial, as kubectl prints it (once the server follows the new configurations).
    let mut stderr = String::new();
    eventually("the validating webhook denies", || {
        let out = s.kubectl(&["create", "configmap", "forbidden-1"]);
        stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        !out.status.success() && stderr.contains("denied the request")
    });
    assert_eq!(
        stderr,
        "error: failed to create configmap: admission webhook \"deny.example.com\" denied the request: forbidden-1 is not allowed here"
    );

    // The mutation: kubectl shows the label the webhook added.
    eventually("the mutating webhook labels", || {
        let _ = s.kubectl(&["delete", "configmap", "plain", "--ignore-not-found"]);
        s.kubectl_ok(&["create", "configmap", "plain"]);
        s.kubectl_ok(&[
            "get",
            "configmap",
            "plain",
            "-o",
            "jsonpath={.metadata.labels.team}",
        ]) == "a"
    });

    // The validating webhook goes down: failurePolicy Fail refuses, Ignore lets requests through.
    rt.block_on(validating.shutdown());
    let out = s.kubectl(&["create", "configmap", "while-down"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Internal error occurred: failed calling webhook \"deny.example.com\""),
        "{stderr}"
    );
    s.kubectl_ok(&[
        "patch",
        "validatingwebhookconfiguration",
        "deny.example.com",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]"#,
    ]);
    eventually("failurePolicy Ignore lets the request through", || {
        s.kubectl(&["create", "configmap", "while-down-ignored"])
            .status
            .success()
    });
    rt.block_on(mutating.shutdown());
}
