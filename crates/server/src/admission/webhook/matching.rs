//! Which webhooks a request reaches, as pure functions (apiserver's `predicates/rules`,
//! `predicates/namespace`, `predicates/object`): rules (operations, groups, versions, resources
//! with subresource wildcards, scope), the namespace selector's subject and the object selector.

use crd_core::labels::Selector;
use crd_core::validation::string_list;
use serde_json::Value;

/// One `rules[]` entry of a webhook.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `operations` (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`, `*`).
    pub operations: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `apiVersions`.
    pub api_versions: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `*/status`, `pods/*`, `*`, `*/*`).
    pub resources: Vec<String>,
    /// `scope`: `Cluster`, `Namespaced` or `*`.
    pub scope: String,
}

impl Rule {
    /// Reads a rule from its JSON.
    pub fn from_json(v: &Value) -> Rule {
        let strs = |k: &str| string_list(v.get(k));
        Rule {
            operations: strs("operations"),
            api_groups: strs("apiGroups"),
            api_versions: strs("apiVersions"),
            resources: strs("resources"),
            scope: v
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
        }
    }
}

/// What a rule is matched against: the request's operation and resource.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// The API group.
    pub group: &'a str,
    /// The version.
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource ("" for the main resource).
    pub subresource: &'a str,
    /// The request's namespace ("" for cluster-scoped objects; a namespace's own name for
    /// requests on namespaces, as upstream's attributes carry it).
    pub namespace: &'a str,
}

fn listed(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

/// Whether the request is about core/v1 namespaces (cluster-scoped, but selected as upstream
/// treats them: with their own labels and in `Cluster` scope).
pub fn is_namespace_resource(t: &Target<'_>) -> bool {
    t.group.is_empty() && t.version == "v1" && t.resource == "namespaces"
}

/// `rules.Matcher.Matches`.
pub fn rule_matches(rule: &Rule, t: &Target<'_>) -> bool {
    let scope = match rule.scope.as_str() {
        "Namespaced" => !is_namespace_resource(t) && !t.namespace.is_empty(),
        "Cluster" => is_namespace_resource(t) || t.namespace.is_empty(),
        _ => true,
    };
    scope
        && listed(&rule.operations, t.operation)
        && listed(&rule.api_groups, t.group)
        && listed(&rule.api_versions, t.version)
        && rule.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == t.resource) && (sub == "*" || sub == t.subresource)
        })
}

/// Whether the namespace selector applies at all: requests on cluster-scoped objects other than
/// namespaces are never exempted by it (`MatchNamespaceSelector`).
pub fn namespace_selector_applies(t: &Target<'_>) -> bool {
    !t.namespace.is_empty() || t.resource == "namespaces"
}

/// Whether the namespace labels come from the request's own object (a namespace being created
/// or updated) rather than the stored namespace.
pub fn namespace_labels_from_object(t: &Target<'_>) -> bool {
    t.resource == "namespaces"
        && t.subresource.is_empty()
        && matches!(t.operation, "CREATE" | "UPDATE")
}

/// `MatchObjectSelector`: the selector matches the new or the old object's labels.
pub fn object_selector_matches(
    selector: &Selector,
    object: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    if selector.is_empty() {
        return true;
    }
    let matches = |o: Option<&Value>| {
        o.filter(|o| o.is_object())
            .is_some_and(|o| selector.matches_json(o.pointer("/metadata/labels")))
    };
    matches(object) || matches(old)
}

/// `IsExemptAdmissionConfigurationResource`: webhook configurations and admission policies are
/// never sent to webhooks, so a bad webhook cannot lock itself in.
pub fn is_exempt(group: &str, resource: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            resource,
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target<'a>(
        op: &'a str,
        gvr: (&'a str, &'a str, &'a str),
        sub: &'a str,
        ns: &'a str,
    ) -> Target<'a> {
        Target {
            operation: op,
            group: gvr.0,
            version: gvr.1,
            resource: gvr.2,
            subresource: sub,
            namespace: ns,
        }
    }

    #[test]
    fn rules_match_as_upstream() {
        let pods = ("", "v1", "pods");
        let crontabs = ("stable.example.com", "v1", "crontabs");
        let ns = ("", "v1", "namespaces");
        // (rule, target, matches)
        let cases: Vec<(Value, Target<'_>, bool)> = vec![
            (
                json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}),
                target("CREATE", pods, "", "d"),
                true,
            ),
            (
                json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}),
                target("CREATE", pods, "", "d"),
                false,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
                target("DELETE", crontabs, "", "d"),
                true,
            ),
            // `*` does not reach subresources; `*/*` does.
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
                target("UPDATE", pods, "status", "d"),
                false,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}),
                target("UPDATE", pods, "status", "d"),
                true,
            ),
            (
                json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/status"]}),
                target("UPDATE", pods, "status", "d"),
                true,
            ),
            (
                json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/status"]}),
                target("UPDATE", pods, "", "d"),
                false,
            ),
            (
                json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/*"]}),
                target("UPDATE", pods, "status", "d"),
                true,
            ),
            // `pods/*` also matches pods itself (`sub == "*"` matches the empty subresource).
            (
                json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/*"]}),
                target("UPDATE", pods, "", "d"),
                true,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["stable.example.com"], "apiVersions": ["v2"], "resources": ["crontabs"]}),
                target("CREATE", crontabs, "", "d"),
                false,
            ),
            // Scope: namespaces are cluster-scoped even though their attributes carry a namespace.
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
                target("CREATE", pods, "", "d"),
                true,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
                target("CREATE", ns, "", "d"),
                false,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
                target("CREATE", ns, "", "d"),
                true,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
                target("CREATE", pods, "", "d"),
                false,
            ),
            (
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
                target("CREATE", crontabs, "", ""),
                true,
            ),
        ];
        for (rule, t, want) in cases {
            assert_eq!(
                rule_matches(&Rule::from_json(&rule), &t),
                want,
                "{rule} vs {t:?}"
            );
        }
    }

    #[test]
    fn selectors() {
        let sel =
            Selector::from_label_selector_json(&json!({"matchLabels": {"team": "a"}})).unwrap();
        let a = json!({"metadata": {"labels": {"team": "a"}}});
        let b = json!({"metadata": {"labels": {"team": "b"}}});
        let none = json!({"metadata": {}});
        let cases = [
            (Some(&a), None, true),
            (Some(&b), None, false),
            (Some(&b), Some(&a), true),
            (None, Some(&a), true),
            (Some(&none), None, false),
            (None, None, false),
        ];
        for (new, old, want) in cases {
            assert_eq!(
                object_selector_matches(&sel, new, old),
                want,
                "{new:?} {old:?}"
            );
        }
        assert!(object_selector_matches(&Selector::everything(), None, None));
        let pods = target("CREATE", ("", "v1", "pods"), "", "");
        assert!(!namespace_selector_applies(&pods));
        let ns = target("CREATE", ("", "v1", "namespaces"), "", "");
        assert!(namespace_selector_applies(&ns));
        assert!(namespace_labels_from_object(&ns));
        assert!(!namespace_labels_from_object(&target(
            "DELETE",
            ("", "v1", "namespaces"),
            "",
            "x"
        )));
        assert!(is_exempt(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations"
        ));
        assert!(!is_exempt("", "configmaps"));
    }
}
