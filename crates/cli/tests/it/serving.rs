//! Serving features through kubectl: printer columns, status and scale subresources, categories
//! and names, finalizers, selectors, paging, watch, dry run, OpenAPI v2 and gzipped lists. Metadata-only
//! responses and watch details over raw HTTP are tested in `crates/server/tests/http/watch.rs`.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};

use serde_json::Value;

use crate::support::{HttpVersion, TestServer, eventually};

const CRD: &str = include_str!("../../../../examples/crds/crontab-serving.yaml");

fn crontab(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\n{extra}spec:\n  cronSpec: '* * * * */5'\n  image: my-awesome-cron-image\n  replicas: 1\n  color: blue\n  ratio: 0.5\n  enabled: true\n"
    )
}

fn setup() -> TestServer {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", CRD, "crontabs.stable.example.com");
    s
}

fn columns(line: &str) -> Vec<&str> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn printer_columns_names_and_categories() {
    let s = setup();
    s.write("ct.yaml", &crontab("my-new-cron-object", ""));
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);

    let out = s.kubectl_ok(&["get", "crontab", "my-new-cron-object"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        columns(lines[0]),
        ["NAME", "SPEC", "REPLICAS", "AGE"],
        "{out}"
    );
    let row = columns(lines[1]);
    assert_eq!(
        &row[..3],
        ["my-new-cron-object", "* * * * */5", "1"],
        "{out}"
    );
    assert!(row[3].ends_with('s'), "age: {out}");

    let out = s.kubectl_ok(&["get", "ct", "-o", "wide"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        columns(lines[0]),
        [
            "NAME", "SPEC", "REPLICAS", "AGE", "IMAGE", "RATIO", "ENABLED", "MISMATCH"
        ],
        "{out}"
    );
    assert_eq!(
        &columns(lines[1])[4..],
        // A value whose type does not match its column is a null cell: kubectl prints nothing.
        ["my-awesome-cron-image", "0.5", "true"],
        "{out}"
    );

    // Rows carry the objects: -A and --show-labels work.
    let out = s.kubectl_ok(&["get", "ct", "-A", "--show-labels"]);
    assert!(
        out.lines().next().unwrap().starts_with("NAMESPACE"),
        "{out}"
    );
    assert!(out.contains("LABELS"), "{out}");

    // Names are case-insensitive; the category makes `kubectl get all` list the object.
    // (kubectl matches short names as typed; kind, singular and plural case-insensitively.)
    for name in ["ct", "CronTab", "CRONTABS", "crontab.stable.example.com"] {
        let out = s.kubectl_ok(&["get", name, "-o", "name"]);
        assert_eq!(
            out.trim(),
            "crontab.stable.example.com/my-new-cron-object",
            "{name}"
        );
    }
    // `all` holds the custom resource beside the `kubernetes` Service every cluster has.
    let out = s.kubectl_ok(&["get", "all", "-o", "name"]);
    assert_eq!(
        out.trim(),
        "service/kubernetes\ncrontab.stable.example.com/my-new-cron-object",
        "{out}"
    );
}

/// Regression: printer columns beyond `.a.b` and `.a[N]` were empty. kube-apiserver evaluates
/// them with the `JSONPath` of client-go and shows the first result; the Ready column of
/// cert-manager, Crossplane and Cluster API is a filter.
#[test]
fn printer_columns_evaluate_client_go_jsonpath() {
    let s = TestServer::start();
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: All, type: string, jsonPath: '.status.conditions[*].type'}
    - {name: Last, type: string, jsonPath: '.status.conditions[-1].type'}
    - {name: Note, type: string, jsonPath: '.metadata.annotations.example\.com/note'}
    - {name: Missing, type: string, jsonPath: '.status.conditions[?(@.type=="Gone")].status'}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;
    s.apply_crd("gadgets.yaml", crd, "gadgets.example.com");
    s.write(
        "g1.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\n  annotations: {example.com/note: hello}\nspec: {}\n",
    );
    s.kubectl_ok(&["apply", "-f", "g1.yaml"]);
    s.kubectl_ok(&[
        "patch",
        "gadget",
        "g1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Synced","status":"False"}]}}"#,
    ]);
    let out = s.kubectl_ok(&["get", "gadgets"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        columns(lines[0]),
        ["NAME", "READY", "ALL", "LAST", "NOTE", "MISSING"],
        "{out}"
    );
    // A filter that matches nothing is a null cell, which kubectl prints as nothing.
    assert_eq!(
        columns(lines[1]),
        ["g1", "True", "Ready", "Synced", "hello"],
        "{out}"
    );
}

#[test]
fn status_and_scale_subresources() {
    let s = setup();
    s.write("ct.yaml", &crontab("my-new-cron-object", ""));
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    let get = |path: &str| -> String {
        s.kubectl_ok(&[
            "get",
            "ct",
            "my-new-cron-object",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    // /status changes only status; generation stays.
    s.kubectl_ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"labelSelector":"app=cron"},"spec":{"replicas":99},"metadata":{"labels":{"x":"y"}}}"#,
    ]);
    assert_eq!(get("{.status.replicas}"), "2");
    assert_eq!(get("{.spec.replicas}"), "1");
    assert_eq!(get("{.metadata.labels}"), "");
    assert_eq!(get("{.metadata.generation}"), "1");
    // The main resource ignores status; a spec change bumps generation, a label change does not.
    s.kubectl_ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":7},"metadata":{"labels":{"a":"b"}}}"#,
    ]);
    assert_eq!(get("{.status.replicas}"), "2");
    assert_eq!(get("{.metadata.generation}"), "1");
    s.kubectl_ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"image":"other"}}"#,
    ]);
    assert_eq!(get("{.metadata.generation}"), "2");

    // The seed's scale command.
    let out = s.kubectl_ok(&["scale", "--replicas=5", "crontabs/my-new-cron-object"]);
    assert_eq!(
        out.trim(),
        "crontab.stable.example.com/my-new-cron-object scaled"
    );
    assert_eq!(get("{.spec.replicas}"), "5");
    assert_eq!(get("{.metadata.generation}"), "3");
    let scale: Value = s.kubectl_json(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object/scale",
    ]);
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(
        scale["status"],
        serde_json::json!({"replicas": 2, "selector": "app=cron"})
    );
    // Negative replicas are refused with the path as upstream names it.
    let out = s.kubectl(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":-1}}"#,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(".spec.replicas: Invalid value: -1: should be a non-negative integer"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn finalizers_keep_objects_until_emptied() {
    let s = setup();
    s.write(
        "ct.yaml",
        &crontab("held", "  finalizers:\n  - stable.example.com/hold\n"),
    );
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    s.kubectl_ok(&["delete", "ct", "held", "--wait=false"]);
    let obj: Value = s.kubectl_json(&["get", "ct", "held", "-o", "json"]);
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj}");
    assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(obj["metadata"]["generation"], 2);
    // No new finalizers once deleting.
    let out = s.kubectl(&[
        "patch",
        "ct",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/finalizers/-","value":"stable.example.com/more"}]"#,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"stable.example.com/more\"}"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Emptying the list deletes it.
    s.kubectl_ok(&[
        "patch",
        "ct",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let out = s.kubectl(&["get", "ct", "held"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("NotFound"));
}

#[test]
fn selectors_paging_and_dry_run() {
    let s = setup();
    for (name, labels, color) in [
        ("a", "env: prod\n    tier: web", "blue"),
        ("b", "env: dev\n    tier: web", "red"),
        ("c", "env: prod", "red"),
    ] {
        s.write(
            "ct.yaml",
            &crontab(name, &format!("  labels:\n    {labels}\n"))
                .replace("color: blue", &format!("color: {color}")),
        );
        s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    }
    let names = |args: &[&str]| -> String {
        let mut a = vec!["get", "ct", "-o", "jsonpath={.items[*].metadata.name}"];
        a.extend_from_slice(args);
        s.kubectl_ok(&a)
    };
    assert_eq!(names(&["-l", "env=prod"]), "a c");
    assert_eq!(names(&["-l", "env!=prod"]), "b");
    assert_eq!(names(&["-l", "env in (dev,test)"]), "b");
    assert_eq!(names(&["-l", "env notin (dev)"]), "a c");
    assert_eq!(names(&["-l", "tier"]), "a b");
    assert_eq!(names(&["-l", "!tier"]), "c");
    assert_eq!(names(&["--field-selector", "metadata.name=b"]), "b");
    assert_eq!(names(&["--field-selector", "spec.color=red"]), "b c");
    assert_eq!(
        names(&[
            "--field-selector",
            "spec.color!=red,metadata.namespace=default"
        ]),
        "a"
    );
    let out = s.kubectl(&["get", "ct", "--field-selector", "spec.image=x"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("field label not supported: spec.image"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Paging: kubectl's chunked lists, and a raw limit/continue walk.
    assert_eq!(names(&["--chunk-size=1"]), "a b c");
    let page: Value = s.kubectl_json(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs?limit=2",
    ]);
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap();
    let rest: Value = s.kubectl_json(&[
        "get",
        "--raw",
        &format!(
            "/apis/stable.example.com/v1/namespaces/default/crontabs?limit=2&continue={token}"
        ),
    ]);
    assert_eq!(rest["items"][0]["metadata"]["name"], "c");
    assert!(rest["metadata"].get("continue").is_none_or(|c| c == ""));

    // Dry run: validated and answered, nothing stored.
    s.write("dry.yaml", &crontab("dry", ""));
    let out = s.kubectl_ok(&["create", "-f", "dry.yaml", "--dry-run=server", "-o", "json"]);
    let obj: Value = serde_json::from_str(&out).unwrap();
    assert!(obj["metadata"]["uid"].is_string());
    assert!(obj["metadata"].get("resourceVersion").is_none());
    assert!(String::from_utf8_lossy(&s.kubectl(&["get", "ct", "dry"]).stderr).contains("NotFound"));
    s.kubectl_ok(&["delete", "ct", "a", "--dry-run=server"]);
    s.kubectl_ok(&["label", "ct", "b", "x=y", "--dry-run=server"]);
    assert_eq!(names(&[]), "a b c");
    assert_eq!(names(&["-l", "x=y"]), "");
    let out = s.kubectl(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/a?dryRun=x",
    ]);
    assert!(out.status.success(), "dryRun is ignored on reads");
}

#[test]
fn kubectl_get_watch_shows_changes() {
    let s = setup();
    s.write("ct.yaml", &crontab("first", ""));
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    let mut watch = s.kubectl_spawn(&["get", "ct", "-w", "--request-timeout=60s"]);
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    let mut read_until = |prefix: &str| {
        for line in lines.by_ref() {
            let line = line.expect("kubectl output");
            seen.push(line.clone());
            if line.starts_with(prefix) {
                return;
            }
        }
        panic!("kubectl get -w ended without a {prefix} row: {seen:?}");
    };
    // The first row comes from the list; the watch continues from the list's resourceVersion,
    // so a change made after it is shown however late the watch request itself starts.
    read_until("first");
    s.write("ct2.yaml", &crontab("second", ""));
    s.kubectl_ok(&["apply", "-f", "ct2.yaml"]);
    read_until("second");
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn openapi_v2_and_metadata_only_lists() {
    let s = setup();
    s.write("ct.yaml", &crontab("m", "  labels:\n    a: b\n"));
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    let v2: Value = s.kubectl_json(&["get", "--raw", "/openapi/v2"]);
    assert_eq!(v2["swagger"], "2.0");
    let def = &v2["definitions"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        def["properties"]["spec"]["properties"]["replicas"]["type"], "integer",
        "{def}"
    );
    assert!(
        v2["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["get"]
            .is_object()
    );
    assert!(!v2.to_string().contains("#/components/schemas"));
}

#[test]
fn namespace_and_crd_deletion_wait_for_finalizers() {
    let s = setup();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.write(
        "ct.yaml",
        &crontab("held", "  finalizers:\n  - stable.example.com/hold\n"),
    );
    s.kubectl_ok(&["-n", "team", "apply", "-f", "ct.yaml"]);
    s.kubectl_ok(&["delete", "namespace", "team", "--wait=false"]);
    let phase = || s.kubectl_ok(&["get", "ns", "team", "-o", "jsonpath={.status.phase}"]);
    let deletion_requested = |namespace: &str| {
        !s.kubectl_ok(&[
            "-n",
            namespace,
            "get",
            "ct",
            "held",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .is_empty()
    };
    // The namespace controller deletes the namespace's objects: the held one gets a
    // deletionTimestamp and stays for its finalizer, and the namespace stays Terminating.
    eventually("the namespace controller deletes the held object", || {
        deletion_requested("team")
    });
    assert_eq!(phase(), "Terminating");
    s.kubectl_ok(&[
        "-n",
        "team",
        "patch",
        "ct",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    s.kubectl_ok(&["wait", "--for=delete", "namespace/team", "--timeout=30s"]);

    // The same for the CRD: it stays (Terminating) until the finalized object is released.
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    s.kubectl_ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--wait=false",
    ]);
    // The CRD controller's cleanup deletes the object, which stays for its finalizer; the CRD
    // stays, Terminating.
    eventually("the CRD cleanup deletes the held object", || {
        deletion_requested("default")
    });
    let cond = s.kubectl_ok(&[
        "get",
        "crd",
        "crontabs.stable.example.com",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Terminating\")].status}",
    ]);
    assert_eq!(cond, "True");
    s.kubectl_ok(&[
        "patch",
        "ct",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    s.kubectl_ok(&[
        "wait",
        "--for=delete",
        "crd/crontabs.stable.example.com",
        "--timeout=30s",
    ]);
}

/// kubectl (Go's transport asks for gzip on every request and decompresses what it gets) reads
/// a list the server gzips, and a client that asks gets `Content-Encoding: gzip`.
#[tokio::test]
async fn kubectl_reads_lists_the_server_gzips() {
    let s = setup();
    let mut file = String::new();
    for i in 0..5 {
        let blob: String = (0..40 * 1024)
            .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
            .collect();
        writeln!(
            file,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-{i}\ndata:\n  blob: {blob}"
        )
        .expect("a String takes writes");
    }
    s.write("big.yaml", &file);
    s.kubectl_ok(&["create", "-f", "big.yaml"]);

    let list = s.kubectl_json(&["get", "configmaps", "-o", "json"]);
    let items = list["items"].as_array().expect("items");
    let big: Vec<&Value> = items
        .iter()
        .filter(|cm| cm["metadata"]["name"].as_str().unwrap().starts_with("big-"))
        .collect();
    assert_eq!(big.len(), 5);
    for cm in big {
        assert_eq!(cm["data"]["blob"].as_str().map(str::len), Some(40 * 1024));
    }
    let table = s.kubectl_ok(&["get", "configmaps", "--no-headers", "-o", "name"]);
    assert!(table.lines().any(|l| l == "configmap/big-4"), "{table}");

    let resp = s
        .client(HttpVersion::Http2)
        .get(format!("{}/api/v1/namespaces/default/configmaps", s.url))
        .bearer_auth(&s.token)
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-encoding"], "gzip");
    let zipped = resp.bytes().await.expect("body");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped[..]), &mut plain)
        .expect("a gzip body");
    let decoded: Value = serde_json::from_slice(&plain).expect("JSON");
    assert_eq!(decoded["items"].as_array().map(Vec::len), Some(items.len()));
    assert!(zipped.len() < plain.len() / 4);
}
