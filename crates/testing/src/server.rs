//! [`TestServer`]: `crd_server::run` on a runtime thread of its own, on 127.0.0.1 with a free
//! port, its data (store, generated CA, admin token, kubeconfig) in a temporary directory that is
//! removed once the server has stopped; plus the clients and helpers a test needs.
//!
//! The server's own runtime means a test's runtime flavour never starves it, and dropping the
//! server from inside a test (blocking until it has stopped) cannot deadlock.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::{Event, ObjectReference, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::{Client, Resource};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::builder::Builder;

/// The API group of Roles and bindings.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// How long start-up (including CRDs becoming Established) may take before it is an error.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// After shutdown begins, how long requests in flight (a controller's watches) may drain before
/// the server's runtime is dropped, closing what is left.
const STOP_GRACE: Duration = Duration::from_millis(250);

/// A running API server owned by one test. Dropping it stops the server and removes its data.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// let server = crd_apiserver_testing::TestServer::builder()
///     .authorization_modes(&["RBAC"])
///     .start()
///     .await?;
/// let admin = server.client();
/// let jane = server.client_as("jane", &["team-a"]);
/// # Ok(())
/// # }
/// ```
pub struct TestServer {
    addr: SocketAddr,
    kubeconfig: PathBuf,
    config: kube::Config,
    client: Client,
    /// The builder's webhooks by configuration or CRD name; they stop with the runtime.
    webhooks: Vec<(String, crd_webhook::WebhookHandle)>,
    running: Running,
}

/// The server thread and its data dir; dropping it stops the server, then removes the data.
struct Running {
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
    /// Removed after the server has stopped.
    dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("url", &self.url())
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Starts a server with the defaults of `crd-apiserver serve` (RBAC, anonymous requests
    /// judged by RBAC) and no CRDs.
    pub async fn start() -> anyhow::Result<TestServer> {
        Self::builder().start().await
    }

    /// A [`Builder`] for CRDs, preloaded objects and server settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) async fn launch(builder: Builder) -> anyhow::Result<TestServer> {
        #[cfg(feature = "etcd")]
        let etcd = builder.etcd.clone();
        #[cfg(not(feature = "etcd"))]
        let etcd: Option<Vec<String>> = None;
        let Builder {
            mut crds,
            objects,
            configure,
            webhooks,
            mut errors,
            ..
        } = builder;
        if !errors.is_empty() {
            return Err(errors.swap_remove(0));
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut tempdir = tempfile::Builder::new();
        tempdir.prefix("crd-apiserver-test-");
        let dir = tempdir
            .tempdir_in(scratch_root())
            .or_else(|_| tempdir.tempdir())
            .context("creating the data dir")?;
        let data = dir.path().to_path_buf();
        let mut config = default_config(&data);
        for f in configure {
            f(&mut config);
        }
        let (shutdown, rx) = watch::channel(false);
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Ready>();
        let engine = Engine::choose(&data, etcd)?;
        let thread = std::thread::Builder::new()
            .name("crd-apiserver-test".into())
            .spawn(move || serve(config, engine, rx, ready_tx))
            .context("spawning the server thread")?;
        let mut running = Running {
            shutdown,
            thread: Some(thread),
            dir: Some(dir),
        };
        let (started, runtime) = match tokio::time::timeout(START_TIMEOUT, ready_rx).await {
            Ok(Ok(ready)) => ready,
            Ok(Err(_)) => {
                // The server stopped before it was ready: its error says why.
                let thread = running.thread.take().context("the server thread")?;
                return Err(match thread.join() {
                    Ok(Err(e)) => e.context("starting the server"),
                    Ok(Ok(())) => anyhow::anyhow!("the server stopped before it was ready"),
                    Err(_) => anyhow::anyhow!("the server thread panicked"),
                });
            }
            Err(_) => anyhow::bail!("the server was not ready within {START_TIMEOUT:?}"),
        };
        let kubeconfig =
            Kubeconfig::read_from(&started.kubeconfig).context("reading kubeconfig")?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .context("loading kubeconfig")?;
        // Webhooks first: their URLs go into the CRDs and the admission configurations.
        let mut hooks = if webhooks.is_empty() {
            Vec::new()
        } else {
            let certs = crd_webhook::self_signed(&["127.0.0.1"])?;
            crate::webhooks::serve(webhooks, &certs, &runtime).await?
        };
        crate::webhooks::set_conversions(&hooks, &mut crds)?;
        let mut server = TestServer {
            addr: started.addr,
            kubeconfig: started.kubeconfig,
            client: Client::try_from(config.clone()).context("building the client")?,
            config,
            webhooks: Vec::new(),
            running,
        };
        server.install(crds).await?;
        server.preload(objects).await?;
        crate::webhooks::register(&server.client, &mut hooks, START_TIMEOUT).await?;
        server.webhooks = hooks.into_iter().map(|s| (s.name, s.handle)).collect();
        Ok(server)
    }

    /// Creates the CRDs, then waits until every one is Established (all at once: they are
    /// independent). A CRD whose names are not accepted (a conflict with another CRD) fails at
    /// once with the condition's reason and message.
    async fn install(&self, crds: Vec<CustomResourceDefinition>) -> anyhow::Result<()> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let api = &api;
        futures::future::try_join_all(crds.iter().map(|crd| async move {
            let name = crd.metadata.name.as_deref().unwrap_or_default();
            api.create(&PostParams::default(), crd)
                .await
                .with_context(|| format!("creating CRD {name}"))?;
            let established = conditions::is_crd_established();
            let settled = move |c: Option<&CustomResourceDefinition>| {
                established.matches_object(c) || names_refused(c).is_some()
            };
            let found = self.wait_for(api, name, settled, START_TIMEOUT).await?;
            if let Some((reason, message)) = names_refused(found.as_ref()) {
                anyhow::bail!(
                    "CRD {name} cannot be served: NamesAccepted=False ({reason}): {message}"
                );
            }
            Ok(())
        }))
        .await?;
        Ok(())
    }

    /// Creates the preloaded objects in order, finding each kind's resource by discovery; when
    /// RBAC objects were among them, waits until the authorizer enforces them.
    async fn preload(&self, objects: Vec<Value>) -> anyhow::Result<()> {
        let rbac = objects.iter().any(|o| {
            o.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with(RBAC_GROUP))
        });
        for object in objects {
            let field = |f: &str| {
                object
                    .get(f)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let (api_version, kind) = (field("apiVersion"), field("kind"));
            anyhow::ensure!(
                !api_version.is_empty() && !kind.is_empty(),
                "a preloaded object needs apiVersion and kind: {object}"
            );
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
            let gvk = GroupVersionKind::gvk(group, version, &kind);
            let (resource, caps) = kube::discovery::pinned_kind(&self.client, &gvk)
                .await
                .with_context(|| format!("finding the resource of {api_version} {kind}"))?;
            let object: DynamicObject = serde_json::from_value(object)?;
            let api: Api<DynamicObject> = if caps.scope == kube::discovery::Scope::Namespaced {
                let ns = object.metadata.namespace.as_deref().unwrap_or("default");
                Api::namespaced_with(self.client(), ns, &resource)
            } else {
                Api::all_with(self.client(), &resource)
            };
            api.create(&PostParams::default(), &object)
                .await
                .with_context(|| {
                    format!(
                        "preloading {kind} {}",
                        object.metadata.name.as_deref().unwrap_or_default()
                    )
                })?;
        }
        if rbac {
            self.rbac_barrier().await?;
        }
        Ok(())
    }

    /// The authorizer follows `Roles`, `ClusterRoles` and their bindings through one watch per kind,
    /// asynchronously. A sentinel of each kind, created after everything else and then seen
    /// enforced (by `SubjectAccessReviews`), proves every earlier RBAC object is enforced too.
    async fn rbac_barrier(&self) -> anyhow::Result<()> {
        let user = "crd-apiserver-testing:sentinel";
        let rule = json!([{"apiGroups": ["crd-apiserver-testing"], "resources": ["sentinels"], "verbs": ["get"]}]);
        // One user per binding kind, so that each review proves its own binding.
        let subject = |name: &str| json!([{"apiGroup": RBAC_GROUP, "kind": "User", "name": name}]);
        let role_ref = |kind: &str| json!({"apiGroup": RBAC_GROUP, "kind": kind, "name": user});
        let namespaced_user = format!("{user}:namespaced");
        let sentinels = [
            json!({"kind": "ClusterRole", "metadata": {"name": user}, "rules": rule}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": user}, "subjects": subject(user), "roleRef": role_ref("ClusterRole")}),
            json!({"kind": "Role", "metadata": {"name": user, "namespace": "default"}, "rules": rule}),
            json!({"kind": "RoleBinding", "metadata": {"name": user, "namespace": "default"}, "subjects": subject(&namespaced_user), "roleRef": role_ref("Role")}),
        ];
        let mut created = Vec::new();
        for mut sentinel in sentinels {
            sentinel["apiVersion"] = json!(format!("{RBAC_GROUP}/v1"));
            let kind = sentinel["kind"].as_str().unwrap_or_default().to_string();
            let resource = kube::discovery::ApiResource::from_gvk(&GroupVersionKind::gvk(
                RBAC_GROUP, "v1", &kind,
            ));
            let resource = kube::discovery::ApiResource {
                plural: format!("{}s", kind.to_lowercase()),
                ..resource
            };
            let api: Api<DynamicObject> = if kind.starts_with("Cluster") {
                Api::all_with(self.client(), &resource)
            } else {
                Api::namespaced_with(self.client(), "default", &resource)
            };
            api.create(&PostParams::default(), &serde_json::from_value(sentinel)?)
                .await
                .with_context(|| format!("creating the sentinel {kind}"))?;
            created.push(api);
        }
        let reviews: Api<SubjectAccessReview> = Api::all(self.client());
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        for who in [user, namespaced_user.as_str()] {
            let review: SubjectAccessReview = serde_json::from_value(json!({
                "spec": {
                    "user": who,
                    "resourceAttributes": {
                        "group": "crd-apiserver-testing", "resource": "sentinels",
                        "verb": "get", "namespace": "default",
                    },
                },
            }))?;
            loop {
                let answer = reviews.create(&PostParams::default(), &review).await?;
                if answer.status.is_some_and(|s| s.allowed) {
                    break;
                }
                anyhow::ensure!(
                    tokio::time::Instant::now() < deadline,
                    "the preloaded RBAC objects were not enforced within {START_TIMEOUT:?}"
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        for api in created.iter().rev() {
            api.delete(user, &kube::api::DeleteParams::default())
                .await?;
        }
        Ok(())
    }

    /// The server of the builder's webhook registered under `name` (the configuration's name,
    /// or the CRD's for a conversion webhook): its URL and how many reviews it was sent.
    pub fn webhook(&self, name: &str) -> Option<&crd_webhook::WebhookHandle> {
        self.webhooks
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h)
    }

    /// A client acting as the admin (`system:masters`), trusting the server's CA.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The admin client's configuration, to build clients with other settings.
    pub fn config(&self) -> &kube::Config {
        &self.config
    }

    /// A client acting as `user` in `groups` (and `system:authenticated`), for testing RBAC:
    /// the admin impersonates them, so requests are authorized exactly as that user's own.
    ///
    /// # Panics
    ///
    /// If the client cannot be built, which [`TestServer::start`] has already ruled out.
    pub fn client_as(&self, user: &str, groups: &[&str]) -> Client {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(user.to_string());
        config.auth_info.impersonate_groups =
            (!groups.is_empty()).then(|| groups.iter().map(|g| (*g).to_string()).collect());
        Client::try_from(config).expect("building an impersonating client")
    }

    /// A client authenticating with a real token of the service account `namespace/name`
    /// (created if missing), issued by the `TokenRequest` API for one hour.
    pub async fn client_as_service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<Client> {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        if accounts.get_opt(name).await?.is_none() {
            let mut sa = ServiceAccount::default();
            sa.metadata.name = Some(name.to_string());
            accounts.create(&PostParams::default(), &sa).await?;
        }
        let request = TokenRequest {
            spec: k8s_openapi::api::authentication::v1::TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..Default::default()
            },
            ..Default::default()
        };
        let token = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .context("requesting a service-account token")?
            .status
            .context("the TokenRequest has no status")?
            .token;
        let mut config = self.config.clone();
        // `AuthInfo` keeps the token as a secret string; deserializing sets it.
        config.auth_info = serde_json::from_value(serde_json::json!({ "token": token }))?;
        Ok(Client::try_from(config)?)
    }

    /// The admin kubeconfig, for kubectl or another process (`KUBECONFIG=...`): it lives in the
    /// server's data dir and is removed with it.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The data dir: store, generated CA (`ca.crt`), admin token (`tokens.csv`), kubeconfig.
    ///
    /// # Panics
    ///
    /// Never while the server is alive (the directory is only taken on drop).
    pub fn data_dir(&self) -> &Path {
        self.running.dir.as_ref().expect("the data dir").path()
    }

    /// Waits, by watching `name`, until `condition` holds and returns the object (`None` when
    /// the condition held for a deleted object, as with
    /// [`conditions::is_deleted`](kube::runtime::wait::conditions::is_deleted)). Any
    /// `Fn(Option<&K>) -> bool` is a condition. Past `timeout` it fails, showing the object as
    /// last seen.
    pub async fn wait_for<K>(
        &self,
        api: &Api<K>,
        name: &str,
        condition: impl Condition<K>,
        timeout: Duration,
    ) -> anyhow::Result<Option<K>>
    where
        K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
        K: serde::Serialize,
    {
        let watching = await_condition(api.clone(), name, condition);
        if let Ok(found) = tokio::time::timeout(timeout, watching).await {
            return found.with_context(|| format!("watching {name}"));
        }
        let last = match api.get_opt(name).await {
            Ok(Some(obj)) => serde_json::to_string_pretty(&obj)?,
            Ok(None) => "not found".to_string(),
            Err(e) => format!("unreadable: {e}"),
        };
        anyhow::bail!("{name}: condition not met within {timeout:?}; last seen: {last}")
    }

    /// The Events (core/v1, which includes those written through events.k8s.io/v1 and kube-rs's
    /// `Recorder`) about `object`, in any namespace, oldest first. Matched by UID when the
    /// object has one, else by kind, namespace and name. For objects whose dynamic type is not
    /// `Default` (`DynamicObject`, `Object<P, U>`), use [`TestServer::events_about`].
    pub async fn events_for<K>(&self, object: &K) -> anyhow::Result<Vec<Event>>
    where
        K: Resource,
        K::DynamicType: Default,
    {
        self.events_about(&object.object_ref(&K::DynamicType::default()))
            .await
    }

    /// The Events about the object `wanted` refers to (`obj.object_ref(&api_resource)`), as
    /// [`TestServer::events_for`].
    pub async fn events_about(&self, wanted: &ObjectReference) -> anyhow::Result<Vec<Event>> {
        let events: Api<Event> = Api::all(self.client());
        let mut found: Vec<Event> = events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| {
                let got = &e.involved_object;
                match &wanted.uid {
                    Some(uid) => got.uid.as_ref() == Some(uid),
                    None => {
                        got.kind == wanted.kind
                            && got.name == wanted.name
                            && got.namespace == wanted.namespace
                    }
                }
            })
            .collect();
        found.sort_by_key(|e| {
            e.event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.first_timestamp.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
        });
        Ok(found)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            // A failure after start-up has nobody to report to; the test goes on regardless.
            let _ = thread.join();
        }
        drop(self.dir.take());
    }
}

/// Where data dirs go: `$TMPDIR` when set, else `/dev/shm` when it exists (memory: a test
/// server's data dies with it, so waiting for the disk on every commit buys nothing; on a busy
/// disk it is most of the start-up time), else the system temporary directory (also when
/// `/dev/shm` is not writable).
fn scratch_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The settings `crd-apiserver serve` starts with, on a free loopback port with a generated
/// CA and admin token in `data`.
pub(crate) fn default_config(data: &Path) -> crd_server::ServerConfig {
    crd_server::ServerConfig {
        // On, as `serve` defaults; `CRD_APISERVER_WATCH_CACHE=false` turns it off.
        watch_cache: std::env::var("CRD_APISERVER_WATCH_CACHE").map_or(true, |v| v != "false"),
        ..crd_server::ServerConfig::loopback(data)
    }
}

/// The storage engine, chosen as `crd-apiserver serve` chooses it.
enum Engine {
    /// The embedded store at this path.
    Sqlite(PathBuf),
    /// etcd endpoints and this server's own key prefix.
    #[cfg(feature = "etcd")]
    Etcd {
        endpoints: Vec<String>,
        prefix: String,
    },
}

impl Engine {
    /// etcd at `chosen` endpoints (the builder's), else at `CRD_APISERVER_ETCD`'s, else SQLite.
    // With the etcd feature it cannot fail.
    #[cfg_attr(feature = "etcd", allow(clippy::unnecessary_wraps))]
    fn choose(data: &Path, chosen: Option<Vec<String>>) -> anyhow::Result<Engine> {
        let endpoints: Vec<String> = chosen.unwrap_or_else(|| {
            std::env::var(crate::ETCD_ENV)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        });
        if endpoints.is_empty() {
            return Ok(Engine::Sqlite(data.join("state.db")));
        }
        #[cfg(feature = "etcd")]
        {
            // A prefix per server keeps servers sharing one etcd apart.
            let unique = data
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Engine::Etcd {
                endpoints,
                prefix: format!("/{unique}"),
            })
        }
        #[cfg(not(feature = "etcd"))]
        anyhow::bail!(
            "{} is set but crd-apiserver-testing was built without its `etcd` feature",
            crate::ETCD_ENV
        )
    }

    // Without the etcd feature nothing here awaits.
    #[cfg_attr(not(feature = "etcd"), allow(clippy::unused_async))]
    async fn open(self) -> anyhow::Result<Arc<dyn crd_storage::Store>> {
        match self {
            Engine::Sqlite(path) => Ok(crd_storage::sqlite::SqliteStore::open(&path)
                .context("opening the embedded database")?),
            #[cfg(feature = "etcd")]
            Engine::Etcd { endpoints, prefix } => {
                let config = crd_storage::etcd::EtcdConfig {
                    endpoints,
                    prefix: prefix.clone(),
                    ca_file: None,
                    cert_file: None,
                    key_file: None,
                };
                let store = crd_storage::etcd::EtcdStore::connect(config)
                    .await
                    .context("connecting to etcd")?;
                let store = crd_storage::fanout::FanoutStore::new(store, "/registry/")
                    .await
                    .context("starting the shared etcd watch")?;
                Ok(store)
            }
        }
    }
}

/// What the server thread reports once it serves: where, and its runtime (which the webhooks
/// run on, so they never depend on the test's own runtime making progress).
type Ready = (crd_server::Started, tokio::runtime::Handle);

/// The server thread: its own runtime, the server until shutdown, then at most [`STOP_GRACE`]
/// for requests in flight before the runtime (and every connection) is dropped.
fn serve(
    config: crd_server::ServerConfig,
    engine: Engine,
    shutdown: watch::Receiver<bool>,
    ready: tokio::sync::oneshot::Sender<Ready>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the server runtime")?;
    let mut stopping = shutdown.clone();
    let handle = runtime.handle().clone();
    runtime.block_on(async move {
        let store = engine.open().await?;
        let run = crd_server::run(config, store, shutdown, move |started| {
            let _ = ready.send((started.clone(), handle));
        });
        tokio::select! {
            result = run => result,
            () = async {
                let _ = stopping.wait_for(|s| *s).await;
                tokio::time::sleep(STOP_GRACE).await;
            } => Ok(()),
        }
    })
}

/// The reason and message of a CRD's `NamesAccepted=False` condition, if it has one.
fn names_refused(crd: Option<&CustomResourceDefinition>) -> Option<(String, String)> {
    crd?.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "NamesAccepted" && c.status == "False")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}
