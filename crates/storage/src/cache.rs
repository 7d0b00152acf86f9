//! The watch cache: a [`Store`] decorator that keeps the latest state of every key under a root
//! in memory and serves gets, lists and watches from it, as kube-apiserver's cacher
//! (`staging/src/k8s.io/apiserver/pkg/storage/cacher`) does.
//!
//! - Fed by one engine watch over the root (for etcd, the shared watch of
//!   [`FanoutStore`](crate::fanout::FanoutStore)): an initial paged list at one revision, then
//!   every event after it. A broken feed re-lists; watchers are closed (their clients re-watch),
//!   and until the cache is ready again every request goes to the engine.
//! - Consistent reads (`resourceVersion=""`, [`Store::get`]) read the engine's current revision
//!   and wait until the cache has caught up to it (KEP-2340 `ConsistentListFromCache`); concurrent
//!   readers share one revision request, and the readers that arrive while it is out share the
//!   next (over the embedded engine, its own revision: no request). A read
//!   the cache cannot answer in time goes to the engine. `NotOlderThan`/`0` lists wait only for
//!   their revision; a list at an exact revision is answered from the cache when it is the
//!   cache's revision, else by the engine (as are continue tokens of older snapshots).
//! - Secondary indexes (`index.rs`) from the [`Indexer`] the cache is built with: a list with
//!   [`ListRequest::index_terms`] visits only the keys that have them.
//! - A bounded event window (`window.rs`, upstream's capacity policy); a watch from before it
//!   fails with [`StorageError::Compacted`] (the server's `410 Gone` "too old resource
//!   version").
//! - Every watcher has a bounded buffer; the dispatcher waits for a full one only within a
//!   shared time budget, then closes it (upstream's "Forcing watcher close due to
//!   unresponsiveness", `forget(false)`): what its buffer held is dropped at once and its
//!   stream ends, and the client re-watches from its last revision. Nothing is kept for a
//!   watcher that went away.
//!
//! Architecture Invariant: the cache never invents or reorders events, and never answers a
//! consistent read from a state older than the engine's revision at the start of the read.

pub mod index;
pub mod window;

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::{
    Decoded, Event, Freshness, KeyValue, ListRequest, ListResponse, Pages, Revision, StorageError,
    Store, WatchRequest, WatchStream,
};
use index::{Indexes, Term};
use window::Window;

/// Upstream's `storageWatchListPageSize`: the page size of the cache's initial list.
const LIST_PAGE: usize = 10_000;
/// How often the feed asks the engine for progress while idle, so that a consistent read whose
/// revision no cached key reached (a write outside the root) still completes quickly.
const FEED_PROGRESS: Duration = Duration::from_millis(50);
/// How long a read waits for the cache to catch up before it goes to the engine.
const CATCH_UP: Duration = Duration::from_secs(3);
/// At most this many events already waiting are applied before readers are woken.
const FEED_BATCH: usize = 256;
/// The dispatcher's budget for waiting on full watcher buffers (upstream's `timeBudget`: at
/// most 100 ms, refilled at 100 ms per second).
const BUDGET_MAX: Duration = Duration::from_millis(100);

/// Derives the index terms of a stored object. The storage crate never looks inside values; the
/// server supplies an indexer that knows objects (labels, `metadata.name`).
pub trait Indexer: Send + Sync + 'static {
    /// Decodes what the indexer reads of a written value, once per event: the cache derives
    /// the terms from it and attaches it to the event it hands its watchers
    /// ([`KeyValue::decoded`]), so a watcher that reads the same part of the object (the
    /// server's garbage collector) need not parse the bytes again. The default decodes nothing.
    fn decode(&self, _key: &str, _value: &[u8]) -> Decoded {
        Decoded::default()
    }

    /// Appends the `(index name, value)` terms of the object stored at `key` to `out`;
    /// `decoded` is what [`Indexer::decode`] gave for `value`.
    fn terms(&self, key: &str, value: &[u8], decoded: &Decoded, out: &mut Vec<Term>);
}

/// Appends the terms of the value stored at `key` to `out`, and returns the indexer's decoding
/// of it (kept by a written event, dropped for a value read before).
fn decode_terms(ix: &dyn Indexer, key: &str, value: &[u8], out: &mut Vec<Term>) -> Decoded {
    let decoded = ix.decode(key, value);
    ix.terms(key, value, &decoded, out);
    decoded
}

/// What the cache reports as it works; the server turns the reports into kube-apiserver's
/// `apiserver_watch_cache_*` metrics (the storage crate knows no metrics and no resources: it
/// names keys and prefixes, the observer labels them).
pub trait CacheObserver: Send + Sync + 'static {
    /// The cache finished loading (at start, or after a broken feed); `keys` are the keys
    /// loaded (upstream's initializations and init events).
    fn initialized(&self, keys: &mut dyn Iterator<Item = &str>);
    /// An event for `key` came from the engine's watch (upstream's events received).
    fn received(&self, key: &str);
    /// An event for `key` was handed to the watchers (upstream's events dispatched).
    fn dispatched(&self, key: &str);
    /// A watcher of `prefix` was closed because its buffer stayed full (upstream's terminated
    /// watchers).
    fn watcher_terminated(&self, prefix: &str);
    /// A read of `prefix` (a list's prefix, or a get's key) waited `waited` for the cache to
    /// become fresh enough (upstream's read wait).
    fn read_wait(&self, prefix: &str, waited: Duration);
    /// The event window's capacity is now `capacity` (was `old`; equal at a load).
    fn capacity(&self, old: usize, capacity: usize);
}

/// An indexer with no terms: lists with index terms then find nothing indexed, so the cache
/// answers them by scanning (see [`CacheConfig::indexer`]).
pub struct NoIndexes;

impl Indexer for NoIndexes {
    fn terms(&self, _key: &str, _value: &[u8], _decoded: &Decoded, _out: &mut Vec<Term>) {}
}

/// How a cache is built.
pub struct CacheConfig {
    /// The keys cached: everything under this prefix (for example `/registry/`).
    pub root: String,
    /// Supplies index terms; `None` disables indexed lists (index terms are ignored).
    pub indexer: Option<Arc<dyn Indexer>>,
    /// Events buffered per watcher before the dispatcher waits (upstream uses 10 to 1000).
    pub watcher_buffer: usize,
    /// Told what the cache does (metrics); `None` tells nobody.
    pub observer: Option<Arc<dyn CacheObserver>>,
    /// How many revision requests of consistent reads may be in flight at once (at least 1;
    /// see [`REVISION_PIPELINE`]).
    pub revision_pipeline: usize,
}

impl CacheConfig {
    /// A cache of `root` with `indexer` and upstream-like buffers.
    pub fn new(root: &str, indexer: Option<Arc<dyn Indexer>>) -> Self {
        CacheConfig {
            root: root.to_string(),
            indexer,
            watcher_buffer: 100,
            observer: None,
            revision_pipeline: revision_pipeline_from_env(),
        }
    }
}

/// [`REVISION_PIPELINE`], or `CRD_APISERVER_REVISION_PIPELINE` when set to a number (a knob
/// for the benchmarks, which compare depths with one build).
fn revision_pipeline_from_env() -> usize {
    std::env::var("CRD_APISERVER_REVISION_PIPELINE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(REVISION_PIPELINE, |n| n.max(1))
}

/// One cached key.
#[derive(Debug)]
struct Entry {
    value: Bytes,
    create_revision: Revision,
    mod_revision: Revision,
}

/// Makes an event's previous state share the bytes the cache held for the key. The engine reads
/// `prev` back when it writes, a copy of those bytes; the window keeps each event with its
/// `prev`, so without this an object updated twice within the window was held twice over (the
/// earlier event's new state and the later event's copy of it: 2,000 updates of 1 KiB objects
/// kept 2.4 MB more, memory bench). Upstream's watch cache takes the event's previous object
/// from its store, so the two are one object there too. Only bytes equal at the same revision
/// are swapped: the event stays exactly what the engine sent.
fn share_prev(prev: &mut KeyValue, old: &Entry) {
    if prev.mod_revision == old.mod_revision && prev.value == old.value {
        prev.value = old.value.clone();
    }
}

struct WatcherSlot {
    id: u64,
    prefix: String,
    tx: mpsc::Sender<Arc<Event>>,
    /// Ends the watcher at once, dropping what its buffer holds (a forced close).
    stop: Arc<Notify>,
}

impl WatcherSlot {
    /// Closes the watcher without delivering what is still buffered, as upstream's
    /// `cacheWatcher.forget(false)`: its client re-watches from the last event it got, and the
    /// watcher's buffered events are freed now rather than when a stuck client reads again.
    fn force_close(&self) {
        self.stop.notify_one();
    }
}

/// Everything behind the lock.
struct State {
    ready: bool,
    revision: Revision,
    items: BTreeMap<Arc<str>, Entry>,
    indexes: Indexes,
    window: Window,
    watchers: Vec<WatcherSlot>,
    next_id: u64,
}

struct Shared {
    root: String,
    indexer: Option<Arc<dyn Indexer>>,
    watcher_buffer: usize,
    observer: Option<Arc<dyn CacheObserver>>,
    state: RwLock<State>,
    /// The cache's revision, for readers waiting to catch up.
    revision: tokio::sync::watch::Sender<Revision>,
    /// Every event up to this revision has been handed to every watcher (progress notices).
    dispatched: AtomicI64,
    /// Decodings of values being written through [`Store::create_decoded`], by key, while the
    /// write is in flight: the feed takes an event's decoding from here when the event's bytes
    /// are the very buffer written (the embedded engine's events carry the written `Bytes`),
    /// instead of asking the indexer to parse them.
    written: Mutex<HashMap<String, Vec<(Bytes, Decoded)>>>,
}

/// Holds a write's decoding in [`Shared::written`] until dropped (the write returned, or its
/// future was dropped).
struct WrittenDecoding<'a> {
    shared: &'a Shared,
    key: &'a str,
    value: Bytes,
}

impl Drop for WrittenDecoding<'_> {
    fn drop(&mut self) {
        let mut written = self.shared.held_decodings();
        if let Some(held) = written.get_mut(self.key) {
            held.retain(|(b, _)| !same_buffer(b, &self.value));
            if held.is_empty() {
                written.remove(self.key);
            }
        }
    }
}

/// Whether two values are one buffer (not merely equal bytes).
fn same_buffer(a: &Bytes, b: &Bytes) -> bool {
    a.as_ptr() == b.as_ptr() && a.len() == b.len()
}

/// The watch cache over `inner`.
pub struct CacheStore {
    inner: Arc<dyn Store>,
    shared: Arc<Shared>,
    oracle: Arc<Oracle>,
    feed: tokio::task::AbortHandle,
}

impl Drop for CacheStore {
    fn drop(&mut self) {
        self.feed.abort();
    }
}

/// Memory figures of a cache (for benchmarks).
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheStats {
    /// Cached keys.
    pub objects: usize,
    /// Events in the window.
    pub events: usize,
    /// Window capacity.
    pub capacity: usize,
    /// Registered watchers.
    pub watchers: usize,
    /// Index sets.
    pub index_sets: usize,
}

impl CacheStore {
    /// Wraps `inner`, caching every key under `config.root`. Returns at once; requests go to
    /// `inner` until the initial list is loaded ([`CacheStore::wait_ready`]).
    pub fn new(inner: Arc<dyn Store>, config: CacheConfig) -> Arc<Self> {
        let (revision, _) = tokio::sync::watch::channel(0);
        let shared = Arc::new(Shared {
            root: config.root,
            indexer: config.indexer,
            watcher_buffer: config.watcher_buffer.max(1),
            observer: config.observer,
            state: RwLock::new(State {
                ready: false,
                revision: 0,
                items: BTreeMap::new(),
                indexes: Indexes::default(),
                window: Window::new(0),
                watchers: Vec::new(),
                next_id: 0,
            }),
            revision,
            dispatched: AtomicI64::new(0),
            written: Mutex::new(HashMap::new()),
        });
        let feed = tokio::spawn(feed(inner.clone(), Arc::downgrade(&shared))).abort_handle();
        Arc::new(CacheStore {
            oracle: Arc::new(Oracle::new(inner.clone(), config.revision_pipeline)),
            inner,
            shared,
            feed,
        })
    }

    /// Waits until the initial list is loaded.
    pub async fn wait_ready(&self) {
        let mut rx = self.shared.revision.subscribe();
        loop {
            if self.read().ready {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Current sizes.
    pub fn stats(&self) -> CacheStats {
        let st = self.read();
        CacheStats {
            objects: st.items.len(),
            events: st.window.len(),
            capacity: st.window.capacity(),
            watchers: st.watchers.len(),
            index_sets: st.indexes.sets(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.shared
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn covers(&self, prefix: &str) -> bool {
        prefix.starts_with(&self.shared.root)
    }

    /// Waits until the cache is ready at `target` or later; `false` when it is not within
    /// [`CATCH_UP`] (the caller goes to the engine).
    async fn caught_up(&self, target: Revision, prefix: &str) -> bool {
        let started = Instant::now();
        let fresh = self.caught_up_inner(target).await;
        if let Some(o) = &self.shared.observer {
            o.read_wait(prefix, started.elapsed());
        }
        fresh
    }

    async fn caught_up_inner(&self, target: Revision) -> bool {
        // Usually the cache is already there (no writes in flight): answer without subscribing
        // or arming a timer.
        {
            let st = self.read();
            if st.ready && st.revision >= target {
                return true;
            }
        }
        let mut rx = self.shared.revision.subscribe();
        let wait = async {
            loop {
                {
                    let st = self.read();
                    if st.ready && st.revision >= target {
                        return true;
                    }
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(CATCH_UP, wait).await.unwrap_or(false)
    }

    /// Whether a read of the latest state with `freshness` may be answered from the cache.
    async fn fresh(&self, freshness: Freshness, prefix: &str) -> Result<bool, StorageError> {
        let target = match freshness {
            Freshness::Consistent => self.oracle.current().await?,
            Freshness::NotOlderThan(n) => n,
        };
        Ok(self.caught_up(target, prefix).await)
    }

    /// After a read's wait ran out: upstream's cacher answers a revision it did not reach with
    /// "Too large resource version", naming its own revision (a cache not yet filled leaves
    /// the read to the engine).
    fn not_reached(&self, freshness: Freshness) -> Result<(), StorageError> {
        let st = self.read();
        if st.ready {
            freshness.check(st.revision)?;
        }
        Ok(())
    }

    fn list_cached(st: &State, request: &ListRequest, indexed: bool) -> ListResponse {
        let limit = request.limit.filter(|&l| l > 0).unwrap_or(usize::MAX);
        let prefix = request.prefix.as_str();
        let kv = |key: &Arc<str>, e: &Entry| KeyValue {
            key: key.to_string(),
            value: e.value.clone(),
            create_revision: e.create_revision,
            mod_revision: e.mod_revision,
            decoded: Decoded::default(),
        };
        if indexed && !request.index_terms.is_empty() {
            let (keys, remaining) = st.indexes.select(
                &request.index_terms,
                prefix,
                request.start_after.as_deref(),
                request.limit,
            );
            let items = keys
                .iter()
                .filter_map(|k| st.items.get_key_value(k.as_ref()))
                .map(|(k, e)| kv(k, e))
                .collect();
            return ListResponse {
                items,
                revision: st.revision,
                remaining,
            };
        }
        let lower = match request.start_after.as_deref() {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let mut range = st
            .items
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix));
        let items: Vec<KeyValue> = range.by_ref().take(limit).map(|(k, e)| kv(k, e)).collect();
        let remaining = range.count() as u64;
        ListResponse {
            items,
            revision: st.revision,
            remaining,
        }
    }
}

/// A reader waiting for a revision (or the engine's error text).
type Waiter = oneshot::Sender<Result<Revision, String>>;

/// How many revision requests may be in flight at once. With one, a reader that arrives while a
/// request is out waits for it to return and then for its own batch's round trip; with two, the
/// next batch is sent at once. Measured with 64 clients on etcd (BENCHMARKS.md "Session 31"),
/// one gathers about 35 readers per request against 20 with two, halving etcd's revision
/// requests, and the gets ran faster (mean 30k/s against 26k/s): every request costs etcd far
/// more CPU than the wait costs a reader. A single reader never waits behind another request.
const REVISION_PIPELINE: usize = 1;

/// Shares "current revision" requests among concurrent consistent readers. A reader joins only
/// a request sent after it arrived, so the revision it gets is at least the store's revision
/// when its read began (linearizable: for etcd the revision read is a quorum read).
/// At most [`REVISION_PIPELINE`] requests are in flight; readers arriving meanwhile form the
/// next batch.
struct Oracle {
    inner: Arc<dyn Store>,
    /// At most this many requests in flight.
    pipeline: usize,
    queue: Mutex<Queue>,
}

/// The readers waiting for the next request, and the requests started.
#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    /// Requests sent and not yet answered.
    in_flight: usize,
    /// A sender task will take `waiting` (it is scheduled, or yielding before it takes them).
    scheduled: bool,
}

impl Oracle {
    fn new(inner: Arc<dyn Store>, pipeline: usize) -> Self {
        Oracle {
            inner,
            pipeline: pipeline.max(1),
            queue: Mutex::new(Queue::default()),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn current(self: &Arc<Self>) -> Result<Revision, StorageError> {
        if let Some(revision) = self.inner.local_revision() {
            return Ok(revision);
        }
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut q = self.queue();
            q.waiting.push(tx);
            let start = !q.scheduled && q.in_flight < self.pipeline;
            q.scheduled |= start;
            start
        };
        if start {
            tokio::spawn(self.clone().send_batches());
        }
        match rx.await {
            Ok(Ok(rev)) => Ok(rev),
            Ok(Err(e)) => Err(StorageError::Unavailable(e)),
            Err(_) => Err(StorageError::Unavailable("revision request dropped".into())),
        }
    }

    /// Sends one request for the readers waiting now, answers them, and goes on with the readers
    /// that queued meanwhile when no other sender took them.
    async fn send_batches(self: Arc<Self>) {
        loop {
            // Requests already runnable join this batch first: a task spawned from a worker
            // runs next (tokio's LIFO slot), before the readers queued behind it have asked;
            // yielding once sends one revision request for all of them.
            tokio::task::yield_now().await;
            let batch = {
                let mut q = self.queue();
                q.scheduled = false;
                if q.waiting.is_empty() {
                    return;
                }
                q.in_flight += 1;
                std::mem::take(&mut q.waiting)
            };
            let result = self
                .inner
                .current_revision()
                .await
                .map_err(|e| e.to_string());
            for tx in batch {
                let _ = tx.send(result.clone());
            }
            let mut q = self.queue();
            q.in_flight -= 1;
            // Readers that arrived while both requests were out queued without a sender.
            if q.waiting.is_empty() || q.scheduled {
                return;
            }
            q.scheduled = true;
        }
    }
}

/// Loads the cache and applies the engine's events; re-lists after a broken feed.
async fn feed(inner: Arc<dyn Store>, shared: Weak<Shared>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(s) = shared.upgrade() else { return };
        let root = s.root.clone();
        drop(s);
        let mut stream = match load(inner.as_ref(), &shared, &root).await {
            Ok(Some(stream)) => stream,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, root, "watch cache: initial list failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        let mut budget = Budget::new();
        'feed: while let Some(item) = stream.next().await {
            let Some(s) = shared.upgrade() else { return };
            // Every event already waiting is applied before readers are woken, once: under
            // many writers a commit batch arrives as a run of events.
            let mut next = Some(item);
            let mut applied = 0;
            while let Some(item) = next.take() {
                match item {
                    Ok(Event::Progress { revision }) => s.progress(revision),
                    Ok(event) => {
                        s.apply(event, &mut budget).await;
                        applied += 1;
                    }
                    Err(e) => {
                        tracing::info!(error = %e, root, "watch cache: feed ended; re-listing");
                        s.publish();
                        break 'feed;
                    }
                }
                if applied < FEED_BATCH {
                    next = stream.next().now_or_never().flatten();
                }
            }
            if applied > 0 {
                s.publish();
            }
        }
        let Some(s) = shared.upgrade() else { return };
        s.reset();
    }
}

/// The initial list into the state, then the watch after its revision.
async fn load(
    inner: &dyn Store,
    shared: &Weak<Shared>,
    root: &str,
) -> Result<Option<WatchStream>, StorageError> {
    let mut pages = Pages::new(inner, root, None, LIST_PAGE);
    let mut items = BTreeMap::new();
    let mut indexes = Indexes::default();
    let terms_of = match shared.upgrade() {
        Some(s) => s.indexer.clone(),
        None => return Ok(None),
    };
    let mut terms = Vec::new();
    while let Some(page) = pages.next_page().await? {
        for kv in page {
            let key: Arc<str> = Arc::from(kv.key);
            if let Some(ix) = &terms_of {
                terms.clear();
                decode_terms(ix.as_ref(), &key, &kv.value, &mut terms);
                indexes.insert(&key, &terms);
            }
            items.insert(
                key,
                Entry {
                    value: kv.value,
                    create_revision: kv.create_revision,
                    mod_revision: kv.mod_revision,
                },
            );
        }
    }
    let revision = match pages.revision() {
        Some(r) => r,
        None => inner.current_revision().await?,
    };
    let stream = inner
        .watch(WatchRequest {
            prefix: root.to_string(),
            after: revision,
            progress_interval: Some(FEED_PROGRESS),
        })
        .await?;
    let Some(s) = shared.upgrade() else {
        return Ok(None);
    };
    if let Some(o) = &s.observer {
        o.initialized(&mut items.keys().map(AsRef::as_ref));
        let capacity = Window::new(revision).capacity();
        o.capacity(capacity, capacity);
    }
    {
        let mut st = s.write();
        st.items = items;
        st.indexes = indexes;
        st.window = Window::new(revision);
        st.revision = revision;
        st.ready = true;
    }
    s.dispatched.store(revision, Ordering::Release);
    s.revision.send_replace(revision);
    Ok(Some(stream))
}

impl Shared {
    /// [`Shared::written`], locked.
    fn held_decodings(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<(Bytes, Decoded)>>> {
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The decoding its writer gave for `value`, while that write is in flight.
    fn written_decoding(&self, key: &str, value: &Bytes) -> Option<Decoded> {
        let written = self.held_decodings();
        written
            .get(key)?
            .iter()
            .find(|(b, _)| same_buffer(b, value))
            .map(|(_, d)| d.clone())
    }

    /// The terms of a value read before (an object replaced or deleted): decoded again.
    fn terms(&self, key: &str, value: &[u8]) -> Vec<Term> {
        let mut out = Vec::new();
        if let Some(ix) = &self.indexer {
            decode_terms(ix.as_ref(), key, value, &mut out);
        }
        out
    }

    fn progress(&self, revision: Revision) {
        {
            let mut st = self.write();
            if revision <= st.revision {
                return;
            }
            st.revision = revision;
        }
        self.dispatched.fetch_max(revision, Ordering::AcqRel);
        self.revision.send_replace(revision);
    }

    /// Applies one event to the state, the indexes and the window, and hands it to watchers.
    async fn apply(&self, mut event: Event, budget: &mut Budget) {
        let revision = event.revision();
        // A written object's terms are derived before taking the lock (readers wait on it),
        // from a decoding the event then carries to the watchers.
        let mut new_terms = Vec::new();
        if let (Event::Put { kv, .. }, Some(ix)) = (&mut event, &self.indexer) {
            let decoded = self
                .written_decoding(&kv.key, &kv.value)
                .unwrap_or_else(|| ix.decode(&kv.key, &kv.value));
            ix.terms(&kv.key, &kv.value, &decoded, &mut new_terms);
            kv.decoded = decoded;
        }
        let mut blocked = Vec::new();
        let event = {
            let mut st = self.write();
            if revision <= st.revision {
                return;
            }
            match &mut event {
                Event::Put { kv, prev } => {
                    let key: Arc<str> = match st.items.get_key_value(kv.key.as_str()) {
                        Some((k, _)) => k.clone(),
                        None => Arc::from(kv.key.as_str()),
                    };
                    let old = st.items.insert(
                        key.clone(),
                        Entry {
                            value: kv.value.clone(),
                            create_revision: kv.create_revision,
                            mod_revision: kv.mod_revision,
                        },
                    );
                    if let Some(old) = &old {
                        let old_terms = self.terms(&key, &old.value);
                        st.indexes.remove(&key, &old_terms);
                        if let Some(prev) = prev {
                            share_prev(prev, old);
                        }
                    }
                    st.indexes.insert(&key, &new_terms);
                }
                Event::Delete { prev, .. } => {
                    if let Some(old) = st.items.remove(prev.key.as_str()) {
                        let old_terms = self.terms(&prev.key, &old.value);
                        st.indexes.remove(&prev.key, &old_terms);
                        share_prev(prev, &old);
                    }
                }
                Event::Progress { .. } => return,
            }
            let event = Arc::new(event);
            let key: &str = match event.as_ref() {
                Event::Put { kv, .. } => &kv.key,
                Event::Delete { prev, .. } => &prev.key,
                Event::Progress { .. } => return,
            };
            if let Some(o) = &self.observer {
                o.received(key);
            }
            let before = st.window.capacity();
            st.window.push(Instant::now(), event.clone());
            if let Some(o) = &self.observer
                && st.window.capacity() != before
            {
                o.capacity(before, st.window.capacity());
            }
            st.revision = revision;
            // Readers are woken by [`Shared::publish`] after the run of events.
            let mut dead = Vec::new();
            for w in &st.watchers {
                if !key.starts_with(&w.prefix) {
                    continue;
                }
                match w.tx.try_send(event.clone()) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(e)) => {
                        blocked.push((w.id, w.tx.clone(), e));
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => dead.push(w.id),
                }
            }
            if !dead.is_empty() {
                st.watchers.retain(|w| !dead.contains(&w.id));
            }
            event
        };
        if !blocked.is_empty() {
            // Readers need not wait for slow watchers.
            self.publish();
            // Every blocked watcher waits at once, until the same deadline (upstream's shared
            // timer): one that drains its own buffer in time gets the event, however long the
            // others stay stuck; only a watcher whose own buffer is still full then is closed.
            let available = budget.take();
            let started = Instant::now();
            let deadline = tokio::time::Instant::from_std(started + available);
            let sends = blocked.into_iter().map(|(id, tx, e)| async move {
                match tokio::time::timeout_at(deadline, tx.send(e)).await {
                    Ok(Ok(())) => None,
                    // The watcher went away.
                    Ok(Err(_)) => Some((id, false)),
                    Err(_) => Some((id, true)),
                }
            });
            let dead: Vec<_> = futures::future::join_all(sends)
                .await
                .into_iter()
                .flatten()
                .collect();
            budget.give_back(available.saturating_sub(started.elapsed()));
            if !dead.is_empty() {
                let mut st = self.write();
                for w in &st.watchers {
                    if dead.contains(&(w.id, true)) {
                        tracing::info!(
                            prefix = w.prefix,
                            watcher = w.id,
                            "Forcing watcher close due to unresponsiveness: len(input) = {}",
                            self.watcher_buffer - w.tx.capacity()
                        );
                        w.force_close();
                        if let Some(o) = &self.observer {
                            o.watcher_terminated(&w.prefix);
                        }
                    }
                }
                st.watchers
                    .retain(|w| !dead.contains(&(w.id, true)) && !dead.contains(&(w.id, false)));
            }
        }
        if let Some(o) = &self.observer {
            match event.as_ref() {
                Event::Put { kv, .. } => o.dispatched(&kv.key),
                Event::Delete { prev, .. } => o.dispatched(&prev.key),
                Event::Progress { .. } => {}
            }
        }
        self.dispatched.fetch_max(revision, Ordering::AcqRel);
    }

    /// Wakes readers waiting for the cache to catch up, with its current revision.
    fn publish(&self) {
        let revision = self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .revision;
        self.revision.send_if_modified(|r| {
            let changed = *r != revision;
            *r = revision;
            changed
        });
    }

    /// The feed broke: every watcher ends (its client re-lists or re-watches) and requests go
    /// to the engine until the next list is loaded.
    fn reset(&self) {
        let mut st = self.write();
        st.ready = false;
        for w in st.watchers.drain(..) {
            w.force_close();
        }
        st.items = BTreeMap::new();
        st.indexes = Indexes::default();
        st.window = Window::new(st.revision);
    }
}

/// Upstream's `timeBudget`: how long the dispatcher may wait on full watcher buffers, refilled
/// over time so that one slow watcher cannot stall the feed for long.
struct Budget {
    available: Duration,
    refilled: Instant,
}

impl Budget {
    fn new() -> Self {
        Budget {
            available: BUDGET_MAX,
            refilled: Instant::now(),
        }
    }

    fn take(&mut self) -> Duration {
        let now = Instant::now();
        let earned = BUDGET_MAX.mul_f64(now.duration_since(self.refilled).as_secs_f64());
        self.refilled = now;
        let total = (self.available + earned).min(BUDGET_MAX);
        self.available = Duration::ZERO;
        total
    }

    fn give_back(&mut self, unused: Duration) {
        self.available = (self.available + unused).min(BUDGET_MAX);
    }
}

/// Forwards a watcher's history, then its live events, to its client; ends when its buffer is
/// closed (too slow, or the cache reset) or the client goes away, and then forgets its slot
/// at once (upstream's `cacheWatcher.Stop` removes the watcher from the dispatcher's set): a
/// closed watcher's slot and channel are not kept until an event for its prefix happens to
/// arrive.
async fn run_watcher(
    // The watcher's id in the dispatcher's set, and what a forced close notifies.
    (id, stop): (u64, Arc<Notify>),
    history: Vec<Arc<Event>>,
    input: mpsc::Receiver<Arc<Event>>,
    out: mpsc::Sender<Result<Event, StorageError>>,
    after: Revision,
    progress: Option<Duration>,
    shared: Weak<Shared>,
) {
    // A forced close ends the watcher wherever it waits (for an event, or for its client),
    // and its buffers are dropped with it; so does the client going away while the watcher
    // waits for an event.
    let client = out.clone();
    tokio::select! {
        () = stop.notified() => {}
        () = client.closed() => {}
        () = forward(history, input, out, after, progress, shared.clone()) => {}
    }
    if let Some(s) = shared.upgrade() {
        s.write().watchers.retain(|w| w.id != id);
    }
}

async fn forward(
    history: Vec<Arc<Event>>,
    mut input: mpsc::Receiver<Arc<Event>>,
    out: mpsc::Sender<Result<Event, StorageError>>,
    after: Revision,
    progress: Option<Duration>,
    shared: Weak<Shared>,
) {
    let mut last = after;
    for e in history {
        if out.send(Ok((*e).clone())).await.is_err() {
            return;
        }
        last = e.revision();
    }
    loop {
        let next = match progress {
            Some(every) => tokio::time::timeout(every, input.recv()).await.ok(),
            None => Some(input.recv().await),
        };
        let event = match next {
            Some(Some(e)) => e,
            Some(None) => return,
            None => {
                // Idle: read the dispatched revision, then make sure nothing arrived meanwhile.
                let Some(s) = shared.upgrade() else { return };
                let at = s.dispatched.load(Ordering::Acquire);
                drop(s);
                match input.try_recv() {
                    Ok(e) => e,
                    Err(mpsc::error::TryRecvError::Disconnected) => return,
                    Err(mpsc::error::TryRecvError::Empty) => {
                        let at = at.max(last);
                        if out
                            .send(Ok(Event::Progress { revision: at }))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        last = at;
                        continue;
                    }
                }
            }
        };
        if event.revision() <= last {
            continue;
        }
        last = event.revision();
        if out.send(Ok((*event).clone())).await.is_err() {
            return;
        }
    }
}

#[async_trait]
impl Store for CacheStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.get_with(key, Freshness::Consistent).await
    }

    async fn get_with(
        &self,
        key: &str,
        freshness: Freshness,
    ) -> Result<Option<KeyValue>, StorageError> {
        if !self.covers(key) {
            return self.inner.get_with(key, freshness).await;
        }
        if !self.fresh(freshness, key).await? {
            self.not_reached(freshness)?;
            return self.inner.get_with(key, freshness).await;
        }
        let st = self.read();
        Ok(st.items.get_key_value(key).map(|(k, e)| KeyValue {
            key: k.to_string(),
            value: e.value.clone(),
            create_revision: e.create_revision,
            mod_revision: e.mod_revision,
            decoded: Decoded::default(),
        }))
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        if !self.covers(&request.prefix) {
            return self.inner.list(request).await;
        }
        let indexed = self.shared.indexer.is_some();
        if let Some(at) = request.revision {
            // An exact revision: the cache's own snapshot, else the engine (as upstream).
            {
                let st = self.read();
                if st.ready && st.revision == at {
                    return Ok(Self::list_cached(&st, &request, indexed));
                }
            }
            return self.inner.list(request).await;
        }
        if !self.fresh(request.freshness, &request.prefix).await? {
            self.not_reached(request.freshness)?;
            return self.inner.list(request).await;
        }
        let st = self.read();
        Ok(Self::list_cached(&st, &request, indexed))
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        self.inner.create(key, value).await
    }

    async fn create_decoded(
        &self,
        key: &str,
        value: Bytes,
        decoding: &(dyn Fn() -> Decoded + Send + Sync),
    ) -> Result<Revision, StorageError> {
        if self.shared.indexer.is_none()
            || !self.covers(key)
            || !self.inner.events_carry_written_values()
        {
            return self.inner.create(key, value).await;
        }
        let _held = {
            let mut written = self.shared.held_decodings();
            written
                .entry(key.to_owned())
                .or_default()
                .push((value.clone(), decoding()));
            WrittenDecoding {
                shared: &self.shared,
                key,
                value: value.clone(),
            }
        };
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
    ) -> Result<(KeyValue, Revision), StorageError> {
        self.inner.delete(key, expected).await
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        if !self.covers(&request.prefix) {
            return self.inner.watch(request).await;
        }
        let (tx, input) = mpsc::channel(self.shared.watcher_buffer);
        let stop = Arc::new(Notify::new());
        let registered = {
            let mut st = self.shared.write();
            if st.ready {
                let id = st.next_id;
                let history = st.window.since(request.after);
                if history.is_ok() {
                    st.next_id += 1;
                    st.watchers.push(WatcherSlot {
                        id,
                        prefix: request.prefix.clone(),
                        tx,
                        stop: stop.clone(),
                    });
                }
                Some(history.map(|h| (id, h)))
            } else {
                None
            }
        };
        let history = match registered {
            None => return self.inner.watch(request).await,
            Some(Err(floor)) => {
                return Err(StorageError::Compacted {
                    requested: request.after,
                    compacted: floor + 1,
                });
            }
            Some(Ok(registered)) => registered,
        };
        let (id, history) = history;
        let history = history
            .into_iter()
            .filter(|e| match e.as_ref() {
                Event::Put { kv, .. } => kv.key.starts_with(&request.prefix),
                Event::Delete { prev, .. } => prev.key.starts_with(&request.prefix),
                Event::Progress { .. } => false,
            })
            .collect();
        let (out, rx) = mpsc::channel(16);
        tokio::spawn(run_watcher(
            (id, stop),
            history,
            input,
            out,
            request.after,
            request.progress_interval.filter(|d| !d.is_zero()),
            Arc::downgrade(&self.shared),
        ));
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    fn stale(&self, key: &str, revision: Revision) -> bool {
        self.inner.stale(key, revision)
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await?;
        // History before the compaction is gone for the cache's watches too.
        self.shared.write().window.forget_through(revision - 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
