//! The README walk-through, typed as a user types it, with the real kubectl.

use crate::support::{TestServer, crontab_crd, my_crontab};

fn wait_established(s: &TestServer) {
    let out = s.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/crontabs.stable.example.com",
        "--timeout=30s",
    ]);
    assert!(out.contains("condition met"), "{out}");
}

#[test]
fn readme_walkthrough_with_kubectl() {
    let s = TestServer::start();
    s.write("resourcedefinition.yaml", &crontab_crd());
    s.write("my-crontab.yaml", &my_crontab());

    let out = s.kubectl_ok(&["apply", "-f", "resourcedefinition.yaml"]);
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"
    );
    wait_established(&s);

    let out = s.kubectl_ok(&["apply", "-f", "my-crontab.yaml"]);
    assert_eq!(
        out.trim(),
        "crontab.stable.example.com/my-new-cron-object created"
    );

    let out = s.kubectl_ok(&["get", "crontab"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("AGE"),
        "{out}"
    );
    assert!(lines[1].starts_with("my-new-cron-object"), "{out}");

    let yaml = s.kubectl_ok(&["get", "ct", "-o", "yaml"]);
    for want in [
        "kind: List",
        "cronSpec: '* * * * */5'",
        "image: my-awesome-cron-image",
        "generation: 1",
        "namespace: default",
        "kubectl.kubernetes.io/last-applied-configuration",
    ] {
        assert!(yaml.contains(want), "missing {want:?} in:\n{yaml}");
    }

    // Client-side apply of a changed field: a merge patch.
    s.write(
        "my-crontab.yaml",
        &my_crontab().replace("* * * * */5", "*/10 * * * *"),
    );
    let out = s.kubectl_ok(&["apply", "-f", "my-crontab.yaml"]);
    assert_eq!(
        out.trim(),
        "crontab.stable.example.com/my-new-cron-object configured"
    );
    let spec = s.kubectl_ok(&[
        "get",
        "crontab",
        "my-new-cron-object",
        "-o",
        "jsonpath={.spec.cronSpec} {.metadata.generation}",
    ]);
    assert_eq!(spec, "*/10 * * * * 2");
    // Applying the same file again changes nothing.
    let out = s.kubectl_ok(&["apply", "-f", "my-crontab.yaml"]);
    assert_eq!(
        out.trim(),
        "crontab.stable.example.com/my-new-cron-object unchanged"
    );

    // Namespaces: objects in a namespace go with it.
    let out = s.kubectl_ok(&["create", "namespace", "team-a"]);
    assert_eq!(out.trim(), "namespace/team-a created");
    let out = s.kubectl_ok(&["-n", "team-a", "apply", "-f", "my-crontab.yaml"]);
    assert_eq!(
        out.trim(),
        "crontab.stable.example.com/my-new-cron-object created"
    );
    assert!(
        s.kubectl_ok(&["-n", "team-a", "get", "crontabs"])
            .contains("my-new-cron-object")
    );
    let out = s.kubectl_ok(&["delete", "namespace", "team-a", "--timeout=60s"]);
    assert_eq!(out.trim(), "namespace \"team-a\" deleted");
    let gone = s.kubectl(&["get", "namespace", "team-a"]);
    assert!(!gone.status.success());
    assert!(
        String::from_utf8_lossy(&gone.stderr)
            .contains("Error from server (NotFound): namespaces \"team-a\" not found")
    );
    let all = s.kubectl_ok(&["get", "crontabs", "-A", "-o", "name"]);
    assert_eq!(
        all.trim(),
        "crontab.stable.example.com/my-new-cron-object",
        "only the default one is left"
    );

    // Deleting the CRD deletes its objects and the endpoint.
    let out = s.kubectl_ok(&["delete", "-f", "resourcedefinition.yaml", "--timeout=60s"]);
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted"
    );
    let out = s.kubectl(&["get", "crontabs"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error from server (NotFound)")
            && err.contains("the server could not find the requested resource"),
        "{err}"
    );

    // Re-creating the CRD starts empty.
    s.kubectl_ok(&["apply", "-f", "resourcedefinition.yaml"]);
    wait_established(&s);
    let out = s.kubectl(&["get", "crontabs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("No resources found in default namespace.")
    );
}

#[test]
fn kubectl_errors_are_kubernetes_errors() {
    let s = TestServer::start();
    s.write("resourcedefinition.yaml", &crontab_crd());
    s.kubectl_ok(&["apply", "-f", "resourcedefinition.yaml"]);
    wait_established(&s);
    s.write("my-crontab.yaml", &my_crontab());
    s.kubectl_ok(&["create", "-f", "my-crontab.yaml"]);

    let stderr = |args: &[&str]| {
        let out = s.kubectl(args);
        assert!(!out.status.success(), "kubectl {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(
        stderr(&["get", "crontab", "x"])
            .contains("Error from server (NotFound): crontabs.stable.example.com \"x\" not found")
    );
    assert!(stderr(&["create", "-f", "my-crontab.yaml"]).contains(
        "Error from server (AlreadyExists): error when creating \"my-crontab.yaml\": crontabs.stable.example.com \"my-new-cron-object\" already exists"
    ));
    // Strategic merge patch is not supported for custom resources.
    let err = stderr(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "-p",
        "{\"spec\":{\"replicas\":2}}",
    ]);
    assert!(err.contains("application/strategic-merge-patch+json is not supported by stable.example.com/v1, Kind=CronTab"), "{err}");
    // Merge and JSON patches are.
    s.kubectl_ok(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        "{\"spec\":{\"replicas\":2}}",
    ]);
    s.kubectl_ok(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "--type=json",
        "-p",
        "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":9}]",
    ]);
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "ct",
            "my-new-cron-object",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "9"
    );
    // An invalid name is a 422 with Kubernetes' message.
    s.write(
        "bad.yaml",
        &my_crontab().replace("my-new-cron-object", "Bad_Name"),
    );
    let err = stderr(&["create", "-f", "bad.yaml"]);
    // kubectl rewrites an Invalid Status as `The <details.kind> "<name>" is invalid: <causes>`.
    assert!(err.contains("The CronTab \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{err}");
    // A missing namespace.
    let err = stderr(&["-n", "nowhere", "create", "-f", "my-crontab.yaml"]);
    assert!(err.contains("namespaces \"nowhere\" not found"), "{err}");
}
