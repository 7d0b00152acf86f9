//! kube-apiserver's ABAC policy format (`--authorization-mode=ABAC` with
//! `--authorization-policy-file`): one JSON `Policy` object per line,
//! `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{...}}`, where
//! `spec` has `user` or `group` (`"*"` matches everyone), and either resource attributes
//! (`apiGroup`, `namespace`, `resource`, each `"*"` for any) or `nonResourcePath` (`"*"`, an
//! exact path, or a prefix ending in `/*`), plus `readonly` (only get, list and watch).
//! A request is allowed if any line matches; otherwise the policy has no opinion, with
//! upstream's reason `No policy matched.`.
//!
//! Main type: [`Policy`].

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;

use super::{Attributes, Decision};
use crate::auth::User;

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

/// A parsed ABAC policy file.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    lines: Vec<PolicySpec>,
}

impl Policy {
    /// The rules the lines matching `user` grant in `namespace` (upstream's ABAC `RulesFor`):
    /// read-only lines grant get, list and watch; others every verb.
    pub fn rules_for(&self, user: &User, namespace: &str) -> Vec<super::rbac::rules::PolicyRule> {
        use super::rbac::rules::PolicyRule;
        let mut out = Vec::new();
        for p in self.lines.iter().filter(|p| p.subject_matches(user)) {
            let verbs: &[&str] = if p.readonly {
                &["get", "list", "watch"]
            } else {
                &["*"]
            };
            if !p.resource.is_empty() && (p.namespace == "*" || p.namespace == namespace) {
                out.push(PolicyRule::resource(verbs, &[&p.api_group], &[&p.resource]));
            }
            if !p.non_resource_path.is_empty() {
                out.push(PolicyRule::non_resource(verbs, &[&p.non_resource_path]));
            }
        }
        out
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
        Ok(Policy { lines })
    }

    /// Reads a policy file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading policy file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing policy file {}", path.display()))
    }

    /// Allows when a line matches; otherwise no opinion with `No policy matched.`.
    pub fn authorize(&self, user: &User, attrs: &Attributes) -> Decision {
        if self.lines.iter().any(|p| p.matches(user, attrs)) {
            Decision::allow(String::new())
        } else {
            Decision::deny("No policy matched.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::authz::tests::{res, user};

    const POLICY: &str = r#"
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"team-a","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"viewers","namespace":"*","resource":"crontabs","apiGroup":"stable.example.com","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","nonResourcePath":"*","readonly":true}}
"#;

    #[test]
    fn policy_cases() {
        let a = Policy::parse(POLICY).unwrap();
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
            (&admin, res("delete", "", "namespaces", None), false),
        ];
        for (u, attrs, want) in cases {
            assert_eq!(a.authorize(u, &attrs).allowed, want, "{} {attrs:?}", u.name);
        }
        assert_eq!(
            a.authorize(&alice, &res("delete", "", "namespaces", None))
                .reason,
            "No policy matched."
        );
        assert!(Policy::parse("{\"kind\":\"Nope\"}").is_err());
    }
}
