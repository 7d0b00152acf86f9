//! The field manager: what kube-apiserver does with managed fields around every write
//! (apimachinery's `FieldManager` and its decorators: version check, skip-non-applied,
//! cap-managers, build-manager-info, managed-fields-updater, strip-meta, structured merge), on
//! top of SMD's `Updater` semantics.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::conflict::{Conflict, Conflicts};
use super::fieldset::{FieldSet, PathElement, canonical_json};
use super::managed::{Entry, ManagedFields, ManagerId, Operation, is_reset};
use super::schema::Schema;
use super::typed::{self, Comparison};

/// How many Update entries an object keeps before the oldest are merged (apimachinery's
/// `DefaultMaxUpdateManagers`).
pub const DEFAULT_MAX_UPDATE_MANAGERS: usize = 10;

/// Why an apply failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Other managers own fields the configuration changes: a 409 `Conflict` Status with one
    /// `FieldManagerConflict` cause per field.
    #[error("{0}")]
    Conflicts(Conflicts),
    /// The configuration is not for this kind and version, or carries managed fields: a 400
    /// `BadRequest` Status with this message.
    #[error("{0}")]
    BadRequest(String),
    /// The live object's managed fields or the configuration do not fit the schema: a 500
    /// `InternalError` Status with this message, as kube-apiserver answers.
    #[error("{0}")]
    Internal(String),
}

/// Tracks managed fields for one kind at one version through one endpoint (the main resource
/// or a subresource).
///
/// Versions: every manager's field set is taken to be comparable with the request's version's
/// paths, which holds for CRDs with conversion `None` and for conversions that do not rename
/// fields. Entries keep the apiVersion they were written at.
#[derive(Clone, Copy, Debug)]
pub struct FieldManager<'a> {
    schema: &'a Schema,
    api_version: &'a str,
    kind: &'a str,
    subresource: &'a str,
    reset_fields: Option<&'a FieldSet>,
    max_update_managers: usize,
}

/// The annotation `kubectl apply` (client-side) keeps its configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Keeps kubectl's client-side apply annotation, when the object has one, equal to the
/// configuration applied server-side by kubectl (apimachinery's `lastAppliedUpdater`): the
/// configuration without the annotation, as Go encodes it (sorted keys, HTML-escaped, newline).
fn sync_last_applied(out: &mut Value, config: &Value) {
    let has = out
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if !has {
        return;
    }
    let mut cfg = config.clone();
    if let Some(Value::Object(a)) = cfg
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = go_json(&cfg);
    text.push('\n');
    if let Some(Value::Object(a)) = out
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        a.insert(LAST_APPLIED_ANNOTATION.to_owned(), Value::String(text));
    }
}

/// JSON as Go's `encoding/json` writes a map: keys sorted, `<`, `>`, `&`, U+2028 and U+2029
/// escaped.
fn go_json(v: &Value) -> String {
    let mut out = String::new();
    for c in canonical_json(v).chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The fields never owned by anyone (apimachinery's `stripMetaManager`).
fn strip_set() -> &'static FieldSet {
    static SET: OnceLock<FieldSet> = OnceLock::new();
    SET.get_or_init(|| {
        let f = |s: &str| PathElement::Field(s.to_owned());
        let mut set = FieldSet::new();
        set.insert(&[f("apiVersion")]);
        set.insert(&[f("kind")]);
        set.insert(&[f("metadata")]);
        for m in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            set.insert(&[f("metadata"), f(m)]);
        }
        set
    })
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

/// Sets (or, for `None`, removes) `metadata.managedFields`.
fn set_managed_fields(obj: &mut Value, mf: Option<Value>) {
    let Value::Object(o) = obj else { return };
    match mf {
        Some(mf) => {
            let meta = o
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = meta {
                m.insert("managedFields".to_owned(), mf);
            }
        }
        None => {
            if let Some(Value::Object(m)) = o.get_mut("metadata") {
                m.remove("managedFields");
            }
        }
    }
}

impl<'a> FieldManager<'a> {
    /// Returns a field manager for objects of `kind` at `api_version` (`group/version`) served
    /// through the main resource.
    pub fn new(schema: &'a Schema, api_version: &'a str, kind: &'a str) -> Self {
        FieldManager {
            schema,
            api_version,
            kind,
            subresource: "",
            reset_fields: None,
            max_update_managers: DEFAULT_MAX_UPDATE_MANAGERS,
        }
    }

    /// Serves writes through `subresource` (`status`, `scale`): entries record it, and a
    /// request's own managed fields are ignored.
    #[must_use]
    pub fn with_subresource(mut self, subresource: &'a str) -> Self {
        self.subresource = subresource;
        self
    }

    /// Sets the fields this endpoint resets (a strategy's `GetResetFields`; for custom
    /// resources with a status subresource: `status` for the main resource, `spec` for the
    /// status subresource). Nobody gains ownership of them through this endpoint, and changes to
    /// them take nothing from other managers.
    #[must_use]
    pub fn with_reset_fields(mut self, reset: &'a FieldSet) -> Self {
        self.reset_fields = Some(reset);
        self
    }

    /// Sets the cap on Update entries (default 10).
    #[must_use]
    pub fn with_max_update_managers(mut self, max: usize) -> Self {
        self.max_update_managers = max;
        self
    }

    /// Records a create, update or non-apply patch by `manager` at time `now` (RFC 3339): sets
    /// `new`'s `metadata.managedFields`. `live` is the stored object (`None` for a create).
    ///
    /// The request's own managed fields are used when they decode and are not empty (a client
    /// may rewrite them); `[]` or `[{}]` resets them; otherwise the live object's are used.
    pub fn update(&self, live: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
        let empty = Value::Object(Map::new());
        let live = live.unwrap_or(&empty);
        let request = match new.get_mut("metadata").and_then(Value::as_object_mut) {
            Some(m) => m.remove("managedFields"),
            None => None,
        };
        let is_sub = !self.subresource.is_empty();
        let reset = !is_sub && is_reset(request.as_ref());
        let mut tracked = match ManagedFields::decode_owned(request) {
            Ok(m) if !m.entries.is_empty() && !is_sub => m,
            _ => {
                if reset {
                    ManagedFields::default()
                } else {
                    ManagedFields::decode(managed_fields_of(live)).unwrap_or_default()
                }
            }
        };
        let id = ManagerId::new(
            manager,
            Operation::Update,
            self.api_version,
            self.subresource,
        );
        self.record_update(live, new, &mut tracked, id, now);
        set_managed_fields(new, tracked.encode());
    }

    /// Applies `config` by `manager` at time `now` (RFC 3339) to `live` (`None` when the object
    /// does not exist yet) and returns the object to store, with its managed fields. An apply
    /// that changes nothing returns the live object (with its managed fields as the apply left
    /// them; the applier's time is then unchanged).
    pub fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        let api_version = config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version != self.api_version || kind != self.kind {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(ApplyError::BadRequest(format!(
                "invalid object type: {group}/{version}, Kind={kind}"
            )));
        }
        if managed_fields_of(config).is_some_and(|v| !v.is_null()) {
            return Err(ApplyError::BadRequest(
                "metadata.managedFields must be nil".to_owned(),
            ));
        }
        let empty = Value::Object(Map::new());
        let live = live.unwrap_or(&empty);
        let tracked = ManagedFields::decode(managed_fields_of(live))
            .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?;
        let mut out = match self.apply_once(live, config, manager, force, now, tracked) {
            // kubectl upgrading from client-side apply: conflicts on fields its last-applied
            // annotation set (and that still hold those values) are forced.
            Err(ApplyError::Conflicts(c)) if manager == "kubectl" => {
                match self.allowed_from_last_applied(live) {
                    Some(allowed) => {
                        let rest: Vec<Conflict> =
                            c.0.into_iter()
                                .filter(|c| !allowed.has(&c.path.0))
                                .collect();
                        if rest.is_empty() {
                            let tracked =
                                ManagedFields::decode(managed_fields_of(live)).unwrap_or_default();
                            self.apply_once(live, config, manager, true, now, tracked)?
                        } else {
                            return Err(ApplyError::Conflicts(Conflicts(rest)));
                        }
                    }
                    None => return Err(ApplyError::Conflicts(c)),
                }
            }
            other => other?,
        };
        if manager == "kubectl" {
            sync_last_applied(&mut out, config);
        }
        Ok(out)
    }

    /// One attempt at an apply from the decoded managed fields (below the last-applied
    /// decorators).
    fn apply_once(
        &self,
        live: &Value,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
        mut tracked: ManagedFields,
    ) -> Result<Value, ApplyError> {
        let empty = Value::Object(Map::new());
        if tracked.entries.is_empty() {
            // Fields set before the first apply belong to a synthetic Update manager.
            let id = ManagerId::new(
                "before-first-apply",
                Operation::Update,
                self.api_version,
                self.subresource,
            );
            self.record_update(&empty, live, &mut tracked, id, now);
        }
        let id = ManagerId::new(
            manager,
            Operation::Apply,
            self.api_version,
            self.subresource,
        );
        // apimachinery's `objectGVKNN`: `namespace/name; group/version, Kind=kind`.
        let gvk = || {
            let (group, version) = self
                .api_version
                .rsplit_once('/')
                .unwrap_or(("", self.api_version));
            let meta = |k: &str| {
                config
                    .get("metadata")
                    .and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            format!(
                "{}/{}; {group}/{version}, Kind={}",
                meta("namespace"),
                meta("name"),
                self.kind
            )
        };
        if let Some(e) = super::configuration::undeclared_fields(self.schema, config) {
            return Err(ApplyError::Internal(format!(
                "failed to create typed patch object ({}): {e}",
                gvk()
            )));
        }
        let config_set = typed::to_field_set(self.schema, config).map_err(|e| {
            ApplyError::Internal(format!(
                "failed to create typed patch object ({}): {e}",
                gvk()
            ))
        })?;
        let merged = typed::merge(self.schema, live, config).map_err(|e| {
            ApplyError::Internal(format!(
                "failed to create typed patch object ({}): {e}",
                gvk()
            ))
        })?;
        let changed = apply_sets(
            self.schema,
            live,
            merged,
            config_set,
            &mut tracked,
            &id,
            self.api_version,
            force,
            self.reset_fields,
        )
        .map_err(ApplyError::Conflicts)?;
        let mut out = match changed {
            Some(obj) => {
                if let Some(e) = tracked.entries.get_mut(&id) {
                    e.time = Some(now.to_owned());
                }
                obj
            }
            None => live.clone(),
        };
        set_managed_fields(&mut out, tracked.encode());
        Ok(out)
    }

    /// Records an Update by `id` from `live` to `new` (`managedFieldsUpdater` over `Updater.Update`
    /// with the temporary manager, strip-meta, then the cap).
    pub(super) fn record_update(
        &self,
        live: &Value,
        new: &Value,
        managed: &mut ManagedFields,
        id: ManagerId,
        now: &str,
    ) {
        if managed.entries.is_empty() && live.as_object().is_some_and(Map::is_empty) {
            // A create (or the fields set before a first apply): nothing to reconcile, nobody
            // to take fields from, and the changed fields are `new`'s own.
            let mut set = typed::added(self.schema, new);
            if let Some(reset) = self.reset_fields {
                set = set.recursive_difference(reset);
            }
            let _ = set.difference_in_place(strip_set());
            if !set.is_empty() {
                managed.entries.insert(
                    id,
                    Entry::new(set, self.api_version.to_owned(), Some(now.to_owned())),
                );
            }
            managed.cap_update_managers(self.max_update_managers);
            return;
        }
        reconcile_all(self.schema, managed);
        let Ok(cmp) = update_others(
            self.schema,
            live,
            new,
            managed,
            None,
            true,
            self.reset_fields,
        ) else {
            return;
        };
        let mut set = cmp.modified.union(&cmp.added).difference(&cmp.removed);
        if let Some(reset) = self.reset_fields {
            set = set.recursive_difference(reset);
        }
        let _ = set.difference_in_place(strip_set());
        if !set.is_empty() {
            match managed.entries.get_mut(&id) {
                Some(e) => {
                    let merged = set.union(e.set());
                    e.replace_set(merged);
                    self.api_version.clone_into(&mut e.api_version);
                    e.time = Some(now.to_owned());
                }
                None => {
                    managed.entries.insert(
                        id,
                        Entry::new(set, self.api_version.to_owned(), Some(now.to_owned())),
                    );
                }
            }
        }
        managed.cap_update_managers(self.max_update_managers);
    }

    /// The fields kubectl's client-side apply set and that still hold the values it set
    /// (apimachinery's `lastAppliedManager.allowedConflictsFromLastApplied`), or `None` when
    /// there is no usable annotation.
    fn allowed_from_last_applied(&self, live: &Value) -> Option<FieldSet> {
        let text = live
            .get("metadata")?
            .get("annotations")?
            .get(LAST_APPLIED_ANNOTATION)?
            .as_str()
            .filter(|t| !t.is_empty())?;
        let last: Value = serde_json::from_str(text).ok()?;
        if !last.is_object()
            || last.get("apiVersion").and_then(Value::as_str) != Some(self.api_version)
        {
            return None;
        }
        let set = typed::to_field_set(self.schema, &last).ok()?;
        let cmp = typed::compare(self.schema, &last, live);
        Some(
            set.difference(&cmp.modified)
                .difference(&cmp.added)
                .difference(&cmp.removed),
        )
    }
}

/// Adapts every manager's fields to schema changes since they were recorded (SMD's
/// `reconcileManagedFieldsWithSchemaChanges`).
fn reconcile_all(schema: &Schema, managed: &mut ManagedFields) {
    for e in managed.entries.values_mut() {
        if let Some(set) = typed::reconcile(schema, e.set()) {
            e.replace_set(set);
        }
    }
}

/// SMD's `Updater.update`: compares `live` and `new`; fields changed or added that other
/// managers own are conflicts (an error unless `force`, else taken from them), and removed
/// fields leave every other manager.
pub(super) fn update_others(
    schema: &Schema,
    live: &Value,
    new: &Value,
    managed: &mut ManagedFields,
    workflow: Option<&ManagerId>,
    force: bool,
    ignored: Option<&FieldSet>,
) -> Result<Comparison, Conflicts> {
    let mut cmp = typed::compare(schema, live, new);
    if let Some(ign) = ignored {
        cmp.added = cmp.added.recursive_difference(ign);
        cmp.modified = cmp.modified.recursive_difference(ign);
        cmp.removed = cmp.removed.recursive_difference(ign);
    }
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts: Vec<(ManagerId, FieldSet)> = Vec::new();
    if !changed.is_empty() {
        for (id, e) in &managed.entries {
            if Some(id) == workflow {
                continue;
            }
            let c = e.set().intersection(&changed);
            if !c.is_empty() {
                conflicts.push((id.clone(), c));
            }
        }
    }
    if !force && !conflicts.is_empty() {
        let mut list = Vec::new();
        conflicts.sort_by_key(|(id, _)| super::managed::identifier(id));
        for (id, set) in &conflicts {
            for p in set.paths() {
                list.push(Conflict {
                    manager: id.clone(),
                    path: p,
                });
            }
        }
        return Err(Conflicts(list));
    }
    for (id, c) in conflicts {
        if let Some(e) = managed.entries.get_mut(&id) {
            e.remove_paths(&c);
        }
    }
    if !cmp.removed.is_empty() {
        for (id, e) in &mut managed.entries {
            if Some(id) != workflow {
                e.remove_paths(&cmp.removed);
            }
        }
    }
    managed.entries.retain(|_, e| !e.set().is_empty());
    Ok(cmp)
}

/// SMD's `Updater.Apply` (after the merge) with strip-meta: the applier's set becomes
/// `config_set`, what it gave up is pruned from `merged`, and other managers lose what changed.
/// Returns the new object, or `None` when it equals `live`.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_sets(
    schema: &Schema,
    live: &Value,
    mut merged: Value,
    config_set: FieldSet,
    managed: &mut ManagedFields,
    id: &ManagerId,
    api_version: &str,
    force: bool,
    ignored: Option<&FieldSet>,
) -> Result<Option<Value>, Conflicts> {
    reconcile_all(schema, managed);
    let config_set = match ignored {
        Some(ign) => config_set.recursive_difference(ign),
        None => config_set,
    };
    let last = managed.entries.remove(id);
    let time = last.as_ref().and_then(|l| l.time.clone());
    managed.entries.insert(
        id.clone(),
        Entry::new(config_set, api_version.to_owned(), time),
    );
    // Re-applying a superset of what was applied last time removes nothing.
    if let Some(last) = &last
        && !last.set().is_empty()
        && !managed
            .entries
            .get(id)
            .is_some_and(|e| last.set().is_subset_of(e.set()))
    {
        let owned: Vec<&FieldSet> = managed.entries.values().map(Entry::set).collect();
        typed::prune(schema, &mut merged, last.set(), &owned);
    }
    let cmp = update_others(schema, live, &merged, managed, Some(id), force, ignored)?;
    if let Some(e) = managed.entries.get_mut(id) {
        e.remove_paths(strip_set());
        if let Some(last) = last {
            e.reuse_encoding(last);
        }
        if e.set().is_empty() {
            managed.entries.remove(id);
        }
    }
    // A reordered list changes the object without changing any field.
    let unchanged = cmp.added.is_empty()
        && cmp.modified.is_empty()
        && cmp.removed.is_empty()
        && typed::same_object(live, &merged);
    Ok(if unchanged { None } else { Some(merged) })
}
