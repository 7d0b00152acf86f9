//! `AppState`: what every request and controller shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crd_storage::Store;

use crate::auth::TokenAuthenticator;
use crate::conversion::ConversionOptions;
use crate::openapi::OpenApiCache;
use crate::registry::crds::CrdStrategy;
use crate::registry::migrations::MigrationStrategy;
use crate::registry::namespaces::NamespaceStrategy;
use crate::registry::serving::Registry;

/// Shared server state.
pub struct AppState {
    /// The storage engine.
    pub store: Arc<dyn Store>,
    /// The serving state of every CRD.
    pub registry: Arc<Registry>,
    /// The CRD strategy.
    pub crds: Arc<CrdStrategy>,
    /// The namespace strategy.
    pub namespaces: Arc<NamespaceStrategy>,
    /// The StorageVersionMigration strategy.
    pub migrations: Arc<MigrationStrategy>,
    /// Bearer tokens.
    pub auth: TokenAuthenticator,
    /// Who may do what.
    pub authorizer: crate::authz::Authorizer,
    /// Rendered OpenAPI documents, rebuilt when CRDs change.
    pub openapi: OpenApiCache,
    ready: AtomicBool,
}

impl AppState {
    /// Builds the state around a store.
    pub fn new(
        store: Arc<dyn Store>,
        auth: TokenAuthenticator,
        conversion: ConversionOptions,
    ) -> Self {
        AppState {
            store,
            registry: Arc::new(Registry::new(conversion)),
            crds: Arc::new(CrdStrategy::default()),
            namespaces: Arc::new(NamespaceStrategy::default()),
            migrations: Arc::new(MigrationStrategy::default()),
            auth,
            authorizer: crate::authz::Authorizer::allow_all(),
            openapi: OpenApiCache::default(),
            ready: AtomicBool::new(false),
        }
    }

    /// Whether start-up has finished (`/readyz`).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Marks start-up as finished.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }
}
