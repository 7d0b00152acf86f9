//! Background controllers. Each owns one duty, reads the world through an [`informer`] (paged
//! list, watch from the list's revision, relist on compaction, local cache), and writes through
//! compare-and-swap. The [`supervisor`] runs them and restarts any that stops before shutdown.
//!
//! - [`crds::CrdController`]: keeps the serving registry in step with stored CRDs, accepts names
//!   (from the [`naming::NameIndex`], O(1) per CRD), sets the NamesAccepted and Established
//!   conditions, and runs the cleanup finalizer on deletion.
//! - [`namespaces::NamespaceController`]: deletes the custom objects of terminating namespaces,
//!   then the namespace.
//! - [`namespace_defaults::NamespaceDefaults`]: the `default` `ServiceAccount` and the
//!   `kube-root-ca.crt` `ConfigMap` in every active namespace, as kube-controller-manager keeps
//!   them.
//! - [`gc::GarbageCollector`]: deletes objects whose owners are gone and carries out the
//!   foreground and orphan propagation policies, for every kind served.
//! - [`migration`]: storage-version migration for StorageVersionMigration objects.
//! - [`rbac::RbacController`]: feeds the RBAC authorizer's policy from informers and
//!   aggregates `ClusterRoles`; [`rbac::bootstrap`] reconciles the default roles at start-up.
//! - [`policy_status::PolicyStatusController`]: type-checks `ValidatingAdmissionPolicy`
//!   expressions and writes `status.typeChecking` and `status.observedGeneration`.
//! - [`compaction`]: compacts storage history periodically, as kube-apiserver does.
//! - [`purge`]: deleting everything under a key prefix, honouring finalizers.
//!
//! Controllers are given the store, the [`Registry`](crate::registry::serving::Registry) and a
//! shutdown receiver, nothing else.
//!
//! Architecture Invariant: controllers depend only on `registry`, `authz` (the RBAC policy they
//! feed) and `crd_storage`; never on
//! `http`, `handlers`, `openapi`, `discovery` or the server's `AppState`.
//!
//! Architecture Invariant: controllers reach objects through the store, never through HTTP
//! handlers; handlers never drive controllers.
//!
//! Architecture Invariant: controllers read the world only through informers; none polls on a
//! timer (compaction, whose duty is periodic, aside).

pub mod apiservices;
pub mod compaction;
pub mod crds;
pub mod gc;
pub mod informer;
pub mod kubernetes_service;
pub mod migration;
pub mod namespace_defaults;
pub mod namespaces;
pub mod naming;
pub mod policy_status;
pub mod purge;
pub mod rbac;
pub mod supervisor;
#[cfg(test)]
mod testing;

use std::time::Duration;

use crd_storage::{KeyValue, StorageError, Store};
use serde_json::Value;

use crate::registry::meta;

/// The first wait before a controller retries failed work; it doubles up to [`MAX_RETRY`].
pub const INITIAL_RETRY: Duration = Duration::from_millis(200);

/// The longest wait between two retries of failed work.
pub const MAX_RETRY: Duration = Duration::from_secs(30);

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
/// finalizers are all gone is removed instead of written. Returns the written object, if any,
/// with `metadata.resourceVersion` set to the revision of the write.
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
            store
                .delete(key, Some(kv.mod_revision))
                .await
                .map(|(_, rev)| rev)
        } else {
            store
                .update(key, meta::encode(&obj)?, kv.mod_revision)
                .await
        };
        match result {
            Ok(revision) => {
                meta::set_resource_version(&mut obj, revision);
                return Ok(Some(obj));
            }
            Err(StorageError::Conflict { .. }) => {}
            Err(StorageError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// Waits `backoff` (unless shutdown comes first: `false` then) and doubles it, up to
/// [`MAX_RETRY`].
pub async fn retry_after(
    backoff: &mut Duration,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    let wait = *backoff;
    *backoff = (*backoff * 2).min(MAX_RETRY);
    informer::until_shutdown(shutdown, tokio::time::sleep(wait))
        .await
        .is_some()
}

/// The namespaces every Kubernetes cluster starts with.
const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates the system namespaces that are missing (kube-apiserver's system namespaces
/// controller does this at start-up).
pub async fn namespaces_bootstrap(store: &dyn Store) -> Result<(), StorageError> {
    use crate::registry::Strategy;
    let strategy = crate::registry::namespaces::NamespaceStrategy::default();
    let info = strategy.info();
    for name in SYSTEM_NAMESPACES {
        let key = info.key(None, name);
        if store.get(&key).await?.is_some() {
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
        match store.create(&key, meta::encode(&ns)?).await {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
