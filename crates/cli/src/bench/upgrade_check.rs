//! The "upgrade check" section of `crd-apiserver bench` (`--only-upgrade-check`, `--objects N`,
//! default 100,000): objects checked per second by `POST /debug/upgrade-check` over `N` stored
//! 1-KiB widgets (served at two versions, so each object is converted, pruned, defaulted and
//! validated twice), for an unchanged CRD and for one every object fails (a finding per object).
//! Floors from the same run: a paged list of the same objects through the server (`limit=500`,
//! as the check pages), and the storage engine's own paged scan of them without the server.

use std::path::Path;
use std::time::Instant;

use anyhow::bail;
use serde_json::{Value, json};

use super::{GROUP, Report, Server, crd, create_load, setup_crd, wait_ready};

/// The bench CRD with a typed schema: `spec.replicas` at most `max`, `spec.payload` a string.
fn typed_crd(max: i64) -> Value {
    let mut c = crd();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "payload": {"type": "string"},
        "replicas": {"type": "integer", "maximum": max}}}}});
    for v in c["spec"]["versions"].as_array_mut().into_iter().flatten() {
        v["schema"]["openAPIV3Schema"] = schema.clone();
    }
    c
}

/// Runs one check; returns (objects/s, findings, the report's object count).
async fn check(server: &Server, proposed: &Value) -> anyhow::Result<(f64, usize, u64)> {
    let client = server.client(true)?;
    let t = Instant::now();
    let r = client
        .post(format!("{}/debug/upgrade-check", server.url))
        .bearer_auth(&server.token)
        .header("Content-Type", "application/json")
        .body(proposed.to_string())
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("the upgrade check failed: {}", r.text().await?);
    }
    let report: Value = r.json().await?;
    let elapsed = t.elapsed().as_secs_f64();
    let objects = report["objects"].as_u64().unwrap_or(0);
    let findings = report["findings"].as_array().map_or(0, Vec::len);
    Ok((objects as f64 / elapsed, findings, objects))
}

/// Lists every widget through the server, 500 a page; returns objects/s.
async fn paged_list(server: &Server) -> anyhow::Result<f64> {
    let client = server.client(true)?;
    let base = format!("{}/apis/{GROUP}/v1/widgets?limit=500", server.url);
    let t = Instant::now();
    let (mut n, mut next) = (0usize, String::new());
    loop {
        let url = if next.is_empty() {
            base.clone()
        } else {
            format!("{base}&continue={next}")
        };
        let page: Value = client
            .get(url)
            .bearer_auth(&server.token)
            .send()
            .await?
            .json()
            .await?;
        n += page["items"].as_array().map_or(0, Vec::len);
        next = page["metadata"]["continue"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if next.is_empty() {
            break;
        }
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

/// Scans the widgets' key prefix in the server's SQLite file, 500 a page, without the server;
/// returns objects/s.
async fn engine_scan(data: &Path) -> anyhow::Result<f64> {
    let store = crd_storage::sqlite::SqliteStore::open(&data.join("state.db"))?;
    let t = Instant::now();
    let mut n = 0usize;
    let mut pages = crd_storage::Pages::new(
        store.as_ref(),
        format!("/registry/{GROUP}/widgets/"),
        None,
        500,
    );
    while let Some(items) = pages.next_page().await? {
        n += items.len();
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

/// Runs the section.
pub(super) async fn run(
    dir: &Path,
    report: &mut Report,
    objects: usize,
    on_etcd: bool,
) -> anyhow::Result<()> {
    let data = dir.join("upgrade-check");
    let (server, _) = Server::start(&data)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    setup_crd(&server, &client).await?;
    create_load(&server, 64, objects, "u").await?;

    let list = paged_list(&server).await?;
    let (same, same_findings, seen) = check(&server, &crd()).await?;
    if seen != objects as u64 {
        bail!("the check saw {seen} of {objects} objects");
    }
    let (tight, tight_findings, _) = check(&server, &typed_crd(2)).await?;
    report.row(
        &format!("upgrade check, objects checked/s over {objects} stored objects: unchanged CRD / every object invalid"),
        format!("{same:.0} / {tight:.0}"),
        format!(
            "{same_findings} / {tight_findings} findings; 2 served versions, so 2 conversions + prune + default + validate per object"
        ),
    );
    report.row(
        "paged list through the server (limit=500), objects/s",
        format!("{list:.0}"),
        format!(
            "floor, same run; the check runs at {:.2}x of it",
            same / list
        ),
    );
    drop(server);
    if on_etcd {
        return Ok(());
    }
    let engine = engine_scan(&data).await?;
    report.row(
        "SQLite paged scan without the server (500 a page), objects/s",
        format!("{engine:.0}"),
        format!(
            "physical floor, same run; the check runs at {:.2}x of it",
            same / engine
        ),
    );
    Ok(())
}
