//! How many objects of a CRD are stored at each version: what the storedVersions guard, the
//! migration controller and `/debug/storage-versions` report. Paged, so memory stays flat.

use std::collections::BTreeMap;

use crd_storage::{ListRequest, StorageError, Store};
use serde_json::Value;

use super::serving::ServingCrd;

/// How many objects one page reads.
pub const PAGE: usize = 500;

/// How many objects of a CRD are stored at each version (`apiVersion` of the stored bytes).
pub async fn count_stored_versions(
    store: &dyn Store,
    crd: &ServingCrd,
) -> Result<BTreeMap<String, u64>, StorageError> {
    let mut counts = BTreeMap::new();
    let prefix = format!("{}/", crd.key_root());
    let mut start_after = None;
    loop {
        let page = store
            .list(ListRequest {
                prefix: prefix.clone(),
                start_after: start_after.clone(),
                limit: Some(PAGE),
                revision: None,
            })
            .await?;
        for kv in &page.items {
            let version = serde_json::from_slice::<Value>(&kv.value)
                .ok()
                .and_then(|v| {
                    v.get("apiVersion")
                        .and_then(Value::as_str)
                        .map(String::from)
                })
                .map(|av| av.rsplit('/').next().unwrap_or("").to_string())
                .unwrap_or_default();
            *counts.entry(version).or_insert(0) += 1;
        }
        start_after = page.items.last().map(|kv| kv.key.clone());
        if page.remaining == 0 || page.items.is_empty() {
            return Ok(counts);
        }
    }
}
