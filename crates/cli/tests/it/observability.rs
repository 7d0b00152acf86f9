//! Observability as a user sees it with the real binary and kubectl: `kubectl get --raw
//! /metrics` and `/readyz?verbose`, and the audit log written with `--audit-policy-file` and
//! `--audit-log-path`.

use serde_json::Value;

use crate::support::{TestServer, crontab_crd, eventually, my_crontab};

#[test]
fn kubectl_reads_metrics_and_health() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "observed"]);
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let create = "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",\
                  group=\"\",resource=\"namespaces\",scope=\"cluster\",subresource=\"\",\
                  verb=\"POST\",version=\"v1\"} 1";
    assert!(metrics.contains(create), "{create} not in\n{metrics}");
    assert!(metrics.contains("# TYPE apiserver_request_duration_seconds histogram"));
    assert!(metrics.contains("process_resident_memory_bytes "));
    assert!(metrics.contains("apiserver_storage_objects{resource=\"namespaces\"}"));

    let readyz = s.kubectl_ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(
        readyz.starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n"),
        "{readyz}"
    );
    assert!(
        readyz.contains("[+]poststarthook/crd-informer-synced ok\n"),
        "{readyz}"
    );
    assert!(
        readyz.ends_with("[+]shutdown ok\nreadyz check passed\n"),
        "{readyz}"
    );
    let etcd = s.kubectl_ok(&["get", "--raw", "/readyz/etcd"]);
    assert_eq!(etcd, "ok");
}

/// The value of the unlabelled gauge `name` in a `/metrics` text, if it is there.
#[cfg(feature = "jemalloc")]
fn gauge(metrics: &str, name: &str) -> Option<u64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.parse::<f64>().ok().map(|v| v as u64)
    })
}

/// The heap gauges a jemalloc build samples, which the memory bench reads: the live heap is
/// the allocator's count less what sits freed in its thread caches, and each peak since the
/// previous scrape is at least the latest sample.
#[cfg(feature = "jemalloc")]
#[test]
fn metrics_report_the_heap_with_and_without_thread_caches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = TestServer::start_with(dir, &["--heap-sample-interval-ms", "10"]);
    let mut metrics = String::new();
    eventually("the heap is sampled", || {
        metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
        gauge(&metrics, "crd_apiserver_heap_live_bytes").is_some()
    });
    let read =
        |name: &str| gauge(&metrics, name).unwrap_or_else(|| panic!("{name} not in\n{metrics}"));
    let allocated = read("crd_apiserver_heap_allocated_bytes");
    let live = read("crd_apiserver_heap_live_bytes");
    let cached = read("crd_apiserver_heap_thread_cache_bytes");
    assert!(
        live > 1 << 20,
        "a running server holds more than 1 MiB: {live}"
    );
    assert_eq!(live + cached, allocated, "{metrics}");
    assert!(read("crd_apiserver_heap_allocated_peak_bytes") >= allocated);
    assert!(read("crd_apiserver_heap_live_peak_bytes") >= live);
}

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    resources:
      - group: stable.example.com
        resources: ["crontabs"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["configmaps"]
"#;

fn events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not an event ({e}): {l}")))
        .collect()
}

fn created(events: &[Value], resource: &str) -> Option<Value> {
    events
        .iter()
        .find(|e| e["verb"] == "create" && e["objectRef"]["resource"] == resource)
        .cloned()
}

#[test]
fn kubectl_create_is_audited_at_the_policy_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("audit-policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy");
    let log = dir.path().join("audit/audit.log");
    let s = TestServer::start_with(
        dir,
        &[
            "--audit-policy-file",
            policy.to_str().unwrap(),
            "--audit-log-path",
            log.to_str().unwrap(),
        ],
    );
    s.apply_crd(
        "crontab.yaml",
        &crontab_crd(),
        "crontabs.stable.example.com",
    );
    s.write("my-crontab.yaml", &my_crontab());
    s.kubectl_ok(&["create", "-f", "my-crontab.yaml"]);
    s.kubectl_ok(&["create", "configmap", "settings", "--from-literal=k=v"]);
    eventually("both creates are audited", || {
        let all = events(&log);
        created(&all, "crontabs").is_some() && created(&all, "configmaps").is_some()
    });
    let all = events(&log);
    assert!(
        all.iter().all(|e| e["kind"] == "Event"
            && e["apiVersion"] == "audit.k8s.io/v1"
            && e["stage"] == "ResponseComplete"
            && e["auditID"].as_str().is_some_and(|id| id.len() == 36)),
        "policy-wide omitStages leaves only ResponseComplete: {all:?}"
    );
    let crontab = created(&all, "crontabs").unwrap();
    assert_eq!(crontab["level"], "RequestResponse");
    assert_eq!(crontab["user"]["username"], "admin");
    assert!(
        crontab["userAgent"]
            .as_str()
            .is_some_and(|ua| ua.starts_with("kubectl")),
        "{crontab}"
    );
    assert_eq!(crontab["objectRef"]["name"], "my-new-cron-object");
    assert_eq!(crontab["objectRef"]["apiGroup"], "stable.example.com");
    assert_eq!(crontab["responseStatus"]["code"], 201);
    assert_eq!(
        crontab["requestObject"]["spec"]["image"],
        "my-awesome-cron-image"
    );
    assert_eq!(
        crontab["responseObject"]["metadata"]["name"],
        "my-new-cron-object"
    );
    let configmap = created(&all, "configmaps").unwrap();
    assert_eq!(configmap["level"], "Metadata");
    assert_eq!(configmap["responseStatus"]["code"], 201);
    assert_eq!(configmap["objectRef"]["namespace"], "default");
    assert!(configmap.get("requestObject").is_none(), "{configmap}");
    assert!(configmap.get("responseObject").is_none(), "{configmap}");
    assert_eq!(
        configmap["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    // kubectl's discovery and OpenAPI reads match no rule.
    assert!(all.iter().all(|e| e.get("objectRef").is_some()));
}

#[test]
fn an_invalid_audit_policy_stops_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("bad.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
    )
    .expect("policy");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--audit-policy-file")
        .arg(&policy)
        .args(["--audit-log-path", "-"])
        .output()
        .expect("running crd-apiserver");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("loading audit policy file") && stderr.contains("bad.yaml"),
        "{stderr}"
    );
}
