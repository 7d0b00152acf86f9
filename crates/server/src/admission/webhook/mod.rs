//! Admission webhooks (apiserver's `plugin/webhook`): the configurations, followed by two
//! informers so matching is in memory ([`Webhooks::run`]), and the two dispatchers: mutating
//! webhooks in order with JSON patches, one pass at a time so the chain can reinvoke them after
//! mutating policies ([`Webhooks::mutate`], [`Reinvocation`]), and
//! validating webhooks in parallel ([`Webhooks::validate`]).
//!
//! Submodules: [`matching`] (rules and selectors, pure), [`review`] (`AdmissionReview` wire
//! format, pure), [`config`] (a compiled webhook).
//!
//! Architecture Invariant: a request never reads webhook configurations from storage; it reads
//! the snapshot the informers last published.

pub mod config;
pub mod matching;
pub mod review;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};

use crd_core::{GroupResource, Status};
use crd_storage::{KeyValue, Store};
use serde_json::{Value, json};
use tokio::sync::watch;

use self::config::Hook;
use self::matching::Target;
use self::review::Versioned;
use super::lock;
use super::{Attributes, Record};
use crate::controllers::informer::{Cache, Informer, Notification};
use crate::error::ApiError;
use crate::registry::Strategy;
use crate::registry::serving::Registry;

/// The per-expression cost limit of match conditions (`celconfig.PerCallLimit`).
const MATCH_CONDITION_COST_LIMIT: i64 = 1_000_000;

/// The webhooks of every configuration, by kind, in configuration-name order.
#[derive(Default)]
struct Snapshot {
    mutating: Vec<Arc<Hook>>,
    validating: Vec<Arc<Hook>>,
}

/// Where the mutating and validating configurations are stored.
#[derive(Clone, Debug)]
pub struct Sources {
    /// Key prefix of `MutatingWebhookConfiguration`s (with the trailing `/`).
    pub mutating: String,
    /// Key prefix of `ValidatingWebhookConfiguration`s.
    pub validating: String,
}

/// The webhook admission plugins (mutating and validating) with their configuration source.
pub struct Webhooks {
    store: Arc<dyn Store>,
    namespaces: Arc<dyn Strategy>,
    registry: Arc<Registry>,
    sources: Sources,
    service_addresses: HashMap<String, SocketAddr>,
    snapshot: RwLock<Arc<Snapshot>>,
    synced: watch::Sender<bool>,
    /// What `authorizer` in `matchConditions` asks.
    pub authorizer: super::authorizer::SharedAuthorizer,
}

/// Why a call did not produce a usable answer.
enum Failure {
    /// `ErrCallingWebhook`: subject to `failurePolicy`.
    Calling(String),
    /// Any other error, returned as it is.
    Status(ApiError),
}

/// Which `IfNeeded` webhooks were called and which must be called again on the reinvocation
/// pass (`webhookReinvokeContext`), by webhook name.
#[derive(Debug, Default)]
pub struct Reinvocation {
    previously: HashSet<String>,
    reinvoke: HashSet<String>,
    last_output: Option<Value>,
}

/// A webhook that applies to a request, with the version it is sent.
struct Invocation {
    sent: Versioned,
    object: Option<Value>,
    old: Option<Value>,
}

impl Webhooks {
    /// The plugins, reading configurations under `sources` and namespaces through their
    /// strategy; `registry` supplies the equivalent versions of custom resources.
    pub fn new(
        store: Arc<dyn Store>,
        namespaces: Arc<dyn Strategy>,
        registry: Arc<Registry>,
        sources: Sources,
        service_addresses: HashMap<String, SocketAddr>,
    ) -> Self {
        Webhooks {
            store,
            namespaces,
            registry,
            sources,
            service_addresses,
            snapshot: RwLock::new(Arc::new(Snapshot::default())),
            synced: watch::Sender::new(false),
            authorizer: super::authorizer::SharedAuthorizer::default(),
        }
    }

    /// Turns true once both informers have delivered their first list.
    pub fn synced(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    fn current(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .map_or_else(|p| p.into_inner().clone(), |s| s.clone())
    }

    /// Follows both configuration kinds and publishes a snapshot after every change.
    pub async fn run(self: Arc<Self>, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let decode = |mutating: bool| {
            let addrs = self.service_addresses.clone();
            Arc::new(move |kv: &KeyValue| -> Option<Vec<Arc<Hook>>> {
                let obj: Value = serde_json::from_slice(&kv.value).ok()?;
                Some(
                    Hook::all_of(&obj, mutating, &addrs)
                        .into_iter()
                        .map(Arc::new)
                        .collect(),
                )
            }) as crate::controllers::informer::Decode<Vec<Arc<Hook>>>
        };
        let mut mutating = Informer::new(
            self.store.clone(),
            self.sources.mutating.clone(),
            decode(true),
            shutdown.clone(),
        );
        let mut validating = Informer::new(
            self.store.clone(),
            self.sources.validating.clone(),
            decode(false),
            shutdown,
        );
        let (m_cache, v_cache) = (mutating.cache(), validating.cache());
        let (mut m_synced, mut v_synced) = (false, false);
        loop {
            let (is_mutating, n) = tokio::select! {
                n = mutating.next() => (true, n),
                n = validating.next() => (false, n),
            };
            match n {
                None => return Ok(()),
                Some(Notification::Synced) if is_mutating => m_synced = true,
                Some(Notification::Synced) => v_synced = true,
                Some(Notification::Changed(_)) => {}
            }
            self.publish(&m_cache, &v_cache);
            if m_synced && v_synced {
                self.synced.send_replace(true);
            }
        }
    }

    fn publish(&self, m: &Cache<Vec<Arc<Hook>>>, v: &Cache<Vec<Arc<Hook>>>) {
        let flat = |c: &Cache<Vec<Arc<Hook>>>| -> Vec<Arc<Hook>> {
            c.list()
                .into_iter()
                .flat_map(|(_, hooks)| hooks.iter().cloned().collect::<Vec<_>>())
                .collect()
        };
        let snap = Arc::new(Snapshot {
            mutating: flat(m),
            validating: flat(v),
        });
        match self.snapshot.write() {
            Ok(mut s) => *s = snap,
            Err(p) => *p.into_inner() = snap,
        }
    }

    /// Whether any webhook is configured (requests skip all work otherwise).
    /// Whether no webhook of the kind (mutating, or validating) is configured now.
    pub fn none(&self, mutating: bool) -> bool {
        let s = self.current();
        if mutating {
            s.mutating.is_empty()
        } else {
            s.validating.is_empty()
        }
    }

    /// One pass of the mutating webhooks on `obj` (`None` for DELETE), in order, applying
    /// their patches. The first pass calls every webhook that applies; the reinvocation pass
    /// (`reinvoking`) only the `IfNeeded` ones called before a later change (all of them when
    /// the object changed since the webhooks last ran). Returns whether the object changed.
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&mut Value>,
        old: Option<&Value>,
        record: &Mutex<Record>,
        state: &mut Reinvocation,
        reinvoking: bool,
    ) -> Result<bool, ApiError> {
        if self.none(true) || matching::is_exempt(&attrs.request.group, &attrs.request.resource) {
            return Ok(false);
        }
        let hooks = self.current().mutating.clone();
        let mut obj = obj;
        if reinvoking && state.last_output.as_ref() != obj.as_deref() {
            state.reinvoke.extend(state.previously.drain());
        }
        if reinvoking && state.reinvoke.is_empty() {
            return Ok(false);
        }
        let mut any_change = false;
        for (index, hook) in hooks.iter().enumerate() {
            if reinvoking && !state.reinvoke.contains(&hook.name) {
                continue;
            }
            let Some(inv) = self.should_call(hook, attrs, obj.as_deref(), old).await? else {
                continue;
            };
            let at = Annotator {
                record,
                hook,
                key: format!("round_{}_index_{index}", u8::from(reinvoking)),
            };
            let changed = self
                .call_mutating(hook, inv, attrs, obj.as_deref_mut(), &at)
                .await?;
            if changed {
                any_change = true;
                state.reinvoke.extend(state.previously.drain());
            }
            if hook.reinvoke_if_needed {
                state.previously.insert(hook.name.clone());
            }
        }
        state.last_output = obj.as_deref().cloned();
        Ok(any_change)
    }

    /// Runs the validating webhooks that match, in parallel; the first failure in webhook
    /// order is the answer.
    pub async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
        record: &Mutex<Record>,
    ) -> Result<(), ApiError> {
        if self.none(false) || matching::is_exempt(&attrs.request.group, &attrs.request.resource) {
            return Ok(());
        }
        let hooks = self.current().validating.clone();
        let mut calls = Vec::new();
        for hook in &hooks {
            if let Some(inv) = self.should_call(hook, attrs, obj, old).await? {
                calls.push((hook.clone(), inv));
            }
        }
        let results = futures::future::join_all(
            calls
                .iter()
                .map(|(hook, inv)| self.call(hook, inv, attrs, false)),
        )
        .await;
        let mut first_error = None;
        for (index, ((hook, _), result)) in calls.iter().zip(results).enumerate() {
            let outcome = match result {
                Ok(resp) => {
                    collect(record, hook, &resp);
                    if resp.allowed {
                        Ok(())
                    } else {
                        Err(review::denial(&hook.name, resp.status.as_ref()).into())
                    }
                }
                Err(Failure::Calling(_)) if hook.fail_open => {
                    // Indexed among the webhooks called, as upstream's validating dispatcher.
                    lock(record).audit_annotations.push((
                        format!(
                            "failed-open.validating.webhook.admission.k8s.io/round_0_index_{index}"
                        ),
                        hook.name.clone(),
                    ));
                    Ok(())
                }
                Err(Failure::Calling(reason)) => Err(calling_error(hook, &reason)),
                Err(Failure::Status(e)) => Err(e),
            };
            if let Err(e) = outcome
                && first_error.is_none()
            {
                first_error = Some(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `ShouldCallHook`: selectors, rules (with equivalent versions), match conditions.
    async fn should_call(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Option<Invocation>, ApiError> {
        let req = &attrs.request;
        let target = Target {
            operation: attrs.operation.as_str(),
            group: &req.group,
            version: &req.version,
            resource: &req.resource,
            subresource: attrs.subresource,
            namespace: &attrs.namespace,
        };
        let mut ns_error: Option<ApiError> = None;
        match &hook.namespace_selector {
            Err(e) => ns_error = Some(Status::internal(e).into()),
            Ok(sel) if !sel.is_empty() && matching::namespace_selector_applies(&target) => {
                match self.namespace_labels(&target, obj).await {
                    Ok(labels) => {
                        if !sel.matches_json(labels.as_ref()) {
                            return Ok(None);
                        }
                    }
                    Err(e) => ns_error = Some(e),
                }
            }
            Ok(_) => {}
        }
        let obj_error = match &hook.object_selector {
            Err(e) => Some(ApiError::from(Status::internal(e))),
            Ok(sel) => {
                if !matching::object_selector_matches(sel, obj, old) {
                    return Ok(None);
                }
                None
            }
        };
        let mut sent = None;
        if hook
            .rules
            .iter()
            .any(|r| matching::rule_matches(r, &target))
        {
            sent = Some(req.clone());
        } else if hook.equivalent {
            let equivalents = self.equivalents(req);
            'rules: for rule in &hook.rules {
                for v in &equivalents {
                    let t = Target {
                        version: &v.version,
                        ..target
                    };
                    if matching::rule_matches(rule, &t) {
                        sent = Some(v.clone());
                        break 'rules;
                    }
                }
            }
        }
        let Some(sent) = sent else {
            return Ok(None);
        };
        if let Some(e) = ns_error.or(obj_error) {
            return Err(e);
        }
        let (object, old) = if sent == *req {
            (obj.cloned(), old.cloned())
        } else {
            (
                self.convert(obj, &sent).await?,
                self.convert(old, &sent).await?,
            )
        };
        let inv = Invocation { sent, object, old };
        if !hook.match_conditions.is_empty() {
            let request = review::request(
                "v1",
                "",
                attrs,
                &inv.sent,
                inv.object.as_ref(),
                inv.old.as_ref(),
            );
            let request = request.get("request").cloned().unwrap_or(Value::Null);
            let authorizer = self.authorizer.for_request(attrs);
            match match_conditions(
                hook,
                inv.object.as_ref(),
                inv.old.as_ref(),
                &request,
                &authorizer,
            ) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(_) if hook.fail_open => return Ok(None),
                Err(e) => {
                    return Err(Status::forbidden(
                        &GroupResource::new(&req.group, &req.resource),
                        &attrs.name,
                        &e,
                    )
                    .into());
                }
            }
        }
        Ok(Some(inv))
    }

    /// The labels the namespace selector sees: the namespace being written, or the stored one.
    async fn namespace_labels(
        &self,
        target: &Target<'_>,
        obj: Option<&Value>,
    ) -> Result<Option<Value>, ApiError> {
        if matching::namespace_labels_from_object(target) {
            return Ok(obj.and_then(|o| o.pointer("/metadata/labels")).cloned());
        }
        let info = self.namespaces.info();
        let gr = info.group_resource();
        let kv = self
            .store
            .get(&info.key(None, target.namespace))
            .await
            .map_err(|e| ApiError::storage(&gr, target.namespace, e))?
            .ok_or_else(|| Status::not_found(&gr, target.namespace))?;
        let ns: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
        Ok(ns.pointer("/metadata/labels").cloned())
    }

    fn equivalents(&self, req: &Versioned) -> Vec<Versioned> {
        equivalents(&self.registry, req)
    }

    async fn convert(
        &self,
        obj: Option<&Value>,
        to: &Versioned,
    ) -> Result<Option<Value>, ApiError> {
        convert(&self.registry, obj, to).await
    }

    /// Calls one mutating webhook and applies its patch; returns whether the object changed.
    /// Every call leaves its `mutation.webhook.admission.k8s.io/` audit annotation (upstream
    /// records it on every return), an applied patch its `patch.` one.
    async fn call_mutating(
        &self,
        hook: &Hook,
        inv: Invocation,
        attrs: &Attributes<'_>,
        obj: Option<&mut Value>,
        at: &Annotator<'_>,
    ) -> Result<bool, ApiError> {
        let result = self.call_and_patch(hook, inv, attrs, obj, at).await;
        at.mutation(matches!(result, Ok(true)));
        result
    }

    async fn call_and_patch(
        &self,
        hook: &Hook,
        mut inv: Invocation,
        attrs: &Attributes<'_>,
        obj: Option<&mut Value>,
        at: &Annotator<'_>,
    ) -> Result<bool, ApiError> {
        let record = at.record;
        let resp = match self.call(hook, &inv, attrs, true).await {
            Ok(r) => r,
            Err(Failure::Calling(_)) if hook.fail_open => {
                at.failed_open();
                return Ok(false);
            }
            Err(Failure::Calling(reason)) => return Err(calling_error(hook, &reason)),
            Err(Failure::Status(e)) => return Err(e),
        };
        collect(record, hook, &resp);
        if !resp.allowed {
            return Err(review::denial(&hook.name, resp.status.as_ref()).into());
        }
        let Some(patch) = resp.patch else {
            return Ok(false);
        };
        let ops: Value = serde_json::from_slice(&patch).map_err(Status::internal)?;
        if ops.as_array().is_some_and(Vec::is_empty) {
            return Ok(false);
        }
        let (Some(obj), Some(sent_obj)) = (obj, inv.object.as_mut()) else {
            return Err(Status::internal(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))
            .into());
        };
        if resp.patch_type != "JSONPatch" {
            let reason = format!("unsupported patch type {:?}", resp.patch_type);
            if hook.fail_open {
                at.failed_open();
                return Ok(false);
            }
            return Err(calling_error(hook, &reason));
        }
        crd_merge::json_patch::apply_with(
            sent_obj,
            &patch,
            crd_merge::json_patch::FieldValidation::Ignore,
        )
        .map_err(|e| Status::internal(e.message))?;
        let patched = if inv.sent == attrs.request {
            inv.object.take().unwrap_or(Value::Null)
        } else {
            self.convert(inv.object.as_ref(), &attrs.request)
                .await?
                .unwrap_or(Value::Null)
        };
        let changed = patched != *obj;
        *obj = patched;
        at.patch(&ops);
        Ok(changed)
    }

    /// Sends one `AdmissionReview` and verifies the answer, counted and timed in
    /// `apiserver_admission_webhook_request_total` and
    /// `apiserver_admission_webhook_admission_duration_seconds` (type `admit` or `validating`,
    /// code 0 when the call failed, as upstream).
    async fn call(
        &self,
        hook: &Hook,
        inv: &Invocation,
        attrs: &Attributes<'_>,
        mutating: bool,
    ) -> Result<review::Response, Failure> {
        let started = std::time::Instant::now();
        let result = self.call_once(hook, inv, attrs, mutating).await;
        let (rejected, code) = match &result {
            Ok(r) => (!r.allowed, 200),
            Err(Failure::Calling(_)) => (true, 0),
            Err(Failure::Status(e)) => (true, e.to_status().map_or(0, |s| s.code)),
        };
        crate::metrics::admission_webhook(
            &hook.name,
            if mutating { "admit" } else { "validating" },
            attrs.operation.as_str(),
            rejected,
            code,
            started.elapsed(),
        );
        result
    }

    async fn call_once(
        &self,
        hook: &Hook,
        inv: &Invocation,
        attrs: &Attributes<'_>,
        mutating: bool,
    ) -> Result<review::Response, Failure> {
        if attrs.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
            return Err(Failure::Status(
                Status::bad_request(format!(
                    "admission webhook {:?} does not support dry run",
                    hook.name
                ))
                .into(),
            ));
        }
        let client = hook
            .client
            .as_ref()
            .map_err(|e| Failure::Calling(format!("could not get REST client: {e}")))?;
        let Some(version) = hook.review_version else {
            return Err(Failure::Calling(
                "could not create admission objects: webhook does not accept known AdmissionReview versions"
                    .into(),
            ));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let body = review::request(
            version,
            &uid,
            attrs,
            &inv.sent,
            inv.object.as_ref(),
            inv.old.as_ref(),
        );
        let (code, text) = client
            .post_json(body.to_string().into_bytes())
            .await
            .map_err(|e| {
                Failure::Calling(format!(
                    "failed to call webhook: {}",
                    e.describe(client.url(), "context deadline exceeded")
                ))
            })?;
        if !(200..300).contains(&code) {
            return Err(Failure::Calling(format!(
                "failed to call webhook: {}",
                crate::webhook::response_error(&text)
            )));
        }
        let review: Value = serde_json::from_slice(&text)
            .map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
        review::verify(&review, version, &uid, mutating)
            .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))
    }
}

/// `NewInternalError(ErrCallingWebhook)`: a failing-closed webhook.
fn calling_error(hook: &Hook, reason: &str) -> ApiError {
    Status::internal(format!("failed calling webhook {:?}: {reason}", hook.name)).into()
}

/// Evaluates the match conditions: `Ok(false)` as soon as one is false; errors (compilation,
/// evaluation) are reported after every condition ran, as upstream's matcher does.
fn match_conditions(
    hook: &Hook,
    object: Option<&Value>,
    old: Option<&Value>,
    request: &Value,
    authorizer: &crd_cel::Authorizer,
) -> Result<bool, String> {
    let null = Value::Null;
    let mut vars = crd_cel::Bindings::new(&[
        ("object", object.unwrap_or(&null)),
        ("oldObject", old.unwrap_or(&null)),
        ("request", request),
    ]);
    vars.set_authorizer("authorizer", authorizer);
    super::match_conditions(&hook.match_conditions, &vars, MATCH_CONDITION_COST_LIMIT)
        .map_err(|(e, _)| e)
}

/// Upstream's `MutationAuditAnnotation` value, in its field order.
#[derive(serde::Serialize)]
struct MutationAuditAnnotation<'a> {
    configuration: &'a str,
    webhook: &'a str,
    mutated: bool,
}

/// Upstream's `PatchAuditAnnotation` value, in its field order.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PatchAuditAnnotation<'a> {
    configuration: &'a str,
    webhook: &'a str,
    patch: Vec<Value>,
    patch_type: &'a str,
}

/// The audit annotations of one mutating webhook call (upstream's `webhookAnnotator`), keyed
/// `round_<r>_index_<i>`: the round (0, or 1 when reinvoked) and the webhook's place among all
/// mutating webhooks.
struct Annotator<'a> {
    record: &'a Mutex<Record>,
    hook: &'a Hook,
    key: String,
}

impl Annotator<'_> {
    /// `mutation.webhook.admission.k8s.io/<key>`: whether the call changed the object.
    fn mutation(&self, mutated: bool) {
        let value = MutationAuditAnnotation {
            configuration: &self.hook.configuration,
            webhook: &self.hook.name,
            mutated,
        };
        lock(self.record).audit_annotations.push((
            format!("mutation.webhook.admission.k8s.io/{}", self.key),
            serde_json::to_string(&value).unwrap_or_default(),
        ));
    }

    /// `patch.webhook.admission.k8s.io/<key>` (level `Request` and above): the JSON patch
    /// applied, each operation's keys in Go's (sorted) order.
    fn patch(&self, ops: &Value) {
        let ops: Vec<Value> = ops
            .as_array()
            .into_iter()
            .flatten()
            .map(|op| match op.as_object() {
                Some(m) => {
                    let sorted: std::collections::BTreeMap<&String, &Value> = m.iter().collect();
                    json!(sorted)
                }
                None => op.clone(),
            })
            .collect();
        let value = PatchAuditAnnotation {
            configuration: &self.hook.configuration,
            webhook: &self.hook.name,
            patch: ops,
            patch_type: "JSONPatch",
        };
        lock(self.record).request_audit_annotations.push((
            format!("patch.webhook.admission.k8s.io/{}", self.key),
            serde_json::to_string(&value).unwrap_or_default(),
        ));
    }

    /// `failed-open.mutation.webhook.admission.k8s.io/<key>`: the webhook that failed open.
    fn failed_open(&self) {
        lock(self.record).audit_annotations.push((
            format!("failed-open.mutation.webhook.admission.k8s.io/{}", self.key),
            self.hook.name.clone(),
        ));
    }
}

/// Keeps a webhook's warnings and audit annotations (`<webhook>/<key>`).
fn collect(record: &Mutex<Record>, hook: &Hook, resp: &review::Response) {
    let mut r = lock(record);
    r.warnings.extend(resp.warnings.iter().cloned());
    for (k, v) in &resp.audit_annotations {
        r.audit_annotations
            .push((format!("{}/{k}", hook.name), v.clone()));
    }
}

/// The other served versions of a custom resource (`EquivalentResourcesFor`).
pub(crate) fn equivalents(registry: &Registry, req: &Versioned) -> Vec<Versioned> {
    let Some(crd) = registry.lookup(&req.group, &req.resource) else {
        return Vec::new();
    };
    crd.versions
        .iter()
        .filter(|v| v.served && v.name != req.version)
        .map(|v| Versioned {
            group: req.group.clone(),
            version: v.name.clone(),
            kind: crd.kind.clone(),
            resource: req.resource.clone(),
            kind_group_version: None,
        })
        .collect()
}

/// Converts an object to another version of its custom resource.
pub(crate) async fn convert(
    registry: &Registry,
    obj: Option<&Value>,
    to: &Versioned,
) -> Result<Option<Value>, ApiError> {
    let Some(obj) = obj.filter(|o| o.is_object()) else {
        return Ok(obj.cloned());
    };
    let Some(crd) = registry.lookup(&to.group, &to.resource) else {
        return Ok(Some(obj.clone()));
    };
    let target = format!("{}/{}", to.group, to.version);
    let mut out = crd
        .converter
        .convert(vec![obj.clone()], &target, false)
        .await
        .map_err(|e| Status::internal(e.0))?;
    Ok(out.pop())
}
