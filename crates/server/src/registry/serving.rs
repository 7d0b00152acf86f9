//! The compiled, immutable serving state of each CustomResourceDefinition, and the registry that
//! holds them. The state of a CRD is rebuilt whole from its stored object whenever it changes,
//! then swapped in atomically.
//!
//! Main types: [`ServingCrd`], [`ServedVersion`], [`Registry`].
//!
//! Architecture Invariant: a `ServingCrd` is immutable once built; changes replace it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crd_core::version::compare_kube_aware_versions;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use tokio::sync::watch;

use super::Scope;
use super::custom::CustomResourceStrategy;
use crate::conversion::{ConversionOptions, Converter};
use crate::table::{Cell, TableColumn};

/// The paths of the `/scale` subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`.
    pub spec_replicas: String,
    /// `statusReplicasPath`.
    pub status_replicas: String,
    /// `labelSelectorPath`.
    pub label_selector: Option<String>,
}

/// One version of a CRD.
#[derive(Clone, Debug)]
// These flags are independent facts of the CRD version, as in its spec.
#[allow(clippy::struct_excessive_bools)]
pub struct ServedVersion {
    /// The version name.
    pub name: String,
    /// Whether the version is served over HTTP.
    pub served: bool,
    /// Whether this is the storage version.
    pub storage: bool,
    /// The deprecation warning to send, when deprecated.
    pub deprecation_warning: Option<String>,
    /// The version's `openAPIV3Schema`, raw.
    pub schema: Option<Value>,
    /// Whether `/status` is enabled.
    pub status_subresource: bool,
    /// The `/scale` subresource's paths, when enabled.
    pub scale: Option<ScalePaths>,
    /// Columns for `kubectl get`.
    pub columns: Vec<TableColumn>,
    /// Whether the schema declares any default (reads must then decode and default objects).
    pub has_defaults: bool,
    /// The schema's compiled CEL rules (`x-kubernetes-validations`).
    pub rules: Option<Arc<crd_cel::CompiledRules>>,
    /// `selectableFields`: JSON paths (`.spec.color`) usable in field selectors as `spec.color`.
    pub selectable_fields: Vec<String>,
}

/// The compiled state of one CRD.
#[derive(Clone, Debug)]
pub struct ServingCrd {
    /// `metadata.name`: `<plural>.<group>`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `spec.group`.
    pub group: String,
    /// Accepted plural name.
    pub plural: String,
    /// Accepted singular name.
    pub singular: String,
    /// Accepted kind.
    pub kind: String,
    /// Accepted list kind.
    pub list_kind: String,
    /// Accepted short names.
    pub short_names: Vec<String>,
    /// Accepted categories.
    pub categories: Vec<String>,
    /// `spec.names.kind`, used by the storage version hash and deprecation warnings.
    pub spec_kind: String,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Every version, sorted by kube-aware priority (highest first).
    pub versions: Vec<ServedVersion>,
    /// The storage version's name.
    pub storage_version: String,
    /// Established=True.
    pub established: bool,
    /// NamesAccepted=True.
    pub names_accepted: bool,
    /// Being deleted (deletionTimestamp set or Terminating=True).
    pub terminating: bool,
    /// How objects convert between versions.
    pub converter: Converter,
    /// Every version's `openAPIV3Schema`, by version name.
    pub schemas: Arc<std::collections::BTreeMap<String, Value>>,
}

fn condition_true(crd: &CustomResourceDefinition, kind: &str) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == kind && c.status == "True"))
}

impl ServingCrd {
    /// Builds the serving state from a stored CRD object, with default conversion settings.
    pub fn build(raw: &Value) -> Result<Self, String> {
        Self::build_with(raw, &ConversionOptions::default())
    }

    /// Builds the serving state from a stored CRD object.
    pub fn build_with(raw: &Value, conversion: &ConversionOptions) -> Result<Self, String> {
        let crd: CustomResourceDefinition =
            serde_json::from_value(raw.clone()).map_err(|e| e.to_string())?;
        let spec = &crd.spec;
        let accepted = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref());
        let names = accepted
            .filter(|a| !a.plural.is_empty())
            .unwrap_or(&spec.names);
        let singular = names
            .singular
            .clone()
            .unwrap_or_else(|| names.kind.to_lowercase());
        let list_kind = names
            .list_kind
            .clone()
            .unwrap_or_else(|| format!("{}List", names.kind));
        let raw_versions = raw.pointer("/spec/versions").and_then(Value::as_array);
        let mut versions: Vec<ServedVersion> = spec
            .versions
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let raw_v = raw_versions.and_then(|a| a.get(i));
                let subresources = v.subresources.as_ref();
                let deprecation_warning = if v.deprecated.unwrap_or(false) {
                    Some(v.deprecation_warning.clone().unwrap_or_default())
                } else {
                    None
                };
                ServedVersion {
                    name: v.name.clone(),
                    served: v.served,
                    storage: v.storage,
                    deprecation_warning,
                    schema: raw_v
                        .and_then(|rv| rv.pointer("/schema/openAPIV3Schema"))
                        .cloned(),
                    status_subresource: subresources.is_some_and(|s| s.status.is_some()),
                    scale: subresources
                        .and_then(|s| s.scale.as_ref())
                        .map(|s| ScalePaths {
                            spec_replicas: s.spec_replicas_path.clone(),
                            status_replicas: s.status_replicas_path.clone(),
                            label_selector: s.label_selector_path.clone(),
                        }),
                    columns: columns_of(v.additional_printer_columns.as_deref()),
                    rules: raw_v
                        .and_then(|rv| rv.pointer("/schema/openAPIV3Schema"))
                        .map(crd_cel::CompiledRules::compile)
                        .filter(|r| !r.is_empty())
                        .map(Arc::new),
                    has_defaults: raw_v
                        .and_then(|rv| rv.pointer("/schema/openAPIV3Schema"))
                        .is_some_and(crd_schema::checks::has_defaults),
                    selectable_fields: v
                        .selectable_fields
                        .iter()
                        .flatten()
                        .map(|f| f.json_path.clone())
                        .collect(),
                }
            })
            .collect();
        versions.sort_by(|a, b| compare_kube_aware_versions(&b.name, &a.name));
        let storage_version = versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .unwrap_or_default();
        let mut serving = ServingCrd {
            name: crd.metadata.name.clone().unwrap_or_default(),
            uid: crd.metadata.uid.clone().unwrap_or_default(),
            group: spec.group.clone(),
            plural: names.plural.clone(),
            singular,
            kind: names.kind.clone(),
            list_kind,
            short_names: names.short_names.clone().unwrap_or_default(),
            categories: names.categories.clone().unwrap_or_default(),
            spec_kind: spec.names.kind.clone(),
            scope: if spec.scope == "Cluster" {
                Scope::Cluster
            } else {
                Scope::Namespaced
            },
            versions,
            storage_version,
            established: condition_true(&crd, "Established"),
            names_accepted: condition_true(&crd, "NamesAccepted"),
            terminating: crd.metadata.deletion_timestamp.is_some()
                || condition_true(&crd, "Terminating"),
            converter: Converter::build(spec.conversion.as_ref(), conversion),
            schemas: Arc::default(),
        };
        serving.schemas = Arc::new(
            serving
                .versions
                .iter()
                .filter_map(|v| v.schema.clone().map(|s| (v.name.clone(), s)))
                .collect(),
        );
        // Fill default deprecation texts now that all versions are known.
        let defaults: Vec<Option<String>> = serving
            .versions
            .iter()
            .map(|v| match &v.deprecation_warning {
                Some(w) if w.is_empty() => Some(serving.default_deprecation_warning(&v.name)),
                other => other.clone(),
            })
            .collect();
        for (v, w) in serving.versions.iter_mut().zip(defaults) {
            v.deprecation_warning = w;
        }
        Ok(serving)
    }

    /// Kubernetes' default text for a deprecated version without a custom warning.
    fn default_deprecation_warning(&self, version: &str) -> String {
        let mut text = format!("{}/{version} {} is deprecated", self.group, self.spec_kind);
        let best = self.versions.iter().find(|v| {
            v.served
                && v.deprecation_warning.is_none()
                && compare_kube_aware_versions(&v.name, version) == std::cmp::Ordering::Greater
        });
        if let Some(best) = best {
            text = format!(
                "{text}; use {}/{} {}",
                self.group, best.name, self.spec_kind
            );
        }
        text
    }

    /// Whether custom objects are served at all (NamesAccepted or Established).
    pub fn serving(&self) -> bool {
        self.names_accepted || self.established
    }

    /// A served version by name.
    pub fn served_version(&self, name: &str) -> Option<&ServedVersion> {
        self.versions.iter().find(|v| v.name == name && v.served)
    }

    /// The storage key root of the CRD's objects.
    pub fn key_root(&self) -> String {
        format!(
            "/registry/{}/{}",
            self.group,
            self.name.split('.').next().unwrap_or("")
        )
    }
}

fn columns_of(
    cols: Option<&[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition]>,
) -> Vec<TableColumn> {
    match cols {
        None | Some([]) => vec![TableColumn::age()],
        Some(cols) => cols
            .iter()
            .map(|c| TableColumn {
                name: c.name.clone(),
                kind: c.type_.clone(),
                format: c.format.clone().unwrap_or_default(),
                description: c.description.clone().unwrap_or_else(|| {
                    format!(
                        "Custom resource definition column (in JSONPath format): {}",
                        c.json_path
                    )
                }),
                priority: c.priority.unwrap_or(0),
                cell: Cell::Path(c.json_path.clone()),
            })
            .collect(),
    }
}

/// One CRD's serving state and its strategies, one per served version, built once per CRD
/// revision (upstream's `crdInfo.storages[version]`), so requests share them.
struct Entry {
    crd: Arc<ServingCrd>,
    strategies: HashMap<String, Arc<CustomResourceStrategy>>,
}

impl Entry {
    fn new(crd: ServingCrd) -> Self {
        let crd = Arc::new(crd);
        let strategies = crd
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| {
                (
                    v.name.clone(),
                    Arc::new(CustomResourceStrategy::new(crd.clone(), v)),
                )
            })
            .collect();
        Entry { crd, strategies }
    }
}

/// All CRDs known to this server, by name, with a generation counter that increases on every
/// change (discovery and OpenAPI caches key on it).
pub struct Registry {
    crds: RwLock<Arc<HashMap<String, Arc<Entry>>>>,
    generation: watch::Sender<u64>,
    conversion: ConversionOptions,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new(ConversionOptions::default())
    }
}

impl Registry {
    /// An empty registry whose CRDs convert with these settings.
    pub fn new(conversion: ConversionOptions) -> Self {
        Registry {
            crds: RwLock::new(Arc::default()),
            generation: watch::Sender::new(0),
            conversion,
        }
    }

    /// Builds and installs the serving state of a stored CRD.
    pub fn apply_stored(&self, raw: &Value) -> Result<(), String> {
        let crd = ServingCrd::build_with(raw, &self.conversion)?;
        self.apply(crd);
        Ok(())
    }

    /// Finds a CRD by group and plural (its name is `<plural>.<group>`).
    pub fn lookup(&self, group: &str, plural: &str) -> Option<Arc<ServingCrd>> {
        self.get(&format!("{plural}.{group}"))
    }

    /// Finds a CRD by name.
    pub fn get(&self, name: &str) -> Option<Arc<ServingCrd>> {
        self.snapshot().get(name).map(|e| e.crd.clone())
    }

    /// The strategy serving `<plural>.<group>` at `version`: only for a CRD whose names are
    /// accepted and that is established, at a served version.
    pub fn strategy(
        &self,
        group: &str,
        plural: &str,
        version: &str,
    ) -> Option<Arc<CustomResourceStrategy>> {
        let snapshot = self.snapshot();
        let entry = snapshot.get(&format!("{plural}.{group}"))?;
        if !entry.crd.serving() {
            return None;
        }
        entry.strategies.get(version).cloned()
    }

    /// Every CRD, sorted by name.
    pub fn all(&self) -> Vec<Arc<ServingCrd>> {
        let mut v: Vec<_> = self.snapshot().values().map(|e| e.crd.clone()).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    fn snapshot(&self) -> Arc<HashMap<String, Arc<Entry>>> {
        self.crds
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Installs or replaces a CRD's serving state.
    pub fn apply(&self, crd: ServingCrd) {
        let entry = Arc::new(Entry::new(crd));
        self.modify(|m| {
            m.insert(entry.crd.name.clone(), entry);
        });
    }

    /// Removes a CRD.
    pub fn remove(&self, name: &str) {
        self.modify(|m| {
            m.remove(name);
        });
    }

    fn modify(&self, f: impl FnOnce(&mut HashMap<String, Arc<Entry>>)) {
        let mut guard = self
            .crds
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut map = (**guard).clone();
        f(&mut map);
        *guard = Arc::new(map);
        drop(guard);
        self.generation.send_modify(|g| *g += 1);
    }

    /// The current change counter.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// A receiver of the change counter, which changes whenever a CRD comes, changes or goes
    /// (the garbage collector follows the set of resources through it).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}
