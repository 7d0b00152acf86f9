//! The v1beta1 CRD API with kubectl: with `--runtime-config=apiextensions.k8s.io/v1beta1=true`
//! every v1beta1 CustomResourceDefinition of the seed documents (`tests/data/v1beta1/`) applies,
//! carries 1.21's deprecation warning, and reads back at both versions; without the flag
//! kubectl says what a 1.32 cluster says.

use serde_json::Value;

use crate::support::{TestServer, repo_root};

const DEPRECATION: &str = "Warning: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition";

fn seed_examples() -> Vec<(String, String)> {
    let dir = repo_root().join("crates/cli/tests/data/v1beta1");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("tests/data/v1beta1")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("readable example"))
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 7, "every seed example is a test file");
    files
}

fn with_flag() -> TestServer {
    TestServer::start_with(
        tempfile::tempdir().expect("tempdir"),
        &["--runtime-config=apiextensions.k8s.io/v1beta1=true"],
    )
}

/// Asserts that every field of `want` is in `got` with the same value (`got` may have more:
/// defaults).
fn contains(got: &Value, want: &Value, at: &str) {
    match (got, want) {
        (_, Value::Null) => {}
        (Value::Object(g), Value::Object(w)) => {
            for (k, v) in w {
                contains(g.get(k).unwrap_or(&Value::Null), v, &format!("{at}.{k}"));
                assert!(g.contains_key(k), "{at}.{k} is missing");
            }
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

fn get_json(server: &TestServer, resource: &str) -> Value {
    server.kubectl_json(&["get", resource, "crontabs.example.com", "-o", "json"])
}

#[test]
fn every_seed_example_applies_and_reads_back_at_both_versions() {
    let server = with_flag();
    for (file, text) in seed_examples() {
        let sent: Value = serde_saphyr::from_str(&text).expect("example parses");
        server.write(&file, &text);
        let out = server.kubectl(&["apply", "-f", &file]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{file}: kubectl apply failed: {stderr}"
        );
        assert!(stderr.contains(DEPRECATION), "{file}: no warning: {stderr}");
        server.kubectl_ok(&[
            "wait",
            "--for",
            "condition=established",
            "crd/crontabs.example.com",
            "--timeout=30s",
        ]);

        // At v1beta1: what was sent, with v1beta1's defaults.
        let beta = get_json(
            &server,
            "customresourcedefinitions.v1beta1.apiextensions.k8s.io",
        );
        assert_eq!(beta["apiVersion"], "apiextensions.k8s.io/v1beta1", "{file}");
        for field in ["group", "scope", "conversion", "names"] {
            contains(
                &beta["spec"][field],
                &sent["spec"][field],
                &format!("{file}: spec.{field}"),
            );
        }
        assert_eq!(
            beta["spec"]["validation"], sent["spec"]["validation"],
            "{file}: top-level validation reads back"
        );
        let want_preserve = sent["spec"]["preserveUnknownFields"]
            .as_bool()
            .unwrap_or(true);
        assert_eq!(
            beta["spec"]["preserveUnknownFields"], want_preserve,
            "{file}"
        );
        let versions = |o: &Value| -> Vec<Value> {
            o["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["name"].clone())
                .collect()
        };
        assert_eq!(versions(&beta), versions(&sent), "{file}");
        assert_eq!(
            beta["spec"]["version"], sent["spec"]["versions"][0]["name"],
            "{file}"
        );

        // At v1: the same CRD, with the top-level fields in every version.
        let v1 = get_json(&server, "customresourcedefinitions.v1.apiextensions.k8s.io");
        assert_eq!(v1["apiVersion"], "apiextensions.k8s.io/v1", "{file}");
        assert_eq!(versions(&v1), versions(&sent), "{file}");
        assert!(v1["spec"].get("validation").is_none(), "{file}");
        assert!(v1["spec"].get("version").is_none(), "{file}");
        if !sent["spec"]["validation"].is_null() {
            for v in v1["spec"]["versions"].as_array().unwrap() {
                assert_eq!(v["schema"], sent["spec"]["validation"], "{file}");
            }
        }
        if let Some(client) = sent["spec"]["conversion"].get("webhookClientConfig") {
            let got = &v1["spec"]["conversion"]["webhook"]["clientConfig"];
            for field in ["url", "caBundle"] {
                assert_eq!(&got[field], &client[field], "{file}: {field}");
            }
            assert_eq!(
                &got["service"]["name"], &client["service"]["name"],
                "{file}: service"
            );
            let review = &v1["spec"]["conversion"]["webhook"]["conversionReviewVersions"];
            let want = sent["spec"]["conversion"]
                .get("conversionReviewVersions")
                .cloned()
                .unwrap_or_else(|| serde_json::json!(["v1beta1"]));
            assert_eq!(review, &want, "{file}: conversionReviewVersions");
        }
        assert_eq!(
            v1["spec"]
                .get("preserveUnknownFields")
                .and_then(Value::as_bool),
            want_preserve.then_some(true),
            "{file}"
        );

        // A second apply of the same file changes nothing.
        let again = server.kubectl_ok(&["apply", "-f", &file]);
        assert!(again.contains("unchanged"), "{file}: {again}");
        server.kubectl_ok(&["delete", "-f", &file, "--wait=true"]);
    }
}

#[test]
fn preserve_unknown_fields_keeps_what_the_schema_does_not_name() {
    let server = with_flag();
    let examples = seed_examples();
    // The top-level-validation example (preserveUnknownFields defaults to true) against the
    // webhook example's `preserveUnknownFields: false` one, with the None conversion.
    let (_, preserving) = examples
        .iter()
        .find(|(f, _)| f == "versioned-crontab.yaml")
        .unwrap();
    server.apply_crd("crd.yaml", preserving, "crontabs.example.com");
    server.write(
        "ct.yaml",
        "apiVersion: example.com/v1\nkind: CronTab\nmetadata: {name: a}\nhost: h\nextra: kept\n",
    );
    server.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    for version in ["v1", "v1beta1"] {
        let out = server.kubectl_ok(&[
            "get",
            &format!("crontabs.{version}.example.com"),
            "a",
            "-o",
            "jsonpath={.apiVersion} {.host} {.extra}",
        ]);
        assert_eq!(out, format!("example.com/{version} h kept"));
    }

    // The same CRD with pruning on (v1beta1 `preserveUnknownFields: false`) drops the field.
    server.kubectl_ok(&["delete", "crontab", "a"]);
    let pruning = preserving.replace(
        "  group: example.com\n",
        "  group: example.com\n  preserveUnknownFields: false\n",
    );
    server.write("crd.yaml", &pruning);
    server.kubectl_ok(&["apply", "-f", "crd.yaml"]);
    crate::support::eventually("the CRD prunes", || {
        // `--validate=false`: a strict apply would refuse the unknown field instead.
        server.kubectl_ok(&["apply", "--validate=false", "-f", "ct.yaml"]);
        let out = server.kubectl_ok(&["get", "crontab", "a", "-o", "jsonpath={.extra}"]);
        server.kubectl_ok(&["delete", "crontab", "a"]);
        out.is_empty()
    });
}

#[test]
fn without_the_flag_kubectl_says_what_1_32_says() {
    let server = TestServer::start();
    let (file, text) = seed_examples().remove(0);
    server.write(&file, &text);
    let out = server.kubectl(&["apply", "-f", &file]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "no matches for kind \"CustomResourceDefinition\" in version \"apiextensions.k8s.io/v1beta1\""
        ),
        "{stderr}"
    );
    let out = server.kubectl(&["api-versions"]);
    let versions = String::from_utf8_lossy(&out.stdout);
    assert!(versions.contains("apiextensions.k8s.io/v1\n"), "{versions}");
    assert!(
        !versions.contains("apiextensions.k8s.io/v1beta1"),
        "{versions}"
    );
}

#[test]
fn with_the_flag_discovery_lists_v1beta1() {
    let server = with_flag();
    let versions = server.kubectl_ok(&["api-versions"]);
    assert!(
        versions.contains("apiextensions.k8s.io/v1beta1\n"),
        "{versions}"
    );
    let resources = server.kubectl_ok(&["api-resources", "--api-group=apiextensions.k8s.io"]);
    assert!(
        resources.contains("apiextensions.k8s.io/v1 "),
        "{resources}"
    );
    // kubectl lists a resource once, at its preferred version (v1).
    assert!(!resources.contains("v1beta1"), "{resources}");
}

#[test]
fn a_bad_runtime_config_is_refused_with_kube_apiservers_message() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args([
            "serve",
            "--ephemeral",
            "--runtime-config=apiextensions.k8s.io/v1beta1=yes",
        ])
        .output()
        .expect("running crd-apiserver");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid value of apiextensions.k8s.io/v1beta1: yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax"),
        "{stderr}"
    );
}
