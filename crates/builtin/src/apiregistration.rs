//! `apiregistration.k8s.io/v1` `APIService`s, kube-aggregator's registrations of group
//! versions: validation (`pkg/apis/apiregistration/validation`), defaults, the `AVAILABLE`
//! column, and the objects kube-apiserver keeps for the group versions it serves itself (its
//! `autoregister` and `crdregistration` controllers). Tools and controllers list and watch them
//! (cert-manager's CA injector does); this server proxies to no aggregated API server.

use crd_core::validation::{is_dns1035_label, is_dns1123_subdomain};
use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Value, json};

use crate::validation::{arr, at, s};

/// The label kube-apiserver puts on the `APIService`s it manages.
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The label's value on the `APIService`s of built-in group versions: created at start-up.
pub const ON_START: &str = "onstart";

/// The label's value on the `APIService`s of custom resources' group versions: kept while a
/// CRD serves the group version.
pub const SYNCED: &str = "true";

/// The `Available` condition of a local `APIService`.
pub const LOCAL_REASON: &str = "Local";

/// Its message.
pub const LOCAL_MESSAGE: &str = "Local APIServices are always available";

/// The name an `APIService` must have: `<version>.<group>`.
pub fn name_for(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The name errors of `ValidateAPIService`'s name function: a path segment, and exactly
/// `spec.version + "." + spec.group`.
pub fn name_errors(obj: &Value) -> Vec<String> {
    let name = s(obj, "/metadata/name");
    let minimal = crate::rbac::path_segment_name_errors(name);
    if !minimal.is_empty() {
        return minimal;
    }
    let required = name_for(s(obj, "/spec/group"), s(obj, "/spec/version"));
    if name == required {
        Vec::new()
    } else {
        vec![format!(
            "must be `spec.version+\".\"+spec.group`: {required:?}"
        )]
    }
}

/// `ValidateAPIService` beyond the metadata.
pub fn validate(obj: &Value, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    let spec = at(obj, "/spec");
    let group = s(spec, "/group");
    let version = s(spec, "/version");
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            &sp.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&sp.child("group"), group, m));
        }
    }
    for m in is_dns1035_label(version) {
        errs.push(FieldError::invalid(&sp.child("version"), version, m));
    }
    let group_priority = at(spec, "/groupPriorityMinimum").as_i64().unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        errs.push(FieldError::invalid(
            &sp.child("groupPriorityMinimum"),
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = at(spec, "/versionPriority").as_i64().unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        errs.push(FieldError::invalid(
            &sp.child("versionPriority"),
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = s(spec, "/caBundle");
    let insecure = at(spec, "/insecureSkipTLSVerify").as_bool() == Some(true);
    let service = at(spec, "/service");
    if service.is_null() {
        if !ca_bundle.is_empty() {
            // Upstream counts the decoded bytes.
            let bytes = base64_len(ca_bundle);
            errs.push(FieldError::invalid(
                &sp.child("caBundle"),
                format!("{bytes} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                &sp.child("insecureSkipTLSVerify"),
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return;
    }
    let svc = sp.child("service");
    for field in ["namespace", "name"] {
        if s(service, &format!("/{field}")).is_empty() {
            errs.push(FieldError::required(&svc.child(field), ""));
        }
    }
    if insecure && !ca_bundle.is_empty() {
        errs.push(FieldError::invalid(
            &sp.child("insecureSkipTLSVerify"),
            true,
            "may not be true if caBundle is present",
        ));
    }
}

/// The length of base64 `text` once decoded (Go's `[]byte` fields are base64 in JSON).
fn base64_len(text: &str) -> usize {
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3).saturating_sub(padding)
}

/// `ValidateAPIServiceStatus`: every condition's status is `True`, `False` or `Unknown`.
pub fn validate_status(obj: &Value, errs: &mut ErrorList) {
    let path = Path::new("status").child("conditions");
    for (i, c) in arr(obj, "/status/conditions").iter().enumerate() {
        let status = s(c, "/status");
        if !matches!(status, "True" | "False" | "Unknown") {
            errs.push(FieldError::not_supported(
                &path.index(i).child("status"),
                status,
                &["True", "False", "Unknown"],
            ));
        }
    }
}

/// `SetDefaults_ServiceReference`: a service's port is 443 unless given.
pub fn apply_defaults(obj: &mut Value) {
    if let Some(service) = obj
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert(json!(443));
    }
}

/// The `SERVICE` column: `Local`, or `<namespace>/<name>`.
pub fn service_column(obj: &Value) -> String {
    let service = at(obj, "/spec/service");
    if service.is_null() {
        return "Local".into();
    }
    format!("{}/{}", s(service, "/namespace"), s(service, "/name"))
}

/// The `AVAILABLE` column: the `Available` condition's status, with its reason when it is not
/// `True` (`False (ServiceNotFound)`); `Unknown` without the condition.
pub fn available_column(obj: &Value) -> String {
    let Some(c) = available_condition(obj) else {
        return "Unknown".into();
    };
    let status = s(c, "/status");
    if status == "True" {
        status.into()
    } else {
        format!("{status} ({})", s(c, "/reason"))
    }
}

/// The `Available` condition, when the status has one.
pub fn available_condition(obj: &Value) -> Option<&Value> {
    arr(obj, "/status/conditions")
        .iter()
        .find(|c| s(c, "/type") == "Available")
}

/// The `APIService` kube-apiserver keeps for a group version it serves itself (`spec.service`
/// null), with the `automanaged` label's value ([`ON_START`] or [`SYNCED`]).
pub fn local(
    group: &str,
    version: &str,
    group_priority: u32,
    version_priority: u32,
    automanaged: &str,
) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name_for(group, version), "labels": {AUTOMANAGED: automanaged}},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority,
                 "versionPriority": version_priority},
    })
}

/// An `Available` condition with this status, reason and message, observed at `now`.
pub fn available(status: bool, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": "Available", "status": if status { "True" } else { "False" },
           "lastTransitionTime": now, "reason": reason, "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(spec: &Value) -> Value {
        let name = format!(
            "{}.{}",
            spec["version"].as_str().unwrap_or(""),
            spec["group"].as_str().unwrap_or("")
        );
        json!({"metadata": {"name": name}, "spec": spec})
    }

    fn messages(obj: &Value) -> Vec<String> {
        let mut errs = ErrorList::new();
        validate(obj, &mut errs);
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn specs_are_checked_as_upstream_checks_them() {
        // (spec, messages)
        let cases = [
            (
                json!({"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                       "versionPriority": 100, "service": {"namespace": "kube-system", "name": "m"}}),
                vec![],
            ),
            (
                json!({"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}),
                vec![],
            ),
            (
                json!({"group": "", "version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1}),
                vec![
                    "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                ],
            ),
            (
                json!({"group": "Bad_Group", "version": "V1", "groupPriorityMinimum": 0,
                       "versionPriority": 1001}),
                vec![
                    "spec.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                    "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                ],
            ),
            (
                json!({"group": "a.io", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                       "caBundle": "YWJjZA==", "insecureSkipTLSVerify": true}),
                vec![
                    "spec.caBundle: Invalid value: \"4 bytes\": local APIServices may not have a caBundle",
                    "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
                ],
            ),
            (
                json!({"group": "a.io", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                       "caBundle": "YWJj", "insecureSkipTLSVerify": true, "service": {}}),
                vec![
                    "spec.service.namespace: Required value",
                    "spec.service.name: Required value",
                    "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
                ],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(messages(&service(&spec)), want, "{spec}");
        }
    }

    #[test]
    fn the_name_is_version_dot_group() {
        let mut obj = service(&json!({"group": "metrics.k8s.io", "version": "v1beta1"}));
        assert!(name_errors(&obj).is_empty());
        obj["metadata"]["name"] = json!("metrics");
        assert_eq!(
            name_errors(&obj),
            ["must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""]
        );
        obj["metadata"]["name"] = json!("a/b");
        assert_eq!(name_errors(&obj), ["may not contain '/'"]);
        // The core group's registration is `v1.`.
        let core = service(&json!({"group": "", "version": "v1"}));
        assert_eq!(core["metadata"]["name"], "v1.");
        assert!(name_errors(&core).is_empty());
    }

    #[test]
    fn status_columns_and_defaults() {
        let mut obj = service(&json!({"group": "m.io", "version": "v1",
            "service": {"namespace": "ns", "name": "svc"}}));
        apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["service"]["port"], 443);
        assert_eq!(service_column(&obj), "ns/svc");
        assert_eq!(available_column(&obj), "Unknown");
        obj["status"] = json!({"conditions": [available(false, "ServiceNotFound", "x", "t")]});
        assert_eq!(available_column(&obj), "False (ServiceNotFound)");
        let local = local("apps", "v1", 17800, 15, ON_START);
        assert_eq!(local["metadata"]["name"], "v1.apps");
        assert_eq!(service_column(&local), "Local");
        let mut errs = ErrorList::new();
        validate(&local, &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        obj["status"]["conditions"][0]["status"] = json!("Maybe");
        let mut errs = ErrorList::new();
        validate_status(&obj, &mut errs);
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""
            ]
        );
    }
}
