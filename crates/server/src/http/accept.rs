//! The TLS accept loop: HTTP/1.1 and HTTP/2 (ALPN) connections, bounded in number, with a
//! header-read timeout for HTTP/1, and graceful shutdown that drains requests in flight for a
//! bounded time.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

use crate::state::AppState;

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an HTTP/1 client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Accepts TLS connections until `shutdown` turns true, then drains for a bounded time. At most
/// `max_connections` are open at once; further clients wait in the listen backlog.
///
/// When shutdown begins `/readyz` fails its `shutdown` check at once; the server keeps
/// accepting for `shutdown_delay` (`--shutdown-delay-duration`) so load balancers see it, then
/// stops accepting and drains.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<AppState>,
    max_connections: usize,
    mut shutdown: watch::Receiver<bool>,
    shutdown_delay: Duration,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(max_connections));
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // Set once shutdown has begun: accepting goes on until then.
    let mut stop_at: Option<tokio::time::Instant> = None;
    let far = tokio::time::Instant::now() + Duration::from_hours(24 * 365);
    loop {
        let deadline = tokio::time::sleep_until(stop_at.unwrap_or(far));
        let permit = tokio::select! {
            p = connections.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = shutdown.changed(), if stop_at.is_none() => {
                state.health.set_shutting_down();
                stop_at = Some(tokio::time::Instant::now() + shutdown_delay);
                continue;
            }
            () = deadline => break,
        };
        let deadline = tokio::time::sleep_until(stop_at.unwrap_or(far));
        let (tcp, peer) = tokio::select! {
            conn = listener.accept() => match conn {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            _ = shutdown.changed(), if stop_at.is_none() => {
                state.health.set_shutting_down();
                stop_at = Some(tokio::time::Instant::now() + shutdown_delay);
                continue;
            }
            () = deadline => break,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let state = state.clone();
        let local = local.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
            else {
                return;
            };
            // A client certificate (`--client-ca-file`) is verified once per connection; its
            // user, or why it does not verify, goes with every request on it.
            let certificate: Option<Arc<crate::auth::ClientCertificate>> = state
                .client_cas
                .as_ref()
                .zip(tls.get_ref().1.peer_certificates())
                .filter(|(_, chain)| !chain.is_empty())
                .map(|(cas, chain)| Arc::new(cas.identify(chain)));
            let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
                req.extensions_mut().insert(super::observe::PeerAddr(peer));
                let state = state.clone();
                let local = local.clone();
                let certificate = certificate.clone();
                async move {
                    Ok::<_, Infallible>(
                        super::handle(state, &local, certificate.as_deref(), req).await,
                    )
                }
            });
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT);
            // A stream whose client does not read holds at most 64 KiB here (hyper's default is
            // 400 KiB per stream); the watch cache closes a watcher that stays behind.
            builder
                .http2()
                .max_concurrent_streams(1000)
                .max_send_buf_size(64 * 1024);
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            let _ = watcher.watch(conn.into_owned()).await;
        });
    }
    drop(listener);
    state.health.set_draining();
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("shutdown grace period over; closing remaining connections");
    }
}
