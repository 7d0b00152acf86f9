//! The informer against the real SQLite engine: paged initial lists at one revision, live
//! events, relists after compaction, and the cache.

use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::controllers::testing::Recording;

const PREFIX: &str = "/registry/g.io/things/";

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    recording: Arc<Recording>,
    shutdown: watch::Sender<bool>,
}

fn fixture() -> Fixture {
    let (dir, recording, store) = Recording::open();
    Fixture {
        _dir: dir,
        store,
        recording,
        shutdown: watch::Sender::new(false),
    }
}

impl Fixture {
    fn informer(&self) -> Informer<Value> {
        Informer::json(self.store.clone(), PREFIX, self.shutdown.subscribe())
    }

    async fn put(&self, name: &str, spec: Value) -> Revision {
        let key = format!("{PREFIX}{name}");
        let body = Bytes::from(json!({"metadata": {"name": name}, "spec": spec}).to_string());
        match self.store.get(&key).await.unwrap() {
            None => self.store.create(&key, body).await.unwrap(),
            Some(kv) => self
                .store
                .update(&key, body, kv.mod_revision)
                .await
                .unwrap(),
        }
    }

    async fn delete(&self, name: &str) {
        self.store
            .delete(&format!("{PREFIX}{name}"), None)
            .await
            .unwrap();
    }
}

/// `(kind, name, old spec, new spec)` of a change, for literal comparisons.
fn describe(change: &Change<Value>) -> (&'static str, String, Value, Value) {
    let name = change.key().trim_start_matches(PREFIX).to_string();
    match change {
        Change::Added { new, .. } => ("Added", name, Value::Null, new["spec"].clone()),
        Change::Modified { old, new, .. } => {
            ("Modified", name, old["spec"].clone(), new["spec"].clone())
        }
        Change::Deleted { old, .. } => ("Deleted", name, old["spec"].clone(), Value::Null),
    }
}

/// The next `n` changes, skipping the `Synced` notification.
async fn next_n(
    informer: &mut Informer<Value>,
    n: usize,
) -> Vec<(&'static str, String, Value, Value)> {
    let mut out = Vec::new();
    while out.len() < n {
        let notification = tokio::time::timeout(Duration::from_secs(10), informer.next())
            .await
            .expect("a change within 10s")
            .expect("not shut down");
        if let Notification::Changed(change) = notification {
            out.push(describe(&change));
        }
    }
    out
}

/// The next notification, described; `Synced` as `("Synced", "", null, null)`.
async fn next_one(informer: &mut Informer<Value>) -> (&'static str, String, Value, Value) {
    let notification = tokio::time::timeout(Duration::from_secs(10), informer.next())
        .await
        .expect("a notification within 10s")
        .expect("not shut down");
    match notification {
        Notification::Changed(change) => describe(&change),
        Notification::Synced => synced(),
    }
}

fn synced() -> (&'static str, String, Value, Value) {
    ("Synced", String::new(), Value::Null, Value::Null)
}

fn cached_specs(cache: &Cache<Value>) -> Vec<(String, Value)> {
    cache
        .list()
        .into_iter()
        .map(|(k, v)| (k.trim_start_matches(PREFIX).to_string(), v["spec"].clone()))
        .collect()
}

#[tokio::test]
async fn initial_list_is_paged_at_one_revision() {
    let f = fixture();
    for i in 0..7 {
        f.put(&format!("o{i}"), json!(i)).await;
    }
    // Outside the prefix: never seen.
    f.store
        .create("/registry/g.io/thingsz/x", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    // Written while the list is under way: not part of the list, delivered by the watch.
    *f.recording.write_during_list.lock().unwrap() = Some((
        format!("{PREFIX}p"),
        Bytes::from(json!({"metadata": {"name": "p"}, "spec": "late"}).to_string()),
    ));
    let mut informer = f.informer().page_size(3);
    let cache = informer.cache();
    assert!(!informer.has_synced());
    let mut listed = Vec::new();
    for _ in 0..8 {
        listed.push(next_one(&mut informer).await);
    }
    let mut want: Vec<_> = (0..7)
        .map(|i| ("Added", format!("o{i}"), Value::Null, json!(i)))
        .collect();
    want.push(synced());
    assert_eq!(listed, want);
    assert!(informer.has_synced());
    assert_eq!(cache.len(), 7);

    let lists = f.recording.lists.lock().unwrap().clone();
    let list_revision = lists[1]
        .revision
        .expect("later pages read at a fixed revision");
    let got: Vec<_> = lists
        .iter()
        .map(|r| {
            (
                r.prefix.as_str(),
                r.start_after.clone(),
                r.limit,
                r.revision,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (PREFIX, None, Some(3), None),
            (
                PREFIX,
                Some(format!("{PREFIX}o2")),
                Some(3),
                Some(list_revision)
            ),
            (
                PREFIX,
                Some(format!("{PREFIX}o5")),
                Some(3),
                Some(list_revision)
            ),
        ]
    );

    let late = next_n(&mut informer, 1).await;
    assert_eq!(
        late,
        vec![("Added", "p".into(), Value::Null, json!("late"))]
    );
    assert_eq!(cache.len(), 8);
    let p = cache.get(&format!("{PREFIX}p")).unwrap();
    assert!(meta::resource_version(&p).parse::<i64>().unwrap() > list_revision);
}

#[tokio::test]
async fn empty_prefix_syncs() {
    let f = fixture();
    let mut informer = f.informer();
    let mut synced_rx = informer.synced();
    assert_eq!(next_one(&mut informer).await, synced());
    assert!(*synced_rx.borrow_and_update());
    f.put("a", json!(1)).await;
    assert_eq!(
        next_one(&mut informer).await,
        ("Added", "a".into(), Value::Null, json!(1))
    );
    assert_eq!(
        cached_specs(&informer.cache()),
        vec![("a".into(), json!(1))]
    );
}

#[tokio::test]
async fn live_events_carry_old_and_new() {
    let f = fixture();
    f.put("a", json!(1)).await;
    let mut informer = f.informer();
    let cache = informer.cache();
    assert_eq!(
        next_n(&mut informer, 1).await,
        vec![("Added", "a".into(), Value::Null, json!(1))]
    );
    f.put("a", json!(2)).await;
    f.put("b", json!(1)).await;
    f.delete("a").await;
    let rev = f.put("b", json!(2)).await;
    assert_eq!(
        next_n(&mut informer, 4).await,
        vec![
            ("Modified", "a".into(), json!(1), json!(2)),
            ("Added", "b".into(), Value::Null, json!(1)),
            ("Deleted", "a".into(), json!(2), Value::Null),
            ("Modified", "b".into(), json!(1), json!(2)),
        ]
    );
    assert_eq!(cached_specs(&cache), vec![("b".into(), json!(2))]);
    let b = cache.get(&format!("{PREFIX}b")).unwrap();
    assert_eq!(meta::resource_version(&b), rev.to_string());
    assert_eq!(cache.revision(&format!("{PREFIX}b")), Some(rev));
    assert_eq!(informer.revision(), rev);
}

#[tokio::test]
async fn relists_after_compaction_and_delivers_the_difference() {
    let f = fixture();
    f.put("a", json!(1)).await;
    f.put("b", json!(1)).await;
    f.put("c", json!(1)).await;
    let mut informer = f.informer();
    let cache = informer.cache();
    next_n(&mut informer, 3).await;
    // The watch is opened on the next call, from the list's revision: compact past it first.
    f.put("a", json!(2)).await;
    f.delete("b").await;
    f.put("d", json!(1)).await;
    let rev = f.put("d", json!(2)).await;
    f.store.compact(rev).await.unwrap();
    let lists_before = f.recording.lists.lock().unwrap().len();
    let mut changes = next_n(&mut informer, 3).await;
    changes.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(
        changes,
        vec![
            ("Modified", "a".into(), json!(1), json!(2)),
            ("Deleted", "b".into(), json!(1), Value::Null),
            ("Added", "d".into(), Value::Null, json!(2)),
        ]
    );
    assert!(
        f.recording.lists.lock().unwrap().len() > lists_before,
        "relisted"
    );
    assert_eq!(
        cached_specs(&cache),
        vec![
            ("a".into(), json!(2)),
            ("c".into(), json!(1)),
            ("d".into(), json!(2)),
        ]
    );
    // And the watch goes on from the relist's revision.
    f.put("c", json!(2)).await;
    assert_eq!(
        next_n(&mut informer, 1).await,
        vec![("Modified", "c".into(), json!(1), json!(2))]
    );
}

#[tokio::test]
async fn undecodable_objects_are_left_out() {
    let f = fixture();
    f.put("a", json!(1)).await;
    f.store
        .create(&format!("{PREFIX}bad"), Bytes::from_static(b"not json"))
        .await
        .unwrap();
    let mut informer = f.informer();
    assert_eq!(
        next_n(&mut informer, 1).await,
        vec![("Added", "a".into(), Value::Null, json!(1))]
    );
    assert_eq!(next_one(&mut informer).await, synced());
    // An object that becomes undecodable leaves the cache as a deletion.
    let kv = f.store.get(&format!("{PREFIX}a")).await.unwrap().unwrap();
    f.store
        .update(&kv.key, Bytes::from_static(b"[]"), kv.mod_revision)
        .await
        .unwrap();
    assert_eq!(
        next_n(&mut informer, 1).await,
        vec![("Deleted", "a".into(), json!(1), Value::Null)]
    );
    assert!(informer.cache().is_empty());
}

#[tokio::test]
async fn next_returns_none_at_shutdown() {
    let f = fixture();
    let mut informer = f.informer();
    let waiting = tokio::spawn(async move {
        assert!(matches!(informer.next().await, Some(Notification::Synced)));
        informer.next().await.is_none()
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    f.shutdown.send_replace(true);
    let ended = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("ends within 10s")
        .unwrap();
    assert!(ended);
}

#[tokio::test]
async fn next_is_cancel_safe() {
    let f = fixture();
    for i in 0..5 {
        f.put(&format!("o{i}"), json!(i)).await;
    }
    let mut informer = f.informer().page_size(2);
    let mut seen: Vec<String> = Vec::new();
    // Poll with budgets that start far too short and grow until a change arrives: the
    // interrupted calls lose nothing and every change arrives exactly once, in order.
    let mut budget = Duration::from_micros(10);
    while seen.len() < 6 {
        match tokio::time::timeout(budget, informer.next()).await {
            Ok(Some(Notification::Changed(change))) => {
                seen.push(describe(&change).1);
                budget = Duration::from_micros(10);
            }
            Ok(Some(Notification::Synced)) => seen.push("synced".into()),
            Ok(None) => panic!("shut down"),
            Err(_) => budget *= 2,
        }
    }
    assert_eq!(seen, vec!["o0", "o1", "o2", "o3", "o4", "synced"]);
}
