//! The `ValidatingAdmissionPolicy` status controller (kube-controller-manager's
//! `validatingadmissionpolicy-status-controller`, `pkg/controller/validatingadmissionpolicystatus`):
//! for every policy whose `metadata.generation` is ahead of `status.observedGeneration`, it
//! type-checks each `spec.validations[i].expression` and `messageExpression` against the schema
//! of every kind `matchConstraints` names (at most ten, sorted by group, version and kind; built-in
//! kinds by their OpenAPI schemas, custom resources by their served version's schema; kinds
//! without a schema are skipped, as upstream skips `ErrSchemaNotFound`) and writes
//! `status.observedGeneration` and `status.typeChecking.expressionWarnings` with
//! compare-and-swap.
//!
//! The warnings never change what a policy does (upstream: "type checking errors MUST NOT alter
//! the behavior of the policy").

use std::collections::BTreeSet;
use std::sync::Arc;

use crd_core::validation::string_list;
use crd_storage::Store;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::informer::{Change, Informer, Notification};
use crate::registry::serving::Registry;

/// `maxTypesToCheck`.
const MAX_TYPES_TO_CHECK: usize = 10;

/// A kind a policy matches: group, version, kind, and its schema.
type KindSchema = (String, String, String, Value);

/// Follows policies and writes their type-checking status.
pub struct PolicyStatusController {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    prefix: String,
}

/// `typesToCheck`: the (group, version, resource) triples of `matchConstraints.resourceRules`
/// resolved by `kinds_for` to kinds with schemas, without wildcards (a wildcard group or version
/// drops the rule; wildcard and subresource entries are skipped), deduplicated, at most ten,
/// sorted by group, version and kind.
pub fn types_to_check(
    policy: &Value,
    kinds_for: impl Fn(&str, &str, &str) -> Option<(String, Value)>,
) -> Vec<KindSchema> {
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut seen = BTreeSet::new();
    let mut out: Vec<KindSchema> = Vec::new();
    let mut count = 0;
    'rules: for rule in rules {
        let mut groups = string_list(rule.get("apiGroups"));
        let mut versions = string_list(rule.get("apiVersions"));
        let mut resources: Vec<String> = string_list(rule.get("resources"))
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        if groups.iter().chain(&versions).any(|s| s.contains('*'))
            || groups.is_empty()
            || versions.is_empty()
            || resources.is_empty()
        {
            continue;
        }
        groups.sort();
        versions.sort();
        resources.sort();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    let Some((kind, schema)) = kinds_for(g, v, r) else {
                        continue;
                    };
                    if seen.insert((g.clone(), v.clone(), kind.clone())) {
                        out.push((g.clone(), v.clone(), kind, schema));
                    }
                    count += 1;
                    if count == MAX_TYPES_TO_CHECK {
                        break 'rules;
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| (&a.0, &a.1, &a.2).cmp(&(&b.0, &b.1, &b.2)));
    out
}

/// `TypeChecker.Check`: the expression warnings of a policy (`fieldRef`, `warning`), given the
/// kinds it matches and its param kind's schema. A warning joins, per kind whose check found
/// issues, `<group>/<version>, Kind=<kind>: <issues>` and a newline.
pub fn expression_warnings(
    policy: &Value,
    kinds: &[KindSchema],
    params: Option<&Value>,
) -> Vec<Value> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let variables: Vec<(String, String)> = spec
        .get("variables")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|v| (text(v, "name"), text(v, "expression")))
                .collect()
        })
        .unwrap_or_default();
    let types: Vec<(String, crd_cel::PolicyTypes)> = kinds
        .iter()
        .map(|(g, v, k, schema)| {
            (
                format!("{g}/{v}, Kind={k}"),
                crd_cel::PolicyTypes::new(schema, params, &variables),
            )
        })
        .collect();
    let check = |source: &str| -> Option<String> {
        let issues: Vec<String> = types
            .iter()
            .filter_map(|(gvk, t)| t.check(source).err().map(|e| format!("{gvk}: {e}\n")))
            .collect();
        (!issues.is_empty()).then(|| issues.join("\n"))
    };
    let mut warnings = Vec::new();
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, v) in validations.iter().enumerate() {
        if let Some(w) = check(&text(v, "expression")) {
            warnings.push(json!({
                "fieldRef": format!("spec.validations[{i}].expression"),
                "warning": w,
            }));
        }
        let me = text(v, "messageExpression");
        if me.is_empty() {
            continue;
        }
        if let Some(w) = check(&me) {
            warnings.push(json!({
                "fieldRef": format!("spec.validations[{i}].messageExpression"),
                "warning": w,
            }));
        }
    }
    warnings
}

impl PolicyStatusController {
    /// A controller for the policies stored under `prefix` (with the trailing `/`); `registry`
    /// resolves the schemas of custom resources.
    pub fn new(store: Arc<dyn Store>, registry: Arc<Registry>, prefix: String) -> Arc<Self> {
        Arc::new(PolicyStatusController {
            store,
            registry,
            prefix,
        })
    }

    /// The kind and schema of a served resource at a version: a built-in kind's OpenAPI schema,
    /// else a custom resource's schema for that version.
    fn kind_for(&self, group: &str, version: &str, resource: &str) -> Option<(String, Value)> {
        if let Some(k) = crd_builtin::lookup_version(group, version, resource) {
            return Some((k.kind.to_string(), k.bare_schema().clone()));
        }
        let crd = self.registry.lookup(group, resource)?;
        let schema = crd.served_version(version)?.schema.as_deref()?.clone();
        Some((crd.kind.clone(), schema))
    }

    /// The schema of the policy's `paramKind`, when it names a known kind.
    fn param_schema(&self, policy: &Value) -> Option<Value> {
        let pk = policy.pointer("/spec/paramKind")?;
        let api_version = pk.get("apiVersion")?.as_str()?;
        let kind = pk.get("kind")?.as_str()?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        if let Some(k) = crd_builtin::KINDS
            .iter()
            .find(|k| k.group == group && k.kind == kind && k.version == version)
        {
            return Some(k.bare_schema().clone());
        }
        self.registry
            .in_group(group)
            .into_iter()
            .find(|c| c.kind == kind)
            .and_then(|c| Some(c.served_version(version)?.schema.as_deref()?.clone()))
    }

    /// The status a policy should have, or `None` when `status.observedGeneration` is current.
    fn desired_status(&self, policy: &Value) -> Option<(i64, Value)> {
        let generation = policy
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let observed = policy
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if generation <= observed {
            return None;
        }
        let kinds = types_to_check(policy, |g, v, r| self.kind_for(g, v, r));
        let params = self.param_schema(policy);
        let warnings = expression_warnings(policy, &kinds, params.as_ref());
        let mut type_checking = serde_json::Map::new();
        if !warnings.is_empty() {
            type_checking.insert("expressionWarnings".into(), Value::Array(warnings));
        }
        Some((
            generation,
            json!({"observedGeneration": generation, "typeChecking": type_checking}),
        ))
    }

    async fn reconcile(&self, key: &str, policy: &Value) -> Result<(), crd_storage::StorageError> {
        let Some((generation, status)) = self.desired_status(policy) else {
            return Ok(());
        };
        super::guaranteed_update(
            self.store.as_ref(),
            key,
            |obj| {
                // A newer generation is reconciled when the informer delivers it.
                let current = obj.pointer("/metadata/generation").and_then(Value::as_i64);
                if current != Some(generation) || obj.get("status") == Some(&status) {
                    return false;
                }
                if let Some(m) = obj.as_object_mut() {
                    m.insert("status".into(), status.clone());
                }
                true
            },
            |_| false,
        )
        .await
        .map(|_| ())
    }

    /// Follows the policies and reconciles each one that changes, until shutdown.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let mut informer =
            Informer::json(self.store.clone(), self.prefix.clone(), shutdown.clone());
        while let Some(n) = informer.next().await {
            let Notification::Changed(
                Change::Added { key, new } | Change::Modified { key, new, .. },
            ) = n
            else {
                continue;
            };
            let mut backoff = super::INITIAL_RETRY;
            while let Err(e) = self.reconcile(&key, &new).await {
                tracing::warn!(%key, error = %e, "writing the policy's type-checking status");
                if !super::retry_after(&mut backoff, &mut shutdown).await {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(rules: &Value, validations: &Value) -> Value {
        json!({"metadata": {"name": "p", "generation": 1}, "spec": {
            "matchConstraints": {"resourceRules": rules},
            "validations": validations,
        }})
    }

    fn rule(groups: &[&str], versions: &[&str], resources: &[&str]) -> Value {
        json!({"apiGroups": groups, "apiVersions": versions, "resources": resources, "operations": ["*"]})
    }

    /// Resolves deployments (apps/v1), pods (v1) and widgets (example.com/v1) with a schema
    /// whose only field is `foo`.
    fn kinds_for(g: &str, v: &str, r: &str) -> Option<(String, Value)> {
        let kind = match (g, v, r) {
            ("apps", "v1", "deployments") => "Deployment",
            ("", "v1", "pods") => "Pod",
            ("example.com", "v1", "widgets") => "Widget",
            _ => return None,
        };
        Some((
            kind.into(),
            json!({"type": "object", "properties": {"foo": {"type": "string"}}}),
        ))
    }

    #[test]
    fn types_to_check_as_upstream_extracts_them() {
        // (rules, the kinds checked)
        let cases = [
            (json!([]), vec![]),
            (
                json!([rule(&["apps"], &["v1"], &["deployments"])]),
                vec!["apps/v1/Deployment"],
            ),
            (
                json!([
                    rule(&["apps"], &["v1"], &["deployments"]),
                    rule(&[""], &["v1"], &["pods"])
                ]),
                vec!["/v1/Pod", "apps/v1/Deployment"],
            ),
            (json!([rule(&["apps"], &["v1"], &["*"])]), vec![]),
            (
                json!([rule(&["apps"], &["v1"], &["deployments/*"])]),
                vec![],
            ),
            (
                json!([
                    rule(&["apps"], &["v1"], &["deployments"]),
                    rule(&["apps"], &["*"], &["deployments"])
                ]),
                vec!["apps/v1/Deployment"],
            ),
            (json!([rule(&["*"], &["v1"], &["pods"])]), vec![]),
            // Unknown resources are skipped.
            (json!([rule(&["nope.io"], &["v1"], &["things"])]), vec![]),
        ];
        for (rules, want) in cases {
            let got: Vec<String> = types_to_check(&policy(&rules, &json!([])), kinds_for)
                .into_iter()
                .map(|(g, v, k, _)| format!("{g}/{v}/{k}"))
                .collect();
            assert_eq!(got, want, "{rules}");
        }
    }

    #[test]
    fn warnings_name_the_field_and_each_kind() {
        let both = json!([
            rule(&["apps"], &["v1"], &["deployments"]),
            rule(&[""], &["v1"], &["pods"])
        ]);
        // (validations, warnings)
        let cases = [
            (json!([{"expression": "object.foo == 'bar'"}]), json!([])),
            (
                json!([{"expression": "object.foo == 'bar'"}, {"expression": "object.bar == 'foo'"}]),
                json!([{
                    "fieldRef": "spec.validations[1].expression",
                    "warning": "/v1, Kind=Pod: ERROR: <input>:1:7: undefined field 'bar'\n | object.bar == 'foo'\n | ......^\n\napps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'bar'\n | object.bar == 'foo'\n | ......^\n",
                }]),
            ),
            (
                json!([{"expression": "object.foo == 'bar'", "messageExpression": "object.foo + 114514"}]),
                json!([{
                    "fieldRef": "spec.validations[0].messageExpression",
                    "warning": "/v1, Kind=Pod: ERROR: <input>:1:12: found no matching overload for '_+_' applied to '(string, int)'\n | object.foo + 114514\n | ...........^\n\napps/v1, Kind=Deployment: ERROR: <input>:1:12: found no matching overload for '_+_' applied to '(string, int)'\n | object.foo + 114514\n | ...........^\n",
                }]),
            ),
        ];
        for (validations, want) in cases {
            let p = policy(&both, &validations);
            let kinds = types_to_check(&p, kinds_for);
            let got = expression_warnings(&p, &kinds, None);
            assert_eq!(Value::Array(got), want, "{validations}");
        }
    }
}
