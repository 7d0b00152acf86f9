//! Which versions a CRD's objects are stored at: a paged count over the CRD's key prefix by the
//! `apiVersion` of the stored bytes. The storedVersions guard on CRD updates
//! ([`super::crds::guard_stored_versions`]), the `/debug/storage-versions` endpoint and the
//! storage-version migration controller all ask this question.
//!
//! Architecture Invariant: a count reads at most [`PAGE`] objects per storage request and holds
//! one page at a time; it never loads every object of a CRD at once.

use std::collections::BTreeMap;

use super::serving::ServingCrd;
use crd_storage::{Pages, StorageError, Store};

/// How many objects one storage request reads.
pub const PAGE: usize = 500;

/// The version part of a stored object's `apiVersion` (`stable.example.com/v1` → `v1`); empty
/// when the bytes are not a JSON object with an `apiVersion`.
pub fn stored_version(bytes: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct TypeMeta {
        #[serde(rename = "apiVersion", default)]
        api_version: String,
    }
    serde_json::from_slice::<TypeMeta>(bytes)
        .map(|t| t.api_version.rsplit('/').next().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// Counts how many objects of `crd` are stored at each version, a page at a time, all pages at
/// the first page's revision (one consistent count). A count whose revision is compacted away
/// while it runs starts over.
pub async fn count_stored_versions(
    store: &dyn Store,
    crd: &ServingCrd,
) -> Result<BTreeMap<String, u64>, StorageError> {
    let prefix = format!("{}/", crd.key_root());
    loop {
        match count_at_one_revision(store, &prefix).await {
            Err(StorageError::Compacted { .. }) => {}
            other => return other,
        }
    }
}

async fn count_at_one_revision(
    store: &dyn Store,
    prefix: &str,
) -> Result<BTreeMap<String, u64>, StorageError> {
    let mut counts = BTreeMap::new();
    let mut pages = Pages::new(store, prefix, None, PAGE);
    while let Some(items) = pages.next_page().await? {
        for kv in &items {
            *counts.entry(stored_version(&kv.value)).or_insert(0) += 1;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_of_stored_bytes() {
        for (bytes, want) in [
            (
                r#"{"apiVersion":"stable.example.com/v1","kind":"CronTab"}"#,
                "v1",
            ),
            (r#"{"apiVersion":"v1beta2"}"#, "v1beta2"),
            (r#"{"kind":"CronTab"}"#, ""),
            ("not json", ""),
            ("[]", ""),
        ] {
            assert_eq!(stored_version(bytes.as_bytes()), want, "{bytes}");
        }
    }
}
