//! The pod subresources that act on a stored pod: `pods/binding` (a scheduler assigns a pod to
//! a node) and `pods/eviction` (a drain deletes a pod unless its disruption budget forbids it),
//! as upstream's `BindingREST` and `EvictionREST` do. Both are creates answered with a `Success`
//! `Status` (201), routed and decoded like the other answered subresources ([`super::reviews`]).
//!
//! Nothing computes a disruption budget's status here (no disruption controller runs, as in
//! envtest): an eviction reads the budget's `status` as the test or operator wrote it, and
//! records the disruption there as upstream's eviction handler does.
//!
//! Architecture Invariant: these answers write only the pod the URL names and, for an eviction,
//! its disruption budget's status, each by compare-and-swap on the stored revision; a lost race
//! is retried on fresh state or reported, never overwritten.

use crd_core::{ErrorList, FieldError, GroupResource, Path, Status, StatusCause, StatusDetails};
use crd_storage::{Pages, StorageError, Store};
use serde_json::{Value, json};

use super::reviews::{Answer, AnswerRequest};
use super::{DeleteOutcome, meta, owners};
use crate::error::ApiError;
use crate::request::options::DeleteOptions;
use crate::request::route::Query;

/// How often a write that lost a race is tried again on fresh state (upstream retries
/// evictions' conflicts 20 times).
const ATTEMPTS: usize = 20;

/// Upstream's `MaxDisruptedPodSize`: more unconfirmed evictions than this are refused.
const MAX_DISRUPTED_PODS: usize = 2000;

fn pods() -> GroupResource {
    GroupResource::new("", "pods")
}

/// The `Success` status these subresources answer with (its code is the create's 201).
fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
           "code": 201})
}

/// The body's `metadata.name` must be the URL's.
fn check_name(body: &Value, url_name: &str, kind: &str) -> Result<(), ApiError> {
    if meta::name(body) != url_name {
        return Err(Status::bad_request(format!(
            "name in URL does not match name in {kind} object"
        ))
        .into());
    }
    Ok(())
}

/// The stored pod the URL names, decoded, with its revision.
async fn read_pod(req: &AnswerRequest<'_>) -> Result<(Value, crd_storage::KeyValue), ApiError> {
    let key = req.strategy.info().key(req.namespace, req.name);
    let kv = req
        .store
        .get(&key)
        .await
        .map_err(|e| ApiError::storage(&pods(), req.name, e))?
        .ok_or_else(|| ApiError::from(Status::not_found(&pods(), req.name)))?;
    let pod: Value = serde_json::from_slice(&kv.value).map_err(Status::internal)?;
    Ok((pod, kv))
}

/// `v1` `Binding` on `pods/<name>/binding`: sets `spec.nodeName` of an unassigned pod, adds
/// the binding's annotations and a true `PodScheduled` condition (upstream's
/// `setPodNodeAndMetadata`, a storage-level update: no managed-fields entry).
pub struct Binding;

#[async_trait::async_trait]
impl Answer for Binding {
    fn kind(&self) -> (&'static str, &'static str) {
        ("Binding", "v1")
    }

    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        check_name(&req.body, req.name, "Binding")?;
        let target = req.body.get("target").unwrap_or(&Value::Null);
        let mut errs = ErrorList::new();
        let kind = target.get("kind").and_then(Value::as_str).unwrap_or("");
        if !kind.is_empty() && kind != "Node" {
            errs.push(FieldError::not_supported(
                &Path::new("target").child("kind"),
                kind,
                &["Node", "<empty>"],
            ));
        }
        let node = target.get("name").and_then(Value::as_str).unwrap_or("");
        if node.is_empty() {
            errs.push(FieldError::required(&Path::new("target").child("name"), ""));
        }
        if !errs.is_empty() {
            // Upstream returns the list as a plain error: a 500 without a reason.
            return Err(Status::failure(500, "", aggregate(&errs)).into());
        }
        let uid = meta::uid(&req.body).to_string();
        let rv = meta::resource_version(&req.body).to_string();
        let annotations = req.body.pointer("/metadata/annotations").cloned();
        for _ in 0..ATTEMPTS {
            let (mut pod, kv) = read_pod(&req).await?;
            let conflict = |gr: &GroupResource, why: String| -> ApiError {
                Status::conflict(gr, req.name, &why).into()
            };
            if meta::is_deleting(&pod) {
                return Err(conflict(
                    &GroupResource::new("", "pods/binding"),
                    format!(
                        "pod {} is being deleted, cannot be assigned to a host",
                        req.name
                    ),
                ));
            }
            if !uid.is_empty() && uid != meta::uid(&pod) {
                return Err(conflict(
                    &pods(),
                    format!("uid mismatch: expected {uid}, got {}", meta::uid(&pod)),
                ));
            }
            if !rv.is_empty() && rv != kv.mod_revision.to_string() {
                return Err(conflict(
                    &pods(),
                    format!(
                        "resourceVersion mismatch: expected {rv}, got {}",
                        kv.mod_revision
                    ),
                ));
            }
            let binding = GroupResource::new("", "binding");
            let assigned = pod
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !assigned.is_empty() {
                return Err(conflict(
                    &binding,
                    format!(
                        "pod {} is already assigned to node {}",
                        req.name,
                        crd_core::field::go_quote(assigned)
                    ),
                ));
            }
            if pod
                .pointer("/spec/schedulingGates")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty())
            {
                return Err(conflict(
                    &binding,
                    format!("pod {} has non-empty .spec.schedulingGates", req.name),
                ));
            }
            assign(&mut pod, node, annotations.as_ref(), &meta::now_rfc3339());
            if req.dry_run {
                return Ok(success());
            }
            let bytes = meta::encode(&pod).map_err(|e| ApiError::storage(&pods(), req.name, e))?;
            match req.store.update(&kv.key, bytes, kv.mod_revision).await {
                Ok(_) => return Ok(success()),
                Err(StorageError::Conflict { .. }) => {}
                Err(e) => return Err(ApiError::storage(&pods(), req.name, e)),
            }
        }
        Err(Status::conflict_modified(&pods(), req.name).into())
    }
}

/// Assigns `pod` to `node` (upstream's `setPodNodeAndMetadata` after its checks).
fn assign(pod: &mut Value, node: &str, annotations: Option<&Value>, now: &str) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), json!(node));
    }
    if let Some(Value::Object(add)) = annotations
        && let Some(m) = pod.get_mut("metadata").and_then(Value::as_object_mut)
    {
        let own = m
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(own) = own {
            for (k, v) in add {
                own.insert(k.clone(), v.clone());
            }
        }
    }
    set_pod_condition(pod, "PodScheduled", "True", now);
}

/// `UpdatePodCondition` with a condition of only a type and a status: added with the time
/// `now`, or replacing the condition of that type (keeping its transition time when its status
/// is the same).
fn set_pod_condition(pod: &mut Value, ty: &str, status: &str, now: &str) {
    let Some(m) = pod.as_object_mut() else {
        return;
    };
    let st = m.entry("status").or_insert_with(|| json!({}));
    let Some(st) = st.as_object_mut() else {
        return;
    };
    let conditions = st.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let mut condition = json!({"type": ty, "status": status, "lastProbeTime": null,
                               "lastTransitionTime": now});
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    {
        Some(old) => {
            if old.get("status").and_then(Value::as_str) == Some(status) {
                condition["lastTransitionTime"] = old
                    .get("lastTransitionTime")
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            *old = condition;
        }
        None => list.push(condition),
    }
}

/// A field error list as Go's `ErrorList.ToAggregate().Error()` prints it: one message
/// alone, several in brackets.
fn aggregate(errs: &ErrorList) -> String {
    let msgs: Vec<String> = errs.0.iter().map(ToString::to_string).collect();
    match msgs.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `v1` `Binding` on the namespace's `bindings` resource (upstream's `LegacyBindingREST`, what
/// the Python client's `create_namespaced_binding` posts): a [`Binding`] of the pod the body
/// names. Its strategy's key root is the pods', so the pod is read as `pods/<name>/binding`
/// reads it.
pub struct LegacyBinding;

#[async_trait::async_trait]
impl Answer for LegacyBinding {
    fn kind(&self) -> (&'static str, &'static str) {
        Binding.kind()
    }

    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        let name = meta::name(&req.body).to_string();
        Binding.answer(AnswerRequest { name: &name, ..req }).await
    }
}

/// `policy/v1` `Eviction` on `pods/<name>/eviction` (`kubectl drain`): deletes the pod unless
/// its disruption budget allows no disruption (upstream's `EvictionREST.Create`).
pub struct Eviction;

#[async_trait::async_trait]
impl Answer for Eviction {
    fn kind(&self) -> (&'static str, &'static str) {
        ("Eviction", "policy/v1")
    }

    fn also_accepts(&self) -> &'static [&'static str] {
        &["policy/v1beta1"]
    }

    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        check_name(&req.body, req.name, "Eviction")?;
        let mut opts = match req.body.get("deleteOptions").filter(|o| o.is_object()) {
            Some(o) => {
                let bytes = serde_json::to_vec(o).map_err(Status::internal)?;
                DeleteOptions::parse(&Query::parse(None), &bytes)?
            }
            None => DeleteOptions::default(),
        };
        opts.dry_run |= req.dry_run;
        let rv_unset = opts.resource_version.is_none();
        for _ in 0..ATTEMPTS {
            match evict_once(&req, &opts, rv_unset).await? {
                Attempt::Done(v) => return Ok(v),
                Attempt::Retry => {}
            }
        }
        Err(Status::conflict_modified(&pods(), req.name).into())
    }
}

/// One eviction attempt's outcome: the answer, or a lost race to try again on fresh state.
enum Attempt {
    Done(Value),
    Retry,
}

async fn evict_once(
    req: &AnswerRequest<'_>,
    original: &DeleteOptions,
    rv_unset: bool,
) -> Result<Attempt, ApiError> {
    let (pod, kv) = read_pod(req).await?;
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let terminal = matches!(phase, "Succeeded" | "Failed");
    let deleting = meta::is_deleting(&pod);
    // A pod that is pending, finished or already being deleted disrupts nothing more.
    if terminal || deleting || phase == "Pending" {
        let mut opts = original.clone();
        if !terminal && !deleting && rv_unset {
            opts.resource_version = Some(kv.mod_revision.to_string());
        }
        return match delete_pod(req, &pod, &kv, &opts).await {
            Err(e) if is_conflict(&e) && rv_unset => Ok(Attempt::Retry),
            other => other.map(|()| Attempt::Done(success())),
        };
    }
    let budgets = budgets_of(req, &pod).await?;
    let mut opts = original.clone();
    if let [(budget, budget_kv)] = budgets.as_slice() {
        let name = meta::name(budget).to_string();
        let current = int(budget, "/status/currentHealthy");
        let desired = int(budget, "/status/desiredHealthy");
        let always = budget
            .pointer("/spec/unhealthyPodEvictionPolicy")
            .and_then(Value::as_str)
            == Some("AlwaysAllow");
        if !pod_ready(&pod) && (always || (current >= desired && desired > 0)) {
            // An unready pod does not count as healthy: deleting it takes nothing from the
            // budget, as long as it is still unready when deleted.
            if rv_unset {
                opts.resource_version = Some(kv.mod_revision.to_string());
            }
        } else if !take_disruption(req, budget, budget_kv, meta::name(&pod), opts.dry_run).await? {
            return Ok(Attempt::Retry);
        }
        let updated_options = opts.resource_version != original.resource_version;
        return match delete_pod(req, &pod, &kv, &opts).await {
            Err(e) if is_conflict(&e) && updated_options => Err(too_many_requests(
                &format!("The disruption budget {name} is still being processed by the server."),
                10,
            )),
            other => other.map(|()| Attempt::Done(success())),
        };
    }
    if budgets.len() > 1 {
        return Err(Status::failure(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        )
        .into());
    }
    delete_pod(req, &pod, &kv, &opts).await?;
    Ok(Attempt::Done(success()))
}

fn int(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn is_conflict(e: &ApiError) -> bool {
    matches!(e, ApiError::Status(s) if s.code == 409)
}

/// `IsPodReady`: a `Ready` condition with status `True`.
fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// 429 `TooManyRequests` with a `DisruptionBudget` cause (upstream's eviction refusals).
fn too_many_requests(cause: &str, retry_after: i32) -> ApiError {
    let mut status = Status::failure(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    status.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message: cause.into(),
            field: String::new(),
        }],
        retry_after_seconds: (retry_after > 0).then_some(retry_after),
        ..StatusDetails::default()
    });
    status.into()
}

/// The disruption budgets of the pod's namespace whose (non-empty, valid) selector matches
/// the pod's labels, with their stored values.
async fn budgets_of(
    req: &AnswerRequest<'_>,
    pod: &Value,
) -> Result<Vec<(Value, crd_storage::KeyValue)>, ApiError> {
    let ns = meta::namespace(pod);
    let gr = GroupResource::new("policy", "poddisruptionbudgets");
    let prefix = format!("/registry/poddisruptionbudgets/{ns}/");
    let mut out = Vec::new();
    let mut pages = Pages::new(req.store.as_ref(), prefix, None, 500);
    while let Some(page) = pages
        .next_page()
        .await
        .map_err(|e| ApiError::storage(&gr, "", e))?
    {
        for kv in page {
            let Ok(budget) = serde_json::from_slice::<Value>(&kv.value) else {
                continue;
            };
            let selector = budget.pointer("/spec/selector").unwrap_or(&Value::Null);
            let Ok(sel) = crd_core::labels::Selector::from_label_selector_json(selector) else {
                continue;
            };
            // A nil or empty selector matches nothing here, not everything.
            if sel.is_empty() || !sel.matches_json(pod.pointer("/metadata/labels")) {
                continue;
            }
            out.push((budget, kv));
        }
    }
    Ok(out)
}

/// `checkAndDecrement`: takes one disruption from the budget and records the pod in its
/// `disruptedPods` (unless `dry_run`). `Ok(false)`: the budget changed meanwhile (try again).
async fn take_disruption(
    req: &AnswerRequest<'_>,
    budget: &Value,
    kv: &crd_storage::KeyValue,
    pod: &str,
    dry_run: bool,
) -> Result<bool, ApiError> {
    let name = meta::name(budget);
    let gr = GroupResource::new("policy", "poddisruptionbudget");
    let generation = int(budget, "/metadata/generation");
    if int(budget, "/status/observedGeneration") < generation {
        return Err(too_many_requests(
            &format!("The disruption budget {name} is still being processed by the server."),
            10,
        ));
    }
    let allowed = int(budget, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(Status::forbidden(&gr, name, "pdb disruptions allowed is negative").into());
    }
    let disrupted = budget
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(Status::forbidden(
            &gr,
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
        .into());
    }
    if allowed == 0 {
        return Err(too_many_requests(
            &format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                int(budget, "/status/desiredHealthy"),
                int(budget, "/status/currentHealthy")
            ),
            0,
        ));
    }
    if dry_run {
        return Ok(true);
    }
    let mut updated = budget.clone();
    record_disruption(&mut updated, pod, &meta::now_rfc3339());
    let bytes = meta::encode(&updated).map_err(|e| ApiError::storage(&gr, name, e))?;
    match req.store.update(&kv.key, bytes, kv.mod_revision).await {
        Ok(_) => Ok(true),
        Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(false),
        Err(e) => Err(ApiError::storage(&gr, name, e)),
    }
}

/// One disruption taken from a budget's status: `disruptionsAllowed` down by one (with the
/// `DisruptionAllowed` condition false once it reaches zero, upstream's
/// `UpdateDisruptionAllowedCondition`) and the pod recorded in `disruptedPods` at `now`.
fn record_disruption(budget: &mut Value, pod: &str, now: &str) {
    let observed = int(budget, "/status/observedGeneration");
    let Some(status) = budget.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let allowed = status
        .get("disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        - 1;
    status.insert("disruptionsAllowed".into(), json!(allowed));
    if allowed == 0 {
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if !conditions.is_array() {
            *conditions = json!([]);
        }
        if let Some(list) = conditions.as_array_mut() {
            let condition = json!({"type": "DisruptionAllowed", "status": "False",
                "reason": "InsufficientPods", "message": "",
                "observedGeneration": observed, "lastTransitionTime": now});
            match list
                .iter_mut()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionAllowed"))
            {
                Some(old) => {
                    // `SetStatusCondition`: the transition time moves only with the status.
                    let same = old.get("status").and_then(Value::as_str) == Some("False");
                    let time = old.get("lastTransitionTime").cloned();
                    *old = condition;
                    if same && let Some(t) = time {
                        old["lastTransitionTime"] = t;
                    }
                }
                None => list.push(condition),
            }
        }
    }
    let pods = status.entry("disruptedPods").or_insert_with(|| json!({}));
    if !pods.is_object() {
        *pods = json!({});
    }
    pods[pod] = json!(now);
}

/// Deletes the pod through the generic deletion rules (preconditions, grace period,
/// finalizers), as upstream's eviction calls the pod store's `Delete`.
async fn delete_pod(
    req: &AnswerRequest<'_>,
    pod: &Value,
    kv: &crd_storage::KeyValue,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let name = req.name;
    opts.check_preconditions(&pods(), name, meta::uid(pod), kv.mod_revision)?;
    let mut obj = pod.clone();
    let outcome = owners::prepare_delete(
        req.strategy,
        &mut obj,
        opts.propagation_policy,
        opts.grace_period_seconds,
    );
    if opts.dry_run {
        return Ok(());
    }
    let store: &dyn Store = req.store.as_ref();
    let result = match outcome {
        DeleteOutcome::Immediate => store.delete(&kv.key, Some(kv.mod_revision)).await.map(drop),
        DeleteOutcome::Graceful => {
            meta::mark_deleting(&mut obj);
            if obj == *pod {
                return Ok(());
            }
            let bytes = meta::encode(&obj).map_err(|e| ApiError::storage(&pods(), name, e))?;
            store
                .update(&kv.key, bytes, kv.mod_revision)
                .await
                .map(drop)
        }
    };
    match result {
        Ok(()) => Ok(()),
        Err(StorageError::Conflict { .. }) => Err(Status::conflict_modified(&pods(), name).into()),
        Err(e) => Err(ApiError::storage(&pods(), name, e)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn binding_assigns_the_node_and_marks_the_pod_scheduled() {
        let now = "2026-11-29T08:00:00Z";
        let cases = [
            (
                json!({"metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"phase": "Pending"}}),
                json!({"a": "b"}),
                json!({"metadata": {"name": "p", "annotations": {"a": "b"}},
                       "spec": {"containers": [], "nodeName": "n1"},
                       "status": {"phase": "Pending", "conditions": [
                           {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                            "lastTransitionTime": now}]}}),
            ),
            (
                // A scheduler's earlier `Unschedulable` condition is replaced whole.
                json!({"metadata": {"name": "p", "annotations": {"x": "y"}}, "spec": {},
                       "status": {"conditions": [
                           {"type": "Ready", "status": "False"},
                           {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
                Value::Null,
                json!({"metadata": {"name": "p", "annotations": {"x": "y"}},
                       "spec": {"nodeName": "n1"},
                       "status": {"conditions": [
                           {"type": "Ready", "status": "False"},
                           {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                            "lastTransitionTime": now}]}}),
            ),
        ];
        for (mut pod, annotations, want) in cases {
            assign(&mut pod, "n1", Some(&annotations), now);
            assert_eq!(pod, want);
        }
    }

    #[test]
    fn a_disruption_is_recorded_in_the_budget_status() {
        let now = "2026-11-29T08:00:00Z";
        let cases = [
            (
                json!({"status": {"disruptionsAllowed": 2, "observedGeneration": 1}}),
                json!({"status": {"disruptionsAllowed": 1, "observedGeneration": 1,
                                  "disruptedPods": {"p": now}}}),
            ),
            (
                json!({"status": {"disruptionsAllowed": 1, "observedGeneration": 3,
                                  "disruptedPods": {"q": "2026-11-29T07:00:00Z"},
                                  "conditions": [{"type": "DisruptionAllowed", "status": "True",
                                                  "reason": "SufficientPods", "message": "",
                                                  "observedGeneration": 3,
                                                  "lastTransitionTime": "2026-11-29T07:00:00Z"}]}}),
                json!({"status": {"disruptionsAllowed": 0, "observedGeneration": 3,
                                  "disruptedPods": {"q": "2026-11-29T07:00:00Z", "p": now},
                                  "conditions": [{"type": "DisruptionAllowed", "status": "False",
                                                  "reason": "InsufficientPods", "message": "",
                                                  "observedGeneration": 3,
                                                  "lastTransitionTime": now}]}}),
            ),
        ];
        for (mut budget, want) in cases {
            record_disruption(&mut budget, "p", now);
            assert_eq!(budget, want);
        }
    }

    #[test]
    fn field_errors_aggregate_as_go_prints_them() {
        let mut errs = ErrorList::new();
        errs.push(FieldError::required(&Path::new("target").child("name"), ""));
        assert_eq!(aggregate(&errs), "target.name: Required value");
        errs.push(FieldError::not_supported(
            &Path::new("target").child("kind"),
            "Pod",
            &["Node", "<empty>"],
        ));
        assert_eq!(
            aggregate(&errs),
            "[target.name: Required value, target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"]"
        );
    }
}
