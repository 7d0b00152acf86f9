//! The `rbac.authorization.k8s.io/v1` kinds (Role, `ClusterRole`, `RoleBinding`,
//! `ClusterRoleBinding`): upstream's defaults (`pkg/apis/rbac/v1/defaults.go`), key
//! validations with upstream's paths and messages (`pkg/apis/rbac/validation`) and printer
//! cells (`printRole`, `printRoleBinding`).

use crd_core::validation::is_dns1123_subdomain;
use crd_core::{ErrorList, FieldError, Path};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::{Kind, KindId};

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

fn at<'a>(v: &'a Value, ptr: &str) -> &'a Value {
    v.pointer(ptr).unwrap_or(&Value::Null)
}
fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    at(v, ptr).as_str().unwrap_or("")
}
fn arr<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    at(v, ptr).as_array().map_or(&[], Vec::as_slice)
}

/// `ValidateRBACName` (`path.IsValidPathSegmentName`): the messages for a name that is not a
/// valid path segment.
pub fn path_segment_name_errors(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name == "." || name == ".." {
        out.push(format!("may not be '{name}'"));
        return out;
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    out
}

/// Whether the kind is one of the RBAC kinds.
pub fn is_rbac(id: KindId) -> bool {
    matches!(
        id,
        KindId::Role | KindId::ClusterRole | KindId::RoleBinding | KindId::ClusterRoleBinding
    )
}

/// `SetDefaults_RoleBinding`/`ClusterRoleBinding` and `SetDefaults_Subject`: `roleRef.apiGroup`
/// defaults to the RBAC group, User and Group subjects' `apiGroup` too.
pub fn apply_defaults(id: KindId, obj: &mut Value) {
    if matches!(id, KindId::Role | KindId::ClusterRole) {
        // `Rules []PolicyRule json:"rules"` (no `omitempty`): Go writes an unset list as null.
        if let Some(m) = obj.as_object_mut() {
            m.entry("rules").or_insert(Value::Null);
        }
        return;
    }
    if !matches!(id, KindId::RoleBinding | KindId::ClusterRoleBinding) {
        return;
    }
    if let Some(r) = obj.get_mut("roleRef").and_then(Value::as_object_mut)
        && r.get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        r.insert("apiGroup".into(), json!(GROUP));
    }
    if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
        for sub in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let empty = sub
                .get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            let kind = sub.get("kind").and_then(Value::as_str).unwrap_or("");
            if empty && matches!(kind, "User" | "Group") {
                sub.insert("apiGroup".into(), json!(GROUP));
            }
        }
    }
}

/// `ValidatePolicyRule`.
fn policy_rule(rule: &Value, namespaced: bool, path: &Path, errs: &mut ErrorList) {
    if arr(rule, "/verbs").is_empty() {
        errs.push(FieldError::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = at(rule, "/nonResourceURLs");
    if !arr(rule, "/nonResourceURLs").is_empty() {
        if namespaced {
            errs.push(FieldError::invalid(
                &path.child("nonResourceURLs"),
                urls.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !arr(rule, "/apiGroups").is_empty()
            || !arr(rule, "/resources").is_empty()
            || !arr(rule, "/resourceNames").is_empty()
        {
            errs.push(FieldError::invalid(
                &path.child("nonResourceURLs"),
                urls.clone(),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if arr(rule, "/apiGroups").is_empty() {
        errs.push(FieldError::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if arr(rule, "/resources").is_empty() {
        errs.push(FieldError::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// `ValidateRoleBindingSubject`.
fn subject(sub: &Value, namespaced: bool, path: &Path, errs: &mut ErrorList) {
    let name = s(sub, "/name");
    let api_group = s(sub, "/apiGroup");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    match s(sub, "/kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for m in is_dns1123_subdomain(name) {
                    errs.push(FieldError::invalid(&path.child("name"), name, m));
                }
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    api_group,
                    &[""],
                ));
            }
            if !namespaced && s(sub, "/namespace").is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    api_group,
                    &[GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// The internal `rbac.RoleRef` as Kubernetes 1.34's field errors print a struct (JSON of the
/// untagged internal type).
fn role_ref_value(obj: &Value) -> Value {
    json!({
        "APIGroup": s(obj, "/roleRef/apiGroup"),
        "Kind": s(obj, "/roleRef/kind"),
        "Name": s(obj, "/roleRef/name"),
    })
}

/// The RBAC-specific validation of an object of `kind` (metadata aside): rules, aggregation
/// rules, role references and subjects, and the immutable `roleRef` on update.
pub fn validate(kind: &Kind, obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    match kind.id {
        KindId::Role | KindId::ClusterRole => {
            let namespaced = kind.id == KindId::Role;
            for (i, r) in arr(obj, "/rules").iter().enumerate() {
                policy_rule(r, namespaced, &Path::new("rules").index(i), errs);
            }
            if kind.id == KindId::ClusterRole && !at(obj, "/aggregationRule").is_null() {
                let p = Path::new("aggregationRule").child("clusterRoleSelectors");
                let selectors = arr(obj, "/aggregationRule/clusterRoleSelectors");
                if selectors.is_empty() {
                    errs.push(FieldError::required(
                        &p,
                        "at least one clusterRoleSelector required if aggregationRule is non-nil",
                    ));
                }
                for (i, sel) in selectors.iter().enumerate() {
                    errs.extend(crate::validation::validate_label_selector(sel, &p.index(i)));
                }
            }
        }
        KindId::RoleBinding | KindId::ClusterRoleBinding => {
            let namespaced = kind.id == KindId::RoleBinding;
            let rp = Path::new("roleRef");
            let group = s(obj, "/roleRef/apiGroup");
            if group != GROUP {
                errs.push(FieldError::not_supported(
                    &rp.child("apiGroup"),
                    group,
                    &[GROUP],
                ));
            }
            let role_kind = s(obj, "/roleRef/kind");
            let kinds: &[&str] = if namespaced {
                &["Role", "ClusterRole"]
            } else {
                &["ClusterRole"]
            };
            if !kinds.contains(&role_kind) {
                errs.push(FieldError::not_supported(
                    &rp.child("kind"),
                    role_kind,
                    kinds,
                ));
            }
            let name = s(obj, "/roleRef/name");
            if name.is_empty() {
                errs.push(FieldError::required(&rp.child("name"), ""));
            } else {
                for m in path_segment_name_errors(name) {
                    errs.push(FieldError::invalid(&rp.child("name"), name, m));
                }
            }
            for (i, sub) in arr(obj, "/subjects").iter().enumerate() {
                subject(sub, namespaced, &Path::new("subjects").index(i), errs);
            }
            if let Some(old) = old
                && role_ref_value(old) != role_ref_value(obj)
            {
                errs.push(FieldError::invalid(
                    &rp,
                    role_ref_value(obj),
                    "cannot change roleRef",
                ));
            }
        }
        _ => {}
    }
}

/// `printRole`/`printClusterRole`: name and creation time (RFC 3339, UTC);
/// `printRoleBinding`/`printClusterRoleBinding`: name, `Kind/name` of the role, age, and (wide)
/// users, groups and service accounts (`namespace:name`).
pub fn cells(id: KindId, obj: &Value, name: Value, age: Value, _now: Timestamp) -> Vec<Value> {
    match id {
        KindId::Role | KindId::ClusterRole => {
            let created = s(obj, "/metadata/creationTimestamp")
                .parse::<Timestamp>()
                .map_or_else(
                    |_| "0001-01-01T00:00:00Z".into(),
                    crd_core::time::rfc3339_seconds,
                );
            vec![name, json!(created)]
        }
        _ => {
            let role = format!("{}/{}", s(obj, "/roleRef/kind"), s(obj, "/roleRef/name"));
            let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
            for sub in arr(obj, "/subjects") {
                let n = s(sub, "/name").to_string();
                match s(sub, "/kind") {
                    "User" => users.push(n),
                    "Group" => groups.push(n),
                    "ServiceAccount" => sas.push(format!("{}:{n}", s(sub, "/namespace"))),
                    _ => {}
                }
            }
            vec![
                name,
                json!(role),
                age,
                json!(users.join(", ")),
                json!(groups.join(", ")),
                json!(sas.join(", ")),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::get;

    fn errors(id: KindId, obj: &Value, old: Option<&Value>) -> Vec<String> {
        get(id)
            .validate(obj, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn validation_matches_upstream() {
        let role = json!({"metadata": {"name": "r", "namespace": "ns"},
            "rules": [{"verbs": []}, {"verbs": ["get"], "nonResourceURLs": ["/x"]},
                      {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        assert_eq!(
            errors(KindId::Role, &role, None),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
                "rules[1].nonResourceURLs: Invalid value: [\"/x\"]: namespaced rules cannot apply to non-resource URLs",
            ]
        );
        let cr = json!({"metadata": {"name": "a/b"}, "aggregationRule": {},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}]});
        assert_eq!(
            errors(KindId::ClusterRole, &cr, None),
            [
                "metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "rules[0].nonResourceURLs: Invalid value: [\"/x\"]: rules cannot apply to both regular resources and non-resource URLs",
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil",
            ]
        );
        let mut rb = json!({"metadata": {"name": "b", "namespace": "ns"},
            "roleRef": {"kind": "Nope", "name": ""},
            "subjects": [{"kind": "User", "name": "jane"}, {"kind": "Robot", "name": "x"},
                         {"kind": "ServiceAccount", "name": "", "apiGroup": "x"}]});
        get(KindId::RoleBinding).apply_defaults(&mut rb);
        // Roles write their unset rules as null (no `omitempty`); bindings omit subjects.
        for (id, mut obj, want) in [
            (KindId::Role, json!({}), json!({"rules": null})),
            (
                KindId::ClusterRole,
                json!({"rules": []}),
                json!({"rules": []}),
            ),
            (
                KindId::ClusterRoleBinding,
                json!({"roleRef": {"kind": "ClusterRole", "name": "r"}}),
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"}}),
            ),
        ] {
            get(id).apply_defaults(&mut obj);
            assert_eq!(obj, want);
        }
        assert_eq!(
            errors(KindId::RoleBinding, &rb, None),
            [
                "roleRef.kind: Unsupported value: \"Nope\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                "subjects[2].name: Required value",
                "subjects[2].apiGroup: Unsupported value: \"x\": supported values: \"\"",
            ]
        );
        let crb = json!({"metadata": {"name": "b"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}]});
        assert_eq!(
            errors(KindId::ClusterRoleBinding, &crb, None),
            ["subjects[0].namespace: Required value"]
        );
        let mut changed = crb.clone();
        changed["roleRef"]["name"] = json!("edit");
        changed["subjects"][0]["namespace"] = json!("ns");
        let mut old = crb.clone();
        old["subjects"][0]["namespace"] = json!("ns");
        assert_eq!(
            errors(KindId::ClusterRoleBinding, &changed, Some(&old)),
            [
                "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
            ]
        );
    }

    #[test]
    fn binding_cells() {
        let now: Timestamp = "2024-01-01T01:00:00Z".parse().unwrap();
        let rb = json!({"metadata": {"name": "b", "creationTimestamp": "2024-01-01T00:55:00Z"},
            "roleRef": {"kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "User", "name": "jane"}, {"kind": "User", "name": "joe"},
                         {"kind": "Group", "name": "devs"},
                         {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]});
        assert_eq!(
            get(KindId::RoleBinding).cells(&rb, now),
            [
                json!("b"),
                json!("ClusterRole/edit"),
                json!("5m"),
                json!("jane, joe"),
                json!("devs"),
                json!("ns:sa")
            ]
        );
        assert_eq!(
            get(KindId::ClusterRole).cells(&rb, now),
            [json!("b"), json!("2024-01-01T00:55:00Z")]
        );
    }
}
