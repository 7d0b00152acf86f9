//! `--authentication-config`: kube-apiserver's `AuthenticationConfiguration` file
//! (`apiserver.config.k8s.io/v1`, `v1beta1` or `v1alpha1`): JWT authenticators with claim or CEL
//! mappings and validation rules, and the anonymous authenticator's paths. Read and checked at
//! start-up with upstream's field errors (`ValidateAuthenticationConfiguration`); an invalid file
//! stops the server before it listens.

use serde::Deserialize;

use crd_core::{ErrorList, FieldError, Path};

use super::oidc::{Cel, ClaimRule, JwtConfig, Mapping};

/// The file's API versions kube-apiserver 1.34 reads.
const API_VERSIONS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1beta1",
    "apiserver.config.k8s.io/v1alpha1",
];

/// What a configuration file sets up.
#[derive(Debug, Default)]
pub struct AuthenticationConfig {
    /// One authenticator per issuer.
    pub jwt: Vec<JwtConfig>,
    /// `anonymous`: `None` when the file does not say (the `--anonymous-auth` flag decides).
    pub anonymous: Option<AnonymousConfig>,
}

/// `anonymous`: whether requests without credentials are `system:anonymous`, and on which
/// paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AnonymousConfig {
    /// `enabled`.
    pub enabled: bool,
    /// `conditions[].path`: the only paths served anonymously (all when empty).
    pub paths: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    // Checked by `config_file::decode`; declared for the strict decoding.
    #[serde(default, rename = "apiVersion")]
    _api_version: String,
    #[serde(default, rename = "kind")]
    _kind: String,
    #[serde(default)]
    jwt: Vec<Jwt>,
    anonymous: Option<Anonymous>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Jwt {
    #[serde(default)]
    issuer: Issuer,
    #[serde(default)]
    claim_validation_rules: Vec<ClaimValidationRule>,
    #[serde(default)]
    claim_mappings: ClaimMappings,
    #[serde(default)]
    user_validation_rules: Vec<UserValidationRule>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Issuer {
    #[serde(default)]
    url: String,
    #[serde(default, rename = "discoveryURL")]
    discovery_url: String,
    #[serde(default)]
    certificate_authority: String,
    #[serde(default)]
    audiences: Vec<String>,
    #[serde(default)]
    audience_match_policy: String,
    #[serde(default)]
    egress_selector_type: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimValidationRule {
    #[serde(default)]
    claim: String,
    #[serde(default)]
    required_value: String,
    #[serde(default)]
    expression: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimMappings {
    #[serde(default)]
    username: PrefixedClaimOrExpression,
    #[serde(default)]
    groups: PrefixedClaimOrExpression,
    #[serde(default)]
    uid: ClaimOrExpression,
    #[serde(default)]
    extra: Vec<ExtraMapping>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PrefixedClaimOrExpression {
    #[serde(default)]
    claim: String,
    prefix: Option<String>,
    #[serde(default)]
    expression: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimOrExpression {
    #[serde(default)]
    claim: String,
    #[serde(default)]
    expression: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExtraMapping {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value_expression: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UserValidationRule {
    #[serde(default)]
    expression: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Anonymous {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    conditions: Vec<AnonymousCondition>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnonymousCondition {
    #[serde(default)]
    path: String,
}

/// Why a file was refused: it could not be read as a configuration, or it is not a valid one
/// (upstream's aggregated field errors).
#[derive(Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Not an `AuthenticationConfiguration` (decoding, strict fields, kind).
    Load(String),
    /// Field errors.
    Invalid(String),
}

impl AuthenticationConfig {
    /// Reads a file's text (YAML or JSON, strictly: an unknown field is refused);
    /// `disallowed_issuers` are the service-account issuers, which no JWT authenticator may
    /// claim.
    pub fn parse(text: &str, disallowed_issuers: &[String]) -> Result<Self, ConfigError> {
        let file: File =
            crate::config_file::decode(text, "AuthenticationConfiguration", API_VERSIONS)
                .map_err(ConfigError::Load)?;
        let mut errors = ErrorList::new();
        let root = Path::new("jwt");
        if file.jwt.len() > 64 {
            errors.push(FieldError::too_many(&root, file.jwt.len(), 64));
            return Err(ConfigError::Invalid(errors.aggregate()));
        }
        let mut jwt = Vec::new();
        let mut seen_issuers: Vec<&str> = Vec::new();
        let mut seen_discovery: Vec<&str> = Vec::new();
        for (i, a) in file.jwt.iter().enumerate() {
            let at = root.index(i);
            if let Some(config) = jwt_authenticator(a, &at, disallowed_issuers, &mut errors) {
                jwt.push(config);
            }
            let url = &a.issuer.url;
            if seen_issuers.contains(&url.as_str()) {
                errors.push(FieldError::duplicate(
                    &at.child("issuer").child("url"),
                    url.as_str(),
                ));
            }
            seen_issuers.push(url);
            let discovery = &a.issuer.discovery_url;
            if !discovery.is_empty() {
                if seen_discovery.contains(&discovery.as_str()) {
                    errors.push(FieldError::duplicate(
                        &at.child("issuer").child("discoveryURL"),
                        discovery.as_str(),
                    ));
                }
                seen_discovery.push(discovery);
            }
        }
        let anonymous = file.anonymous.map(|a| {
            if !a.enabled && !a.conditions.is_empty() {
                errors.push(FieldError::invalid_printed(
                    &Path::new("anonymous").child("conditions"),
                    &format!(
                        "[]apiserver.AnonymousAuthCondition{{{}}}",
                        a.conditions
                            .iter()
                            .map(|c| format!(
                                "apiserver.AnonymousAuthCondition{{Path:\"{}\"}}",
                                c.path
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "enabled should be set to true when conditions are defined",
                ));
            }
            AnonymousConfig {
                enabled: a.enabled,
                paths: a.conditions.into_iter().map(|c| c.path).collect(),
            }
        });
        if errors.is_empty() {
            Ok(AuthenticationConfig { jwt, anonymous })
        } else {
            Err(ConfigError::Invalid(errors.aggregate()))
        }
    }
}

/// One `jwt[i]`, checked; `None` when it has errors (pushed to `errors`).
fn jwt_authenticator(
    a: &Jwt,
    at: &Path,
    disallowed_issuers: &[String],
    errors: &mut ErrorList,
) -> Option<JwtConfig> {
    let before = errors.len();
    let issuer = &a.issuer;
    let ip = at.child("issuer");
    if issuer.url.is_empty() {
        errors.push(FieldError::required(&ip.child("url"), ""));
    } else {
        check_url(&issuer.url, disallowed_issuers, &ip.child("url"), errors);
    }
    if !issuer.discovery_url.is_empty() {
        let dp = ip.child("discoveryURL");
        if !issuer.url.is_empty()
            && issuer.url.trim_end_matches('/') == issuer.discovery_url.trim_end_matches('/')
        {
            errors.push(FieldError::invalid(
                &dp,
                issuer.discovery_url.as_str(),
                "discoveryURL must be different from URL",
            ));
        }
        check_url(&issuer.discovery_url, &[], &dp, errors);
    }
    let ap = ip.child("audiences");
    if issuer.audiences.is_empty() {
        errors.push(FieldError::required(
            &ap,
            format!("at least one {} is required", ap.as_str()),
        ));
    }
    for (i, aud) in issuer.audiences.iter().enumerate() {
        if aud.is_empty() {
            errors.push(FieldError::required(&ap.index(i), ""));
        }
        if issuer.audiences[..i].contains(aud) {
            errors.push(FieldError::duplicate(&ap.index(i), aud.as_str()));
        }
    }
    let policy = issuer.audience_match_policy.as_str();
    let pp = ip.child("audienceMatchPolicy");
    if issuer.audiences.len() > 1 && policy != "MatchAny" {
        errors.push(FieldError::invalid(
            &pp,
            policy,
            "audienceMatchPolicy must be MatchAny for multiple audiences",
        ));
    }
    if issuer.audiences.len() == 1 && !policy.is_empty() && policy != "MatchAny" {
        errors.push(FieldError::invalid(
            &pp,
            policy,
            "audienceMatchPolicy must be empty or MatchAny for single audience",
        ));
    }
    if !issuer.certificate_authority.is_empty() {
        let pem = issuer.certificate_authority.as_bytes();
        let valid = reqwest::Certificate::from_pem_bundle(pem).is_ok_and(|c| !c.is_empty());
        if !valid {
            errors.push(FieldError::invalid_printed(
                &ip.child("certificateAuthority"),
                "\"<omitted>\"",
                "data does not contain any valid RSA or ECDSA certificates",
            ));
        }
    }
    if !issuer.egress_selector_type.is_empty() {
        errors.push(FieldError::invalid(
            &ip.child("egressSelectorType"),
            issuer.egress_selector_type.as_str(),
            "egress selector is not supported when StructuredAuthenticationConfigurationEgressSelector feature gate is disabled",
        ));
    }

    let mut uses_email_verified = false;
    // claimValidationRules
    let mut claim_rules = Vec::new();
    let rp = at.child("claimValidationRules");
    for (i, rule) in a.claim_validation_rules.iter().enumerate() {
        let p = rp.index(i);
        match (rule.claim.is_empty(), rule.expression.is_empty()) {
            (false, false) => errors.push(FieldError::invalid(
                &p,
                rule.claim.as_str(),
                "claim and expression can't both be set",
            )),
            (true, true) => {
                errors.push(FieldError::required(&p, "claim or expression is required"));
            }
            (false, true) => {
                if !rule.message.is_empty() {
                    errors.push(FieldError::invalid(
                        &p.child("message"),
                        rule.message.as_str(),
                        "may not be specified when claim is set",
                    ));
                }
                if a.claim_validation_rules[..i]
                    .iter()
                    .any(|r| r.expression.is_empty() && r.claim == rule.claim)
                {
                    errors.push(FieldError::duplicate(
                        &p.child("claim"),
                        rule.claim.as_str(),
                    ));
                }
                claim_rules.push(ClaimRule::Claim {
                    claim: rule.claim.clone(),
                    required_value: rule.required_value.clone(),
                });
            }
            (true, false) => {
                if !rule.required_value.is_empty() {
                    errors.push(FieldError::invalid(
                        &p.child("requiredValue"),
                        rule.required_value.as_str(),
                        "may not be specified when expression is set",
                    ));
                }
                if a.claim_validation_rules[..i]
                    .iter()
                    .any(|r| r.expression == rule.expression)
                {
                    errors.push(FieldError::duplicate(
                        &p.child("expression"),
                        rule.expression.as_str(),
                    ));
                    continue;
                }
                if let Some(cel) = compile(
                    &rule.expression,
                    true,
                    CLAIMS,
                    &p.child("expression"),
                    errors,
                ) {
                    uses_email_verified |= cel.program.reads("claims").selects("email_verified");
                    claim_rules.push(ClaimRule::Expression {
                        cel,
                        message: rule.message.clone(),
                    });
                }
            }
        }
    }
    // claimMappings
    let mp = at.child("claimMappings");
    let m = &a.claim_mappings;
    let username = prefixed(&m.username, &mp.child("username"), true, errors);
    let uses_email = matches!(&username, Some(Mapping::Expression(c)) if c.program.reads("claims").selects("email"));
    if let Some(Mapping::Expression(c)) = &username {
        uses_email_verified |= c.program.reads("claims").selects("email_verified");
    }
    let groups = prefixed(&m.groups, &mp.child("groups"), false, errors);
    let uid = match (m.uid.claim.is_empty(), m.uid.expression.is_empty()) {
        (false, false) => {
            errors.push(FieldError::invalid(
                &mp.child("uid"),
                "",
                "claim and expression can't both be set",
            ));
            None
        }
        (true, false) => compile(
            &m.uid.expression,
            false,
            CLAIMS,
            &mp.child("uid").child("expression"),
            errors,
        )
        .map(Mapping::Expression),
        (false, true) => Some(Mapping::Claim {
            claim: m.uid.claim.clone(),
            prefix: String::new(),
        }),
        (true, true) => None,
    };
    let mut extra = Vec::new();
    for (i, e) in m.extra.iter().enumerate() {
        let p = mp.child("extra").index(i);
        let kp = p.child("key");
        check_extra_key(&e.key, &kp, errors);
        if m.extra[..i].iter().any(|o| o.key == e.key) {
            errors.push(FieldError::duplicate(&kp, e.key.as_str()));
            continue;
        }
        if e.value_expression.is_empty() {
            errors.push(FieldError::required(&p.child("valueExpression"), ""));
            continue;
        }
        if let Some(cel) = compile(
            &e.value_expression,
            false,
            CLAIMS,
            &p.child("valueExpression"),
            errors,
        ) {
            uses_email_verified |= cel.program.reads("claims").selects("email_verified");
            extra.push((e.key.clone(), cel));
        }
    }
    if uses_email && !uses_email_verified {
        errors.push(FieldError::invalid(
            &mp.child("username").child("expression"),
            m.username.expression.as_str(),
            "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
        ));
    }
    // userValidationRules
    let mut user_rules = Vec::new();
    let up = at.child("userValidationRules");
    for (i, rule) in a.user_validation_rules.iter().enumerate() {
        let p = up.index(i).child("expression");
        if rule.expression.is_empty() {
            errors.push(FieldError::required(&p, ""));
            continue;
        }
        if a.user_validation_rules[..i]
            .iter()
            .any(|r| r.expression == rule.expression)
        {
            errors.push(FieldError::duplicate(&p, rule.expression.as_str()));
            continue;
        }
        if let Some(cel) = compile(&rule.expression, true, USER, &p, errors) {
            user_rules.push((cel, rule.message.clone()));
        }
    }
    if errors.len() > before {
        return None;
    }
    Some(JwtConfig {
        issuer_url: issuer.url.clone(),
        discovery_url: Some(issuer.discovery_url.clone()).filter(|d| !d.is_empty()),
        ca_pem: Some(issuer.certificate_authority.clone().into_bytes()).filter(|c| !c.is_empty()),
        audiences: issuer.audiences.clone(),
        username: username?,
        groups,
        uid,
        extra,
        claim_rules,
        user_rules,
        signing_algs: super::oidc::all_signing_algs(),
    })
}

/// The variables of claims expressions.
const CLAIMS: &[&str] = &["claims"];
/// The variables of user validation rules.
const USER: &[&str] = &["user"];

/// Compiles an expression, or pushes upstream's `compilation failed: ...` field error.
fn compile(
    source: &str,
    boolean: bool,
    vars: &'static [&'static str],
    at: &Path,
    errors: &mut ErrorList,
) -> Option<Cel> {
    let compiled = if boolean {
        crd_cel::Expression::compile_bool(source, vars)
    } else {
        crd_cel::Expression::compile_value(source, vars)
    };
    match compiled {
        Ok(program) => Some(Cel {
            program: std::sync::Arc::new(program),
            source: source.to_string(),
        }),
        Err(e) => {
            errors.push(FieldError::invalid(
                at,
                source,
                format!("compilation failed: {e}"),
            ));
            None
        }
    }
}

/// `claimMappings.username` or `.groups`: exactly one of a claim (with a prefix) and an
/// expression (without one).
fn prefixed(
    m: &PrefixedClaimOrExpression,
    at: &Path,
    required: bool,
    errors: &mut ErrorList,
) -> Option<Mapping> {
    match (m.claim.is_empty(), m.expression.is_empty()) {
        (false, false) => {
            errors.push(FieldError::invalid(
                at,
                "",
                "claim and expression can't both be set",
            ));
            None
        }
        (true, true) => {
            if required {
                errors.push(FieldError::required(at, "claim or expression is required"));
            }
            None
        }
        (true, false) => {
            if let Some(prefix) = &m.prefix {
                errors.push(FieldError::invalid(
                    &at.child("prefix"),
                    prefix.as_str(),
                    "may not be specified when expression is set",
                ));
            }
            compile(
                &m.expression,
                false,
                CLAIMS,
                &at.child("expression"),
                errors,
            )
            .map(Mapping::Expression)
        }
        (false, true) => {
            let Some(prefix) = &m.prefix else {
                errors.push(FieldError::required(
                    &at.child("prefix"),
                    "prefix is required when claim is set. It can be set to an empty string to disable prefixing",
                ));
                return None;
            };
            Some(Mapping::Claim {
                claim: m.claim.clone(),
                prefix: prefix.clone(),
            })
        }
    }
}

/// An issuer or discovery URL: `https`, no user info, query or fragment.
pub(super) fn check_url(url: &str, disallowed: &[String], at: &Path, errors: &mut ErrorList) {
    if disallowed.iter().any(|d| d == url) {
        let mut sorted = disallowed.to_vec();
        sorted.sort();
        errors.push(FieldError::invalid(
            at,
            url,
            format!(
                "URL must not overlap with disallowed issuers: [{}]",
                sorted.join(" ")
            ),
        ));
    }
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => {
            errors.push(FieldError::invalid(at, url, e.to_string()));
            return;
        }
    };
    if parsed.scheme() != "https" {
        errors.push(FieldError::invalid(at, url, "URL scheme must be https"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        errors.push(FieldError::invalid(
            at,
            url,
            "URL must not contain a username or password",
        ));
    }
    if parsed.query().is_some_and(|q| !q.is_empty()) {
        errors.push(FieldError::invalid(at, url, "URL must not contain a query"));
    }
    if parsed.fragment().is_some_and(|f| !f.is_empty()) {
        errors.push(FieldError::invalid(
            at,
            url,
            "URL must not contain a fragment",
        ));
    }
}

/// An extra key: a domain-prefixed path (`example.com/tenant`), lowercase, not in a Kubernetes
/// domain.
fn check_extra_key(key: &str, at: &Path, errors: &mut ErrorList) {
    if key.is_empty() {
        errors.push(FieldError::required(at, ""));
        return;
    }
    match key.split_once('/') {
        Some((domain, path)) if !domain.is_empty() && !path.is_empty() => {
            if !crd_core::validation::is_dns1123_subdomain(domain).is_empty() {
                for msg in crd_core::validation::is_dns1123_subdomain(domain) {
                    errors.push(FieldError::invalid(at, domain, msg));
                }
            }
        }
        _ => errors.push(FieldError::invalid(
            at,
            key,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )),
    }
    if key != key.to_lowercase() {
        errors.push(FieldError::invalid(at, key, "must be lowercase"));
    }
    let domain = key.split_once('/').map_or("", |(d, _)| d);
    if ["kubernetes.io", "k8s.io"]
        .iter()
        .any(|k| domain == *k || domain.ends_with(&format!(".{k}")))
    {
        errors.push(FieldError::invalid(
            at,
            key,
            "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<AuthenticationConfig, String> {
        let text = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n{body}"
        );
        AuthenticationConfig::parse(
            &text,
            &["https://kubernetes.default.svc.cluster.local".into()],
        )
        .map_err(|e| match e {
            ConfigError::Invalid(m) => m,
            ConfigError::Load(m) => format!("load: {m}"),
        })
    }

    /// Files in, upstream's aggregated field errors out (cases of kube-apiserver's
    /// `TestValidateAuthenticationConfiguration`).
    #[test]
    fn files_are_validated_as_upstream_validates_them() {
        let ok = r#"
jwt:
- issuer: {url: "https://issuer.example", audiences: [kubernetes]}
  claimMappings:
    username: {claim: sub, prefix: ""}
"#;
        assert!(parse(ok).is_ok(), "{:?}", parse(ok).err());
        let cases: &[(&str, &str)] = &[
            (
                r#"jwt: [{issuer: {url: "http://issuer.example", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}}}]"#,
                r#"jwt[0].issuer.url: Invalid value: "http://issuer.example": URL scheme must be https"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://issuer.example?x=1#f", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}}}]"#,
                r#"[jwt[0].issuer.url: Invalid value: "https://issuer.example?x=1#f": URL must not contain a query, jwt[0].issuer.url: Invalid value: "https://issuer.example?x=1#f": URL must not contain a fragment]"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://kubernetes.default.svc.cluster.local", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}}}]"#,
                r#"jwt[0].issuer.url: Invalid value: "https://kubernetes.default.svc.cluster.local": URL must not overlap with disallowed issuers: [https://kubernetes.default.svc.cluster.local]"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example"}, claimMappings: {username: {claim: sub, prefix: ""}}}]"#,
                "jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required",
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a, b]}, claimMappings: {username: {claim: sub, prefix: ""}}}]"#,
                r#"jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a], discoveryURL: "https://i.example/"}, claimMappings: {username: {claim: sub, prefix: ""}}}]"#,
                r#"jwt[0].issuer.discoveryURL: Invalid value: "https://i.example/": discoveryURL must be different from URL"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {claim: sub}}}]"#,
                "jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing",
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}}]"#,
                "jwt[0].claimMappings.username: Required value: claim or expression is required",
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {claim: sub, expression: claims.sub}}}]"#,
                r#"jwt[0].claimMappings.username: Invalid value: "": claim and expression can't both be set"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {expression: claims.sub, prefix: "x:"}}}]"#,
                r#"jwt[0].claimMappings.username.prefix: Invalid value: "x:": may not be specified when expression is set"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {expression: claims.email}}}]"#,
                r#"jwt[0].claimMappings.username.expression: Invalid value: "claims.email": claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}}, claimValidationRules: [{claim: hd, message: "no"}]}]"#,
                r#"jwt[0].claimValidationRules[0].message: Invalid value: "no": may not be specified when claim is set"#,
            ),
            (
                r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}, extra: [{key: "example.com/Tenant", valueExpression: claims.a}, {key: "example.k8s.io/b", valueExpression: claims.b}]}}]"#,
                r#"[jwt[0].claimMappings.extra[0].key: Invalid value: "example.com/Tenant": must be lowercase, jwt[0].claimMappings.extra[1].key: Invalid value: "example.k8s.io/b": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use]"#,
            ),
            (
                r#"jwt:
- {issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}}}
- {issuer: {url: "https://i.example", audiences: [b]}, claimMappings: {username: {claim: sub, prefix: ""}}}"#,
                r#"jwt[1].issuer.url: Duplicate value: "https://i.example""#,
            ),
            (
                "anonymous: {enabled: false, conditions: [{path: /livez}]}",
                r#"anonymous.conditions: Invalid value: []apiserver.AnonymousAuthCondition{apiserver.AnonymousAuthCondition{Path:"/livez"}}: enabled should be set to true when conditions are defined"#,
            ),
        ];
        for (body, want) in cases {
            assert_eq!(parse(body).err().as_deref(), Some(*want), "{body}");
        }
        let bad_cel = parse(
            r#"jwt: [{issuer: {url: "https://i.example", audiences: [a]}, claimMappings: {username: {claim: sub, prefix: ""}}, userValidationRules: [{expression: "user.username.startsWith(", message: m}]}]"#,
        )
        .unwrap_err();
        assert!(
            bad_cel.starts_with(r#"jwt[0].userValidationRules[0].expression: Invalid value: "user.username.startsWith(": compilation failed: "#),
            "{bad_cel}"
        );
        let wrong = AuthenticationConfig::parse("apiVersion: v1\nkind: Pod\n", &[]).unwrap_err();
        assert_eq!(
            wrong,
            ConfigError::Load(r#"no kind "Pod" is registered for version "v1" in scheme"#.into())
        );
        let unknown =
            parse("jwt: [{issuer: {url: https://i.example, audience: [a]}}]").unwrap_err();
        assert!(
            unknown.starts_with("load: strict decoding error: "),
            "{unknown}"
        );
        assert!(unknown.contains("audience"), "{unknown}");
    }

    #[test]
    fn a_valid_file_sets_up_its_authenticators() {
        let c = parse(
            r#"
jwt:
- issuer:
    url: https://a.example
    audiences: [x, y]
    audienceMatchPolicy: MatchAny
  claimMappings:
    username: {expression: "claims.email", }
    groups: {claim: roles, prefix: "a:"}
    uid: {claim: sub}
    extra: [{key: example.com/tenant, valueExpression: claims.tenant}]
  claimValidationRules:
  - {expression: "claims.email_verified == true", message: must be verified}
  - {claim: hd, requiredValue: example.com}
  userValidationRules:
  - {expression: "!user.username.startsWith('system:')", message: no system users}
anonymous: {enabled: true, conditions: [{path: /livez}, {path: /readyz}]}
"#,
        )
        .unwrap();
        assert_eq!(c.jwt.len(), 1);
        let j = &c.jwt[0];
        assert_eq!(j.audiences, ["x", "y"]);
        assert!(matches!(&j.username, Mapping::Expression(c) if c.source == "claims.email"));
        assert!(
            matches!(&j.groups, Some(Mapping::Claim { claim, prefix }) if claim == "roles" && prefix == "a:")
        );
        assert_eq!(j.claim_rules.len(), 2);
        assert_eq!(j.user_rules.len(), 1);
        assert_eq!(
            c.anonymous,
            Some(AnonymousConfig {
                enabled: true,
                paths: vec!["/livez".into(), "/readyz".into()],
            })
        );
    }
}
