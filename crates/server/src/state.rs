//! `AppState`: what every request and controller shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crd_storage::Store;

use crate::auth::Authenticator;
use crate::conversion::ConversionOptions;
use crate::openapi::OpenApiCache;
use crate::registry::Strategy;
use crate::registry::builtin::BuiltinStrategy;
use crate::registry::crds::CrdStrategy;
use crate::registry::kinds::Kinds;
use crate::registry::migrations::MigrationStrategy;
use crate::registry::namespaces::NamespaceStrategy;
use crate::registry::reviews::ReviewStrategy;
use crate::registry::serving::Registry;

/// Shared server state.
pub struct AppState {
    /// The storage engine.
    pub store: Arc<dyn Store>,
    /// The CAs client certificates are verified against (`--client-ca-file`).
    pub client_cas: Option<Arc<crate::tls::ClientCas>>,
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
    /// Who a request is: tokens, service-account tokens, certificates, anonymous.
    pub authn: Authenticator,
    /// Who may do what.
    pub authorizer: crate::authz::Authorizer,
    /// Rendered OpenAPI documents, rebuilt when CRDs change.
    pub openapi: OpenApiCache,
    /// Rendered discovery documents (aggregated and the legacy group list), per registry
    /// generation.
    pub discovery: crate::discovery::DiscoveryCache,
    /// The audit policy and backend (`--audit-policy-file`, `--audit-log-path`), if any.
    pub auditor: Option<Arc<crate::audit::Auditor>>,
    /// Start-up and shutdown flags read by `/livez`, `/readyz`, `/healthz`.
    pub health: crate::health::HealthState,
    /// Encoded watch lines shared by this server's watchers (per server, so servers in one
    /// process never share or evict each other's lines).
    pub watch_lines: Arc<crate::watch_lines::WatchLines>,
    /// `apiserver_storage_objects`: when the counts were last taken.
    pub storage_objects_at: std::sync::Mutex<Option<std::time::Instant>>,
    ready: AtomicBool,
}

impl AppState {
    /// Builds the state around a store.
    pub fn new(store: Arc<dyn Store>, authn: Authenticator, conversion: ConversionOptions) -> Self {
        let registry = Arc::new(Registry::new(conversion.clone()));
        let namespaces = Arc::new(NamespaceStrategy::default());
        let fixed: [Arc<dyn Strategy>; 3] = [
            namespaces.clone(),
            Arc::new(CrdStrategy::new(store.clone(), registry.clone())),
            Arc::new(MigrationStrategy::default()),
        ];
        let builtin = BuiltinStrategy::all().map(|s| Arc::new(s) as Arc<dyn Strategy>);
        let reviews = ReviewStrategy::all().map(|s| Arc::new(s) as Arc<dyn Strategy>);
        let kinds = Kinds::new(fixed.into_iter().chain(builtin).chain(reviews));
        AppState {
            admission: crate::admission::Admission::new(
                store.clone(),
                namespaces.clone(),
                registry.clone(),
                webhook_sources(),
                conversion.service_addresses,
            ),
            store,
            client_cas: None,
            registry,
            namespaces,
            kinds,
            limits: crate::limits::InFlight::new(&crate::limits::Limits::default()),
            authn,
            authorizer: crate::authz::Authorizer::allow_all(),
            openapi: OpenApiCache::default(),
            discovery: crate::discovery::DiscoveryCache::default(),
            auditor: None,
            health: crate::health::HealthState::default(),
            watch_lines: Arc::default(),
            storage_objects_at: std::sync::Mutex::new(None),
            ready: AtomicBool::new(false),
        }
    }

    /// Serves the optional API versions `--runtime-config` enables (the v1beta1 CRD API's row
    /// in the kinds table; discovery and OpenAPI read the flag from the registry).
    pub fn enable_runtime_config(&mut self, config: crate::runtime_config::RuntimeConfig) {
        self.registry.set_runtime_config(config);
        if config.crd_v1beta1 {
            self.kinds.insert(Arc::new(
                crate::registry::crds_v1beta1::CrdV1beta1Strategy::new(
                    self.store.clone(),
                    self.registry.clone(),
                ),
            ));
        }
    }

    /// The service-account token issuer, when service-account tokens are on.
    pub fn token_issuer(&self) -> Option<&Arc<crate::serviceaccount::TokenIssuer>> {
        self.authn.service_accounts.as_ref().map(|s| &s.issuer)
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
