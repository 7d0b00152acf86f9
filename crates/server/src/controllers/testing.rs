//! Test support: a recording [`Store`] over a temporary SQLite store (a
//! [`crd_storage::hook::HookStore`] whose hooks record into a [`Recording`]).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use crd_storage::hook::HookStore;
use crd_storage::sqlite::SqliteStore;
use crd_storage::{ListRequest, Store};

/// What the recording store saw, and what it does next: it records list requests and can write
/// once, in the middle of a paged list.
#[derive(Default)]
pub struct Recording {
    /// Every list request, in order.
    pub lists: Mutex<Vec<ListRequest>>,
    /// Written (created) before answering the second list request.
    pub write_during_list: Mutex<Option<(String, Bytes)>>,
    /// Called with every update's key and value before the update is written.
    pub before_update: Mutex<Option<BeforeUpdate>>,
}

/// A hook run before an update reaches the engine.
pub type BeforeUpdate = crd_storage::hook::BeforeUpdate;

impl Recording {
    /// A recording store over a new SQLite database in a temporary directory (kept alive by
    /// the returned guard): what it records, and the store itself.
    pub fn open() -> (tempfile::TempDir, Arc<Recording>, Arc<dyn Store>) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let inner: Arc<dyn Store> = SqliteStore::open(dir.path()).expect("open sqlite");
        let recording = Arc::new(Recording::default());
        let (on_list, on_update) = (recording.clone(), recording.clone());
        let engine = inner.clone();
        let store = HookStore::new(inner)
            .before_list(Box::new(move |request| {
                let n = {
                    let mut lists = on_list.lists.lock().unwrap();
                    lists.push(request.clone());
                    lists.len()
                };
                let write = on_list
                    .write_during_list
                    .lock()
                    .unwrap()
                    .take_if(|_| n == 2);
                let engine = engine.clone();
                Box::pin(async move {
                    if let Some((key, value)) = write {
                        engine.create(&key, value).await?;
                    }
                    Ok(())
                })
            }))
            .before_update(Box::new(move |key, value| {
                if let Some(hook) = on_update.before_update.lock().unwrap().as_ref() {
                    hook(key, value);
                }
            }));
        (dir, recording, Arc::new(store))
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
