//! Kubernetes wire vocabulary for crd-apiserver: `Status` errors, field errors, label and field
//! selectors, kube-aware version ordering, name and metadata validation, and the
//! `CustomResourceDefinition` object's own defaulting and validation.
//!
//! Architecture Invariant: this crate is pure. It does no IO and knows no HTTP, tokio or
//! storage; functions take values and return data.

pub mod crd;
pub mod field;
pub mod fields;
pub mod go_decode;
pub mod go_json;
pub mod labels;
pub mod quantity;
pub mod status;
pub mod strict;
pub mod time;
pub mod validation;
pub mod version;

pub use field::{ErrorList, ErrorType, FieldError, Path};
pub use status::{GroupResource, Status, StatusCause, StatusDetails};
