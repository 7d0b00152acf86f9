//! RBAC policy rules and how they match requests, pure: upstream's `RuleAllows`
//! (`plugin/pkg/auth/authorizer/rbac`), the `VerbMatches`/`APIGroupMatches`/`ResourceMatches`/
//! `ResourceNameMatches`/`NonResourceURLMatches` helpers (`pkg/apis/rbac/v1/evaluation_helpers.go`),
//! and the escalation check's coverage (`component-helpers/auth/rbac/validation`: `Covers`,
//! `BreakdownRule`) with `CompactRules` and `CompactString` for the refusal message.

use std::collections::HashMap;

use crd_core::validation::string_list;
use serde_json::{Value, json};

/// `*`: every verb, group, resource or URL.
pub const ALL: &str = "*";

/// One `PolicyRule` of a Role or `ClusterRole`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PolicyRule {
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `*/scale`, `*`).
    pub resources: Vec<String>,
    /// `resourceNames`.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs` (`/healthz`, `/readyz*`, `*`).
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A resource rule.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Self {
        let own = |xs: &[&str]| xs.iter().map(|s| (*s).to_string()).collect();
        PolicyRule {
            verbs: own(verbs),
            api_groups: own(groups),
            resources: own(resources),
            ..Default::default()
        }
    }

    /// A non-resource rule.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> Self {
        let own = |xs: &[&str]| xs.iter().map(|s| (*s).to_string()).collect();
        PolicyRule {
            verbs: own(verbs),
            non_resource_urls: own(urls),
            ..Default::default()
        }
    }

    /// With these resource names.
    #[must_use]
    pub fn names(mut self, names: &[&str]) -> Self {
        self.resource_names = names.iter().map(|s| (*s).to_string()).collect();
        self
    }

    /// Reads a rule from its JSON (missing or odd fields are empty lists).
    pub fn from_json(v: &Value) -> Self {
        PolicyRule {
            verbs: string_list(v.get("verbs")),
            api_groups: string_list(v.get("apiGroups")),
            resources: string_list(v.get("resources")),
            resource_names: string_list(v.get("resourceNames")),
            non_resource_urls: string_list(v.get("nonResourceURLs")),
        }
    }

    /// The rules of a Role or `ClusterRole` object.
    pub fn list_from(obj: &Value) -> Vec<PolicyRule> {
        obj.get("rules")
            .and_then(Value::as_array)
            .map(|rs| rs.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule's JSON, with empty lists left out as Go's `omitempty` does.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        for (k, v) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !v.is_empty() {
                m.insert(k.into(), json!(v));
            }
        }
        Value::Object(m)
    }

    /// `PolicyRule.CompactString`: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`, the
    /// non-empty lists printed with Go's `%q`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (name, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{name}:{}", go_quote_list(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quote_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| crd_core::field::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

/// `VerbMatches`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `APIGroupMatches`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/<subresource>` for a
/// request of that subresource.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// `ResourceNameMatches`: a rule without names matches every name; a rule with names matches
/// only requests naming one of them (never create, list, watch or deletecollection, which name
/// nothing).
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || has(&rule.resource_names, name)
}

/// `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
    })
}

/// What a rule is matched against: a resource request or a non-resource request.
#[derive(Clone, Copy, Debug)]
pub enum Request<'a> {
    /// A resource request.
    Resource {
        /// The verb.
        verb: &'a str,
        /// The API group.
        group: &'a str,
        /// The resource.
        resource: &'a str,
        /// The subresource ("" for none).
        subresource: &'a str,
        /// The object name ("" for none).
        name: &'a str,
    },
    /// A non-resource request.
    NonResource {
        /// The verb.
        verb: &'a str,
        /// The path.
        path: &'a str,
    },
}

/// `RuleAllows`.
pub fn rule_allows(req: &Request<'_>, rule: &PolicyRule) -> bool {
    match *req {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
        } => {
            let combined;
            let combined = if subresource.is_empty() {
                resource
            } else {
                combined = format!("{resource}/{subresource}");
                &combined
            };
            verb_matches(rule, verb)
                && api_group_matches(rule, group)
                && resource_matches(rule, combined, subresource)
                && resource_name_matches(rule, name)
        }
        Request::NonResource { verb, path } => {
            verb_matches(rule, verb) && non_resource_url_matches(rule, path)
        }
    }
}

/// `BreakdownRule`: one rule per (group, resource, verb, name) and per (URL, verb).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for g in &rule.api_groups {
        for r in &rule.resources {
            for v in &rule.verbs {
                let one = PolicyRule {
                    verbs: vec![v.clone()],
                    api_groups: vec![g.clone()],
                    resources: vec![r.clone()],
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(one);
                } else {
                    for n in &rule.resource_names {
                        let mut named = one.clone();
                        named.resource_names = vec![n.clone()];
                        out.push(named);
                    }
                }
            }
        }
    }
    for u in &rule.non_resource_urls {
        for v in &rule.verbs {
            out.push(PolicyRule {
                verbs: vec![v.clone()],
                non_resource_urls: vec![u.clone()],
                ..Default::default()
            });
        }
    }
    out
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn resource_covers_all(set: &[String], requested: &[String]) -> bool {
    if has(set, ALL) {
        return true;
    }
    requested.iter().all(|r| {
        has(set, r)
            || set.iter().any(|s| {
                s.strip_prefix('*')
                    .is_some_and(|suffix| s.starts_with("*/") && r.ends_with(suffix))
            })
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub
        || owner
            .strip_suffix('*')
            .is_some_and(|p| sub.starts_with(p.trim_end_matches('*')))
}

/// `ruleCovers`: whether `owner` grants everything the simple rule `sub` does.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|u| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, u))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// `Covers`: whether `owner` rules grant every permission of `requested`; the simple rules
/// that are not granted otherwise.
pub fn covers(owner: &[PolicyRule], requested: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let mut missing = Vec::new();
    for r in requested {
        for sub in breakdown(r) {
            if !owner.iter().any(|o| rule_covers(o, &sub)) {
                missing.push(sub);
            }
        }
    }
    (missing.is_empty(), missing)
}

/// `CompactRules`: simple resource rules (one group, one resource, at most one name, only
/// those fields) with the same group, resource and name become one rule with all their verbs.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let mut simple: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    let mut simple_rules: Vec<PolicyRule> = Vec::new();
    for r in rules {
        let is_simple = r.resource_names.len() <= 1
            && r.non_resource_urls.is_empty()
            && r.api_groups.len() == 1
            && r.resources.len() == 1;
        if !is_simple {
            out.push(r.clone());
            continue;
        }
        let key = (
            r.api_groups[0].clone(),
            r.resources[0].clone(),
            r.resource_names.first().cloned(),
        );
        if let Some(&i) = simple.get(&key) {
            simple_rules[i].verbs.extend(r.verbs.iter().cloned());
        } else {
            simple.insert(key, simple_rules.len());
            simple_rules.push(r.clone());
        }
    }
    out.extend(simple_rules);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Request<'a> {
        Request::Resource {
            verb,
            group,
            resource,
            subresource: sub,
            name,
        }
    }

    /// Cases after upstream's `TestRuleMatches` and the `evaluation_helpers` tests.
    #[test]
    fn rule_allows_cases() {
        let pods = PolicyRule::resource(&["get", "list"], &[""], &["pods"]);
        let any_scale = PolicyRule::resource(&["get"], &["*"], &["*/scale"]);
        let named =
            PolicyRule::resource(&["get", "update", "list", "create"], &[""], &["configmaps"])
                .names(&["a"]);
        let all = PolicyRule::resource(&["*"], &["*"], &["*"]);
        let urls = PolicyRule::non_resource(&["get"], &["/healthz", "/readyz*", "/api/*"]);
        let cases: &[(&PolicyRule, Request<'_>, bool)] = &[
            (&pods, res("get", "", "pods", "", "p"), true),
            (&pods, res("list", "", "pods", "", ""), true),
            (&pods, res("delete", "", "pods", "", "p"), false),
            (&pods, res("get", "apps", "pods", "", "p"), false),
            (&pods, res("get", "", "pods", "status", "p"), false),
            (&pods, res("get", "", "pods", "log", "p"), false),
            (
                &any_scale,
                res("get", "apps", "deployments", "scale", "d"),
                true,
            ),
            (
                &any_scale,
                res("get", "apps", "deployments", "", "d"),
                false,
            ),
            (
                &any_scale,
                res("get", "apps", "deployments", "status", "d"),
                false,
            ),
            (
                &any_scale,
                res("get", "apps", "deployments", "xscale", "d"),
                false,
            ),
            (&named, res("get", "", "configmaps", "", "a"), true),
            (&named, res("get", "", "configmaps", "", "b"), false),
            (&named, res("update", "", "configmaps", "", "a"), true),
            // Names never match requests without one.
            (&named, res("list", "", "configmaps", "", ""), false),
            (&named, res("create", "", "configmaps", "", ""), false),
            (
                &all,
                res("escalate", "rbac.authorization.k8s.io", "roles", "", "x"),
                true,
            ),
            (
                &all,
                Request::NonResource {
                    verb: "get",
                    path: "/healthz",
                },
                false,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "get",
                    path: "/healthz",
                },
                true,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "get",
                    path: "/healthz/etcd",
                },
                false,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "get",
                    path: "/readyz/ping",
                },
                true,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "get",
                    path: "/readyz",
                },
                true,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "get",
                    path: "/api/v1",
                },
                true,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "get",
                    path: "/api",
                },
                false,
            ),
            (
                &urls,
                Request::NonResource {
                    verb: "post",
                    path: "/healthz",
                },
                false,
            ),
            (&urls, res("get", "", "healthz", "", ""), false),
            (
                &PolicyRule::non_resource(&["*"], &["*"]),
                Request::NonResource {
                    verb: "post",
                    path: "/anything",
                },
                true,
            ),
        ];
        for (rule, req, want) in cases {
            assert_eq!(rule_allows(req, rule), *want, "{rule:?} {req:?}");
        }
    }

    /// (owner, requested, covered, missing).
    type Case = (Vec<PolicyRule>, Vec<PolicyRule>, bool, Vec<PolicyRule>);

    /// Cases after upstream's `TestCoversExactMatch` and friends (`policy_comparator_test.go`).
    #[test]
    fn covers_cases() {
        let r = PolicyRule::resource;
        let cases: Vec<Case> = vec![
            (
                vec![r(&["get", "list"], &["v1"], &["builds"])],
                vec![r(&["get"], &["v1"], &["builds"])],
                true,
                vec![],
            ),
            (
                vec![r(&["*"], &["*"], &["*"])],
                vec![r(&["get", "delete"], &["a", "b"], &["pods", "pods/status"]).names(&["x"])],
                true,
                vec![],
            ),
            (
                vec![r(&["get"], &["v1"], &["builds"]).names(&["foo"])],
                vec![r(&["get"], &["v1"], &["builds"])],
                false,
                vec![r(&["get"], &["v1"], &["builds"])],
            ),
            (
                vec![r(&["get"], &["v1"], &["builds"])],
                vec![r(&["get", "delete"], &["v1"], &["builds", "pods"])],
                false,
                vec![
                    r(&["delete"], &["v1"], &["builds"]),
                    r(&["get"], &["v1"], &["pods"]),
                    r(&["delete"], &["v1"], &["pods"]),
                ],
            ),
            (
                vec![r(&["get"], &[""], &["*/scale"])],
                vec![r(&["get"], &[""], &["deployments/scale", "pods/status"])],
                false,
                vec![r(&["get"], &[""], &["pods/status"])],
            ),
            (
                vec![PolicyRule::non_resource(&["get"], &["/api/*"])],
                vec![PolicyRule::non_resource(
                    &["get", "post"],
                    &["/api/v1", "/apis"],
                )],
                false,
                vec![
                    PolicyRule::non_resource(&["post"], &["/api/v1"]),
                    PolicyRule::non_resource(&["get"], &["/apis"]),
                    PolicyRule::non_resource(&["post"], &["/apis"]),
                ],
            ),
        ];
        for (owner, requested, ok, missing) in cases {
            assert_eq!(
                covers(&owner, &requested),
                (ok, missing),
                "{owner:?} {requested:?}"
            );
        }
    }

    #[test]
    fn compact_and_describe() {
        let r = PolicyRule::resource;
        let missing = vec![
            r(&["get"], &[""], &["pods"]),
            r(&["list"], &[""], &["pods"]),
            r(&["get"], &["apps"], &["deployments"]).names(&["web"]),
            PolicyRule::non_resource(&["get"], &["/metrics"]),
        ];
        let out: Vec<String> = compact(&missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        assert_eq!(
            out,
            [
                "{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}",
                "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}",
                "{APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"web\"], Verbs:[\"get\"]}",
            ]
        );
        let rule = PolicyRule::from_json(
            &json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}),
        );
        assert_eq!(
            rule.to_json(),
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})
        );
    }
}
