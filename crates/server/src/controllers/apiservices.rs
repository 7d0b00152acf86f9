//! The `APIService`s kube-apiserver keeps (kube-aggregator's `autoregister`, `crdregistration`
//! and `APIServiceStatusAvailable` controllers): one local `APIService` for every built-in group
//! version served here (label `kube-aggregator.kubernetes.io/automanaged: onstart`) and for every
//! group version a CRD serves (label `true`, removed when no CRD serves it any more), put back
//! when deleted or edited, each `Available` as upstream reports local ones.
//!
//! An `APIService` a user registers with a `spec.service` is kept as written, but no aggregated
//! API server is proxied to: its `Available` condition is `False`, with upstream's
//! `ServiceNotFound` while the Service does not exist and `FailedDiscoveryCheck` once it does.
//!
//! Three informers (CRDs, `APIService`s, Services) feed it; nothing is written before all three
//! have listed, then every name is reconciled once, and afterwards only the names a change
//! concerns.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crd_builtin::apiregistration as reg;
use crd_storage::{KeyValue, StorageError, Store};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::informer::{Cache, Change, Decode, Informer, Notification};
use crate::registry::meta;

const CRDS: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions/";
const API_SERVICES: &str = "/registry/apiregistration.k8s.io/apiservices/";
const SERVICES: &str = "/registry/services/specs/";

/// kube-aggregator's priorities of a CRD's group version (`crdregistration`): lower than every
/// built-in group, versions ordered by name.
const CRD_GROUP_PRIORITY: u32 = 1000;
const CRD_VERSION_PRIORITY: u32 = 100;

/// A built-in group version served here, with kube-aggregator's priorities for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalVersion {
    /// The group ("" for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// `spec.groupPriorityMinimum`.
    pub group_priority: u32,
    /// `spec.versionPriority`.
    pub version_priority: u32,
}

/// What one informer's object is to this controller.
enum Seen {
    /// A CRD: the `APIService` names of the versions it serves.
    Crd(Vec<String>),
    /// An `APIService`.
    ApiService(Value),
    /// A Service exists.
    Service,
}

/// Keeps the `APIService`s; see the module documentation.
pub struct ApiServices {
    store: Arc<dyn Store>,
    /// The built-in group versions, by `APIService` name.
    builtin: HashMap<String, LocalVersion>,
}

impl ApiServices {
    /// A controller for a server serving the `builtin` group versions.
    pub fn new(store: Arc<dyn Store>, builtin: Vec<LocalVersion>) -> Arc<Self> {
        let builtin = builtin
            .into_iter()
            .map(|v| (reg::name_for(&v.group, &v.version), v))
            .collect();
        Arc::new(ApiServices { store, builtin })
    }

    /// Follows CRDs, `APIService`s and Services until shutdown.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let crds: Decode<Seen> = Arc::new(|kv: &KeyValue| Some(Seen::Crd(served(kv))));
        let api_services: Decode<Seen> =
            Arc::new(|kv: &KeyValue| super::informer::decode_json(kv).map(Seen::ApiService));
        let services: Decode<Seen> = Arc::new(|_: &KeyValue| Some(Seen::Service));
        let informer = |prefix: &str, decode| {
            Informer::new(self.store.clone(), prefix, decode, shutdown.clone())
        };
        let (crds, api_services, services) = (
            informer(CRDS, crds),
            informer(API_SERVICES, api_services),
            informer(SERVICES, services),
        );
        let view = View {
            api_services: api_services.cache(),
            services: services.cache(),
        };
        let follow = |prefix: &'static str, informer: Informer<Seen>| {
            futures::stream::unfold(informer, move |mut i| async move {
                let n = i.next().await?;
                Some(((prefix, n), i))
            })
            .boxed()
        };
        let mut changes = futures::stream::select_all([
            follow(CRDS, crds),
            follow(API_SERVICES, api_services),
            follow(SERVICES, services),
        ]);
        let mut synced = 0;
        // How many CRDs serve each group version, kept from the CRD informer's changes.
        let mut served_by: HashMap<String, usize> = HashMap::new();
        while let Some((prefix, n)) = changes.next().await {
            if let (CRDS, Notification::Changed(change)) = (prefix, &n) {
                count_served(&mut served_by, change);
            }
            let view = Snapshot {
                view: &view,
                served_by: &served_by,
            };
            let names = match n {
                Notification::Synced => {
                    synced += 1;
                    if synced < 3 {
                        continue;
                    }
                    self.all_names(&view)
                }
                Notification::Changed(_) if synced < 3 => continue,
                Notification::Changed(change) => concerned(prefix, &change, view.view),
            };
            for name in names {
                let mut backoff = super::INITIAL_RETRY;
                while let Err(e) = self.reconcile(&view, &name).await {
                    tracing::warn!(apiservice = %name, error = %e, "keeping the APIService");
                    if !super::retry_after(&mut backoff, &mut shutdown).await {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Every name there is or should be an `APIService` of.
    fn all_names(&self, view: &Snapshot<'_>) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.builtin.keys().cloned().collect();
        names.extend(view.served_by.keys().cloned());
        names.extend(
            view.view
                .api_services
                .keys()
                .iter()
                .filter_map(|k| k.strip_prefix(API_SERVICES).map(str::to_string)),
        );
        names
    }

    /// The local `APIService` this server should keep under `name`, if any.
    fn desired(&self, view: &Snapshot<'_>, name: &str) -> Option<Value> {
        if let Some(v) = self.builtin.get(name) {
            return Some(reg::local(
                &v.group,
                &v.version,
                v.group_priority,
                v.version_priority,
                reg::ON_START,
            ));
        }
        let served = view.served_by.contains_key(name);
        let (version, group) = name.split_once('.')?;
        served.then(|| {
            reg::local(
                group,
                version,
                CRD_GROUP_PRIORITY,
                CRD_VERSION_PRIORITY,
                reg::SYNCED,
            )
        })
    }

    /// Brings the `APIService` called `name` to what it should be: created, given back its
    /// spec, deleted, or its `Available` condition updated.
    async fn reconcile(&self, snapshot: &Snapshot<'_>, name: &str) -> Result<(), StorageError> {
        let key = format!("{API_SERVICES}{name}");
        let desired = self.desired(snapshot, name);
        let view = snapshot.view;
        let current = match view.api_services.get(&key).as_deref() {
            Some(Seen::ApiService(obj)) => Some(obj.clone()),
            _ => None,
        };
        let Some(current) = current else {
            let Some(mut obj) = desired else {
                return Ok(());
            };
            if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
                m.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
            }
            obj["status"] = json!({"conditions": [available(view, &obj, None)]});
            return match self.store.create(&key, meta::encode(&obj)?).await {
                Ok(_) | Err(StorageError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            };
        };
        let automanaged = current
            .pointer(&format!(
                "/metadata/labels/{}",
                reg::AUTOMANAGED.replace('/', "~1")
            ))
            .is_some();
        if automanaged && desired.is_none() {
            return match self.store.delete(&key, None).await {
                Ok(_) | Err(StorageError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            };
        }
        let spec = desired
            .filter(|_| automanaged)
            .map(|d| d["spec"].clone())
            .filter(|s| current.get("spec") != Some(s));
        let condition = available(view, &current, reg::available_condition(&current));
        let unchanged_condition = reg::available_condition(&current) == Some(&condition);
        if spec.is_none() && unchanged_condition {
            return Ok(());
        }
        super::guaranteed_update(
            self.store.as_ref(),
            &key,
            |obj| {
                if let Some(spec) = &spec {
                    obj["spec"] = spec.clone();
                }
                let condition = available(view, obj, reg::available_condition(obj));
                set_condition(obj, condition);
                true
            },
            |_| false,
        )
        .await?;
        Ok(())
    }
}

/// The informers' caches.
struct View {
    api_services: Cache<Seen>,
    services: Cache<Seen>,
}

/// The caches and the CRDs' served group versions, as one change leaves them.
struct Snapshot<'a> {
    view: &'a View,
    served_by: &'a HashMap<String, usize>,
}

/// Counts a CRD change into how many CRDs serve each group version.
fn count_served(served_by: &mut HashMap<String, usize>, change: &Change<Seen>) {
    let (old, new) = match change {
        Change::Added { new, .. } => (None, Some(new)),
        Change::Modified { old, new, .. } => (Some(old), Some(new)),
        Change::Deleted { old, .. } => (Some(old), None),
    };
    if let Some(Seen::Crd(names)) = old.map(|o| &**o) {
        for n in names {
            if let Some(c) = served_by.get_mut(n) {
                *c -= 1;
                if *c == 0 {
                    served_by.remove(n);
                }
            }
        }
    }
    if let Some(Seen::Crd(names)) = new.map(|n| &**n) {
        for n in names {
            *served_by.entry(n.clone()).or_default() += 1;
        }
    }
}

/// The `APIService` names of the versions a stored CRD serves.
fn served(kv: &KeyValue) -> Vec<String> {
    let Ok(crd) = serde_json::from_slice::<Value>(&kv.value) else {
        return Vec::new();
    };
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|v| reg::name_for(group, v))
        .collect()
}

/// The names a change of one informer concerns.
fn concerned(prefix: &str, change: &Change<Seen>, view: &View) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    match prefix {
        CRDS => {
            let (old, new) = match change {
                Change::Added { new, .. } => (None, Some(new)),
                Change::Modified { old, new, .. } => (Some(old), Some(new)),
                Change::Deleted { old, .. } => (Some(old), None),
            };
            for seen in old.into_iter().chain(new) {
                if let Seen::Crd(served) = &**seen {
                    names.extend(served.iter().cloned());
                }
            }
        }
        API_SERVICES => {
            if let Some(name) = change.key().strip_prefix(API_SERVICES) {
                names.insert(name.to_string());
            }
        }
        _ => {
            // A Service came or went: the APIServices that name it.
            let Some((namespace, name)) = change
                .key()
                .strip_prefix(SERVICES)
                .and_then(|r| r.split_once('/'))
            else {
                return names;
            };
            for (key, seen) in view.api_services.list() {
                if let Seen::ApiService(obj) = &*seen
                    && obj
                        .pointer("/spec/service/namespace")
                        .and_then(Value::as_str)
                        == Some(namespace)
                    && obj.pointer("/spec/service/name").and_then(Value::as_str) == Some(name)
                    && let Some(n) = key.strip_prefix(API_SERVICES)
                {
                    names.insert(n.to_string());
                }
            }
        }
    }
    names
}

/// The `Available` condition `obj` should have, keeping `current`'s transition time when its
/// status does not change.
fn available(view: &View, obj: &Value, current: Option<&Value>) -> Value {
    let service = obj.pointer("/spec/service").filter(|s| !s.is_null());
    let (status, reason, message) = match service {
        None => (true, reg::LOCAL_REASON, reg::LOCAL_MESSAGE.to_string()),
        Some(svc) => {
            let namespace = svc.get("namespace").and_then(Value::as_str).unwrap_or("");
            let name = svc.get("name").and_then(Value::as_str).unwrap_or("");
            if view
                .services
                .get(&format!("{SERVICES}{namespace}/{name}"))
                .is_none()
            {
                (
                    false,
                    "ServiceNotFound",
                    format!("service/{name} in {namespace:?} is not present"),
                )
            } else {
                (
                    false,
                    "FailedDiscoveryCheck",
                    "no response from the service: crd-apiserver does not proxy to aggregated API servers"
                        .to_string(),
                )
            }
        }
    };
    let want = if status { "True" } else { "False" };
    let since = current
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(want))
        .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str))
        .map_or_else(meta::now_rfc3339, str::to_string);
    reg::available(status, reason, &message, &since)
}

/// Replaces (or adds) the `Available` condition of `obj`.
fn set_condition(obj: &mut Value, condition: Value) {
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    let conditions = obj["status"]
        .as_object_mut()
        .expect("an object")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("an array");
    list.retain(|c| c.get("type").and_then(Value::as_str) != Some("Available"));
    list.push(condition);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(names: &[&str]) -> Arc<Seen> {
        Arc::new(Seen::Crd(names.iter().map(|n| (*n).to_string()).collect()))
    }

    #[test]
    fn served_group_versions_are_counted_per_crd() {
        let kv = |v: Value| KeyValue {
            key: format!("{CRDS}w.s.example.com"),
            value: serde_json::to_vec(&v).unwrap().into(),
            create_revision: 1,
            mod_revision: 1,
            decoded: crd_storage::Decoded::default(),
        };
        // Only served versions count; the name is `<version>.<group>`.
        assert_eq!(
            served(&kv(json!({"spec": {"group": "s.example.com", "versions": [
                {"name": "v1", "served": true}, {"name": "v2", "served": false},
                {"name": "v3", "served": true}]}}))),
            ["v1.s.example.com", "v3.s.example.com"]
        );
        assert!(served(&kv(json!("not a CRD"))).is_empty());

        let mut counts = HashMap::new();
        let key = || "k".to_string();
        count_served(
            &mut counts,
            &Change::Added {
                key: key(),
                new: crd(&["v1.a", "v2.a"]),
            },
        );
        count_served(
            &mut counts,
            &Change::Added {
                key: key(),
                new: crd(&["v1.a"]),
            },
        );
        assert_eq!(counts.get("v1.a"), Some(&2));
        count_served(
            &mut counts,
            &Change::Modified {
                key: key(),
                old: crd(&["v1.a", "v2.a"]),
                new: crd(&["v1.a"]),
            },
        );
        assert_eq!(counts.get("v2.a"), None, "no CRD serves v2.a any more");
        count_served(
            &mut counts,
            &Change::Deleted {
                key: key(),
                old: crd(&["v1.a"]),
            },
        );
        assert_eq!(counts.get("v1.a"), Some(&1));
    }

    #[test]
    fn the_available_condition_is_replaced_in_place_of_the_old_one() {
        let mut obj = json!({"status": {"conditions": [
            {"type": "Other", "status": "True"},
            {"type": "Available", "status": "False"}]}});
        set_condition(&mut obj, json!({"type": "Available", "status": "True"}));
        assert_eq!(
            obj["status"]["conditions"],
            json!([{"type": "Other", "status": "True"}, {"type": "Available", "status": "True"}])
        );
        let mut bare = json!({"status": "odd"});
        set_condition(&mut bare, json!({"type": "Available"}));
        assert_eq!(
            bare["status"],
            json!({"conditions": [{"type": "Available"}]})
        );
    }
}
