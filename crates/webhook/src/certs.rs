//! In-memory certificates for development and tests: a CA, a serving certificate signed by
//! it, and the `caBundle` string a CRD's `spec.conversion.webhook.clientConfig` needs.

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// Freshly generated TLS material; nothing is written to disk.
#[derive(Clone)]
pub struct Generated {
    /// The serving certificate (PEM), for [`WebhookServer::new`](crate::WebhookServer::new).
    pub cert_pem: String,
    /// The serving certificate's private key (PEM, PKCS#8).
    pub key_pem: String,
    /// The CA certificate (PEM) that signed the serving certificate; clients trust this.
    pub ca_cert_pem: String,
    /// Base64 of [`Self::ca_cert_pem`]: the value of a CRD's
    /// `spec.conversion.webhook.clientConfig.caBundle`.
    pub ca_bundle_base64: String,
}

impl std::fmt::Debug for Generated {
    // Keeps the private key out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generated")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("ca_bundle_base64", &self.ca_bundle_base64)
            .finish()
    }
}

/// Why [`self_signed`] could not produce certificates.
#[derive(Debug, thiserror::Error)]
#[error("generating a self-signed certificate: {0}")]
pub struct GenerateError(String);

/// Generates a CA and a serving certificate for `hosts` (DNS names or IP addresses, which
/// become the certificate's subject alternative names; the first is also the common name).
///
/// The API server verifies the webhook's certificate against the CRD's `caBundle`, so the
/// URL host it dials (e.g. `127.0.0.1` in `https://127.0.0.1:8443/convert`) must be listed.
pub fn self_signed(hosts: &[&str]) -> Result<Generated, GenerateError> {
    let Some(first) = hosts.first() else {
        return Err(GenerateError(
            "at least one host name or IP address is required".to_string(),
        ));
    };
    let err = |e: rcgen::Error| GenerateError(e.to_string());

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "crd-webhook-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let names: Vec<String> = hosts.iter().map(ToString::to_string).collect();
    let mut params = CertificateParams::new(names).map_err(err)?;
    params.distinguished_name.push(DnType::CommonName, *first);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().map_err(err)?;
    let cert = params.signed_by(&key, &issuer).map_err(err)?;

    let ca_cert_pem = ca_cert.pem();
    Ok(Generated {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        ca_bundle_base64: base64::engine::general_purpose::STANDARD.encode(&ca_cert_pem),
        ca_cert_pem,
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::self_signed;

    #[test]
    fn ca_bundle_is_base64_of_the_ca_pem() {
        let g = self_signed(&["127.0.0.1", "localhost"]).expect("generate");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&g.ca_bundle_base64)
            .expect("base64");
        assert_eq!(decoded, g.ca_cert_pem.as_bytes());
        assert!(g.ca_cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(g.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(g.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(!format!("{g:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn no_hosts_is_an_error() {
        assert!(self_signed(&[]).is_err());
    }
}
