//! A [`Store`] decorator that serves watches from one shared upstream watch, as kube-apiserver's
//! watch cache does: N clients watching from "now" cost one engine watch instead of N. It is used
//! for etcd, where every engine watch is a gRPC stream; the embedded engine fans out internally.
//!
//! Watches that start at or after the shared stream's position are served from it; a watch that
//! needs older history goes to the engine directly, so semantics never change.
//!
//! Architecture Invariant: the fan-out never invents or reorders events; a gap in the shared
//! stream (upstream error, a lagging subscriber) ends the affected watches with an error.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::broadcast;

use crate::{
    Event, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest, WatchStream,
};

/// How many events the shared stream buffers for slow subscribers before they lag.
const BUFFER: usize = 16_384;
/// How often the shared engine watch asks for progress while no event arrives. A write outside
/// the root (another `--etcd-prefix`, another program) moves the engine's revision without an
/// event here; a consistent read through the watch cache waits until progress vouches for that
/// revision. etcd 3.4 needs two answers before one is trusted (`etcd.rs`), so a read after such
/// a write waits about three intervals: with 1 s it waited 2–3 s (and then went to the engine).
/// Only an idle watch asks; one request each interval costs etcd next to nothing.
const PROGRESS: Duration = Duration::from_millis(100);

#[derive(Clone, Debug)]
enum Item {
    Event(Arc<Event>),
    /// The shared stream broke; subscribers must end (their clients re-list).
    Reset,
}

/// Fans one engine watch over `root` out to every watch under it.
pub struct FanoutStore {
    inner: Arc<dyn Store>,
    root: String,
    live: broadcast::Sender<Item>,
    /// The shared stream's position: it moves before an event is published, so a watch that
    /// reads it after subscribing either receives the event or replays from the engine.
    head: Arc<AtomicI64>,
    /// Every event with a revision up to this one is in the shared stream (or was before the
    /// start): what a progress notification may vouch for.
    published: Arc<AtomicI64>,
}

impl FanoutStore {
    /// Wraps `inner`, sharing one engine watch for all watches under `root`
    /// (for example `/registry/`).
    pub async fn new(inner: Arc<dyn Store>, root: &str) -> Result<Arc<Self>, StorageError> {
        let start = inner.current_revision().await?;
        let (live, _) = broadcast::channel(BUFFER);
        let head = Arc::new(AtomicI64::new(start));
        let published = Arc::new(AtomicI64::new(start));
        let store = Arc::new(FanoutStore {
            inner: inner.clone(),
            root: root.to_string(),
            live: live.clone(),
            head: head.clone(),
            published: published.clone(),
        });
        tokio::spawn(pump(inner, root.to_string(), live, head, published));
        Ok(store)
    }
}

/// Keeps one engine watch running and publishes its events; restarts after errors.
async fn pump(
    inner: Arc<dyn Store>,
    root: String,
    live: broadcast::Sender<Item>,
    head: Arc<AtomicI64>,
    published: Arc<AtomicI64>,
) {
    loop {
        let after = head.load(Ordering::Acquire);
        let stream = inner
            .watch(WatchRequest {
                prefix: root.clone(),
                after,
                progress_interval: Some(PROGRESS),
            })
            .await;
        let mut stream = match stream {
            Ok(s) => s,
            Err(StorageError::Compacted { .. }) => {
                // History is gone: restart at the current revision, ending every watch.
                if let Ok(current) = inner.current_revision().await {
                    head.store(current, Ordering::Release);
                    published.store(current, Ordering::Release);
                }
                let _ = live.send(Item::Reset);
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            match item {
                Ok(Event::Progress { revision }) => {
                    // Every event before it has been published.
                    head.fetch_max(revision, Ordering::AcqRel);
                    published.fetch_max(revision, Ordering::AcqRel);
                }
                Ok(event) => {
                    // The position moves before the event is published: a watch that reads the
                    // position after subscribing either receives the event or, seeing the
                    // position past its start, replays from the engine. The other order lost
                    // events published between a watch's subscribe and its read of the position.
                    let revision = event.revision();
                    head.fetch_max(revision, Ordering::AcqRel);
                    let _ = live.send(Item::Event(Arc::new(event)));
                    published.fetch_max(revision, Ordering::AcqRel);
                }
                Err(_) => break,
            }
        }
        if live.receiver_count() == 0 && Arc::strong_count(&head) == 1 {
            return;
        }
    }
}

#[async_trait]
impl Store for FanoutStore {
    async fn get(&self, key: &str) -> Result<Option<crate::KeyValue>, StorageError> {
        self.inner.get(key).await
    }

    async fn get_with(
        &self,
        key: &str,
        freshness: crate::Freshness,
    ) -> Result<Option<crate::KeyValue>, StorageError> {
        self.inner.get_with(key, freshness).await
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        self.inner.list(request).await
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        self.inner.create(key, value).await
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        self.inner.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(crate::KeyValue, Revision), StorageError> {
        self.inner.delete(key, expected).await
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        if !request.prefix.starts_with(&self.root) {
            return self.inner.watch(request).await;
        }
        // Subscribe first, then read the position: every event after it is in `rx`.
        let mut rx = self.live.subscribe();
        let head = self.head.load(Ordering::Acquire);
        if request.after < head {
            return self.inner.watch(request).await;
        }
        let published = self.published.clone();
        let WatchRequest {
            prefix,
            after,
            progress_interval,
        } = request;
        let stream = async_stream(move |tx| async move {
            let mut last = after;
            loop {
                let next = match progress_interval {
                    Some(every) => next_or_progress(&mut rx, every, &published).await,
                    None => Next::Item(rx.recv().await),
                };
                match next {
                    Next::Progress(at) => {
                        let at = at.max(last);
                        if tx.send(Ok(Event::Progress { revision: at })).await.is_err() {
                            return;
                        }
                        last = at;
                    }
                    Next::Item(Ok(Item::Event(event))) => {
                        let revision = event.revision();
                        if revision <= last {
                            continue;
                        }
                        let key = match event.as_ref() {
                            Event::Put { kv, .. } => &kv.key,
                            Event::Delete { prev, .. } => &prev.key,
                            Event::Progress { .. } => continue,
                        };
                        if !key.starts_with(&prefix) {
                            continue;
                        }
                        last = revision;
                        if tx.send(Ok((*event).clone())).await.is_err() {
                            return;
                        }
                    }
                    Next::Item(Ok(Item::Reset) | Err(broadcast::error::RecvError::Lagged(_))) => {
                        let _ = tx.send(Err(StorageError::WatchLagged)).await;
                        return;
                    }
                    Next::Item(Err(broadcast::error::RecvError::Closed)) => return,
                }
            }
        });
        Ok(stream)
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    fn local_revision(&self) -> Option<Revision> {
        self.inner.local_revision()
    }

    fn stale(&self, key: &str, revision: Revision) -> bool {
        self.inner.stale(key, revision)
    }

    fn events_carry_written_values(&self) -> bool {
        self.inner.events_carry_written_values()
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
}

/// What a shared-stream watch does next.
enum Next {
    Item(Result<Item, broadcast::error::RecvError>),
    /// Nothing arrived within the interval: report this revision.
    Progress(Revision),
}

/// The next item within `every`, else the revision a progress notification may vouch for: what
/// is published and already taken (an event published before the read is in `rx` and goes
/// first).
async fn next_or_progress(
    rx: &mut broadcast::Receiver<Item>,
    every: Duration,
    published: &AtomicI64,
) -> Next {
    if let Ok(received) = tokio::time::timeout(every, rx.recv()).await {
        return Next::Item(received);
    }
    let at = published.load(Ordering::Acquire);
    match rx.try_recv() {
        Ok(item) => Next::Item(Ok(item)),
        Err(broadcast::error::TryRecvError::Empty) => Next::Progress(at),
        Err(broadcast::error::TryRecvError::Lagged(n)) => {
            Next::Item(Err(broadcast::error::RecvError::Lagged(n)))
        }
        Err(broadcast::error::TryRecvError::Closed) => {
            Next::Item(Err(broadcast::error::RecvError::Closed))
        }
    }
}

/// A stream fed by a task through a bounded channel; the task stops when the stream is dropped.
fn async_stream<F, Fut>(f: F) -> WatchStream
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Event, StorageError>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(256);
    tokio::spawn(f(tx));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn conformance_through_the_fanout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner = crate::sqlite::SqliteStore::open(&dir.path().join("s.db")).expect("open");
        let store = FanoutStore::new(inner, "/conformance/")
            .await
            .expect("fanout");
        crate::conformance::run_all(store).await;
    }

    /// Regression: a watch from the revision before a just-acknowledged write always gets it,
    /// also when the write's event is being published as the watch starts (the position used to
    /// move after the publish, so such a watch took the shared stream and missed the event).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_watch_from_just_before_a_write_gets_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner = crate::sqlite::SqliteStore::open(&dir.path().join("s.db")).expect("open");
        let store = FanoutStore::new(inner, "/registry/").await.expect("fanout");
        for i in 0..300 {
            let key = format!("/registry/race/{i}");
            let revision = store
                .create(&key, Bytes::from_static(b"x"))
                .await
                .expect("create");
            let mut stream = store
                .watch(WatchRequest {
                    prefix: "/registry/race/".into(),
                    after: revision - 1,
                    progress_interval: None,
                })
                .await
                .expect("watch");
            let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .unwrap_or_else(|_| panic!("write {i} at {revision} never arrived"))
                .expect("open")
                .expect("event");
            assert_eq!(event.revision(), revision, "write {i}");
        }
    }

    /// Regression: a progress notification vouches only for events the watch has been handed.
    /// The position moves before an event is published, and a watch whose interval ran out in
    /// between reported the position as progress and then dropped the event as already seen
    /// (the watch cache above it lost the object until its next re-list). The window is narrow:
    /// one round caught it in about one run of four before the fix, so the check runs rounds.
    #[tokio::test(flavor = "multi_thread")]
    async fn progress_never_passes_an_event_not_yet_delivered() {
        for _ in 0..3 {
            let dir = tempfile::tempdir().expect("tempdir");
            let inner = crate::sqlite::SqliteStore::open(&dir.path().join("s.db")).expect("open");
            let store = FanoutStore::new(inner, "/conformance/")
                .await
                .expect("fanout");
            crate::conformance::check_progress_under_writes(store.as_ref(), 32, 2000).await;
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn many_watchers_share_one_stream() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner = crate::sqlite::SqliteStore::open(&dir.path().join("s.db")).expect("open");
        let store = FanoutStore::new(inner, "/registry/").await.expect("fanout");
        let now = store.current_revision().await.expect("rev");
        let mut watches = Vec::new();
        for _ in 0..100 {
            watches.push(
                store
                    .watch(WatchRequest {
                        prefix: "/registry/a/".into(),
                        after: now,
                        progress_interval: None,
                    })
                    .await
                    .expect("watch"),
            );
        }
        store
            .create("/registry/b/x", Bytes::from_static(b"no"))
            .await
            .expect("create");
        let rev = store
            .create("/registry/a/x", Bytes::from_static(b"1"))
            .await
            .expect("create");
        for w in &mut watches {
            let e = tokio::time::timeout(Duration::from_secs(5), w.next())
                .await
                .expect("event in time")
                .expect("stream open")
                .expect("event");
            assert_eq!(e.revision(), rev, "only the watched prefix, in order");
        }
    }
}
