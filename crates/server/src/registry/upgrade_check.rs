//! The upgrade check: what a proposed CRD change would do to the objects already stored. Given
//! the CRD as served and a proposed new CRD, it pages through storage and reports stored objects
//! the new schema refuses (OpenAPI validation and CEL rules, after conversion to each version),
//! fields holding data that the new schema would prune, versions removed or unserved while
//! objects are stored at them or clients read them, conversions that do not round-trip, and
//! storage-version changes that need a migration. The CRD strategy's server-side dry run
//! (warnings) and `POST /debug/upgrade-check` (the structured [`Report`] `crd-apiserver
//! check-upgrade` prints) both ask it.
//!
//! Every object goes through the server's own steps: defaulting with its stored version's
//! schema (the read path), the CRD's [`crate::conversion::Converter`] (any strategy), then
//! [`pipeline`]'s prune, default and schema validation with the new version.
//!
//! Architecture Invariant: a check reads at most [`PAGE`] objects per storage request and holds
//! one page (and the bounded findings) at a time; it never loads every object of a CRD at once.

use std::collections::BTreeMap;

use crd_storage::{Pages, StorageError, Store};
use serde::Serialize;
use serde_json::Value;

use super::pipeline;
use super::serving::{Registry, ServedVersion, ServingCrd};
use super::storage_versions::{PAGE, stored_version};
use super::{Subresource, meta};
use crate::error::ApiError;

/// How many example objects a finding names.
pub const EXAMPLES: usize = 5;

/// The longest a finding's summary gets in a `Warning` header.
pub const MAX_SUMMARY: usize = 300;

/// How many findings a dry run turns into `Warning` headers (one more says how many were left).
pub const MAX_WARNINGS: usize = 10;

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum FindingKind {
    /// The proposed CRD itself fails validation (the update would be refused).
    InvalidDefinition,
    /// Stored objects fail the new schema or its CEL rules at a version.
    Invalid,
    /// Stored objects hold data at a field the new schema would prune.
    DataLoss,
    /// A version leaves `spec.versions` while objects are stored at it.
    VersionRemoved,
    /// A version stops being served while objects are stored at it or clients read it.
    VersionUnserved,
    /// Converting stored objects to a version fails.
    ConversionFailed,
    /// Stored objects do not survive a conversion to a version and back unchanged.
    RoundTrip,
    /// The storage version changes: stored objects stay at the old one until migrated.
    Migration,
}

/// An object a finding names as an example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Example {
    /// `<namespace>/<name>`, or `<name>` for cluster-scoped objects.
    pub name: String,
    /// What was found on this object (the field error, the pruned path, ...).
    pub message: String,
}

/// One finding: a kind, where (version and field or rule), how many objects, and examples.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// What it is about.
    pub kind: FindingKind,
    /// Whether applying the change breaks stored objects or clients (exit status 1).
    pub breaking: bool,
    /// The version concerned (empty when none).
    pub version: String,
    /// The field path (list indexes as `[*]`) or rule the finding counts by.
    pub field: String,
    /// What happens, without any one object's values.
    pub message: String,
    /// How many stored objects (or, for unserved versions, requests) it concerns.
    pub count: u64,
    /// Up to [`EXAMPLES`] objects, with their own message.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
}

impl Finding {
    /// A one-line summary, as a dry-run `Warning` header carries it (at most
    /// [`MAX_SUMMARY`] bytes).
    pub fn summary(&self) -> String {
        let mut s = self.full_summary();
        if s.len() > MAX_SUMMARY {
            let mut end = MAX_SUMMARY - 3;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push_str("...");
        }
        s
    }

    fn full_summary(&self) -> String {
        let at = if self.version.is_empty() {
            String::new()
        } else {
            format!(" at {}", self.version)
        };
        let example = self
            .examples
            .first()
            .map(|e| format!(" (e.g. {})", e.name))
            .unwrap_or_default();
        match self.kind {
            FindingKind::Invalid => format!(
                "{} stored object(s) would be invalid{at}: {}{example}",
                self.count, self.message
            ),
            FindingKind::DataLoss => format!(
                "{} stored object(s) hold data at {} that would be pruned{at}{example}",
                self.count, self.field
            ),
            FindingKind::ConversionFailed => format!(
                "{} stored object(s) fail conversion{at}: {}{example}",
                self.count, self.message
            ),
            FindingKind::RoundTrip => format!(
                "{} stored object(s) do not round-trip through{at}: {}{example}",
                self.count, self.message
            ),
            _ => self.message.clone(),
        }
    }
}

/// What the check found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The CRD's name.
    pub crd: String,
    /// How many stored objects were checked.
    pub objects: u64,
    /// The storage version now.
    pub storage_version: String,
    /// The storage version after the change.
    pub new_storage_version: String,
    /// How many objects are stored at each version.
    pub stored_versions: BTreeMap<String, u64>,
    /// The findings, breaking ones first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether any finding is breaking.
    pub fn breaking(&self) -> bool {
        self.findings.iter().any(|f| f.breaking)
    }

    /// The dry run's warnings: one per finding, at most [`MAX_WARNINGS`] and a last one saying
    /// how many more `crd-apiserver check-upgrade` would list.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .findings
            .iter()
            .take(MAX_WARNINGS)
            .map(|f| format!("upgrade check: {}", f.summary()))
            .collect();
        if self.findings.len() > MAX_WARNINGS {
            out.push(format!(
                "upgrade check: {} more finding(s); run `crd-apiserver check-upgrade` for the full report",
                self.findings.len() - MAX_WARNINGS
            ));
        }
        out
    }
}

/// The findings of one pass, accumulated a page at a time.
pub struct Checker {
    old: ServingCrd,
    new: ServingCrd,
    /// The versions objects are checked at: the new served versions and its storage version.
    targets: Vec<String>,
    objects: u64,
    stored: BTreeMap<String, u64>,
    findings: BTreeMap<(FindingKind, String, String), Finding>,
}

/// `[3]` → `[*]`: findings count by field, not by list element.
fn generic_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[*");
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

fn object_name(obj: &Value) -> String {
    let ns = meta::namespace(obj);
    let name = meta::name(obj);
    if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    }
}

/// The first path at which two objects differ (`""` for the root).
fn first_difference(given: &Value, back: &Value, path: &str) -> Option<String> {
    match (given, back) {
        (Value::Object(left), Value::Object(right)) => {
            for (k, v) in left {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match right.get(k) {
                    Some(other) => {
                        if let Some(d) = first_difference(v, other, &child) {
                            return Some(d);
                        }
                    }
                    None => return Some(child),
                }
            }
            right.keys().find(|k| !left.contains_key(*k)).map(|k| {
                if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                }
            })
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => left
            .iter()
            .zip(right)
            .enumerate()
            .find_map(|(i, (v, other))| first_difference(v, other, &format!("{path}[{i}]"))),
        _ if given == back => None,
        _ => Some(path.to_string()),
    }
}

impl Checker {
    /// A check of replacing `old` (as served) by `new`.
    pub fn new(old: ServingCrd, new: ServingCrd) -> Self {
        let mut targets: Vec<String> = new
            .versions
            .iter()
            .filter(|v| v.served || v.storage)
            .map(|v| v.name.clone())
            .collect();
        targets.dedup();
        Checker {
            old,
            new,
            targets,
            objects: 0,
            stored: BTreeMap::new(),
            findings: BTreeMap::new(),
        }
    }

    fn record(
        &mut self,
        kind: FindingKind,
        version: &str,
        field: &str,
        message: &str,
        example: Example,
    ) {
        self.record_by(kind, version, field, field, message, example);
    }

    /// [`Checker::record`] counting by `group` (a rule's text), not by the field alone: two
    /// rules on one field are two findings.
    fn record_by(
        &mut self,
        kind: FindingKind,
        version: &str,
        group: &str,
        field: &str,
        message: &str,
        example: Example,
    ) {
        let f = self
            .findings
            .entry((kind, version.to_string(), group.to_string()))
            .or_insert_with(|| Finding {
                kind,
                breaking: true,
                version: version.to_string(),
                field: field.to_string(),
                message: message.to_string(),
                count: 0,
                examples: Vec::new(),
            });
        f.count += 1;
        if f.examples.len() < EXAMPLES {
            f.examples.push(example);
        }
    }

    /// Checks one page of stored objects (decoded, at whatever version they are stored).
    pub async fn check_page(&mut self, mut objects: Vec<Value>) {
        for obj in &mut objects {
            self.objects += 1;
            let version = obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .map(|av| av.rsplit('/').next().unwrap_or("").to_string())
                .unwrap_or_default();
            // As the current server reads it: defaults of the version it is stored at.
            if let Some(schema) = self.old.schemas.get(&version) {
                crd_schema::default::apply_defaults(obj, schema);
            }
            *self.stored.entry(version).or_insert(0) += 1;
        }
        let originals: Vec<String> = objects
            .iter()
            .map(|o| {
                o.get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        for target in self.targets.clone() {
            let api_version = format!("{}/{target}", self.new.group);
            let converted = match self
                .new
                .converter
                .convert(objects.clone(), &api_version, true)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    for obj in &objects {
                        let ex = Example {
                            name: object_name(obj),
                            message: e.0.clone(),
                        };
                        self.record(FindingKind::ConversionFailed, &target, "", &e.0, ex);
                    }
                    continue;
                }
            };
            self.round_trip(&target, &objects, &originals, &converted)
                .await;
            let Some(version) = self.new.versions.iter().find(|v| v.name == target).cloned() else {
                continue;
            };
            // With the version's schema unchanged, what it prunes it pruned before: no new loss.
            let schema_changed =
                version.schema.as_deref() != self.old.schemas.get(&target).map(AsRef::as_ref);
            for obj in converted {
                self.check_at(&version, schema_changed, obj);
            }
        }
    }

    /// Converts what was converted to `target` back to each object's stored version and
    /// compares.
    async fn round_trip(
        &mut self,
        target: &str,
        objects: &[Value],
        originals: &[String],
        converted: &[Value],
    ) {
        let mut by_version: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, av) in originals.iter().enumerate() {
            if !av.ends_with(&format!("/{target}")) {
                by_version.entry(av.as_str()).or_default().push(i);
            }
        }
        for (av, idx) in by_version {
            let batch: Vec<Value> = idx.iter().map(|&i| converted[i].clone()).collect();
            let Ok(back) = self.new.converter.convert(batch, av, true).await else {
                for &i in &idx {
                    let ex = Example {
                        name: object_name(&objects[i]),
                        message: format!("converting back to {av} fails"),
                    };
                    let msg = format!("converting back to {av} fails");
                    self.record(FindingKind::RoundTrip, target, "", &msg, ex);
                }
                continue;
            };
            for (&i, back) in idx.iter().zip(&back) {
                if let Some(path) = first_difference(&objects[i], back, "") {
                    let field = generic_path(&path);
                    let msg = format!("{field} differs after converting back to {av}");
                    let ex = Example {
                        name: object_name(&objects[i]),
                        message: format!("{path} differs"),
                    };
                    self.record(FindingKind::RoundTrip, target, &field, &msg, ex);
                }
            }
        }
    }

    /// Prunes, defaults and validates one object converted to `target`, as a write at that
    /// version would.
    fn check_at(&mut self, version: &ServedVersion, schema_changed: bool, mut obj: Value) {
        let target = version.name.as_str();
        let name = object_name(&obj);
        if let Some(schema) = &version.schema {
            let before = schema_changed.then(|| obj.clone());
            let pruned = crd_schema::prune::prune(&mut obj, schema, true);
            if let (false, Some(before)) = (pruned.is_empty(), before) {
                // What the current schema of this version prunes anyway is no new loss.
                let already: Vec<String> = match self.old.schemas.get(target) {
                    Some(old_schema) => {
                        crd_schema::prune::prune(&mut before.clone(), old_schema, true)
                    }
                    None => Vec::new(),
                };
                let mut seen = Vec::new();
                for path in pruned.iter().filter(|p| !already.contains(p)) {
                    let field = generic_path(path);
                    if seen.contains(&field) {
                        continue;
                    }
                    seen.push(field.clone());
                    let msg = format!("{field} holds data the new schema does not specify");
                    let ex = Example {
                        name: name.clone(),
                        message: format!("{path} would be pruned"),
                    };
                    self.record(FindingKind::DataLoss, target, &field, &msg, ex);
                }
            }
            crd_schema::prune::prune_nulls(&mut obj, schema);
        }
        pipeline::default(version, &mut obj);
        let errors = pipeline::validate_schema(version, &obj, None, Subresource::Main);
        let mut seen = Vec::new();
        for e in &errors {
            if e.field.to_string().is_empty() && e.detail.starts_with("some validation rules") {
                continue;
            }
            let mut generic = e.clone();
            generic.value = None;
            let rule = generic_path(&generic.to_string());
            if seen.contains(&rule) {
                continue;
            }
            seen.push(rule.clone());
            let ex = Example {
                name: name.clone(),
                message: e.to_string(),
            };
            let field = generic_path(&generic.field.to_string());
            self.record_by(FindingKind::Invalid, target, &rule, &field, &rule, ex);
        }
    }

    /// The report, with the version findings added; `reads` answers how many read requests
    /// clients made at a version (from the request metrics).
    pub fn finish(mut self, reads: &(dyn Fn(&str) -> u64 + Sync)) -> Report {
        let crd = self.new.name.clone();
        let olds = self.old.versions.clone();
        for old in &olds {
            let stored = self.stored.get(&old.name).copied().unwrap_or(0);
            let new = self.new.versions.iter().find(|v| v.name == old.name);
            let read = if old.served { reads(&old.name) } else { 0 };
            let v = &old.name;
            let finding = match new {
                None if stored > 0 => Some((
                    FindingKind::VersionRemoved,
                    stored,
                    true,
                    format!(
                        "version {v} is removed but {stored} object(s) are stored at it; run `crd-apiserver migrate {crd}` and drop {v} from status.storedVersions first"
                    ),
                )),
                None if read > 0 => Some((
                    FindingKind::VersionRemoved,
                    read,
                    true,
                    format!(
                        "version {v} is removed but clients read it ({read} request(s) since the server started)"
                    ),
                )),
                Some(n) if old.served && !n.served && read > 0 => Some((
                    FindingKind::VersionUnserved,
                    read,
                    true,
                    format!(
                        "version {v} is no longer served but clients read it ({read} request(s) since the server started)"
                    ),
                )),
                Some(n) if old.served && !n.served && stored > 0 => Some((
                    FindingKind::VersionUnserved,
                    stored,
                    false,
                    format!(
                        "version {v} is no longer served but {stored} object(s) are stored at it; run `crd-apiserver migrate {crd}` to move them to {s}",
                        s = self.new.storage_version
                    ),
                )),
                _ => None,
            };
            if let Some((kind, count, breaking, message)) = finding {
                self.push_version(kind, v, count, breaking, message);
            }
        }
        let elsewhere: u64 = self
            .stored
            .iter()
            .filter(|(v, _)| **v != self.new.storage_version)
            .map(|(_, n)| n)
            .sum();
        if self.old.storage_version != self.new.storage_version && elsewhere > 0 {
            let msg = format!(
                "the storage version changes from {} to {}: {elsewhere} object(s) stay at their version until migrated; run `crd-apiserver migrate {crd}` after applying",
                self.old.storage_version, self.new.storage_version
            );
            let v = self.new.storage_version.clone();
            self.push_version(FindingKind::Migration, &v, elsewhere, false, msg);
        }
        let mut findings: Vec<Finding> = self.findings.into_values().collect();
        findings.sort_by_key(|f| (!f.breaking, f.kind, f.version.clone(), f.field.clone()));
        Report {
            crd,
            objects: self.objects,
            storage_version: self.old.storage_version.clone(),
            new_storage_version: self.new.storage_version.clone(),
            stored_versions: self.stored,
            findings,
        }
    }

    fn push_version(
        &mut self,
        kind: FindingKind,
        version: &str,
        count: u64,
        breaking: bool,
        message: String,
    ) {
        self.findings.insert(
            (kind, version.to_string(), String::new()),
            Finding {
                kind,
                breaking,
                version: version.to_string(),
                field: String::new(),
                message,
                count,
                examples: Vec::new(),
            },
        );
    }
}

/// Checks replacing `old` by `new` against every stored object of the CRD, a page at a time
/// (each page at the latest revision, so a long check never fails on compaction).
pub async fn check_stored(
    store: &dyn Store,
    old: &ServingCrd,
    new: ServingCrd,
    reads: &(dyn Fn(&str) -> u64 + Sync),
) -> Result<Report, StorageError> {
    let prefix = format!("{}/", old.key_root());
    let mut checker = Checker::new(old.clone(), new);
    let mut pages = Pages::latest(store, prefix, PAGE);
    while let Some(items) = pages.next_page().await? {
        let objects: Vec<Value> = items
            .iter()
            .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
            .collect();
        let undecodable = items.len() - objects.len();
        for kv in items.iter().filter(|_| undecodable > 0) {
            if serde_json::from_slice::<Value>(&kv.value).is_err() {
                let version = stored_version(&kv.value);
                let ex = Example {
                    name: kv.key.clone(),
                    message: "stored bytes are not a JSON object".into(),
                };
                checker.record(
                    FindingKind::ConversionFailed,
                    &version,
                    "",
                    "stored bytes are not a JSON object",
                    ex,
                );
            }
        }
        checker.check_page(objects).await;
    }
    Ok(checker.finish(reads))
}

/// The whole check of a proposed CRD (`new`, a full CRD object as a client would send it)
/// against the CRD the registry serves under the same name: the update's own validation errors
/// become [`FindingKind::InvalidDefinition`] findings, then every stored object is checked.
pub async fn check_proposal(
    store: &dyn Store,
    registry: &Registry,
    mut new: Value,
) -> Result<Report, ApiError> {
    let gr = crd_core::GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    super::crds::typed(&new)?;
    let name = meta::name(&new).to_string();
    let old = registry
        .get(&name)
        .ok_or_else(|| crd_core::Status::not_found(&gr, &name))?;
    let old_raw = store
        .get(&format!("{}/{name}", super::crds::CRD_KEY_ROOT))
        .await
        .map_err(|e| ApiError::storage(&gr, &name, e))?
        .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
        .ok_or_else(|| crd_core::Status::not_found(&gr, &name))?;
    crd_core::crd::set_defaults(&mut new);
    // As an update would: status and identity are the stored object's.
    let status = super::crds::updated_status(&new, &old_raw);
    if let Some(m) = new.as_object_mut() {
        m.insert("status".into(), status);
    }
    if let (Some(meta_new), Some(meta_old)) = (
        new.get_mut("metadata").and_then(Value::as_object_mut),
        old_raw.get("metadata").and_then(Value::as_object),
    ) {
        for k in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            if let Some(v) = meta_old.get(k) {
                meta_new.insert(k.into(), v.clone());
            }
        }
    }
    let invalid = super::crds::validate_typed(&new, Some(&old_raw));
    let serving = ServingCrd::build_with(&new, registry.conversion_options())
        .map_err(crd_core::Status::bad_request)?;
    let (group, plural) = (old.group.clone(), old.plural.clone());
    let reads = move |v: &str| crate::metrics::read_requests(&group, v, &plural);
    let mut report = check_stored(store, &old, serving, &reads)
        .await
        .map_err(|e| ApiError::storage(&gr, &name, e))?;
    let definition: Vec<Finding> = invalid
        .iter()
        .map(|e| Finding {
            kind: FindingKind::InvalidDefinition,
            breaking: true,
            version: String::new(),
            field: e.field.to_string(),
            message: format!("the CRD update would be refused: {e}"),
            count: 1,
            examples: Vec::new(),
        })
        .collect();
    report.findings.splice(0..0, definition);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fmt::Write as _;

    /// A CRD `widgets.example.com` from a list of `(version, served, storage, schema)`.
    fn crd(versions: &[(&str, bool, bool, &str)]) -> ServingCrd {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(name, served, storage, schema)| {
                let schema: Value = serde_saphyr::from_str(schema).expect("schema YAML");
                json!({"name": name, "served": served, "storage": storage,
                       "schema": {"openAPIV3Schema": schema}})
            })
            .collect();
        ServingCrd::build(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": versions}
        }))
        .expect("CRD builds")
    }

    const V1: &str = r"
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, maximum: 20}
      color: {type: string}
      items: {type: array, items: {type: object, properties: {x: {type: string}}}}
";

    fn objects(yaml: &str) -> Vec<Value> {
        serde_saphyr::from_str::<Vec<Value>>(yaml).expect("objects YAML")
    }

    const OBJECTS: &str = r"
- {apiVersion: example.com/v1, kind: Widget, metadata: {name: a, namespace: default}, spec: {replicas: 5, color: red, items: [{x: a}]}}
- {apiVersion: example.com/v1, kind: Widget, metadata: {name: b, namespace: default}, spec: {replicas: 15}}
- {apiVersion: example.com/v1, kind: Widget, metadata: {name: c, namespace: default}, spec: {replicas: 12, color: blue}}
";

    /// `(kind, version, field, count, breaking)` of every finding.
    type Row = (FindingKind, &'static str, &'static str, u64, bool);

    /// The [`Row`]s of a report, borrowed from it.
    fn rows(report: &Report) -> Vec<(FindingKind, &str, &str, u64, bool)> {
        report
            .findings
            .iter()
            .map(|f| {
                (
                    f.kind,
                    f.version.as_str(),
                    f.field.as_str(),
                    f.count,
                    f.breaking,
                )
            })
            .collect()
    }

    async fn run(old: ServingCrd, new: ServingCrd, objs: &str, reads: u64) -> Report {
        let mut c = Checker::new(old, new);
        c.check_page(objects(objs)).await;
        c.finish(&|_| reads)
    }

    #[tokio::test]
    async fn findings_of_schema_changes() {
        let cases: Vec<(&str, &str, Vec<Row>)> = vec![
            (
                "harmless: a new optional field",
                r"
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, maximum: 20}
      color: {type: string}
      size: {type: string}
      items: {type: array, items: {type: object, properties: {x: {type: string}}}}
",
                vec![],
            ),
            (
                "tightened maximum",
                r"
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, maximum: 10}
      color: {type: string}
      items: {type: array, items: {type: object, properties: {x: {type: string}}}}
",
                vec![(FindingKind::Invalid, "v1", "spec.replicas", 2, true)],
            ),
            (
                "removed field with data",
                r"
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, maximum: 20}
      items: {type: array, items: {type: object, properties: {x: {type: string}}}}
",
                vec![(FindingKind::DataLoss, "v1", "spec.color", 2, true)],
            ),
            (
                "removed field inside a list",
                r"
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, maximum: 20}
      color: {type: string}
      items: {type: array, items: {type: object, properties: {y: {type: string}}}}
",
                vec![(FindingKind::DataLoss, "v1", "spec.items[*].x", 1, true)],
            ),
            (
                "new required field",
                r"
type: object
properties:
  spec:
    type: object
    required: [color]
    properties:
      replicas: {type: integer, maximum: 20}
      color: {type: string}
      items: {type: array, items: {type: object, properties: {x: {type: string}}}}
",
                vec![(FindingKind::Invalid, "v1", "spec.color", 1, true)],
            ),
            (
                "CEL rule old objects fail",
                r"
type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - {rule: 'self.replicas % 5 == 0', message: replicas must be a multiple of 5}
    properties:
      replicas: {type: integer, maximum: 20}
      color: {type: string}
      items: {type: array, items: {type: object, properties: {x: {type: string}}}}
",
                vec![(FindingKind::Invalid, "v1", "spec", 1, true)],
            ),
        ];
        for (name, schema, want) in cases {
            let report = run(
                crd(&[("v1", true, true, V1)]),
                crd(&[("v1", true, true, schema)]),
                OBJECTS,
                0,
            )
            .await;
            assert_eq!(rows(&report), want, "{name}: {:#?}", report.findings);
            assert_eq!(report.objects, 3, "{name}");
            assert_eq!(report.breaking(), !want.is_empty(), "{name}");
        }
    }

    #[tokio::test]
    async fn examples_name_objects_with_their_message() {
        let tightened = V1.replace("maximum: 20", "maximum: 10");
        let report = run(
            crd(&[("v1", true, true, V1)]),
            crd(&[("v1", true, true, &tightened)]),
            OBJECTS,
            0,
        )
        .await;
        let f = &report.findings[0];
        assert_eq!(
            f.examples,
            vec![
                Example {
                    name: "default/b".into(),
                    message: "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10"
                        .into()
                },
                Example {
                    name: "default/c".into(),
                    message: "spec.replicas: Invalid value: 12: spec.replicas in body should be less than or equal to 10"
                        .into()
                },
            ]
        );
        assert_eq!(
            report.warnings(),
            vec![
                "upgrade check: 2 stored object(s) would be invalid at v1: spec.replicas: Invalid value: spec.replicas in body should be less than or equal to 10 (e.g. default/b)"
            ]
        );
    }

    #[tokio::test]
    async fn examples_are_bounded() {
        let mut many = String::new();
        for i in 0..12 {
            let _ = writeln!(
                many,
                "- {{apiVersion: example.com/v1, kind: Widget, metadata: {{name: w{i}}}, spec: {{color: red}}}}"
            );
        }
        let no_color = V1.replace("      color: {type: string}\n", "");
        let report = run(
            crd(&[("v1", true, true, V1)]),
            crd(&[("v1", true, true, &no_color)]),
            &many,
            0,
        )
        .await;
        assert_eq!(report.findings.len(), 1);
        assert_eq!(report.findings[0].count, 12);
        assert_eq!(report.findings[0].examples.len(), EXAMPLES);
    }

    #[tokio::test]
    async fn version_findings() {
        let stored = r"
- {apiVersion: example.com/v1beta1, kind: Widget, metadata: {name: old}, spec: {replicas: 1}}
- {apiVersion: example.com/v1, kind: Widget, metadata: {name: new}, spec: {replicas: 1}}
";
        let two = || crd(&[("v1", true, true, V1), ("v1beta1", true, false, V1)]);
        let cases: Vec<(&str, ServingCrd, &str, u64, Vec<Row>)> = vec![
            ("unchanged", two(), stored, 0, vec![]),
            (
                "removed with objects stored at it",
                crd(&[("v1", true, true, V1)]),
                stored,
                0,
                vec![(FindingKind::VersionRemoved, "v1beta1", "", 1, true)],
            ),
            (
                "removed, nothing stored, clients read it",
                crd(&[("v1", true, true, V1)]),
                "[]",
                7,
                vec![(FindingKind::VersionRemoved, "v1beta1", "", 7, true)],
            ),
            (
                "removed, nothing stored, nobody reads it",
                crd(&[("v1", true, true, V1)]),
                "[]",
                0,
                vec![],
            ),
            (
                "unserved with objects stored at it",
                crd(&[("v1", true, true, V1), ("v1beta1", false, false, V1)]),
                stored,
                0,
                vec![(FindingKind::VersionUnserved, "v1beta1", "", 1, false)],
            ),
            (
                "storage version moves",
                crd(&[("v1", true, false, V1), ("v1beta1", true, true, V1)]),
                stored,
                0,
                vec![(FindingKind::Migration, "v1beta1", "", 1, false)],
            ),
        ];
        for (name, new, objs, reads, want) in cases {
            let report = run(two(), new, objs, reads).await;
            assert_eq!(rows(&report), want, "{name}: {:#?}", report.findings);
        }
    }

    #[tokio::test]
    async fn a_failing_converter_is_a_finding_per_version() {
        let two = || crd(&[("v1", true, true, V1), ("v1beta1", true, false, V1)]);
        let mut new = two();
        new.converter = crate::conversion::Converter::Broken("no endpoint".into());
        let report = run(two(), new, OBJECTS, 0).await;
        let got: Vec<(FindingKind, &str, u64)> = report
            .findings
            .iter()
            .map(|f| (f.kind, f.version.as_str(), f.count))
            .collect();
        assert_eq!(got, vec![(FindingKind::ConversionFailed, "v1beta1", 3)]);
        assert_eq!(
            report.findings[0].message,
            "conversion webhook for example.com/v1, Kind=Widget failed: no endpoint"
        );
    }

    #[test]
    fn warnings_are_bounded_in_number_and_length() {
        let finding = |i: usize, message: String| Finding {
            kind: FindingKind::Invalid,
            breaking: true,
            version: "v1".into(),
            field: format!("spec.f{i}"),
            message,
            count: 1,
            examples: Vec::new(),
        };
        let report = Report {
            findings: (0..12).map(|i| finding(i, format!("m{i}"))).collect(),
            ..Report::default()
        };
        let w = report.warnings();
        assert_eq!(w.len(), MAX_WARNINGS + 1);
        assert_eq!(
            w[MAX_WARNINGS],
            "upgrade check: 2 more finding(s); run `crd-apiserver check-upgrade` for the full report"
        );
        let long = finding(0, "é".repeat(400)).summary();
        assert!(long.len() <= MAX_SUMMARY, "{}", long.len());
        assert!(long.ends_with("..."));
    }

    #[test]
    fn generic_paths_and_differences() {
        for (path, want) in [
            ("spec.items[12].x", "spec.items[*].x"),
            ("spec.a[0][3]", "spec.a[*][*]"),
            ("spec.x", "spec.x"),
        ] {
            assert_eq!(generic_path(path), want);
        }
        for (a, b, want) in [
            (json!({"a": 1}), json!({"a": 1}), None),
            (json!({"a": {"b": 1}}), json!({"a": {"b": 2}}), Some("a.b")),
            (json!({"a": [1, 2]}), json!({"a": [1, 3]}), Some("a[1]")),
            (json!({"a": 1}), json!({"a": 1, "c": 2}), Some("c")),
            (json!({"a": 1, "c": 2}), json!({"a": 1}), Some("c")),
        ] {
            assert_eq!(first_difference(&a, &b, "").as_deref(), want, "{a} {b}");
        }
    }
}
