//! Validation of the kinds that describe policy rather than workloads: `NetworkPolicy`,
//! `IngressClass`, `HorizontalPodAutoscaler`, `ResourceQuota`, `LimitRange` and `StorageClass`,
//! with upstream's field paths and messages (`pkg/apis/networking/validation`,
//! `autoscaling/validation`, `core/validation`, `storage/validation`). Nothing here enforces
//! them: no quota is charged, no limit applied, no autoscaler runs (as in envtest).

use std::cmp::Ordering;

use crd_core::quantity::Quantity;
use crd_core::validation::{is_dns1123_subdomain, is_qualified_name};
use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Value};

use crate::KindId;
use crate::validation::{PORT_RANGE, arr, at, port_num, quantity, s};

/// A `ResourceList` as `(name, quantity)` pairs in name order (Go's map order is random).
fn resource_list(v: &Value) -> Vec<(&str, Quantity)> {
    let mut out: Vec<(&str, Quantity)> = v
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| quantity(q).map(|q| (k.as_str(), q)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}
fn positive(q: &Quantity) -> bool {
    !q.is_zero() && !q.is_negative()
}

/// Validates one of this module's kinds (the metadata is validated by the caller).
pub fn validate(id: KindId, obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    match id {
        KindId::NetworkPolicy => network_policy(at(obj, "/spec"), &Path::new("spec"), errs),
        KindId::IngressClass => ingress_class(obj, old, errs),
        KindId::HorizontalPodAutoscaler => hpa(at(obj, "/spec"), &Path::new("spec"), errs),
        KindId::ResourceQuota => resource_quota(obj, errs),
        KindId::LimitRange => limit_range(obj, errs),
        KindId::StorageClass => storage_class(obj, old, errs),
        KindId::RuntimeClass => runtime_class(obj, old, errs),
        KindId::CSIDriver => csi_driver(obj, old, errs),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// networking.k8s.io

/// `ValidateNetworkPolicySpec`: selectors, ports, peers and policy types.
fn network_policy(spec: &Value, sp: &Path, errs: &mut ErrorList) {
    errs.extend(crate::validation::validate_label_selector(
        at(spec, "/podSelector"),
        &sp.child("podSelector"),
    ));
    for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in arr(spec, &format!("/{rules}")).iter().enumerate() {
            let rp = sp.child(rules).index(i);
            for (j, port) in arr(rule, "/ports").iter().enumerate() {
                network_policy_port(port, &rp.child("ports").index(j), errs);
            }
            for (j, peer) in arr(rule, &format!("/{peers}")).iter().enumerate() {
                network_policy_peer(peer, &rp.child(peers).index(j), errs);
            }
        }
    }
    let types = arr(spec, "/policyTypes");
    if types.len() > 2 {
        errs.push(FieldError::invalid(
            &sp.child("policyTypes"),
            Value::Array(types.to_vec()),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if !matches!(t, "Ingress" | "Egress") {
            errs.push(FieldError::not_supported(
                &sp.child("policyTypes").index(i),
                t,
                &["Ingress", "Egress"],
            ));
        }
    }
}

/// `ValidateNetworkPolicyPort`.
fn network_policy_port(port: &Value, pp: &Path, errs: &mut ErrorList) {
    if let Some(p) = port.get("protocol").and_then(Value::as_str)
        && !matches!(p, "TCP" | "UDP" | "SCTP")
    {
        errs.push(FieldError::not_supported(
            &pp.child("protocol"),
            p,
            &["TCP", "UDP", "SCTP"],
        ));
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match port.get("port") {
        Some(v @ Value::Number(n)) => {
            port_num(v, &pp.child("port"), errs);
            let n = n.as_i64().unwrap_or(0);
            if let Some(end) = end {
                if end < n {
                    errs.push(FieldError::invalid(
                        &pp.child("endPort"),
                        end,
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&end) {
                    errs.push(FieldError::invalid(&pp.child("endPort"), end, PORT_RANGE));
                }
            }
        }
        Some(Value::String(name)) => {
            if let Some(end) = end {
                errs.push(FieldError::invalid(
                    &pp.child("endPort"),
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for m in crate::validation::is_valid_port_name(name) {
                errs.push(FieldError::invalid(&pp.child("port"), name.as_str(), m));
            }
        }
        _ => {
            if let Some(end) = end {
                errs.push(FieldError::invalid(
                    &pp.child("endPort"),
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

/// `ValidateNetworkPolicyPeer`: exactly one kind of peer unless it is pod and namespace
/// selectors together.
fn network_policy_peer(peer: &Value, pp: &Path, errs: &mut ErrorList) {
    let mut peers = 0;
    for sel in ["podSelector", "namespaceSelector"] {
        if let Some(v) = peer.get(sel).filter(|v| !v.is_null()) {
            peers += 1;
            errs.extend(crate::validation::validate_label_selector(
                v,
                &pp.child(sel),
            ));
        }
    }
    let ip_block = peer.get("ipBlock").filter(|v| !v.is_null());
    if let Some(b) = ip_block {
        peers += 1;
        ip_block_errors(b, &pp.child("ipBlock"), errs);
    }
    if peers == 0 {
        errs.push(FieldError::required(pp, "must specify a peer"));
    } else if peers > 1 && ip_block.is_some() {
        errs.push(FieldError::forbidden(
            pp,
            "may not specify both ipBlock and another peer",
        ));
    }
}

pub(crate) const CIDR_MESSAGE: &str =
    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// A CIDR's network address and prefix length (`netutils.ParseCIDRSloppy`).
pub(crate) fn parse_cidr(text: &str) -> Option<(std::net::IpAddr, u8)> {
    let (ip, len) = text.split_once('/')?;
    let ip: std::net::IpAddr = ip.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((ip, len))
}

/// Whether `inner` lies within `outer` with a longer prefix ("a strict subset").
fn strict_subset(outer: (std::net::IpAddr, u8), inner: (std::net::IpAddr, u8)) -> bool {
    let bits = |ip: std::net::IpAddr| -> (u128, u8) {
        match ip {
            std::net::IpAddr::V4(v) => (u128::from(u32::from(v)), 32),
            std::net::IpAddr::V6(v) => (u128::from(v), 128),
        }
    };
    let ((o, width), (i, inner_width)) = (bits(outer.0), bits(inner.0));
    if width != inner_width || inner.1 <= outer.1 {
        return false;
    }
    let shift = u32::from(width - outer.1);
    let mask = if shift >= 128 { 0 } else { u128::MAX << shift };
    (o & mask) == (i & mask)
}

/// `ValidateIPBlock`: a CIDR, and exceptions strictly inside it.
fn ip_block_errors(block: &Value, bp: &Path, errs: &mut ErrorList) {
    let cidr = s(block, "/cidr");
    if cidr.is_empty() {
        errs.push(FieldError::required(&bp.child("cidr"), ""));
        return;
    }
    let Some(outer) = parse_cidr(cidr) else {
        errs.push(FieldError::invalid(&bp.child("cidr"), cidr, CIDR_MESSAGE));
        return;
    };
    for (i, except) in arr(block, "/except").iter().enumerate() {
        let text = except.as_str().unwrap_or("");
        let ep = bp.child("except").index(i);
        match parse_cidr(text) {
            None => errs.push(FieldError::invalid(&ep, text, CIDR_MESSAGE)),
            Some(inner) if !strict_subset(outer, inner) => errs.push(FieldError::invalid(
                &ep,
                text,
                "must be a strict subset of `cidr`",
            )),
            Some(_) => {}
        }
    }
}

/// `ValidateIngressClass`/`ValidateIngressClassUpdate`: the controller is a domain-prefixed
/// path of at most 250 characters and immutable; the parameters reference is well-formed.
fn ingress_class(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    let cp = sp.child("controller");
    let controller = s(obj, "/spec/controller");
    if let Some(old) = old
        && at(obj, "/spec/controller") != at(old, "/spec/controller")
    {
        errs.push(FieldError::invalid(&cp, controller, "field is immutable"));
    }
    if controller.len() > 250 {
        errs.push(FieldError::too_long(&cp, 250));
    }
    domain_prefixed_path(controller, &cp, errs);
    let params = at(obj, "/spec/parameters");
    if !params.is_object() {
        return;
    }
    let pp = sp.child("parameters");
    for field in ["kind", "name"] {
        if s(params, &format!("/{field}")).is_empty() {
            errs.push(FieldError::required(&pp.child(field), ""));
        }
    }
    let group = s(params, "/apiGroup");
    if !group.is_empty() {
        for m in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&pp.child("apiGroup"), group, m));
        }
    }
    let namespace = params.get("namespace").and_then(Value::as_str);
    match params.get("scope").and_then(Value::as_str) {
        None => errs.push(FieldError::required(&pp.child("scope"), "")),
        Some("Namespace") => match namespace {
            None => errs.push(FieldError::required(
                &pp.child("namespace"),
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(ns) => {
                for m in crd_core::validation::is_dns1123_label(ns) {
                    errs.push(FieldError::invalid(&pp.child("namespace"), ns, m));
                }
            }
        },
        Some("Cluster") => {
            if namespace.is_some() {
                errs.push(FieldError::forbidden(
                    &pp.child("namespace"),
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            &pp.child("scope"),
            other,
            &["Cluster", "Namespace"],
        )),
    }
}

/// apimachinery's `IsDomainPrefixedPath`: `<DNS subdomain>/<path>`.
fn domain_prefixed_path(value: &str, path: &Path, errs: &mut ErrorList) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let Some((host, rest)) = value.split_once('/') else {
        errs.push(FieldError::invalid(
            path,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for m in is_dns1123_subdomain(host) {
        errs.push(FieldError::invalid(path, host, m));
    }
    let valid = !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !valid {
        errs.push(FieldError::invalid(path, rest, "must be a valid path"));
    }
}

// ---------------------------------------------------------------------------------------------
// autoscaling/v2

/// `validateHorizontalPodAutoscalerSpec`: replica bounds, the target reference, then (when it
/// is valid) the metrics, then the behavior.
fn hpa(spec: &Value, sp: &Path, errs: &mut ErrorList) {
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid(
            &sp.child("minReplicas"),
            min,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            &sp.child("maxReplicas"),
            max,
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(FieldError::invalid(
            &sp.child("maxReplicas"),
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let before = errs.len();
    cross_version_ref(
        at(spec, "/scaleTargetRef"),
        &sp.child("scaleTargetRef"),
        errs,
    );
    if errs.len() > before {
        return;
    }
    for (i, m) in arr(spec, "/metrics").iter().enumerate() {
        metric_spec(m, &sp.child("metrics").index(i), errs);
    }
    if errs.len() > before {
        return;
    }
    let behavior = at(spec, "/behavior");
    if behavior.is_object() {
        let bp = sp.child("behavior");
        for rules in ["scaleUp", "scaleDown"] {
            let r = at(behavior, &format!("/{rules}"));
            if r.is_object() {
                scaling_rules(r, &bp.child(rules), errs);
            }
        }
    }
}

/// `ValidateCrossVersionObjectReference`: kind and name required, each a path segment.
fn cross_version_ref(r: &Value, rp: &Path, errs: &mut ErrorList) {
    for field in ["kind", "name"] {
        let v = s(r, &format!("/{field}"));
        if v.is_empty() {
            errs.push(FieldError::required(&rp.child(field), ""));
        } else {
            for m in crate::rbac::path_segment_name_errors(v) {
                errs.push(FieldError::invalid(&rp.child(field), v, m));
            }
        }
    }
}

const METRIC_SOURCES: &[(&str, &str)] = &[
    ("ContainerResource", "containerResource"),
    ("External", "external"),
    ("Object", "object"),
    ("Pods", "pods"),
    ("Resource", "resource"),
];

/// `validateMetricSpec`: a supported type whose source, and only it, is populated.
fn metric_spec(m: &Value, mp: &Path, errs: &mut ErrorList) {
    let kind = s(m, "/type");
    let types: Vec<&str> = METRIC_SOURCES.iter().map(|(t, _)| *t).collect();
    if kind.is_empty() {
        errs.push(FieldError::required(
            &mp.child("type"),
            "must specify a metric source type",
        ));
    }
    let expected = METRIC_SOURCES
        .iter()
        .find(|(t, _)| *t == kind)
        .map(|(_, f)| *f);
    if expected.is_none() {
        errs.push(FieldError::not_supported(&mp.child("type"), kind, &types));
    }
    let present: Vec<&str> = METRIC_SOURCES
        .iter()
        .map(|(_, f)| *f)
        .filter(|f| m.get(*f).is_some_and(Value::is_object))
        .collect();
    if let Some(first) = present.first() {
        source(first, at(m, &format!("/{first}")), &mp.child(first), errs);
    }
    if let Some(expected) = expected
        && !present.contains(&expected)
    {
        errs.push(FieldError::required(
            &mp.child(expected),
            "must populate information for the given metric source",
        ));
    }
    if present.len() > 1 {
        for other in present.iter().filter(|f| Some(**f) != expected) {
            errs.push(FieldError::forbidden(
                &mp.child(other),
                "must populate the given metric source only",
            ));
        }
    }
}

/// One metric source's rules (`validateResourceSource`, `validatePodsSource`, ...).
fn source(field: &str, src: &Value, p: &Path, errs: &mut ErrorList) {
    let target = at(src, "/target");
    let tp = p.child("target");
    match field {
        "resource" | "containerResource" => {
            if s(src, "/name").is_empty() {
                errs.push(FieldError::required(
                    &p.child("name"),
                    "must specify a resource name",
                ));
            }
            if field == "containerResource" && s(src, "/container").is_empty() {
                errs.push(FieldError::required(
                    &p.child("container"),
                    "must specify a container",
                ));
            }
            let (util, avg) = (
                target.get("averageUtilization").filter(|v| !v.is_null()),
                target.get("averageValue").filter(|v| !v.is_null()),
            );
            if util.is_none() && avg.is_none() {
                errs.push(FieldError::required(
                    &tp.child("averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            } else if util.is_some() && avg.is_some() {
                errs.push(FieldError::forbidden(
                    &tp.child("averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
        "pods" => {
            metric_identifier(src, p, errs);
            if target.get("averageValue").is_none_or(Value::is_null) {
                errs.push(FieldError::required(
                    &tp.child("averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        "object" => {
            cross_version_ref(
                at(src, "/describedObject"),
                &p.child("describedObject"),
                errs,
            );
            metric_identifier(src, p, errs);
            if target.get("value").is_none_or(Value::is_null)
                && target.get("averageValue").is_none_or(Value::is_null)
            {
                errs.push(FieldError::required(
                    &tp.child("value"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        _ => {
            metric_identifier(src, p, errs);
            let (value, avg) = (
                target.get("value").filter(|v| !v.is_null()),
                target.get("averageValue").filter(|v| !v.is_null()),
            );
            if value.is_none() && avg.is_none() {
                errs.push(FieldError::required(
                    &tp.child("averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            } else if value.is_some() && avg.is_some() {
                errs.push(FieldError::forbidden(
                    &tp.child("value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
    }
    metric_target(target, &tp, errs);
}

/// `validateMetricIdentifier`: a metric name.
fn metric_identifier(src: &Value, p: &Path, errs: &mut ErrorList) {
    if s(src, "/metric/name").is_empty() {
        errs.push(FieldError::required(
            &p.child("metric").child("name"),
            "must specify a metric name",
        ));
    }
}

/// `validateMetricTarget`: a known target type and positive values.
fn metric_target(t: &Value, tp: &Path, errs: &mut ErrorList) {
    let kind = s(t, "/type");
    if kind.is_empty() {
        errs.push(FieldError::required(
            &tp.child("type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errs.push(FieldError::invalid(
            &tp.child("type"),
            kind,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(q) = t.get(field).and_then(quantity)
            && !positive(&q)
        {
            errs.push(FieldError::invalid(
                &tp.child(field),
                q.to_string(),
                "must be positive",
            ));
        }
    }
    if let Some(u) = t
        .get("averageUtilization")
        .and_then(Value::as_i64)
        .filter(|u| *u < 1)
    {
        errs.push(FieldError::invalid(
            &tp.child("averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
}

/// `validateScalingRules`: the stabilization window, the select policy and each policy.
fn scaling_rules(r: &Value, rp: &Path, errs: &mut ErrorList) {
    if let Some(w) = r.get("stabilizationWindowSeconds").and_then(Value::as_i64) {
        let wp = rp.child("stabilizationWindowSeconds");
        if w < 0 {
            errs.push(FieldError::invalid(
                &wp,
                w,
                "must be greater than or equal to zero",
            ));
        }
        if w > 3600 {
            errs.push(FieldError::invalid(
                &wp,
                w,
                "must be less than or equal to 3600",
            ));
        }
    }
    if let Some(p) = r.get("selectPolicy").and_then(Value::as_str)
        && !matches!(p, "Max" | "Min" | "Disabled")
    {
        errs.push(FieldError::not_supported(
            &rp.child("selectPolicy"),
            p,
            &["Disabled", "Max", "Min"],
        ));
    }
    let policies = arr(r, "/policies");
    if policies.is_empty() {
        errs.push(FieldError::required(
            &rp.child("policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, p) in policies.iter().enumerate() {
        let pp = rp.child("policies").index(i);
        let kind = s(p, "/type");
        if !matches!(kind, "Pods" | "Percent") {
            errs.push(FieldError::not_supported(
                &pp.child("type"),
                kind,
                &["Percent", "Pods"],
            ));
        }
        let value = p.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            errs.push(FieldError::invalid(
                &pp.child("value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = p.get("periodSeconds").and_then(Value::as_i64).unwrap_or(0);
        if period <= 0 {
            errs.push(FieldError::invalid(
                &pp.child("periodSeconds"),
                period,
                "must be greater than zero",
            ));
        }
        if period > 1800 {
            errs.push(FieldError::invalid(
                &pp.child("periodSeconds"),
                period,
                "must be less than or equal to 1800",
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// core/v1 ResourceQuota and LimitRange

const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];
pub(crate) const INTEGER_QUOTA_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];
const QUOTA_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// `ValidateResourceQuota`: resource names (standard or qualified), non-negative quantities,
/// whole numbers for object counts, and supported scopes.
fn resource_quota(obj: &Value, errs: &mut ErrorList) {
    let sp = Path::new("spec");
    quota_resources(at(obj, "/spec/hard"), &sp.child("hard"), errs);
    for part in ["hard", "used"] {
        quota_resources(
            at(obj, &format!("/status/{part}")),
            &Path::new("status").child(part),
            errs,
        );
    }
    let scopes = arr(obj, "/spec/scopes");
    if scopes
        .iter()
        .any(|sc| !QUOTA_SCOPES.contains(&sc.as_str().unwrap_or("")))
    {
        errs.push(FieldError::invalid(
            &sp.child("scopes"),
            Value::Array(scopes.to_vec()),
            "unsupported scope",
        ));
    }
    for (i, e) in arr(obj, "/spec/scopeSelector/matchExpressions")
        .iter()
        .enumerate()
    {
        let ep = sp.child("scopeSelector").child("matchExpressions").index(i);
        let scope = s(e, "/scopeName");
        if !QUOTA_SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                &ep.child("scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        let op = s(e, "/operator");
        if !matches!(op, "In" | "NotIn" | "Exists" | "DoesNotExist") {
            errs.push(FieldError::invalid(
                &ep.child("operator"),
                op,
                "not a valid selector operator",
            ));
        }
    }
}

fn quota_resources(list: &Value, lp: &Path, errs: &mut ErrorList) {
    let mut names: Vec<&String> = list.as_object().into_iter().flat_map(Map::keys).collect();
    names.sort();
    for name in names {
        let kp = lp.key(name);
        if !STANDARD_QUOTA_RESOURCES.contains(&name.as_str())
            && !name.starts_with("requests.")
            && !name.starts_with("count/")
            && !name.contains("storageclass.storage.k8s.io/")
        {
            let errors = is_qualified_name(name);
            if !errors.is_empty() {
                for m in errors {
                    errs.push(FieldError::invalid(&kp, name.as_str(), m));
                }
            } else if !name.contains('/') {
                errs.push(FieldError::invalid(
                    &kp,
                    name.as_str(),
                    "must be a standard resource type or fully qualified",
                ));
            }
        }
        let Some(q) = list.get(name.as_str()).and_then(quantity) else {
            continue;
        };
        if q.is_negative() {
            errs.push(FieldError::invalid(
                &kp,
                q.to_string(),
                "must be a valid resource quantity",
            ));
        } else if (INTEGER_QUOTA_RESOURCES.contains(&name.as_str()) || name.starts_with("count/"))
            && !is_integer(&q)
        {
            errs.push(FieldError::invalid(
                &kp,
                q.to_string(),
                "must be an integer",
            ));
        }
    }
}

/// Whether a quantity is a whole number (`MilliValue() % 1000 == 0`): its canonical form
/// has no sub-unit suffix.
pub(crate) fn is_integer(q: &Quantity) -> bool {
    !q.to_string().ends_with(['m', 'u', 'n'])
}

/// `ValidateLimitRange`: a supported type per item, no default for Pod items, a storage
/// bound for claim items, and min ≤ default request ≤ default ≤ max for each resource.
fn limit_range(obj: &Value, errs: &mut ErrorList) {
    let lp = Path::new("spec").child("limits");
    for (i, item) in arr(obj, "/spec/limits").iter().enumerate() {
        let ip = lp.index(i);
        let kind = s(item, "/type");
        if kind.is_empty() {
            errs.push(FieldError::required(&ip.child("type"), ""));
        }
        let part = |name: &str| resource_list(at(item, &format!("/{name}")));
        let (max, min, default, request) = (
            part("max"),
            part("min"),
            part("default"),
            part("defaultRequest"),
        );
        let ratio = part("maxLimitRequestRatio");
        if kind == "Pod" {
            for (field, list) in [("default", &default), ("defaultRequest", &request)] {
                if !list.is_empty() {
                    errs.push(FieldError::forbidden(
                        &ip.child(field),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        }
        if kind == "PersistentVolumeClaim" {
            let has = |l: &[(&str, Quantity)]| l.iter().any(|(k, _)| *k == "storage");
            if !has(&min) && !has(&max) {
                errs.push(FieldError::required(
                    &ip.child("limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                ));
            }
        }
        for (field, list) in [
            ("max", &max),
            ("min", &min),
            ("default", &default),
            ("defaultRequest", &request),
            ("maxLimitRequestRatio", &ratio),
        ] {
            for (k, q) in list {
                if q.is_negative() {
                    errs.push(FieldError::invalid(
                        &ip.child(field).key(k),
                        q.to_string(),
                        "must be greater than or equal to 0",
                    ));
                }
            }
        }
        let get =
            |l: &[(&str, Quantity)], k: &str| l.iter().find(|(n, _)| *n == k).map(|(_, q)| *q);
        let mut keys: Vec<&str> = [&max, &min, &default, &request]
            .iter()
            .flat_map(|l| l.iter().map(|(k, _)| *k))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            let (mx, mn, df, dr) = (
                get(&max, k),
                get(&min, k),
                get(&default, k),
                get(&request, k),
            );
            // (smaller, larger, field, value shown, message), upstream's order.
            let checks = [
                (
                    &mn,
                    &mx,
                    "min",
                    &mn,
                    "min value {a} is greater than max value {b}",
                ),
                (
                    &mn,
                    &dr,
                    "defaultRequest",
                    &dr,
                    "min value {a} is greater than default request value {b}",
                ),
                (
                    &dr,
                    &mx,
                    "defaultRequest",
                    &dr,
                    "default request value {a} is greater than max value {b}",
                ),
                (
                    &dr,
                    &df,
                    "defaultRequest",
                    &dr,
                    "default request value {a} is greater than default limit value {b}",
                ),
                (
                    &mn,
                    &df,
                    "default",
                    &mn,
                    "min value {a} is greater than default value {b}",
                ),
                (
                    &df,
                    &mx,
                    "default",
                    &mx,
                    "default value {a} is greater than max value {b}",
                ),
            ];
            for (a, b, field, shown, message) in checks {
                if let (Some(a), Some(b), Some(shown)) = (a, b, shown)
                    && a.cmp_value(b) == Ordering::Greater
                {
                    errs.push(FieldError::invalid(
                        &ip.child(field).key(k),
                        shown.to_string(),
                        message
                            .replace("{a}", &a.to_string())
                            .replace("{b}", &b.to_string()),
                    ));
                }
            }
        }
        for (k, q) in &ratio {
            if q.cmp_value(&Quantity::parse("1").unwrap_or(*q)) == Ordering::Less {
                errs.push(FieldError::invalid(
                    &ip.child("maxLimitRequestRatio").key(k),
                    q.to_string(),
                    format!("ratio {q} is less than 1"),
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// storage.k8s.io

/// `ValidateCSIDriver`/`ValidateCSIDriverUpdate`: the flags are set (the defaults set them),
/// supported `fsGroupPolicy` and lifecycle modes, token requests with distinct audiences and
/// 10 minutes to 2^32 seconds of validity, a node-allocatable update period of at least 10 s;
/// `attachRequired` (upstream's path says `attachedRequired`) and the lifecycle modes are
/// immutable.
fn csi_driver(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let spec = at(obj, "/spec");
    let sp = Path::new("spec");
    for (field, path) in [
        ("attachRequired", "attachedRequired"),
        ("podInfoOnMount", "podInfoOnMount"),
        ("storageCapacity", "storageCapacity"),
        ("seLinuxMount", "seLinuxMount"),
    ] {
        if !spec.get(field).is_some_and(Value::is_boolean) {
            errs.push(FieldError::required(&sp.child(path), ""));
        }
    }
    if let Some(policy) = spec.get("fsGroupPolicy").and_then(Value::as_str)
        && !matches!(policy, "File" | "None" | "ReadWriteOnceWithFSType")
    {
        errs.push(FieldError::not_supported(
            &sp.child("fsGroupPolicy"),
            policy,
            &["File", "None", "ReadWriteOnceWithFSType"],
        ));
    }
    let mut audiences: Vec<&str> = Vec::new();
    for (i, request) in arr(spec, "/tokenRequests").iter().enumerate() {
        let rp = sp.child("tokenRequests").index(i);
        let audience = s(request, "/audience");
        if audiences.contains(&audience) {
            errs.push(FieldError::duplicate(&rp.child("audience"), audience));
            continue;
        }
        audiences.push(audience);
        if let Some(seconds) = request.get("expirationSeconds").and_then(Value::as_i64) {
            let ep = rp.child("expirationSeconds");
            if seconds < 600 {
                errs.push(FieldError::invalid(
                    &ep,
                    seconds,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if seconds > 1 << 32 {
                errs.push(FieldError::invalid(
                    &ep,
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    for mode in arr(spec, "/volumeLifecycleModes") {
        let mode = mode.as_str().unwrap_or("");
        if !matches!(mode, "Persistent" | "Ephemeral") {
            errs.push(FieldError::not_supported(
                &sp.child("volumeLifecycleModes"),
                mode,
                &["Persistent", "Ephemeral"],
            ));
        }
    }
    if let Some(period) = spec
        .get("nodeAllocatableUpdatePeriodSeconds")
        .and_then(Value::as_i64)
        && period < 10
    {
        errs.push(FieldError::invalid(
            &sp.child("nodeAllocatableUpdatePeriodSeconds"),
            period,
            "must be greater than or equal to 10 seconds",
        ));
    }
    if let Some(old) = old {
        for (field, path) in [
            ("attachRequired", "attachedRequired"),
            ("volumeLifecycleModes", "volumeLifecycleModes"),
        ] {
            let new_value = spec.get(field).unwrap_or(&Value::Null);
            if Some(new_value) != old.pointer(&format!("/spec/{field}")) {
                errs.push(FieldError::invalid(
                    &sp.child(path),
                    crate::validation::compound(new_value),
                    "field is immutable",
                ));
            }
        }
    }
}

/// `ValidateRuntimeClass`/`ValidateRuntimeClassUpdate`: the handler is a DNS-1123 label and
/// immutable; the overhead's quantities are checked as a container's limits; the scheduling
/// node selector is a label set.
fn runtime_class(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let handler = s(obj, "/handler");
    for m in crd_core::validation::is_dns1123_label(handler) {
        errs.push(FieldError::invalid(&Path::new("handler"), handler, m));
    }
    if let Some(fixed) = obj.pointer("/overhead/podFixed").filter(|f| f.is_object()) {
        crate::validation::resource_requirements(
            &serde_json::json!({"limits": fixed}),
            &Path::new("overhead"),
            errs,
        );
    }
    if let Some(selector) = obj.pointer("/scheduling/nodeSelector") {
        errs.extend(crd_core::validation::validate_labels(
            Some(selector),
            &Path::new("scheduling").child("nodeSelector"),
        ));
    }
    if let Some(old) = old
        && old.get("handler") != obj.get("handler")
    {
        errs.push(FieldError::invalid(
            &Path::new("handler"),
            handler,
            "field is immutable",
        ));
    }
}

/// `ValidateStorageClass`/`ValidateStorageClassUpdate`.
fn storage_class(obj: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    let provisioner = s(obj, "/provisioner");
    let pp = Path::new("provisioner");
    if provisioner.is_empty() {
        errs.push(FieldError::required(&pp, ""));
    } else {
        for m in is_qualified_name(&provisioner.to_lowercase()) {
            errs.push(FieldError::invalid(&pp, provisioner, m));
        }
    }
    let params = at(obj, "/parameters").as_object();
    let mut size = 0;
    for (k, v) in params.into_iter().flatten() {
        if k.is_empty() {
            errs.push(FieldError::invalid(
                &Path::new("parameters"),
                k.as_str(),
                "field can not be empty.",
            ));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if params.is_some_and(|p| p.len() > 512) || size > 256 * 1024 {
        errs.push(FieldError::too_long(&Path::new("parameters"), 256 * 1024));
    }
    let reclaim = s(obj, "/reclaimPolicy");
    if !matches!(reclaim, "Delete" | "Retain") {
        errs.push(FieldError::not_supported(
            &Path::new("reclaimPolicy"),
            reclaim,
            &["Delete", "Retain"],
        ));
    }
    let binding = s(obj, "/volumeBindingMode");
    if !matches!(binding, "Immediate" | "WaitForFirstConsumer") {
        errs.push(FieldError::not_supported(
            &Path::new("volumeBindingMode"),
            binding,
            &["Immediate", "WaitForFirstConsumer"],
        ));
    }
    let Some(old) = old else {
        return;
    };
    let changed = |ptr: &str| at(obj, ptr) != at(old, ptr);
    if changed("/parameters") {
        errs.push(FieldError::forbidden(
            &Path::new("parameters"),
            "updates to parameters are forbidden.",
        ));
    }
    if changed("/provisioner") {
        errs.push(FieldError::forbidden(
            &Path::new("provisioner"),
            "updates to provisioner are forbidden.",
        ));
    }
    if changed("/reclaimPolicy") {
        errs.push(FieldError::forbidden(
            &Path::new("reclaimPolicy"),
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    if changed("/volumeBindingMode") {
        errs.push(FieldError::invalid(
            &Path::new("volumeBindingMode"),
            binding,
            "field is immutable",
        ));
    }
}
