//! The `CustomResourceDefinition` object's own v1 defaulting and validation
//! (apiextensions-apiserver `pkg/apis/apiextensions/v1/defaults.go` and
//! `pkg/apis/apiextensions/validation/validation.go`).
//!
//! Upstream validates the *internal* type, after a conversion that hoists a schema,
//! subresources or printer columns shared by every version to the top level. Error paths
//! therefore read `spec.validation.openAPIV3Schema…` for single-version CRDs; [`Layout`] decides
//! which path each part is reported under, so that our messages match byte for byte.

mod conversion;
pub mod v1beta1;

pub use conversion::{validate_webhook_service_parts, validate_webhook_url};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceSubresources,
};
use serde_json::{Value, json};

use crate::field::{ErrorList, FieldError, Path};
use crate::validation::{
    NameValidation, Scope, is_dns1035_label, is_dns1123_subdomain, validate_object_meta,
    validate_object_meta_update,
};

/// The annotation protected API groups need (KEP 1111).
pub const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Applies the v1 defaults (`SetDefaults_CustomResourceDefinition`) to a decoded CRD body.
pub fn set_defaults(obj: &mut Value) {
    if let Some(names) = obj
        .pointer_mut("/spec/names")
        .and_then(Value::as_object_mut)
    {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            names.insert("singular".into(), Value::from(kind.to_lowercase()));
        }
        if !kind.is_empty()
            && names
                .get("listKind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        {
            names.insert("listKind".into(), Value::from(format!("{kind}List")));
        }
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let conversion = spec
            .entry("conversion")
            .or_insert_with(|| json!({"strategy": "None"}));
        if conversion.is_null() {
            *conversion = json!({"strategy": "None"});
        }
        if let Some(service) = conversion
            .pointer_mut("/webhook/clientConfig/service")
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), Value::from(443));
        }
    }
    default_stored_versions(obj);
}

/// Defaults an empty `status.storedVersions` to the storage version, as a CRD create does in
/// both API versions (v1 and v1beta1 share this step).
pub(crate) fn default_stored_versions(obj: &mut Value) {
    let storage = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .and_then(|v| v.get("name").cloned())
        });
    if let (Some(storage), Some(root)) = (storage, obj.as_object_mut()) {
        let status = root.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            let empty = status
                .get("storedVersions")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            if empty {
                status.insert("storedVersions".into(), json!([storage]));
            }
        }
    }
}

/// The API version a CRD write came through: upstream relaxes some rules for v1beta1
/// (`requestGV == v1beta1.SchemeGroupVersion` in `validation.go`, release-1.21).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RequestVersion {
    /// `apiextensions.k8s.io/v1`.
    #[default]
    V1,
    /// `apiextensions.k8s.io/v1beta1` (served behind `--runtime-config`): no schema required
    /// unless pruning, `preserveUnknownFields: true` allowed, no API-approval check.
    V1beta1,
}

/// Which rules are enforced; on update each is relaxed when the old object already broke it.
#[derive(Clone, Copy, Debug)]
struct Options {
    require_schema: bool,
    require_recognized_review_version: bool,
    v1beta1: bool,
}

/// Where shared parts of the versions are reported (see the module documentation).
struct Layout {
    schema_shared: bool,
    subresources_shared: bool,
    columns_shared: bool,
}

impl Layout {
    fn of(spec: &CustomResourceDefinitionSpec) -> Self {
        fn all_equal<T: PartialEq>(
            vs: &[CustomResourceDefinitionVersion],
            f: impl Fn(&CustomResourceDefinitionVersion) -> T,
        ) -> bool {
            match vs.split_first() {
                Some((first, rest)) => {
                    let a = f(first);
                    rest.iter().all(|v| f(v) == a)
                }
                None => false,
            }
        }
        let vs = &spec.versions;
        Layout {
            schema_shared: all_equal(vs, |v| v.schema.clone()),
            subresources_shared: all_equal(vs, |v| v.subresources.clone()),
            columns_shared: all_equal(vs, |v| v.additional_printer_columns.clone()),
        }
    }
}

/// Validates a CRD on create (`ValidateCustomResourceDefinition`).
pub fn validate_create(crd: &CustomResourceDefinition) -> ErrorList {
    validate_create_at(crd, RequestVersion::V1)
}

/// [`validate_create`] for a write through the given API version (the v1beta1 object
/// converted to v1 first).
pub fn validate_create_at(crd: &CustomResourceDefinition, at: RequestVersion) -> ErrorList {
    let v1beta1 = at == RequestVersion::V1beta1;
    let opts = Options {
        require_schema: !v1beta1,
        require_recognized_review_version: true,
        v1beta1,
    };
    let mut errs = validate_metadata(crd);
    errs.extend(validate_spec(&crd.spec, opts, None));
    errs.extend(validate_status_names(crd));
    errs.extend(validate_stored_versions(crd));
    if !v1beta1 {
        errs.extend(validate_approval(crd, None));
    }
    errs
}

/// Validates a CRD update (`ValidateCustomResourceDefinitionUpdate`), with upstream's ratchets.
pub fn validate_update(
    new: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
) -> ErrorList {
    validate_update_at(new, old, RequestVersion::V1)
}

/// [`validate_update`] for a write through the given API version.
pub fn validate_update_at(
    new: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
    at: RequestVersion,
) -> ErrorList {
    let v1beta1 = at == RequestVersion::V1beta1;
    let opts = Options {
        v1beta1,
        require_schema: !v1beta1
            && old.spec.versions.iter().all(|v| {
                v.schema
                    .as_ref()
                    .is_some_and(|s| s.open_api_v3_schema.is_some())
            }),
        require_recognized_review_version: old
            .spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .is_none_or(|w| has_recognized_review_version(&w.conversion_review_versions)),
    };
    let meta_new = serde_json::to_value(&new.metadata).unwrap_or(Value::Null);
    let meta_old = serde_json::to_value(&old.metadata).unwrap_or(Value::Null);
    let mut errs = validate_object_meta_update(&meta_new, &meta_old, &Path::new("metadata"));
    errs.extend(validate_metadata(new));
    errs.extend(validate_spec(&new.spec, opts, Some(&old.spec)));

    let spec = Path::new("spec");
    if is_established(old) {
        if new.spec.scope != old.spec.scope {
            errs.push(FieldError::invalid(
                &spec.child("scope"),
                new.spec.scope.clone(),
                "field is immutable",
            ));
        }
        if new.spec.names.kind != old.spec.names.kind {
            errs.push(FieldError::invalid(
                &spec.child("names").child("kind"),
                new.spec.names.kind.clone(),
                "field is immutable",
            ));
        }
    }
    if new.spec.group != old.spec.group {
        errs.push(FieldError::invalid(
            &spec.child("group"),
            new.spec.group.clone(),
            "field is immutable",
        ));
    }
    if new.spec.names.plural != old.spec.names.plural {
        errs.push(FieldError::invalid(
            &spec.child("names").child("plural"),
            new.spec.names.plural.clone(),
            "field is immutable",
        ));
    }
    errs.extend(validate_status_names(new));
    errs.extend(validate_stored_versions(new));
    if !v1beta1 {
        errs.extend(validate_approval(new, Some(old)));
    }
    errs
}

/// Whether the CRD has the condition `Established=True`.
pub fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

fn validate_metadata(crd: &CustomResourceDefinition) -> ErrorList {
    let meta = serde_json::to_value(&crd.metadata).unwrap_or(Value::Null);
    let path = Path::new("metadata");
    let mut errs = validate_object_meta(
        &meta,
        Scope::Cluster,
        NameValidation::Dns1123Subdomain,
        &path,
    );
    let name = crd.metadata.name.as_deref().unwrap_or("");
    let required = format!("{}.{}", crd.spec.names.plural, crd.spec.group);
    if !name.is_empty() && name != required {
        errs.push(FieldError::invalid(
            &path.child("name"),
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    errs
}

fn has_recognized_review_version(versions: &[String]) -> bool {
    versions.iter().any(|v| v == "v1" || v == "v1beta1")
}

fn validate_spec(
    spec: &CustomResourceDefinitionSpec,
    opts: Options,
    old: Option<&CustomResourceDefinitionSpec>,
) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();

    if spec.group.is_empty() {
        errs.push(FieldError::required(&path.child("group"), ""));
    } else {
        let msgs = is_dns1123_subdomain(&spec.group);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("group"),
                spec.group.clone(),
                msgs.join(","),
            ));
        } else if spec.group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                &path.child("group"),
                spec.group.clone(),
                "should be a domain with at least one dot",
            ));
        }
    }

    match spec.scope.as_str() {
        "" => errs.push(FieldError::required(&path.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("scope"),
            other,
            &["Cluster", "Namespaced"],
        )),
    }

    let layout = Layout::of(spec);
    let versions_path = path.child("versions");
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    let mut storage_count = 0;
    for (i, v) in spec.versions.iter().enumerate() {
        let vp = versions_path.index(i);
        if v.storage {
            storage_count += 1;
        }
        let msgs = is_dns1035_label(&v.name);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &vp.child("name"),
                v.name.clone(),
                msgs.join(","),
            ));
        }
        if !seen.insert(v.name.clone()) {
            unique = false;
        }
        for m in deprecation_warning_messages(
            v.deprecated.unwrap_or(false),
            v.deprecation_warning.as_deref(),
        ) {
            errs.push(FieldError::invalid(
                &vp.child("deprecationWarning"),
                v.deprecation_warning.clone().unwrap_or_default(),
                m,
            ));
        }
        if !layout.subresources_shared
            && let Some(sub) = &v.subresources
        {
            errs.extend(validate_subresources(sub, &vp.child("subresources")));
        }
        if !layout.columns_shared
            && let Some(cols) = &v.additional_printer_columns
        {
            errs.extend(validate_columns(
                cols,
                &vp.child("additionalPrinterColumns"),
            ));
        }
    }
    if opts.v1beta1 && !spec.preserve_unknown_fields.unwrap_or(false) {
        // Pruning needs a schema for every served version.
        for (i, v) in spec.versions.iter().enumerate() {
            if v.served
                && v.schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .is_none()
            {
                errs.push(FieldError::required(
                    &versions_path
                        .index(i)
                        .child("schema")
                        .child("openAPIV3Schema"),
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if opts.require_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            if v.schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .is_none()
            {
                errs.push(FieldError::required(
                    &versions_path
                        .index(i)
                        .child("schema")
                        .child("openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    }
    let versions_json = || serde_json::to_value(&spec.versions).unwrap_or(Value::Null);
    if !unique {
        errs.push(FieldError::invalid(
            &versions_path,
            versions_json(),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(FieldError::invalid(
            &versions_path,
            versions_json(),
            "must have exactly one version marked as storage version",
        ));
    }

    let names_path = path.child("names");
    let n = &spec.names;
    for (field, value) in [
        ("plural", n.plural.as_str()),
        ("singular", n.singular.as_deref().unwrap_or("")),
        ("kind", n.kind.as_str()),
        ("listKind", n.list_kind.as_deref().unwrap_or("")),
    ] {
        if value.is_empty() {
            errs.push(FieldError::required(&names_path.child(field), ""));
        }
    }
    errs.extend(validate_names(n, &names_path));

    if let Some(first) = spec.versions.first() {
        if layout.subresources_shared
            && let Some(sub) = &first.subresources
        {
            errs.extend(validate_subresources(sub, &path.child("subresources")));
        }
        if layout.columns_shared
            && let Some(cols) = &first.additional_printer_columns
        {
            errs.extend(validate_columns(
                cols,
                &path.child("additionalPrinterColumns"),
            ));
        }
    }

    errs.extend(conversion::validate(
        spec.conversion.as_ref(),
        spec.preserve_unknown_fields.unwrap_or(false),
        opts.require_recognized_review_version,
        &path.child("conversion"),
    ));

    let old_preserve = old.and_then(|o| o.preserve_unknown_fields).unwrap_or(false);
    if spec.preserve_unknown_fields == Some(true) && !old_preserve && !opts.v1beta1 {
        errs.push(FieldError::invalid(
            &path.child("preserveUnknownFields"),
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

/// Where one distinct schema of a CRD is reported: for a schema shared by every version,
/// `spec.validation.openAPIV3Schema` (checked once); otherwise
/// `spec.versions[i].schema.openAPIV3Schema`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaLocation {
    /// The error path of the schema root.
    pub path: Path,
    /// The index in `spec.versions` of a version with this schema.
    pub version: usize,
    /// Whether that version enables the status subresource (it restricts the root schema).
    pub status_subresource: bool,
}

/// The schemas a CRD write must check, with upstream's internal error paths (the structural
/// schema rules themselves live in the `crd-schema` crate).
pub fn schema_locations(spec: &CustomResourceDefinitionSpec) -> Vec<SchemaLocation> {
    let layout = Layout::of(spec);
    let has_schema = |v: &CustomResourceDefinitionVersion| {
        v.schema
            .as_ref()
            .is_some_and(|s| s.open_api_v3_schema.is_some())
    };
    let status = |v: &CustomResourceDefinitionVersion| {
        v.subresources.as_ref().is_some_and(|s| s.status.is_some())
    };
    if layout.schema_shared {
        return spec
            .versions
            .first()
            .filter(|v| has_schema(v))
            .map(|v| SchemaLocation {
                path: Path::new("spec")
                    .child("validation")
                    .child("openAPIV3Schema"),
                version: 0,
                status_subresource: status(v),
            })
            .into_iter()
            .collect();
    }
    spec.versions
        .iter()
        .enumerate()
        .filter(|(_, v)| has_schema(v))
        .map(|(i, v)| SchemaLocation {
            path: Path::new("spec")
                .child("versions")
                .index(i)
                .child("schema")
                .child("openAPIV3Schema"),
            version: i,
            status_subresource: status(v),
        })
        .collect()
}

/// `validateDeprecationWarning`.
fn deprecation_warning_messages(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    let Some(w) = warning else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut out = Vec::new();
    if w.len() > 256 {
        out.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        out.push("must not be an empty string".into());
    }
    for (i, c) in w.char_indices() {
        let printable = c == ' ' || !(c.is_control() || c.is_whitespace());
        if !printable {
            out.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    out
}

fn join_msgs(msgs: &[String]) -> String {
    msgs.join(",")
}

/// `ValidateCustomResourceDefinitionNames`: format checks shared by spec and acceptedNames.
fn validate_names(n: &CustomResourceDefinitionNames, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let label = |field: &str, value: &str, errs: &mut ErrorList| {
        let msgs = is_dns1035_label(value);
        if !value.is_empty() && !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                value,
                join_msgs(&msgs),
            ));
        }
    };
    label("plural", &n.plural, &mut errs);
    label("singular", n.singular.as_deref().unwrap_or(""), &mut errs);
    let mixed = |field: &str, value: &str, errs: &mut ErrorList| {
        let msgs = is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    join_msgs(&msgs)
                ),
            ));
        }
    };
    mixed("kind", &n.kind, &mut errs);
    let list_kind = n.list_kind.as_deref().unwrap_or("");
    mixed("listKind", list_kind, &mut errs);
    for (i, s) in n.short_names.iter().flatten().enumerate() {
        let msgs = is_dns1035_label(s);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("shortNames").index(i),
                s.clone(),
                join_msgs(&msgs),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == list_kind {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, s) in n.categories.iter().flatten().enumerate() {
        let msgs = is_dns1035_label(s);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("categories").index(i),
                s.clone(),
                join_msgs(&msgs),
            ));
        }
    }
    errs
}

fn validate_status_names(crd: &CustomResourceDefinition) -> ErrorList {
    match crd.status.as_ref().and_then(|s| s.accepted_names.as_ref()) {
        Some(names) => validate_names(names, &Path::new("status").child("acceptedNames")),
        None => ErrorList::new(),
    }
}

/// `ValidateCustomResourceDefinitionStoredVersions`: at least one stored version, the current
/// storage version among them, and each still listed in `spec.versions`. Also run on `/status`
/// writes, so that editing storedVersions cannot drop the storage version.
pub fn validate_stored_versions(crd: &CustomResourceDefinition) -> ErrorList {
    let path = Path::new("status").child("storedVersions");
    let given = crd.status.as_ref().and_then(|s| s.stored_versions.clone());
    // Errors carry the list as given (absent: null), as upstream's do.
    let value = given
        .as_ref()
        .map_or(Value::Null, |l| Value::from(l.clone()));
    let stored = given.unwrap_or_default();
    let mut errs = ErrorList::new();
    if stored.is_empty() {
        errs.push(FieldError::invalid(
            &path,
            value,
            "must have at least one stored version",
        ));
        return errs;
    }
    for v in &crd.spec.versions {
        if v.storage && !stored.contains(&v.name) {
            errs.push(FieldError::invalid(
                &path,
                value.clone(),
                format!("must have the storage version {}", v.name),
            ));
        }
    }
    for (i, s) in stored.iter().enumerate() {
        if !crd.spec.versions.iter().any(|v| &v.name == s) {
            errs.push(FieldError::invalid(
                &path.index(i),
                s.clone(),
                format!(
                    "missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"
                ),
            ));
        }
    }
    errs
}

/// Whether a group is protected by the API review process (`*.k8s.io`, `*.kubernetes.io`).
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(PartialEq, Eq)]
enum Approval {
    NotProtected,
    Missing,
    Invalid,
    Approved,
    Bypassed,
}

fn approval_state(crd: &CustomResourceDefinition) -> Approval {
    if !is_protected_group(&crd.spec.group) {
        return Approval::NotProtected;
    }
    match crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(API_APPROVAL_ANNOTATION))
    {
        None => Approval::Missing,
        Some(v) if v.starts_with("unapproved") => Approval::Bypassed,
        Some(v) => match url::Url::parse(v) {
            Ok(u) if u.has_host() => Approval::Approved,
            _ => Approval::Invalid,
        },
    }
}

fn validate_approval(
    crd: &CustomResourceDefinition,
    old: Option<&CustomResourceDefinition>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let state = approval_state(crd);
    if old.is_some_and(|o| approval_state(o) == state) {
        return errs;
    }
    let path = Path::new("metadata")
        .child("annotations")
        .key(API_APPROVAL_ANNOTATION);
    match state {
        Approval::Missing => errs.push(FieldError::required(
            &path,
            format!("protected groups must have approval annotation {API_APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        Approval::Invalid => {
            let v = crd
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(API_APPROVAL_ANNOTATION))
                .cloned()
                .unwrap_or_default();
            errs.push(FieldError::invalid(
                &path,
                v,
                format!("protected groups must have approval annotation {API_APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
            ));
        }
        _ => {}
    }
    errs
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

/// `ValidateCustomResourceColumnDefinition` for each column.
fn validate_columns(cols: &[CustomResourceColumnDefinition], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, c) in cols.iter().enumerate() {
        let p = path.index(i);
        if c.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if c.type_.is_empty() {
            errs.push(FieldError::required(
                &p.child("type"),
                format!("must be one of {COLUMN_TYPES}"),
            ));
        } else if !COLUMN_TYPES.split(',').any(|t| t == c.type_) {
            errs.push(FieldError::invalid(
                &p.child("type"),
                c.type_.clone(),
                format!("must be one of {COLUMN_TYPES}"),
            ));
        }
        if let Some(f) = c.format.as_deref()
            && !f.is_empty()
            && !COLUMN_FORMATS.split(',').any(|x| x == f)
        {
            errs.push(FieldError::invalid(
                &p.child("format"),
                f,
                format!("must be one of {COLUMN_FORMATS}"),
            ));
        }
        if c.json_path.is_empty() {
            errs.push(FieldError::required(&p.child("JSONPath"), ""));
        } else if !c.json_path.starts_with('.') {
            errs.push(FieldError::invalid(
                &p.child("JSONPath"),
                c.json_path.clone(),
                "must be a simple json path starting with .",
            ));
        }
    }
    errs
}

fn simple_path(value: &str, path: &Path, prefixes: &[&str], detail: &str, errs: &mut ErrorList) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else if !value.starts_with('.') {
        errs.push(FieldError::invalid(
            path,
            value,
            "must be a simple json path starting with .",
        ));
    } else if !prefixes.iter().any(|p| value.starts_with(p)) {
        errs.push(FieldError::invalid(path, value, detail));
    }
}

/// `validateCustomResourceDefinitionSubresources`.
fn validate_subresources(sub: &CustomResourceSubresources, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(scale) = &sub.scale {
        simple_path(
            &scale.spec_replicas_path,
            &path.child("scale.specReplicasPath"),
            &[".spec."],
            "should be a json path under .spec",
            &mut errs,
        );
        simple_path(
            &scale.status_replicas_path,
            &path.child("scale.statusReplicasPath"),
            &[".status."],
            "should be a json path under .status",
            &mut errs,
        );
        if let Some(sel) = &scale.label_selector_path {
            let p = path.child("scale.labelSelectorPath");
            if !sel.starts_with('.') {
                errs.push(FieldError::invalid(
                    &p,
                    sel.clone(),
                    "must be a simple json path starting with .",
                ));
            } else if !sel.starts_with(".spec.") && !sel.starts_with(".status.") {
                errs.push(FieldError::invalid(
                    &p,
                    sel.clone(),
                    "should be a json path under either .spec or .status",
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests;
