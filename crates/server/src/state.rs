//! `AppState`: what every request and controller shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crd_storage::Store;

use crate::auth::TokenAuthenticator;
use crate::conversion::ConversionOptions;
use crate::openapi::OpenApiCache;
use crate::registry::Strategy;
use crate::registry::builtin::BuiltinStrategy;
use crate::registry::crds::CrdStrategy;
use crate::registry::kinds::Kinds;
use crate::registry::migrations::MigrationStrategy;
use crate::registry::namespaces::NamespaceStrategy;
use crate::registry::serving::Registry;

/// Shared server state.
pub struct AppState {
    /// The storage engine.
    pub store: Arc<dyn Store>,
    /// The serving state of every CRD.
    pub registry: Arc<Registry>,
    /// The namespace strategy (namespace lifecycle admission and the namespace controller
    /// read namespaces through it).
    pub namespaces: Arc<NamespaceStrategy>,
    /// The kinds with fixed strategies (everything but custom resources).
    pub kinds: Kinds,
    /// The admission chain.
    pub admission: crate::admission::Admission,
    /// Requests in flight.
    pub limits: crate::limits::InFlight,
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
        let registry = Arc::new(Registry::new(conversion.clone()));
        let namespaces = Arc::new(NamespaceStrategy::default());
        let fixed: [Arc<dyn Strategy>; 3] = [
            namespaces.clone(),
            Arc::new(CrdStrategy::new(store.clone(), registry.clone())),
            Arc::new(MigrationStrategy::default()),
        ];
        let builtin = BuiltinStrategy::all().map(|s| Arc::new(s) as Arc<dyn Strategy>);
        let kinds = Kinds::new(fixed.into_iter().chain(builtin));
        AppState {
            admission: crate::admission::Admission::new(
                store.clone(),
                namespaces.clone(),
                registry.clone(),
                webhook_sources(),
                conversion.service_addresses,
            ),
            store,
            registry,
            namespaces,
            kinds,
            limits: crate::limits::InFlight::new(&crate::limits::Limits::default()),
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

/// Where admission webhook configurations are stored (their kinds' key roots).
fn webhook_sources() -> crate::admission::webhook::Sources {
    use crd_builtin::KindId;
    let root = |id| format!("{}/", crd_builtin::get(id).key_root);
    crate::admission::webhook::Sources {
        mutating: root(KindId::MutatingWebhookConfiguration),
        validating: root(KindId::ValidatingWebhookConfiguration),
    }
}
