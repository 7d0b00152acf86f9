use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use super::{Capacities, MAX_VALUE_BYTES, SqliteStore};
use crate::test_support::eventually;
use crate::{Event, ListRequest, StorageError, Store, WatchRequest, conformance};

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

async fn next(stream: &mut crate::WatchStream) -> Result<Event, StorageError> {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("timed out waiting for a watch item")
        .expect("watch ended")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite() {
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    conformance::run_all(store).await;
}

#[tokio::test]
async fn conformance_suite_current_thread() {
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    conformance::run_all(store).await;
}

#[tokio::test]
async fn open_creates_parents_and_accepts_a_directory() {
    let dir = temp();
    let nested = dir.path().join("a/b/c/state.db");
    let store = SqliteStore::open(&nested).expect("open nested");
    assert!(nested.exists());
    assert_eq!(store.path(), nested);
    drop(store);
    let store = SqliteStore::open(dir.path()).expect("open directory");
    assert_eq!(store.path(), dir.path().join(super::DEFAULT_FILE_NAME));
    assert_eq!(store.current_revision().await.expect("current"), 0);
}

#[tokio::test]
async fn durable_across_reopen() {
    let dir = temp();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).expect("open");
    let r1 = store
        .create("/k/a", Bytes::from_static(b"a1"))
        .await
        .expect("create");
    let r2 = store
        .update("/k/a", Bytes::from_static(b"a2"), r1)
        .await
        .expect("update");
    let r3 = store
        .create("/k/b", Bytes::from_static(b"b1"))
        .await
        .expect("create");
    let (_, r4) = store.delete("/k/b", None).await.expect("delete");
    drop(store);

    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(store.current_revision().await.expect("current"), r4);
    let a = store.get("/k/a").await.expect("get").expect("a survived");
    assert_eq!(a.value, Bytes::from_static(b"a2"));
    assert_eq!((a.create_revision, a.mod_revision), (r1, r2));
    assert!(store.get("/k/b").await.expect("get").is_none());
    // History survived too.
    let at3 = store
        .list(ListRequest {
            prefix: "/k/".into(),
            revision: Some(r3),
            ..ListRequest::default()
        })
        .await
        .expect("list at r3");
    assert_eq!(at3.items.len(), 2);
    let r5 = store
        .create("/k/c", Bytes::from_static(b"c1"))
        .await
        .expect("create");
    assert!(r5 > r4);
}

#[tokio::test]
async fn revision_survives_deleting_and_compacting_everything() {
    let dir = temp();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).expect("open");
    for i in 0..5 {
        let key = format!("/k/{i}");
        store
            .create(&key, Bytes::from_static(b"x"))
            .await
            .expect("create");
        store.delete(&key, None).await.expect("delete");
    }
    let last = store.current_revision().await.expect("current");
    assert_eq!(last, 10);
    store.compact(last).await.expect("compact");
    assert_eq!(store.compacted_revision(), last);
    drop(store);

    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(store.current_revision().await.expect("current"), last);
    assert_eq!(store.compacted_revision(), last);
    assert!(matches!(
        store
            .list(ListRequest {
                prefix: "/k/".into(),
                revision: Some(last - 1),
                ..ListRequest::default()
            })
            .await,
        Err(StorageError::Compacted { .. })
    ));
    let rev = store
        .create("/k/new", Bytes::from_static(b"y"))
        .await
        .expect("create");
    assert_eq!(rev, last + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_are_group_committed() {
    const WRITES: usize = 200;
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    let before = store.commit_count();
    let handles: Vec<_> = (0..WRITES)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .create(&format!("/c/{i:04}"), Bytes::from(vec![7_u8; 1024]))
                    .await
            })
        })
        .collect();
    let mut revisions = Vec::new();
    for handle in handles {
        revisions.push(handle.await.expect("task").expect("create"));
    }
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(revisions.len(), WRITES);
    assert_eq!(revisions, (1..=WRITES as i64).collect::<Vec<_>>());
    let commits = store.commit_count() - before;
    assert!(commits >= 1);
    assert!(
        commits < WRITES as u64,
        "{commits} commits for {WRITES} writes: no batching"
    );
    assert_eq!(store.count("/c/").await.expect("count"), WRITES as u64);
}

/// Takes the database's write lock from another connection, so the writer thread blocks on
/// its next batch until the returned connection commits.
fn block_the_writer(path: &std::path::Path) -> rusqlite::Connection {
    let blocker = rusqlite::Connection::open(path).expect("open a second connection");
    blocker
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    blocker
}

/// Spawns `n` creates of `value` under `prefix`.
fn spawn_creates(
    store: &Arc<SqliteStore>,
    prefix: &str,
    n: usize,
    value: &'static [u8],
) -> Vec<tokio::task::JoinHandle<Result<i64, StorageError>>> {
    (0..n)
        .map(|i| {
            let store = Arc::clone(store);
            let key = format!("{prefix}{i:03}");
            tokio::spawn(async move { store.create(&key, Bytes::from_static(value)).await })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_command_queue_makes_writers_wait() {
    let dir = temp();
    let path = dir.path().join("state.db");
    let capacities = Capacities {
        queue_commands: 4,
        ..Capacities::DEFAULT
    };
    let store = SqliteStore::open_with(&path, capacities).expect("open");
    let blocker = block_the_writer(&path);
    let writers = spawn_creates(&store, "/q/", 40, b"x");
    // The writer holds one batch and waits for the lock; the queue fills to its bound.
    eventually("the queue is full", || store.queued_commands() == 4).await;
    // A further write cannot even enqueue: its future is pending, the queue does not grow.
    let mut extra = Box::pin(store.create("/q/extra", Bytes::from_static(b"x")));
    assert!(futures::poll!(extra.as_mut()).is_pending());
    assert_eq!(store.queued_commands(), 4);

    blocker.execute_batch("COMMIT").expect("release the lock");
    let (written, extra) = futures::join!(futures::future::join_all(writers), extra);
    for w in written {
        w.expect("task").expect("a waiting write succeeds");
    }
    extra.expect("the extra write succeeds");
    assert_eq!(store.count("/q/").await.expect("count"), 41);
    assert_eq!(store.queued_commands(), 0);
    // Still group commit: the 41 writes did not take one transaction each.
    assert!(
        store.commit_count() < 41,
        "{} commits",
        store.commit_count()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_bytes_are_bounded() {
    let dir = temp();
    let path = dir.path().join("state.db");
    let capacities = Capacities {
        queue_bytes: 8,
        ..Capacities::DEFAULT
    };
    let store = SqliteStore::open_with(&path, capacities).expect("open");
    let blocker = block_the_writer(&path);
    let writers = spawn_creates(&store, "/b/", 10, b"four");
    // Two 4-byte values fill the budget (queued or in the blocked batch); the rest wait.
    eventually("the byte budget is used up", || store.queued_bytes() == 8).await;
    // Polled from here on with the others: the budget is handed out in order, so a queued write
    // that is not polled would keep what it was handed, and the writes behind it would wait
    // forever (a test that awaited the writers first hung under load).
    let mut extra = Box::pin(store.create("/b/extra", Bytes::from_static(b"four")));
    assert!(futures::poll!(extra.as_mut()).is_pending());
    assert!(store.queued_commands() <= 2, "{}", store.queued_commands());
    // A value larger than the whole budget still gets through once it is alone.
    let big = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.create("/b/big", Bytes::from(vec![1_u8; 64])).await })
    };

    blocker.execute_batch("COMMIT").expect("release the lock");
    let (written, extra, big) = futures::join!(futures::future::join_all(writers), extra, big);
    for w in written {
        w.expect("task").expect("a waiting write succeeds");
    }
    extra.expect("the extra write succeeds");
    big.expect("task").expect("the large write succeeds");
    assert_eq!(store.count("/b/").await.expect("count"), 12);
    assert_eq!(store.queued_bytes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_cas_in_a_batch_affects_no_other_command() {
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    let r1 = store
        .create("/cas/k", Bytes::from_static(b"0"))
        .await
        .expect("create");
    let handles: Vec<_> = (0..50)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let own = format!("/cas/own-{i}");
                let own_rev = store.create(&own, Bytes::from_static(b"x")).await;
                let shared = store
                    .update("/cas/k", Bytes::from(format!("{i}")), r1)
                    .await;
                (own_rev, shared)
            })
        })
        .collect();
    let mut winners = 0;
    for handle in handles {
        let (own, shared) = handle.await.expect("task");
        own.expect("unrelated create succeeds");
        match shared {
            Ok(_) => winners += 1,
            Err(StorageError::Conflict {
                expected, current, ..
            }) => {
                assert_eq!(expected, r1);
                assert!(current.mod_revision > r1);
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(winners, 1);
    assert_eq!(store.count("/cas/own-").await.expect("count"), 50);
    // Failed commands consumed no revision: 1 create + 50 creates + 1 update.
    assert_eq!(store.current_revision().await.expect("current"), 52);
}

#[tokio::test]
async fn watch_from_zero_after_restart_replays_history() {
    let dir = temp();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).expect("open");
    let r1 = store
        .create("/w/a", Bytes::from_static(b"1"))
        .await
        .expect("create");
    let r2 = store
        .update("/w/a", Bytes::from_static(b"2"), r1)
        .await
        .expect("update");
    let (_, r3) = store.delete("/w/a", Some(r2)).await.expect("delete");
    drop(store);

    let store = SqliteStore::open(&path).expect("reopen");
    let mut stream = store
        .watch(WatchRequest {
            prefix: "/w/".into(),
            after: 0,
            progress_interval: None,
        })
        .await
        .expect("watch");
    match next(&mut stream).await.expect("event") {
        Event::Put { kv, prev: None } => assert_eq!(kv.mod_revision, r1),
        other => panic!("unexpected {other:?}"),
    }
    match next(&mut stream).await.expect("event") {
        Event::Put {
            kv,
            prev: Some(prev),
        } => {
            assert_eq!(kv.mod_revision, r2);
            assert_eq!(prev.mod_revision, r1);
            assert_eq!(prev.value, Bytes::from_static(b"1"));
        }
        other => panic!("unexpected {other:?}"),
    }
    match next(&mut stream).await.expect("event") {
        Event::Delete { prev, revision } => {
            assert_eq!(revision, r3);
            assert_eq!(prev.value, Bytes::from_static(b"2"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let r4 = store
        .create("/w/b", Bytes::from_static(b"3"))
        .await
        .expect("create");
    assert_eq!(next(&mut stream).await.expect("event").revision(), r4);
}

#[tokio::test]
async fn long_history_is_paged_in_order() {
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    // More than two history pages, written concurrently to keep the test quick.
    let total = 3 * super::HISTORY_PAGE as usize + 7;
    let handles: Vec<_> = (0..total)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .create(&format!("/h/{i:05}"), Bytes::from_static(b"x"))
                    .await
            })
        })
        .collect();
    for handle in handles {
        handle.await.expect("task").expect("create");
    }
    store
        .create("/other", Bytes::from_static(b"x"))
        .await
        .expect("create");
    let mut stream = store
        .watch(WatchRequest {
            prefix: "/h/".into(),
            after: 0,
            progress_interval: None,
        })
        .await
        .expect("watch");
    let mut last = 0;
    for _ in 0..total {
        let rev = next(&mut stream).await.expect("event").revision();
        assert!(rev > last);
        last = rev;
    }
    let live = store
        .create("/h/live", Bytes::from_static(b"x"))
        .await
        .expect("create");
    assert_eq!(next(&mut stream).await.expect("event").revision(), live);
}

#[tokio::test]
async fn too_large_values_are_refused() {
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    let big = Bytes::from(vec![0_u8; MAX_VALUE_BYTES + 1]);
    match store.create("/big", big.clone()).await {
        Err(StorageError::TooLarge { size, limit }) => {
            assert_eq!(size, MAX_VALUE_BYTES + 1);
            assert_eq!(limit, MAX_VALUE_BYTES);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let rev = store
        .create("/big", Bytes::from_static(b"small"))
        .await
        .expect("create");
    assert!(matches!(
        store.update("/big", big, rev).await,
        Err(StorageError::TooLarge { .. })
    ));
    assert_eq!(store.current_revision().await.expect("current"), rev);
}

#[tokio::test]
async fn lagging_watch_fails_with_watch_lagged() {
    let dir = temp();
    let capacities = Capacities {
        events: 4,
        ..Capacities::DEFAULT
    };
    let store = SqliteStore::open_with(&dir.path().join("state.db"), capacities).expect("open");
    let mut stream = store
        .watch(WatchRequest {
            prefix: "/lag/".into(),
            after: 0,
            progress_interval: None,
        })
        .await
        .expect("watch");
    // Sequential writes, one batch each, without reading the watch.
    for i in 0..10 {
        store
            .create(&format!("/lag/{i}"), Bytes::from_static(b"x"))
            .await
            .expect("create");
    }
    assert!(matches!(
        next(&mut stream).await,
        Err(StorageError::WatchLagged)
    ));
    assert!(
        stream.next().await.is_none(),
        "the stream ends after the error"
    );
}

#[tokio::test]
async fn dropping_the_store_ends_watches() {
    let dir = temp();
    let store = SqliteStore::open(&dir.path().join("state.db")).expect("open");
    let mut stream = store.watch(WatchRequest::default()).await.expect("watch");
    drop(store);
    let end = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("watch did not end");
    assert!(end.is_none());
}

#[tokio::test]
async fn compaction_keeps_what_later_revisions_need() {
    let dir = temp();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).expect("open");
    // Many versions of one key, a deleted key, and a key untouched since early on.
    let r_keep = store
        .create("/x/keep", Bytes::from_static(b"k"))
        .await
        .expect("create");
    let mut rev = store
        .create("/x/hot", Bytes::from_static(b"0"))
        .await
        .expect("create");
    for i in 1..20 {
        rev = store
            .update("/x/hot", Bytes::from(format!("{i}")), rev)
            .await
            .expect("update");
    }
    store
        .create("/x/gone", Bytes::from_static(b"g"))
        .await
        .expect("create");
    store.delete("/x/gone", None).await.expect("delete");
    let target = store.current_revision().await.expect("current");
    store.compact(target).await.expect("compact");
    let log_rows: i64 = super::open_reader(&path)
        .expect("reader")
        .query_row("SELECT count(*) FROM log", [], |row| row.get(0))
        .expect("count");
    // keep, the latest hot, the deletion at the target itself and the state it deleted (the
    // previous state of an event a watch from `target - 1` still receives).
    assert_eq!(log_rows, 4);
    let at = store
        .list(ListRequest {
            prefix: "/x/".into(),
            revision: Some(target),
            ..ListRequest::default()
        })
        .await
        .expect("list at compaction revision");
    let keys: Vec<_> = at.items.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["/x/hot", "/x/keep"]);
    assert_eq!(at.items[1].mod_revision, r_keep);
    assert_eq!(at.items[0].value, Bytes::from_static(b"19"));
}

/// A command's savepoint keeps what the command wrote when released and undoes it when
/// dropped, leaving the transaction's other commands and later savepoints intact.
#[test]
fn a_commands_savepoint_keeps_or_undoes_only_its_own_writes() {
    use rusqlite::Connection;
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch("CREATE TABLE t (v INTEGER)")
        .expect("schema");
    let tx = conn.unchecked_transaction().expect("begin");
    let write = |v: i64| {
        let sp = super::CommandSavepoint::begin(&tx).expect("savepoint");
        tx.execute("INSERT INTO t (v) VALUES (?1)", [v])
            .expect("insert");
        sp
    };
    write(1).release().expect("release");
    drop(write(2));
    write(3).release().expect("release");
    drop(write(4));
    tx.commit().expect("commit");
    let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").expect("prepare");
    let kept: Vec<i64> = stmt
        .query_map([], |row| row.get(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    assert_eq!(kept, [1, 3]);
}

/// Regression: the database (which holds Secrets) and its WAL were created world-readable in a
/// world-readable directory. A new data dir is the owner's alone, and so are the files.
#[cfg(unix)]
#[tokio::test]
async fn a_new_database_and_its_directory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp();
    let data = dir.path().join("data");
    let store = SqliteStore::open(&data.join("state.db")).expect("open");
    store
        .create("/registry/secrets/default/s", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    for file in ["state.db", "state.db-wal", "state.db-shm"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
}
