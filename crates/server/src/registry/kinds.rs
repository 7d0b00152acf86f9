//! The table of kinds whose strategies are fixed at start-up (CRDs, namespaces,
//! StorageVersionMigrations, and the built-in kinds), keyed by group, version and plural.
//! Custom resources are resolved through [`super::serving::Registry`] instead, because they come
//! and go with their CRDs.

use std::collections::HashMap;
use std::sync::Arc;

use super::Strategy;

/// Strategies by `(group, version, plural)`.
#[derive(Default)]
pub struct Kinds {
    by_resource: HashMap<(String, String, String), Arc<dyn Strategy>>,
}

impl Kinds {
    /// Builds the table from its rows.
    pub fn new(rows: impl IntoIterator<Item = Arc<dyn Strategy>>) -> Self {
        let by_resource = rows
            .into_iter()
            .map(|s| {
                let info = s.info();
                (
                    (
                        info.group.clone(),
                        info.version.clone(),
                        info.resource.clone(),
                    ),
                    s,
                )
            })
            .collect();
        Kinds { by_resource }
    }

    /// Adds a row (a version enabled at start-up, such as `--runtime-config`'s).
    pub fn insert(&mut self, strategy: Arc<dyn Strategy>) {
        let info = strategy.info();
        let key = (
            info.group.clone(),
            info.version.clone(),
            info.resource.clone(),
        );
        self.by_resource.insert(key, strategy);
    }

    /// The strategy serving a resource, if it is in the table.
    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<dyn Strategy>> {
        self.by_resource
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
            .cloned()
    }

    /// Whether a built-in group version is served: upstream routes every path under it
    /// through go-restful, whose misses are JSON `Status` answers rather than the plain 404.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.by_resource
            .keys()
            .any(|(g, v, _)| g == group && v == version)
    }

    /// The storage key roots of the namespaced rows, each once (kinds may share storage), with
    /// the resource a namespace's conditions name for it (`configmaps.`, `deployments.apps`;
    /// of rows sharing a root, the core group's): what a namespace's deletion must purge
    /// besides custom objects.
    pub fn namespaced_key_roots(&self) -> Vec<(String, String)> {
        let mut roots = std::collections::BTreeMap::<String, String>::new();
        for i in self.by_resource.values().map(|s| s.info()) {
            if !i.namespaced() || i.key_root.is_empty() {
                continue;
            }
            let name = format!("{}.{}", i.resource, i.group);
            roots
                .entry(i.key_root.clone())
                .and_modify(|n| {
                    if name < *n {
                        n.clone_from(&name);
                    }
                })
                .or_insert(name);
        }
        roots.into_iter().collect()
    }

    /// Every row of a stored kind (answered resources such as reviews have no storage), in
    /// no particular order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<dyn Strategy>> {
        self.by_resource
            .values()
            .filter(|s| !s.info().key_root.is_empty())
    }
}
