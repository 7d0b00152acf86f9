//! The live heap of a jemalloc build (feature `jemalloc`): `stats.allocated` sampled every
//! [`EVERY`] on a thread of its own and handed to the server's `/metrics`
//! ([`crd_server::metrics::heap_sample`]). glibc's allocator cannot tell its live bytes cheaply,
//! and resident memory depends on what the allocator kept from before, so this is how the
//! memory bench shows what one request holds at its peak.

use std::time::Duration;

/// How often the heap is sampled: short enough to see a list's peak.
pub const EVERY: Duration = Duration::from_millis(5);

/// Starts the sampler (for the life of the process); logs and gives up if jemalloc's statistics
/// cannot be read.
pub fn start() {
    let spawned = std::thread::Builder::new()
        .name("heap-sampler".into())
        .spawn(|| {
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
                std::thread::sleep(EVERY);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the heap sampler");
    }
}
