//! The embedded engine: a kine-style revision log in `SQLite`, written by one thread with group
//! commit.
//!
//! # Design
//! - Tables: `log` holds every write (put or delete) under its revision, `kv` the latest state of
//!   every live key, `meta` the current and the compaction revision. Latest-state reads use `kv`;
//!   reads at a past revision and watch history use `log`. Keys are stored as BLOBs so that prefix
//!   ranges compare bytewise.
//! - `journal_mode=WAL` and `synchronous=FULL`: a write's future resolves only after the commit
//!   that holds it has been fsynced.
//! - One writer thread owns the write connection. It takes every queued command, applies them in
//!   order in ONE transaction (each command in its own savepoint, with its checks done before its
//!   writes, so a failed compare-and-swap affects no other command), commits once, then publishes
//!   the batch's events and replies. Each successful write gets its own revision.
//! - The queue to the writer is bounded twice: at most [`QUEUE_COMMANDS`] commands wait, and the
//!   values of the commands not yet committed hold at most [`QUEUE_BYTES`]. A writer beyond either
//!   bound waits (its future is pending) until the writer thread catches up: backpressure on the
//!   request handlers instead of memory that grows with the load.
//! - Reads run on `spawn_blocking` over a small pool of read connections; WAL lets them run while
//!   the writer commits.
//! - Watch: subscribe to the live feed first, then read history from `log` up to the snapshot's
//!   revision, then deliver live events above it. The feed ([`Hub`]) hands each committed batch
//!   only to the watches whose prefix one of its keys falls under, so a write wakes its own
//!   watchers rather than every watch (a thousand resources' informers cost nothing to a write
//!   they do not watch).
//!
//! A row of `log` records `prev_revision`: the revision of the state the write replaced (`NULL`
//! for a create). Compaction at `r` keeps every row at or above `r` and, for each key, the latest
//! row below `r` unless it is a deletion; so every state readable at `r` or later, and the
//! previous state of every event at `r` or later, survive.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use crate::{
    Event, KeyValue, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest,
    WatchStream,
};

/// The largest value this engine stores: twice kube-apiserver's 3 MiB request body limit, so that
/// any object a client may send still fits after defaulting and managed fields are added.
pub const MAX_VALUE_BYTES: usize = 6 * 1024 * 1024;

/// The file name used when [`SqliteStore::open`] is given a directory.
pub const DEFAULT_FILE_NAME: &str = "state.db";

/// At most this many commands share one transaction, bounding the time a batch holds the writer.
const MAX_BATCH: usize = 1024;
/// At most this many write commands wait for the writer thread: one full batch, so the next
/// transaction is ready when the current one commits.
pub const QUEUE_COMMANDS: usize = MAX_BATCH;
/// At most this many bytes of values are queued or in the writer's current batch: ten of the
/// largest values the engine stores. A larger value than the budget waits until it is alone.
pub const QUEUE_BYTES: usize = 10 * MAX_VALUE_BYTES;
/// Live-feed capacity in batches; a watcher further behind than this gets `WatchLagged` (and its
/// client a 410, so it re-lists). Each retained batch holds its events' values, so this bounds
/// memory under sustained writes.
const EVENT_BUFFER: usize = 1024;
/// History rows read per read transaction while a watch replays history.
const HISTORY_PAGE: i64 = 512;
/// Idle read connections kept for reuse.
const MAX_IDLE_READERS: usize = 8;
/// How long a connection waits on a lock before reporting `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS log (
    revision INTEGER PRIMARY KEY,
    key BLOB NOT NULL,
    value BLOB NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS log_key_revision ON log (key, revision, deleted);
CREATE TABLE IF NOT EXISTS kv (
    key BLOB PRIMARY KEY,
    value BLOB NOT NULL,
    create_revision INTEGER NOT NULL,
    mod_revision INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO meta (name, value) VALUES ('current', 0), ('compacted', 0);
";

/// The embedded storage engine: durable, single-file, with etcd semantics.
///
/// Opened once per process and shared as `Arc<dyn Store>`. Dropping the last handle stops the
/// writer thread after it has committed the commands already queued; open watches then end.
pub struct SqliteStore {
    reads: Arc<ReadPool>,
    state: Arc<State>,
    commands: Option<mpsc::Sender<Command>>,
    /// Permits are bytes of values not yet committed.
    queue_bytes: Arc<Semaphore>,
    capacities: Capacities,
    events: Arc<Hub>,
    writer: Option<JoinHandle<()>>,
}

/// The bounds of an open store: the constants in production, small ones in tests.
#[derive(Clone, Copy, Debug)]
struct Capacities {
    /// Live-feed capacity in batches.
    events: usize,
    /// Commands waiting for the writer.
    queue_commands: usize,
    /// Bytes of values not yet committed.
    queue_bytes: usize,
}

impl Capacities {
    const DEFAULT: Capacities = Capacities {
        events: EVENT_BUFFER,
        queue_commands: QUEUE_COMMANDS,
        queue_bytes: QUEUE_BYTES,
    };
}

/// Counters the writer publishes after each commit.
struct State {
    current: AtomicI64,
    compacted: AtomicI64,
    commits: AtomicU64,
}

/// The events of one committed transaction, in revision order.
type Batch = Arc<Vec<Event>>;

/// The live feed: each committed batch goes to the watches with a key under their prefix, each
/// through a channel of its own, bounded in batches; a watch that falls that far behind is
/// dropped from the feed and fails with [`StorageError::WatchLagged`].
struct Hub {
    capacity: usize,
    /// The revision of the last batch published: every batch up to it is in the channels of
    /// the watches it concerns.
    published: Arc<AtomicI64>,
    next_id: AtomicU64,
    subscribers: Mutex<std::collections::HashMap<u64, Subscriber>>,
}

struct Subscriber {
    prefix: String,
    tx: mpsc::Sender<Batch>,
    lagged: Arc<std::sync::atomic::AtomicBool>,
}

/// One watch's end of the feed; leaves the feed when dropped.
struct Subscription {
    id: u64,
    hub: std::sync::Weak<Hub>,
    rx: mpsc::Receiver<Batch>,
    lagged: Arc<std::sync::atomic::AtomicBool>,
    published: Arc<AtomicI64>,
}

/// What a subscription received.
enum Received {
    Batch(Batch),
    Lagged,
    Closed,
}

impl Hub {
    fn new(capacity: usize, current: Revision) -> Arc<Hub> {
        Arc::new(Hub {
            capacity: capacity.max(1),
            published: Arc::new(AtomicI64::new(current)),
            next_id: AtomicU64::new(0),
            subscribers: Mutex::default(),
        })
    }

    fn subscribers(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, Subscriber>> {
        self.subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn subscribe(self: &Arc<Self>, prefix: &str) -> Subscription {
        let (tx, rx) = mpsc::channel(self.capacity);
        let lagged = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.subscribers().insert(
            id,
            Subscriber {
                prefix: prefix.to_string(),
                tx,
                lagged: Arc::clone(&lagged),
            },
        );
        Subscription {
            id,
            hub: Arc::downgrade(self),
            rx,
            lagged,
            published: Arc::clone(&self.published),
        }
    }

    /// Hands a batch to every watch it concerns.
    fn publish(&self, batch: &Batch) {
        let mut subscribers = self.subscribers();
        subscribers.retain(|_, sub| {
            let concerned = batch.iter().any(|event| {
                event_key(event).is_some_and(|key| key.starts_with(sub.prefix.as_str()))
            });
            if !concerned {
                return true;
            }
            match sub.tx.try_send(Arc::clone(batch)) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.lagged.store(true, Ordering::Release);
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
        if let Some(last) = batch.last() {
            self.published.fetch_max(last.revision(), Ordering::AcqRel);
        }
    }
}

impl Subscription {
    /// The next batch; a watch that lagged fails at once (what is still queued precedes a gap).
    async fn recv(&mut self) -> Received {
        if self.lagged.load(Ordering::Acquire) {
            return Received::Lagged;
        }
        match self.rx.recv().await {
            Some(batch) => Received::Batch(batch),
            None if self.lagged.load(Ordering::Acquire) => Received::Lagged,
            None => Received::Closed,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            hub.subscribers().remove(&self.id);
        }
    }
}

/// The key an event is about (`None` for progress notifications).
fn event_key(event: &Event) -> Option<&str> {
    match event {
        Event::Put { kv, .. } => Some(&kv.key),
        Event::Delete { prev, .. } => Some(&prev.key),
        Event::Progress { .. } => None,
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `dir_or_file` and starts its writer thread.
    ///
    /// `dir_or_file` is the database file, for example `data_dir/state.db`; missing parent
    /// directories are created. An existing directory is taken to mean the file
    /// [`DEFAULT_FILE_NAME`] inside it.
    pub fn open(dir_or_file: &Path) -> Result<Arc<SqliteStore>, StorageError> {
        Self::open_with(dir_or_file, Capacities::DEFAULT)
    }

    /// [`SqliteStore::open`] with other bounds.
    fn open_with(
        dir_or_file: &Path,
        capacities: Capacities,
    ) -> Result<Arc<SqliteStore>, StorageError> {
        let path = if dir_or_file.is_dir() {
            dir_or_file.join(DEFAULT_FILE_NAME)
        } else {
            dir_or_file.to_path_buf()
        };
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            crate::create_private_dir(parent).map_err(|e| {
                StorageError::Unavailable(format!("creating {}: {e}", parent.display()))
            })?;
        }
        // Secrets are stored here: the file is the owner's alone (SQLite gives its WAL and
        // shared-memory files the database file's mode), as etcd keeps its data private.
        if !path.exists() {
            let mut new = std::fs::OpenOptions::new();
            new.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut new, 0o600);
            match new.open(&path) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(StorageError::Unavailable(format!(
                        "creating {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        let conn = Connection::open(&path)
            .map_err(|e| StorageError::Unavailable(format!("opening {}: {e}", path.display())))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(engine)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(engine)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StorageError::Engine(format!(
                "{} refused write-ahead logging (journal mode {mode})",
                path.display()
            )));
        }
        // FULL: the WAL is fsynced at every commit. The size limit truncates the WAL file after
        // a checkpoint so that a burst of writes does not leave it large for good.
        conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA journal_size_limit=67108864;")
            .map_err(engine)?;
        conn.execute_batch(SCHEMA).map_err(engine)?;
        // Every statement the writer runs stays compiled (rusqlite keeps 16 by default).
        conn.set_prepared_statement_cache_capacity(32);
        let (current, compacted) = {
            let (meta_current, compacted) = read_meta(&conn).map_err(engine)?;
            let log_max: Option<i64> = conn
                .query_row("SELECT max(revision) FROM log", [], |row| row.get(0))
                .map_err(engine)?;
            (meta_current.max(log_max.unwrap_or(0)), compacted)
        };

        let state = Arc::new(State {
            current: AtomicI64::new(current),
            compacted: AtomicI64::new(compacted),
            commits: AtomicU64::new(0),
        });
        let events = Hub::new(capacities.events, current);
        let (tx, mut rx) = mpsc::channel(capacities.queue_commands.max(1));
        let writer = Writer {
            conn,
            current,
            compacted,
            state: Arc::clone(&state),
            events: Arc::clone(&events),
        };
        let handle = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer.run(&mut rx))
            .map_err(|e| StorageError::Unavailable(format!("starting the writer thread: {e}")))?;
        let reads = Arc::new(ReadPool {
            path,
            idle: Mutex::new(Vec::new()),
            permits: tokio::sync::Semaphore::new(MAX_IDLE_READERS),
        });
        // Open one reader now so that a broken file fails here rather than on the first read.
        let first = open_reader(&reads.path)?;
        reads.idle.lock().expect("read pool poisoned").push(first);
        Ok(Arc::new(SqliteStore {
            reads,
            state,
            commands: Some(tx),
            queue_bytes: Arc::new(Semaphore::new(capacities.queue_bytes)),
            capacities,
            events,
            writer: Some(handle),
        }))
    }

    /// How many transactions the writer has committed since open; with group commit this is
    /// at most, and under concurrency far below, the number of writes.
    pub fn commit_count(&self) -> u64 {
        self.state.commits.load(Ordering::Acquire)
    }

    /// The compaction revision: lists below it and watches needing events below it fail.
    pub fn compacted_revision(&self) -> Revision {
        self.state.compacted.load(Ordering::Acquire)
    }

    /// The database file, for diagnostics.
    pub fn path(&self) -> &Path {
        &self.reads.path
    }

    /// How many write commands wait for the writer thread now (at most [`QUEUE_COMMANDS`]).
    pub fn queued_commands(&self) -> usize {
        self.commands
            .as_ref()
            .map_or(0, |c| c.max_capacity() - c.capacity())
    }

    /// How many bytes of values are queued or being committed now (at most [`QUEUE_BYTES`]).
    pub fn queued_bytes(&self) -> usize {
        self.capacities.queue_bytes - self.queue_bytes.available_permits()
    }

    /// Queues `op` for the writer, waiting while the queue is full, and waits for its outcome.
    async fn submit(&self, op: Op) -> Result<Outcome, StorageError> {
        let (reply, rx) = oneshot::channel();
        let commands = self
            .commands
            .as_ref()
            .ok_or_else(|| StorageError::Unavailable("the store is closed".into()))?;
        // A value larger than the whole budget waits for all of it rather than forever.
        let weight = op.value_len().min(self.capacities.queue_bytes);
        let bytes = Arc::clone(&self.queue_bytes)
            .acquire_many_owned(u32::try_from(weight).unwrap_or(u32::MAX))
            .await
            .map_err(|_| StorageError::Unavailable("the store is closed".into()))?;
        // The permit travels with the command and is released when the writer is done with it,
        // so an abandoned caller cannot free budget its queued command still uses.
        commands
            .send(Command { op, reply, bytes })
            .await
            .map_err(|_| StorageError::Unavailable("the writer thread has stopped".into()))?;
        rx.await
            .map_err(|_| StorageError::Unavailable("the writer thread has stopped".into()))?
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish the queued commands and exit; waiting for it
        // means the file is closed when drop returns, so the same path can be reopened at once.
        drop(self.commands.take());
        if let Some(handle) = self.writer.take()
            && handle.join().is_err()
        {
            tracing::error!("the sqlite writer thread panicked");
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.reads.path)
            .field("current", &self.state.current.load(Ordering::Relaxed))
            .field("compacted", &self.state.compacted.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let key = key.to_owned();
        self.reads
            .run(move |conn| {
                conn.prepare_cached(
                    "SELECT key, value, create_revision, mod_revision FROM kv WHERE key = ?1",
                )?
                .query_row([key.as_bytes()], kv_from_row)
                .optional()
            })
            .await
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        let freshness = request.revision.is_none().then_some(request.freshness);
        let listed = self
            .reads
            .run(move |conn| list_in(conn, &request))
            .await??;
        if let Some(freshness) = freshness {
            freshness.check(listed.revision)?;
        }
        Ok(listed)
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        let lo = prefix.as_bytes().to_vec();
        let hi = prefix_end(prefix);
        self.reads
            .run(move |conn| {
                conn.prepare_cached("SELECT count(*) FROM kv WHERE key >= ?1 AND key < ?2")?
                    .query_row(params![lo, hi], |row| row.get::<_, i64>(0))
            })
            .await
            .map(|n| n as u64)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        check_size(&value)?;
        match self
            .submit(Op::Create {
                key: key.to_owned(),
                value,
            })
            .await?
        {
            Outcome::Written(rev) => Ok(rev),
            other => Err(unexpected(&other)),
        }
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        check_size(&value)?;
        match self
            .submit(Op::Update {
                key: key.to_owned(),
                value,
                expected,
            })
            .await?
        {
            Outcome::Written(rev) => Ok(rev),
            other => Err(unexpected(&other)),
        }
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        match self
            .submit(Op::Delete {
                key: key.to_owned(),
                expected,
            })
            .await?
        {
            Outcome::Deleted(prev, rev) => Ok((prev, rev)),
            other => Err(unexpected(&other)),
        }
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        // Subscribe before reading history: every commit is then either in the history snapshot
        // or in the feed (or both, and deduplicated by revision).
        let rx = self.events.subscribe(&request.prefix);
        let after = request.after.max(0);
        let lo = request.prefix.as_bytes().to_vec();
        let hi = prefix_end(&request.prefix);
        let (snapshot, first) = {
            let (lo, hi) = (lo.clone(), hi.clone());
            self.reads
                .run(move |conn| -> rusqlite::Result<Result<_, StorageError>> {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
                    let (current, compacted) = read_meta(&tx)?;
                    if after + 1 < compacted {
                        return Ok(Err(StorageError::Compacted {
                            requested: after,
                            compacted,
                        }));
                    }
                    let page = read_history(&tx, &lo, &hi, after, current)?;
                    Ok(Ok((current, page)))
                })
                .await??
        };
        let history_done = (first.len() as i64) < HISTORY_PAGE;
        let cursor = first.last().map_or(after, Event::revision);
        let watch = Watch {
            reads: Arc::clone(&self.reads),
            rx,
            prefix: request.prefix,
            lo,
            hi,
            after,
            snapshot,
            cursor,
            history_done,
            seen: snapshot,
            queue: first.into(),
            progress: request.progress_interval.filter(|d| !d.is_zero()),
            next_progress: None,
            done: false,
        };
        Ok(Box::pin(futures::stream::unfold(
            watch,
            |mut w| async move {
                let item = w.next().await?;
                Some((item, w))
            },
        )))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.state.current.load(Ordering::Acquire))
    }

    fn local_revision(&self) -> Option<Revision> {
        // The writer stores it after each commit and before answering the writes in it; the
        // database file is this process's alone.
        Some(self.state.current.load(Ordering::Acquire))
    }

    fn events_carry_written_values(&self) -> bool {
        // A write's event holds a clone of the `Bytes` it was given (`apply`).
        true
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        match self.submit(Op::Compact { revision }).await? {
            Outcome::Compacted => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}

fn check_size(value: &Bytes) -> Result<(), StorageError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StorageError::TooLarge {
            size: value.len(),
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

fn unexpected(outcome: &Outcome) -> StorageError {
    StorageError::Engine(format!(
        "the writer answered {outcome:?} to another command"
    ))
}

#[expect(clippy::needless_pass_by_value, reason = "a `map_err` adapter")]
fn engine(e: rusqlite::Error) -> StorageError {
    StorageError::Engine(e.to_string())
}

/// The exclusive upper bound of the keys starting with `prefix`, bytewise. Keys are UTF-8, which
/// never contains the byte 0xFF, so `[0xFF]` bounds every key.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while end.last() == Some(&0xFF) {
        end.pop();
    }
    match end.last_mut() {
        Some(last) => *last += 1,
        None => end.push(0xFF),
    }
    end
}

/// Reads a [`KeyValue`] from columns `key, value, create_revision, mod_revision`.
fn kv_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyValue> {
    Ok(KeyValue {
        key: key_from(row, 0)?,
        value: Bytes::from(row.get::<_, Vec<u8>>(1)?),
        create_revision: row.get(2)?,
        mod_revision: row.get(3)?,
        decoded: crate::Decoded::default(),
    })
}

fn key_from(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<String> {
    String::from_utf8(row.get::<_, Vec<u8>>(idx)?)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Blob, Box::new(e)))
}

/// The current and the compaction revision, as of the connection's transaction.
fn read_meta(conn: &Connection) -> rusqlite::Result<(Revision, Revision)> {
    conn.prepare_cached(
        "SELECT coalesce((SELECT value FROM meta WHERE name = 'current'), 0), \
                coalesce((SELECT value FROM meta WHERE name = 'compacted'), 0)",
    )?
    .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
}

// ---------------------------------------------------------------------------------------------
// Reads

struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Bounds concurrent reads to the pooled connections: more would only add connections
    /// (each with its own page cache) and blocking threads, not throughput.
    permits: tokio::sync::Semaphore,
}

fn open_reader(path: &Path) -> Result<Connection, StorageError> {
    let conn = Connection::open(path)
        .map_err(|e| StorageError::Unavailable(format!("opening {}: {e}", path.display())))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(engine)?;
    conn.execute_batch("PRAGMA query_only=ON;")
        .map_err(engine)?;
    Ok(conn)
}

impl ReadPool {
    /// Runs `f` on a pooled read connection on the blocking thread pool.
    async fn run<T, F>(self: &Arc<Self>, f: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StorageError::Unavailable("the store is closed".into()))?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let idle = pool.idle.lock().expect("read pool poisoned").pop();
            let mut conn = match idle {
                Some(conn) => conn,
                None => open_reader(&pool.path)?,
            };
            let out = f(&mut conn).map_err(engine);
            let mut idle = pool.idle.lock().expect("read pool poisoned");
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
            out
        })
        .await
        .map_err(|e| StorageError::Engine(format!("read task failed: {e}")))?
    }
}

/// Whether a key in `[?1, ?2)` was written after revision ?3: the log read from ?3 on by its
/// primary key (the revision), so the cost is the writes since, not the size of the range.
const CHANGED_SINCE: &str = "SELECT 1 FROM log NOT INDEXED \
     WHERE revision > ?3 AND key >= ?1 AND key < ?2 LIMIT 1";

/// For the keys in `[?1, ?2)` written after revision ?3: how many exist now, and how many
/// existed at ?3. The count at ?3 is today's count minus the first plus the second.
const COUNT_CORRECTION: &str = "WITH changed AS (SELECT DISTINCT key FROM log NOT INDEXED \
         WHERE revision > ?3 AND key >= ?1 AND key < ?2) \
     SELECT (SELECT count(*) FROM kv WHERE key IN (SELECT key FROM changed)), \
            (SELECT count(*) FROM changed AS c \
             WHERE (SELECT n.deleted FROM log AS n WHERE n.key = c.key AND n.revision <= ?3 \
                    ORDER BY n.revision DESC LIMIT 1) = 0)";

fn list_in(
    conn: &mut Connection,
    request: &ListRequest,
) -> rusqlite::Result<Result<ListResponse, StorageError>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let (current, compacted) = read_meta(&tx)?;
    let revision = match request.revision {
        None => current,
        Some(r) if r > current => {
            return Ok(Err(StorageError::FutureRevision {
                requested: r,
                current,
            }));
        }
        Some(r) if r < compacted => {
            return Ok(Err(StorageError::Compacted {
                requested: r,
                compacted,
            }));
        }
        Some(r) => r,
    };
    let mut lo = request.prefix.as_bytes().to_vec();
    if let Some(start_after) = &request.start_after {
        // The least key greater than `start_after` is `start_after` followed by a zero byte.
        let mut next = start_after.as_bytes().to_vec();
        next.push(0);
        lo = lo.max(next);
    }
    let hi = prefix_end(&request.prefix);
    let limit = request.limit.filter(|&n| n > 0);
    let sql_limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    // A past revision reads like the latest when no key of the range changed after it: the
    // common case of a paged list continuing at its first page's revision.
    let latest = revision == current
        || tx
            .prepare_cached(CHANGED_SINCE)?
            .query_row(params![lo, hi, revision], |_| Ok(()))
            .optional()?
            .is_none();
    let items = if latest {
        tx.prepare_cached(
            "SELECT key, value, create_revision, mod_revision FROM kv \
             WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
        )?
        .query_map(params![lo, hi, sql_limit], kv_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?
    } else {
        // Walks the range in key order and keeps each key's last entry at or before the
        // revision, so the LIMIT ends the walk (grouping first read the whole range per page).
        tx.prepare_cached(
            "SELECT l.key, l.value, l.create_revision, l.revision FROM log AS l \
             WHERE l.key >= ?1 AND l.key < ?2 AND l.revision <= ?3 AND l.deleted = 0 \
               AND l.revision = (SELECT max(n.revision) FROM log AS n \
                                 WHERE n.key = l.key AND n.revision <= ?3) \
             ORDER BY l.key LIMIT ?4",
        )?
        .query_map(params![lo, hi, revision, sql_limit], kv_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?
    };
    let remaining = match limit {
        Some(n) if items.len() >= n => {
            let now: i64 = tx
                .prepare_cached("SELECT count(*) FROM kv WHERE key >= ?1 AND key < ?2")?
                .query_row(params![lo, hi], |row| row.get(0))?;
            // The count at a past revision is today's, corrected by the keys changed since:
            // work in proportion to the writes after the revision, not to the range.
            let total = if latest {
                now
            } else {
                let (gone, back): (i64, i64) = tx
                    .prepare_cached(COUNT_CORRECTION)?
                    .query_row(params![lo, hi, revision], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })?;
                now - gone + back
            };
            (total.max(0) as u64).saturating_sub(items.len() as u64)
        }
        _ => 0,
    };
    tx.commit()?;
    Ok(Ok(ListResponse {
        items,
        revision,
        remaining,
    }))
}

/// Up to [`HISTORY_PAGE`] events of keys in `[lo, hi)` with `after < revision <= until`.
fn read_history(
    conn: &Connection,
    lo: &[u8],
    hi: &[u8],
    after: Revision,
    until: Revision,
) -> rusqlite::Result<Vec<Event>> {
    // `+l.key` keeps the planner on the revision range, which is what a watch scans.
    let mut stmt = conn.prepare_cached(
        "SELECT l.revision, l.key, l.value, l.create_revision, l.prev_revision, l.deleted, p.value \
         FROM log AS l LEFT JOIN log AS p ON p.revision = l.prev_revision \
         WHERE l.revision > ?1 AND l.revision <= ?2 AND +l.key >= ?3 AND +l.key < ?4 \
         ORDER BY l.revision LIMIT ?5",
    )?;
    let rows = stmt.query_map(params![after, until, lo, hi, HISTORY_PAGE], |row| {
        let revision: Revision = row.get(0)?;
        let key = key_from(row, 1)?;
        let create_revision: Revision = row.get(3)?;
        let prev_revision: Option<Revision> = row.get(4)?;
        let deleted: bool = row.get(5)?;
        let prev_value: Option<Vec<u8>> = row.get(6)?;
        let prev = match (prev_revision, prev_value) {
            (Some(mod_revision), Some(value)) => Some(KeyValue {
                key: key.clone(),
                value: Bytes::from(value),
                create_revision,
                mod_revision,
                decoded: crate::Decoded::default(),
            }),
            _ => None,
        };
        Ok(if deleted {
            Event::Delete {
                prev: prev.unwrap_or_else(|| KeyValue {
                    key,
                    value: Bytes::new(),
                    create_revision,
                    mod_revision: prev_revision.unwrap_or(revision),
                    decoded: crate::Decoded::default(),
                }),
                revision,
            }
        } else {
            Event::Put {
                kv: KeyValue {
                    key,
                    value: Bytes::from(row.get::<_, Vec<u8>>(2)?),
                    create_revision,
                    mod_revision: revision,
                    decoded: crate::Decoded::default(),
                },
                prev,
            }
        })
    })?;
    rows.collect()
}

// ---------------------------------------------------------------------------------------------
// Watch

struct Watch {
    reads: Arc<ReadPool>,
    rx: Subscription,
    prefix: String,
    lo: Vec<u8>,
    hi: Vec<u8>,
    /// Only events above this revision are delivered.
    after: Revision,
    /// History is read up to this revision; live events up to it are duplicates.
    snapshot: Revision,
    /// History has been read up to here.
    cursor: Revision,
    history_done: bool,
    /// Every event up to here has been queued or skipped.
    seen: Revision,
    queue: VecDeque<Event>,
    progress: Option<Duration>,
    next_progress: Option<Instant>,
    done: bool,
}

impl Watch {
    async fn next(&mut self) -> Option<Result<Event, StorageError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.queue.pop_front() {
                self.next_progress = self.progress.map(|d| Instant::now() + d);
                return Some(Ok(event));
            }
            if !self.history_done {
                if let Err(e) = self.read_page().await {
                    self.done = true;
                    return Some(Err(e));
                }
                continue;
            }
            let deadline = match (self.progress, self.next_progress) {
                (Some(_), Some(at)) => Some(at),
                (Some(d), None) => {
                    let at = Instant::now() + d;
                    self.next_progress = Some(at);
                    Some(at)
                }
                (None, _) => None,
            };
            let sleep = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => futures::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                received = self.rx.recv() => match received {
                    Received::Batch(batch) => self.accept(&batch),
                    Received::Lagged => {
                        self.done = true;
                        return Some(Err(StorageError::WatchLagged));
                    }
                    Received::Closed => {
                        self.done = true;
                        return None;
                    }
                },
                () = sleep => {
                    // Batches this watch is not concerned with never reach it: the progress
                    // revision is the feed's, once every batch published up to it that
                    // concerns this watch has been taken.
                    let published = self.rx.published.load(Ordering::Acquire);
                    if let Ok(batch) = self.rx.rx.try_recv() {
                        self.accept(&batch);
                        continue;
                    }
                    if self.history_done {
                        self.seen = self.seen.max(published);
                    }
                    self.next_progress = self.progress.map(|d| Instant::now() + d);
                    return Some(Ok(Event::Progress {
                        revision: self.seen.max(self.after),
                    }));
                }
            }
        }
    }

    /// Queues the batch's events that match and are new.
    fn accept(&mut self, batch: &[Event]) {
        let floor = self.seen.max(self.after);
        for event in batch {
            let key = match event {
                Event::Put { kv, .. } => &kv.key,
                Event::Delete { prev, .. } => &prev.key,
                Event::Progress { .. } => continue,
            };
            if event.revision() > floor && key.starts_with(&self.prefix) {
                self.queue.push_back(event.clone());
            }
        }
        if let Some(last) = batch.last() {
            self.seen = self.seen.max(last.revision());
        }
    }

    /// Reads the next page of history into the queue.
    async fn read_page(&mut self) -> Result<(), StorageError> {
        let (lo, hi, cursor, until) =
            (self.lo.clone(), self.hi.clone(), self.cursor, self.snapshot);
        let page = self
            .reads
            .run(move |conn| -> rusqlite::Result<Result<_, StorageError>> {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
                let (_, compacted) = read_meta(&tx)?;
                if cursor + 1 < compacted {
                    // Compaction ran while this watch replayed history; events may be gone.
                    return Ok(Err(StorageError::Compacted {
                        requested: cursor,
                        compacted,
                    }));
                }
                Ok(Ok(read_history(&tx, &lo, &hi, cursor, until)?))
            })
            .await??;
        if (page.len() as i64) < HISTORY_PAGE {
            self.history_done = true;
        }
        self.cursor = page.last().map_or(until, Event::revision);
        self.queue.extend(page);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Writes

#[derive(Debug)]
enum Op {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    Compact {
        revision: Revision,
    },
}

impl Op {
    /// The bytes this command's value holds while it waits.
    fn value_len(&self) -> usize {
        match self {
            Op::Create { value, .. } | Op::Update { value, .. } => value.len(),
            Op::Delete { .. } | Op::Compact { .. } => 0,
        }
    }
}

#[derive(Debug)]
enum Outcome {
    Written(Revision),
    Deleted(KeyValue, Revision),
    Compacted,
}

struct Command {
    op: Op,
    reply: oneshot::Sender<Result<Outcome, StorageError>>,
    /// The command's share of [`QUEUE_BYTES`], released when the command is dropped.
    bytes: OwnedSemaphorePermit,
}

impl Command {
    /// Releases the command's share of the byte budget, then answers: a caller that sees its
    /// answer sees the budget it used already free.
    fn answer(self, result: Result<Outcome, StorageError>) {
        let Command { reply, bytes, .. } = self;
        drop(bytes);
        let _ = reply.send(result);
    }
}

struct Writer {
    conn: Connection,
    current: Revision,
    compacted: Revision,
    state: Arc<State>,
    events: Arc<Hub>,
}

/// What one command did inside the batch transaction.
struct Applied {
    outcome: Outcome,
    event: Option<Event>,
    revision: Revision,
    compacted: Revision,
}

impl Writer {
    fn run(mut self, commands: &mut mpsc::Receiver<Command>) {
        // Waits for the first command, then takes whatever else is queued: group commit.
        while let Some(first) = commands.blocking_recv() {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match commands.try_recv() {
                    Ok(command) => batch.push(command),
                    Err(_) => break,
                }
            }
            self.commit_batch(batch);
        }
    }

    fn commit_batch(&mut self, batch: Vec<Command>) {
        let mut results: Vec<Result<Outcome, StorageError>> = Vec::with_capacity(batch.len());
        let mut events = Vec::new();
        let mut current = self.current;
        let mut compacted = self.compacted;
        let committed = (|| -> rusqlite::Result<()> {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            for command in &batch {
                let sp = CommandSavepoint::begin(&tx)?;
                match apply(&tx, &command.op, current, compacted) {
                    Ok(Ok(applied)) => {
                        sp.release()?;
                        current = applied.revision;
                        compacted = applied.compacted;
                        events.extend(applied.event);
                        results.push(Ok(applied.outcome));
                    }
                    // A failed check wrote nothing; dropping the savepoint rolls it back anyway.
                    Ok(Err(e)) => results.push(Err(e)),
                    Err(e) => results.push(Err(engine(e))),
                }
            }
            if current != self.current {
                tx.prepare_cached("UPDATE meta SET value = ?1 WHERE name = 'current'")?
                    .execute([current])?;
            }
            tx.commit()
        })();
        match committed {
            Ok(()) => {
                self.current = current;
                self.compacted = compacted;
                self.state.current.store(current, Ordering::Release);
                self.state.compacted.store(compacted, Ordering::Release);
                self.state.commits.fetch_add(1, Ordering::AcqRel);
                if !events.is_empty() {
                    self.events.publish(&Arc::new(events));
                }
                for (command, result) in batch.into_iter().zip(results) {
                    command.answer(result);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, commands = batch.len(), "sqlite commit failed");
                let message = e.to_string();
                for command in batch {
                    command.answer(Err(StorageError::Engine(message.clone())));
                }
            }
        }
    }
}

/// One command's savepoint within a batch's transaction, through cached statements: rusqlite's
/// `Transaction::savepoint` prepares the `SAVEPOINT` and `RELEASE` texts anew for every command
/// (two statement compilations per write, about 2% of a create's instructions). Dropped without
/// [`CommandSavepoint::release`], it undoes what the command wrote and ends, as rusqlite's does.
struct CommandSavepoint<'c> {
    conn: &'c Connection,
    released: bool,
}

impl<'c> CommandSavepoint<'c> {
    fn begin(conn: &'c Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("SAVEPOINT command")?.execute([])?;
        Ok(Self {
            conn,
            released: false,
        })
    }

    /// Keeps what the command wrote (in the enclosing transaction).
    fn release(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("RELEASE command")?.execute([])?;
        self.released = true;
        Ok(())
    }
}

impl Drop for CommandSavepoint<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        for sql in ["ROLLBACK TO command", "RELEASE command"] {
            if let Err(e) = self
                .conn
                .prepare_cached(sql)
                .and_then(|mut s| s.execute([]))
            {
                tracing::error!(error = %e, sql, "sqlite savepoint rollback failed");
            }
        }
    }
}

/// Applies one command at revision `current + 1`: checks first, then writes.
fn apply(
    tx: &Connection,
    op: &Op,
    current: Revision,
    compacted: Revision,
) -> rusqlite::Result<Result<Applied, StorageError>> {
    let revision = current + 1;
    match op {
        Op::Create { key, value } => {
            if let Some(existing) = current_kv(tx, key)? {
                return Ok(Err(StorageError::AlreadyExists {
                    key: key.clone(),
                    existing,
                }));
            }
            insert_log(tx, key, value, revision, None, false)?;
            tx.prepare_cached(
                "INSERT INTO kv (key, value, create_revision, mod_revision) VALUES (?1, ?2, ?3, ?3)",
            )?
            .execute(params![key.as_bytes(), value.as_ref(), revision])?;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: revision,
                mod_revision: revision,
                decoded: crate::Decoded::default(),
            };
            Ok(Ok(Applied {
                outcome: Outcome::Written(revision),
                event: Some(Event::Put { kv, prev: None }),
                revision,
                compacted,
            }))
        }
        Op::Update {
            key,
            value,
            expected,
        } => {
            let Some(prev) = current_kv(tx, key)? else {
                return Ok(Err(StorageError::NotFound { key: key.clone() }));
            };
            if prev.mod_revision != *expected {
                return Ok(Err(StorageError::Conflict {
                    key: key.clone(),
                    expected: *expected,
                    current: prev,
                }));
            }
            insert_log(tx, key, value, revision, Some(&prev), false)?;
            tx.prepare_cached("UPDATE kv SET value = ?2, mod_revision = ?3 WHERE key = ?1")?
                .execute(params![key.as_bytes(), value.as_ref(), revision])?;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: prev.create_revision,
                mod_revision: revision,
                decoded: crate::Decoded::default(),
            };
            Ok(Ok(Applied {
                outcome: Outcome::Written(revision),
                event: Some(Event::Put {
                    kv,
                    prev: Some(prev),
                }),
                revision,
                compacted,
            }))
        }
        Op::Delete { key, expected } => {
            let Some(prev) = current_kv(tx, key)? else {
                return Ok(Err(StorageError::NotFound { key: key.clone() }));
            };
            if let Some(expected) = expected
                && prev.mod_revision != *expected
            {
                return Ok(Err(StorageError::Conflict {
                    key: key.clone(),
                    expected: *expected,
                    current: prev,
                }));
            }
            insert_log(tx, key, &[], revision, Some(&prev), true)?;
            tx.prepare_cached("DELETE FROM kv WHERE key = ?1")?
                .execute([key.as_bytes()])?;
            Ok(Ok(Applied {
                outcome: Outcome::Deleted(prev.clone(), revision),
                event: Some(Event::Delete { prev, revision }),
                revision,
                compacted,
            }))
        }
        Op::Compact { revision: target } => {
            let target = *target;
            if target > current {
                return Ok(Err(StorageError::FutureRevision {
                    requested: target,
                    current,
                }));
            }
            if target > compacted {
                // Drop every row below the target that no state at or after it needs: deletions,
                // and rows superseded by a later row of the same key still below the target.
                tx.prepare_cached(
                    "DELETE FROM log WHERE revision < ?1 AND (deleted = 1 OR EXISTS ( \
                         SELECT 1 FROM log AS n WHERE n.key = log.key \
                         AND n.revision > log.revision AND n.revision < ?1))",
                )?
                .execute([target])?;
                tx.prepare_cached("UPDATE meta SET value = ?1 WHERE name = 'compacted'")?
                    .execute([target])?;
            }
            Ok(Ok(Applied {
                outcome: Outcome::Compacted,
                event: None,
                revision: current,
                compacted: compacted.max(target),
            }))
        }
    }
}

fn current_kv(tx: &Connection, key: &str) -> rusqlite::Result<Option<KeyValue>> {
    tx.prepare_cached("SELECT key, value, create_revision, mod_revision FROM kv WHERE key = ?1")?
        .query_row([key.as_bytes()], kv_from_row)
        .optional()
}

fn insert_log(
    tx: &Connection,
    key: &str,
    value: &[u8],
    revision: Revision,
    prev: Option<&KeyValue>,
    deleted: bool,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO log (revision, key, value, create_revision, prev_revision, deleted) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        revision,
        key.as_bytes(),
        value,
        prev.map_or(revision, |p| p.create_revision),
        prev.map(|p| p.mod_revision),
        deleted,
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests;
