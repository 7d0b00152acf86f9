//! `TestServer`: [`crd_server::run`] inside the test process, on 127.0.0.1 with a free port and a
//! SQLite store in a temporary directory, plus an HTTPS client that trusts the generated CA and
//! sends the admin token. Dropping the server shuts it down and waits for it.
//!
//! The server runs on its own runtime in its own thread, so a test's runtime flavour never
//! starves it and a test can block (or stop the server) without deadlocking.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crd_server::{ServerConfig, Started};
use crd_storage::sqlite::SqliteStore;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::watch;

/// How long any wait for the server may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A running in-process server.
pub struct TestServer {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The admin bearer token.
    pub token: String,
    /// The generated CA, PEM.
    pub ca_pem: Vec<u8>,
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Removed after the server has stopped.
    dir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// Starts a server with the defaults `crd-apiserver serve` uses.
    pub async fn start() -> TestServer {
        TestServer::start_with(|_| {}).await
    }

    /// Starts a server after `configure` has adjusted its configuration.
    pub async fn start_with(configure: impl FnOnce(&mut ServerConfig)) -> TestServer {
        TestServer::start_inner(configure, |store| store, true).await
    }

    /// Starts a server whose users are the lines of a static token file (`token,user,uid,
    /// "groups"`), so that tests can act as users RBAC knows nothing about.
    pub async fn start_with_tokens(lines: &str) -> TestServer {
        let lines = lines.to_string();
        TestServer::start_with(move |c| {
            std::fs::create_dir_all(&c.data_dir).unwrap();
            let tokens = c.data_dir.join("tokens.csv");
            std::fs::write(&tokens, lines).unwrap();
            c.token_file = Some(tokens);
        })
        .await
    }

    /// Starts a server that writes an audit log with the policy `policy` (YAML), and the log.
    pub async fn start_audited(policy: &str) -> (TestServer, AuditLog) {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy_file = dir.path().join("policy.yaml");
        std::fs::write(&policy_file, policy).expect("policy written");
        let path = dir.path().join("audit.log");
        let log_path = path.clone();
        let server = TestServer::start_with(move |c| {
            c.audit = crd_server::audit::AuditOptions {
                policy_file: Some(policy_file),
                log: Some(crd_server::audit::log::LogOptions {
                    path: log_path,
                    ..Default::default()
                }),
            };
        })
        .await;
        (server, AuditLog { _dir: dir, path })
    }

    /// Starts a server over `wrap(the SQLite store)` and returns as soon as its port accepts
    /// connections, without waiting until it is ready (start-up behaviour).
    pub async fn start_unready(
        wrap: impl FnOnce(Arc<dyn crd_storage::Store>) -> Arc<dyn crd_storage::Store> + Send + 'static,
    ) -> TestServer {
        TestServer::start_inner(|_| {}, wrap, false).await
    }

    /// Starts a server over `wrap(the SQLite store)` after `configure`, and waits until it is
    /// ready.
    pub async fn start_wrapped(
        configure: impl FnOnce(&mut ServerConfig),
        wrap: impl FnOnce(Arc<dyn crd_storage::Store>) -> Arc<dyn crd_storage::Store> + Send + 'static,
    ) -> TestServer {
        TestServer::start_inner(configure, wrap, true).await
    }

    async fn start_inner(
        configure: impl FnOnce(&mut ServerConfig),
        wrap: impl FnOnce(Arc<dyn crd_storage::Store>) -> Arc<dyn crd_storage::Store> + Send + 'static,
        wait_ready: bool,
    ) -> TestServer {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let mut config = ServerConfig {
            // On, as `serve` defaults; `CRD_APISERVER_WATCH_CACHE=false` runs the suite without.
            watch_cache: std::env::var("CRD_APISERVER_WATCH_CACHE").map_or(true, |v| v != "false"),
            ..ServerConfig::loopback(&data)
        };
        if !wait_ready {
            // The address must be known before the server reports it: a port free just now.
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            config.bind = probe.local_addr().expect("probe address");
        }
        configure(&mut config);
        let bind = config.bind;
        let (shutdown, rx) = watch::channel(false);
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Started>();
        let store_path = data.join("state.db");
        let thread = std::thread::Builder::new()
            .name("crd-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(async move {
                    let store = SqliteStore::open(&store_path).expect("opening the store");
                    let store: Arc<dyn crd_storage::Store> = wrap(store);
                    crd_server::run(config, store, rx, move |started: &Started| {
                        let _ = ready_tx.send(started.clone());
                    })
                    .await
                    .expect("the server failed");
                });
            })
            .expect("spawning the server thread");
        let addr = if wait_ready {
            tokio::time::timeout(TIMEOUT, ready_rx)
                .await
                .expect("the server did not become ready")
                .expect("the server stopped before it was ready")
                .addr
        } else {
            eventually("the port accepts connections", || async {
                tokio::net::TcpStream::connect(bind).await.is_ok()
            })
            .await;
            bind
        };
        let token = std::fs::read_to_string(data.join("tokens.csv"))
            .expect("tokens.csv")
            .split(',')
            .next()
            .expect("a token")
            .to_string();
        let ca_pem = std::fs::read(data.join("ca.crt")).expect("ca.crt");
        TestServer {
            url: format!("https://{addr}"),
            token,
            ca_pem,
            shutdown,
            thread: Some(thread),
            dir: Some(dir),
        }
    }

    /// Begins graceful shutdown without waiting for it (dropping the server waits).
    pub fn begin_shutdown(&self) {
        let _ = self.shutdown.send(true);
    }

    /// An HTTPS client trusting the server's CA; HTTP/1.1 only, or HTTP/2 (ALPN). No token.
    pub fn client(&self, version: HttpVersion) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(&self.ca_pem).expect("ca");
        let builder = reqwest::Client::builder()
            .tls_certs_only([ca])
            .timeout(TIMEOUT);
        let builder = match version {
            HttpVersion::Http1 => builder.http1_only(),
            HttpVersion::Http2 => builder,
        };
        builder.build().expect("client")
    }

    /// A client that sends the admin token with every request.
    pub fn api(&self, version: HttpVersion) -> Api<'_> {
        Api {
            server: self,
            client: self.client(version),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            // A panic in the server thread (a failed start) is reported by the test already.
            let _ = thread.join();
        }
        drop(self.dir.take());
    }
}

/// Which HTTP version a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 negotiated by ALPN.
    Http2,
}

/// A server's audit log file (see [`TestServer::start_audited`]).
pub struct AuditLog {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl AuditLog {
    /// The `ResponseComplete` event of the request with `Audit-ID` `id`, once it is written.
    pub async fn completed(&self, id: &str) -> Value {
        let event = || -> Option<Value> {
            std::fs::read_to_string(&self.path)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|e| e["auditID"] == id && e["stage"] == "ResponseComplete")
        };
        eventually("the request's audit event is written", || async {
            event().is_some()
        })
        .await;
        event().expect("written")
    }
}

/// A response read whole.
pub struct Resp {
    /// The status code.
    pub status: StatusCode,
    /// The HTTP version the response came over.
    pub version: reqwest::Version,
    /// The headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body.
    pub text: String,
}

impl Resp {
    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// A `Status` body's causes as kubectl prints them (`<field>: <message>`).
    pub fn causes(&self) -> Vec<String> {
        self.json()["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{}: {}",
                    c["field"].as_str().unwrap_or(""),
                    c["message"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    /// The `Warning` headers' values, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.headers
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    }

    /// The body's lines as JSON values (a watch stream).
    pub fn lines(&self) -> Vec<Value> {
        self.text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }
}

/// An authenticated client of one server.
pub struct Api<'a> {
    /// The server.
    pub server: &'a TestServer,
    /// The underlying client (without the token).
    pub client: reqwest::Client,
}

impl Api<'_> {
    /// A request builder for `path` with the admin token.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.server.url))
            .bearer_auth(&self.server.token)
    }

    /// Sends `body` (if any) as `content_type` and reads the whole response.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self
            .request(method, path)
            .header("Content-Type", content_type);
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        read(req.send().await.expect("request")).await
    }

    /// GET with `Accept: accept`.
    pub async fn get_as(&self, path: &str, accept: &str) -> Resp {
        let r = self
            .request(Method::GET, path)
            .header("Accept", accept)
            .send()
            .await
            .expect("request");
        read(r).await
    }

    /// GET.
    pub async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, "application/json", None).await
    }

    /// POST a JSON body.
    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, "application/json", Some(body))
            .await
    }

    /// PUT a JSON body.
    pub async fn put(&self, path: &str, body: Value) -> Resp {
        self.call(Method::PUT, path, "application/json", Some(body))
            .await
    }

    /// DELETE.
    pub async fn delete(&self, path: &str) -> Resp {
        self.call(Method::DELETE, path, "application/json", None)
            .await
    }

    /// Creates a CRD and waits until the CRD controller reports it Established.
    pub async fn create_crd(&self, crd: Value) {
        let name = crd["metadata"]["name"]
            .as_str()
            .expect("metadata.name")
            .to_string();
        let r = self.post(CRDS, crd).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let path = format!("{CRDS}/{name}");
        eventually(&format!("CRD {name} is Established"), || async {
            let crd = self.get(&path).await.json();
            condition(&crd, "Established") == Some("True")
        })
        .await;
    }
}

/// A response read whole (for a streamed one, once it ends).
pub async fn read(r: reqwest::Response) -> Resp {
    Resp {
        status: r.status(),
        version: r.version(),
        headers: r.headers().clone(),
        text: r.text().await.expect("body"),
    }
}

/// The CRD collection.
pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A CRD with one served and stored version `v1` whose schema keeps every field.
pub fn crd_json(group: &str, plural: &str, kind: &str, scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// The status of condition `kind` in `obj.status.conditions`.
pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str())
}

/// Waits until the history up to resourceVersion 1 under `base` is compacted (a list at it is
/// refused with 410), then asserts that a watch from it answers one `ERROR` event: 410
/// `Expired` with upstream's "too old resource version" text.
pub async fn watch_from_1_expires(api: &Api<'_>, base: &str) {
    eventually("history up to resourceVersion 1 is compacted", || async {
        api.get(&format!(
            "{base}?resourceVersion=1&resourceVersionMatch=Exact"
        ))
        .await
        .status
            == 410
    })
    .await;
    let r = api
        .get(&format!(
            "{base}?watch=true&resourceVersion=1&timeoutSeconds=1"
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events = r.lines();
    assert_eq!(events.len(), 1, "{}", r.text);
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
    assert!(
        events[0]["object"]["message"]
            .as_str()
            .expect("message")
            .starts_with("too old resource version: 1 ("),
        "{}",
        r.text
    );
}

/// A Table's column names, in order.
pub fn column_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .expect("a Table")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect()
}

/// Polls `check` until it returns true; fails the test after [`TIMEOUT`] naming `what`.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + TIMEOUT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The request as the token's user: status and body.
pub async fn as_token(
    s: &TestServer,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = s
        .client(HttpVersion::Http2)
        .request(method, format!("{}{path}", s.url))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = read(req.send().await.unwrap()).await;
    (
        r.status.as_u16(),
        serde_json::from_str(&r.text).unwrap_or(Value::Null),
    )
}

/// The value of one series (`name{labels}`) in `/metrics`, 0 when absent.
pub async fn metric(s: &TestServer, series: &str) -> u64 {
    let text = s.api(HttpVersion::Http2).get("/metrics").await.text;
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// What a list hook runs before each list: `Err` fails the list, and the future may wait.
pub use crd_storage::hook::BeforeList;

/// A store that forwards everything to `inner` but runs `before_list` first on each list, so a
/// test can hold back or fail the lists it names without writing out the whole `Store`.
pub fn list_hook(
    inner: Arc<dyn crd_storage::Store>,
    before_list: BeforeList,
) -> Arc<dyn crd_storage::Store> {
    Arc::new(crd_storage::hook::HookStore::new(inner).before_list(before_list))
}

/// What an [`HttpsServer`] answers a request with: its path and body in, status and JSON out.
pub type Answer =
    Arc<dyn Fn(String, Bytes) -> futures::future::BoxFuture<'static, (u16, String)> + Send + Sync>;

/// A small HTTPS server in the test (rcgen certificates for 127.0.0.1 under a CA of its own,
/// hyper over tokio-rustls, HTTP/1.1 and HTTP/2): the other side of a webhook or an OIDC
/// issuer. Stops when dropped.
pub struct HttpsServer {
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    /// The CA that signed its certificate, PEM.
    pub ca_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HttpsServer {
    /// Listens on a free port and answers every request with `answer`.
    pub async fn start(answer: Answer) -> HttpsServer {
        use http_body_util::{BodyExt, Full};
        use hyper_util::rt::{TokioExecutor, TokioIo};
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};

        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().expect("ca key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
        let issuer = Issuer::new(ca_params, ca_key);
        let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &issuer).expect("cert");
        let tls = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).expect("pem")],
                PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("key pem"),
            )
            .expect("tls config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, answer) = (acceptor.clone(), answer.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let answer = answer.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req
                                    .into_body()
                                    .collect()
                                    .await
                                    .map(http_body_util::Collected::to_bytes)
                                    .unwrap_or_default();
                                let (code, body) = answer(path, body).await;
                                Ok::<_, std::convert::Infallible>(
                                    hyper::Response::builder()
                                        .status(code)
                                        .header("Content-Type", "application/json")
                                        .body(Full::new(Bytes::from(body)))
                                        .expect("response"),
                                )
                            }
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        HttpsServer {
            base: format!("https://{addr}"),
            ca_pem: ca_cert.pem(),
            task,
        }
    }
}
