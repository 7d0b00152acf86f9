//! Authorization, as kube-apiserver's `--authorization-mode`: an ordered union of authorizers
//! ([`Member`]: `AlwaysAllow`, `ABAC`, `RBAC`) after the privileged-group check. Members of
//! `system:masters` are always allowed; otherwise the first member that allows wins, and a
//! denial carries the members' reasons (joined by newlines), which the 403 message appends
//! after `: ` as upstream's `responsewriters.Forbidden` does.
//!
//! - [`abac`]: the `--authorization-policy-file` policy.
//! - [`rbac`]: roles and bindings held in memory from informers, rule matching, the
//!   bootstrap policy, escalation checks.
//!
//! Main types: [`Authorizer`], [`Attributes`], [`Decision`], [`RulesForUser`].

pub mod abac;
pub mod rbac;

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

/// One authorizer's answer: allowed or not (no opinion and deny are the same here), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// Why (`RBAC: allowed by ...`, `No policy matched.`, or "").
    pub reason: String,
}

impl Decision {
    /// Allowed, because of `reason`.
    pub fn allow(reason: impl Into<String>) -> Self {
        Decision {
            allowed: true,
            reason: reason.into(),
        }
    }

    /// Not allowed, with `reason` ("" for none).
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision {
            allowed: false,
            reason: reason.into(),
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
}

/// The modes `--authorization-mode` accepts.
pub const MODES: &[&str] = &["AlwaysAllow", "ABAC", "RBAC"];

/// Decides whether a user may make a request: `system:masters`, then each member in order.
#[derive(Clone, Debug)]
pub struct Authorizer {
    members: Vec<Member>,
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
            members: vec![Member::AlwaysAllow],
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
        Authorizer { members, resolver }
    }

    /// Builds the union from `--authorization-mode`'s list and the ABAC policy file, with
    /// kube-apiserver's checks (a known mode, no repeats, ABAC needs a policy file and a policy
    /// file needs ABAC). RBAC members share `rbac`.
    pub fn from_modes(
        modes: &[String],
        policy_file: Option<&std::path::Path>,
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
                "RBAC" => Member::Rbac(rbac.clone()),
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
        Ok(Authorizer {
            members,
            resolver: rbac.clone(),
        })
    }

    /// The RBAC policy (fed by the RBAC controller whatever the modes), for escalation checks
    /// and rule listing.
    pub fn resolver(&self) -> &Arc<rbac::RbacAuthorizer> {
        &self.resolver
    }

    /// The RBAC member, when RBAC is a mode (escalation checks and the controller use it).
    pub fn rbac(&self) -> Option<&Arc<rbac::RbacAuthorizer>> {
        self.members.iter().find_map(|m| match m {
            Member::Rbac(r) => Some(r),
            _ => None,
        })
    }

    /// The decision for a request: `system:masters` first, then the first member that allows;
    /// a denial joins the members' non-empty reasons with newlines.
    pub fn authorize(&self, user: &User, attrs: &Attributes) -> Decision {
        if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Decision::allow("");
        }
        let mut reasons = Vec::new();
        for m in &self.members {
            let d = match m {
                Member::AlwaysAllow => Decision::allow(""),
                Member::Abac(p) => p.authorize(user, attrs),
                Member::Rbac(r) => r.authorize(user, attrs),
            };
            if d.allowed {
                return d;
            }
            if !d.reason.is_empty() {
                reasons.push(d.reason);
            }
        }
        Decision::deny(reasons.join("\n"))
    }

    /// Whether the request is allowed.
    pub fn allowed(&self, user: &User, attrs: &Attributes) -> bool {
        self.authorize(user, attrs).allowed
    }

    /// The rules the user holds in `namespace` across the members (upstream's union
    /// `RulesFor`): everything for `AlwaysAllow`, RBAC's resolved rules, and `incomplete` for
    /// ABAC, whose rules are not listed here.
    pub fn rules_for(&self, user: &User, namespace: &str) -> RulesForUser {
        let mut out = RulesForUser::default();
        let mut errors = Vec::new();
        for m in &self.members {
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
        let a = Authorizer::from_modes(&modes(&["RBAC", "ABAC"]), Some(&policy), &rbac).unwrap();
        let attrs = res("list", "", "configmaps", Some("default"));
        assert!(a.authorize(&user("ann", &[]), &attrs).allowed);
        assert_eq!(
            a.authorize(&user("bob", &[]), &attrs),
            Decision::deny("No policy matched.")
        );
        assert_eq!(
            Authorizer::denial_with_reason(&user("bob", &[]), &attrs, "No policy matched.").message,
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": No policy matched."
        );
        assert!(
            a.authorize(&user("root", &["system:masters"]), &attrs)
                .allowed
        );
        let only_rbac = Authorizer::from_modes(&modes(&["RBAC"]), None, &rbac).unwrap();
        assert_eq!(
            only_rbac.authorize(&user("bob", &[]), &attrs),
            Decision::deny("")
        );
        assert!(only_rbac.rbac().is_some());
        let allow = Authorizer::from_modes(&modes(&["AlwaysAllow"]), None, &rbac).unwrap();
        assert!(allow.authorize(&user("bob", &[]), &attrs).allowed);
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
                &["RBAC", "RBAC"][..],
                None,
                "authorization-mode \"RBAC\" has mode specified more than once",
            ),
            (
                &["Node"][..],
                None,
                "authorization-mode \"Node\" is not a valid mode (valid: AlwaysAllow,ABAC,RBAC)",
            ),
        ] {
            let e = Authorizer::from_modes(&modes(m), file, &rbac).unwrap_err();
            assert_eq!(e.to_string(), err);
        }
    }
}
