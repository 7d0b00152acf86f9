//! The CRD controller: one [`Informer`] on stored CRDs that
//! 1. rebuilds each CRD's serving state in the [`Registry`] (every server does this);
//! 2. accepts names and sets NamesAccepted and Established (upstream's naming and establishing
//!    controllers; the desired status is the pure function [`desired_status`], conflicts come
//!    from the [`NameIndex`] the controller keeps);
//! 3. runs the `customresourcecleanup.apiextensions.k8s.io` finalizer when a CRD is deleted:
//!    deletes every object of the CRD ([`purge`]), then removes the finalizer so the CRD goes.
//!
//! Events update the registry and the index and queue the CRD's key; the queue is worked once
//! the informer has synced, so that every CRD stored at start-up is known before any name is
//! accepted. Each event costs O(1) in the number of CRDs; start-up with N CRDs is O(N).
//!
//! Architecture Invariant: a status this controller writes is applied to the registry before it
//! is written, so the resource is served by the time any client can read Established, and to
//! the name index before the next CRD is reconciled, so the next CRD sees the names just
//! accepted.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use crd_storage::{StorageError, Store};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::{Id, JoinError, JoinSet};

use super::informer::{Cache, Change, Informer, Notification, until_shutdown};
use super::naming::{NameIndex, Update, desired_status};
use super::purge::purge;
use super::{INITIAL_RETRY, get_json, guaranteed_update, retry_after};
use crate::registry::conditions;
use crate::registry::crds::{CLEANUP_FINALIZER, CRD_KEY_ROOT};
use crate::registry::meta;
use crate::registry::serving::Registry;

/// The key prefix of stored CRDs.
fn crd_prefix() -> String {
    format!("{CRD_KEY_ROOT}/")
}

/// The storage key of a CRD.
fn crd_key(name: &str) -> String {
    format!("{CRD_KEY_ROOT}/{name}")
}

/// The CRD controller. It lives across restarts by the supervisor; each [`CrdController::run`]
/// starts from a fresh list.
pub struct CrdController {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    synced: watch::Sender<bool>,
}

impl std::fmt::Debug for CrdController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrdController")
            .field("synced", &*self.synced.borrow())
            .finish_non_exhaustive()
    }
}

/// A queue of keys to reconcile, each at most once.
#[derive(Default)]
struct WorkQueue {
    order: VecDeque<String>,
    queued: HashSet<String>,
}

impl WorkQueue {
    fn push(&mut self, key: String) {
        if self.queued.insert(key.clone()) {
            self.order.push_back(key);
        }
    }

    fn pop(&mut self) -> Option<String> {
        let key = self.order.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }
}

/// The state of one run: rebuilt from a fresh list at every (re)start.
struct Run {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    cache: Cache<Value>,
    names: NameIndex,
    queue: WorkQueue,
    cleanups: JoinSet<()>,
    /// The CRDs whose cleanup is running, by task.
    cleaning: HashMap<Id, String>,
    shutdown: watch::Receiver<bool>,
}

impl CrdController {
    /// Creates the controller.
    pub fn new(store: Arc<dyn Store>, registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(CrdController {
            store,
            registry,
            synced: watch::Sender::new(false),
        })
    }

    /// Turns true once every CRD stored at start-up is in the registry and reconciled (the
    /// server reports ready after this).
    pub fn synced(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    /// Follows CRDs until shutdown.
    pub async fn run(self: Arc<Self>, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let mut informer = Informer::json(self.store.clone(), crd_prefix(), shutdown.clone());
        let mut run = Run::new(
            self.store.clone(),
            self.registry.clone(),
            informer.cache(),
            shutdown,
        );
        loop {
            tokio::select! {
                notification = informer.next() => match notification {
                    Some(Notification::Changed(change)) => run.observe(change),
                    Some(Notification::Synced) => run.prune_registry(),
                    None => return Ok(()),
                },
                Some(ended) = run.cleanups.join_next_with_id(), if !run.cleanups.is_empty() => {
                    run.cleanup_ended(ended);
                }
            }
            // Names are accepted only once every stored CRD is in the index.
            if informer.has_synced() {
                while let Some(key) = run.queue.pop() {
                    run.reconcile(&key).await;
                }
                self.synced
                    .send_if_modified(|s| !std::mem::replace(s, true));
            }
        }
    }
}

impl Run {
    /// A run over `cache` (the CRD informer's) with nothing indexed, queued or cleaning yet.
    fn new(
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        cache: Cache<Value>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Run {
            store,
            registry,
            cache,
            names: NameIndex::default(),
            queue: WorkQueue::default(),
            cleanups: JoinSet::new(),
            cleaning: HashMap::new(),
            shutdown,
        }
    }

    /// Applies one change to the registry and the name index, and queues the work it causes.
    fn observe(&mut self, change: Change<Value>) {
        match change {
            Change::Added { key, new } | Change::Modified { key, new, .. } => {
                let Update::Applied { released } = self.names.update(&new) else {
                    // Older than a status this controller wrote and already applied.
                    return;
                };
                apply_to_registry(&self.registry, &new);
                self.queue.push(key);
                if released {
                    self.requeue_group(group_of(&new), meta::name(&new));
                }
            }
            Change::Deleted { old, .. } => {
                let name = meta::name(&old);
                self.registry.remove(name);
                if let Some(group) = self.names.forget(name) {
                    self.requeue_group(&group, name);
                }
            }
        }
    }

    /// Removes from the registry the CRDs the first list of this run did not find: after a
    /// restart, the deletions missed while the controller was down.
    fn prune_registry(&mut self) {
        for crd in self.registry.all() {
            if self.cache.get(&crd_key(&crd.name)).is_none() {
                tracing::info!(crd = %crd.name, "CRD deleted while its controller was down");
                self.registry.remove(&crd.name);
            }
        }
    }

    /// Queues the CRDs of a group that have names not accepted: names were released, conflicts
    /// may be gone (upstream requeues every other CRD of the group).
    fn requeue_group(&mut self, group: &str, except: &str) {
        let keys: Vec<String> = self
            .names
            .group_members(group)
            .filter(|name| *name != except)
            .map(|name| crd_key(name))
            .filter(|key| {
                self.cache
                    .get(key)
                    .is_some_and(|crd| conditions::get(&crd, "NamesAccepted") != Some("True"))
            })
            .collect();
        for key in keys {
            self.queue.push(key);
        }
    }

    async fn reconcile(&mut self, key: &str) {
        let Some(crd) = self.cache.get(key) else {
            return;
        };
        if meta::is_deleting(&crd) {
            if meta::finalizers(&crd)
                .iter()
                .any(|f| f == CLEANUP_FINALIZER)
            {
                self.start_cleanup(meta::name(&crd));
            }
            return;
        }
        let name = meta::name(&crd).to_string();
        let group = group_of(&crd).to_string();
        let mut stored = None;
        let written = {
            let taken = self.names.taken(&group, &name);
            let desired = desired_status(&crd, &taken);
            if desired.get("status") == crd.get("status") {
                return;
            }
            // Serve before the status is durable: a client that reads Established=True from
            // storage must find the resource served (the registry is re-applied from the
            // write's result, or from the cache if the write does not happen).
            apply_to_registry(&self.registry, &desired);
            let uid = meta::uid(&crd).to_string();
            guaranteed_update(
                self.store.as_ref(),
                key,
                |obj| {
                    if meta::uid(obj) != uid || meta::is_deleting(obj) {
                        return false;
                    }
                    let desired = desired_status(obj, &taken);
                    if desired.get("status") == obj.get("status") {
                        // Another server wrote this status first: serve what is stored.
                        stored = Some(obj.clone());
                        return false;
                    }
                    *obj = desired;
                    true
                },
                |_| false,
            )
            .await
        };
        match written {
            // Serve at once, before the watch event of our own write arrives.
            Ok(Some(obj)) => {
                if let Update::Applied { released: true } = self.names.update(&obj) {
                    self.requeue_group(&group, &name);
                }
                apply_to_registry(&self.registry, &obj);
            }
            // The stored status is already the desired one (another server sharing the store
            // wrote it): serve from it, not from the cache, which may not have its event yet
            // (serving from the cache withdrew the resource this server had just served).
            Ok(None) if stored.is_some() => {
                if let Some(obj) = stored {
                    apply_to_registry(&self.registry, &obj);
                }
            }
            Ok(None) => self.restore_registry(key),
            Err(e) => {
                tracing::warn!(crd = %name, error = %e, "updating CRD status failed");
                self.restore_registry(key);
            }
        }
    }

    /// Serves a CRD as the cache has it, after a status write that did not happen.
    fn restore_registry(&self, key: &str) {
        if let Some(crd) = self.cache.get(key) {
            apply_to_registry(&self.registry, &crd);
        }
    }

    fn start_cleanup(&mut self, name: &str) {
        if self.cleaning.values().any(|n| n == name) {
            return;
        }
        let store = self.store.clone();
        let mut shutdown = self.shutdown.clone();
        let crd = name.to_string();
        let handle = self.cleanups.spawn(async move {
            let mut backoff = INITIAL_RETRY;
            loop {
                match cleanup(&store, &crd, shutdown.clone()).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(crd = %crd, error = %e, "CRD cleanup failed; retrying");
                    }
                }
                if !retry_after(&mut backoff, &mut shutdown).await {
                    return;
                }
            }
        });
        self.cleaning.insert(handle.id(), name.to_string());
    }

    /// A cleanup ended: it succeeded (the CRD is released), stopped at shutdown, or died,
    /// which is logged; the CRD's next change starts a new one.
    fn cleanup_ended(&mut self, ended: Result<(Id, ()), JoinError>) {
        let id = match &ended {
            Ok((id, ())) => *id,
            Err(e) => e.id(),
        };
        let name = self.cleaning.remove(&id);
        if let (Err(e), Some(name)) = (ended, name) {
            tracing::error!(crd = %name, error = %e, "CRD cleanup task died");
        }
    }
}

fn group_of(crd: &Value) -> &str {
    crd.pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The cleanup finalizer: delete all instances, then release the CRD. Stops early (`Ok`) at
/// shutdown; the next run resumes.
async fn cleanup(
    store: &Arc<dyn Store>,
    name: &str,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), StorageError> {
    let key = crd_key(name);
    let Some((crd, _)) = get_json(store.as_ref(), &key).await? else {
        return Ok(());
    };
    let established = conditions::get(&crd, "Established") == Some("True");
    set_terminating(
        store.as_ref(),
        &key,
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
    )
    .await?;
    if established {
        let group = group_of(&crd);
        let plural = crd
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or("");
        let prefix = format!("/registry/{group}/{plural}/");
        if !purge(store, &prefix, shutdown.clone(), None).await? {
            return Ok(());
        }
        set_terminating(
            store.as_ref(),
            &key,
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
        )
        .await?;
    } else {
        set_terminating(
            store.as_ref(),
            &key,
            "False",
            "NeverEstablished",
            "resource was never established",
        )
        .await?;
    }
    if *shutdown.borrow_and_update() {
        return Ok(());
    }
    let released = until_shutdown(
        &mut shutdown,
        guaranteed_update(
            store.as_ref(),
            &key,
            |obj| {
                let mut f = meta::finalizers(obj);
                let before = f.len();
                f.retain(|x| x != CLEANUP_FINALIZER);
                meta::set_finalizers(obj, &f);
                f.len() != before
            },
            |obj| meta::finalizers(obj).is_empty(),
        ),
    )
    .await;
    released.transpose()?;
    Ok(())
}

async fn set_terminating(
    store: &dyn Store,
    key: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> Result<(), StorageError> {
    guaranteed_update(
        store,
        key,
        |obj| {
            let before = obj.clone();
            conditions::set(obj, "Terminating", status, reason, message);
            *obj != before
        },
        |_| false,
    )
    .await
    .map(|_| ())
}

fn apply_to_registry(registry: &Registry, obj: &Value) {
    match registry.apply_stored(obj) {
        Ok(()) => {}
        Err(e) => tracing::warn!(crd = %meta::name(obj), error = %e, "cannot serve CRD"),
    }
}

#[cfg(test)]
mod tests;
