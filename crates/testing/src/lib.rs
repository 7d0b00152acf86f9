//! A test harness for Kubernetes operators: a real, Kubernetes-compatible API server inside the
//! test process, started in milliseconds, one per test.
//!
//! envtest downloads `kube-apiserver` and `etcd` and takes seconds to start, so suites share one
//! server and tests leak state into each other. [`TestServer`] runs `crd-apiserver` on its own
//! runtime thread with an embedded store in a temporary directory: every test can afford its
//! own server, and a test never sees another's objects.
//!
//! ```no_run
//! use crd_apiserver_testing::TestServer;
//! use crd_apiserver_testing::k8s_openapi::api::core::v1::ConfigMap;
//! use crd_apiserver_testing::kube::api::{Api, PostParams};
//!
//! # async fn example() -> anyhow::Result<()> {
//! let server = TestServer::start().await?;
//! let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! configmaps.create(&PostParams::default(), &cm).await?;
//! # Ok(())
//! # }
//! ```
//!
//! CRDs, preloaded objects, admission and conversion webhooks served in the test process
//! ([`Builder::validating_webhook`], [`Builder::mutating_webhook`],
//! [`Builder::conversion_webhook`]) and server settings go through [`TestServer::builder`];
//! clients acting as other users through [`TestServer::client_as`]; other processes (kubectl,
//! a Python or Go test) use [`TestServer::kubeconfig_path`].
//!
//! The storage engine is the embedded `SQLite` store. With the `etcd` feature, setting
//! `CRD_APISERVER_ETCD` to comma-separated endpoints runs every server on etcd instead, each
//! under a key prefix of its own.

mod builder;
mod crds;
mod flags;
mod server;
mod webhooks;

pub use builder::Builder;
pub use crd_server::ServerConfig;
pub use crds::{crds_from_dir, crds_from_yaml};
pub use server::TestServer;

/// The kube-rs this harness is built with: use it in tests so that versions never disagree.
pub use kube;

/// The k8s-openapi this harness is built with (feature `v1_33`).
pub use k8s_openapi;

/// The webhook library whose functions ([`webhook::Validator`], [`webhook::Mutator`],
/// [`webhook::Converter`]) the builder's webhooks take: the same functions an operator's webhook
/// binary serves with [`webhook::WebhookServer`].
pub use crd_webhook as webhook;

/// The environment variable that selects etcd: comma-separated endpoints
/// (`http://127.0.0.1:2379`). Honoured with the `etcd` feature; without it, setting the variable
/// is an error rather than a silent fallback to the embedded store.
pub const ETCD_ENV: &str = "CRD_APISERVER_ETCD";
