//! The namespace controller: when a namespace is being deleted, it deletes every object in it
//! (built-in kinds and custom objects, honouring their finalizers), then removes the
//! `kubernetes` finalizer from `spec.finalizers` so the namespace goes. kube-controller-manager does this in Kubernetes.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crd_storage::{Event, ListRequest, StorageError, WatchRequest};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;

use super::{CLEANUP_POLL, guaranteed_update, purge_prefix};
use crate::registry::namespaces::{NAMESPACE_FINALIZER, spec_finalizers};
use crate::registry::{Scope, Strategy, meta};
use crate::state::AppState;

/// The namespace controller.
pub struct NamespaceController {
    state: Arc<AppState>,
    running: Mutex<HashSet<String>>,
}

impl NamespaceController {
    /// Creates the controller.
    pub fn new(state: Arc<AppState>) -> Arc<Self> {
        Arc::new(NamespaceController {
            state,
            running: Mutex::new(HashSet::new()),
        })
    }

    fn prefix(&self) -> String {
        self.state.namespaces.info().prefix(None)
    }

    /// Reconciles every namespace; returns the revision to watch from.
    pub async fn sync(self: &Arc<Self>) -> Result<i64, StorageError> {
        let list = self
            .state
            .store
            .list(ListRequest {
                prefix: self.prefix(),
                ..Default::default()
            })
            .await?;
        for kv in &list.items {
            if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                self.reconcile(&obj);
            }
        }
        Ok(list.revision)
    }

    /// Follows namespace changes until shutdown.
    pub async fn run(self: Arc<Self>, mut after: i64, mut shutdown: watch::Receiver<bool>) {
        loop {
            let request = WatchRequest {
                prefix: self.prefix(),
                after,
                progress_interval: None,
            };
            let Ok(mut stream) = self.state.store.watch(request).await else {
                after = self.resync().await;
                continue;
            };
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    _ = shutdown.changed() => return,
                };
                match item {
                    Some(Ok(Event::Put { kv, .. })) => {
                        if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                            self.reconcile(&obj);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) => {
                        after = self.resync().await;
                        break;
                    }
                    None => return,
                }
            }
        }
    }

    async fn resync(self: &Arc<Self>) -> i64 {
        loop {
            if let Ok(rev) = self.sync().await {
                return rev;
            }
            tokio::time::sleep(CLEANUP_POLL).await;
        }
    }

    fn reconcile(self: &Arc<Self>, ns: &Value) {
        if !meta::is_deleting(ns) || !spec_finalizers(ns).iter().any(|f| f == NAMESPACE_FINALIZER) {
            return;
        }
        let name = meta::name(ns).to_string();
        {
            let mut running = self
                .running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !running.insert(name.clone()) {
                return;
            }
        }
        let this = self.clone();
        tokio::spawn(async move {
            while let Err(e) = this.finalize(&name).await {
                tracing::warn!(namespace = %name, error = %e, "namespace cleanup failed; retrying");
                tokio::time::sleep(CLEANUP_POLL).await;
            }
            this.running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&name);
        });
    }

    /// Deletes the namespace's contents, then releases the namespace.
    async fn finalize(&self, name: &str) -> Result<(), StorageError> {
        let store = self.state.store.as_ref();
        loop {
            let mut remaining = 0;
            // Every namespaced kind of the table (built-ins; kinds sharing storage once) and
            // every namespaced CRD.
            let mut roots: std::collections::BTreeSet<String> = self
                .state
                .kinds
                .all()
                .map(|s| s.info())
                .filter(|i| i.namespaced())
                .map(|i| i.key_root.clone())
                .collect();
            roots.extend(
                self.state
                    .registry
                    .all()
                    .into_iter()
                    .filter(|crd| crd.scope == Scope::Namespaced)
                    .map(|crd| crd.key_root()),
            );
            for root in roots {
                remaining += purge_prefix(store, &format!("{root}/{name}/")).await?;
            }
            if remaining == 0 {
                break;
            }
            tokio::time::sleep(CLEANUP_POLL).await;
        }
        let key = self.state.namespaces.info().key(None, name);
        guaranteed_update(
            store,
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
        )
        .await?;
        Ok(())
    }
}
