//! A [`Store`] decorator that times every storage call into `etcd_request_duration_seconds`
//! (`operation`, `type`), as kube-apiserver's etcd3 store records them, whatever the engine.
//! The server wraps its store once at start-up; the engines know nothing of metrics.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use crd_storage::{
    KeyValue, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest, WatchStream,
};

use crate::metrics;

/// Times the calls of an inner store.
pub struct MeteredStore {
    inner: Arc<dyn Store>,
}

impl MeteredStore {
    /// Wraps a store.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        MeteredStore { inner }
    }
}

/// The `type` label of a key: the group-resource its key root names
/// (`/registry/configmaps/ns/x` → `configmaps`, `/registry/stable.example.com/crontabs/ns/x` →
/// `crontabs.stable.example.com`). Kinds stored under a group-less root are named by the root.
pub fn object_type(key: &str) -> Cow<'_, str> {
    let Some(rest) = key.strip_prefix("/registry/") else {
        return Cow::Borrowed("");
    };
    let mut parts = rest.split('/');
    let first = parts.next().unwrap_or("");
    if first.contains('.') {
        match parts.next().filter(|p| !p.is_empty()) {
            // Every storage call of a custom resource builds this: `concat`, not `format!`.
            Some(resource) => Cow::Owned([resource, ".", first].concat()),
            None => Cow::Borrowed(first),
        }
    } else {
        Cow::Borrowed(first)
    }
}

fn record(operation: &str, key: &str, started: Instant) {
    metrics::etcd_request(operation, &object_type(key), started.elapsed());
}

#[async_trait]
impl Store for MeteredStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let t = Instant::now();
        let r = self.inner.get(key).await;
        record("get", key, t);
        r
    }

    async fn get_with(
        &self,
        key: &str,
        freshness: crd_storage::Freshness,
    ) -> Result<Option<KeyValue>, StorageError> {
        let t = Instant::now();
        let r = self.inner.get_with(key, freshness).await;
        record("get", key, t);
        r
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        let t = Instant::now();
        let prefix = request.prefix.clone();
        let r = self.inner.list(request).await;
        record("list", &prefix, t);
        r
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        let t = Instant::now();
        let r = self.inner.count(prefix).await;
        record("count", prefix, t);
        r
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        let t = Instant::now();
        let r = self.inner.create(key, value).await;
        record("create", key, t);
        r
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        let t = Instant::now();
        let r = self.inner.update(key, value, expected).await;
        record("update", key, t);
        r
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let t = Instant::now();
        let r = self.inner.delete(key, expected).await;
        record("delete", key, t);
        r
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        let t = Instant::now();
        let prefix = request.prefix.clone();
        let r = self.inner.watch(request).await;
        record("watch", &prefix, t);
        r
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let t = Instant::now();
        let r = self.inner.current_revision().await;
        metrics::etcd_request("current_revision", "", t.elapsed());
        r
    }

    /// Not a storage request: nothing to time.
    fn local_revision(&self) -> Option<Revision> {
        self.inner.local_revision()
    }

    fn stale(&self, key: &str, revision: Revision) -> bool {
        self.inner.stale(key, revision)
    }

    fn events_carry_written_values(&self) -> bool {
        self.inner.events_carry_written_values()
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let t = Instant::now();
        let r = self.inner.compact(revision).await;
        metrics::etcd_request("compact", "", t.elapsed());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_name_the_group_resource() {
        for (key, want) in [
            ("/registry/configmaps/ns/x", "configmaps"),
            ("/registry/services/specs/ns/x", "services"),
            (
                "/registry/stable.example.com/crontabs/ns/x",
                "crontabs.stable.example.com",
            ),
            (
                "/registry/apiextensions.k8s.io/customresourcedefinitions/",
                "customresourcedefinitions.apiextensions.k8s.io",
            ),
            ("/registry/", ""),
            ("/elsewhere", ""),
        ] {
            assert_eq!(object_type(key), want, "{key}");
        }
    }
}
