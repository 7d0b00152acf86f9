//! The compiled, immutable serving state of each CustomResourceDefinition, and the registry that
//! holds them. The state of a CRD is rebuilt from its stored object whenever it changes, then
//! swapped in atomically; what derives from a version's schema (compiled CEL rules, the
//! server-side apply schema, whether it has defaults) is computed on first use and carried over
//! to the next revision while the schema stays the same ([`SchemaDerived`]).
//!
//! Every change costs O(1) in the number of CRDs: the registry's map is updated in place, and
//! followers learn what changed from a bounded change log ([`Registry::changes_since`]) and
//! per-group change counters ([`Registry::group_generation`]) instead of rescanning every CRD.
//!
//! Main types: [`ServingCrd`], [`ServedVersion`], [`Registry`].
//!
//! Architecture Invariant: a `ServingCrd` is immutable once built; changes replace it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, OnceLock, RwLock};

use crd_core::version::compare_kube_aware_versions;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;
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

/// What derives from one version's `openAPIV3Schema`, each part computed on first use: a CRD
/// that is never written compiles no CEL rule and no apply schema. Shared by the CRD's later
/// revisions while the schema is unchanged (status updates, other versions' changes).
pub struct SchemaDerived {
    schema: Option<Arc<Value>>,
    rules: OnceLock<Option<Arc<crd_cel::CompiledRules>>>,
    has_defaults: OnceLock<bool>,
    apply: OnceLock<crd_merge::apply::Schema>,
}

impl std::fmt::Debug for SchemaDerived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaDerived")
            .field("rules_compiled", &self.rules.get().is_some())
            .finish_non_exhaustive()
    }
}

impl SchemaDerived {
    fn new(schema: Option<Arc<Value>>) -> Self {
        SchemaDerived {
            schema,
            rules: OnceLock::new(),
            has_defaults: OnceLock::new(),
            apply: OnceLock::new(),
        }
    }

    /// The compiled CEL rules, compiled on first use; `None` without any rule.
    pub fn rules(&self) -> Option<&Arc<crd_cel::CompiledRules>> {
        self.rules
            .get_or_init(|| {
                self.schema
                    .as_deref()
                    .map(crd_cel::CompiledRules::compile)
                    .filter(|r| !r.is_empty())
                    .map(Arc::new)
            })
            .as_ref()
    }

    /// Whether the schema declares any default.
    pub fn has_defaults(&self) -> bool {
        *self.has_defaults.get_or_init(|| {
            self.schema
                .as_deref()
                .is_some_and(crd_schema::checks::has_defaults)
        })
    }

    /// The server-side apply schema, built on first use.
    pub fn apply_schema(&self) -> &crd_merge::apply::Schema {
        self.apply.get_or_init(|| match self.schema.as_deref() {
            Some(s) => crd_merge::apply::Schema::from_json_schema(s),
            None => crd_merge::apply::Schema::deduced(),
        })
    }
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
    /// The version's `openAPIV3Schema`, raw (shared, never copied per strategy).
    pub schema: Option<Arc<Value>>,
    /// Whether `/status` is enabled.
    pub status_subresource: bool,
    /// The `/scale` subresource's paths, when enabled.
    pub scale: Option<ScalePaths>,
    /// Columns for `kubectl get`.
    pub columns: Vec<TableColumn>,
    /// `selectableFields`: JSON paths (`.spec.color`) usable in field selectors as `spec.color`.
    pub selectable_fields: Vec<String>,
    derived: Arc<SchemaDerived>,
}

impl ServedVersion {
    /// Whether the schema declares any default (reads must then decode and default objects).
    pub fn has_defaults(&self) -> bool {
        self.derived.has_defaults()
    }

    /// The schema's compiled CEL rules (`x-kubernetes-validations`), compiled on first use.
    pub fn rules(&self) -> Option<&Arc<crd_cel::CompiledRules>> {
        self.derived.rules()
    }

    /// The server-side apply schema, built on first use.
    pub fn apply_schema(&self) -> &crd_merge::apply::Schema {
        self.derived.apply_schema()
    }
}

/// The compiled state of one CRD.
// These flags are independent facts of the CRD, as in its spec and status.
#[allow(clippy::struct_excessive_bools)]
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
    pub schemas: Arc<std::collections::BTreeMap<String, Arc<Value>>>,
    /// The versions whose schema declares a default (`crd_schema::default::declares_defaults`),
    /// decided once per CRD revision: objects read at another version are not walked for
    /// defaults there are none of.
    pub defaulted: Arc<std::collections::BTreeSet<String>>,
    /// `spec.preserveUnknownFields: true` (CRDs written at v1beta1, where it is the default):
    /// unknown fields are kept, never pruned.
    pub preserve_unknown_fields: bool,
    /// Whether stored objects are pruned by their version's schema when read, as upstream's
    /// schema-coercing decoder prunes every read: only once the CRD's spec has changed
    /// (`metadata.generation` > 1), since objects written under its first spec were pruned by
    /// that same schema when written. Reads of the others may send the stored bytes as they
    /// are.
    pub pruned_on_read: bool,
    /// A fingerprint of `spec` and `status.acceptedNames`: what upstream's CRD handler compares
    /// to decide whether a CRD change tears its storage down (ending every watch of it).
    pub storage_identity: u64,
}

/// Hashes a CRD's `spec` and `status.acceptedNames` ([`ServingCrd::storage_identity`]).
fn storage_identity(raw: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    raw.get("spec").map(Value::to_string).hash(&mut h);
    raw.pointer("/status/acceptedNames")
        .map(Value::to_string)
        .hash(&mut h);
    h.finish()
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
        Self::rebuild(raw, conversion, None)
    }

    /// Builds the serving state from a stored CRD object, reusing what `previous` (the CRD's
    /// current state) derived from every version schema that is unchanged.
    pub fn rebuild(
        raw: &Value,
        conversion: &ConversionOptions,
        previous: Option<&ServingCrd>,
    ) -> Result<Self, String> {
        // The typed view is read without the schemas, which are used raw (and deserializing
        // them into `JSONSchemaProps` would cost more than the rest of the build).
        let crd = CustomResourceDefinition::deserialize(&without_schemas(raw))
            .map_err(|e| e.to_string())?;
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
                let raw_schema = raw_versions
                    .and_then(|a| a.get(i))
                    .and_then(|rv| rv.pointer("/schema/openAPIV3Schema"));
                let reused = previous
                    .and_then(|p| p.versions.iter().find(|pv| pv.name == v.name))
                    .filter(|pv| pv.schema.as_deref() == raw_schema)
                    .map(|pv| pv.derived.clone());
                let derived = reused.unwrap_or_else(|| {
                    Arc::new(SchemaDerived::new(raw_schema.cloned().map(Arc::new)))
                });
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
                    schema: derived.schema.clone(),
                    status_subresource: subresources.is_some_and(|s| s.status.is_some()),
                    scale: subresources
                        .and_then(|s| s.scale.as_ref())
                        .map(|s| ScalePaths {
                            spec_replicas: s.spec_replicas_path.clone(),
                            status_replicas: s.status_replicas_path.clone(),
                            label_selector: s.label_selector_path.clone(),
                        }),
                    columns: columns_of(v.additional_printer_columns.as_deref()),
                    selectable_fields: v
                        .selectable_fields
                        .iter()
                        .flatten()
                        .map(|f| f.json_path.clone())
                        .collect(),
                    derived,
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
            converter: Converter::build(spec.conversion.as_ref(), raw, conversion),
            schemas: Arc::default(),
            defaulted: Arc::default(),
            preserve_unknown_fields: spec.preserve_unknown_fields.unwrap_or(false),
            pruned_on_read: !spec.preserve_unknown_fields.unwrap_or(false)
                && crd.metadata.generation.unwrap_or(1) > 1,
            storage_identity: storage_identity(raw),
        };
        serving.schemas = Arc::new(
            serving
                .versions
                .iter()
                .filter_map(|v| v.schema.clone().map(|s| (v.name.clone(), s)))
                .collect(),
        );
        serving.defaulted = Arc::new(
            serving
                .schemas
                .iter()
                .filter(|(_, s)| crd_schema::default::declares_defaults(s))
                .map(|(v, _)| v.clone())
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

/// A copy of a stored CRD without its versions' schemas (`spec.versions[*].schema`), for the
/// typed view; the schemas are read from the raw object.
fn without_schemas(raw: &Value) -> Value {
    let Value::Object(top) = raw else {
        return raw.clone();
    };
    let mut out = serde_json::Map::with_capacity(top.len());
    for (k, v) in top {
        if k != "spec" {
            out.insert(k.clone(), v.clone());
            continue;
        }
        let Value::Object(spec) = v else {
            out.insert(k.clone(), v.clone());
            continue;
        };
        let mut spec_out = serde_json::Map::with_capacity(spec.len());
        for (sk, sv) in spec {
            match (sk.as_str(), sv) {
                ("versions", Value::Array(vs)) => {
                    let vs = vs
                        .iter()
                        .map(|ver| match ver {
                            Value::Object(m) => Value::Object(
                                m.iter()
                                    .filter(|(f, _)| *f != "schema")
                                    .map(|(f, x)| (f.clone(), x.clone()))
                                    .collect(),
                            ),
                            other => other.clone(),
                        })
                        .collect();
                    spec_out.insert(sk.clone(), Value::Array(vs));
                }
                _ => {
                    spec_out.insert(sk.clone(), sv.clone());
                }
            }
        }
        out.insert(k.clone(), Value::Object(spec_out));
    }
    Value::Object(out)
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
    /// What the state was built from: uid, resourceVersion and a hash of the status, so that
    /// applying the same stored object again (the watch event of a write already applied)
    /// rebuilds nothing.
    stamp: Option<Stamp>,
}

/// See [`Entry::stamp`].
#[derive(Clone, PartialEq, Eq)]
struct Stamp {
    uid: String,
    resource_version: String,
    status: u64,
}

impl Stamp {
    fn of(raw: &Value) -> Option<Stamp> {
        use std::hash::{Hash, Hasher};
        let field = |p: &str| raw.pointer(p).and_then(Value::as_str);
        let resource_version = field("/metadata/resourceVersion").filter(|rv| !rv.is_empty())?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        raw.get("status")
            .map(Value::to_string)
            .unwrap_or_default()
            .hash(&mut hasher);
        field("/metadata/deletionTimestamp").hash(&mut hasher);
        Some(Stamp {
            uid: field("/metadata/uid").unwrap_or_default().to_string(),
            resource_version: resource_version.to_string(),
            status: hasher.finish(),
        })
    }
}

impl Entry {
    fn new(crd: ServingCrd, stamp: Option<Stamp>) -> Self {
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
        Entry {
            crd,
            strategies,
            stamp,
        }
    }
}

/// How many changes [`Registry::changes_since`] remembers; a follower further behind resyncs.
const CHANGE_LOG: usize = 4096;

/// The registry's state behind one lock.
#[derive(Default)]
struct Inner {
    crds: HashMap<String, Arc<Entry>>,
    generation: u64,
    /// The last [`CHANGE_LOG`] changes: (generation, CRD name), oldest first.
    log: VecDeque<(u64, String)>,
    /// The generation of each group's last change.
    groups: HashMap<String, u64>,
    /// The names of the CRDs of each group.
    members: HashMap<String, std::collections::BTreeSet<String>>,
}

/// All CRDs known to this server, by name, with a generation counter that increases on every
/// change, a log of recent changes and a counter per group (discovery, OpenAPI and the garbage
/// collector follow changes through them).
pub struct Registry {
    inner: RwLock<Inner>,
    generation: watch::Sender<u64>,
    conversion: ConversionOptions,
    runtime: std::sync::OnceLock<crate::runtime_config::RuntimeConfig>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new(ConversionOptions::default())
    }
}

/// The group of a CRD named `<plural>.<group>`.
pub fn group_of_name(name: &str) -> &str {
    name.split_once('.').map_or("", |(_, g)| g)
}

impl Registry {
    /// An empty registry whose CRDs convert with these settings.
    pub fn new(conversion: ConversionOptions) -> Self {
        Registry {
            inner: RwLock::default(),
            generation: watch::Sender::new(0),
            conversion,
            runtime: std::sync::OnceLock::new(),
        }
    }

    /// Records `--runtime-config` once at start-up, so that discovery and OpenAPI (which see
    /// the registry) list the optional versions it enables.
    pub fn set_runtime_config(&self, config: crate::runtime_config::RuntimeConfig) {
        let _ = self.runtime.set(config);
    }

    /// The optional APIs `--runtime-config` enabled (none unless set).
    pub fn runtime_config(&self) -> crate::runtime_config::RuntimeConfig {
        self.runtime.get().copied().unwrap_or_default()
    }

    /// The conversion settings CRDs are built with (a proposed CRD is built the same way).
    pub fn conversion_options(&self) -> &ConversionOptions {
        &self.conversion
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Builds and installs the serving state of a stored CRD. The same stored object applied
    /// again changes nothing; what derives from unchanged schemas is reused.
    pub fn apply_stored(&self, raw: &Value) -> Result<(), String> {
        let name = raw
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let stamp = Stamp::of(raw);
        let previous = self.read().crds.get(name).cloned();
        if let (Some(prev), Some(stamp)) = (&previous, &stamp)
            && prev.stamp.as_ref() == Some(stamp)
        {
            return Ok(());
        }
        let crd = ServingCrd::rebuild(
            raw,
            &self.conversion,
            previous.as_ref().map(|p| p.crd.as_ref()),
        )?;
        self.install(Entry::new(crd, stamp));
        Ok(())
    }

    /// Finds a CRD by group and plural (its name is `<plural>.<group>`).
    pub fn lookup(&self, group: &str, plural: &str) -> Option<Arc<ServingCrd>> {
        self.get(&format!("{plural}.{group}"))
    }

    /// Finds a CRD by name.
    pub fn get(&self, name: &str) -> Option<Arc<ServingCrd>> {
        self.read().crds.get(name).map(|e| e.crd.clone())
    }

    /// The strategy serving `<plural>.<group>` at `version`: only for a CRD whose names are
    /// accepted and that is established, at a served version.
    pub fn strategy(
        &self,
        group: &str,
        plural: &str,
        version: &str,
    ) -> Option<Arc<CustomResourceStrategy>> {
        let inner = self.read();
        // Every custom resource request looks its CRD up here: `concat` costs a fraction of
        // `format!`.
        let entry = inner.crds.get(&[plural, ".", group].concat())?;
        if !entry.crd.serving() {
            return None;
        }
        entry.strategies.get(version).cloned()
    }

    /// Every CRD, sorted by name.
    pub fn all(&self) -> Vec<Arc<ServingCrd>> {
        let mut v: Vec<_> = self.read().crds.values().map(|e| e.crd.clone()).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The CRDs of one group, sorted by name (O(size of the group)).
    pub fn in_group(&self, group: &str) -> Vec<Arc<ServingCrd>> {
        let inner = self.read();
        inner
            .members
            .get(group)
            .into_iter()
            .flatten()
            .filter_map(|name| inner.crds.get(name))
            .map(|e| e.crd.clone())
            .collect()
    }

    /// Installs or replaces a CRD's serving state.
    pub fn apply(&self, crd: ServingCrd) {
        self.install(Entry::new(crd, None));
    }

    fn install(&self, entry: Entry) {
        let name = entry.crd.name.clone();
        let entry = Arc::new(entry);
        self.modify(&name, |m| {
            m.insert(name.clone(), entry);
        });
    }

    /// Removes a CRD.
    pub fn remove(&self, name: &str) {
        if self.read().crds.contains_key(name) {
            self.modify(name, |m| {
                m.remove(name);
            });
        }
    }

    fn modify(&self, name: &str, f: impl FnOnce(&mut HashMap<String, Arc<Entry>>)) {
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut inner.crds);
        let group = group_of_name(name);
        if inner.crds.contains_key(name) {
            inner
                .members
                .entry(group.to_string())
                .or_default()
                .insert(name.to_string());
        } else if let Some(members) = inner.members.get_mut(group) {
            members.remove(name);
            if members.is_empty() {
                inner.members.remove(group);
            }
        }
        inner.generation += 1;
        let generation = inner.generation;
        if inner.log.len() == CHANGE_LOG {
            inner.log.pop_front();
        }
        inner.log.push_back((generation, name.to_string()));
        inner.groups.insert(group.to_string(), generation);
        // Sent under the lock, so receivers see generations in order.
        self.generation.send_replace(generation);
    }

    /// The current change counter.
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// The CRDs changed (applied or removed) after `generation`, each once, with the current
    /// generation; `None` when the change log no longer reaches back that far (the caller then
    /// rescans [`Registry::all`]).
    pub fn changes_since(&self, generation: u64) -> Option<(u64, Vec<String>)> {
        let inner = self.read();
        if generation >= inner.generation {
            return Some((inner.generation, Vec::new()));
        }
        let oldest = inner.log.front().map_or(u64::MAX, |(g, _)| *g);
        if oldest > generation + 1 {
            return None;
        }
        let mut seen = HashSet::new();
        let names = inner
            .log
            .iter()
            .filter(|(g, _)| *g > generation)
            .filter(|(_, n)| seen.insert(n.as_str()))
            .map(|(_, n)| n.clone())
            .collect();
        Some((inner.generation, names))
    }

    /// The generation of the last change in `group` (0 when it never changed).
    pub fn group_generation(&self, group: &str) -> u64 {
        self.read().groups.get(group).copied().unwrap_or(0)
    }

    /// A receiver of the change counter, which changes whenever a CRD comes, changes or goes
    /// (the garbage collector follows the set of resources through it).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(name: &str, rv: &str, established: bool, description: &str) -> Value {
        let (plural, group) = name.split_once('.').unwrap();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "kind": "Thing"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "description": description,
                            "x-kubernetes-validations": [{"rule": "true"}]}}}]},
            "status": {"conditions": [{"type": "Established",
                                       "status": if established { "True" } else { "False" }}]}
        })
    }

    #[test]
    fn the_same_stored_object_applied_again_changes_nothing() {
        let registry = Registry::default();
        registry
            .apply_stored(&crd("things.a.io", "5", false, "d"))
            .unwrap();
        assert_eq!(registry.generation(), 1);
        registry
            .apply_stored(&crd("things.a.io", "5", false, "d"))
            .unwrap();
        assert_eq!(registry.generation(), 1);
        // A status written over the same revision (the controller's own write, applied first).
        registry
            .apply_stored(&crd("things.a.io", "5", true, "d"))
            .unwrap();
        assert_eq!(registry.generation(), 2);
        assert!(registry.get("things.a.io").unwrap().established);
    }

    #[test]
    fn schema_derived_state_is_reused_while_the_schema_is_unchanged() {
        let registry = Registry::default();
        registry
            .apply_stored(&crd("things.a.io", "1", false, "d"))
            .unwrap();
        let first = registry.get("things.a.io").unwrap();
        assert!(first.versions[0].rules().is_some());
        registry
            .apply_stored(&crd("things.a.io", "2", true, "d"))
            .unwrap();
        let second = registry.get("things.a.io").unwrap();
        assert!(Arc::ptr_eq(
            &first.versions[0].derived,
            &second.versions[0].derived
        ));
        registry
            .apply_stored(&crd("things.a.io", "3", true, "changed"))
            .unwrap();
        let third = registry.get("things.a.io").unwrap();
        assert!(!Arc::ptr_eq(
            &second.versions[0].derived,
            &third.versions[0].derived
        ));
        assert_eq!(
            third.versions[0].schema.as_deref().unwrap()["description"],
            "changed"
        );
    }

    #[test]
    fn changes_since_names_each_changed_crd_once_until_the_log_runs_out() {
        let registry = Registry::default();
        assert_eq!(registry.changes_since(0), Some((0, Vec::new())));
        registry
            .apply_stored(&crd("things.a.io", "1", true, "d"))
            .unwrap();
        registry
            .apply_stored(&crd("others.b.io", "2", true, "d"))
            .unwrap();
        registry
            .apply_stored(&crd("things.a.io", "3", true, "e"))
            .unwrap();
        assert_eq!(
            registry.changes_since(0),
            Some((
                3,
                vec!["things.a.io".to_string(), "others.b.io".to_string()]
            ))
        );
        assert_eq!(
            registry.changes_since(2),
            Some((3, vec!["things.a.io".to_string()]))
        );
        assert_eq!(registry.changes_since(3), Some((3, Vec::new())));
        assert_eq!(registry.group_generation("a.io"), 3);
        assert_eq!(registry.group_generation("b.io"), 2);
        assert_eq!(registry.in_group("a.io").len(), 1);
        registry.remove("things.a.io");
        assert!(registry.in_group("a.io").is_empty());
        assert_eq!(
            registry.changes_since(3),
            Some((4, vec!["things.a.io".to_string()]))
        );
        for i in 0..CHANGE_LOG {
            registry
                .apply_stored(&crd("things.a.io", &format!("{}", 10 + i), true, "d"))
                .unwrap();
        }
        assert_eq!(registry.changes_since(0), None);
        assert!(registry.changes_since(registry.generation() - 1).is_some());
    }
}
