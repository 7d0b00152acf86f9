//! The crd-apiserver API server as a library: a Kubernetes-compatible server for
//! CustomResourceDefinitions and their objects, over any [`crd_storage::Store`].
//!
//! # Layout (lowest layer first; `tests/module_graph.rs` keeps it a DAG)
//! - [`error`], [`version`], [`body`], [`table`], [`auth`], [`protobuf`], [`limits`],
//!   [`runtime_config`]: the vocabulary every layer shares.
//! - [`webhook`] (the HTTPS client of conversion and admission webhooks).
//! - [`request`] (route, typed options, negotiation), [`tls`], [`authz`] (the
//!   `--authorization-mode` union: `AlwaysAllow`, ABAC, RBAC),
//!   [`conversion`] (conversion webhooks), [`kubeconfig`].
//! - [`registry`]: per-kind strategies, the kinds table, the CRD registry, the custom-object
//!   pipeline.
//! - [`controllers`] (CRD naming/establishing/cleanup, namespace cleanup, garbage collection,
//!   the RBAC policy and `ClusterRole` aggregation,
//!   storage-version migration, compaction, on informers), [`discovery`], [`openapi`].
//! - [`admission`] (NamespaceLifecycle, admission webhooks; its configuration informers come
//!   from `controllers`).
//! - [`state`]: what requests share.
//! - [`handlers`]: one module per verb, generic over a [`registry::Strategy`], and field
//!   ownership (server-side apply).
//! - [`http`]: the accept loop, filters, non-resource endpoints, rendering.
//!
//! Architecture Invariant: only the CLI chooses a concrete storage engine; this crate sees
//! `Arc<dyn Store>`.

pub mod admission;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod body;
pub mod config_file;
pub mod controllers;
pub mod conversion;
pub mod crd_files;
pub mod discovery;
pub mod encryption_config;
pub mod error;
pub mod handlers;
pub mod health;
pub mod http;
pub mod jsonpath;
pub mod kubeconfig;
pub mod limits;
pub mod metered_store;
pub mod metrics;
pub mod openapi;
pub mod openapi_pb;
pub mod protobuf;
pub mod registry;
pub mod request;
pub mod runtime_config;
pub mod serviceaccount;
pub mod state;
pub mod table;
pub mod tls;
pub mod version;
pub mod watch_cache;
pub mod watch_lines;
pub mod webhook;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use crd_storage::Store;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::TokenAuthenticator;
use crate::controllers::crds::CrdController;
use crate::controllers::gc::GarbageCollector;
use crate::controllers::namespaces::NamespaceController;
use crate::controllers::supervisor::Supervisor;
use crate::state::AppState;
use crate::tls::TlsSource;

/// How the server is set up.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen (`--bind-address`, `--secure-port`; port 0 picks a free one).
    pub bind: SocketAddr,
    /// The data dir: generated certificates, tokens and the kubeconfig live here.
    pub data_dir: PathBuf,
    /// The serving certificate.
    pub tls: TlsSource,
    /// `--token-auth-file`; `None` generates an admin token into the data dir.
    pub token_file: Option<PathBuf>,
    /// Conversion-webhook settings (timeout, service addresses).
    pub conversion: conversion::ConversionOptions,
    /// `--client-ca-file`: accept client certificates signed by this CA.
    pub client_ca_file: Option<PathBuf>,
    /// `--authorization-mode`, `--authorization-policy-file`, `--authorization-webhook-*` or
    /// `--authorization-config`: which authorizers decide, in order.
    pub authorization: authz::AuthorizationOptions,
    /// `--authentication-token-webhook-*`: the webhook asked about bearer tokens.
    pub token_webhook: auth::webhook::TokenWebhookFlags,
    /// `--etcd-compaction-interval`: how often storage history is compacted.
    pub compaction_interval: std::time::Duration,
    /// Bounds on connections and requests in flight.
    pub limits: limits::Limits,
    /// `--anonymous-auth`: requests without credentials act as `system:anonymous`.
    pub anonymous_auth: bool,
    /// Service-account token keys and issuer.
    pub service_account: serviceaccount::KeyOptions,
    /// `--api-audiences`: the audiences a service-account token must be for (default: the
    /// issuer).
    pub api_audiences: Vec<String>,
    /// `--audit-policy-file` and `--audit-log-*`.
    pub audit: audit::AuditOptions,
    /// `--shutdown-delay-duration`: how long the server keeps accepting, with `/readyz`
    /// failing, after shutdown begins.
    pub shutdown_delay: std::time::Duration,
    /// `--watch-cache`: serve gets, lists and watches from a watch cache over the store
    /// (`watch_cache`), as kube-apiserver does.
    pub watch_cache: bool,
    /// `--runtime-config`: the optional API versions served (`apiextensions.k8s.io/v1beta1`).
    pub runtime_config: runtime_config::RuntimeConfig,
    /// `--namespace-deletion-grace-period`: how long a terminating namespace waits before its
    /// content is deleted (kube-controller-manager waits 5 s).
    pub namespace_deletion_grace: std::time::Duration,
    /// `--oidc-*`: ID tokens of one OpenID Connect issuer authenticate (none when `None`).
    pub oidc: Option<auth::oidc::OidcOptions>,
    /// `--authentication-config`: an `AuthenticationConfiguration` file (JWT authenticators,
    /// anonymous paths); exclusive with `oidc`.
    pub authentication_config: Option<PathBuf>,
    /// Whether `--anonymous-auth` was given (a file's `anonymous` section then conflicts).
    pub anonymous_auth_flag_set: bool,
    /// `--encryption-provider-config`: an `EncryptionConfiguration` file; the resources it
    /// names are stored encrypted.
    pub encryption_provider_config: Option<PathBuf>,
}

impl ServerConfig {
    /// A server on 127.0.0.1 at a free port with a generated CA and admin token in `data_dir`,
    /// RBAC with anonymous requests allowed, the watch cache on, namespaces emptied as soon as
    /// they terminate (no grace period: tests wait for no one) and every other setting at its
    /// default: where the test harness and the HTTP suite start from.
    #[must_use]
    pub fn loopback(data_dir: &std::path::Path) -> Self {
        ServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.to_path_buf(),
            tls: TlsSource::Generated {
                dir: data_dir.to_path_buf(),
            },
            token_file: None,
            conversion: conversion::ConversionOptions::default(),
            client_ca_file: None,
            authorization: authz::AuthorizationOptions::default(),
            token_webhook: auth::webhook::TokenWebhookFlags::default(),
            compaction_interval: controllers::compaction::INTERVAL,
            limits: limits::Limits::default(),
            anonymous_auth: true,
            service_account: serviceaccount::KeyOptions::default(),
            api_audiences: Vec::new(),
            audit: audit::AuditOptions::default(),
            shutdown_delay: std::time::Duration::ZERO,
            watch_cache: true,
            runtime_config: runtime_config::RuntimeConfig::default(),
            namespace_deletion_grace: std::time::Duration::ZERO,
            oidc: None,
            authentication_config: None,
            anonymous_auth_flag_set: false,
            encryption_provider_config: None,
        }
    }
}

/// The service-account issuer, which no JWT authenticator may claim.
fn sa_issuer(config: &ServerConfig) -> String {
    config
        .service_account
        .issuer
        .clone()
        .unwrap_or_else(|| serviceaccount::DEFAULT_ISSUER.to_string())
}

/// How often the authentication and authorization configuration files are read again
/// (kube-apiserver: every minute and on change notifications).
const AUTHN_CONFIG_RELOAD: std::time::Duration = std::time::Duration::from_secs(2);

/// A configuration file kube-apiserver reloads while it runs: which one (for logs), and how a
/// changed text is put in effect (`Err`: refused, the configuration in effect stays).
struct Reloaded {
    what: &'static str,
    apply: Box<ApplyConfig>,
    count: fn(bool),
}

/// Puts a configuration file's new text in effect.
type ApplyConfig = dyn Fn(&AppState, &str) -> Result<(), String> + Send + Sync;

/// Re-reads `path` every [`AUTHN_CONFIG_RELOAD`] while the server runs and applies a changed
/// text, as kube-apiserver reloads its authentication and authorization configuration files:
/// each outcome is logged and counted; a refused file is tried again only once it changes.
async fn reload_config_file(
    state: std::sync::Weak<AppState>,
    path: PathBuf,
    mut seen: String,
    file: Reloaded,
) {
    loop {
        tokio::time::sleep(AUTHN_CONFIG_RELOAD).await;
        let Some(state) = state.upgrade() else {
            return;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            tracing::error!(path = %path.display(), "failed to read {} file", file.what);
            continue;
        };
        if text == seen {
            continue;
        }
        seen.clone_from(&text);
        match (file.apply)(&state, &text) {
            Ok(()) => {
                (file.count)(true);
                tracing::info!(path = %path.display(), "reloaded {}", file.what);
            }
            Err(e) => {
                (file.count)(false);
                tracing::error!(path = %path.display(), error = %e, "failed to load {}", file.what);
            }
        }
    }
}

/// The authentication configuration's reload: a changed, valid file replaces the JWT
/// authenticators; one whose `anonymous` section changed is refused.
fn authentication_reload(
    sa_issuer: String,
    anonymous: Option<auth::authn_config::AnonymousConfig>,
) -> Reloaded {
    Reloaded {
        what: "authentication config",
        count: metrics::authentication_config_reload,
        apply: Box::new(move |state, text| {
            let file = auth::authn_config::AuthenticationConfig::parse(
                text,
                std::slice::from_ref(&sa_issuer),
            )
            .map_err(|e| match e {
                auth::authn_config::ConfigError::Load(m)
                | auth::authn_config::ConfigError::Invalid(m) => m,
            })?;
            if file.anonymous != anonymous {
                return Err("anonymous: Forbidden: changed from initial configuration file".into());
            }
            state
                .authn
                .jwt
                .replace(auth::oidc::OidcAuthenticator::all(file.jwt)?);
            Ok(())
        }),
    }
}

/// The authorization configuration's reload: a changed, valid file replaces the authorizers
/// (a decision in flight finishes with the old ones).
fn authorization_reload(
    options: authz::AuthorizationOptions,
    rbac: Arc<authz::rbac::RbacAuthorizer>,
) -> Reloaded {
    Reloaded {
        what: "authorization config",
        count: metrics::authorization_config_reload,
        apply: Box::new(move |state, text| {
            let authorizer = options
                .from_config_text(text, &rbac)
                .map_err(|e| e.to_string())?;
            state.authorizer.adopt(&authorizer);
            Ok(())
        }),
    }
}

/// The JWT authenticators of `--oidc-*` or `--authentication-config`, and the file's
/// `anonymous` section, checked as kube-apiserver checks them (`Err` is its message).
fn jwt_authenticators(config: &ServerConfig) -> anyhow::Result<JwtSetup> {
    let Some(path) = &config.authentication_config else {
        let jwt = config
            .oidc
            .as_ref()
            .map(|o| o.to_jwt().and_then(auth::oidc::OidcAuthenticator::new))
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?;
        return Ok(JwtSetup {
            jwt: jwt.into_iter().collect(),
            anonymous: None,
            file_text: None,
        });
    };
    if config.oidc.is_some() {
        anyhow::bail!("authentication-config file and oidc-* flags are mutually exclusive");
    }
    let load = |e: String| {
        anyhow::anyhow!(
            "failed to load authentication configuration from file {:?}: {e}",
            path.display().to_string()
        )
    };
    let text = std::fs::read_to_string(path).map_err(|e| load(e.to_string()))?;
    let file = auth::authn_config::AuthenticationConfig::parse(&text, &[sa_issuer(config)])
        .map_err(|e| match e {
            auth::authn_config::ConfigError::Load(m) => load(m),
            auth::authn_config::ConfigError::Invalid(m) => {
                anyhow::anyhow!("invalid authentication configuration: {m}")
            }
        })?;
    if file.anonymous.is_some() && config.anonymous_auth_flag_set {
        anyhow::bail!(
            "anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file"
        );
    }
    let jwt = auth::oidc::OidcAuthenticator::all(file.jwt).map_err(|e| anyhow::anyhow!(e))?;
    Ok(JwtSetup {
        jwt,
        anonymous: file.anonymous,
        file_text: Some(text),
    })
}

/// What [`jwt_authenticators`] sets up: the authenticators, a file's `anonymous` section, and
/// the file's text as read (what its reload compares with).
struct JwtSetup {
    jwt: Vec<Arc<auth::oidc::OidcAuthenticator>>,
    anonymous: Option<auth::authn_config::AnonymousConfig>,
    file_text: Option<String>,
}

/// What a started server tells its caller.
#[derive(Clone, Debug)]
pub struct Started {
    /// The address actually listened on.
    pub addr: SocketAddr,
    /// The kubeconfig written for the admin user.
    pub kubeconfig: PathBuf,
}

/// Runs the server until `shutdown` becomes true. The port answers as soon as the controllers
/// have started (`/readyz` failing until start-up has finished); `on_ready` is called once the
/// kubeconfig is written and `/readyz` answers ok.
pub async fn run(
    config: ServerConfig,
    store: Arc<dyn Store>,
    shutdown: watch::Receiver<bool>,
    on_ready: impl FnOnce(&Started),
) -> anyhow::Result<()> {
    let store: Arc<dyn Store> = Arc::new(metered_store::MeteredStore::new(store));
    // Above the meter (which times the engine alone), below the cache (which holds plain
    // objects).
    let store = match &config.encryption_provider_config {
        None => store,
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!("reading --encryption-provider-config {}", path.display())
            })?;
            let encryption = encryption_config::EncryptionConfig::parse(&text)
                .map_err(|e| anyhow::anyhow!(e))?;
            let resolve = encryption.resolve();
            Arc::new(crd_storage::encryption::EncryptedStore::new(store, resolve))
        }
    };
    // Above the meter, so that only the calls that reach the engine are timed.
    let store = if config.watch_cache {
        watch_cache::wrap(store, Some(Arc::new(metrics::WatchCacheMetrics)))
    } else {
        store
    };
    crd_storage::create_private_dir(&config.data_dir)
        .with_context(|| format!("creating data dir {}", config.data_dir.display()))?;
    let tls = tls::load_or_generate(&config.tls, config.client_ca_file.as_deref())?;
    let rbac = authz::rbac::RbacAuthorizer::new();
    let authorizer = config.authorization.build(&rbac)?;
    let (auth, admin_token) = if let Some(path) = &config.token_file {
        // The kubeconfig carries the file's first `system:masters` token, if it has one.
        let auth = TokenAuthenticator::from_file(path)?;
        let admin = auth.admin_token().map(String::from);
        (auth, admin)
    } else {
        let (auth, token) = kubeconfig::admin_token(&config.data_dir)?;
        (auth, Some(token))
    };
    // Refused flags stop start-up before the port opens, as kube-apiserver's option checks.
    let JwtSetup {
        jwt,
        anonymous,
        file_text,
    } = jwt_authenticators(&config)?;
    let listener = TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("binding {}", config.bind))?;
    let addr = listener.local_addr()?;
    if config.service_account.signing_key_file.is_none() {
        let key = config.data_dir.join("sa.key");
        if !key.exists() {
            tls::write_private(&key, serviceaccount::generate_key()?.as_bytes())?;
        }
    }
    let issuer = Arc::new(serviceaccount::TokenIssuer::load(
        &config.service_account,
        &config.data_dir,
    )?);
    let audiences = if config.api_audiences.is_empty() {
        vec![issuer.issuer().to_string()]
    } else {
        config.api_audiences.clone()
    };
    let authn = auth::Authenticator {
        tokens: auth,
        service_accounts: Some(auth::ServiceAccountTokens {
            issuer,
            audiences,
            store: store.clone(),
        }),
        anonymous: anonymous
            .as_ref()
            .map_or(config.anonymous_auth, |a| a.enabled),
        anonymous_paths: anonymous.clone().map(|a| a.paths).unwrap_or_default(),
        jwt: auth::JwtAuthenticators::default(),
        token_webhook: auth::webhook::TokenWebhook::from_flags(&config.token_webhook)?
            .map(Arc::new),
    };
    authn.jwt.replace(jwt);
    let mut state = AppState::new(store.clone(), authn, config.conversion.clone());
    state.admission.set_authorizer(&authorizer);
    state.authorizer = authorizer;
    state.limits = limits::InFlight::new(&config.limits);
    state.auditor = audit::Auditor::start(&config.audit)?;
    state.enable_runtime_config(config.runtime_config);
    state.client_cas.clone_from(&tls.client_cas);
    let state = Arc::new(state);
    if let (Some(path), Some(text)) = (&config.authentication_config, file_text) {
        tokio::spawn(reload_config_file(
            Arc::downgrade(&state),
            path.clone(),
            text,
            authentication_reload(sa_issuer(&config), anonymous),
        ));
    }

    if let Some(path) = &config.authorization.config_file {
        let seen = std::fs::read_to_string(path).unwrap_or_default();
        tokio::spawn(reload_config_file(
            Arc::downgrade(&state),
            path.clone(),
            seen,
            authorization_reload(config.authorization.clone(), rbac.clone()),
        ));
    }

    controllers::namespaces_bootstrap(store.as_ref()).await?;
    controllers::kubernetes_service::bootstrap(store.as_ref(), addr).await?;
    // The `rbac/bootstrap-roles` post-start hook: default roles before anyone is served.
    controllers::rbac::bootstrap(store.as_ref())
        .await
        .context("reconciling the bootstrap RBAC policy")?;
    let rbac_controller = controllers::rbac::RbacController::new(store.clone(), rbac);
    let mut rbac_synced = rbac_controller.synced();
    let crds = CrdController::new(store.clone(), state.registry.clone());
    let mut crds_synced = crds.synced();
    // Controllers (and the informers RBAC and the registry read) run until the HTTP server has
    // stopped serving, so requests during `--shutdown-delay-duration` are still authorized and
    // routed; a shutdown during start-up stops them when this function returns.
    let (stop_controllers, controllers_shutdown) = watch::channel(false);
    let _stop_controllers = StopOnDrop(stop_controllers);
    let mut supervisor = Supervisor::new(controllers_shutdown);
    supervisor.spawn("customresourcedefinitions", move |shutdown| {
        crds.clone().run(shutdown)
    });
    let namespaces = NamespaceController::new(
        store.clone(),
        state.registry.clone(),
        state.kinds.namespaced_key_roots(),
        config.namespace_deletion_grace,
    );
    supervisor.spawn("rbac", move |shutdown| {
        rbac_controller.clone().run(shutdown)
    });
    supervisor.spawn("namespaces", move |shutdown| {
        namespaces.clone().run(shutdown)
    });
    let defaults =
        controllers::namespace_defaults::NamespaceDefaults::new(store.clone(), tls.ca_pem.clone());
    supervisor.spawn("serviceaccount", move |shutdown| {
        defaults.clone().run(shutdown)
    });
    let local_versions = discovery::local_group_versions(&state.registry)
        .into_iter()
        .map(|(group, version, group_priority, version_priority)| {
            controllers::apiservices::LocalVersion {
                group,
                version,
                group_priority,
                version_priority,
            }
        })
        .collect();
    let api_services = controllers::apiservices::ApiServices::new(store.clone(), local_versions);
    supervisor.spawn("apiservice-registration", move |shutdown| {
        api_services.clone().run(shutdown)
    });
    let gc = GarbageCollector::new(
        store.clone(),
        state.registry.clone(),
        state.kinds.all().cloned().collect(),
        crds_synced.clone(),
    );
    supervisor.spawn("garbagecollector", move |shutdown| gc.clone().run(shutdown));
    let (migration_store, registry) = (store.clone(), state.registry.clone());
    let synced = crds_synced.clone();
    supervisor.spawn("storageversionmigrations", move |shutdown| {
        controllers::migration::run(
            migration_store.clone(),
            registry.clone(),
            synced.clone(),
            shutdown,
        )
    });
    let webhooks = state.admission.webhooks.clone();
    let mut webhooks_synced = webhooks.synced();
    supervisor.spawn("admission-webhooks", move |shutdown| {
        webhooks.clone().run(shutdown)
    });
    let policies = state.admission.policies.clone();
    let mut policies_synced = policies.synced();
    supervisor.spawn("admission-policies", move |shutdown| {
        policies.clone().run(shutdown)
    });
    let policy_status = controllers::policy_status::PolicyStatusController::new(
        store.clone(),
        state.registry.clone(),
        admission::policy::Sources::builtin().policies,
    );
    supervisor.spawn("validatingadmissionpolicy-status", move |shutdown| {
        policy_status.clone().run(shutdown)
    });
    let mutating_policies = state.admission.mutating_policies.clone();
    let mut mutating_synced = mutating_policies.synced();
    supervisor.spawn("mutating-admission-policies", move |shutdown| {
        mutating_policies.clone().run(shutdown)
    });
    let service_store = store.clone();
    supervisor.spawn("kubernetes-service", move |shutdown| {
        let store = service_store.clone();
        async move {
            controllers::kubernetes_service::run(store, addr, shutdown).await;
            Ok(())
        }
    });
    let interval = config.compaction_interval;
    supervisor.spawn("compaction", move |shutdown| {
        let store = store.clone();
        async move {
            controllers::compaction::run(store, interval, shutdown).await;
            Ok(())
        }
    });
    tokio::spawn(supervisor.run());
    state.health.set_controllers_started();
    // The port answers from now on, as kube-apiserver's does: `/readyz` fails and resources are
    // 503 until every stored CRD is served and the policy and admission informers have synced.
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config);
    let serving = tokio::spawn(http::serve(
        listener,
        acceptor,
        state.clone(),
        config.limits.max_connections.max(1),
        shutdown.clone(),
        config.shutdown_delay,
    ));
    let started = wait_until_synced(
        shutdown.clone(),
        &mut crds_synced,
        &mut rbac_synced,
        &mut webhooks_synced,
        &mut policies_synced,
        &mut mutating_synced,
    )
    .await;
    match started {
        Ok(true) => {
            // Requests are served before `/readyz` passes: a client that saw it pass is served.
            state.set_ready();
            state.health.set_crd_informer_synced();
            let kubeconfig = config.data_dir.join("kubeconfig");
            kubeconfig::write(&kubeconfig, addr, &tls.ca_pem, admin_token.as_deref())?;
            on_ready(&Started { addr, kubeconfig });
        }
        // Shutdown came first: the server stops (it drains what it accepted).
        Ok(false) => {}
        Err(e) => return Err(e),
    }
    match serving.await {
        Ok(()) => Ok(()),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the HTTP server task failed: {e}")),
    }
}

/// Waits until every stored CRD is served (the first list, reconciled), the RBAC policy is
/// complete (roles and bindings in memory), and webhook and policy admission have listed their
/// configurations. `Ok(false)` when shutdown comes first.
async fn wait_until_synced(
    shutdown: watch::Receiver<bool>,
    crds: &mut watch::Receiver<bool>,
    rbac: &mut watch::Receiver<bool>,
    webhooks: &mut watch::Receiver<bool>,
    policies: &mut watch::Receiver<bool>,
    mutating_policies: &mut watch::Receiver<bool>,
) -> anyhow::Result<bool> {
    let mut waiting = shutdown;
    match controllers::informer::until_shutdown(&mut waiting, crds.wait_for(|s| *s)).await {
        None => return Ok(false),
        Some(synced) => {
            synced.context("loading CRDs")?;
        }
    }
    for other in [rbac, webhooks, policies, mutating_policies] {
        if controllers::informer::until_shutdown(&mut waiting, other.wait_for(|s| *s))
            .await
            .is_none()
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Sends `true` when dropped: the controllers' shutdown signal, after the server stops.
struct StopOnDrop(watch::Sender<bool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}
