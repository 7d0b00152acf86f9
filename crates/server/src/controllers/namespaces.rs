//! The namespace controller: when a namespace is being deleted, it deletes every object in it
//! (built-in kinds and custom objects, honouring their finalizers), then removes the
//! `kubernetes` finalizer from `spec.finalizers` so the namespace goes. kube-controller-manager does this in Kubernetes.
//!
//! It follows namespaces with an [`Informer`]; each terminating namespace gets one finalize task
//! in a `JoinSet` the run owns, which [`purge_pass`]es the objects of every namespaced kind of
//! the kinds table and every namespaced CRD in it and
//! then waits ([`purge`]) on the prefixes whose objects finalizers still hold.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crd_storage::{StorageError, Store};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::{Id, JoinError, JoinSet};

use super::informer::{Change, Informer, Notification, until_shutdown};
use super::purge::{purge, purge_pass};
use super::{INITIAL_RETRY, guaranteed_update, retry_after};
use crate::registry::namespaces::{NAMESPACE_FINALIZER, NamespaceStrategy, spec_finalizers};
use crate::registry::serving::Registry;
use crate::registry::{Scope, Strategy, meta};

/// The namespace controller.
pub struct NamespaceController {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    /// The key roots of the namespaced kinds of the kinds table (the built-in kinds).
    table_roots: BTreeSet<String>,
    strategy: NamespaceStrategy,
}

impl std::fmt::Debug for NamespaceController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceController")
            .finish_non_exhaustive()
    }
}

/// A finalize task ended: it succeeded (the namespace is released), stopped at shutdown, or
/// died, which is logged; the namespace's next change starts a new one.
fn ended_task(ended: Result<(Id, ()), JoinError>, running: &mut HashMap<Id, String>) {
    let id = match &ended {
        Ok((id, ())) => *id,
        Err(e) => e.id(),
    };
    let key = running.remove(&id);
    if let (Err(e), Some(key)) = (ended, key) {
        tracing::error!(key = %key, error = %e, "namespace cleanup task died");
    }
}

/// Whether a namespace waits for this controller.
fn needs_finalizing(ns: &Value) -> bool {
    meta::is_deleting(ns) && spec_finalizers(ns).iter().any(|f| f == NAMESPACE_FINALIZER)
}

impl NamespaceController {
    /// Creates the controller; `registry` says which CRDs have namespaced objects,
    /// `table_roots` are the key roots of the namespaced kinds with fixed strategies.
    pub fn new(
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        table_roots: impl IntoIterator<Item = String>,
    ) -> Arc<Self> {
        Arc::new(NamespaceController {
            store,
            registry,
            table_roots: table_roots.into_iter().collect(),
            strategy: NamespaceStrategy::default(),
        })
    }

    /// Follows namespaces until shutdown.
    pub async fn run(self: Arc<Self>, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let prefix = self.strategy.info().prefix(None);
        let mut informer = Informer::json(self.store.clone(), prefix.clone(), shutdown.clone());
        let mut tasks = JoinSet::new();
        let mut running: HashMap<Id, String> = HashMap::new();
        loop {
            tokio::select! {
                notification = informer.next() => match notification {
                    Some(Notification::Changed(
                        Change::Added { key, new } | Change::Modified { key, new, .. },
                    )) => {
                        self.consider(&key, &new, &mut tasks, &mut running, &shutdown);
                    }
                    Some(_) => {}
                    None => return Ok(()),
                },
                Some(ended) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                    ended_task(ended, &mut running);
                }
            }
        }
    }

    fn consider(
        self: &Arc<Self>,
        key: &str,
        ns: &Value,
        tasks: &mut JoinSet<()>,
        running: &mut HashMap<Id, String>,
        shutdown: &watch::Receiver<bool>,
    ) {
        if !needs_finalizing(ns) || running.values().any(|k| k == key) {
            return;
        }
        let name = meta::name(ns).to_string();
        let this = self.clone();
        let mut shutdown = shutdown.clone();
        let handle = tasks.spawn(async move {
            let mut backoff = INITIAL_RETRY;
            loop {
                match this.finalize(&name, shutdown.clone()).await {
                    Ok(()) => return,
                    Err(e) => tracing::warn!(
                        namespace = %name, error = %e, "namespace cleanup failed; retrying"
                    ),
                }
                if !retry_after(&mut backoff, &mut shutdown).await {
                    return;
                }
            }
        });
        running.insert(handle.id(), key.to_string());
    }

    /// Deletes the namespace's contents, then releases the namespace. Stops early (`Ok`) at
    /// shutdown.
    async fn finalize(
        &self,
        name: &str,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), StorageError> {
        // Kinds sharing storage (both Event groups) are purged once.
        let mut roots = self.table_roots.clone();
        roots.extend(
            self.registry
                .all()
                .iter()
                .filter(|crd| crd.scope == Scope::Namespaced)
                .map(|crd| crd.key_root()),
        );
        let prefixes: Vec<String> = roots.iter().map(|r| format!("{r}/{name}/")).collect();
        // Mark everything first, so that finalizers of every kind start at once; then wait.
        let mut held = Vec::new();
        for prefix in prefixes {
            if purge_pass(self.store.as_ref(), &prefix).await? > 0 {
                held.push(prefix);
            }
        }
        for prefix in held {
            if !purge(&self.store, &prefix, shutdown.clone()).await? {
                return Ok(());
            }
        }
        let key = self.strategy.info().key(None, name);
        let released = until_shutdown(
            &mut shutdown,
            guaranteed_update(
                self.store.as_ref(),
                &key,
                |obj| {
                    let mut f = spec_finalizers(obj);
                    let before = f.len();
                    f.retain(|x| x != NAMESPACE_FINALIZER);
                    if f.len() == before {
                        return false;
                    }
                    obj["spec"]["finalizers"] = Value::from(f);
                    true
                },
                |obj| spec_finalizers(obj).is_empty() && meta::finalizers(obj).is_empty(),
            ),
        )
        .await;
        released.transpose()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use crd_storage::sqlite::SqliteStore;
    use serde_json::json;

    use super::*;
    use crate::controllers::get_json;

    #[tokio::test]
    async fn a_terminating_namespace_is_emptied_then_released() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = SqliteStore::open(dir.path()).unwrap();
        let registry = Arc::new(Registry::default());
        registry
            .apply_stored(&json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "crontabs.g.io"},
                "spec": {"group": "g.io", "scope": "Namespaced",
                    "names": {"plural": "crontabs", "kind": "CronTab"},
                    "versions": [{"name": "v1", "served": true, "storage": true}]},
            }))
            .unwrap();
        let put = |key: String, obj: Value| {
            let store = store.clone();
            async move {
                store
                    .create(&key, Bytes::from(obj.to_string()))
                    .await
                    .unwrap()
            }
        };
        for (ns, name, finalizers) in [
            ("team", "a", json!([])),
            ("team", "held", json!(["example.com/f"])),
            ("other", "b", json!([])),
        ] {
            put(
                format!("/registry/g.io/crontabs/{ns}/{name}"),
                json!({"metadata": {"name": name, "namespace": ns, "finalizers": finalizers}}),
            )
            .await;
        }
        let ns_key = "/registry/namespaces/team".to_string();
        put(
            ns_key.clone(),
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team", "deletionTimestamp": "2025-01-01T00:00:00Z"},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}}),
        )
        .await;
        let (shutdown, rx) = watch::channel(false);
        let controller = NamespaceController::new(store.clone(), registry, []);
        let running = tokio::spawn(controller.run(rx));
        let held = "/registry/g.io/crontabs/team/held";
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        // The free object goes, the held one is marked and waited for.
        loop {
            let marked = get_json(store.as_ref(), held)
                .await
                .unwrap()
                .is_some_and(|(o, _)| meta::is_deleting(&o));
            if marked && store.count("/registry/g.io/crontabs/team/").await.unwrap() == 1 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "objects not purged");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(store.get(&ns_key).await.unwrap().is_some());
        // Its finalizer's owner lets go; the API server would delete it: do so.
        store.delete(held, None).await.unwrap();
        loop {
            if store.get(&ns_key).await.unwrap().is_none() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "namespace not released"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            store.count("/registry/g.io/crontabs/other/").await.unwrap(),
            1
        );
        shutdown.send_replace(true);
        tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("stops at shutdown")
            .unwrap()
            .unwrap();
    }
}
