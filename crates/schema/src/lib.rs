//! The structural-schema engine of crd-apiserver: what a CRD's `openAPIV3Schema` means for the
//! objects it describes. Pure and synchronous: values in, values and field errors out.
//!
//! # Layout
//! - [`checks`]: the rules a schema must follow when a CRD is written (structural schema,
//!   forbidden fields, list and map types, defaults), with Kubernetes' paths and messages.
//! - [`prune`]: removing unknown fields, and the unknown-field paths `fieldValidation` reports.
//! - [`default`]: applying defaults, and removing non-nullable nulls.
//! - [`validate`]: OpenAPI v3 validation of objects, with Kubernetes' messages.
//!
//! Schemas are taken as the JSON of a `JSONSchemaProps` (`serde_json::Value`).
//!
//! Architecture Invariant: this crate does no IO and knows no HTTP, async runtime or storage.

pub mod checks;
pub mod default;
pub mod prune;
pub mod validate;
