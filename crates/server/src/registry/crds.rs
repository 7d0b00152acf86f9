//! The strategy for `apiextensions.k8s.io/v1` CustomResourceDefinitions (upstream
//! `registry/customresourcedefinition/strategy.go`): v1 defaulting, status reset on create,
//! storedVersions bookkeeping, generation, and the cleanup finalizer on delete.

use std::sync::Arc;

use crd_core::{ErrorList, Status};
use crd_storage::Store;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::serving::Registry;
use super::storage_versions::count_stored_versions;
use super::{DeleteOutcome, ResourceInfo, Scope, Strategy, Subresource, meta};
use crate::error::ApiError;
use crate::table::{Cell, TableColumn};

/// The finalizer that keeps a CRD until all its objects are deleted.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The storage key root of CRDs.
pub const CRD_KEY_ROOT: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions";

/// CustomResourceDefinitions.
pub struct CrdStrategy {
    info: ResourceInfo,
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
}

impl CrdStrategy {
    /// The strategy, with the store and registry its update guard reads.
    pub fn new(store: Arc<dyn Store>, registry: Arc<Registry>) -> Self {
        CrdStrategy {
            store,
            registry,
            info: ResourceInfo {
                group: "apiextensions.k8s.io".into(),
                version: "v1".into(),
                resource: "customresourcedefinitions".into(),
                singular: "customresourcedefinition".into(),
                kind: "CustomResourceDefinition".into(),
                list_kind: "CustomResourceDefinitionList".into(),
                scope: Scope::Cluster,
                key_root: CRD_KEY_ROOT.into(),
                status_subresource: true,
            },
        }
    }
}

/// Decodes a CRD for validation, with the 400 Kubernetes returns for undecodable bodies.
pub fn typed(obj: &Value) -> Result<CustomResourceDefinition, ApiError> {
    serde_json::from_value(obj.clone()).map_err(|e| {
        Status::bad_request(format!(
            "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: {e}"
        ))
        .into()
    })
}

/// The field path of KEP-3945's conversion rules, which the typed model does not have.
const CONVERSION_RULES_FIELD: &str = "spec.conversion.conversionRules";

/// The name of the version marked `storage: true`, if exactly one is.
pub fn storage_version(obj: &Value) -> Option<String> {
    let versions = obj.pointer("/spec/versions")?.as_array()?;
    let mut it = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true));
    let first = it.next()?;
    if it.next().is_some() {
        return None;
    }
    first.get("name").and_then(Value::as_str).map(String::from)
}

fn raw_schemas(obj: &Value) -> Vec<Value> {
    obj.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.pointer("/schema/openAPIV3Schema").cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// The status a spec update keeps: the old status, with the new storage version added to
/// `storedVersions` (upstream's `PrepareForUpdate`). The upgrade check prepares a proposed CRD
/// with it, as an update would.
pub fn updated_status(new: &Value, old: &Value) -> Value {
    let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
    if let Some(sv) = storage_version(new) {
        let list = status
            .as_object_mut()
            .map(|s| s.entry("storedVersions").or_insert_with(|| json!([])));
        if let Some(Value::Array(list)) = list
            && !list.iter().any(|v| v.as_str() == Some(sv.as_str()))
        {
            list.push(Value::String(sv));
        }
    }
    status
}

/// Validates a CRD write as the strategy does (`validate_create` when `old` is `None`, else the
/// update checks): the typed CRD checks, then each version's structural-schema checks and CEL
/// rule checks. Public so the fuzz targets drive exactly the server's chain.
pub fn validate_typed(obj: &Value, old: Option<&Value>) -> ErrorList {
    validate_typed_at(obj, old, crd_core::crd::RequestVersion::V1)
}

/// [`validate_typed`] for a write through `at` (v1 objects; a v1beta1 write is converted
/// first), with the rules upstream relaxes for v1beta1.
pub fn validate_typed_at(
    obj: &Value,
    old: Option<&Value>,
    at: crd_core::crd::RequestVersion,
) -> ErrorList {
    let Ok(new) = serde_json::from_value::<CustomResourceDefinition>(obj.clone()) else {
        return ErrorList::new();
    };
    let mut errs = match old
        .and_then(|o| serde_json::from_value::<CustomResourceDefinition>(o.clone()).ok())
    {
        Some(old) => crd_core::crd::validate_update_at(&new, &old, at),
        None => crd_core::crd::validate_create_at(&new, at),
    };
    // The structural-schema rules, on the raw JSON (so that fields the typed model drops are
    // still seen), at upstream's internal paths; ratcheted on update.
    let old_schemas = old.map(raw_schemas).unwrap_or_default();
    let preserve = new.spec.preserve_unknown_fields.unwrap_or(false);
    let mut seen = std::collections::HashSet::new();
    for loc in crd_core::crd::schema_locations(&new.spec) {
        let Some(schema) = obj.pointer(&format!(
            "/spec/versions/{}/schema/openAPIV3Schema",
            loc.version
        )) else {
            continue;
        };
        let mut opts = crd_schema::checks::CheckOptions::create()
            .with_status_subresource(loc.status_subresource)
            .with_preserve_unknown_fields(preserve)
            .ratcheted(old_schemas.iter());
        if at == crd_core::crd::RequestVersion::V1beta1 {
            // Upstream's v1beta1 compatibility: no defaults (unless the old CRD had them),
            // non-structural schemas and unknown types allowed (`allowDefaults`,
            // `requireStructuralSchema`, `requireValidPropertyType` of release-1.21).
            opts.allow_defaults = old_schemas.iter().any(crd_schema::checks::has_defaults);
            opts.require_structural = false;
            opts.require_valid_property_type = false;
        }
        let mut found = crd_schema::checks::check_schema(schema, &loc.path, &opts);
        // CEL rules compile only when the schema itself is sound, as upstream.
        if found.is_empty() {
            found = crd_cel::check_rules(schema, &loc.path, &old_schemas);
        }
        if found.is_empty() {
            found = crd_cel::check_default_rules(schema, &loc.path);
        }
        for e in found {
            // A spec-level error (preserveUnknownFields with defaults) is reported once.
            if seen.insert(e.to_string()) {
                errs.push(e);
            }
        }
    }
    for e in selectable_field_errors(obj) {
        if seen.insert(e.to_string()) {
            errs.push(e);
        }
    }
    errs.extend(crd_cel::conversion::check_conversion_rules(obj));
    errs
}

/// Each version's `selectableFields` checked against its schema, at upstream's internal paths:
/// `spec.selectableFields` when every version declares the same ones, else per version.
fn selectable_field_errors(obj: &Value) -> ErrorList {
    fn fields(v: &Value) -> &[Value] {
        v.get("selectableFields")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    }
    let versions = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let shared = versions
        .split_first()
        .is_some_and(|(first, rest)| rest.iter().all(|v| fields(v) == fields(first)));
    let mut errs = ErrorList::new();
    for (i, v) in versions.iter().enumerate() {
        let (list, schema) = (fields(v), v.pointer("/schema/openAPIV3Schema"));
        let Some(schema) = schema.filter(|_| !list.is_empty()) else {
            continue;
        };
        let path = if shared {
            crd_core::Path::new("spec").child("selectableFields")
        } else {
            crd_core::Path::new("spec")
                .child("versions")
                .index(i)
                .child("selectableFields")
        };
        errs.extend(crd_schema::checks::check_selectable_fields(
            list, schema, &path,
        ));
    }
    errs
}

/// `unrecognized format` and list-type warnings for schemas new in this write.
fn schema_warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let old_warnings: Vec<String> = old
        .map(|o| {
            raw_schemas(o)
                .iter()
                .flat_map(crd_schema::checks::format_warnings)
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for w in raw_schemas(obj)
        .iter()
        .flat_map(crd_schema::checks::format_warnings)
    {
        if !old_warnings.contains(&w) && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

#[async_trait::async_trait]
impl Strategy for CrdStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn patch_types(&self) -> &'static [crate::request::negotiate::PatchType] {
        super::BUILTIN_PATCH_TYPES
    }

    fn reset_fields(&self, sub: Subresource) -> Option<&crd_merge::apply::FieldSet> {
        Some(super::StatusResetFields::shared().of(sub))
    }

    async fn guard_update(&self, new: &Value, old: &Value) -> Result<(), ApiError> {
        guard_stored_versions(self.store.as_ref(), &self.registry, new, old).await
    }

    fn write_warnings(&self, new: &Value, old: Option<&Value>) -> Vec<String> {
        let mut out = schema_warnings(new, old);
        // The round-trip check of conversion rules: a loss is a warning naming the fields.
        if new
            .pointer("/spec/conversion/strategy")
            .and_then(Value::as_str)
            == Some(crd_cel::conversion::STRATEGY)
            && crd_cel::conversion::check_conversion_rules(new).is_empty()
        {
            // Converted objects are pruned at the version converted to, as `to_storage` and
            // reads prune them, unless the CRD preserves unknown fields.
            let preserve = new
                .pointer("/spec/preserveUnknownFields")
                .and_then(Value::as_bool)
                == Some(true);
            out.extend(crd_cel::conversion::round_trip_losses(
                new,
                &|obj, schema| {
                    if !preserve {
                        crd_schema::prune::prune(obj, schema, true);
                    }
                },
            ));
        }
        out
    }

    async fn dry_run_warnings(&self, new: &Value, old: &Value) -> Vec<String> {
        if new.get("spec") == old.get("spec") {
            return Vec::new();
        }
        let Some(current) = self.registry.get(meta::name(new)) else {
            return Vec::new();
        };
        let Ok(proposed) =
            super::serving::ServingCrd::build_with(new, self.registry.conversion_options())
        else {
            return Vec::new();
        };
        let (group, plural) = (current.group.clone(), current.plural.clone());
        let reads = move |v: &str| crate::metrics::read_requests(&group, v, &plural);
        match super::upgrade_check::check_stored(self.store.as_ref(), &current, proposed, &reads)
            .await
        {
            Ok(report) => report.warnings(),
            Err(e) => vec![format!("upgrade check: reading stored objects failed: {e}")],
        }
    }

    fn admit(&self, obj: &mut Value, how: &super::Admission) -> Result<Vec<String>, ApiError> {
        // A body without apiVersion and kind takes them from the URL, as upstream's decoder
        // defaults them.
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .unwrap_or("CustomResourceDefinition")
            .to_string();
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .unwrap_or("apiextensions.k8s.io/v1")
            .to_string();
        if kind != "CustomResourceDefinition" || api_version != "apiextensions.k8s.io/v1" {
            return Err(Status::bad_request(format!(
                "the object provided is unrecognized (must be of type CustomResourceDefinition): {api_version}, Kind={kind}"
            ))
            .into());
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert("kind".into(), Value::String(kind));
            m.insert("apiVersion".into(), Value::String(api_version));
        }
        let before = how.patch.then(|| obj.to_string());
        // `spec.conversion.conversionRules` (KEP-3945) is not in the typed model; it is kept
        // and checked on the raw object (`crd_cel::conversion`).
        let mut unknown = super::pipeline::typed_unknown_fields::<CustomResourceDefinition>(obj);
        unknown.retain(|f| !f.starts_with(CONVERSION_RULES_FIELD));
        let warnings = super::pipeline::unknown_fields_outcome(
            &self.info.kind,
            &self.info.version,
            &unknown,
            how,
            before,
        )?;
        super::pipeline::remove_fields(obj, &unknown);
        super::meta::drop_empty_collections(obj);
        crd_core::crd::set_defaults(obj);
        typed(obj)?;
        Ok(warnings)
    }

    fn prepare_create(&self, obj: &mut Value, _user: &crate::auth::User) {
        let stored: Vec<String> = storage_version(obj).into_iter().collect();
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({ "acceptedNames": {"kind": "", "plural": ""}, "storedVersions": stored }),
            );
        }
        meta::meta_mut(obj).insert("generation".into(), Value::from(1));
    }

    fn validate_create(&self, obj: &Value) -> ErrorList {
        validate_typed(obj, None)
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource) {
        match sub {
            Subresource::Main
            | Subresource::Scale
            | Subresource::Finalize
            | Subresource::Approval
            | Subresource::Other => {
                let status = updated_status(new, old);
                let generation = meta::generation(old);
                let bumped = if new.get("spec") == old.get("spec") {
                    generation
                } else {
                    generation + 1
                };
                if let Some(m) = new.as_object_mut() {
                    m.insert("status".into(), status);
                }
                meta::meta_mut(new).insert("generation".into(), Value::from(bumped));
            }
            Subresource::Status => {
                if let Some(m) = new.as_object_mut() {
                    match old.get("spec") {
                        Some(spec) => m.insert("spec".into(), spec.clone()),
                        None => m.remove("spec"),
                    };
                }
                let generation = meta::generation(old);
                meta::meta_mut(new).insert("generation".into(), Value::from(generation));
            }
        }
    }

    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList {
        match sub {
            Subresource::Main
            | Subresource::Scale
            | Subresource::Finalize
            | Subresource::Approval
            | Subresource::Other => validate_typed(new, Some(old)),
            Subresource::Status => {
                let mut errs = crd_core::validation::validate_object_meta_update(
                    new.get("metadata").unwrap_or(&Value::Null),
                    old.get("metadata").unwrap_or(&Value::Null),
                    &crd_core::Path::new("metadata"),
                );
                if let Ok(crd) = serde_json::from_value::<CustomResourceDefinition>(new.clone()) {
                    errs.extend(crd_core::crd::validate_stored_versions(&crd));
                }
                errs
            }
        }
    }

    fn before_delete(&self, obj: &mut Value) -> DeleteOutcome {
        let mut finalizers = meta::finalizers(obj);
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_string());
            meta::set_finalizers(obj, &finalizers);
        }
        super::conditions::set(
            obj,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
        DeleteOutcome::Graceful
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        vec![TableColumn {
            name: "Created At".into(),
            kind: "date".into(),
            format: String::new(),
            description: crate::table::AGE_DESCRIPTION.into(),
            priority: 0,
            cell: Cell::RawPath(".metadata.creationTimestamp".into()),
        }]
    }
}

/// The annotation that lets a CRD update drop versions from `status.storedVersions` even though
/// objects are still stored at them.
pub const FORCE_STORED_VERSIONS_ANNOTATION: &str = "crd-apiserver.dev/force-stored-versions";

fn stored_versions(obj: &Value) -> Vec<String> {
    obj.pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The storedVersions safety check: a version may leave `status.storedVersions` only when no
/// object is stored at it any more, unless the update carries the force annotation.
pub async fn guard_stored_versions(
    store: &dyn Store,
    registry: &Registry,
    new: &Value,
    old: &Value,
) -> Result<(), ApiError> {
    let kept = stored_versions(new);
    let removed: Vec<String> = stored_versions(old)
        .into_iter()
        .filter(|v| !kept.contains(v))
        .collect();
    let forced = new
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(FORCE_STORED_VERSIONS_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true");
    if removed.is_empty() || forced {
        return Ok(());
    }
    let name = meta::name(new);
    let Some(crd) = registry.get(name) else {
        return Ok(());
    };
    let gr = crd_core::GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let counts = count_stored_versions(store, &crd)
        .await
        .map_err(|e| ApiError::storage(&gr, name, e))?;
    let blocking: Vec<String> = removed
        .iter()
        .filter_map(|v| {
            counts
                .get(v)
                .filter(|n| **n > 0)
                .map(|n| format!("{n} objects are still stored at {v}"))
        })
        .collect();
    if blocking.is_empty() {
        return Ok(());
    }
    let errors = ErrorList(vec![crd_core::FieldError::invalid(
        &crd_core::Path::new("status").child("storedVersions"),
        Value::from(kept),
        format!(
            "{}; migrate them first (crd-apiserver migrate {name}, or a StorageVersionMigration), or set the annotation {FORCE_STORED_VERSIONS_ANNOTATION}=true to drop the version anyway",
            blocking.join(", ")
        ),
    )]);
    Err(Status::invalid(
        &crd_core::GroupResource::new("apiextensions.k8s.io", "CustomResourceDefinition"),
        name,
        &errors,
    )
    .into())
}
