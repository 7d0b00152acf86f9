//! The strategy for core/v1 Namespaces: created Active with the `kubernetes` finalizer, deleted
//! gracefully (phase Terminating) until the namespace controller has removed their contents.

use crd_core::validation::{NameValidation, validate_object_meta, validate_object_meta_update};
use crd_core::{ErrorList, Path, Status};
use serde_json::{Value, json};

use super::{DeleteOutcome, ResourceInfo, Scope, Strategy, Subresource, UnsupportedField, meta};
use crate::error::ApiError;
use crate::table::{Cell, TableColumn};

/// The finalizer in `spec.finalizers` that the namespace controller removes.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// The label Kubernetes puts on every namespace, holding its name.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Namespaces.
pub struct NamespaceStrategy {
    info: ResourceInfo,
}

impl Default for NamespaceStrategy {
    fn default() -> Self {
        NamespaceStrategy {
            info: ResourceInfo {
                group: String::new(),
                version: "v1".into(),
                resource: "namespaces".into(),
                singular: "namespace".into(),
                kind: "Namespace".into(),
                list_kind: "NamespaceList".into(),
                scope: Scope::Cluster,
                key_root: "/registry/namespaces".into(),
                status_subresource: true,
            },
        }
    }
}

/// `spec.finalizers` of a namespace.
pub fn spec_finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A namespace finalizer's name: a qualified name, and one without a `/` must be a standard
/// finalizer (upstream's `validateFinalizerName`).
fn validate_finalizer_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = crd_core::validation::validate_finalizer_name(name, path);
    if !name.contains('/') && !crd_core::validation::is_standard_finalizer(name) {
        errs.push(crd_core::FieldError::invalid(
            path,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
        ));
    }
    errs
}

fn set_name_label(obj: &mut Value) {
    let name = meta::name(obj).to_string();
    let m = meta::meta_mut(obj);
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[NAME_LABEL] = Value::String(name);
}

#[async_trait::async_trait]
impl Strategy for NamespaceStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn patch_types(&self) -> &'static [crate::request::negotiate::PatchType] {
        super::BUILTIN_PATCH_TYPES
    }

    fn reset_fields(&self, sub: Subresource) -> Option<&crd_merge::apply::FieldSet> {
        Some(super::StatusResetFields::shared().of(sub))
    }

    fn decode_protobuf(&self, body: &[u8]) -> Option<Result<Value, String>> {
        Some(crate::protobuf::decode_namespace(body).map_err(|e| e.clone()))
    }

    fn admit(&self, obj: &mut Value, how: &super::Admission) -> Result<Vec<String>, ApiError> {
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("Namespace");
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("v1");
        if kind != "Namespace" || api_version != "v1" {
            return Err(Status::bad_request(format!(
                "the object provided is unrecognized (must be of type Namespace): {api_version}, Kind={kind}"
            ))
            .into());
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert("kind".into(), "Namespace".into());
            m.insert("apiVersion".into(), "v1".into());
        }
        let before = how.patch.then(|| obj.to_string());
        let unknown =
            super::pipeline::typed_unknown_fields::<k8s_openapi::api::core::v1::Namespace>(obj);
        let warnings = super::pipeline::unknown_fields_outcome(
            &self.info.kind,
            &self.info.version,
            &unknown,
            how,
            before,
        )?;
        // Unknown fields are dropped, as decoding into the typed object drops them.
        super::pipeline::remove_fields(obj, &unknown);
        meta::drop_empty_collections(obj);
        // `SetDefaults_Namespace`: a named namespace is labeled with its name when decoded, so
        // the writer's managed fields own the label (a generated name gets it on create).
        if !meta::name(obj).is_empty() {
            set_name_label(obj);
        }
        Ok(warnings)
    }

    fn prepare_create(&self, obj: &mut Value, _user: &crate::auth::User) {
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "spec".into(),
                json!({ "finalizers": [NAMESPACE_FINALIZER] }),
            );
            m.insert("status".into(), json!({ "phase": "Active" }));
        }
        set_name_label(obj);
    }

    fn validate_create(&self, obj: &Value) -> ErrorList {
        validate_object_meta(
            obj.get("metadata").unwrap_or(&Value::Null),
            Scope::Cluster,
            NameValidation::Dns1123Label,
            &Path::new("metadata"),
        )
    }

    /// The main endpoint keeps the stored `spec` and `status`, `/status` the stored `spec`,
    /// `/finalize` the stored `status` (upstream's three namespace strategies).
    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource) {
        let keep: &[&str] = match sub {
            Subresource::Main | Subresource::Scale | Subresource::Approval | Subresource::Other => {
                &["status", "spec"]
            }
            Subresource::Status => &["spec"],
            Subresource::Finalize => &["status"],
        };
        if let Some(m) = new.as_object_mut() {
            for &k in keep {
                match old.get(k) {
                    Some(v) => m.insert(k.into(), v.clone()),
                    None => m.remove(k),
                };
            }
        }
        set_name_label(new);
    }

    /// `/finalize` also checks each of `spec.finalizers` (`ValidateNamespaceFinalizeUpdate`).
    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList {
        let mut errs = validate_object_meta_update(
            new.get("metadata").unwrap_or(&Value::Null),
            old.get("metadata").unwrap_or(&Value::Null),
            &Path::new("metadata"),
        );
        errs.extend(self.validate_create(new));
        if sub == Subresource::Finalize {
            let path = Path::new("spec").child("finalizers");
            for (i, f) in spec_finalizers(new).iter().enumerate() {
                errs.extend(validate_finalizer_name(f, &path.index(i)));
            }
        }
        errs
    }

    fn serves_subresource(&self, sub: Subresource) -> bool {
        sub == Subresource::Finalize
    }

    fn allow_unconditional_update(&self) -> bool {
        true
    }

    fn serves_delete_collection(&self) -> bool {
        false
    }

    /// Upstream's namespace `REST.Delete`: phase `Terminating` and a `deletionTimestamp`, but
    /// no `deletionGracePeriodSeconds`.
    fn before_delete(&self, obj: &mut Value) -> DeleteOutcome {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({ "phase": "Terminating" }));
        }
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        }
        if spec_finalizers(obj).is_empty() && meta::finalizers(obj).is_empty() {
            DeleteOutcome::Immediate
        } else {
            DeleteOutcome::Graceful
        }
    }

    fn ready_to_remove(&self, obj: &Value) -> bool {
        spec_finalizers(obj).is_empty() && meta::finalizers(obj).is_empty()
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        vec![
            TableColumn {
                name: "Status".into(),
                kind: "string".into(),
                format: String::new(),
                description: "The status of the namespace".into(),
                priority: 0,
                cell: Cell::Path(".status.phase".into()),
            },
            TableColumn::age(),
        ]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Result<String, UnsupportedField> {
        match field {
            "metadata.name" => Ok(meta::name(obj).to_string()),
            "status.phase" => Ok(obj
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()),
            _ => Err(UnsupportedField),
        }
    }
}
