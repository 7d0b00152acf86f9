//! The "create path" section of `crd-apiserver bench` (`--only-create-path`): creates/s from 64
//! clients against the embedded engine's own 64-writer commit rate measured in the same run,
//! with the watch cache on (the default) and off, on fresh servers started alternately (best
//! of `--create-rounds`, so that neither start order nor a neighbour's burst decides).

use std::path::Path;
use std::time::Duration;

use super::{Report, Server, create_load, ms, percentile, setup_crd, sqlite_limit, wait_ready};

/// Creates/s from 64 clients on a fresh server started with `extra` flags: (rate, p50, p99).
async fn creates_64(
    dir: &Path,
    name: &str,
    extra: &[String],
    creates: usize,
) -> anyhow::Result<(f64, Duration, Duration)> {
    let data = dir.join(name);
    let (server, _) = Server::start_with(&data, extra)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    setup_crd(&server, &client).await?;
    // Warm-up: connections, the CRD's strategy, the first pages of the database.
    create_load(&server, 64, 640, "warm").await?;
    let (elapsed, lat) = create_load(&server, 64, creates, "c").await?;
    drop(server);
    let _ = std::fs::remove_dir_all(&data);
    Ok((
        creates as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
    ))
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
    let mut best = [(0.0_f64, Duration::ZERO, Duration::ZERO); 2];
    let mut limit = 0.0_f64;
    for round in 0..rounds.max(1) {
        let (_, par) = sqlite_limit(&dir.join(format!("limit-{round}")), 2000).await?;
        let _ = std::fs::remove_dir_all(dir.join(format!("limit-{round}")));
        limit = limit.max(par);
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let r =
                creates_64(dir, &format!("create-{round}-{i}"), &variants[i].1, creates).await?;
            if r.0 > best[i].0 {
                best[i] = r;
            }
        }
    }
    report.row(
        "SQLite commits/s without the server, 64 writers (best of the rounds)",
        format!("{limit:.0}"),
        "physical limit, same run".into(),
    );
    for (i, (name, _)) in variants.iter().enumerate() {
        let (rate, p50, p99) = best[i];
        report.row(
            &format!("creates/s, 64 clients, {name}"),
            format!("{rate:.0} (p50 {}, p99 {})", ms(p50), ms(p99)),
            format!("{:.2}x of the 64-writer limit; target ≥ 0.5x", rate / limit),
        );
    }
    report.row(
        "watch cache cost on creates",
        format!("{:.1}%", (1.0 - best[0].0 / best[1].0) * 100.0),
        format!("best of {} rounds each", rounds.max(1)),
    );
    Ok(())
}
