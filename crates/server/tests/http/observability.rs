//! Observability over HTTP: `/metrics` after real requests (labels as kube-apiserver's),
//! the health endpoints' named checks, `/readyz` during graceful shutdown, and audit events
//! written for requests.
//!
//! Metrics are process-wide and the tests of this binary share the process, so each test uses
//! its own API group and compares counters before and after.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, crd_json, eventually};

/// The value of the series `series` (name and labels, exactly) in a scrape, or 0.
fn sample(scrape: &str, series: &str) -> i64 {
    scrape
        .lines()
        .find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        })
        .map_or(0, |v| v as i64)
}

fn request_total(
    code: &str,
    dry_run: &str,
    group: &str,
    resource: &str,
    scope: &str,
    verb: &str,
) -> String {
    format!(
        "apiserver_request_total{{code=\"{code}\",component=\"apiserver\",dry_run=\"{dry_run}\",\
         group=\"{group}\",resource=\"{resource}\",scope=\"{scope}\",subresource=\"\",\
         verb=\"{verb}\",version=\"v1\"}}"
    )
}

async fn scrape(s: &TestServer) -> String {
    let r = s.api(HttpVersion::Http1).get("/metrics").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    r.text
}

#[tokio::test]
async fn metrics_count_every_request_with_upstream_labels() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    let group = "metrics.example.com";
    api.create_crd(crd_json(group, "gauges", "Gauge", "Namespaced"))
        .await;
    let base = format!("/apis/{group}/v1/namespaces/default/gauges");
    // A failed authentication keeps only the verb: nothing the client chose becomes a label.
    let unauthenticated = |verb: &str| {
        format!(
            "apiserver_request_total{{code=\"401\",component=\"apiserver\",dry_run=\"\",\
             group=\"\",resource=\"\",scope=\"\",subresource=\"\",verb=\"{verb}\",\
             version=\"\"}}"
        )
    };
    let text = scrape(&s).await;
    let before = (
        sample(&text, &unauthenticated("LIST")),
        sample(&text, &unauthenticated("GET")),
    );

    let obj = json!({"apiVersion": format!("{group}/v1"), "kind": "Gauge",
                     "metadata": {"name": "g1"}});
    let r = api.post(&base, obj.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let audit_id = r.headers["audit-id"].to_str().unwrap();
    assert_eq!(audit_id.len(), 36, "a UUID: {audit_id}");
    let r = api
        .post(
            &format!("{base}?dryRun=All"),
            json!({"apiVersion": format!("{group}/v1"),
            "kind": "Gauge", "metadata": {"name": "g2"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(api.get(&format!("{base}/g1")).await.status, 200);
    assert_eq!(api.get(&format!("{base}/nope")).await.status, 404);
    // A token nobody knows: 401, counted as a failed authentication.
    let stranger = s.client(HttpVersion::Http1);
    let r = stranger
        .get(format!("{}/apis/{group}/v1/gauges", s.url))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().contains_key("audit-id"));
    let r = stranger
        .get(format!("{}/metrics", s.url))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::UNAUTHORIZED,
        "/metrics needs authentication"
    );
    // The anonymous user is not in system:monitoring.
    let r = stranger
        .get(format!("{}/metrics", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let watch = api
        .get(&format!("{base}?watch=true&timeoutSeconds=1"))
        .await;
    assert_eq!(watch.status, 200);
    assert_eq!(watch.lines()[0]["type"], "ADDED");

    let text = scrape(&s).await;
    let create = request_total("201", "", group, "gauges", "namespace", "POST");
    assert_eq!(sample(&text, &create), 1, "{create} in\n{text}");
    let dry = request_total("201", "All", group, "gauges", "namespace", "POST");
    assert_eq!(sample(&text, &dry), 1, "{dry}");
    let get = request_total("200", "", group, "gauges", "namespace", "GET");
    assert_eq!(sample(&text, &get), 1, "{get}");
    let missing = request_total("404", "", group, "gauges", "namespace", "GET");
    assert_eq!(sample(&text, &missing), 1, "{missing}");
    // Other tests of this process may add failed authentications of their own.
    assert!(sample(&text, &unauthenticated("LIST")) > before.0);
    assert!(sample(&text, &unauthenticated("GET")) > before.1);
    let duration = format!(
        "apiserver_request_duration_seconds_count{{component=\"apiserver\",dry_run=\"\",\
         group=\"{group}\",resource=\"gauges\",scope=\"namespace\",subresource=\"\",\
         verb=\"POST\",version=\"v1\"}}"
    );
    assert_eq!(sample(&text, &duration), 1, "{duration}");
    assert!(text.contains(&format!(
        "apiserver_request_duration_seconds_bucket{{component=\"apiserver\",dry_run=\"\",\
         group=\"{group}\",resource=\"gauges\",scope=\"namespace\",subresource=\"\",\
         verb=\"POST\",version=\"v1\",le=\"0.005\"}}"
    )));
    // The scrape itself holds a read-only slot.
    assert!(
        sample(
            &text,
            "apiserver_current_inflight_requests{request_kind=\"readOnly\"}"
        ) >= 1
    );
    assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"}"));
    let etcd = format!(
        "etcd_request_duration_seconds_count{{operation=\"create\",type=\"gauges.{group}\"}}"
    );
    assert_eq!(sample(&text, &etcd), 1, "{etcd}");
    let events =
        format!("apiserver_watch_events_total{{group=\"{group}\",kind=\"Gauge\",version=\"v1\"}}");
    assert_eq!(sample(&text, &events), 1, "{events}");
    for family in [
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(text.contains(family), "{family} missing");
    }
    // Object counts are refreshed at most every few seconds.
    let objects = format!("apiserver_storage_objects{{resource=\"gauges.{group}\"}}");
    eventually("the object count is refreshed", || async {
        sample(&scrape(&s).await, &objects) == 1
    })
    .await;
    // A watch is counted when its stream ends.
    let watched = request_total("200", "", group, "gauges", "namespace", "WATCH");
    eventually("the watch is counted", || async {
        sample(&scrape(&s).await, &watched) == 1
    })
    .await;
}

#[tokio::test]
async fn health_endpoints_list_named_checks() {
    let s = TestServer::start().await;
    let c = s.client(HttpVersion::Http1);
    let get = |path: &str| {
        let c = c.clone();
        let url = format!("{}{path}", s.url);
        let token = s.token.clone();
        async move {
            let r = c.get(url).bearer_auth(token).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(get("/readyz").await, (200, "ok".into()));
    assert_eq!(get("/healthz").await, (200, "ok".into()));
    assert_eq!(
        get("/readyz?verbose").await,
        (
            200,
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n\
             [+]poststarthook/crd-informer-synced ok\n\
             [+]poststarthook/start-apiextensions-controllers ok\n[+]shutdown ok\n\
             readyz check passed\n"
                .into()
        )
    );
    assert_eq!(
        get("/livez?verbose").await,
        (
            200,
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/crd-informer-synced ok\n\
             [+]poststarthook/start-apiextensions-controllers ok\nlivez check passed\n"
                .into()
        )
    );
    assert_eq!(get("/readyz/etcd").await, (200, "ok".into()));
    // Anonymous users may read the health endpoints themselves, not single checks
    // (`system:public-info-viewer` lists `/readyz`, `/livez`, `/healthz` exactly).
    let anonymous = |path: &str| c.get(format!("{}{path}", s.url)).send();
    assert_eq!(anonymous("/readyz").await.unwrap().status(), 200);
    assert_eq!(anonymous("/readyz/etcd").await.unwrap().status(), 403);
    assert_eq!(
        get("/livez/poststarthook/crd-informer-synced").await,
        (200, "ok".into())
    );
    assert_eq!(get("/readyz/nope").await.0, 404);
    assert_eq!(
        get("/livez/shutdown").await.0,
        404,
        "livez has no shutdown check"
    );
    let (code, body) = get("/readyz?verbose&exclude=etcd&exclude=nope&exclude=log").await;
    assert_eq!(code, 200);
    assert!(
        body.contains("[+]log excluded: ok\n[+]etcd excluded: ok\n"),
        "{body}"
    );
    assert!(
        body.ends_with(
            "warn: some health checks cannot be excluded: no matches for \"nope\"\n\
             readyz check passed\n"
        ),
        "{body}"
    );
    let r = c.get(format!("{}/readyz", s.url)).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn readyz_fails_as_soon_as_shutdown_begins() {
    let s = TestServer::start_with(|c| c.shutdown_delay = Duration::from_secs(10)).await;
    let c = s.client(HttpVersion::Http1);
    s.begin_shutdown();
    eventually("readyz fails", || async {
        let r = c.get(format!("{}/readyz", s.url)).send().await.unwrap();
        r.status() == StatusCode::INTERNAL_SERVER_ERROR
    })
    .await;
    let r = c.get(format!("{}/readyz", s.url)).send().await.unwrap();
    let body = r.text().await.unwrap();
    assert!(
        body.ends_with("[+]poststarthook/start-apiextensions-controllers ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"),
        "{body}"
    );
    let r = c
        .get(format!("{}/readyz/shutdown", s.url))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(
        r.text().await.unwrap(),
        "internal server error: process is shutting down\n"
    );
    // Still serving: livez and API requests succeed.
    let r = c.get(format!("{}/livez", s.url)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .api(HttpVersion::Http1)
        .get("/api/v1/namespaces/default")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

const AUDIT_POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/readyz*", "/livez*", "/healthz*"]
  - level: RequestResponse
    resources:
      - group: audit.example.com
        resources: ["notes"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["configmaps"]
    omitStages: [RequestReceived]
"#;

fn audit_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn audit_events_follow_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, AUDIT_POLICY).unwrap();
    let log = dir.path().join("logs/audit.log");
    let log_path = log.clone();
    let s = TestServer::start_with(move |c| {
        c.audit = crd_server::audit::AuditOptions {
            policy_file: Some(policy),
            log: Some(crd_server::audit::log::LogOptions {
                path: log_path,
                ..Default::default()
            }),
        };
    })
    .await;
    let api = s.api(HttpVersion::Http1);
    let group = "audit.example.com";
    api.create_crd(crd_json(group, "notes", "Note", "Namespaced"))
        .await;
    let base = format!("/apis/{group}/v1/namespaces/default/notes");
    let r = api
        .post(
            &base,
            json!({"apiVersion": format!("{group}/v1"), "kind": "Note",
            "metadata": {"name": "n1"}, "spec": {"text": "hi"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let note_id = r.headers["audit-id"].to_str().unwrap().to_string();
    let r = api
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1",
            "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"k": "v"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let cm_id = r.headers["audit-id"].to_str().unwrap().to_string();
    let r = api
        .get("/api/v1/namespaces/default/configmaps/absent")
        .await;
    assert_eq!(r.status, 404);
    let missing_id = r.headers["audit-id"].to_str().unwrap().to_string();
    // The admin acts as jane, who holds nothing: audited as the admin, impersonating jane.
    let r = api
        .request(
            reqwest::Method::GET,
            "/api/v1/namespaces/default/configmaps/cm1",
        )
        .header("Impersonate-User", "jane")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let impersonated_id = r.headers()["audit-id"].to_str().unwrap().to_string();
    let watch = api.get(&format!("{base}?watch=1&timeoutSeconds=1")).await;
    let watch_id = watch.headers["audit-id"].to_str().unwrap().to_string();
    assert_eq!(
        s.client(HttpVersion::Http1)
            .get(format!("{}/readyz", s.url))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    let of = |id: &str| -> Vec<Value> {
        audit_lines(&log)
            .into_iter()
            .filter(|e| e["auditID"] == id)
            .collect()
    };
    eventually("the watch's ResponseComplete is written", || async {
        of(&watch_id).len() == 3
    })
    .await;

    let impersonated = of(&impersonated_id);
    let last = impersonated.last().expect("an audit event");
    assert_eq!(last["user"]["username"], "admin");
    assert_eq!(last["impersonatedUser"]["username"], "jane");
    assert_eq!(
        last["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );

    let note = of(&note_id);
    let stages: Vec<&str> = note.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"]);
    let done = &note[1];
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["verb"], "create");
    assert_eq!(done["requestURI"], base);
    assert_eq!(done["user"]["username"], "admin");
    assert_eq!(done["sourceIPs"], json!(["127.0.0.1"]));
    assert_eq!(
        done["objectRef"],
        json!({"resource": "notes", "namespace": "default", "name": "n1", "apiGroup": group,
            "apiVersion": "v1"})
    );
    assert_eq!(done["responseStatus"], json!({"metadata": {}, "code": 201}));
    assert_eq!(done["requestObject"]["spec"]["text"], "hi");
    assert_eq!(done["responseObject"]["metadata"]["name"], "n1");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(
        done["annotations"]
            .get("authorization.k8s.io/reason")
            .is_some()
    );
    assert!(note[0].get("responseStatus").is_none());
    assert!(note[0].get("requestObject").is_none());
    assert_eq!(
        note[0]["requestReceivedTimestamp"],
        done["requestReceivedTimestamp"]
    );
    let ts = done["stageTimestamp"].as_str().unwrap();
    assert_eq!(ts.len(), "2006-01-02T15:04:05.000000Z".len(), "{ts}");

    let cm = of(&cm_id);
    assert_eq!(cm.len(), 1, "RequestReceived is omitted: {cm:?}");
    assert_eq!(cm[0]["level"], "Metadata");
    assert_eq!(cm[0]["stage"], "ResponseComplete");
    assert!(cm[0].get("requestObject").is_none());
    assert!(cm[0].get("responseObject").is_none());

    let missing = of(&missing_id);
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0]["responseStatus"]["code"], 404);
    assert_eq!(missing[0]["responseStatus"]["reason"], "NotFound");
    assert_eq!(missing[0]["responseStatus"]["status"], "Failure");
    assert_eq!(missing[0]["objectRef"]["name"], "absent");

    let watched = of(&watch_id);
    let stages: Vec<&str> = watched
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(watched[2]["verb"], "watch");
    assert!(
        watched[2].get("responseObject").is_none(),
        "watch events are not logged"
    );

    assert!(
        audit_lines(&log)
            .iter()
            .all(|e| e["requestURI"] != "/readyz"),
        "level None is not written"
    );
}
