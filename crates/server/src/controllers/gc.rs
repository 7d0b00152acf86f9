//! The garbage collector (kube-controller-manager's `garbagecollector`): deletes objects whose
//! owners are gone, and carries out the foreground and orphan propagation policies, for every
//! kind served (the fixed kinds of the `Kinds` table and every CRD's custom resources).
//!
//! - One [`Informer`] per key root (resource) feeds the ownership [`Graph`]; the set of key roots
//!   follows the [`Registry`] (its generation watch) as CRDs come and go. The informers cache
//!   only the metadata the graph reads (uid, name, namespace, owner references, deletion
//!   timestamp, finalizers), as upstream's metadata informers do.
//! - Changes produce [`Work`] in a deduplicating queue (an object is never worked on twice at
//!   once; failures retry with exponential backoff); up to [`WORKERS`] items run at once in a
//!   `JoinSet` the run owns, and only while every informer has synced.
//! - [`Work::Attempt`] (upstream's `attemptToDeleteItem`): each owner reference of the object's
//!   latest stored version is classified ([`decide::Owner`]): from the graph when the owner is
//!   observed with matching coordinates, otherwise by a live read of the owner (cached when
//!   absent). Owners all gone: the object is deleted (Background, or as its own GC finalizer
//!   says); some remain: the dangling references are removed. An owner being deleted in the
//!   foreground removes its `foregroundDeletion` finalizer once no dependent with
//!   `blockOwnerDeletion` remains.
//! - [`Work::Orphan`]: the owner's references are removed from every dependent, then the
//!   `orphan` finalizer from the owner.
//! - A namespaced owner only owns dependents in its own namespace: a reference from elsewhere is
//!   dangling. A cluster-scoped owner owns dependents anywhere; a cluster-scoped dependent naming
//!   a namespaced kind is left alone, as upstream does.
//!
//! Deletes go through [`owners::prepare_delete`] with the kind's strategy, as a DELETE does.
//!
//! Architecture Invariant: the collector never deletes an object on the graph's word alone: an
//! owner is dangling only after a read of the store finds no object with its uid where the
//! reference points (or the graph has observed that uid elsewhere), and every write is a
//! compare-and-swap on the object's latest revision with its uid checked.
//!
//! Architecture Invariant: no work runs until every informer has delivered its first list, so
//! orphaning and foreground deletion see every dependent that existed when they began.

pub mod decide;
pub mod graph;
mod queue;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use anyhow::Context;
use crd_storage::{StorageError, Store};
use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::decide::{Action, Owner};
use self::graph::{Graph, Kind, Node, Work};
use self::queue::Queue;
use super::informer::{Change, Informer, Notification, until_shutdown};
use super::{get_json, guaranteed_update};
use crate::registry::owners::{self, GcPolicy, OwnerRef, PropagationPolicy};
use crate::registry::serving::Registry;
use crate::registry::{DeleteOutcome, Scope, Strategy, meta};
use crate::watch_cache::StoredMeta;

/// How many work items run at once.
pub const WORKERS: usize = 8;

/// How many absent owners are remembered before the memory is cleared.
const ABSENT_CACHE: usize = 10_000;

/// One resource the collector follows.
struct Resource {
    key_root: String,
    kind: Kind,
    /// How its objects are deleted; `None` while a CRD is not served.
    strategy: Option<Arc<dyn Strategy>>,
    /// The CRD that defines it, for custom resources.
    crd: Option<String>,
}

impl Resource {
    fn key(&self, namespace: &str, name: &str) -> String {
        if self.kind.namespaced {
            format!("{}/{namespace}/{name}", self.key_root)
        } else {
            format!("{}/{name}", self.key_root)
        }
    }
}

/// Every resource followed, by key root and by group and kind.
#[derive(Default)]
struct Resources {
    by_root: BTreeMap<String, Arc<Resource>>,
    by_kind: HashMap<(String, String), Arc<Resource>>,
}

impl Resources {
    fn build(fixed: &[Arc<dyn Strategy>], registry: &Registry) -> Self {
        let mut all = Vec::new();
        for s in fixed {
            if s.gc_policy() == GcPolicy::Unsupported {
                continue;
            }
            let info = s.info();
            all.push(Resource {
                key_root: info.key_root.clone(),
                kind: Kind {
                    group: info.group.clone(),
                    kind: info.kind.clone(),
                    namespaced: info.namespaced(),
                },
                strategy: Some(s.clone()),
                crd: None,
            });
        }
        for crd in registry.all() {
            all.push(crd_resource(registry, &crd));
        }
        let mut out = Resources::default();
        for r in all {
            out.insert(Arc::new(r));
        }
        out
    }

    /// Adds a resource unless its key root (or, for the by-kind index, its kind) is taken.
    fn insert(&mut self, r: Arc<Resource>) {
        self.by_kind
            .entry((r.kind.group.clone(), r.kind.kind.clone()))
            .or_insert_with(|| r.clone());
        self.by_root.entry(r.key_root.clone()).or_insert(r);
    }

    /// Brings the resource of one CRD up to date with the registry (it may have come, changed
    /// or gone); returns its key root. Costs O(1) in the number of resources, except when the
    /// CRD's kind entry goes and another resource of that kind must replace it.
    fn update_crd(&mut self, registry: &Registry, name: &str) -> String {
        let root = crd_key_root(name);
        let old = self
            .by_root
            .get(&root)
            .filter(|r| r.crd.as_deref() == Some(name))
            .cloned();
        let mut vacated = None;
        if let Some(old) = old {
            self.by_root.remove(&root);
            let kind = (old.kind.group.clone(), old.kind.kind.clone());
            if self
                .by_kind
                .get(&kind)
                .is_some_and(|r| Arc::ptr_eq(r, &old))
            {
                self.by_kind.remove(&kind);
                vacated = Some(kind);
            }
        }
        if let Some(crd) = registry.get(name) {
            self.insert(Arc::new(crd_resource(registry, &crd)));
        }
        if let Some(kind) = vacated
            && !self.by_kind.contains_key(&kind)
            && let Some(r) = self
                .by_root
                .values()
                .find(|r| r.kind.group == kind.0 && r.kind.kind == kind.1)
        {
            self.by_kind.insert(kind, r.clone());
        }
        root
    }
}

/// The key root of a CRD's objects, from its name (`<plural>.<group>`), as
/// [`crate::registry::serving::ServingCrd::key_root`] derives it.
fn crd_key_root(name: &str) -> String {
    format!(
        "/registry/{}/{}",
        crate::registry::serving::group_of_name(name),
        name.split('.').next().unwrap_or("")
    )
}

fn crd_resource(registry: &Registry, crd: &crate::registry::serving::ServingCrd) -> Resource {
    let strategy = crd
        .versions
        .iter()
        .filter(|v| v.served)
        .find_map(|v| registry.strategy(&crd.group, &crd.plural, &v.name))
        .map(|s| s as Arc<dyn Strategy>);
    Resource {
        key_root: crd.key_root(),
        kind: Kind {
            group: crd.group.clone(),
            kind: crd.kind.clone(),
            namespaced: crd.scope == Scope::Namespaced,
        },
        strategy,
        crd: Some(crd.name.clone()),
    }
}

/// An owner a read found absent: uid, group, kind, name and the namespace read.
type AbsentOwner = (String, String, String, String, String);

/// What the run and its workers share.
struct Shared {
    store: Arc<dyn Store>,
    graph: RwLock<Graph>,
    resources: RwLock<Resources>,
    /// Owner coordinates (uid, group, kind, name, namespace read) a read found absent. Uids are
    /// never reused, so an absent owner stays absent.
    absent: Mutex<HashSet<AbsentOwner>>,
}

impl Shared {
    fn graph(&self) -> std::sync::RwLockReadGuard<'_, Graph> {
        self.graph.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn graph_mut(&self) -> std::sync::RwLockWriteGuard<'_, Graph> {
        self.graph.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn resources(&self) -> std::sync::RwLockReadGuard<'_, Resources> {
        self.resources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn resources_mut(&self) -> std::sync::RwLockWriteGuard<'_, Resources> {
        self.resources
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The garbage collector. See the module documentation.
pub struct GarbageCollector {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    fixed: Vec<Arc<dyn Strategy>>,
    crds_synced: watch::Receiver<bool>,
}

impl std::fmt::Debug for GarbageCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GarbageCollector").finish_non_exhaustive()
    }
}

type Feed = BoxStream<'static, (Arc<str>, u64, Notification<Value>)>;

/// The informers running, by key root: each with the id of its feed and the sender that stops it.
#[derive(Default)]
struct Feeds {
    streams: SelectAll<Feed>,
    running: HashMap<String, (u64, watch::Sender<bool>)>,
    unsynced: HashSet<String>,
    next_id: u64,
}

impl GarbageCollector {
    /// Creates the collector over the kinds with fixed strategies (`fixed`) and the CRDs of
    /// `registry`; it starts once `crds_synced` is true (the registry knows every stored CRD), so
    /// its first set of informers covers every resource.
    pub fn new(
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        fixed: Vec<Arc<dyn Strategy>>,
        crds_synced: watch::Receiver<bool>,
    ) -> Arc<Self> {
        Arc::new(GarbageCollector {
            store,
            registry,
            fixed,
            crds_synced,
        })
    }

    /// Collects garbage until shutdown.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let mut crds_synced = self.crds_synced.clone();
        let Some(synced) = until_shutdown(&mut shutdown, crds_synced.wait_for(|s| *s)).await else {
            return Ok(());
        };
        synced.map_err(|_| anyhow::anyhow!("the CRD controller is gone"))?;
        let shared = Arc::new(Shared {
            store: self.store.clone(),
            graph: RwLock::default(),
            resources: RwLock::default(),
            absent: Mutex::default(),
        });
        let mut generation = self.registry.subscribe();
        generation.mark_changed();
        // The registry generation the resources reflect; `None` before the first (full) build.
        let mut seen = None;
        let mut feeds = Feeds::default();
        let mut queue = Queue::default();
        let mut workers: JoinSet<(Work, anyhow::Result<Vec<Work>>)> = JoinSet::new();
        loop {
            if feeds.unsynced.is_empty() {
                while workers.len() < WORKERS
                    && let Some(work) = queue.pop()
                {
                    let shared = shared.clone();
                    workers.spawn(async move {
                        let result = process(&shared, &work).await;
                        (work, result)
                    });
                }
            }
            let due = queue.next_due();
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return Ok(()),
                changed = generation.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let work = self.follow_resources(&shared, &mut feeds, &mut seen);
                    queue.extend(work);
                }
                Some((root, id, notification)) = feeds.streams.next(), if !feeds.streams.is_empty() => {
                    if feeds.running.get(&*root).is_some_and(|(i, _)| *i == id) {
                        let work = observe(&shared, &mut feeds, &root, notification);
                        queue.extend(work);
                    }
                }
                Some(joined) = workers.join_next(), if !workers.is_empty() => {
                    let (work, result) = joined.context("a garbage collector worker died")?;
                    match result {
                        Ok(more) => {
                            queue.done(&work, true);
                            queue.extend(more);
                        }
                        Err(e) => {
                            if e.downcast_ref::<UnknownKind>().is_some() {
                                tracing::debug!(?work, error = %e, "owner kind unknown; retrying");
                            } else {
                                tracing::warn!(?work, error = %format!("{e:#}"), "garbage collection failed; retrying");
                            }
                            queue.done(&work, false);
                        }
                    }
                }
                () = sleep_until(due) => queue.promote(),
            }
        }
    }

    /// Starts informers for new resources and stops those of resources gone (whose objects
    /// leave the graph). Returns the work the departures call for. Only the CRDs changed since
    /// `seen` are looked at, unless the registry's change log no longer reaches back that far.
    fn follow_resources(
        &self,
        shared: &Shared,
        feeds: &mut Feeds,
        seen: &mut Option<u64>,
    ) -> Vec<Work> {
        let changes = seen.and_then(|g| self.registry.changes_since(g));
        let roots: Vec<String> = if let Some((generation, names)) = changes {
            *seen = Some(generation);
            let mut resources = shared.resources_mut();
            names
                .iter()
                .map(|name| resources.update_crd(&self.registry, name))
                .collect()
        } else {
            // Read before the build, so that changes during it are looked at again.
            *seen = Some(self.registry.generation());
            let resources = Resources::build(&self.fixed, &self.registry);
            let roots = resources
                .by_root
                .keys()
                .chain(feeds.running.keys())
                .cloned()
                .collect();
            *shared.resources_mut() = resources;
            roots
        };
        let mut work = Vec::new();
        let (gone, new): (Vec<String>, Vec<String>) = {
            let resources = shared.resources();
            let gone = roots
                .iter()
                .filter(|root| {
                    feeds.running.contains_key(*root) && !resources.by_root.contains_key(*root)
                })
                .cloned()
                .collect();
            let new = roots
                .iter()
                .filter(|root| {
                    resources.by_root.contains_key(*root) && !feeds.running.contains_key(*root)
                })
                .cloned()
                .collect();
            (gone, new)
        };
        for root in gone {
            feeds.running.remove(&root);
            feeds.unsynced.remove(&root);
            let mut graph = shared.graph_mut();
            for uid in graph.uids_under(&format!("{root}/")) {
                work.extend(graph.remove(&uid));
            }
        }
        for root in new {
            if feeds.running.contains_key(&root) {
                continue;
            }
            // The feed stops when its resource goes (`stop` dropped) or with the run.
            let (stop, stopped) = watch::channel(false);
            let informer = Informer::new(
                shared.store.clone(),
                format!("{root}/"),
                Arc::new(decode_metadata),
                stopped,
            );
            feeds.next_id += 1;
            let id = feeds.next_id;
            let tag: Arc<str> = Arc::from(root.as_str());
            let feed = futures::stream::unfold(informer, move |mut informer| {
                let tag = tag.clone();
                async move {
                    let n = informer.next().await?;
                    Some(((tag, id, n), informer))
                }
            });
            feeds.streams.push(feed.boxed());
            feeds.running.insert(root.clone(), (id, stop));
            feeds.unsynced.insert(root.clone());
        }
        work
    }
}

/// Decodes a stored object down to the metadata the graph reads, so the informers' caches hold a
/// few hundred bytes per object rather than whole objects (upstream's collector uses metadata-only
/// informers for the same reason). The collector sees every write of every resource: it reads
/// the decoding the watch cache's event carries, and parses the bytes only without one.
fn decode_metadata(kv: &crd_storage::KeyValue) -> Option<Value> {
    StoredMeta::of(kv).graph_object()
}

/// Waits until `due`, or forever without one.
async fn sleep_until(due: Option<tokio::time::Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Applies one informer notification of the resource at `root` to the graph.
fn observe(
    shared: &Shared,
    feeds: &mut Feeds,
    root: &str,
    notification: Notification<Value>,
) -> Vec<Work> {
    let change = match notification {
        Notification::Synced => {
            feeds.unsynced.remove(root);
            return Vec::new();
        }
        Notification::Changed(change) => change,
    };
    // Only the kind is needed: the rest of the resource (strategy, key root, CRD) is not cloned.
    let Some(kind) = shared
        .resources()
        .by_root
        .get(root)
        .map(|resource| resource.kind.clone())
    else {
        return Vec::new();
    };
    let mut graph = shared.graph_mut();
    match change {
        Change::Added { key, new } => graph.upsert(&kind, &key, None, &new),
        Change::Modified { key, old, new } => {
            if meta::uid(&old) == meta::uid(&new) {
                graph.upsert(&kind, &key, Some(&old), &new)
            } else {
                let mut work = graph.remove(meta::uid(&old));
                work.extend(graph.upsert(&kind, &key, None, &new));
                work
            }
        }
        Change::Deleted { old, .. } => graph.remove(meta::uid(&old)),
    }
}

/// Runs one work item; returns the work it leads to.
async fn process(shared: &Shared, work: &Work) -> anyhow::Result<Vec<Work>> {
    match work {
        Work::Attempt(uid) => attempt(shared, uid).await,
        Work::Orphan(uid) => orphan(shared, uid).await.map(|()| Vec::new()),
    }
}

/// Upstream's `attemptToDeleteItem`. See the module documentation.
async fn attempt(shared: &Shared, uid: &str) -> anyhow::Result<Vec<Work>> {
    let Some(node) = shared.graph().node(uid).cloned() else {
        return Ok(Vec::new());
    };
    if node.being_deleted && !node.deleting_dependents {
        return Ok(Vec::new());
    }
    if !node.being_deleted && all_owners_solid(&shared.graph(), &node) {
        // The graph has seen every owner, and none waits: nothing to do, no read needed. (Were
        // an owner gone already, its deletion event attempts this object again.)
        return Ok(Vec::new());
    }
    let store = shared.store.as_ref();
    let Some((latest, _)) = get_json(store, &node.key).await? else {
        return Ok(Vec::new());
    };
    if meta::uid(&latest) != uid {
        return Ok(Vec::new());
    }
    if owners::deleting_dependents(&latest) {
        return deleting_dependents(shared, uid, &node).await;
    }
    let refs = owners::owner_references(&latest);
    let mut classes = Vec::with_capacity(refs.len());
    for r in &refs {
        let Some(class) = classify(shared, r, &node).await? else {
            tracing::info!(
                key = %node.key, owner = %r.uid,
                "a cluster-scoped object names a namespaced owner; leaving it alone"
            );
            return Ok(Vec::new());
        };
        classes.push(class);
    }
    let action = {
        let graph = shared.graph();
        decide::attempt(&latest, &refs, &classes, &graph, &graph.dependents(uid))
    };
    let resource = resource_of(shared, &node)?;
    match action {
        Action::None => {}
        Action::RemoveReferences(uids) => {
            tracing::debug!(key = %node.key, owners = ?uids, "removing dangling owner references");
            let uids: Vec<&str> = uids.iter().map(String::as_str).collect();
            update(shared, &resource, &node.key, uid, |obj| {
                owners::remove_owner_references(obj, &uids)
            })
            .await?;
        }
        Action::Delete { policy, unblock } => {
            if unblock {
                update(
                    shared,
                    &resource,
                    &node.key,
                    uid,
                    owners::unblock_owner_references,
                )
                .await?;
            }
            tracing::debug!(key = %node.key, ?policy, "deleting an object whose owners are gone");
            delete(shared, &resource, &node.key, uid, policy).await?;
        }
    }
    Ok(Vec::new())
}

/// Whether every owner `node` names is observed, named by its coordinates, allowed to own in the
/// node's namespace and not waiting for its dependents (a node without owners qualifies).
fn all_owners_solid(graph: &Graph, node: &Node) -> bool {
    node.owners.iter().all(|r| {
        graph.node(&r.uid).is_some_and(|o| {
            o.matches(r)
                && o.can_own_in(&node.namespace)
                && (node.kind.namespaced || !o.kind.namespaced)
                && !o.deleting_dependents
        })
    })
}

/// Upstream's `processDeletingDependentsItem`: an owner waits for its blocking dependents; once
/// none is left, its `foregroundDeletion` finalizer goes.
async fn deleting_dependents(shared: &Shared, uid: &str, node: &Node) -> anyhow::Result<Vec<Work>> {
    let (blocking, pending) = {
        let graph = shared.graph();
        let blocking = graph.blocking_dependents(uid);
        let pending: Vec<Work> = blocking
            .iter()
            .filter(|d| graph.node(d).is_some_and(|n| !n.deleting_dependents))
            .cloned()
            .map(Work::Attempt)
            .collect();
        (blocking, pending)
    };
    if !blocking.is_empty() {
        return Ok(pending);
    }
    let resource = resource_of(shared, node)?;
    tracing::debug!(key = %node.key, "dependents gone; removing foregroundDeletion");
    update(shared, &resource, &node.key, uid, |obj| {
        remove_finalizer(obj, owners::FOREGROUND_FINALIZER)
    })
    .await?;
    Ok(Vec::new())
}

/// Upstream's `attemptToOrphanWorker`.
async fn orphan(shared: &Shared, uid: &str) -> anyhow::Result<()> {
    let Some(node) = shared.graph().node(uid).cloned() else {
        return Ok(());
    };
    let dependents: Vec<Node> = {
        let graph = shared.graph();
        graph
            .dependents(uid)
            .iter()
            .filter_map(|d| graph.node(d).cloned())
            .collect()
    };
    for dep in &dependents {
        let Some(resource) = shared
            .resources()
            .by_kind
            .get(&(dep.kind.group.clone(), dep.kind.kind.clone()))
            .cloned()
        else {
            continue;
        };
        update(shared, &resource, &dep.key, &dep.uid, |obj| {
            owners::remove_owner_references(obj, &[uid])
        })
        .await?;
    }
    let resource = resource_of(shared, &node)?;
    tracing::debug!(key = %node.key, dependents = dependents.len(), "dependents orphaned; removing orphan");
    update(shared, &resource, &node.key, uid, |obj| {
        remove_finalizer(obj, owners::ORPHAN_FINALIZER)
    })
    .await?;
    Ok(())
}

fn resource_of(shared: &Shared, node: &Node) -> anyhow::Result<Arc<Resource>> {
    shared
        .resources()
        .by_kind
        .get(&(node.kind.group.clone(), node.kind.kind.clone()))
        .cloned()
        .with_context(|| format!("{}.{} is no longer served", node.kind.kind, node.kind.group))
}

fn remove_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    let mut f = meta::finalizers(obj);
    let before = f.len();
    f.retain(|x| x != finalizer);
    if f.len() == before {
        return false;
    }
    meta::set_finalizers(obj, &f);
    true
}

/// An owner reference names a kind no resource serves (yet): retried, as upstream retries REST
/// mapping errors, and logged quietly.
#[derive(Debug)]
struct UnknownKind(String);

impl std::fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no resource serves kind {}", self.0)
    }
}

impl std::error::Error for UnknownKind {}

/// Classifies one owner reference of `dependent`; `None` when a cluster-scoped dependent names a
/// namespaced kind (invalid: upstream leaves such objects alone).
async fn classify(
    shared: &Shared,
    r: &OwnerRef,
    dependent: &Node,
) -> anyhow::Result<Option<Owner>> {
    if let Some(owner) = shared.graph().node(&r.uid)
        && owner.matches(r)
    {
        if owner.kind.namespaced && !dependent.kind.namespaced {
            return Ok(None);
        }
        return Ok(Some(if !owner.can_own_in(&dependent.namespace) {
            Owner::Dangling
        } else if owner.deleting_dependents {
            Owner::WaitingForDependents
        } else {
            Owner::Solid
        }));
    }
    let resource = shared
        .resources()
        .by_kind
        .get(&(r.group().to_string(), r.kind.clone()))
        .cloned()
        .ok_or_else(|| UnknownKind(format!("{} of {}", r.kind, r.api_version)))?;
    if resource.kind.namespaced && !dependent.kind.namespaced {
        return Ok(None);
    }
    let namespace = if resource.kind.namespaced {
        dependent.namespace.clone()
    } else {
        String::new()
    };
    let absent_key = (
        r.uid.clone(),
        resource.kind.group.clone(),
        r.kind.clone(),
        r.name.clone(),
        namespace.clone(),
    );
    let absent = |shared: &Shared| {
        let mut cache = shared.absent.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= ABSENT_CACHE {
            cache.clear();
        }
        cache.insert(absent_key.clone());
        Ok(Some(Owner::Dangling))
    };
    if shared
        .absent
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&absent_key)
    {
        return Ok(Some(Owner::Dangling));
    }
    let key = resource.key(&namespace, &r.name);
    match get_json(shared.store.as_ref(), &key).await? {
        Some((owner, _)) if meta::uid(&owner) == r.uid => {
            Ok(Some(if owners::deleting_dependents(&owner) {
                Owner::WaitingForDependents
            } else {
                Owner::Solid
            }))
        }
        _ => absent(shared),
    }
}

/// Changes an object (if it still has `uid`) by compare-and-swap; an object whose deletion is
/// pending and whose finalizers are all gone is removed, as the API server does.
async fn update(
    shared: &Shared,
    resource: &Resource,
    key: &str,
    uid: &str,
    mut change: impl FnMut(&mut Value) -> bool,
) -> Result<(), StorageError> {
    let strategy = resource.strategy.clone();
    guaranteed_update(
        shared.store.as_ref(),
        key,
        |obj| meta::uid(obj) == uid && change(obj),
        |obj| match &strategy {
            Some(s) => s.ready_to_remove(obj),
            None => meta::finalizers(obj).is_empty(),
        },
    )
    .await
    .map(|_| ())
}

/// Deletes an object (if it still has `uid`) as a DELETE with `policy` would.
async fn delete(
    shared: &Shared,
    resource: &Resource,
    key: &str,
    uid: &str,
    policy: PropagationPolicy,
) -> anyhow::Result<()> {
    let strategy = resource
        .strategy
        .as_ref()
        .with_context(|| format!("{} is not served", resource.key_root))?;
    let store = shared.store.as_ref();
    loop {
        let Some((mut obj, kv)) = get_json(store, key).await? else {
            return Ok(());
        };
        if meta::uid(&obj) != uid {
            return Ok(());
        }
        let original = obj.clone();
        let result = match owners::prepare_delete(strategy.as_ref(), &mut obj, Some(policy), None) {
            DeleteOutcome::Immediate => store.delete(key, Some(kv.mod_revision)).await.map(drop),
            DeleteOutcome::Graceful => {
                meta::mark_deleting(&mut obj);
                if obj == original {
                    return Ok(());
                }
                store
                    .update(key, meta::encode(&obj)?, kv.mod_revision)
                    .await
                    .map(drop)
            }
        };
        match result {
            Ok(()) | Err(StorageError::NotFound { .. }) => return Ok(()),
            Err(StorageError::Conflict { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests;
