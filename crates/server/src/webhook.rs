//! The HTTPS client every webhook call uses (conversion and admission): a `clientConfig`
//! (`url`, or `service` reached through `--service-address NS/NAME=IP:PORT` or
//! `<name>.<namespace>.svc`, and `caBundle`) becomes a client bound to one URL, with a timeout,
//! and transport failures are described as Go's `Post "<url>": <cause>`.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;

pub mod kubeconfig;

/// A service reference of a `clientConfig`.
#[derive(Clone, Debug)]
pub struct ServiceRef<'a> {
    /// The service's namespace.
    pub namespace: &'a str,
    /// The service's name.
    pub name: &'a str,
    /// The URL path, if any.
    pub path: Option<&'a str>,
    /// The port (443 by default).
    pub port: i32,
}

/// Where a webhook is and whom to trust, as a `clientConfig` says.
#[derive(Clone, Debug, Default)]
pub struct ClientConfig<'a> {
    /// `url`.
    pub url: Option<&'a str>,
    /// `service`.
    pub service: Option<ServiceRef<'a>>,
    /// `caBundle` (PEM); empty trusts the system roots.
    pub ca_bundle: &'a [u8],
    /// A client certificate and its key (PEM), for servers that authenticate the API server
    /// (a kubeconfig's `client-certificate` and `client-key`).
    pub identity: Option<&'a [u8]>,
    /// A bearer token sent with every call (a kubeconfig's `token`).
    pub bearer_token: Option<&'a str>,
    /// Skip verifying the server's certificate (a kubeconfig's `insecure-skip-tls-verify`).
    pub insecure: bool,
    /// The `User-Agent`; `kube-apiserver-admission` when `None`.
    pub user_agent: Option<&'a str>,
}

/// A transport failure of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The timeout passed.
    Timeout,
    /// Connection, TLS or protocol failure, described with its causes.
    Transport(String),
}

/// A client bound to one webhook URL.
pub struct WebhookClient {
    client: reqwest::Client,
    url: String,
    bearer_token: Option<String>,
}

impl fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookClient")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl WebhookClient {
    /// Builds the client of a `clientConfig`; `query` is appended to the URL (admission adds
    /// `?timeout=10s` as client-go does). `Err` says why the configuration is unusable.
    pub fn build(
        cc: &ClientConfig<'_>,
        service_addresses: &HashMap<String, SocketAddr>,
        timeout: Duration,
        query: &str,
    ) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(cc.user_agent.unwrap_or("kube-apiserver-admission"));
        // HTTP/2 only to loopback URLs (a test's own webhook server); HTTP/1.1 elsewhere.
        let (url, http1_only) = match (&cc.url, &cc.service) {
            (Some(url), _) => {
                let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
                let loopback = match parsed.host() {
                    Some(url::Host::Domain(d)) => d == "localhost",
                    Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                    Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                    None => false,
                };
                ((*url).to_string(), !loopback)
            }
            (None, Some(svc)) => {
                let host = format!("{}.{}.svc", svc.name, svc.namespace);
                let mut port = svc.port;
                if let Some(addr) =
                    service_addresses.get(&format!("{}/{}", svc.namespace, svc.name))
                {
                    builder = builder.resolve(&host, *addr);
                    port = i32::from(addr.port());
                }
                let path = svc.path.unwrap_or("");
                (format!("https://{host}:{port}{path}"), true)
            }
            (None, None) => return Err("neither url nor service is set".into()),
        };
        if http1_only {
            builder = builder.http1_only();
        }
        let identity = cc
            .identity
            .map(|pem| client_identity(pem).map_err(|e| format!("invalid client certificate: {e}")))
            .transpose()?;
        if cc.insecure {
            builder = builder.danger_accept_invalid_certs(true);
            if let Some(pem) = cc.identity {
                builder =
                    builder.identity(reqwest::Identity::from_pem(pem).map_err(|e| e.to_string())?);
            }
        } else if !cc.ca_bundle.iter().all(u8::is_ascii_whitespace) {
            // The preconfigured TLS carries its own ALPN list, which must agree.
            let tls = bundle_tls(cc.ca_bundle, identity, !http1_only)
                .map_err(|e| format!("invalid caBundle: {e}"))?;
            builder = builder.tls_backend_preconfigured(tls);
        } else if let Some(pem) = cc.identity {
            builder =
                builder.identity(reqwest::Identity::from_pem(pem).map_err(|e| e.to_string())?);
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        Ok(WebhookClient {
            client,
            url: format!("{url}{query}"),
            bearer_token: cc.bearer_token.map(String::from),
        })
    }

    /// The URL called.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs a JSON body; returns the status code and the body.
    pub async fn post_json(&self, body: Vec<u8>) -> Result<(u16, Bytes), CallError> {
        let mut request = self.client.post(&self.url);
        if let Some(token) = &self.bearer_token {
            request = request.bearer_auth(token);
        }
        let resp = request
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        let status = resp.status().as_u16();
        let text = resp.bytes().await.map_err(|e| classify(&e))?;
        Ok((status, text))
    }
}

/// The first retry's delay of [`WebhookClient::post_with_retry`] (upstream's
/// `DefaultRetryBackoffWithInitialDelay(500ms)`).
pub const FIRST_RETRY_DELAY: Duration = Duration::from_millis(500);

/// Why [`WebhookClient::post_with_retry`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    /// The failure in Go's words (`Post "<url>": ...`, or the answer's message).
    pub message: String,
    /// Whether the call's timeout passed.
    pub timeout: bool,
}

impl WebhookClient {
    /// POSTs a JSON body as client-go's generic webhook does: a transient failure (a reset or
    /// closed connection, 429, 500, 504) is retried with upstream's backoff (`first_delay`,
    /// ×1.5, five attempts in all). Returns a 2xx answer's body, or the last failure.
    pub async fn post_with_retry(
        &self,
        body: Vec<u8>,
        first_delay: Duration,
    ) -> Result<Bytes, Failed> {
        const ATTEMPTS: u32 = 5;
        let mut delay = first_delay;
        let mut attempt = 1;
        loop {
            let (error, transient) = match self.post_json(body.clone()).await {
                Ok((code, text)) if (200..300).contains(&code) => return Ok(text),
                Ok((code, text)) => (
                    Failed {
                        message: response_error(&text),
                        timeout: false,
                    },
                    matches!(code, 429 | 500 | 504),
                ),
                Err(e) => {
                    let transient = matches!(&e, CallError::Transport(m)
                        if m.contains("connection reset") || m.contains("connection closed"));
                    (
                        Failed {
                            message: e.describe(&self.url, "context deadline exceeded"),
                            timeout: e == CallError::Timeout,
                        },
                        transient,
                    )
                }
            };
            if !transient || attempt >= ATTEMPTS {
                return Err(error);
            }
            tokio::time::sleep(delay).await;
            delay = delay.mul_f64(1.5);
            attempt += 1;
        }
    }
}

/// The TLS configuration of a `caBundle`: its certificates are the only roots, and a server
/// certificate that is itself one of them is accepted (for its names) even when it is a CA
/// certificate, as Go's `x509.Verify` accepts a leaf found in the roots. `openssl req -x509`
/// makes such self-signed certificates (with `CA:TRUE`), which webpki refuses as end entities.
fn bundle_tls(
    pem: &[u8],
    identity: Option<ClientIdentity>,
    h2: bool,
) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bundle: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if bundle.is_empty() {
        return Err("no certificate in the PEM data".into());
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in &bundle {
        roots.add(cert.clone()).map_err(|e| e.to_string())?;
    }
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| std::sync::Arc::new(rustls::crypto::ring::default_provider()));
    let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
        std::sync::Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| e.to_string())?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(BundleVerifier { inner, bundle }));
    let mut config = match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| e.to_string())?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = if h2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// A client certificate chain and its private key.
type ClientIdentity = (
    Vec<rustls::pki_types::CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
);

/// The certificates and the key of a PEM identity (certificate first, then the key, in one
/// buffer, as reqwest's `Identity::from_pem` takes them).
fn client_identity(pem: &[u8]) -> Result<ClientIdentity, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if chain.is_empty() {
        return Err("no certificate in the PEM data".into());
    }
    let key = PrivateKeyDer::from_pem_slice(pem).map_err(|e| format!("no private key: {e}"))?;
    Ok((chain, key))
}

/// webpki's verification, plus Go's acceptance of a server certificate that is one of the
/// trusted roots (see [`bundle_tls`]).
#[derive(Debug)]
struct BundleVerifier {
    inner: std::sync::Arc<rustls::client::WebPkiServerVerifier>,
    bundle: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl rustls::client::danger::ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // webpki checks the validity period before the CA bit, so this certificate is
            // current; what is left is its names.
            Err(Error::InvalidCertificate(CertificateError::Other(e)))
                if e.0.downcast_ref::<webpki::Error>()
                    == Some(&webpki::Error::CaUsedAsEndEntity)
                    && self
                        .bundle
                        .iter()
                        .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&cert, server_name)?;
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn classify(e: &reqwest::Error) -> CallError {
    use std::error::Error as _;
    if e.is_timeout() {
        return CallError::Timeout;
    }
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        msg = format!("{msg}: {s}");
        source = s.source();
    }
    CallError::Transport(msg)
}

/// What a webhook's non-2xx answer says, as client-go reports it: the `message` of a `Status`
/// body, or `an error on the server ("<body>") has prevented the request from succeeding`.
pub fn response_error(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|s| {
            s.get("message")
                .and_then(serde_json::Value::as_str)
                .map(String::from)
        })
        .unwrap_or_else(|| {
            format!(
                "an error on the server ({:?}) has prevented the request from succeeding",
                String::from_utf8_lossy(body).trim()
            )
        })
}

impl CallError {
    /// Go's `Post "<url>": <cause>`; `timeout_text` is how the caller's Go client words a
    /// timeout (`context deadline exceeded`, with or without the `Client.Timeout` note).
    pub fn describe(&self, url: &str, timeout_text: &str) -> String {
        let cause = match self {
            CallError::Timeout => timeout_text,
            CallError::Transport(m) => m,
        };
        format!("Post {url:?}: {cause}")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A self-signed certificate for `names`, with `CA:TRUE` when `ca` (what `openssl req
    /// -x509` makes), and its PEM.
    fn self_signed(names: &[&str], ca: bool) -> (CertificateDer<'static>, KeyPair, String) {
        let mut params =
            CertificateParams::new(names.iter().map(ToString::to_string).collect::<Vec<_>>())
                .expect("params");
        if ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("cert");
        (cert.der().clone(), key, cert.pem())
    }

    /// Serves one HTTPS answer per connection with `cert`; returns the port.
    async fn serve(cert: CertificateDer<'static>, key: &KeyPair) -> u16 {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = vec![0; 4096];
                    let _ = tls.read(&mut buf).await;
                    let _ = tls
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                        )
                        .await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        port
    }

    async fn call(port: u16, bundle: &str) -> Result<(u16, Bytes), CallError> {
        let url = format!("https://127.0.0.1:{port}/hook");
        let cc = ClientConfig {
            url: Some(&url),
            ca_bundle: bundle.as_bytes(),
            ..ClientConfig::default()
        };
        let client =
            WebhookClient::build(&cc, &HashMap::new(), Duration::from_secs(5), "").expect("client");
        client.post_json(b"{}".to_vec()).await
    }

    /// A server certificate that is itself in the `caBundle` is trusted for its names even with
    /// `CA:TRUE`, as Go's `x509.Verify` trusts a leaf found in the roots; another CA's, or one
    /// for other names, is not.
    #[tokio::test]
    async fn a_self_signed_ca_certificate_in_the_bundle_is_trusted_for_its_names() {
        let (cert, key, pem) = self_signed(&["localhost", "127.0.0.1"], true);
        let port = serve(cert, &key).await;
        let (status, body) = call(port, &pem).await.expect("trusted");
        assert_eq!((status, &body[..]), (200, &b"{}"[..]));

        let (_, _, other) = self_signed(&["localhost", "127.0.0.1"], true);
        let err = call(port, &other).await.expect_err("another CA");
        assert!(
            matches!(&err, CallError::Transport(m) if m.contains("certificate")),
            "{err:?}"
        );

        let (cert, key, pem) = self_signed(&["example.com"], true);
        let port = serve(cert, &key).await;
        let err = call(port, &pem).await.expect_err("other names");
        assert!(
            matches!(&err, CallError::Transport(m) if m.contains("certificate")),
            "{err:?}"
        );

        let (cert, key, pem) = self_signed(&["127.0.0.1"], false);
        let port = serve(cert, &key).await;
        assert_eq!(call(port, &pem).await.expect("end entity").0, 200);
    }
}
