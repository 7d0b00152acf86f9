//! The CronTab conversion webhook from the Kubernetes documentation
//! ("Versions in CustomResourceDefinitions"): `example.com/v1beta1` stores `hostPort`
//! ("host:port"), `example.com/v1` stores `host` and `port` separately.
//!
//! The fields are at the top level of the object, as in the documentation's CRD schema and
//! ConversionReview example; for CRDs that nest them under `spec`, `spec` is converted too.
//!
//! ```text
//! cargo run -p crd-webhook --example crontab -- [--bind 127.0.0.1:8443]
//!     [--path /convert] [--cert-file tls.crt --key-file tls.key]
//! ```
//!
//! Without certificate flags, a CA and a serving certificate for `127.0.0.1`, `localhost` and `::1`
//! are generated and `caBundle: <base64>` is printed. Then `listening on https://ADDR/PATH`
//! is printed (always the last line of startup output). Ctrl-C stops the server.

use std::error::Error;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use crd_webhook::{WebhookServer, self_signed};

mod convert;

use convert::convert;

struct Args {
    bind: SocketAddr,
    path: String,
    cert_file: Option<String>,
    key_file: Option<String>,
}

const USAGE: &str = "usage: crontab [--bind ADDR:PORT] [--path /convert] \
                     [--cert-file PEM --key-file PEM]";

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut parsed = Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8443)),
            path: "/convert".to_string(),
            cert_file: None,
            key_file: None,
        };
        while let Some(flag) = args.next() {
            let (flag, inline) = match flag.split_once('=') {
                Some((f, v)) => (f.to_string(), Some(v.to_string())),
                None => (flag, None),
            };
            if flag == "--help" || flag == "-h" {
                return Err(USAGE.to_string());
            }
            let value = inline
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            match flag.as_str() {
                "--bind" => {
                    parsed.bind = value.parse().map_err(|e| format!("--bind {value}: {e}"))?;
                }
                "--path" => parsed.path = value,
                "--cert-file" => parsed.cert_file = Some(value),
                "--key-file" => parsed.key_file = Some(value),
                _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
            }
        }
        Ok(parsed)
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let args = Args::parse(std::env::args().skip(1))?;
    let mut stdout = std::io::stdout();
    let server = match (&args.cert_file, &args.key_file) {
        (Some(cert), Some(key)) => WebhookServer::from_pem_files(cert, key)?,
        (None, None) => {
            let mut hosts = vec![
                "127.0.0.1".to_string(),
                "localhost".to_string(),
                "::1".to_string(),
            ];
            let ip = args.bind.ip();
            if !ip.is_loopback() && !ip.is_unspecified() {
                hosts.push(ip.to_string());
            }
            let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
            let generated = self_signed(&hosts)?;
            writeln!(stdout, "caBundle: {}", generated.ca_bundle_base64)?;
            WebhookServer::new(&generated.cert_pem, &generated.key_pem)?
        }
        _ => return Err("--cert-file and --key-file must be given together".into()),
    };
    let handle = server
        .bind(args.bind)
        .path(args.path)
        .spawn(convert)
        .await?;
    writeln!(stdout, "listening on {}", handle.url())?;
    stdout.flush()?;
    tokio::signal::ctrl_c().await?;
    handle.shutdown().await;
    Ok(())
}
