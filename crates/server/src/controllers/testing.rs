//! Test support: a recording [`Store`] decorator over a temporary SQLite store.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use crd_storage::sqlite::SqliteStore;
use crd_storage::{
    KeyValue, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest, WatchStream,
};

/// A store that records list requests and can write once, in the middle of a paged list.
pub struct Recording {
    inner: Arc<SqliteStore>,
    /// Every list request, in order.
    pub lists: Mutex<Vec<ListRequest>>,
    /// Written (created) before answering the second list request.
    pub write_during_list: Mutex<Option<(String, Bytes)>>,
    /// Called with every update's key and value before the update is written.
    pub before_update: Mutex<Option<BeforeUpdate>>,
}

/// A hook run before an update reaches the engine.
pub type BeforeUpdate = Box<dyn Fn(&str, &Bytes) + Send + Sync>;

#[async_trait]
impl Store for Recording {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get(key).await
    }
    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        let n = {
            let mut lists = self.lists.lock().unwrap();
            lists.push(request.clone());
            lists.len()
        };
        let write = self.write_during_list.lock().unwrap().take_if(|_| n == 2);
        if let Some((key, value)) = write {
            self.inner.create(&key, value).await?;
        }
        self.inner.list(request).await
    }
    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        self.inner.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        if let Some(hook) = self.before_update.lock().unwrap().as_ref() {
            hook(key, &value);
        }
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        self.inner.delete(key, expected).await
    }
    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        self.inner.watch(request).await
    }
    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }
    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
}

impl Recording {
    /// A recording store over a new SQLite database in a temporary directory (kept alive by
    /// the returned guard).
    pub fn open() -> (tempfile::TempDir, Arc<Recording>) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let inner = SqliteStore::open(dir.path()).expect("open sqlite");
        let store = Arc::new(Recording {
            inner,
            lists: Mutex::default(),
            write_during_list: Mutex::default(),
            before_update: Mutex::default(),
        });
        (dir, store)
    }

    /// How many list requests were made under `prefix`.
    pub fn lists_under(&self, prefix: &str) -> usize {
        self.lists
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.prefix.starts_with(prefix))
            .count()
    }
}
