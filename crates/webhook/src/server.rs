//! The HTTPS server: one endpoint (default `/convert`) that answers `ConversionReview`s.
//!
//! API servers only call webhooks over HTTPS, so TLS is required. Both HTTP/1.1 and HTTP/2
//! are served (chosen by ALPN). Responses:
//!
//! | request                                   | status |
//! |-------------------------------------------|--------|
//! | `POST <path>` with a `ConversionReview`   | 200, `application/json` review (also for failed conversions) |
//! | `POST <path>` with a malformed review     | 400    |
//! | `POST <path>` with a non-JSON content type| 415    |
//! | `POST <path>` with a body over the limit  | 413    |
//! | other method on `<path>`                  | 405    |
//! | any other path                            | 404    |

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::admission::{self, Admission, Mutator, Validator};
use crate::review::{self, Converter, ReviewError};
#[cfg(feature = "testing")]
use crate::testing::Misbehaviour;

/// Default request path, the one used in this crate's examples and README.
pub const DEFAULT_PATH: &str = "/convert";
/// Default listen address: all interfaces, as a webhook in a pod needs.
pub const DEFAULT_BIND: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 8443);
/// Default request body limit; kube-apiserver objects are at most ~1.5 MiB each, but one
/// review may carry many.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Default time in-flight requests get to finish on shutdown.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// A TLS handshake that takes longer than this is dropped, so idle sockets cannot pile up.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server could not be configured or started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A certificate or key file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The certificate PEM holds no usable certificate.
    #[error("invalid TLS certificate: {0}")]
    Certificate(String),
    /// The key PEM holds no usable private key.
    #[error("invalid TLS private key: {0}")]
    PrivateKey(String),
    /// rustls rejected the certificate/key pair (for example, they do not match).
    #[error("invalid TLS configuration: {0}")]
    Tls(String),
    /// The listen address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
}

/// A conversion webhook server, configured builder-style and then started with
/// [`spawn`](Self::spawn) (returns a [`WebhookHandle`]) or [`serve`](Self::serve) (runs until a
/// shutdown future completes).
///
/// ```no_run
/// # async fn run(cert_pem: String, key_pem: String) -> Result<(), crd_webhook::ServerError> {
/// use crd_webhook::WebhookServer;
/// let handle = WebhookServer::new(cert_pem, key_pem)?
///     .bind(([127, 0, 0, 1], 0).into())
///     .spawn(|object: serde_json::Value, _desired: &str| Ok(object))
///     .await?;
/// println!("listening on {}", handle.url());
/// # Ok(())
/// # }
/// ```
pub struct WebhookServer {
    tls: Arc<rustls::ServerConfig>,
    bind: SocketAddr,
    path: String,
    max_body_bytes: usize,
    shutdown_timeout: Duration,
    #[cfg(feature = "testing")]
    misbehaviour: Misbehaviour,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A server using the given serving certificate chain and private key (both PEM).
    ///
    /// Both are parsed now, so a bad certificate is reported before anything listens.
    pub fn new(cert_pem: impl AsRef<[u8]>, key_pem: impl AsRef<[u8]>) -> Result<Self, ServerError> {
        let certs = CertificateDer::pem_slice_iter(cert_pem.as_ref())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ServerError::Certificate(e.to_string()))?;
        if certs.is_empty() {
            return Err(ServerError::Certificate(
                "no CERTIFICATE block found in the PEM".to_string(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_ref())
            .map_err(|e| ServerError::PrivateKey(e.to_string()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ServerError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| ServerError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            tls: Arc::new(config),
            bind: DEFAULT_BIND,
            path: DEFAULT_PATH.to_string(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            #[cfg(feature = "testing")]
            misbehaviour: Misbehaviour::None,
        })
    }

    /// Like [`new`](Self::new), reading the PEM files (e.g. `tls.crt` and `tls.key` of a
    /// Kubernetes TLS secret).
    pub fn from_pem_files(
        cert_file: impl AsRef<Path>,
        key_file: impl AsRef<Path>,
    ) -> Result<Self, ServerError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| ServerError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        Self::new(read(cert_file.as_ref())?, read(key_file.as_ref())?)
    }

    /// The address to listen on (default `0.0.0.0:8443`); port 0 picks a free port, which
    /// [`WebhookHandle::local_addr`] reports.
    #[must_use]
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// The request path (default `/convert`); must match the CRD's `clientConfig` URL or
    /// service path. A missing leading `/` is added.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        self
    }

    /// The largest request body accepted (default 64 MiB); larger ones get 413.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long in-flight requests may run after shutdown is requested (default 10 s).
    #[must_use]
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Makes the server break the protocol on purpose after converting normally, to test how
    /// an API server validates webhook responses.
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn misbehave(mut self, misbehaviour: Misbehaviour) -> Self {
        self.misbehaviour = misbehaviour;
        self
    }

    /// Binds the address and serves in a background task until the returned handle is shut
    /// down or dropped.
    pub async fn spawn<C: Converter + 'static>(
        self,
        converter: C,
    ) -> Result<WebhookHandle, ServerError> {
        self.spawn_reviewer(Reviewer::Conversion(Arc::new(converter)))
            .await
    }

    /// Like [`spawn`](Self::spawn), for a validating admission webhook: `AdmissionReview`s are
    /// answered by `validator` (see [`crate::admission`]).
    pub async fn spawn_validating<V: Validator + 'static>(
        self,
        validator: V,
    ) -> Result<WebhookHandle, ServerError> {
        self.spawn_reviewer(Reviewer::Validating(Arc::new(validator)))
            .await
    }

    /// Like [`spawn`](Self::spawn), for a mutating admission webhook: `AdmissionReview`s are
    /// answered by `mutator`, with the JSON Patch computed from the object it returns.
    pub async fn spawn_mutating<M: Mutator + 'static>(
        self,
        mutator: M,
    ) -> Result<WebhookHandle, ServerError> {
        self.spawn_reviewer(Reviewer::Mutating(Arc::new(mutator)))
            .await
    }

    async fn spawn_reviewer(self, reviewer: Reviewer) -> Result<WebhookHandle, ServerError> {
        let shutdown_timeout = self.shutdown_timeout;
        let (listener, acceptor, state) = self.start(reviewer).await?;
        let local_addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: state.bind,
            source,
        })?;
        let (tx, rx) = oneshot::channel::<()>();
        let handle_state = state.clone();
        let task = tokio::spawn(run(
            listener,
            acceptor,
            state,
            async move {
                // A dropped handle counts as a shutdown request too.
                let _ = rx.await;
            },
            shutdown_timeout,
        ));
        Ok(WebhookHandle {
            local_addr,
            path: handle_state.path.clone(),
            requests: handle_state.requests.clone(),
            shutdown: tx,
            task,
            #[cfg(feature = "testing")]
            misbehaviour: handle_state.misbehaviour.clone(),
        })
    }

    /// Binds the address and serves until `shutdown` completes (for example
    /// `tokio::signal::ctrl_c()`), then lets in-flight requests finish.
    pub async fn serve<C, F>(self, converter: C, shutdown: F) -> Result<(), ServerError>
    where
        C: Converter + 'static,
        F: Future<Output = ()> + Send,
    {
        let shutdown_timeout = self.shutdown_timeout;
        let (listener, acceptor, state) = self
            .start(Reviewer::Conversion(Arc::new(converter)))
            .await?;
        run(listener, acceptor, state, shutdown, shutdown_timeout).await;
        Ok(())
    }

    async fn start(
        self,
        reviewer: Reviewer,
    ) -> Result<(TcpListener, TlsAcceptor, Arc<State>), ServerError> {
        let listener = TcpListener::bind(self.bind)
            .await
            .map_err(|source| ServerError::Bind {
                addr: self.bind,
                source,
            })?;
        let state = Arc::new(State {
            reviewer,
            bind: self.bind,
            path: self.path,
            max_body_bytes: self.max_body_bytes,
            requests: Arc::new(AtomicU64::new(0)),
            #[cfg(feature = "testing")]
            misbehaviour: Arc::new(std::sync::Mutex::new(self.misbehaviour)),
        });
        Ok((listener, TlsAcceptor::from(self.tls), state))
    }
}

/// A running server started by [`WebhookServer::spawn`]. Dropping it stops the server (in
/// the background); [`shutdown`](Self::shutdown) stops it and waits.
#[derive(Debug)]
pub struct WebhookHandle {
    local_addr: SocketAddr,
    path: String,
    requests: Arc<AtomicU64>,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
    #[cfg(feature = "testing")]
    misbehaviour: Arc<std::sync::Mutex<Misbehaviour>>,
}

impl WebhookHandle {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `https://<local_addr><path>`, the URL for a CRD's `clientConfig.url` (when bound to a
    /// specific address rather than `0.0.0.0`).
    pub fn url(&self) -> String {
        format!("https://{}{}", self.local_addr, self.path)
    }

    /// How many POST requests reached the webhook path so far (well-formed or not), so a test
    /// can check how many webhook calls an API server made.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Changes how the running server misbehaves, from the next request on.
    #[cfg(feature = "testing")]
    pub fn set_misbehaviour(&self, misbehaviour: Misbehaviour) {
        *self
            .misbehaviour
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = misbehaviour;
    }

    /// Stops accepting connections and waits for in-flight requests (up to the shutdown
    /// timeout).
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(());
        let _ = self.task.await;
    }
}

/// What answers the reviews: a conversion function, or an admission webhook's function.
enum Reviewer {
    Conversion(Arc<dyn Converter>),
    Validating(Arc<dyn Validator>),
    Mutating(Arc<dyn Mutator>),
}

impl Reviewer {
    fn review(&self, review: serde_json::Value) -> Result<serde_json::Value, ReviewError> {
        match self {
            Reviewer::Conversion(c) => review::handle_review_value(review, &**c),
            Reviewer::Validating(v) => {
                admission::handle_admission_review(&review, &Admission::Validating(&**v))
            }
            Reviewer::Mutating(m) => {
                admission::handle_admission_review(&review, &Admission::Mutating(&**m))
            }
        }
    }
}

/// What every request needs.
struct State {
    reviewer: Reviewer,
    bind: SocketAddr,
    path: String,
    max_body_bytes: usize,
    requests: Arc<AtomicU64>,
    #[cfg(feature = "testing")]
    misbehaviour: Arc<std::sync::Mutex<Misbehaviour>>,
}

/// Accepts TLS connections until `shutdown` completes, then drains for a bounded time.
async fn run<F: Future<Output = ()>>(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<State>,
    shutdown: F,
    shutdown_timeout: Duration,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Usually out of file descriptors: back off instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let state = state.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
            {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(handle(&state, req).await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(shutdown_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("shutdown timeout reached; closing remaining connections");
    }
}

/// Handles one HTTP request.
async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.uri().path() != state.path {
        return text(
            StatusCode::NOT_FOUND,
            format!(
                "404 page not found: the conversion webhook is served at {}",
                state.path
            ),
        );
    }
    if req.method() != Method::POST {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: POST a ConversionReview",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    state.requests.fetch_add(1, Ordering::SeqCst);
    if let Some(content_type) = req.headers().get(header::CONTENT_TYPE) {
        let essence = content_type
            .to_str()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("unsupported Content-Type {essence:?}: expected application/json"),
            );
        }
    }
    let body = match Limited::new(req.into_body(), state.max_body_bytes)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body larger than {} bytes", state.max_body_bytes),
            );
        }
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("reading the request body: {e}"),
            );
        }
    };
    match review_response(state, &body).await {
        Ok(json) => {
            let mut response = Response::new(Full::new(Bytes::from(json)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            let status = if e.is_client_error() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            tracing::debug!(error = %e, "rejected a ConversionReview");
            text(status, e.to_string())
        }
    }
}

#[cfg(not(feature = "testing"))]
#[allow(clippy::unused_async)] // Async only with the `testing` feature.
async fn review_response(state: &State, body: &[u8]) -> Result<Vec<u8>, ReviewError> {
    let review = serde_json::from_slice(body).map_err(ReviewError::NotJson)?;
    let response = state.reviewer.review(review)?;
    serde_json::to_vec(&response).map_err(ReviewError::Encode)
}

#[cfg(feature = "testing")]
async fn review_response(state: &State, body: &[u8]) -> Result<Vec<u8>, ReviewError> {
    let misbehaviour = state
        .misbehaviour
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let review = serde_json::from_slice(body).map_err(ReviewError::NotJson)?;
    let mut response = state.reviewer.review(review)?;
    if let Misbehaviour::Slow(delay) = misbehaviour {
        tokio::time::sleep(delay).await;
    }
    crate::testing::apply(&misbehaviour, &mut response);
    serde_json::to_vec(&response).map_err(ReviewError::Encode)
}

fn text(status: StatusCode, message: impl Into<String>) -> Response<Full<Bytes>> {
    let mut body = message.into();
    body.push('\n');
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
