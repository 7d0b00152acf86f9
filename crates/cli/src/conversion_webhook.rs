//! `crd-apiserver conversion-webhook --crd crd.yaml`: serves a CRD's declarative conversion
//! rules (`strategy: ConversionRules`, KEP-3945) as a standard `ConversionReview` webhook through
//! `crd-webhook`, so the same rules convert natively here (no webhook) and on a real cluster (a
//! CRD with `strategy: Webhook` pointing at this process).
//!
//! Main items: [`Args`], [`run`], [`RulesConverter`] (also used in-process by the benchmark).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use crd_cel::conversion::{ConversionRules, STRATEGY, check_conversion_rules};
use crd_webhook::{Converter, WebhookServer};
use serde_json::Value;

/// Flags of `conversion-webhook`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The CustomResourceDefinition (YAML or JSON; the first CRD of the file) whose
    /// `spec.conversion.conversionRules` are served.
    #[arg(long)]
    crd: PathBuf,
    /// The address to listen on; port 0 picks a free port (printed on stdout).
    #[arg(long, default_value = "0.0.0.0:8443")]
    listen: SocketAddr,
    /// The PEM serving certificate (with `--tls-key`; e.g. `tls.crt` of a Kubernetes TLS
    /// secret). Without it, a CA and certificate for 127.0.0.1 and localhost are generated and
    /// the CA is printed as `caBundle: <base64>`.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The request path, as in the CRD's `clientConfig`.
    #[arg(long, default_value = "/convert")]
    path: String,
}

/// A `crd-webhook` converter applying one CRD's conversion rules.
pub struct RulesConverter {
    rules: ConversionRules,
}

impl RulesConverter {
    /// Compiles the rules of a CRD (raw JSON), refusing a CRD whose rules the API server would
    /// refuse (the errors are the CRD-write causes).
    pub fn new(crd: &Value) -> anyhow::Result<Self> {
        let errs = check_conversion_rules(crd);
        if crd
            .pointer("/spec/conversion/strategy")
            .and_then(Value::as_str)
            != Some(STRATEGY)
        {
            anyhow::bail!("spec.conversion.strategy must be ConversionRules");
        }
        if !errs.is_empty() {
            anyhow::bail!("invalid conversion rules: {}", errs.aggregate());
        }
        Ok(RulesConverter {
            rules: ConversionRules::compile(crd),
        })
    }
}

impl Converter for RulesConverter {
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, String> {
        let version = desired_api_version
            .rsplit('/')
            .next()
            .unwrap_or(desired_api_version);
        let mut out = self.rules.convert(&object, version)?;
        if let Some(m) = out.as_object_mut() {
            m.insert("apiVersion".into(), Value::from(desired_api_version));
        }
        Ok(out)
    }
}

/// Reads the first CustomResourceDefinition of a YAML or JSON file.
pub fn read_crd(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    docs.into_iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .with_context(|| format!("no CustomResourceDefinition in {}", path.display()))
}

/// Runs the webhook until SIGINT or SIGTERM.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let crd = read_crd(&args.crd)?;
    let converter = RulesConverter::new(&crd)?;
    let server = if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        WebhookServer::from_pem_files(cert, key)?
    } else {
        let certs = crd_webhook::self_signed(&["127.0.0.1", "localhost"])?;
        println!("caBundle: {}", certs.ca_bundle_base64);
        WebhookServer::new(&certs.cert_pem, &certs.key_pem)?
    };
    let handle = server
        .bind(args.listen)
        .path(args.path)
        .spawn(converter)
        .await?;
    println!("listening on {}", handle.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    handle.shutdown().await;
    Ok(())
}
