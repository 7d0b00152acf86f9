//! The strategy for `storagemigration.k8s.io/v1alpha1` StorageVersionMigrations (Kubernetes
//! 1.30+): a cluster-scoped request to rewrite every object of one resource at its current
//! storage version. The migration controller does the work and reports conditions.

use crd_core::validation::{NameValidation, validate_object_meta, validate_object_meta_update};
use crd_core::{ErrorList, FieldError, Path, Status};
use serde_json::{Value, json};

use super::{ResourceInfo, Scope, Strategy, Subresource, meta};
use crate::error::ApiError;
use crate::table::{Cell, TableColumn};

/// The API group of storage-version migrations.
pub const GROUP: &str = "storagemigration.k8s.io";
/// The served version (Kubernetes 1.30–1.34).
pub const VERSION: &str = "v1alpha1";
/// The storage key root of migrations.
pub const KEY_ROOT: &str = "/registry/storagemigration.k8s.io/storageversionmigrations";

/// StorageVersionMigrations.
pub struct MigrationStrategy {
    info: ResourceInfo,
}

impl Default for MigrationStrategy {
    fn default() -> Self {
        MigrationStrategy {
            info: ResourceInfo {
                group: GROUP.into(),
                version: VERSION.into(),
                resource: "storageversionmigrations".into(),
                singular: "storageversionmigration".into(),
                kind: "StorageVersionMigration".into(),
                list_kind: "StorageVersionMigrationList".into(),
                scope: Scope::Cluster,
                key_root: KEY_ROOT.into(),
                status_subresource: true,
            },
        }
    }
}

/// `spec.resource` of a migration: which resource to migrate.
pub fn target(obj: &Value) -> (String, String) {
    let s = |k: &str| {
        obj.pointer(&format!("/spec/resource/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("group"), s("resource"))
}

#[async_trait::async_trait]
impl Strategy for MigrationStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn patch_types(&self) -> &'static [crate::request::negotiate::PatchType] {
        super::BUILTIN_PATCH_TYPES
    }

    fn admit(&self, obj: &mut Value, _how: &super::Admission) -> Result<Vec<String>, ApiError> {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if kind != "StorageVersionMigration" || api_version != format!("{GROUP}/{VERSION}") {
            return Err(Status::bad_request(format!(
                "the object provided is unrecognized (must be of type StorageVersionMigration): {api_version}, Kind={kind}"
            ))
            .into());
        }
        Ok(Vec::new())
    }

    fn prepare_create(&self, obj: &mut Value, _user: &crate::auth::User) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({}));
        }
        meta::meta_mut(obj).insert("generation".into(), Value::from(1));
    }

    fn validate_create(&self, obj: &Value) -> ErrorList {
        let mut errs = validate_object_meta(
            obj.get("metadata").unwrap_or(&Value::Null),
            Scope::Cluster,
            NameValidation::Dns1123Subdomain,
            &Path::new("metadata"),
        );
        let (_, resource) = target(obj);
        if resource.is_empty() {
            errs.push(FieldError::required(
                &Path::new("spec").child("resource").child("resource"),
                "resource is required",
            ));
        }
        errs
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource) {
        let keep = match sub {
            Subresource::Main
            | Subresource::Scale
            | Subresource::Finalize
            | Subresource::Approval
            | Subresource::Other => "status",
            Subresource::Status => "spec",
        };
        if let Some(m) = new.as_object_mut() {
            match old.get(keep) {
                Some(v) => m.insert(keep.into(), v.clone()),
                None => m.remove(keep),
            };
        }
    }

    fn validate_update(&self, new: &Value, old: &Value, _sub: Subresource) -> ErrorList {
        let mut errs = validate_object_meta_update(
            new.get("metadata").unwrap_or(&Value::Null),
            old.get("metadata").unwrap_or(&Value::Null),
            &Path::new("metadata"),
        );
        if new.get("spec") != old.get("spec") {
            errs.push(FieldError::invalid(
                &Path::new("spec"),
                new.get("spec").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        vec![
            TableColumn {
                name: "Resource".into(),
                kind: "string".into(),
                format: String::new(),
                description: "The resource being migrated".into(),
                priority: 0,
                cell: Cell::Path(".spec.resource.resource".into()),
            },
            TableColumn::age(),
        ]
    }
}
