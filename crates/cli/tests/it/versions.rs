//! Versions through kubectl: storage version, storedVersions, version priority, deprecation
//! warnings and the seed's "hypothetical series of events".

use std::fmt::Write as _;

use serde_json::Value;

use crate::support::TestServer;

fn crd_yaml(versions: &[(&str, bool, bool, Option<&str>)]) -> String {
    let mut out = String::from(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
",
    );
    for (name, served, storage, deprecation) in versions {
        let _ = writeln!(
            out,
            "  - name: {name}\n    served: {served}\n    storage: {storage}"
        );
        if let Some(d) = deprecation {
            out.push_str("    deprecated: true\n");
            if !d.is_empty() {
                let _ = writeln!(out, "    deprecationWarning: {d:?}");
            }
        }
        out.push_str(
            "    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n",
        );
    }
    out
}

fn object_yaml(version: &str, name: &str, image: &str) -> String {
    format!(
        "apiVersion: stable.example.com/{version}\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  cronSpec: '* * * * */5'\n  image: {image}\n"
    )
}

fn stored(s: &TestServer, name: &str) -> Value {
    let raw = s.kubectl_ok(&[
        "get",
        "--raw",
        &format!("/debug/storage/registry/stable.example.com/crontabs/default/{name}"),
    ]);
    serde_json::from_str(&raw).expect("debug storage JSON")
}

fn stored_api_version(s: &TestServer, name: &str) -> String {
    stored(s, name)["value"]["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn apply_crd(s: &TestServer, yaml: &str) {
    s.apply_crd("crd.yaml", yaml, "crontabs.stable.example.com");
}

fn stored_versions(s: &TestServer) -> String {
    s.kubectl_ok(&[
        "get",
        "crd",
        "crontabs.stable.example.com",
        "-o",
        "jsonpath={.status.storedVersions}",
    ])
}

#[test]
fn the_seeds_hypothetical_series_of_events() {
    let s = TestServer::start();
    // 1. The storage version is v1beta1. You create an object: it is stored at v1beta1.
    apply_crd(&s, &crd_yaml(&[("v1beta1", true, true, None)]));
    s.write("first.yaml", &object_yaml("v1beta1", "first", "a"));
    s.kubectl_ok(&["apply", "-f", "first.yaml"]);
    assert_eq!(
        stored_api_version(&s, "first"),
        "stable.example.com/v1beta1"
    );
    assert_eq!(stored_versions(&s), r#"["v1beta1"]"#);

    // 2. You add v1 and make it the storage version.
    apply_crd(
        &s,
        &crd_yaml(&[("v1beta1", true, false, None), ("v1", true, true, None)]),
    );
    assert_eq!(stored_versions(&s), r#"["v1beta1","v1"]"#);

    // 3. Reading at v1beta1 and at v1 gives the same object but for apiVersion; nothing is
    //    written back.
    let rv_before = stored(&s, "first")["modRevision"].clone();
    let mut a: Value = s.kubectl_json(&[
        "get",
        "crontabs.v1beta1.stable.example.com",
        "first",
        "-o",
        "json",
    ]);
    let mut b: Value = s.kubectl_json(&[
        "get",
        "crontabs.v1.stable.example.com",
        "first",
        "-o",
        "json",
    ]);
    assert_eq!(a["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(b["apiVersion"], "stable.example.com/v1");
    a.as_object_mut().unwrap().remove("apiVersion");
    b.as_object_mut().unwrap().remove("apiVersion");
    assert_eq!(a, b);
    assert_eq!(
        stored_api_version(&s, "first"),
        "stable.example.com/v1beta1"
    );
    assert_eq!(stored(&s, "first")["modRevision"], rv_before);

    // 4. A new object is stored at v1, even when written through v1beta1.
    s.write("second.yaml", &object_yaml("v1beta1", "second", "b"));
    s.kubectl_ok(&["apply", "-f", "second.yaml"]);
    assert_eq!(stored_api_version(&s, "second"), "stable.example.com/v1");
    assert_eq!(
        stored_api_version(&s, "first"),
        "stable.example.com/v1beta1"
    );

    // 5. Updating the first object rewrites it at v1.
    s.write("first.yaml", &object_yaml("v1beta1", "first", "changed"));
    s.kubectl_ok(&["apply", "-f", "first.yaml"]);
    assert_eq!(stored_api_version(&s, "first"), "stable.example.com/v1");
    assert_eq!(stored(&s, "first")["value"]["spec"]["image"], "changed");
}

#[test]
fn stored_versions_guard_version_removal_and_can_be_edited_through_status() {
    let s = TestServer::start();
    apply_crd(&s, &crd_yaml(&[("v1beta1", true, true, None)]));
    apply_crd(
        &s,
        &crd_yaml(&[("v1beta1", true, false, None), ("v1", true, true, None)]),
    );
    // Removing v1beta1 while it is in storedVersions is Invalid.
    s.write("crd.yaml", &crd_yaml(&[("v1", true, true, None)]));
    let out = s.kubectl(&["apply", "-f", "crd.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions"),
        "{err}"
    );
    // Dropping the storage version from storedVersions through /status is refused.
    let out = s.kubectl(&[
        "patch",
        "crd",
        "crontabs.stable.example.com",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"storedVersions":["v1beta1"]}}"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must have the storage version v1"), "{err}");
    // Dropping v1beta1 from storedVersions through /status works; then v1beta1 can go.
    s.kubectl_ok(&[
        "patch",
        "crd",
        "crontabs.stable.example.com",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"storedVersions":["v1"]}}"#,
    ]);
    assert_eq!(stored_versions(&s), r#"["v1"]"#);
    s.kubectl_ok(&["apply", "-f", "crd.yaml"]);
}

#[test]
fn version_priority_orders_discovery_and_kubectl() {
    let s = TestServer::start();
    let names = [
        "foo10",
        "v11alpha2",
        "v3beta1",
        "v1",
        "foo1",
        "v12alpha1",
        "v10beta3",
        "v2",
        "v11beta2",
        "v10",
    ];
    let versions: Vec<(&str, bool, bool, Option<&str>)> =
        names.iter().map(|n| (*n, true, *n == "v1", None)).collect();
    apply_crd(&s, &crd_yaml(&versions));
    let group: Value = s.kubectl_json(&["get", "--raw", "/apis/stable.example.com"]);
    let listed: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "v10",
            "v2",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo1",
            "foo10"
        ]
    );
    assert_eq!(group["preferredVersion"]["version"], "v10");
    // kubectl uses the preferred version.
    s.write("o.yaml", &object_yaml("v1", "o", "x"));
    s.kubectl_ok(&["apply", "-f", "o.yaml"]);
    let got = s.kubectl_ok(&["get", "crontabs", "o", "-o", "jsonpath={.apiVersion}"]);
    assert_eq!(got, "stable.example.com/v10");
}

#[test]
fn unserved_versions_are_404_and_deprecated_versions_warn() {
    let s = TestServer::start();
    apply_crd(
        &s,
        &crd_yaml(&[
            ("v1alpha1", false, false, None),
            ("v1beta1", true, false, Some("")),
            ("v1beta2", true, false, Some("v1beta2 goes away in 2027")),
            ("v1", true, true, None),
        ]),
    );
    // served: false → plain 404, and absent from discovery.
    let out = s.kubectl(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1alpha1/namespaces/default/crontabs",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the server could not find the requested resource"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let group = s.kubectl_ok(&["get", "--raw", "/apis/stable.example.com"]);
    assert!(!group.contains("v1alpha1"), "{group}");

    // Deprecated versions: kubectl prints the Warning header.
    let out = s.kubectl(&["get", "crontabs.v1beta1.stable.example.com"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Warning: stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab"),
        "{err}"
    );
    let out = s.kubectl(&["get", "crontabs.v1beta2.stable.example.com"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Warning: v1beta2 goes away in 2027"), "{err}");
    let out = s.kubectl(&["get", "crontabs.v1.stable.example.com"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Warning"));
}
