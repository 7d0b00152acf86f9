//! The "create path" section of `crd-apiserver bench` (`--only-create-path`): creates/s from 64
//! clients against the embedded engine's own 64-writer commit rate measured in the same run,
//! with the watch cache on (the default) and off, on fresh servers started alternately (best
//! of `--create-rounds`, so that neither start order nor a neighbour's burst decides).
//!
//! Beside them, the HTTPS floor at 64 clients (an authenticated `GET /version`, which touches
//! no storage) on the same server, and the CPU time the server and the load generator each
//! spent per request: client and server share the machine's cores, so the floor and the CPU
//! split say which create rate is reachable at all.
//!
//! With `--pin` every round measures a second, pinned placement (`pin.rs`): the server on one
//! core, this load generator on the other, and the engine's 64-writer rate (and its CPU per
//! commit) on the server's core alone, so the ratio compares the server with the engine on the
//! same core.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;

use crd_storage::Store;

use super::pin::{self, Placement, cpu_seconds};
use super::{Connections, Report, Server, create_load_over, ms, percentile, setup_crd, wait_ready};

/// One measured load: requests per second, latency percentiles, and CPU seconds per request
/// spent by the server and by the load generator (this process).
#[derive(Clone, Copy, Default)]
struct Load {
    rate: f64,
    p50: Duration,
    p99: Duration,
    server_cpu: f64,
    bench_cpu: f64,
}

impl Load {
    /// Runs `load` (which returns elapsed time and sorted latencies of `n` requests) while
    /// counting both processes' CPU time.
    async fn measure<F>(server: &Server, n: usize, load: F) -> anyhow::Result<Self>
    where
        F: std::future::Future<Output = anyhow::Result<(Duration, Vec<Duration>)>>,
    {
        let pid = server.child.id().to_string();
        let (s0, b0) = (cpu_seconds(&pid), cpu_seconds("self"));
        let (elapsed, lat) = load.await?;
        let (s1, b1) = (cpu_seconds(&pid), cpu_seconds("self"));
        Ok(Load {
            rate: n as f64 / elapsed.as_secs_f64(),
            p50: percentile(&lat, 0.5),
            p99: percentile(&lat, 0.99),
            server_cpu: (s1 - s0) / n as f64,
            bench_cpu: (b1 - b0) / n as f64,
        })
    }

    /// "rate (p50, p99)".
    fn figure(&self) -> String {
        format!(
            "{:.0} (p50 {}, p99 {})",
            self.rate,
            ms(self.p50),
            ms(self.p99)
        )
    }

    /// The CPU split per request, and the rate the CPU allows under `placement`: on a shared
    /// placement both processes share the machine's cores (cores / (server + load generator));
    /// pinned, the server has its core alone (1 / server).
    fn cpu(&self, placement: Placement) -> String {
        let both = self.server_cpu + self.bench_cpu;
        let allowed = match placement {
            Placement::Shared => format!(
                "{} cores allow {:.0}/s at this cost",
                pin::cores(),
                if both > 0.0 {
                    pin::cores() as f64 / both
                } else {
                    0.0
                }
            ),
            Placement::Pinned => format!(
                "the server's core allows {:.0}/s at this cost",
                if self.server_cpu > 0.0 {
                    1.0 / self.server_cpu
                } else {
                    0.0
                }
            ),
        };
        format!(
            "CPU per request: server {:.0} µs, load generator {:.0} µs ({:.0}% of the total); \
             {allowed}",
            self.server_cpu * 1e6,
            self.bench_cpu * 1e6,
            if both > 0.0 {
                self.bench_cpu / both * 100.0
            } else {
                0.0
            },
        )
    }
}

/// `n` authenticated `GET /version` from 64 clients over `connections`, as the creates reach
/// the server: (elapsed, sorted latencies).
async fn version_load(
    server: &Server,
    connections: Connections,
    n: usize,
) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let url = format!("{}/version", server.url);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in connections.clients(server, 64)?.into_iter().enumerate() {
        let (url, token) = (url.clone(), server.token.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            for _ in (c..n).step_by(64) {
                let t = Instant::now();
                let r = client.get(&url).bearer_auth(&token).send().await?;
                let ok = r.status().as_u16() == 200;
                let _ = r.bytes().await?;
                if !ok {
                    bail!("GET /version failed");
                }
                lat.push(t.elapsed());
            }
            Ok::<_, anyhow::Error>(lat)
        }));
    }
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.extend(t.await??);
    }
    let elapsed = started.elapsed();
    all.sort();
    Ok((elapsed, all))
}

/// Creates from 64 clients over `connections` on a fresh server started with `extra` flags,
/// and (when `floor`) the HTTPS floor over the same connections on the same server first:
/// (creates, floor).
async fn creates_64(
    dir: &Path,
    name: &str,
    variant: &Variant,
    creates: usize,
    floor: bool,
) -> anyhow::Result<(Load, Option<Load>)> {
    let (extra, connections) = (&variant.flags, variant.connections);
    let data = dir.join(name);
    let (server, _) = Server::start_with(&data, extra)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    setup_crd(&server, &client).await?;
    let floor = if floor {
        version_load(&server, connections, 640).await?;
        let n = creates * 2;
        Some(Load::measure(&server, n, version_load(&server, connections, n)).await?)
    } else {
        None
    };
    // Warm-up: connections, the CRD's strategy, the first pages of the database.
    create_load_over(&server, connections, 64, 640, "warm").await?;
    let load = Load::measure(
        &server,
        creates,
        create_load_over(&server, connections, 64, creates, "c"),
    )
    .await?;
    drop(server);
    let _ = std::fs::remove_dir_all(&data);
    Ok((load, floor))
}

/// The embedded engine's own limit: commits/s of 64 concurrent writers (group commit) without
/// the server, and the CPU seconds this process spent per commit. Under the pinned placement
/// this process runs on the system's core alone while it measures (nothing else of the run is
/// running), so the engine gets exactly the core the server will have.
async fn engine_limit(
    dir: &Path,
    placement: Placement,
    pinned: bool,
    n: usize,
) -> anyhow::Result<(f64, f64)> {
    if pinned {
        pin::move_self((placement == Placement::Pinned).then_some(pin::SYSTEM_CORE))?;
    }
    let store = crd_storage::sqlite::SqliteStore::open(&dir.join("raw.db"))?;
    let value = bytes::Bytes::from(super::object("x").to_string());
    // Warm-up: the first pages of the database, the writer thread.
    for i in 0..64 {
        store
            .create(&format!("/raw/warm/{i}"), value.clone())
            .await?;
    }
    let cpu = cpu_seconds("self");
    let rate = super::parallel_creates(store.clone(), "/raw/par", n).await?;
    let per_commit = (cpu_seconds("self") - cpu) / n as f64;
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    Ok((rate, per_commit))
}

/// One server configuration under test: its flags and how the 64 clients reach it.
struct Variant {
    name: &'static str,
    flags: Vec<String>,
    connections: Connections,
}

/// The variants, in their order in a round: the first of each connection shape also measures
/// that shape's floor.
fn variants() -> [Variant; 3] {
    [
        Variant {
            name: "64 clients, watch cache on",
            flags: Vec::new(),
            connections: Connections::PerClient,
        },
        Variant {
            name: "64 clients, watch cache off",
            flags: vec!["--watch-cache=false".to_string()],
            connections: Connections::PerClient,
        },
        Variant {
            name: "64 clients as streams of one HTTP/2 connection (client-go's shape), watch \
                   cache on",
            flags: Vec::new(),
            connections: Connections::OneHttp2,
        },
    ]
}

/// The best figures of one placement over the rounds.
#[derive(Clone, Copy, Default)]
struct Best {
    /// The engine's 64-writer commits/s and its CPU seconds per commit.
    limit: (f64, f64),
    /// The floor over one connection per client, then over one HTTP/2 connection.
    floors: [Load; 2],
    creates: [Load; 3],
}

/// The slot in [`Best::floors`] of the floor over `connections`.
fn floor_slot(connections: Connections) -> usize {
    usize::from(connections == Connections::OneHttp2)
}

/// Runs the section: each round measures every placement (shared, and pinned with `--pin`),
/// the engine's limit first under that placement, then the servers.
pub async fn run(
    dir: &Path,
    report: &mut Report,
    creates: usize,
    rounds: usize,
    pinned: bool,
) -> anyhow::Result<()> {
    if pinned {
        pin::check()?;
    }
    let variants = variants();
    let placements = Placement::all(pinned);
    let mut best = vec![Best::default(); placements.len()];
    for round in 0..rounds.max(1) {
        for (p, &placement) in placements.iter().enumerate() {
            let limit_dir = dir.join(format!("limit-{round}-{p}"));
            let limit = engine_limit(&limit_dir, placement, pinned, 8000).await?;
            if pinned {
                pin::apply(placement, None)?;
            }
            let best = &mut best[p];
            if limit.0 > best.limit.0 {
                best.limit = limit;
            }
            let order: [usize; 3] = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
            for i in order {
                let name = format!("create-{round}-{p}-{i}");
                let variant = &variants[i];
                let (r, f) = creates_64(dir, &name, variant, creates, i != 1).await?;
                if r.rate > best.creates[i].rate {
                    best.creates[i] = r;
                }
                let floor = &mut best.floors[floor_slot(variant.connections)];
                if let Some(f) = f
                    && f.rate > floor.rate
                {
                    *floor = f;
                }
            }
        }
    }
    if pinned {
        pin::apply(Placement::Shared, None)?;
    }
    for (p, &placement) in placements.iter().enumerate() {
        let Best {
            limit: (limit, per_commit),
            floors,
            creates: loads,
        } = best[p];
        let where_ = placement.label();
        report.row(
            &format!(
                "SQLite commits/s without the server, 64 writers, {where_} (best of the rounds)"
            ),
            format!("{limit:.0}"),
            format!(
                "physical limit, same run{}; engine CPU per commit {:.0} µs",
                if placement == Placement::Pinned {
                    ", on the server's core alone"
                } else {
                    ""
                },
                per_commit * 1e6
            ),
        );
        for (floor, over) in floors
            .iter()
            .zip(["64 clients", "64 streams of one HTTP/2 connection"])
        {
            report.row(
                &format!(
                    "HTTPS floor: authenticated GET /version/s, {over}, {where_} (best of the rounds)"
                ),
                floor.figure(),
                format!(
                    "{:.2}x of the 64-writer limit; {}",
                    floor.rate / limit,
                    floor.cpu(placement)
                ),
            );
            // A create is at least the floor's request and the engine's commit: what that
            // costs bounds the create rate on this machine, whatever the server's own work.
            let least = match placement {
                Placement::Shared => floor.server_cpu + floor.bench_cpu + per_commit,
                Placement::Pinned => floor.server_cpu + per_commit,
            };
            let ceiling = match placement {
                Placement::Shared => pin::cores() as f64 / least,
                Placement::Pinned => 1.0 / least,
            };
            report.row(
                &format!("ceiling: the floor's request plus the engine's commit, {over}, {where_}"),
                format!("{ceiling:.0}/s"),
                format!(
                    "{:.2}x of the 64-writer limit; {:.0} µs per create ({}) before any \
                     decoding, validation or encoding",
                    ceiling / limit,
                    least * 1e6,
                    match placement {
                        Placement::Shared => "floor server + load generator + commit, on all cores",
                        Placement::Pinned => "floor server + commit, on the server's core",
                    }
                ),
            );
        }
        for (i, variant) in variants.iter().enumerate() {
            let load = loads[i];
            let floor = floors[floor_slot(variant.connections)].rate;
            report.row(
                &format!("creates/s, {}, {where_}", variant.name),
                load.figure(),
                format!(
                    "{:.2}x of the 64-writer limit (target ≥ 0.5x), {:.2}x of the floor; \
                     server CPU per create {:.1}x the engine's per commit; {}",
                    load.rate / limit,
                    load.rate / floor,
                    load.server_cpu / per_commit,
                    load.cpu(placement)
                ),
            );
        }
        report.row(
            &format!("watch cache cost on creates, {where_}"),
            format!("{:.1}%", (1.0 - loads[0].rate / loads[1].rate) * 100.0),
            format!("best of {} rounds each", rounds.max(1)),
        );
    }
    Ok(())
}
