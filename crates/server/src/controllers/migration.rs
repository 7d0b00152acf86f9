//! Storage-version migration: every object of a CRD is rewritten at the current storage version
//! (convert, then compare-and-swap), page by page, and the migrated versions are then dropped
//! from the CRD's `status.storedVersions`. The controller runs it for StorageVersionMigration
//! objects, which it follows with an [`Informer`], and resumes unfinished ones after a restart
//! (migrating is idempotent: objects already at the storage version are skipped).
//!
//! Architecture Invariant: a migration holds one page of objects at a time and rewrites each with
//! compare-and-swap; it starts only after the CRD controller has loaded every CRD into the
//! registry.

use std::sync::Arc;

use crd_storage::{Pages, StorageError, Store};
use serde_json::Value;
use tokio::sync::watch;

use super::informer::{Change, Informer, Notification, until_shutdown};
use super::{INITIAL_RETRY, get_json, guaranteed_update, retry_after};
use crate::registry::conditions;
use crate::registry::crds::CRD_KEY_ROOT;
use crate::registry::meta;
use crate::registry::migrations::{KEY_ROOT, target};
use crate::registry::pipeline::{ConversionPlan, to_storage};
use crate::registry::serving::{Registry, ServingCrd};
use crate::registry::storage_versions::{PAGE, count_stored_versions};

/// What a migration did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Objects seen.
    pub total: u64,
    /// Objects rewritten at the storage version.
    pub rewritten: u64,
    /// Objects that were already at the storage version (or were rewritten by another writer).
    pub unchanged: u64,
}

/// Rewrites every object of `crd` that is not stored at the storage version. Concurrent writers
/// are never overwritten: each rewrite is a compare-and-swap, retried on a fresh read.
pub async fn migrate(
    store: &dyn Store,
    crd: &ServingCrd,
    mut progress: impl FnMut(&Summary),
) -> Result<Summary, String> {
    let plan = ConversionPlan::new(crd, &crd.storage_version);
    let storage_api_version = plan.storage.clone();
    let prefix = format!("{}/", crd.key_root());
    let mut summary = Summary::default();
    let mut pages = Pages::latest(store, prefix, PAGE);
    while let Some(items) = pages.next_page().await.map_err(|e| e.to_string())? {
        for kv in &items {
            summary.total += 1;
            let mut current = kv.clone();
            loop {
                let obj: Value = serde_json::from_slice(&current.value)
                    .map_err(|e| format!("decoding {}: {e}", current.key))?;
                if obj.get("apiVersion").and_then(Value::as_str) == Some(&storage_api_version) {
                    summary.unchanged += 1;
                    break;
                }
                let converted = to_storage(&plan, obj).await.map_err(|e| {
                    let why = e
                        .to_status()
                        .map_or_else(|| "conversion failed".to_string(), |s| s.message);
                    format!("converting {}: {why}", current.key)
                })?;
                let bytes = meta::encode(&converted).map_err(|e| e.to_string())?;
                match store
                    .update(&current.key, bytes, current.mod_revision)
                    .await
                {
                    Ok(_) => {
                        summary.rewritten += 1;
                        break;
                    }
                    Err(StorageError::Conflict { current: fresh, .. }) => current = fresh,
                    Err(StorageError::NotFound { .. }) => {
                        summary.unchanged += 1;
                        break;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        progress(&summary);
    }
    Ok(summary)
}

/// After a successful migration: `status.storedVersions` becomes the storage version alone,
/// if no object is stored at another version any more.
pub async fn prune_stored_versions(store: &dyn Store, crd: &ServingCrd) -> Result<(), String> {
    let counts = count_stored_versions(store, crd)
        .await
        .map_err(|e| e.to_string())?;
    let left: Vec<String> = counts
        .iter()
        .filter(|(v, n)| **v != crd.storage_version && **n > 0)
        .map(|(v, n)| format!("{n} at {v}"))
        .collect();
    if !left.is_empty() {
        return Err(format!(
            "objects remain at old versions: {}",
            left.join(", ")
        ));
    }
    let key = format!("{CRD_KEY_ROOT}/{}", crd.name);
    let storage = crd.storage_version.clone();
    guaranteed_update(
        store,
        &key,
        |obj| {
            let want = Value::from(vec![storage.clone()]);
            if obj.pointer("/status/storedVersions") == Some(&want) {
                return false;
            }
            if let Some(st) = obj.get_mut("status").and_then(Value::as_object_mut) {
                st.insert("storedVersions".into(), want);
            }
            true
        },
        |_| false,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

fn finished(obj: &Value) -> bool {
    conditions::get(obj, "Succeeded") == Some("True")
        || conditions::get(obj, "Failed") == Some("True")
}

/// Runs one StorageVersionMigration object to completion and records its conditions.
async fn run_one(store: &dyn Store, registry: &Registry, key: &str) -> Result<(), StorageError> {
    let Some((obj, _)) = get_json(store, key).await? else {
        return Ok(());
    };
    if finished(&obj) || meta::is_deleting(&obj) {
        return Ok(());
    }
    let set = |kind: &'static str, reason: &'static str, message: String| {
        move |o: &mut Value| {
            let before = o.clone();
            conditions::set(o, kind, "True", reason, &message);
            if kind != "Running" {
                conditions::set(o, "Running", "False", reason, &message);
            }
            *o != before
        }
    };
    guaranteed_update(
        store,
        key,
        set(
            "Running",
            "MigrationRunning",
            "The migration is running".into(),
        ),
        |_| false,
    )
    .await?;
    let (group, resource) = target(&obj);
    let outcome = match registry.lookup(&group, &resource) {
        None => Err(format!("the resource {resource}.{group} is not served")),
        Some(crd) => match migrate(store, &crd, |_| {}).await {
            Ok(summary) => prune_stored_versions(store, &crd).await.map(|()| summary),
            Err(e) => Err(e),
        },
    };
    let change = match outcome {
        Ok(s) => set(
            "Succeeded",
            "MigrationSucceeded",
            format!(
                "The migration has succeeded: {} objects, {} rewritten at the storage version",
                s.total, s.rewritten
            ),
        ),
        Err(e) => set("Failed", "MigrationFailed", e),
    };
    guaranteed_update(store, key, change, |_| false).await?;
    Ok(())
}

/// Runs pending migrations, and each new one as it is created, until shutdown. Waits first for
/// `crds_synced` (the registry must know every CRD before a migration looks its target up).
pub async fn run(
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    mut crds_synced: watch::Receiver<bool>,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let Some(synced) = until_shutdown(&mut shutdown, crds_synced.wait_for(|s| *s)).await else {
        return Ok(());
    };
    synced.map_err(|_| anyhow::anyhow!("the CRD controller is gone"))?;
    let mut informer = Informer::json(store.clone(), format!("{KEY_ROOT}/"), shutdown.clone());
    while let Some(notification) = informer.next().await {
        let Notification::Changed(Change::Added { key, new } | Change::Modified { key, new, .. }) =
            notification
        else {
            continue;
        };
        if finished(&new) || meta::is_deleting(&new) {
            continue;
        }
        let mut backoff = INITIAL_RETRY;
        loop {
            let Some(outcome) =
                until_shutdown(&mut shutdown, run_one(store.as_ref(), &registry, &key)).await
            else {
                return Ok(());
            };
            let Err(e) = outcome else { break };
            tracing::warn!(key = %key, error = %e, "storage migration failed; retrying");
            if !retry_after(&mut backoff, &mut shutdown).await {
                return Ok(());
            }
        }
    }
    Ok(())
}
