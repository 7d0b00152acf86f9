//! Resources and their strategies: what each kind of object (CustomResourceDefinition,
//! Namespace, custom resource) does at each step of a write, in the manner of Go's generic
//! registry `Store` plus per-kind strategies.
//!
//! Main types: [`ResourceInfo`], [`Strategy`], [`Subresource`], [`Scope`].
//! Modules: [`serving`] (per-CRD compiled state), [`pipeline`] (the custom-object transforms),
//! [`crds`], [`namespaces`] and [`custom`] (the three strategies), [`meta`] (metadata access).

pub mod conditions;
pub mod crds;
pub mod custom;
pub mod meta;
pub mod migrations;
pub mod namespaces;
pub mod pipeline;
pub mod serving;
pub mod storage_versions;

use crd_core::{ErrorList, GroupResource};
use serde_json::Value;

use crate::http::error::ApiError;
use crate::table::TableColumn;

pub use crd_core::validation::Scope;

/// Which endpoint of a resource a write goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The object itself.
    Main,
    /// `/status`: only status changes.
    Status,
}

/// How a body is being admitted: which endpoint, the `fieldValidation` mode, and whether it is
/// the result of a patch (strict errors are then 422, as upstream).
#[derive(Clone, Copy, Debug)]
pub struct Admission {
    /// The endpoint written through.
    pub sub: Subresource,
    /// `fieldValidation`.
    pub field_validation: pipeline::FieldValidation,
    /// The body is a patched object.
    pub patch: bool,
}

/// The static description of one resource at one version.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// The API group ("" for core).
    pub group: String,
    /// The version the request uses.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// The singular name.
    pub singular: String,
    /// The Kind.
    pub kind: String,
    /// The list Kind.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// The storage key root, such as `/registry/stable.example.com/crontabs`.
    pub key_root: String,
    /// Whether the `/status` subresource exists.
    pub status_subresource: bool,
}

impl ResourceInfo {
    /// `<resource>.<group>`, used by NotFound, AlreadyExists and Conflict messages.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.resource)
    }

    /// `<Kind>.<group>`, used by Invalid messages.
    pub fn group_kind(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.kind)
    }

    /// `<group>/<version>` (or `<version>` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced() => format!("{}/{ns}/{name}", self.key_root),
            _ => format!("{}/{name}", self.key_root),
        }
    }

    /// The storage prefix of a collection (one namespace, or all).
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced() => format!("{}/{ns}/", self.key_root),
            _ => format!("{}/", self.key_root),
        }
    }
}

/// A field selector named a field the resource does not support.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsupportedField;

/// What a DELETE does to an object that is not yet being deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Remove it now (when it has no finalizers).
    Immediate,
    /// Mark it: it stays until a controller finishes with it.
    Graceful,
}

/// Per-kind behaviour at each step of a request. Implementations are immutable and cheap to
/// share; handlers call the steps in a fixed order.
pub trait Strategy: Send + Sync {
    /// The resource this strategy serves.
    fn info(&self) -> &ResourceInfo;

    /// Decoding-time admission of a body: type checks, pruning and defaulting. Returns warnings.
    fn admit(&self, obj: &mut Value, how: &Admission) -> Result<Vec<String>, ApiError>;

    /// Rejects creation outright (for example while a CRD is terminating).
    fn check_create_allowed(&self, _name: &str) -> Result<(), ApiError> {
        Ok(())
    }

    /// Sets fields a new object must have (status reset, generation, ...).
    fn prepare_create(&self, obj: &mut Value);

    /// Validates a new object.
    fn validate_create(&self, obj: &Value) -> ErrorList;

    /// Carries over what the client may not change and bumps generation.
    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource);

    /// Validates an update.
    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList;

    /// Whether a PUT without `metadata.resourceVersion` is allowed.
    fn allow_unconditional_update(&self) -> bool {
        false
    }

    /// Prepares an object for deletion and says whether it can go at once.
    fn before_delete(&self, obj: &mut Value) -> DeleteOutcome {
        if meta::finalizers(obj).is_empty() {
            DeleteOutcome::Immediate
        } else {
            DeleteOutcome::Graceful
        }
    }

    /// Whether a deleting object whose finalizers are gone may now be removed.
    fn ready_to_remove(&self, obj: &Value) -> bool {
        meta::finalizers(obj).is_empty()
    }

    /// How objects convert between the request and storage versions; `None` for kinds with a
    /// single version.
    fn conversion(&self) -> Option<pipeline::ConversionPlan> {
        None
    }

    /// The columns of `kubectl get` output.
    fn table_columns(&self) -> Vec<TableColumn>;

    /// The value of a field label for field selectors.
    fn field_value(&self, obj: &Value, field: &str) -> Result<String, UnsupportedField> {
        match field {
            "metadata.name" => Ok(meta::name(obj).to_string()),
            "metadata.namespace" if self.info().namespaced() => {
                Ok(meta::namespace(obj).to_string())
            }
            _ => Err(UnsupportedField),
        }
    }

    /// Whether stored bytes already at the request version can be sent as they are (with the
    /// resourceVersion spliced in): true when reads add nothing (no defaults to apply).
    fn verbatim_reads(&self) -> bool {
        false
    }

    /// Warnings about what a create (`old` is `None`) or update newly introduces.
    fn write_warnings(&self, _new: &Value, _old: Option<&Value>) -> Vec<String> {
        Vec::new()
    }

    /// Warnings every request through this strategy carries (deprecated versions).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}
