//! `crd-apiserver bench --crds N`: how the CRD path scales with the number of CRDs. One run
//! measures, on one server:
//! - the HTTPS floor (an authenticated `GET /version`, which touches no storage);
//! - N CRDs (one group each, with a schema, a default and a CEL rule) created at once by 32
//!   clients, until all are Established;
//! - `/openapi/v3` (the index) and one group's document, warm, then right after a CRD change;
//! - aggregated discovery (`/apis`) and `/openapi/v2`: warm, `304` to their `ETag`, and right
//!   after a CRD change;
//! - resident memory after that CRD update;
//! - `/readyz` latency while other clients change CRDs and read their OpenAPI documents;
//! - a restart with the N CRDs stored: time until the port answers, and until `/readyz` is ok.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{Report, Server, ms, percentile};

/// Where requests go: the server's URL and bearer token (cheap to clone into tasks).
#[derive(Clone)]
struct Target {
    url: String,
    token: String,
}

impl Target {
    fn of(server: &Server) -> Self {
        Target {
            url: server.url.clone(),
            token: server.token.clone(),
        }
    }
}

/// The group of CRD `i`.
fn group(i: usize) -> String {
    format!("g{i:05}.scale.example.com")
}

/// CRD `i`: namespaced `things` in its own group, with a default and a CEL rule, as operators'
/// CRDs have.
fn crd(i: usize, description: &str) -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "description": description,
            "x-kubernetes-validations": [{"rule": "self.replicas <= 100", "message": "too many"}],
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "image": {"type": "string", "maxLength": 256},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things.{}", group(i))},
        "spec": {"group": group(i), "scope": "Namespaced",
                 "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema}}]}
    })
}

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Sorted latencies of `n` sequential GETs of `path` over one connection.
async fn get_latencies(
    server: &Target,
    client: &reqwest::Client,
    path: &str,
    n: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        lat.push(timed_get(server, client, path).await?.0);
    }
    lat.sort();
    Ok(lat)
}

/// One timed GET; its duration and body size.
async fn timed_get(
    server: &Target,
    client: &reqwest::Client,
    path: &str,
) -> anyhow::Result<(Duration, usize)> {
    let t = Instant::now();
    let r = client
        .get(format!("{}{path}", server.url))
        .bearer_auth(&server.token)
        .send()
        .await?;
    let ok = r.status().is_success();
    let body = r.bytes().await?;
    if !ok {
        bail!("GET {path}: {}", String::from_utf8_lossy(&body));
    }
    Ok((t.elapsed(), body.len()))
}

/// Aggregated discovery's media type (what kubectl asks `/api` and `/apis` for).
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// One timed GET with `Accept: accept` and, when given, `If-None-Match: etag`: its duration,
/// body size, status and `ETag`.
async fn timed_get_as(
    server: &Target,
    client: &reqwest::Client,
    path: &str,
    accept: &str,
    etag: Option<&str>,
) -> anyhow::Result<(Duration, usize, u16, Option<String>)> {
    let t = Instant::now();
    let mut req = client
        .get(format!("{}{path}", server.url))
        .bearer_auth(&server.token)
        .header("Accept", accept);
    if let Some(tag) = etag {
        req = req.header("If-None-Match", tag);
    }
    let r = req.send().await?;
    let status = r.status().as_u16();
    let tag = r
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let body = r.bytes().await?;
    if status != 200 && status != 304 {
        bail!("GET {path}: {status} {}", String::from_utf8_lossy(&body));
    }
    Ok((t.elapsed(), body.len(), status, tag))
}

/// Median of `n` timed GETs (see [`timed_get_as`]) and the last answer's size and status.
async fn median_get_as(
    server: &Target,
    client: &reqwest::Client,
    path: &str,
    accept: &str,
    etag: Option<&str>,
    n: usize,
) -> anyhow::Result<(Duration, usize, u16)> {
    let mut lat = Vec::with_capacity(n);
    let mut answer = (0, 0);
    for _ in 0..n {
        let (d, size, status, _) = timed_get_as(server, client, path, accept, etag).await?;
        lat.push(d);
        answer = (size, status);
    }
    lat.sort();
    Ok((percentile(&lat, 0.5), answer.0, answer.1))
}

/// Rows for aggregated discovery (`/apis`) and `/openapi/v2`: warm, answered `304` to their
/// `ETag`, and right after a CRD change.
async fn discovery_rows(
    server: &Target,
    client: &reqwest::Client,
    report: &mut Report,
    n: usize,
) -> anyhow::Result<()> {
    let (_, _, _, etag) = timed_get_as(server, client, "/apis", AGGREGATED, None).await?;
    let etag = etag.context("aggregated discovery without an ETag")?;
    let (warm, size, _) = median_get_as(server, client, "/apis", AGGREGATED, None, 20).await?;
    let (unchanged, _, status) =
        median_get_as(server, client, "/apis", AGGREGATED, Some(&etag), 20).await?;
    if status != 304 {
        bail!("aggregated discovery answered {status} to its own ETag");
    }
    change_crd(server, client, n / 4, "changed for discovery").await?;
    let (after, _, status, _) =
        timed_get_as(server, client, "/apis", AGGREGATED, Some(&etag)).await?;
    report.row(
        &format!("aggregated discovery /apis with {n} CRDs (warm / 304 to its ETag / right after a CRD change)"),
        format!("{} / {} / {}", ms(warm), ms(unchanged), ms(after)),
        format!("{:.0} KB; after the change: {status}", size as f64 / 1024.0),
    );
    let json = "application/json";
    let (_, _, _, v2_etag) = timed_get_as(server, client, "/openapi/v2", json, None).await?;
    let v2_etag = v2_etag.context("/openapi/v2 without an ETag")?;
    let (v2_warm, v2_size, _) = median_get_as(server, client, "/openapi/v2", json, None, 5).await?;
    let (v2_unchanged, _, _) =
        median_get_as(server, client, "/openapi/v2", json, Some(&v2_etag), 5).await?;
    change_crd(server, client, n / 4, "changed for openapi v2").await?;
    let (v2_after, _, _, _) = timed_get_as(server, client, "/openapi/v2", json, None).await?;
    report.row(
        &format!(
            "/openapi/v2 (JSON) with {n} CRDs (warm / 304 to its ETag / right after a CRD change)"
        ),
        format!("{} / {} / {}", ms(v2_warm), ms(v2_unchanged), ms(v2_after)),
        format!("{:.0} KB", v2_size as f64 / 1024.0),
    );
    Ok(())
}

/// Whether CRD `i` is Established.
async fn established(server: &Target, client: &reqwest::Client, i: usize) -> anyhow::Result<bool> {
    let crd: Value = client
        .get(format!("{}{CRDS}/things.{}", server.url, group(i)))
        .bearer_auth(&server.token)
        .send()
        .await?
        .json()
        .await?;
    Ok(crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        }))
}

/// Creates CRDs `0..n` from 32 clients; returns when all are Established.
async fn create_all(server: &Server, n: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..32 {
        let client = server.client(false)?;
        let (url, token) = (format!("{}{CRDS}", server.url), server.token.clone());
        tasks.push(tokio::spawn(async move {
            for i in (c..n).step_by(32) {
                let r = client
                    .post(&url)
                    .bearer_auth(&token)
                    .header("Content-Type", "application/json")
                    .body(crd(i, "spec").to_string())
                    .send()
                    .await?;
                if r.status().as_u16() != 201 {
                    bail!("creating CRD {i}: {}", r.text().await?);
                }
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    // One cheap read at a time (a list of every CRD would cost the server more than it
    // measures): each CRD in turn, until the last is Established.
    let client = server.client(true)?;
    let target = Target::of(server);
    for i in 0..n {
        while !established(&target, &client, i).await? {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(started.elapsed())
}

/// Changes CRD `i`'s schema (its `spec` description), which changes its OpenAPI document.
async fn change_crd(
    server: &Target,
    client: &reqwest::Client,
    i: usize,
    description: &str,
) -> anyhow::Result<()> {
    let patch = json!({"spec": {"versions": crd(i, description)["spec"]["versions"]}});
    let r = client
        .patch(format!("{}{CRDS}/things.{}", server.url, group(i)))
        .bearer_auth(&server.token)
        .header("Content-Type", "application/merge-patch+json")
        .body(patch.to_string())
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("changing CRD {i}: {}", r.text().await?);
    }
    Ok(())
}

/// `/readyz` latencies (sorted) while 4 clients change CRDs and fetch their OpenAPI documents
/// for `duration`; also returns how many changes were made.
async fn readyz_during_churn(
    server: &Server,
    n: usize,
    duration: Duration,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let deadline = Instant::now() + duration;
    let mut churners = Vec::new();
    for c in 0..4usize {
        let client = server.client(true)?;
        let target = Target::of(server);
        churners.push(tokio::spawn(async move {
            let mut changes = 0usize;
            let mut k = 0usize;
            while Instant::now() < deadline {
                let i = (c * 7919 + k * 31) % n;
                k += 1;
                change_crd(&target, &client, i, &format!("churn {c} {k}")).await?;
                changes += 1;
                timed_get(
                    &target,
                    &client,
                    &format!("/openapi/v3/apis/{}/v1", group(i)),
                )
                .await?;
            }
            Ok::<_, anyhow::Error>(changes)
        }));
    }
    let client = server.client(true)?;
    let mut lat = Vec::new();
    while Instant::now() < deadline {
        let t = Instant::now();
        let r = client.get(format!("{}/readyz", server.url)).send().await?;
        let _ = r.bytes().await?;
        lat.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut changes = 0;
    for t in churners {
        changes += t.await??;
    }
    lat.sort();
    Ok((lat, changes))
}

/// Restarts the server on `data` at the port of `url`: the time until the port answers HTTPS
/// (any `/readyz` reply) and until `/readyz` is ok.
async fn restart(data: &Path, url: &str, ca: &[u8]) -> anyhow::Result<(Duration, Duration)> {
    let port = url.rsplit(':').next().context("no port in the URL")?;
    let started = Instant::now();
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["serve", "--secure-port", port, "--data-dir"])
        .arg(data)
        .args(super::SERVE_FLAGS.get().into_iter().flatten())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .context("restarting the server")?;
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca)?])
        .timeout(Duration::from_secs(5))
        .build()?;
    let mut answered = None;
    let ready = loop {
        if started.elapsed() > Duration::from_mins(10) {
            let _ = child.kill();
            bail!("the restarted server was never ready");
        }
        if let Ok(r) = client.get(format!("{url}/readyz")).send().await {
            let at = started.elapsed();
            answered.get_or_insert(at);
            if r.status().is_success() {
                break at;
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    Ok((answered.unwrap_or(ready), ready))
}

/// Runs the CRD-scale figures with `n` CRDs.
pub async fn run(dir: &Path, report: &mut Report, n: usize) -> anyhow::Result<()> {
    let data = dir.join("data");
    let (server, _) = Server::start(&data)?;
    super::wait_ready(&server).await?;
    let client = server.client(true)?;
    let target = Target::of(&server);

    let floor = get_latencies(&target, &client, "/version", 2000).await?;
    report.row(
        "HTTPS floor: authenticated GET /version, 1 client",
        format!(
            "p50 {}, p99 {}",
            ms(percentile(&floor, 0.5)),
            ms(percentile(&floor, 0.99))
        ),
        "touches no storage; the floor of every figure below".into(),
    );

    let took = create_all(&server, n).await?;
    report.row(
        &format!("{n} CRDs created at once → all Established"),
        format!("{:.2} s", took.as_secs_f64()),
        "32 clients; target < 5 s".into(),
    );

    // OpenAPI: warm, then right after one CRD changes.
    let edited = n / 2;
    let other = n / 3;
    let other_doc = format!("/openapi/v3/apis/{}/v1", group(other));
    let changed_doc = format!("/openapi/v3/apis/{}/v1", group(edited));
    timed_get(&target, &client, "/openapi/v3").await?;
    timed_get(&target, &client, &other_doc).await?;
    let (root_warm, root_size) = timed_get(&target, &client, "/openapi/v3").await?;
    let (doc_warm, doc_size) = timed_get(&target, &client, &other_doc).await?;
    change_crd(&target, &client, edited, "changed once").await?;
    let (root_after, _) = timed_get(&target, &client, "/openapi/v3").await?;
    let (other_after, _) = timed_get(&target, &client, &other_doc).await?;
    change_crd(&target, &client, edited, "changed twice").await?;
    let (changed_after, _) = timed_get(&target, &client, &changed_doc).await?;
    report.row(
        &format!("/openapi/v3 index with {n} CRDs (warm / right after a CRD change)"),
        format!("{} / {}", ms(root_warm), ms(root_after)),
        format!("{:.0} KB; target < 50 ms", root_size as f64 / 1024.0),
    );
    report.row(
        "one group's /openapi/v3 document (warm / right after another CRD's change)",
        format!("{} / {}", ms(doc_warm), ms(other_after)),
        format!("{:.1} KB; target < 50 ms", doc_size as f64 / 1024.0),
    );
    report.row(
        "the changed CRD's group document, right after its change",
        ms(changed_after),
        "target < 50 ms".into(),
    );
    discovery_rows(&target, &client, report, n).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss, peak) = server.memory_kib();
    report.row(
        &format!("resident memory with {n} CRDs, after a CRD update"),
        format!(
            "{:.1} MB (peak {:.1} MB)",
            rss as f64 / 1024.0,
            peak as f64 / 1024.0
        ),
        "target < 300 MB".into(),
    );

    let (lat, changes) = readyz_during_churn(&server, n, Duration::from_secs(10)).await?;
    report.row(
        "/readyz during CRD churn (p50 / p99 / max)",
        format!(
            "{} / {} / {}",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99)),
            ms(lat.last().copied().unwrap_or_default())
        ),
        format!(
            "{changes} CRD changes in 10 s by 4 clients, each followed by a GET of its \
             OpenAPI document; target p99 < 10 ms"
        ),
    );

    let (url, ca) = (server.url.clone(), server.ca.clone());
    drop(client);
    drop(server);
    let (answered, ready) = restart(&data, &url, &ca).await?;
    report.row(
        &format!("restart with {n} CRDs (first HTTPS answer / readyz ok)"),
        format!("{} / {}", ms(answered), ms(ready)),
        "target: ready < 1 s".into(),
    );
    Ok(())
}
