//! OpenID Connect ID tokens, checked as kube-apiserver's JWT authenticator checks them: one
//! [`JwtConfig`] per issuer, from the legacy `--oidc-*` flags ([`OidcOptions`]) or an
//! `AuthenticationConfiguration` file ([`super::authn_config`]). A token whose (unverified)
//! `iss` is the issuer's is this authenticator's to decide; it must be for one of the audiences,
//! unexpired, signed with an allowed algorithm by a key of the issuer's JWKS (found through its
//! discovery document), and pass the claim validation rules. The user's name, uid, groups and
//! extra come from claims (prefixed) or CEL expressions over `claims`, and user validation rules
//! (CEL over `user`) have the last word.
//!
//! The discovery document is fetched in the background from start-up, retried every 10 s as
//! upstream retries it; a request that arrives during the first attempt waits for it, so the
//! server's first requests are not refused only because it started a moment ago.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::{Mutex, watch};

/// The signing algorithms upstream allows for `--oidc-signing-algs`.
const ALLOWED_ALGS: &[&str] = &[
    "RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512",
];

/// How long before `nbf` a token is already accepted (go-oidc v2's leeway).
const NBF_LEEWAY_SECS: i64 = 60;

/// How often a failed discovery is retried (upstream's poll interval).
const RETRY: Duration = Duration::from_secs(10);

/// How soon after a fetch the JWKS may be fetched again for a key it did not have.
const REFETCH_AFTER: Duration = Duration::from_secs(1);

/// kube-apiserver's `--oidc-*` flags.
#[derive(Clone, Debug, Default)]
pub struct OidcOptions {
    /// `--oidc-issuer-url`: the `iss` of the tokens, an `https` URL.
    pub issuer_url: String,
    /// `--oidc-client-id`: the audience every token must be for.
    pub client_id: String,
    /// `--oidc-ca-file`: the CAs the issuer's certificate is checked against (else the system's).
    pub ca_file: Option<PathBuf>,
    /// `--oidc-username-claim` (`sub` when empty).
    pub username_claim: String,
    /// `--oidc-username-prefix`: `None` when not given (then, but for `email`, the issuer URL
    /// and `#`); `-` for none.
    pub username_prefix: Option<String>,
    /// `--oidc-groups-claim`: a string or list of strings claim naming the user's groups.
    pub groups_claim: Option<String>,
    /// `--oidc-groups-prefix`.
    pub groups_prefix: String,
    /// `--oidc-required-claim`: claims that must be present with these string values.
    pub required_claims: BTreeMap<String, String>,
    /// `--oidc-signing-algs` (`RS256` when empty).
    pub signing_algs: Vec<String>,
}

impl OidcOptions {
    /// The options as kube-apiserver checks them at start-up; `Err` is its message.
    pub fn validate(&self) -> Result<(), String> {
        if self.issuer_url.is_empty() || self.client_id.is_empty() {
            return Err(
                "oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set"
                    .into(),
            );
        }
        // The flags become `jwt[0]` of an authentication configuration, checked as one.
        let mut errors = crd_core::ErrorList::new();
        super::authn_config::check_url(
            &self.issuer_url,
            &[],
            &crd_core::Path::new("jwt")
                .index(0)
                .child("issuer")
                .child("url"),
            &mut errors,
        );
        if !errors.is_empty() {
            return Err(format!(
                "invalid authentication configuration: {}",
                errors.aggregate()
            ));
        }
        check_signing_algs(&self.signing_algs)
    }
}

/// `--oidc-signing-algs`: upstream's allowlist (`oidc: unsupported signing alg: "HS256"`), less
/// `ES512`, which this server cannot verify.
pub fn check_signing_algs(algs: &[String]) -> Result<(), String> {
    for alg in algs {
        if !ALLOWED_ALGS.contains(&alg.as_str()) {
            return Err(format!("oidc: unsupported signing alg: {alg:?}"));
        }
        if Algorithm::from_str(alg).is_err() {
            return Err(format!(
                "oidc: signing alg {alg:?} is not supported by this server (use RS*, PS*, ES256 or ES384)"
            ));
        }
    }
    Ok(())
}

/// The signing algorithms an authentication configuration file's authenticators accept:
/// every allowed one (upstream's `AllValidSigningAlgorithms`) this server can verify.
pub fn all_signing_algs() -> Vec<String> {
    ALLOWED_ALGS
        .iter()
        .filter(|a| Algorithm::from_str(a).is_ok())
        .map(|a| (*a).to_string())
        .collect()
}

impl OidcOptions {
    /// The JWT authenticator these flags stand for, as kube-apiserver converts them (the CA file
    /// read now).
    pub fn to_jwt(&self) -> Result<JwtConfig, String> {
        self.validate()?;
        let ca_pem = self
            .ca_file
            .as_ref()
            .map(|path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display())))
            .transpose()?;
        let username_claim = if self.username_claim.is_empty() {
            "sub".to_string()
        } else {
            self.username_claim.clone()
        };
        // Upstream's legacy flag rule: no prefix flag means the issuer URL and `#`, but for
        // `email`; `-` means none.
        let prefix = match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(p) if !p.is_empty() => p.to_string(),
            _ if username_claim == "email" => String::new(),
            _ => format!("{}#", self.issuer_url),
        };
        Ok(JwtConfig {
            issuer_url: self.issuer_url.clone(),
            discovery_url: None,
            ca_pem,
            audiences: vec![self.client_id.clone()],
            username: Mapping::Claim {
                claim: username_claim,
                prefix,
            },
            groups: self
                .groups_claim
                .clone()
                .filter(|c| !c.is_empty())
                .map(|claim| Mapping::Claim {
                    claim,
                    prefix: self.groups_prefix.clone(),
                }),
            uid: None,
            extra: Vec::new(),
            claim_rules: self
                .required_claims
                .iter()
                .map(|(claim, value)| ClaimRule::Claim {
                    claim: claim.clone(),
                    required_value: value.clone(),
                })
                .collect(),
            user_rules: Vec::new(),
            signing_algs: self.signing_algs.clone(),
        })
    }
}

/// A CEL expression of an authenticator and its source text (which messages quote).
#[derive(Clone, Debug)]
pub struct Cel {
    /// The compiled expression.
    pub program: Arc<crd_cel::Expression>,
    /// Its source.
    pub source: String,
}

/// How a user attribute is read from the claims: a claim with a prefix, or an expression.
#[derive(Clone, Debug)]
pub enum Mapping {
    /// `claim` (a string, or for groups a string or list of strings), each value prefixed.
    Claim {
        /// The claim's name.
        claim: String,
        /// Prepended to each value.
        prefix: String,
    },
    /// A CEL expression over `claims`.
    Expression(Cel),
}

/// A claim validation rule.
#[derive(Clone, Debug)]
pub enum ClaimRule {
    /// The claim must be a string equal to `required_value`.
    Claim {
        /// The claim's name.
        claim: String,
        /// Its required value.
        required_value: String,
    },
    /// A boolean CEL expression over `claims`; `message` says why when it is false.
    Expression {
        /// The rule.
        cel: Cel,
        /// The refusal's text.
        message: String,
    },
}

/// One JWT authenticator (upstream's `JWTAuthenticator`), validated.
#[derive(Clone, Debug)]
pub struct JwtConfig {
    /// `issuer.url`: the tokens' `iss`.
    pub issuer_url: String,
    /// `issuer.discoveryURL`: where the discovery document is read instead of
    /// `{url}/.well-known/openid-configuration`.
    pub discovery_url: Option<String>,
    /// `issuer.certificateAuthority` (PEM): the CAs the issuer's certificate is checked
    /// against (else the system's).
    pub ca_pem: Option<Vec<u8>>,
    /// `issuer.audiences`: a token must be for one of them.
    pub audiences: Vec<String>,
    /// `claimMappings.username`.
    pub username: Mapping,
    /// `claimMappings.groups`.
    pub groups: Option<Mapping>,
    /// `claimMappings.uid`.
    pub uid: Option<Mapping>,
    /// `claimMappings.extra`: keys and their value expressions.
    pub extra: Vec<(String, Cel)>,
    /// `claimValidationRules`.
    pub claim_rules: Vec<ClaimRule>,
    /// `userValidationRules`: boolean expressions over `user`, with their messages.
    pub user_rules: Vec<(Cel, String)>,
    /// The signing algorithms accepted (`RS256` when empty).
    pub signing_algs: Vec<String>,
}

/// Who a verified token says the user is (`auth` adds `system:authenticated`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OidcUser {
    /// The username mapping's value.
    pub name: String,
    /// The uid mapping's value.
    pub uid: String,
    /// The groups mapping's values.
    pub groups: Vec<String>,
    /// The extra mappings' values (keys without a value are left out).
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Why a token did not authenticate here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OidcError {
    /// Not this issuer's token: other authenticators decide.
    NotOurs,
    /// This issuer's token, refused; upstream's message (what `TokenReview` reports).
    Refused(String),
}

/// What discovery has found so far.
#[derive(Clone)]
enum Discovery {
    /// The first attempt is under way.
    Pending,
    /// The last attempt failed; a retry is scheduled.
    Failed,
    /// The JWKS's address.
    Ready(String),
}

/// The issuer's keys, fetched from its JWKS.
struct Keys {
    set: Vec<(Option<String>, Option<Algorithm>, DecodingKey)>,
    fetched: Option<Instant>,
}

/// Verifies ID tokens of one issuer.
pub struct OidcAuthenticator {
    config: JwtConfig,
    algs: Vec<String>,
    client: reqwest::Client,
    discovery: watch::Sender<Discovery>,
    keys: Mutex<Keys>,
}

impl OidcAuthenticator {
    /// An authenticator for `config`; `start` begins its discovery.
    pub fn new(config: JwtConfig) -> Result<Arc<Self>, String> {
        // reqwest's TLS needs a process-wide provider; the server's is ring (a no-op when one is
        // installed already).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent("kube-apiserver-oidc");
        if let Some(pem) = &config.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| format!("Failed to read the CA contents: {e}"))?;
            if certs.is_empty() {
                return Err("Failed to read the CA contents: data does not contain any valid RSA or ECDSA certificates".into());
            }
            builder = builder.tls_certs_only(certs);
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        let algs = if config.signing_algs.is_empty() {
            vec!["RS256".to_string()]
        } else {
            config.signing_algs.clone()
        };
        Ok(Arc::new(OidcAuthenticator {
            config,
            algs,
            client,
            discovery: watch::channel(Discovery::Pending).0,
            keys: Mutex::new(Keys {
                set: Vec::new(),
                fetched: None,
            }),
        }))
    }

    /// One authenticator per configuration, or the first one's error.
    pub fn all(configs: Vec<JwtConfig>) -> Result<Vec<Arc<Self>>, String> {
        configs.into_iter().map(Self::new).collect()
    }

    /// The issuer whose tokens this authenticator judges.
    fn issuer(&self) -> &str {
        &self.config.issuer_url
    }

    /// Fetches the discovery document in the background until it is had (every 10 s after a
    /// failure, as upstream), then the keys.
    pub fn start(self: &Arc<Self>) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                match this.discover().await {
                    Ok(jwks_uri) => {
                        this.discovery.send_replace(Discovery::Ready(jwks_uri));
                        // The keys now, so the first token need not wait for them.
                        if let Err(e) = this.refresh_keys(None).await {
                            tracing::warn!(issuer = %this.issuer(), error = %e, "oidc: fetching keys");
                        }
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(issuer = %this.issuer(), error = %e, "oidc authenticator: initializing plugin");
                        this.discovery.send_replace(Discovery::Failed);
                        tokio::time::sleep(RETRY).await;
                    }
                }
            }
        });
    }

    /// go-oidc's `NewProvider`: the discovery document, whose `issuer` must be ours.
    async fn discover(&self) -> Result<String, String> {
        let url = self.config.discovery_url.clone().unwrap_or_else(|| {
            format!(
                "{}/.well-known/openid-configuration",
                self.issuer().trim_end_matches('/')
            )
        });
        let resp = self
            .client
            .get(&url)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| e.to_string())?;
        if status != reqwest::StatusCode::OK {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        let doc: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("oidc: failed to decode provider discovery object: {e}"))?;
        let issuer = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
        if issuer != self.issuer() {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {issuer:?}",
                self.issuer()
            ));
        }
        doc.get("jwks_uri")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| "oidc: provider discovery object has no jwks_uri".to_string())
    }

    /// Fetches the JWKS again unless it was fetched within [`REFETCH_AFTER`] (`after`: the
    /// fetch the caller already saw, so that concurrent callers fetch once).
    async fn refresh_keys(&self, after: Option<Instant>) -> Result<(), String> {
        let Discovery::Ready(jwks_uri) = self.discovery.borrow().clone() else {
            return Err("oidc: authenticator not initialized".into());
        };
        let mut keys = self.keys.lock().await;
        if keys.fetched != after || keys.fetched.is_some_and(|at| at.elapsed() < REFETCH_AFTER) {
            return Ok(());
        }
        keys.fetched = Some(Instant::now());
        let resp = self
            .client
            .get(&jwks_uri)
            .send()
            .await
            .map_err(|e| format!("fetching keys {e}"))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!(
                "oidc: get keys failed: {status} {}",
                String::from_utf8_lossy(&body)
            ));
        }
        let set: JwkSet = serde_json::from_slice(&body)
            .map_err(|e| format!("oidc: failed to decode keys: {e}"))?;
        keys.set = set
            .keys
            .iter()
            .filter_map(|jwk| {
                let key = DecodingKey::from_jwk(jwk).ok()?;
                let alg = jwk
                    .common
                    .key_algorithm
                    .and_then(|a| Algorithm::from_str(&a.to_string()).ok());
                Some((jwk.common.key_id.clone(), alg, key))
            })
            .collect();
        Ok(())
    }

    /// Authenticates `token` if it is this issuer's.
    pub async fn authenticate(&self, token: &str) -> Result<OidcUser, OidcError> {
        let Some(claims) = untrusted_claims(token)
            .filter(|c| c.get("iss").and_then(Value::as_str) == Some(self.issuer()))
        else {
            return Err(OidcError::NotOurs);
        };
        let refuse = |e: String| OidcError::Refused(e);
        // During the first discovery, wait for it.
        let mut rx = self.discovery.subscribe();
        let ready = rx
            .wait_for(|d| !matches!(d, Discovery::Pending))
            .await
            .is_ok_and(|d| matches!(*d, Discovery::Ready(_)));
        if !ready {
            return Err(refuse("oidc: authenticator not initialized".into()));
        }
        self.verify(token, &claims)
            .await
            .map_err(|e| refuse(format!("oidc: verify token: {e}")))?;
        self.user(&claims).map_err(refuse)
    }

    /// go-oidc's `IDTokenVerifier.Verify`: audience, expiry, not-before, algorithm, signature.
    async fn verify(
        &self,
        token: &str,
        claims: &serde_json::Map<String, Value>,
    ) -> Result<(), String> {
        let audiences: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        };
        let wanted = &self.config.audiences;
        if !audiences.iter().any(|a| wanted.contains(a)) {
            // go-oidc's own check for one audience; upstream's `verifyAudience` for several.
            if let [one] = wanted.as_slice() {
                return Err(format!(
                    "oidc: expected audience {one:?} got {}",
                    go_quote_list(&audiences)
                ));
            }
            let mut sorted = wanted.clone();
            sorted.sort();
            return Err(format!(
                "oidc: expected audience in {} got {}",
                go_quote_list(&sorted),
                go_quote_list(&audiences)
            ));
        }
        let now = jiff::Timestamp::now().as_second();
        let exp = claims.get("exp").and_then(Value::as_f64).map(seconds);
        if exp.is_none_or(|e| e < now) {
            return Err(format!(
                "oidc: token is expired (Token Expiry: {})",
                go_time(exp.unwrap_or(i64::MIN))
            ));
        }
        if let Some(nbf) = claims.get("nbf").and_then(Value::as_f64).map(seconds)
            && now + NBF_LEEWAY_SECS < nbf
        {
            return Err(format!(
                "oidc: current time {} before the nbf (not before) time: {}",
                go_time(now),
                go_time(nbf)
            ));
        }
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| format!("oidc: malformed jwt: {e}"))?;
        let alg = format!("{:?}", header.alg);
        if !self.algs.contains(&alg) {
            return Err(format!(
                "oidc: id token signed with unsupported algorithm, expected {} got {alg:?}",
                go_quote_list(&self.algs)
            ));
        }
        let seen = self.keys.lock().await.fetched;
        if self.signed_by_a_key(token, &header).await {
            return Ok(());
        }
        // A key the cached set does not have: the issuer may have rotated its keys.
        self.refresh_keys(seen).await?;
        if self.signed_by_a_key(token, &header).await {
            return Ok(());
        }
        Err("failed to verify signature: failed to verify id token signature".into())
    }

    /// Whether a key of the cached set (the one the header names, or any) verifies `token`.
    async fn signed_by_a_key(&self, token: &str, header: &jsonwebtoken::Header) -> bool {
        let keys = self.keys.lock().await;
        let mut validation = Validation::new(header.alg);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        keys.set
            .iter()
            .filter(|(kid, alg, _)| {
                header
                    .kid
                    .as_ref()
                    .is_none_or(|want| kid.as_ref() == Some(want))
                    && alg.is_none_or(|a| a == header.alg)
            })
            .any(|(_, _, key)| jsonwebtoken::decode::<Value>(token, key, &validation).is_ok())
    }

    /// The user the claims name, in upstream's order: username, groups, uid, extra, then the
    /// claim validation rules (claims, then expressions) and the user validation rules.
    fn user(&self, claims: &serde_json::Map<String, Value>) -> Result<OidcUser, String> {
        let c = &self.config;
        let json = Value::Object(claims.clone());
        let name = match &c.username {
            Mapping::Claim { claim, prefix } => {
                let name = claim_string(claims, claim)
                    .map_err(|e| format!("oidc: parse username claims {claim:?}: {e}"))?;
                if claim == "email" {
                    check_email_verified(claims)?;
                }
                format!("{prefix}{name}")
            }
            Mapping::Expression(cel) => string_expression(cel, &json, "username")?,
        };
        let groups = match &c.groups {
            None => Vec::new(),
            Some(Mapping::Claim { claim, prefix }) => match claims.get(claim) {
                None => Vec::new(),
                Some(value) => string_or_array(value)
                    .ok_or_else(|| {
                        format!(
                            "oidc: parse groups claim {claim:?}: json: cannot unmarshal {} into Go value of type string",
                            crd_core::go_decode::json_kind(value)
                        )
                    })?
                    .into_iter()
                    .map(|g| format!("{prefix}{g}"))
                    .collect(),
            },
            Some(Mapping::Expression(cel)) => {
                let v = eval(cel, "claims", &json)
                    .map_err(|e| format!("oidc: error evaluating group claim expression: {e}"))?;
                string_list(&v)
                    .map_err(|e| format!("oidc: error evaluating group claim expression: {e}"))?
            }
        };
        let uid = match &c.uid {
            None => String::new(),
            Some(Mapping::Claim { claim, .. }) => claim_string(claims, claim)
                .map_err(|e| format!("oidc: parse uid claim {claim:?}: {e}"))?,
            Some(Mapping::Expression(cel)) => string_expression(cel, &json, "uid")?,
        };
        let mut extra = BTreeMap::new();
        for (key, cel) in &c.extra {
            let v = eval(cel, "claims", &json)?;
            let values = string_list(&v).map_err(|e| {
                format!(
                    "oidc: error evaluating extra claim expression: {}: {e}",
                    cel.source
                )
            })?;
            if !values.is_empty() {
                extra.insert(key.clone(), values);
            }
        }
        for rule in &c.claim_rules {
            if let ClaimRule::Claim {
                claim,
                required_value,
            } = rule
            {
                if !claims.contains_key(claim) {
                    return Err(format!(
                        "oidc: required claim {claim} not present in ID token"
                    ));
                }
                let got = claim_string(claims, claim)
                    .map_err(|e| format!("oidc: parse claim {claim}: {e}"))?;
                if got != *required_value {
                    return Err(format!(
                        "oidc: required claim {claim} value does not match. Got = {got}, want = {required_value}"
                    ));
                }
            }
        }
        for rule in &c.claim_rules {
            if let ClaimRule::Expression { cel, message } = rule {
                check_rule(cel, message, "claims", &json).map_err(|e| {
                    format!("oidc: error evaluating claim validation expression: {e}")
                })?;
            }
        }
        let user = OidcUser {
            name,
            uid,
            groups,
            extra,
        };
        if !c.user_rules.is_empty() {
            let info = serde_json::json!({
                "username": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra,
            });
            for (cel, message) in &c.user_rules {
                check_rule(cel, message, "user", &info).map_err(|e| {
                    format!("oidc: error evaluating user info validation rule: {e}")
                })?;
            }
        }
        Ok(user)
    }
}

/// The per-call cost limit of authentication expressions (upstream's `PerCallLimit`).
const CEL_COST_LIMIT: i64 = 1_000_000;

/// An expression's value with `var` bound.
fn eval(cel: &Cel, var: &str, value: &Value) -> Result<Value, String> {
    cel.program
        .eval(&[(var, value)], CEL_COST_LIMIT)
        .map_err(|e| match e {
            crd_cel::ExpressionError::CostLimit => {
                "operation cancelled: actual cost limit exceeded".into()
            }
            crd_cel::ExpressionError::Runtime(m) => m,
            crd_cel::ExpressionError::NotBool => {
                "validation expression must return a boolean".into()
            }
        })
}

/// A username or uid expression's string (upstream's `<what> claim expression must return a
/// string`).
fn string_expression(cel: &Cel, claims: &Value, what: &str) -> Result<String, String> {
    let failed = |e: &str| format!("oidc: error evaluating {what} claim expression: {e}");
    match eval(cel, "claims", claims).map_err(|e| failed(&e))? {
        Value::String(s) => Ok(s),
        _ => Err(failed(&format!(
            "{what} claim expression must return a string"
        ))),
    }
}

/// A validation rule: `true` passes; `false` is upstream's `validation expression '...'
/// failed: <message>`.
fn check_rule(cel: &Cel, message: &str, var: &str, value: &Value) -> Result<(), String> {
    match eval(cel, var, value)? {
        Value::Bool(true) => Ok(()),
        Value::Bool(false) => Err(format!(
            "validation expression '{}' failed: {message}",
            cel.source
        )),
        _ => Err("validation expression must return a boolean".into()),
    }
}

/// A claim that must be a string (`claim not present`, or Go's unmarshal error).
fn claim_string(claims: &serde_json::Map<String, Value>, claim: &str) -> Result<String, String> {
    match claims.get(claim) {
        None => Err("claim not present".into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            crd_core::go_decode::json_kind(other)
        )),
    }
}

/// With the username from `email`: a present `email_verified` must be `true`.
fn check_email_verified(claims: &serde_json::Map<String, Value>) -> Result<(), String> {
    match claims.get("email_verified") {
        None | Some(Value::Bool(true)) => Ok(()),
        Some(Value::Bool(false)) => Err("oidc: email not verified".into()),
        Some(other) => Err(format!(
            "oidc: parse 'email_verified' claim: json: cannot unmarshal {} into Go value of type bool",
            crd_core::go_decode::json_kind(other)
        )),
    }
}

/// A claim that is a string or a list of strings (upstream's `stringOrArray`).
fn string_or_array(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items.iter().map(|v| v.as_str().map(String::from)).collect(),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}

/// An expression's string or list of strings, empty strings dropped (upstream's
/// `convertCELValueToStringList`).
fn string_list(value: &Value) -> Result<Vec<String>, String> {
    const WANT: &str = "expression must return a string or a list of strings";
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .filter(|v| v.as_str() != Some(""))
            .map(|v| v.as_str().map(String::from).ok_or_else(|| WANT.to_string()))
            .collect(),
        _ => Err(WANT.into()),
    }
}

/// The payload of a compact JWT, unverified (upstream's `untrustedIssuer` reads `iss` so).
fn untrusted_claims(token: &str) -> Option<serde_json::Map<String, Value>> {
    if token.trim_start().starts_with('{') {
        return None;
    }
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// A JSON number of seconds as whole seconds (floored, saturating).
#[allow(clippy::cast_possible_truncation)]
fn seconds(v: f64) -> i64 {
    v.floor() as i64
}

/// Go's `time.Time.String()` of a Unix time in UTC (`2026-12-01 21:14:18 +0000 UTC`).
fn go_time(secs: i64) -> String {
    match jiff::Timestamp::from_second(secs) {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
        Err(_) => "0001-01-01 00:00:00 +0000 UTC".into(),
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(issuer: &str, client: &str) -> OidcOptions {
        OidcOptions {
            issuer_url: issuer.into(),
            client_id: client.into(),
            ..OidcOptions::default()
        }
    }

    /// Flags in, kube-apiserver's start-up verdict out.
    #[test]
    fn flags_are_checked_as_upstream_checks_them() {
        let with_algs = |algs: &[&str]| OidcOptions {
            signing_algs: algs.iter().map(|a| (*a).to_string()).collect(),
            ..options("https://issuer.example", "kubernetes")
        };
        let together = "oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set";
        let cases: Vec<(OidcOptions, Result<(), &str>)> = vec![
            (options("https://issuer.example", "kubernetes"), Ok(())),
            (options("https://issuer.example/path", "k"), Ok(())),
            (options("https://issuer.example", ""), Err(together)),
            (options("", "kubernetes"), Err(together)),
            (
                options("http://issuer.example", "k"),
                Err(
                    r#"invalid authentication configuration: jwt[0].issuer.url: Invalid value: "http://issuer.example": URL scheme must be https"#,
                ),
            ),
            (
                options("https://issuer.example?a=b", "k"),
                Err(
                    r#"invalid authentication configuration: jwt[0].issuer.url: Invalid value: "https://issuer.example?a=b": URL must not contain a query"#,
                ),
            ),
            (with_algs(&["RS256", "ES256", "PS512"]), Ok(())),
            (
                with_algs(&["HS256"]),
                Err(r#"oidc: unsupported signing alg: "HS256""#),
            ),
            (
                with_algs(&["ES512"]),
                Err(
                    r#"oidc: signing alg "ES512" is not supported by this server (use RS*, PS*, ES256 or ES384)"#,
                ),
            ),
        ];
        for (opts, want) in cases {
            assert_eq!(opts.validate(), want.map_err(String::from), "{opts:?}");
        }
        assert!(!all_signing_algs().contains(&"ES512".to_string()));
        assert_eq!(all_signing_algs().len(), 8);
    }

    fn claims(v: Value) -> serde_json::Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    /// Claims in, the user or upstream's message out, for the claim mappings of the flags.
    #[test]
    fn claims_map_to_users_as_upstream_maps_them() {
        use serde_json::json;
        let issuer = "https://issuer.example";
        let make = |f: &dyn Fn(&mut OidcOptions)| {
            let mut o = options(issuer, "k");
            f(&mut o);
            OidcAuthenticator::new(o.to_jwt().unwrap()).unwrap()
        };
        let user = |name: &str, groups: &[&str]| {
            Ok(OidcUser {
                name: name.into(),
                groups: groups.iter().map(|g| (*g).to_string()).collect(),
                ..OidcUser::default()
            })
        };
        let default = make(&|_| {});
        let email = make(&|o| o.username_claim = "email".into());
        let grouped = make(&|o| {
            o.groups_claim = Some("groups".into());
            o.groups_prefix = "oidc:".into();
            o.username_prefix = Some("-".into());
        });
        let prefixed = make(&|o| o.username_prefix = Some("corp:".into()));
        let required = make(&|o| {
            o.required_claims = [("hd".to_string(), "example.com".to_string())].into();
        });
        let cases: Vec<(&OidcAuthenticator, Value, Result<OidcUser, String>)> = vec![
            (&default, json!({"sub": "alice"}), user("https://issuer.example#alice", &[])),
            (
                &default,
                json!({}),
                Err(r#"oidc: parse username claims "sub": claim not present"#.into()),
            ),
            (
                &default,
                json!({"sub": 7}),
                Err(r#"oidc: parse username claims "sub": json: cannot unmarshal number into Go value of type string"#.into()),
            ),
            (&email, json!({"email": "a@example.com"}), user("a@example.com", &[])),
            (
                &email,
                json!({"email": "a@example.com", "email_verified": true}),
                user("a@example.com", &[]),
            ),
            (
                &email,
                json!({"email": "a@example.com", "email_verified": false}),
                Err("oidc: email not verified".into()),
            ),
            (&prefixed, json!({"sub": "bob"}), user("corp:bob", &[])),
            (
                &grouped,
                json!({"sub": "bob", "groups": ["dev", "ops"]}),
                user("bob", &["oidc:dev", "oidc:ops"]),
            ),
            (&grouped, json!({"sub": "bob", "groups": "admins"}), user("bob", &["oidc:admins"])),
            (&grouped, json!({"sub": "bob"}), user("bob", &[])),
            (
                &grouped,
                json!({"sub": "bob", "groups": [1]}),
                Err(r#"oidc: parse groups claim "groups": json: cannot unmarshal array into Go value of type string"#.into()),
            ),
            (
                &required,
                json!({"sub": "c", "hd": "example.com"}),
                user("https://issuer.example#c", &[]),
            ),
            (
                &required,
                json!({"sub": "c"}),
                Err("oidc: required claim hd not present in ID token".into()),
            ),
            (
                &required,
                json!({"sub": "c", "hd": "other.com"}),
                Err("oidc: required claim hd value does not match. Got = other.com, want = example.com".into()),
            ),
        ];
        for (authn, c, want) in cases {
            assert_eq!(authn.user(&claims(c.clone())), want, "{c}");
        }
    }

    #[test]
    fn only_compact_jwts_of_the_issuer_are_read() {
        let enc = |v: &str| URL_SAFE_NO_PAD.encode(v);
        let token = format!("{}.{}.sig", enc("{}"), enc(r#"{"iss":"https://i"}"#));
        assert_eq!(
            untrusted_claims(&token).and_then(|c| c.get("iss").cloned()),
            Some(Value::from("https://i"))
        );
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            "{\"iss\":1}",
            &format!("x.{}.y", enc("[1]")),
        ] {
            assert_eq!(untrusted_claims(bad), None, "{bad}");
        }
    }

    #[test]
    fn go_texts() {
        assert_eq!(go_time(0), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(go_quote_list(&["a".into(), "b".into()]), r#"["a" "b"]"#);
        assert_eq!(go_quote_list(&[]), "[]");
    }
}
