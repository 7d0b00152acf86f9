//! Core-pinned placement for the create-path and etcd-parity figures (`--pin`, issue 19).
//!
//! On a shared placement the server, the storage engine (or etcd) and this load generator all
//! run on every core, whereas an engine's own limit is measured without the server and the load
//! generator: the comparison then measures the machine's cores, not the server. The pinned
//! placement gives the system under test one core ([`SYSTEM_CORE`]: the server, and etcd when
//! one runs) and the load generator the other ([`LOAD_CORE`]), and the engine's own limit is
//! measured under the same placement in the same run: `SQLite`'s commits with this process on
//! the system's core alone (nothing else running), etcd's puts with etcd on the system's core
//! and this process, a thin client, on the load generator's core.
//!
//! Placement is set with util-linux's `taskset` on whole processes (every thread, `-a`): the
//! server starts under `taskset -c`, this process and etcd are moved with `taskset -a -p`.
//! Threads created later inherit their creator's mask.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};

/// The core of the system under test: the server, and etcd on the etcd figures.
pub const SYSTEM_CORE: usize = 0;
/// The core of the load generator (this process) while the server runs.
pub const LOAD_CORE: usize = 1;

/// Whether servers started from now on are pinned to [`SYSTEM_CORE`].
static PIN_SERVERS: AtomicBool = AtomicBool::new(false);

/// One placement of a run: both figures are reported side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Every process on every core (the figures before `--pin`).
    Shared,
    /// The system under test on [`SYSTEM_CORE`], the load generator on [`LOAD_CORE`].
    Pinned,
}

impl Placement {
    /// The placements a run measures: shared only, or (with `--pin`) both.
    pub fn all(pin: bool) -> &'static [Placement] {
        if pin {
            &[Placement::Shared, Placement::Pinned]
        } else {
            &[Placement::Shared]
        }
    }

    /// A label for the report's rows.
    pub fn label(self) -> &'static str {
        match self {
            Placement::Shared => "shared placement",
            Placement::Pinned => "pinned placement",
        }
    }
}

/// The machine's cores, as this process first saw them: later calls may run while this
/// process is pinned to one core, which `available_parallelism` would report.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Fails unless the machine has the two cores a pinned placement needs and `taskset` works.
pub fn check() -> anyhow::Result<()> {
    if cores() < 2 {
        bail!(
            "--pin needs at least two cores; this machine has {}",
            cores()
        );
    }
    let ok = Command::new("taskset")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        bail!("--pin needs util-linux's taskset");
    }
    Ok(())
}

/// Sets every thread of process `pid` to run on `cores` only (`taskset -a -p -c`).
pub fn move_process(pid: &str, cores: &str) -> anyhow::Result<()> {
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", cores, pid])
        .output()
        .context("running taskset")?;
    if !out.status.success() {
        bail!(
            "taskset -a -p -c {cores} {pid}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Every core, as `taskset` spells a list ("0-1").
fn all_cores() -> String {
    format!("0-{}", cores() - 1)
}

/// Moves this process (the load generator, every thread) to `core`, or back to every core.
pub fn move_self(core: Option<usize>) -> anyhow::Result<()> {
    let cores = core.map_or_else(all_cores, |c| c.to_string());
    move_process(&std::process::id().to_string(), &cores)
}

/// Applies `placement`: servers started from now on go to [`SYSTEM_CORE`] (or anywhere), and
/// this process to [`LOAD_CORE`] (or anywhere); etcd, when its pid is known, to
/// [`SYSTEM_CORE`] (or anywhere).
pub fn apply(placement: Placement, etcd: Option<&str>) -> anyhow::Result<()> {
    let pinned = placement == Placement::Pinned;
    PIN_SERVERS.store(pinned, Ordering::SeqCst);
    move_self(pinned.then_some(LOAD_CORE))?;
    if let Some(pid) = etcd {
        let cores = if pinned {
            SYSTEM_CORE.to_string()
        } else {
            all_cores()
        };
        move_process(pid, &cores)?;
    }
    Ok(())
}

/// The command that starts a server: `exe` itself, or `taskset -c <SYSTEM_CORE> exe` while
/// servers are pinned (`taskset` execs the server, so the child's pid is the server's).
pub fn server_command(exe: &std::path::Path) -> Command {
    if PIN_SERVERS.load(Ordering::SeqCst) {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", &SYSTEM_CORE.to_string()]).arg(exe);
        cmd
    } else {
        Command::new(exe)
    }
}

/// User plus system CPU seconds of process `pid` (or `"self"`) so far, of all its threads
/// (`/proc/<pid>/stat` fields 14 and 15, in `USER_HZ` ticks: 100 on every Linux ABI).
pub fn cpu_seconds(pid: &str) -> f64 {
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
    (tick(11) + tick(12)) / 100.0
}
