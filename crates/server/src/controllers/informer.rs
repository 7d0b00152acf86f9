//! The informer: how every controller reads the world. One informer follows one key prefix of a
//! [`Store`] and keeps a local cache of its decoded objects, as client-go's reflector, store and
//! shared informer do together:
//!
//! 1. a paged list ([`Informer::page_size`] keys per request; every page after the first reads at
//!    the first page's revision and continues after the last key, so the list is one consistent
//!    snapshot);
//! 2. a watch from the list's revision;
//! 3. on a compacted revision (etcd's 410), a relist, diffed against the cache so that consumers
//!    see only the changes they missed; on other watch failures, a new watch from the last
//!    revision seen. Retries back off exponentially ([`INITIAL_BACKOFF`] to [`MAX_BACKOFF`]).
//!
//! Consumers pull [`Notification`]s with [`Informer::next`]: a [`Change`] (Added, Modified or
//! Deleted, with the old and new objects) per key, and once, after the first list's changes,
//! [`Notification::Synced`]. The cache ([`Cache`], a cheap cloneable read handle keyed by storage
//! key) reflects every change delivered so far.
//!
//! Architecture Invariant: controllers read the world only through informers (and point reads of
//! the object they are about to write); no controller lists a whole prefix in one request or
//! polls on a timer.
//!
//! Architecture Invariant: when [`Informer::next`] returns a change, the cache already holds its
//! result, and every earlier change; nothing else writes the cache.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crd_storage::{Event, KeyValue, ListRequest, Revision, StorageError, Store, WatchRequest};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::registry::meta;

/// How many keys one list request reads by default.
pub const PAGE: usize = 500;

/// The first wait before a relist or a new watch after a failure.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(100);

/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// A watch that ran this long before failing retries after [`INITIAL_BACKOFF`] again.
const STABLE: Duration = Duration::from_mins(1);

/// Turns stored bytes into the cached object; `None` leaves the key out of the cache (logged).
pub type Decode<T> = Arc<dyn Fn(&KeyValue) -> Option<T> + Send + Sync>;

/// Decodes a stored JSON object and sets `metadata.resourceVersion` from the key's modification
/// revision, as a read through the API would show it.
pub fn decode_json(kv: &KeyValue) -> Option<Value> {
    let mut obj: Value = serde_json::from_slice(&kv.value).ok()?;
    if !obj.is_object() {
        return None;
    }
    meta::set_resource_version(&mut obj, kv.mod_revision);
    Some(obj)
}

/// What [`Informer::next`] delivers.
#[derive(Debug)]
pub enum Notification<T> {
    /// A key changed.
    Changed(Change<T>),
    /// Every key of the first list has been delivered (once per informer, even when the list was
    /// empty): the cache now holds a complete view of the prefix.
    Synced,
}

impl<T> Clone for Notification<T> {
    fn clone(&self) -> Self {
        match self {
            Notification::Changed(c) => Notification::Changed(c.clone()),
            Notification::Synced => Notification::Synced,
        }
    }
}

/// A change to one key, as a consumer of an informer sees it.
#[derive(Debug)]
pub enum Change<T> {
    /// The key appeared (or was seen for the first time by this informer).
    Added {
        /// The storage key.
        key: String,
        /// The object now stored.
        new: Arc<T>,
    },
    /// The key's object changed.
    Modified {
        /// The storage key.
        key: String,
        /// The object the cache held before.
        old: Arc<T>,
        /// The object now stored.
        new: Arc<T>,
    },
    /// The key went away (deleted, or found missing by a relist).
    Deleted {
        /// The storage key.
        key: String,
        /// The last object the cache held.
        old: Arc<T>,
    },
}

impl<T> Clone for Change<T> {
    fn clone(&self) -> Self {
        match self {
            Change::Added { key, new } => Change::Added {
                key: key.clone(),
                new: new.clone(),
            },
            Change::Modified { key, old, new } => Change::Modified {
                key: key.clone(),
                old: old.clone(),
                new: new.clone(),
            },
            Change::Deleted { key, old } => Change::Deleted {
                key: key.clone(),
                old: old.clone(),
            },
        }
    }
}

impl<T> Change<T> {
    /// The storage key the change is about.
    pub fn key(&self) -> &str {
        match self {
            Change::Added { key, .. }
            | Change::Modified { key, .. }
            | Change::Deleted { key, .. } => key,
        }
    }

    /// The latest known object: the new one, or the last one for a deletion.
    pub fn object(&self) -> &Arc<T> {
        match self {
            Change::Added { new, .. } | Change::Modified { new, .. } => new,
            Change::Deleted { old, .. } => old,
        }
    }
}

#[derive(Clone)]
struct Entry<T> {
    revision: Revision,
    object: Arc<T>,
}

/// A read handle on an informer's cache: the decoded objects under the prefix, keyed by storage
/// key, as of the last change the informer delivered. Cloning is cheap; every clone sees the same
/// cache.
pub struct Cache<T> {
    inner: Arc<RwLock<BTreeMap<String, Entry<T>>>>,
}

impl<T> Clone for Cache<T> {
    fn clone(&self) -> Self {
        Cache {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for Cache<T> {
    fn default() -> Self {
        Cache {
            inner: Arc::default(),
        }
    }
}

impl<T> fmt::Debug for Cache<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache").field("len", &self.len()).finish()
    }
}

impl<T> Cache<T> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Entry<T>>> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Entry<T>>> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached object of a key.
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        self.read().get(key).map(|e| e.object.clone())
    }

    /// The modification revision of a key's cached object.
    pub fn revision(&self, key: &str) -> Option<Revision> {
        self.read().get(key).map(|e| e.revision)
    }

    /// Every cached object with its key, in key order.
    pub fn list(&self) -> Vec<(String, Arc<T>)> {
        self.read()
            .iter()
            .map(|(k, e)| (k.clone(), e.object.clone()))
            .collect()
    }

    /// The cached objects whose keys start with `prefix`, in key order (a range of the cache,
    /// not a scan of all of it).
    pub fn under(&self, prefix: &str) -> Vec<(String, Arc<T>)> {
        self.read()
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, e)| (k.clone(), e.object.clone()))
            .collect()
    }

    /// Every cached key, in key order.
    pub fn keys(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// How many keys are cached.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }
}

/// A list in progress: its pages so far. Kept in the informer so that [`Informer::next`] stays
/// cancel-safe (a dropped call re-sends the page request it was waiting for).
struct Listing<T> {
    revision: Option<Revision>,
    start_after: Option<String>,
    items: BTreeMap<String, Entry<T>>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            revision: None,
            start_after: None,
            items: BTreeMap::new(),
        }
    }
}

enum Phase {
    /// A (re)list is needed or in progress.
    List,
    /// A watch must be opened from `Informer::revision`.
    Watch,
    /// Events are flowing.
    Watching(crd_storage::WatchStream),
}

/// What the informer does after a failure.
#[derive(Clone, Copy)]
enum Retry {
    /// Start over with a new list (the revision is compacted).
    Relist,
    /// Open a new watch from the last revision seen.
    Rewatch,
}

/// Follows one key prefix of a store: paged list, watch from the list's revision, relist on
/// compaction, and a local cache. See the module documentation.
pub struct Informer<T> {
    store: Arc<dyn Store>,
    prefix: String,
    decode: Decode<T>,
    page_size: usize,
    shutdown: watch::Receiver<bool>,
    cache: Cache<T>,
    /// Changes computed but not yet delivered (nor applied to the cache), with their revisions.
    pending: VecDeque<(Change<T>, Revision)>,
    listing: Option<Listing<T>>,
    phase: Phase,
    /// The revision the cache (plus `pending`) reflects.
    revision: Revision,
    backoff: Duration,
    retry_at: Option<Instant>,
    /// When the current watch was opened.
    watching_since: Option<Instant>,
    /// A list finished; [`Notification::Synced`] follows its changes.
    listed: bool,
    synced: watch::Sender<bool>,
}

impl<T> fmt::Debug for Informer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Informer")
            .field("prefix", &self.prefix)
            .field("revision", &self.revision)
            .field("cached", &self.cache.len())
            .field("synced", &*self.synced.borrow())
            .finish_non_exhaustive()
    }
}

impl Informer<Value> {
    /// An informer of JSON objects (with `metadata.resourceVersion` set) under `prefix`.
    pub fn json(
        store: Arc<dyn Store>,
        prefix: impl Into<String>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Informer::new(store, prefix, Arc::new(decode_json), shutdown)
    }
}

impl<T: Send + Sync + 'static> Informer<T> {
    /// An informer of the keys under `prefix`, decoded by `decode`. Nothing is read until the
    /// first call to [`Informer::next`]; [`Informer::next`] returns `None` once `shutdown` is true
    /// (or its sender is gone).
    pub fn new(
        store: Arc<dyn Store>,
        prefix: impl Into<String>,
        decode: Decode<T>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Informer {
            store,
            prefix: prefix.into(),
            decode,
            page_size: PAGE,
            shutdown,
            cache: Cache::default(),
            pending: VecDeque::new(),
            listing: None,
            phase: Phase::List,
            revision: 0,
            backoff: INITIAL_BACKOFF,
            retry_at: None,
            watching_since: None,
            listed: false,
            synced: watch::Sender::new(false),
        }
    }

    /// Sets how many keys one list request reads (at least 1).
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// The key prefix this informer follows.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A read handle on the cache.
    pub fn cache(&self) -> Cache<T> {
        self.cache.clone()
    }

    /// Whether [`Notification::Synced`] has been delivered: every key that existed when the
    /// informer started has been handed out by [`Informer::next`] and is in the cache.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// A receiver that turns true when [`Informer::has_synced`] does.
    pub fn synced(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    /// The revision the delivered changes reach (the list's revision, then each event's).
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Waits for the next change (or the one-time [`Notification::Synced`]), listing, watching
    /// and relisting as needed. Returns `None` at shutdown. Cancel-safe: dropping the future loses
    /// nothing.
    pub async fn next(&mut self) -> Option<Notification<T>> {
        loop {
            if *self.shutdown.borrow() {
                return None;
            }
            if let Some((change, revision)) = self.pending.pop_front() {
                self.apply(&change, revision);
                return Some(Notification::Changed(change));
            }
            if self.listed && !self.has_synced() {
                self.synced.send_replace(true);
                return Some(Notification::Synced);
            }
            if let Some(at) = self.retry_at {
                until_shutdown(&mut self.shutdown, tokio::time::sleep_until(at)).await?;
                self.retry_at = None;
            }
            match self.phase {
                Phase::List => self.list_page().await?,
                Phase::Watch => self.open_watch().await?,
                Phase::Watching(_) => self.watch_event().await?,
            }
        }
    }

    /// Opens the watch from the revision reached. Returns `None` at shutdown.
    async fn open_watch(&mut self) -> Option<()> {
        let request = WatchRequest {
            prefix: self.prefix.clone(),
            after: self.revision,
            progress_interval: None,
        };
        let opened = until_shutdown(&mut self.shutdown, self.store.watch(request)).await?;
        match opened {
            Ok(stream) => {
                self.phase = Phase::Watching(stream);
                self.watching_since = Some(Instant::now());
            }
            Err(e) => self.fail(&e, Retry::Rewatch),
        }
        Some(())
    }

    /// Waits for one watch event and queues its change. Returns `None` at shutdown.
    async fn watch_event(&mut self) -> Option<()> {
        let Phase::Watching(stream) = &mut self.phase else {
            return Some(());
        };
        let item = until_shutdown(&mut self.shutdown, stream.next()).await?;
        match item {
            Some(Ok(event)) => self.observe(event),
            Some(Err(e)) => self.fail(&e, Retry::Rewatch),
            None => {
                tracing::debug!(prefix = %self.prefix, "watch ended; watching again");
                self.phase = Phase::Watch;
                self.schedule_retry();
            }
        }
        Some(())
    }

    /// Reads one page of the current list; after the last page, queues the differences against
    /// the cache and moves on to watching. Returns `None` at shutdown.
    async fn list_page(&mut self) -> Option<()> {
        let listing = self.listing.get_or_insert_with(Listing::default);
        let request = ListRequest {
            prefix: self.prefix.clone(),
            start_after: listing.start_after.clone(),
            limit: Some(self.page_size),
            revision: listing.revision,
            ..ListRequest::default()
        };
        let page = until_shutdown(&mut self.shutdown, self.store.list(request)).await?;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                self.fail(&e, Retry::Relist);
                return Some(());
            }
        };
        let listing = self.listing.get_or_insert_with(Listing::default);
        listing.revision = Some(page.revision);
        listing.start_after = page.items.last().map(|kv| kv.key.clone());
        for kv in &page.items {
            if let Some(obj) = (self.decode)(kv) {
                listing.items.insert(
                    kv.key.clone(),
                    Entry {
                        revision: kv.mod_revision,
                        object: Arc::new(obj),
                    },
                );
            } else {
                tracing::warn!(key = %kv.key, "informer cannot decode a stored object");
            }
        }
        if page.remaining > 0 && !page.items.is_empty() {
            return Some(());
        }
        let listing = self.listing.take().unwrap_or_default();
        self.replace(listing.items);
        self.revision = page.revision;
        self.phase = Phase::Watch;
        self.listed = true;
        Some(())
    }

    /// Queues the changes that turn the cache into `items` (a complete list).
    fn replace(&mut self, mut items: BTreeMap<String, Entry<T>>) {
        self.pending.clear();
        let cached = self.cache.read();
        let mut changes = Vec::new();
        for (key, old) in cached.iter() {
            match items.remove(key) {
                None => changes.push((
                    Change::Deleted {
                        key: key.clone(),
                        old: old.object.clone(),
                    },
                    old.revision,
                )),
                Some(new) if new.revision != old.revision => changes.push((
                    Change::Modified {
                        key: key.clone(),
                        old: old.object.clone(),
                        new: new.object,
                    },
                    new.revision,
                )),
                Some(_) => {}
            }
        }
        drop(cached);
        for (key, new) in items {
            changes.push((
                Change::Added {
                    key,
                    new: new.object,
                },
                new.revision,
            ));
        }
        self.pending.extend(changes);
    }

    /// Turns one watch event into a pending change.
    fn observe(&mut self, event: Event) {
        self.backoff = INITIAL_BACKOFF;
        self.revision = self.revision.max(event.revision());
        let change = match event {
            Event::Put { kv, .. } => {
                let old = self.cache.get(&kv.key);
                match ((self.decode)(&kv), old) {
                    (Some(new), None) => Change::Added {
                        key: kv.key,
                        new: Arc::new(new),
                    },
                    (Some(new), Some(old)) => Change::Modified {
                        key: kv.key,
                        old,
                        new: Arc::new(new),
                    },
                    (None, old) => {
                        tracing::warn!(key = %kv.key, "informer cannot decode a stored object");
                        let Some(old) = old else { return };
                        Change::Deleted { key: kv.key, old }
                    }
                }
            }
            Event::Delete { prev, .. } => {
                let Some(old) = self.cache.get(&prev.key) else {
                    return;
                };
                Change::Deleted { key: prev.key, old }
            }
            Event::Progress { .. } => return,
        };
        let revision = self.revision;
        self.pending.push_back((change, revision));
    }

    fn apply(&self, change: &Change<T>, revision: Revision) {
        let mut cache = self.cache.write();
        match change {
            Change::Added { key, new } | Change::Modified { key, new, .. } => {
                cache.insert(
                    key.clone(),
                    Entry {
                        revision,
                        object: new.clone(),
                    },
                );
            }
            Change::Deleted { key, .. } => {
                cache.remove(key);
            }
        }
    }

    fn fail(&mut self, error: &StorageError, retry: Retry) {
        let relist = matches!(retry, Retry::Relist)
            || matches!(
                error,
                StorageError::Compacted { .. } | StorageError::FutureRevision { .. }
            );
        if relist {
            tracing::info!(prefix = %self.prefix, error = %error, "informer relisting");
            self.listing = None;
            self.phase = Phase::List;
        } else {
            tracing::warn!(prefix = %self.prefix, error = %error, "informer watching again");
            self.phase = Phase::Watch;
        }
        self.schedule_retry();
    }

    fn schedule_retry(&mut self) {
        // A watch that ran for a while before failing starts the backoff over.
        if self
            .watching_since
            .take()
            .is_some_and(|since| since.elapsed() >= STABLE)
        {
            self.backoff = INITIAL_BACKOFF;
        }
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }
}

/// Runs `f` unless `shutdown` turns true first (or its sender goes away): `None` then.
pub async fn until_shutdown<F: Future>(
    shutdown: &mut watch::Receiver<bool>,
    f: F,
) -> Option<F::Output> {
    tokio::pin!(f);
    loop {
        if *shutdown.borrow_and_update() {
            return None;
        }
        tokio::select! {
            out = &mut f => return Some(out),
            changed = shutdown.changed() => if changed.is_err() { return None },
        }
    }
}

#[cfg(test)]
mod tests;
