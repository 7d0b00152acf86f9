//! `crd-apiserver bench --only-cache`: the watch cache's figures. The same objects are loaded
//! straight into each engine's storage (`SQLite`, and etcd with `--etcd-servers`), then a
//! server is started on them without and with `--watch-cache`, and each measures gets/s, the
//! latency of a label selector matching 1% and of a name selector, and the memory of 200
//! watchers that never read. Memory per cached object is measured in this process: the
//! cache's resident growth over the objects it holds.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use bytes::Bytes;
use crd_storage::Store;
use serde_json::{Value, json};

pub(super) use super::ensure_crd;
use super::{GROUP, Report, Server, ms, percentile, wait_ready};

/// Options of the cache figures.
#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    /// Measure only the watch cache figures ("cache" section).
    #[arg(long)]
    pub only_cache: bool,
    /// Objects (about 1 KiB each) in the cache figures.
    #[arg(
        id = "cache_objects",
        long = "cache-objects",
        default_value_t = 100_000
    )]
    pub objects: usize,
    /// Gets per server in the cache figures.
    #[arg(id = "cache_gets", long = "cache-gets", default_value_t = 20_000)]
    pub gets: usize,
    /// Watchers that never read, per server, in the cache figures.
    #[arg(
        id = "cache_slow_watchers",
        long = "cache-slow-watchers",
        default_value_t = 200
    )]
    pub slow_watchers: usize,
}

/// The 1 KiB object number `i` as the server stores it: one of 100 `shard` labels, so a
/// `shard=<n>` selector matches 1%.
fn stored(i: usize) -> Bytes {
    let v = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
        "metadata": {"name": name(i), "namespace": "default",
                     "labels": {"app": "bench", "shard": (i % 100).to_string()},
                     "uid": format!("00000000-0000-0000-0000-{i:012}"),
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"payload": "x".repeat(800), "replicas": 3}});
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

pub(super) fn name(i: usize) -> String {
    format!("w-{i:07}")
}

fn key(i: usize) -> String {
    format!("/registry/{GROUP}/widgets/default/{}", name(i))
}

/// Writes `n` objects with 64 concurrent writers.
pub(super) async fn load(store: Arc<dyn Store>, n: usize) -> anyhow::Result<()> {
    let mut tasks = Vec::new();
    for c in 0..64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in (c..n).step_by(64) {
                store.create(&key(i), stored(i)).await?;
            }
            Ok::<_, crd_storage::StorageError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Runs the "cache" section.
pub async fn run(args: &CacheArgs, etcd_servers: &[String]) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut report = Report { rows: Vec::new() };
    println!("| figure | value | note |");
    println!("| --- | --- | --- |");
    memory_per_object(dir.path(), &mut report, args.objects).await?;

    // SQLite: the server's own file, loaded before it starts.
    let data = dir.path().join("sqlite");
    std::fs::create_dir_all(&data)?;
    {
        let store = crd_storage::sqlite::SqliteStore::open(&data.join("state.db"))?;
        load(store, args.objects).await?;
    }
    let mut engines = vec![("sqlite", data, Vec::new())];
    if !etcd_servers.is_empty() {
        let prefix = format!(
            "/bench-cache-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        load(etcd_store(etcd_servers, &prefix).await?, args.objects).await?;
        let flags = vec![
            "--etcd-servers".to_string(),
            etcd_servers.join(","),
            "--etcd-prefix".into(),
            prefix,
        ];
        engines.push(("etcd", dir.path().join("etcd"), flags));
    }
    for (engine, data, flags) in engines {
        for cache in [false, true] {
            let mut extra = flags.clone();
            extra.push(format!("--watch-cache={cache}"));
            let (server, _) = Server::start_with(&data, &extra)?;
            wait_ready(&server).await?;
            let label = format!("{engine}, cache {}", if cache { "on" } else { "off" });
            measure(&server, &mut report, &label, args).await?;
        }
    }
    Ok(())
}

#[cfg(feature = "etcd")]
async fn etcd_store(endpoints: &[String], prefix: &str) -> anyhow::Result<Arc<dyn Store>> {
    let store = crd_storage::etcd::EtcdStore::connect(crd_storage::etcd::EtcdConfig {
        endpoints: endpoints.to_vec(),
        prefix: prefix.to_string(),
        ..crd_storage::etcd::EtcdConfig::default()
    })
    .await?;
    Ok(store)
}

#[cfg(not(feature = "etcd"))]
#[allow(clippy::unused_async)] // Same signature as the etcd build's.
async fn etcd_store(_: &[String], _: &str) -> anyhow::Result<Arc<dyn Store>> {
    bail!("--etcd-servers needs a build with the etcd feature")
}

/// Resident growth of this process while a cache loads `n` objects, per object.
async fn memory_per_object(dir: &Path, report: &mut Report, n: usize) -> anyhow::Result<()> {
    let store: Arc<dyn Store> = crd_storage::sqlite::SqliteStore::open(&dir.join("mem.db"))?;
    load(store.clone(), n).await?;
    let before = rss_kib();
    let cache = crd_storage::cache::CacheStore::new(
        store.clone(),
        crd_storage::cache::CacheConfig::new(
            "/registry/",
            Some(Arc::new(crd_server::watch_cache::ObjectIndexer)),
        ),
    );
    let t = Instant::now();
    cache.wait_ready().await;
    let took = t.elapsed();
    let after = rss_kib();
    let stats = cache.stats();
    let per = (after.saturating_sub(before) * 1024) as f64 / stats.objects.max(1) as f64;
    report.row(
        &format!("cache memory per 1 KiB object ({} objects)", stats.objects),
        format!("{:.2} KiB", per / 1024.0),
        format!(
            "target < 5 KiB; value {} B; resident growth over the load, {} index sets; loaded in {}",
            stored(0).len(),
            stats.index_sets,
            ms(took)
        ),
    );
    drop(cache);
    Ok(())
}

async fn get_json(client: &reqwest::Client, server: &Server, url: &str) -> anyhow::Result<Value> {
    let r = client.get(url).bearer_auth(&server.token).send().await?;
    if !r.status().is_success() {
        bail!("GET {url}: {}", r.status());
    }
    Ok(r.json().await?)
}

/// The median latency of `rounds` sequential GETs of `url`, checking the item count.
pub(super) async fn latency(
    client: &reqwest::Client,
    server: &Server,
    url: &str,
    items: usize,
    rounds: usize,
) -> anyhow::Result<Duration> {
    let mut all = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        let v = get_json(client, server, url).await?;
        all.push(t.elapsed());
        let got = v["items"].as_array().map_or(0, Vec::len);
        if got != items {
            bail!("{url}: {got} items, expected {items}");
        }
    }
    all.sort();
    Ok(percentile(&all, 0.5))
}

async fn measure(
    server: &Server,
    report: &mut Report,
    label: &str,
    args: &CacheArgs,
) -> anyhow::Result<()> {
    let client = server.client(true)?;
    ensure_crd(server, &client).await?;
    let base = format!("{}/apis/{GROUP}/v1/namespaces/default/widgets", server.url);
    // The cache loads in the background: wait until the server's memory stops growing.
    let mut rss0 = server.memory_kib().0;
    for _ in 0..240 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = server.memory_kib().0;
        if now.abs_diff(rss0) < 1024 {
            break;
        }
        rss0 = now;
    }

    let rate = super::gets(server, &base, "w", args.objects, args.gets).await?;
    report.row(
        &format!("gets/s, 64 clients ({label})"),
        format!("{rate:.0}"),
        format!("{} objects", args.objects),
    );
    let expected = (0..args.objects).filter(|i| i % 100 == 7).count();
    let sel = latency(
        &client,
        server,
        &format!("{base}?labelSelector=shard%3D7"),
        expected,
        20,
    )
    .await?;
    report.row(
        &format!("list labelSelector matching 1% ({label})"),
        ms(sel),
        format!(
            "median of 20; {expected} of {} items; target < 100 ms",
            args.objects
        ),
    );
    let by_name = latency(
        &client,
        server,
        &format!(
            "{base}?fieldSelector=metadata.name%3D{}",
            name(args.objects / 2)
        ),
        1,
        20,
    )
    .await?;
    report.row(
        &format!("list fieldSelector metadata.name ({label})"),
        ms(by_name),
        "median of 20".into(),
    );
    slow_watchers(server, report, label, args, rss0).await
}

/// Opens watchers that never read, writes updates, and reports the server's memory with them
/// open and after they close.
pub(super) async fn slow_watchers(
    server: &Server,
    report: &mut Report,
    label: &str,
    args: &CacheArgs,
    rss0: u64,
) -> anyhow::Result<()> {
    let phase = watch_phase(server, args.slow_watchers, args.objects, 0).await?;
    let mb = |k: u64| format!("{:.0} MB", k as f64 / 1024.0);
    report.row(
        &format!(
            "{} watchers that never read, {} updates ({label})",
            args.slow_watchers, phase.writes
        ),
        format!(
            "{} while open (+{})",
            mb(phase.open_rss),
            mb(phase.open_rss.saturating_sub(rss0))
        ),
        format!(
            "peak {}, {} after they close; updates took {}",
            mb(phase.peak_rss),
            mb(phase.after_rss),
            ms(phase.took)
        ),
    );
    Ok(())
}

/// What one watcher phase measured (`watch_phase`): resident memory in KiB.
pub(super) struct WatchPhase {
    /// The updates written.
    pub writes: usize,
    /// RSS 1 s after the last update, the watchers still open.
    pub open_rss: u64,
    /// The process's RSS high-water mark (`VmHWM`) at that moment.
    pub peak_rss: u64,
    /// The server's threads at that moment (`/proc/<pid>/task`): tokio's blocking pool grows
    /// with concurrent reads, and each thread has its allocator cache.
    pub open_threads: usize,
    /// RSS 5 s after the watchers closed.
    pub after_rss: u64,
    /// How long the updates took.
    pub took: Duration,
}

/// Opens `watchers` watchers that never read (none: the control run, the same updates alone),
/// writes 2000 merge patches of `objects`' first objects (`spec.replicas` set to `value + i`,
/// so that each phase's values differ from the previous one's and every patch is a change),
/// waits 1 s, closes the watchers, and waits 5 s: the same timeline with and without watchers,
/// so that a control run's figures can be subtracted from the watchers'.
pub(super) async fn watch_phase(
    server: &Server,
    watchers: usize,
    objects: usize,
    value: usize,
) -> anyhow::Result<WatchPhase> {
    let base = format!("{}/apis/{GROUP}/v1/namespaces/default/widgets", server.url);
    let rv = get_json(&server.client(true)?, server, &format!("{base}?limit=1")).await?["metadata"]
        ["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let conns: Vec<reqwest::Client> = (0..10)
        .map(|_| server.client(false))
        .collect::<Result<_, _>>()?;
    let mut streams = Vec::new();
    for i in 0..watchers {
        let r = conns[i % conns.len()]
            .get(format!("{base}?watch=true&resourceVersion={rv}"))
            .bearer_auth(&server.token)
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("watch: {}", r.status());
        }
        streams.push(r);
    }
    // 2000 updates of 1 KiB objects: each watcher would be sent about 2 MB.
    let writes = 2000;
    let patcher = server.client(true)?;
    let t = Instant::now();
    for i in 0..writes {
        let r = patcher
            .patch(format!("{base}/{}", name(i % objects)))
            .bearer_auth(&server.token)
            .header("Content-Type", "application/merge-patch+json")
            .body(format!(r#"{{"spec":{{"replicas":{}}}}}"#, value + i + 10))
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("patch: {}", r.status());
        }
        let _ = r.bytes().await?;
    }
    let took = t.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (open_rss, peak_rss) = server.memory_kib();
    let open_threads = server.threads();
    drop(streams);
    drop(conns);
    // Memory returns once the server has noticed the closed connections.
    let mut after_rss = open_rss;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after_rss = server.memory_kib().0;
    }
    Ok(WatchPhase {
        writes,
        open_rss,
        peak_rss,
        open_threads,
        after_rss,
        took,
    })
}
