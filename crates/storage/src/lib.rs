//! The storage interface of crd-apiserver and its engines.
//!
//! The interface has the semantics kube-apiserver expects from etcd: string keys, one global
//! revision that increases with every write and becomes `metadata.resourceVersion`,
//! compare-and-swap on a key's modification revision, range reads by prefix with a limit and at
//! a past revision, and watch from a revision with history and compaction.
//!
//! # Layout
//! - [`Store`]: the one trait every engine implements.
//! - `sqlite::SqliteStore` (feature `sqlite`): the embedded engine (a kine-style log table in
//!   `SQLite`, group commit).
//! - `etcd::EtcdStore` (feature `etcd`): etcd, with kube-apiserver's key layout.
//! - [`fanout::FanoutStore`]: serves many watches from one engine watch.
//! - [`hook::HookStore`]: forwards to another store, running hooks around lists, updates and
//!   revision requests (how tests interleave or hold back storage calls).
//! - [`cache::CacheStore`]: the watch cache (kube-apiserver's cacher): gets, lists and watches
//!   served from memory, with secondary indexes.
//! - [`conformance`]: the suite every engine must pass (feature `conformance`, and in tests).
//!
//! Architecture Invariant: this crate knows nothing of Kubernetes objects; values are bytes.

use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;

pub mod cache;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod encryption;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod fanout;
pub mod hook;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(test)]
mod test_support;

// The crate's tests run the conformance suite on SQLite; they must never compile to nothing.
// (The self dev-dependency in Cargo.toml turns the feature on for `cargo test`.)
#[cfg(all(test, not(feature = "sqlite")))]
compile_error!("crd-storage's tests need the `sqlite` feature");

/// A global, monotonically increasing write counter; `metadata.resourceVersion` is its decimal form.
pub type Revision = i64;

/// One stored key with its value and the revisions that created and last modified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key, for example `/registry/stable.example.com/crontabs/default/a`.
    pub key: String,
    /// The stored bytes, exactly as written.
    pub value: Bytes,
    /// The revision of the write that created this key (since its last deletion).
    pub create_revision: Revision,
    /// The revision of the latest write to this key.
    pub mod_revision: Revision,
    /// What a reader already decoded from `value` (the watch cache attaches its indexer's
    /// decoding to the events it hands out), so that later readers of the same event need not
    /// parse the bytes again. Empty from the engines; never part of equality.
    pub decoded: Decoded,
}

/// A value derived from a [`KeyValue`]'s bytes by whoever read them first, shared by reference
/// with every clone of the key-value. This crate never looks inside values: it only carries the
/// decoding, whose type the reader that made it and the readers that use it agree on (a reader
/// that finds none, or another type, decodes the bytes itself).
#[derive(Clone, Default)]
pub struct Decoded(Option<Arc<dyn Any + Send + Sync>>);

impl Decoded {
    /// Carries `value`.
    pub fn new<T: Any + Send + Sync>(value: Arc<T>) -> Self {
        Decoded(Some(value))
    }

    /// The carried value, if there is one of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.as_deref()?.downcast_ref()
    }
}

impl fmt::Debug for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Decoded(..)"
        } else {
            "Decoded(None)"
        })
    }
}

/// Always equal: a decoding is derived from the bytes, which [`KeyValue`]'s equality compares.
impl PartialEq for Decoded {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Decoded {}

/// A change seen by a watch, in revision order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A key was created or updated; `kv.mod_revision` is the event's revision.
    Put {
        /// The new state.
        kv: KeyValue,
        /// The state before the write, `None` when the key was created.
        prev: Option<KeyValue>,
    },
    /// A key was deleted at `revision`; `prev` is its last state before the deletion.
    Delete {
        /// The last state of the key.
        prev: KeyValue,
        /// The revision of the deletion.
        revision: Revision,
    },
    /// Every event up to and including `revision` that matches the watch has been delivered.
    /// Engines send it only when the watch asked for progress notifications.
    Progress {
        /// The revision the watch has caught up with.
        revision: Revision,
    },
}

impl Event {
    /// The revision this event happened at.
    pub fn revision(&self) -> Revision {
        match self {
            Event::Put { kv, .. } => kv.mod_revision,
            Event::Delete { revision, .. } | Event::Progress { revision } => *revision,
        }
    }
}

/// A range read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// Only keys starting with this prefix are returned.
    pub prefix: String,
    /// Only keys strictly greater than this one are returned (for paging).
    pub start_after: Option<String>,
    /// At most this many items; `None` or `Some(0)` means no limit.
    pub limit: Option<usize>,
    /// Read the state as of this revision; `None` reads the latest state.
    pub revision: Option<Revision>,
    /// With `revision: None`, how fresh the state must be. Engines read the latest state and
    /// fail with [`StorageError::FutureRevision`] when it is older ([`Freshness::check`]); a
    /// cache may answer from an older state that satisfies it, and waits for a newer one.
    pub freshness: Freshness,
    /// Index terms `(index name, value)` every item the caller wants has (for example a label
    /// selector's `app=web`). A hint only: the caller still filters, and a store may return
    /// items without the terms (engines ignore it); a cache with these indexes returns only
    /// items that have them, and `remaining` then counts only those.
    pub index_terms: Vec<(String, String)>,
}

/// How fresh a list at the latest revision must be (`resourceVersion` on a list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Freshness {
    /// `resourceVersion=""`: consistent, at least the store's current revision when the read
    /// began (upstream's consistent read from cache).
    #[default]
    Consistent,
    /// `resourceVersion=N` (`NotOlderThan`), or `0` (any): at least this revision.
    NotOlderThan(Revision),
}

impl Freshness {
    /// Whether a state at `current` satisfies this freshness: a revision the store has not
    /// reached fails with [`StorageError::FutureRevision`] naming `current`, as kube-apiserver's
    /// etcd3 store refuses a read it cannot answer (engines read the latest state, so this is
    /// their only way to miss a freshness).
    pub fn check(self, current: Revision) -> Result<(), StorageError> {
        match self {
            Freshness::NotOlderThan(requested) if requested > current => {
                Err(StorageError::FutureRevision { requested, current })
            }
            _ => Ok(()),
        }
    }
}

/// The answer to a [`ListRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListResponse {
    /// Matching items in ascending key order.
    pub items: Vec<KeyValue>,
    /// The revision the list reflects (the request's, or the latest when none was asked).
    pub revision: Revision,
    /// How many matching items were left out because of the limit.
    pub remaining: u64,
}

/// A paged scan of a prefix: page after page of at most `page_size` items, continuing after
/// the last key, so memory holds one page at a time. A snapshot scan reads every page at the
/// first page's revision (or the revision asked for); a [`Pages::latest`] scan reads each page
/// at the latest revision, for work that must not fail on compaction (purges, migrations).
pub struct Pages<'a> {
    store: &'a dyn Store,
    prefix: String,
    page_size: usize,
    revision: Option<Revision>,
    pinned: bool,
    start_after: Option<String>,
    done: bool,
}

impl<'a> Pages<'a> {
    /// A scan of `prefix` at `revision` (`None`: the latest, fixed by the first page).
    pub fn new(
        store: &'a dyn Store,
        prefix: impl Into<String>,
        revision: Option<Revision>,
        page_size: usize,
    ) -> Self {
        Pages {
            store,
            prefix: prefix.into(),
            page_size: page_size.max(1),
            revision,
            pinned: true,
            start_after: None,
            done: false,
        }
    }

    /// A scan of `prefix` that reads each page at the latest revision.
    pub fn latest(store: &'a dyn Store, prefix: impl Into<String>, page_size: usize) -> Self {
        Pages {
            pinned: false,
            ..Pages::new(store, prefix, None, page_size)
        }
    }

    /// The next page, or `None` after the last one.
    pub async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>, StorageError> {
        if self.done {
            return Ok(None);
        }
        let page = self
            .store
            .list(ListRequest {
                prefix: self.prefix.clone(),
                start_after: self.start_after.take(),
                limit: Some(self.page_size),
                revision: if self.pinned { self.revision } else { None },
                ..ListRequest::default()
            })
            .await?;
        self.revision = Some(page.revision);
        self.start_after = page.items.last().map(|kv| kv.key.clone());
        self.done = page.remaining == 0 || page.items.is_empty();
        if page.items.is_empty() {
            return Ok(None);
        }
        Ok(Some(page.items))
    }

    /// The revision the scan reads at, once the first page is read.
    pub fn revision(&self) -> Option<Revision> {
        self.revision
    }
}

/// Options of a watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchRequest {
    /// Only keys starting with this prefix are watched.
    pub prefix: String,
    /// Events with a revision strictly greater than this one are delivered, history first.
    pub after: Revision,
    /// When set, the engine sends [`Event::Progress`] about this often while the watch is idle.
    pub progress_interval: Option<Duration>,
}

/// A stream of watch events in revision order. It ends only when the store shuts down or the
/// watch falls too far behind (then it yields [`StorageError::Compacted`] or
/// [`StorageError::WatchLagged`] last).
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<Event, StorageError>> + Send>>;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// `create` found the key present.
    #[error("key {key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
        /// The existing state.
        existing: KeyValue,
    },
    /// `update` or `delete` found the key absent.
    #[error("key {key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// A compare-and-swap found another modification revision.
    #[error("key {key}: expected revision {expected}, found {}", current.mod_revision)]
    Conflict {
        /// The key.
        key: String,
        /// The revision the caller expected.
        expected: Revision,
        /// The state found instead.
        current: KeyValue,
    },
    /// The requested revision is older than the compaction horizon.
    #[error("revision {requested} has been compacted (compacted up to {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The compaction revision: the oldest revision still readable.
        compacted: Revision,
    },
    /// The requested revision is newer than any write.
    #[error("revision {requested} is in the future (current {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The current revision.
        current: Revision,
    },
    /// A watcher fell so far behind the live event feed that events were lost; it must restart.
    #[error("watch fell behind the event feed")]
    WatchLagged,
    /// A value is larger than the engine accepts.
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The value size.
        size: usize,
        /// The engine's limit.
        limit: usize,
    },
    /// The engine is closed or unreachable.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Any other engine failure.
    #[error("storage engine error: {0}")]
    Engine(String),
}

/// The storage interface: etcd semantics over string keys and byte values.
///
/// Every write is durable before its future resolves. Implementations are shared behind an
/// `Arc<dyn Store>` by all request handlers and controllers.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Reads the latest state of one key.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError>;

    /// Reads one key at `freshness` (a GET's `resourceVersion`): [`Freshness::Consistent`] is
    /// [`Store::get`]; `NotOlderThan(n)` may answer from a state at `n` or later (a cache
    /// answers `0` at once, without asking the engine for its revision). A revision the store
    /// has not reached fails with [`StorageError::FutureRevision`], as kube-apiserver's etcd3
    /// store refuses it. Decorators forward it, so that a cache below them sees the freshness.
    async fn get_with(
        &self,
        key: &str,
        freshness: Freshness,
    ) -> Result<Option<KeyValue>, StorageError> {
        if let Freshness::NotOlderThan(requested) = freshness
            && requested > 0
        {
            freshness.check(self.current_revision().await?)?;
        }
        self.get(key).await
    }

    /// Reads keys by prefix, in key order, at the latest or a past revision.
    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError>;

    /// Counts the keys under a prefix at the latest revision.
    async fn count(&self, prefix: &str) -> Result<u64, StorageError>;

    /// Creates a key that must not exist; returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError>;

    /// [`Store::create`] of a value whose decoding the writer can make from what it holds (it
    /// encoded the bytes from it): a store that decodes what it is given to write (the watch
    /// cache's indexer) may call `decoding` instead of parsing the bytes again. It must give
    /// what that store's own decoding of `value` would be. Others never call it.
    async fn create_decoded(
        &self,
        key: &str,
        value: Bytes,
        decoding: &(dyn Fn() -> Decoded + Send + Sync),
    ) -> Result<Revision, StorageError> {
        let _ = decoding;
        self.create(key, value).await
    }

    /// Replaces a key's value if its modification revision is `expected`; returns the new revision.
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError>;

    /// Deletes a key, if `expected` is given only at that modification revision. Returns the
    /// last state and the revision of the deletion.
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError>;

    /// Watches a prefix from a revision: history first, then live events.
    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError>;

    /// The revision of the latest write.
    async fn current_revision(&self) -> Result<Revision, StorageError>;

    /// The revision of the latest write when the store knows it without asking anyone: an
    /// embedded engine that is its data's only writer. A consistent read through the watch
    /// cache then needs no revision request (`None`, the default, means ask
    /// [`Store::current_revision`]; etcd must, as other servers may write to it).
    fn local_revision(&self) -> Option<Revision> {
        None
    }

    /// Whether the events of a write carry the very buffer written (the embedded engine hands
    /// its watchers the written `Bytes`; etcd's events are new buffers): only then can a watch
    /// cache over this store match an event with what its writer said of the value
    /// ([`Store::create_decoded`]). The default is `false`; decorators forward it.
    fn events_carry_written_values(&self) -> bool {
        false
    }

    /// Whether the value of `key` at `revision` must be written again even by an update that
    /// changes nothing (upstream's `stale` state of a transformer): it was read with an
    /// encryption key that writes no longer use, or unencrypted where writes now encrypt. The
    /// default is `false`; decorators forward it.
    fn stale(&self, key: &str, revision: Revision) -> bool {
        let _ = (key, revision);
        false
    }

    /// Forgets history before `revision`, as etcd's compaction does: a list at a revision below
    /// it, or a watch that needs an event below it (`after + 1 < revision`), fails with
    /// [`StorageError::Compacted`]. The latest state of every key is kept.
    async fn compact(&self, revision: Revision) -> Result<(), StorageError>;
}

/// Creates a directory (and its missing parents) that only its owner may read (mode 0700 on
/// Unix), as etcd creates its data dir; an existing directory keeps its mode.
pub fn create_private_dir(path: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}
