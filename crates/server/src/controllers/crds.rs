//! The CRD controller: one watch on stored CRDs that
//! 1. rebuilds each CRD's serving state in the [`Registry`] (every server does this);
//! 2. accepts names and sets NamesAccepted and Established (upstream's naming and establishing
//!    controllers; the desired status is the pure function [`desired_status`]);
//! 3. runs the `customresourcecleanup.apiextensions.k8s.io` finalizer when a CRD is deleted:
//!    deletes every object of the CRD, then removes the finalizer so the CRD goes.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

use crd_storage::{Event, ListRequest, StorageError, WatchRequest};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{CLEANUP_POLL, guaranteed_update, purge_prefix};
use crate::registry::conditions;
use crate::registry::crds::{CLEANUP_FINALIZER, CRD_KEY_ROOT};
use crate::registry::meta;
use crate::registry::serving::Registry;
use crate::state::AppState;

/// The CRD controller.
pub struct CrdController {
    state: Arc<AppState>,
    cleanups: Mutex<HashSet<String>>,
}

/// Accepted names of the other CRDs of a group.
#[derive(Default)]
pub struct TakenNames {
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

impl TakenNames {
    /// Collects the accepted names of every CRD of `group` other than `except`.
    pub fn collect<'a>(crds: impl Iterator<Item = &'a Value>, group: &str, except: &str) -> Self {
        let mut t = TakenNames::default();
        for crd in crds {
            if crd.pointer("/spec/group").and_then(Value::as_str) != Some(group)
                || meta::name(crd) == except
            {
                continue;
            }
            let Some(a) = crd.pointer("/status/acceptedNames") else {
                continue;
            };
            for f in ["plural", "singular"] {
                if let Some(s) = a.get(f).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    t.resources.insert(s.to_string());
                }
            }
            for s in a
                .get("shortNames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(s) = s.as_str() {
                    t.resources.insert(s.to_string());
                }
            }
            for f in ["kind", "listKind"] {
                if let Some(s) = a.get(f).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    t.kinds.insert(s.to_string());
                }
            }
        }
        t
    }
}

/// The status a CRD should have: accepted names and the NamesAccepted and Established
/// conditions (upstream `calculateNamesAndConditions` plus the establishing controller).
pub fn desired_status(crd: &Value, taken: &TakenNames) -> Value {
    let mut out = crd.clone();
    let requested = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let old = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut accepted = old.clone();
    let mut reason = "NoConflicts";
    let mut message = String::from("no conflicts found");
    let s = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let mut check = |field: &str, set: &BTreeSet<String>, why: &'static str| {
        let want = s(&requested, field);
        if set.contains(&want) && want != s(&old, field) {
            reason = why;
            message = format!("\"{want}\" is already in use");
        } else if !want.is_empty() {
            accepted[field] = Value::String(want);
        }
    };
    check("plural", &taken.resources, "PluralConflict");
    check("singular", &taken.resources, "SingularConflict");
    let old_short: Vec<String> = old
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let want_short: Vec<String> = requested
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let short_conflicts: Vec<String> = want_short
        .iter()
        .filter(|n| taken.resources.contains(*n) && !old_short.contains(n))
        .map(|n| format!("\"{n}\" is already in use"))
        .collect();
    if short_conflicts.is_empty() {
        if want_short.is_empty() {
            if let Some(m) = accepted.as_object_mut() {
                m.remove("shortNames");
            }
        } else {
            accepted["shortNames"] = json!(want_short);
        }
    } else {
        reason = "ShortNamesConflict";
        message = if short_conflicts.len() == 1 {
            short_conflicts[0].clone()
        } else {
            format!("[{}]", short_conflicts.join(", "))
        };
    }
    let mut check_kind = |field: &str, why: &'static str| {
        let want = s(&requested, field);
        if taken.kinds.contains(&want) && want != s(&old, field) {
            reason = why;
            message = format!("\"{want}\" is already in use");
        } else if !want.is_empty() {
            accepted[field] = Value::String(want);
        }
    };
    check_kind("kind", "KindConflict");
    check_kind("listKind", "ListKindConflict");
    match requested.get("categories") {
        Some(c) if c.as_array().is_some_and(|a| !a.is_empty()) => {
            accepted["categories"] = c.clone();
        }
        _ => {
            if let Some(m) = accepted.as_object_mut() {
                m.remove("categories");
            }
        }
    }
    if !out.get("status").is_some_and(Value::is_object) {
        out["status"] = json!({});
    }
    out["status"]["acceptedNames"] = accepted;
    let names_ok = reason == "NoConflicts";
    conditions::set(
        &mut out,
        "NamesAccepted",
        if names_ok { "True" } else { "False" },
        reason,
        &message,
    );
    if conditions::get(&out, "Established") != Some("True") {
        if names_ok {
            conditions::set(
                &mut out,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            );
        } else {
            conditions::set(
                &mut out,
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
            );
        }
    }
    out
}

impl CrdController {
    /// Creates the controller.
    pub fn new(state: Arc<AppState>) -> Arc<Self> {
        Arc::new(CrdController {
            state,
            cleanups: Mutex::new(HashSet::new()),
        })
    }

    /// Loads every stored CRD into the registry and reconciles it; returns the revision to
    /// watch from. Called before the server reports ready.
    pub async fn sync(self: &Arc<Self>) -> Result<i64, StorageError> {
        let list = self
            .state
            .store
            .list(ListRequest {
                prefix: format!("{CRD_KEY_ROOT}/"),
                ..Default::default()
            })
            .await?;
        for kv in &list.items {
            if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                apply_to_registry(&self.state.registry, &obj);
            }
        }
        for kv in &list.items {
            if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                self.reconcile(obj).await;
            }
        }
        Ok(list.revision)
    }

    /// Follows CRD changes until shutdown, re-listing if the watch is lost.
    pub async fn run(self: Arc<Self>, mut after: i64, mut shutdown: watch::Receiver<bool>) {
        loop {
            let request = WatchRequest {
                prefix: format!("{CRD_KEY_ROOT}/"),
                after,
                progress_interval: None,
            };
            let mut stream = match self.state.store.watch(request).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "CRD watch failed; re-listing");
                    after = self.resync().await;
                    continue;
                }
            };
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    _ = shutdown.changed() => return,
                };
                match item {
                    Some(Ok(Event::Put { kv, .. })) => {
                        if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                            apply_to_registry(&self.state.registry, &obj);
                            self.reconcile(obj).await;
                        }
                    }
                    Some(Ok(Event::Delete { prev, .. })) => {
                        if let Ok(obj) = serde_json::from_slice::<Value>(&prev.value) {
                            self.state.registry.remove(meta::name(&obj));
                            self.requeue_group(&obj).await;
                        }
                    }
                    Some(Ok(Event::Progress { .. })) => {}
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "CRD watch ended; re-listing");
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
            match self.sync().await {
                Ok(rev) => return rev,
                Err(e) => {
                    tracing::warn!(error = %e, "CRD re-list failed");
                    tokio::time::sleep(CLEANUP_POLL).await;
                }
            }
        }
    }

    /// Re-checks the names of the other CRDs of a deleted CRD's group (conflicts may be gone).
    async fn requeue_group(self: &Arc<Self>, deleted: &Value) {
        let group = deleted
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let list = self
            .state
            .store
            .list(ListRequest {
                prefix: format!("{CRD_KEY_ROOT}/"),
                ..Default::default()
            })
            .await;
        let Ok(list) = list else { return };
        for kv in list.items {
            if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value)
                && obj.pointer("/spec/group").and_then(Value::as_str) == Some(group)
            {
                self.reconcile(obj).await;
            }
        }
    }

    async fn reconcile(self: &Arc<Self>, crd: Value) {
        if meta::is_deleting(&crd) {
            if meta::finalizers(&crd)
                .iter()
                .any(|f| f == CLEANUP_FINALIZER)
            {
                self.start_cleanup(meta::name(&crd).to_string());
            }
            return;
        }
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = meta::name(&crd).to_string();
        let others = self
            .state
            .store
            .list(ListRequest {
                prefix: format!("{CRD_KEY_ROOT}/"),
                ..Default::default()
            })
            .await;
        let Ok(others) = others else { return };
        let values: Vec<Value> = others
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
            .collect();
        let taken = TakenNames::collect(values.iter(), &group, &name);
        let desired = desired_status(&crd, &taken);
        if desired.get("status") == crd.get("status") {
            return;
        }
        let key = format!("{CRD_KEY_ROOT}/{name}");
        let uid = meta::uid(&crd).to_string();
        let written = guaranteed_update(
            self.state.store.as_ref(),
            &key,
            |obj| {
                if meta::uid(obj) != uid || meta::is_deleting(obj) {
                    return false;
                }
                let desired = desired_status(obj, &taken);
                if desired.get("status") == obj.get("status") {
                    return false;
                }
                *obj = desired;
                true
            },
            |_| false,
        )
        .await;
        match written {
            // Serve at once, before the watch event of our own write arrives.
            Ok(Some(obj)) => apply_to_registry(&self.state.registry, &obj),
            Ok(None) => {}
            Err(e) => tracing::warn!(crd = %name, error = %e, "updating CRD status failed"),
        }
    }

    fn start_cleanup(self: &Arc<Self>, name: String) {
        {
            let mut running = self
                .cleanups
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !running.insert(name.clone()) {
                return;
            }
        }
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.cleanup(&name).await {
                tracing::warn!(crd = %name, error = %e, "CRD cleanup failed");
            }
            this.cleanups
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&name);
        });
    }

    /// The cleanup finalizer: delete all instances, then release the CRD.
    async fn cleanup(&self, name: &str) -> Result<(), StorageError> {
        let store = self.state.store.as_ref();
        let key = format!("{CRD_KEY_ROOT}/{name}");
        let Some((crd, _)) = super::get_json(store, &key).await? else {
            return Ok(());
        };
        let established = conditions::get(&crd, "Established") == Some("True");
        set_terminating(
            store,
            &key,
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        )
        .await?;
        if established {
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or("");
            let plural = crd
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or("");
            let prefix = format!("/registry/{group}/{plural}/");
            loop {
                let remaining = purge_prefix(store, &prefix).await?;
                if remaining == 0 {
                    break;
                }
                tokio::time::sleep(CLEANUP_POLL).await;
            }
            set_terminating(
                store,
                &key,
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
            )
            .await?;
        } else {
            set_terminating(
                store,
                &key,
                "False",
                "NeverEstablished",
                "resource was never established",
            )
            .await?;
        }
        guaranteed_update(
            store,
            &key,
            |obj| {
                let mut f = meta::finalizers(obj);
                let before = f.len();
                f.retain(|x| x != CLEANUP_FINALIZER);
                meta::set_finalizers(obj, &f);
                f.len() != before
            },
            |obj| meta::finalizers(obj).is_empty(),
        )
        .await?;
        Ok(())
    }
}

async fn set_terminating(
    store: &dyn crd_storage::Store,
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
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str], accepted: Option<Value>) -> Value {
        let mut c = json!({"metadata": {"name": format!("{plural}.g.io")}, "spec": {"group": "g.io",
            "names": {"plural": plural, "singular": name, "kind": kind, "listKind": format!("{kind}List"), "shortNames": short}}});
        if let Some(a) = accepted {
            c["status"] = json!({"acceptedNames": a});
        }
        c
    }

    #[test]
    fn accepts_names_without_conflicts() {
        let c = crd("crontab", "crontabs", "CronTab", &["ct"], None);
        let out = desired_status(&c, &TakenNames::default());
        assert_eq!(out["status"]["acceptedNames"]["plural"], "crontabs");
        assert_eq!(out["status"]["acceptedNames"]["shortNames"], json!(["ct"]));
        assert_eq!(conditions::get(&out, "NamesAccepted"), Some("True"));
        assert_eq!(conditions::get(&out, "Established"), Some("True"));
    }

    #[test]
    fn conflicting_names_are_not_accepted() {
        let other = crd(
            "other",
            "others",
            "Other",
            &["ct"],
            Some(
                json!({"plural": "others", "singular": "other", "kind": "Other", "listKind": "OtherCollection", "shortNames": ["ct"]}),
            ),
        );
        // Only the kind conflicts: upstream reports the last conflicting name, so keep listKind free.
        let c = crd("crontab", "crontabs", "Other", &["ct"], None);
        let taken = TakenNames::collect([other].iter(), "g.io", "crontabs.g.io");
        let out = desired_status(&c, &taken);
        assert_eq!(conditions::get(&out, "NamesAccepted"), Some("False"));
        let cond = out["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "NamesAccepted")
            .unwrap()
            .clone();
        assert_eq!(cond["reason"], "KindConflict");
        assert_eq!(cond["message"], "\"Other\" is already in use");
        assert_eq!(conditions::get(&out, "Established"), Some("False"));
        assert!(out["status"]["acceptedNames"].get("shortNames").is_none());
    }
}
