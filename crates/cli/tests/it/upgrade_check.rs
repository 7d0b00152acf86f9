//! The upgrade check as a user runs it: `kubectl apply --dry-run=server -f crd-v2.yaml` prints
//! the findings as warnings, and `crd-apiserver check-upgrade crd-v2.yaml` prints the report
//! (exit status 1 on breaking findings, `-o json` for the structured report). Each kind of
//! breaking change is reported with its count; a harmless change reports nothing.

use std::fmt::Write as _;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{TestServer, widgets_yaml};

/// `widgets.example.com` at v1 with `spec.replicas` (maximum `max`), `spec.color` when
/// `color`, plus extra `spec` YAML (a `required` list, CEL rules) indented four spaces.
fn widgets(max: u32, color: bool, extra: &str) -> String {
    let color = if color {
        "\n      color: {type: string}"
    } else {
        ""
    };
    let schema = format!(
        "type: object
properties:
  spec:
    type: object{extra}
    properties:
      replicas: {{type: integer, maximum: {max}}}
      size: {{type: string}}{color}"
    );
    widgets_yaml(&schema)
}

const WIDGETS: &str = "apiVersion: example.com/v1
kind: Widget
metadata: {name: a}
spec: {replicas: 5, color: red}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: b}
spec: {replicas: 15}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: c}
spec: {replicas: 12, color: blue}
";

fn check_upgrade(s: &TestServer, file: &str, json: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"));
    cmd.arg("check-upgrade")
        .arg(s.data_dir().parent().expect("dir").join(file))
        .arg("--kubeconfig")
        .arg(s.kubeconfig());
    if json {
        cmd.args(["-o", "json"]);
    }
    cmd.output().expect("running check-upgrade")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Server-side dry run of `file` with kubectl: (succeeded, stderr).
fn dry_run(s: &TestServer, file: &str) -> (bool, String) {
    let out = s.kubectl(&["apply", "--dry-run=server", "-f", file]);
    (out.status.success(), text(&out.stderr))
}

#[test]
fn breaking_crd_changes_are_reported_with_their_counts_and_a_harmless_one_is_not() {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", &widgets(20, true, ""), "widgets.example.com");
    s.write("widgets.yaml", WIDGETS);
    s.kubectl_ok(&["apply", "-f", "widgets.yaml"]);

    let cases = [
        (
            "tightened maximum",
            widgets(10, true, ""),
            "2 stored object(s) would be invalid at v1: spec.replicas: Invalid value: spec.replicas in body should be less than or equal to 10 (e.g. default/b)",
            "BREAKING Invalid [v1]: 2 object(s): spec.replicas: Invalid value: spec.replicas in body should be less than or equal to 10",
        ),
        (
            "removed field with data",
            widgets(20, false, ""),
            "2 stored object(s) hold data at spec.color that would be pruned at v1 (e.g. default/a)",
            "BREAKING DataLoss [v1]: 2 object(s): spec.color holds data the new schema does not specify",
        ),
        (
            "new required field",
            widgets(20, true, "\n    required: [color]"),
            "1 stored object(s) would be invalid at v1: spec.color: Required value (e.g. default/b)",
            "BREAKING Invalid [v1]: 1 object(s): spec.color: Required value",
        ),
        (
            "CEL rule old objects fail",
            widgets(
                20,
                true,
                "\n    x-kubernetes-validations:\n    - {rule: 'self.replicas <= 12', message: at most 12 replicas}",
            ),
            "1 stored object(s) would be invalid at v1: spec: Invalid value: at most 12 replicas (e.g. default/b)",
            "BREAKING Invalid [v1]: 1 object(s): spec: Invalid value: at most 12 replicas",
        ),
    ];
    for (name, crd, warning, line) in cases {
        let file = format!("{}.yaml", name.replace(' ', "-"));
        s.write(&file, &crd);
        let (ok, stderr) = dry_run(&s, &file);
        assert!(ok, "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("Warning: upgrade check: {warning}")),
            "{name}: {stderr}"
        );
        let out = check_upgrade(&s, &file, false);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains(line), "{name}:\n{stdout}");
        assert!(
            stdout.contains("checked 3 stored object(s)"),
            "{name}:\n{stdout}"
        );
    }

    // The structured report of the tightened maximum.
    let out = check_upgrade(&s, "tightened-maximum.yaml", true);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["findings"][0]["kind"], "Invalid");
    assert_eq!(report["findings"][0]["count"], 2);
    assert_eq!(report["findings"][0]["examples"][0]["name"], "default/b");

    // A harmless change (a wider maximum, which every stored object meets): no warning, exit 0.
    s.write("harmless.yaml", &widgets(30, true, ""));
    let (ok, stderr) = dry_run(&s, "harmless.yaml");
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("upgrade check"), "{stderr}");
    let out = check_upgrade(&s, "harmless.yaml", false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("no findings"),
        "{}",
        text(&out.stdout)
    );

    // A CRD the server does not serve yet: nothing is stored, so nothing breaks (exit 0), in
    // both outputs.
    s.write("new.yaml", &gadgets(&[("v1", true)]));
    let out = check_upgrade(&s, "new.yaml", false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "gadgets.example.com: not served yet (storage version v1): nothing is stored"
        ),
        "{}",
        text(&out.stdout)
    );
    let out = check_upgrade(&s, "new.yaml", true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["objects"], 0);
    assert_eq!(report["findings"], serde_json::json!([]));

    // None of the dry runs changed the CRD.
    let max = s.kubectl_ok(&[
        "get",
        "crd",
        "widgets.example.com",
        "-o",
        "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.replicas.maximum}",
    ]);
    assert_eq!(max, "20");
}

fn gadgets(versions: &[(&str, bool)]) -> String {
    let mut out = String::from(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
",
    );
    for (name, storage) in versions {
        let _ = write!(
            out,
            "  - name: {name}
    served: true
    storage: {storage}
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"
        );
    }
    out
}

#[test]
fn removing_a_version_objects_are_stored_at_is_reported_with_its_count() {
    let s = TestServer::start();
    s.apply_crd(
        "v1beta1.yaml",
        &gadgets(&[("v1beta1", true), ("v1", false)]),
        "gadgets.example.com",
    );
    let mut objects = String::new();
    for i in 0..3 {
        let _ = write!(
            objects,
            "---\napiVersion: example.com/v1beta1\nkind: Gadget\nmetadata: {{name: g{i}}}\n"
        );
    }
    s.write("gadgets.yaml", &objects);
    s.kubectl_ok(&["apply", "-f", "gadgets.yaml"]);
    // The storage version moves to v1: a migration is suggested, nothing breaks.
    s.write("v1.yaml", &gadgets(&[("v1beta1", false), ("v1", true)]));
    let out = check_upgrade(&s, "v1.yaml", false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "NOTE Migration [v1]: the storage version changes from v1beta1 to v1: 3 object(s) stay at their version until migrated; run `crd-apiserver migrate gadgets.example.com` after applying"
        ),
        "{}",
        text(&out.stdout)
    );
    s.kubectl_ok(&["apply", "-f", "v1.yaml"]);

    // Dropping v1beta1 while 3 objects are stored at it.
    s.write("only-v1.yaml", &gadgets(&[("v1", true)]));
    let out = check_upgrade(&s, "only-v1.yaml", false);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("BREAKING VersionRemoved [v1beta1]: version v1beta1 is removed but 3 object(s) are stored at it; run `crd-apiserver migrate gadgets.example.com`"),
        "{stdout}"
    );
    // The update itself would be refused (storedVersions), which the report says first, and
    // kubectl's dry run shows upstream's error.
    assert!(
        stdout.contains("BREAKING InvalidDefinition: the CRD update would be refused: status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions"),
        "{stdout}"
    );
    let (ok, stderr) = dry_run(&s, "only-v1.yaml");
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("missing from spec.versions"), "{stderr}");
}
