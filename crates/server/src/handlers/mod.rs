//! Resource request handlers, one file per verb, all with the same shape:
//! `async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError>`.
//! [`dispatch`] resolves the strategy (CRDs, namespaces, or a custom resource) and the verb.
//!
//! Architecture Invariant: handlers never enqueue controller work; controllers watch the store.

pub mod answer;
pub mod create;
pub mod delete;
pub mod delete_collection;
pub mod encode;
pub mod get;
pub mod list;
pub mod list_stream;
pub mod managed;
pub mod patch;
pub mod scale;
pub mod update;
pub mod watch;

use std::sync::Arc;

use bytes::Bytes;
use crd_core::Status;
use crd_storage::{KeyValue, Store};
use http::HeaderMap;
use serde_json::Value;

use crate::admission::{Attributes, Operation};
use crate::auth::User;
use crate::error::ApiError;
use crate::registry::{Scope, Strategy, Subresource, meta, pipeline};
use crate::request::negotiate::Output;
use crate::request::options::RequestOptions;
use crate::request::route::{ResourceRequest, Verb};
use crate::state::AppState;
use crate::table;

/// Everything a handler needs about one request.
pub struct Ctx<'a> {
    /// Shared server state.
    pub state: &'a AppState,
    /// The user the request acts as (after impersonation).
    pub user: &'a User,
    /// The parsed resource request.
    pub req: &'a ResourceRequest,
    /// The typed query options.
    pub opts: RequestOptions,
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The request body (already size-limited).
    pub body: Bytes,
    /// The negotiated response representation.
    pub output: Output,
    /// The subresource endpoint addressed.
    pub sub: Subresource,
    /// What admission plugins left on the request: warnings (sent with the answer, also with
    /// an error) and audit annotations (for the audit log).
    pub admission: std::sync::Mutex<crate::admission::Record>,
}

impl Ctx<'_> {
    /// The object name from the path ("" for collections).
    pub fn name(&self) -> &str {
        self.req.name.as_deref().unwrap_or("")
    }

    /// The namespace from the path.
    pub fn namespace(&self) -> Option<&str> {
        self.req.namespace.as_deref()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.state.store
    }

    /// Whether the request is `dryRun=All`: the whole pipeline runs, nothing is stored.
    pub fn dry_run(&self) -> bool {
        self.opts.write.dry_run
    }

    /// The admission attributes of this request on `obj` (the object written, or the stored
    /// object of a DELETE).
    pub fn admission_attributes(
        &self,
        strategy: &dyn Strategy,
        operation: Operation,
        obj: &Value,
    ) -> Attributes<'_> {
        let sub = self.sub.name();
        let namespace = match meta::namespace(obj) {
            "" => self.namespace().unwrap_or(""),
            ns => ns,
        };
        let dry_run = match operation {
            Operation::Delete => self.opts.delete.dry_run,
            _ => self.dry_run(),
        };
        Attributes::new(
            strategy.info(),
            operation,
            sub,
            meta::name(obj),
            namespace,
            self.user,
            dry_run,
            self.admission_options(operation),
        )
    }

    /// The verb's options object as admission shows it.
    fn admission_options(&self, operation: Operation) -> Value {
        let mut m = serde_json::Map::new();
        let kind = match (operation, self.req.verb) {
            (Operation::Create, _) => "CreateOptions",
            (Operation::Delete, _) => "DeleteOptions",
            (_, Verb::Patch) => "PatchOptions",
            _ => "UpdateOptions",
        };
        m.insert("kind".into(), Value::from(kind));
        m.insert("apiVersion".into(), Value::from("meta.k8s.io/v1"));
        if operation == Operation::Delete {
            let d = &self.opts.delete;
            if d.dry_run {
                m.insert("dryRun".into(), serde_json::json!(["All"]));
            }
            if let Some(g) = d.grace_period_seconds {
                m.insert("gracePeriodSeconds".into(), Value::from(g));
            }
            if let Some(p) = d.propagation_policy {
                m.insert("propagationPolicy".into(), Value::from(format!("{p:?}")));
            }
            let mut pre = serde_json::Map::new();
            if let Some(uid) = &d.uid {
                pre.insert("uid".into(), Value::from(uid.as_str()));
            }
            if let Some(rv) = &d.resource_version {
                pre.insert("resourceVersion".into(), Value::from(rv.as_str()));
            }
            if !pre.is_empty() {
                m.insert("preconditions".into(), Value::Object(pre));
            }
            return Value::Object(m);
        }
        let w = &self.opts.write;
        if w.dry_run {
            m.insert("dryRun".into(), serde_json::json!(["All"]));
        }
        if let Some(f) = &w.field_manager {
            m.insert("fieldManager".into(), Value::from(f.as_str()));
        }
        if kind == "PatchOptions" && w.force {
            m.insert("force".into(), Value::from(true));
        }
        Value::Object(m)
    }
}

/// How an object changed by mutating admission is admitted again: pruned and defaulted by the
/// kind's schema, unknown fields dropped without warnings (they are the webhook's, not the
/// client's).
pub fn readmission(ctx: &Ctx<'_>) -> crate::registry::Admission {
    crate::registry::Admission {
        sub: ctx.sub,
        field_validation: crate::request::options::FieldValidation::Ignore,
        patch: true,
        patch_value: None,
    }
}

/// Decodes the bytes a dry-run write would have stored, as the response would show them.
pub async fn preview(
    strategy: &dyn Strategy,
    key: &str,
    value: Bytes,
    revision: i64,
) -> Result<Value, ApiError> {
    let kv = KeyValue {
        key: key.to_string(),
        value,
        create_revision: revision,
        mod_revision: revision,
        decoded: crd_storage::Decoded::default(),
    };
    let mut obj = read_object(strategy, &kv).await?;
    if revision == 0 {
        meta::meta_mut(&mut obj).remove("resourceVersion");
    }
    Ok(obj)
}

/// What a handler produces.
pub enum ReplyBody {
    /// A value rendered by the HTTP layer in the negotiated output.
    Value(Value),
    /// A Kubernetes Status (success bodies of delete).
    Status(Box<Status>),
    /// A streaming response (watch).
    Stream(crate::body::BoxBody),
    /// Bytes assembled by the handler (lists), of the reply's `content_type` (JSON unless
    /// it says otherwise).
    RawJson(Bytes),
}

/// A handler's response.
pub struct Reply {
    /// The HTTP status code.
    pub code: u16,
    /// The body.
    pub body: ReplyBody,
    /// `Warning` headers to add.
    pub warnings: Vec<String>,
    /// The Content-Type of the value, when it is not the default for the output.
    pub content_type: Option<&'static str>,
}

impl Reply {
    /// A value reply with a code.
    pub fn value(code: u16, v: Value) -> Self {
        Reply {
            code,
            body: ReplyBody::Value(v),
            warnings: Vec::new(),
            content_type: None,
        }
    }

    /// A reply of JSON bytes the handler already encoded (a create's stored bytes with their
    /// resourceVersion), sent as they are.
    pub fn raw_json(code: u16, bytes: Bytes) -> Self {
        Reply {
            code,
            body: ReplyBody::RawJson(bytes),
            warnings: Vec::new(),
            content_type: None,
        }
    }

    /// Adds warnings.
    #[must_use]
    pub fn with_warnings(mut self, mut w: Vec<String>) -> Self {
        self.warnings.append(&mut w);
        self
    }
}

/// Finds the strategy serving a request: the table of fixed kinds first, then the CRDs.
/// Anything unknown, unserved or addressed at the wrong scope is the plain `404 page not found`.
pub fn resolve(state: &AppState, req: &ResourceRequest) -> Result<Arc<dyn Strategy>, ApiError> {
    let strategy: Arc<dyn Strategy> =
        match state.kinds.lookup(&req.group, &req.version, &req.resource) {
            Some(s) => s,
            None => state
                .registry
                .strategy(&req.group, &req.resource, &req.version)
                .ok_or(ApiError::NoRoute)?,
        };
    match (strategy.info().scope, req.namespace.is_some()) {
        (Scope::Cluster, true) => Err(ApiError::NoRoute),
        (Scope::Namespaced, false) if !matches!(req.verb, Verb::List | Verb::Watch) => {
            Err(ApiError::NoRoute)
        }
        _ => Ok(strategy),
    }
}

/// Runs the verb's handler for a resolved strategy. Warnings the strategy attaches to every
/// request (deprecated versions) are returned with errors too, through [`Dispatched`].
pub async fn dispatch(ctx: &mut Ctx<'_>, strategy: Arc<dyn Strategy>) -> Dispatched {
    let warnings = strategy.warnings();
    let result = run(ctx, strategy)
        .await
        .map(|r| r.with_warnings(warnings.clone()));
    Dispatched { result, warnings }
}

/// The outcome of [`dispatch`].
pub struct Dispatched {
    /// The reply or the error.
    pub result: Result<Reply, ApiError>,
    /// Warnings to send with an error.
    pub warnings: Vec<String>,
}

async fn run(ctx: &mut Ctx<'_>, strategy: Arc<dyn Strategy>) -> Result<Reply, ApiError> {
    let req = ctx.req;
    let info = strategy.info();
    let name = req.name.as_deref().unwrap_or("");
    let single_object_verbs = matches!(req.verb, Verb::Get | Verb::Update | Verb::Patch);
    ctx.sub = req.endpoint();
    let s = strategy.as_ref();
    if let Some(answer) = s.answerer(req.subresource.as_deref()) {
        return if req.verb == Verb::Create {
            answer::handle(ctx, s, answer).await
        } else {
            Err(s.unserved_verb(req.verb.as_str()))
        };
    }
    match ctx.sub {
        Subresource::Main => {}
        Subresource::Status if info.status_subresource => {}
        Subresource::Scale if s.scale().is_some() => {}
        Subresource::Finalize | Subresource::Approval if s.serves_subresource(ctx.sub) => {}
        Subresource::Status
        | Subresource::Scale
        | Subresource::Finalize
        | Subresource::Approval
        | Subresource::Other => {
            return Err(s.unserved_subresource(name));
        }
    }
    // Subresources serve a single object; `/finalize` is an update only (upstream's
    // `FinalizeREST`).
    let verb_served = match ctx.sub {
        Subresource::Main => req.verb != Verb::DeleteCollection || s.serves_delete_collection(),
        Subresource::Finalize => req.verb == Verb::Update,
        _ => single_object_verbs,
    };
    if !verb_served {
        return Err(s.unserved_verb(req.verb.as_str()));
    }
    if let (Subresource::Scale, Some(paths)) = (ctx.sub, s.scale()) {
        // A scale write is a write of the main object's replica count.
        ctx.sub = Subresource::Main;
        return Box::pin(scale::handle(ctx, s, paths)).await;
    }
    // Each verb's future is boxed: the request's future, which hyper moves (copies) whole when
    // a request arrives, would otherwise be as large as the largest verb's state (4 KB, patch),
    // whichever verb the request is.
    match req.verb {
        Verb::Get => Box::pin(get::handle(ctx, s)).await,
        Verb::List => Box::pin(list::handle(ctx, &strategy)).await,
        Verb::Watch => Box::pin(watch::handle(ctx, strategy.clone())).await,
        Verb::Create => Box::pin(create::handle(ctx, s)).await,
        Verb::Update => Box::pin(update::handle(ctx, s)).await,
        Verb::Patch => Box::pin(patch::handle(ctx, s)).await,
        Verb::Delete => Box::pin(delete::handle(ctx, s)).await,
        Verb::DeleteCollection => Box::pin(delete_collection::handle(ctx, s)).await,
    }
}

/// The stored object the request's URL names, or the resource's 404.
pub async fn get_stored(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<KeyValue, ApiError> {
    get_stored_at(ctx, strategy, crd_storage::Freshness::Consistent).await
}

/// [`get_stored`] at `freshness` (a GET's `resourceVersion`).
pub async fn get_stored_at(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    freshness: crd_storage::Freshness,
) -> Result<KeyValue, ApiError> {
    let info = strategy.info();
    let key = info.key(ctx.namespace(), ctx.name());
    ctx.store()
        .get_with(&key, freshness)
        .await
        .map_err(|e| ApiError::storage(&info.group_resource(), ctx.name(), e))?
        .ok_or_else(|| Status::not_found(&info.group_resource(), ctx.name()).into())
}

/// The 500 of a stored value that is not an object: one the encryption layer could not read
/// (no key of `--encryption-provider-config` decrypts it, or it is plain where no `identity`
/// provider reads plain data) says so.
fn undecodable(kv: &KeyValue, e: &serde_json::Error) -> Status {
    match crd_storage::encryption::unreadable(&kv.value) {
        Some(why) => Status::internal(format!("decrypting stored object {}: {why}", kv.key)),
        None => Status::internal(format!("decoding stored object {}: {e}", kv.key)),
    }
}

/// Decodes stored values into the request version, with their resourceVersions set. All
/// objects that need a conversion webhook go in one call.
pub async fn read_objects(
    strategy: &dyn Strategy,
    kvs: &[KeyValue],
    is_list: bool,
) -> Result<Vec<Value>, ApiError> {
    let mut objs = Vec::with_capacity(kvs.len());
    for kv in kvs {
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| undecodable(kv, &e))?;
        objs.push((obj, kv.mod_revision));
    }
    read_decoded(strategy, objs, is_list).await
}

/// [`read_objects`] of stored objects already decoded, each with its revision: a write that
/// just encoded an object reads it back without decoding the bytes it stored (the same value:
/// JSON encoding and decoding of a value are each other's inverse).
pub async fn read_decoded(
    strategy: &dyn Strategy,
    stored: Vec<(Value, crd_storage::Revision)>,
    is_list: bool,
) -> Result<Vec<Value>, ApiError> {
    let objs = stored
        .into_iter()
        .map(|(mut obj, revision)| {
            meta::set_resource_version(&mut obj, revision);
            strategy.read_shape(&mut obj);
            obj
        })
        .collect();
    match strategy.conversion() {
        Some(plan) => pipeline::read_stored(&plan, objs, is_list).await,
        None => Ok(objs),
    }
}

/// [`read_objects`], each object encoded as JSON: what list bodies are made of. When the CRD's
/// converter runs in process (`None`, `ConversionRules`), every object goes from stored bytes to
/// encoded bytes on its own (no batch of decoded objects is held), and a large batch is split
/// over the machine's cores on the blocking pool (whose threads, and their allocator arenas,
/// stay warm between requests). Webhook conversions go through [`read_objects`] (one call).
/// `first` is the index of `kvs[0]` in its list, so that a list converted in several batches
/// names a failing item by its index in the list, as one batch does (in process only: a
/// webhook's batch is its own).
pub async fn read_objects_encoded(
    strategy: &Arc<dyn Strategy>,
    kvs: Vec<KeyValue>,
    is_list: bool,
    first: usize,
) -> Result<Vec<Vec<u8>>, ApiError> {
    let plan = match strategy.conversion() {
        Some(plan) if plan.converter.in_process() => plan,
        _ => {
            let objs = read_objects(strategy.as_ref(), &kvs, is_list).await?;
            return objs.iter().map(encode_json).collect();
        }
    };
    let threads = (kvs.len() / OBJECTS_PER_THREAD).clamp(1, cores());
    if threads == 1 {
        return encode_in_process(strategy.as_ref(), &plan, is_list, first, &kvs);
    }
    let size = kvs.len().div_ceil(threads);
    let mut parts = Vec::with_capacity(threads);
    let mut rest = kvs;
    while rest.len() > size {
        let tail = rest.split_off(size);
        parts.push(rest);
        rest = tail;
    }
    parts.push(rest);
    let handles: Vec<_> = parts
        .into_iter()
        .enumerate()
        .map(|(n, part)| {
            let (strategy, plan) = (strategy.clone(), plan.clone());
            tokio::task::spawn_blocking(move || {
                encode_in_process(strategy.as_ref(), &plan, is_list, first + n * size, &part)
            })
        })
        .collect();
    // The first failure in index order wins, as in one batch.
    let mut out = Vec::new();
    for handle in handles {
        let part = handle.await.map_err(|e| match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => ApiError::from(Status::internal(e)),
        })??;
        out.extend(part);
    }
    Ok(out)
}

/// Objects below which a batch is converted on one thread (a thread hop costs tens of
/// microseconds; an object a few).
const OBJECTS_PER_THREAD: usize = 128;

/// The cores a batch of conversions may use.
fn cores() -> usize {
    static CORES: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    *CORES
}

fn encode_json(o: &Value) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(1024);
    encode::write_value(&mut out, o).map_err(Status::internal)?;
    Ok(out)
}

/// Stored bytes to encoded bytes in the request version, one object at a time (the object at
/// `kvs[i]` is at `offset + i` of its batch), with a converter that runs in process.
fn encode_in_process(
    strategy: &dyn Strategy,
    plan: &pipeline::ConversionPlan,
    is_list: bool,
    offset: usize,
    kvs: &[KeyValue],
) -> Result<Vec<Vec<u8>>, ApiError> {
    kvs.iter()
        .enumerate()
        .map(|(i, kv)| {
            let mut obj: Value =
                serde_json::from_slice(&kv.value).map_err(|e| undecodable(kv, &e))?;
            meta::set_resource_version(&mut obj, kv.mod_revision);
            strategy.read_shape(&mut obj);
            let obj = pipeline::read_stored_in_process(plan, obj, is_list, offset + i)
                .ok_or_else(|| Status::internal("the converter does not run in process"))??;
            let mut out = Vec::with_capacity(kv.value.len() + 256);
            encode::write_value(&mut out, &obj).map_err(Status::internal)?;
            Ok(out)
        })
        .collect()
}

/// Decodes one stored value into the request version, with its resourceVersion set.
pub async fn read_object(strategy: &dyn Strategy, kv: &KeyValue) -> Result<Value, ApiError> {
    read_objects(strategy, std::slice::from_ref(kv), false)
        .await?
        .pop()
        .ok_or_else(|| Status::internal("conversion returned no object").into())
}

/// Encodes an object for storage: converted to the storage version, without resourceVersion.
pub async fn storage_bytes(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    obj: &Value,
) -> Result<Bytes, ApiError> {
    Ok(storage_encoding(ctx, strategy, obj.clone()).await?.bytes)
}

/// What [`storage_encoding`] gives: the bytes, the stored object they encode (for
/// [`read_decoded`]), and where its resourceVersion goes in them (for [`verbatim_answer`]).
pub struct Encoded {
    /// The bytes to store.
    pub bytes: Bytes,
    /// The object they encode, at the storage version, without resourceVersion.
    pub object: Value,
    /// Where `metadata.resourceVersion` goes in `bytes`.
    pub version_slot: Option<encode::VersionSlot>,
}

/// [`storage_bytes`], also returning the stored object those bytes encode and the slot of its
/// resourceVersion.
pub async fn storage_encoding(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    obj: Value,
) -> Result<Encoded, ApiError> {
    let converted = match strategy.conversion() {
        Some(plan) => pipeline::to_storage(&plan, obj).await?,
        None => obj,
    };
    let mut stored = strategy.write_shape(converted);
    meta::clear_resource_version(&mut stored);
    let (bytes, version_slot) =
        encode::encode_with_version_slot(&stored).map_err(Status::internal)?;
    let limit = ctx.state.limits.max_object_size();
    if limit > 0 && bytes.len() > limit {
        // What a cluster answers when an object passes etcd's request limit.
        return Err(Status::failure(500, "", "etcdserver: request is too large").into());
    }
    Ok(Encoded {
        bytes: Bytes::from(bytes),
        object: stored,
        version_slot,
    })
}

/// A write's answer as the bytes it stored with the resourceVersion spliced in, when that is
/// exactly what reading the object back and rendering it would give ([`read_decoded`] then
/// [`render_object`]): JSON output, reads that add nothing ([`Strategy::verbatim_reads`]), and
/// an object stored at the request's version. It saves encoding the same object twice.
pub fn verbatim_answer(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    encoded: &Encoded,
    revision: crd_storage::Revision,
) -> Option<Bytes> {
    if ctx.output != Output::Json || !strategy.verbatim_reads() {
        return None;
    }
    let info = strategy.info();
    let stored_as = |field: &str| encoded.object.get(field).and_then(Value::as_str);
    if stored_as("kind") != Some(info.kind.as_str())
        || stored_as("apiVersion") != Some(info.api_version().as_str())
    {
        return None;
    }
    let slot = encoded.version_slot?;
    Some(Bytes::from(slot.splice(&encoded.bytes, revision)))
}

/// A stored object's GET answer as its stored bytes with the resourceVersion spliced in, when
/// that is exactly what decoding, [`read_objects`] and [`render_object`] would give: JSON output,
/// reads that add nothing ([`Strategy::verbatim_reads`]), and an object stored at the request's
/// version in the server's layout. A get then costs no decoding and no encoding.
pub fn verbatim_read(ctx: &Ctx<'_>, strategy: &dyn Strategy, kv: &KeyValue) -> Option<Bytes> {
    if ctx.output != Output::Json || !strategy.verbatim_reads() {
        return None;
    }
    let info = strategy.info();
    let head = list::StoredHead::new(&info.api_version(), &info.kind);
    if !head.matches(&kv.value) {
        return None;
    }
    let slot = encode::version_slot_at(&kv.value, head.metadata_at())?;
    Some(Bytes::from(slot.splice(&kv.value, kv.mod_revision)))
}

/// Renders one object in the negotiated output (Table, metadata-only, or as is).
pub fn render_object(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    obj: Value,
) -> Result<Value, ApiError> {
    match ctx.output {
        Output::Table => {
            let rv = meta::resource_version(&obj).to_string();
            Ok(strategy.render_table(
                &[obj],
                ctx.opts.table.include_object,
                ctx.opts.table.with_headers,
                serde_json::json!({ "resourceVersion": rv }),
            ))
        }
        Output::PartialObjectMetadata => Ok(table::partial_object_metadata(&obj)),
        _ => Ok(obj),
    }
}

/// Builds the Invalid error of a strategy's resource.
pub fn invalid(strategy: &dyn Strategy, name: &str, errors: &crd_core::ErrorList) -> ApiError {
    Status::invalid(&strategy.info().group_kind(), name, errors).into()
}
