//! `HookStore` over the embedded engine: the list hook runs first and its error fails the list,
//! the update hook sees each update before it is written, and every other call is the inner
//! store's.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use crd_storage::hook::HookStore;
use crd_storage::sqlite::SqliteStore;
use crd_storage::{ListRequest, StorageError, Store};

fn list(prefix: &str) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        ..ListRequest::default()
    }
}

#[tokio::test]
async fn hooks_run_before_lists_and_updates_and_the_rest_is_forwarded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = SqliteStore::open(dir.path()).expect("open sqlite");
    let lists = Arc::new(Mutex::new(Vec::new()));
    let updates = Arc::new(Mutex::new(Vec::new()));
    let (seen_lists, seen_updates) = (lists.clone(), updates.clone());
    let store = HookStore::new(inner.clone())
        .before_list(Box::new(move |request| {
            seen_lists.lock().unwrap().push(request.prefix.clone());
            let refused = request.prefix.starts_with("/refused/");
            Box::pin(async move {
                if refused {
                    Err(StorageError::Unavailable("held back".into()))
                } else {
                    Ok(())
                }
            })
        }))
        .before_update(Box::new(move |key, value| {
            seen_updates
                .lock()
                .unwrap()
                .push((key.to_string(), value.clone()));
        }));

    let created = store.create("/a/x", Bytes::from("1")).await.unwrap();
    let rev_after_update = store
        .update("/a/x", Bytes::from("2"), created)
        .await
        .unwrap();
    assert_eq!(
        *updates.lock().unwrap(),
        [("/a/x".to_string(), Bytes::from("2"))]
    );
    assert_eq!(store.current_revision().await.unwrap(), rev_after_update);
    assert_eq!(
        inner.get("/a/x").await.unwrap().expect("written").value,
        Bytes::from("2")
    );

    let listed = store.list(list("/a/")).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.revision, rev_after_update);
    let refused = store.list(list("/refused/")).await;
    assert!(
        matches!(&refused, Err(StorageError::Unavailable(m)) if m == "held back"),
        "{refused:?}"
    );
    assert_eq!(*lists.lock().unwrap(), ["/a/", "/refused/"]);

    assert_eq!(store.count("/a/").await.unwrap(), 1);
    store.delete("/a/x", None).await.unwrap();
    assert!(inner.get("/a/x").await.unwrap().is_none());
}
