//! Serving certificates: generated on first start into the data dir and reused afterwards, or
//! loaded from `--tls-cert-file` / `--tls-private-key-file`.
//!
//! Main items: [`TlsMaterial`], [`load_or_generate`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum TlsSource {
    /// Generate a CA and a serving certificate into the data dir on first start.
    Generated {
        /// The data dir.
        dir: PathBuf,
    },
    /// Use the given PEM files (kube-apiserver's `--tls-cert-file`, `--tls-private-key-file`).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
}

/// The loaded serving material.
pub struct TlsMaterial {
    /// The rustls configuration, with ALPN `h2` and `http/1.1`.
    pub config: Arc<rustls::ServerConfig>,
    /// The CA certificate in PEM, written into the kubeconfig; `None` for user-supplied files
    /// (then the serving certificate itself is the trust anchor written to the kubeconfig).
    pub ca_pem: String,
}

/// Loads the serving certificate, generating it first when needed. With `client_ca`
/// (`--client-ca-file`), client certificates signed by it are verified and accepted as
/// identities; clients without one still connect (and authenticate with a token).
pub fn load_or_generate(
    source: &TlsSource,
    client_ca: Option<&Path>,
) -> anyhow::Result<TlsMaterial> {
    let (cert_path, key_path, ca_pem) = match source {
        TlsSource::Generated { dir } => {
            let ca_path = dir.join("ca.crt");
            let cert = dir.join("apiserver.crt");
            let key = dir.join("apiserver.key");
            if !(ca_path.exists() && cert.exists() && key.exists()) {
                generate(dir)?;
            }
            let ca = std::fs::read_to_string(&ca_path)
                .with_context(|| format!("reading {}", ca_path.display()))?;
            (cert, key, ca)
        }
        TlsSource::Files { cert, key } => {
            let ca = std::fs::read_to_string(cert)
                .with_context(|| format!("reading {}", cert.display()))?;
            (cert.clone(), key.clone(), ca)
        }
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .with_context(|| format!("reading {}", cert_path.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing {}", cert_path.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .with_context(|| format!("reading {}", key_path.display()))?;
    let builder = rustls::ServerConfig::builder();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(path)
                .with_context(|| format!("reading {}", path.display()))?
            {
                roots
                    .add(cert.with_context(|| format!("parsing {}", path.display()))?)
                    .with_context(|| format!("adding {} as a client CA", path.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
                .allow_unauthenticated()
                .build()
                .context("building the client certificate verifier")?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .context("building the TLS configuration")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        config: Arc::new(config),
        ca_pem,
    })
}

/// Generates `ca.crt`, `ca.key`, `apiserver.crt` and `apiserver.key` in `dir`.
fn generate(dir: &Path) -> anyhow::Result<()> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    std::fs::create_dir_all(dir)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "crd-apiserver-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "crd-apiserver");
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;

    write_private(&dir.join("ca.crt"), ca_cert.pem().as_bytes())?;
    write_private(&dir.join("apiserver.crt"), cert.pem().as_bytes())?;
    write_private(&dir.join("apiserver.key"), key.serialize_pem().as_bytes())?;
    Ok(())
}

/// Writes a file readable only by its owner, atomically (temp file then rename).
pub fn write_private(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    opts.mode(0o600);
    let mut f = opts
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The identity in a verified client certificate, as Kubernetes reads it: the subject's common
/// name is the user, its organizations are the groups.
pub fn user_of_certificate(der: &[u8]) -> Option<crate::auth::User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    Some(crate::auth::User {
        name,
        groups,
        ..crate::auth::User::default()
    })
}
