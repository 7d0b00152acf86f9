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
    /// The client CAs (`--client-ca-file`) that verify client certificates after the
    /// handshake.
    pub client_cas: Option<Arc<ClientCas>>,
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
    let mut client_cas = None;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let cas = ClientCas::new(roots_der(path)?)
                .with_context(|| format!("adding {} as a client CA", path.display()))?;
            let hints = cas.subjects.clone();
            client_cas = Some(Arc::new(cas));
            builder.with_client_cert_verifier(Arc::new(AnyClientCert { hints }))
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .context("building the TLS configuration")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        config: Arc::new(config),
        ca_pem,
        client_cas,
    })
}

fn roots_der(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading {}", path.display()))?
        .map(|c| c.with_context(|| format!("parsing {}", path.display())))
        .collect()
}

/// The CAs of `--client-ca-file`, and the check of a presented chain against them after the
/// handshake, as upstream's x509 authenticator runs Go's `x509.Certificate.Verify` (key usage
/// `ClientAuth`): valid now, a client-auth (or any) extended key usage when the certificate
/// names one, and signed by a CA, directly or through intermediates the client sent. X.509 v1
/// certificates (what `openssl x509 -req` makes without extensions) verify, as in Go. The TLS
/// layer accepts any certificate ([`AnyClientCert`]), so one that does not verify is the
/// authenticator's 401, or loses to a valid token, never a failed handshake.
pub struct ClientCas {
    certs: Vec<CertificateDer<'static>>,
    subjects: Vec<rustls::DistinguishedName>,
}

impl ClientCas {
    /// Parses the CA certificates (each must be X.509).
    pub fn new(certs: Vec<CertificateDer<'static>>) -> anyhow::Result<Self> {
        let subjects = certs
            .iter()
            .map(|c| {
                let (_, parsed) = x509_parser::parse_x509_certificate(c.as_ref())
                    .map_err(|e| anyhow::anyhow!("parsing a client CA certificate: {e}"))?;
                Ok(rustls::DistinguishedName::from(
                    parsed.subject().as_raw().to_vec(),
                ))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(ClientCas { certs, subjects })
    }

    /// The user a presented chain (leaf first) authenticates, or why it does not, in Go's
    /// words.
    pub fn identify(&self, chain: &[CertificateDer<'_>]) -> Result<crate::auth::User, String> {
        use x509_parser::prelude::*;
        const UNKNOWN: &str = "x509: certificate signed by unknown authority";
        fn parse(der: &[u8]) -> Result<X509Certificate<'_>, String> {
            parse_x509_certificate(der)
                .map(|(_, c)| c)
                .map_err(|e| format!("x509: malformed certificate: {e}"))
        }
        let leaf_der = chain.first().ok_or("no client certificate")?;
        let leaf = parse(leaf_der.as_ref())?;
        if !leaf.validity().is_valid_at(ASN1Time::now()) {
            return Err("x509: certificate has expired or is not yet valid".into());
        }
        if let Ok(Some(eku)) = leaf.extended_key_usage()
            && !(eku.value.client_auth || eku.value.any)
        {
            return Err("x509: certificate specifies an incompatible key usage".into());
        }
        let cas: Vec<X509Certificate<'_>> = self
            .certs
            .iter()
            .filter_map(|c| parse(c.as_ref()).ok())
            .collect();
        let intermediates: Vec<X509Certificate<'_>> = chain[1..]
            .iter()
            .filter_map(|c| parse(c.as_ref()).ok())
            .collect();
        let signs = |issuer: &X509Certificate<'_>, cert: &X509Certificate<'_>| {
            issuer.subject() == cert.issuer()
                && issuer.validity().is_valid_at(ASN1Time::now())
                && cert.verify_signature(Some(issuer.public_key())).is_ok()
        };
        let mut current = &leaf;
        for _ in 0..8 {
            if cas.iter().any(|ca| signs(ca, current)) {
                return crate::tls::user_of_certificate(leaf_der.as_ref())
                    .ok_or_else(|| "x509: certificate has no common name".to_string());
            }
            match intermediates.iter().find(|i| signs(i, current)) {
                Some(next) => current = next,
                None => return Err(UNKNOWN.into()),
            }
        }
        Err(UNKNOWN.into())
    }
}

/// The handshake side of client certificates (`tls.RequestClientCert`, as kube-apiserver's
/// secure serving asks for them): the CAs are offered as hints, any certificate is taken, and
/// only the client's proof that it holds the certificate's key is checked here; who the
/// certificate names is [`ClientCas::identify`]'s to decide.
#[derive(Debug)]
struct AnyClientCert {
    hints: Vec<rustls::DistinguishedName>,
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        verify_handshake(message, cert, dss.scheme, dss.signature())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        verify_handshake(message, cert, dss.scheme, dss.signature())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        use rustls::SignatureScheme as S;
        vec![
            S::ECDSA_NISTP256_SHA256,
            S::ECDSA_NISTP384_SHA384,
            S::ED25519,
            S::RSA_PSS_SHA256,
            S::RSA_PSS_SHA384,
            S::RSA_PSS_SHA512,
            S::RSA_PKCS1_SHA256,
            S::RSA_PKCS1_SHA384,
            S::RSA_PKCS1_SHA512,
        ]
    }
}

/// The client's handshake signature, checked with the public key of the certificate it sent
/// (parsed by x509-parser, which reads v1 certificates that webpki refuses).
fn verify_handshake(
    message: &[u8],
    cert: &CertificateDer<'_>,
    scheme: rustls::SignatureScheme,
    signature: &[u8],
) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
    use ring::signature as sig;
    use rustls::SignatureScheme as S;
    let bad = |e| rustls::Error::InvalidCertificate(e);
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|_| bad(rustls::CertificateError::BadEncoding))?;
    let alg: &dyn sig::VerificationAlgorithm = match scheme {
        S::ECDSA_NISTP256_SHA256 => &sig::ECDSA_P256_SHA256_ASN1,
        S::ECDSA_NISTP384_SHA384 => &sig::ECDSA_P384_SHA384_ASN1,
        S::ED25519 => &sig::ED25519,
        S::RSA_PSS_SHA256 => &sig::RSA_PSS_2048_8192_SHA256,
        S::RSA_PSS_SHA384 => &sig::RSA_PSS_2048_8192_SHA384,
        S::RSA_PSS_SHA512 => &sig::RSA_PSS_2048_8192_SHA512,
        S::RSA_PKCS1_SHA256 => &sig::RSA_PKCS1_2048_8192_SHA256,
        S::RSA_PKCS1_SHA384 => &sig::RSA_PKCS1_2048_8192_SHA384,
        S::RSA_PKCS1_SHA512 => &sig::RSA_PKCS1_2048_8192_SHA512,
        _ => {
            return Err(rustls::Error::PeerIncompatible(
                rustls::PeerIncompatible::NoSignatureSchemesInCommon,
            ));
        }
    };
    sig::UnparsedPublicKey::new(alg, &parsed.public_key().subject_public_key.data)
        .verify(message, signature)
        .map(|()| rustls::client::danger::HandshakeSignatureValid::assertion())
        .map_err(|_| bad(rustls::CertificateError::BadSignature))
}

/// Generates `ca.crt`, `ca.key`, `apiserver.crt` and `apiserver.key` in `dir`.
fn generate(dir: &Path) -> anyhow::Result<()> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    crd_storage::create_private_dir(dir)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };

    fn ca(name: &str) -> (CertificateDer<'static>, Issuer<'static, KeyPair>) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.der().clone(), Issuer::new(params, key))
    }

    fn leaf(
        issuer: &Issuer<'_, KeyPair>,
        usages: Vec<ExtendedKeyUsagePurpose>,
        expired: bool,
    ) -> CertificateDer<'static> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "carol");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "devs");
        params.extended_key_usages = usages;
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        params.signed_by(&key, issuer).unwrap().der().clone()
    }

    /// A chain verifies as Go's `x509.Certificate.Verify` with `ExtKeyUsageClientAuth` decides,
    /// with its messages; the user is the subject's CN and organizations.
    #[test]
    fn client_certificates_verify_as_upstreams_x509_authenticator() {
        let (ca_der, issuer) = ca("client-ca");
        let (_, other) = ca("other-ca");
        let cas = ClientCas::new(vec![ca_der]).unwrap();
        let client_auth = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let user = cas
            .identify(&[leaf(&issuer, client_auth.clone(), false)])
            .unwrap();
        assert_eq!(
            (user.name.as_str(), user.groups),
            ("carol", vec!["devs".to_string()])
        );
        // No extended key usage at all is fine, as in Go.
        assert!(cas.identify(&[leaf(&issuer, vec![], false)]).is_ok());
        let cases = [
            (
                leaf(&other, client_auth.clone(), false),
                "x509: certificate signed by unknown authority",
            ),
            (
                leaf(&issuer, vec![ExtendedKeyUsagePurpose::ServerAuth], false),
                "x509: certificate specifies an incompatible key usage",
            ),
            (
                leaf(&issuer, client_auth.clone(), true),
                "x509: certificate has expired or is not yet valid",
            ),
        ];
        for (cert, want) in cases {
            assert_eq!(cas.identify(&[cert]).unwrap_err(), want);
        }
    }
}
