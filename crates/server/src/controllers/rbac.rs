//! The RBAC controller: feeds the authorizer's in-memory policy from four informers (Roles,
//! `ClusterRoles`, `RoleBindings`, `ClusterRoleBindings`), marks it synced once every informer
//! has delivered its first list, and aggregates `ClusterRoles` (upstream's
//! `clusterroleaggregation` controller): a `ClusterRole` with `aggregationRule` gets the union of
//! the rules of the `ClusterRoles` its selectors match, written with compare-and-swap.
//! [`bootstrap`] reconciles upstream's default `ClusterRoles` and bindings at start-up (the
//! `rbac/bootstrap-roles` post-start hook).
//!
//! Architecture Invariant: the authorizer's policy changes only here, from informer
//! notifications, so it reflects the store as of the informers' revisions.

use std::sync::Arc;

use anyhow::Context;
use crd_storage::{StorageError, Store};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::informer::{Cache, Change, Informer, Notification};
use crate::authz::rbac::bootstrap::{self, BindingChange};
use crate::authz::rbac::rules::PolicyRule;
use crate::authz::rbac::{RbacAuthorizer, RbacKind, aggregation};
use crate::registry::meta;

fn key(kind: RbacKind, name: &str) -> String {
    format!("{}/{name}", kind.key_root())
}

fn with_system_fields(mut obj: Value) -> Value {
    let m = meta::meta_mut(&mut obj);
    m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    m.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
    obj
}

/// Reconciles the bootstrap `ClusterRoles` and `ClusterRoleBindings` with the store: creates
/// missing ones, adds what stored ones lack (unless annotated `autoupdate: "false"`), recreates
/// bindings whose role reference changed. The objects are reconciled concurrently (one group
/// commit for a fresh data dir).
pub async fn bootstrap(store: &dyn Store) -> Result<(), StorageError> {
    let roles = bootstrap::cluster_roles()
        .into_iter()
        .map(|expected| reconcile_role(store, expected));
    let bindings = bootstrap::cluster_role_bindings()
        .into_iter()
        .map(|expected| reconcile_binding(store, expected));
    futures::future::try_join(
        futures::future::try_join_all(roles),
        futures::future::try_join_all(bindings),
    )
    .await?;
    Ok(())
}

async fn reconcile_role(store: &dyn Store, expected: Value) -> Result<(), StorageError> {
    reconcile(
        store,
        RbacKind::ClusterRole,
        expected,
        |existing, expected| {
            bootstrap::reconcile_role(existing, expected).map(BindingChange::Update)
        },
    )
    .await
}

async fn reconcile_binding(store: &dyn Store, expected: Value) -> Result<(), StorageError> {
    reconcile(
        store,
        RbacKind::ClusterRoleBinding,
        expected,
        bootstrap::reconcile_binding,
    )
    .await
}

/// Makes the stored object of `kind` named as `expected` what `change` says it should become
/// (a role only ever updates), creating it when missing; a lost race is retried.
async fn reconcile(
    store: &dyn Store,
    kind: RbacKind,
    expected: Value,
    change: impl Fn(&Value, &Value) -> Option<BindingChange>,
) -> Result<(), StorageError> {
    let k = key(kind, meta::name(&expected));
    loop {
        match super::get_json(store, &k).await? {
            None => match store
                .create(&k, meta::encode(&with_system_fields(expected.clone()))?)
                .await
            {
                Ok(_) => return Ok(()),
                Err(StorageError::AlreadyExists { .. }) => {}
                Err(e) => return Err(e),
            },
            Some((existing, kv)) => match change(&existing, &expected) {
                None => return Ok(()),
                Some(BindingChange::Update(out)) => {
                    match store.update(&k, meta::encode(&out)?, kv.mod_revision).await {
                        Ok(_) => return Ok(()),
                        Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Some(BindingChange::Recreate(_)) => {
                    // Delete, then the next pass creates the expected binding.
                    match store.delete(&k, Some(kv.mod_revision)).await {
                        Ok(_)
                        | Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            },
        }
    }
}

/// Follows the RBAC objects into an [`RbacAuthorizer`] and aggregates `ClusterRoles`.
#[derive(Clone)]
pub struct RbacController {
    store: Arc<dyn Store>,
    rbac: Arc<RbacAuthorizer>,
    synced: watch::Sender<bool>,
}

impl RbacController {
    /// A controller feeding `rbac` from `store`.
    pub fn new(store: Arc<dyn Store>, rbac: Arc<RbacAuthorizer>) -> Self {
        RbacController {
            store,
            rbac,
            synced: watch::Sender::new(false),
        }
    }

    /// Turns true once the policy is complete (every informer synced).
    pub fn synced(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    /// Runs until shutdown.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let mut informers: Vec<(RbacKind, Informer<Value>)> = RbacKind::ALL
            .iter()
            .map(|k| {
                (
                    *k,
                    Informer::json(
                        self.store.clone(),
                        format!("{}/", k.key_root()),
                        shutdown.clone(),
                    ),
                )
            })
            .collect();
        let cluster_roles = informers[0].1.cache();
        // A restart begins from an empty policy and an unsynced state.
        self.rbac.reset();
        let mut unsynced = informers.len();
        loop {
            let (i, notification) = {
                let [first, second, third, fourth] = &mut informers[..] else {
                    unreachable!("four informers")
                };
                tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => return Ok(()),
                    got = first.1.next() => (0, got),
                    got = second.1.next() => (1, got),
                    got = third.1.next() => (2, got),
                    got = fourth.1.next() => (3, got),
                }
            };
            let Some(notification) = notification else {
                return Ok(());
            };
            let kind = informers[i].0;
            match notification {
                Notification::Synced => {
                    unsynced -= 1;
                    if unsynced == 0 {
                        // Ready at once; aggregated roles follow (as upstream, readiness does
                        // not wait for the aggregation controller).
                        self.rbac.set_synced();
                        self.synced.send_replace(true);
                        self.aggregate_all(&cluster_roles).await?;
                    }
                }
                Notification::Changed(change) => {
                    match &change {
                        Change::Added { new, .. } | Change::Modified { new, .. } => {
                            self.rbac.write(|p| p.upsert(kind, new));
                        }
                        Change::Deleted { old, .. } => {
                            let (ns, name) = (meta::namespace(old), meta::name(old));
                            self.rbac.write(|p| p.remove(kind, ns, name));
                        }
                    }
                    if kind == RbacKind::ClusterRole && unsynced == 0 {
                        self.aggregate_all(&cluster_roles).await?;
                    }
                }
            }
        }
    }

    /// Writes the aggregated rules of every aggregated `ClusterRole` whose rules differ.
    async fn aggregate_all(&self, cache: &Cache<Value>) -> anyhow::Result<()> {
        let all = cache.list();
        let roles: Vec<&Value> = all.iter().map(|(_, v)| v.as_ref()).collect();
        for (k, role) in &all {
            let Some(want) = aggregation::aggregated_rules(role, &roles) else {
                continue;
            };
            if PolicyRule::list_from(role) == want {
                continue;
            }
            let encoded: Vec<Value> = want.iter().map(PolicyRule::to_json).collect();
            super::guaranteed_update(
                self.store.as_ref(),
                k,
                |obj| {
                    if PolicyRule::list_from(obj) == want {
                        return false;
                    }
                    obj["rules"] = json!(encoded);
                    meta::clear_resource_version(obj);
                    true
                },
                |_| false,
            )
            .await
            .with_context(|| format!("aggregating {k}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::User;
    use crate::authz::Attributes;

    #[tokio::test]
    async fn bootstrap_feeds_the_policy_and_aggregates() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = crd_storage::sqlite::SqliteStore::open(dir.path()).unwrap();
        bootstrap(store.as_ref()).await.unwrap();
        // Idempotent.
        bootstrap(store.as_ref()).await.unwrap();
        let crontabs = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "crontabs-edit",
                         "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
            "rules": [{"verbs": ["create"], "apiGroups": ["stable.example.com"], "resources": ["crontabs"]}]});
        store
            .create(
                &key(RbacKind::ClusterRole, "crontabs-edit"),
                meta::encode(&crontabs).unwrap(),
            )
            .await
            .unwrap();
        let binding = json!({"metadata": {"name": "jane-edit", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]});
        store
            .create(
                "/registry/rolebindings/team/jane-edit",
                meta::encode(&binding).unwrap(),
            )
            .await
            .unwrap();
        let rbac = RbacAuthorizer::new();
        let controller = RbacController::new(store.clone(), rbac.clone());
        let mut synced = controller.synced();
        let (stop, shutdown) = watch::channel(false);
        let task = tokio::spawn(controller.run(shutdown));
        synced.wait_for(|s| *s).await.unwrap();
        let jane = User {
            extra: std::collections::BTreeMap::default(),
            name: "jane".into(),
            uid: String::new(),
            groups: vec!["system:authenticated".into()],
        };
        let create = |ns: &str| Attributes::Resource {
            verb: "create".into(),
            group: "stable.example.com".into(),
            version: String::new(),
            resource: "crontabs".into(),
            namespace: Some(ns.into()),
            name: None,
        };
        // The aggregated rules reach `edit` (written, then seen by the informer).
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while !rbac.authorize(&jane, &create("team")).allowed {
            assert!(
                tokio::time::Instant::now() < deadline,
                "edit never aggregated"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(
            rbac.authorize(&jane, &create("team")).reason,
            r#"RBAC: allowed by RoleBinding "jane-edit/team" of ClusterRole "edit" to User "jane""#
        );
        assert!(!rbac.authorize(&jane, &create("other")).allowed);
        let get_pods = Attributes::Resource {
            verb: "list".into(),
            group: String::new(),
            version: String::new(),
            resource: "pods".into(),
            namespace: Some("team".into()),
            name: None,
        };
        // `view` aggregates into `edit` (once `view`'s own aggregation has been written).
        while !rbac.authorize(&jane, &get_pods).allowed {
            assert!(
                tokio::time::Instant::now() < deadline,
                "view never reached edit"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let discovery = Attributes::NonResource {
            verb: "get".into(),
            path: "/apis".into(),
        };
        assert_eq!(
            rbac.authorize(&jane, &discovery).reason,
            r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
        );
        stop.send_replace(true);
        task.await.unwrap().unwrap();
    }
}
