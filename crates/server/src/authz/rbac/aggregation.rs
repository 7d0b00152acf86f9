//! `ClusterRole` aggregation (upstream's `pkg/controller/clusterroleaggregation`), pure: the
//! rules of a `ClusterRole` with `aggregationRule.clusterRoleSelectors` are the rules of the
//! other `ClusterRoles` its selectors match, selector by selector, roles in name order, each
//! rule once.

use serde_json::Value;

use super::rules::PolicyRule;

/// The selectors of an aggregated `ClusterRole`; `None` when it aggregates nothing.
pub fn selectors(role: &Value) -> Option<Vec<crd_core::labels::Selector>> {
    let sels = role
        .pointer("/aggregationRule/clusterRoleSelectors")?
        .as_array()?;
    Some(
        sels.iter()
            .filter_map(|s| crd_core::labels::Selector::from_label_selector_json(s).ok())
            .collect(),
    )
}

/// The rules `role` should have, given every `ClusterRole` (any order); `None` when it has no
/// aggregation rule.
pub fn aggregated_rules(role: &Value, all: &[&Value]) -> Option<Vec<PolicyRule>> {
    let name = role.pointer("/metadata/name").and_then(Value::as_str)?;
    let selectors = selectors(role)?;
    let mut sorted: Vec<&Value> = all.to_vec();
    sorted.sort_by_key(|r| {
        r.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    });
    let mut out: Vec<PolicyRule> = Vec::new();
    for sel in selectors {
        for other in &sorted {
            let other_name = other.pointer("/metadata/name").and_then(Value::as_str);
            if other_name == Some(name) || !sel.matches_json(other.pointer("/metadata/labels")) {
                continue;
            }
            for rule in PolicyRule::list_from(other) {
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unions_matching_roles_in_name_order_once() {
        let edit = json!({"metadata": {"name": "edit"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
            {"matchLabels": {"extra": "yes"}}]}});
        let label = |k: &str| json!({k: "true"});
        let b = json!({"metadata": {"name": "b", "labels": label("rbac.authorization.k8s.io/aggregate-to-edit")},
                       "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let a = json!({"metadata": {"name": "a", "labels": label("rbac.authorization.k8s.io/aggregate-to-edit")},
                       "rules": [{"verbs": ["create"], "apiGroups": ["stable.example.com"], "resources": ["crontabs"]},
                                 {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let c = json!({"metadata": {"name": "c", "labels": {"extra": "yes"}},
                       "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                                 {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]});
        let unrelated = json!({"metadata": {"name": "0", "labels": {"x": "y"}},
                       "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]});
        // A role matching its own selector does not aggregate itself.
        let mut own = edit.clone();
        own["metadata"]["labels"] = json!({"extra": "yes"});
        own["rules"] = json!([{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}]);
        let out = aggregated_rules(&own, &[&b, &unrelated, &c, &a, &own]).unwrap();
        let described: Vec<String> = out.iter().map(PolicyRule::compact_string).collect();
        assert_eq!(
            described,
            [
                r#"{APIGroups:["stable.example.com"], Resources:["crontabs"], Verbs:["create"]}"#,
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#,
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["list"]}"#,
            ]
        );
        assert_eq!(aggregated_rules(&a, &[&a, &b]), None);
        assert_eq!(aggregated_rules(&edit, &[]), Some(vec![]));
    }
}
