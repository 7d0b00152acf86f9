//! The admin credentials a server generates on first start, and the kubeconfig it writes so
//! that `kubectl` works with `export KUBECONFIG=<data-dir>/kubeconfig`.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use base64::Engine;
use rand::Rng;

use crate::auth::TokenAuthenticator;
use crate::tls::write_private;

/// Loads the generated token file (`tokens.csv` in the data dir), creating it with a random
/// admin token on first start. Returns the authenticator and the admin token.
pub fn admin_token(data_dir: &Path) -> anyhow::Result<(TokenAuthenticator, String)> {
    let path = data_dir.join("tokens.csv");
    if !path.exists() {
        let token: String = rand::rng()
            .sample_iter(rand::distr::Alphanumeric)
            .take(48)
            .map(char::from)
            .collect();
        let line = format!("{token},admin,admin,\"system:masters\"\n");
        write_private(&path, line.as_bytes())?;
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let token = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .and_then(|l| l.split(',').next())
        .context("the generated token file is empty")?
        .to_string();
    Ok((TokenAuthenticator::parse(&text)?, token))
}

/// Writes a kubeconfig for the server's real address, trusting its CA.
pub fn write(
    path: &Path,
    addr: SocketAddr,
    ca_pem: &str,
    token: Option<&str>,
) -> anyhow::Result<()> {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
        ip if ip.is_unspecified() => "[::1]".to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let user = match token {
        Some(t) => format!("    token: {t}\n"),
        None => "    {}\n".to_string(),
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: crd-apiserver\n  cluster:\n    server: https://{host}:{port}\n    certificate-authority-data: {ca}\ncontexts:\n- name: crd-apiserver\n  context:\n    cluster: crd-apiserver\n    user: admin\n    namespace: default\ncurrent-context: crd-apiserver\nusers:\n- name: admin\n  user:\n{user}",
        port = addr.port()
    );
    write_private(path, text.as_bytes())
}
