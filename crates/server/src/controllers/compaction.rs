//! Periodic compaction of storage history, as kube-apiserver's compactor does: every interval,
//! history older than the revision seen at the previous interval is dropped, so watches can
//! resume from any revision of the last one to two intervals.

use std::sync::Arc;
use std::time::Duration;

use crd_storage::Store;
use tokio::sync::watch;

/// kube-apiserver's default `--etcd-compaction-interval`.
pub const INTERVAL: Duration = Duration::from_mins(5);

/// Runs until shutdown.
pub async fn run(store: Arc<dyn Store>, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    let mut previous = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
        let Ok(current) = store.current_revision().await else {
            continue;
        };
        if let Some(rev) = previous
            && let Err(e) = store.compact(rev).await
        {
            tracing::warn!(error = %e, "compaction failed");
        }
        previous = Some(current);
    }
}
