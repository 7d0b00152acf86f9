//! A minimal API client for the CLI's admin commands: it reads a kubeconfig (the one the server
//! writes, or `$KUBECONFIG`) and speaks JSON over HTTPS with the bearer token.

use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

/// A request the server answered with an error `Status`: callers that expect one (a CRD not
/// created yet) tell it from a transport failure by its code and reason.
#[derive(Debug)]
pub struct ApiFailure {
    /// The HTTP status code.
    pub code: u16,
    /// The `Status` reason (`NotFound`, ...), empty when the body had none.
    pub reason: String,
    /// The `Status` message.
    pub message: String,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ApiFailure {}

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(rename = "current-context")]
    current_context: Option<String>,
    clusters: Vec<Named<Cluster>>,
    contexts: Vec<Named<KubeContext>>,
    users: Vec<Named<User>>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "context", alias = "user")]
    value: T,
}

#[derive(Deserialize)]
struct Cluster {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    ca_data: Option<String>,
}

#[derive(Deserialize)]
struct KubeContext {
    cluster: String,
    user: String,
}

#[derive(Deserialize, Default)]
struct User {
    token: Option<String>,
}

/// An authenticated connection to a running server.
pub struct Client {
    http: reqwest::Client,
    server: String,
    token: Option<String>,
}

impl Client {
    /// The kubeconfig to use: `--kubeconfig`, else `$KUBECONFIG`, else the default data dir's.
    pub fn kubeconfig_path(flag: Option<PathBuf>) -> PathBuf {
        flag.or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("crd-apiserver-data/kubeconfig"))
    }

    /// Connects with the current context of a kubeconfig.
    pub fn from_kubeconfig(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading kubeconfig {}", path.display()))?;
        let cfg: Kubeconfig =
            serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let ctx_name = cfg.current_context.clone().unwrap_or_default();
        let ctx = cfg
            .contexts
            .iter()
            .find(|c| c.name == ctx_name)
            .or(cfg.contexts.first())
            .context("the kubeconfig has no context")?;
        let cluster = cfg
            .clusters
            .iter()
            .find(|c| c.name == ctx.value.cluster)
            .context("the kubeconfig's context names no known cluster")?;
        let user = cfg.users.iter().find(|u| u.name == ctx.value.user);
        let mut builder = reqwest::Client::builder();
        if let Some(ca) = &cluster.value.ca_data {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(ca.trim())
                .context("decoding certificate-authority-data")?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).context("reading the CA")?;
            builder = builder.tls_certs_only(certs);
        }
        Ok(Client {
            http: builder.build()?,
            server: cluster.value.server.trim_end_matches('/').to_string(),
            token: user.and_then(|u| u.value.token.clone()),
        })
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let req = match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        };
        let resp = req.send().await.context("contacting the server")?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(ApiFailure {
                code: status.as_u16(),
                reason: body
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                message: body
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("request failed")
                    .to_string(),
            }
            .into());
        }
        Ok(body)
    }

    /// GET a path, as JSON.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(self.http.get(format!("{}{path}", self.server)))
            .await
    }

    /// POST a JSON object to a path.
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.send(
            self.http
                .post(format!("{}{path}", self.server))
                .header("Content-Type", "application/json")
                .body(body.to_string()),
        )
        .await
    }
}
