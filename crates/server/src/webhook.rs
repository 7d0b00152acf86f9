//! The HTTPS client every webhook call uses (conversion and admission): a `clientConfig`
//! (`url`, or `service` reached through `--service-address NS/NAME=IP:PORT` or
//! `<name>.<namespace>.svc`, and `caBundle`) becomes a client bound to one URL, with a timeout,
//! and transport failures are described as Go's `Post "<url>": <cause>`.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;

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
            .user_agent("kube-apiserver-admission");
        let url = match (&cc.url, &cc.service) {
            (Some(url), _) => {
                let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
                let loopback = match parsed.host() {
                    Some(url::Host::Domain(d)) => d == "localhost",
                    Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                    Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                    None => false,
                };
                if !loopback {
                    builder = builder.http1_only();
                }
                (*url).to_string()
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
                builder = builder.http1_only();
                let path = svc.path.unwrap_or("");
                format!("https://{host}:{port}{path}")
            }
            (None, None) => return Err("neither url nor service is set".into()),
        };
        if !cc.ca_bundle.iter().all(u8::is_ascii_whitespace) {
            let certs = reqwest::Certificate::from_pem_bundle(cc.ca_bundle)
                .map_err(|e| format!("invalid caBundle: {e}"))?;
            builder = builder.tls_certs_only(certs);
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        Ok(WebhookClient {
            client,
            url: format!("{url}{query}"),
        })
    }

    /// The URL called.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs a JSON body; returns the status code and the body.
    pub async fn post_json(&self, body: Vec<u8>) -> Result<(u16, Bytes), CallError> {
        let resp = self
            .client
            .post(&self.url)
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
