//! Authentication as kube-apiserver's union authenticator does it: a bearer token from
//! `--token-auth-file` (CSV: `token,user,uid[,"group1,group2"]`), a service-account `JWT`
//! ([`crate::serviceaccount`]), an OpenID Connect ID token ([`oidc`], `--oidc-*`), a client
//! certificate, and else, with `--anonymous-auth`, the anonymous user. A bearer token that no
//! authenticator accepts is a 401, never anonymous.
//!
//! Main types: [`Authenticator`], [`TokenAuthenticator`], [`User`].

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use crd_storage::Store;
use serde_json::Value;

use crate::serviceaccount::{self, TokenError, TokenIssuer};

pub mod authn_config;
pub mod oidc;
pub mod webhook;

/// The anonymous user's name.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of every authenticated user.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";

/// An authenticated user (upstream's `user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The user's UID.
    pub uid: String,
    /// The groups the user belongs to.
    pub groups: Vec<String>,
    /// Extra attributes (impersonated with `Impersonate-Extra-*`, or set by an authenticator).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The anonymous user, in `system:unauthenticated`.
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.into(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
            ..User::default()
        }
    }

    /// `userInfo` as reviews and admission requests carry it.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("username".into(), Value::from(self.name.clone()));
        if !self.uid.is_empty() {
            m.insert("uid".into(), Value::from(self.uid.clone()));
        }
        if !self.groups.is_empty() {
            m.insert("groups".into(), Value::from(self.groups.clone()));
        }
        if !self.extra.is_empty() {
            m.insert(
                "extra".into(),
                serde_json::to_value(&self.extra).unwrap_or_default(),
            );
        }
        Value::Object(m)
    }
}

/// Why a request could not be authenticated (401).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unauthenticated;

/// What the client certificate of a connection says: the user it verified as, or why it did
/// not verify (Go's x509 error text); `None` where the client sent none.
pub type ClientCertificate = Result<User, String>;

/// Every way a request can authenticate, in kube-apiserver's order.
pub struct Authenticator {
    /// `--token-auth-file` (or the generated admin token).
    pub tokens: TokenAuthenticator,
    /// Service-account tokens, checked against the store.
    pub service_accounts: Option<ServiceAccountTokens>,
    /// `--anonymous-auth`: requests without credentials are `system:anonymous`.
    pub anonymous: bool,
    /// The paths served anonymously (an authentication configuration's `anonymous.conditions`);
    /// every path when empty.
    pub anonymous_paths: Vec<String>,
    /// JWT authenticators (`--oidc-*` or `--authentication-config`), one per issuer.
    pub jwt: JwtAuthenticators,
    /// `--authentication-token-webhook-config-file`: asked last about bearer tokens.
    pub token_webhook: Option<Arc<webhook::TokenWebhook>>,
}

/// The JWT authenticators in effect, replaced whole when the authentication configuration file
/// changes (a request uses the set it started with).
#[derive(Default)]
pub struct JwtAuthenticators(std::sync::RwLock<Arc<Vec<Arc<oidc::OidcAuthenticator>>>>);

impl JwtAuthenticators {
    /// The set in effect now.
    pub fn current(&self) -> Arc<Vec<Arc<oidc::OidcAuthenticator>>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Puts `authenticators` in effect, each started.
    pub fn replace(&self, authenticators: Vec<Arc<oidc::OidcAuthenticator>>) {
        for a in &authenticators {
            a.start();
        }
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(authenticators);
    }
}

/// Service-account token authentication: the issuer's checks plus the service account (and
/// bound object) still existing with the token's uid.
pub struct ServiceAccountTokens {
    /// Signs and verifies.
    pub issuer: Arc<TokenIssuer>,
    /// `--api-audiences`: a token must be for one of them.
    pub audiences: Vec<String>,
    /// Where service accounts, secrets and pods are read.
    pub store: Arc<dyn Store>,
}

impl Authenticator {
    /// Only the tokens of a token file (no service accounts, no anonymous requests).
    pub fn tokens(tokens: TokenAuthenticator) -> Self {
        Authenticator {
            tokens,
            service_accounts: None,
            anonymous: false,
            anonymous_paths: Vec::new(),
            jwt: JwtAuthenticators::default(),
            token_webhook: None,
        }
    }

    /// Authenticates a request to `path` from its `Authorization` header and client
    /// certificate. Authenticated users gain `system:authenticated`.
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
        certificate: Option<&ClientCertificate>,
        path: &str,
    ) -> Result<User, Unauthenticated> {
        // Upstream's union authenticator asks the x509 authenticator first: a verified
        // certificate wins over any token; one that does not verify leaves the token to decide,
        // and without a token the request is 401, never anonymous.
        let cert_user = match certificate {
            Some(Ok(u)) => return Ok(with_authenticated(u.clone())),
            Some(Err(_)) if bearer(authorization).is_none() => return Err(Unauthenticated),
            _ => None::<&User>,
        };
        let user = match bearer(authorization) {
            Some(token) => match self.tokens.lookup(token) {
                Some(u) => u.clone(),
                None => match self.token(token, None).await {
                    Ok((u, _)) => u,
                    // A token of a known issuer is judged there alone; the webhook is asked
                    // about the others.
                    Err(TokenFailure::NotOurs) => match self.oidc_token(token).await {
                        Ok(u) => u,
                        Err(oidc::OidcError::NotOurs) => self.webhook_token(token).await?,
                        Err(_) => return Err(Unauthenticated),
                    },
                    Err(_) => return Err(Unauthenticated),
                },
            },
            None => match cert_user {
                Some(u) => u.clone(),
                None if self.anonymous
                    && (self.anonymous_paths.is_empty()
                        || self.anonymous_paths.iter().any(|p| p == path)) =>
                {
                    return Ok(User::anonymous());
                }
                None => return Err(Unauthenticated),
            },
        };
        Ok(with_authenticated(user))
    }

    /// A bearer token's user by the token webhook, for the API audiences.
    async fn webhook_token(&self, token: &str) -> Result<User, Unauthenticated> {
        let Some(hook) = &self.token_webhook else {
            return Err(Unauthenticated);
        };
        let audiences = self
            .service_accounts
            .as_ref()
            .map_or(&[][..], |sa| &sa.audiences[..]);
        match hook.authenticate(token, audiences).await {
            Ok(Some((user, _))) => Ok(user),
            Ok(None) | Err(_) => Err(Unauthenticated),
        }
    }

    /// A token as `TokenReview` checks it: the token file, service-account tokens and OIDC
    /// ([`Authenticator::review_local_token`]), then the token webhook.
    pub async fn review_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(User, Vec<String>), String> {
        let local = self.review_local_token(token, audiences).await;
        // Only a token no local authenticator claims (`invalid bearer token`) goes on.
        let (Err(error), Some(hook)) = (&local, &self.token_webhook) else {
            return local;
        };
        if error != "invalid bearer token" {
            return local;
        }
        let api = self
            .service_accounts
            .as_ref()
            .map_or(&[][..], |sa| &sa.audiences[..]);
        let requested = if audiences.is_empty() { api } else { audiences };
        match hook.authenticate(token, requested).await {
            Ok(Some((user, accepted))) => Ok((with_authenticated(user), accepted)),
            Ok(None) => Err(error.clone()),
            Err(e) => Err(format!("[{error}, {e}]")),
        }
    }

    /// A token as `TokenReview` checks it: the token file, then service-account tokens for
    /// `audiences` (the API audiences when empty). Returns the user (with
    /// `system:authenticated`) and the audiences it was accepted for (upstream's
    /// `Response.Audiences`: the requested ones the token is for, in request order), or the
    /// review's `error`: upstream's bearer-token authenticators each fail a token they do not
    /// know with `invalid bearer token`, a service-account token whose account (or bound
    /// object) is gone with `service account token has been invalidated`, and one for other
    /// audiences with `token audiences [..] is invalid for the target audiences [..]`,
    /// aggregated.
    async fn review_local_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(User, Vec<String>), String> {
        const UNKNOWN: &str = "invalid bearer token";
        const INVALIDATED: &str =
            "[invalid bearer token, service account token has been invalidated]";
        let api = self
            .service_accounts
            .as_ref()
            .map_or(&[][..], |sa| &sa.audiences[..]);
        // Upstream's `TokenReview` asks for the API audiences when the review names none.
        let requested = if audiences.is_empty() { api } else { audiences };
        let accepted_of = |token_audiences: &[String]| -> Vec<String> {
            requested
                .iter()
                .filter(|a| token_audiences.contains(a))
                .cloned()
                .collect()
        };
        if let Some(u) = self.tokens.lookup(token) {
            // Token-file tokens carry no audience: upstream's `WrapAudienceAgnosticToken`
            // accepts them only for the requested audiences that are API audiences.
            if requested.is_empty() {
                return Ok((with_authenticated(u.clone()), Vec::new()));
            }
            let accepted = accepted_of(api);
            return if accepted.is_empty() {
                Err(UNKNOWN.into())
            } else {
                Ok((with_authenticated(u.clone()), accepted))
            };
        }
        let reviewed = match self.token(token, Some(requested)).await {
            Err(TokenFailure::NotOurs) if !self.jwt.current().is_empty() => {
                // Upstream wraps OIDC as audience-agnostic, as the token file.
                return match self.oidc_token(token).await {
                    Ok(u) if requested.is_empty() => Ok((with_authenticated(u), Vec::new())),
                    Ok(u) => {
                        let accepted = accepted_of(api);
                        if accepted.is_empty() {
                            Err(UNKNOWN.into())
                        } else {
                            Ok((with_authenticated(u), accepted))
                        }
                    }
                    Err(oidc::OidcError::NotOurs) => Err(UNKNOWN.into()),
                    Err(oidc::OidcError::Refused(msg)) => Err(format!("[{UNKNOWN}, {msg}]")),
                };
            }
            other => other,
        };
        let (user, token_audiences) = reviewed.map_err(|f| match f {
            TokenFailure::NotOurs => UNKNOWN.into(),
            TokenFailure::Invalidated => INVALIDATED.into(),
            TokenFailure::Expired => {
                format!("[{UNKNOWN}, {}]", TokenError::Expired)
            }
            // The loopback authenticator's `invalid bearer token`, then the
            // service-account authenticator's audience error (upstream's aggregate).
            TokenFailure::Refused(msg) => format!("[{UNKNOWN}, {msg}]"),
        })?;
        Ok((with_authenticated(user), accepted_of(&token_audiences)))
    }

    /// An OIDC ID token's user (without `system:authenticated`), judged by the authenticator of
    /// its issuer.
    async fn oidc_token(&self, token: &str) -> Result<User, oidc::OidcError> {
        // Each judges only its own issuer's tokens (issuers are unique).
        for jwt in self.jwt.current().iter() {
            match jwt.authenticate(token).await {
                Err(oidc::OidcError::NotOurs) => {}
                judged => return Self::oidc_user(judged),
            }
        }
        Err(oidc::OidcError::NotOurs)
    }

    /// An OIDC verdict as a user, logged when refused.
    fn oidc_user(judged: Result<oidc::OidcUser, oidc::OidcError>) -> Result<User, oidc::OidcError> {
        match judged {
            Ok(u) => Ok(User {
                name: u.name,
                uid: u.uid,
                groups: u.groups,
                extra: u.extra,
            }),
            Err(e) => {
                if let oidc::OidcError::Refused(msg) = &e {
                    tracing::debug!(error = %msg, "oidc token refused");
                }
                Err(e)
            }
        }
    }

    /// A service-account token's user and the audiences it is for, checked for `audiences`
    /// (the API audiences when `None`).
    async fn token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<(User, Vec<String>), TokenFailure> {
        let sa = self
            .service_accounts
            .as_ref()
            .ok_or(TokenFailure::NotOurs)?;
        let claims = match sa.issuer.verify(token, audiences.unwrap_or(&sa.audiences)) {
            Ok(c) => c,
            Err(TokenError::NotOurs) => return Err(TokenFailure::NotOurs),
            Err(TokenError::Audience(msg)) => {
                tracing::debug!(error = %msg, "service account token refused");
                return Err(TokenFailure::Refused(msg));
            }
            Err(TokenError::Invalid(e)) => {
                tracing::debug!(error = %e, "service account token refused");
                return Err(TokenFailure::Invalidated);
            }
            Err(TokenError::Expired) => return Err(TokenFailure::Expired),
            Err(e @ TokenError::NotValidYet) => return Err(TokenFailure::Refused(e.to_string())),
        };
        let user = sa
            .check_live(&claims)
            .await
            .ok_or(TokenFailure::Invalidated)?;
        Ok((user, claims.aud))
    }
}

/// Why a bearer token is not a service-account token that authenticates.
enum TokenFailure {
    /// Not a token of this server's issuer (or service-account tokens are off).
    NotOurs,
    /// Ours, but refused: expired, or its account or bound object gone.
    Invalidated,
    /// Ours, but refused for a reason `TokenReview` reports in upstream's words (for none of
    /// the requested audiences, not valid yet).
    Refused(String),
    /// Ours, but expired.
    Expired,
}

fn with_authenticated(mut user: User) -> User {
    if !user.groups.iter().any(|g| g == ALL_AUTHENTICATED) {
        user.groups.push(ALL_AUTHENTICATED.into());
    }
    user
}

fn bearer(authorization: Option<&str>) -> Option<&str> {
    let (scheme, token) = authorization?.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
        .filter(|t| !t.is_empty())
}

impl ServiceAccountTokens {
    /// The user of verified claims, if the service account (and the bound object) still
    /// exist with the uids the token names, as upstream's legacy/bound token validators check.
    async fn check_live(&self, claims: &serviceaccount::Claims) -> Option<User> {
        let k = &claims.kubernetes;
        let ns = &k.namespace;
        let sa = self
            .live(&format!(
                "/registry/serviceaccounts/{ns}/{}",
                k.serviceaccount.name
            ))
            .await?;
        if sa.pointer("/metadata/uid").and_then(Value::as_str) != Some(&k.serviceaccount.uid) {
            tracing::debug!("service account uid does not match the token's claim");
            return None;
        }
        let mut extra = BTreeMap::new();
        extra.insert(
            "authentication.kubernetes.io/credential-id".to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
        // A node is checked only when the token is bound to it; a pod's token names its
        // pod's node for information (upstream's `ServiceAccountTokenNodeBindingValidation`).
        let node_bound = k.node.as_ref().filter(|_| k.pod.is_none());
        for (r, key, kind) in [
            (&k.secret, format!("/registry/secrets/{ns}/"), "secret"),
            (&k.pod, format!("/registry/pods/{ns}/"), "pod"),
            (
                &node_bound.cloned(),
                "/registry/minions/".to_string(),
                "node",
            ),
        ] {
            let Some(r) = r else { continue };
            let obj = self.live(&format!("{key}{}", r.name)).await?;
            if obj.pointer("/metadata/uid").and_then(Value::as_str) != Some(&r.uid) {
                return None;
            }
            if kind == "pod" {
                extra.insert(
                    "authentication.kubernetes.io/pod-name".into(),
                    vec![r.name.clone()],
                );
                extra.insert(
                    "authentication.kubernetes.io/pod-uid".into(),
                    vec![r.uid.clone()],
                );
            }
        }
        if let Some(node) = &k.node {
            extra.insert(
                "authentication.kubernetes.io/node-name".into(),
                vec![node.name.clone()],
            );
            if !node.uid.is_empty() {
                extra.insert(
                    "authentication.kubernetes.io/node-uid".into(),
                    vec![node.uid.clone()],
                );
            }
        }
        Some(User {
            name: claims.sub.clone(),
            uid: k.serviceaccount.uid.clone(),
            groups: serviceaccount::groups(ns),
            extra,
        })
    }

    /// A stored object that is not being deleted.
    async fn live(&self, key: &str) -> Option<Value> {
        let kv = self.store.get(key).await.ok()??;
        let obj: Value = serde_json::from_slice(&kv.value).ok()?;
        obj.pointer("/metadata/deletionTimestamp")
            .is_none()
            .then_some(obj)
    }
}

/// Maps bearer tokens to users.
#[derive(Clone, Debug, Default)]
pub struct TokenAuthenticator {
    tokens: HashMap<String, User>,
    /// The first token of a `system:masters` member, in file order.
    admin: Option<String>,
}

impl TokenAuthenticator {
    /// Parses a token file. Lines that are empty or start with `#` are skipped.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut tokens = HashMap::new();
        let mut admin = None;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = split_csv(line);
            if fields.len() < 3 {
                anyhow::bail!("token file line {}: expected at least 3 fields", i + 1);
            }
            let groups: Vec<String> = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            if fields[0].is_empty() {
                anyhow::bail!("token file line {}: empty token", i + 1);
            }
            if admin.is_none() && groups.iter().any(|g| g == "system:masters") {
                admin = Some(fields[0].clone());
            }
            tokens.insert(
                fields[0].clone(),
                User {
                    name: fields[1].clone(),
                    uid: fields[2].clone(),
                    groups,
                    extra: BTreeMap::new(),
                },
            );
        }
        Ok(TokenAuthenticator { tokens, admin })
    }

    /// Reads and parses a token file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading token file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing token file {}", path.display()))
    }

    /// The first token of a `system:masters` member, written into the kubeconfig.
    pub fn admin_token(&self) -> Option<&str> {
        self.admin.as_deref()
    }

    /// Looks up the user of an `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<&User> {
        self.lookup(bearer(authorization)?)
    }

    /// Looks up the user of a bearer token.
    pub fn lookup(&self, token: &str) -> Option<&User> {
        self.tokens.get(token)
    }
}

/// Splits one CSV line, honouring double quotes (enough for the token file format).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kube_token_file() {
        let a = TokenAuthenticator::parse(
            "# comment\nsecret,admin,1,\"system:masters,devs\"\nother,bob,2\n",
        )
        .unwrap();
        let admin = a.authenticate(Some("Bearer secret")).unwrap();
        assert_eq!(admin.name, "admin");
        assert_eq!(admin.groups, vec!["system:masters", "devs"]);
        assert_eq!(a.authenticate(Some("bearer other")).unwrap().name, "bob");
        assert!(a.authenticate(Some("Bearer nope")).is_none());
        assert!(a.authenticate(Some("Basic secret")).is_none());
        assert!(a.authenticate(None).is_none());
    }

    #[test]
    fn rejects_short_lines() {
        assert!(TokenAuthenticator::parse("abc,def").is_err());
    }
}
