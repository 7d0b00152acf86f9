//! The namespace controller: when a namespace is being deleted, it deletes every object in it
//! (built-in kinds and custom objects, honouring their finalizers), then removes the
//! `kubernetes` finalizer from `spec.finalizers` so the namespace goes. kube-controller-manager does this in Kubernetes.
//!
//! It follows namespaces with an [`Informer`]; each terminating namespace gets one finalize task
//! in a `JoinSet` the run owns, which [`purge_pass`]es the objects of every namespaced kind of
//! the kinds table and every namespaced CRD in it and
//! then waits ([`purge`]) on the prefixes whose objects finalizers still hold.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crd_storage::{Pages, StorageError, Store};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::task::{Id, JoinError, JoinSet};

use super::informer::{Change, Informer, Notification, PAGE, until_shutdown};
use super::purge::{purge, purge_pass};
use super::{INITIAL_RETRY, guaranteed_update, retry_after};
use crate::registry::namespaces::{NAMESPACE_FINALIZER, NamespaceStrategy, spec_finalizers};
use crate::registry::serving::Registry;
use crate::registry::{Scope, Strategy, conditions, meta};

/// The least time between two rewrites of a terminating namespace's conditions while held
/// content changes: each rewrite counts the held content again.
const RECHECK: Duration = Duration::from_secs(1);

/// The namespace controller.
pub struct NamespaceController {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    /// The key roots of the namespaced kinds of the kinds table (the built-in kinds), with the
    /// resource the namespace's conditions name for each.
    table_roots: BTreeMap<String, String>,
    strategy: NamespaceStrategy,
    /// How long a namespace seen terminating waits before its content is deleted
    /// (upstream's `namespaceDeletionGracePeriod`).
    grace: Duration,
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
    /// `table_roots` are the key roots of the namespaced kinds with fixed strategies, each with
    /// its resource's name (`configmaps.`). A namespace seen terminating waits `grace` before
    /// its content is deleted, as kube-controller-manager's does (5 s): clients that delete a
    /// namespace and then its objects (`kubectl delete -f`) find them still there.
    pub fn new(
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        table_roots: impl IntoIterator<Item = (String, String)>,
        grace: Duration,
    ) -> Arc<Self> {
        Arc::new(NamespaceController {
            store,
            registry,
            table_roots: table_roots.into_iter().collect(),
            strategy: NamespaceStrategy::default(),
            grace,
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
            if !this.grace.is_zero()
                && until_shutdown(&mut shutdown, tokio::time::sleep(this.grace))
                    .await
                    .is_none()
            {
                return;
            }
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
    /// shutdown. The namespace's status conditions say what is left, as kube-controller-manager's
    /// namespace controller writes them: after the first pass over every kind, as held objects
    /// change (at most once per [`RECHECK`]), after each kind whose objects finalizers held is
    /// empty, and once all content is gone.
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
                .map(|crd| (crd.key_root(), crd.name.clone())),
        );
        // Mark everything first, so that finalizers of every kind start at once; then wait.
        let mut held = Vec::new();
        for (root, resource) in roots {
            let prefix = format!("{root}/{name}/");
            if purge_pass(self.store.as_ref(), &prefix).await? > 0 {
                held.push((prefix, resource));
            }
        }
        // Reported once now (all conditions False when nothing is held), then as the held
        // content changes and after each kind the finalizers let go.
        self.report(name, &held).await?;
        for i in 0..held.len() {
            if !self
                .purge_reporting(name, &held[i..], shutdown.clone())
                .await?
            {
                return Ok(());
            }
            self.report(name, &held[i + 1..]).await?;
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

    /// Purges the first of the `held` prefixes (`true` once empty, `false` at shutdown),
    /// rewriting the conditions as its objects change, at most once per [`RECHECK`]: a
    /// finalizer let go of one of several objects shows before the kind empties, as upstream's
    /// controller shows it on its next pass.
    async fn purge_reporting(
        &self,
        name: &str,
        held: &[(String, String)],
        shutdown: watch::Receiver<bool>,
    ) -> Result<bool, StorageError> {
        let changed = Notify::new();
        let purging = purge(&self.store, &held[0].0, shutdown, Some(&changed));
        tokio::pin!(purging);
        let mut pending = false;
        let mut next_report = tokio::time::Instant::now();
        loop {
            tokio::select! {
                done = &mut purging => return done,
                () = changed.notified(), if !pending => pending = true,
                () = tokio::time::sleep_until(next_report), if pending => {
                    self.report(name, held).await?;
                    pending = false;
                    next_report = tokio::time::Instant::now() + RECHECK;
                }
            }
        }
    }

    /// Writes the namespace's deletion conditions for the content still `held` (prefixes with
    /// their resource names): how many objects of each resource remain, and how many carry each
    /// finalizer. A write only when a condition's status, reason or message changes.
    async fn report(&self, name: &str, held: &[(String, String)]) -> Result<(), StorageError> {
        let mut remaining = Vec::new();
        let mut finalizers = BTreeMap::<String, u64>::new();
        for (prefix, resource) in held {
            let mut pages = Pages::latest(self.store.as_ref(), prefix.clone(), PAGE);
            let mut count = 0;
            while let Some(items) = pages.next_page().await? {
                count += items.len();
                for kv in items {
                    let obj = serde_json::from_slice::<Value>(&kv.value).unwrap_or(Value::Null);
                    for f in meta::finalizers(&obj) {
                        *finalizers.entry(f).or_default() += 1;
                    }
                }
            }
            if count > 0 {
                remaining.push(format!("{resource} has {count} resource instances"));
            }
        }
        remaining.sort();
        let finalizers: Vec<String> = finalizers
            .iter()
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        let wanted = deletion_conditions(&remaining, &finalizers);
        let key = self.strategy.info().key(None, name);
        guaranteed_update(
            self.store.as_ref(),
            &key,
            |ns| set_conditions(ns, &wanted),
            |_| false,
        )
        .await?;
        Ok(())
    }
}

/// One namespace condition: type, status, reason, message.
type Condition = (&'static str, &'static str, &'static str, String);

/// The five conditions kube-controller-manager's namespace deleter keeps on a terminating
/// namespace (`NamespaceContentRemaining` and `NamespaceFinalizersRemaining` true while
/// `remaining` and `finalizers` name something).
fn deletion_conditions(remaining: &[String], finalizers: &[String]) -> Vec<Condition> {
    vec![
        (
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered".into(),
        ),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
        (
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".into(),
        ),
        if remaining.is_empty() {
            (
                "NamespaceContentRemaining",
                "False",
                "ContentRemoved",
                "All content successfully removed".into(),
            )
        } else {
            (
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", remaining.join(", ")),
            )
        },
        if finalizers.is_empty() {
            (
                "NamespaceFinalizersRemaining",
                "False",
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished".into(),
            )
        } else {
            (
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    finalizers.join(", ")
                ),
            )
        },
    ]
}

/// Sets `wanted` on the namespace's `status.conditions` ([`conditions::set`]: a condition
/// whose status did not change keeps its `lastTransitionTime`), unless its conditions say all
/// of it already (`false`: nothing to write).
fn set_conditions(ns: &mut Value, wanted: &[Condition]) -> bool {
    let current = ns.pointer("/status/conditions").and_then(Value::as_array);
    let says = |(kind, status, reason, message): &Condition| {
        current.into_iter().flatten().any(|c| {
            c["type"] == *kind
                && c["status"] == *status
                && c["reason"] == *reason
                && c["message"] == *message
        })
    };
    if wanted.iter().all(says) {
        return false;
    }
    for (kind, status, reason, message) in wanted {
        conditions::set(ns, kind, status, reason, message);
    }
    true
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use crd_storage::sqlite::SqliteStore;
    use serde_json::json;

    use super::*;
    use crate::controllers::get_json;

    /// Conditions are written only when one says something new; an unchanged status keeps its
    /// transition time.
    #[test]
    fn conditions_change_only_when_what_they_say_changes() {
        let held = deletion_conditions(&["pods. has 2 resource instances".into()], &[]);
        let free = deletion_conditions(&[], &[]);
        let mut ns = json!({"metadata": {"name": "n"}, "status": {"phase": "Terminating"}});
        assert!(set_conditions(&mut ns, &held));
        assert_eq!(ns["status"]["phase"], "Terminating");
        assert_eq!(
            ns["status"]["conditions"][3]["message"],
            "Some resources are remaining: pods. has 2 resource instances"
        );
        assert!(!set_conditions(&mut ns, &held), "nothing new");
        for c in ns["status"]["conditions"].as_array_mut().unwrap() {
            c["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        }
        assert!(set_conditions(&mut ns, &free));
        let times: Vec<&str> = ns["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["lastTransitionTime"].as_str().unwrap())
            .collect();
        // The first three kept their status (False); content remaining turned False.
        assert_eq!(times[..3], ["2020-01-01T00:00:00Z"; 3]);
        assert_ne!(times[3], "2020-01-01T00:00:00Z");
        assert_eq!(times[4], "2020-01-01T00:00:00Z");
        assert_eq!(ns["status"]["conditions"][3]["reason"], "ContentRemoved");
    }

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
        let controller = NamespaceController::new(store.clone(), registry, [], Duration::ZERO);
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
        // The namespace says what holds it.
        let conditions = loop {
            let ns = get_json(store.as_ref(), &ns_key).await.unwrap().unwrap().0;
            if let Some(c) = ns.pointer("/status/conditions").cloned() {
                break c;
            }
            assert!(tokio::time::Instant::now() < deadline, "no conditions");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let brief: Vec<(&str, &str, &str)> = conditions
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                assert!(c["lastTransitionTime"].is_string(), "{c}");
                let field = |k: &str| c[k].as_str().unwrap_or_default();
                (field("type"), field("status"), field("message"))
            })
            .collect();
        assert_eq!(
            brief[3..],
            [
                (
                    "NamespaceContentRemaining",
                    "True",
                    "Some resources are remaining: crontabs.g.io has 1 resource instances"
                ),
                (
                    "NamespaceFinalizersRemaining",
                    "True",
                    "Some content in the namespace has finalizers remaining: example.com/f in 1 \
                     resource instances"
                ),
            ]
        );
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
