//! The etcd engine: the [`Store`] trait over an etcd v3 cluster (3.4 or later), with
//! kube-apiserver's key layout, so that etcd tooling finds every object where it would find
//! kube-apiserver's.
//!
//! # Design
//! - Keys: every key the server writes starts with `/registry/` (kube-apiserver's layout). The
//!   etcd key replaces that leading `/registry` with the configured prefix (`--etcd-prefix`), so
//!   the default prefix is the identity. Keys outside `/registry/` (the conformance suite's, for
//!   example) are stored verbatim; with a non-default prefix, such a key may not lie under the
//!   prefix (it would collide with a mapped key), and a list or watch prefix may not cover both
//!   sides of the mapping (for example `/`): both are refused rather than answered wrongly.
//! - Revisions are etcd's: `mod_revision`, `create_revision`, and the header revision of reads.
//! - Writes are single transactions: create compares `create_revision == 0`, update and
//!   conditional delete compare `mod_revision` (and `version > 0`, so that an absent key is never
//!   written); the failure branch reads the key so that the error carries the current state.
//! - Compaction: `compact(r)` compacts etcd at `r - 1` and refuses reads below `r` itself. The
//!   trait promises every event from `r` on, with its previous state (a watch from `r - 1` must
//!   deliver a deletion at `r` with its last state), while etcd's compaction at `c` drops
//!   deletions at `c` from history and makes `prev_kv` of events at `c` unreadable. The refusal
//!   floor is kept in memory, so another process (or this one after a restart) may still read
//!   revision `r - 1`; that is correct data, only not refused. A compaction made by someone else
//!   at `c` is reported as etcd reports it for lists (`c`) and as `c + 1` for watches.
//! - Watch: one etcd watch per call, from `after + 1`, with `prev_kv`, after a read at `after`
//!   has shown that etcd's compaction allows it. A missing `prev_kv` (a compaction by someone
//!   else that overtook the watch) ends the stream with [`StorageError::Compacted`], as does etcd
//!   canceling the watch for compaction.
//! - Progress: see the private `EtcdWatch`; in short, [`Event::Progress`] is sent only once the
//!   watch has provably replayed its history, and only with revisions etcd vouched for in order.
//!
//! Architecture Invariant: values are opaque bytes here too; nothing below knows Kubernetes.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, Identity,
    KvClient, ResponseHeader, TlsOptions, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchClient,
    WatchOptions, WatchRequestSender, WatchResponse, WatchResponseStream,
};
use futures::StreamExt;
use tokio::time::Instant;

use crate::{
    Event, KeyValue, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest,
    WatchStream,
};

/// kube-apiserver's default `--etcd-prefix`, and the root of every key the server writes; with
/// this prefix etcd keys equal store keys.
pub const DEFAULT_PREFIX: &str = "/registry";

/// How long connecting (and the first read, which proves the settings) may take; kube-apiserver
/// uses the same dial timeout.
const DIAL_TIMEOUT: Duration = Duration::from_secs(20);
/// HTTP/2 keepalive, as kube-apiserver configures its etcd client, so a dead member is noticed.
const KEEPALIVE_TIME: Duration = Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// gRPC message size limit for responses: a large list easily exceeds tonic's 4 MiB default;
/// kube-apiserver lifts the limit the same way.
const MAX_MESSAGE_BYTES: usize = i32::MAX as usize;
/// etcd's default `--max-request-bytes`, reported as the limit when etcd refuses a value as too
/// large (the server's real setting is not visible to clients).
const ETCD_DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;
/// How long to wait for etcd to name its compaction revision when a read hit it.
const COMPACTION_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How to reach etcd; the fields mirror kube-apiserver's `--etcd-*` flags so the CLI can pass
/// them through unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs (`--etcd-servers`), for example `http://127.0.0.1:2379`; a URL without a
    /// scheme uses `https` when TLS files are given and `http` otherwise.
    pub endpoints: Vec<String>,
    /// The key root in etcd (`--etcd-prefix`), replacing the leading `/registry` of every key;
    /// [`DEFAULT_PREFIX`] stores keys unchanged. Trailing slashes are ignored.
    pub prefix: String,
    /// The CA bundle that verifies etcd's serving certificate (`--etcd-cafile`). `https`
    /// endpoints need it: system roots are not consulted.
    pub ca_file: Option<PathBuf>,
    /// The client certificate presented to etcd (`--etcd-certfile`), with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (`--etcd-keyfile`), with `cert_file`.
    pub key_file: Option<PathBuf>,
}

impl EtcdConfig {
    /// A plain configuration for `endpoints` with the default prefix and no TLS.
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> Self {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ..EtcdConfig::default()
        }
    }
}

impl Default for EtcdConfig {
    /// No endpoints (they are required, as `--etcd-servers` is), the default prefix, no TLS.
    fn default() -> Self {
        EtcdConfig {
            endpoints: Vec::new(),
            prefix: DEFAULT_PREFIX.to_owned(),
            ca_file: None,
            cert_file: None,
            key_file: None,
        }
    }
}

/// The etcd storage engine: [`Store`] semantics served by an etcd v3 cluster (3.4 or later).
///
/// Connected once per process and shared as `Arc<dyn Store>`; every call is one or two etcd
/// requests over a shared, multiplexed gRPC channel.
pub struct EtcdStore {
    /// Kept so that the client's endpoint set (and its background balancer) lives as long as
    /// the store.
    _client: Client,
    kv: KvClient,
    watch: WatchClient,
    keys: KeyMap,
    /// Reads below this revision are refused with `Compacted` (see the module docs).
    compacted: AtomicI64,
    endpoints: Vec<String>,
}

impl EtcdStore {
    /// Connects to etcd and proves the settings (endpoints, TLS, prefix) with one read.
    ///
    /// Fails with [`StorageError::Unavailable`] when etcd cannot be reached or a TLS file cannot
    /// be read, and with [`StorageError::Engine`] for an invalid configuration.
    pub async fn connect(config: EtcdConfig) -> Result<Arc<EtcdStore>, StorageError> {
        let keys = KeyMap::new(&config.prefix)?;
        if config.endpoints.is_empty() {
            return Err(StorageError::Engine(
                "no etcd endpoints configured (--etcd-servers)".into(),
            ));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(DIAL_TIMEOUT)
            .with_keep_alive(KEEPALIVE_TIME, KEEPALIVE_TIMEOUT)
            // As kube-apiserver does: a member cut off from the leader fails requests (and
            // cancels watches) instead of serving stale data.
            .with_require_leader(true);
        if let Some(tls) = tls_options(&config).await? {
            options = options.with_tls(tls);
        }
        let endpoints = config.endpoints.join(",");
        let client = Client::connect(&config.endpoints, Some(options))
            .await
            .map_err(|e| {
                StorageError::Unavailable(format!("connecting to etcd at {endpoints}: {e}"))
            })?;
        let store = EtcdStore {
            kv: client
                .kv_client()
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
            watch: client
                .watch_client()
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            _client: client,
            keys,
            compacted: AtomicI64::new(0),
            endpoints: config.endpoints,
        };
        // The channel connects lazily; a read proves endpoints, TLS and credentials now.
        match tokio::time::timeout(DIAL_TIMEOUT, store.current_revision()).await {
            Ok(Ok(_)) => Ok(Arc::new(store)),
            Ok(Err(e)) => Err(StorageError::Unavailable(format!(
                "etcd at {endpoints} did not answer: {e}"
            ))),
            Err(_) => Err(StorageError::Unavailable(format!(
                "etcd at {endpoints} did not answer within {DIAL_TIMEOUT:?}"
            ))),
        }
    }

    /// The etcd key prefix in use (normalized: no trailing slash), for diagnostics.
    pub fn prefix(&self) -> &str {
        &self.keys.prefix
    }

    /// The revision below which this store refuses reads since it compacted (0 before).
    pub fn compacted_revision(&self) -> Revision {
        self.compacted.load(Ordering::Acquire)
    }

    fn kv(&self) -> KvClient {
        self.kv.clone()
    }

    /// The `Compacted` error for a list at `requested` that etcd refused: at least this store's
    /// floor, and etcd's own compaction revision when it can be learned.
    async fn list_compacted(&self, requested: Revision) -> StorageError {
        let etcd = self.etcd_compaction().await.unwrap_or(requested + 1);
        let compacted = self.compacted.load(Ordering::Acquire).max(etcd);
        StorageError::Compacted {
            requested,
            compacted,
        }
    }

    /// The `Compacted` error for a watch from `after` that etcd's compaction rules out. etcd
    /// compaction at `c` drops deletions at `c` itself from history, so a watch needs
    /// `after >= c`: the reported revision is `c + 1`, which keeps the trait's rule
    /// (`after + 1 < compacted` fails) exact.
    async fn watch_compacted(&self, after: Revision) -> StorageError {
        let etcd = self.etcd_compaction().await.unwrap_or(after + 1);
        StorageError::Compacted {
            requested: after,
            compacted: etcd + 1,
        }
    }

    /// etcd's compaction revision. etcd has no call that reports it, but cancels a watch from
    /// revision 1 with it at once.
    async fn etcd_compaction(&self) -> Option<Revision> {
        let options = WatchOptions::new().with_start_revision(1);
        let probe = async {
            let stream = self
                .watch
                .clone()
                .watch(self.keys.prefix.as_bytes().to_vec(), Some(options))
                .await
                .ok()?;
            let (_sender, mut responses) = stream.split();
            while let Some(Ok(response)) = responses.next().await {
                if response.compact_revision() > 0 {
                    return Some(response.compact_revision());
                }
                if response.canceled() {
                    return None;
                }
            }
            None
        };
        tokio::time::timeout(COMPACTION_PROBE_TIMEOUT, probe)
            .await
            .ok()
            .flatten()
    }

    async fn future_error(&self, requested: Revision) -> StorageError {
        match self.current_revision().await {
            Ok(current) => StorageError::FutureRevision { requested, current },
            Err(e) => e,
        }
    }

    /// Runs a write transaction, mapping etcd's size refusal to [`StorageError::TooLarge`].
    async fn write_txn(&self, txn: Txn, size: usize) -> Result<TxnResponse, StorageError> {
        self.kv().txn(txn).await.map_err(|e| match failure(&e) {
            Failure::TooLarge => StorageError::TooLarge {
                size,
                limit: ETCD_DEFAULT_MAX_REQUEST_BYTES,
            },
            _ => error(e),
        })
    }
}

impl fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdStore")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.keys.prefix)
            .field("compacted", &self.compacted.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Store for EtcdStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let raw = self.keys.to_etcd(key)?;
        let mut response = self.kv().get(raw, None).await.map_err(error)?;
        Ok(response
            .take_kvs()
            .into_iter()
            .next()
            .map(|kv| key_value(key.to_owned(), kv)))
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        let range = self.keys.range(&request.prefix)?;
        if let Some(requested) = request.revision {
            let floor = self.compacted.load(Ordering::Acquire);
            if requested < floor {
                return Err(StorageError::Compacted {
                    requested,
                    compacted: floor,
                });
            }
        }
        let start = match &request.start_after {
            // Below the prefix: no effect. Inside it: the least key above it. Above it: nothing.
            Some(after) if after.as_str() >= request.prefix.as_str() => {
                if after.starts_with(&request.prefix) {
                    let mut next = self.keys.to_etcd(after)?;
                    next.push(0);
                    next
                } else {
                    range.end.clone()
                }
            }
            _ => range.start.clone(),
        };
        let limit = request.limit.filter(|&n| n > 0);
        let mut options = GetOptions::new().with_range(range.end.clone());
        if let Some(n) = limit {
            options = options.with_limit(i64::try_from(n).unwrap_or(i64::MAX));
        }
        if let Some(requested) = request.revision {
            // etcd reads revision 0 as "latest"; revision 1 is etcd's empty initial state, which
            // is what any revision up to it shows.
            options = options.with_revision(requested.max(1));
        }
        let mut response = match self.kv().get(start, Some(options)).await {
            Ok(response) => response,
            Err(e) => {
                let requested = request.revision.unwrap_or_default();
                return Err(match failure(&e) {
                    Failure::Compacted => self.list_compacted(requested).await,
                    Failure::FutureRevision => self.future_error(requested).await,
                    _ => error(e),
                });
            }
        };
        let header = response.header().map_or(0, ResponseHeader::revision);
        if request.revision.is_none() {
            request.freshness.check(header)?;
        }
        let total = u64::try_from(response.count()).unwrap_or(0);
        let mut items = Vec::new();
        for kv in response.take_kvs() {
            if let Some(key) = self.keys.store_key(kv.key())? {
                items.push(key_value(key, kv));
            }
        }
        let remaining = if limit.is_some() {
            total.saturating_sub(items.len() as u64)
        } else {
            0
        };
        Ok(ListResponse {
            items,
            revision: request.revision.unwrap_or(header),
            remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        let range = self.keys.range(prefix)?;
        let response = self
            .kv()
            .get(
                range.start,
                Some(GetOptions::new().with_range(range.end).with_count_only()),
            )
            .await
            .map_err(error)?;
        Ok(u64::try_from(response.count()).unwrap_or(0))
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        let raw = self.keys.to_etcd(key)?;
        let size = value.len();
        let txn = Txn::new()
            .when([Compare::create_revision(raw.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(raw.clone(), Vec::from(value), None)])
            .or_else([TxnOp::get(raw, None)]);
        let response = self.write_txn(txn, size).await?;
        if response.succeeded() {
            return header_revision(&response);
        }
        match read_back(&response, key) {
            Some(existing) => Err(StorageError::AlreadyExists {
                key: key.to_owned(),
                existing,
            }),
            None => Err(StorageError::Engine(format!(
                "etcd refused to create {key} but holds no value for it"
            ))),
        }
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        let raw = self.keys.to_etcd(key)?;
        let size = value.len();
        let txn = Txn::new()
            .when(cas(&raw, expected))
            .and_then([TxnOp::put(raw.clone(), Vec::from(value), None)])
            .or_else([TxnOp::get(raw, None)]);
        let response = self.write_txn(txn, size).await?;
        if response.succeeded() {
            return header_revision(&response);
        }
        Err(cas_failure(&response, key, expected))
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let raw = self.keys.to_etcd(key)?;
        let Some(expected) = expected else {
            let mut response = self
                .kv()
                .delete(raw, Some(DeleteOptions::new().with_prev_key()))
                .await
                .map_err(error)?;
            let revision = response.header().map_or(0, ResponseHeader::revision);
            return match response.take_prev_kvs().into_iter().next() {
                Some(prev) => Ok((key_value(key.to_owned(), prev), revision)),
                None => Err(StorageError::NotFound {
                    key: key.to_owned(),
                }),
            };
        };
        let txn = Txn::new()
            .when(cas(&raw, expected))
            .and_then([TxnOp::delete(
                raw.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(raw, None)]);
        let response = self.kv().txn(txn).await.map_err(error)?;
        if !response.succeeded() {
            return Err(cas_failure(&response, key, expected));
        }
        let revision = header_revision(&response)?;
        let prev = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(mut deleted) => deleted.take_prev_kvs().into_iter().next(),
            _ => None,
        });
        match prev {
            Some(prev) => Ok((key_value(key.to_owned(), prev), revision)),
            None => Err(StorageError::Engine(format!(
                "etcd deleted {key} without returning its last state"
            ))),
        }
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        let range = self.keys.range(&request.prefix)?;
        let after = request.after.max(0);
        let start = after + 1;
        let floor = self.compacted.load(Ordering::Acquire);
        if start < floor {
            return Err(StorageError::Compacted {
                requested: request.after,
                compacted: floor,
            });
        }
        // etcd reports a compacted start only after the watch is created, as a cancellation, and
        // accepts a start at its compaction revision although deletions at it are gone and the
        // previous states of events at it are unreadable. A read at `after` finds both out now:
        // it succeeds only if etcd's compaction is at or below `after`.
        let check = GetOptions::new()
            .with_revision(after.max(1))
            .with_count_only();
        if let Err(e) = self.kv().get(range.start.clone(), Some(check)).await {
            match failure(&e) {
                Failure::Compacted => return Err(self.watch_compacted(request.after).await),
                // A watch from the future is fine: it waits.
                Failure::FutureRevision => {}
                _ => return Err(error(e)),
            }
        }
        let progress = request.progress_interval.filter(|d| !d.is_zero());
        let mut options = WatchOptions::new()
            .with_range(range.end)
            .with_start_revision(start)
            .with_prev_key();
        if progress.is_some() {
            options = options.with_progress_notify();
        }
        let stream = self
            .watch
            .clone()
            .watch(range.start, Some(options))
            .await
            .map_err(error)?;
        let (sender, mut responses) = stream.split();
        // The first response confirms the watch and names the revision it was created at.
        let created = tokio::time::timeout(DIAL_TIMEOUT, responses.next())
            .await
            .map_err(|_| {
                StorageError::Unavailable(format!(
                    "etcd did not confirm a watch within {DIAL_TIMEOUT:?}"
                ))
            })?;
        let created = match created {
            Some(Ok(response)) => response,
            Some(Err(e)) => return Err(error(e)),
            None => {
                return Err(StorageError::Unavailable(
                    "etcd closed the watch stream".into(),
                ));
            }
        };
        if let Some(e) = cancellation(&created, request.after) {
            return Err(e);
        }
        let snapshot = created.header().map_or(0, ResponseHeader::revision);
        let watch = EtcdWatch {
            keys: self.keys.clone(),
            sender,
            responses,
            watch_id: created.watch_id(),
            after,
            // A start above the store's revision puts the etcd watcher among the synced ones.
            synced: after >= snapshot,
            delivered: after,
            trusted: after,
            pending: None,
            progress,
            next_progress: None,
            queue: VecDeque::new(),
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
        let response = self
            .kv()
            .get(
                self.keys.prefix.as_bytes().to_vec(),
                Some(GetOptions::new().with_count_only()),
            )
            .await
            .map_err(error)?;
        response
            .header()
            .map(ResponseHeader::revision)
            .ok_or_else(|| StorageError::Engine("etcd answered without a header".into()))
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let current = self.current_revision().await?;
        if revision > current {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current,
            });
        }
        // One below: events at `revision` keep their previous state (module docs).
        let physical = revision - 1;
        if physical >= 1 {
            match self.kv().compact(physical, None).await {
                Ok(_) => {}
                // Already compacted that far (by us or by someone else): nothing to do.
                Err(e) if matches!(failure(&e), Failure::Compacted) => {}
                Err(e) => return Err(error(e)),
            }
        }
        self.compacted.fetch_max(revision, Ordering::AcqRel);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Key mapping

/// The mapping between store keys and etcd keys (module docs).
#[derive(Clone, Debug)]
struct KeyMap {
    /// The etcd prefix without trailing slashes, for example `/registry`.
    prefix: String,
}

/// A range of etcd keys, `[start, end)`; an `end` of `[0]` means "no upper bound".
struct RawRange {
    start: Vec<u8>,
    end: Vec<u8>,
}

impl KeyMap {
    fn new(prefix: &str) -> Result<Self, StorageError> {
        let trimmed = prefix.trim_end_matches('/');
        if trimmed.is_empty() {
            return Err(StorageError::Engine(format!(
                "the etcd prefix must name a key root such as {DEFAULT_PREFIX}, not {prefix:?}"
            )));
        }
        Ok(KeyMap {
            prefix: trimmed.to_owned(),
        })
    }

    fn identity(&self) -> bool {
        self.prefix == DEFAULT_PREFIX
    }

    /// The etcd key of a store key.
    fn to_etcd(&self, key: &str) -> Result<Vec<u8>, StorageError> {
        if self.identity() {
            return Ok(key.as_bytes().to_vec());
        }
        if let Some(rest) = under(key, DEFAULT_PREFIX) {
            return Ok(format!("{}{rest}", self.prefix).into_bytes());
        }
        if under(key, &self.prefix).is_some() {
            return Err(StorageError::Engine(format!(
                "key {key} lies under the etcd prefix {} without starting with {DEFAULT_PREFIX}/; \
                 it would collide with the mapped keys",
                self.prefix
            )));
        }
        Ok(key.as_bytes().to_vec())
    }

    /// The store key of an etcd key; `None` for a key under `/registry/` that belongs to another
    /// prefix.
    fn store_key(&self, raw: &[u8]) -> Result<Option<String>, StorageError> {
        let key = std::str::from_utf8(raw).map_err(|e| {
            StorageError::Engine(format!(
                "etcd key {} is not UTF-8: {e}",
                String::from_utf8_lossy(raw)
            ))
        })?;
        if self.identity() {
            return Ok(Some(key.to_owned()));
        }
        if let Some(rest) = under(key, &self.prefix) {
            return Ok(Some(format!("{DEFAULT_PREFIX}{rest}")));
        }
        if under(key, DEFAULT_PREFIX).is_some() {
            return Ok(None);
        }
        Ok(Some(key.to_owned()))
    }

    /// The etcd range holding exactly the store keys that start with `prefix`.
    fn range(&self, prefix: &str) -> Result<RawRange, StorageError> {
        if self.identity() {
            return Ok(RawRange::prefix(prefix.as_bytes().to_vec()));
        }
        if let Some(rest) = prefix.strip_prefix(DEFAULT_PREFIX)
            && rest.starts_with('/')
        {
            return Ok(RawRange::prefix(
                format!("{}{rest}", self.prefix).into_bytes(),
            ));
        }
        if overlaps(prefix, DEFAULT_PREFIX) || overlaps(prefix, &self.prefix) {
            return Err(StorageError::Engine(format!(
                "prefix {prefix:?} spans the etcd prefix mapping ({DEFAULT_PREFIX}/ is stored \
                 under {}/); read under {DEFAULT_PREFIX}/ or outside both",
                self.prefix
            )));
        }
        Ok(RawRange::prefix(prefix.as_bytes().to_vec()))
    }
}

/// The rest of `key` after `root` when `key` is `root` itself or lies under `root/`.
fn under<'a>(key: &'a str, root: &str) -> Option<&'a str> {
    key.strip_prefix(root)
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether some key starting with `prefix` is `root` or lies under `root/`.
fn overlaps(prefix: &str, root: &str) -> bool {
    under(prefix, root).is_some() || format!("{root}/").starts_with(prefix)
}

impl RawRange {
    /// Every key starting with `prefix` (every key at all for an empty prefix).
    fn prefix(prefix: Vec<u8>) -> Self {
        if prefix.is_empty() {
            return RawRange {
                start: vec![0],
                end: vec![0],
            };
        }
        let mut end = prefix.clone();
        while end.last() == Some(&0xFF) {
            end.pop();
        }
        match end.last_mut() {
            Some(last) => *last += 1,
            None => end.push(0),
        }
        RawRange { start: prefix, end }
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions and errors

/// A [`KeyValue`] under its store key from an etcd key-value.
fn key_value(key: String, kv: etcd_client::KeyValue) -> KeyValue {
    let create_revision = kv.create_revision();
    let mod_revision = kv.mod_revision();
    let (_, value) = kv.into_key_value();
    KeyValue {
        key,
        value: Bytes::from(value),
        create_revision,
        mod_revision,
        decoded: crate::Decoded::default(),
    }
}

/// The comparison of a compare-and-swap: the key exists at modification revision `expected`.
fn cas(raw: &[u8], expected: Revision) -> [Compare; 2] {
    [
        Compare::version(raw.to_vec(), CompareOp::Greater, 0),
        Compare::mod_revision(raw.to_vec(), CompareOp::Equal, expected),
    ]
}

/// The error of a failed compare-and-swap, from the key read in the failure branch.
fn cas_failure(response: &TxnResponse, key: &str, expected: Revision) -> StorageError {
    match read_back(response, key) {
        Some(current) => StorageError::Conflict {
            key: key.to_owned(),
            expected,
            current,
        },
        None => StorageError::NotFound {
            key: key.to_owned(),
        },
    }
}

/// The key read by a transaction's `get`, if present.
fn read_back(response: &TxnResponse, key: &str) -> Option<KeyValue> {
    response.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(mut got) => got
            .take_kvs()
            .into_iter()
            .next()
            .map(|kv| key_value(key.to_owned(), kv)),
        _ => None,
    })
}

fn header_revision(response: &TxnResponse) -> Result<Revision, StorageError> {
    response
        .header()
        .map(ResponseHeader::revision)
        .ok_or_else(|| StorageError::Engine("etcd answered without a header".into()))
}

/// The etcd errors that map to specific storage errors; etcd reports them by message only.
enum Failure {
    Compacted,
    FutureRevision,
    TooLarge,
    Other,
}

fn failure(e: &etcd_client::Error) -> Failure {
    let etcd_client::Error::GRpcStatus(status) = e else {
        return Failure::Other;
    };
    let message = status.message();
    if message.contains("required revision has been compacted") {
        Failure::Compacted
    } else if message.contains("required revision is a future revision") {
        Failure::FutureRevision
    } else if message.contains("request is too large")
        || message.contains("received message larger than max")
    {
        Failure::TooLarge
    } else {
        Failure::Other
    }
}

/// A storage error for an etcd failure: `Unavailable` when etcd could not be reached or had no
/// leader, `Engine` otherwise.
#[expect(clippy::needless_pass_by_value, reason = "a `map_err` adapter")]
fn error(e: etcd_client::Error) -> StorageError {
    use etcd_client::Error as E;
    match &e {
        E::GRpcStatus(status) => {
            let message = format!("etcd: {}", status.message());
            match status.code() {
                tonic::Code::Unavailable
                | tonic::Code::DeadlineExceeded
                | tonic::Code::Cancelled => StorageError::Unavailable(message),
                _ => StorageError::Engine(message),
            }
        }
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) | E::EndpointError(_) => {
            StorageError::Unavailable(format!("etcd: {e}"))
        }
        _ => StorageError::Engine(format!("etcd: {e}")),
    }
}

/// The error a canceled (or compacted) watch response stands for, if it is one. As in
/// [`EtcdStore::watch_compacted`], etcd's compaction at `c` is reported as `c + 1`.
fn cancellation(response: &WatchResponse, requested: Revision) -> Option<StorageError> {
    if response.compact_revision() > 0 {
        return Some(StorageError::Compacted {
            requested,
            compacted: response.compact_revision() + 1,
        });
    }
    if response.canceled() {
        return Some(StorageError::Engine(format!(
            "etcd canceled the watch: {}",
            response.cancel_reason()
        )));
    }
    None
}

async fn tls_options(config: &EtcdConfig) -> Result<Option<TlsOptions>, StorageError> {
    async fn read(path: &Path) -> Result<Vec<u8>, StorageError> {
        tokio::fs::read(path)
            .await
            .map_err(|e| StorageError::Unavailable(format!("reading {}: {e}", path.display())))
    }
    if config.ca_file.is_none() && config.cert_file.is_none() && config.key_file.is_none() {
        return Ok(None);
    }
    let mut tls = TlsOptions::new();
    if let Some(ca) = &config.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca).await?));
    }
    match (&config.cert_file, &config.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(read(cert).await?, read(key).await?));
        }
        (None, None) => {}
        _ => {
            return Err(StorageError::Engine(
                "--etcd-certfile and --etcd-keyfile must be given together".into(),
            ));
        }
    }
    Ok(Some(tls))
}

// ---------------------------------------------------------------------------------------------
// Watch

/// One etcd watch turned into [`Event`]s.
///
/// Progress: etcd 3.4 (before the fix of etcd-io/etcd#15220) answers a progress request at once
/// with the store's revision, even while the watch still replays history or has events queued,
/// so its answer alone does not prove that every event up to that revision was delivered. This
/// watch therefore sends [`Event::Progress`] only after it knows it has caught up (`synced`):
/// it started above the store's revision, or a response's events end exactly at its header
/// revision (live delivery, or the last batch of history), or etcd sent its own progress
/// notification for this watch (etcd sends those only to caught-up watchers, in order with
/// events). A requested answer is then trusted only once the next answer has arrived. The
/// revision sent is the highest of `after`, the last event seen and the trusted answers. A
/// watch whose history holds no event for its prefix waits for a live event or for etcd's own
/// notification (`--experimental-watch-progress-notify-interval`, 10 minutes by default).
struct EtcdWatch {
    keys: KeyMap,
    /// Kept open: dropping it would end the request stream and with it the watch.
    sender: WatchRequestSender,
    responses: WatchResponseStream,
    watch_id: i64,
    /// Only events above this revision are delivered.
    after: Revision,
    /// Whether every event up to the store's revision at the last response has been received.
    synced: bool,
    /// The highest event revision received.
    delivered: Revision,
    /// The highest revision etcd vouched for in order with events.
    trusted: Revision,
    /// A requested progress answer waiting for the next one to be trusted.
    pending: Option<Revision>,
    progress: Option<Duration>,
    next_progress: Option<Instant>,
    queue: VecDeque<Result<Event, StorageError>>,
    done: bool,
}

impl EtcdWatch {
    async fn next(&mut self) -> Option<Result<Event, StorageError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if item.is_err() {
                    self.done = true;
                    self.queue.clear();
                } else {
                    self.next_progress = self.progress.map(|d| Instant::now() + d);
                }
                return Some(item);
            }
            if self.done {
                return None;
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
                received = self.responses.next() => match received {
                    Some(Ok(response)) => self.accept(&response),
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(error(e)));
                    }
                    None => {
                        self.done = true;
                        return Some(Err(StorageError::Unavailable(
                            "etcd ended the watch stream".into(),
                        )));
                    }
                },
                () = sleep => {
                    self.next_progress = self.progress.map(|d| Instant::now() + d);
                    if self.synced {
                        // The answer is trusted from the next notification on (type docs).
                        // A failed request means the stream is gone; its end reports that.
                        let _ = self.sender.request_progress().await;
                        return Some(Ok(Event::Progress {
                            revision: self.after.max(self.delivered).max(self.trusted),
                        }));
                    }
                }
            }
        }
    }

    /// Queues a response's events, or its error, and updates the progress state.
    fn accept(&mut self, response: &WatchResponse) {
        let header = response.header().map_or(0, ResponseHeader::revision);
        if let Some(e) = cancellation(response, self.delivered.max(self.after)) {
            self.queue.push_back(Err(e));
            return;
        }
        if response.created() {
            return;
        }
        let events = response.events();
        if events.is_empty() {
            if response.watch_id() == self.watch_id {
                // etcd's own notification: only to caught-up watchers, in order with events.
                self.synced = true;
                self.trusted = self.trusted.max(header);
            } else if self.synced
                && let Some(previous) = self.pending.replace(header)
            {
                // An answer to a progress request; the one before it is now trusted.
                self.trusted = self.trusted.max(previous);
            }
            return;
        }
        let mut last = 0;
        for event in events {
            match self.event(event) {
                Ok(Some(event)) => {
                    last = last.max(event.revision());
                    self.queue.push_back(Ok(event));
                }
                Ok(None) => {}
                Err(e) => {
                    self.queue.push_back(Err(e));
                    return;
                }
            }
        }
        self.delivered = self.delivered.max(last);
        if last > 0 && last == header {
            self.synced = true;
        }
    }

    /// The store event of an etcd event; `None` when its key maps to no store key.
    fn event(&self, event: &etcd_client::Event) -> Result<Option<Event>, StorageError> {
        let Some(kv) = event.kv() else {
            return Err(StorageError::Engine(
                "etcd sent a watch event without a key".into(),
            ));
        };
        let Some(key) = self.keys.store_key(kv.key())? else {
            return Ok(None);
        };
        let revision = kv.mod_revision();
        let prev = event.prev_kv().map(|p| KeyValue {
            key: key.clone(),
            value: Bytes::copy_from_slice(p.value()),
            create_revision: p.create_revision(),
            mod_revision: p.mod_revision(),
            decoded: crate::Decoded::default(),
        });
        // The previous state is missing only when a compaction (not this store's) overtook the
        // watch: the event cannot be told correctly, and the watch must restart.
        let lost = || StorageError::Compacted {
            requested: revision - 1,
            compacted: revision + 1,
        };
        // A deletion is a tombstone with create revision 0; etcd itself tells events apart so.
        if kv.create_revision() == 0 {
            let prev = prev.ok_or_else(lost)?;
            return Ok(Some(Event::Delete { prev, revision }));
        }
        if prev.is_none() && kv.create_revision() != revision {
            return Err(lost());
        }
        Ok(Some(Event::Put {
            kv: KeyValue {
                key,
                value: Bytes::copy_from_slice(kv.value()),
                create_revision: kv.create_revision(),
                mod_revision: revision,
                decoded: crate::Decoded::default(),
            },
            prev,
        }))
    }
}

#[cfg(test)]
mod tests;
