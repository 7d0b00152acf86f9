//! The "create path" section of `crd-apiserver bench` (`--only-create-path`): creates/s from 64
//! clients against the embedded engine's own 64-writer commit rate measured in the same run,
//! with the watch cache on (the default) and off, on fresh servers started alternately (best
//! of `--create-rounds`, so that neither start order nor a neighbour's burst decides).
//!
//! Beside them, the HTTPS floor at 64 clients (an authenticated `GET /version`, which touches
//! no storage) on the same server, and the CPU time the server and the load generator each
//! spent per request: client and server share the machine's cores, so the floor and the CPU
//! split say which create rate is reachable at all.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::{Report, Server, create_load, ms, percentile, setup_crd, sqlite_limit, wait_ready};

/// Linux's `USER_HZ`: the unit of the CPU times in `/proc/<pid>/stat` (100 on every Linux ABI).
const TICKS_PER_SECOND: f64 = 100.0;

/// User plus system CPU seconds of a process so far (`/proc/<pid>/stat` fields 14 and 15), of
/// all its threads.
pub(super) fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name (field 2) may hold spaces; the fields after it are space-separated.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // `rest` starts at field 3 (state), so fields 14 and 15 are at 11 and 12.
    (tick(11) + tick(12)) / TICKS_PER_SECOND
}

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

    /// The CPU split per request, and the rate both processes' CPU allows on `cores` cores.
    fn cpu(&self, cores: usize) -> String {
        let both = self.server_cpu + self.bench_cpu;
        format!(
            "CPU per request: server {:.0} µs, load generator {:.0} µs ({:.0}% of the total); \
             {cores} cores allow {:.0}/s at this cost",
            self.server_cpu * 1e6,
            self.bench_cpu * 1e6,
            if both > 0.0 {
                self.bench_cpu / both * 100.0
            } else {
                0.0
            },
            if both > 0.0 { cores as f64 / both } else { 0.0 },
        )
    }
}

/// `n` authenticated `GET /version` from 64 clients, each on its own HTTP/1.1 connection as the
/// creates are: (elapsed, sorted latencies).
async fn version_load(server: &Server, n: usize) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let url = format!("{}/version", server.url);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..64 {
        let client = server.client(false)?;
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

/// Creates from 64 clients on a fresh server started with `extra` flags, and (when `floor`)
/// the HTTPS floor on the same server first: (creates, floor).
async fn creates_64(
    dir: &Path,
    name: &str,
    extra: &[String],
    creates: usize,
    floor: bool,
) -> anyhow::Result<(Load, Option<Load>)> {
    let data = dir.join(name);
    let (server, _) = Server::start_with(&data, extra)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    setup_crd(&server, &client).await?;
    let floor = if floor {
        version_load(&server, 640).await?;
        let n = creates * 2;
        Some(Load::measure(&server, n, version_load(&server, n)).await?)
    } else {
        None
    };
    // Warm-up: connections, the CRD's strategy, the first pages of the database.
    create_load(&server, 64, 640, "warm").await?;
    let load = Load::measure(&server, creates, create_load(&server, 64, creates, "c")).await?;
    drop(server);
    let _ = std::fs::remove_dir_all(&data);
    Ok((load, floor))
}

/// Runs the section.
pub async fn run(
    dir: &Path,
    report: &mut Report,
    creates: usize,
    rounds: usize,
) -> anyhow::Result<()> {
    let variants: [(&str, Vec<String>); 2] = [
        ("watch cache on", Vec::new()),
        ("watch cache off", vec!["--watch-cache=false".to_string()]),
    ];
    let mut best = [Load::default(); 2];
    let mut floor = Load::default();
    let mut limit = 0.0_f64;
    for round in 0..rounds.max(1) {
        let (_, par) = sqlite_limit(&dir.join(format!("limit-{round}")), 2000).await?;
        let _ = std::fs::remove_dir_all(dir.join(format!("limit-{round}")));
        limit = limit.max(par);
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let name = format!("create-{round}-{i}");
            let (r, f) = creates_64(dir, &name, &variants[i].1, creates, i == 0).await?;
            if r.rate > best[i].rate {
                best[i] = r;
            }
            if let Some(f) = f
                && f.rate > floor.rate
            {
                floor = f;
            }
        }
    }
    report.row(
        "SQLite commits/s without the server, 64 writers (best of the rounds)",
        format!("{limit:.0}"),
        "physical limit, same run".into(),
    );
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    report.row(
        "HTTPS floor: authenticated GET /version/s, 64 clients (best of the rounds)",
        floor.figure(),
        format!(
            "{:.2}x of the 64-writer limit; {}",
            floor.rate / limit,
            floor.cpu(cores)
        ),
    );
    for (i, (name, _)) in variants.iter().enumerate() {
        let load = best[i];
        report.row(
            &format!("creates/s, 64 clients, {name}"),
            load.figure(),
            format!(
                "{:.2}x of the 64-writer limit (target ≥ 0.5x), {:.2}x of the floor; {}",
                load.rate / limit,
                load.rate / floor.rate,
                load.cpu(cores)
            ),
        );
    }
    report.row(
        "watch cache cost on creates",
        format!("{:.1}%", (1.0 - best[0].rate / best[1].rate) * 100.0),
        format!("best of {} rounds each", rounds.max(1)),
    );
    Ok(())
}
