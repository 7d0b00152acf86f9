//! Deleting every object under a key prefix, as the CRD cleanup finalizer and the namespace
//! controller need: objects without finalizers are removed, the others are marked for deletion
//! (`deletionTimestamp`) and left to their finalizers.
//!
//! [`purge_pass`] is one paged pass; [`purge`] runs a pass, then, while finalizers hold objects,
//! follows the prefix with an [`Informer`] and acts on each change until the prefix is empty.
//!
//! Architecture Invariant: a purge holds at most one page of objects, plus a few numbers per
//! remaining key while it waits; it waits on a watch, never on a timer.

use std::sync::Arc;

use crd_storage::{KeyValue, Pages, Revision, StorageError, Store};
use serde_json::Value;
use tokio::sync::{Notify, watch};

use super::get_json;
use super::informer::{Change, Informer, Notification, PAGE};
use crate::registry::meta;

/// What a purge needs to know of a remaining object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remaining {
    /// Its modification revision (the precondition of a delete).
    pub revision: Revision,
    /// Whether it has finalizers.
    pub finalizers: bool,
    /// Whether its deletion is pending (`deletionTimestamp` set).
    pub deleting: bool,
}

impl Remaining {
    /// Reads the facts from stored bytes. Bytes that are not an object with finalizers (even
    /// undecodable ones) count as free to delete, as in [`purge_pass`].
    pub fn decode(kv: &KeyValue) -> Option<Remaining> {
        let obj = serde_json::from_slice::<Value>(&kv.value).unwrap_or(Value::Null);
        Some(Remaining {
            revision: kv.mod_revision,
            finalizers: !meta::finalizers(&obj).is_empty(),
            deleting: meta::is_deleting(&obj),
        })
    }
}

/// Deletes `obj` (stored at `key`, last modified at `revision`) or, when it has finalizers, marks
/// it for deletion. Conflicts and vanished keys are not errors: the object changed, and whoever
/// follows the prefix sees the change.
async fn retire(
    store: &dyn Store,
    key: &str,
    mut obj: Value,
    revision: Revision,
) -> Result<(), StorageError> {
    let result = if meta::finalizers(&obj).is_empty() {
        store.delete(key, Some(revision)).await.map(|_| ())
    } else if meta::is_deleting(&obj) {
        Ok(())
    } else {
        meta::mark_deleting(&mut obj);
        store
            .update(key, meta::encode(&obj)?, revision)
            .await
            .map(|_| ())
    };
    match result {
        Ok(()) | Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// One paged pass over `prefix`: deletes or marks every object. Returns how many keys remain
/// under the prefix afterwards.
pub async fn purge_pass(store: &dyn Store, prefix: &str) -> Result<u64, StorageError> {
    let mut pages = Pages::latest(store, prefix, PAGE);
    while let Some(items) = pages.next_page().await? {
        for kv in &items {
            // An undecodable object cannot carry finalizers: it goes.
            let obj = serde_json::from_slice::<Value>(&kv.value).unwrap_or(Value::Null);
            retire(store, &kv.key, obj, kv.mod_revision).await?;
        }
    }
    store.count(prefix).await
}

/// Deletes everything under `prefix` and returns once nothing is left (`true`), or at shutdown
/// (`false`). Objects held by finalizers are waited for through a watch on the prefix; each
/// change to them is signalled on `changed` (the namespace controller rewrites its conditions).
pub async fn purge(
    store: &Arc<dyn Store>,
    prefix: &str,
    shutdown: watch::Receiver<bool>,
    changed: Option<&Notify>,
) -> Result<bool, StorageError> {
    if purge_pass(store.as_ref(), prefix).await? == 0 {
        return Ok(true);
    }
    let mut informer = Informer::new(store.clone(), prefix, Arc::new(Remaining::decode), shutdown);
    let cache = informer.cache();
    loop {
        let Some(notification) = informer.next().await else {
            return Ok(false);
        };
        if let (Some(changed), Notification::Changed(_)) = (changed, &notification) {
            changed.notify_one();
        }
        if let Notification::Changed(
            Change::Added { key, new } | Change::Modified { key, new, .. },
        ) = notification
        {
            if !new.finalizers {
                retire(store.as_ref(), &key, Value::Null, new.revision).await?;
            } else if !new.deleting
                && let Some((obj, kv)) = get_json(store.as_ref(), &key).await?
            {
                retire(store.as_ref(), &key, obj, kv.mod_revision).await?;
            }
        }
        if informer.has_synced() && cache.is_empty() {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;

    use crd_storage::sqlite::SqliteStore;
    use serde_json::json;

    use super::*;

    const PREFIX: &str = "/registry/g.io/things/default/";

    async fn put(store: &dyn Store, name: &str, finalizers: &[&str]) {
        let obj = json!({"metadata": {"name": name, "generation": 1, "finalizers": finalizers}});
        store
            .create(&format!("{PREFIX}{name}"), Bytes::from(obj.to_string()))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn pass_deletes_free_objects_and_marks_held_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = SqliteStore::open(dir.path()).unwrap();
        for i in 0..(PAGE + 3) {
            put(store.as_ref(), &format!("free{i:04}"), &[]).await;
        }
        put(store.as_ref(), "held", &["example.com/f"]).await;
        put(store.as_ref(), "z", &[]).await;
        store
            .create("/registry/g.io/things/other/x", Bytes::from_static(b"{}"))
            .await
            .unwrap();
        assert_eq!(purge_pass(store.as_ref(), PREFIX).await.unwrap(), 1);
        let (held, _) = get_json(store.as_ref(), &format!("{PREFIX}held"))
            .await
            .unwrap()
            .unwrap();
        assert!(meta::is_deleting(&held));
        assert_eq!(held["metadata"]["generation"], 2);
        assert_eq!(held["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(
            store.count("/registry/g.io/things/other/").await.unwrap(),
            1
        );
    }

    #[tokio::test]
    async fn purge_waits_for_finalizers_through_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = SqliteStore::open(dir.path()).unwrap();
        put(store.as_ref(), "a", &[]).await;
        put(store.as_ref(), "held", &["example.com/f"]).await;
        let (_tx, rx) = watch::channel(false);
        let purging = tokio::spawn({
            let store = store.clone();
            async move { purge(&store, PREFIX, rx, None).await }
        });
        // The held object is marked, then released by its finalizer's owner, who deletes it
        // as the API server does when the last finalizer goes.
        let key = format!("{PREFIX}held");
        loop {
            let (obj, _) = get_json(store.as_ref(), &key).await.unwrap().unwrap();
            if meta::is_deleting(&obj) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!purging.is_finished());
        let (mut obj, kv) = get_json(store.as_ref(), &key).await.unwrap().unwrap();
        meta::set_finalizers(&mut obj, &[]);
        store
            .update(&key, Bytes::from(obj.to_string()), kv.mod_revision)
            .await
            .unwrap();
        // Still present without finalizers: the purge's watch sees it and deletes it.
        let done = tokio::time::timeout(Duration::from_secs(10), purging)
            .await
            .expect("purge ends within 10s")
            .unwrap()
            .unwrap();
        assert!(done);
        assert_eq!(store.count(PREFIX).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn purge_stops_at_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = SqliteStore::open(dir.path()).unwrap();
        put(store.as_ref(), "held", &["example.com/f"]).await;
        let (tx, rx) = watch::channel(false);
        let purging = tokio::spawn({
            let store = store.clone();
            async move { purge(&store, PREFIX, rx, None).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        tx.send_replace(true);
        let done = tokio::time::timeout(Duration::from_secs(10), purging)
            .await
            .expect("ends within 10s")
            .unwrap()
            .unwrap();
        assert!(!done);
        assert_eq!(store.count(PREFIX).await.unwrap(), 1);
    }
}
