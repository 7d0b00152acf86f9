//! `crd-apiserver bench --only-memory [--objects 100000]`: bounded memory ("Bounded memory" in
//! BENCHMARKS.md). Objects of about 1 KiB are loaded straight into `SQLite`, a server (with the
//! watch cache, as `serve` defaults) is started on them, and the bench reports the server's
//! resident memory (sampled every 10 ms) while 8 clients each read the full list at once, and
//! after they finish, for each form a list takes (JSON, the Table `kubectl get` asks for, the
//! `PartialObjectMetadataList` of metadata informers, and a label selector matching half);
//! the latency of a label selector matching 1% and of a `metadata.name` selector. Before the
//! lists: the memory while 200 watchers that never read are open and after they close, against
//! a control run of the same 2000 updates without watchers just before (what the updates alone
//! leave, the event window and SQLite's caches, is not the watchers').
//!
//! A single list's live-heap peak is measured `--single-lists` times (median and maximum),
//! each between a baseline scrape of `/metrics` and one after it, with nothing scraped in
//! between (a scrape's render allocates several hundred KB, more than a Table page), and
//! beside the same windows without a list (the floor: the scrapes and the idle server). A
//! server that reports it gives the live heap without jemalloc's thread caches too.
//!
//! The allocator is the one the binary was built with (features `jemalloc`, `mimalloc`;
//! glibc's by default); `CRD_APISERVER_STREAM_LISTS=false` in the environment measures the
//! server without streamed lists.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;

use super::cache::{WatchPhase, ensure_crd, latency, load, name, watch_phase};
use super::{GROUP, Report, Server, ms, wait_ready};

/// Options of the memory figures.
#[derive(clap::Args, Debug)]
pub struct MemoryArgs {
    /// Measure only the memory figures ("memory" section, `memory.rs`).
    #[arg(long)]
    pub only_memory: bool,
    /// Watchers that never read in the memory figures' watcher phase (what stays after them
    /// should not grow with their number).
    #[arg(long, default_value_t = 200)]
    pub memory_watchers: usize,
    /// Single lists of each form, one after another, each against its own baseline (the
    /// memory figures report their median and maximum).
    #[arg(long, default_value_t = 5)]
    pub single_lists: usize,
}

/// Which allocator this binary was built with.
fn allocator() -> &'static str {
    if cfg!(feature = "jemalloc") {
        "jemalloc"
    } else if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "glibc"
    }
}

fn mb(kib: u64) -> String {
    format!("{:.0} MB", kib as f64 / 1024.0)
}

/// Resident memory after the server settles: the lowest of 5 s of samples every 100 ms
/// (allocators hand memory back over seconds).
async fn settled_rss(server: &Server) -> u64 {
    let mut low = u64::MAX;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        low = low.min(server.memory_kib().0);
    }
    low
}

/// Runs the "memory" section.
pub async fn run(objects: usize, args: &MemoryArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // `CRD_APISERVER_BENCH_DATA=<dir>`: the store is loaded there once and kept, so that later
    // runs (and a server started by hand on it, for heaptrack) skip the minutes of loading.
    let kept = std::env::var_os("CRD_APISERVER_BENCH_DATA").map(std::path::PathBuf::from);
    let mut report = Report { rows: Vec::new() };
    let streamed = std::env::var("CRD_APISERVER_STREAM_LISTS").map_or(true, |v| v != "false");
    let label = format!(
        "{}, lists {}",
        allocator(),
        if streamed { "streamed" } else { "unstreamed" }
    );
    println!("| figure | value | note |");
    println!("| --- | --- | --- |");
    let data = kept.unwrap_or_else(|| dir.path().join("sqlite"));
    let loaded = data.join("state.db").exists();
    std::fs::create_dir_all(&data)?;
    if !loaded {
        let store = crd_storage::sqlite::SqliteStore::open(&data.join("state.db"))?;
        load(store, objects).await?;
    }
    // The live heap sampled every 5 ms (a jemalloc build), to catch a list's peak.
    let sample = ["--heap-sample-interval-ms".to_string(), "5".to_string()];
    let (server, _) = Server::start_with(&data, &sample)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    ensure_crd(&server, &client).await?;
    // The cache and the controllers' informers load in the background: wait until the server's
    // memory stops growing. At 100k objects the informers' paged lists read storage at their
    // first page's revision for minutes, growing the heap by about 0.5 MB/s: a step of 0.5 s
    // saw that as settled, and what the informers kept loading was then counted against the
    // watchers and the lists. Settled now means under 1 MB over 10 s (at most 15 minutes).
    let settling = Instant::now();
    let mut rss0 = server.memory_kib().0;
    while settling.elapsed() < Duration::from_mins(15) {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let now = server.memory_kib().0;
        if now.abs_diff(rss0) < 1024 {
            break;
        }
        rss0 = now;
    }
    report.row(
        &format!("server settled after start ({label})"),
        format!("{:.0} s", settling.elapsed().as_secs_f64()),
        format!("RSS {}: under 1 MB of growth over 10 s", mb(rss0)),
    );
    let base = format!("{}/apis/{GROUP}/v1/namespaces/default/widgets", server.url);
    // One list first: the item count checked.
    let one = client.get(&base).bearer_auth(&server.token).send().await?;
    let body = one.bytes().await?;
    let items = serde_json::from_slice::<serde_json::Value>(&body)?["items"]
        .as_array()
        .map_or(0, Vec::len);
    drop(body);
    if items != objects {
        bail!("the full list has {items} items, expected {objects}");
    }
    drop(client);
    // The watchers first, on the server as the cache load left it, so that their growth and
    // what stays after they close are not mixed with what the lists leave in the allocator.
    // Before them a control run: the same 2000 updates with no watcher, on the same timeline.
    // What the updates alone leave (the watch cache's event window holds each event with its
    // previous object; SQLite's caches) stays with or without watchers; the watchers' own
    // remainder is what stays after their phase minus what stays after the control's.
    let scraper = server.client(true)?;
    pause("watchers", &server).await;
    let control = measured_phase(&server, &scraper, 0, objects, 1_000_000).await?;
    let watchers = args.memory_watchers;
    let watched = measured_phase(&server, &scraper, watchers, objects, 0).await?;
    let watched_what = format!("{watchers} watchers that never read");
    for (what, p) in [
        ("no watchers (control)", &control),
        (watched_what.as_str(), &watched),
    ] {
        report.row(
            &format!(
                "{what}, {} updates: RSS before / 1 s after the updates / 10 s after ({label})",
                p.phase.writes
            ),
            format!(
                "{} / {} / {}",
                mb(p.rss_before),
                mb(p.phase.open_rss),
                mb(p.rss_after)
            ),
            format!(
                "updates took {}; server CPU during the phase {:.1} s; after the cache load: {}",
                ms(p.phase.took),
                p.cpu,
                mb(rss0)
            ),
        );
        if let Some((before, peak, after)) = p.heap {
            report.row(
                &format!("{what}: live heap before / peak / 10 s after ({label})"),
                format!(
                    "{} / {} / {}",
                    bytes_mb(before),
                    bytes_mb(peak),
                    bytes_mb(after)
                ),
                format!(
                    "stays {:+.1} MB; jemalloc stats.allocated",
                    signed_mb(before, after)
                ),
            );
        }
        if let Some((before, after)) = p.live {
            report.row(
                &format!("{what}: live heap without thread caches before / 10 s after ({label})"),
                format!("{} / {}", bytes_mb(before.0), bytes_mb(after.0)),
                format!(
                    "stays {:+.1} MB; thread caches {} / {}",
                    signed_mb(before.0, after.0),
                    bytes_mb(before.1),
                    bytes_mb(after.1)
                ),
            );
        }
        report.row(
            &format!("{what}: server threads before / open / 10 s after ({label})"),
            format!(
                "{} / {} / {}",
                p.threads_before, p.phase.open_threads, p.threads_after
            ),
            "/proc/<pid>/task".into(),
        );
    }
    let rss_stays = |p: &Measured| p.rss_after as f64 - p.rss_before as f64;
    report.row(
        &format!("what stays after the watchers minus the control, RSS ({label})"),
        format!(
            "{:+.1} MB",
            (rss_stays(&watched) - rss_stays(&control)) / 1024.0
        ),
        format!(
            "with watchers {:+.1} MB, control {:+.1} MB",
            rss_stays(&watched) / 1024.0,
            rss_stays(&control) / 1024.0
        ),
    );
    if let (Some((wb, wa)), Some((cb, ca))) = (watched.live, control.live) {
        report.row(
            &format!(
                "what stays after the watchers minus the control, live heap without thread caches ({label})"
            ),
            format!("{:+.1} MB", signed_mb(wb.0, wa.0) - signed_mb(cb.0, ca.0)),
            format!(
                "with watchers {:+.1} MB, control {:+.1} MB; target: about 0",
                signed_mb(wb.0, wa.0),
                signed_mb(cb.0, ca.0)
            ),
        );
    }
    if let (Some((wb, _, wa)), Some((cb, _, ca))) = (watched.heap, control.heap) {
        report.row(
            &format!("what stays after the watchers minus the control, live heap ({label})"),
            format!("{:+.1} MB", signed_mb(wb, wa) - signed_mb(cb, ca)),
            format!(
                "with watchers {:+.1} MB, control {:+.1} MB; target: about 0",
                signed_mb(wb, wa),
                signed_mb(cb, ca)
            ),
        );
    }
    pause("lists", &server).await;
    let forms = [
        ("JSON", "application/json", String::new()),
        (
            "Table",
            "application/json;as=Table;g=meta.k8s.io;v=v1",
            String::new(),
        ),
        (
            "PartialObjectMetadataList",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            String::new(),
        ),
        (
            "JSON, labelSelector matching 50%",
            "application/json",
            // Shards 0..49 of 100.
            format!(
                "?labelSelector=shard+in+({})",
                (0..50).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            ),
        ),
    ];
    // (The watchers' updates changed the objects: a list's size is what all 8 agree on.)
    for (what, accept, query) in forms {
        // One list alone (several times, one after another, each against its own baseline:
        // one run's figure moves by pages with what the allocator happens to hold), then 8 at
        // once: the live heap's peak against one page (a jemalloc build reports it; the target
        // is under 2× a page per list).
        let mut singles = Vec::new();
        let mut got = 0;
        let mut took = Duration::ZERO;
        for _ in 0..args.single_lists {
            let (_, t, size, heap) =
                concurrent_lists(&server, &format!("{base}{query}"), accept, 1).await?;
            (got, took) = (size, took.max(t));
            singles.extend(heap);
        }
        let page = got as f64 / objects.max(1) as f64 * 500.0;
        // The floor: the same windows with no list (the scrapes, the informers, the sampler).
        let mut idle = Vec::new();
        for _ in 0..args.single_lists {
            idle.extend(idle_window(&server, took).await);
        }
        for (figure, pick) in [
            (
                "live heap without thread caches",
                (|w: &Window| w.live) as fn(&Window) -> Option<(u64, u64)>,
            ),
            ("jemalloc stats.allocated", |w: &Window| Some(w.allocated)),
        ] {
            let pages = |ws: &[Window]| -> Vec<f64> {
                ws.iter()
                    .filter_map(pick)
                    .map(|(before, peak)| peak.saturating_sub(before) as f64 / page)
                    .collect()
            };
            let (lists, floor) = (pages(&singles), pages(&idle));
            if lists.is_empty() {
                continue;
            }
            report.row(
                &format!(
                    "1 full list of {objects} objects, {what}: {figure}, peak growth in pages ({label})"
                ),
                format!(
                    "median {:.2}, max {:.2} (target < 2)",
                    median(&lists),
                    max(&lists)
                ),
                format!(
                    "{} lists one after another: {}; page {:.0} KB; the same windows without a list: median {:.2}, max {:.2}",
                    lists.len(),
                    lists
                        .iter()
                        .map(|p| format!("{p:.2}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    page / 1024.0,
                    median(&floor),
                    max(&floor)
                ),
            );
        }
        let before = settled_rss(&server).await;
        let (peak, took, got, heap) =
            concurrent_lists(&server, &format!("{base}{query}"), accept, 8).await?;
        if let Some(heap) = heap {
            report.row(
                &format!(
                    "8 concurrent full lists of {objects} objects, {what}: live heap peak ({label})"
                ),
                heap_growth(heap.allocated, got, objects, 8),
                "jemalloc stats.allocated, sampled every 5 ms".into(),
            );
            if let Some(live) = heap.live {
                report.row(
                    &format!(
                        "8 concurrent full lists of {objects} objects, {what}: live heap without thread caches, peak ({label})"
                    ),
                    heap_growth(live, got, objects, 8),
                    "stats.allocated minus tcache_bytes, sampled every 5 ms".into(),
                );
            }
        }
        let after = settled_rss(&server).await;
        report.row(
            &format!("8 concurrent full lists of {objects} objects, {what} ({label})"),
            format!("peak {} (+{})", mb(peak), mb(peak.saturating_sub(before))),
            format!(
                "{} before, {} after; response {:.1} MB each; took {}",
                mb(before),
                mb(after),
                got as f64 / 1_048_576.0,
                ms(took)
            ),
        );
    }
    let client = server.client(true)?;
    let expected = (0..objects).filter(|i| i % 100 == 7).count();
    let sel = latency(
        &client,
        &server,
        &format!("{base}?labelSelector=shard%3D7"),
        expected,
        20,
    )
    .await?;
    report.row(
        &format!("list labelSelector matching 1% ({label})"),
        ms(sel),
        format!("median of 20; {expected} of {objects} items; target < 100 ms"),
    );
    let by_name = latency(
        &client,
        &server,
        &format!("{base}?fieldSelector=metadata.name%3D{}", name(objects / 2)),
        1,
        20,
    )
    .await?;
    report.row(
        &format!("list fieldSelector metadata.name ({label})"),
        ms(by_name),
        "median of 20; must not scan".into(),
    );
    let end = settled_rss(&server).await;
    report.row(
        &format!("RSS at the end ({label})"),
        mb(end),
        format!("after the cache load: {}", mb(rss0)),
    );
    Ok(())
}

/// One watcher phase (`watch_phase`) with the server's RSS and live heap around it.
struct Measured {
    phase: WatchPhase,
    /// RSS before the phase (the lowest of 5 s of samples), KiB.
    rss_before: u64,
    /// RSS 10 s after the watchers closed (the lowest of the last 5 s of samples), KiB.
    rss_after: u64,
    /// The live heap before, at its peak during the phase, and 10 s after the watchers
    /// closed, in bytes (a jemalloc build).
    heap: Option<(u64, u64, u64)>,
    /// The live heap without the thread caches and the caches' bytes, before and 10 s after
    /// (a server that reports them).
    live: Option<((u64, u64), (u64, u64))>,
    /// The server's threads before and 10 s after.
    threads_before: usize,
    threads_after: usize,
    /// The server's CPU during the phase, in seconds.
    cpu: f64,
}

/// Runs `watch_phase` with `watchers` watchers and measures the server around it; the
/// control (no watcher) and the watchers' phase follow the same timeline.
async fn measured_phase(
    server: &Server,
    scraper: &reqwest::Client,
    watchers: usize,
    objects: usize,
    value: usize,
) -> anyhow::Result<Measured> {
    let rss_before = settled_rss(server).await;
    let heap_before = heap(server, scraper).await;
    let threads_before = server.threads();
    let cpu_before = server_cpu(server);
    let phase = watch_phase(server, watchers, objects, value).await?;
    let cpu = server_cpu(server) - cpu_before;
    let heap_peak = heap(server, scraper).await;
    let rss_after = settled_rss(server).await;
    let heap_after = heap(server, scraper).await;
    let threads_after = server.threads();
    let heap = match (heap_before, heap_peak, heap_after) {
        (Some(before), Some(peak), Some(after)) => {
            Some((before.allocated, peak.allocated_peak, after.allocated))
        }
        _ => None,
    };
    let live = match (heap_before, heap_after) {
        (Some(before), Some(after)) => before.live.zip(after.live),
        _ => None,
    };
    Ok(Measured {
        phase,
        rss_before,
        rss_after,
        heap,
        live,
        threads_before,
        threads_after,
        cpu,
    })
}

fn bytes_mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1_048_576.0)
}

/// `after - before` in MB, signed.
fn signed_mb(before: u64, after: u64) -> f64 {
    (after as f64 - before as f64) / 1_048_576.0
}

/// `CRD_APISERVER_BENCH_PAUSE=<path>`: waits before a phase until `<path>.<phase>` exists, so
/// that a profiler (`heaptrack -p <pid>`) can be attached to the server for that phase alone.
async fn pause(phase: &str, server: &Server) {
    let Some(path) = std::env::var_os("CRD_APISERVER_BENCH_PAUSE") else {
        return;
    };
    let mut go = path;
    go.push(format!(".{phase}"));
    eprintln!(
        "paused before {phase} (server pid {}): create {} to go on",
        server.child.id(),
        go.to_string_lossy()
    );
    while !std::path::Path::new(&go).exists() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The server's CPU time so far (user + system, seconds).
fn server_cpu(server: &Server) -> f64 {
    super::pin::cpu_seconds(&server.child.id().to_string())
}

/// The heap's growth at its peak, in bytes and against one 500-object page of the response
/// per list (`got` bytes for `objects` objects).
fn heap_growth((before, peak): (u64, u64), got: usize, objects: usize, lists: usize) -> String {
    let growth = peak.saturating_sub(before) as f64;
    let page = got as f64 / objects.max(1) as f64 * 500.0;
    format!(
        "+{:.2} MB = {:.2} pages per list (page {:.0} KB; target < 2)",
        growth / 1_048_576.0,
        growth / page / lists as f64,
        page / 1024.0
    )
}

/// The live heap's growth over one window: (before, peak during), in bytes.
#[derive(Clone, Copy)]
struct Window {
    /// jemalloc's `stats.allocated` (what the thread caches hold counts as allocated).
    allocated: (u64, u64),
    /// Without the thread caches (a server that reports them).
    live: Option<(u64, u64)>,
}

impl Window {
    /// The window from a scrape at its start to one at its end (the server keeps the peak
    /// since the previous scrape, so nothing is scraped in between: a scrape's own rendering
    /// would be counted).
    fn between(before: Scrape, after: Scrape) -> Self {
        Self {
            allocated: (before.allocated, after.allocated_peak),
            live: before
                .live
                .zip(after.live_peak)
                .map(|((live, _), peak)| (live, peak)),
        }
    }
}

/// A window as long as a list, with no list: what the scrapes, the sampler and the idle
/// server's background work add on their own (the floor of a single list's figure).
async fn idle_window(server: &Server, long: Duration) -> Option<Window> {
    let scraper = server.client(true).ok()?;
    // As before a list: a fresh connection's first scrape settles, then the baseline.
    heap(server, &scraper).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = heap(server, &scraper).await?;
    tokio::time::sleep(long).await;
    let after = heap(server, &scraper).await?;
    Some(Window::between(before, after))
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => f64::midpoint(v[n / 2 - 1], v[n / 2]),
    }
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// Peak resident memory of the server (KiB) while `clients` clients each read `url` whole at
/// once, each on its own connection, chunk by chunk as a client reads; the time it took, the
/// bytes of one response, and the live heap's window when the server reports it.
async fn concurrent_lists(
    server: &Server,
    url: &str,
    accept: &str,
    clients: usize,
) -> anyhow::Result<(u64, Duration, usize, Option<Window>)> {
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let pid = server.child.id();
    let scraper = server.client(true)?;
    // The scraper's connection is set up and a previous list's connection gone before the
    // baseline (this scrape also starts the server's peak over).
    heap(server, &scraper).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let heap_before = heap(server, &scraper).await;
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .unwrap_or_default()
                    .lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                peak.fetch_max(rss, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let t = Instant::now();
    let mut lists = Vec::new();
    for _ in 0..clients {
        let c = server.client(false)?;
        let (url, token, accept) = (url.to_string(), server.token.clone(), accept.to_string());
        lists.push(tokio::spawn(async move {
            let mut r = c
                .get(url)
                .bearer_auth(token)
                .header("Accept", accept)
                .send()
                .await?
                .error_for_status()?;
            let mut n = 0;
            while let Some(chunk) = r.chunk().await? {
                n += chunk.len();
            }
            Ok::<_, reqwest::Error>(n)
        }));
    }
    let mut sizes = Vec::new();
    for l in lists {
        sizes.push(l.await??);
    }
    let took = t.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.await?;
    let heap = match heap_before {
        Some(before) => heap(server, &scraper)
            .await
            .map(|after| Window::between(before, after)),
        None => None,
    };
    sizes.dedup();
    if sizes.len() != 1 {
        bail!("the concurrent lists returned different sizes: {sizes:?}");
    }
    Ok((peak.load(Ordering::Relaxed), took, sizes[0], heap))
}

/// One scrape of the server's heap gauges, in bytes (a jemalloc build).
#[derive(Clone, Copy)]
struct Scrape {
    /// `crd_apiserver_heap_allocated_bytes` and its peak since the previous scrape.
    allocated: u64,
    allocated_peak: u64,
    /// Without the thread caches, and the caches' bytes (a server that reports them).
    live: Option<(u64, u64)>,
    /// The peak without the thread caches since the previous scrape.
    live_peak: Option<u64>,
}

/// The server's heap gauges from `/metrics`; `None` when the server does not report them.
async fn heap(server: &Server, client: &reqwest::Client) -> Option<Scrape> {
    let text = client
        .get(format!("{}/metrics", server.url))
        .bearer_auth(&server.token)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let value = |name: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    Some(Scrape {
        allocated: value("crd_apiserver_heap_allocated_bytes")?,
        allocated_peak: value("crd_apiserver_heap_allocated_peak_bytes")?,
        live: value("crd_apiserver_heap_live_bytes")
            .zip(value("crd_apiserver_heap_thread_cache_bytes")),
        live_peak: value("crd_apiserver_heap_live_peak_bytes"),
    })
}
