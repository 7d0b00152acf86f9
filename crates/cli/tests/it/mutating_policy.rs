//! kubectl and `MutatingAdmissionPolicy` as a user meets them: policies, bindings and a param
//! `ConfigMap` applied with kubectl, listed with their printer columns, and their defaults
//! shown by `kubectl get -o yaml`: a param-driven apply configuration that labels a CRD object
//! and defaults a spec field, and a JSON patch (with `jsonpatch.escapeKey`) that labels a
//! `ConfigMap`.

use crate::support::{TestServer, crontab_crd, eventually, header, my_crontab};

const MANIFESTS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: crontab-defaults
  namespace: default
data:
  replicas: \"3\"
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: crontab-defaults
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: [stable.example.com]
      apiVersions: [v1]
      resources: [crontabs]
  matchConditions:
  - name: no-replicas-yet
    expression: \"!has(object.spec.replicas)\"
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{
          metadata: Object.metadata{labels: {'managed-by': 'policy'}},
          spec: Object.spec{replicas: int(params.data.replicas)}
        }
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: crontab-defaults
spec:
  policyName: crontab-defaults
  paramRef:
    name: crontab-defaults
    namespace: default
    parameterNotFoundAction: Deny
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: team-label
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: [\"\"]
      apiVersions: [v1]
      resources: [configmaps]
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [
          JSONPatch{op: 'add', path: '/metadata/labels',
                    value: has(object.metadata.labels) ? object.metadata.labels : {}},
          JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/team'),
                    value: 'platform'}
        ]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: team-label
spec:
  policyName: team-label
";

#[test]
fn a_mutating_admission_policy_sets_a_default() {
    let server = TestServer::start();
    server.apply_crd(
        "crontab.yaml",
        &crontab_crd(),
        "crontabs.stable.example.com",
    );
    server.write("policies.yaml", MANIFESTS);
    server.kubectl_ok(&["apply", "-f", "policies.yaml"]);
    let listed = server.kubectl_ok(&["get", "mutatingadmissionpolicies"]);
    assert_eq!(
        header(&listed),
        ["NAME", "MUTATIONS", "PARAMKIND", "AGE"],
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().take(3).eq([
                "crontab-defaults",
                "1",
                "v1/ConfigMap"
            ])),
        "{listed}"
    );
    let listed = server.kubectl_ok(&["get", "mutatingadmissionpolicybindings"]);
    assert_eq!(
        header(&listed),
        ["NAME", "POLICYNAME", "PARAMREF", "AGE"],
        "{listed}"
    );

    // Policies reach the dispatcher through an informer: wait until a server-side dry run
    // comes back mutated.
    server.write("crontab-object.yaml", &my_crontab());
    eventually("both policies are in effect", || {
        let crontab = server.kubectl(&[
            "create",
            "-f",
            "crontab-object.yaml",
            "--dry-run=server",
            "-o",
            "yaml",
        ]);
        let cm = server.kubectl(&[
            "create",
            "configmap",
            "probe",
            "--from-literal=a=b",
            "--dry-run=server",
            "-o",
            "yaml",
        ]);
        String::from_utf8_lossy(&crontab.stdout).contains("managed-by: policy")
            && String::from_utf8_lossy(&cm.stdout).contains("example.com/team: platform")
    });

    // The CRD object: labelled, and `spec.replicas` defaulted from the param.
    server.kubectl_ok(&["apply", "-f", "crontab-object.yaml"]);
    let yaml = server.kubectl_ok(&["get", "crontab", "my-new-cron-object", "-o", "yaml"]);
    let obj: serde_json::Value = serde_saphyr::from_str(&yaml).expect("yaml");
    assert_eq!(obj["metadata"]["labels"]["managed-by"], "policy", "{yaml}");
    assert_eq!(obj["spec"]["replicas"], 3, "{yaml}");
    assert_eq!(obj["spec"]["image"], "my-awesome-cron-image", "{yaml}");

    // The param drives the default.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "crontab-defaults",
        "--type=merge",
        "-p",
        "{\"data\":{\"replicas\":\"5\"}}",
    ]);
    server.write(
        "second.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: second\nspec:\n  cronSpec: \"* * * * *\"\n",
    );
    server.kubectl_ok(&["create", "-f", "second.yaml"]);
    let replicas = server.kubectl_ok(&[
        "get",
        "crontab",
        "second",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(replicas, "5");

    // An object that sets the field keeps its value (the match condition skips it).
    server.write(
        "third.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: third\nspec:\n  replicas: 1\n",
    );
    server.kubectl_ok(&["create", "-f", "third.yaml"]);
    let yaml = server.kubectl_ok(&["get", "crontab", "third", "-o", "yaml"]);
    let obj: serde_json::Value = serde_saphyr::from_str(&yaml).expect("yaml");
    assert_eq!(obj["spec"]["replicas"], 1, "{yaml}");
    assert!(obj["metadata"]["labels"].is_null(), "{yaml}");

    // The ConfigMap: the JSON patch adds the escaped label key, keeping existing labels.
    server.kubectl_ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    server.kubectl_ok(&["label", "configmap", "settings", "app=web"]);
    let yaml = server.kubectl_ok(&["get", "configmap", "settings", "-o", "yaml"]);
    let obj: serde_json::Value = serde_saphyr::from_str(&yaml).expect("yaml");
    assert_eq!(
        obj["metadata"]["labels"],
        serde_json::json!({"example.com/team": "platform", "app": "web"}),
        "{yaml}"
    );
}
