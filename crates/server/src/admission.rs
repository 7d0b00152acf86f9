//! Admission: the checks a write passes after validation and before storage. Today the built-in
//! `NamespaceLifecycle` plugin; webhooks and CEL admission policies join this chain.
//!
//! Architecture Invariant: handlers call admission through [`Admission`] only; they never ask
//! which plugins exist.

use std::sync::Arc;

use crd_core::Status;
use crd_storage::Store;
use serde_json::Value;

use crate::error::ApiError;
use crate::registry::{Strategy, meta};

/// The admission chain.
pub struct Admission {
    store: Arc<dyn Store>,
    namespaces: Arc<dyn Strategy>,
}

impl Admission {
    /// The chain, reading namespaces through their strategy.
    pub fn new(store: Arc<dyn Store>, namespaces: Arc<dyn Strategy>) -> Self {
        Admission { store, namespaces }
    }

    /// Admits the creation of `obj` through `strategy`.
    pub async fn admit_create(&self, strategy: &dyn Strategy, obj: &Value) -> Result<(), ApiError> {
        if strategy.info().namespaced() {
            namespace_lifecycle(
                self.store.as_ref(),
                self.namespaces.as_ref(),
                strategy,
                meta::namespace(obj),
                meta::name(obj),
            )
            .await?;
        }
        Ok(())
    }
}

/// The `NamespaceLifecycle` admission check: the namespace must exist and not be terminating.
async fn namespace_lifecycle(
    store: &dyn Store,
    namespaces: &dyn Strategy,
    strategy: &dyn Strategy,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let ns_info = namespaces.info();
    let gr = ns_info.group_resource();
    let kv = store
        .get(&ns_info.key(None, namespace))
        .await
        .map_err(|e| ApiError::storage(&gr, namespace, e))?
        .ok_or_else(|| Status::not_found(&gr, namespace))?;
    let ns: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
    if meta::is_deleting(&ns) {
        let mut status = Status::forbidden(
            &strategy.info().group_resource(),
            name,
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        );
        if let Some(d) = status.details.as_mut() {
            d.causes.push(crd_core::StatusCause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {namespace} is being terminated"),
                field: "metadata.namespace".into(),
            });
        }
        return Err(status.into());
    }
    Ok(())
}
