//! `serve --ephemeral --crd-dir DIR --kubeconfig-out FILE`: the binary as another language's
//! test server. The CRDs are served the moment the server announces itself, and the temporary
//! data dir is gone after SIGTERM.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

const CRONTAB: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
";

const TWO: &str = "---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, kind: Widget}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {plural: gadgets, kind: Gadget}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
";

#[test]
fn ephemeral_server_with_crd_dir_and_kubeconfig_out() {
    let work = tempfile::tempdir().unwrap();
    let crds = work.path().join("crds");
    std::fs::create_dir(&crds).unwrap();
    std::fs::write(crds.join("crontab.yaml"), CRONTAB).unwrap();
    std::fs::write(crds.join("more.yml"), TWO).unwrap();
    std::fs::write(crds.join("README.md"), "not a CRD").unwrap();
    let out = work.path().join("kubeconfig");

    let mut child = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args(["serve", "--ephemeral", "--secure-port", "0", "--crd-dir"])
        .arg(&crds)
        .arg("--kubeconfig-out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let announced = loop {
        let line = lines.next().expect("the server stopped").unwrap();
        if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
            break PathBuf::from(path);
        }
    };
    let data_dir = announced.parent().unwrap().to_path_buf();
    assert!(data_dir.join("state.db").exists());
    assert!(!data_dir.starts_with(work.path()));

    // No waiting: the CRDs are there as soon as the kubeconfig is announced.
    for kubeconfig in [&out, &announced] {
        let got = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["get", "crds", "-o", "name"])
            .env("HOME", work.path())
            .output()
            .unwrap();
        assert!(
            got.status.success(),
            "{}",
            String::from_utf8_lossy(&got.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com\n\
             customresourcedefinition.apiextensions.k8s.io/gadgets.example.com\n\
             customresourcedefinition.apiextensions.k8s.io/widgets.example.com\n"
        );
    }
    let established = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&out)
        .args([
            "get",
            "crd/gadgets.example.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
        ])
        .env("HOME", work.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&established.stdout), "True");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "server exited with {status}");
    assert!(
        !data_dir.exists(),
        "{} outlived the server",
        data_dir.display()
    );
    // The copy the caller asked for is the caller's.
    assert!(out.exists());
}

#[test]
fn ephemeral_conflicts_with_data_dir() {
    let got = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args(["serve", "--ephemeral", "--data-dir", "x"])
        .output()
        .unwrap();
    assert_eq!(got.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(
        stderr.starts_with(
            "error: the argument '--ephemeral' cannot be used with '--data-dir <DATA_DIR>'"
        ),
        "{stderr}"
    );
}

#[test]
fn a_crd_dir_with_another_kind_fails_before_serving() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let stderr = failed_start(work.path());
    assert!(
        stderr.contains("cm.yaml: expected kind CustomResourceDefinition, found \"ConfigMap\""),
        "{stderr}"
    );
}

/// `serve --ephemeral --crd-dir DIR` that must fail before serving: exit code 1, nothing on
/// stdout (no kubeconfig announced); returns stderr.
fn failed_start(dir: &std::path::Path) -> String {
    let got = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args(["serve", "--ephemeral", "--secure-port", "0", "--crd-dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(got.status.code(), Some(1));
    assert!(got.stdout.is_empty());
    String::from_utf8_lossy(&got.stderr).into_owned()
}

/// Two CRDs of one group with the same kind: the second's names are not accepted, and the
/// server says so at once, quoting the condition, instead of waiting out its start-up timeout.
/// Also: a `kustomization.yaml` beside the CRDs is skipped and `*.json` files are read.
#[test]
fn a_crd_whose_names_conflict_fails_at_once_with_the_reason() {
    let work = tempfile::tempdir().unwrap();
    let crd = |plural: &str| {
        format!(
            r#"{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
"metadata": {{"name": "{plural}.example.com"}},
"spec": {{"group": "example.com", "names": {{"plural": "{plural}", "kind": "Foo"}}, "scope": "Namespaced",
"versions": [{{"name": "v1", "served": true, "storage": true, "schema": {{"openAPIV3Schema": {{"type": "object"}}}}}}]}}}}"#
        )
    };
    std::fs::write(work.path().join("a.json"), crd("foos")).unwrap();
    std::fs::write(work.path().join("b.json"), crd("bars")).unwrap();
    std::fs::write(
        work.path().join("kustomization.yaml"),
        "resources: [a.json, b.json]\n",
    )
    .unwrap();
    let stderr = failed_start(work.path());
    assert!(
        stderr.contains(
            "CRD bars.example.com cannot be served: NamesAccepted=False (ListKindConflict): \"FooList\" is already in use"
        ),
        "{stderr}"
    );
}
