//! The strategy for custom objects: one instance per request, bound to a CRD's serving state and
//! the request's version.

use std::sync::Arc;

use crd_core::validation::{NameValidation, validate_object_meta, validate_object_meta_update};
use crd_core::{ErrorList, FieldError, Path, Status};
use serde_json::Value;

use super::serving::{ServedVersion, ServingCrd};
use super::{ResourceInfo, Scope, Strategy, Subresource, meta, pipeline};
use crate::error::ApiError;
use crate::table::TableColumn;

/// Custom objects of one CRD at one served version.
pub struct CustomResourceStrategy {
    crd: Arc<ServingCrd>,
    version: ServedVersion,
    info: ResourceInfo,
}

impl CustomResourceStrategy {
    /// Binds a CRD to a served version.
    pub fn new(crd: Arc<ServingCrd>, version: &ServedVersion) -> Self {
        let info = ResourceInfo {
            group: crd.group.clone(),
            version: version.name.clone(),
            resource: crd.plural.clone(),
            singular: crd.singular.clone(),
            kind: crd.kind.clone(),
            list_kind: crd.list_kind.clone(),
            scope: crd.scope,
            key_root: crd.key_root(),
            status_subresource: version.status_subresource,
        };
        CustomResourceStrategy {
            crd,
            version: version.clone(),
            info,
        }
    }

    /// With a scale subresource, the replica counts must be int32s that are not negative
    /// (upstream reports them under the path with its leading dot).
    fn validate_scale_paths(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let Some(paths) = &self.version.scale else {
            return errs;
        };
        for path in [&paths.spec_replicas, &paths.status_replicas] {
            let Some(n) = crate::table::lookup(obj, path).and_then(Value::as_i64) else {
                continue;
            };
            if n < 0 {
                errs.push(FieldError::invalid(
                    &Path::new(path),
                    n,
                    "should be a non-negative integer",
                ));
            } else if n > i64::from(i32::MAX) {
                errs.push(FieldError::invalid(
                    &Path::new(path),
                    n,
                    format!("should be less than or equal to {}", i32::MAX),
                ));
            }
        }
        errs
    }

    /// The CRD this strategy serves.
    pub fn crd(&self) -> &ServingCrd {
        &self.crd
    }
}

/// Whether two objects differ in any top-level key other than `metadata` (the rule that bumps
/// `metadata.generation` for custom objects).
fn differs_outside_metadata(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
        }
        v
    };
    strip(a) != strip(b)
}

#[async_trait::async_trait]
impl Strategy for CustomResourceStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn schema(&self) -> Option<&Value> {
        self.version.schema.as_deref()
    }

    fn apply_schema(&self) -> &crd_merge::apply::Schema {
        self.version.apply_schema()
    }

    fn reset_fields(&self, sub: Subresource) -> Option<&crd_merge::apply::FieldSet> {
        self.version
            .status_subresource
            .then(|| super::StatusResetFields::shared().of(sub))
    }

    fn scale(&self) -> Option<&super::serving::ScalePaths> {
        self.version.scale.as_ref()
    }

    fn admit(&self, obj: &mut Value, how: &super::Admission) -> Result<Vec<String>, ApiError> {
        pipeline::check_type_meta(&self.crd, &self.version.name, obj)?;
        meta::drop_empty_collections(obj);
        let warnings = pipeline::prune_unknown_fields(&self.crd, &self.version, obj, how)?;
        pipeline::default(&self.version, obj);
        Ok(warnings)
    }

    /// Upstream's CRD handler tears a CRD's storage down when the CRD goes or its spec or
    /// accepted names change, about a second after (`tearDown`): watches end then, and clients
    /// list again.
    fn definition_retired(
        &self,
        registry: &Arc<super::serving::Registry>,
    ) -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>> {
        let mut changes = registry.subscribe();
        let registry = registry.clone();
        let (name, uid, identity) = (
            self.crd.name.clone(),
            self.crd.uid.clone(),
            self.crd.storage_identity,
        );
        Some(Box::pin(async move {
            loop {
                let same = registry
                    .get(&name)
                    .is_some_and(|c| c.uid == uid && c.storage_identity == identity);
                if !same {
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    return;
                }
                if changes.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
        }))
    }

    fn unserved_subresource(&self, name: &str) -> ApiError {
        Status::not_found(&self.info.group_resource(), name).into()
    }

    fn unserved_verb(&self, verb: &str) -> ApiError {
        Status::method_not_supported(&self.info.group_resource(), verb).into()
    }

    fn check_create_allowed(&self, name: &str) -> Result<(), ApiError> {
        if self.crd.terminating {
            return Err(Status::forbidden(
                &self.info.group_resource(),
                name,
                "create not allowed while custom resource definition is terminating",
            )
            .into());
        }
        Ok(())
    }

    fn prepare_create(&self, obj: &mut Value, _user: &crate::auth::User) {
        meta::meta_mut(obj).insert("generation".into(), Value::from(1));
        if self.version.status_subresource
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
    }

    fn validate_create(&self, obj: &Value) -> ErrorList {
        let mut errs = validate_object_meta(
            obj.get("metadata").unwrap_or(&Value::Null),
            self.crd.scope,
            NameValidation::Dns1123Subdomain,
            &Path::new("metadata"),
        );
        errs.extend(pipeline::validate_schema(
            &self.version,
            obj,
            None,
            Subresource::Main,
        ));
        errs.extend(self.validate_scale_paths(obj));
        errs
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource) {
        match sub {
            Subresource::Main
            | Subresource::Scale
            | Subresource::Finalize
            | Subresource::Approval
            | Subresource::Other => {
                if self.version.status_subresource {
                    let old_status = old.get("status").cloned();
                    if let Some(m) = new.as_object_mut() {
                        match old_status {
                            Some(s) => m.insert("status".into(), s),
                            None => m.remove("status"),
                        };
                    }
                }
                let generation = meta::generation(old);
                let bumped = if differs_outside_metadata(new, old) {
                    generation + 1
                } else {
                    generation
                };
                meta::meta_mut(new).insert("generation".into(), Value::from(bumped));
            }
            Subresource::Status => {
                let status = new.get("status").cloned();
                let mut merged = old.clone();
                if let Some(m) = merged.as_object_mut() {
                    match status {
                        Some(s) => m.insert("status".into(), s),
                        None => m.remove("status"),
                    };
                }
                if let Some(mf) = new.pointer("/metadata/managedFields").cloned() {
                    meta::meta_mut(&mut merged).insert("managedFields".into(), mf);
                }
                let rv = meta::resource_version(new).to_string();
                meta::meta_mut(&mut merged).insert("resourceVersion".into(), Value::String(rv));
                *new = merged;
            }
        }
    }

    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList {
        let mut errs = validate_object_meta_update(
            new.get("metadata").unwrap_or(&Value::Null),
            old.get("metadata").unwrap_or(&Value::Null),
            &Path::new("metadata"),
        );
        errs.extend(validate_object_meta(
            new.get("metadata").unwrap_or(&Value::Null),
            self.crd.scope,
            NameValidation::Dns1123Subdomain,
            &Path::new("metadata"),
        ));
        errs.extend(pipeline::validate_schema(
            &self.version,
            new,
            Some(old),
            sub,
        ));
        errs.extend(self.validate_scale_paths(new));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Result<String, super::UnsupportedField> {
        match field {
            "metadata.name" => Ok(meta::name(obj).to_string()),
            "metadata.namespace" if self.info.namespaced() => Ok(meta::namespace(obj).to_string()),
            _ => {
                let path = format!(".{field}");
                if !self.version.selectable_fields.contains(&path) {
                    return Err(super::UnsupportedField);
                }
                Ok(match crate::table::lookup(obj, &path) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Bool(b)) => b.to_string(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => String::new(),
                })
            }
        }
    }

    fn write_warnings(&self, new: &Value, old: Option<&Value>) -> Vec<String> {
        pipeline::cel_warnings(&self.version, new, old)
    }

    fn verbatim_reads(&self) -> bool {
        !self.version.has_defaults() && !self.crd.pruned_on_read
    }

    fn conversion(&self) -> Option<pipeline::ConversionPlan> {
        Some(pipeline::ConversionPlan::new(&self.crd, &self.version.name))
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        self.version.columns.clone()
    }

    fn warnings(&self) -> Vec<String> {
        self.version.deprecation_warning.iter().cloned().collect()
    }
}

impl CustomResourceStrategy {
    /// Whether the scope matches a request's namespace use.
    pub fn scope(&self) -> Scope {
        self.crd.scope
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generation_bumps_only_outside_metadata() {
        let old = json!({"metadata": {"name": "a", "generation": 1, "labels": {"x": "1"}}, "spec": {"a": 1}});
        assert!(!differs_outside_metadata(
            &old,
            &json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "spec": {"a": 1}})
        ));
        assert!(differs_outside_metadata(
            &old,
            &json!({"metadata": {"name": "a"}, "spec": {"a": 2}})
        ));
        assert!(differs_outside_metadata(
            &old,
            &json!({"metadata": {"name": "a"}, "spec": {"a": 1}, "status": {}})
        ));
    }
}
