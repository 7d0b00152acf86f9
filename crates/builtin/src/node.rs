//! `Node` validation (`ValidateNode`, `ValidateNodeUpdate`): taints, resource quantities, pod
//! CIDRs, and the spec fields an update may set only once. No kubelet runs here; tests and
//! operators write nodes (and their status) themselves, as in envtest.

use crd_core::validation::{is_qualified_name, is_valid_label_value};
use crd_core::{ErrorList, FieldError, Path};
use serde_json::Value;

use crate::policy_kinds::{CIDR_MESSAGE, INTEGER_QUOTA_RESOURCES, is_integer, parse_cidr};
use crate::validation::{arr, at, compound, quantity, s};

const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const CIDR_ONCE: &str = "node updates may not change podCIDR except from \"\" to valid";

/// `ValidateNode` beyond the metadata (validated by the caller), and with `old`
/// `ValidateNodeUpdate`'s rules. A `/status` write runs the same checks (its spec is the
/// stored one).
pub fn validate(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    // Upstream validates taints under `metadata.taints` (its path starts from `metadata`).
    taints(
        arr(obj, "/spec/taints"),
        &Path::new("metadata").child("taints"),
        errs,
    );
    resources(obj, errs);
    pod_cidrs(arr(obj, "/spec/podCIDRs"), errs);
    if let Some(old) = old {
        update(obj, old, errs);
    }
}

/// `validateNodeTaints`: a qualified key, a label value, one of three effects, and each
/// key and effect pair once.
fn taints(taints: &[Value], path: &Path, errs: &mut ErrorList) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, taint) in taints.iter().enumerate() {
        let ip = path.index(i);
        let (key, value, effect) = (s(taint, "/key"), s(taint, "/value"), s(taint, "/effect"));
        for m in is_qualified_name(key) {
            errs.push(FieldError::invalid(&ip.child("key"), key, m));
        }
        let problems = is_valid_label_value(value);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &ip.child("value"),
                value,
                problems.join(";"),
            ));
        }
        if effect.is_empty() {
            errs.push(FieldError::required(&ip.child("effect"), ""));
        } else if !TAINT_EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(
                &ip.child("effect"),
                effect,
                TAINT_EFFECTS,
            ));
        }
        if seen.contains(&(key, effect)) {
            let mut e = FieldError::duplicate(&ip, compound(taint));
            e.detail = "taints must be unique by key and effect pair".into();
            errs.push(e);
            continue;
        }
        seen.push((key, effect));
    }
}

/// `ValidateNodeResources`: capacity and allocatable quantities are not negative, and whole
/// numbers for integer resources (object counts and extended resources such as
/// `example.com/gpu`). Resources are taken in name order (Go's map order is random).
fn resources(obj: &Value, errs: &mut ErrorList) {
    for list in ["capacity", "allocatable"] {
        let Some(map) = at(obj, &format!("/status/{list}")).as_object() else {
            continue;
        };
        let mut names: Vec<&String> = map.keys().collect();
        names.sort();
        for name in names {
            let Some(q) = quantity(&map[name.as_str()]) else {
                continue;
            };
            let path = Path::new("status").child(list).child(name);
            if q.is_negative() {
                errs.push(FieldError::invalid(
                    &path,
                    q.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
            if is_integer_resource(name) && !is_integer(&q) {
                errs.push(FieldError::invalid(
                    &path,
                    q.to_string(),
                    "must be an integer",
                ));
            }
        }
    }
}

/// `IsIntegerResourceName`: the object counts, and extended resources (a domain other than
/// `kubernetes.io`, not a `requests.` quota name).
fn is_integer_resource(name: &str) -> bool {
    INTEGER_QUOTA_RESOURCES.contains(&name)
        || (name.contains('/')
            && !name.contains("kubernetes.io/")
            && !name.starts_with("requests.")
            && is_qualified_name(&format!("requests.{name}")).is_empty())
}

/// Pod CIDRs: each a CIDR; two at most, one per IP family; no repeats.
fn pod_cidrs(cidrs: &[Value], errs: &mut ErrorList) {
    let path = Path::new("spec").child("podCIDRs");
    let mut families = (false, false);
    for (i, c) in cidrs.iter().enumerate() {
        let text = c.as_str().unwrap_or("");
        match parse_cidr(text) {
            Some((ip, _)) if ip.is_ipv4() => families.0 = true,
            Some(_) => families.1 = true,
            None => errs.push(FieldError::invalid(&path.index(i), text, CIDR_MESSAGE)),
        }
    }
    if cidrs.len() > 1 {
        if !(families.0 && families.1) || cidrs.len() > 2 {
            errs.push(FieldError::invalid(
                &path,
                compound(&Value::Array(cidrs.to_vec())),
                "may specify no more than one CIDR for each IP family",
            ));
        }
        for (i, c) in cidrs.iter().enumerate() {
            if cidrs[..i].contains(c) {
                errs.push(FieldError::duplicate(&path.index(i), c.clone()));
            }
        }
    }
}

/// `ValidateNodeUpdate`'s own rules: no address twice in the status; pod CIDRs and the
/// provider ID set once; the external ID never changed.
fn update(obj: &Value, old: &Value, errs: &mut ErrorList) {
    let addresses = arr(obj, "/status/addresses");
    for (i, a) in addresses.iter().enumerate() {
        let same =
            |b: &Value| s(a, "/type") == s(b, "/type") && s(a, "/address") == s(b, "/address");
        if addresses[..i].iter().any(same) {
            errs.push(FieldError::duplicate(
                &Path::new("status").child("addresses").index(i),
                compound(a),
            ));
        }
    }
    let (old_cidrs, new_cidrs) = (arr(old, "/spec/podCIDRs"), arr(obj, "/spec/podCIDRs"));
    let cidr_path = Path::new("spec").child("podCIDRs");
    if !old_cidrs.is_empty() {
        if old_cidrs.len() == new_cidrs.len() {
            for (o, n) in old_cidrs.iter().zip(new_cidrs) {
                if o != n {
                    errs.push(FieldError::forbidden(&cidr_path, CIDR_ONCE));
                }
            }
        } else {
            errs.push(FieldError::forbidden(&cidr_path, CIDR_ONCE));
        }
    }
    let old_provider = s(old, "/spec/providerID");
    if !old_provider.is_empty() && old_provider != s(obj, "/spec/providerID") {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if s(obj, "/spec/externalID") != s(old, "/spec/externalID") {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("externalID"),
            "may not be updated",
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{KindId, get};

    /// Literal nodes in, upstream's error strings out.
    #[test]
    fn node_validation_matches_upstream_messages() {
        let kind = get(KindId::Node);
        let base = |spec: serde_json::Value, status: serde_json::Value| {
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                   "spec": spec, "status": status})
        };
        let cases: Vec<(serde_json::Value, Vec<&str>)> = vec![
            (base(json!({}), json!({})), vec![]),
            (
                base(
                    json!({"taints": [{"key": "a", "effect": "NoSchedule"},
                                      {"key": "a", "effect": "NoSchedule"},
                                      {"key": "b/c/d", "effect": "Sometimes"},
                                      {"key": "e"}]}),
                    json!({}),
                ),
                vec![
                    "metadata.taints[1]: Duplicate value: {\"effect\":\"NoSchedule\",\"key\":\"a\"}: taints must be unique by key and effect pair",
                    "metadata.taints[2].key: Invalid value: \"b/c/d\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                    "metadata.taints[2].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                    "metadata.taints[3].effect: Required value",
                ],
            ),
            (
                base(
                    json!({}),
                    json!({"capacity": {"cpu": "-1", "pods": "1500m", "example.com/gpu": "0.5", "memory": "1Gi"}}),
                ),
                vec![
                    "status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
                    "status.capacity.example.com/gpu: Invalid value: \"500m\": must be an integer",
                    "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
                ],
            ),
            (
                base(
                    json!({"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"]}),
                    json!({}),
                ),
                vec![
                    "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family",
                ],
            ),
            (
                base(
                    json!({"podCIDRs": ["10.0.0.0/24", "fd00::/64", "bad"]}),
                    json!({}),
                ),
                vec![
                    "spec.podCIDRs[2]: Invalid value: \"bad\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                    "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"fd00::/64\",\"bad\"]: may specify no more than one CIDR for each IP family",
                ],
            ),
            (
                base(json!({"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}), json!({})),
                vec![],
            ),
        ];
        for (node, want) in cases {
            let got: Vec<String> = kind
                .validate(&node, None)
                .0
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{node}");
        }
    }

    /// A node's defaults, its v1 conversion of `podCIDR`, and what Go's JSON always writes;
    /// a create keeps the status it was given.
    #[test]
    fn node_defaults_and_zero_structs() {
        let kind = get(KindId::Node);
        let info = json!({"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
            "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
            "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""});
        let cases = [
            (
                json!({"metadata": {"name": "n"}}),
                json!({"metadata": {"name": "n"}, "spec": {},
                       "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": info}}),
            ),
            (
                json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "10.0.0.0/24"},
                       "status": {"capacity": {"cpu": "2"}, "nodeInfo": {"kubeletVersion": "v1.32.0"},
                                  "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}}),
                json!({"metadata": {"name": "n"},
                       "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"]},
                       "status": {"capacity": {"cpu": "2"}, "allocatable": {"cpu": "2"},
                                  "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                                  "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "",
                                      "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "",
                                      "kubeletVersion": "v1.32.0", "kubeProxyVersion": "",
                                      "operatingSystem": "", "architecture": ""}}}),
            ),
            (
                json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "x", "podCIDRs": ["fd00::/64", "10.0.0.0/24"]},
                       "status": {"capacity": {"cpu": "2"}, "allocatable": {"cpu": "1"}}}),
                json!({"metadata": {"name": "n"},
                       "spec": {"podCIDR": "fd00::/64", "podCIDRs": ["fd00::/64", "10.0.0.0/24"]},
                       "status": {"capacity": {"cpu": "2"}, "allocatable": {"cpu": "1"},
                                  "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": info}}),
            ),
        ];
        for (mut node, want) in cases {
            kind.apply_defaults(&mut node);
            kind.prepare_create(&mut node);
            assert_eq!(node, want);
        }
        // A main-resource update keeps the stored status; a `/status` write keeps the spec.
        let old = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true},
                         "status": {"phase": "Running"}});
        let mut update =
            json!({"metadata": {"name": "n"}, "spec": {}, "status": {"phase": "Gone"}});
        kind.prepare_update(&mut update, &old, false);
        assert_eq!(update["status"]["phase"], "Running");
        assert_eq!(update["spec"], json!({}));
        let mut status =
            json!({"metadata": {"name": "n"}, "spec": {}, "status": {"phase": "Gone"}});
        kind.prepare_update(&mut status, &old, true);
        assert_eq!(status["spec"], json!({"unschedulable": true}));
        assert_eq!(status["status"]["phase"], "Gone");
        assert_eq!(
            status["status"]["daemonEndpoints"],
            json!({"kubeletEndpoint": {"Port": 0}})
        );
    }

    #[test]
    fn node_updates_set_cidrs_and_provider_once() {
        let kind = get(KindId::Node);
        let node = |spec: serde_json::Value, addresses: serde_json::Value| {
            json!({"apiVersion": "v1", "kind": "Node",
                   "metadata": {"name": "n1", "resourceVersion": "1"},
                   "spec": spec, "status": {"addresses": addresses}})
        };
        let old = node(
            json!({"podCIDRs": ["10.0.0.0/24"], "providerID": "aws://1", "externalID": "x"}),
            json!([]),
        );
        let cases: Vec<(serde_json::Value, Vec<&str>)> = vec![
            (
                node(
                    json!({"podCIDRs": ["10.0.0.0/24"], "providerID": "aws://1", "externalID": "x", "unschedulable": true}),
                    json!([]),
                ),
                vec![],
            ),
            (
                node(
                    json!({"podCIDRs": ["10.9.0.0/24"], "providerID": "aws://2"}),
                    json!([{"type": "InternalIP", "address": "10.0.0.5"},
                           {"type": "InternalIP", "address": "10.0.0.5"}]),
                ),
                vec![
                    "status.addresses[1]: Duplicate value: {\"address\":\"10.0.0.5\",\"type\":\"InternalIP\"}",
                    "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                    "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
                    "spec.externalID: Forbidden: may not be updated",
                ],
            ),
        ];
        for (new, want) in cases {
            let got: Vec<String> = kind
                .validate(&new, Some(&old))
                .0
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{new}");
        }
    }
}
