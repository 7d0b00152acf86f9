//! Authorization with kube-apiserver's ABAC policy format (`--authorization-policy-file`): one
//! JSON `Policy` object per line,
//! `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{...}}`, where
//! `spec` has `user` or `group` (`"*"` matches everyone), and either resource attributes
//! (`apiGroup`, `namespace`, `resource`, each `"*"` for any) or `nonResourcePath` (`"*"`, an
//! exact path, or a prefix ending in `/*`), plus `readonly` (only get, list and watch).
//! A request is allowed if any line matches. Members of `system:masters` are always allowed, as
//! kube-apiserver's privileged-group authorizer allows them. Without a policy file every
//! authenticated user is allowed.
//!
//! Main types: [`Authorizer`], [`Attributes`].

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::auth::User;

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
    fn readonly(&self) -> bool {
        let verb = match self {
            Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb,
        };
        matches!(verb.as_str(), "get" | "list" | "watch" | "head")
    }
}

#[derive(Clone, Debug, Deserialize)]
struct PolicyLine {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    spec: PolicySpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicySpec {
    #[serde(default)]
    user: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    readonly: bool,
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    non_resource_path: String,
}

fn wildcard(pattern: &str, value: &str) -> bool {
    pattern == "*" || pattern == value
}

impl PolicySpec {
    fn subject_matches(&self, user: &User) -> bool {
        (!self.user.is_empty() && wildcard(&self.user, &user.name))
            || (!self.group.is_empty() && (self.group == "*" || user.groups.contains(&self.group)))
    }

    fn matches(&self, user: &User, attrs: &Attributes) -> bool {
        if !self.subject_matches(user) || (self.readonly && !attrs.readonly()) {
            return false;
        }
        match attrs {
            Attributes::Resource {
                group,
                resource,
                namespace,
                ..
            } => {
                !self.resource.is_empty()
                    && wildcard(&self.api_group, group)
                    && (self.namespace == "*"
                        || self.namespace == namespace.as_deref().unwrap_or(""))
                    && (wildcard(&self.resource, resource)
                        || resource
                            .split_once('/')
                            .is_some_and(|(r, _)| wildcard(&self.resource, r)))
            }
            Attributes::NonResource { path, .. } => {
                let p = self.non_resource_path.as_str();
                !p.is_empty()
                    && (p == "*"
                        || p == path
                        || p.strip_suffix('*')
                            .is_some_and(|prefix| path.starts_with(prefix)))
            }
        }
    }
}

/// The rules a user holds in a namespace (`SelfSubjectRulesReview`'s status).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RulesForUser {
    /// `resourceRules`: `{verbs, apiGroups, resources, resourceNames}` objects.
    pub resource_rules: Vec<serde_json::Value>,
    /// `nonResourceRules`: `{verbs, nonResourceURLs}` objects.
    pub non_resource_rules: Vec<serde_json::Value>,
    /// Whether an authorizer could not list its rules.
    pub incomplete: bool,
    /// Why, when one failed.
    pub evaluation_error: Option<String>,
}

/// Decides whether a user may make a request.
#[derive(Clone, Debug, Default)]
pub struct Authorizer {
    policy: Option<Vec<PolicySpec>>,
}

impl Authorizer {
    /// Allows every authenticated user (no policy file).
    pub fn allow_all() -> Self {
        Authorizer { policy: None }
    }

    /// Parses a policy file's text.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut lines = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let p: PolicyLine = serde_json::from_str(line)
                .with_context(|| format!("policy line {}: not a Policy object", i + 1))?;
            if p.kind != "Policy"
                || !p
                    .api_version
                    .starts_with("abac.authorization.kubernetes.io/")
            {
                bail!(
                    "policy line {}: expected kind Policy of abac.authorization.kubernetes.io",
                    i + 1
                );
            }
            lines.push(p.spec);
        }
        Ok(Authorizer {
            policy: Some(lines),
        })
    }

    /// Reads a policy file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading policy file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing policy file {}", path.display()))
    }

    /// Whether the request is allowed.
    pub fn allowed(&self, user: &User, attrs: &Attributes) -> bool {
        let Some(policy) = &self.policy else {
            return true;
        };
        user.groups.iter().any(|g| g == "system:masters")
            || policy.iter().any(|p| p.matches(user, attrs))
    }

    /// What a user may do in a namespace, as `SelfSubjectRulesReview` reports it (upstream's
    /// `RulesFor`): everything for `system:masters` and without a policy; with an ABAC policy,
    /// one rule per matching policy line.
    pub fn rules_for(&self, user: &User, namespace: &str) -> RulesForUser {
        let everything = RulesForUser {
            resource_rules: vec![
                serde_json::json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
            ],
            non_resource_rules: vec![serde_json::json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
            incomplete: false,
            evaluation_error: None,
        };
        let Some(policy) = &self.policy else {
            return everything;
        };
        if user.groups.iter().any(|g| g == "system:masters") {
            return everything;
        }
        let mut out = RulesForUser::default();
        for p in policy.iter().filter(|p| p.subject_matches(user)) {
            let verbs = if p.readonly {
                serde_json::json!(["get", "list", "watch"])
            } else {
                serde_json::json!(["*"])
            };
            if !p.resource.is_empty() && (p.namespace == "*" || p.namespace == namespace) {
                out.resource_rules.push(serde_json::json!({"verbs": verbs,
                    "apiGroups": [p.api_group], "resources": [p.resource]}));
            }
            if !p.non_resource_path.is_empty() {
                out.non_resource_rules.push(
                    serde_json::json!({"verbs": verbs, "nonResourceURLs": [p.non_resource_path]}),
                );
            }
        }
        out
    }

    /// Kubernetes' 403 text for a denied request.
    pub fn denial(user: &User, attrs: &Attributes) -> crd_core::Status {
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
                    Some(ns) => format!("in the namespace {}", crd_core::field::go_quote(ns)),
                    None => "at the cluster scope".to_string(),
                };
                let what = match sub {
                    Some(s) => format!("resource \"{res}/{s}\""),
                    None => format!("resource \"{res}\""),
                };
                let why = format!(
                    "User {} cannot {verb} {what} in API group {} {scope}",
                    crd_core::field::go_quote(&user.name),
                    crd_core::field::go_quote(group)
                );
                crd_core::Status::forbidden(&gr, name.as_deref().unwrap_or(""), &why)
            }
            Attributes::NonResource { verb, path } => crd_core::Status::failure(
                403,
                "Forbidden",
                format!(
                    "forbidden: User {} cannot {verb} path {}",
                    crd_core::field::go_quote(&user.name),
                    crd_core::field::go_quote(path)
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            extra: std::collections::BTreeMap::new(),
            name: name.into(),
            uid: name.into(),
            groups: groups.iter().map(|g| (*g).to_string()).collect(),
        }
    }

    fn res(verb: &str, group: &str, resource: &str, ns: Option<&str>) -> Attributes {
        Attributes::Resource {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: ns.map(String::from),
            name: None,
        }
    }

    const POLICY: &str = r#"
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"team-a","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"viewers","namespace":"*","resource":"crontabs","apiGroup":"stable.example.com","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","nonResourcePath":"*","readonly":true}}
"#;

    #[test]
    fn policy_cases() {
        let a = Authorizer::parse(POLICY).unwrap();
        let alice = user("alice", &["system:authenticated"]);
        let viewer = user("val", &["viewers", "system:authenticated"]);
        let admin = user("admin", &["system:masters"]);
        let cases = [
            (
                &alice,
                res("create", "stable.example.com", "crontabs", Some("team-a")),
                true,
            ),
            (
                &alice,
                res("create", "stable.example.com", "crontabs", Some("team-b")),
                false,
            ),
            (
                &alice,
                res(
                    "list",
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    None,
                ),
                false,
            ),
            (
                &viewer,
                res("list", "stable.example.com", "crontabs", Some("x")),
                true,
            ),
            (
                &viewer,
                res("get", "stable.example.com", "crontabs/status", Some("x")),
                true,
            ),
            (
                &viewer,
                res("delete", "stable.example.com", "crontabs", Some("x")),
                false,
            ),
            (
                &viewer,
                Attributes::NonResource {
                    verb: "get".into(),
                    path: "/apis".into(),
                },
                true,
            ),
            (
                &viewer,
                Attributes::NonResource {
                    verb: "post".into(),
                    path: "/apis".into(),
                },
                false,
            ),
            (&admin, res("delete", "", "namespaces", None), true),
        ];
        for (u, attrs, want) in cases {
            assert_eq!(a.allowed(u, &attrs), want, "{} {attrs:?}", u.name);
        }
        assert!(Authorizer::allow_all().allowed(&alice, &res("delete", "", "namespaces", None)));
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
        assert!(Authorizer::parse("{\"kind\":\"Nope\"}").is_err());
    }
}
