//! Server-side apply: field ownership as kube-apiserver tracks it in `metadata.managedFields`,
//! following kubernetes-sigs/structured-merge-diff (SMD) v4/v6 and apimachinery's field manager.
//!
//! - [`Schema`] compiles a `JSONSchemaProps` document into SMD types (granular or atomic maps
//!   and lists, sets, maps keyed by fields, deduced parts for preserved unknown fields,
//!   ObjectMeta for `metadata`).
//! - [`FieldSet`] is SMD's set of field paths, with the `fieldsV1` encoding.
//! - [`ManagedFields`] decodes, validates and encodes `metadata.managedFields`.
//! - [`merge_configuration`] merges an apply configuration without ownership (mutating
//!   admission policies).
//! - [`FieldManager`] is what the server calls: [`FieldManager::update`] on create, update and
//!   non-apply patch, [`FieldManager::apply`] for apply patches, which fails with
//!   [`Conflicts`] rendered as kube-apiserver renders them.
//!
//! What a request does, in upstream's decorator order:
//! - update: the request's managed fields are used when they decode and are not empty (`[]` and
//!   `[{}]` reset them; a subresource ignores them), else the live object's; the fields that
//!   changed become the manager's (an Update entry per manager, apiVersion and subresource,
//!   merged with its previous one, its time set only when it took fields); removed fields leave
//!   every manager; `apiVersion`, `kind` and the system `metadata` fields are never owned; at
//!   most 10 Update entries are kept (the oldest merge into `ancient-changes`).
//! - apply: the configuration is merged into the live object; the applier owns exactly its
//!   configuration's fields; fields it applied before and omits now are removed unless another
//!   manager owns them; changing a field another manager owns is a conflict unless forced
//!   (equal values are shared); an object without managed fields first gets a
//!   `before-first-apply` Update entry owning what it has; the manager `kubectl` takes over
//!   fields its client-side `last-applied-configuration` set and keeps that annotation in sync.
//!
//! Versions: every manager's paths are treated as comparable whatever apiVersion they were
//! recorded at, which holds for CRDs with conversion `None` and conversions that keep field
//! paths. Entries keep the apiVersion they were written at.

mod configuration;
mod conflict;
mod fieldset;
mod managed;
mod manager;
mod schema;
mod typed;
mod value;

pub use configuration::merge_configuration;
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
