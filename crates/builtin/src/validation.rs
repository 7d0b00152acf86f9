//! Validation of the built-in kinds with upstream's field paths and messages
//! (`pkg/apis/core/validation`, `apps/validation`, `batch/validation`, `coordination`,
//! `policy`, `discovery`, `networking`). Objects are validated after [`Kind::apply_defaults`], as
//! upstream validates defaulted internal objects. What is checked, and what upstream checks
//! that is not, is listed in `VALIDATION.md` beside this crate's `Cargo.toml`.

use crd_core::field::go_quote;
use crd_core::validation::{
    NameValidation, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
    is_valid_label_value, validate_annotations, validate_labels, validate_object_meta,
    validate_object_meta_update,
};
use crd_core::{ErrorList, ErrorType, FieldError, Path};
use serde_json::{Map, Value, json};

use crate::{Kind, KindId};

/// The largest total size of a `ConfigMap`'s or `Secret`'s data (`MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";
const SELECTOR_MISMATCH: &str = "`selector` does not match template `labels`";
pub(crate) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const NON_NEGATIVE: &str = "must be greater than or equal to 0";
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

// ---------------------------------------------------------------------------------------------
// Value helpers

pub(crate) fn at<'a>(v: &'a Value, ptr: &str) -> &'a Value {
    v.pointer(ptr).unwrap_or(&Value::Null)
}
pub(crate) fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    at(v, ptr).as_str().unwrap_or("")
}
pub(crate) fn arr<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    at(v, ptr).as_array().map_or(&[], Vec::as_slice)
}
fn map<'a>(v: &'a Value, ptr: &str) -> Option<&'a Map<String, Value>> {
    at(v, ptr).as_object()
}

/// Compound values (maps, selectors, structs) are printed as JSON, as Kubernetes 1.34's
/// `field.Error` does (1.32 and 1.33 printed Go's `%#v`).
pub(crate) fn compound(v: &Value) -> Value {
    v.clone()
}

fn non_negative(v: &Value, path: &Path, errs: &mut ErrorList) {
    if let Some(n) = v.as_i64()
        && n < 0
    {
        errs.push(FieldError::invalid(path, n, NON_NEGATIVE));
    }
}

/// `IsConfigMapKey`.
pub fn is_config_map_key(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push(crd_core::validation::max_len_error(253));
    }
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if !ok {
        errs.push(crd_core::validation::regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key_name"],
        ));
    }
    if key == "." {
        errs.push("must not be '.'".into());
    } else if key == ".." {
        errs.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// `IsValidPortName`.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(crd_core::validation::max_len_error(15));
    }
    if port.is_empty()
        || !port
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

pub(crate) fn port_num(v: &Value, path: &Path, errs: &mut ErrorList) {
    let n = v.as_i64().unwrap_or(0);
    if !(1..=65535).contains(&n) {
        errs.push(FieldError::invalid(path, n, PORT_RANGE));
    }
}

fn protocol(p: &Value, path: &Path, errs: &mut ErrorList) {
    match p.get("protocol").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required(&path.child("protocol"), "")),
        Some(x) if !PROTOCOLS.contains(&x) => errs.push(FieldError::not_supported(
            &path.child("protocol"),
            x,
            PROTOCOLS,
        )),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata

fn validate_meta(kind: &Kind, obj: &Value, old: Option<&Value>) -> ErrorList {
    let path = Path::new("metadata");
    let meta = at(obj, "/metadata");
    let rule = NameValidation::Dns1123Subdomain;
    let mut errs = validate_object_meta(meta, kind.scope, rule, &path);
    if crate::rbac::is_rbac(kind.id) {
        // RBAC names are path segments (`ValidateRBACName`), not DNS subdomains.
        errs.0.retain(|e| {
            !(e.kind == ErrorType::Invalid
                && (e.field == path.child("name") || e.field == path.child("generateName")))
        });
        for field in ["name", "generateName"] {
            let v = s(meta, &format!("/{field}"));
            for m in crate::rbac::path_segment_name_errors(v) {
                errs.push(FieldError::invalid(&path.child(field), v, m));
            }
        }
    }
    if kind.id == KindId::Service {
        // Service names are DNS-1035 labels (`ValidateServiceName`).
        errs.0.retain(|e| {
            !(e.kind == ErrorType::Invalid
                && (e.field == path.child("name") || e.field == path.child("generateName")))
        });
        for (field, prefix) in [("name", false), ("generateName", true)] {
            let v = s(meta, &format!("/{field}"));
            if v.is_empty() {
                continue;
            }
            let masked = if prefix && v.len() > 1 && v.ends_with('-') {
                format!("{}a", &v[..v.len() - 1])
            } else {
                v.to_string()
            };
            for m in is_dns1035_label(&masked) {
                errs.push(FieldError::invalid(&path.child(field), v, m));
            }
        }
    }
    if kind.id == KindId::APIService {
        // The name must be `<version>.<group>` (`ValidateAPIService`'s name function).
        errs.0
            .retain(|e| !(e.kind == ErrorType::Invalid && e.field == path.child("name")));
        let name = s(meta, "/name");
        if !name.is_empty() {
            for m in crate::apiregistration::name_errors(obj) {
                errs.push(FieldError::invalid(&path.child("name"), name, m));
            }
        }
    }
    if kind.id == KindId::CronJob && s(meta, "/name").len() > 52 {
        errs.push(FieldError::invalid(
            &path.child("name"),
            s(meta, "/name"),
            "must be no more than 52 characters",
        ));
    }
    // `validateKubeFinalizerName`: unqualified finalizers must be standard ones.
    for (i, f) in arr(meta, "/finalizers").iter().enumerate() {
        let f = f.as_str().unwrap_or("");
        if !f.contains('/') && !matches!(f, "kubernetes" | "orphan" | "foregroundDeletion") {
            errs.push(FieldError::invalid(
                &path.child("finalizers").index(i),
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    if let Some(old) = old {
        let mut upd = validate_object_meta_update(meta, at(old, "/metadata"), &path);
        upd.extend(errs);
        return upd;
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Label selectors

/// `ValidateLabelSelector` (label values strictly validated).
pub fn validate_label_selector(sel: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if sel.is_null() {
        return errs;
    }
    errs.extend(validate_labels(
        sel.get("matchLabels"),
        &path.child("matchLabels"),
    ));
    for (i, r) in arr(sel, "/matchExpressions").iter().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = arr(r, "/values");
        match s(r, "/operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            op => errs.push(FieldError::invalid(
                &p.child("operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let key = s(r, "/key");
        for m in is_qualified_name(key) {
            errs.push(FieldError::invalid(&p.child("key"), key, m));
        }
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for m in is_valid_label_value(v) {
                errs.push(FieldError::invalid(&p.child("values").index(j), v, m));
            }
        }
    }
    errs
}

fn selector_empty(sel: &Value) -> bool {
    map(sel, "/matchLabels").is_none_or(Map::is_empty) && arr(sel, "/matchExpressions").is_empty()
}

/// Required, valid and non-empty selector that matches the template's labels (apps kinds).
fn workload_selector(spec: &Value, path: &Path, what: &str, errs: &mut ErrorList) {
    let sel = at(spec, "/selector");
    if sel.is_null() {
        errs.push(FieldError::required(&path.child("selector"), ""));
        return;
    }
    errs.extend(validate_label_selector(sel, &path.child("selector")));
    if selector_empty(sel) {
        errs.push(FieldError::invalid(
            &path.child("selector"),
            compound(sel),
            format!("empty selector is invalid for {what}"),
        ));
    }
    template_matches(sel, spec, path, errs);
}

fn template_matches(sel: &Value, spec: &Value, path: &Path, errs: &mut ErrorList) {
    let Ok(selector) = crd_core::labels::Selector::from_label_selector_json(sel) else {
        return;
    };
    let labels = at(spec, "/template/metadata/labels");
    if !selector.is_empty() && !selector.matches_json(Some(labels)) {
        errs.push(FieldError::invalid(
            &path.child("template").child("metadata").child("labels"),
            compound(labels),
            SELECTOR_MISMATCH,
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Pods

fn validate_containers(spec: &Value, path: &Path, errs: &mut ErrorList) {
    let volumes: Vec<&str> = arr(spec, "/volumes")
        .iter()
        .map(|v| s(v, "/name"))
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for (field, required) in [("initContainers", false), ("containers", true)] {
        let list = arr(spec, &format!("/{field}"));
        if required && list.is_empty() {
            errs.push(FieldError::required(&path.child(field), ""));
        }
        for (i, c) in list.iter().enumerate() {
            let p = path.child(field).index(i);
            let name = s(c, "/name");
            if name.is_empty() {
                errs.push(FieldError::required(&p.child("name"), ""));
            } else {
                for m in is_dns1123_label(name) {
                    errs.push(FieldError::invalid(&p.child("name"), name, m));
                }
                if names.contains(&name) {
                    errs.push(FieldError::duplicate(&p.child("name"), name));
                }
                names.push(name);
            }
            let image = s(c, "/image");
            if image.is_empty() {
                errs.push(FieldError::required(&p.child("image"), ""));
            } else if image.trim() != image {
                errs.push(FieldError::invalid(
                    &p.child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
            for (j, port) in arr(c, "/ports").iter().enumerate() {
                let pp = p.child("ports").index(j);
                let pname = s(port, "/name");
                if !pname.is_empty() {
                    for m in is_valid_port_name(pname) {
                        errs.push(FieldError::invalid(&pp.child("name"), pname, m));
                    }
                }
                port_num(at(port, "/containerPort"), &pp.child("containerPort"), errs);
                if let Some(hp) = port.get("hostPort").and_then(Value::as_i64)
                    && hp != 0
                {
                    port_num(&Value::from(hp), &pp.child("hostPort"), errs);
                }
                protocol(port, &pp, errs);
            }
            for (j, e) in arr(c, "/env").iter().enumerate() {
                if s(e, "/name").is_empty() {
                    errs.push(FieldError::required(
                        &p.child("env").index(j).child("name"),
                        "",
                    ));
                }
            }
            for (j, m) in arr(c, "/volumeMounts").iter().enumerate() {
                let mp = p.child("volumeMounts").index(j);
                let vname = s(m, "/name");
                if vname.is_empty() {
                    errs.push(FieldError::required(&mp.child("name"), ""));
                } else if !volumes.contains(&vname) {
                    errs.push(FieldError::not_found(&mp.child("name"), vname));
                }
                if s(m, "/mountPath").is_empty() {
                    errs.push(FieldError::required(&mp.child("mountPath"), ""));
                }
            }
            resource_requirements(at(c, "/resources"), &p.child("resources"), errs);
        }
    }
}

/// A quantity as JSON carries it (a string, or a bare number); `None` when it does not parse.
pub(crate) fn quantity(v: &Value) -> Option<crd_core::quantity::Quantity> {
    match v {
        Value::String(t) => crd_core::quantity::Quantity::parse(t),
        Value::Number(n) => crd_core::quantity::Quantity::parse(&n.to_string()),
        _ => None,
    }
}

/// `ValidateResourceRequirements`' quantity rules: no negative limit or request; a request at
/// most its limit (equal to it for resources that cannot be overcommitted: extended resources
/// and huge pages, which also need a limit). Quantities print in their canonical form, as
/// upstream's `Quantity.String()`. Resources are taken in name order (Go's map order is random).
pub(crate) fn resource_requirements(res: &Value, path: &Path, errs: &mut ErrorList) {
    use crd_core::quantity::Quantity;
    let (lim_path, req_path) = (path.child("limits"), path.child("requests"));
    let limits = res.get("limits").and_then(Value::as_object);
    for (name, v) in limits.into_iter().flatten() {
        if let Some(q) = quantity(v).filter(Quantity::is_negative) {
            errs.push(FieldError::invalid(
                &lim_path.key(name),
                q.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    let requests = res.get("requests").and_then(Value::as_object);
    for (name, v) in requests.into_iter().flatten() {
        let Some(q) = quantity(v) else { continue };
        if q.is_negative() {
            errs.push(FieldError::invalid(
                &req_path.key(name),
                q.to_string(),
                "must be greater than or equal to 0",
            ));
        }
        let native = !name.contains('/') || name.contains("kubernetes.io/");
        let overcommit = native && !name.starts_with("hugepages-");
        match limits.and_then(|l| l.get(name)).and_then(quantity) {
            Some(limit) => {
                let order = q.cmp_value(&limit);
                if !overcommit && order != std::cmp::Ordering::Equal {
                    errs.push(FieldError::invalid(
                        &req_path,
                        q.to_string(),
                        format!("must be equal to {name} limit of {limit}"),
                    ));
                } else if order == std::cmp::Ordering::Greater {
                    errs.push(FieldError::invalid(
                        &req_path,
                        q.to_string(),
                        format!("must be less than or equal to {name} limit of {limit}"),
                    ));
                }
            }
            None if !overcommit => errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
}

fn validate_pod_spec(spec: &Value, path: &Path, errs: &mut ErrorList) {
    let mut vol_names: Vec<&str> = Vec::new();
    for (i, v) in arr(spec, "/volumes").iter().enumerate() {
        let p = path.child("volumes").index(i);
        let name = s(v, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            for m in is_dns1123_label(name) {
                errs.push(FieldError::invalid(&p.child("name"), name, m));
            }
            if vol_names.contains(&name) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
            vol_names.push(name);
        }
    }
    validate_containers(spec, path, errs);
    if let Some(rp) = spec.get("restartPolicy").and_then(Value::as_str)
        && !matches!(rp, "Always" | "OnFailure" | "Never")
    {
        errs.push(FieldError::not_supported(
            &path.child("restartPolicy"),
            rp,
            &["Always", "OnFailure", "Never"],
        ));
    }
    if let Some(dp) = spec.get("dnsPolicy").and_then(Value::as_str)
        && !matches!(
            dp,
            "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None"
        )
    {
        errs.push(FieldError::not_supported(
            &path.child("dnsPolicy"),
            dp,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        ));
    }
    if let Some(sa) = spec.get("serviceAccountName").and_then(Value::as_str)
        && !sa.is_empty()
    {
        for m in is_dns1123_subdomain(sa) {
            errs.push(FieldError::invalid(
                &path.child("serviceAccountName"),
                sa,
                m,
            ));
        }
    }
    if let Some(n) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && n < 1
    {
        errs.push(FieldError::invalid(
            &path.child("activeDeadlineSeconds"),
            n,
            "must be between 1 and 2147483647, inclusive",
        ));
    }
}

/// `ValidatePodTemplateSpec` (labels, annotations, pod spec) at `path` (`spec.template`).
fn validate_template(spec: &Value, path: &Path, errs: &mut ErrorList) {
    let t = at(spec, "/template");
    template_metadata(t, &path.child("metadata"), errs);
    validate_pod_spec(at(t, "/spec"), &path.child("spec"), errs);
}

/// A pod template's labels and annotations, under `mp`.
fn template_metadata(t: &Value, mp: &Path, errs: &mut ErrorList) {
    errs.extend(validate_labels(
        t.pointer("/metadata/labels"),
        &mp.child("labels"),
    ));
    errs.extend(validate_annotations(
        t.pointer("/metadata/annotations"),
        &mp.child("annotations"),
    ));
}

/// `ValidatePodTemplateSpecForStatefulSet`: only the template's labels and annotations (at
/// upstream's paths, without `metadata`). Upstream leaves the pod spec unchecked ("this will
/// check volumes, which we know will fail": mounts of `volumeClaimTemplates` claims name no
/// volume of the template), and so does this; `activeDeadlineSeconds` is refused.
fn stateful_set_template(spec: &Value, path: &Path, errs: &mut ErrorList) {
    let t = at(spec, "/template");
    template_metadata(t, path, errs);
    if !at(t, "/spec/activeDeadlineSeconds").is_null() {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
}

fn restart_always(spec: &Value, path: &Path, errs: &mut ErrorList) {
    let rp = s(spec, "/template/spec/restartPolicy");
    if rp != "Always" {
        errs.push(FieldError::not_supported(
            &path.child("template").child("spec").child("restartPolicy"),
            rp,
            &["Always"],
        ));
    }
}

fn pod_update(new: &Value, old: &Value, errs: &mut ErrorList) {
    // Only images, activeDeadlineSeconds, added tolerations and a few more may change.
    let mut a = at(new, "/spec").clone();
    let mut b = at(old, "/spec").clone();
    for v in [&mut a, &mut b] {
        for field in ["containers", "initContainers"] {
            if let Some(cs) = v.get_mut(field).and_then(Value::as_array_mut) {
                for c in cs {
                    if let Some(m) = c.as_object_mut() {
                        m.remove("image");
                    }
                }
            }
        }
        if let Some(m) = v.as_object_mut() {
            for f in [
                "activeDeadlineSeconds",
                "tolerations",
                "terminationGracePeriodSeconds",
                "schedulingGates",
            ] {
                m.remove(f);
            }
        }
    }
    if a != b {
        errs.push(FieldError::forbidden(
            &Path::new("spec"),
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Per kind

fn data_size(v: &Value, base64: bool) -> usize {
    map(v, "").map_or(0, |m| {
        m.values()
            .map(|x| {
                let t = x.as_str().unwrap_or("");
                if base64 {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD
                        .decode(t)
                        .map_or(t.len(), |b| b.len())
                } else {
                    t.len()
                }
            })
            .sum()
    })
}

fn config_map(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    // `ValidateConfigMapUpdate` checks immutability before re-running `ValidateConfigMap`.
    if let Some(old) = old {
        immutable_data(obj, old, &["data", "binaryData"], errs);
    }
    let mut total = 0;
    for (field, b64) in [("data", false), ("binaryData", true)] {
        if let Some(m) = map(obj, &format!("/{field}")) {
            for key in m.keys() {
                for msg in is_config_map_key(key) {
                    errs.push(FieldError::invalid(
                        &Path::new(field).key(key),
                        key.as_str(),
                        msg,
                    ));
                }
                if field == "data" && map(obj, "/binaryData").is_some_and(|d| d.contains_key(key)) {
                    errs.push(FieldError::invalid(
                        &Path::new("data").key(key),
                        key.as_str(),
                        "duplicate of key present in binaryData",
                    ));
                }
            }
            total += data_size(at(obj, &format!("/{field}")), b64);
        }
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long(&Path::root(), MAX_DATA_SIZE));
    }
}

fn immutable_data(obj: &Value, old: &Value, fields: &[&str], errs: &mut ErrorList) {
    if at(old, "/immutable").as_bool() != Some(true) {
        return;
    }
    if at(obj, "/immutable").as_bool() != Some(true) {
        errs.push(FieldError::forbidden(
            &Path::new("immutable"),
            IMMUTABLE_SET,
        ));
    }
    for f in fields {
        let ptr = format!("/{f}");
        let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(Map::is_empty);
        let (a, b) = (at(obj, &ptr), at(old, &ptr));
        if a != b && !(empty(a) && empty(b)) {
            errs.push(FieldError::forbidden(&Path::new(f), IMMUTABLE_SET));
        }
    }
}

fn secret(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    // `ValidateSecretUpdate`: type and immutability before re-running `ValidateSecret`.
    if let Some(old) = old {
        let (t, ot) = (s(obj, "/type"), s(old, "/type"));
        if t != ot {
            errs.push(FieldError::invalid(
                &Path::new("type"),
                t,
                "field is immutable",
            ));
        }
        immutable_data(obj, old, &["data"], errs);
    }
    let data = Path::new("data");
    let keys: Vec<&String> = map(obj, "/data")
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    for key in &keys {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&data.key(key), key.as_str(), msg));
        }
    }
    if data_size(at(obj, "/data"), true) > MAX_DATA_SIZE {
        errs.push(FieldError::too_long(&data, MAX_DATA_SIZE));
    }
    let has = |k: &str| keys.iter().any(|x| x.as_str() == k);
    match s(obj, "/type") {
        "kubernetes.io/service-account-token"
            if s(
                obj,
                "/metadata/annotations/kubernetes.io~1service-account.name",
            )
            .is_empty() =>
        {
            errs.push(FieldError::required(
                &Path::new("metadata")
                    .child("annotations")
                    .key("kubernetes.io/service-account.name"),
                "",
            ));
        }
        "kubernetes.io/dockercfg" => docker_json(obj, ".dockercfg", errs),
        "kubernetes.io/dockerconfigjson" => docker_json(obj, ".dockerconfigjson", errs),
        // Upstream builds these paths from the literal "data[%s]".
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required(
                &Path::new("data[%s]").key("username"),
                "",
            ));
            errs.push(FieldError::required(
                &Path::new("data[%s]").key("password"),
                "",
            ));
        }
        "kubernetes.io/ssh-auth" if s(obj, "/data/ssh-privatekey").is_empty() => {
            errs.push(FieldError::required(
                &Path::new("data[%s]").key("ssh-privatekey"),
                "",
            ));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    errs.push(FieldError::required(&data.key(k), ""));
                }
            }
        }
        _ => {}
    }
}

use base64::Engine as _;

fn docker_json(obj: &Value, key: &str, errs: &mut ErrorList) {
    let path = Path::new("data").key(key);
    let Some(raw) = map(obj, "/data").and_then(|m| m.get(key)) else {
        errs.push(FieldError::required(&path, ""));
        return;
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw.as_str().unwrap_or(""))
        .unwrap_or_default();
    if let Err(e) = serde_json::from_slice::<Map<String, Value>>(&bytes) {
        errs.push(FieldError::invalid(
            &path,
            "<secret contents redacted>",
            e.to_string(),
        ));
    }
}

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// Upstream's checks for ports repeated by `(protocol, nodePort)` and by `(protocol, port)`.
/// The second prints the key as Go's `%#v` of an internal `core.ServicePort` holding only those
/// two fields, as kube-apiserver's message does.
fn duplicate_service_ports(ports: &[Value], at_ports: &Path, errs: &mut ErrorList) {
    let mut node_ports = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let np = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if np != 0 && !node_ports.insert((s(p, "/protocol"), np)) {
            errs.push(FieldError::duplicate(
                &at_ports.index(i).child("nodePort"),
                np,
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let protocol = s(p, "/protocol");
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !seen.insert((protocol, port)) {
            errs.push(FieldError {
                kind: ErrorType::Duplicate,
                field: at_ports.index(i),
                value: None,
                detail: format!(
                    "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, \
                     TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    go_quote(protocol)
                ),
            });
        }
    }
}

fn service(obj: &Value, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    let ty = s(spec, "/type");
    if !SERVICE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            &sp.child("type"),
            ty,
            SERVICE_TYPES,
        ));
    }
    let ports = arr(spec, "/ports");
    let headless = s(spec, "/clusterIP") == "None";
    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.push(FieldError::required(&sp.child("ports"), ""));
    }
    if ty == "ExternalName" && s(spec, "/externalName").is_empty() {
        errs.push(FieldError::required(&sp.child("externalName"), ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = sp.child("ports").index(i);
        let name = s(p, "/name");
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(&pp.child("name"), ""));
        } else if !name.is_empty() {
            for m in is_dns1123_label(name) {
                errs.push(FieldError::invalid(&pp.child("name"), name, m));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(&pp.child("name"), name));
            }
            names.push(name);
        }
        port_num(at(p, "/port"), &pp.child("port"), errs);
        protocol(p, &pp, errs);
        match at(p, "/targetPort") {
            Value::Number(n) => {
                let n = n.as_i64().unwrap_or(0);
                if n != 0 && !(1..=65535).contains(&n) {
                    errs.push(FieldError::invalid(&pp.child("targetPort"), n, PORT_RANGE));
                }
            }
            Value::String(t) => {
                for m in is_valid_port_name(t) {
                    errs.push(FieldError::invalid(&pp.child("targetPort"), t.as_str(), m));
                }
            }
            _ => {}
        }
        if let Some(np) = p.get("nodePort").and_then(Value::as_i64)
            && np != 0
        {
            // Upstream forbids it on ClusterIP services only (ExternalName keeps it unchecked).
            if ty == "ClusterIP" {
                errs.push(FieldError::forbidden(
                    &pp.child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else if matches!(ty, "NodePort" | "LoadBalancer") && !(1..=65535).contains(&np) {
                errs.push(FieldError::invalid(&pp.child("nodePort"), np, PORT_RANGE));
            }
        }
    }
    duplicate_service_ports(ports, &sp.child("ports"), errs);
    if let Some(sa) = spec.get("sessionAffinity").and_then(Value::as_str)
        && !matches!(sa, "ClientIP" | "None")
    {
        errs.push(FieldError::not_supported(
            &sp.child("sessionAffinity"),
            sa,
            &["ClientIP", "None"],
        ));
    }
    errs.extend(validate_labels(spec.get("selector"), &sp.child("selector")));
}

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

/// `spec.accessModes` of a claim or a volume: at least one, each supported.
fn access_modes(obj: &Value, errs: &mut ErrorList) {
    let path = Path::new("spec").child("accessModes");
    let modes = arr(obj, "/spec/accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(
            &path,
            "at least 1 access mode is required",
        ));
    }
    for m in modes {
        let m = m.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&m) {
            errs.push(FieldError::not_supported(&path, m, ACCESS_MODES));
        }
    }
}

fn pvc(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    access_modes(obj, errs);
    if at(obj, "/spec/resources/requests/storage").is_null() {
        errs.push(FieldError::required(
            &sp.child("resources").key("storage"),
            "",
        ));
    }
    if let Some(old) = old {
        let strip = |v: &Value| {
            let mut spec = at(v, "/spec").clone();
            if let Some(m) = spec.as_object_mut() {
                m.remove("volumeAttributesClassName");
                if let Some(r) = m.get_mut("resources").and_then(Value::as_object_mut) {
                    r.remove("requests");
                }
                // A pending claim may get its volume bound.
                m.remove("volumeName");
            }
            spec
        };
        if strip(obj) != strip(old) {
            errs.push(FieldError::forbidden(
                &sp,
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
    }
}

/// The volume sources of a `PersistentVolumeSpec`, in the order upstream's
/// `ValidatePersistentVolumeSpec` counts them.
const PV_SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

/// `ValidatePersistentVolume` (its main rules; `VALIDATION.md` lists what is not checked) and,
/// on update, `ValidatePersistentVolumeUpdate`'s immutable volume source and mode.
fn persistent_volume(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    let spec = at(obj, "/spec");
    access_modes(obj, errs);
    let cp = sp.child("capacity");
    match spec.get("capacity").and_then(Value::as_object) {
        None => errs.push(FieldError::required(&cp, "")),
        Some(c) if c.is_empty() => errs.push(FieldError::required(&cp, "")),
        Some(c) => {
            if !c.contains_key("storage") || c.len() > 1 {
                errs.push(FieldError::not_supported(
                    &cp,
                    compound(at(spec, "/capacity")),
                    &["storage"],
                ));
            }
            for (name, v) in c {
                if let Some(q) = quantity(v).filter(|q| q.is_negative() || q.is_zero()) {
                    errs.push(FieldError::invalid(
                        &cp.key(name),
                        q.to_string(),
                        "must be greater than zero",
                    ));
                }
            }
        }
    }
    let policy = s(spec, "/persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
        errs.push(FieldError::not_supported(
            &sp.child("persistentVolumeReclaimPolicy"),
            policy,
            RECLAIM_POLICIES,
        ));
    }
    if let Some(class) = spec.get("storageClassName").and_then(Value::as_str)
        && !class.is_empty()
    {
        for m in is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid(&sp.child("storageClassName"), class, m));
        }
    }
    let mode = s(spec, "/volumeMode");
    if !mode.is_empty() && !VOLUME_MODES.contains(&mode) {
        errs.push(FieldError::not_supported(
            &sp.child("volumeMode"),
            mode,
            VOLUME_MODES,
        ));
    }
    let mut sources = 0;
    for &source in PV_SOURCES {
        if spec.get(source).is_none_or(Value::is_null) {
            continue;
        }
        if sources > 0 {
            errs.push(FieldError::forbidden(
                &sp.child(source),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        sources += 1;
        let sub = sp.child(source);
        match source {
            "hostPath" | "local" if s(spec, &format!("/{source}/path")).is_empty() => {
                errs.push(FieldError::required(&sub.child("path"), ""));
            }
            "nfs" if s(spec, "/nfs/server").is_empty() => {
                errs.push(FieldError::required(&sub.child("server"), ""));
            }
            "csi" if s(spec, "/csi/driver").is_empty() => {
                errs.push(FieldError::required(&sub.child("driver"), ""));
            }
            _ => {}
        }
        if source == "local" && spec.get("nodeAffinity").is_none_or(Value::is_null) {
            errs.push(FieldError::required(
                &sp.child("nodeAffinity"),
                "Local volume requires node affinity",
            ));
        }
    }
    if sources == 0 {
        errs.push(FieldError::required(&sp, "must specify a volume type"));
    }
    if let Some(old) = old {
        let source = |v: &Value| -> Vec<Value> {
            PV_SOURCES
                .iter()
                .map(|k| at(v, &format!("/spec/{k}")).clone())
                .collect()
        };
        if source(obj) != source(old) {
            errs.push(FieldError::forbidden(
                &sp.child("persistentvolumesource"),
                "spec.persistentvolumesource is immutable after creation",
            ));
        }
        let (new_mode, old_mode) = (at(obj, "/spec/volumeMode"), at(old, "/spec/volumeMode"));
        if new_mode != old_mode {
            errs.push(FieldError::invalid(
                &sp.child("volumeMode"),
                compound(new_mode),
                "field is immutable",
            ));
        }
    }
}

/// `ValidateReplicationControllerSpec`: a non-empty label-set selector that the template's
/// labels match, non-negative counts, and a template that restarts `Always` with no deadline.
fn replication_controller(spec: &Value, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    non_negative(
        at(spec, "/minReadySeconds"),
        &sp.child("minReadySeconds"),
        errs,
    );
    let selector = spec.get("selector").and_then(Value::as_object);
    if selector.is_none_or(Map::is_empty) {
        errs.push(FieldError::required(&sp.child("selector"), ""));
    }
    errs.extend(validate_labels(spec.get("selector"), &sp.child("selector")));
    non_negative(at(spec, "/replicas"), &sp.child("replicas"), errs);
    let tp = sp.child("template");
    if spec.get("template").is_none_or(Value::is_null) {
        errs.push(FieldError::required(&tp, ""));
        return;
    }
    if let Some(sel) = selector.filter(|m| !m.is_empty()) {
        let labels = at(spec, "/template/metadata/labels");
        let matches = sel
            .iter()
            .all(|(k, v)| labels.get(k).is_some_and(|l| l == v));
        if !matches {
            errs.push(FieldError::invalid(
                &tp.child("metadata").child("labels"),
                compound(labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    validate_template(spec, &tp, errs);
    restart_always(spec, &sp, errs);
    if !at(spec, "/template/spec/activeDeadlineSeconds").is_null() {
        errs.push(FieldError::forbidden(
            &tp.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
}

/// Event validation (`ValidateEventCreate`): legacy rules for core/v1, strict ones for
/// events.k8s.io/v1. `obj` is in core/v1 shape.
fn event(obj: &Value, strict: bool, errs: &mut ErrorList) {
    let ns = s(obj, "/metadata/namespace");
    let inv_ns = s(obj, "/involvedObject/namespace");
    let has_event_time = !at(obj, "/eventTime").is_null();
    let ns_mismatch = || {
        FieldError::invalid(
            &Path::new("involvedObject").child("namespace"),
            inv_ns,
            "does not match event.namespace",
        )
    };
    let controller_field = if strict {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if has_event_time {
        if inv_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(ns_mismatch());
        }
        let ctl = s(obj, "/reportingComponent");
        if ctl.is_empty() {
            errs.push(FieldError::required(&Path::new(controller_field), ""));
        }
        for m in is_qualified_name(ctl) {
            errs.push(FieldError::invalid(&Path::new(controller_field), ctl, m));
        }
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let v = s(obj, &format!("/{field}"));
            if v.is_empty() {
                errs.push(FieldError::required(&Path::new(field), ""));
            }
            if v.len() > limit {
                errs.push(FieldError::invalid(
                    &Path::new(field),
                    "",
                    format!("can have at most {limit} characters"),
                ));
            }
        }
        if s(obj, "/message").len() > 1024 {
            errs.push(FieldError::invalid(
                &Path::new("message"),
                "",
                "can have at most 1024 characters",
            ));
        }
    } else if (inv_ns.is_empty() && !ns.is_empty() && ns != "default")
        || (!inv_ns.is_empty() && ns != inv_ns)
    {
        errs.push(ns_mismatch());
    }
    for m in is_dns1123_subdomain(ns) {
        errs.push(FieldError::invalid(&Path::new("namespace"), ns, m));
    }
    if strict {
        event_series(obj, errs);
        if !has_event_time {
            errs.push(FieldError::required(&Path::new("eventTime"), ""));
        }
        let ty = s(obj, "/type");
        if ty != "Normal" && ty != "Warning" {
            errs.push(FieldError::invalid(
                &Path::new("type"),
                "",
                format!("has invalid value: {ty}"),
            ));
        }
        for f in ["firstTimestamp", "lastTimestamp"] {
            if !at(obj, &format!("/{f}")).is_null() {
                errs.push(FieldError::invalid(&Path::new(f), "", "needs to be unset"));
            }
        }
        if at(obj, "/count").as_i64().unwrap_or(0) != 0 {
            errs.push(FieldError::invalid(
                &Path::new("count"),
                "",
                "needs to be unset",
            ));
        }
        if !s(obj, "/source/component").is_empty() || !s(obj, "/source/host").is_empty() {
            errs.push(FieldError::invalid(
                &Path::new("source"),
                "",
                "needs to be unset",
            ));
        }
    }
}

/// `validateV1EventSeries`.
fn event_series(obj: &Value, errs: &mut ErrorList) {
    let series = at(obj, "/series");
    if series.is_null() {
        return;
    }
    if at(series, "/count").as_i64().unwrap_or(0) < 2 {
        errs.push(FieldError::invalid(
            &Path::new("series.count"),
            "",
            "should be at least 2",
        ));
    }
    if at(series, "/lastObservedTime").is_null() {
        errs.push(FieldError::required(
            &Path::new("series.lastObservedTime"),
            "",
        ));
    }
}

/// `ValidateEventUpdate` for events.k8s.io/v1 (objects in core shape): the series when it
/// changed, and the immutable fields.
fn event_update(new: &Value, old: &Value, errs: &mut ErrorList) {
    if at(new, "/series") != at(old, "/series") {
        event_series(new, errs);
    }
    for f in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        let ptr = format!("/{f}");
        let (a, b) = (at(new, &ptr), at(old, &ptr));
        let empty = |v: &Value| {
            v.is_null()
                || v.as_str() == Some("")
                || v.as_i64() == Some(0)
                || v.as_object().is_some_and(Map::is_empty)
        };
        if a == b || (empty(a) && empty(b)) {
            continue;
        }
        let field = if f == "reportingComponent" {
            "reportingController"
        } else {
            f
        };
        errs.push(FieldError::invalid(
            &Path::new(field),
            compound(a),
            "field is immutable",
        ));
    }
}

fn deployment(obj: &Value, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    non_negative(at(spec, "/replicas"), &sp.child("replicas"), errs);
    non_negative(
        at(spec, "/minReadySeconds"),
        &sp.child("minReadySeconds"),
        errs,
    );
    non_negative(
        at(spec, "/revisionHistoryLimit"),
        &sp.child("revisionHistoryLimit"),
        errs,
    );
    workload_selector(spec, &sp, "deployment", errs);
    validate_template(spec, &sp.child("template"), errs);
    restart_always(spec, &sp, errs);
    let strategy = at(spec, "/strategy");
    match s(strategy, "/type") {
        "Recreate" => {
            if !at(strategy, "/rollingUpdate").is_null() {
                errs.push(FieldError::forbidden(
                    &sp.child("strategy").child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" | "" => {}
        t => errs.push(FieldError::not_supported(
            &sp.child("strategy").child("type"),
            t,
            &["Recreate", "RollingUpdate"],
        )),
    }
    if let (Some(p), Some(m)) = (
        at(spec, "/progressDeadlineSeconds").as_i64(),
        at(spec, "/minReadySeconds").as_i64(),
    ) && p <= m
    {
        errs.push(FieldError::invalid(
            &sp.child("progressDeadlineSeconds"),
            p,
            "must be greater than minReadySeconds",
        ));
    }
}

/// A Job's pod template restarts `OnFailure` or `Never` (the defaulted `Always` is reported as
/// a missing choice).
fn job_restart_policy(spec: &Value, sp: &Path, errs: &mut ErrorList) {
    let path = sp.child("template").child("spec").child("restartPolicy");
    match s(spec, "/template/spec/restartPolicy") {
        "Always" | "" => errs.push(FieldError::required(
            &path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(
            &path,
            other,
            &["OnFailure", "Never"],
        )),
    }
}

fn job_spec(spec: &Value, sp: &Path, errs: &mut ErrorList) {
    for f in [
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
    ] {
        non_negative(at(spec, &format!("/{f}")), &sp.child(f), errs);
    }
    let sel = at(spec, "/selector");
    if sel.is_null() {
        errs.push(FieldError::required(&sp.child("selector"), ""));
    } else {
        errs.extend(validate_label_selector(sel, &sp.child("selector")));
        template_matches(sel, spec, sp, errs);
    }
    validate_template(spec, &sp.child("template"), errs);
    job_restart_policy(spec, sp, errs);
}

/// `validateCronJobSpec`: the schedule parses (`TZ=` in it only where the stored schedule had
/// one), the time zone exists.
fn cron_job(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    let schedule = s(spec, "/schedule");
    let time_zone = spec.get("timeZone").and_then(Value::as_str);
    if schedule.is_empty() {
        errs.push(FieldError::required(&sp.child("schedule"), ""));
    } else {
        let path = sp.child("schedule");
        if let Err(e) = crate::cron::parse_standard(schedule) {
            errs.push(FieldError::invalid(&path, schedule, &e));
        }
        let tz_allowed = old.is_some_and(|o| s(o, "/spec/schedule").contains("TZ"));
        if schedule.contains("TZ") {
            if !tz_allowed {
                errs.push(FieldError::invalid(
                    &path,
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            } else if time_zone.is_some() {
                errs.push(FieldError::invalid(
                    &path,
                    schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            }
        }
    }
    if let Some(cp) = spec.get("concurrencyPolicy").and_then(Value::as_str)
        && !matches!(cp, "Allow" | "Forbid" | "Replace")
    {
        errs.push(FieldError::not_supported(
            &sp.child("concurrencyPolicy"),
            cp,
            &["Allow", "Forbid", "Replace"],
        ));
    }
    for f in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        non_negative(at(spec, &format!("/{f}")), &sp.child(f), errs);
    }
    // The job template: selector is generated per job, so only the pod template is checked.
    let jt = at(spec, "/jobTemplate/spec");
    let jp = sp.child("jobTemplate").child("spec");
    validate_template(jt, &jp.child("template"), errs);
    job_restart_policy(jt, &jp, errs);
    if let Some(tz) = time_zone {
        let path = sp.child("timeZone");
        if tz.is_empty() {
            errs.push(FieldError::invalid(&path, tz, "unknown time zone "));
        } else if let Err(e) = crate::cron::load_location(tz) {
            errs.push(FieldError::invalid(&path, tz, &e));
        }
        if tz.eq_ignore_ascii_case("Local") {
            errs.push(FieldError::invalid(
                &path,
                tz,
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            ));
        }
    }
}

fn ingress(obj: &Value, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    let rules = arr(spec, "/rules");
    if rules.is_empty() && at(spec, "/defaultBackend").is_null() {
        errs.push(FieldError::invalid(
            &sp,
            Value::Null,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, r) in rules.iter().enumerate() {
        let rp = sp.child("rules").index(i);
        let host = s(r, "/host");
        if !host.is_empty() {
            let h = host.strip_prefix("*.").unwrap_or(host);
            for m in is_dns1123_subdomain(h) {
                errs.push(FieldError::invalid(&rp.child("host"), host, m));
            }
        }
        for (j, p) in arr(r, "/http/paths").iter().enumerate() {
            let pp = rp.child("http").child("paths").index(j);
            match s(p, "/pathType") {
                "" => errs.push(FieldError::required(
                    &pp.child("pathType"),
                    "pathType must be specified",
                )),
                "Exact" | "Prefix" => {
                    if !s(p, "/path").starts_with('/') {
                        errs.push(FieldError::invalid(
                            &pp.child("path"),
                            s(p, "/path"),
                            "must be an absolute path",
                        ));
                    }
                }
                "ImplementationSpecific" => {}
                t => errs.push(FieldError::not_supported(
                    &pp.child("pathType"),
                    t,
                    &["Exact", "ImplementationSpecific", "Prefix"],
                )),
            }
            let b = at(p, "/backend");
            if at(b, "/service").is_null() && at(b, "/resource").is_null() {
                errs.push(FieldError::invalid(
                    &pp.child("backend"),
                    "",
                    "one backend must be specified",
                ));
            }
        }
    }
}

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];

fn endpoint_slice(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let ty = s(obj, "/addressType");
    if ty.is_empty() {
        errs.push(FieldError::required(&Path::new("addressType"), ""));
    } else if !ADDRESS_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            &Path::new("addressType"),
            ty,
            ADDRESS_TYPES,
        ));
    }
    for (i, e) in arr(obj, "/endpoints").iter().enumerate() {
        let ap = Path::new("endpoints").index(i).child("addresses");
        let n = arr(e, "/addresses").len();
        if n == 0 {
            errs.push(FieldError::required(&ap, "must contain at least 1 address"));
        } else if n > 100 {
            errs.push(FieldError::too_many(&ap, n, 100));
        }
    }
    for (i, p) in arr(obj, "/ports").iter().enumerate() {
        let pp = Path::new("ports").index(i);
        if let Some(n) = p.get("port").and_then(Value::as_i64) {
            port_num(&Value::from(n), &pp.child("port"), errs);
        }
        if p.get("protocol").is_some() {
            protocol(p, &pp, errs);
        }
    }
    if let Some(old) = old {
        let ot = s(old, "/addressType");
        if ty != ot {
            errs.push(FieldError::invalid(
                &Path::new("addressType"),
                ty,
                "field is immutable",
            ));
        }
    }
}

fn pdb(obj: &Value, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    if !at(spec, "/minAvailable").is_null() && !at(spec, "/maxUnavailable").is_null() {
        errs.push(FieldError::invalid(
            &sp,
            compound(spec),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for f in ["minAvailable", "maxUnavailable"] {
        let p = sp.child(f);
        match at(spec, &format!("/{f}")) {
            Value::Number(n) => non_negative(&Value::Number(n.clone()), &p, errs),
            Value::String(v) => {
                let digits = v.strip_suffix('%').unwrap_or("");
                if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                    errs.push(FieldError::invalid(
                        &p,
                        v.as_str(),
                        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                    ));
                } else if digits.parse::<u64>().is_ok_and(|n| n > 100) {
                    errs.push(FieldError::invalid(
                        &p,
                        v.as_str(),
                        "must not be greater than 100%",
                    ));
                }
            }
            _ => {}
        }
    }
    errs.extend(validate_label_selector(
        at(spec, "/selector"),
        &sp.child("selector"),
    ));
    if let Some(p) = spec
        .get("unhealthyPodEvictionPolicy")
        .and_then(Value::as_str)
        && !matches!(p, "AlwaysAllow" | "IfHealthyBudget")
    {
        errs.push(FieldError::not_supported(
            &sp.child("unhealthyPodEvictionPolicy"),
            p,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
}

/// `ValidatePriorityClass`/`ValidatePriorityClassUpdate`: names with the `system-` prefix
/// are reserved for the system classes, a user class's value is at most 1,000,000,000, the
/// preemption policy is one of two, and value and policy never change.
fn priority_class(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    const SYSTEM: [(&str, i64); 2] = [
        ("system-node-critical", 2_000_001_000),
        ("system-cluster-critical", 2_000_000_000),
    ];
    let name = s(obj, "/metadata/name");
    let value = at(obj, "/value");
    if name.starts_with("system-") {
        match SYSTEM.iter().find(|(n, _)| *n == name) {
            Some((_, v)) if value.as_i64() != Some(*v) => errs.push(FieldError::forbidden(
                &Path::new("metadata").child("name"),
                format!("{name} is a system priority class and must have value {v}"),
            )),
            Some(_) => {}
            None => errs.push(FieldError::forbidden(
                &Path::new("metadata").child("name"),
                "priority class names with 'system-' prefix are reserved for system use only",
            )),
        }
    } else if value.as_i64().is_some_and(|v| v > 1_000_000_000) {
        errs.push(FieldError::forbidden(
            &Path::new("value"),
            "maximum allowed value of a user defined priority is 1000000000",
        ));
    }
    if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str)
        && !matches!(p, "Never" | "PreemptLowerPriority")
    {
        errs.push(FieldError::not_supported(
            &Path::new("preemptionPolicy"),
            p,
            &["Never", "PreemptLowerPriority"],
        ));
    }
    if let Some(old) = old {
        if value != at(old, "/value") {
            errs.push(FieldError::forbidden(
                &Path::new("value"),
                "may not be changed in an update.",
            ));
        }
        if at(obj, "/preemptionPolicy") != at(old, "/preemptionPolicy") {
            errs.push(FieldError::invalid(
                &Path::new("preemptionPolicy"),
                compound(at(obj, "/preemptionPolicy")),
                "field is immutable",
            ));
        }
    }
}

/// `ValidateControllerRevisionCreate`/`Update`: data required and immutable, revision not
/// negative.
fn controller_revision(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let data = at(obj, "/data");
    if data.is_null() {
        errs.push(FieldError::required(&Path::new("data"), ""));
    }
    non_negative(at(obj, "/revision"), &Path::new("revision"), errs);
    if let Some(old) = old
        && data != at(old, "/data")
    {
        errs.push(FieldError::invalid(
            &Path::new("data"),
            compound(data),
            "field is immutable",
        ));
    }
}

fn lease(obj: &Value, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    if let Some(n) = spec.get("leaseDurationSeconds").and_then(Value::as_i64)
        && n <= 0
    {
        errs.push(FieldError::invalid(
            &sp.child("leaseDurationSeconds"),
            n,
            "must be greater than 0",
        ));
    }
    non_negative(
        at(spec, "/leaseTransitions"),
        &sp.child("leaseTransitions"),
        errs,
    );
    if let Some(st) = spec.get("strategy").and_then(Value::as_str)
        && !st.is_empty()
        && st != "OldestEmulationVersion"
    {
        errs.push(FieldError::not_supported(
            &sp.child("strategy"),
            st,
            &["OldestEmulationVersion"],
        ));
    }
    let preferred = s(spec, "/preferredHolder");
    if !preferred.is_empty() && s(spec, "/strategy").is_empty() {
        errs.push(FieldError::forbidden(
            &sp.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
}

impl Kind {
    /// Validates a `/status` write: the metadata part of [`Kind::validate`] (a status
    /// strategy's `ValidateUpdate` is `ValidateObjectMetaUpdate` for most kinds), and a Node's
    /// whole `ValidateNodeUpdate` (its resources and addresses live in the status).
    pub fn validate_status_update(&self, obj: &Value, old: &Value) -> ErrorList {
        if self.id == KindId::CertificateSigningRequest {
            return self.validate_certificate_request(
                obj,
                old,
                crate::certificates::Endpoint::Status,
            );
        }
        if self.id == KindId::APIService {
            // `ValidateAPIServiceStatusUpdate`: the metadata update and the conditions.
            let mut errs = validate_object_meta_update(
                at(obj, "/metadata"),
                at(old, "/metadata"),
                &Path::new("metadata"),
            );
            crate::apiregistration::validate_status(obj, &mut errs);
            return errs;
        }
        let errs = self.validate(obj, Some(old));
        if self.id == KindId::Node {
            return errs;
        }
        ErrorList(
            errs.0
                .into_iter()
                .filter(|e| e.field.to_string().starts_with("metadata"))
                .collect(),
        )
    }

    /// Validates a write through one of [`Kind::extra_subresources`] (a
    /// `CertificateSigningRequest`'s `/approval`, which may set the approval conditions).
    pub fn validate_subresource_update(
        &self,
        obj: &Value,
        old: &Value,
        subresource: &str,
    ) -> ErrorList {
        match (self.id, subresource) {
            (KindId::CertificateSigningRequest, "approval") => {
                self.validate_certificate_request(obj, old, crate::certificates::Endpoint::Approval)
            }
            _ => self.validate(obj, Some(old)),
        }
    }

    fn validate_certificate_request(
        &self,
        obj: &Value,
        old: &Value,
        endpoint: crate::certificates::Endpoint,
    ) -> ErrorList {
        let mut errs = validate_meta(self, obj, Some(old));
        crate::certificates::validate(obj, Some(old), endpoint, &mut errs);
        errs
    }

    /// Validates a create (`old` is `None`) or an update of the main resource, with
    /// upstream's paths and messages; `obj` is in this kind's own shape and already defaulted.
    /// Includes `ObjectMeta` validation (and, on update, its immutable fields).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> ErrorList {
        let mut errs = match (self.id, old) {
            // core/v1 Events are validated by their own (lenient) rules, not ObjectMeta's;
            // events.k8s.io/v1 creates check ObjectMeta, its updates only the update rules.
            (KindId::Event, _) => ErrorList::new(),
            (KindId::EventsV1Event, Some(old)) => validate_object_meta_update(
                at(obj, "/metadata"),
                at(old, "/metadata"),
                &Path::new("metadata"),
            ),
            _ => validate_meta(self, obj, old),
        };
        let sp = Path::new("spec");
        match self.id {
            KindId::ConfigMap => config_map(obj, old, &mut errs),
            KindId::Secret => secret(obj, old, &mut errs),
            KindId::ServiceAccount | KindId::Endpoints => {}
            KindId::PodTemplate => validate_template(obj, &Path::new("template"), &mut errs),
            KindId::CertificateSigningRequest => crate::certificates::validate(
                obj,
                old,
                crate::certificates::Endpoint::Main,
                &mut errs,
            ),
            KindId::Service => service(obj, &mut errs),
            KindId::Pod => {
                validate_pod_spec(at(obj, "/spec"), &sp, &mut errs);
                if let Some(old) = old {
                    pod_update(obj, old, &mut errs);
                }
            }
            KindId::PersistentVolumeClaim => pvc(obj, old, &mut errs),
            KindId::PersistentVolume => persistent_volume(obj, old, &mut errs),
            KindId::ReplicationController => replication_controller(at(obj, "/spec"), &mut errs),
            KindId::Event => event(obj, false, &mut errs),
            KindId::EventsV1Event => {
                let core = crate::events::to_core(obj);
                match old {
                    None => event(&core, true, &mut errs),
                    Some(old) => {
                        event(&core, false, &mut errs);
                        event_update(&core, &crate::events::to_core(old), &mut errs);
                    }
                }
            }
            KindId::Deployment => deployment(obj, &mut errs),
            KindId::ReplicaSet | KindId::StatefulSet | KindId::DaemonSet => {
                let spec = at(obj, "/spec");
                if self.id != KindId::DaemonSet {
                    non_negative(at(spec, "/replicas"), &sp.child("replicas"), &mut errs);
                }
                let what = match self.id {
                    KindId::StatefulSet => "statefulset",
                    KindId::DaemonSet => "daemonset",
                    _ => "deployment",
                };
                workload_selector(spec, &sp, what, &mut errs);
                if self.id == KindId::StatefulSet {
                    stateful_set_template(spec, &sp.child("template"), &mut errs);
                } else {
                    validate_template(spec, &sp.child("template"), &mut errs);
                }
                restart_always(spec, &sp, &mut errs);
            }
            KindId::Job => job_spec(at(obj, "/spec"), &sp, &mut errs),
            KindId::CronJob => cron_job(obj, old, &mut errs),
            KindId::Ingress => ingress(obj, &mut errs),
            KindId::EndpointSlice => endpoint_slice(obj, old, &mut errs),
            KindId::PodDisruptionBudget => pdb(obj, &mut errs),
            KindId::Lease => lease(obj, &mut errs),
            KindId::ControllerRevision => controller_revision(obj, old, &mut errs),
            KindId::PriorityClass => priority_class(obj, old, &mut errs),
            KindId::APIService => crate::apiregistration::validate(obj, &mut errs),
            KindId::Node => crate::node::validate(obj, old, &mut errs),
            KindId::NetworkPolicy
            | KindId::IngressClass
            | KindId::HorizontalPodAutoscaler
            | KindId::ResourceQuota
            | KindId::LimitRange
            | KindId::StorageClass
            | KindId::RuntimeClass
            | KindId::CSIDriver => crate::policy_kinds::validate(self.id, obj, old, &mut errs),
            // Validated in the internal (v2) form, with its field paths, as upstream does.
            KindId::HorizontalPodAutoscalerV1 => crate::policy_kinds::validate(
                KindId::HorizontalPodAutoscaler,
                &crate::hpa::to_v2(obj),
                old.map(crate::hpa::to_v2).as_ref(),
                &mut errs,
            ),
            KindId::Role
            | KindId::ClusterRole
            | KindId::RoleBinding
            | KindId::ClusterRoleBinding => crate::rbac::validate(self, obj, old, &mut errs),
            KindId::ValidatingWebhookConfiguration => {
                crate::admissionregistration::validate(obj, old, false, &mut errs);
            }
            KindId::MutatingWebhookConfiguration => {
                crate::admissionregistration::validate(obj, old, true, &mut errs);
            }
            KindId::ValidatingAdmissionPolicy => {
                crate::admissionpolicy::validate_policy(obj, &mut errs);
            }
            KindId::ValidatingAdmissionPolicyBinding => {
                crate::admissionpolicy::validate_binding(obj, &mut errs);
            }
            KindId::MutatingAdmissionPolicy => {
                crate::admissionpolicy::validate_mutating_policy(obj, &mut errs);
            }
            KindId::MutatingAdmissionPolicyBinding => {
                crate::admissionpolicy::validate_mutating_binding(obj, &mut errs);
            }
        }
        if let Some(old) = old {
            immutable_spec_fields(self, obj, old, &mut errs);
            match self.id {
                KindId::Job => job_update(obj, old, &mut errs),
                KindId::StatefulSet => stateful_set_update(obj, old, &mut errs),
                _ => {}
            }
        }
        errs
    }
}

/// `ValidateJobSpecUpdate`'s rules beyond the immutable fields: completions change only on
/// Indexed jobs (and with parallelism), and the pod template only in its scheduling directives
/// while the job is suspended and has not started (`AllowMutableSchedulingDirectives`).
fn job_update(obj: &Value, old: &Value, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    let (spec, old_spec) = (at(obj, "/spec"), at(old, "/spec"));
    let completions = at(spec, "/completions");
    if completions != at(old_spec, "/completions") {
        let indexed = s(spec, "/completionMode") == "Indexed";
        if !indexed {
            errs.push(FieldError::invalid(
                &sp.child("completions"),
                compound(completions),
                "field is immutable",
            ));
        } else if !completions.is_null() && completions != at(spec, "/parallelism") {
            errs.push(FieldError::invalid(
                &sp.child("completions"),
                compound(completions),
                "can only be modified in tandem with spec.parallelism",
            ));
        }
    }
    let template = at(spec, "/template");
    let mut old_template = at(old_spec, "/template").clone();
    let suspended_unstarted =
        at(old_spec, "/suspend") == &Value::Bool(true) && at(old, "/status/startTime").is_null();
    if suspended_unstarted {
        for ptr in [
            "/metadata/labels",
            "/metadata/annotations",
            "/spec/nodeSelector",
            "/spec/tolerations",
            "/spec/schedulingGates",
            "/spec/affinity/nodeAffinity",
        ] {
            set_at(&mut old_template, ptr, at(template, ptr).clone());
        }
        // An affinity left holding nothing but the node affinity taken over is no affinity.
        if template.pointer("/spec/affinity").is_none()
            && old_template.pointer("/spec/affinity") == Some(&json!({}))
            && let Some(spec) = old_template.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.remove("affinity");
        }
    }
    if template != &old_template {
        errs.push(FieldError::invalid(
            &sp.child("template"),
            compound(template),
            "field is immutable",
        ));
    }
    for f in [
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        let ptr = format!("/{f}");
        if at(spec, &ptr) != at(old_spec, &ptr) {
            errs.push(FieldError::invalid(
                &sp.child(f),
                compound(at(spec, &ptr)),
                "field is immutable",
            ));
        }
    }
}

/// Sets the value at a JSON pointer of object keys, creating objects on the way; `null` removes
/// it.
fn set_at(v: &mut Value, ptr: &str, new: Value) {
    let keys: Vec<&str> = ptr.split('/').skip(1).collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        if new.is_null() && cur.get(*k).is_none() {
            return;
        }
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(m) = cur.as_object_mut() else {
            return;
        };
        cur = m.entry(k.to_string()).or_insert_with(|| json!({}));
    }
    if let Some(m) = cur.as_object_mut() {
        if new.is_null() {
            m.remove(*last);
        } else {
            m.insert(last.to_string(), new);
        }
    }
}

/// `ValidateStatefulSetUpdate`: only the listed spec fields may change.
fn stateful_set_update(obj: &Value, old: &Value, errs: &mut ErrorList) {
    const MUTABLE: [&str; 7] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let without_mutable = |spec: &Value| -> Value {
        let mut spec = spec.clone();
        if let Some(m) = spec.as_object_mut() {
            m.retain(|k, _| !MUTABLE.contains(&k.as_str()));
        }
        spec
    };
    if without_mutable(at(obj, "/spec")) != without_mutable(at(old, "/spec")) {
        errs.push(FieldError::forbidden(
            &Path::new("spec"),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}

/// Spec fields upstream declares immutable on update.
fn immutable_spec_fields(kind: &Kind, obj: &Value, old: &Value, errs: &mut ErrorList) {
    let fields: &[&str] = match kind.id {
        KindId::Deployment | KindId::ReplicaSet | KindId::DaemonSet | KindId::StatefulSet => {
            &["selector"]
        }
        KindId::Job => &["selector", "completionMode"],
        _ => &[],
    };
    for f in fields {
        let ptr = format!("/spec/{f}");
        let (a, b) = (at(obj, &ptr), at(old, &ptr));
        if a != b {
            let p = Path::new("spec").child(f);
            errs.push(FieldError::invalid(&p, compound(a), "field is immutable"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::{KindId, get};

    /// Defaults (as decoding does), then validates; the errors as `kubectl` prints them.
    fn errors(id: KindId, mut obj: Value, old: Option<Value>) -> Vec<String> {
        let k = get(id);
        k.apply_defaults(&mut obj);
        let old = old.map(|mut o| {
            k.apply_defaults(&mut o);
            o
        });
        k.validate(&obj, old.as_ref())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn meta(name: &str) -> Value {
        json!({"name": name, "namespace": "default"})
    }

    fn pod_template(labels: &Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    }

    #[test]
    fn valid_objects_pass() {
        let cases = vec![
            (
                KindId::ReplicationController,
                json!({"metadata": meta("rc"), "spec": {"template": pod_template(&json!({"app": "web"}))}}),
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": meta("cm"), "data": {"a.b": "1", "C_D-e": "2"}}),
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "stringData": {"k": "v"}}),
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("d"), "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}}),
            ),
            (KindId::ServiceAccount, json!({"metadata": meta("sa")})),
            (
                KindId::Service,
                json!({"metadata": meta("web"), "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}}),
            ),
            (
                KindId::Service,
                json!({"metadata": meta("headless"), "spec": {"clusterIP": "None"}}),
            ),
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}]}], "volumes": [{"name": "v", "emptyDir": {}}]}}),
            ),
            (
                KindId::PersistentVolumeClaim,
                json!({"metadata": meta("pvc"), "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
            ),
            (
                KindId::Event,
                json!({"metadata": meta("e"), "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R", "message": "m"}),
            ),
            (
                KindId::EventsV1Event,
                json!({"metadata": meta("e"), "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/c",
                "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template(&json!({"app": "web"}))}}),
            ),
            (
                KindId::StatefulSet,
                json!({"metadata": meta("s"), "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": pod_template(&json!({"app": "db"}))}}),
            ),
            (
                KindId::DaemonSet,
                json!({"metadata": meta("ds"), "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "template": pod_template(&json!({"app": "x"}))}}),
            ),
            (
                KindId::ReplicaSet,
                json!({"metadata": meta("rs"), "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template(&json!({"app": "web"}))}}),
            ),
            (
                KindId::CronJob,
                json!({"metadata": meta("cj"), "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
            ),
            (
                KindId::Ingress,
                json!({"metadata": meta("i"), "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
            ),
            (
                KindId::EndpointSlice,
                json!({"metadata": meta("es"), "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
            ),
            (
                KindId::PodDisruptionBudget,
                json!({"metadata": meta("pdb"), "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}),
            ),
            (
                KindId::Lease,
                json!({"metadata": meta("l"), "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
            ),
            (
                // A claim template's mount names no volume of the template (upstream leaves
                // the pod spec of a stateful set unchecked).
                KindId::StatefulSet,
                json!({"metadata": meta("web"), "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                        {"name": "c", "image": "nginx", "volumeMounts": [{"name": "www", "mountPath": "/www"}]}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
            ),
            (
                KindId::NetworkPolicy,
                json!({"metadata": meta("np"), "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                    "ingress": [{"from": [{"podSelector": {}, "namespaceSelector": {}}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                        "ports": [{"port": 80}, {"port": "http"}, {"port": 8000, "endPort": 9000}]}],
                    "egress": [{"to": [{"ipBlock": {"cidr": "fd00::/8"}}]}]}}),
            ),
            (
                KindId::HorizontalPodAutoscaler,
                json!({"metadata": meta("web"), "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 2, "maxReplicas": 5, "metrics": [
                        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]}}),
            ),
            (
                KindId::ResourceQuota,
                json!({"metadata": meta("q"), "spec": {"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi",
                    "count/deployments.apps": "5", "example.com/gpu": "1"}, "scopes": ["NotBestEffort"]}}),
            ),
            (
                KindId::LimitRange,
                json!({"metadata": meta("l"), "spec": {"limits": [{"type": "Container", "min": {"cpu": "100m"},
                    "max": {"cpu": "2"}, "defaultRequest": {"cpu": "200m"}}, {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]}}),
            ),
            (
                KindId::StorageClass,
                json!({"metadata": {"name": "fast"}, "provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"}}),
            ),
            (
                KindId::CSIDriver,
                json!({"metadata": {"name": "ebs.csi.aws.com"}, "spec": {"attachRequired": true,
                    "podInfoOnMount": false, "storageCapacity": false, "seLinuxMount": false,
                    "fsGroupPolicy": "File", "volumeLifecycleModes": ["Persistent"],
                    "tokenRequests": [{"audience": "sts.amazonaws.com", "expirationSeconds": 3600}]}}),
            ),
            (
                KindId::RuntimeClass,
                json!({"metadata": {"name": "nvidia"}, "handler": "nvidia",
                    "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
                    "scheduling": {"nodeSelector": {"gpu": "true"}}}),
            ),
            (
                KindId::IngressClass,
                json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
                    "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p", "scope": "Namespace", "namespace": "ingress"}}}),
            ),
        ];
        for (id, obj) in cases {
            assert_eq!(
                errors(id, obj.clone(), None),
                Vec::<String>::new(),
                "{id:?} {obj}"
            );
        }
    }

    /// A suspended Job that never started may change its template's scheduling directives
    /// (upstream's `AllowMutableSchedulingDirectives`), and nothing else of it.
    #[test]
    fn suspended_jobs_take_new_scheduling_directives() {
        let job = |suspend: bool, template: Value| {
            json!({"metadata": meta("j"), "spec": {"suspend": suspend, "selector": {"matchLabels": {"a": "b"}},
                "template": template}})
        };
        let before = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "x"}]}});
        let mut after = before.clone();
        after["metadata"]["annotations"] = json!({"k": "v"});
        after["spec"]["nodeSelector"] = json!({"zone": "a"});
        after["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
        after["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "Exists"}]}]}}});
        let errs = |suspended: bool, template: &Value| {
            errors(
                KindId::Job,
                job(suspended, template.clone()),
                Some(job(suspended, before.clone())),
            )
        };
        assert_eq!(errs(true, &after), Vec::<String>::new());
        assert_eq!(errs(false, &after).len(), 1, "{:?}", errs(false, &after));
        let mut image = after.clone();
        image["spec"]["containers"][0]["image"] = json!("y");
        assert!(errs(true, &image)[0].starts_with("spec.template: Invalid value"));
    }

    #[test]
    fn invalid_objects_get_upstream_messages() {
        let cases: Vec<(KindId, Value, Option<Value>, Vec<&str>)> = vec![
            (
                KindId::ReplicationController,
                json!({"metadata": meta("rc"), "spec": {"replicas": -1, "selector": {"app": "db"}, "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 5, "containers": [{"name": "c", "image": "nginx"}]}}}}),
                None,
                vec![
                    "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                    "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
                    "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                    "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported",
                ],
            ),
            (
                KindId::ReplicationController,
                json!({"metadata": meta("rc"), "spec": {}}),
                None,
                vec![
                    "spec.selector: Required value",
                    "spec.template: Required value",
                ],
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv1"}, "spec": {"persistentVolumeReclaimPolicy": "Keep", "volumeMode": "Raw"}}),
                None,
                vec![
                    "spec.accessModes: Required value: at least 1 access mode is required",
                    "spec.capacity: Required value",
                    "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
                    "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
                    "spec: Required value: must specify a volume type",
                ],
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "0", "cpu": "1"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/data"}, "nfs": {"server": "nfs", "path": "/"}, "local": {"path": "/x"}}}),
                None,
                vec![
                    "spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"0\"}: supported values: \"storage\"",
                    "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
                    "spec.nfs: Forbidden: may not specify more than 1 volume type",
                    "spec.local: Forbidden: may not specify more than 1 volume type",
                ],
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": ""}}}),
                None,
                vec![
                    "spec.local.path: Required value",
                    "spec.nodeAffinity: Required value: Local volume requires node affinity",
                ],
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/other"}, "volumeMode": "Block"}}),
                Some(
                    json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
                ),
                vec![
                    "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
                    "spec.volumeMode: Invalid value: \"Block\": field is immutable",
                ],
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": meta("cm"), "data": {"a/b": "1", "..x": "2"}, "binaryData": {"..x": ""}}),
                None,
                vec![
                    "data[..x]: Invalid value: \"..x\": must not start with '..'",
                    "data[..x]: Invalid value: \"..x\": duplicate of key present in binaryData",
                    "data[a/b]: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key_name', regex used for validation is '[-._a-zA-Z0-9]+')",
                    "binaryData[..x]: Invalid value: \"..x\": must not start with '..'",
                ],
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": meta("Bad_Name")}),
                None,
                vec![
                    "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": meta("cm"), "immutable": true, "data": {"a": "2"}}),
                Some(json!({"metadata": meta("cm"), "immutable": true, "data": {"a": "1"}})),
                vec!["data: Forbidden: field is immutable when `immutable` is set"],
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": meta("cm"), "data": {"a": "1"}}),
                Some(json!({"metadata": meta("cm"), "immutable": true, "data": {"a": "1"}})),
                vec!["immutable: Forbidden: field is immutable when `immutable` is set"],
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": meta("cm"), "data": {"a": "x".repeat(1024 * 1024 + 1)}}),
                None,
                vec!["<nil>: Too long: may not be more than 1048576 bytes"],
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": ""}}),
                None,
                vec!["data[tls.key]: Required value"],
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "type": "kubernetes.io/dockerconfigjson"}),
                None,
                vec!["data[.dockerconfigjson]: Required value"],
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "type": "kubernetes.io/service-account-token"}),
                None,
                vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "type": "kubernetes.io/basic-auth"}),
                None,
                vec![
                    "data[%s][username]: Required value",
                    "data[%s][password]: Required value",
                ],
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
                Some(json!({"metadata": meta("s"), "data": {"tls.crt": "", "tls.key": ""}})),
                vec!["type: Invalid value: \"kubernetes.io/tls\": field is immutable"],
            ),
            (
                KindId::Secret,
                json!({"metadata": meta("s"), "immutable": true, "data": {"a": "Mg=="}}),
                Some(json!({"metadata": meta("s"), "immutable": true, "data": {"a": "MQ=="}})),
                vec!["data: Forbidden: field is immutable when `immutable` is set"],
            ),
            (
                KindId::Service,
                json!({"metadata": meta("1web"), "spec": {"ports": [{"port": 0, "protocol": "HTTP"}, {"port": 80}]}}),
                None,
                vec![
                    "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    "spec.ports[0].name: Required value",
                    "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                    "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                    "spec.ports[1].name: Required value",
                ],
            ),
            // Regression: repeated (protocol, port) and (protocol, nodePort) pairs were accepted.
            (
                KindId::Service,
                json!({"metadata": meta("web"), "spec": {"type": "NodePort", "ports": [
                    {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30080},
                    {"name": "b", "port": 80, "protocol": "TCP", "nodePort": 30080},
                    {"name": "c", "port": 80, "protocol": "UDP"}]}}),
                None,
                vec![
                    "spec.ports[1].nodePort: Duplicate value: 30080",
                    "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
                ],
            ),
            // A node port is forbidden on ClusterIP services only.
            (
                KindId::Service,
                json!({"metadata": meta("web"), "spec": {"type": "ClusterIP", "ports": [{"port": 80, "nodePort": 30080}]}}),
                None,
                vec![
                    "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
                ],
            ),
            (
                KindId::Service,
                json!({"metadata": meta("web"), "spec": {"type": "ExternalName", "externalName": "x.example.com", "ports": [{"port": 80, "nodePort": 30080}]}}),
                None,
                vec![],
            ),
            (
                KindId::Service,
                json!({"metadata": meta("web"), "spec": {"type": "Foo"}}),
                None,
                vec![
                    "spec.type: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                    "spec.ports: Required value",
                ],
            ),
            // Regression: requests above limits and negative quantities were accepted.
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi", "example.com/gpu": "2"},
                              "requests": {"cpu": "1500m", "memory": "-1", "example.com/gpu": "1"}}}]}}),
                None,
                vec![
                    "spec.containers[0].resources.requests: Invalid value: \"1500m\": must be less than or equal to cpu limit of 1",
                    "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2",
                    "spec.containers[0].resources.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
                ],
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"limits": {"memory": "-64Mi"}, "requests": {"hugepages-2Mi": "2Mi"}}}]}}}}),
                None,
                vec![
                    "spec.template.spec.containers[0].resources.limits[memory]: Invalid value: \"-64Mi\": must be greater than or equal to 0",
                    "spec.template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
                ],
            ),
            // Equal, smaller and unit-different values are fine.
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1G"}}}]}}),
                None,
                vec![],
            ),
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {}}),
                None,
                vec!["spec.containers: Required value"],
            ),
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {"containers": [{"name": "c"}, {"name": "c", "image": "x",
                "ports": [{"containerPort": 70000}], "volumeMounts": [{"name": "missing", "mountPath": "/m"}]}]}}),
                None,
                vec![
                    "spec.containers[0].image: Required value",
                    "spec.containers[1].name: Duplicate value: \"c\"",
                    "spec.containers[1].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                    "spec.containers[1].volumeMounts[0].name: Not found: \"missing\"",
                ],
            ),
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "x"}]}}),
                None,
                vec![
                    "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                ],
            ),
            (
                KindId::Pod,
                json!({"metadata": meta("p"), "spec": {"containers": [{"name": "c", "image": "x"}], "nodeName": "n2"}}),
                Some(
                    json!({"metadata": meta("p"), "spec": {"containers": [{"name": "c", "image": "x"}]}}),
                ),
                vec![
                    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
                ],
            ),
            (
                KindId::PersistentVolumeClaim,
                json!({"metadata": meta("pvc"), "spec": {}}),
                None,
                vec![
                    "spec.accessModes: Required value: at least 1 access mode is required",
                    "spec.resources[storage]: Required value",
                ],
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"template": pod_template(&json!({"app": "web"}))}}),
                None,
                vec!["spec.selector: Required value"],
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "api"}},
                "template": pod_template(&json!({"app": "web"}))}}),
                None,
                vec![
                    "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                    "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
                ],
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"selector": {}, "template": pod_template(&json!({"app": "web"}))}}),
                None,
                vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}}}),
                None,
                vec![
                    "spec.template.spec.containers[0].image: Required value",
                    "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                ],
            ),
            (
                KindId::Deployment,
                json!({"metadata": meta("d"), "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": pod_template(&json!({"app": "x"}))}}),
                Some(
                    json!({"metadata": meta("d"), "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template(&json!({"app": "web"}))}}),
                ),
                vec![
                    "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\"}}: field is immutable",
                ],
            ),
            (
                KindId::StatefulSet,
                json!({"metadata": meta("s"), "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]}, {"key": "c", "operator": "Is"}]},
                "template": pod_template(&json!({"app": "db"}))}}),
                None,
                vec![
                    "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                    "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    "spec.selector.matchExpressions[2].operator: Invalid value: \"Is\": not a valid selector operator",
                ],
            ),
            (
                KindId::DaemonSet,
                json!({"metadata": meta("ds"), "spec": {"selector": {}, "template": pod_template(&json!({}))}}),
                None,
                vec!["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"],
            ),
            (
                KindId::Job,
                json!({"metadata": meta("j"), "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": pod_template(&json!({"a": "b"}))}}),
                None,
                vec![
                    "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                ],
            ),
            (
                KindId::CronJob,
                json!({"metadata": meta(&"c".repeat(53)), "spec": {"jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
                None,
                vec![
                    "metadata.name: Invalid value: \"ccccccccccccccccccccccccccccccccccccccccccccccccccccc\": must be no more than 52 characters",
                    "spec.schedule: Required value",
                ],
            ),
            (
                KindId::Ingress,
                json!({"metadata": meta("i"), "spec": {}}),
                None,
                vec![
                    "spec: Invalid value: null: either `defaultBackend` or `rules` must be specified",
                ],
            ),
            (
                KindId::Ingress,
                json!({"metadata": meta("i"), "spec": {"rules": [{"http": {"paths": [{"path": "x", "pathType": "Exact",
                "backend": {"service": {"name": "s", "port": {"number": 80}}}}, {"path": "/", "backend": {}}]}}]}}),
                None,
                vec![
                    "spec.rules[0].http.paths[0].path: Invalid value: \"x\": must be an absolute path",
                    "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
                    "spec.rules[0].http.paths[1].backend: Invalid value: \"\": one backend must be specified",
                ],
            ),
            (
                KindId::EndpointSlice,
                json!({"metadata": meta("es"), "endpoints": [{"addresses": []}]}),
                None,
                vec![
                    "addressType: Required value",
                    "endpoints[0].addresses: Required value: must contain at least 1 address",
                ],
            ),
            (
                KindId::PodDisruptionBudget,
                json!({"metadata": meta("pdb"), "spec": {"minAvailable": "150%", "maxUnavailable": -1}}),
                None,
                vec![
                    "spec: Invalid value: {\"maxUnavailable\":-1,\"minAvailable\":\"150%\"}: minAvailable and maxUnavailable cannot be both set",
                    "spec.minAvailable: Invalid value: \"150%\": must not be greater than 100%",
                    "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (
                KindId::CronJob,
                json!({"metadata": meta("c"), "spec": {"schedule": "61 * * * *", "timeZone": "Mars/Olympus",
                "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
                None,
                vec![
                    "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
                    "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
                ],
            ),
            (
                KindId::CronJob,
                json!({"metadata": meta("c"), "spec": {"schedule": "TZ=UTC * * * * *", "timeZone": "Local",
                "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
                None,
                vec![
                    "spec.schedule: Invalid value: \"TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                    "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                ],
            ),
            // A stored schedule with `TZ=` may keep it, but not beside a time zone.
            (
                KindId::CronJob,
                json!({"metadata": meta("c"), "spec": {"schedule": "TZ=UTC 0 * * * *", "timeZone": "UTC",
                "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
                Some(
                    json!({"metadata": meta("c"), "spec": {"schedule": "TZ=UTC * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
                ),
                vec![
                    "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ],
            ),
            // A Job's template and a NonIndexed job's completions are immutable.
            (
                KindId::Job,
                json!({"metadata": meta("j"), "spec": {"completions": 5, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "x"}]}}}}),
                Some(
                    json!({"metadata": meta("j"), "spec": {"completions": 1, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}),
                ),
                vec![
                    "spec.completions: Invalid value: 5: field is immutable",
                    "spec.template: Invalid value: {\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"image\":\"x\",\"imagePullPolicy\":\"Always\",\"name\":\"c\",\"resources\":{},\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\"}],\"dnsPolicy\":\"ClusterFirst\",\"restartPolicy\":\"Never\",\"schedulerName\":\"default-scheduler\",\"securityContext\":{},\"terminationGracePeriodSeconds\":30}}: field is immutable",
                ],
            ),
            (
                KindId::StatefulSet,
                json!({"metadata": meta("s"), "spec": {"serviceName": "other", "replicas": 3, "selector": {"matchLabels": {"app": "db"}},
                "template": pod_template(&json!({"app": "db"}))}}),
                Some(
                    json!({"metadata": meta("s"), "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                "template": pod_template(&json!({"app": "db"}))}}),
                ),
                vec![
                    "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                ],
            ),
            (
                KindId::Lease,
                json!({"metadata": meta("l"), "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1, "preferredHolder": "x"}}),
                None,
                vec![
                    "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                    "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
                    "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
                ],
            ),
            (
                KindId::Event,
                json!({"metadata": meta("e"), "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"}}),
                None,
                vec![
                    "involvedObject.namespace: Invalid value: \"other\": does not match event.namespace",
                ],
            ),
            (
                KindId::EventsV1Event,
                json!({"metadata": meta("e"), "regarding": {"namespace": "default"}, "type": "Info", "deprecatedCount": 2}),
                None,
                vec![
                    "eventTime: Required value",
                    "type: Invalid value: \"\": has invalid value: Info",
                    "count: Invalid value: \"\": needs to be unset",
                ],
            ),
            (
                KindId::EventsV1Event,
                json!({"metadata": meta("e"), "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/c",
                "reportingInstance": "i", "action": "A", "reason": "Changed", "type": "Normal", "series": {"count": 1},
                "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
                Some(
                    json!({"metadata": meta("e"), "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/c",
                "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
                "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
                ),
                vec![
                    "series.count: Invalid value: \"\": should be at least 2",
                    "series.lastObservedTime: Required value",
                    "reason: Invalid value: \"Changed\": field is immutable",
                ],
            ),
            (
                KindId::EventsV1Event,
                json!({"metadata": meta("Bad_Name"), "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/c",
                "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
                "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
                None,
                vec![
                    "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": {"name": "cm", "namespace": "default", "finalizers": ["custom"]}}),
                None,
                vec![
                    "metadata.finalizers[0]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified",
                ],
            ),
            (
                KindId::StatefulSet,
                json!({"metadata": meta("web"), "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web", "bad key": "x"}}, "spec": {"activeDeadlineSeconds": 5,
                        "containers": [{"name": "c", "image": "nginx"}]}}}}),
                None,
                vec![
                    "spec.template.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
                ],
            ),
            (
                KindId::NetworkPolicy,
                json!({"metadata": meta("np"), "spec": {"policyTypes": ["Ingress", "Sideways"],
                    "ingress": [{"from": [{}, {"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}},
                        {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/8", "nope"]}}],
                        "ports": [{"port": 0, "protocol": "ICMP"}, {"port": "http", "endPort": 90}, {"endPort": 90}]}]}}),
                None,
                vec![
                    "spec.ingress[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
                    "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                    "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
                    "spec.ingress[0].ports[2].endPort: Invalid value: 90: may not be specified when `port` is not specified",
                    "spec.ingress[0].from[0]: Required value: must specify a peer",
                    "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
                    "spec.ingress[0].from[2].ipBlock.except[0]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`",
                    "spec.ingress[0].from[2].ipBlock.except[1]: Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                    "spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"",
                ],
            ),
            (
                KindId::HorizontalPodAutoscaler,
                json!({"metadata": meta("web"), "spec": {"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 3, "maxReplicas": 2}}),
                None,
                vec![
                    "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
                    "spec.scaleTargetRef.name: Required value",
                ],
            ),
            (
                KindId::HorizontalPodAutoscaler,
                json!({"metadata": meta("web"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2,
                    "metrics": [{"type": "Resource", "pods": {"metric": {"name": "x"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
                        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]}}),
                None,
                vec![
                    "spec.metrics[0].resource: Required value: must populate information for the given metric source",
                    "spec.metrics[1].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
                ],
            ),
            (
                KindId::ResourceQuota,
                json!({"metadata": meta("q"), "spec": {"hard": {"pods": "1.5", "gpu": "1", "cpu": "-1"}, "scopes": ["Sometimes"]}}),
                None,
                vec![
                    "spec.hard[cpu]: Invalid value: \"-1\": must be a valid resource quantity",
                    "spec.hard[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                    "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
                    "spec.scopes: Invalid value: [\"Sometimes\"]: unsupported scope",
                ],
            ),
            (
                KindId::LimitRange,
                json!({"metadata": meta("l"), "spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
                    {"type": "Pod", "default": {"cpu": "1"}}, {"type": "PersistentVolumeClaim"}]}}),
                None,
                vec![
                    "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
                    "spec.limits[0].defaultRequest[cpu]: Invalid value: \"1\": min value 2 is greater than default request value 1",
                    "spec.limits[0].default[cpu]: Invalid value: \"2\": min value 2 is greater than default value 1",
                    "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
                    "spec.limits[2].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
                ],
            ),
            (
                KindId::CSIDriver,
                json!({"metadata": {"name": "d"}, "spec": {"attachRequired": false, "podInfoOnMount": false,
                    "storageCapacity": false, "fsGroupPolicy": "Sometimes",
                    "volumeLifecycleModes": ["Persistent", "Forever"],
                    "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}],
                    "nodeAllocatableUpdatePeriodSeconds": 5}}),
                Some(
                    json!({"metadata": {"name": "d"}, "spec": {"attachRequired": true,
                    "volumeLifecycleModes": ["Persistent"]}}),
                ),
                vec![
                    "spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
                    "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                    "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
                    "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"",
                    "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds",
                    "spec.attachedRequired: Invalid value: false: field is immutable",
                    "spec.volumeLifecycleModes: Invalid value: [\"Persistent\",\"Forever\"]: field is immutable",
                ],
            ),
            (
                KindId::PodTemplate,
                json!({"metadata": {"name": "t", "namespace": "default"},
                    "template": {"metadata": {"labels": {"bad key!": "x"}},
                        "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "containers": []}}}),
                None,
                vec![
                    "template.metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "template.spec.containers: Required value",
                ],
            ),
            (
                KindId::RuntimeClass,
                json!({"metadata": {"name": "r"}, "handler": "Run_C",
                    "overhead": {"podFixed": {"cpu": "-1"}},
                    "scheduling": {"nodeSelector": {"bad key!": "x"}}}),
                Some(json!({"metadata": {"name": "r"}, "handler": "runc"})),
                vec![
                    "handler: Invalid value: \"Run_C\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                    "overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                    "scheduling.nodeSelector: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "handler: Invalid value: \"Run_C\": field is immutable",
                ],
            ),
            (
                KindId::StorageClass,
                json!({"metadata": {"name": "fast"}, "provisioner": "b.io/p", "parameters": {"type": "gp3"}, "reclaimPolicy": "Retain"}),
                Some(
                    json!({"metadata": {"name": "fast"}, "provisioner": "a.io/p", "parameters": {"type": "gp2"}}),
                ),
                vec![
                    "parameters: Forbidden: updates to parameters are forbidden.",
                    "provisioner: Forbidden: updates to provisioner are forbidden.",
                    "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                ],
            ),
            (
                KindId::IngressClass,
                json!({"metadata": {"name": "nginx"}, "spec": {"controller": "nginx",
                    "parameters": {"kind": "P", "name": "p", "scope": "Namespace"}}}),
                None,
                vec![
                    "spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")",
                    "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
                ],
            ),
        ];
        for (id, obj, old, want) in cases {
            assert_eq!(errors(id, obj.clone(), old), want, "{id:?} {obj}");
        }
    }
}
