//! The `default/kubernetes` Service, its Endpoints and its `EndpointSlice`, which kube-apiserver's
//! bootstrap controller keeps (`pkg/controlplane/controller/kubernetesservice`): in-cluster
//! clients and tools look the API server up there, and envtest has them too. The endpoints
//! name this server's address and port; a restart on another port rewrites them. As upstream's
//! controller, [`run`] keeps them (and the system namespaces) there: deleted ones come back
//! within [`INTERVAL`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crd_storage::{StorageError, Store};
use serde_json::{Value, json};

use crate::registry::Strategy;
use crate::registry::builtin::BuiltinStrategy;
use crate::registry::meta;

/// How often the objects are checked (upstream's `DefaultEndpointReconcilerInterval`).
pub const INTERVAL: Duration = Duration::from_secs(10);

/// Every [`INTERVAL`] until `shutdown`: re-creates missing system namespaces, then the service
/// objects unless `default` is being deleted (they would hold up its deletion).
pub async fn run(
    store: Arc<dyn Store>,
    addr: SocketAddr,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(INTERVAL) => {}
            _ = shutdown.changed() => return,
        }
        if let Err(e) = reconcile(store.as_ref(), addr).await {
            tracing::warn!(error = %e, "reconciling the kubernetes service");
        }
    }
}

async fn reconcile(store: &dyn Store, addr: SocketAddr) -> Result<(), StorageError> {
    super::namespaces_bootstrap(store).await?;
    let namespace = crate::registry::namespaces::NamespaceStrategy::default()
        .info()
        .key(None, "default");
    let terminating = super::get_json(store, &namespace)
        .await?
        .is_none_or(|(ns, _)| ns.pointer("/metadata/deletionTimestamp").is_some());
    if terminating {
        return Ok(());
    }
    bootstrap(store, addr).await
}

/// The cluster IP upstream gives the service: the first address of the default service range.
const CLUSTER_IP: &str = "10.0.0.1";

/// The three objects for a server listening on `addr`, by plural.
fn objects(addr: SocketAddr) -> [(&'static str, Value); 3] {
    let (ip, port) = (addr.ip().to_string(), addr.port());
    let family = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    [
        (
            "services",
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}],
                    "clusterIP": CLUSTER_IP, "clusterIPs": [CLUSTER_IP], "type": "ClusterIP",
                    "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                    "internalTrafficPolicy": "Cluster"},
                "status": {"loadBalancer": {}}}),
        ),
        (
            "endpoints",
            json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [{"addresses": [{"ip": ip}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
        ),
        (
            "endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "namespace": "default", "generation": 1,
                    "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": family,
                "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
        ),
    ]
}

/// Creates the objects that are missing, and points existing ones at `addr` when they name
/// another port or address (their identity and the fields others wrote stay).
pub async fn bootstrap(store: &dyn Store, addr: SocketAddr) -> Result<(), StorageError> {
    for (plural, mut want) in objects(addr) {
        let kind = crd_builtin::lookup(
            if plural == "endpointslices" {
                "discovery.k8s.io"
            } else {
                ""
            },
            plural,
        )
        .unwrap_or_else(|| unreachable!("{plural} is a built-in kind"));
        let key = BuiltinStrategy::new(kind)
            .info()
            .key(Some("default"), "kubernetes");
        let current_fields = ["spec", "subsets", "endpoints", "ports", "addressType"];
        if super::get_json(store, &key).await?.is_some() {
            super::guaranteed_update(
                store,
                &key,
                |obj| {
                    let mut changed = false;
                    for field in current_fields {
                        let Some(v) = want.get(field) else { continue };
                        let differs = match field {
                            // Only the port the service forwards to follows the server.
                            "spec" => {
                                obj.pointer("/spec/ports/0/targetPort")
                                    != v.pointer("/ports/0/targetPort")
                            }
                            _ => obj.get(field) != Some(v),
                        };
                        if differs {
                            if field == "spec" {
                                if let Some(p) = obj.pointer_mut("/spec/ports/0/targetPort") {
                                    *p = json!(addr.port());
                                }
                            } else if let Some(m) = obj.as_object_mut() {
                                m.insert(field.into(), v.clone());
                            }
                            changed = true;
                        }
                    }
                    changed
                },
                |_| false,
            )
            .await?;
            continue;
        }
        if let Some(m) = want.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
        }
        match store.create(&key, meta::encode(&want)?).await {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The objects carry upstream's shape, and every field the built-in schema prunes away is
    /// absent (they are stored as a create through the API would store them).
    #[test]
    fn objects_name_the_servers_address() {
        let addr: SocketAddr = "127.0.0.1:6443".parse().unwrap();
        let [(_, svc), (_, ep), (_, slice)] = objects(addr);
        assert_eq!(svc.pointer("/spec/ports/0/targetPort"), Some(&json!(6443)));
        assert_eq!(svc.pointer("/spec/clusterIP"), Some(&json!(CLUSTER_IP)));
        assert_eq!(
            ep.pointer("/subsets/0/addresses/0/ip"),
            Some(&json!("127.0.0.1"))
        );
        assert_eq!(
            slice.pointer("/endpoints/0/addresses/0"),
            Some(&json!("127.0.0.1"))
        );
        assert_eq!(slice["addressType"], json!("IPv4"));
    }
}
