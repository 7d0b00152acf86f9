//! CEL validation rules through kubectl: the seed's replicas example, messages, transition
//! rules, ratcheting warnings, and rules refused when the CRD is written.

use crate::support::TestServer;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.minReplicas <= self.replicas
              message: replicas should be greater than or equal to minReplicas.
            - rule: self.replicas <= self.maxReplicas
              message: replicas should be smaller than or equal to maxReplicas.
            properties:
              minReplicas: {type: integer}
              replicas: {type: integer}
              maxReplicas: {type: integer}
              mode:
                type: string
                x-kubernetes-validations:
                - rule: self == oldSelf
                  message: Value is immutable
              size:
                type: integer
                x-kubernetes-validations:
                - rule: self < 10
            required: [minReplicas, replicas, maxReplicas]
";

fn object(replicas: i64, mode: &str, size: i64) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  minReplicas: 0\n  replicas: {replicas}\n  maxReplicas: 10\n  mode: {mode}\n  size: {size}\n"
    )
}

#[test]
fn cel_rules_through_kubectl() {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", CRD, "crontabs.stable.example.com");

    // The seed's example: replicas above maxReplicas.
    s.write("ct.yaml", &object(20, "a", 1));
    let out = s.kubectl(&["apply", "-f", "ct.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The CronTab \"my-new-cron-object\" is invalid: spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."), "{err}");

    // A valid object; then a transition rule forbids changing `mode`.
    s.write("ct.yaml", &object(5, "a", 1));
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    s.write("ct.yaml", &object(5, "b", 1));
    let out = s.kubectl(&["apply", "-f", "ct.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.mode: Invalid value: \"string\": Value is immutable"),
        "{err}"
    );

    // Ratcheting: `size` stored before the rule tightened does not block other changes while it
    // stays unchanged; kubectl prints the ratcheted failure as a warning.
    s.write(
        "crd.yaml",
        &CRD.replace("rule: self < 10", "rule: self < 1"),
    );
    s.kubectl_ok(&["apply", "-f", "crd.yaml"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.write("ct.yaml", &object(6, "a", 1));
    let out = s.kubectl(&["apply", "-f", "ct.yaml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Warning: spec.size: Invalid value: \"integer\": failed rule: self < 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Rules that cannot work are refused when the CRD is written.
    s.write(
        "bad.yaml",
        &CRD.replace(
            "rule: self.minReplicas <= self.replicas",
            "rule: self.nonExistingField > 0",
        ),
    );
    let out = s.kubectl(&["apply", "-f", "bad.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.nonExistingField > 0\": compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^"),
        "{err}"
    );
}
