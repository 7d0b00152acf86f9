//! `ValidatingAdmissionPolicy` admission (apiserver's `plugin/policy/validating` on
//! `policy/generic`): policies and bindings followed by two informers so matching is in memory
//! ([`Policies::run`]), and the dispatcher ([`Policies::validate`]): match constraints, binding
//! match resources, params and namespaces read from informers, match conditions, variables, validations with
//! their `Deny`/`Warn`/`Audit` actions, audit annotations, failure policy.
//!
//! The same plugin type follows `MutatingAdmissionPolicy`s ([`Sources::mutating`]); their
//! dispatcher is [`mutating`] (`Policies::mutate`), sharing matching, params, match conditions
//! and variables with the validating one.
//!
//! Submodules: [`compiled`] (a policy or binding with its expressions compiled), [`mutating`]
//! (mutations applied as apply configurations or JSON patches, reinvocation).
//!
//! Architecture Invariant: a request never reads policies or bindings from storage; it reads
//! the snapshot the informers last published. Params come from one informer per param kind
//! (from storage by key only until that informer has synced).

pub mod compiled;
pub mod mutating;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crd_core::{GroupResource, Status, StatusCause};
use crd_storage::{KeyValue, Pages, Store};
use serde_json::{Value, json};
use tokio::sync::watch;

use self::compiled::{Binding, MatchResources, Policy};
use super::webhook::matching::{self, Target};
use super::{Attributes, Record, error_text, lock};
use crate::controllers::informer::{Cache, Informer, Notification};
use crate::error::ApiError;
use crate::registry::Strategy;
use crate::registry::serving::Registry;

/// `celconfig.PerCallLimit`: the cost limit of one expression evaluation.
const PER_CALL_COST_LIMIT: i64 = 1_000_000;
/// `maxAuditAnnotationValueLength`.
const MAX_AUDIT_VALUE: usize = 10 * 1024;

/// Where policies and bindings are stored.
#[derive(Clone, Debug)]
pub struct Sources {
    /// Key prefix of `ValidatingAdmissionPolicy`s (with the trailing `/`).
    pub policies: String,
    /// Key prefix of `ValidatingAdmissionPolicyBinding`s.
    pub bindings: String,
}

fn key_root(id: crd_builtin::KindId) -> String {
    format!("{}/", crd_builtin::get(id).key_root)
}

impl Sources {
    /// The key roots of the built-in validating policy and binding kinds.
    pub fn builtin() -> Self {
        use crd_builtin::KindId;
        Sources {
            policies: key_root(KindId::ValidatingAdmissionPolicy),
            bindings: key_root(KindId::ValidatingAdmissionPolicyBinding),
        }
    }

    /// The key roots of the built-in mutating policy and binding kinds.
    pub fn mutating() -> Self {
        use crd_builtin::KindId;
        Sources {
            policies: key_root(KindId::MutatingAdmissionPolicy),
            bindings: key_root(KindId::MutatingAdmissionPolicyBinding),
        }
    }
}

/// A policy with the bindings that name it.
struct Hook {
    policy: Arc<Policy>,
    bindings: Vec<Arc<Binding>>,
}

/// The validating admission policy plugin.
pub struct Policies {
    store: Arc<dyn Store>,
    namespaces: Arc<dyn Strategy>,
    registry: Arc<Registry>,
    sources: Sources,
    snapshot: RwLock<Arc<Vec<Hook>>>,
    synced: watch::Sender<bool>,
    /// What `authorizer` in the policies' expressions asks.
    pub authorizer: super::authorizer::SharedAuthorizer,
    /// Params and namespaces served from informers, as upstream's listers serve them.
    listers: Arc<Listers>,
}

/// An informer's cache and whether it has synced.
type Lister = (Cache<Value>, watch::Receiver<bool>);

/// A binding's params (`[null]` without params), or its configuration error.
type Params = Result<Vec<Arc<Value>>, String>;

/// One informer per storage root a request reads (a param kind's, namespaces'), started by the
/// first request that needs it (once [`Policies::run`] has given the shutdown signal); until it
/// has synced, objects are read from storage. Informers are kept for the server's life, like
/// upstream's per-`paramKind` informers while a policy names the kind.
#[derive(Default)]
struct Listers {
    shutdown: std::sync::OnceLock<watch::Receiver<bool>>,
    roots: Mutex<std::collections::HashMap<String, Lister>>,
}

impl Listers {
    /// The synced cache of the objects under `root` (`<key root>/`), starting its informer on
    /// first use; `None` while it is not synced (or informers cannot run).
    fn synced(&self, store: &Arc<dyn Store>, root: &str) -> Option<Cache<Value>> {
        let shutdown = self.shutdown.get()?;
        let mut roots = self
            .roots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cache, synced)) = roots.get(root) {
            return (*synced.borrow()).then(|| cache.clone());
        }
        let (cache, synced) = roots.entry(root.to_string()).or_insert_with(|| {
            let mut informer = Informer::json(store.clone(), root, shutdown.clone());
            let entry = (informer.cache(), informer.synced());
            tokio::spawn(async move { while informer.next().await.is_some() {} });
            entry
        });
        (*synced.borrow()).then(|| cache.clone())
    }
}

/// A policy whose constraints match the request.
struct Matched<'h> {
    hook: &'h Hook,
    /// Where it matched and its bindings, or the policy's configuration error
    /// (`failed to configure policy: ...`).
    bound: Result<Bound<'h>, String>,
}

/// A matching policy's version and bindings.
struct Bound<'h> {
    /// The version the constraints matched (the request's, or an equivalent one).
    matched: super::Versioned,
    /// The bindings that match, in order, each with its params (`[null]` without params) or
    /// its configuration error (`failed to configure binding: ...`).
    bindings: Vec<(&'h Binding, Params)>,
}

/// What [`Policies::matching`] found.
struct Matching<'h> {
    matched: Vec<Matched<'h>>,
    /// `namespaceObject`: the request's namespace (null for cluster-scoped requests and
    /// namespaces themselves, or when no policy needs it).
    namespace: Value,
}

/// The `request` variable: the `AdmissionReview` request at the matched version.
fn request_value(
    attrs: &Attributes<'_>,
    matched: &super::Versioned,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    super::webhook::review::request("v1", "", attrs, matched, obj, old)
        .get("request")
        .cloned()
        .unwrap_or(Value::Null)
}

/// A failed validation, before the binding's actions apply.
struct Decision {
    message: String,
    reason: String,
    index: usize,
    /// How long the expression took (the metrics' `check_duration_seconds`).
    elapsed: Duration,
    /// The metrics' `error_type` (upstream's `ErrorType`: anything but an admission is
    /// `invalid_error` unless it is a compilation error; a plain denial included).
    error_type: &'static str,
}

/// What one (binding, param) evaluation produced.
#[derive(Default)]
struct Outcome {
    /// Failed validations (and evaluation errors under `failurePolicy: Fail`).
    denials: Vec<Decision>,
    /// Evaluation errors admitted under `failurePolicy: Ignore` (recorded as `allow`).
    ignored: Vec<Decision>,
    /// Audit annotations (key, value).
    annotations: Vec<(String, String)>,
}

/// `compile_error` for a compilation failure, else `invalid_error`.
fn error_type(compile: bool) -> &'static str {
    if compile {
        "compile_error"
    } else {
        "invalid_error"
    }
}

/// The first denial: the policy, the binding (none for a policy configuration error), the
/// message and the reason.
type Denial = (String, Option<String>, String, String);

impl Policies {
    /// The plugin, reading policies and bindings under `sources` and namespaces through their
    /// strategy; `registry` resolves custom `paramKind`s.
    pub fn new(
        store: Arc<dyn Store>,
        namespaces: Arc<dyn Strategy>,
        registry: Arc<Registry>,
        sources: Sources,
    ) -> Self {
        Policies {
            store,
            namespaces,
            registry,
            sources,
            snapshot: RwLock::new(Arc::new(Vec::new())),
            synced: watch::Sender::new(false),
            authorizer: super::authorizer::SharedAuthorizer::default(),
            listers: Arc::default(),
        }
    }

    /// This plugin reading params and namespaces through `other`'s informers (validating and
    /// mutating policies naming the same param kind share one informer of it).
    #[must_use]
    pub fn sharing_informers_of(mut self, other: &Policies) -> Self {
        self.listers = Arc::clone(&other.listers);
        self
    }

    /// Turns true once both informers have delivered their first list.
    pub fn synced(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    /// Whether no policy is bound now: a request then needs no admission attributes for this
    /// plugin (building them is a few thousand instructions on every write).
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    fn current(&self) -> Arc<Vec<Hook>> {
        self.snapshot
            .read()
            .map_or_else(|p| p.into_inner().clone(), |s| s.clone())
    }

    /// Follows policies and bindings and publishes a snapshot after every change.
    pub async fn run(self: Arc<Self>, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        let _ = self.listers.shutdown.set(shutdown.clone());
        let mut policies = Informer::new(
            self.store.clone(),
            self.sources.policies.clone(),
            Arc::new(|kv: &KeyValue| -> Option<Arc<Policy>> {
                let obj: Value = serde_json::from_slice(&kv.value).ok()?;
                Some(Arc::new(Policy::build(&obj)))
            }),
            shutdown.clone(),
        );
        let mut bindings = Informer::new(
            self.store.clone(),
            self.sources.bindings.clone(),
            Arc::new(|kv: &KeyValue| -> Option<Arc<Binding>> {
                let obj: Value = serde_json::from_slice(&kv.value).ok()?;
                Some(Arc::new(Binding::build(&obj)))
            }),
            shutdown,
        );
        let (p_cache, b_cache) = (policies.cache(), bindings.cache());
        let (mut p_synced, mut b_synced) = (false, false);
        loop {
            // (from the policy informer, whether it is the first list), `None` at shutdown.
            let n = tokio::select! {
                n = policies.next() => n.map(|n| (true, matches!(n, Notification::Synced))),
                n = bindings.next() => n.map(|n| (false, matches!(n, Notification::Synced))),
            };
            match n {
                None => return Ok(()),
                Some((true, true)) => p_synced = true,
                Some((false, true)) => b_synced = true,
                Some((_, false)) => {}
            }
            self.publish(&p_cache, &b_cache);
            if p_synced && b_synced {
                self.synced.send_replace(true);
            }
        }
    }

    fn publish(&self, p: &Cache<Arc<Policy>>, b: &Cache<Arc<Binding>>) {
        let mut by_policy: BTreeMap<String, Vec<Arc<Binding>>> = BTreeMap::new();
        for (_, binding) in b.list() {
            by_policy
                .entry(binding.policy_name.clone())
                .or_default()
                .push(Arc::clone(&binding));
        }
        let hooks: Vec<Hook> = p
            .list()
            .into_iter()
            .filter_map(|(_, policy)| {
                let bindings = by_policy.remove(&policy.name)?;
                Some(Hook {
                    policy: Arc::clone(&policy),
                    bindings,
                })
            })
            .collect();
        let snap = Arc::new(hooks);
        match self.snapshot.write() {
            Ok(mut s) => *s = snap,
            Err(p) => *p.into_inner() = snap,
        }
    }

    /// Finds the policies that apply to a request (`policyDispatcher.Dispatch` before its
    /// delegate): match constraints (at an equivalent version when `matchPolicy: Equivalent`),
    /// the namespace selector, then per binding its match resources and params. Configuration
    /// errors are kept in order, for the failure policy to decide.
    async fn matching<'h>(
        &self,
        hooks: &'h [Hook],
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Matching<'h>, ApiError> {
        let mut out = Matching {
            matched: Vec::new(),
            namespace: Value::Null,
        };
        if hooks.is_empty() || matching::is_exempt(&attrs.request.group, &attrs.request.resource) {
            return Ok(out);
        }
        let req = &attrs.request;
        let target = Target {
            operation: attrs.operation.as_str(),
            group: &req.group,
            version: &req.version,
            resource: &req.resource,
            subresource: attrs.subresource,
            namespace: &attrs.namespace,
        };
        let mut namespace: Option<Option<Value>> = None;
        for hook in hooks {
            let policy = &hook.policy;
            let configure = |e: String| Matched {
                hook,
                bound: Err(format!("failed to configure policy: {e}")),
            };
            let matched = match self.matched_version(&policy.constraints, &target, attrs, obj, old)
            {
                Ok(None) => continue,
                Ok(Some(v)) => v,
                Err(e) => {
                    out.matched.push(configure(e));
                    continue;
                }
            };
            let needs_namespace = policy.uses_namespace_object
                || policy.constraints.selects_namespaces()
                || hook.bindings.iter().any(|b| {
                    b.match_resources
                        .as_ref()
                        .is_some_and(MatchResources::selects_namespaces)
                });
            if needs_namespace && namespace.is_none() {
                namespace = Some(self.namespace_object(&target, obj).await?);
            }
            let ns = namespace.as_ref().and_then(Option::as_ref);
            match namespace_selected(&policy.constraints, &target, ns) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    out.matched.push(configure(e));
                    continue;
                }
            }
            let mut bindings = Vec::new();
            for binding in &hook.bindings {
                let bound = match &binding.match_resources {
                    None => Ok(true),
                    Some(m) => matches(m, &target, &attrs.name, obj, old)
                        .and_then(|yes| Ok(yes && namespace_selected(m, &target, ns)?)),
                };
                let params = match bound {
                    Ok(false) => continue,
                    Ok(true) => self.params(policy, binding, &attrs.namespace).await,
                    Err(e) => Err(e),
                };
                bindings.push((
                    binding.as_ref(),
                    params.map_err(|e| format!("failed to configure binding: {e}")),
                ));
            }
            out.matched.push(Matched {
                hook,
                bound: Ok(Bound { matched, bindings }),
            });
        }
        if !attrs.namespace.is_empty() && !is_namespace_request(attrs) {
            out.namespace = namespace.flatten().unwrap_or(Value::Null);
        }
        Ok(out)
    }

    /// Runs every bound policy that matches; every action is applied (warnings, audit
    /// annotations) and the request is refused with the first denial, as upstream's dispatcher
    /// does.
    pub async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
        record: &Mutex<Record>,
    ) -> Result<(), ApiError> {
        let hooks = self.current();
        let found = self.matching(&hooks, attrs, obj, old).await?;
        let req = &attrs.request;
        let mut request: Option<Value> = None;
        let mut authorizer: Option<crd_cel::Authorizer> = None;
        let mut denied: Option<Denial> = None;
        let mut deny = |policy: &Policy, binding: Option<&Binding>, message: String, reason| {
            if denied.is_none() {
                denied = Some((
                    policy.name.clone(),
                    binding.map(|b| b.name.clone()),
                    message,
                    reason,
                ));
            }
        };
        for m in &found.matched {
            let policy = &m.hook.policy;
            let bound = match &m.bound {
                Ok(b) => b,
                Err(e) => {
                    if !policy.fail_open {
                        deny(policy, None, e.clone(), String::new());
                    }
                    continue;
                }
            };
            let matched = &bound.matched;
            // `matchPolicy: Equivalent` matched another version: the policy sees the object
            // converted to it.
            let converted = if matched == req {
                None
            } else {
                Some((
                    super::webhook::convert(&self.registry, obj, matched).await?,
                    super::webhook::convert(&self.registry, old, matched).await?,
                ))
            };
            let (obj, old) = match &converted {
                None => (obj, old),
                Some((o, p)) => (o.as_ref(), p.as_ref()),
            };
            let build = || request_value(attrs, matched, obj, old);
            let own_request;
            let request: &Value = if !policy.uses_request {
                &Value::Null
            } else if converted.is_none() {
                request.get_or_insert_with(build)
            } else {
                own_request = build();
                &own_request
            };
            let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
            for (binding, params) in &bound.bindings {
                let params = match params {
                    Ok(p) => p,
                    Err(e) => {
                        if !policy.fail_open {
                            deny(policy, Some(binding), e.clone(), String::new());
                        }
                        continue;
                    }
                };
                for param in params {
                    let vars = Vars {
                        object: obj.unwrap_or(&Value::Null),
                        old: old.unwrap_or(&Value::Null),
                        request,
                        params: param.as_ref(),
                        namespace: &found.namespace,
                        authorizer: policy.uses_authorizer.then(|| {
                            &*authorizer.get_or_insert_with(|| self.authorizer.for_request(attrs))
                        }),
                    };
                    let outcome = evaluate(policy, &vars);
                    for d in &outcome.ignored {
                        crate::metrics::validating_admission_policy(
                            &policy.name,
                            &binding.name,
                            d.error_type,
                            "allow",
                            d.elapsed,
                        );
                    }
                    for d in outcome.denials {
                        for action in &binding.actions {
                            let observed = match action.as_str() {
                                "Deny" => "deny",
                                "Warn" => "warn",
                                "Audit" => "audit",
                                _ => continue,
                            };
                            crate::metrics::validating_admission_policy(
                                &policy.name,
                                &binding.name,
                                d.error_type,
                                observed,
                                d.elapsed,
                            );
                            match action.as_str() {
                                "Deny" => deny(policy, Some(binding), d.message.clone(), d.reason.clone()),
                                "Warn" => lock(record).warnings.push(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                    policy.name, binding.name, d.message
                                )),
                                "Audit" => lock(record).audit_annotations.push((
                                    "validation.policy.admission.k8s.io/validation_failure".into(),
                                    json!([{
                                        "message": d.message,
                                        "policy": binding.policy_name,
                                        "binding": binding.name,
                                        "expressionIndex": d.index,
                                        "validationActions": binding.actions,
                                    }])
                                    .to_string(),
                                )),
                                _ => {}
                            }
                        }
                    }
                    for (key, value) in outcome.annotations {
                        match annotations.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, vs)) if vs.contains(&value) => {}
                            Some((_, vs)) => vs.push(value),
                            None => annotations.push((key, vec![value])),
                        }
                    }
                }
            }
            let mut rec = lock(record);
            for (key, values) in annotations {
                rec.audit_annotations
                    .push((format!("{}/{key}", policy.name), values.join(", ")));
            }
        }
        let Some((policy, binding, message, reason)) = denied else {
            return Ok(());
        };
        Err(denial(attrs, &policy, binding.as_deref(), &message, &reason).into())
    }

    /// The version a policy's constraints match the request at: its own, else (with
    /// `matchPolicy: Equivalent`) another served version of the same custom resource; `None`
    /// when they do not match.
    fn matched_version(
        &self,
        m: &MatchResources,
        target: &Target<'_>,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Option<super::Versioned>, String> {
        if matches(m, target, &attrs.name, obj, old)? {
            return Ok(Some(attrs.request.clone()));
        }
        if !m.equivalent {
            return Ok(None);
        }
        for v in super::webhook::equivalents(&self.registry, &attrs.request) {
            let t = Target {
                version: &v.version,
                ..*target
            };
            if matches(m, &t, &attrs.name, obj, old)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// The namespace object the selector and `namespaceObject` see.
    async fn namespace_object(
        &self,
        target: &Target<'_>,
        obj: Option<&Value>,
    ) -> Result<Option<Value>, ApiError> {
        if !matching::namespace_selector_applies(target) {
            return Ok(None);
        }
        if matching::namespace_labels_from_object(target) {
            return Ok(obj.cloned());
        }
        let info = self.namespaces.info();
        let key = info.key(None, target.namespace);
        if let Some((root, _)) = key.rsplit_once('/')
            && let Some(cache) = self.listers.synced(&self.store, &format!("{root}/"))
        {
            return Ok(cache.get(&key).map(|ns| (*ns).clone()));
        }
        let gr = info.group_resource();
        let kv = self
            .store
            .get(&key)
            .await
            .map_err(|e| ApiError::storage(&gr, target.namespace, e))?;
        Ok(kv.and_then(|kv| serde_json::from_slice(&kv.value).ok()))
    }

    /// `CollectParams`: the params a binding selects (`[null]` without a `paramKind` or a
    /// `paramRef`), from the param kind's informer once it has synced, else from storage.
    async fn params(
        &self,
        policy: &Policy,
        binding: &Binding,
        namespace: &str,
    ) -> Result<Vec<Arc<Value>>, String> {
        let (Some((api_version, kind)), Some(pr)) = (&policy.param_kind, &binding.param_ref) else {
            return Ok(vec![Arc::new(Value::Null)]);
        };
        let Some((root, namespaced)) = self.param_root(api_version, kind) else {
            return Err(format!(
                "paramKind kind `&ParamKind{{APIVersion:{api_version},Kind:{kind},}}` not known"
            ));
        };
        let prefix = if namespaced {
            let ns = if pr.namespace.is_empty() {
                namespace
            } else {
                &pr.namespace
            };
            if ns.is_empty() {
                return Err(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                        .into(),
                );
            }
            format!("{root}/{ns}/")
        } else if !pr.namespace.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        } else {
            format!("{root}/")
        };
        let selector = if pr.name.is_empty() {
            match &pr.selector {
                Some(Ok(s)) => Some(s),
                Some(Err(e)) => return Err(e.clone()),
                None => return Err("one of name or selector must be provided".into()),
            }
        } else {
            None
        };
        // Only direct children: a cluster-wide prefix must not reach nested keys.
        let selected = |key: &str, p: &Value| {
            !key[prefix.len()..].contains('/')
                && selector.is_some_and(|s| s.matches_json(p.pointer("/metadata/labels")))
        };
        let mut params: Vec<Arc<Value>> =
            if let Some(cache) = self.listers.synced(&self.store, &format!("{root}/")) {
                if selector.is_some() {
                    cache
                        .under(&prefix)
                        .into_iter()
                        .filter(|(k, p)| selected(k, p))
                        .map(|(_, p)| p)
                        .collect()
                } else {
                    cache
                        .get(&format!("{prefix}{}", pr.name))
                        .into_iter()
                        .collect()
                }
            } else if selector.is_some() {
                let mut found = Vec::new();
                let mut pages = Pages::latest(self.store.as_ref(), prefix.clone(), 500);
                while let Some(page) = pages.next_page().await.map_err(|e| e.to_string())? {
                    for kv in page {
                        if let Some(p) = crate::controllers::informer::decode_json(&kv)
                            && selected(&kv.key, &p)
                        {
                            found.push(Arc::new(p));
                        }
                    }
                }
                found
            } else {
                let kv = self
                    .store
                    .get(&format!("{prefix}{}", pr.name))
                    .await
                    .map_err(|e| e.to_string())?;
                kv.and_then(|kv| crate::controllers::informer::decode_json(&kv))
                    .map(Arc::new)
                    .into_iter()
                    .collect()
            };
        if params.is_empty() {
            if pr.deny_when_missing {
                return Err(
                    "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
                );
            }
            return Ok(Vec::new());
        }
        for p in &mut params {
            if p.get("apiVersion").is_none() || p.get("kind").is_none() {
                let m = Arc::make_mut(p);
                if let Some(m) = m.as_object_mut() {
                    m.entry("apiVersion").or_insert_with(|| json!(api_version));
                    m.entry("kind").or_insert_with(|| json!(kind));
                }
            }
        }
        Ok(params)
    }

    /// The storage root and scope of a `paramKind`: a built-in kind or a custom resource.
    fn param_root(&self, api_version: &str, kind: &str) -> Option<(String, bool)> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        if let Some(k) = crd_builtin::KINDS
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
        {
            return Some((k.key_root.to_string(), k.namespaced()));
        }
        // The group's CRDs only: this runs on every matched request.
        self.registry
            .in_group(group)
            .into_iter()
            .find(|c| c.kind == kind && c.served_version(version).is_some())
            .map(|c| {
                (
                    c.key_root(),
                    c.scope == crd_core::validation::Scope::Namespaced,
                )
            })
    }
}

fn is_namespace_request(attrs: &Attributes<'_>) -> bool {
    attrs.request.group.is_empty() && attrs.request.resource == "namespaces"
}

/// `Matches` of `policy/generic/matching` but the namespace selector: the object selector,
/// excluded rules, then resource rules (an empty list does not constrain a binding's match
/// resources). `Err` is a configuration error (a selector that does not parse).
fn matches(
    m: &MatchResources,
    target: &Target<'_>,
    name: &str,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> Result<bool, String> {
    let rule_matches = |(rule, names): &(matching::Rule, Vec<String>)| {
        matching::rule_matches(rule, target)
            && (names.is_empty() || names.iter().any(|n| n == name))
    };
    if m.exclude.iter().any(rule_matches) {
        return Ok(false);
    }
    if !(m.rules.is_empty() || m.rules.iter().any(rule_matches)) {
        return Ok(false);
    }
    let obj_sel = m.object_selector.as_ref().map_err(Clone::clone)?;
    Ok(matching::object_selector_matches(obj_sel, obj, old))
}

/// The namespace selector of match resources, on the request's namespace object.
fn namespace_selected(
    m: &MatchResources,
    target: &Target<'_>,
    namespace: Option<&Value>,
) -> Result<bool, String> {
    let sel = m.namespace_selector.as_ref().map_err(Clone::clone)?;
    Ok(sel.is_empty()
        || !matching::namespace_selector_applies(target)
        || sel.matches_json(namespace.and_then(|n| n.pointer("/metadata/labels"))))
}

/// The variables one evaluation binds.
struct Vars<'a> {
    object: &'a Value,
    old: &'a Value,
    request: &'a Value,
    params: &'a Value,
    namespace: &'a Value,
    /// The `authorizer` variable (`None` binds null: the policy never names it).
    authorizer: Option<&'a crd_cel::Authorizer>,
}

/// Binds the policy variables, each pruned to what the policy reads of it.
fn bind(policy: &Policy, v: &Vars<'_>, variables: &Value) -> crd_cel::Bindings {
    let mut b = crd_cel::Bindings::new(&[
        ("object", &policy.reads_object.prune(v.object)),
        ("oldObject", &policy.reads_old_object.prune(v.old)),
        ("request", &policy.reads_request.prune(v.request)),
        ("params", &policy.reads_params.prune(v.params)),
        (
            "namespaceObject",
            &policy.reads_namespace.prune(v.namespace),
        ),
        ("variables", variables),
        ("authorizer", &Value::Null),
    ]);
    if let Some(a) = v.authorizer {
        b.set_authorizer("authorizer", a);
    }
    b
}

/// A policy's expressions ready to evaluate for one param: the variables bound, and the
/// variables that failed with their errors.
struct Prepared {
    bound: crd_cel::Bindings,
    /// (`no such key: <name>`, the variable's own error).
    failed: Vec<(String, String)>,
}

impl Prepared {
    /// An expression reaching a failed variable fails with the variable's error.
    fn through_variables(&self, e: String) -> String {
        self.failed
            .iter()
            .find(|(missing, _)| *missing == e)
            .map_or(e, |(_, cause)| cause.clone())
    }
}

/// Match conditions, then variables (the part of an evaluation validating and mutating
/// policies share). `Ok(None)`: a condition is false; `Err`: a condition failed to evaluate
/// (upstream's text, for the failure policy to decide, and whether it failed to compile).
fn prepare(policy: &Policy, v: &Vars<'_>) -> Result<Option<Prepared>, (String, bool)> {
    let mut variables = serde_json::Map::new();
    // Match conditions: all must be true; errors decide by the failure policy.
    let mut bound = bind(policy, v, &Value::Object(serde_json::Map::new()));
    if !super::match_conditions(&policy.match_conditions, &bound, PER_CALL_COST_LIMIT)? {
        return Ok(None);
    }
    // Variables, in order; each sees the ones before it. A variable that fails is left out, so
    // an expression reaching it fails with the variable's error (upstream evaluates them
    // lazily, with the same outcome).
    let mut failed: Vec<(String, String)> = Vec::new();
    for (name, expr) in &policy.variables {
        let value = match expr {
            Ok(e) => e
                .eval_with(&bound, PER_CALL_COST_LIMIT)
                .map_err(|e| error_text(&e)),
            Err(e) => Err(format!(
                "composited variable \"{name}\" fails to compile: {e}"
            )),
        };
        match value {
            Ok(v) => {
                variables.insert(name.clone(), v);
                bound.set("variables", &Value::Object(variables.clone()));
            }
            Err(e) => failed.push((format!("no such key: {name}"), e)),
        }
    }
    Ok(Some(Prepared { bound, failed }))
}

/// Evaluates a policy for one param: match conditions, variables, validations, audit
/// annotations (`validator.Validate`).
fn evaluate(policy: &Policy, v: &Vars<'_>) -> Outcome {
    let mut out = Outcome::default();
    let error = |out: &mut Outcome, index, message: String, started: Instant, compile: bool| {
        let d = Decision {
            message,
            reason: String::new(),
            index,
            elapsed: started.elapsed(),
            error_type: error_type(compile),
        };
        if policy.fail_open {
            out.ignored.push(d);
        } else {
            out.denials.push(d);
        }
    };
    let started = Instant::now();
    let prepared = match prepare(policy, v) {
        Ok(Some(p)) => p,
        Ok(None) => return out,
        Err((e, compile)) => {
            error(&mut out, 0, e, started, compile);
            return out;
        }
    };
    let bound = &prepared.bound;
    let through_variables = |e: String| prepared.through_variables(e);
    for (i, val) in policy.validations.iter().enumerate() {
        let started = Instant::now();
        let result = match &val.expression {
            Ok(e) => e
                .eval_bool_with(bound, PER_CALL_COST_LIMIT)
                .map_err(|e| (through_variables(error_text(&e)), false)),
            Err(e) => Err((format!("compilation failed: {e}"), true)),
        };
        match result {
            Ok(true) => {}
            Ok(false) => {
                let from_expression = val.message_expression.as_ref().and_then(|me| {
                    me.as_ref()
                        .ok()?
                        .eval_with(bound, PER_CALL_COST_LIMIT)
                        .ok()?
                        .as_str()
                        .map(str::trim)
                        .filter(|m| !m.is_empty() && !m.contains('\n'))
                        .map(String::from)
                });
                let message = from_expression.unwrap_or_else(|| {
                    if val.message.is_empty() {
                        format!("failed expression: {}", val.source)
                    } else {
                        val.message.clone()
                    }
                });
                out.denials.push(Decision {
                    message,
                    reason: val.reason.clone(),
                    index: i,
                    elapsed: started.elapsed(),
                    error_type: error_type(false),
                });
            }
            Err((e, compile)) => error(
                &mut out,
                i,
                format!("expression '{}' resulted in error: {e}", val.source),
                started,
                compile,
            ),
        }
    }
    for (key, expr) in &policy.audit_annotations {
        let started = Instant::now();
        let r = match expr {
            Ok(e) => e
                .eval_with(bound, PER_CALL_COST_LIMIT)
                .map_err(|e| (through_variables(error_text(&e)), false)),
            Err(e) => Err((format!("compilation failed: {e}"), true)),
        };
        match r {
            Ok(Value::String(s)) => {
                let mut s = s;
                if s.len() > MAX_AUDIT_VALUE {
                    let mut cut = MAX_AUDIT_VALUE;
                    while !s.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    s.truncate(cut);
                }
                out.annotations.push((key.clone(), s));
            }
            Ok(Value::Null) => {}
            Ok(_) => error(
                &mut out,
                0,
                format!(
                    "valueExpression '{key}' resulted in error: valueExpression must evaluate to a string or null"
                ),
                started,
                false,
            ),
            Err((e, compile)) => error(
                &mut out,
                0,
                format!("valueExpression '{key}' resulted in error: {e}"),
                started,
                compile,
            ),
        }
    }
    out
}

/// The refusal: `admission.NewForbidden` with the decision's reason (default `Invalid`) and its
/// code, and the message as a cause.
fn denial(
    attrs: &Attributes<'_>,
    policy: &str,
    binding: Option<&str>,
    message: &str,
    reason: &str,
) -> Status {
    let message = match binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{policy}' with binding '{b}' denied request: {message}"
        ),
        None => format!("ValidatingAdmissionPolicy '{policy}' denied request: {message}"),
    };
    let gr = GroupResource::new(&attrs.request.group, &attrs.request.resource);
    let mut status = Status::forbidden(&gr, &attrs.name, &message);
    let reason = if reason.is_empty() { "Invalid" } else { reason };
    status.code = match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    status.reason = reason.to_string();
    if let Some(d) = status.details.as_mut() {
        d.causes.push(StatusCause {
            reason: String::new(),
            message,
            field: String::new(),
        });
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target<'a>(op: &'a str, resource: &'a str, sub: &'a str, ns: &'a str) -> Target<'a> {
        Target {
            operation: op,
            group: "",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    #[test]
    fn match_resources_decide_as_upstream() {
        let cm = json!({"metadata": {"name": "a", "labels": {"team": "x"}}});
        let rules = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]);
        // (match resources, target, object name, matched)
        let cases = [
            (
                json!({"resourceRules": rules}),
                target("CREATE", "configmaps", "", "d"),
                "a",
                true,
            ),
            (
                json!({"resourceRules": rules}),
                target("UPDATE", "configmaps", "", "d"),
                "a",
                false,
            ),
            (
                json!({"resourceRules": rules}),
                target("CREATE", "secrets", "", "d"),
                "a",
                false,
            ),
            // An empty rule list does not constrain (a binding's match resources).
            (json!({}), target("CREATE", "secrets", "", "d"), "a", true),
            (
                json!({"resourceRules": rules, "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"], "resourceNames": ["a"]}]}),
                target("CREATE", "configmaps", "", "d"),
                "a",
                false,
            ),
            (
                json!({"resourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"], "resourceNames": ["b"]}]}),
                target("CREATE", "configmaps", "", "d"),
                "a",
                false,
            ),
            (
                json!({"resourceRules": rules, "objectSelector": {"matchLabels": {"team": "x"}}}),
                target("CREATE", "configmaps", "", "d"),
                "a",
                true,
            ),
            (
                json!({"resourceRules": rules, "objectSelector": {"matchLabels": {"team": "y"}}}),
                target("CREATE", "configmaps", "", "d"),
                "a",
                false,
            ),
        ];
        for (m, t, name, want) in cases {
            let got = matches(&MatchResources::from_json(&m), &t, name, Some(&cm), None);
            assert_eq!(got, Ok(want), "{m} {t:?}");
        }
        let m = MatchResources::from_json(
            &json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
        );
        let prod = json!({"metadata": {"labels": {"env": "prod"}}});
        let dev = json!({"metadata": {"labels": {"env": "dev"}}});
        let t = target("CREATE", "configmaps", "", "d");
        assert_eq!(namespace_selected(&m, &t, Some(&prod)), Ok(true));
        assert_eq!(namespace_selected(&m, &t, Some(&dev)), Ok(false));
        // Cluster-scoped requests other than namespaces are not subject to it.
        let cluster = target("CREATE", "persistentvolumes", "", "");
        assert_eq!(namespace_selected(&m, &cluster, None), Ok(true));
    }

    #[test]
    fn evaluation_messages_and_failure_policy() {
        let policy = |fail: &str, validations: Value| {
            Policy::build(&json!({"metadata": {"name": "p"}, "spec": {
                "failurePolicy": fail,
                "variables": [
                    {"name": "n", "expression": "object.data.size()"},
                    {"name": "bad", "expression": "object.missing"},
                ],
                "validations": validations,
            }}))
        };
        let obj = json!({"data": {"a": "1", "b": "2"}});
        let params = json!({"data": {"max": "1"}});
        let vars = Vars {
            object: &obj,
            old: &Value::Null,
            request: &Value::Null,
            params: &params,
            namespace: &Value::Null,
            authorizer: None,
        };
        // (failure policy, validations, denial messages and reasons)
        let cases = [
            ("Fail", json!([{"expression": "variables.n < 5"}]), vec![]),
            (
                "Fail",
                json!([{"expression": "variables.n <= int(params.data.max)"}]),
                vec![("failed expression: variables.n <= int(params.data.max)", "")],
            ),
            (
                "Fail",
                json!([{"expression": "variables.n < 1", "message": "too big", "reason": "Forbidden"}]),
                vec![("too big", "Forbidden")],
            ),
            (
                "Fail",
                json!([{"expression": "variables.n < 1", "message": "m", "messageExpression": "'n=' + string(variables.n)"}]),
                vec![("n=2", "")],
            ),
            // A messageExpression that fails falls back to the message.
            (
                "Fail",
                json!([{"expression": "variables.n < 1", "message": "m", "messageExpression": "object.missing"}]),
                vec![("m", "")],
            ),
            (
                "Fail",
                json!([{"expression": "object.missing == 1"}]),
                vec![(
                    "expression 'object.missing == 1' resulted in error: no such key: missing",
                    "",
                )],
            ),
            (
                "Ignore",
                json!([{"expression": "object.missing == 1"}]),
                vec![],
            ),
            // A failing variable fails the expressions that reach it, with its own error.
            (
                "Fail",
                json!([{"expression": "variables.bad == 1"}, {"expression": "true || variables.bad == 1"}]),
                vec![(
                    "expression 'variables.bad == 1' resulted in error: no such key: missing",
                    "",
                )],
            ),
        ];
        for (fail, validations, want) in cases {
            let out = evaluate(&policy(fail, validations.clone()), &vars);
            let got: Vec<(&str, &str)> = out
                .denials
                .iter()
                .map(|d| (d.message.as_str(), d.reason.as_str()))
                .collect();
            assert_eq!(got, want, "{fail} {validations}");
        }
    }

    /// A match condition that fails to evaluate denies (under `Fail`) with the CEL filter's
    /// text, several aggregated as upstream's matcher does; a false one skips the policy.
    #[test]
    fn match_condition_errors_are_worded_as_upstream_s_matcher() {
        let policy = |conditions: Value| {
            Policy::build(&json!({"metadata": {"name": "p"}, "spec": {
                "failurePolicy": "Fail",
                "matchConditions": conditions,
                "validations": [{"expression": "false", "message": "denied"}],
            }}))
        };
        let obj = json!({"metadata": {"name": "x"}});
        let vars = Vars {
            object: &obj,
            old: &Value::Null,
            request: &Value::Null,
            params: &Value::Null,
            namespace: &Value::Null,
            authorizer: None,
        };
        let cases = [
            (
                json!([{"name": "not-exempt", "expression": "!('exempt' in object.metadata.labels)"}]),
                vec![
                    "expression '!('exempt' in object.metadata.labels)' resulted in error: no such key: labels",
                ],
            ),
            (
                json!([
                    {"name": "a", "expression": "object.spec.x == 1"},
                    {"name": "b", "expression": "object.metadata.name == 'x'"},
                    {"name": "c", "expression": "object.data.y == 2"},
                ]),
                vec![
                    "[expression 'object.spec.x == 1' resulted in error: no such key: spec, expression 'object.data.y == 2' resulted in error: no such key: data]",
                ],
            ),
            // A false condition skips the policy, errors or not.
            (
                json!([
                    {"name": "a", "expression": "object.spec.x == 1"},
                    {"name": "b", "expression": "object.metadata.name == 'y'"},
                ]),
                vec![],
            ),
            (
                json!([{"name": "a", "expression": "object.metadata.name == 'x'"}]),
                vec!["denied"],
            ),
        ];
        for (conditions, want) in cases {
            let out = evaluate(&policy(conditions.clone()), &vars);
            let got: Vec<&str> = out.denials.iter().map(|d| d.message.as_str()).collect();
            assert_eq!(got, want, "{conditions}");
        }
    }
}
