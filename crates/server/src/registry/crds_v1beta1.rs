//! The strategy for `apiextensions.k8s.io/v1beta1` CustomResourceDefinitions, served only with
//! `--runtime-config=apiextensions.k8s.io/v1beta1=true` (Kubernetes 1.16–1.21 served both
//! versions; 1.22 removed v1beta1). CRDs are stored at v1: reads convert the stored object to
//! v1beta1 ([`Strategy::read_shape`]), writes convert back ([`Strategy::write_shape`]), and every
//! step between runs the v1 strategy's logic on the v1 form, with v1beta1's defaults, its own
//! checks and the rules upstream relaxes for v1beta1 (`crd_core::crd::v1beta1`). Every request
//! carries 1.21's deprecation warning.

use std::sync::Arc;

use crd_core::crd::RequestVersion;
use crd_core::crd::v1beta1;
use crd_core::{ErrorList, Status};
use crd_storage::Store;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use super::crds::{CrdStrategy, validate_typed_at};
use super::serving::Registry;
use super::{DeleteOutcome, ResourceInfo, Strategy, Subresource};
use crate::error::ApiError;
use crate::table::TableColumn;

/// CustomResourceDefinitions at `apiextensions.k8s.io/v1beta1`.
pub struct CrdV1beta1Strategy {
    info: ResourceInfo,
    v1: CrdStrategy,
}

impl CrdV1beta1Strategy {
    /// The strategy, over the v1 strategy's store and registry.
    pub fn new(store: Arc<dyn Store>, registry: Arc<Registry>) -> Self {
        let v1 = CrdStrategy::new(store, registry);
        let mut info = v1.info().clone();
        info.version = "v1beta1".into();
        CrdV1beta1Strategy { info, v1 }
    }
}

fn to_v1(obj: &Value) -> Value {
    v1beta1::to_v1(obj.clone())
}

/// Takes what the v1 strategy's preparation set (metadata such as `generation`, and
/// `status`) from its v1 form, keeping the v1beta1 body's spec as written so that the v1beta1
/// checks see it.
fn carry_over(obj: &mut Value, v1: &Value) {
    if let Some(m) = obj.as_object_mut() {
        for field in ["metadata", "status"] {
            match v1.get(field) {
                Some(v) => m.insert(field.into(), v.clone()),
                None => m.remove(field),
            };
        }
    }
}

fn v1_unknown_fields(v1: &Value) -> Vec<String> {
    super::pipeline::typed_unknown_fields::<CustomResourceDefinition>(v1)
}

#[async_trait::async_trait]
impl Strategy for CrdV1beta1Strategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn patch_types(&self) -> &'static [crate::request::negotiate::PatchType] {
        self.v1.patch_types()
    }

    fn reset_fields(&self, sub: Subresource) -> Option<&crd_merge::apply::FieldSet> {
        self.v1.reset_fields(sub)
    }

    fn warnings(&self) -> Vec<String> {
        vec![v1beta1::DEPRECATION_WARNING.to_string()]
    }

    async fn guard_update(&self, new: &Value, old: &Value) -> Result<(), ApiError> {
        self.v1.guard_update(&to_v1(new), &to_v1(old)).await
    }

    fn write_warnings(&self, new: &Value, old: Option<&Value>) -> Vec<String> {
        self.v1.write_warnings(&to_v1(new), old.map(to_v1).as_ref())
    }

    async fn dry_run_warnings(&self, new: &Value, old: &Value) -> Vec<String> {
        self.v1.dry_run_warnings(&to_v1(new), &to_v1(old)).await
    }

    fn admit(&self, obj: &mut Value, how: &super::Admission) -> Result<Vec<String>, ApiError> {
        let field = |name: &str, default: &str| {
            obj.get(name)
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty())
                .unwrap_or(default)
                .to_string()
        };
        let kind = field("kind", "CustomResourceDefinition");
        let api_version = field("apiVersion", v1beta1::API_VERSION);
        if kind != "CustomResourceDefinition" || api_version != v1beta1::API_VERSION {
            return Err(Status::bad_request(format!(
                "the object provided is unrecognized (must be of type CustomResourceDefinition): {api_version}, Kind={kind}"
            ))
            .into());
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert("kind".into(), Value::String(kind));
            m.insert("apiVersion".into(), Value::String(api_version));
        }
        // Unknown fields are those the v1 form does not know (every v1beta1-only field has a
        // v1 place); they are dropped when the object is stored.
        let before = how.patch.then(|| obj.to_string());
        let unknown = v1_unknown_fields(&to_v1(obj));
        let warnings = super::pipeline::unknown_fields_outcome(
            &self.info.kind,
            &self.info.version,
            &unknown,
            how,
            before,
        )?;
        v1beta1::set_defaults(obj);
        serde_json::from_value::<CustomResourceDefinition>(to_v1(obj)).map_err(|e| {
            ApiError::from(Status::bad_request(format!(
                "CustomResourceDefinition in version \"v1beta1\" cannot be handled as a CustomResourceDefinition: {e}"
            )))
        })?;
        Ok(warnings)
    }

    fn prepare_create(&self, obj: &mut Value, user: &crate::auth::User) {
        let mut v1 = to_v1(obj);
        self.v1.prepare_create(&mut v1, user);
        carry_over(obj, &v1);
    }

    fn validate_create(&self, obj: &Value) -> ErrorList {
        let mut errs = v1beta1::validate_shape(obj);
        errs.extend(validate_typed_at(
            &to_v1(obj),
            None,
            RequestVersion::V1beta1,
        ));
        errs
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource) {
        let mut v1 = to_v1(new);
        self.v1.prepare_update(&mut v1, &to_v1(old), sub);
        carry_over(new, &v1);
        if sub == Subresource::Status
            && let Some(m) = new.as_object_mut()
        {
            // The v1 strategy restored the old spec; in the v1beta1 shape it is old's own.
            match old.get("spec") {
                Some(spec) => m.insert("spec".into(), spec.clone()),
                None => m.remove("spec"),
            };
        }
    }

    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList {
        if sub == Subresource::Status {
            return self.v1.validate_update(&to_v1(new), &to_v1(old), sub);
        }
        let mut errs = v1beta1::validate_shape(new);
        errs.extend(validate_typed_at(
            &to_v1(new),
            Some(&to_v1(old)),
            RequestVersion::V1beta1,
        ));
        errs
    }

    fn before_delete(&self, obj: &mut Value) -> DeleteOutcome {
        // Finalizers and conditions have the same shape at both versions.
        self.v1.before_delete(obj)
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        self.v1.table_columns()
    }

    fn read_shape(&self, obj: &mut Value) {
        *obj = v1beta1::from_v1(std::mem::take(obj));
    }

    fn write_shape(&self, obj: Value) -> Value {
        let mut v1 = v1beta1::to_v1(obj);
        let unknown = v1_unknown_fields(&v1);
        super::pipeline::remove_fields(&mut v1, &unknown);
        v1
    }
}
