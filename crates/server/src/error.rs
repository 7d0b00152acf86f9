//! `ApiError`: every failure a request can end in, and the one place where it becomes a
//! Kubernetes `Status` and an HTTP response.
//!
//! Architecture Invariant: every error leaving the server is a `Status` body, except the plain
//! `404 page not found` that kube-apiserver's final handler sends for unknown paths.

use crd_core::{GroupResource, Status};
use crd_storage::StorageError;

/// A request failure.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A fully formed Kubernetes Status (NotFound, Invalid, Conflict, ...).
    #[error("{}", .0.message)]
    Status(Box<Status>),
    /// No handler serves this path: plain-text `404 page not found`, as kube-apiserver's
    /// not-found handler answers for unknown groups, versions and resources.
    #[error("404 page not found")]
    NoRoute,
    /// A storage failure while operating on one object.
    #[error("storage failure on {} {:?}: {}", .0.resource, .0.name, .0.source)]
    Storage(Box<StorageFailure>),
}

/// A storage error with the object it concerned, for the message.
#[derive(Debug)]
pub struct StorageFailure {
    /// The resource.
    pub resource: GroupResource,
    /// The object name.
    pub name: String,
    /// What failed.
    pub source: StorageError,
}

impl From<Status> for ApiError {
    fn from(s: Status) -> Self {
        ApiError::Status(Box::new(s))
    }
}

impl ApiError {
    /// Wraps a storage error with the object it concerned.
    pub fn storage(resource: &GroupResource, name: &str, source: StorageError) -> Self {
        ApiError::Storage(Box::new(StorageFailure {
            resource: resource.clone(),
            name: name.to_string(),
            source,
        }))
    }

    /// Whether this is a lost compare-and-swap race in storage.
    pub fn is_storage_conflict(&self) -> bool {
        matches!(self, ApiError::Storage(f) if matches!(f.source, StorageError::Conflict { .. }))
    }

    /// Whether this is a 404 `NotFound` Status (an object that does not exist).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ApiError::Status(s) if s.code == 404)
    }

    /// The Status for this error, or `None` for [`ApiError::NoRoute`].
    pub fn to_status(&self) -> Option<Status> {
        match self {
            ApiError::Status(s) => Some((**s).clone()),
            ApiError::NoRoute => None,
            ApiError::Storage(f) => Some(storage_status(&f.resource, &f.name, &f.source)),
        }
    }
}

/// Maps storage failures to the Status kube-apiserver's etcd3 store returns for them (also
/// for a watch's ERROR event, which carries the same Status).
pub(crate) fn storage_status(gr: &GroupResource, name: &str, err: &StorageError) -> Status {
    match err {
        StorageError::AlreadyExists { .. } => Status::already_exists(gr, name),
        StorageError::NotFound { .. } => Status::not_found(gr, name),
        StorageError::Conflict { .. } => Status::conflict_modified(gr, name),
        StorageError::Compacted { .. } => {
            Status::expired("The resourceVersion for the provided list is too old.")
        }
        StorageError::FutureRevision { requested, current } => {
            let mut s = Status::timeout(&format!(
                "Too large resource version: {requested}, current: {current}"
            ));
            s.details = Some(crd_core::StatusDetails {
                causes: vec![crd_core::StatusCause {
                    reason: "ResourceVersionTooLarge".into(),
                    message: "Too large resource version".into(),
                    field: String::new(),
                }],
                retry_after_seconds: Some(1),
                ..Default::default()
            });
            s
        }
        StorageError::TooLarge { limit, .. } => Status::too_large(*limit),
        StorageError::Unavailable(msg) => Status::service_unavailable(msg.clone()),
        StorageError::WatchLagged | StorageError::Engine(_) => Status::internal(err),
    }
}
