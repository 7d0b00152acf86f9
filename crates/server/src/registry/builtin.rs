//! The one strategy for every built-in kind `crd_builtin` describes (`ConfigMap`, `Secret`,
//! `Deployment`, `Lease`, `events.k8s.io/v1` Event, ...): each row of [`crd_builtin::KINDS`]
//! becomes a [`BuiltinStrategy`] in the [`super::kinds::Kinds`] table, and every step of a
//! request is the row's data or one of its pure functions.
//!
//! Steps: admit (type meta from the URL when absent, Go's decoding type errors, prune with [`crd_builtin::Kind::bare_schema`]
//! honouring `fieldValidation`, [`crd_builtin::Kind::apply_defaults`]); prepare and validate
//! ([`crd_builtin::Kind::prepare_create`], [`crd_builtin::Kind::prepare_update`],
//! [`crd_builtin::Kind::validate`]); stored shape (a kind with `stored_as` is stored as core
//! events: [`crd_builtin::events::to_core`] on writes, [`crd_builtin::events::from_core`] on
//! reads); tables ([`crd_builtin::Kind::cells`]); field selectors; `/scale`.

use crd_builtin::Kind;
use std::collections::BTreeMap;

use crd_core::{ErrorList, Status};
use serde_json::{Value, json};

use super::serving::ScalePaths;
use super::{
    Admission, ResourceInfo, Strategy, Subresource, UnsupportedField, WritePermission, pipeline,
};
use crate::error::ApiError;
use crate::request::negotiate::PatchType;
use crate::table::{IncludeObject, Row, TableColumn};

/// A built-in kind served from its `crd_builtin` row.
pub struct BuiltinStrategy {
    kind: &'static Kind,
    info: ResourceInfo,
    scale: Option<ScalePaths>,
    /// The kind's server-side apply schema, compiled on its first apply (a Pod's is large, and
    /// most kinds are never applied in a process's life).
    apply_schema: std::sync::OnceLock<crd_merge::apply::Schema>,
    /// The reset fields of a kind whose status strategy resets metadata too (a Pod's); other
    /// kinds with a status subresource share [`super::StatusResetFields::shared`].
    status_resets: Option<super::StatusResetFields>,
}

impl BuiltinStrategy {
    /// The strategy of one row.
    pub fn new(kind: &'static Kind) -> Self {
        let info = ResourceInfo {
            group: kind.group.to_string(),
            version: kind.version.to_string(),
            resource: kind.plural.to_string(),
            singular: kind.singular.to_string(),
            kind: kind.kind.to_string(),
            list_kind: kind.list_kind.to_string(),
            scope: kind.scope,
            key_root: kind.key_root.to_string(),
            status_subresource: kind.status,
        };
        let scale = kind.scale.map(|s| ScalePaths {
            spec_replicas: s.spec_replicas.to_string(),
            status_replicas: s.status_replicas.to_string(),
            label_selector: Some(s.label_selector.to_string()),
        });
        BuiltinStrategy {
            kind,
            info,
            scale,
            apply_schema: std::sync::OnceLock::new(),
            status_resets: (!kind.status_resets_metadata().is_empty()
                || !kind.subresource_resets().is_empty())
            .then(|| {
                super::StatusResetFields::with_status_metadata(kind.status_resets_metadata())
                    .with_subresource_resets(kind.subresource_resets())
            }),
        }
    }

    /// One strategy per row of [`crd_builtin::KINDS`], for the kinds table.
    pub fn all() -> impl Iterator<Item = BuiltinStrategy> {
        crd_builtin::KINDS.iter().map(BuiltinStrategy::new)
    }

    /// The row this strategy serves.
    pub fn kind(&self) -> &'static Kind {
        self.kind
    }

    /// Fills `kind` and `apiVersion` from the URL when absent (upstream decodes built-in
    /// bodies into the endpoint's type) and rejects a body of another type.
    fn check_type_meta(&self, obj: &mut Value) -> Result<(), ApiError> {
        let want_version = self.kind.api_version();
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .unwrap_or(self.kind.kind)
            .to_string();
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .unwrap_or(&want_version)
            .to_string();
        if kind != self.kind.kind || api_version != want_version {
            return Err(Status::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): {api_version}, Kind={kind}",
                self.kind.kind
            ))
            .into());
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert("kind".into(), Value::from(self.kind.kind));
            m.insert("apiVersion".into(), Value::from(want_version));
        }
        Ok(())
    }
}

/// The OpenAPI `$ref` prefix of `crd_builtin`'s definitions.
const REF_PREFIX: &str = "#/components/schemas/";

/// Follows a `$ref` (bare or in a one-element `allOf`) to its definition, with its name.
fn resolve<'a>(
    defs: &'a BTreeMap<String, Value>,
    schema: &'a Value,
) -> (&'a Value, Option<&'a str>) {
    let target = schema.get("$ref").or_else(|| {
        schema
            .get("allOf")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 1)
            .and_then(|a| a[0].get("$ref"))
    });
    match target
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(REF_PREFIX))
        .and_then(|name| defs.get_key_value(name))
    {
        Some((name, def)) => (def, Some(name.as_str())),
        None => (schema, None),
    }
}

/// `v1.Container` for `io.k8s.api.core.v1.Container`, as Go prints a named type.
fn go_named(def: &str) -> String {
    let mut parts = def.rsplit('.');
    let ty = parts.next().unwrap_or(def);
    match parts.next() {
        Some(pkg) => format!("{pkg}.{ty}"),
        None => ty.to_string(),
    }
}

/// The Go type a schema decodes into (`int32`, `map[string]string`, `[]v1.Container`, ...).
fn go_type(defs: &BTreeMap<String, Value>, schema: &Value) -> String {
    let (schema, name) = resolve(defs, schema);
    if let Some(name) = name
        && schema.get("properties").is_some()
    {
        return go_named(name);
    }
    let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
    match schema.get("type").and_then(Value::as_str).unwrap_or("") {
        "string" if format == "byte" => "[]uint8".into(),
        "integer" if format == "int32" || format == "int64" => format.into(),
        "integer" => "int".into(),
        "number" => "float64".into(),
        "boolean" => "bool".into(),
        "array" => format!(
            "[]{}",
            go_type(defs, schema.get("items").unwrap_or(&Value::Null))
        ),
        "object" => match schema.get("additionalProperties") {
            Some(elem) if elem.is_object() => format!("map[string]{}", go_type(defs, elem)),
            _ => "map[string]interface {}".into(),
        },
        _ => "string".into(),
    }
}

/// The first value whose JSON type the kind's Go type cannot hold, in encoding/json's words:
/// `cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`.
/// `path` is the JSON field path (no indices, as Go prints it), `owner` the Go struct holding
/// the field. Values whose types decode specially are parsed as Go parses them
/// ([`crd_core::go_decode`]: `[]byte` fields, quantities, times); int-or-string values and raw
/// extensions are not checked.
fn type_error(
    defs: &BTreeMap<String, Value>,
    schema: &Value,
    v: &Value,
    path: &str,
    owner: &str,
) -> Option<String> {
    use crd_core::go_decode;
    let (resolved, name) = resolve(defs, schema);
    if v.is_null() {
        return None;
    }
    // Types with their own JSON decoding: what it refuses, in Go's words.
    match (name.and_then(|n| n.rsplit('.').next()), v) {
        (Some("Quantity"), Value::String(s)) => {
            return go_decode::quantity(s).err().map(String::from);
        }
        (Some("Quantity"), Value::Number(n)) => {
            return go_decode::quantity(&n.to_string()).err().map(String::from);
        }
        (Some("Time"), Value::String(s)) => return go_decode::time(s, go_decode::RFC3339).err(),
        (Some("MicroTime"), Value::String(s)) => {
            return go_decode::time(s, go_decode::RFC3339_MICRO).err();
        }
        _ => {}
    }
    if resolved.get("x-kubernetes-int-or-string").is_some()
        || resolved
            .get("x-kubernetes-preserve-unknown-fields")
            .is_some()
        || name.is_some_and(|n| n.ends_with(".Time") || n.ends_with(".MicroTime"))
    {
        return None;
    }
    let ty = resolved.get("type").and_then(Value::as_str).unwrap_or("");
    let format = resolved.get("format").and_then(Value::as_str).unwrap_or("");
    let fits = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" | "number" => v.is_number(),
        _ => true,
    };
    let unmarshal = |what: String| {
        Some(format!(
            "json: cannot unmarshal {what} into Go struct field {owner}.{path} of type {}",
            go_type(defs, schema)
        ))
    };
    if !fits {
        let what = match v {
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            Value::Array(_) => "array",
            _ => "object",
        };
        return unmarshal(what.to_string());
    }
    if ty == "integer"
        && let Value::Number(n) = v
    {
        // What the Go integer type holds: int32, or int64 (`int` is 64 bits too).
        let fits = match format {
            "int32" => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
            _ => n.as_i64().is_some(),
        };
        if !fits {
            return unmarshal(format!("number {n}"));
        }
    }
    if ty == "string"
        && format == "byte"
        && let Value::String(s) = v
    {
        return go_decode::base64_std(s).err();
    }
    match v {
        Value::Object(m) => {
            let owner = name.map_or(owner.to_string(), |n| {
                n.rsplit('.').next().unwrap_or(n).to_string()
            });
            let props = resolved.get("properties").and_then(Value::as_object);
            let elem = resolved
                .get("additionalProperties")
                .filter(|e| e.is_object());
            m.iter().find_map(|(k, child)| {
                if let Some(p) = props.and_then(|p| p.get(k)) {
                    let child_path = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    type_error(defs, p, child, &child_path, &owner)
                } else {
                    elem.and_then(|e| type_error(defs, e, child, path, &owner))
                }
            })
        }
        Value::Array(items) => {
            let item_schema = resolved.get("items")?;
            items
                .iter()
                .find_map(|item| type_error(defs, item_schema, item, path, owner))
        }
        _ => None,
    }
}

/// An object schema's members: its struct fields' schemas and its map values' schema.
fn member_schemas(resolved: &Value) -> (Option<&serde_json::Map<String, Value>>, Option<&Value>) {
    let props = resolved.get("properties").and_then(Value::as_object);
    let elem = resolved
        .get("additionalProperties")
        .filter(|e| e.is_object());
    (props, elem)
}

/// The first value `runtime.DefaultUnstructuredConverter.FromUnstructured` cannot put into
/// the kind's Go type, in its words (`unrecognized type: int32`, `cannot restore slice from
/// map`): how a strategic merge patch's result is decoded upstream. Types with their own
/// decoding (quantities, times, int-or-string, raw extensions) are left to the typed check.
fn converter_error(defs: &BTreeMap<String, Value>, schema: &Value, v: &Value) -> Option<String> {
    let (resolved, name) = resolve(defs, schema);
    if v.is_null()
        || resolved.get("x-kubernetes-int-or-string").is_some()
        || resolved
            .get("x-kubernetes-preserve-unknown-fields")
            .is_some()
        || name.is_some_and(|n| {
            n.ends_with(".Time") || n.ends_with(".MicroTime") || n.ends_with(".Quantity")
        })
    {
        return None;
    }
    let got = match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "slice",
        _ => "map",
    };
    let ty = resolved.get("type").and_then(Value::as_str).unwrap_or("");
    let (props, elem) = member_schemas(resolved);
    match ty {
        "object" if props.is_some() || elem.is_none() => {
            let Value::Object(m) = v else {
                return Some(format!("cannot restore struct from: {got}"));
            };
            let props = props?;
            m.iter()
                .find_map(|(k, child)| converter_error(defs, props.get(k)?, child))
        }
        "object" => {
            let Value::Object(m) = v else {
                return Some(format!("cannot restore map from {got}"));
            };
            let elem = elem?;
            m.values()
                .find_map(|child| converter_error(defs, elem, child))
        }
        "array" => {
            let Value::Array(items) = v else {
                return Some(format!("cannot restore slice from {got}"));
            };
            let item = resolved.get("items")?;
            items.iter().find_map(|i| converter_error(defs, item, i))
        }
        "string" | "integer" | "number" | "boolean" => {
            let want = go_type(defs, schema);
            let integral = v.as_f64().is_some_and(|f| f.fract() == 0.0);
            let fits = match (ty, got) {
                ("string", "string")
                | ("boolean", "bool")
                | ("integer", "int64")
                | ("number", "int64" | "float64") => true,
                ("integer", "float64") => integral,
                _ => false,
            };
            if fits {
                return None;
            }
            // Go converts between numbers and from integers to strings, refusing the rest.
            Some(match (ty, got) {
                ("string" | "integer", "int64" | "float64") => {
                    format!("cannot convert {got} to {want}")
                }
                _ => format!("unrecognized type: {want}"),
            })
        }
        _ => None,
    }
}

/// Step: times and quantities as Go stores them. A built-in object is decoded into typed Go
/// values, so a `metav1.Time` is written back in UTC at seconds precision and a
/// `metav1.MicroTime` in UTC with six fraction digits, whatever offset and precision the client
/// sent (`2026-11-28T07:44:39.5+01:00` becomes `2026-11-28T06:44:39Z`), and a
/// `resource.Quantity` in its canonical form (`0.5` becomes `500m`, `1024Mi` becomes `1Gi`, a
/// number becomes a string). Custom resources keep their strings, as upstream's do. Runs after
/// [`type_error`] accepted every time and quantity.
fn normalize_times(defs: &BTreeMap<String, Value>, schema: &Value, v: &mut Value) {
    let (resolved, name) = resolve(defs, schema);
    match (name.and_then(|n| n.rsplit('.').next()), &mut *v) {
        (Some(kind @ ("Time" | "MicroTime")), Value::String(s)) => {
            if let Some(t) = go_time_utc(s, kind == "MicroTime") {
                *s = t;
            }
            return;
        }
        (Some("Time" | "MicroTime"), _) => return,
        (Some("Quantity"), Value::String(_) | Value::Number(_)) => {
            let text = match &*v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if let Some(q) = crd_core::quantity::Quantity::parse(&text) {
                *v = Value::String(q.to_string());
            }
            return;
        }
        _ => {}
    }
    match v {
        Value::Object(m) => {
            let (props, elem) = member_schemas(resolved);
            for (k, child) in m.iter_mut() {
                if let Some(p) = props.and_then(|p| p.get(k)).or(elem) {
                    normalize_times(defs, p, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = resolved.get("items") {
                for item in items {
                    normalize_times(defs, item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// Step: empty maps and lists as Go's `omitempty` drops them once a built-in object is decoded
/// into its typed value (`labels: {}`, `env: []`, `nodeSelector: {}`): a struct field whose
/// schema is a map or a list and that the struct does not require goes when empty (map entries
/// and list items stay). `metadata.managedFields` stays: an empty list there asks the field
/// manager to clear them.
fn drop_empty_collections(defs: &BTreeMap<String, Value>, schema: &Value, v: &mut Value) {
    let (resolved, name) = resolve(defs, schema);
    match v {
        Value::Object(m) => {
            let (props, elem) = member_schemas(resolved);
            let required = |k: &str| {
                resolved
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|f| f == k))
            };
            let object_meta = name == Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
            m.retain(|k, child| {
                if object_meta && k == "managedFields" {
                    return true;
                }
                let Some(p) = props.and_then(|p| p.get(k)) else {
                    if let Some(e) = elem {
                        drop_empty_collections(defs, e, child);
                    }
                    return true;
                };
                drop_empty_collections(defs, p, child);
                let (field, _) = resolve(defs, p);
                let collection = field.get("type") == Some(&json!("array"))
                    || (field.get("type") == Some(&json!("object"))
                        && field.get("properties").is_none()
                        && field.get("additionalProperties").is_some());
                !(collection && !required(k) && super::meta::is_empty_collection(child))
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = resolved.get("items") {
                for item in items {
                    drop_empty_collections(defs, item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// A time as Go's `metav1.Time` (`micro` false) or `metav1.MicroTime` encodes it: UTC,
/// fractions truncated to seconds or to microseconds.
fn go_time_utc(text: &str, micro: bool) -> Option<String> {
    let ts: jiff::Timestamp = text.trim().parse().ok()?;
    Some(if micro {
        crate::audit::event::micro_time(ts)
    } else {
        super::meta::rfc3339_seconds(ts)
    })
}

#[async_trait::async_trait]
impl Strategy for BuiltinStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    /// The kind's own schema, as upstream types a built-in object for server-side apply: lists
    /// with a list type or a merge key merge by it (`containers` by `name`), and a field the
    /// kind does not declare refuses the configuration.
    fn apply_schema(&self) -> &crd_merge::apply::Schema {
        self.apply_schema
            .get_or_init(|| crd_merge::apply::Schema::from_json_schema(self.kind.bare_schema()))
    }

    /// A kind with a status subresource resets as its `PrepareForUpdate` does (upstream's
    /// `GetResetFields`): the main endpoint keeps the stored `status`, `/status` the stored
    /// `spec` (and a Pod's deletion timestamp and owner references), so neither write's
    /// manager is recorded as owning what it could not change.
    fn reset_fields(&self, sub: Subresource) -> Option<&crd_merge::apply::FieldSet> {
        let resets = self
            .status_resets
            .as_ref()
            .unwrap_or_else(|| super::StatusResetFields::shared());
        self.kind.status.then(|| resets.of(sub))
    }

    fn answerer(&self, sub: Option<&str>) -> Option<&dyn super::reviews::Answer> {
        super::reviews::subresource_answer(self.kind.group, self.kind.plural, sub?)
    }

    fn authorize_write(
        &self,
        authorizer: &crate::authz::Authorizer,
        user: &crate::auth::User,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        use crate::authz::rbac::{GROUP, RbacKind, escalation};
        let Some(kind) =
            RbacKind::from_resource(self.kind.plural).filter(|_| self.kind.group == GROUP)
        else {
            return Ok(());
        };
        let write = escalation::Write {
            kind,
            namespace: super::meta::namespace(new),
            name: super::meta::name(new),
        };
        escalation::guard(authorizer, user, write, new, old).map_err(ApiError::Status)
    }

    fn admit(&self, obj: &mut Value, how: &Admission) -> Result<Vec<String>, ApiError> {
        self.check_type_meta(obj)?;
        let defs = crd_builtin::schema::definitions();
        let root = serde_json::json!({ "$ref": format!("{REF_PREFIX}{}", self.kind.definition) });
        if let Some(e) = type_error(defs, &root, obj, "", self.kind.kind) {
            return Err(Status::bad_request(format!(
                "{kind} in version {v} cannot be handled as a {kind}: {e}",
                kind = self.kind.kind,
                v = crd_core::field::go_quote(self.kind.version),
            ))
            .into());
        }
        normalize_times(defs, &root, obj);
        drop_empty_collections(defs, &root, obj);
        let warnings = pipeline::prune_with_schema(
            self.kind.bare_schema(),
            self.kind.kind,
            self.kind.version,
            obj,
            how,
        )?;
        self.kind.apply_defaults(obj);
        Ok(warnings)
    }

    fn patched_decode_error(&self, obj: &Value, strategic: bool) -> Option<String> {
        let defs = crd_builtin::schema::definitions();
        let root = serde_json::json!({ "$ref": format!("{REF_PREFIX}{}", self.kind.definition) });
        if strategic {
            converter_error(defs, &root, obj)
        } else {
            type_error(defs, &root, obj, "", self.kind.kind)
        }
    }

    fn prepare_create(&self, obj: &mut Value, user: &crate::auth::User) {
        self.kind.prepare_create(obj);
        self.kind.record_requester(
            obj,
            &crd_builtin::certificates::Requester {
                name: &user.name,
                uid: &user.uid,
                groups: &user.groups,
                extra: &user.extra,
            },
        );
    }

    fn validate_create(&self, obj: &Value) -> ErrorList {
        self.kind.validate(obj, None)
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, sub: Subresource) {
        match sub {
            Subresource::Approval => {
                self.kind.prepare_subresource_update(new, old, sub.name());
            }
            _ => self
                .kind
                .prepare_update(new, old, sub == Subresource::Status),
        }
    }

    fn validate_update(&self, new: &Value, old: &Value, sub: Subresource) -> ErrorList {
        match sub {
            Subresource::Status => self.kind.validate_status_update(new, old),
            Subresource::Approval => self.kind.validate_subresource_update(new, old, sub.name()),
            _ => self.kind.validate(new, Some(old)),
        }
    }

    fn serves_subresource(&self, sub: Subresource) -> bool {
        self.kind.extra_subresources.contains(&sub.name())
    }

    /// The kind row's write check as the authorizer's attributes; refusals are
    /// `admission.NewForbidden`'s 403.
    fn write_permission(
        &self,
        sub: Subresource,
        new: &Value,
        old: Option<&Value>,
    ) -> Option<WritePermission> {
        let check = self.kind.write_check(new, old, sub.name())?;
        let forbidden = |message: &str| -> ApiError {
            Status::forbidden(&self.info.group_resource(), super::meta::name(new), message).into()
        };
        Some(match check {
            crd_builtin::prepare::WriteCheck::Refuse(message) => WritePermission {
                any_of: Vec::new(),
                refusal: forbidden(&message),
            },
            crd_builtin::prepare::WriteCheck::Ask {
                verb,
                resource,
                names,
                refusal,
            } => WritePermission {
                any_of: names
                    .into_iter()
                    .map(|name| crate::authz::Attributes::Resource {
                        verb: verb.into(),
                        group: self.kind.group.into(),
                        version: "*".into(),
                        resource: resource.into(),
                        namespace: None,
                        name: Some(name),
                    })
                    .collect(),
                refusal: forbidden(&refusal),
            },
        })
    }

    fn allow_unconditional_update(&self) -> bool {
        self.kind.allow_unconditional_update()
    }

    fn allow_create_on_update(&self) -> bool {
        self.kind.allow_create_on_update()
    }

    fn returns_deleted_object(&self) -> bool {
        self.kind.returns_deleted_object()
    }

    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        self.kind.grace_period(obj, requested)
    }

    fn read_shape(&self, obj: &mut Value) {
        if self.kind.stored_as.is_some() {
            *obj = crd_builtin::from_stored(self.kind, obj);
        }
        self.kind.apply_defaults(obj);
    }

    fn write_shape(&self, obj: Value) -> Value {
        if self.kind.stored_as.is_some() {
            crd_builtin::to_stored(self.kind, &obj)
        } else {
            obj
        }
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        // Rows are computed whole by the kind's printer (`render_table`).
        Vec::new()
    }

    fn render_table(
        &self,
        objects: &[Value],
        include: IncludeObject,
        with_headers: bool,
        list_meta: Value,
    ) -> Value {
        let now = jiff::Timestamp::now();
        let rows = objects
            .iter()
            .map(|o| Row {
                cells: self.kind.cells(o, now),
                conditions: self.kind.row_conditions(o),
            })
            .collect();
        crate::table::assemble(
            &self.kind.column_definitions(),
            rows,
            objects,
            include,
            with_headers,
            list_meta,
        )
    }

    fn field_value(&self, obj: &Value, field: &str) -> Result<String, UnsupportedField> {
        if !self.kind.supports_field(field) {
            return Err(UnsupportedField);
        }
        Ok(self.kind.field_value(obj, field).unwrap_or_default())
    }

    fn patch_types(&self) -> &'static [PatchType] {
        super::BUILTIN_PATCH_TYPES
    }

    fn decode_protobuf(&self, body: &[u8]) -> Option<Result<Value, String>> {
        crate::protobuf::decode_builtin(body, &self.kind.api_version(), self.kind.kind)
    }

    fn decode_protobuf_for(&self, body: &[u8], sub: Subresource) -> Option<Result<Value, String>> {
        let api_version = self.kind.api_version();
        if sub == Subresource::Status
            && let Some(decoded) =
                crate::protobuf::decode_builtin_status(body, &api_version, self.kind.kind)
        {
            return Some(decoded);
        }
        if sub == Subresource::Status && crate::protobuf::skips_status(&api_version, self.kind.kind)
        {
            return Some(Err(format!(
                "the status of a protobuf {api_version} {} is not read by this server (send the object as JSON or YAML)",
                self.kind.kind
            )));
        }
        self.decode_protobuf(body)
    }

    fn schema(&self) -> Option<&Value> {
        Some(self.kind.bare_schema())
    }

    fn scale(&self) -> Option<&ScalePaths> {
        self.scale.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::options::FieldValidation;
    use serde_json::json;

    fn strategy(group: &str, plural: &str) -> BuiltinStrategy {
        BuiltinStrategy::new(crd_builtin::lookup(group, plural).expect("row"))
    }

    fn how(field_validation: FieldValidation) -> Admission {
        Admission {
            sub: Subresource::Main,
            field_validation,
            patch: false,
            patch_value: None,
        }
    }

    /// Regression: a protobuf `/status` write of a kind whose tables skip the status answered
    /// 200 and dropped the status; it is refused, and main-resource writes still decode.
    #[test]
    fn protobuf_status_writes_are_refused_not_dropped() {
        let pods = strategy("", "pods");
        let body = b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x00";
        let err = pods
            .decode_protobuf_for(body, Subresource::Status)
            .expect("a protobuf kind")
            .unwrap_err();
        assert!(
            err.contains("status of a protobuf v1 Pod is not read"),
            "{err}"
        );
        assert!(
            pods.decode_protobuf_for(body, Subresource::Main)
                .expect("a protobuf kind")
                .is_ok()
        );
    }

    /// Regression: built-in objects kept quantities as written (`0.5`, `1024Mi`, numbers);
    /// upstream stores their canonical strings.
    #[test]
    fn quantities_are_stored_in_canonical_form() {
        let kind = crd_builtin::get(crd_builtin::KindId::ResourceQuota);
        let defs = crd_builtin::schema::definitions();
        let root = json!({ "$ref": format!("{REF_PREFIX}{}", kind.definition) });
        let mut obj = json!({"spec": {"hard": {"requests.cpu": "0.5", "requests.memory": "1024Mi",
            "pods": 10, "limits.cpu": "2"}}});
        normalize_times(defs, &root, &mut obj);
        assert_eq!(
            obj,
            json!({"spec": {"hard": {"requests.cpu": "500m", "requests.memory": "1Gi",
                "pods": "10", "limits.cpu": "2"}}})
        );
    }

    /// Regression: built-in objects kept the client's offset and precision in their times;
    /// upstream stores `metav1.Time` in UTC at seconds and `metav1.MicroTime` at microseconds.
    #[test]
    fn times_are_stored_as_go_encodes_them() {
        let cases = [
            (
                "2026-11-28T07:44:39.123456+01:00",
                false,
                Some("2026-11-28T06:44:39Z"),
            ),
            (
                "2026-11-28T07:44:39.999+05:30",
                false,
                Some("2026-11-28T02:14:39Z"),
            ),
            ("2026-11-28T07:44:39Z", false, Some("2026-11-28T07:44:39Z")),
            (
                "2026-11-28T07:44:39.123456+01:00",
                true,
                Some("2026-11-28T06:44:39.123456Z"),
            ),
            (
                "2026-11-28T07:44:39.1234567Z",
                true,
                Some("2026-11-28T07:44:39.123456Z"),
            ),
            (
                "2026-11-28T07:44:39Z",
                true,
                Some("2026-11-28T07:44:39.000000Z"),
            ),
            (
                "1969-12-31T23:59:59.5Z",
                false,
                Some("1969-12-31T23:59:59Z"),
            ),
            ("not a time", false, None),
        ];
        for (text, micro, want) in cases {
            assert_eq!(go_time_utc(text, micro).as_deref(), want, "{text}");
        }

        let how = how(FieldValidation::Strict);
        let mut lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a",
            "acquireTime": "2026-11-28T07:44:39.123456+01:00",
            "renewTime": "2026-11-28T07:44:40.500000+01:00"}});
        strategy("coordination.k8s.io", "leases")
            .admit(&mut lease, &how)
            .unwrap();
        assert_eq!(lease["spec"]["acquireTime"], "2026-11-28T06:44:39.123456Z");
        assert_eq!(lease["spec"]["renewTime"], "2026-11-28T06:44:40.500000Z");

        // Times inside lists and maps: a Deployment's conditions, an Event's timestamps.
        let mut deployment = json!({"metadata": {"name": "d"}, "spec": {"selector": {}, "template": {}},
            "status": {"conditions": [{"type": "Available", "status": "True",
                "lastUpdateTime": "2026-11-28T07:44:39.999+05:30"}]}});
        strategy("apps", "deployments")
            .admit(&mut deployment, &how)
            .unwrap();
        assert_eq!(
            deployment["status"]["conditions"][0]["lastUpdateTime"],
            "2026-11-28T02:14:39Z"
        );
        let mut event = json!({"metadata": {"name": "e"}, "involvedObject": {},
            "firstTimestamp": "2026-11-28T07:44:39+01:00", "eventTime": "2026-11-28T07:44:39.250000+01:00"});
        strategy("", "events").admit(&mut event, &how).unwrap();
        assert_eq!(event["firstTimestamp"], "2026-11-28T06:44:39Z");
        assert_eq!(event["eventTime"], "2026-11-28T06:44:39.250000Z");
    }

    #[test]
    fn admit_fills_type_meta_prunes_and_defaults() {
        let s = strategy("", "secrets");
        // (body in, admitted body or error message, warnings)
        let cases = [
            (
                json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}),
                Ok(
                    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                          "data": {"k": "dg=="}, "type": "Opaque"}),
                ),
                FieldValidation::Strict,
            ),
            (
                json!({"metadata": {"name": "s"}, "extra": 1}),
                Err(
                    "Secret in version \"v1\" cannot be handled as a Secret: strict decoding error: unknown field \"extra\"",
                ),
                FieldValidation::Strict,
            ),
            (
                json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "s"}}),
                Err(
                    "the object provided is unrecognized (must be of type Secret): v1, Kind=ConfigMap",
                ),
                FieldValidation::Strict,
            ),
            (
                json!({"metadata": {"name": "s"}, "extra": 1}),
                Ok(
                    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                          "type": "Opaque"}),
                ),
                FieldValidation::Ignore,
            ),
        ];
        for (body, want, fv) in cases {
            let mut obj = body.clone();
            let got = s.admit(&mut obj, &how(fv));
            match want {
                Ok(v) => {
                    assert!(got.is_ok(), "{body}");
                    assert_eq!(obj, v, "{body}");
                }
                Err(msg) => {
                    let st = got.unwrap_err().to_status().unwrap();
                    assert_eq!(st.message, msg, "{body}");
                    assert_eq!(st.code, 400);
                }
            }
        }
        let mut obj = json!({"metadata": {"name": "s"}, "extra": 1});
        assert_eq!(
            s.admit(&mut obj, &how(FieldValidation::Warn)).unwrap(),
            vec!["unknown field \"extra\"".to_string()]
        );
    }

    #[test]
    fn wrong_json_types_are_decoding_errors_as_upstream() {
        // (group, plural, body, message after "<Kind> in version \"v1\" cannot be handled as a <Kind>: ")
        let cases = [
            (
                "",
                "configmaps",
                json!({"metadata": {"name": "t"}, "data": "x"}),
                "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string",
            ),
            (
                "",
                "configmaps",
                json!({"metadata": {"name": 5}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string",
            ),
            (
                "apps",
                "deployments",
                json!({"metadata": {"name": "d"}, "spec": {"replicas": "3"}}),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                "apps",
                "deployments",
                json!({"metadata": {"name": "d"}, "spec": {"template": {"metadata": {"labels": {"app": true}}}}}),
                "json: cannot unmarshal bool into Go struct field ObjectMeta.spec.template.metadata.labels of type string",
            ),
            (
                "apps",
                "deployments",
                json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": 1}]}}}}),
                "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.name of type string",
            ),
            (
                "apps",
                "deployments",
                json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": {}}}}}),
                "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
            ),
            (
                "apps",
                "deployments",
                json!({"metadata": {"name": "d"}, "spec": {"replicas": 1.5}}),
                "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
        ];
        for (group, plural, body, want) in cases {
            let s = strategy(group, plural);
            let mut obj = body.clone();
            let st = s
                .admit(&mut obj, &how(FieldValidation::Strict))
                .unwrap_err()
                .to_status()
                .unwrap();
            assert_eq!(st.code, 400, "{body}");
            let kind = s.info().kind.clone();
            assert_eq!(
                st.message,
                format!("{kind} in version \"v1\" cannot be handled as a {kind}: {want}"),
                "{body}"
            );
        }
        // Values that decode specially are left to validation.
        let mut ok = json!({"metadata": {"name": "d", "creationTimestamp": null},
            "spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
                     "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}});
        assert!(
            strategy("apps", "deployments")
                .admit(&mut ok, &how(FieldValidation::Strict))
                .is_ok()
        );
    }

    #[test]
    fn events_v1_are_stored_as_core_events() {
        let s = strategy("events.k8s.io", "events");
        let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"}, "note": "hello",
            "regarding": {"kind": "Pod", "name": "p"}, "reason": "R", "type": "Normal",
            "eventTime": "2024-01-01T00:00:00.000000Z", "action": "A",
            "reportingController": "c", "reportingInstance": "i"});
        let stored = s.write_shape(v1.clone());
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["message"], "hello");
        assert_eq!(stored["involvedObject"]["name"], "p");
        let mut back = stored.clone();
        s.read_shape(&mut back);
        assert_eq!(back["note"], "hello");
        assert_eq!(back["regarding"]["name"], "p");
        assert_eq!(s.field_value(&back, "regarding.name"), Ok("p".into()));
        assert_eq!(
            s.field_value(&back, "involvedObject.name"),
            Err(UnsupportedField)
        );
        let core = strategy("", "events");
        let mut same = stored;
        core.read_shape(&mut same);
        assert_eq!(
            core.field_value(&same, "involvedObject.name"),
            Ok("p".into())
        );
    }

    #[test]
    fn tables_come_from_the_kind_printer() {
        let s = strategy("", "configmaps");
        let cm = json!({"metadata": {"name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"},
                        "data": {"a": "b", "c": "d"}});
        let t = s.render_table(&[cm], IncludeObject::None, true, json!({}));
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["Name", "Data", "Age"]);
        assert_eq!(t["rows"][0]["cells"][0], "x");
        assert_eq!(t["rows"][0]["cells"][1], 2);
    }

    #[test]
    fn deployments_have_scale_and_strategic_merge_metadata() {
        let s = strategy("apps", "deployments");
        assert_eq!(
            s.scale().and_then(|p| p.label_selector.clone()),
            Some(".spec.selector".to_string())
        );
        let containers = s
            .schema()
            .and_then(|v| {
                v.pointer(
                    "/properties/spec/properties/template/properties/spec/properties/containers",
                )
            })
            .unwrap();
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert!(strategy("", "configmaps").scale().is_none());
        assert!(s.patch_types().contains(&PatchType::StrategicMerge));
    }
}
