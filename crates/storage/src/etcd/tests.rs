//! Tests of the etcd engine against real etcd processes.
//!
//! Every test starts its own etcd (the `etcd` binary on `PATH`, or `$ETCD_BIN`) on free loopback
//! ports with a throwaway data directory, and kills it when done. Without the binary the tests
//! fail; they never skip.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use super::{DEFAULT_PREFIX, EtcdConfig, EtcdStore};
use crate::{
    Event, KeyValue, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest,
    WatchStream, conformance,
};

/// How long a test waits for etcd to serve after starting it.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a test waits for one watch item.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// A throwaway etcd

/// A private etcd process; killed, and its data removed, on drop.
struct TestEtcd {
    child: Child,
    /// Removed (after `drop` has killed etcd) when the value goes.
    _dir: tempfile::TempDir,
    endpoint: String,
    tls: Option<TlsFiles>,
}

#[derive(Clone)]
struct TlsFiles {
    ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

impl TestEtcd {
    async fn start() -> TestEtcd {
        TestEtcd::start_with(&[], None).await
    }

    /// Starts etcd with `extra` flags; with `tls`, the client URL is `https` and the flags must
    /// configure the serving certificate.
    async fn start_with(extra: &[String], tls: Option<TlsFiles>) -> TestEtcd {
        let binary = etcd_binary();
        let mut last_log = String::new();
        // A port picked free may be taken before etcd binds it; try a few pairs.
        for _ in 0..5 {
            let dir = data_dir();
            let (client_port, peer_port) = (free_port(), free_port());
            let scheme = if tls.is_some() { "https" } else { "http" };
            let client_url = format!("{scheme}://127.0.0.1:{client_port}");
            let peer_url = format!("http://127.0.0.1:{peer_port}");
            let log_path = dir.path().join("etcd.log");
            let log = std::fs::File::create(&log_path).expect("create the etcd log file");
            let child = Command::new(&binary)
                .arg("--name=test")
                .arg(format!("--data-dir={}", dir.path().join("data").display()))
                .arg(format!("--listen-client-urls={client_url}"))
                .arg(format!("--advertise-client-urls={client_url}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster=test={peer_url}"))
                .arg("--initial-cluster-state=new")
                .args(["--logger=zap", "--log-level=warn"])
                // Test-only: a single member elects itself in milliseconds.
                .args(["--heartbeat-interval=10", "--election-timeout=100"])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::from(log.try_clone().expect("clone the log handle")))
                .stderr(Stdio::from(log))
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
            let mut etcd = TestEtcd {
                child,
                _dir: dir,
                endpoint: client_url,
                tls: tls.clone(),
            };
            if etcd.wait_ready().await {
                return etcd;
            }
            last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let _ = etcd.child.kill();
        }
        panic!("etcd did not become ready; its last log:\n{last_log}");
    }

    /// Waits until the client port serves reads; false if etcd exited or never got there.
    async fn wait_ready(&mut self) -> bool {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let addr = self
            .endpoint
            .rsplit('/')
            .next()
            .expect("an endpoint with a host")
            .to_owned();
        while tokio::time::Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return false;
            }
            if TcpStream::connect(&addr).is_ok()
                && let Ok(Ok(_)) =
                    tokio::time::timeout(Duration::from_secs(2), EtcdStore::connect(self.config()))
                        .await
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// A store configuration for this etcd, with the default prefix.
    fn config(&self) -> EtcdConfig {
        let mut config = EtcdConfig::new([self.endpoint.clone()]);
        if let Some(tls) = &self.tls {
            config.ca_file = Some(tls.ca.clone());
            config.cert_file = Some(tls.client_cert.clone());
            config.key_file = Some(tls.client_key.clone());
        }
        config
    }

    async fn store(&self, prefix: &str) -> Arc<EtcdStore> {
        EtcdStore::connect(EtcdConfig {
            prefix: prefix.to_owned(),
            ..self.config()
        })
        .await
        .expect("connect to the test etcd")
    }

    /// A plain etcd client, to look at the raw keys.
    async fn raw(&self) -> etcd_client::Client {
        etcd_client::Client::connect([self.endpoint.as_str()], None)
            .await
            .expect("raw etcd client")
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The etcd binary: `$ETCD_BIN`, or `etcd` on `PATH`. Panics, failing the test, without one.
fn etcd_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("ETCD_BIN") {
        return PathBuf::from(bin);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("etcd"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the etcd engine tests need an etcd server binary: none named `etcd` is on PATH \
                 and ETCD_BIN is unset. Install one (Debian: `apt-get install -y etcd-server`) \
                 or set ETCD_BIN; these tests fail rather than skip."
            )
        })
}

/// A data directory on tmpfs when there is one: etcd 3.4 fsyncs every commit.
fn data_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix("crd-storage-etcd-");
        b
    };
    if shm.is_dir()
        && let Ok(dir) = builder.tempdir_in(shm)
    {
        return dir;
    }
    builder.tempdir().expect("temporary directory")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn next_item(stream: &mut WatchStream) -> Result<Event, StorageError> {
    tokio::time::timeout(EVENT_TIMEOUT, stream.next())
        .await
        .expect("timed out waiting for a watch item")
        .expect("watch ended")
}

// ---------------------------------------------------------------------------------------------
// The conformance suite

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    conformance::run_all(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_through_the_shared_watch() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    let shared = crate::fanout::FanoutStore::new(store, "/conformance/")
        .await
        .expect("shared watch");
    conformance::run_all(shared).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_through_the_watch_cache() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    let shared = crate::fanout::FanoutStore::new(store, "/conformance/")
        .await
        .expect("shared watch");
    let cache = crate::cache::CacheStore::new(
        shared,
        crate::cache::CacheConfig::new("/conformance/", None),
    );
    cache.wait_ready().await;
    conformance::run_all(cache).await;
}

/// A consistent get through the watch cache sees every write acknowledged before it was issued,
/// whoever wrote it: another client connection (a raw etcd put, as another kube-apiserver would
/// write) or this store's own. Readers run concurrently so that revision requests are batched and
/// pipelined; each reader's write must be visible to its own read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_get_sees_writes_acknowledged_on_another_connection() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    let shared = crate::fanout::FanoutStore::new(store.clone(), "/registry/")
        .await
        .expect("shared watch");
    let cache =
        crate::cache::CacheStore::new(shared, crate::cache::CacheConfig::new("/registry/", None));
    cache.wait_ready().await;
    let readers = (0..16).map(|r| {
        let cache = cache.clone();
        let store = store.clone();
        let endpoint = etcd.endpoint.clone();
        async move {
            let mut raw = etcd_client::Client::connect([endpoint.as_str()], None)
                .await
                .expect("raw client");
            let key = format!("/registry/widgets/default/w{r}");
            for i in 0..40 {
                let value = format!("{r}-{i}");
                if i % 4 == 3 {
                    // This store's own connection, bypassing the cache.
                    let current = store.get(&key).await.expect("get").expect("exists");
                    store
                        .update(&key, b(&value), current.mod_revision)
                        .await
                        .expect("update");
                } else {
                    raw.put(key.as_str(), value.as_str(), None)
                        .await
                        .expect("raw put");
                }
                let got = cache.get(&key).await.expect("cached get").expect("present");
                assert_eq!(got.value, b(&value), "reader {r}, write {i}");
            }
        }
    });
    futures::future::join_all(readers).await;
    // And a write outside every cached key still bounds the next read (the cache catches up
    // through progress, not events).
    let mut raw = etcd.raw().await;
    raw.put("/elsewhere", "x", None).await.expect("raw put");
    let key = "/registry/widgets/default/w0";
    let got = cache.get(key).await.expect("cached get").expect("present");
    assert_eq!(got.value, b("0-39"));
}

#[tokio::test]
async fn conformance_suite_current_thread() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    conformance::run_all(store).await;
}

/// The suite's keys live outside `/registry/`; this adapter moves them under it so that the
/// suite exercises the prefix mapping of every operation.
struct UnderRegistry(Arc<EtcdStore>);

fn inner(key: &str) -> String {
    format!("{DEFAULT_PREFIX}{key}")
}

fn outer(key: &str) -> String {
    key.strip_prefix(DEFAULT_PREFIX)
        .unwrap_or_else(|| panic!("the store returned {key}, outside {DEFAULT_PREFIX}"))
        .to_owned()
}

fn outer_kv(kv: KeyValue) -> KeyValue {
    KeyValue {
        key: outer(&kv.key),
        ..kv
    }
}

fn outer_error(e: StorageError) -> StorageError {
    match e {
        StorageError::AlreadyExists { key, existing } => StorageError::AlreadyExists {
            key: outer(&key),
            existing: outer_kv(existing),
        },
        StorageError::NotFound { key } => StorageError::NotFound { key: outer(&key) },
        StorageError::Conflict {
            key,
            expected,
            current,
        } => StorageError::Conflict {
            key: outer(&key),
            expected,
            current: outer_kv(current),
        },
        other => other,
    }
}

#[async_trait]
impl Store for UnderRegistry {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        Ok(self.0.get(&inner(key)).await?.map(outer_kv))
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        let response = self
            .0
            .list(ListRequest {
                prefix: inner(&request.prefix),
                start_after: request.start_after.as_deref().map(inner),
                ..request
            })
            .await?;
        Ok(ListResponse {
            items: response.items.into_iter().map(outer_kv).collect(),
            ..response
        })
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.0.count(&inner(prefix)).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        self.0.create(&inner(key), value).await.map_err(outer_error)
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        self.0
            .update(&inner(key), value, expected)
            .await
            .map_err(outer_error)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let (prev, revision) = self
            .0
            .delete(&inner(key), expected)
            .await
            .map_err(outer_error)?;
        Ok((outer_kv(prev), revision))
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        let stream = self
            .0
            .watch(WatchRequest {
                prefix: inner(&request.prefix),
                ..request
            })
            .await?;
        Ok(Box::pin(stream.map(|item| {
            item.map(|event| match event {
                Event::Put { kv, prev } => Event::Put {
                    kv: outer_kv(kv),
                    prev: prev.map(outer_kv),
                },
                Event::Delete { prev, revision } => Event::Delete {
                    prev: outer_kv(prev),
                    revision,
                },
                progress @ Event::Progress { .. } => progress,
            })
        })))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.0.current_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.0.compact(revision).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_under_a_custom_prefix() {
    let etcd = TestEtcd::start().await;
    // A trailing slash is ignored, as kube-apiserver's path joining ignores it.
    let store = etcd.store("/tenant-a/").await;
    assert_eq!(store.prefix(), "/tenant-a");
    conformance::run_all(Arc::new(UnderRegistry(store))).await;

    let mut raw = etcd.raw().await;
    let count = |prefix: &'static str| {
        let mut raw = raw.clone();
        async move {
            raw.get(
                prefix,
                Some(
                    etcd_client::GetOptions::new()
                        .with_prefix()
                        .with_count_only(),
                ),
            )
            .await
            .expect("raw count")
            .count()
        }
    };
    assert!(count("/tenant-a/conformance/").await > 0);
    assert_eq!(count("/registry/").await, 0);
    assert_eq!(count("/conformance/").await, 0);
    let all = raw
        .get(
            "",
            Some(
                etcd_client::GetOptions::new()
                    .with_all_keys()
                    .with_keys_only(),
            ),
        )
        .await
        .expect("raw keys");
    for kv in all.kvs() {
        let key = String::from_utf8_lossy(kv.key());
        assert!(key.starts_with("/tenant-a/conformance/"), "{key}");
    }
}

// ---------------------------------------------------------------------------------------------
// Prefixes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefixes_isolate_stores() {
    let etcd = TestEtcd::start().await;
    let default = etcd.store(DEFAULT_PREFIX).await;
    let tenant = etcd.store("/tenant-b").await;
    let key = "/registry/stable.example.com/crontabs/default/a";
    let resource = "/registry/stable.example.com/crontabs/";

    let start = default.current_revision().await.expect("current");
    let mut tenant_watch = tenant
        .watch(WatchRequest {
            prefix: "/registry/".into(),
            after: start,
            progress_interval: None,
        })
        .await
        .expect("watch");
    let r1 = default.create(key, b("default")).await.expect("create");
    let r2 = tenant.create(key, b("tenant")).await.expect("create");
    assert!(r2 > r1, "both stores share etcd's revision");

    // Each store sees only its own key, by get, list, count and watch.
    let got = default.get(key).await.expect("get").expect("key");
    assert_eq!((got.key.as_str(), got.value.clone()), (key, b("default")));
    let got = tenant.get(key).await.expect("get").expect("key");
    assert_eq!((got.key.as_str(), got.value.clone()), (key, b("tenant")));
    for (store, value) in [(&default, "default"), (&tenant, "tenant")] {
        let list = store
            .list(ListRequest {
                prefix: resource.into(),
                ..ListRequest::default()
            })
            .await
            .expect("list");
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.items[0].key, key);
        assert_eq!(list.items[0].value, b(value));
        assert_eq!(store.count("/registry/").await.expect("count"), 1);
    }
    match next_item(&mut tenant_watch).await.expect("event") {
        Event::Put { kv, prev: None } => {
            assert_eq!(kv.key, key);
            assert_eq!(kv.value, b("tenant"));
            assert_eq!(kv.mod_revision, r2);
        }
        other => panic!("expected the tenant's create, got {other:?}"),
    }

    // The raw layout: the default prefix stores keys as they are; another replaces /registry.
    let mut raw = etcd.raw().await;
    let value = |response: etcd_client::GetResponse| {
        response
            .kvs()
            .first()
            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
    };
    assert_eq!(
        value(raw.get(key, None).await.expect("raw get")).as_deref(),
        Some("default")
    );
    assert_eq!(
        value(
            raw.get("/tenant-b/stable.example.com/crontabs/default/a", None)
                .await
                .expect("raw get")
        )
        .as_deref(),
        Some("tenant")
    );
    let keys = raw
        .get(
            "",
            Some(
                etcd_client::GetOptions::new()
                    .with_all_keys()
                    .with_keys_only(),
            ),
        )
        .await
        .expect("raw keys");
    let mut keys: Vec<String> = keys
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [key, "/tenant-b/stable.example.com/crontabs/default/a"]
    );

    // Keys outside /registry/ are stored verbatim...
    tenant
        .create("/elsewhere/x", b("x"))
        .await
        .expect("create outside /registry");
    assert!(
        raw.get("/elsewhere/x", None)
            .await
            .expect("raw get")
            .kvs()
            .len()
            == 1
    );
    // ...unless they would collide with mapped keys, and reads may not span the mapping.
    assert!(matches!(
        tenant.create("/tenant-b/x", b("x")).await,
        Err(StorageError::Engine(_))
    ));
    for prefix in ["/", "", "/reg", "/registry", "/tenant"] {
        let listed = tenant
            .list(ListRequest {
                prefix: prefix.into(),
                ..ListRequest::default()
            })
            .await;
        assert!(
            matches!(listed, Err(StorageError::Engine(_))),
            "{prefix:?}: {listed:?}"
        );
        assert!(tenant.count(prefix).await.is_err());
    }
    // The default prefix maps nothing, so every prefix is fine there.
    assert_eq!(
        default
            .list(ListRequest {
                prefix: "/".into(),
                ..ListRequest::default()
            })
            .await
            .expect("list /")
            .items
            .len(),
        3
    );
}

#[tokio::test]
async fn configuration_errors_are_reported() {
    let etcd = TestEtcd::start().await;
    let bad = |change: fn(&mut EtcdConfig)| {
        let mut config = etcd.config();
        change(&mut config);
        EtcdStore::connect(config)
    };
    assert!(matches!(
        bad(|c| c.endpoints.clear()).await,
        Err(StorageError::Engine(_))
    ));
    assert!(matches!(
        bad(|c| c.prefix = "/".into()).await,
        Err(StorageError::Engine(_))
    ));
    assert!(matches!(
        bad(|c| c.cert_file = Some("/nonexistent/cert.pem".into())).await,
        Err(StorageError::Engine(_))
    ));
    assert!(matches!(
        bad(|c| c.ca_file = Some("/nonexistent/ca.pem".into())).await,
        Err(StorageError::Unavailable(_))
    ));
    // Nothing listens there: refused, not hung.
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let started = std::time::Instant::now();
    let refused = EtcdStore::connect(EtcdConfig::new([nobody])).await;
    assert!(
        matches!(refused, Err(StorageError::Unavailable(_))),
        "{refused:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(25));
}

// ---------------------------------------------------------------------------------------------
// Compaction made by someone else, sizes, progress, TLS

#[tokio::test]
async fn compaction_by_another_client_is_reported() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    let key = "/registry/things/k";
    let r1 = store.create(key, b("v")).await.expect("create");
    let (_, r2) = store.delete(key, None).await.expect("delete");
    store
        .create("/registry/things/l", b("l"))
        .await
        .expect("create");
    // Compacted exactly at the deletion, by someone else.
    etcd.raw()
        .await
        .compact(r2, None)
        .await
        .expect("raw compaction");

    match store
        .list(ListRequest {
            prefix: "/registry/things/".into(),
            revision: Some(r1),
            ..ListRequest::default()
        })
        .await
    {
        Err(StorageError::Compacted {
            requested,
            compacted,
        }) => assert_eq!((requested, compacted), (r1, r2)),
        other => panic!("expected Compacted, got {other:?}"),
    }
    // etcd's compaction at r2 dropped the deletion at r2 from history, so a watch must start
    // above it: etcd's compaction revision plus one, as the watch contract puts it.
    for after in [r1 - 1, r2 - 1] {
        match store
            .watch(WatchRequest {
                prefix: "/registry/things/".into(),
                after,
                progress_interval: None,
            })
            .await
        {
            Err(StorageError::Compacted {
                requested,
                compacted,
            }) => assert_eq!((requested, compacted), (after, r2 + 1)),
            Ok(_) => panic!("expected Compacted from {after}, got a stream"),
            Err(other) => panic!("expected Compacted from {after}, got {other:?}"),
        }
    }
    let mut stream = store
        .watch(WatchRequest {
            prefix: "/registry/things/".into(),
            after: r2,
            progress_interval: None,
        })
        .await
        .expect("watch from the compaction revision");
    match next_item(&mut stream).await.expect("event") {
        Event::Put { kv, prev: None } => assert_eq!(kv.key, "/registry/things/l"),
        other => panic!("expected the create of l, got {other:?}"),
    }
    // Lists at the compaction revision still work.
    let at = store
        .list(ListRequest {
            prefix: "/registry/things/".into(),
            revision: Some(r2),
            ..ListRequest::default()
        })
        .await
        .expect("list at etcd's compaction revision");
    assert!(at.items.is_empty());
    // Our own compaction below etcd's is accepted and changes nothing.
    store.compact(r1).await.expect("compact below etcd's");
}

#[tokio::test]
async fn values_beyond_the_etcd_request_limit_are_too_large() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    // Above etcd's --max-request-bytes (1.5 MiB), and above its gRPC receive limit (2 MiB).
    for size in [1800 * 1024, 2 * 1024 * 1024] {
        let big = Bytes::from(vec![b'x'; size]);
        match store.create("/registry/big/a", big).await {
            Err(StorageError::TooLarge { size: got, .. }) => assert_eq!(got, size),
            other => panic!("expected TooLarge for {size} bytes, got {other:?}"),
        }
    }
    let big = Bytes::from(vec![b'x'; 2 * 1024 * 1024]);
    let rev = store
        .create("/registry/big/a", b("small"))
        .await
        .expect("create");
    assert!(matches!(
        store.update("/registry/big/a", big, rev).await,
        Err(StorageError::TooLarge { .. })
    ));
}

/// A watch whose history holds nothing for its prefix gets progress once etcd's own
/// notification proves it caught up.
#[tokio::test]
async fn idle_watch_gets_progress_from_etcd_notifications() {
    let etcd = TestEtcd::start_with(
        &["--experimental-watch-progress-notify-interval=200ms".into()],
        None,
    )
    .await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    let r1 = store
        .create("/registry/other/a", b("a"))
        .await
        .expect("create");
    let r2 = store
        .create("/registry/other/b", b("b"))
        .await
        .expect("create");
    let mut stream = store
        .watch(WatchRequest {
            prefix: "/registry/quiet/".into(),
            after: r1 - 1,
            progress_interval: Some(Duration::from_millis(50)),
        })
        .await
        .expect("watch");
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no progress reached {r2}"
        );
        match next_item(&mut stream).await.expect("watch item") {
            Event::Progress { revision } if revision >= r2 => break,
            Event::Progress { revision } => assert!(revision >= r1 - 1),
            other => panic!("unexpected event {other:?}"),
        }
    }
    let r3 = store
        .create("/registry/quiet/x", b("x"))
        .await
        .expect("create");
    loop {
        match next_item(&mut stream).await.expect("watch item") {
            Event::Progress { revision } => assert!(revision < r3),
            event => {
                assert_eq!(event.revision(), r3);
                break;
            }
        }
    }
}

#[tokio::test]
async fn tls_with_client_certificates() {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };

    let files = data_dir();
    let write = |name: &str, pem: &str| {
        let path = files.path().join(name);
        std::fs::write(&path, pem).expect("write a PEM file");
        path
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "test etcd CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().expect("CA key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(names).expect("params");
        params.distinguished_name.push(DnType::CommonName, "test");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &issuer).expect("certificate");
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (client_cert, client_key) = leaf(vec![], ExtendedKeyUsagePurpose::ClientAuth);
    let tls = TlsFiles {
        ca: write("ca.pem", &ca_cert.pem()),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client-key.pem", &client_key),
    };
    let server_cert = write("server.pem", &server_cert);
    let server_key = write("server-key.pem", &server_key);

    let etcd = TestEtcd::start_with(
        &[
            format!("--cert-file={}", server_cert.display()),
            format!("--key-file={}", server_key.display()),
            format!("--trusted-ca-file={}", tls.ca.display()),
            "--client-cert-auth".into(),
        ],
        Some(tls.clone()),
    )
    .await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    let rev = store
        .create("/registry/tls/a", b("secret"))
        .await
        .expect("create over TLS");
    let kv = store
        .get("/registry/tls/a")
        .await
        .expect("get")
        .expect("key");
    assert_eq!(kv.mod_revision, rev);

    // Without a client certificate etcd refuses the connection.
    let refused = EtcdStore::connect(EtcdConfig {
        cert_file: None,
        key_file: None,
        ..etcd.config()
    })
    .await;
    assert!(
        matches!(refused, Err(StorageError::Unavailable(_))),
        "{refused:?}"
    );
}

/// Progress never claims a revision that a later event is at or below: not while a long history
/// replays in batches, nor while writes keep arriving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_never_overtakes_events() {
    let etcd = TestEtcd::start().await;
    let store = etcd.store(DEFAULT_PREFIX).await;
    // More than etcd's 1000 revisions per history batch, with foreign writes in between.
    for chunk in 0..30 {
        let writes = (0..100).map(|i| {
            let store = Arc::clone(&store);
            async move {
                let n = chunk * 100 + i;
                let key = if n % 10 == 9 {
                    format!("/registry/elsewhere/{n:05}")
                } else {
                    format!("/registry/many/{n:05}")
                };
                store.create(&key, b("x")).await.expect("create");
            }
        });
        futures::future::join_all(writes).await;
    }
    let mut stream = store
        .watch(WatchRequest {
            prefix: "/registry/many/".into(),
            after: 0,
            progress_interval: Some(Duration::from_millis(2)),
        })
        .await
        .expect("watch");
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let mut last = 0;
            for n in 0..150 {
                let prefix = if n % 3 == 0 { "elsewhere" } else { "many" };
                last = store
                    .create(&format!("/registry/{prefix}/live-{n:05}"), b("x"))
                    .await
                    .expect("create");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let final_rev = store
                .create("/registry/many/final", b("x"))
                .await
                .expect("create");
            assert!(final_rev > last);
            final_rev
        })
    };
    let (mut progress, mut previous, mut events, mut notifications) = (0, 0, 0, 0);
    loop {
        match next_item(&mut stream).await.expect("watch item") {
            Event::Progress { revision } => {
                assert!(revision >= progress, "progress went back");
                progress = revision;
                notifications += 1;
            }
            event => {
                let revision = event.revision();
                assert!(revision > previous, "events out of order");
                assert!(
                    revision > progress,
                    "event at {revision} after progress at {progress}"
                );
                previous = revision;
                events += 1;
                if matches!(&event, Event::Put { kv, .. } if kv.key == "/registry/many/final") {
                    break;
                }
            }
        }
    }
    assert_eq!(events, 2700 + 100 + 1);
    assert_eq!(previous, writer.await.expect("writer"));
    assert!(
        notifications > 0,
        "an idle moment between live writes sends progress"
    );
}

// ---------------------------------------------------------------------------------------------
// The key mapping alone (no etcd)

#[test]
fn key_mapping_round_trips_and_refuses_collisions() {
    use super::{KeyMap, RawRange};

    let identity = KeyMap::new("/registry/").expect("default prefix");
    assert!(identity.identity());
    for key in ["/registry/a", "/elsewhere", "", "/registryx"] {
        assert_eq!(identity.to_etcd(key).expect("map"), key.as_bytes());
        assert_eq!(
            identity.store_key(key.as_bytes()).expect("back").as_deref(),
            Some(key)
        );
    }

    // A prefix nested under /registry itself still maps both ways.
    for prefix in ["/tenant", "/registry/tenant", "/reg"] {
        let map = KeyMap::new(prefix).expect("prefix");
        for key in ["/registry", "/registry/a/b", "/elsewhere/x", "/registryx"] {
            let raw = map.to_etcd(key).expect("map");
            assert_eq!(
                map.store_key(&raw).expect("back").as_deref(),
                Some(key),
                "{prefix}: {key}"
            );
        }
    }
    let map = KeyMap::new("/tenant").expect("prefix");
    assert_eq!(map.to_etcd("/registry/a").expect("map"), b"/tenant/a");
    assert!(map.to_etcd("/tenant/a").is_err());
    assert_eq!(map.store_key(b"/registry/a").expect("foreign"), None);
    assert!(map.store_key(b"/tenant/\xff").is_err());
    assert!(KeyMap::new("").is_err());
    assert!(KeyMap::new("///").is_err());

    let range = RawRange::prefix(b"/a\xff\xff".to_vec());
    assert_eq!(range.end, b"/b");
    let range = RawRange::prefix(b"\xff".to_vec());
    assert_eq!(range.end, [0]);
    let range = RawRange::prefix(Vec::new());
    assert_eq!((range.start, range.end), (vec![0], vec![0]));
}
