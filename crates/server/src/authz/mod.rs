//! Authorization, as kube-apiserver's `--authorization-mode`: an ordered union of authorizers
//! ([`Member`]: `AlwaysAllow`, `ABAC`, `RBAC`, `Webhook`) after the privileged-group check.
//! Members of `system:masters` are always allowed; otherwise the first member that allows or
//! denies decides (only a webhook denies; the others allow or have no opinion), and a request no
//! member allowed carries the members' reasons (joined by newlines), which the 403 message
//! appends after `: ` as upstream's `responsewriters.Forbidden` does, or their errors, which make
//! it a 500.
//!
//! - [`abac`]: the `--authorization-policy-file` policy.
//! - [`rbac`]: roles and bindings held in memory from informers, rule matching, the
//!   bootstrap policy, escalation checks.
//! - [`webhook`]: `SubjectAccessReview`s sent to a remote service, with their cache.
//! - [`config`]: the `--authorization-config` file (several webhooks, match conditions).
//!
//! Main types: [`Authorizer`], [`Attributes`], [`Decision`], [`RulesForUser`].

pub mod abac;
pub mod config;
pub mod rbac;
pub mod webhook;

use std::sync::Arc;

use anyhow::bail;

use crate::auth::User;

/// The group whose members are always allowed (`user.SystemPrivilegedGroup`).
pub const PRIVILEGED_GROUP: &str = "system:masters";

/// What a request does, as the authorizer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attributes {
    /// A request for an API resource.
    Resource {
        /// The verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`).
        verb: String,
        /// The API group ("" for core).
        group: String,
        /// The API version ("" where a check names none, as RBAC ignores it).
        version: String,
        /// The resource (plural), with `/subresource` when one is addressed.
        resource: String,
        /// The namespace, if any.
        namespace: Option<String>,
        /// The object name, if any.
        name: Option<String>,
    },
    /// A request for another path (discovery, OpenAPI, version).
    NonResource {
        /// The verb derived from the method (`get`, `post`, ...).
        verb: String,
        /// The URL path.
        path: String,
    },
}

impl Attributes {
    /// Whether the verb only reads (`get`, `list`, `watch`, `head`).
    pub fn readonly(&self) -> bool {
        matches!(self.verb(), "get" | "list" | "watch" | "head")
    }

    /// The verb.
    pub fn verb(&self) -> &str {
        match self {
            Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb,
        }
    }

    /// The namespace ("" for cluster-scoped and non-resource requests).
    pub fn namespace(&self) -> &str {
        match self {
            Attributes::Resource { namespace, .. } => namespace.as_deref().unwrap_or(""),
            Attributes::NonResource { .. } => "",
        }
    }
}

/// One authorizer's answer: allowed, denied (which stops the union) or no opinion, why, and
/// what went wrong deciding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// Whether it is denied outright: later authorizers are not asked (a webhook's `denied`).
    pub denied: bool,
    /// Why (`RBAC: allowed by ...`, `No policy matched.`, or "").
    pub reason: String,
    /// An error deciding ("" for none): a request nobody allowed is then a 500, not a 403.
    pub error: String,
}

impl Decision {
    /// Allowed, because of `reason`.
    pub fn allow(reason: impl Into<String>) -> Self {
        Decision {
            allowed: true,
            reason: reason.into(),
            ..Decision::default()
        }
    }

    /// No opinion (not allowed), with `reason` ("" for none).
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision {
            reason: reason.into(),
            ..Decision::default()
        }
    }
}

/// The rules a user has in a namespace, as `SelfSubjectRulesReview` reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesForUser {
    /// Rules on resources.
    pub resource_rules: Vec<rbac::rules::PolicyRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<rbac::rules::PolicyRule>,
    /// Whether some authorizer could not list its rules, so the list may be short.
    pub incomplete: bool,
    /// Rule resolution errors (roles that bindings name but that do not exist), aggregated.
    pub evaluation_error: String,
}

/// One authorization mode of the union.
#[derive(Clone, Debug)]
pub enum Member {
    /// `AlwaysAllow`.
    AlwaysAllow,
    /// `ABAC` with its policy file.
    Abac(abac::Policy),
    /// `RBAC`.
    Rbac(Arc<rbac::RbacAuthorizer>),
    /// `Webhook`.
    Webhook(Arc<webhook::WebhookAuthorizer>),
    /// `AlwaysDeny` (no opinion on anything).
    AlwaysDeny,
}

impl Member {
    /// Its type and name in `apiserver_authorization_decisions_total`.
    fn label(&self) -> (&'static str, &str) {
        match self {
            Member::AlwaysAllow => ("AlwaysAllow", "alwaysallow"),
            Member::AlwaysDeny => ("AlwaysDeny", "alwaysdeny"),
            Member::Abac(_) => ("ABAC", "abac"),
            Member::Rbac(_) => ("RBAC", "rbac"),
            Member::Webhook(w) => ("Webhook", w.name()),
        }
    }
}

/// The modes `--authorization-mode` accepts.
pub const MODES: &[&str] = &["AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC"];

/// How the authorizers are chosen: kube-apiserver's `--authorization-mode` with its policy and
/// webhook flags, or an `--authorization-config` file.
#[derive(Clone, Debug)]
pub struct AuthorizationOptions {
    /// `--authorization-mode`: the ordered modes (`RBAC` by default).
    pub modes: Vec<String>,
    /// `--authorization-policy-file`: the ABAC policy (needs mode `ABAC`).
    pub policy_file: Option<std::path::PathBuf>,
    /// `--authorization-webhook-*`: the webhook of mode `Webhook`.
    pub webhook: webhook::WebhookFlags,
    /// `--authorization-config`: an `AuthorizationConfiguration` file.
    pub config_file: Option<std::path::PathBuf>,
    /// Whether `--authorization-mode` or an `--authorization-webhook-*` flag was given (they
    /// conflict with `--authorization-config`).
    pub flags_set: bool,
}

impl Default for AuthorizationOptions {
    fn default() -> Self {
        AuthorizationOptions {
            modes: vec!["RBAC".into()],
            policy_file: None,
            webhook: webhook::WebhookFlags::default(),
            config_file: None,
            flags_set: false,
        }
    }
}

impl AuthorizationOptions {
    /// The authorizer these options describe, with kube-apiserver's start-up checks; RBAC
    /// members share `rbac`.
    pub fn build(&self, rbac: &Arc<rbac::RbacAuthorizer>) -> anyhow::Result<Authorizer> {
        let Some(path) = &self.config_file else {
            return Authorizer::from_modes(
                &self.modes,
                self.policy_file.as_deref(),
                self.webhook.options()?.as_ref(),
                rbac,
            );
        };
        if self.flags_set {
            bail!(
                "--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"
            );
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        self.from_config_text(&text, rbac)
    }

    /// The authorizer of an `--authorization-config` file's text (at start-up and on reload).
    pub fn from_config_text(
        &self,
        text: &str,
        rbac: &Arc<rbac::RbacAuthorizer>,
    ) -> anyhow::Result<Authorizer> {
        let configured = config::parse(text)
            .map_err(|e| anyhow::anyhow!("invalid authorization configuration: {e}"))?;
        Authorizer::from_config(configured, self.policy_file.as_deref(), rbac)
    }
}

/// A member list to share.
fn shared(members: Vec<Member>) -> Arc<std::sync::RwLock<Arc<Vec<Member>>>> {
    Arc::new(std::sync::RwLock::new(Arc::new(members)))
}

/// Decides whether a user may make a request: `system:masters`, then each member in order.
#[derive(Clone, Debug)]
pub struct Authorizer {
    /// The members in effect, shared by every clone and replaced whole when the
    /// `--authorization-config` file changes (a decision uses the set it started with).
    members: Arc<std::sync::RwLock<Arc<Vec<Member>>>>,
    /// The RBAC policy, whatever the modes: escalation checks resolve rules through it.
    resolver: Arc<rbac::RbacAuthorizer>,
}

impl Default for Authorizer {
    fn default() -> Self {
        Authorizer::allow_all()
    }
}

impl Authorizer {
    /// Allows every authenticated user (`--authorization-mode=AlwaysAllow`).
    pub fn allow_all() -> Self {
        Authorizer {
            members: shared(vec![Member::AlwaysAllow]),
            resolver: rbac::RbacAuthorizer::new(),
        }
    }

    /// A union of members, in order (rules resolve through the first RBAC member's policy).
    pub fn new(members: Vec<Member>) -> Self {
        let resolver = members
            .iter()
            .find_map(|m| match m {
                Member::Rbac(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap_or_else(rbac::RbacAuthorizer::new);
        Authorizer {
            members: shared(members),
            resolver,
        }
    }

    /// Builds the union from `--authorization-mode`'s list, the ABAC policy file and the
    /// webhook's options, with kube-apiserver's checks (a known mode, no repeats, ABAC needs a
    /// policy file and a policy file needs ABAC, the same for Webhook). RBAC members share
    /// `rbac`.
    pub fn from_modes(
        modes: &[String],
        policy_file: Option<&std::path::Path>,
        webhook: Option<&webhook::WebhookOptions>,
        rbac: &Arc<rbac::RbacAuthorizer>,
    ) -> anyhow::Result<Self> {
        if modes.is_empty() {
            bail!("at least one authorization-mode must be passed");
        }
        let mut members = Vec::new();
        for (i, m) in modes.iter().enumerate() {
            if modes[..i].contains(m) {
                bail!("authorization-mode {m:?} has mode specified more than once");
            }
            members.push(match m.as_str() {
                "AlwaysAllow" => Member::AlwaysAllow,
                "AlwaysDeny" => Member::AlwaysDeny,
                "RBAC" => Member::Rbac(rbac.clone()),
                "Webhook" => match webhook {
                    Some(o) => {
                        Member::Webhook(Arc::new(webhook::WebhookAuthorizer::new(o.clone())?))
                    }
                    None => {
                        bail!("authorization-mode Webhook's authorization config file not passed")
                    }
                },
                "ABAC" => match policy_file {
                    Some(p) => Member::Abac(abac::Policy::from_file(p)?),
                    None => bail!("authorization-mode ABAC's authorization policy file not passed"),
                },
                other => bail!(
                    "authorization-mode {other:?} is not a valid mode (valid: {})",
                    MODES.join(",")
                ),
            });
        }
        if policy_file.is_some() && !modes.iter().any(|m| m == "ABAC") {
            bail!("cannot specify --authorization-policy-file without mode ABAC");
        }
        if webhook.is_some() && !modes.iter().any(|m| m == "Webhook") {
            bail!("cannot specify --authorization-webhook-config-file without mode Webhook");
        }
        Ok(Authorizer {
            members: shared(members),
            resolver: rbac.clone(),
        })
    }

    /// Builds the union an `--authorization-config` file lists ([`config::parse`]); ABAC reads
    /// `policy_file`, RBAC members share `rbac`.
    pub fn from_config(
        configured: Vec<config::Configured>,
        policy_file: Option<&std::path::Path>,
        rbac: &Arc<rbac::RbacAuthorizer>,
    ) -> anyhow::Result<Self> {
        let mut members = Vec::new();
        for c in configured {
            members.push(match c {
                config::Configured::Webhook(o) => {
                    Member::Webhook(Arc::new(webhook::WebhookAuthorizer::new(*o)?))
                }
                config::Configured::Mode(m) => match m.as_str() {
                    "AlwaysAllow" => Member::AlwaysAllow,
                    "AlwaysDeny" => Member::AlwaysDeny,
                    "ABAC" => match policy_file {
                        Some(p) => Member::Abac(abac::Policy::from_file(p)?),
                        None => {
                            bail!("authorization-mode ABAC's authorization policy file not passed")
                        }
                    },
                    _ => Member::Rbac(rbac.clone()),
                },
            });
        }
        Ok(Authorizer {
            members: shared(members),
            resolver: rbac.clone(),
        })
    }

    /// Puts `other`'s members in effect here (and in every clone of this authorizer): a
    /// reloaded `--authorization-config` file.
    pub fn adopt(&self, other: &Authorizer) {
        let members = other.members();
        *self
            .members
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = members;
    }

    /// The members in effect now.
    fn members(&self) -> Arc<Vec<Member>> {
        self.members
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The RBAC policy (fed by the RBAC controller whatever the modes), for escalation checks
    /// and rule listing.
    pub fn resolver(&self) -> &Arc<rbac::RbacAuthorizer> {
        &self.resolver
    }

    /// The RBAC member, when RBAC is a mode (escalation checks and the controller use it).
    pub fn rbac(&self) -> Option<Arc<rbac::RbacAuthorizer>> {
        self.members().iter().find_map(|m| match m {
            Member::Rbac(r) => Some(r.clone()),
            _ => None,
        })
    }

    /// The decision for a request: `system:masters` first, then the first member that allows
    /// or denies; otherwise no opinion with the members' non-empty reasons joined by newlines
    /// and their errors aggregated (upstream's union authorizer).
    pub async fn authorize(&self, user: &User, attrs: &Attributes) -> Decision {
        if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Decision::allow("");
        }
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        let members = self.members();
        for m in members.iter() {
            let d = match m {
                Member::AlwaysAllow => Decision::allow(""),
                Member::AlwaysDeny => Decision::deny(""),
                Member::Abac(p) => p.authorize(user, attrs),
                Member::Rbac(r) => r.authorize(user, attrs),
                Member::Webhook(w) => w.authorize(user, attrs).await,
            };
            if d.allowed || d.denied {
                let (kind, name) = m.label();
                crate::metrics::authorization_decision(kind, name, d.allowed);
                return d;
            }
            if !d.reason.is_empty() {
                reasons.push(d.reason);
            }
            if !d.error.is_empty() {
                errors.push(d.error);
            }
        }
        Decision {
            reason: reasons.join("\n"),
            error: if errors.is_empty() {
                String::new()
            } else {
                rbac::aggregate(&errors)
            },
            ..Decision::default()
        }
    }

    /// [`Authorizer::authorize`] for synchronous callers (CEL's `authorizer`): a webhook's call
    /// runs on its own runtime while this thread waits.
    pub fn authorize_blocking(&self, user: &User, attrs: &Attributes) -> Decision {
        futures::executor::block_on(self.authorize(user, attrs))
    }

    /// The rules the user holds in `namespace` across the members (upstream's union
    /// `RulesFor`): everything for `AlwaysAllow`, RBAC's resolved rules, and `incomplete` for
    /// ABAC, whose rules are not listed here.
    pub fn rules_for(&self, user: &User, namespace: &str) -> RulesForUser {
        let mut out = RulesForUser::default();
        let mut errors = Vec::new();
        for m in self.members().iter() {
            match m {
                Member::AlwaysAllow => {
                    out.resource_rules.push(rbac::rules::PolicyRule::resource(
                        &["*"],
                        &["*"],
                        &["*"],
                    ));
                    out.non_resource_rules
                        .push(rbac::rules::PolicyRule::non_resource(&["*"], &["*"]));
                }
                Member::AlwaysDeny => {}
                Member::Webhook(_) => {
                    out.incomplete = true;
                    errors.push("webhook authorizer does not support user rule resolution".into());
                }
                Member::Abac(policy) => {
                    for rule in policy.rules_for(user, namespace) {
                        if rule.non_resource_urls.is_empty() {
                            out.resource_rules.push(rule);
                        } else {
                            out.non_resource_rules.push(rule);
                        }
                    }
                }
                Member::Rbac(r) => {
                    let (rules, errs) = r.read(|p| p.rules_for(user, namespace));
                    for rule in rules {
                        if !rule.resources.is_empty() {
                            out.resource_rules.push(rule.clone());
                        }
                        if !rule.non_resource_urls.is_empty() {
                            out.non_resource_rules.push(rule);
                        }
                    }
                    errors.extend(errs);
                }
            }
        }
        if !errors.is_empty() {
            out.evaluation_error = rbac::aggregate(&errors);
        }
        out
    }

    /// Kubernetes' 403 for a denied request without a reason.
    pub fn denial(user: &User, attrs: &Attributes) -> crd_core::Status {
        Self::denial_with_reason(user, attrs, "")
    }

    /// Kubernetes' 403 for a denied request: `<what the user cannot do>` and `: <reason>` when
    /// the authorizers gave one (`&`, `<` and `>` escaped as upstream does).
    pub fn denial_with_reason(user: &User, attrs: &Attributes, reason: &str) -> crd_core::Status {
        let q = crd_core::field::go_quote;
        let sanitize = |s: String| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let suffix = if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        };
        match attrs {
            Attributes::Resource {
                verb,
                group,
                version: _,
                resource,
                namespace,
                name,
            } => {
                let (res, sub) = resource
                    .split_once('/')
                    .map_or((resource.as_str(), None), |(r, s)| (r, Some(s)));
                let gr = crd_core::GroupResource::new(group, res);
                let scope = match namespace {
                    Some(ns) => format!("in the namespace {}", q(ns)),
                    None => "at the cluster scope".to_string(),
                };
                let what = match sub {
                    Some(s) => format!("resource \"{res}/{s}\""),
                    None => format!("resource \"{res}\""),
                };
                let why = sanitize(format!(
                    "User {} cannot {verb} {what} in API group {} {scope}",
                    q(&user.name),
                    q(group)
                ));
                crd_core::Status::forbidden(&gr, name.as_deref().unwrap_or(""), &(why + &suffix))
            }
            Attributes::NonResource { verb, path } => crd_core::Status::failure(
                403,
                "Forbidden",
                format!(
                    "forbidden: {}{suffix}",
                    sanitize(format!(
                        "User {} cannot {verb} path {}",
                        q(&user.name),
                        q(path)
                    ))
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user with `uid` = name (shared with the ABAC tests).
    pub(super) fn user(name: &str, groups: &[&str]) -> User {
        User {
            extra: std::collections::BTreeMap::default(),
            name: name.into(),
            uid: name.into(),
            groups: groups.iter().map(|g| (*g).to_string()).collect(),
        }
    }

    /// Resource attributes without a name (shared with the ABAC tests).
    pub(super) fn res(verb: &str, group: &str, resource: &str, ns: Option<&str>) -> Attributes {
        Attributes::Resource {
            verb: verb.into(),
            group: group.into(),
            version: String::new(),
            resource: resource.into(),
            namespace: ns.map(String::from),
            name: None,
        }
    }

    #[test]
    fn denial_messages_match_kubernetes() {
        let bob = user("bob", &[]);
        let mut attrs = res("list", "stable.example.com", "crontabs", Some("default"));
        assert_eq!(
            Authorizer::denial(&bob, &attrs).message,
            "crontabs.stable.example.com is forbidden: User \"bob\" cannot list resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"default\""
        );
        if let Attributes::Resource {
            name,
            namespace,
            verb,
            group,
            version: _,
            resource,
        } = &mut attrs
        {
            *name = Some("x".into());
            *namespace = None;
            *verb = "delete".into();
            *group = String::new();
            *resource = "namespaces".into();
        }
        assert_eq!(
            Authorizer::denial(&bob, &attrs).message,
            "namespaces \"x\" is forbidden: User \"bob\" cannot delete resource \"namespaces\" in API group \"\" at the cluster scope"
        );
    }

    #[test]
    fn union_order_masters_and_reasons() {
        let rbac = rbac::RbacAuthorizer::new();
        rbac.set_synced();
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.jsonl");
        std::fs::write(
            &policy,
            r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"ann","namespace":"*","resource":"*","apiGroup":"*"}}"#,
        )
        .unwrap();
        let modes = |m: &[&str]| m.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        let a =
            Authorizer::from_modes(&modes(&["RBAC", "ABAC"]), Some(&policy), None, &rbac).unwrap();
        let attrs = res("list", "", "configmaps", Some("default"));
        assert!(a.authorize_blocking(&user("ann", &[]), &attrs).allowed);
        assert_eq!(
            a.authorize_blocking(&user("bob", &[]), &attrs),
            Decision::deny("No policy matched.")
        );
        assert_eq!(
            Authorizer::denial_with_reason(&user("bob", &[]), &attrs, "No policy matched.").message,
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": No policy matched."
        );
        assert!(
            a.authorize_blocking(&user("root", &["system:masters"]), &attrs)
                .allowed
        );
        let only_rbac = Authorizer::from_modes(&modes(&["RBAC"]), None, None, &rbac).unwrap();
        assert_eq!(
            only_rbac.authorize_blocking(&user("bob", &[]), &attrs),
            Decision::deny("")
        );
        assert!(only_rbac.rbac().is_some());
        let allow = Authorizer::from_modes(&modes(&["AlwaysAllow"]), None, None, &rbac).unwrap();
        assert!(allow.authorize_blocking(&user("bob", &[]), &attrs).allowed);
        assert!(allow.rbac().is_none());
        for (m, file, err) in [
            (
                &["ABAC"][..],
                None,
                "authorization-mode ABAC's authorization policy file not passed",
            ),
            (
                &["RBAC"][..],
                Some(policy.as_path()),
                "cannot specify --authorization-policy-file without mode ABAC",
            ),
            (
                &["Webhook"][..],
                None,
                "authorization-mode Webhook's authorization config file not passed",
            ),
            (
                &["RBAC", "RBAC"][..],
                None,
                "authorization-mode \"RBAC\" has mode specified more than once",
            ),
            (
                &["Node"][..],
                None,
                "authorization-mode \"Node\" is not a valid mode (valid: AlwaysAllow,AlwaysDeny,ABAC,Webhook,RBAC)",
            ),
        ] {
            let e = Authorizer::from_modes(&modes(m), file, None, &rbac).unwrap_err();
            assert_eq!(e.to_string(), err);
        }
    }
}
