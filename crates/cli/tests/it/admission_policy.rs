//! kubectl and a `ValidatingAdmissionPolicy` with a param `ConfigMap`, as a user meets them: the
//! policy, binding and param applied with kubectl, listed with their printer columns, the denial
//! kubectl prints, and the warning once the binding warns instead.

use crate::support::{TestServer, eventually};

const MANIFESTS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: limits
  namespace: default
data:
  maxKeys: \"1\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-keys
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - operations: [CREATE, UPDATE]
      apiGroups: [\"\"]
      apiVersions: [v1]
      resources: [configmaps]
  matchConditions:
  - name: not-the-params
    expression: object.metadata.name != 'limits'
  validations:
  - expression: \"!has(object.data) || object.data.size() <= int(params.data.maxKeys)\"
    messageExpression: \"'at most ' + params.data.maxKeys + ' keys'\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-keys-default
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef:
    name: limits
    namespace: default
    parameterNotFoundAction: Deny
";

fn header(listed: &str) -> Vec<&str> {
    listed
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

#[test]
fn kubectl_prints_a_policy_denial() {
    let server = TestServer::start();
    server.write("policy.yaml", MANIFESTS);
    server.kubectl_ok(&["apply", "-f", "policy.yaml"]);
    let listed = server.kubectl_ok(&["get", "validatingadmissionpolicies"]);
    assert_eq!(
        header(&listed),
        ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"],
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .nth(1)
            .is_some_and(|l| l
                .split_whitespace()
                .take(3)
                .eq(["max-keys", "1", "v1/ConfigMap"])),
        "{listed}"
    );
    let listed = server.kubectl_ok(&["get", "validatingadmissionpolicybindings"]);
    assert_eq!(
        header(&listed),
        ["NAME", "POLICYNAME", "PARAMREF", "AGE"],
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().take(3).eq([
                "max-keys-default",
                "max-keys",
                "default/limits"
            ])),
        "{listed}"
    );

    // The binding reaches the dispatcher through an informer: wait for a first denial.
    let mut attempt = 0;
    eventually("the policy denies", || {
        attempt += 1;
        let out = server.kubectl(&[
            "create",
            "configmap",
            &format!("probe-{attempt}"),
            "--from-literal=a=1",
            "--from-literal=b=2",
            "--dry-run=server",
        ]);
        String::from_utf8_lossy(&out.stderr).contains("denied request")
    });

    server.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two-keys\ndata:\n  a: b\n  c: d\n",
    );
    let out = server.kubectl(&["create", "-f", "cm.yaml"]);
    assert!(!out.status.success());
    // kubectl prints an Invalid status by its causes; this one has a message and no field, as
    // kube-apiserver's (`The namespaces "x" is invalid: : ValidatingAdmissionPolicy ...`).
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "The configmaps \"two-keys\" is invalid: : ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-default' denied request: at most 1 keys\n"
    );
    assert_eq!(
        server.kubectl_ok(&["create", "configmap", "one-key", "--from-literal=a=1"]),
        "configmap/one-key created\n"
    );

    // With `Warn`, the request succeeds and kubectl prints the warning.
    server.kubectl_ok(&[
        "patch",
        "validatingadmissionpolicybinding",
        "max-keys-default",
        "--type=merge",
        "-p",
        r#"{"spec":{"validationActions":["Warn","Audit"]}}"#,
    ]);
    let mut attempt = 0;
    eventually("the policy warns", || {
        attempt += 1;
        let out = server.kubectl(&[
            "create",
            "configmap",
            &format!("warn-probe-{attempt}"),
            "--from-literal=a=1",
            "--from-literal=b=2",
            "--dry-run=server",
        ]);
        out.status.success()
    });
    let out = server.kubectl(&[
        "create",
        "configmap",
        "warned",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "configmap/warned created\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Warning: Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-default': at most 1 keys\n"
    );
}
