//! kubectl and a `ValidatingAdmissionPolicy` with a param `ConfigMap`, as a user meets them: the
//! policy, binding and param applied with kubectl, listed with their printer columns, the denial
//! kubectl prints, the warning once the binding warns instead, the audit annotation the `Audit`
//! action leaves in the audit log, and the type-checking status the policy gets.

use crate::support::{TestServer, eventually, header};

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

#[test]
fn a_validating_admission_policy_with_a_param_config_map_denies_warns_and_audits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit_policy = dir.path().join("audit-policy.yaml");
    std::fs::write(
        &audit_policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [configmaps]\n",
    )
    .expect("audit policy");
    let log = dir.path().join("audit.log");
    let server = TestServer::start_with(
        dir,
        &[
            "--audit-policy-file",
            audit_policy.to_str().expect("utf-8 path"),
            "--audit-log-path",
            log.to_str().expect("utf-8 path"),
        ],
    );
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

    // With `Audit`, the failure is an annotation on the request's audit event (the warned
    // create's, or a dry-run probe's: the same failure).
    let annotation = "validation.policy.admission.k8s.io/validation_failure";
    let mut event = serde_json::Value::Null;
    eventually("the audit event carries the validation failure", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| {
                e["stage"] == "ResponseComplete"
                    && e["verb"] == "create"
                    && e["objectRef"]["resource"] == "configmaps"
                    && e["annotations"].get(annotation).is_some()
            });
        match found {
            Some(e) => {
                event = e;
                true
            }
            None => false,
        }
    });
    let failure: serde_json::Value = serde_json::from_str(
        event["annotations"][annotation]
            .as_str()
            .expect("a string annotation"),
    )
    .expect("a JSON annotation");
    assert_eq!(
        failure,
        serde_json::json!([{
            "message": "at most 1 keys",
            "policy": "max-keys",
            "binding": "max-keys-default",
            "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"],
        }])
    );

    // The status controller type-checked the policy against ConfigMap's schema (`data` is a
    // map of strings): no warnings.
    eventually("the policy's status is observed", || {
        let out = server.kubectl(&[
            "get",
            "validatingadmissionpolicy",
            "max-keys",
            "-o",
            "jsonpath={.status.observedGeneration}",
        ]);
        String::from_utf8_lossy(&out.stdout) == "1"
    });
    assert_eq!(
        server.kubectl_ok(&[
            "get",
            "validatingadmissionpolicy",
            "max-keys",
            "-o",
            "jsonpath={.status.typeChecking.expressionWarnings}",
        ]),
        ""
    );
}
