//! The conformance suite every [`Store`] engine must pass.
//!
//! Each check writes under its own unique key prefix, so the suite can run against a store that
//! other tests use at the same time. [`check_compaction`] is the exception in effect, not in
//! keys: compaction forgets history store-wide, so run the suite on a store whose other users do
//! not read old revisions.
//!
//! Checks panic (with `assert!`) on the first deviation, as tests do.

// Every check panics on a deviation by design; the module doc says so once.
#![allow(clippy::missing_panics_doc)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::StreamExt;

use crate::{
    Event, Freshness, KeyValue, ListRequest, Revision, StorageError, Store, WatchRequest,
    WatchStream,
};

/// How long a check waits for a watch event before failing.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs every check in order.
pub async fn run_all(store: Arc<dyn Store>) {
    check_create_get(store.as_ref()).await;
    check_update_cas(store.as_ref()).await;
    check_not_found(store.as_ref()).await;
    check_delete(store.as_ref()).await;
    check_revisions_increase(store.as_ref()).await;
    check_list_paging(store.as_ref()).await;
    check_list_past_revision(store.as_ref()).await;
    check_pages_at_a_past_revision(store.as_ref()).await;
    check_count(store.as_ref()).await;
    check_future_revision(store.as_ref()).await;
    check_get_freshness(store.as_ref()).await;
    check_list_freshness(store.as_ref()).await;
    check_watch_history_then_live(store.as_ref()).await;
    check_watch_prefix_filter(store.as_ref()).await;
    check_watch_delete_prev(store.as_ref()).await;
    check_watch_future_revision(store.as_ref()).await;
    check_progress(store.as_ref()).await;
    check_progress_under_writes(store.as_ref(), 4, 200).await;
    check_concurrent_creates(Arc::clone(&store), 64).await;
    check_compaction(store.as_ref()).await;
}

/// A key prefix no other check (in this or another process) uses.
pub fn unique_prefix(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("/conformance/{name}/{}-{nanos}-{n}/", std::process::id())
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn keys(items: &[KeyValue]) -> Vec<&str> {
    items.iter().map(|kv| kv.key.as_str()).collect()
}

async fn list(store: &dyn Store, prefix: &str, revision: Option<Revision>) -> Vec<KeyValue> {
    store
        .list(ListRequest {
            prefix: prefix.to_owned(),
            revision,
            ..ListRequest::default()
        })
        .await
        .expect("list")
        .items
}

async fn watch(store: &dyn Store, prefix: &str, after: Revision) -> WatchStream {
    store
        .watch(WatchRequest {
            prefix: prefix.to_owned(),
            after,
            progress_interval: None,
        })
        .await
        .expect("watch")
}

/// The next non-progress event of a watch, failing after [`EVENT_TIMEOUT`].
async fn next_event(stream: &mut WatchStream) -> Event {
    loop {
        let item = tokio::time::timeout(EVENT_TIMEOUT, stream.next())
            .await
            .expect("timed out waiting for a watch event")
            .expect("watch ended")
            .expect("watch failed");
        if !matches!(item, Event::Progress { .. }) {
            return item;
        }
    }
}

/// Asserts that nothing but progress arrives for a short while.
async fn assert_quiet(stream: &mut WatchStream) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return,
            Ok(Some(Ok(Event::Progress { .. }))) => {}
            Ok(other) => panic!("unexpected watch item {other:?}"),
        }
    }
}

fn assert_put(event: &Event, key: &str, value: &str, prev: Option<&str>) -> KeyValue {
    let Event::Put { kv, prev: got_prev } = event else {
        panic!("expected a put of {key}, got {event:?}");
    };
    assert_eq!(kv.key, key, "{event:?}");
    assert_eq!(kv.value, value.as_bytes(), "{event:?}");
    assert_eq!(
        got_prev.as_ref().map(|p| p.value.clone()),
        prev.map(b),
        "prev of {event:?}"
    );
    if let Some(p) = got_prev {
        assert_eq!(p.key, key);
        assert_eq!(p.create_revision, kv.create_revision);
        assert!(p.mod_revision < kv.mod_revision);
    } else {
        assert_eq!(kv.create_revision, kv.mod_revision, "{event:?}");
    }
    kv.clone()
}

/// Create then get; creating an existing key fails with its state.
pub async fn check_create_get(store: &dyn Store) {
    let p = unique_prefix("create");
    let key = format!("{p}a");
    assert!(store.get(&key).await.expect("get").is_none());
    let rev = store.create(&key, b("one")).await.expect("create");
    assert!(rev > 0);
    let kv = store.get(&key).await.expect("get").expect("created key");
    assert_eq!(
        kv,
        KeyValue {
            key: key.clone(),
            value: b("one"),
            create_revision: rev,
            mod_revision: rev,
            decoded: crate::Decoded::default(),
        }
    );
    assert!(store.current_revision().await.expect("current") >= rev);
    match store.create(&key, b("two")).await {
        Err(StorageError::AlreadyExists { key: k, existing }) => {
            assert_eq!(k, key);
            assert_eq!(existing, kv);
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(store.get(&key).await.expect("get"), Some(kv));
    // Empty values are values.
    let empty = format!("{p}empty");
    let rev = store
        .create(&empty, Bytes::new())
        .await
        .expect("create empty");
    let kv = store.get(&empty).await.expect("get").expect("empty key");
    assert!(kv.value.is_empty());
    assert_eq!(kv.mod_revision, rev);
}

/// Update succeeds at the current revision and conflicts, carrying the current state, otherwise.
pub async fn check_update_cas(store: &dyn Store) {
    let p = unique_prefix("cas");
    let key = format!("{p}a");
    let r1 = store.create(&key, b("v1")).await.expect("create");
    let r2 = store.update(&key, b("v2"), r1).await.expect("update");
    assert!(r2 > r1);
    let kv = store.get(&key).await.expect("get").expect("key");
    assert_eq!(kv.value, b("v2"));
    assert_eq!(kv.create_revision, r1);
    assert_eq!(kv.mod_revision, r2);
    match store.update(&key, b("stale"), r1).await {
        Err(StorageError::Conflict {
            key: k,
            expected,
            current,
        }) => {
            assert_eq!(k, key);
            assert_eq!(expected, r1);
            assert_eq!(current, kv);
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(store.get(&key).await.expect("get"), Some(kv));
    let r3 = store.update(&key, b("v3"), r2).await.expect("update");
    assert!(r3 > r2);
}

/// Updating or deleting an absent key fails with `NotFound`.
pub async fn check_not_found(store: &dyn Store) {
    let p = unique_prefix("notfound");
    let key = format!("{p}missing");
    match store.update(&key, b("x"), 1).await {
        Err(StorageError::NotFound { key: k }) => assert_eq!(k, key),
        other => panic!("expected NotFound, got {other:?}"),
    }
    match store.delete(&key, None).await {
        Err(StorageError::NotFound { key: k }) => assert_eq!(k, key),
        other => panic!("expected NotFound, got {other:?}"),
    }
    match store.delete(&key, Some(1)).await {
        Err(StorageError::NotFound { .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(store.get(&key).await.expect("get").is_none());
}

/// Delete with and without an expected revision; a deleted key can be created again.
pub async fn check_delete(store: &dyn Store) {
    let p = unique_prefix("delete");
    let key = format!("{p}a");
    let r1 = store.create(&key, b("v1")).await.expect("create");
    let r2 = store.update(&key, b("v2"), r1).await.expect("update");
    match store.delete(&key, Some(r1)).await {
        Err(StorageError::Conflict {
            expected, current, ..
        }) => {
            assert_eq!(expected, r1);
            assert_eq!(current.mod_revision, r2);
            assert_eq!(current.value, b("v2"));
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    let (prev, r3) = store.delete(&key, Some(r2)).await.expect("delete");
    assert!(r3 > r2);
    assert_eq!(
        prev,
        KeyValue {
            key: key.clone(),
            value: b("v2"),
            create_revision: r1,
            mod_revision: r2,
            decoded: crate::Decoded::default(),
        }
    );
    assert!(store.get(&key).await.expect("get").is_none());
    assert!(matches!(
        store.delete(&key, None).await,
        Err(StorageError::NotFound { .. })
    ));
    // Recreate: a new lifetime with a new create revision.
    let r4 = store.create(&key, b("again")).await.expect("recreate");
    assert!(r4 > r3);
    let kv = store.get(&key).await.expect("get").expect("key");
    assert_eq!(kv.create_revision, r4);
    let (prev, r5) = store
        .delete(&key, None)
        .await
        .expect("unconditional delete");
    assert_eq!(prev, kv);
    assert!(r5 > r4);
}

/// Every write gets a revision above the previous one, and the current revision follows.
pub async fn check_revisions_increase(store: &dyn Store) {
    let p = unique_prefix("revisions");
    let mut last = store.current_revision().await.expect("current");
    let key = format!("{p}k");
    let mut rev = store.create(&key, b("0")).await.expect("create");
    assert!(rev > last);
    last = rev;
    for i in 1..10 {
        rev = store
            .update(&key, b(&i.to_string()), rev)
            .await
            .expect("update");
        assert!(rev > last, "revision {rev} after {last}");
        assert!(store.current_revision().await.expect("current") >= rev);
        last = rev;
    }
    let (_, rev) = store.delete(&key, None).await.expect("delete");
    assert!(rev > last);
    // A failed write does not advance our key's state.
    assert!(store.update(&key, b("x"), rev).await.is_err());
}

/// A paged list at a past revision (an informer's pages after its first) gives every page and
/// `remaining` as of that revision, whether keys of the prefix changed since (updated, deleted,
/// created, created and deleted) or only keys elsewhere did.
pub async fn check_pages_at_a_past_revision(store: &dyn Store) {
    let p = unique_prefix("pages");
    let key = |n: u32| format!("{p}k{n:02}");
    let mut revisions = std::collections::BTreeMap::new();
    for n in 0..10 {
        revisions.insert(n, store.create(&key(n), b("v1")).await.expect("create"));
    }
    let elsewhere = unique_prefix("pages-elsewhere");
    store
        .create(&format!("{elsewhere}x"), b("x"))
        .await
        .expect("create elsewhere");
    let then = store.current_revision().await.expect("current");
    let expected: Vec<String> = (0..10).map(key).collect();
    // Only another prefix changes, then this one in every way.
    store
        .create(&format!("{elsewhere}y"), b("y"))
        .await
        .expect("create elsewhere");
    let unchanged: Vec<(String, Bytes)> = expected.iter().map(|k| (k.clone(), b("v1"))).collect();
    assert_eq!(pages_at(store, &p, then).await, unchanged);
    store.delete(&key(1), None).await.expect("delete");
    store.delete(&key(7), None).await.expect("delete");
    store
        .update(&key(4), b("v2"), revisions[&4])
        .await
        .expect("update");
    for (name, value) in [("k03a", "new"), ("k99", "new"), ("k05a", "tmp")] {
        store
            .create(&format!("{p}{name}"), b(value))
            .await
            .expect("create");
    }
    store
        .delete(&format!("{p}k05a"), None)
        .await
        .expect("delete");
    assert_eq!(pages_at(store, &p, then).await, unchanged);
}

/// Every page (3 keys each) of a prefix at one revision, checking `remaining` of each against
/// the 10 keys the prefix held then.
async fn pages_at(store: &dyn Store, prefix: &str, revision: Revision) -> Vec<(String, Bytes)> {
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = store
            .list(ListRequest {
                prefix: prefix.to_owned(),
                start_after: after.clone(),
                limit: Some(3),
                revision: Some(revision),
                ..ListRequest::default()
            })
            .await
            .expect("page");
        assert_eq!(page.revision, revision);
        seen.extend(
            page.items
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone())),
        );
        assert_eq!(page.remaining, (10 - seen.len()) as u64, "after {after:?}");
        if page.remaining == 0 {
            return seen;
        }
        after = page.items.last().map(|kv| kv.key.clone());
    }
}

/// Lists are in key order within the prefix, with limit, `start_after` and `remaining`.
pub async fn check_list_paging(store: &dyn Store) {
    let p = unique_prefix("list");
    // Created out of order; a sibling prefix must not leak in.
    for name in ["c", "a", "e", "b", "d"] {
        store
            .create(&format!("{p}{name}"), b(name))
            .await
            .expect("create");
    }
    let sibling = format!("{}x/a", p.trim_end_matches('/'));
    store
        .create(&sibling, b("x"))
        .await
        .expect("create sibling");
    let all = list(store, &p, None).await;
    let expected: Vec<String> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| format!("{p}{n}"))
        .collect();
    assert_eq!(keys(&all), expected);
    for kv in &all {
        assert_eq!(kv.value, kv.key.trim_start_matches(&p).as_bytes());
    }

    let current = store.current_revision().await.expect("current");
    let page1 = store
        .list(ListRequest {
            prefix: p.clone(),
            limit: Some(2),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(keys(&page1.items), &expected[..2]);
    assert_eq!(page1.remaining, 3);
    assert!(page1.revision >= current);
    let page2 = store
        .list(ListRequest {
            prefix: p.clone(),
            start_after: Some(expected[1].clone()),
            limit: Some(2),
            revision: Some(page1.revision),
            ..ListRequest::default()
        })
        .await
        .expect("list page 2");
    assert_eq!(keys(&page2.items), &expected[2..4]);
    assert_eq!(page2.remaining, 1);
    assert_eq!(page2.revision, page1.revision);
    let page3 = store
        .list(ListRequest {
            prefix: p.clone(),
            start_after: Some(expected[3].clone()),
            limit: Some(2),
            revision: Some(page1.revision),
            ..ListRequest::default()
        })
        .await
        .expect("list page 3");
    assert_eq!(keys(&page3.items), &expected[4..]);
    assert_eq!(page3.remaining, 0);

    // Exactly `limit` items left: nothing remains.
    let exact = store
        .list(ListRequest {
            prefix: p.clone(),
            start_after: Some(expected[2].clone()),
            limit: Some(2),
            revision: None,
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(keys(&exact.items), &expected[3..]);
    assert_eq!(exact.remaining, 0);
    // `Some(0)` means no limit.
    let unlimited = store
        .list(ListRequest {
            prefix: p.clone(),
            limit: Some(0),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(unlimited.items.len(), 5);
    assert_eq!(unlimited.remaining, 0);
    // `start_after` below the prefix and past every key.
    let below = store
        .list(ListRequest {
            prefix: p.clone(),
            start_after: Some("/".into()),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(below.items.len(), 5);
    let past = store
        .list(ListRequest {
            prefix: p.clone(),
            start_after: Some(format!("{p}z")),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert!(past.items.is_empty());
    // A single key is its own prefix.
    assert_eq!(keys(&list(store, &expected[0], None).await), &expected[..1]);
}

/// A list at a past revision shows the state of then: old values, no later creates, and keys
/// deleted since.
pub async fn check_list_past_revision(store: &dyn Store) {
    let p = unique_prefix("past");
    let (a, bk, c) = (format!("{p}a"), format!("{p}b"), format!("{p}c"));
    let r1 = store.create(&a, b("a1")).await.expect("create a");
    let r2 = store.create(&bk, b("b1")).await.expect("create b");
    let r3 = store.update(&a, b("a2"), r1).await.expect("update a");
    let (_, r4) = store.delete(&bk, None).await.expect("delete b");
    let r5 = store.create(&c, b("c1")).await.expect("create c");

    let at = |rev| list(store, &p, Some(rev));
    let at1 = at(r1).await;
    assert_eq!(keys(&at1), [a.as_str()]);
    assert_eq!(at1[0].value, b("a1"));
    let at2 = at(r2).await;
    assert_eq!(keys(&at2), [a.as_str(), bk.as_str()]);
    assert_eq!(at2[0].value, b("a1"));
    assert_eq!(at2[1].mod_revision, r2);
    let at3 = at(r3).await;
    assert_eq!(at3[0].value, b("a2"));
    assert_eq!(at3[0].create_revision, r1);
    assert_eq!(at3[0].mod_revision, r3);
    assert_eq!(keys(&at3), [a.as_str(), bk.as_str()]);
    assert_eq!(keys(&at(r4).await), [a.as_str()]);
    assert_eq!(keys(&at(r5).await), [a.as_str(), c.as_str()]);
    assert!(at(r1 - 1).await.is_empty());

    let resp = store
        .list(ListRequest {
            prefix: p.clone(),
            revision: Some(r2),
            limit: Some(1),
            start_after: None,
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(resp.revision, r2);
    assert_eq!(keys(&resp.items), [a.as_str()]);
    assert_eq!(resp.remaining, 1);
    let resp = store
        .list(ListRequest {
            prefix: p.clone(),
            revision: Some(r2),
            limit: Some(1),
            start_after: Some(a.clone()),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(keys(&resp.items), [bk.as_str()]);
    assert_eq!(resp.remaining, 0);
    // The latest list reports a revision at least as new as our last write.
    let latest = store
        .list(ListRequest {
            prefix: p.clone(),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert!(latest.revision >= r5);
}

/// Count follows creates and deletes.
pub async fn check_count(store: &dyn Store) {
    let p = unique_prefix("count");
    assert_eq!(store.count(&p).await.expect("count"), 0);
    for i in 0..7 {
        store
            .create(&format!("{p}{i}"), b("x"))
            .await
            .expect("create");
    }
    store
        .create(&format!("{}-other", p.trim_end_matches('/')), b("x"))
        .await
        .expect("create sibling");
    assert_eq!(store.count(&p).await.expect("count"), 7);
    store.delete(&format!("{p}3"), None).await.expect("delete");
    assert_eq!(store.count(&p).await.expect("count"), 6);
    assert_eq!(store.count(&format!("{p}1")).await.expect("count"), 1);
}

/// Reads at a revision beyond the current one fail with `FutureRevision`.
pub async fn check_future_revision(store: &dyn Store) {
    let p = unique_prefix("future");
    let current = store.current_revision().await.expect("current");
    let requested = current + 1_000_000;
    let listed = store
        .list(ListRequest {
            prefix: p,
            revision: Some(requested),
            ..ListRequest::default()
        })
        .await;
    assert_future(listed.map(|_| ()), requested, current);
}

/// `result` is `FutureRevision` for `requested`, naming a current revision from `at_least` on.
fn assert_future(result: Result<(), StorageError>, requested: Revision, at_least: Revision) {
    match result {
        Err(StorageError::FutureRevision {
            requested: r,
            current: c,
        }) => {
            assert_eq!(r, requested);
            assert!(c >= at_least && c < requested, "current {c}");
        }
        other => panic!("expected FutureRevision, got {other:?}"),
    }
}

/// A get not older than a reached revision (then `0`) reads the key; one not older than a
/// revision the store has not reached fails with `FutureRevision` (a cache after its wait).
pub async fn check_get_freshness(store: &dyn Store) {
    let p = unique_prefix("get-freshness");
    let key = format!("{p}a");
    let rev = store.create(&key, b("v")).await.expect("create");
    // `0` is "any state": a cache may answer it before it has the write, so it is read after
    // the read at `rev` (a cache never goes back).
    for n in [rev, 0] {
        let got = store
            .get_with(&key, Freshness::NotOlderThan(n))
            .await
            .expect("get")
            .expect("the key");
        assert_eq!(
            (got.value, got.mod_revision),
            (b("v"), rev),
            "not older than {n}"
        );
    }
    let requested = store.current_revision().await.expect("current") + 1_000_000;
    let got = store
        .get_with(&key, Freshness::NotOlderThan(requested))
        .await;
    assert_future(got.map(|_| ()), requested, rev);
}

/// A list of the latest state not older than a reached revision (then `0`) reads it; one not
/// older than a revision the store has not reached fails with `FutureRevision` (a cache after
/// its wait).
pub async fn check_list_freshness(store: &dyn Store) {
    let p = unique_prefix("list-freshness");
    let rev = store
        .create(&format!("{p}a"), b("v"))
        .await
        .expect("create");
    for n in [rev, 0] {
        let listed = store
            .list(ListRequest {
                prefix: p.clone(),
                freshness: Freshness::NotOlderThan(n),
                ..ListRequest::default()
            })
            .await
            .expect("list");
        let got: Vec<_> = listed.items.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(got, [format!("{p}a")], "not older than {n}");
        assert!(
            listed.revision >= rev,
            "not older than {n}: {}",
            listed.revision
        );
    }
    let requested = store.current_revision().await.expect("current") + 1_000_000;
    let listed = store
        .list(ListRequest {
            prefix: p,
            freshness: Freshness::NotOlderThan(requested),
            ..ListRequest::default()
        })
        .await;
    assert_future(listed.map(|_| ()), requested, rev);
}

/// A watch from a past revision replays history in order with previous states, then delivers
/// live events.
pub async fn check_watch_history_then_live(store: &dyn Store) {
    let p = unique_prefix("watch");
    let (a, bk, c) = (format!("{p}a"), format!("{p}b"), format!("{p}c"));
    let r1 = store.create(&a, b("a1")).await.expect("create");
    let r2 = store.update(&a, b("a2"), r1).await.expect("update");
    let r3 = store.create(&bk, b("b1")).await.expect("create");
    let (_, r4) = store.delete(&a, Some(r2)).await.expect("delete");

    let mut stream = watch(store, &p, r1 - 1).await;
    let e1 = next_event(&mut stream).await;
    assert_eq!(assert_put(&e1, &a, "a1", None).mod_revision, r1);
    let e2 = next_event(&mut stream).await;
    assert_eq!(assert_put(&e2, &a, "a2", Some("a1")).mod_revision, r2);
    let e3 = next_event(&mut stream).await;
    assert_eq!(assert_put(&e3, &bk, "b1", None).mod_revision, r3);
    match next_event(&mut stream).await {
        Event::Delete { prev, revision } => {
            assert_eq!(revision, r4);
            assert_eq!(prev.key, a);
            assert_eq!(prev.value, b("a2"));
            assert_eq!(prev.mod_revision, r2);
            assert_eq!(prev.create_revision, r1);
        }
        other => panic!("expected delete, got {other:?}"),
    }
    // Live.
    let r5 = store.create(&c, b("c1")).await.expect("create");
    let r6 = store.update(&bk, b("b2"), r3).await.expect("update");
    let e5 = next_event(&mut stream).await;
    assert_eq!(assert_put(&e5, &c, "c1", None).mod_revision, r5);
    let e6 = next_event(&mut stream).await;
    let kv = assert_put(&e6, &bk, "b2", Some("b1"));
    assert_eq!(kv.mod_revision, r6);
    assert_eq!(kv.create_revision, r3);

    // From the middle of history: only later events.
    let mut mid = watch(store, &p, r3).await;
    assert_eq!(next_event(&mut mid).await.revision(), r4);
    assert_eq!(next_event(&mut mid).await.revision(), r5);
    assert_eq!(next_event(&mut mid).await.revision(), r6);
    // From the present: only new events.
    let mut now = watch(store, &p, r6).await;
    let r7 = store.delete(&c, None).await.expect("delete").1;
    assert_eq!(next_event(&mut now).await.revision(), r7);
    assert_eq!(next_event(&mut stream).await.revision(), r7);
    assert_eq!(next_event(&mut mid).await.revision(), r7);
    assert_quiet(&mut now).await;
}

/// A watch sees only its prefix, in history and live.
pub async fn check_watch_prefix_filter(store: &dyn Store) {
    let p = unique_prefix("watchprefix");
    let inside = format!("{p}in/");
    let before = store.current_revision().await.expect("current");
    store
        .create(&format!("{p}in/1"), b("1"))
        .await
        .expect("create");
    store
        .create(&format!("{p}inside"), b("no"))
        .await
        .expect("create");
    store
        .create(&format!("{p}out/1"), b("no"))
        .await
        .expect("create");
    let mut stream = watch(store, &inside, before).await;
    let e = next_event(&mut stream).await;
    assert_put(&e, &format!("{p}in/1"), "1", None);
    store
        .create(&format!("{p}out/2"), b("no"))
        .await
        .expect("create");
    store
        .create(&format!("{p}in/2"), b("2"))
        .await
        .expect("create");
    let e = next_event(&mut stream).await;
    assert_put(&e, &format!("{p}in/2"), "2", None);
    assert_quiet(&mut stream).await;
}

/// Delete events, live and replayed, carry the last state.
pub async fn check_watch_delete_prev(store: &dyn Store) {
    let p = unique_prefix("watchdelete");
    let key = format!("{p}k");
    let r1 = store.create(&key, b("v1")).await.expect("create");
    let r2 = store.update(&key, b("v2"), r1).await.expect("update");
    let mut live = watch(store, &p, r2).await;
    let (prev, r3) = store.delete(&key, None).await.expect("delete");
    let expected = KeyValue {
        key: key.clone(),
        value: b("v2"),
        create_revision: r1,
        mod_revision: r2,
        decoded: crate::Decoded::default(),
    };
    assert_eq!(prev, expected);
    for stream in [&mut live, &mut watch(store, &p, r2).await] {
        match next_event(stream).await {
            Event::Delete { prev, revision } => {
                assert_eq!(revision, r3);
                assert_eq!(prev, expected);
            }
            other => panic!("expected delete, got {other:?}"),
        }
    }
}

/// A watch from beyond the current revision waits and delivers only events above it.
pub async fn check_watch_future_revision(store: &dyn Store) {
    let p = unique_prefix("watchfuture");
    let current = store.current_revision().await.expect("current");
    let mut stream = watch(store, &p, current + 3).await;
    let mut last = 0;
    for i in 0..6 {
        last = store
            .create(&format!("{p}{i}"), b("x"))
            .await
            .expect("create");
    }
    // At least the last write is above `current + 3`; nothing at or below it may arrive.
    loop {
        let e = next_event(&mut stream).await;
        assert!(e.revision() > current + 3, "{e:?}");
        if e.revision() == last {
            break;
        }
    }
}

/// An idle watch that asked for progress gets it, with a revision covering what it has seen.
pub async fn check_progress(store: &dyn Store) {
    let p = unique_prefix("progress");
    let key = format!("{p}k");
    let rev = store.create(&key, b("x")).await.expect("create");
    let mut stream = store
        .watch(WatchRequest {
            prefix: p.clone(),
            after: rev - 1,
            progress_interval: Some(Duration::from_millis(50)),
        })
        .await
        .expect("watch");
    let first = tokio::time::timeout(EVENT_TIMEOUT, stream.next())
        .await
        .expect("timed out")
        .expect("ended")
        .expect("failed");
    assert_eq!(first.revision(), rev, "history comes before progress");
    let mut last = rev;
    let mut progress = 0;
    while progress < 2 {
        match tokio::time::timeout(EVENT_TIMEOUT, stream.next())
            .await
            .expect("no progress notification arrived")
            .expect("ended")
            .expect("failed")
        {
            Event::Progress { revision } => {
                assert!(revision >= last, "progress {revision} went below {last}");
                last = revision;
                progress += 1;
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    // After a progress notification at `last`, no event at or below `last` may arrive.
    let rev2 = store.update(&key, b("y"), rev).await.expect("update");
    assert!(rev2 > last);
    assert_eq!(next_event(&mut stream).await.revision(), rev2);

    // Without the option there are no notifications.
    let mut quiet = watch(store, &p, rev2).await;
    assert_quiet(&mut quiet).await;
}

/// Progress notifications arriving between writes never vouch for an event the watch has not
/// been handed: `watches` watches with a short interval, read as the writes land, see each of
/// `writes` writes once, in order, and no event at or below a progress revision they reported.
pub async fn check_progress_under_writes(store: &dyn Store, watches: usize, writes: usize) {
    let p = unique_prefix("progress-under-writes");
    let now = store.current_revision().await.expect("revision");
    // The last write's revision, once known: a reader whose progress reaches it has all it
    // will get (a lost event shows as a short list, not as a wait).
    let (done_tx, done) = tokio::sync::watch::channel(Revision::MAX);
    let mut readers = Vec::new();
    for n in 0..watches {
        let mut stream = store
            .watch(WatchRequest {
                prefix: p.clone(),
                after: now,
                progress_interval: Some(Duration::from_micros(50)),
            })
            .await
            .expect("watch");
        let done = done.clone();
        readers.push(tokio::spawn(async move {
            let mut seen = Vec::with_capacity(writes);
            let mut vouched = now;
            while seen.len() < writes && vouched < *done.borrow() {
                match tokio::time::timeout(EVENT_TIMEOUT, stream.next())
                    .await
                    .unwrap_or_else(|_| panic!("watch {n}: stalled after {} events", seen.len()))
                    .expect("ended")
                    .expect("failed")
                {
                    Event::Progress { revision } => {
                        assert!(revision >= vouched, "watch {n}: progress went back");
                        vouched = revision;
                    }
                    event => {
                        assert!(
                            event.revision() > vouched,
                            "watch {n}: event {} after progress {vouched}",
                            event.revision()
                        );
                        seen.push(event.revision());
                    }
                }
            }
            seen
        }));
    }
    let mut written = Vec::with_capacity(writes);
    for i in 0..writes {
        written.push(
            store
                .create(&format!("{p}{i}"), b("x"))
                .await
                .expect("create"),
        );
        // Let the watches' intervals run out around the next write's publish.
        tokio::task::yield_now().await;
    }
    done_tx.send_replace(*written.last().expect("writes"));
    for (n, reader) in readers.into_iter().enumerate() {
        let seen = reader.await.expect("reader");
        assert_eq!(seen, written, "watch {n}: every write, once, in order");
    }
}

/// Concurrent creates from many tasks all succeed with distinct revisions.
pub async fn check_concurrent_creates(store: Arc<dyn Store>, tasks: usize) {
    let p = unique_prefix("concurrent");
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let store = Arc::clone(&store);
            let key = format!("{p}{i:05}");
            tokio::spawn(async move {
                let rev = store.create(&key, b(&key)).await.expect("create");
                (key, rev)
            })
        })
        .collect();
    let mut written = Vec::with_capacity(tasks);
    for handle in handles {
        written.push(handle.await.expect("task"));
    }
    let mut revisions: Vec<Revision> = written.iter().map(|(_, r)| *r).collect();
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(revisions.len(), tasks, "revisions must be distinct");
    let items = list(store.as_ref(), &p, None).await;
    assert_eq!(items.len(), tasks);
    for (key, rev) in &written {
        let kv = items
            .iter()
            .find(|kv| &kv.key == key)
            .expect("written key listed");
        assert_eq!(kv.mod_revision, *rev);
        assert_eq!(kv.value, key.as_bytes());
    }
    assert_eq!(store.count(&p).await.expect("count"), tasks as u64);
}

/// After compaction old revisions are gone for lists and watches, the latest state is intact,
/// and history from the compaction revision on is still complete.
pub async fn check_compaction(store: &dyn Store) {
    let p = unique_prefix("compact");
    let (a, bk, c) = (format!("{p}a"), format!("{p}b"), format!("{p}c"));
    let r1 = store.create(&a, b("a1")).await.expect("create");
    let r2 = store.update(&a, b("a2"), r1).await.expect("update");
    let r3 = store.create(&bk, b("b1")).await.expect("create");
    let (_, r4) = store.delete(&bk, None).await.expect("delete");
    let r5 = store.create(&c, b("c1")).await.expect("create");
    let r6 = store.update(&a, b("a3"), r2).await.expect("update");

    store.compact(r4).await.expect("compact");
    // Compacting again, or lower, changes nothing; engines may accept it or say `Compacted`.
    for again in [r4, r1] {
        match store.compact(again).await {
            Ok(()) | Err(StorageError::Compacted { .. }) => {}
            Err(other) => panic!("compacting again at {again}: {other:?}"),
        }
    }

    match store
        .list(ListRequest {
            prefix: p.clone(),
            revision: Some(r3),
            ..ListRequest::default()
        })
        .await
    {
        Err(StorageError::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, r3);
            assert!(compacted >= r4);
        }
        other => panic!("expected Compacted, got {other:?}"),
    }
    match store
        .watch(WatchRequest {
            prefix: p.clone(),
            after: r2,
            progress_interval: None,
        })
        .await
    {
        Err(StorageError::Compacted { compacted, .. }) => assert!(compacted >= r4),
        Ok(_) => panic!("expected Compacted, got a stream"),
        Err(other) => panic!("expected Compacted, got {other:?}"),
    }

    // The state at the compaction revision and later is intact.
    let at4 = list(store, &p, Some(r4)).await;
    assert_eq!(keys(&at4), [a.as_str()]);
    assert_eq!(at4[0].value, b("a2"));
    assert_eq!(at4[0].mod_revision, r2);
    let at5 = list(store, &p, Some(r5)).await;
    assert_eq!(keys(&at5), [a.as_str(), c.as_str()]);
    let latest = list(store, &p, None).await;
    assert_eq!(keys(&latest), [a.as_str(), c.as_str()]);
    assert_eq!(latest[0].value, b("a3"));
    assert_eq!(latest[0].create_revision, r1);
    assert_eq!(latest[0].mod_revision, r6);
    assert_eq!(store.get(&a).await.expect("get").expect("a").value, b("a3"));
    assert_eq!(store.count(&p).await.expect("count"), 2);

    // A watch needing only events from the compaction revision on works, with previous states.
    let mut stream = watch(store, &p, r4 - 1).await;
    match next_event(&mut stream).await {
        Event::Delete { prev, revision } => {
            assert_eq!(revision, r4);
            assert_eq!(prev.key, bk);
            assert_eq!(prev.value, b("b1"));
        }
        other => panic!("expected delete, got {other:?}"),
    }
    assert_put(&next_event(&mut stream).await, &c, "c1", None);
    let e = next_event(&mut stream).await;
    assert_eq!(assert_put(&e, &a, "a3", Some("a2")).mod_revision, r6);

    // Writes continue above the compaction; a compaction beyond the present is refused.
    let r7 = store.update(&a, b("a4"), r6).await.expect("update");
    assert!(r7 > r6);
    assert_eq!(next_event(&mut stream).await.revision(), r7);
    let current = store.current_revision().await.expect("current");
    assert!(matches!(
        store.compact(current + 1_000_000).await,
        Err(StorageError::FutureRevision { .. })
    ));
}
