//! `crd-apiserver`: the composition root. It parses flags, chooses the storage engine, wires
//! the server, and waits for SIGINT or SIGTERM.
//!
//! Architecture Invariant: this is the only crate that names a concrete storage engine.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// jemalloc as the global allocator (feature `jemalloc`).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// mimalloc as the global allocator (feature `mimalloc`).
#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;
mod check_upgrade;
mod client;
mod conversion_webhook;
mod crd_dir;
#[cfg(feature = "jemalloc")]
mod heap;
mod migrate;

use anyhow::Context;
use clap::{Parser, Subcommand};
use crd_server::tls::TlsSource;
use crd_server::{ServerConfig, Started};
use tokio::sync::watch;

/// A Kubernetes-compatible API server for CustomResourceDefinitions.
#[derive(Parser, Debug)]
#[command(name = "crd-apiserver", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs the API server.
    Serve(Box<ServeArgs>),
    /// Rewrites every object of a CRD at its storage version (through a StorageVersionMigration
    /// on the running server), then trims status.storedVersions.
    Migrate(AdminArgs),
    /// Shows how many objects of a CRD are stored at each version.
    StorageVersions(AdminArgs),
    /// Checks what applying a changed CRD would do to the stored objects (exit status 1 on
    /// breaking findings).
    CheckUpgrade(CheckUpgradeArgs),
    /// Runs the load generator against a fresh server and prints a table (see BENCHMARKS.md).
    Bench(bench::BenchArgs),
    /// Serves a CRD's `conversionRules` as a ConversionReview webhook (for a real cluster).
    ConversionWebhook(conversion_webhook::Args),
}

/// Arguments of the admin commands that talk to a running server.
#[derive(clap::Args, Debug)]
struct AdminArgs {
    /// The CRD, as `<plural>.<group>`.
    crd: String,
    /// The kubeconfig to use (default: `$KUBECONFIG`, else `crd-apiserver-data/kubeconfig`).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

/// Arguments of `check-upgrade`.
#[derive(clap::Args, Debug)]
struct CheckUpgradeArgs {
    /// The changed CustomResourceDefinition (YAML or JSON).
    file: PathBuf,
    /// The kubeconfig to use (default: `$KUBECONFIG`, else `crd-apiserver-data/kubeconfig`).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: check_upgrade::Output,
}

/// Flags of `serve`, named like kube-apiserver's where the concept is the same.
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Directory for the database, generated certificates, tokens and the kubeconfig.
    #[arg(long, default_value = "./crd-apiserver-data")]
    data_dir: PathBuf,
    /// Keep all data in a new temporary directory, deleted on exit (a test server): in
    /// `/dev/shm` (memory) when it exists and `$TMPDIR` is unset.
    #[arg(long, conflicts_with = "data_dir")]
    ephemeral: bool,
    /// Install every CustomResourceDefinition in this directory's `*.yaml`/`*.yml` files, and
    /// wait until they are Established, before announcing the server.
    #[arg(long)]
    crd_dir: Option<PathBuf>,
    /// Also write the admin kubeconfig to this file (written once the server is ready and the
    /// `--crd-dir` CRDs are Established, so its appearance means "ready").
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// How often a jemalloc build samples its live heap for `/metrics`
    /// (`crd_apiserver_heap_allocated_bytes`, `..._peak_bytes`), in milliseconds; 0 turns the
    /// sampler off. Each sample refreshes all of jemalloc's statistics (about 0.2M instructions),
    /// so the default is coarse; the memory bench asks for 5 ms to catch a list's peak.
    #[arg(long, default_value_t = 1000)]
    heap_sample_interval_ms: u64,
    /// The IP address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// The HTTPS port; 0 picks a free port.
    #[arg(long, default_value_t = 6443)]
    secure_port: u16,
    /// A PEM serving certificate (with `--tls-private-key-file`); by default a CA and a serving
    /// certificate are generated into the data dir.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The PEM private key of `--tls-cert-file`.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// Bearer tokens in kube-apiserver's CSV format (`token,user,uid,"group1,group2"`); by
    /// default an admin token is generated into the data dir.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// etcd endpoints (`http://127.0.0.1:2379,...`); without it, the embedded `SQLite` store in the
    /// data dir is used. Needs a build with the `etcd` feature.
    #[arg(long, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// The key prefix in etcd, as kube-apiserver's.
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    /// CA file for etcd's TLS.
    #[arg(long)]
    etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd's TLS.
    #[arg(long)]
    etcd_certfile: Option<PathBuf>,
    /// Client key for etcd's TLS.
    #[arg(long)]
    etcd_keyfile: Option<PathBuf>,
    /// Accept client certificates signed by this CA: the subject's CN is the user and its O
    /// entries are the groups, as in kube-apiserver.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// Ordered list of authorizers, comma-separated: `AlwaysAllow`, `AlwaysDeny`, `ABAC`,
    /// `Webhook`, `RBAC` (the first that allows, or a webhook that denies, decides; members of
    /// `system:masters` are always allowed).
    /// Default `RBAC`; conflicts with `--authorization-config`.
    #[arg(long, value_delimiter = ',')]
    authorization_mode: Vec<String>,
    /// An `apiserver.config.k8s.io` `AuthorizationConfiguration` file: the ordered authorizers
    /// (`RBAC`, `ABAC`, `AlwaysAllow`, `AlwaysDeny`, any number of `Webhook`s with their own
    /// timeouts, TTLs, failure policies and CEL match conditions); exclusive with
    /// `--authorization-mode` and the `--authorization-webhook-*` flags.
    #[arg(long)]
    authorization_config: Option<PathBuf>,
    /// An ABAC policy file (kube-apiserver's format, one JSON Policy per line), used with
    /// `--authorization-mode=ABAC`.
    #[arg(long)]
    authorization_policy_file: Option<PathBuf>,
    /// The kubeconfig of the `SubjectAccessReview` webhook that `--authorization-mode=Webhook`
    /// asks (its current context's cluster is the URL called).
    #[arg(long)]
    authorization_webhook_config_file: Option<PathBuf>,
    /// The `SubjectAccessReview` version sent to the authorization webhook: `v1` or `v1beta1`.
    #[arg(long, default_value = "v1beta1")]
    authorization_webhook_version: String,
    /// How long an "allowed" answer of the authorization webhook is reused (Go duration).
    #[arg(long, default_value = "5m0s", value_parser = parse_duration)]
    authorization_webhook_cache_authorized_ttl: Duration,
    /// How long any other answer of the authorization webhook is reused (Go duration).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    authorization_webhook_cache_unauthorized_ttl: Duration,
    /// The kubeconfig of a `TokenReview` webhook, asked about bearer tokens no other
    /// authenticator accepts.
    #[arg(long)]
    authentication_token_webhook_config_file: Option<PathBuf>,
    /// The `TokenReview` version sent to the token webhook: `v1` or `v1beta1`.
    #[arg(long, default_value = "v1beta1")]
    authentication_token_webhook_version: String,
    /// How long the token webhook's answers are reused (Go duration).
    #[arg(long, default_value = "2m0s", value_parser = parse_duration)]
    authentication_token_webhook_cache_ttl: Duration,
    /// Requests without credentials act as `system:anonymous` (group `system:unauthenticated`),
    /// which authorization then judges, as in kube-apiserver. A bad token is always a 401.
    /// Default `true`; an `--authentication-config` file's `anonymous` section conflicts with it.
    #[arg(long, action = clap::ArgAction::Set)]
    anonymous_auth: Option<bool>,
    /// An `apiserver.config.k8s.io` `AuthenticationConfiguration` file: JWT authenticators
    /// (several issuers, CEL claim mappings and validation rules) and the paths served to
    /// anonymous requests; exclusive with the `--oidc-*` flags.
    #[arg(long)]
    authentication_config: Option<PathBuf>,
    /// An `apiserver.config.k8s.io/v1` `EncryptionConfiguration` file: the resources it names
    /// (`secrets`, `*.apps`, `*.*`, ...) are stored encrypted with its first provider
    /// (`aescbc`, `aesgcm`, `secretbox`; `identity` for none) and read with any of them.
    #[arg(long)]
    encryption_provider_config: Option<PathBuf>,
    /// The PEM private key (PKCS#8 EC P-256 or RSA, or PKCS#1 RSA) that signs service-account
    /// tokens; by default one is generated into the data dir (`sa.key`).
    #[arg(long)]
    service_account_signing_key_file: Option<PathBuf>,
    /// More PEM keys (public or private) that verify service-account tokens (repeatable).
    #[arg(long)]
    service_account_key_file: Vec<PathBuf>,
    /// The `iss` of service-account tokens, and their default audience.
    #[arg(long, default_value = crd_server::serviceaccount::DEFAULT_ISSUER)]
    service_account_issuer: String,
    /// The audiences a service-account token must be for (default: the issuer).
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// The URL of the OpenID Connect issuer whose ID tokens authenticate (`https` only; its
    /// `/.well-known/openid-configuration` is read); needs `--oidc-client-id`.
    #[arg(long)]
    oidc_issuer_url: Option<String>,
    /// The client ID every ID token must be issued for (its `aud`).
    #[arg(long)]
    oidc_client_id: Option<String>,
    /// The CA certificates (PEM) the issuer's serving certificate is checked against; by
    /// default the system's.
    #[arg(long)]
    oidc_ca_file: Option<PathBuf>,
    /// The claim naming the user.
    #[arg(long, default_value = "sub")]
    oidc_username_claim: String,
    /// Prefixed to every username; by default, for claims other than `email`, the issuer URL
    /// and `#`; `-` for none.
    #[arg(long)]
    oidc_username_prefix: Option<String>,
    /// The claim (a string or a list of strings) naming the user's groups.
    #[arg(long)]
    oidc_groups_claim: Option<String>,
    /// Prefixed to every group of the groups claim.
    #[arg(long, default_value = "")]
    oidc_groups_prefix: String,
    /// `KEY=VALUE`: a claim every ID token must carry with that value (repeatable, or
    /// comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_required_claim)]
    oidc_required_claim: Vec<(String, String)>,
    /// The signing algorithms accepted (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "RS256")]
    oidc_signing_algs: Vec<String>,
    /// How often storage history is compacted; watches older than one to two intervals get 410.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    etcd_compaction_interval: Duration,
    /// Non-mutating requests in flight at once; more get 429 (0: no limit). Watches are not
    /// counted.
    #[arg(long, default_value_t = 400)]
    max_requests_inflight: usize,
    /// Mutating requests in flight at once; more get 429 (0: no limit).
    #[arg(long, default_value_t = 200)]
    max_mutating_requests_inflight: usize,
    /// How long a request that is not long-running (a watch, a log) may take before it is
    /// answered 504 `Timeout`; a request's `timeout` query parameter may ask for less (Go
    /// duration: `500ms`, `30s`, `1m`).
    #[arg(long, default_value = "1m0s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// The largest object stored, in bytes: etcd's default request limit, so what passes here
    /// passes on a cluster (0: only the storage engine's own limit).
    #[arg(long, default_value_t = crd_server::limits::DEFAULT_MAX_OBJECT_SIZE)]
    max_object_size: usize,
    /// How long one conversion-webhook call may take (Go duration: `500ms`, `2s`, `1m`).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    conversion_webhook_timeout: Duration,
    /// Where a webhook `service` reference is reached, as `NAMESPACE/NAME=IP:PORT` (repeatable).
    /// There is no cluster DNS: without an entry, `<name>.<namespace>.svc` is looked up in the
    /// system resolver on the service's port.
    #[arg(long = "service-address", value_parser = parse_service_address)]
    service_addresses: Vec<(String, SocketAddr)>,
    /// An audit.k8s.io/v1 Policy file; with `--audit-log-path`, requests are audited at the
    /// level its first matching rule gives.
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events are written as JSON lines (`-` for standard output).
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// Days to keep rotated audit logs (0: no limit).
    #[arg(long, default_value_t = 0)]
    audit_log_maxage: u32,
    /// Rotated audit logs to keep (0: no limit).
    #[arg(long, default_value_t = 0)]
    audit_log_maxbackup: u32,
    /// Size in megabytes at which the audit log is rotated (0: never).
    #[arg(long, default_value_t = 0)]
    audit_log_maxsize: u64,
    /// `blocking` (a request waits only while the event buffer is full), `blocking-strict`
    /// (the same here) or `batch` (events finding the buffer full are dropped and counted in
    /// `apiserver_audit_error_total`).
    #[arg(long, default_value = "blocking")]
    audit_log_mode: crd_server::audit::log::Mode,
    /// Events buffered between requests and the audit log writer.
    #[arg(long, default_value_t = 10_000)]
    audit_log_batch_buffer_size: usize,
    /// How long the server keeps serving, with `/readyz` failing, after a shutdown signal.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    shutdown_delay_duration: Duration,
    /// How long a terminating namespace waits before its content is deleted: 5s, as
    /// kube-controller-manager's namespace controller waits (`namespaceDeletionGracePeriod`), so
    /// that `kubectl delete -f` of a file that lists the namespace first deletes the rest
    /// itself. `0s` empties namespaces at once.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    namespace_deletion_grace_period: Duration,
    /// Serve gets, lists and watches from a watch cache (kube-apiserver's cacher): indexed
    /// label and name selectors, bounded watcher buffers. On by default, as upstream's
    /// `--watch-cache`; `--watch-cache=false` reads the store directly.
    #[arg(
        long,
        env = "CRD_APISERVER_WATCH_CACHE",
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    watch_cache: bool,
    /// Optional API versions to serve, as kube-apiserver's `--runtime-config`: a
    /// comma-separated list of `<group>/<version>=<bool>`. Only
    /// `apiextensions.k8s.io/v1beta1=true` (the v1beta1 CRD API of Kubernetes 1.16–1.21) changes
    /// anything; it is off by default.
    #[arg(long, default_value = "", value_parser = crd_server::runtime_config::RuntimeConfig::parse)]
    runtime_config: crd_server::runtime_config::RuntimeConfig,
}

/// Parses the Go durations users pass to kube-apiserver flags (`250ms`, `2s`, `1m30s`), as
/// `time.ParseDuration` does; a bare number is seconds, as this flag parser always took it.
fn parse_duration(s: &str) -> Result<Duration, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map(Duration::from_secs)
            .map_err(|_| format!("invalid duration {s:?}"));
    }
    let nanos = crd_core::time::parse_go_duration(s)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| format!("invalid duration {s:?}: must not be negative"))
}

/// The `--oidc-*` flags, when any is given (the server refuses them without both the issuer
/// and the client ID, and with `--authentication-config`, as kube-apiserver does).
fn oidc_options(args: &ServeArgs) -> Option<crd_server::auth::oidc::OidcOptions> {
    let any_set = args.oidc_issuer_url.is_some()
        || args.oidc_client_id.is_some()
        || args.oidc_ca_file.is_some()
        || args.oidc_username_claim != "sub"
        || args.oidc_username_prefix.is_some()
        || args.oidc_groups_claim.is_some()
        || !args.oidc_groups_prefix.is_empty()
        || !args.oidc_required_claim.is_empty()
        || args.oidc_signing_algs != ["RS256"];
    if !any_set {
        return None;
    }
    Some(crd_server::auth::oidc::OidcOptions {
        issuer_url: args.oidc_issuer_url.clone().unwrap_or_default(),
        client_id: args.oidc_client_id.clone().unwrap_or_default(),
        ca_file: args.oidc_ca_file.clone(),
        username_claim: args.oidc_username_claim.clone(),
        username_prefix: args.oidc_username_prefix.clone(),
        groups_claim: args.oidc_groups_claim.clone(),
        groups_prefix: args.oidc_groups_prefix.clone(),
        required_claims: args.oidc_required_claim.iter().cloned().collect(),
        signing_algs: args.oidc_signing_algs.clone(),
    })
}

/// Parses `KEY=VALUE` (`--oidc-required-claim`).
fn parse_required_claim(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("{s} must be formatted as key=value"))
}

/// Parses `NAMESPACE/NAME=IP:PORT`.
fn parse_service_address(s: &str) -> Result<(String, SocketAddr), String> {
    let (svc, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAMESPACE/NAME=IP:PORT"))?;
    if svc.split('/').count() != 2 {
        return Err(format!("{svc:?}: expected NAMESPACE/NAME"));
    }
    let addr = addr
        .parse()
        .map_err(|e| format!("{addr:?}: expected IP:PORT ({e})"))?;
    Ok((svc.to_string(), addr))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CRD_APISERVER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Migrate(args) => admin(args, true),
        Command::StorageVersions(args) => admin(args, false),
        Command::CheckUpgrade(args) => {
            let breaking = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async {
                    let client = client::Client::from_kubeconfig(
                        &client::Client::kubeconfig_path(args.kubeconfig),
                    )?;
                    check_upgrade::check(&client, &args.file, args.output).await
                })?;
            if breaking {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Bench(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(bench::run(args)),
        Command::ConversionWebhook(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(conversion_webhook::run(args)),
    }
}

fn admin(args: AdminArgs, migrate: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let client =
            client::Client::from_kubeconfig(&client::Client::kubeconfig_path(args.kubeconfig))?;
        if migrate {
            migrate::migrate(&client, &args.crd).await
        } else {
            migrate::storage_versions(&client, &args.crd).await
        }
    })
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    #[cfg(feature = "jemalloc")]
    heap::start(Duration::from_millis(args.heap_sample_interval_ms));
    // glibc's and mimalloc's builds have no cheap live-heap figure to sample.
    #[cfg(not(feature = "jemalloc"))]
    let _ = args.heap_sample_interval_ms;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Read before anything starts, so a bad file fails fast.
    let crds = args
        .crd_dir
        .as_deref()
        .map(crd_dir::read)
        .transpose()?
        .unwrap_or_default();
    // Removed when `serve` returns, after the server has stopped.
    let ephemeral = args
        .ephemeral
        .then(|| {
            let mut tempdir = tempfile::Builder::new();
            tempdir.prefix("crd-apiserver-");
            tempdir
                .tempdir_in(ephemeral_root())
                .or_else(|_| tempdir.tempdir())
                .context("creating the ephemeral data dir")
        })
        .transpose()?;
    let data_dir = ephemeral
        .as_ref()
        .map_or_else(|| args.data_dir.clone(), |d| d.path().to_path_buf());
    let result = runtime.block_on(async move {
        crd_storage::create_private_dir(&data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let data_dir = std::fs::canonicalize(&data_dir)?;
        let store = open_store(&args, &data_dir).await?;
        let oidc = oidc_options(&args);
        let tls = match (args.tls_cert_file, args.tls_private_key_file) {
            (Some(cert), Some(key)) => TlsSource::Files { cert, key },
            _ => TlsSource::Generated {
                dir: data_dir.clone(),
            },
        };
        let config = ServerConfig {
            bind: SocketAddr::new(args.bind_address, args.secure_port),
            data_dir: data_dir.clone(),
            tls,
            token_file: args.token_auth_file,
            compaction_interval: args.etcd_compaction_interval,
            limits: crd_server::limits::Limits {
                max_requests_inflight: args.max_requests_inflight,
                max_mutating_requests_inflight: args.max_mutating_requests_inflight,
                max_object_size: args.max_object_size,
                request_timeout: args.request_timeout,
                ..crd_server::limits::Limits::default()
            },
            client_ca_file: args.client_ca_file.clone(),
            authorization: crd_server::authz::AuthorizationOptions {
                modes: if args.authorization_mode.is_empty() {
                    vec!["RBAC".into()]
                } else {
                    args.authorization_mode.clone()
                },
                policy_file: args.authorization_policy_file.clone(),
                webhook: crd_server::authz::webhook::WebhookFlags {
                    config_file: args.authorization_webhook_config_file.clone(),
                    version: args.authorization_webhook_version.clone(),
                    authorized_ttl: args.authorization_webhook_cache_authorized_ttl,
                    unauthorized_ttl: args.authorization_webhook_cache_unauthorized_ttl,
                },
                config_file: args.authorization_config.clone(),
                flags_set: !args.authorization_mode.is_empty()
                    || args.authorization_webhook_config_file.is_some(),
            },
            token_webhook: crd_server::auth::webhook::TokenWebhookFlags {
                config_file: args.authentication_token_webhook_config_file.clone(),
                version: args.authentication_token_webhook_version.clone(),
                cache_ttl: args.authentication_token_webhook_cache_ttl,
            },
            anonymous_auth: args.anonymous_auth.unwrap_or(true),
            anonymous_auth_flag_set: args.anonymous_auth.is_some(),
            authentication_config: args.authentication_config.clone(),
            encryption_provider_config: args.encryption_provider_config.clone(),
            service_account: crd_server::serviceaccount::KeyOptions {
                signing_key_file: args.service_account_signing_key_file.clone(),
                key_files: args.service_account_key_file.clone(),
                issuer: Some(args.service_account_issuer.clone()),
            },
            api_audiences: args.api_audiences.clone(),
            conversion: crd_server::conversion::ConversionOptions {
                webhook_timeout: args.conversion_webhook_timeout,
                service_addresses: args.service_addresses.into_iter().collect(),
            },
            audit: crd_server::audit::AuditOptions {
                policy_file: args.audit_policy_file,
                log: args
                    .audit_log_path
                    .map(|path| crd_server::audit::log::LogOptions {
                        path,
                        max_age_days: args.audit_log_maxage,
                        max_backups: args.audit_log_maxbackup,
                        max_size_mb: args.audit_log_maxsize,
                        mode: args.audit_log_mode,
                        buffer_size: args.audit_log_batch_buffer_size,
                    }),
            },
            shutdown_delay: args.shutdown_delay_duration,
            namespace_deletion_grace: args.namespace_deletion_grace_period,
            watch_cache: args.watch_cache,
            runtime_config: args.runtime_config,
            oidc,
        };
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            let _ = tx.send(true);
        });
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Started>();
        let server = tokio::spawn(crd_server::run(config, store, rx, move |s: &Started| {
            let _ = ready_tx.send(s.clone());
        }));
        // Announced only once CRDs are installed: whoever waits for the kubeconfig sees them.
        if let Ok(started) = ready_rx.await {
            if !crds.is_empty() {
                let client = client::Client::from_kubeconfig(&started.kubeconfig)?;
                crd_dir::install(&client, &crds).await?;
            }
            if let Some(out) = &args.kubeconfig_out {
                std::fs::copy(&started.kubeconfig, out)
                    .with_context(|| format!("writing --kubeconfig-out {}", out.display()))?;
            }
            println!("crd-apiserver listening on https://{}", started.addr);
            println!("export KUBECONFIG={}", started.kubeconfig.display());
        }
        server.await?
    });
    // Every task stopped before the ephemeral data dir goes.
    drop(runtime);
    drop(ephemeral);
    result
}

/// Where `--ephemeral` keeps its data: `$TMPDIR` when set, else `/dev/shm` when it exists (in
/// memory: the data is deleted on exit anyway, so commits need not wait for the disk), else the
/// system temporary directory (also when `/dev/shm` is not writable).
fn ephemeral_root() -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The storage engine: etcd when `--etcd-servers` is given, else the embedded SQLite store.
// Without the etcd feature nothing here awaits.
#[cfg_attr(not(feature = "etcd"), allow(clippy::unused_async))]
async fn open_store(
    args: &ServeArgs,
    data_dir: &std::path::Path,
) -> anyhow::Result<Arc<dyn crd_storage::Store>> {
    if args.etcd_servers.is_empty() {
        let store = crd_storage::sqlite::SqliteStore::open(&data_dir.join("state.db"))
            .context("opening the embedded database")?;
        return Ok(store);
    }
    #[cfg(feature = "etcd")]
    {
        let config = crd_storage::etcd::EtcdConfig {
            endpoints: args.etcd_servers.clone(),
            prefix: args.etcd_prefix.clone(),
            ca_file: args.etcd_cafile.clone(),
            cert_file: args.etcd_certfile.clone(),
            key_file: args.etcd_keyfile.clone(),
        };
        let store = crd_storage::etcd::EtcdStore::connect(config)
            .await
            .context("connecting to etcd")?;
        // One etcd watch serves every client watch that starts from now.
        let store = crd_storage::fanout::FanoutStore::new(store, "/registry/")
            .await
            .context("starting the shared etcd watch")?;
        Ok(store)
    }
    #[cfg(not(feature = "etcd"))]
    {
        let _ = (
            &args.etcd_prefix,
            &args.etcd_cafile,
            &args.etcd_certfile,
            &args.etcd_keyfile,
        );
        anyhow::bail!(
            "--etcd-servers needs a build with the etcd feature (cargo build --release --features etcd)"
        )
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// Regression: two bench scenarios once both declared `--objects`, which clap only refuses
    /// when the command line is parsed, so every `crd-apiserver` invocation would have panicked.
    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
