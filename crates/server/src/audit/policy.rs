//! The audit policy (`--audit-policy-file`, `audit.k8s.io/v1` `Policy`) and its evaluation, as
//! kube-apiserver's `pkg/audit/policy` checker: the first rule that matches a request decides
//! its level; the policy's and the rule's `omitStages` add up; a rule's `omitManagedFields`
//! overrides the policy's. A request no rule matches is not audited (level `None`).

use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// How much of a request is recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
pub enum Level {
    /// Not audited.
    #[default]
    None,
    /// User, verb, resource, response code and timestamps; no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata and both bodies.
    RequestResponse,
}

/// The stages of a request at which events are produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Stage {
    /// As soon as the request is received, before the handler runs.
    RequestReceived,
    /// When the response headers are sent, before the body (long-running requests only).
    ResponseStarted,
    /// When the response body is complete.
    ResponseComplete,
    /// When a panic occurred (never produced: handlers do not panic).
    Panic,
}

impl Stage {
    fn bit(self) -> u8 {
        match self {
            Stage::RequestReceived => 1,
            Stage::ResponseStarted => 2,
            Stage::ResponseComplete => 4,
            Stage::Panic => 8,
        }
    }
}

/// A set of stages, as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages(u8);

impl Stages {
    /// Whether the set holds the stage.
    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn of(stages: &[Stage]) -> Self {
        Stages(stages.iter().fold(0, |acc, s| acc | s.bit()))
    }
}

/// The group and resources a rule matches.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    /// The API group ("" for core).
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/status`, `*`, `*/status`, `pods/*`); empty means all.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; empty means all.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of a policy.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyRule {
    /// The level of requests the rule matches.
    pub level: Level,
    /// User names; empty means all.
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups, any of which matches; empty means all.
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Verbs; empty means all.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources; with `namespaces`, restricts the rule to resource requests.
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces ("" is cluster-scoped resources).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource paths (`/healthz`, `/api*`, `*`); restricts the rule to non-resource
    /// requests.
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not recorded for the rule's requests (added to the policy's).
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether managedFields are dropped from logged bodies; unset takes the policy's.
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// An `audit.k8s.io/v1` Policy.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// `audit.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Policy`.
    #[serde(default)]
    pub kind: String,
    /// Object metadata (ignored).
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// The rules, first match wins.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// Stages never recorded.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether managedFields are dropped from logged bodies.
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// What a request looks like to the policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Attributes<'a> {
    /// The authenticated user name.
    pub user: &'a str,
    /// The user's groups.
    pub groups: &'a [String],
    /// The Kubernetes verb (`get`, `create`, ...), or the lowercase HTTP method for
    /// non-resource requests.
    pub verb: &'a str,
    /// The resource addressed, for resource requests.
    pub resource: Option<ResourceAttributes<'a>>,
    /// The URL path.
    pub path: &'a str,
}

/// The resource part of [`Attributes`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceAttributes<'a> {
    /// The API group.
    pub group: &'a str,
    /// The plural resource.
    pub resource: &'a str,
    /// The subresource ("" for none).
    pub subresource: &'a str,
    /// The namespace ("" for cluster-scoped).
    pub namespace: &'a str,
    /// The object name ("" for collections).
    pub name: &'a str,
}

/// What the policy decides for one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// The level.
    pub level: Level,
    /// Stages not recorded.
    pub omit_stages: Stages,
    /// Whether managedFields are dropped from logged bodies.
    pub omit_managed_fields: bool,
}

impl Policy {
    /// Parses and validates a policy document (YAML or JSON).
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let policy: Policy = serde_saphyr::from_str(text).context("decoding the policy")?;
        policy.validate()?;
        Ok(policy)
    }

    /// Reads a policy file; errors name the file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading audit policy file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("loading audit policy file {}", path.display()))
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.kind != "Policy" {
            bail!("kind: Invalid value: {:?}: must be \"Policy\"", self.kind);
        }
        if self.api_version != "audit.k8s.io/v1" {
            bail!(
                "apiVersion: Unsupported value: {:?}: supported values: \"audit.k8s.io/v1\"",
                self.api_version
            );
        }
        if self.rules.is_empty() {
            bail!("loaded illegal policy with 0 rules");
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let has_resources = !rule.resources.is_empty() || !rule.namespaces.is_empty();
            if has_resources && !rule.non_resource_urls.is_empty() {
                bail!(
                    "rules[{i}].nonResourceURLs: Invalid value: {:?}: rules cannot apply to both \
                     regular resources and non-resource URLs",
                    rule.non_resource_urls
                );
            }
            for (j, url) in rule.non_resource_urls.iter().enumerate() {
                let star = url.find('*');
                if !(url.starts_with('/') || url == "*") || star.is_some_and(|p| p != url.len() - 1)
                {
                    bail!(
                        "rules[{i}].nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource \
                         URL rules must begin with \"/\" and may only have \"*\" at the end"
                    );
                }
            }
            for (j, gr) in rule.resources.iter().enumerate() {
                if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                    bail!(
                        "rules[{i}].resources[{j}].resourceNames: Invalid value: {:?}: using \
                         resourceNames requires at least one resource",
                        gr.resource_names
                    );
                }
            }
        }
        Ok(())
    }

    /// Decides the level and omitted stages of a request.
    pub fn decide(&self, attrs: &Attributes<'_>) -> Decision {
        let policy_omit = Stages::of(&self.omit_stages);
        match self.rules.iter().find(|r| r.matches(attrs)) {
            Some(rule) => Decision {
                level: rule.level,
                omit_stages: Stages(policy_omit.0 | Stages::of(&rule.omit_stages).0),
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => Decision {
                level: Level::None,
                omit_stages: policy_omit,
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

impl PolicyRule {
    fn matches(&self, attrs: &Attributes<'_>) -> bool {
        if !self.users.is_empty() && !has(&self.users, attrs.user) {
            return false;
        }
        if !self.user_groups.is_empty() && !attrs.groups.iter().any(|g| has(&self.user_groups, g)) {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, attrs.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attrs);
        }
        if !self.non_resource_urls.is_empty() {
            return attrs.resource.is_none()
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(attrs.path, spec));
        }
        true
    }

    fn matches_resource(&self, attrs: &Attributes<'_>) -> bool {
        let Some(r) = attrs.resource else {
            return false;
        };
        if !self.namespaces.is_empty() && !has(&self.namespaces, r.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        for gr in self.resources.iter().filter(|gr| gr.group == r.group) {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, r.name) {
                continue;
            }
            for res in &gr.resources {
                let combined = if r.subresource.is_empty() {
                    res == r.resource
                } else {
                    res.split_once('/')
                        .is_some_and(|(a, b)| a == r.resource && b == r.subresource)
                };
                if combined || res == "*" {
                    return true;
                }
                if !r.subresource.is_empty() && res.strip_prefix("*/") == Some(r.subresource) {
                    return true;
                }
                if res.strip_suffix("/*") == Some(r.resource) {
                    return true;
                }
            }
        }
        false
    }
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["secrets"]
        resourceNames: ["top-secret"]
  - level: Request
    verbs: ["create", "update"]
    namespaces: ["team-a"]
    omitStages: [ResponseStarted]
    omitManagedFields: true
  - level: Metadata
    resources:
      - group: "apps"
        resources: ["*/scale", "deployments/status"]
      - group: "stable.example.com"
        resources: ["crontabs/*"]
  - level: Metadata
    userGroups: ["auditors"]
  - level: RequestResponse
    resources:
      - group: "batch"
"#;

    struct Case {
        user: &'static str,
        groups: &'static [&'static str],
        verb: &'static str,
        // group, resource, subresource, namespace, name; None for non-resource
        resource: Option<(
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
        )>,
        path: &'static str,
        level: Level,
        omitted: &'static [Stage],
        omit_managed_fields: bool,
    }

    #[test]
    fn first_matching_rule_decides() {
        let policy = Policy::parse(POLICY).expect("valid policy");
        let cases = [
            Case {
                user: "system:kube-proxy",
                groups: &[],
                verb: "get",
                resource: Some(("", "secrets", "", "ns", "top-secret")),
                path: "/api/v1/namespaces/ns/secrets/top-secret",
                level: Level::None,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "get",
                resource: None,
                path: "/healthz/etcd",
                level: Level::None,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "get",
                resource: Some(("", "secrets", "", "ns", "top-secret")),
                path: "",
                level: Level::RequestResponse,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "get",
                resource: Some(("", "secrets", "", "ns", "other")),
                path: "",
                level: Level::None,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "create",
                resource: Some(("", "configmaps", "", "team-a", "")),
                path: "",
                level: Level::Request,
                omitted: &[Stage::RequestReceived, Stage::ResponseStarted],
                omit_managed_fields: true,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "create",
                resource: Some(("", "configmaps", "", "team-b", "")),
                path: "",
                level: Level::None,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "update",
                resource: Some(("apps", "replicasets", "scale", "x", "r")),
                path: "",
                level: Level::Metadata,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "update",
                resource: Some(("apps", "deployments", "status", "x", "d")),
                path: "",
                level: Level::Metadata,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "update",
                resource: Some(("apps", "deployments", "", "x", "d")),
                path: "",
                level: Level::None,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "get",
                resource: Some(("stable.example.com", "crontabs", "", "x", "c")),
                path: "",
                level: Level::Metadata,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "bob",
                groups: &["devs", "auditors"],
                verb: "get",
                resource: None,
                path: "/apis",
                level: Level::Metadata,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "delete",
                resource: Some(("batch", "jobs", "", "x", "j")),
                path: "",
                level: Level::RequestResponse,
                omitted: &[Stage::RequestReceived],
                omit_managed_fields: false,
            },
        ];
        for (i, c) in cases.iter().enumerate() {
            let groups: Vec<String> = c.groups.iter().map(|g| (*g).to_string()).collect();
            let attrs = Attributes {
                user: c.user,
                groups: &groups,
                verb: c.verb,
                resource: c
                    .resource
                    .map(
                        |(group, resource, subresource, namespace, name)| ResourceAttributes {
                            group,
                            resource,
                            subresource,
                            namespace,
                            name,
                        },
                    ),
                path: c.path,
            };
            let d = policy.decide(&attrs);
            assert_eq!(d.level, c.level, "case {i}");
            assert_eq!(d.omit_stages, Stages::of(c.omitted), "case {i}");
            assert_eq!(d.omit_managed_fields, c.omit_managed_fields, "case {i}");
        }
    }

    #[test]
    fn invalid_policies_are_refused_with_a_reason() {
        let cases = [
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
                "loaded illegal policy with 0 rules",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
                "decoding the policy",
            ),
            (
                "apiVersion: audit.k8s.io/v1beta2\nkind: Policy\nrules:\n- level: None\n",
                "apiVersion: Unsupported value",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  \
                 nonResourceURLs: [\"/a\"]\n  namespaces: [x]\n",
                "rules cannot apply to both regular resources and non-resource URLs",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  \
                 nonResourceURLs: [\"/a*b\"]\n",
                "rules[0].nonResourceURLs[0]: Invalid value: \"/a*b\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  \
                 omitStages: [Sometimes]\n",
                "decoding the policy",
            ),
        ];
        for (text, want) in cases {
            let err = format!("{:#}", Policy::parse(text).expect_err(text));
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn path_patterns() {
        assert!(path_matches("/anything", "*"));
        assert!(path_matches("/apis/x", "/apis*"));
        assert!(path_matches("/version", "/version"));
        assert!(!path_matches("/versions", "/version"));
    }
}
