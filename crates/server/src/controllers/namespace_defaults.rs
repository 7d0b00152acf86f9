//! What kube-controller-manager puts in every namespace: the `default` `ServiceAccount` (its
//! `serviceaccount-controller`, `pkg/controller/serviceaccount`) and the `kube-root-ca.crt`
//! `ConfigMap` with the CA clients verify this server with (its `root-ca-cert-publisher`,
//! `pkg/controller/certificates/rootcacertpublisher`). Pods and tokens name the `default`
//! `ServiceAccount`, and in-cluster clients read the CA from that `ConfigMap`, as on a cluster.
//!
//! One informer follows the namespaces; two more follow the `ServiceAccounts` and `ConfigMaps` by key
//! only, so that a deleted `default` or a deleted or edited `kube-root-ca.crt` is put back, as
//! upstream's controllers put them back. A namespace being deleted gets nothing (upstream's
//! creates there are refused by `NamespaceLifecycle`); an object created while its namespace
//! began terminating is deleted again.

use std::sync::Arc;

use crd_storage::{StorageError, Store};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::informer::{Change, Decode, Informer, Notification};
use crate::registry::meta;

/// The `ServiceAccount` every namespace has.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The `ConfigMap` that carries the CA bundle.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// Upstream's `kubernetes.io/description` of the CA `ConfigMap`.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

const NAMESPACES: &str = "/registry/namespaces/";
const SERVICE_ACCOUNTS: &str = "/registry/serviceaccounts/";
const CONFIG_MAPS: &str = "/registry/configmaps/";

/// Keeps the `default` `ServiceAccount` and the `kube-root-ca.crt` `ConfigMap` in every active
/// namespace.
pub struct NamespaceDefaults {
    store: Arc<dyn Store>,
    ca_pem: String,
}

/// The namespace a change under `prefix` concerns, when it is one of the objects this
/// controller keeps (or a namespace).
fn namespace_of<'k>(prefix: &str, key: &'k str) -> Option<&'k str> {
    let rest = key.strip_prefix(prefix)?;
    if prefix == NAMESPACES {
        return Some(rest);
    }
    let (ns, name) = rest.split_once('/')?;
    let kept = match prefix {
        SERVICE_ACCOUNTS => DEFAULT_SERVICE_ACCOUNT,
        _ => ROOT_CA_CONFIG_MAP,
    };
    (name == kept).then_some(ns)
}

/// The CA `ConfigMap`'s data and annotations, as upstream's publisher writes them.
fn root_ca_config_map(namespace: &str, ca_pem: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
            "annotations": {"kubernetes.io/description": DESCRIPTION}},
        "data": {"ca.crt": with_own_ca("", ca_pem)}})
}

impl NamespaceDefaults {
    /// A controller publishing `ca_pem` (the PEM bundle clients trust this server with).
    pub fn new(store: Arc<dyn Store>, ca_pem: String) -> Arc<Self> {
        Arc::new(NamespaceDefaults { store, ca_pem })
    }

    /// Follows namespaces, `ServiceAccounts` and `ConfigMaps`, and reconciles each namespace a change
    /// concerns, until shutdown: a namespace added or changed, its `default` `ServiceAccount`
    /// deleted, its CA `ConfigMap` deleted or not as published. Writes of the objects as they
    /// should be trigger nothing.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        // Each object decodes to whether it is as this controller wants it.
        let ca = self.ca_pem.clone();
        let follow = |prefix: &'static str| {
            let decode: Decode<bool> = match prefix {
                NAMESPACES => Arc::new(|_: &crd_storage::KeyValue| Some(false)),
                SERVICE_ACCOUNTS => Arc::new(|_: &crd_storage::KeyValue| Some(true)),
                _ => {
                    let ca = ca.clone();
                    // Only the CA `ConfigMaps` are decoded; other `ConfigMaps` count as wanted.
                    Arc::new(move |kv: &crd_storage::KeyValue| {
                        if namespace_of(CONFIG_MAPS, &kv.key).is_none() {
                            return Some(true);
                        }
                        serde_json::from_slice::<Value>(&kv.value)
                            .ok()
                            .map(|cm| is_published(&cm, &ca))
                    })
                }
            };
            let informer = Informer::new(self.store.clone(), prefix, decode, shutdown.clone());
            futures::stream::unfold(informer, move |mut i| async move {
                let n = i.next().await?;
                Some(((prefix, n), i))
            })
            .boxed()
        };
        let mut changes = futures::stream::select_all([
            follow(NAMESPACES),
            follow(SERVICE_ACCOUNTS),
            follow(CONFIG_MAPS),
        ]);
        while let Some((prefix, n)) = changes.next().await {
            let Notification::Changed(change) = n else {
                continue;
            };
            let (key, wanted) = match &change {
                Change::Added { key, new } | Change::Modified { key, new, .. } => (key, **new),
                // A deleted namespace needs nothing; a deleted object is put back.
                Change::Deleted { key, .. } => (key, prefix == NAMESPACES),
            };
            if wanted {
                continue;
            }
            let Some(namespace) = namespace_of(prefix, key) else {
                continue;
            };
            let mut backoff = super::INITIAL_RETRY;
            while let Err(e) = self.reconcile(namespace).await {
                tracing::warn!(%namespace, error = %e, "keeping the namespace's default ServiceAccount and CA ConfigMap");
                if !super::retry_after(&mut backoff, &mut shutdown).await {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Creates what an active namespace lacks and puts the CA back when it was edited. The
    /// namespace is read from storage first: nothing is created once its deletion is stored, so
    /// the namespace controller's sweep is not outrun.
    async fn reconcile(&self, namespace: &str) -> Result<(), StorageError> {
        let key = format!("{NAMESPACES}{namespace}");
        let active = super::get_json(self.store.as_ref(), &key)
            .await?
            .is_some_and(|(ns, _)| is_active(&ns));
        if !active {
            return Ok(());
        }
        let sa_key = format!("{SERVICE_ACCOUNTS}{namespace}/{DEFAULT_SERVICE_ACCOUNT}");
        if self.store.get(&sa_key).await?.is_none() {
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}});
            self.create(&sa_key, sa).await?;
        }
        let cm_key = format!("{CONFIG_MAPS}{namespace}/{ROOT_CA_CONFIG_MAP}");
        let want = root_ca_config_map(namespace, &self.ca_pem);
        if self.store.get(&cm_key).await?.is_none() {
            return self.create(&cm_key, want).await;
        }
        // Upstream's publisher rewrites the data and the description when either differs.
        let ca = &self.ca_pem;
        super::guaranteed_update(
            self.store.as_ref(),
            &cm_key,
            |cm| {
                if is_published(cm, ca) {
                    return false;
                }
                let bundle = with_own_ca(
                    cm.pointer("/data/ca.crt")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    ca,
                );
                if let Some(m) = cm.as_object_mut() {
                    m.insert("data".into(), json!({"ca.crt": bundle}));
                }
                if let Some(a) = meta::meta_mut(cm)
                    .entry("annotations")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                {
                    a.insert("kubernetes.io/description".into(), json!(DESCRIPTION));
                }
                true
            },
            |_| false,
        )
        .await
        .map(|_| ())
    }

    /// Stores a new object with its system fields (one that appeared meanwhile is kept).
    async fn create(&self, key: &str, mut obj: Value) -> Result<(), StorageError> {
        let m = meta::meta_mut(&mut obj);
        m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        m.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
        match self.store.create(key, meta::encode(&obj)?).await {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Whether a CA `ConfigMap` carries the description and a bundle with this server's CA.
fn is_published(cm: &Value, ca_pem: &str) -> bool {
    let described = cm
        .pointer("/metadata/annotations/kubernetes.io~1description")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.is_empty());
    let bundle = cm
        .pointer("/data/ca.crt")
        .and_then(Value::as_str)
        .unwrap_or("");
    let data_keys = cm
        .get("data")
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    described && data_keys == 1 && pem_blocks(ca_pem).all(|c| pem_blocks(bundle).any(|b| b == c))
}

/// The bundle to publish: this server's CA, then the certificates of `current` that are not
/// it. Servers sharing one etcd with different CAs each add theirs and stop once every one is
/// in (upstream, one kube-controller-manager publishes one CA); what is not a PEM certificate
/// (an edit) is dropped.
fn with_own_ca(current: &str, ca_pem: &str) -> String {
    let own: Vec<&str> = pem_blocks(ca_pem).collect();
    let mut out: Vec<&str> = own.clone();
    out.extend(pem_blocks(current).filter(|b| !own.contains(b)));
    let mut bundle = out.join("\n");
    bundle.push('\n');
    bundle
}

/// The `CERTIFICATE` PEM blocks of a text, each from its BEGIN line to its END line.
fn pem_blocks(text: &str) -> impl Iterator<Item = &str> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(BEGIN)?;
        let end = rest[start..].find(END)? + start + END.len();
        let block = &rest[start..end];
        rest = &rest[end..];
        Some(block)
    })
}

/// Whether a namespace is neither marked for deletion nor terminating.
fn is_active(ns: &Value) -> bool {
    !meta::is_deleting(ns)
        && ns.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two servers sharing one etcd with different CAs: each adds its own to the bundle and
    /// both stop once it holds both; an edit that is no certificate is dropped.
    #[test]
    fn servers_with_different_cas_converge_on_one_bundle() {
        let cert = |body: &str| {
            format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
        };
        let (a, b) = (cert("AAAA"), cert("BBBB"));
        let cm = |bundle: &str| {
            json!({"metadata": {"annotations": {"kubernetes.io/description": DESCRIPTION}},
                   "data": {"ca.crt": bundle}})
        };
        let mut bundle = with_own_ca("", &a);
        assert_eq!(bundle, a);
        let mut writes = 1;
        for _ in 0..4 {
            for own in [&a, &b] {
                if !is_published(&cm(&bundle), own) {
                    bundle = with_own_ca(&bundle, own);
                    writes += 1;
                }
            }
        }
        assert_eq!(writes, 2);
        assert_eq!(bundle, format!("{b}{a}"));
        assert_eq!(with_own_ca("tampered", &a), a);
        assert!(!is_published(&cm("tampered"), &a));
        assert!(
            !is_published(&json!({"data": {"ca.crt": a}}), &a),
            "no description"
        );
    }

    #[test]
    fn changes_name_the_namespace_they_concern() {
        let cases = [
            (NAMESPACES, "/registry/namespaces/team-a", Some("team-a")),
            (
                SERVICE_ACCOUNTS,
                "/registry/serviceaccounts/team-a/default",
                Some("team-a"),
            ),
            (
                SERVICE_ACCOUNTS,
                "/registry/serviceaccounts/team-a/robot",
                None,
            ),
            (
                CONFIG_MAPS,
                "/registry/configmaps/team-a/kube-root-ca.crt",
                Some("team-a"),
            ),
            (CONFIG_MAPS, "/registry/configmaps/team-a/default", None),
            (
                CONFIG_MAPS,
                "/registry/configmapsx/team-a/kube-root-ca.crt",
                None,
            ),
        ];
        for (prefix, key, want) in cases {
            assert_eq!(namespace_of(prefix, key), want, "{key}");
        }
    }
}
