//! Background controllers. Each owns one duty, watches the store (never the handlers), and
//! writes through compare-and-swap:
//!
//! - [`crds::CrdController`]: keeps the serving registry in step with stored CRDs, sets the
//!   NamesAccepted and Established conditions, and runs the cleanup finalizer on deletion.
//! - [`namespaces::NamespaceController`]: deletes the custom objects of terminating namespaces,
//!   then the namespace.
//! - [`compaction`]: compacts storage history periodically, as kube-apiserver does.
//! - [`migration`]: storage-version migration for StorageVersionMigration objects.
//!
//! Architecture Invariant: controllers reach objects through the store, never through HTTP
//! handlers; handlers never drive controllers.

pub mod compaction;
pub mod crds;
pub mod migration;
pub mod namespaces;

use std::time::Duration;

use bytes::Bytes;
use crd_storage::{KeyValue, ListRequest, StorageError, Store};
use serde_json::Value;

use crate::registry::meta;

/// How long a cleanup waits between checks for remaining objects.
pub const CLEANUP_POLL: Duration = Duration::from_millis(200);

/// Reads and decodes one stored object.
pub async fn get_json(
    store: &dyn Store,
    key: &str,
) -> Result<Option<(Value, KeyValue)>, StorageError> {
    let Some(kv) = store.get(key).await? else {
        return Ok(None);
    };
    let obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| StorageError::Engine(format!("decoding {key}: {e}")))?;
    Ok(Some((obj, kv)))
}

/// Re-reads, changes and writes an object until the write wins (compare-and-swap). `change`
/// returns `false` to leave the object as it is. An object whose deletion is pending and whose
/// finalizers are all gone is removed instead of written. Returns the written object, if any.
pub async fn guaranteed_update(
    store: &dyn Store,
    key: &str,
    mut change: impl FnMut(&mut Value) -> bool,
    ready_to_remove: impl Fn(&Value) -> bool,
) -> Result<Option<Value>, StorageError> {
    loop {
        let Some((mut obj, kv)) = get_json(store, key).await? else {
            return Ok(None);
        };
        if !change(&mut obj) {
            return Ok(None);
        }
        let result = if meta::is_deleting(&obj) && ready_to_remove(&obj) {
            store.delete(key, Some(kv.mod_revision)).await.map(|_| ())
        } else {
            let bytes = Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
            store.update(key, bytes, kv.mod_revision).await.map(|_| ())
        };
        match result {
            Ok(()) => return Ok(Some(obj)),
            Err(StorageError::Conflict { .. }) => {}
            Err(StorageError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// Deletes every object under a prefix: objects without finalizers are removed, the others are
/// marked for deletion (deletionTimestamp) and left for their finalizers. Returns how many
/// objects remain.
pub async fn purge_prefix(store: &dyn Store, prefix: &str) -> Result<u64, StorageError> {
    let list = store
        .list(ListRequest {
            prefix: prefix.to_string(),
            ..Default::default()
        })
        .await?;
    for kv in list.items {
        let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else {
            continue;
        };
        let result = if meta::finalizers(&obj).is_empty() {
            store
                .delete(&kv.key, Some(kv.mod_revision))
                .await
                .map(|_| ())
        } else if meta::is_deleting(&obj) {
            Ok(())
        } else {
            meta::mark_deleting(&mut obj);
            let bytes = Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
            store
                .update(&kv.key, bytes, kv.mod_revision)
                .await
                .map(|_| ())
        };
        match result {
            Ok(()) | Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    store.count(prefix).await
}

/// The namespaces every Kubernetes cluster starts with.
const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates the system namespaces that are missing (kube-apiserver's system namespaces
/// controller does this at start-up).
pub async fn namespaces_bootstrap(state: &crate::state::AppState) -> Result<(), StorageError> {
    use crate::registry::Strategy;
    let info = state.namespaces.info();
    for name in SYSTEM_NAMESPACES {
        let key = info.key(None, name);
        if state.store.get(&key).await?.is_some() {
            continue;
        }
        let ns = serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "uid": uuid::Uuid::new_v4().to_string(),
                         "creationTimestamp": meta::now_rfc3339(),
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        let bytes = Bytes::from(serde_json::to_vec(&ns).unwrap_or_default());
        match state.store.create(&key, bytes).await {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
