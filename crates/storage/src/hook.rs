//! [`HookStore`]: a [`Store`] decorator that runs caller-supplied hooks around lists, creates,
//! updates and revision requests and forwards every call to another store. It is how tests hold back, fail or interleave
//! storage calls (a write in the middle of a paged list, a list that waits) without writing out
//! the whole trait each time.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;

use crate::{
    Freshness, KeyValue, ListRequest, ListResponse, Revision, StorageError, Store, WatchRequest,
    WatchStream,
};

/// What a [`HookStore`] runs before each list: `Err` fails the list, and the future may wait.
pub type BeforeList =
    Box<dyn Fn(&ListRequest) -> BoxFuture<'static, Result<(), StorageError>> + Send + Sync>;

/// What a [`HookStore`] runs with each update's key and value before the update is forwarded.
pub type BeforeUpdate = Box<dyn Fn(&str, &Bytes) + Send + Sync>;

/// What a [`HookStore`] runs with each create's key once the inner store has answered it, before
/// answering: the future may wait (a writer that returns late).
pub type AfterCreate = Box<dyn Fn(&str) -> BoxFuture<'static, ()> + Send + Sync>;

/// What a [`HookStore`] runs with each revision the inner store answered, before answering it:
/// the future may wait (a slow round trip whose revision was read when the request was sent).
pub type AfterRevision = Box<dyn Fn(Revision) -> BoxFuture<'static, ()> + Send + Sync>;

/// A store that forwards everything to `inner`, running its hooks first.
pub struct HookStore {
    inner: Arc<dyn Store>,
    before_list: Option<BeforeList>,
    before_update: Option<BeforeUpdate>,
    after_create: Option<AfterCreate>,
    after_revision: Option<AfterRevision>,
}

impl HookStore {
    /// Forwards to `inner`, with no hooks yet.
    #[must_use]
    pub fn new(inner: Arc<dyn Store>) -> Self {
        HookStore {
            inner,
            before_list: None,
            before_update: None,
            after_create: None,
            after_revision: None,
        }
    }

    /// Runs `hook` before each list.
    #[must_use]
    pub fn before_list(mut self, hook: BeforeList) -> Self {
        self.before_list = Some(hook);
        self
    }

    /// Runs `hook` before each update.
    #[must_use]
    pub fn before_update(mut self, hook: BeforeUpdate) -> Self {
        self.before_update = Some(hook);
        self
    }

    /// Runs `hook` after each create, before it is answered.
    #[must_use]
    pub fn after_create(mut self, hook: AfterCreate) -> Self {
        self.after_create = Some(hook);
        self
    }

    /// Runs `hook` with each revision read, before it is answered.
    #[must_use]
    pub fn after_revision(mut self, hook: AfterRevision) -> Self {
        self.after_revision = Some(hook);
        self
    }
}

#[async_trait]
impl Store for HookStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get(key).await
    }

    async fn get_with(
        &self,
        key: &str,
        freshness: Freshness,
    ) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get_with(key, freshness).await
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        if let Some(hook) = &self.before_list {
            hook(&request).await?;
        }
        self.inner.list(request).await
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        let created = self.inner.create(key, value).await;
        if let Some(hook) = &self.after_create {
            hook(key).await;
        }
        created
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        if let Some(hook) = &self.before_update {
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

    // No `local_revision`: the hook on revision requests must see every consistent read.

    fn stale(&self, key: &str, revision: Revision) -> bool {
        self.inner.stale(key, revision)
    }

    fn events_carry_written_values(&self) -> bool {
        self.inner.events_carry_written_values()
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let revision = self.inner.current_revision().await?;
        if let Some(hook) = &self.after_revision {
            hook(revision).await;
        }
        Ok(revision)
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
}
