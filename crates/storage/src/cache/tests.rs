//! The watch cache over the embedded engine: the conformance suite, indexed lists, the 410 past
//! the window, slow watchers, and what a cache keeps after watchers go.

use std::sync::Mutex;

use super::*;
use crate::sqlite::SqliteStore;
use crate::test_support::eventually;

/// Indexes `l:<label>` from values written as `label=value,label=value` and `name` from the
/// key's last segment; decodes a value to its length (what a watcher then finds on the event).
struct TestIndexer;

impl Indexer for TestIndexer {
    fn decode(&self, _key: &str, value: &[u8]) -> Decoded {
        Decoded::new(Arc::new(value.len()))
    }

    fn terms(&self, key: &str, value: &[u8], decoded: &Decoded, out: &mut Vec<Term>) {
        assert_eq!(
            decoded.get::<usize>(),
            Some(&value.len()),
            "terms get the value's decoding"
        );
        if let Some(name) = key.rsplit('/').next() {
            out.push(("name".into(), name.into()));
        }
        for pair in std::str::from_utf8(value).unwrap_or("").split(',') {
            if let Some((k, v)) = pair.split_once('=') {
                out.push((format!("l:{k}"), v.into()));
            }
        }
    }
}

async fn cache(root: &str, buffer: usize) -> (tempfile::TempDir, Arc<CacheStore>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = SqliteStore::open(&dir.path().join("s.db")).expect("open");
    let mut config = CacheConfig::new(root, Some(Arc::new(TestIndexer)));
    config.watcher_buffer = buffer;
    let store = CacheStore::new(inner, config);
    store.wait_ready().await;
    (dir, store)
}

/// Counts what the cache reports.
#[derive(Default)]
struct Recorder {
    counts: Mutex<BTreeMap<String, usize>>,
}

impl Recorder {
    fn note(&self, what: String) {
        *self.counts.lock().expect("counts").entry(what).or_default() += 1;
    }

    fn count(&self, what: &str) -> usize {
        self.counts
            .lock()
            .expect("counts")
            .get(what)
            .copied()
            .unwrap_or_default()
    }
}

impl CacheObserver for Recorder {
    fn initialized(&self, keys: &mut dyn Iterator<Item = &str>) {
        self.note(format!("initialized {}", keys.count()));
    }
    fn received(&self, key: &str) {
        self.note(format!("received {}", &key[..3]));
    }
    fn dispatched(&self, key: &str) {
        self.note(format!("dispatched {}", &key[..3]));
    }
    fn watcher_terminated(&self, prefix: &str) {
        self.note(format!("terminated {prefix}"));
    }
    fn read_wait(&self, prefix: &str, _waited: Duration) {
        self.note(format!("read_wait {prefix}"));
    }
    fn capacity(&self, old: usize, capacity: usize) {
        self.note(format!("capacity {old} {capacity}"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance_through_the_cache() {
    let (_dir, store) = cache("/conformance/", 100).await;
    crate::conformance::run_all(store).await;
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn keys(resp: &ListResponse) -> Vec<&str> {
    resp.items.iter().map(|kv| kv.key.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn indexed_lists_visit_only_matching_keys_and_follow_writes() {
    let (_dir, store) = cache("/r/", 100).await;
    for (k, v) in [
        ("/r/ns1/a", "app=web,tier=front"),
        ("/r/ns1/b", "app=web"),
        ("/r/ns2/c", "app=db"),
    ] {
        store.create(k, b(v)).await.expect("create");
    }
    let list = |terms: &[(&str, &str)], prefix: &str| ListRequest {
        prefix: prefix.into(),
        index_terms: terms
            .iter()
            .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
            .collect(),
        ..ListRequest::default()
    };
    let r = store
        .list(list(&[("l:app", "web")], "/r/"))
        .await
        .expect("list");
    assert_eq!(keys(&r), ["/r/ns1/a", "/r/ns1/b"]);
    let r = store
        .list(list(&[("l:app", "web"), ("l:tier", "front")], "/r/"))
        .await
        .expect("list");
    assert_eq!(keys(&r), ["/r/ns1/a"]);
    let r = store
        .list(list(&[("name", "c")], "/r/"))
        .await
        .expect("list");
    assert_eq!(keys(&r), ["/r/ns2/c"]);
    // An update moves the key between index sets; a consistent list sees it at once.
    let kv = store.get("/r/ns2/c").await.expect("get").expect("c");
    store
        .update("/r/ns2/c", b("app=web"), kv.mod_revision)
        .await
        .expect("update");
    let r = store
        .list(list(&[("l:app", "web")], "/r/"))
        .await
        .expect("list");
    assert_eq!(keys(&r), ["/r/ns1/a", "/r/ns1/b", "/r/ns2/c"]);
    assert!(
        store
            .list(list(&[("l:app", "db")], "/r/"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
    store.delete("/r/ns1/a", None).await.expect("delete");
    let r = store
        .list(ListRequest {
            limit: Some(1),
            ..list(&[("l:app", "web")], "/r/")
        })
        .await
        .expect("list");
    assert_eq!(keys(&r), ["/r/ns1/b"]);
    assert_eq!(r.remaining, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_at_the_cache_revision_or_newer_come_from_the_cache() {
    let (_dir, store) = cache("/r/", 100).await;
    let r1 = store.create("/r/a", b("app=x")).await.expect("create");
    let list = store
        .list(ListRequest {
            prefix: "/r/".into(),
            freshness: Freshness::NotOlderThan(r1),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert!(list.revision >= r1);
    assert_eq!(keys(&list), ["/r/a"]);
    // Exact: the cache's snapshot when it is the cache's revision, the engine otherwise.
    let r2 = store.create("/r/b", b("app=x")).await.expect("create");
    let at1 = store
        .list(ListRequest {
            prefix: "/r/".into(),
            revision: Some(r1),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(keys(&at1), ["/r/a"]);
    assert_eq!(at1.revision, r1);
    let latest = store
        .list(ListRequest {
            prefix: "/r/".into(),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(latest.revision, r2);
    let at2 = store
        .list(ListRequest {
            prefix: "/r/".into(),
            revision: Some(r2),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(keys(&at2), ["/r/a", "/r/b"]);
}

/// The next event of `w`, within 10 s.
async fn next_event(w: &mut WatchStream) -> Event {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("in time")
        .expect("open")
        .expect("event")
}

/// A written value's decoding reaches the cache's watchers with the event (live, and from the
/// history), so they need not decode it again; the engine's own events carry none, and a
/// deletion's last state carries none either (its terms are derived again, not shared).
#[tokio::test(flavor = "multi_thread")]
async fn watch_events_carry_the_indexer_decoding() {
    let (_dir, store) = cache("/r/", 100).await;
    let start = store.current_revision().await.expect("rev");
    let request = || WatchRequest {
        prefix: "/r/".into(),
        after: start,
        progress_interval: None,
    };
    let mut live = store.watch(request()).await.expect("watch");
    let mut engine = store.inner.watch(request()).await.expect("engine watch");
    let c = store.create("/r/a", b("app=web")).await.expect("create");
    let r = store
        .update("/r/a", b("app=db,tier=x"), c)
        .await
        .expect("update");
    store.delete("/r/a", Some(r)).await.expect("delete");
    let mut history = store.watch(request()).await.expect("watch");
    for (name, w) in [("live", &mut live), ("history", &mut history)] {
        for len in [7, 13] {
            match next_event(w).await {
                Event::Put { kv, .. } => {
                    assert_eq!(kv.decoded.get::<usize>(), Some(&len), "{name}");
                    assert_eq!(kv.decoded.get::<String>(), None, "{name}: another type");
                }
                other => panic!("{name}: expected a put, got {other:?}"),
            }
        }
        match next_event(w).await {
            Event::Delete { prev, .. } => assert_eq!(prev.decoded.get::<usize>(), None),
            other => panic!("{name}: expected a delete, got {other:?}"),
        }
    }
    for _ in 0..2 {
        match next_event(&mut engine).await {
            Event::Put { kv, .. } => assert_eq!(kv.decoded.get::<usize>(), None, "engine"),
            other => panic!("engine: expected a put, got {other:?}"),
        }
    }
}

/// [`TestIndexer`], counting the values it decodes.
#[derive(Default)]
struct CountingIndexer {
    decodes: std::sync::atomic::AtomicUsize,
}

impl Indexer for CountingIndexer {
    fn decode(&self, key: &str, value: &[u8]) -> Decoded {
        self.decodes.fetch_add(1, Ordering::SeqCst);
        TestIndexer.decode(key, value)
    }

    fn terms(&self, key: &str, value: &[u8], decoded: &Decoded, out: &mut Vec<Term>) {
        TestIndexer.terms(key, value, decoded, out);
    }
}

/// A create whose writer gives the value's decoding is indexed and announced with that
/// decoding, without the indexer parsing the bytes, when the cache applies the event while the
/// write is in flight (held here: the engine's answer waits until the event was seen); a plain
/// create is decoded as before; a create that fails leaves nothing held.
#[tokio::test(flavor = "multi_thread")]
async fn a_written_decoding_is_used_instead_of_decoding_the_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = SqliteStore::open(&dir.path().join("s.db")).expect("open");
    let (seen, wait) = tokio::sync::watch::channel(false);
    let inner = Arc::new(
        crate::hook::HookStore::new(engine).after_create(Box::new(move |key| {
            let mut wait = wait.clone();
            let hold = key == "/r/a";
            Box::pin(async move {
                if hold {
                    let _ = wait.wait_for(|seen| *seen).await;
                }
            })
        })),
    );
    let indexer = Arc::new(CountingIndexer::default());
    let store = CacheStore::new(inner, CacheConfig::new("/r/", Some(indexer.clone())));
    store.wait_ready().await;
    let start = store.current_revision().await.expect("rev");
    let mut watch = store
        .watch(WatchRequest {
            prefix: "/r/".into(),
            after: start,
            progress_interval: None,
        })
        .await
        .expect("watch");
    let given = |value: &Bytes| Decoded::new(Arc::new(value.len()));
    let value = b("app=web");
    let create = {
        let store = store.clone();
        let given = given(&value);
        tokio::spawn(async move {
            store
                .create_decoded("/r/a", value, &move || given.clone())
                .await
        })
    };
    match next_event(&mut watch).await {
        Event::Put { kv, .. } => assert_eq!(kv.decoded.get::<usize>(), Some(&7)),
        other => panic!("expected a put, got {other:?}"),
    }
    seen.send_replace(true);
    create.await.expect("join").expect("create");
    assert_eq!(
        indexer.decodes.load(Ordering::SeqCst),
        0,
        "not decoded again"
    );
    let listed = store
        .list(ListRequest {
            prefix: "/r/".into(),
            index_terms: vec![("l:app".into(), "web".into())],
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(keys(&listed), ["/r/a"], "indexed from the given decoding");
    store.create("/r/b", b("app=db")).await.expect("create");
    next_event(&mut watch).await;
    assert_eq!(indexer.decodes.load(Ordering::SeqCst), 1, "a plain create");
    let again = b("app=x");
    let err = store
        .create_decoded("/r/a", again.clone(), &|| given(&again))
        .await
        .expect_err("exists");
    assert!(matches!(err, StorageError::AlreadyExists { .. }), "{err:?}");
    assert!(
        store.shared.held_decodings().is_empty(),
        "nothing held after the writes return"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_from_before_the_window_is_too_old() {
    let (_dir, store) = cache("/r/", 100).await;
    let start = store.current_revision().await.expect("rev");
    // History starts at the cache's initial list (eviction is tested in `window.rs`).
    match store
        .watch(WatchRequest {
            prefix: "/r/".into(),
            after: start - 1,
            progress_interval: None,
        })
        .await
    {
        Err(StorageError::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, start - 1);
            assert_eq!(compacted, start + 1);
        }
        Ok(_) => panic!("expected too old, got a stream"),
        Err(other) => panic!("expected too old, got {other:?}"),
    }
    // From the cache's start on, history is served.
    let r = store.create("/r/a", b("")).await.expect("create");
    let mut w = watch_from(&store, start).await;
    assert_eq!(next_event(&mut w).await.revision(), r);
}

/// A watch of `/r/` from after `after`.
async fn watch_from(store: &CacheStore, after: Revision) -> WatchStream {
    store
        .watch(WatchRequest {
            prefix: "/r/".into(),
            after,
            progress_interval: None,
        })
        .await
        .expect("watch")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_that_never_reads_is_closed_and_forgotten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = SqliteStore::open(&dir.path().join("s.db")).expect("open");
    let recorder = Arc::new(Recorder::default());
    let mut config = CacheConfig::new("/r/", Some(Arc::new(TestIndexer)));
    config.watcher_buffer = 4;
    config.observer = Some(recorder.clone());
    let store = CacheStore::new(inner, config);
    store.wait_ready().await;
    let now = store.current_revision().await.expect("rev");
    let req = || WatchRequest {
        prefix: "/r/".into(),
        after: now,
        progress_interval: None,
    };
    let mut slow = store.watch(req()).await.expect("watch");
    let mut fast = store.watch(req()).await.expect("watch");
    assert_eq!(store.stats().watchers, 2);
    let reader = tokio::spawn(async move {
        let mut n = 0;
        while let Some(item) = fast.next().await {
            item.expect("event");
            n += 1;
            if n == 200 {
                break;
            }
        }
        // The reader's watch stays open (a dropped one is forgotten at once).
        (n, fast)
    });
    for i in 0..200 {
        store
            .create(&format!("/r/{i:03}"), b(""))
            .await
            .expect("create");
    }
    let (n, _fast) = reader.await.expect("reader");
    assert_eq!(n, 200, "a reading watcher gets everything");
    // The slow one holds its buffers (16 + 4 + the one in flight) and then ends.
    let mut got = 0;
    while let Some(item) = tokio::time::timeout(Duration::from_secs(10), slow.next())
        .await
        .expect("the slow watch ends")
    {
        item.expect("event");
        got += 1;
    }
    assert!(got < 200, "the slow watcher was cut off after {got} events");
    // The slow one is forgotten; the reader is not.
    assert_eq!(store.stats().watchers, 1, "the slow watcher is forgotten");
    // What the metrics see: one load of nothing, every write received and dispatched, one
    // watcher terminated for unresponsiveness (the reader's client went away on its own).
    assert_eq!(recorder.count("initialized 0"), 1);
    assert_eq!(recorder.count("received /r/"), 200);
    assert_eq!(recorder.count("dispatched /r/"), 200);
    assert_eq!(recorder.count("terminated /r/"), 1);
    store
        .list(ListRequest {
            prefix: "/r/".into(),
            ..ListRequest::default()
        })
        .await
        .expect("list");
    assert_eq!(recorder.count("read_wait /r/"), 1);
    assert_eq!(recorder.count("capacity 100 100"), 1, "the window's start");
    assert_eq!(
        recorder.count("capacity 100 200"),
        1,
        "the window grew once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forced_close_drops_what_the_watcher_had_buffered() {
    // A large buffer: without the forced close, the watcher would hand its client all of it
    // (16 + 50 + the one in flight) before ending, and hold it until the client reads.
    let (_dir, store) = cache("/r/", 50).await;
    let now = store.current_revision().await.expect("rev");
    let mut slow = store
        .watch(WatchRequest {
            prefix: "/r/".into(),
            after: now,
            progress_interval: None,
        })
        .await
        .expect("watch");
    for i in 0..200 {
        store
            .create(&format!("/r/{i:03}"), b(""))
            .await
            .expect("create");
    }
    // The cache's feed applies the creates after they are acknowledged: poll for the close.
    eventually("the slow watcher is closed", || store.stats().watchers == 0).await;
    let mut got = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(10), slow.next())
        .await
        .expect("the closed watch ends")
    {
        got.push(item.expect("event").revision());
    }
    // Only what had reached the stream's own 16-event channel is delivered, in order, from
    // the first event on: the client re-watches from the last one.
    assert!(
        !got.is_empty() && got.len() <= 17,
        "a closed watcher delivered {} events",
        got.len()
    );
    assert!(got.windows(2).all(|w| w[0] + 1 == w[1]), "{got:?}");
    assert_eq!(got[0], now + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stuck_watcher_does_not_close_a_prompt_one_beside_it() {
    // A small buffer, so that the prompt watcher's fills too whenever the feed outruns it.
    let (_dir, store) = cache("/r/", 2).await;
    let now = store.current_revision().await.expect("rev");
    let watch = || {
        store.watch(WatchRequest {
            prefix: "/r/".into(),
            after: now,
            progress_interval: None,
        })
    };
    // The stuck watcher registers first, so that the dispatcher meets it first.
    let stuck = watch().await.expect("watch");
    let mut prompt = watch().await.expect("watch");
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        while got.len() < 300 {
            match tokio::time::timeout(Duration::from_secs(20), prompt.next()).await {
                Ok(Some(Ok(e))) => got.push(e.revision()),
                other => panic!(
                    "the prompt watcher ended after {} events: {other:?}",
                    got.len()
                ),
            }
        }
        // The prompt watch stays open (a dropped one is forgotten at once).
        (got, prompt)
    });
    for i in 0..300 {
        store
            .create(&format!("/r/{i:03}"), b(""))
            .await
            .expect("create");
    }
    let (got, _prompt) = reader.await.expect("reader");
    assert_eq!(got, (now + 1..=now + 300).collect::<Vec<_>>());
    // The stuck one was closed; the prompt one is still registered.
    eventually("the stuck watcher is closed", || {
        store.stats().watchers == 1
    })
    .await;
    drop(stuck);
}

/// Opens 50 watches of `/r/` from the current revision.
async fn fifty_watches(store: &CacheStore) -> Vec<WatchStream> {
    let now = store.current_revision().await.expect("rev");
    let watches = futures::future::join_all((0..50).map(|_| {
        store.watch(WatchRequest {
            prefix: "/r/".into(),
            after: now,
            progress_interval: None,
        })
    }))
    .await;
    assert_eq!(store.stats().watchers, 50);
    watches.into_iter().map(|w| w.expect("watch")).collect()
}

/// A watcher whose client went away is forgotten at once, with no event to discover it by
/// (its slot, channel and task held memory until the next write under its prefix).
#[tokio::test(flavor = "multi_thread")]
async fn dropped_watchers_are_forgotten_without_waiting_for_an_event() {
    let (_dir, store) = cache("/r/", 100).await;
    let watches = fifty_watches(&store).await;
    let mut watches = watches.into_iter();
    let kept = watches.next().expect("a watch");
    drop(watches);
    eventually("the dropped watchers are forgotten", || {
        store.stats().watchers == 1
    })
    .await;
    // The one still open is not.
    drop(kept);
    eventually("the last watcher is forgotten", || {
        store.stats().watchers == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropped_watchers_are_forgotten_on_the_next_event() {
    let (_dir, store) = cache("/r/", 100).await;
    let watches = fifty_watches(&store).await;
    drop(watches);
    // Each watcher task notices its client is gone on its next send; a few writes reach all.
    let mut i = 0;
    loop {
        store
            .create(&format!("/r/{i}"), b(""))
            .await
            .expect("create");
        i += 1;
        if store.stats().watchers == 0 {
            break;
        }
        assert!(i < 1000, "watchers were never forgotten");
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn revision_requests_are_pipelined_and_never_answer_a_reader_from_before_it_arrived() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(&dir.path().join("s.db")).expect("open");
    // Revision requests read the revision when sent, then wait for a permit before answering
    // (a slow round trip); `sent` counts the requests.
    let sent_count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let answers = Arc::new(tokio::sync::Semaphore::new(0));
    let slow = crate::hook::HookStore::new(sqlite.clone()).after_revision(Box::new({
        let (sent_count, answers) = (sent_count.clone(), answers.clone());
        move |_| {
            sent_count.fetch_add(1, Ordering::SeqCst);
            let answers = answers.clone();
            Box::pin(async move {
                answers.acquire().await.expect("semaphore open").forget();
            })
        }
    }));
    let oracle = Arc::new(Oracle::new(Arc::new(slow), 2));
    let sent = || sent_count.load(Ordering::SeqCst);

    let before = sqlite.create("/r/a", b("1")).await.expect("create");
    let first = tokio::spawn({
        let oracle = oracle.clone();
        async move { oracle.current().await }
    });
    eventually("the first request is sent", || sent() == 1).await;
    // Acknowledged while the first request is out: a reader arriving now must see it.
    let written = sqlite.create("/r/b", b("2")).await.expect("create");
    let second = tokio::spawn({
        let oracle = oracle.clone();
        async move { oracle.current().await }
    });
    // Pipelined: the second batch goes out without waiting for the first answer.
    eventually("the second request is sent", || sent() == 2).await;
    let third = tokio::spawn({
        let oracle = oracle.clone();
        async move { oracle.current().await }
    });
    answers.add_permits(2);
    assert_eq!(first.await.expect("join").expect("revision"), before);
    assert!(second.await.expect("join").expect("revision") >= written);
    // The third reader arrived while two requests were out: it waited for a third, sent after
    // one of them returned.
    eventually("the third request is sent", || sent() == 3).await;
    answers.add_permits(1);
    assert!(third.await.expect("join").expect("revision") >= written);
    assert_eq!(sent(), 3, "one request per batch");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_events_previous_state_shares_the_bytes_the_cache_held() {
    let (_dir, store) = cache("/r/", 100).await;
    let start = store.current_revision().await.expect("rev");
    let v1 = store.create("/r/a", b("app=v1")).await.expect("create");
    let v2 = store.update("/r/a", b("app=v2"), v1).await.expect("update");
    store.update("/r/a", b("app=v3"), v2).await.expect("update");
    let (prev, _) = store.delete("/r/a", None).await.expect("delete");
    assert_eq!(prev.value, b("app=v3"));
    let mut w = watch_from(&store, start).await;
    let mut events = Vec::new();
    while events.len() < 4 {
        events.push(next_event(&mut w).await);
    }
    // What each event's state was, and the bytes it is held in.
    let state = |e: &Event| match e {
        Event::Put { kv, prev } => (
            Some(kv.value.clone()),
            prev.as_ref().map(|p| p.value.clone()),
        ),
        Event::Delete { prev, .. } => (None, Some(prev.value.clone())),
        Event::Progress { .. } => panic!("no progress was asked for"),
    };
    let states: Vec<_> = events.iter().map(state).collect();
    let want = [
        (Some(b("app=v1")), None),
        (Some(b("app=v2")), Some(b("app=v1"))),
        (Some(b("app=v3")), Some(b("app=v2"))),
        (None, Some(b("app=v3"))),
    ];
    for (got, want) in states.iter().zip(want) {
        assert_eq!(*got, want);
    }
    // Each previous state is the earlier event's new state itself, not the engine's copy.
    for pair in states.windows(2) {
        let (Some(new), Some(prev)) = (&pair[0].0, &pair[1].1) else {
            panic!("every event but the first has a previous state: {pair:?}");
        };
        assert_eq!(new.as_ptr(), prev.as_ptr(), "{new:?} is held twice");
    }
}
