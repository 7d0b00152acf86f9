//! Service-account tokens as kube-apiserver issues and checks them (`pkg/serviceaccount`):
//! `JWTs` signed with the server's service-account key, carrying the `kubernetes.io` private
//! claims (namespace, service account name and uid, optional bound object), issued by
//! `TokenRequest` (`serviceaccounts/<name>/token`) and accepted as bearer tokens.
//!
//! The key is `--service-account-signing-key-file` (PEM, `PKCS#8` EC `P-256` or RSA, or `PKCS#1`
//! RSA), else a `P-256` key generated once into the data dir (`sa.key`). Tokens are verified
//! with the signing key's public half and every key in `--service-account-key-file`.
//! Documents for `OIDC` discovery (`/.well-known/openid-configuration`, `/openid/v1/jwks`) are
//! built here too.
//!
//! Whether the service account still exists with the token's uid is checked by the caller
//! (`auth::Authenticator`), which has the store.
//!
//! Main types: [`TokenIssuer`], [`Claims`], [`BoundObject`].

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivateKeyDer, SubjectPublicKeyInfoDer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// kube-apiserver's conventional `--service-account-issuer` for clusters without one.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The prefix of every service account's user name.
pub const USER_PREFIX: &str = "system:serviceaccount:";

/// The user name of a service account, `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

/// Splits a service account's user name into namespace and name (upstream's `SplitUsername`).
pub fn split_username(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(USER_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// The groups every service account is in: `system:serviceaccounts` and
/// `system:serviceaccounts:<namespace>`.
pub fn groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}

/// Where the signing and verification keys come from.
#[derive(Clone, Debug, Default)]
pub struct KeyOptions {
    /// `--service-account-signing-key-file`; `None` uses (or generates) `<data dir>/sa.key`.
    pub signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file`: more public (or private) keys that verify tokens.
    pub key_files: Vec<PathBuf>,
    /// `--service-account-issuer`; `None` is [`DEFAULT_ISSUER`].
    pub issuer: Option<String>,
}

/// A `kubernetes.io` object reference inside the claims.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The `kubernetes.io` private claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub serviceaccount: Ref,
    /// The pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    /// The secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    /// The node the token is bound to, or (with a pod) the node the pod runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
}

/// The claims of a service-account token, as upstream's `claims.go` writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Issued at (0 when absent).
    #[serde(default)]
    pub iat: i64,
    /// Issuer.
    pub iss: String,
    /// A unique token id (optional: tokens of older servers and other signers have none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    /// The Kubernetes claims.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
    /// Not before (0 when absent).
    #[serde(default)]
    pub nbf: i64,
    /// The subject, the service account's user name.
    pub sub: String,
}

/// An object a token is bound to (`spec.boundObjectRef`): the token dies with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
    /// For a pod, the node it runs on (name and uid) when that node exists: upstream's
    /// `ServiceAccountTokenPodNodeInfo` puts it in the token.
    pub node: Option<(String, String)>,
}

/// Why a token was not accepted (the request is then unauthenticated: 401).
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Not a `JWT` of ours: someone else's token (another authenticator may know it).
    #[error("not a service account token")]
    NotOurs,
    /// Ours but invalid (expired, bad signature).
    #[error("invalid service account token: {0}")]
    Invalid(String),
    /// Ours, correctly signed, but for none of the requested audiences: upstream's
    /// `token audiences ["a"] is invalid for the target audiences ["b"]`, which `TokenReview`
    /// reports verbatim, so it is kept apart from [`TokenError::Invalid`].
    #[error("{0}")]
    Audience(String),
    /// Ours and valid but past its expiry (with go-jose's leeway): upstream's `service account
    /// token has expired`, which `TokenReview` reports.
    #[error("service account token has expired")]
    Expired,
    /// Ours and valid but before its `nbf` (with go-jose's leeway): upstream's `service
    /// account token is not valid yet`.
    #[error("service account token is not valid yet")]
    NotValidYet,
}

/// go-jose's default leeway when a token's expiry is checked, in seconds.
const EXPIRY_LEEWAY: i64 = 60;

struct VerifyKey {
    kid: String,
    alg: Algorithm,
    key: DecodingKey,
    jwk: Value,
}

/// Issues and verifies service-account tokens.
pub struct TokenIssuer {
    issuer: String,
    signing_kid: String,
    signing_alg: Algorithm,
    signing: EncodingKey,
    verify: Vec<VerifyKey>,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .field("kid", &self.signing_kid)
            .finish_non_exhaustive()
    }
}

impl TokenIssuer {
    /// Loads the keys the options name; without a signing key file, `<data_dir>/sa.key`
    /// (see [`generate_key`]).
    pub fn load(options: &KeyOptions, data_dir: &Path) -> anyhow::Result<Self> {
        let signing_path = options
            .signing_key_file
            .clone()
            .unwrap_or_else(|| data_dir.join("sa.key"));
        let pem = std::fs::read_to_string(&signing_path)
            .with_context(|| format!("reading {}", signing_path.display()))?;
        let mut issuer =
            Self::from_signing_pem(&pem, options.issuer.as_deref().unwrap_or(DEFAULT_ISSUER))
                .with_context(|| {
                    format!("loading service-account key {}", signing_path.display())
                })?;
        for file in &options.key_files {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let keys = verify_keys(&text)
                .with_context(|| format!("loading service-account keys {}", file.display()))?;
            for k in keys {
                if !issuer.verify.iter().any(|v| v.kid == k.kid) {
                    issuer.verify.push(k);
                }
            }
        }
        Ok(issuer)
    }

    /// An issuer signing with a PEM private key.
    pub fn from_signing_pem(pem: &str, issuer: &str) -> anyhow::Result<Self> {
        let key = verify_keys(pem)?
            .into_iter()
            .next()
            .context("no private key in PEM")?;
        let private = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| anyhow::anyhow!("no private key in PEM: {e}"))?;
        let signing = match (key.alg, &private) {
            (Algorithm::ES256, PrivateKeyDer::Pkcs8(der)) => {
                EncodingKey::from_ec_der(der.secret_pkcs8_der())
            }
            (Algorithm::RS256, _) => EncodingKey::from_rsa_pem(pem.as_bytes())?,
            _ => bail!("unsupported private key format: use PKCS#8 or PKCS#1 (RSA)"),
        };
        Ok(TokenIssuer {
            issuer: issuer.to_string(),
            signing_kid: key.kid.clone(),
            signing_alg: key.alg,
            signing,
            verify: vec![key],
        })
    }

    /// The issuer (`iss`), which is also the default audience.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Signs a token for a service account, valid from `now` for `expiration_seconds`.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: Vec<String>,
        now: i64,
        expiration_seconds: i64,
        bound: Option<&BoundObject>,
    ) -> anyhow::Result<String> {
        let mut kubernetes = KubernetesClaims {
            namespace: namespace.to_string(),
            serviceaccount: Ref {
                name: name.to_string(),
                uid: uid.to_string(),
            },
            ..KubernetesClaims::default()
        };
        if let Some(b) = bound {
            let r = Some(Ref {
                name: b.name.clone(),
                uid: b.uid.clone(),
            });
            match b.kind.as_str() {
                "Pod" => kubernetes.pod = r,
                "Secret" => kubernetes.secret = r,
                "Node" => kubernetes.node = r,
                _ => {}
            }
            if let Some((name, uid)) = &b.node {
                kubernetes.node = Some(Ref {
                    name: name.clone(),
                    uid: uid.clone(),
                });
            }
        }
        let claims = Claims {
            aud: audiences,
            exp: now + expiration_seconds,
            iat: now,
            iss: self.issuer.clone(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes,
            nbf: now,
            sub: username(namespace, name),
        };
        let mut header = Header::new(self.signing_alg);
        header.kid = Some(self.signing_kid.clone());
        Ok(jsonwebtoken::encode(&header, &claims, &self.signing)?)
    }

    /// Verifies a token's signature, issuer, audience (one of `audiences`) and times, in
    /// upstream's order (`jwtTokenAuthenticator.AuthenticateToken`, then the validator's time
    /// checks), and returns its claims. Tokens that are not `JWTs` from this issuer are
    /// [`TokenError::NotOurs`]; a signed token for other audiences is [`TokenError::Audience`].
    pub fn verify(&self, token: &str, audiences: &[String]) -> Result<Claims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::NotOurs)?;
        // Upstream reads `iss` before checking anything, to route the token to its issuer.
        let payload = token.split('.').nth(1).ok_or(TokenError::NotOurs)?;
        let iss = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.get("iss").and_then(Value::as_str).map(String::from))
            .ok_or(TokenError::NotOurs)?;
        if iss != self.issuer {
            return Err(TokenError::NotOurs);
        }
        let candidates = self
            .verify
            .iter()
            .filter(|k| k.alg == header.alg && header.kid.as_ref().is_none_or(|kid| *kid == k.kid));
        let mut last = TokenError::Invalid("no key verifies the token".into());
        let mut claims = None;
        for key in candidates {
            // Signature and issuer first; the audience and the times are checked below, in
            // upstream's order.
            let mut validation = Validation::new(key.alg);
            validation.set_issuer(&[&self.issuer]);
            validation.validate_aud = false;
            validation.validate_exp = false;
            validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(e) => last = TokenError::Invalid(e.to_string()),
            }
        }
        let claims = claims.ok_or(last)?;
        if !claims.aud.iter().any(|a| audiences.contains(a)) {
            return Err(TokenError::Audience(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quote_list(&claims.aud),
                go_quote_list(audiences)
            )));
        }
        // go-jose's `Validate` with its default one-minute leeway.
        let now = jiff::Timestamp::now().as_second();
        if now > claims.exp + EXPIRY_LEEWAY {
            return Err(TokenError::Expired);
        }
        if claims.nbf != 0 && now + EXPIRY_LEEWAY < claims.nbf {
            return Err(TokenError::NotValidYet);
        }
        Ok(claims)
    }

    /// `/.well-known/openid-configuration` for `jwks_uri` at `server_url`, as upstream's
    /// `serviceaccount.NewOpenIDMetadata` builds it.
    pub fn openid_configuration(&self, server_url: &str) -> Value {
        let mut algs: Vec<&str> = self.verify.iter().map(|k| alg_name(k.alg)).collect();
        algs.sort_unstable();
        algs.dedup();
        json!({
            "issuer": self.issuer,
            "jwks_uri": format!("{}/openid/v1/jwks", server_url.trim_end_matches('/')),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
        })
    }

    /// `/openid/v1/jwks`: the public keys that verify tokens.
    pub fn jwks(&self) -> Value {
        json!({ "keys": self.verify.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() })
    }
}

/// A new `P-256` signing key, PEM (`PKCS#8`), for a data dir that has none.
pub fn generate_key() -> anyhow::Result<String> {
    Ok(rcgen::KeyPair::generate()
        .context("generating a service-account key")?
        .serialize_pem())
}

/// Go's `%q` of a `[]string` (`["a" "b"]`), as upstream's audience error prints the lists.
fn go_quote_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| crd_core::field::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

fn alg_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::ES256 => "ES256",
        _ => "RS256",
    }
}

/// The verification keys in a PEM text: private keys (their public halves) and public keys.
fn verify_keys(pem: &str) -> anyhow::Result<Vec<VerifyKey>> {
    let mut keys = Vec::new();
    for private in PrivateKeyDer::pem_slice_iter(pem.as_bytes()) {
        let private = private.map_err(|e| anyhow::anyhow!("parsing PEM: {e}"))?;
        keys.push(public_of_private(&private)?);
    }
    for public in SubjectPublicKeyInfoDer::pem_slice_iter(pem.as_bytes()) {
        let public = public.map_err(|e| anyhow::anyhow!("parsing PEM: {e}"))?;
        keys.push(public_of_spki(public.as_ref())?);
    }
    if keys.is_empty() {
        bail!("no PEM private or public key found");
    }
    Ok(keys)
}

fn public_of_private(private: &PrivateKeyDer<'_>) -> anyhow::Result<VerifyKey> {
    use ring::signature::{
        ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _, RsaKeyPair,
    };
    let rng = ring::rand::SystemRandom::new();
    match private {
        PrivateKeyDer::Pkcs8(der) => {
            let der = der.secret_pkcs8_der();
            if let Ok(ec) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng) {
                return ec_key(ec.public_key().as_ref());
            }
            let rsa = RsaKeyPair::from_pkcs8(der)
                .map_err(|e| anyhow::anyhow!("unsupported PKCS#8 key (want P-256 or RSA): {e}"))?;
            rsa_public(&rsa)
        }
        PrivateKeyDer::Pkcs1(der) => {
            let rsa = RsaKeyPair::from_der(der.secret_pkcs1_der())
                .map_err(|e| anyhow::anyhow!("invalid RSA key: {e}"))?;
            rsa_public(&rsa)
        }
        _ => bail!("unsupported private key format: use PKCS#8 or PKCS#1 (RSA)"),
    }
}

fn rsa_public(rsa: &ring::signature::RsaKeyPair) -> anyhow::Result<VerifyKey> {
    let c: ring::rsa::PublicKeyComponents<Vec<u8>> = rsa.public().into();
    rsa_key(&c.n, &c.e)
}

fn public_of_spki(der: &[u8]) -> anyhow::Result<VerifyKey> {
    use x509_parser::prelude::FromDer;
    use x509_parser::public_key::PublicKey;
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der)
        .map_err(|e| anyhow::anyhow!("parsing public key: {e}"))?;
    match spki.parsed() {
        Ok(PublicKey::EC(point)) => ec_key(point.data()),
        Ok(PublicKey::RSA(rsa)) => rsa_key(rsa.modulus, rsa.exponent),
        _ => bail!("unsupported public key (want P-256 or RSA)"),
    }
}

/// A `P-256` key from its uncompressed point (`04 || x || y`).
fn ec_key(point: &[u8]) -> anyhow::Result<VerifyKey> {
    if point.len() != 65 || point[0] != 4 {
        bail!("unsupported EC key: only P-256 is supported");
    }
    let (x, y) = (
        URL_SAFE_NO_PAD.encode(&point[1..33]),
        URL_SAFE_NO_PAD.encode(&point[33..]),
    );
    // kid: upstream hashes the PKIX DER of the public key; P-256's SPKI is a fixed prefix
    // followed by the point.
    let mut spki = hex_bytes("3059301306072a8648ce3d020106082a8648ce3d030107034200");
    spki.extend_from_slice(point);
    let kid = URL_SAFE_NO_PAD.encode(Sha256::digest(&spki));
    Ok(VerifyKey {
        key: DecodingKey::from_ec_components(&x, &y)?,
        alg: Algorithm::ES256,
        jwk: json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256",
            "x": x, "y": y}),
        kid,
    })
}

fn rsa_key(modulus: &[u8], exponent: &[u8]) -> anyhow::Result<VerifyKey> {
    let trim = |b: &[u8]| -> Vec<u8> {
        let first = b.iter().position(|&x| x != 0).unwrap_or(b.len());
        b[first..].to_vec()
    };
    let (n, e) = (
        URL_SAFE_NO_PAD.encode(trim(modulus)),
        URL_SAFE_NO_PAD.encode(trim(exponent)),
    );
    let kid = URL_SAFE_NO_PAD.encode(Sha256::digest(format!("{n}.{e}")));
    Ok(VerifyKey {
        key: DecodingKey::from_rsa_components(&n, &e)?,
        alg: Algorithm::RS256,
        jwk: json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": n, "e": e}),
        kid,
    })
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer() -> TokenIssuer {
        let key = rcgen::KeyPair::generate().unwrap();
        TokenIssuer::from_signing_pem(&key.serialize_pem(), DEFAULT_ISSUER).unwrap()
    }

    #[test]
    fn issued_tokens_verify_with_upstream_claims() {
        let i = issuer();
        let aud = vec![DEFAULT_ISSUER.to_string()];
        let now = jiff::Timestamp::now().as_second();
        let token = i
            .issue("ns", "sa1", "u-1", aud.clone(), now, 600, None)
            .unwrap();
        let claims = i.verify(&token, &aud).unwrap();
        assert_eq!(claims.sub, "system:serviceaccount:ns:sa1");
        assert_eq!(claims.kubernetes.serviceaccount.uid, "u-1");
        assert_eq!(claims.exp - claims.iat, 600);
        // The payload is upstream's shape.
        let payload: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            payload["kubernetes.io"],
            json!({"namespace": "ns", "serviceaccount": {"name": "sa1", "uid": "u-1"}})
        );
        assert_eq!(payload["iss"], DEFAULT_ISSUER);
    }

    #[test]
    fn expired_foreign_and_wrong_audience_tokens_are_refused() {
        let i = issuer();
        let aud = vec![DEFAULT_ISSUER.to_string()];
        let long_ago = jiff::Timestamp::now().as_second() - 10_000;
        let expired = i
            .issue("ns", "sa1", "u", aud.clone(), long_ago, 600, None)
            .unwrap();
        // Upstream's text, which `TokenReview` reports.
        let err = i.verify(&expired, &aud).unwrap_err();
        assert!(matches!(err, TokenError::Expired));
        assert_eq!(err.to_string(), "service account token has expired");
        let now = jiff::Timestamp::now().as_second();
        let other_aud = i
            .issue("ns", "sa1", "u", vec!["vault".into()], now, 600, None)
            .unwrap();
        match i.verify(&other_aud, &aud) {
            Err(TokenError::Audience(msg)) => assert_eq!(
                msg,
                r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]"#
            ),
            other => panic!("audience error expected, got {other:?}"),
        }
        // Upstream checks the audience before the times: an expired token for other
        // audiences is refused for its audience.
        let old_other_aud = i
            .issue(
                "ns",
                "sa1",
                "u",
                vec!["a".into(), "b".into()],
                long_ago,
                600,
                None,
            )
            .unwrap();
        assert!(matches!(
            i.verify(&old_other_aud, &aud),
            Err(TokenError::Audience(msg))
                if msg.starts_with(r#"token audiences ["a" "b"] is invalid"#)
        ));
        // One shared audience is enough.
        assert!(i.verify(&other_aud, &["x".into(), "vault".into()]).is_ok());
        // Signed by another key with our issuer: invalid, not accepted.
        let forged = issuer()
            .issue("ns", "sa1", "u", aud.clone(), now, 600, None)
            .unwrap();
        assert!(matches!(
            i.verify(&forged, &aud),
            Err(TokenError::Invalid(_))
        ));
        assert!(matches!(
            i.verify("not-a-jwt", &aud),
            Err(TokenError::NotOurs)
        ));
    }

    /// Regression: a token without `jti` (older servers, other signers) was refused, and one
    /// whose `nbf` is ahead was accepted. `jti`, `iat` and `nbf` are optional, as upstream's
    /// claims are, and a future `nbf` (past go-jose's leeway) is "not valid yet".
    #[test]
    fn optional_claims_and_not_before() {
        let i = issuer();
        let aud = vec![DEFAULT_ISSUER.to_string()];
        let now = jiff::Timestamp::now().as_second();
        let sign = |claims: &Value| {
            let mut header = Header::new(i.signing_alg);
            header.kid = Some(i.signing_kid.clone());
            jsonwebtoken::encode(&header, claims, &i.signing).unwrap()
        };
        let base = json!({"aud": aud, "exp": now + 600, "iss": DEFAULT_ISSUER,
                          "sub": "system:serviceaccount:ns:sa1",
                          "kubernetes.io": {"namespace": "ns", "serviceaccount": {"name": "sa1", "uid": "u"}}});
        assert!(i.verify(&sign(&base), &aud).is_ok(), "no jti, iat or nbf");
        let mut soon = base.clone();
        soon["nbf"] = json!(now + 30);
        assert!(i.verify(&sign(&soon), &aud).is_ok(), "within the leeway");
        let mut later = base.clone();
        later["nbf"] = json!(now + 3600);
        let err = i.verify(&sign(&later), &aud).unwrap_err();
        assert!(matches!(err, TokenError::NotValidYet));
        assert_eq!(err.to_string(), "service account token is not valid yet");
    }

    #[test]
    fn jwks_and_discovery_documents() {
        let i = issuer();
        let jwks = i.jwks();
        assert_eq!(jwks["keys"][0]["kty"], "EC");
        assert_eq!(jwks["keys"][0]["alg"], "ES256");
        let doc = i.openid_configuration("https://127.0.0.1:6443");
        assert_eq!(doc["jwks_uri"], "https://127.0.0.1:6443/openid/v1/jwks");
        assert_eq!(
            doc["id_token_signing_alg_values_supported"],
            json!(["ES256"])
        );
    }

    #[test]
    fn usernames_split_as_upstream() {
        assert_eq!(
            split_username("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        assert_eq!(split_username("system:serviceaccount:ns"), None);
        assert_eq!(split_username("jane"), None);
        assert_eq!(split_username("system:serviceaccount:a:b:c"), None);
    }
}
