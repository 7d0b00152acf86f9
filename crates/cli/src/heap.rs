//! The live heap of a jemalloc build (feature `jemalloc`): `stats.allocated` sampled every
//! `--heap-sample-interval-ms` on a thread of its own and handed to the server's `/metrics`
//! ([`crd_server::metrics::heap_sample`]). glibc's allocator cannot tell its live bytes cheaply,
//! and resident memory depends on what the allocator kept from before, so this is how the
//! memory bench shows what one request holds at its peak.
//!
//! A sample advances jemalloc's statistics epoch, which merges every arena's statistics (about
//! 0.2M instructions on the 2-core machine): every 5 ms that was 3% of a core on an idle server
//! (BENCHMARKS.md "The allocator and the create answer"), hence a coarse default.
//!
//! `stats.allocated` counts what the threads' caches (tcache) hold as allocated: blocks freed
//! by a thread stay there for its next allocations, up to a few MB per thread, and how full
//! they are when a benchmark takes its baseline is chance. So each sample also reads the bytes
//! in those caches (`stats.arenas.<all>.tcache_bytes`, the same epoch), and the server reports
//! the live heap without them beside jemalloc's own figure.

use std::time::Duration;

use tikv_jemalloc_ctl::{Access, AsName};

/// Bytes held in every thread's cache, summed over all arenas (`MALLCTL_ARENAS_ALL` is 4096).
const TCACHE_BYTES: &[u8] = b"stats.arenas.4096.tcache_bytes\0";

/// Starts the sampler, one sample per `every` (for the life of the process; not at all for a
/// zero interval); logs and gives up if jemalloc's statistics cannot be read.
pub fn start(every: Duration) {
    if every.is_zero() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("heap-sampler".into())
        .spawn(move || {
            loop {
                // jemalloc's statistics are refreshed by advancing its epoch.
                let read = tikv_jemalloc_ctl::epoch::advance().and_then(|_| {
                    let allocated = tikv_jemalloc_ctl::stats::allocated::read()?;
                    let cached: usize = TCACHE_BYTES.name().read()?;
                    Ok((allocated, cached))
                });
                match read {
                    Ok((allocated, cached)) => {
                        let bytes = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
                        crd_server::metrics::heap_sample(bytes(allocated), bytes(cached));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "jemalloc statistics unavailable");
                        return;
                    }
                }
                std::thread::sleep(every);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the heap sampler");
    }
}
