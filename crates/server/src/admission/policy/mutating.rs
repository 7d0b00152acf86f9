//! `MutatingAdmissionPolicy` admission (apiserver's `plugin/policy/mutating`): the dispatcher
//! ([`Policies::mutate`]) runs every matching (policy, binding, param) invocation in order:
//! match conditions and variables on the current object, then each mutation — an
//! `ApplyConfiguration` merged with server-side apply's merge typed by the object's schema
//! (`crd_merge::apply::merge_configuration`), or a `JSONPatch` applied as evanphx/json-patch
//! does (a failed `test` leaves the object as it was). Errors become policy errors the failure
//! policy decides on ([`policy_errors`]); reinvocation follows `policyReinvokeContext`
//! ([`Reinvocation`]). Each mutation is counted and timed in
//! `apiserver_mutating_admission_policy_check_*` (upstream's `policy/mutating/metrics`).

use std::collections::HashSet;

use crd_core::{GroupResource, Status, StatusCause};
use serde_json::Value;

use super::compiled::{Binding, PatchType, Policy, ReinvocationPolicy};
use super::{Attributes, Policies, Vars, prepare, request_value};
use crate::admission::error_text;
use crate::error::ApiError;
use crate::registry::Strategy;

/// `celconfig.RuntimeCELCostBudget`: the cost budget of one mutation's evaluation.
const RUNTIME_COST_BUDGET: i64 = 10_000_000;

/// Identifies an invocation across passes (`key`: policy, binding and param).
type Key = (String, String, String, String);

/// Which `IfNeeded` invocations ran and which must run again (`policyReinvokeContext`): an
/// invocation that changes the object queues every `IfNeeded` one before it; on the
/// reinvocation pass, an object changed since the policies last ran (by webhooks) queues them
/// all.
#[derive(Debug, Default)]
pub struct Reinvocation {
    previously: HashSet<Key>,
    reinvoke: HashSet<Key>,
    last_output: Option<Value>,
}

/// A policy error before the failure policy applies (`generic.PolicyError`).
struct PolicyError {
    policy: String,
    binding: Option<String>,
    message: String,
    /// `Invalid` for evaluation errors, "" for configuration errors.
    reason: &'static str,
    fail_open: bool,
}

impl PolicyError {
    fn new(
        policy: &Policy,
        binding: Option<&Binding>,
        message: String,
        reason: &'static str,
    ) -> Self {
        PolicyError {
            policy: policy.name.clone(),
            binding: binding.map(|b| b.name.clone()),
            message,
            reason,
            fail_open: policy.fail_open,
        }
    }

    /// `PolicyError.Error()`.
    fn text(&self) -> String {
        match &self.binding {
            Some(b) => format!(
                "policy '{}' with binding '{b}' denied request: {}",
                self.policy, self.message
            ),
            None => format!(
                "policy \"{}\" denied request: {}",
                self.policy, self.message
            ),
        }
    }
}

impl Policies {
    /// Runs the mutating policies on `obj` (`None` for DELETE: nothing to patch); `schema`
    /// types the object's apply configurations. `reinvoking` is the chain's second pass, which
    /// runs only the invocations `state` queued. Returns whether the object changed.
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&mut Value>,
        old: Option<&Value>,
        schema: &crd_merge::apply::Schema,
        state: &mut Reinvocation,
        reinvoking: bool,
    ) -> Result<bool, ApiError> {
        let Some(obj) = obj else {
            return Ok(false);
        };
        let hooks = self.current();
        if hooks.is_empty() {
            return Ok(false);
        }
        if reinvoking && state.last_output.as_ref() != Some(&*obj) {
            // Webhooks changed the object since the policies ran.
            let previously = std::mem::take(&mut state.previously);
            state.reinvoke.extend(previously);
        }
        if reinvoking && state.reinvoke.is_empty() {
            return Ok(false);
        }
        let found = self.matching(&hooks, attrs, Some(&*obj), old).await?;
        let mut errors = Vec::new();
        let mut invocations = Vec::new();
        for m in &found.matched {
            let policy = &m.hook.policy;
            let bound = match &m.bound {
                Ok(b) => b,
                Err(e) => {
                    errors.push(PolicyError::new(policy, None, e.clone(), ""));
                    continue;
                }
            };
            for (binding, params) in &bound.bindings {
                match params {
                    Ok(ps) => invocations.extend(
                        ps.iter()
                            .map(|p| (policy.as_ref(), *binding, p.as_ref(), &bound.matched)),
                    ),
                    Err(e) => errors.push(PolicyError::new(policy, Some(binding), e.clone(), "")),
                }
            }
        }
        let mut changed = false;
        let mut authorizer: Option<crd_cel::Authorizer> = None;
        for (policy, binding, param, matched) in invocations {
            // `matchPolicy: Equivalent` matched another version: the policy mutates the object
            // converted to it, and the result is converted back.
            let at_request = *matched == attrs.request;
            let mut current = if at_request {
                obj.clone()
            } else {
                super::super::webhook::convert(&self.registry, Some(&*obj), matched)
                    .await?
                    .unwrap_or(Value::Null)
            };
            let other_schema;
            let schema = if at_request {
                schema
            } else {
                other_schema =
                    self.registry
                        .strategy(&matched.group, &matched.resource, &matched.version);
                other_schema
                    .as_ref()
                    .map_or(crate::registry::deduced_apply_schema(), |s| {
                        s.apply_schema()
                    })
            };
            let key = invocation_key(policy, binding, param);
            let before = current.clone();
            let failed = invoke(
                attrs,
                policy,
                &mut current,
                old,
                param,
                &found.namespace,
                matched,
                schema,
                state,
                &key,
                reinvoking,
                policy.uses_authorizer.then(|| {
                    &*authorizer.get_or_insert_with(|| self.authorizer.for_request(attrs))
                }),
            );
            errors.extend(
                failed
                    .into_iter()
                    .map(|message| PolicyError::new(policy, Some(binding), message, "Invalid")),
            );
            if current != before {
                changed = true;
                let previously = std::mem::take(&mut state.previously);
                state.reinvoke.extend(previously);
                *obj = if at_request {
                    current
                } else {
                    super::super::webhook::convert(&self.registry, Some(&current), &attrs.request)
                        .await?
                        .unwrap_or(Value::Null)
                };
            }
            if policy.reinvocation == ReinvocationPolicy::IfNeeded {
                state.previously.insert(key);
            }
        }
        state.last_output = Some(obj.clone());
        policy_errors(attrs, &errors)?;
        Ok(changed)
    }
}

/// One invocation: match conditions and variables, then each mutation in order on `obj`
/// (a mutation that fails is skipped; the others still apply, as upstream's dispatcher
/// does). Skipped when its conditions are false, or on the reinvocation pass when not queued.
/// Returns the messages of the policy errors.
#[allow(clippy::too_many_arguments)]
fn invoke(
    attrs: &Attributes<'_>,
    policy: &Policy,
    obj: &mut Value,
    old: Option<&Value>,
    param: &Value,
    namespace: &Value,
    matched: &super::super::Versioned,
    schema: &crd_merge::apply::Schema,
    state: &Reinvocation,
    key: &Key,
    reinvoking: bool,
    authorizer: Option<&crd_cel::Authorizer>,
) -> Vec<String> {
    let request = if policy.uses_request {
        request_value(attrs, matched, Some(&*obj), old)
    } else {
        Value::Null
    };
    let vars = Vars {
        object: obj,
        old: old.unwrap_or(&Value::Null),
        request: &request,
        params: param,
        namespace,
        authorizer,
    };
    let mut prepared = match prepare(policy, &vars) {
        Ok(Some(p)) => p,
        Ok(None) => return Vec::new(),
        Err((e, _)) => return vec![e],
    };
    if reinvoking && !state.reinvoke.contains(key) {
        return Vec::new();
    }
    let mut errors = Vec::new();
    for m in &policy.mutations {
        let started = std::time::Instant::now();
        let patched = m
            .expression
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|expr| {
                let value = expr
                    .eval_with(&prepared.bound, RUNTIME_COST_BUDGET)
                    .map_err(|e| {
                        format!(
                            "expression '{}' resulted in error: {}",
                            m.source,
                            prepared.through_variables(error_text(&e))
                        )
                    })?;
                match m.patch_type {
                    PatchType::ApplyConfiguration => apply_configuration(schema, obj, value),
                    PatchType::JsonPatch => json_patch(obj, value),
                }
            });
        let (policy_name, binding_name) = (&key.0, &key.1);
        match patched {
            Ok(new) => {
                crate::metrics::mutating_admission_policy(
                    policy_name,
                    binding_name,
                    "no_error",
                    started.elapsed(),
                );
                *obj = new;
                prepared
                    .bound
                    .set("object", &policy.reads_object.prune(obj));
            }
            Err(e) => {
                crate::metrics::mutating_admission_policy(
                    policy_name,
                    binding_name,
                    error_type(&e),
                    started.elapsed(),
                );
                errors.push(e);
            }
        }
    }
    errors
}

/// The metrics' `error_type` of a failed mutation, decided on its text as upstream's
/// `mutating.ErrorType` does.
fn error_type(message: &str) -> &'static str {
    if message.starts_with("compilation") {
        "compile_error"
    } else if message.starts_with("validation failed due to running out of cost budget") {
        "out_of_budget"
    } else {
        "invalid_error"
    }
}

/// An `ApplyConfiguration` result merged into `obj` (`applyConfigPatcher.Patch`).
fn apply_configuration(
    schema: &crd_merge::apply::Schema,
    obj: &Value,
    value: Value,
) -> Result<Value, String> {
    let config =
        crd_cel::mutation::object_value(value).map_err(|e| format!("type mismatch: {e}"))?;
    crd_merge::apply::merge_configuration(schema, obj, &config)
        .map_err(|e| format!("error applying patch: {e}"))
}

/// A `JSONPatch` result applied to `obj` (`jsonPatcher.Patch`): a failed `test` operation
/// leaves the object unpatched.
fn json_patch(obj: &Value, value: Value) -> Result<Value, String> {
    let ops = crd_cel::mutation::json_patch(value).map_err(|e| format!("type mismatch: {e}"))?;
    let mut out = obj.clone();
    let bytes = serde_json::to_vec(&ops).map_err(|e| e.to_string())?;
    match crd_merge::json_patch::apply(&mut out, &bytes) {
        Ok(()) => Ok(out),
        Err(e) => {
            let cause = e.cause.unwrap_or(e.message);
            if cause.ends_with("test failed") {
                Ok(obj.clone())
            } else {
                Err(format!("JSONPath: {cause}"))
            }
        }
    }
}

/// `keyFor`: the policy, the binding and the param's namespace and name.
fn invocation_key(policy: &Policy, binding: &Binding, param: &Value) -> Key {
    let meta = |k: &str| {
        param
            .pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (
        policy.name.clone(),
        binding.name.clone(),
        meta("namespace"),
        meta("name"),
    )
}

/// The generic dispatcher's end: errors of `Ignore` policies are dropped; the first of the
/// others refuses the request as `admission.NewForbidden` does, with its message and reason,
/// every message as a cause.
fn policy_errors(attrs: &Attributes<'_>, errors: &[PolicyError]) -> Result<(), ApiError> {
    let failing: Vec<&PolicyError> = errors.iter().filter(|e| !e.fail_open).collect();
    let Some(first) = failing.first() else {
        return Ok(());
    };
    let gr = GroupResource::new(&attrs.request.group, &attrs.request.resource);
    let mut status = Status::forbidden(&gr, &attrs.name, "admission request denied by policy");
    status.message = first.text();
    if !first.reason.is_empty() {
        status.reason = first.reason.to_string();
    }
    if let Some(d) = status.details.as_mut() {
        for e in &failing {
            d.causes.push(StatusCause {
                reason: String::new(),
                message: e.text(),
                field: String::new(),
            });
        }
    }
    Err(status.into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_patches_apply_as_upstream() {
        let obj = json!({"metadata": {"name": "a", "annotations": {"x": "1"}}, "spec": {"n": 1}});
        // (operations, result or error)
        let cases = [
            (
                json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
                Ok(
                    json!({"metadata": {"name": "a", "annotations": {"x": "1"}, "labels": {"a": "b"}}, "spec": {"n": 1}}),
                ),
            ),
            (
                json!([{"op": "add", "path": "/metadata/annotations/example.com~1key", "value": "v"}]),
                Ok(
                    json!({"metadata": {"name": "a", "annotations": {"x": "1", "example.com/key": "v"}}, "spec": {"n": 1}}),
                ),
            ),
            // A failed test leaves the object unpatched, without an error.
            (
                json!([{"op": "test", "path": "/spec/n", "value": 2}, {"op": "replace", "path": "/spec/n", "value": 3}]),
                Ok(obj.clone()),
            ),
            (
                json!([{"op": "test", "path": "/spec/n", "value": 1}, {"op": "replace", "path": "/spec/n", "value": 3}]),
                Ok(json!({"metadata": {"name": "a", "annotations": {"x": "1"}}, "spec": {"n": 3}})),
            ),
            (
                json!([{"op": "remove", "path": "/spec/missing"}]),
                Err("JSONPath: "),
            ),
        ];
        for (ops, want) in cases {
            let got = json_patch(&obj, ops.clone());
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{ops}"),
                (Err(g), Err(w)) => assert!(g.starts_with(w), "{ops}: {g}"),
                (g, w) => panic!("{ops}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn errors_follow_the_failure_policy() {
        let user = crate::auth::User::default();
        let attrs = Attributes {
            operation: super::super::super::Operation::Create,
            request: super::super::super::Versioned {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                resource: "configmaps".into(),
                kind_group_version: None,
            },
            subresource: "",
            name: "cm".into(),
            namespace: "default".into(),
            user: &user,
            dry_run: false,
            options: Value::Null,
        };
        let err = |policy: &str, binding: Option<&str>, reason, fail_open| PolicyError {
            policy: policy.into(),
            binding: binding.map(String::from),
            message: "boom".into(),
            reason,
            fail_open,
        };
        assert!(policy_errors(&attrs, &[err("p", Some("b"), "Invalid", true)]).is_ok());
        let e = policy_errors(
            &attrs,
            &[
                err("i", None, "", true),
                err("p", Some("b"), "Invalid", false),
                err("q", None, "", false),
            ],
        )
        .unwrap_err();
        let ApiError::Status(s) = e else {
            panic!("{e:?}");
        };
        assert_eq!(s.code, 403);
        assert_eq!(s.reason, "Invalid");
        assert_eq!(
            s.message,
            "policy 'p' with binding 'b' denied request: boom"
        );
        let causes: Vec<&str> = s
            .details
            .as_ref()
            .map(|d| d.causes.iter().map(|c| c.message.as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            causes,
            [
                "policy 'p' with binding 'b' denied request: boom",
                "policy \"q\" denied request: boom"
            ]
        );
    }
}
