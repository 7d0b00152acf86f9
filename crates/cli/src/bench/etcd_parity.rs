//! `crd-apiserver bench --only-etcd-parity --etcd-servers <url>`: the etcd engine against its
//! own limits in one run (issue 19). Each round measures etcd's own put rate through the engine
//! (1 and 64 writers, without the server), then a server on etcd and a server on `SQLite`
//! (alternating which goes first), both with the watch cache: creates/s from 64 clients and
//! consistent gets/s from 64 clients. Beside the rates it reports what each create and get cost:
//! the storage requests the server made (its `etcd_request_duration_seconds` counts, so
//! `current_revision` is the revision requests of consistent reads) and the CPU time the server,
//! etcd and this load generator spent per create. Figures are the best of the rounds.
//!
//! With `--pin` each round also measures a pinned placement (`pin.rs`): etcd and the server on
//! one core, this load generator on the other; etcd's own put rate is then measured from this
//! process (a thin client) on the other core, and the servers' creates with etcd on the same
//! core as during its own rate.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::pin::Placement;
use super::{GROUP, Report, Server, create_load, etcd_limit, gets, gets_as, setup_crd, wait_ready};

/// Options of the etcd parity figures.
#[derive(clap::Args, Debug)]
pub struct ParityArgs {
    /// Measure only the etcd parity figures ("etcd parity" section; needs `--etcd-servers`).
    #[arg(long)]
    pub only_etcd_parity: bool,
    /// Rounds of the etcd parity figures (best of).
    #[arg(id = "parity_rounds", long = "parity-rounds", default_value_t = 3)]
    pub rounds: usize,
    /// Creates per server and round in the etcd parity figures.
    #[arg(
        id = "parity_creates",
        long = "parity-creates",
        default_value_t = 20_000
    )]
    pub creates: usize,
    /// Gets per server and round in the etcd parity figures.
    #[arg(id = "parity_gets", long = "parity-gets", default_value_t = 40_000)]
    pub gets: usize,
}

/// etcd's 64-writer put rate through the engine while one watch with previous values (the watch
/// cache's feed, as the server runs it) drains every event under the prefix: etcd reads each
/// event's previous value for it, so this is the limit a server with a watch cache can reach.
#[cfg(feature = "etcd")]
async fn watched_limit(endpoints: &[String], prefix: &str, n: usize) -> anyhow::Result<f64> {
    use crd_storage::Store;
    let engine = crd_storage::etcd::EtcdStore::connect(crd_storage::etcd::EtcdConfig {
        endpoints: endpoints.to_vec(),
        prefix: format!("{prefix}-watched"),
        ..crd_storage::etcd::EtcdConfig::default()
    })
    .await?;
    let shared = crd_storage::fanout::FanoutStore::new(engine, "/registry/").await?;
    let cache = crd_storage::cache::CacheStore::new(
        shared,
        crd_storage::cache::CacheConfig::new("/registry/", None),
    );
    cache.wait_ready().await;
    let rate = super::parallel_creates(cache.clone(), "/registry/raw/watched", n).await?;
    // Every event reached the cache (a consistent read waits for the feed to catch up).
    let listed = cache
        .list(crd_storage::ListRequest {
            prefix: "/registry/raw/watched/".into(),
            ..crd_storage::ListRequest::default()
        })
        .await?;
    if listed.items.len() != n {
        bail!("the cache holds {} of {n} objects", listed.items.len());
    }
    Ok(rate)
}

/// Without the etcd engine there is no etcd to measure (`--only-etcd-parity` needs `--features etcd`).
#[cfg(not(feature = "etcd"))]
#[allow(clippy::unused_async)] // Same signature as the etcd build's.
async fn watched_limit(_: &[String], _: &str, _: usize) -> anyhow::Result<f64> {
    anyhow::bail!("the etcd figures need a build with `--features etcd`")
}

/// What one server measured.
#[derive(Clone, Copy, Default)]
struct Figures {
    creates: f64,
    gets: f64,
    /// Storage requests per create (all operations) and revision requests per get.
    requests_per_create: f64,
    revisions_per_get: f64,
    /// CPU microseconds per create: server, etcd, load generator.
    cpu: [f64; 3],
    /// CPU microseconds per consistent get: server, etcd, load generator.
    get_cpu: [f64; 3],
    /// Gets/s at `resourceVersion=0`, from the cache without a revision request.
    any_gets: f64,
    /// Mean milliseconds of a create at the client, and of its storage create as the server
    /// timed it: the difference is the time spent in the server (or waiting for it).
    create_ms: f64,
    storage_create_ms: f64,
}

/// CPU time (user + system) of a process so far, in microseconds (`/proc/<pid>/stat`).
fn cpu_micros(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    (ticks(11) + ticks(12)) * 1e6 / 100.0
}

/// The pid of the etcd serving `endpoint` (its command line names the client URL's port).
fn etcd_pid(endpoint: &str) -> Option<String> {
    let port = endpoint.rsplit(':').next()?.trim_end_matches('/');
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let first = cmdline.split_whitespace().next().unwrap_or("");
        if first.ends_with("etcd") && cmdline.contains(&format!(":{port}")) {
            return Some(pid);
        }
    }
    None
}

/// The server's storage request counts (`etcd_request_duration_seconds_count`) and seconds
/// (`_sum`) by operation.
async fn storage_requests(server: &Server, client: &reqwest::Client) -> anyhow::Result<Requests> {
    let text = client
        .get(format!("{}/metrics", server.url))
        .bearer_auth(&server.token)
        .send()
        .await?
        .text()
        .await?;
    let mut requests = Requests::default();
    for line in text.lines() {
        let (map, rest) = if let Some(r) = line.strip_prefix("etcd_request_duration_seconds_count{")
        {
            (&mut requests.counts, r)
        } else if let Some(r) = line.strip_prefix("etcd_request_duration_seconds_sum{") {
            (&mut requests.seconds, r)
        } else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let operation = labels
            .split(',')
            .find_map(|l| l.strip_prefix("operation=\""))
            .map_or("", |v| v.trim_end_matches('"'));
        *map.entry(operation.to_string()).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
    }
    Ok(requests)
}

/// Storage requests by operation, scraped from the server's metrics.
#[derive(Default)]
struct Requests {
    counts: BTreeMap<String, f64>,
    seconds: BTreeMap<String, f64>,
}

fn delta(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, op: Option<&str>) -> f64 {
    after
        .iter()
        .filter(|(k, _)| op.is_none_or(|o| o == k.as_str()))
        .map(|(k, v)| v - before.get(k).copied().unwrap_or(0.0))
        .sum()
}

/// Creates, then gets, on a fresh server started with `extra`.
async fn measure(
    data: &Path,
    extra: &[String],
    etcd: Option<&str>,
    creates: usize,
    total_gets: usize,
) -> anyhow::Result<Figures> {
    let (server, _) = Server::start_with(data, extra)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    setup_crd(&server, &client).await?;
    create_load(&server, 64, 640, "warm").await?;
    let pids = [
        Some(server.child.id().to_string()),
        etcd.map(str::to_string),
        Some("self".to_string()),
    ];
    let cpu = |pids: &[Option<String>; 3]| {
        pids.each_ref()
            .map(|p| p.as_deref().map_or(0.0, cpu_micros))
    };
    let requests = storage_requests(&server, &client).await?;
    let cpu_before = cpu(&pids);
    let started = Instant::now();
    let (_, latencies) = create_load(&server, 64, creates, "c").await?;
    let create_rate = creates as f64 / started.elapsed().as_secs_f64();
    let cpu_after = cpu(&pids);
    let after_creates = storage_requests(&server, &client).await?;
    let base = format!("{}/apis/{GROUP}/v1/namespaces/default/widgets", server.url);
    let before_gets = cpu(&pids);
    let got = gets(&server, &base, "c", creates, total_gets).await?;
    let after_gets_cpu = cpu(&pids);
    let after_gets = storage_requests(&server, &client).await?;
    // At `resourceVersion=0`: from the watch cache as it stands, with no revision request.
    let any = "?resourceVersion=0";
    let any_gets = gets_as(&server, &server.token, &base, "c", creates, total_gets, any).await?;
    drop(server);
    let _ = std::fs::remove_dir_all(data);
    let per_create = |i: usize| (cpu_after[i] - cpu_before[i]) / creates as f64;
    Ok(Figures {
        creates: create_rate,
        gets: got,
        requests_per_create: delta(&requests.counts, &after_creates.counts, None) / creates as f64,
        revisions_per_get: delta(
            &after_creates.counts,
            &after_gets.counts,
            Some("current_revision"),
        ) / total_gets as f64,
        cpu: [per_create(0), per_create(1), per_create(2)],
        get_cpu: [0, 1, 2].map(|i| (after_gets_cpu[i] - before_gets[i]) / total_gets as f64),
        any_gets,
        create_ms: latencies.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3
            / latencies.len().max(1) as f64,
        storage_create_ms: delta(&requests.seconds, &after_creates.seconds, Some("create")) * 1e3
            / delta(&requests.counts, &after_creates.counts, Some("create")).max(1.0),
    })
}

/// Keeps the better figures of two rounds (each figure on its own).
fn best(a: Figures, b: Figures) -> Figures {
    let (c, g) = (
        if b.creates > a.creates { b } else { a },
        if b.gets > a.gets { b } else { a },
    );
    Figures {
        creates: c.creates,
        requests_per_create: c.requests_per_create,
        cpu: c.cpu,
        create_ms: c.create_ms,
        storage_create_ms: c.storage_create_ms,
        gets: g.gets,
        revisions_per_get: g.revisions_per_get,
        get_cpu: g.get_cpu,
        any_gets: a.any_gets.max(b.any_gets),
    }
}

/// The best figures of one placement over the rounds.
#[derive(Clone, Copy, Default)]
struct PlacementFigures {
    /// etcd puts/s without the server: 1 writer, 64 writers, 64 writers with a watch open.
    seq: f64,
    par: f64,
    watched: f64,
    /// etcd's CPU microseconds per put of the 64-writer run with the watch open.
    etcd_cpu_per_put: f64,
    on_etcd: Figures,
    on_sqlite: Figures,
}

/// Runs the section: each round measures every placement (shared, and pinned with `--pin`:
/// etcd and the server on one core, this load generator and thin client on the other).
pub async fn run(args: &ParityArgs, endpoints: &[String], pinned: bool) -> anyhow::Result<()> {
    let Some(endpoint) = endpoints.first() else {
        bail!("--only-etcd-parity needs --etcd-servers");
    };
    let etcd = etcd_pid(endpoint);
    if pinned {
        super::pin::check()?;
        if etcd.is_none() {
            bail!("--pin needs etcd's process on this machine (none serves {endpoint})");
        }
    }
    let dir = tempfile::tempdir()?;
    let mut report = Report { rows: Vec::new() };
    println!("| figure | value | note |");
    println!("| --- | --- | --- |");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let placements = Placement::all(pinned);
    let mut all = vec![PlacementFigures::default(); placements.len()];
    for round in 0..args.rounds.max(1) {
        for (p, &placement) in placements.iter().enumerate() {
            if pinned {
                super::pin::apply(placement, etcd.as_deref())?;
            }
            let best_of = &mut all[p];
            let prefix = format!("/bench-parity-{stamp}-{round}-{p}");
            let (s, par) = etcd_limit(endpoints, &prefix, 2000).await?;
            best_of.seq = best_of.seq.max(s);
            best_of.par = best_of.par.max(par);
            let etcd_cpu = etcd.as_deref().map_or(0.0, cpu_micros);
            let watched = watched_limit(endpoints, &prefix, 8000).await?;
            if watched > best_of.watched {
                best_of.watched = watched;
                best_of.etcd_cpu_per_put =
                    (etcd.as_deref().map_or(0.0, cpu_micros) - etcd_cpu) / 8000.0;
            }
            let etcd_flags = vec![
                "--etcd-servers".to_string(),
                endpoints.join(","),
                "--etcd-prefix".to_string(),
                prefix,
            ];
            for first in [round % 2 == 0, round % 2 != 0] {
                if first {
                    let f = measure(
                        &dir.path().join(format!("etcd-{round}-{p}")),
                        &etcd_flags,
                        etcd.as_deref(),
                        args.creates,
                        args.gets,
                    )
                    .await?;
                    best_of.on_etcd = best(best_of.on_etcd, f);
                } else {
                    let f = measure(
                        &dir.path().join(format!("sqlite-{round}-{p}")),
                        &[],
                        None,
                        args.creates,
                        args.gets,
                    )
                    .await?;
                    best_of.on_sqlite = best(best_of.on_sqlite, f);
                }
            }
        }
    }
    if pinned {
        super::pin::apply(Placement::Shared, etcd.as_deref())?;
    }
    let rounds = args.rounds.max(1);
    for (p, &placement) in placements.iter().enumerate() {
        report_placement(&mut report, placement, &all[p], etcd.is_some(), rounds);
    }
    Ok(())
}

/// The rows of one placement.
fn report_placement(
    report: &mut Report,
    placement: Placement,
    figures: &PlacementFigures,
    etcd_found: bool,
    rounds: usize,
) {
    let PlacementFigures {
        seq,
        par,
        watched,
        etcd_cpu_per_put,
        on_etcd,
        on_sqlite,
    } = *figures;
    let where_ = placement.label();
    report.row(
        &format!("etcd puts/s without the server (1 writer / 64 writers), {where_}"),
        format!("{seq:.0} / {par:.0}"),
        format!(
            "the engine's own limit, best of {rounds} rounds{}",
            if placement == Placement::Pinned {
                "; etcd on its own core, this process (a thin client) on the other"
            } else {
                ""
            }
        ),
    );
    report.row(
        &format!(
            "etcd puts/s without the server, 64 writers, one watch with previous values open, \
             {where_}"
        ),
        format!("{watched:.0}"),
        format!(
            "{:.2}x the unwatched rate: etcd's cost of the watch cache's feed; etcd CPU per put \
             {etcd_cpu_per_put:.0} µs",
            watched / par
        ),
    );
    report.row(
        &format!("creates/s, 64 clients, etcd (watch cache on), {where_}"),
        format!("{:.0}", on_etcd.creates),
        format!(
            "{:.2}x of etcd's 64-writer put rate (target ≥ 0.8x), {:.2}x of the rate with the \
             watch open; {:.2} storage requests per create",
            on_etcd.creates / par,
            on_etcd.creates / watched,
            on_etcd.requests_per_create
        ),
    );
    report.row(
        &format!("CPU per create on etcd: server / etcd / load generator, {where_}"),
        format!(
            "{:.0} / {:.0} / {:.0} µs",
            on_etcd.cpu[0], on_etcd.cpu[1], on_etcd.cpu[2]
        ),
        if etcd_found {
            format!(
                "user + system time over the 64-client creates; the three kept {:.0}% of the \
                 machine's {} cores busy",
                on_etcd.cpu.iter().sum::<f64>() * 1e-6 * on_etcd.creates
                    / super::pin::cores() as f64
                    * 100.0,
                super::pin::cores()
            )
        } else {
            "etcd's process was not found on this machine (etcd column 0)".into()
        },
    );
    report.row(
        &format!("mean create latency on etcd: at the client / its etcd transaction, {where_}"),
        format!(
            "{:.2} / {:.2} ms",
            on_etcd.create_ms, on_etcd.storage_create_ms
        ),
        "the transaction as the server timed it (etcd_request_duration_seconds); the rest is \
         the server's own work and waiting for a core"
            .into(),
    );
    report.row(
        &format!("creates/s, 64 clients, SQLite (watch cache on), {where_}"),
        format!("{:.0}", on_sqlite.creates),
        format!(
            "same run; CPU per create: server {:.0} µs, load generator {:.0} µs",
            on_sqlite.cpu[0], on_sqlite.cpu[2]
        ),
    );
    report.row(
        &format!("consistent gets/s, 64 clients: etcd / SQLite (watch cache on), {where_}"),
        format!("{:.0} / {:.0}", on_etcd.gets, on_sqlite.gets),
        format!(
            "etcd {:.2}x SQLite (target parity); {:.3} etcd revision requests per get",
            on_etcd.gets / on_sqlite.gets,
            on_etcd.revisions_per_get
        ),
    );
    report.row(
        &format!("CPU per consistent get: server / etcd / load generator, etcd / SQLite, {where_}"),
        format!(
            "{:.1} / {:.1} / {:.1} µs / {:.1} / - / {:.1} µs",
            on_etcd.get_cpu[0],
            on_etcd.get_cpu[1],
            on_etcd.get_cpu[2],
            on_sqlite.get_cpu[0],
            on_sqlite.get_cpu[2]
        ),
        "user + system time over the 64-client gets: what a get costs each process".into(),
    );
    report.row(
        &format!(
            "gets/s at resourceVersion=0, 64 clients: etcd / SQLite (watch cache on), {where_}"
        ),
        format!("{:.0} / {:.0}", on_etcd.any_gets, on_sqlite.any_gets),
        format!(
            "etcd {:.2}x SQLite: served from the watch cache as it stands, no revision request \
             (upstream's cacher serves these from its cache too)",
            on_etcd.any_gets / on_sqlite.any_gets
        ),
    );
    // A consistent get must see every write acknowledged before it began, by this server or
    // another on the same etcd: one linearizable revision request after it arrived. Readers
    // share one, but a batch holds at most the 64 clients.
    let per_revision = if on_etcd.revisions_per_get > 0.0 {
        on_etcd.get_cpu[1] / on_etcd.revisions_per_get
    } else {
        0.0
    };
    let sqlite_cost = match placement {
        Placement::Shared => on_sqlite.get_cpu[0] + on_sqlite.get_cpu[2],
        Placement::Pinned => on_sqlite.get_cpu[0],
    };
    let ceiling = sqlite_cost / (sqlite_cost + per_revision / 64.0);
    report.row(
        &format!("ceiling: consistent gets on etcd / SQLite, {where_}"),
        format!("{ceiling:.2}x"),
        format!(
            "SQLite's CPU per get ({sqlite_cost:.1} µs{}) plus etcd's CPU per linearizable \
             revision request ({per_revision:.0} µs) shared by all 64 clients: the most etcd's \
             gets can reach while CPU is the limit; parity needs a revision request that costs \
             etcd nothing",
            if placement == Placement::Shared {
                ", server and load generator"
            } else {
                " on the server's core, which etcd shares"
            }
        ),
    );
}
