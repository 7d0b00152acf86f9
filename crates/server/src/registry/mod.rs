//! Resources and their strategies: what each kind of object (CustomResourceDefinition,
//! Namespace, custom resource) does at each step of a write, in the manner of Go's generic
//! registry `Store` plus per-kind strategies.
//!
//! Main types: [`ResourceInfo`], [`Strategy`], [`Subresource`], [`Scope`].
//! Modules: [`serving`] (per-CRD compiled state), [`pipeline`] (the custom-object transforms),
//! [`kinds`] (the table of kinds with fixed strategies), the strategies [`crds`],
//! [`namespaces`], [`migrations`], [`builtin`] (every `crd_builtin` kind) and [`custom`],
//! [`meta`] (metadata access) and [`owners`] (owner references, GC finalizers and the delete
//! step every kind shares).

pub mod builtin;
pub mod conditions;
pub mod crds;
pub mod crds_v1beta1;
pub mod custom;
pub mod kinds;
pub mod meta;
pub mod migrations;
pub mod namespaces;
pub mod owners;
pub mod pipeline;
pub mod pod_actions;
pub mod reviews;
pub mod serving;
pub mod storage_versions;
pub mod upgrade_check;

use crd_core::{ErrorList, GroupResource};
use serde_json::Value;

use crate::error::ApiError;
use crate::request::negotiate::PatchType;
use crate::table::{IncludeObject, TableColumn};

pub use crd_core::validation::Scope;

pub use crate::request::route::Subresource;

/// How a body is being admitted: which endpoint, the `fieldValidation` mode, and whether it is
/// the result of a patch (strict errors are then 422, as upstream).
#[derive(Clone, Debug)]
pub struct Admission {
    /// The endpoint written through.
    pub sub: Subresource,
    /// `fieldValidation`.
    pub field_validation: pipeline::FieldValidation,
    /// The body is a patched object.
    pub patch: bool,
    /// How a strict decoding error shows the patch, when not as the patched object's JSON: a
    /// strategic merge patch shows the patch itself as Go's `%+v` prints the decoded map
    /// (`map[spec:map[bogus:1]]`), as upstream's `applyPatchToObject` does.
    pub patch_value: Option<String>,
}

/// The static description of one resource at one version.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// The API group ("" for core).
    pub group: String,
    /// The version the request uses.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// The singular name.
    pub singular: String,
    /// The Kind.
    pub kind: String,
    /// The list Kind.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// The storage key root, such as `/registry/stable.example.com/crontabs`.
    pub key_root: String,
    /// Whether the `/status` subresource exists.
    pub status_subresource: bool,
}

impl ResourceInfo {
    /// `<resource>.<group>`, used by NotFound, AlreadyExists and Conflict messages.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.resource)
    }

    /// `<Kind>.<group>`, used by Invalid messages.
    pub fn group_kind(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.kind)
    }

    /// `<group>/<version>` (or `<version>` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            [self.group.as_str(), "/", self.version.as_str()].concat()
        }
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            // `concat` rather than `format!`: every request names a key (a few times fewer
            // instructions, on the create path's hot loop).
            Some(ns) if self.namespaced() => [self.key_root.as_str(), "/", ns, "/", name].concat(),
            _ => [self.key_root.as_str(), "/", name].concat(),
        }
    }

    /// The storage prefix of a collection (one namespace, or all).
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced() => [self.key_root.as_str(), "/", ns, "/"].concat(),
            _ => [self.key_root.as_str(), "/"].concat(),
        }
    }
}

/// A field selector named a field the resource does not support.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsupportedField;

/// What a DELETE does to an object that is not yet being deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Remove it now (when it has no finalizers).
    Immediate,
    /// Mark it: it stays until a controller finishes with it.
    Graceful,
}

/// A permission a write needs beyond its verb ([`Strategy::write_permission`]): allowed when
/// the authorizer allows any one of `any_of`, asked in order; refused with `refusal` otherwise
/// (an empty `any_of` always refuses).
pub struct WritePermission {
    /// The attributes to ask about.
    pub any_of: Vec<crate::authz::Attributes>,
    /// The error when none is allowed.
    pub refusal: ApiError,
}

impl WritePermission {
    /// Asks `authorizer` whether `user` holds the permission.
    pub async fn check(
        self,
        authorizer: &crate::authz::Authorizer,
        user: &crate::auth::User,
    ) -> Result<(), ApiError> {
        for attrs in &self.any_of {
            if authorizer.authorize(user, attrs).await.allowed {
                return Ok(());
            }
        }
        Err(self.refusal)
    }
}

/// The deduced server-side apply schema, shared by every kind without a schema of its own.
pub fn deduced_apply_schema() -> &'static crd_merge::apply::Schema {
    static DEDUCED: std::sync::LazyLock<crd_merge::apply::Schema> =
        std::sync::LazyLock::new(crd_merge::apply::Schema::deduced);
    &DEDUCED
}

/// The reset fields of a kind with a status subresource: `status` through the main endpoint,
/// `spec` through `/status`.
pub struct StatusResetFields {
    main: crd_merge::apply::FieldSet,
    status: crd_merge::apply::FieldSet,
    /// `/approval` (a `CertificateSigningRequest`'s): `spec` and what the kind names.
    approval: crd_merge::apply::FieldSet,
}

impl Default for StatusResetFields {
    fn default() -> Self {
        StatusResetFields {
            main: crd_merge::apply::FieldSet::from_field_paths(&[&["status"]]),
            status: crd_merge::apply::FieldSet::from_field_paths(&[&["spec"]]),
            approval: crd_merge::apply::FieldSet::from_field_paths(&[&["spec"]]),
        }
    }
}

impl StatusResetFields {
    /// The sets of a kind whose `/status` also resets the `metadata` fields named (a Pod's
    /// `deletionTimestamp` and `ownerReferences`).
    pub fn with_status_metadata(fields: &[&str]) -> StatusResetFields {
        let metadata: Vec<[&str; 2]> = fields.iter().map(|f| ["metadata", f]).collect();
        let status: Vec<&[&str]> = std::iter::once(&["spec"][..])
            .chain(metadata.iter().map(|p| &p[..]))
            .collect();
        StatusResetFields {
            status: crd_merge::apply::FieldSet::from_field_paths(&status),
            ..StatusResetFields::default()
        }
    }

    /// The sets with what each named subresource resets beyond `spec` (a
    /// `CertificateSigningRequest`'s `/status` its conditions, `/approval` its certificate).
    #[must_use]
    pub fn with_subresource_resets(mut self, resets: &[(&str, &[&str])]) -> StatusResetFields {
        for (sub, path) in resets {
            let set = crd_merge::apply::FieldSet::from_field_paths(&[&["spec"], path]);
            match *sub {
                "status" => self.status = set,
                "approval" => self.approval = set,
                _ => {}
            }
        }
        self
    }

    /// The sets every kind with a status subresource and a `spec` shares (built once).
    pub fn shared() -> &'static StatusResetFields {
        static RESET: std::sync::LazyLock<StatusResetFields> =
            std::sync::LazyLock::new(StatusResetFields::default);
        &RESET
    }

    /// The reset fields of a write through `sub`.
    pub fn of(&self, sub: Subresource) -> &crd_merge::apply::FieldSet {
        match sub {
            Subresource::Status => &self.status,
            Subresource::Approval => &self.approval,
            _ => &self.main,
        }
    }
}

/// The patch types a custom resource (and any kind without strategic-merge metadata) accepts,
/// in the order kube-apiserver lists them in its 415.
pub const CUSTOM_PATCH_TYPES: &[PatchType] = &[PatchType::Json, PatchType::Merge, PatchType::Apply];

/// The patch types a built-in kind accepts.
pub const BUILTIN_PATCH_TYPES: &[PatchType] = &[
    PatchType::Json,
    PatchType::Merge,
    PatchType::StrategicMerge,
    PatchType::Apply,
];

/// Per-kind behaviour at each step of a request. Implementations are immutable and cheap to
/// share; handlers call the steps in a fixed order and never ask which kind they serve.
///
/// Architecture Invariant: adding a kind means adding a strategy and a row in [`kinds::Kinds`];
/// no handler names a group, resource or kind.
#[async_trait::async_trait]
pub trait Strategy: Send + Sync {
    /// The resource this strategy serves.
    fn info(&self) -> &ResourceInfo;

    /// Decoding-time admission of a body: type checks, pruning and defaulting. Returns warnings.
    fn admit(&self, obj: &mut Value, how: &Admission) -> Result<Vec<String>, ApiError>;

    /// What a request for a subresource the kind does not serve (`pods/log`, `configmaps/x/y`)
    /// gets: kube-apiserver registers no route for it (go-restful's JSON 404). Custom
    /// resources answer NotFound naming the object instead, as its CRD handler does.
    fn unserved_subresource(&self, _name: &str) -> ApiError {
        ApiError::NoRoute
    }

    /// What a verb the endpoint does not serve gets (`DELETE` of `pods/x/status`, `GET` of a
    /// review): go-restful's 405. Custom resources name the verb and the resource, as the CRD
    /// handler's `NewMethodNotSupported` does.
    fn unserved_verb(&self, _verb: &str) -> ApiError {
        crd_core::Status::route_method_not_allowed().into()
    }

    /// For creates that are answered rather than stored (reviews, `serviceaccounts/token`):
    /// the answer at the subresource `sub` (`None` for the resource itself).
    fn answerer(&self, _sub: Option<&str>) -> Option<&dyn reviews::Answer> {
        None
    }

    /// Rejects creation outright (for example while a CRD is terminating).
    fn check_create_allowed(&self, _name: &str) -> Result<(), ApiError> {
        Ok(())
    }

    /// Sets fields a new object must have (status reset, generation, the requesting `user` for
    /// kinds that record it, ...).
    fn prepare_create(&self, obj: &mut Value, user: &crate::auth::User);

    /// Validates a new object.
    fn validate_create(&self, obj: &Value) -> ErrorList;

    /// Carries over what the client may not change and bumps generation.
    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource);

    /// Validates an update.
    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList;

    /// Whether a PUT without `metadata.resourceVersion` is allowed.
    fn allow_unconditional_update(&self) -> bool {
        false
    }

    /// Whether a PUT of a missing object creates it (upstream's `AllowCreateOnUpdate`), with
    /// create's admission, validation and authorization (verb `create`), answered 201.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// For a resource served from a definition that can change under an open watch (custom
    /// resources): a future that resolves once that definition is gone or its spec changed,
    /// when upstream tears the resource's storage down and every watch of it ends. `None` for
    /// resources whose serving never changes.
    fn definition_retired(
        &self,
        _registry: &std::sync::Arc<serving::Registry>,
    ) -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>> {
        None
    }

    /// Why a patched object cannot be decoded into the kind's Go type, as upstream's patchers
    /// say it: the JSON decoder's words for JSON and merge patches, the unstructured
    /// converter's for strategic merge patches (`strategic`). `None` when it can, and for kinds
    /// decoded without Go types (custom resources).
    fn patched_decode_error(&self, _obj: &Value, _strategic: bool) -> Option<String> {
        None
    }

    /// Whether the collection can be deleted at once (DELETE of the collection path); upstream
    /// serves no `deletecollection` for namespaces.
    fn serves_delete_collection(&self) -> bool {
        true
    }

    /// Whether a DELETE that removes the object answers with the object rather than a
    /// `Status` (upstream's store `ReturnDeletedObject`: Pods, Services, ...).
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// For kinds deleted gracefully (upstream's `CheckGracefulDelete`: Pods), the grace period a
    /// DELETE of `obj` gets from the `requested` one; `None` for every other kind.
    fn grace_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// Prepares an object for deletion and says whether it can go at once.
    fn before_delete(&self, obj: &mut Value) -> DeleteOutcome {
        if meta::finalizers(obj).is_empty() {
            DeleteOutcome::Immediate
        } else {
            DeleteOutcome::Graceful
        }
    }

    /// What happens to the dependents of a deleted object when the DELETE names no
    /// `propagationPolicy` and the object carries no GC finalizer (upstream's
    /// `DefaultGarbageCollectionPolicy`); [`owners::GcPolicy::Unsupported`] keeps the kind out of
    /// cascading deletion.
    fn gc_policy(&self) -> owners::GcPolicy {
        owners::GcPolicy::DeleteDependents
    }

    /// Whether a deleting object whose finalizers are gone may now be removed: not while a
    /// graceful deletion's period is pending (upstream's `shouldDeleteDuringUpdate`).
    fn ready_to_remove(&self, obj: &Value) -> bool {
        meta::finalizers(obj).is_empty() && meta::deletion_grace_period(obj) <= 0
    }

    /// How objects convert between the request and storage versions; `None` for kinds with a
    /// single version.
    fn conversion(&self) -> Option<pipeline::ConversionPlan> {
        None
    }

    /// The columns of `kubectl get` output.
    fn table_columns(&self) -> Vec<TableColumn>;

    /// Renders objects as a `meta.k8s.io/v1` Table (`list_meta` becomes its `metadata`). The
    /// default evaluates [`Strategy::table_columns`]; kinds whose printers compute whole rows
    /// (the built-in kinds) render them here.
    fn render_table(
        &self,
        objects: &[Value],
        include: IncludeObject,
        with_headers: bool,
        list_meta: Value,
    ) -> Value {
        crate::table::render(
            &self.table_columns(),
            objects,
            include,
            with_headers,
            list_meta,
        )
    }

    /// Turns a decoded stored object into this resource's shape, before any version
    /// conversion (kinds stored in another kind's shape, such as `events.k8s.io/v1` Events
    /// stored as core/v1 Events; read-time defaults). The identity by default.
    fn read_shape(&self, _obj: &mut Value) {}

    /// Turns an object in this resource's shape into the shape it is stored in, after any
    /// version conversion: the inverse of [`Strategy::read_shape`]. The identity by default.
    fn write_shape(&self, obj: Value) -> Value {
        obj
    }

    /// The value of a field label for field selectors.
    fn field_value(&self, obj: &Value, field: &str) -> Result<String, UnsupportedField> {
        match field {
            "metadata.name" => Ok(meta::name(obj).to_string()),
            "metadata.namespace" if self.info().namespaced() => {
                Ok(meta::namespace(obj).to_string())
            }
            _ => Err(UnsupportedField),
        }
    }

    /// Whether stored bytes already at the request version can be sent as they are (with the
    /// resourceVersion spliced in): true when reads add nothing (no defaults to apply).
    fn verbatim_reads(&self) -> bool {
        false
    }

    /// Warnings about what a create (`old` is `None`) or update newly introduces.
    fn write_warnings(&self, _new: &Value, _old: Option<&Value>) -> Vec<String> {
        Vec::new()
    }

    /// Warnings every request through this strategy carries (deprecated versions).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// The patch types PATCH accepts, in the order a 415 lists them.
    fn patch_types(&self) -> &'static [PatchType] {
        CUSTOM_PATCH_TYPES
    }

    /// Decodes a protobuf body, for the kinds whose protobuf encoding clients send (kubectl
    /// sends namespaces as protobuf); `None` when the kind takes only JSON and YAML.
    fn decode_protobuf(&self, _body: &[u8]) -> Option<Result<Value, String>> {
        None
    }

    /// [`Strategy::decode_protobuf`] for a write to `sub`: a kind whose protobuf tables skip its
    /// status refuses a protobuf `/status` write rather than dropping the status it carries.
    fn decode_protobuf_for(&self, body: &[u8], sub: Subresource) -> Option<Result<Value, String>> {
        let _ = sub;
        self.decode_protobuf(body)
    }

    /// Checks what the requesting user may write beyond the verb the request filter authorized
    /// (RBAC's escalation prevention: roles granting permissions the user lacks, bindings to
    /// roles the user does not hold). `old` is `None` on create. Runs after decoding and
    /// admission, before preparation and validation, as upstream's policy-based storage does.
    fn authorize_write(
        &self,
        _authorizer: &crate::authz::Authorizer,
        _user: &crate::auth::User,
        _new: &Value,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// A check of an update that needs to read storage (for CRDs: no stored version may leave
    /// `status.storedVersions` while objects are stored at it). Runs after validation.
    async fn guard_update(&self, _new: &Value, _old: &Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// Warnings only a dry-run update carries, after it passed validation (for CRDs: what the
    /// change would do to stored objects, [`upgrade_check`]).
    async fn dry_run_warnings(&self, _new: &Value, _old: &Value) -> Vec<String> {
        Vec::new()
    }

    /// The object's schema at the request version (`JSONSchemaProps` JSON), typing strategic
    /// merge patches and server-side apply; `None` when the kind has none (untyped merge).
    fn schema(&self) -> Option<&Value> {
        None
    }

    /// The schema server-side apply types this kind's objects with, compiled once. Kinds without
    /// a schema use the deduced one (maps granular, lists atomic).
    fn apply_schema(&self) -> &crd_merge::apply::Schema {
        deduced_apply_schema()
    }

    /// Fields a write through `sub` may not set, which field ownership therefore ignores
    /// (upstream's `GetResetFields`): `status` through the main endpoint and `spec` through
    /// `/status`, for kinds with a status subresource.
    fn reset_fields(&self, _sub: Subresource) -> Option<&crd_merge::apply::FieldSet> {
        None
    }

    /// The paths of the `/scale` subresource, when the kind has one.
    fn scale(&self) -> Option<&serving::ScalePaths> {
        None
    }

    /// Whether the kind serves one of the subresources only some kinds have: `/finalize` (an
    /// update of `spec.finalizers` only: namespaces) or `/approval` (a `CertificateSigningRequest`'s
    /// conditions).
    fn serves_subresource(&self, _sub: Subresource) -> bool {
        false
    }

    /// The permission a write needs beyond its verb, by the kind's own validating admission
    /// plugins (upstream's `CertificateApproval`, `CertificateSigning` and
    /// `CertificateSubjectRestriction`). The handler asks the authorizer after validation,
    /// before the configured validating admission (policies, webhooks); `old` is `None` on
    /// create. Synchronous, so kinds without such plugins cost a write nothing.
    fn write_permission(
        &self,
        _sub: Subresource,
        _new: &Value,
        _old: Option<&Value>,
    ) -> Option<WritePermission> {
        None
    }
}
