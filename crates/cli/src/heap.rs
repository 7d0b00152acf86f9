//! The live heap of a jemalloc build (feature `jemalloc`): `stats.allocated` sampled every
//! `--heap-sample-interval-ms` on a thread of its own and handed to the server's `/metrics`
//! ([`crd_server::metrics::heap_sample`]). glibc's allocator cannot tell its live bytes cheaply,
//! and resident memory depends on what the allocator kept from before, so this is how the
//! memory bench shows what one request holds at its peak.
//!
//! A sample advances jemalloc's statistics epoch, which merges every arena's statistics (about
//! 0.2M instructions on the 2-core machine): every 5 ms that was 3% of a core on an idle server
//! (BENCHMARKS.md "The allocator and the create answer"), hence a coarse default.

use std::time::Duration;

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
                let read = tikv_jemalloc_ctl::epoch::advance()
                    .and_then(|_| tikv_jemalloc_ctl::stats::allocated::read());
                match read {
                    Ok(bytes) => {
                        crd_server::metrics::heap_sample(u64::try_from(bytes).unwrap_or(u64::MAX));
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
