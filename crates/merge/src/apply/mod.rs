//! Server-side apply: field ownership as kube-apiserver tracks it in `metadata.managedFields`,
//! following kubernetes-sigs/structured-merge-diff (SMD) and apimachinery's field manager.
//!
//! - [`Schema`] compiles a JSONSchemaProps document into SMD types (granular or atomic maps and
//!   lists, sets, maps keyed by fields, deduced parts for preserved unknown fields).
//! - [`FieldSet`] is SMD's set of field paths, with the `fieldsV1` encoding.
//! - [`ManagedFields`] decodes, validates and encodes `metadata.managedFields`.
//! - [`FieldManager`] is what the server calls: [`FieldManager::update`] on create, update and
//!   non-apply patch, [`FieldManager::apply`] for apply patches, which fails with
//!   [`Conflicts`] rendered as kube-apiserver renders them.
//!
//! Every manager's paths are treated as comparable whatever apiVersion they were recorded at
//! (true for conversion `None`); see [`FieldManager`].

mod conflict;
mod fieldset;
mod managed;
mod manager;
mod schema;
mod typed;
mod value;

pub use conflict::{Conflict, Conflicts};
pub use fieldset::{FieldSet, FieldsV1Error, Path, PathElement};
pub use managed::{
    DecodeError, Entry, FIELD_MANAGER_MAX_LENGTH, MAX_SUBRESOURCE_NAME_LENGTH, ManagedFields,
    ManagerId, Operation, Violation, ViolationKind, is_reset, validate_managed_fields,
};
pub use manager::{ApplyError, DEFAULT_MAX_UPDATE_MANAGERS, FieldManager, LAST_APPLIED_ANNOTATION};
pub use schema::Schema;
pub use typed::TypeError;

#[cfg(test)]
mod tests;
