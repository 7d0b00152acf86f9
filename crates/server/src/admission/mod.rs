//! Admission: what a write passes between decoding and storage, as kube-apiserver's plugin
//! chain runs it. Mutating admission ([`Admission::mutate`]: mutating admission policies, then
//! mutating webhooks, then once more the `IfNeeded` ones when anything changed) runs on the
//! decoded, defaulted object before the strategy prepares and validates it; validating
//! admission ([`Admission::admit_create`]: `NamespaceLifecycle`, then [`Admission::validate`]:
//! validating admission policies, then validating webhooks) runs after validation, just before
//! the storage write.
//!
//! Main types: [`Admission`] (the chain), [`Attributes`] (what a plugin knows about a request),
//! [`Record`] (warnings and audit annotations plugins leave); [`webhook`] holds the webhook
//! plugins, [`policy`] the validating and mutating admission policy plugins, [`authorizer`] the
//! `authorizer` variable their expressions share.
//!
//! Architecture Invariant: handlers call admission through [`Admission`] only; they never ask
//! which plugins exist.

pub mod authorizer;
pub mod policy;
pub mod webhook;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crd_core::Status;
use crd_storage::Store;
use serde_json::Value;

use crate::auth::User;
use crate::error::ApiError;
use crate::registry::serving::Registry;
use crate::registry::{Strategy, meta};

pub use webhook::review::Versioned;

/// The operation being admitted (`admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// POST (and server-side apply of a missing object).
    Create,
    /// PUT and PATCH, of the object or a subresource.
    Update,
    /// DELETE.
    Delete,
    /// CONNECT (not served; rules may still name it).
    Connect,
}

impl Operation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What admission plugins know about a request (`admission.Attributes`).
#[derive(Clone, Debug)]
pub struct Attributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// The request's group, version, kind and resource.
    pub request: Versioned,
    /// The subresource (`status`, `scale`; "" for the object itself).
    pub subresource: &'a str,
    /// The object's name ("" while `generateName` has not produced one).
    pub name: String,
    /// The namespace ("" for cluster-scoped objects; a namespace's own name for namespaces).
    pub namespace: String,
    /// The authenticated user.
    pub user: &'a User,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The verb's options object (`CreateOptions`, `UpdateOptions`, `PatchOptions`,
    /// `DeleteOptions`).
    pub options: Value,
}

impl<'a> Attributes<'a> {
    /// The same request for an object of another kind than the resource's: what an answered
    /// subresource receives (`api_version` `policy/v1` and `kind` Eviction on core `pods`).
    #[must_use]
    pub fn of_kind(mut self, api_version: &str, kind: &str) -> Self {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.request.kind = kind.to_string();
        self.request.kind_group_version = (group != self.request.group
            || version != self.request.version)
            .then(|| (group.to_string(), version.to_string()));
        self
    }

    /// The attributes of a request on the resource `info` describes. A namespace's attributes
    /// carry its own name as their namespace, as upstream's do.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        info: &crate::registry::ResourceInfo,
        operation: Operation,
        subresource: &'a str,
        name: &str,
        namespace: &str,
        user: &'a User,
        dry_run: bool,
        options: Value,
    ) -> Self {
        let namespace = if info.group.is_empty() && info.resource == "namespaces" {
            name
        } else if info.namespaced() {
            namespace
        } else {
            ""
        };
        Attributes {
            operation,
            request: Versioned {
                group: info.group.clone(),
                version: info.version.clone(),
                kind: info.kind.clone(),
                resource: info.resource.clone(),
                kind_group_version: None,
            },
            subresource,
            name: name.to_string(),
            namespace: namespace.to_string(),
            user,
            dry_run,
            options,
        }
    }
}

/// What admission plugins leave on a request besides their verdict.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Warnings for `Warning` headers.
    pub warnings: Vec<String>,
    /// Audit annotations (`<webhook>/<key>`, value), for the audit log.
    pub audit_annotations: Vec<(String, String)>,
    /// Audit annotations logged only at level `Request` and above (a mutating webhook's patch,
    /// upstream's `AddAnnotationWithLevel(..., LevelRequest)`).
    pub request_audit_annotations: Vec<(String, String)>,
}

/// The admission chain.
pub struct Admission {
    store: Arc<dyn Store>,
    namespaces: Arc<dyn Strategy>,
    /// Namespaces whose deletion was admitted here recently, until when: `NamespaceLifecycle`
    /// reads them consistently (upstream's `forceLiveLookupCache`).
    force_live: Mutex<HashMap<String, std::time::Instant>>,
    /// What each namespace read lately said of its deletion ([`DeletionMemo`]).
    deleting: DeletionMemo,
    /// The webhook plugins; their configuration informers run under the controllers'
    /// supervisor ([`webhook::Webhooks::run`]).
    pub webhooks: Arc<webhook::Webhooks>,
    /// The validating admission policy plugin; its informers run under the controllers'
    /// supervisor ([`policy::Policies::run`]).
    pub policies: Arc<policy::Policies>,
    /// The mutating admission policy plugin (informers likewise).
    pub mutating_policies: Arc<policy::Policies>,
}

impl Admission {
    /// The chain, reading namespaces through their strategy. `sources` are where webhook
    /// configurations are stored; `service_addresses` (`--service-address`) reach webhook
    /// services, as for conversion webhooks.
    pub fn new(
        store: Arc<dyn Store>,
        namespaces: Arc<dyn Strategy>,
        registry: Arc<Registry>,
        sources: webhook::Sources,
        service_addresses: HashMap<String, SocketAddr>,
    ) -> Self {
        let policies = Arc::new(policy::Policies::new(
            store.clone(),
            namespaces.clone(),
            registry.clone(),
            policy::Sources::builtin(),
        ));
        let mutating_policies = Arc::new(
            policy::Policies::new(
                store.clone(),
                namespaces.clone(),
                registry.clone(),
                policy::Sources::mutating(),
            )
            .sharing_informers_of(&policies),
        );
        let webhooks = Arc::new(webhook::Webhooks::new(
            store.clone(),
            namespaces.clone(),
            registry,
            sources,
            service_addresses,
        ));
        Admission {
            store,
            namespaces,
            force_live: Mutex::new(HashMap::new()),
            deleting: DeletionMemo::default(),
            webhooks,
            policies,
            mutating_policies,
        }
    }

    /// Binds the `authorizer` variable of admission expressions to the server's authorizer
    /// (once, at start-up).
    pub fn set_authorizer(&self, authorizer: &crate::authz::Authorizer) {
        self.policies.authorizer.set(authorizer.clone());
        self.mutating_policies.authorizer.set(authorizer.clone());
        self.webhooks.authorizer.set(authorizer.clone());
    }

    /// Whether any mutating plugin is configured now: when none is, [`Admission::mutate`] would
    /// change nothing, and a caller may skip building its attributes.
    pub fn mutates(&self) -> bool {
        !self.mutating_policies.is_empty() || !self.webhooks.none(true)
    }

    /// Whether any validating plugin is configured now: when none is, [`Admission::validate`]
    /// of a create would admit it unseen, and a caller may skip building its attributes.
    pub fn validates(&self) -> bool {
        !self.policies.is_empty() || !self.webhooks.none(false)
    }

    /// Mutating admission of `obj` (`None` for DELETE, with the stored object as `old`);
    /// `schema` types the object for apply configurations. Warnings and audit annotations go
    /// to `record`, also when admission fails. Mutating admission policies run before mutating
    /// webhooks; when either changed the object, both run a second pass for their `IfNeeded`
    /// members (upstream's reinvocation handler). Returns whether the object changed, in which
    /// case the caller admits it again (pruning, defaulting) before preparing and validating it.
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        mut obj: Option<&mut Value>,
        old: Option<&Value>,
        schema: &crd_merge::apply::Schema,
        record: &Mutex<Record>,
    ) -> Result<bool, ApiError> {
        let mut policies = policy::mutating::Reinvocation::default();
        let mut webhooks = webhook::Reinvocation::default();
        let mut changed = false;
        for reinvoking in [false, true] {
            if reinvoking && !changed {
                break;
            }
            changed |= self
                .mutating_policies
                .mutate(
                    attrs,
                    obj.as_deref_mut(),
                    old,
                    schema,
                    &mut policies,
                    reinvoking,
                )
                .await?;
            changed |= self
                .webhooks
                .mutate(
                    attrs,
                    obj.as_deref_mut(),
                    old,
                    record,
                    &mut webhooks,
                    reinvoking,
                )
                .await?;
        }
        Ok(changed)
    }

    /// Validating admission (after the strategy's validation, before the storage write).
    pub async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
        record: &Mutex<Record>,
    ) -> Result<(), ApiError> {
        let ns = self.namespaces.info();
        if attrs.operation == Operation::Delete
            && attrs.subresource.is_empty()
            && attrs.request.group == ns.group
            && attrs.request.resource == ns.resource
        {
            // `NamespaceLifecycle`'s immortal namespaces.
            if IMMORTAL_NAMESPACES.contains(&attrs.name.as_str()) {
                return Err(Status::forbidden(
                    &ns.group_resource(),
                    &attrs.name,
                    "this namespace may not be deleted",
                )
                .into());
            }
            let now = std::time::Instant::now();
            let mut live = self
                .force_live
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            live.retain(|_, until| *until > now);
            live.insert(attrs.name.clone(), now + FORCE_LIVE_LOOKUP);
        }
        self.policies.validate(attrs, obj, old, record).await?;
        self.webhooks.validate(attrs, obj, old, record).await
    }

    /// Admits the creation of `obj` through `strategy` (`NamespaceLifecycle`, first of the
    /// mutating plugins upstream: before the name is generated, so a refusal names the object by
    /// its `generateName`, or `Unknown`, as `admission.NewForbidden` does).
    pub async fn admit_create(&self, strategy: &dyn Strategy, obj: &Value) -> Result<(), ApiError> {
        if strategy.info().namespaced() {
            let namespace = meta::namespace(obj);
            let name = match (meta::name(obj), meta::meta_str(obj, "generateName")) {
                ("", "") => "Unknown",
                ("", generate) => generate,
                (name, _) => name,
            };
            let live = self
                .force_live
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(namespace)
                .is_some_and(|until| *until > std::time::Instant::now());
            namespace_lifecycle(
                self.store.as_ref(),
                &self.deleting,
                self.namespaces.as_ref(),
                strategy,
                namespace,
                name,
                live,
            )
            .await?;
        }
        Ok(())
    }
}

/// [`namespace_is_deleting`] of the namespaces read lately, by key, with the modification
/// revision of the bytes that gave it: a namespace's stored bytes at one revision never change,
/// so the answer is reused until the namespace is written again (every namespaced create reads
/// its namespace, and decoding it was about 2% of a create's instructions). Bounded: the memo
/// forgets everything once it holds [`DeletionMemo::CAPACITY`] namespaces.
#[derive(Default)]
struct DeletionMemo(Mutex<HashMap<String, (crd_storage::Revision, bool)>>);

impl DeletionMemo {
    /// The most namespaces remembered at once.
    const CAPACITY: usize = 4096;

    /// Whether the namespace stored as `kv` is being deleted.
    fn is_deleting(&self, kv: &crd_storage::KeyValue) -> bool {
        let mut memo = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&(revision, deleting)) = memo.get(&kv.key)
            && revision == kv.mod_revision
        {
            return deleting;
        }
        let deleting = namespace_is_deleting(&kv.value);
        if memo.len() >= Self::CAPACITY && !memo.contains_key(&kv.key) {
            memo.clear();
        }
        memo.insert(kv.key.clone(), (kv.mod_revision, deleting));
        deleting
    }
}

/// `matchConditions` compiled: name, source and the expression (or its compilation error).
pub(crate) type MatchConditions = [(String, String, Result<crd_cel::Expression, String>)];

/// Evaluates match conditions as upstream's matcher (shared by policies and webhooks):
/// `Ok(false)` as soon as one is false; otherwise the conditions that failed, each worded as the
/// CEL filter words it (`expression '<source>' resulted in error: ...`, `compilation error:
/// ...`), aggregated as `utilerrors.NewAggregate` (one message alone, several as `[a, b]`,
/// repeats once), with whether one failed to compile.
pub(crate) fn match_conditions(
    conditions: &MatchConditions,
    vars: &crd_cel::Bindings,
    cost_limit: i64,
) -> Result<bool, (String, bool)> {
    let (mut errors, mut compile) = (Vec::<String>::new(), false);
    for (_, source, expr) in conditions {
        let error = match expr {
            Ok(e) => match e.eval_bool_with(vars, cost_limit) {
                Ok(true) => continue,
                Ok(false) => return Ok(false),
                Err(e) => format!(
                    "expression '{source}' resulted in error: {}",
                    error_text(&e)
                ),
            },
            Err(e) => {
                compile = true;
                format!("compilation error: {e}")
            }
        };
        if !errors.contains(&error) {
            errors.push(error);
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err((errors.swap_remove(0), compile)),
        _ => Err((format!("[{}]", errors.join(", ")), compile)),
    }
}

/// An expression's evaluation error in cel-go's words.
pub(crate) fn error_text(e: &crd_cel::ExpressionError) -> String {
    match e {
        crd_cel::ExpressionError::CostLimit => {
            "operation cancelled: actual cost limit exceeded".into()
        }
        crd_cel::ExpressionError::Runtime(m) => m.clone(),
        crd_cel::ExpressionError::NotBool => "cel expression must evaluate to a bool".into(),
    }
}

/// A request's admission record, locked (a panicked holder's record stays usable).
pub(crate) fn lock(record: &Mutex<Record>) -> std::sync::MutexGuard<'_, Record> {
    record
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether the stored namespace `bytes` are being deleted: a non-empty string
/// `metadata.deletionTimestamp`, as [`meta::is_deleting`] of the decoded object says; bytes that
/// do not decode are not (as a `Value::Null` was not). Every namespaced create reads its
/// namespace; decoding only this field skips building the namespace's whole object (managed
/// fields, labels, status) as a `Value` each time.
fn namespace_is_deleting(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Lookup>(bytes)
        .ok()
        .and_then(|Lookup(t)| t)
        .is_some_and(|t| t.as_str().is_some_and(|t| !t.is_empty()))
}

/// `metadata.deletionTimestamp` of a JSON object, found as `Value::get` finds it: in objects only
/// (a derived struct would also accept an array), other fields skipped without building them.
struct Lookup(Option<Value>);

impl<'de> serde::Deserialize<'de> for Lookup {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LookupVisitor("metadata", &["deletionTimestamp"]))
            .map(Lookup)
    }
}

/// Finds the value at a path of object keys, its first key and the rest (the last of repeated
/// keys, as a `Value` keeps).
struct LookupVisitor(&'static str, &'static [&'static str]);

impl<'de> serde::de::Visitor<'de> for LookupVisitor {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is_field) = map.next_key_seed(IsKey(self.0))? {
            if !is_field {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            found = match self.1.split_first() {
                None => Some(map.next_value::<Value>()?),
                Some((field, rest)) => map.next_value_seed(LookupVisitor(field, rest))?,
            };
        }
        Ok(found)
    }
}

/// Whether an object key is the one named, compared where it lies in the input (no copy).
struct IsKey(&'static str);

impl<'de> serde::de::DeserializeSeed<'de> for IsKey {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for IsKey {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for LookupVisitor {
    type Value = Option<Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// The namespaces kube-apiserver's `NamespaceLifecycle` plugin refuses to delete.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// How long a namespace whose deletion was admitted is read consistently (upstream's
/// `forceLiveLookupTTL`).
const FORCE_LIVE_LOOKUP: std::time::Duration = std::time::Duration::from_secs(30);

/// The `NamespaceLifecycle` admission check: the namespace must exist and not be terminating.
///
/// As upstream's plugin reads its namespace informer and makes a live read only when the
/// namespace is not there (or was deleted recently: `live`), the namespace is read first at any
/// freshness (the watch cache answers without waiting for the store's current revision, which
/// under many concurrent writers kept every create waiting for the cache to catch up), then
/// consistently when absent (a namespace created just before).
async fn namespace_lifecycle(
    store: &dyn Store,
    deleting: &DeletionMemo,
    namespaces: &dyn Strategy,
    strategy: &dyn Strategy,
    namespace: &str,
    name: &str,
    live: bool,
) -> Result<(), ApiError> {
    let ns_info = namespaces.info();
    let gr = ns_info.group_resource();
    let key = ns_info.key(None, namespace);
    let cached = if live {
        None
    } else {
        store
            .get_with(&key, crd_storage::Freshness::NotOlderThan(0))
            .await
            .map_err(|e| ApiError::storage(&gr, namespace, e))?
    };
    let kv = match cached {
        Some(kv) => kv,
        None => store
            .get(&key)
            .await
            .map_err(|e| ApiError::storage(&gr, namespace, e))?
            .ok_or_else(|| Status::not_found(&gr, namespace))?,
    };
    if deleting.is_deleting(&kv) {
        let mut status = Status::forbidden(
            &strategy.info().group_resource(),
            name,
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        );
        if let Some(d) = status.details.as_mut() {
            d.causes.push(crd_core::StatusCause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {namespace} is being terminated"),
                field: "metadata.namespace".into(),
            });
        }
        return Err(status.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The partial decode says what decoding the whole namespace and asking
    /// [`meta::is_deleting`] said before it.
    #[test]
    fn namespace_deletion_is_read_as_from_the_whole_object() {
        let cases: &[(&str, bool)] = &[
            (
                r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["x"],"managedFields":[{"manager":"m","fieldsV1":{"f:metadata":{}}}],"name":"ns"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Terminating"}}"#,
                true,
            ),
            (
                r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns","uid":"u"},"status":{"phase":"Active"}}"#,
                false,
            ),
            (r#"{"metadata":{"deletionTimestamp":""}}"#, false),
            (r#"{"metadata":{"deletionTimestamp":null}}"#, false),
            (r#"{"metadata":{"deletionTimestamp":5}}"#, false),
            (r#"{"metadata":{"deletionTimestamp":"x\u0041"}}"#, true),
            (r#"{"metadata":null}"#, false),
            (r#"{"metadata":"x"}"#, false),
            (r#"{"kind":"Namespace"}"#, false),
            ("[1]", false),
            (r#" [{"deletionTimestamp":"t"}]"#, false),
            (r#"{"metadata":["t"]}"#, false),
            (r#"{"metadata":[{"deletionTimestamp":"t"}]}"#, false),
            (
                r#"{"metadata":{"deletionTimestamp":"t","deletionTimestamp":""}}"#,
                false,
            ),
            (
                r#"{"metadata":{"deletionTimestamp":"","deletionTimestamp":"t"}}"#,
                true,
            ),
            (r#"{"metadata":{"deletionTimestamp":{"a":1}}}"#, false),
            (r#"{"spec":{"metadata":{"deletionTimestamp":"t"}}}"#, false),
            (r#"{"metadata":{"deletionTimestamp":"t"}"#, false),
            (r#" {"metadata":{"deletionTimestamp":"t"}} "#, true),
            ("not json", false),
            ("", false),
        ];
        for (json, want) in cases {
            let whole: Value = serde_json::from_slice(json.as_bytes()).unwrap_or(Value::Null);
            assert_eq!(meta::is_deleting(&whole), *want, "whole object: {json}");
            assert_eq!(namespace_is_deleting(json.as_bytes()), *want, "{json}");
        }
    }

    /// The memo answers as decoding each read would: a namespace written again (a new
    /// revision) is decoded again, each key keeps its own answer, and a full memo starts over.
    #[test]
    fn the_deletion_memo_answers_as_decoding_each_read() {
        let active = r#"{"metadata":{"name":"a"}}"#;
        let terminating = r#"{"metadata":{"name":"a","deletionTimestamp":"t"}}"#;
        let kv = |key: &str, revision: i64, json: &str| crd_storage::KeyValue {
            key: key.into(),
            value: bytes::Bytes::copy_from_slice(json.as_bytes()),
            create_revision: 1,
            mod_revision: revision,
            decoded: crd_storage::Decoded::default(),
        };
        // (key, modification revision, stored bytes) in read order.
        let reads = [
            ("/registry/namespaces/a", 2, active),
            ("/registry/namespaces/a", 2, active),
            ("/registry/namespaces/b", 3, terminating),
            ("/registry/namespaces/a", 4, terminating),
            ("/registry/namespaces/b", 3, terminating),
            ("/registry/namespaces/a", 4, terminating),
            ("/registry/namespaces/a", 9, active),
            ("/registry/namespaces/b", 10, active),
        ];
        let memo = DeletionMemo::default();
        for (key, revision, json) in reads {
            assert_eq!(
                memo.is_deleting(&kv(key, revision, json)),
                namespace_is_deleting(json.as_bytes()),
                "{key} at {revision}"
            );
        }
        for i in 0..DeletionMemo::CAPACITY + 10 {
            let key = format!("/registry/namespaces/n{i}");
            assert!(!memo.is_deleting(&kv(&key, 1, active)));
            let held = memo.0.lock().expect("memo").len();
            assert!(held <= DeletionMemo::CAPACITY, "bounded: {held}");
        }
        assert!(memo.is_deleting(&kv("/registry/namespaces/n0", 5, terminating)));
    }
}
