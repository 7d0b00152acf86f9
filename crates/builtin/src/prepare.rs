//! Defaulting and write preparation of the built-in kinds: the Go defaulters clients see
//! (`SetDefaults_*` in `pkg/apis/*/v1/defaults.go`, plus the Secret `stringData` merge done by
//! conversion and the pod priority admission's `priority`/`preemptionPolicy`), and the
//! strategies' `PrepareForCreate`/`PrepareForUpdate` (status reset, generation, Pod phase and
//! `QoS` class, Job selector generation).
//!
//! Not done (see `VALIDATION.md`): ClusterIP/NodePort allocation and `ipFamilies`, service
//! account admission (token volume), default tolerations, LimitRange/ResourceQuota.

use serde_json::{Map, Value, json};

use crate::{Generation, Kind, KindId};

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let m = v.as_object_mut()?;
    let e = m.entry(key).or_insert_with(|| json!({}));
    if !e.is_object() {
        return None;
    }
    e.as_object_mut()
}

fn set_default(m: &mut Map<String, Value>, key: &str, v: Value) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.into(), v);
        }
        _ => {}
    }
}

/// Sets `key` to `v` unless it holds a non-empty map (Go's `len(m) == 0` defaulting of a map
/// field).
fn set_if_empty_map(m: &mut Map<String, Value>, key: &str, v: Value) {
    if m.get(key)
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
    {
        m.insert(key.into(), v);
    }
}

fn each_mut(v: &mut Value, key: &str, f: impl Fn(&mut Map<String, Value>)) {
    if let Some(items) = v.get_mut(key).and_then(Value::as_array_mut) {
        for i in items.iter_mut().filter_map(Value::as_object_mut) {
            f(i);
        }
    }
}

fn default_port_protocols(v: &mut Value, key: &str) {
    each_mut(v, key, |p| set_default(p, "protocol", json!("TCP")));
}

/// `SetDefaults_NetworkPolicy` and `SetDefaults_NetworkPolicyPort`: a policy without
/// `policyTypes` is an Ingress policy, and an Egress one too when it has egress rules; a port's
/// protocol is TCP.
fn default_network_policy(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    spec.entry("podSelector").or_insert_with(|| json!({}));
    for rules in ["ingress", "egress"] {
        if let Some(rs) = spec.get_mut(rules).and_then(Value::as_array_mut) {
            for r in rs {
                default_port_protocols(r, "ports");
            }
        }
    }
    let no_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// `autoscaling/v2`'s `SetDefaults_HorizontalPodAutoscaler`: one replica at least, a CPU
/// utilization target of 80% when no metric is given, and a given `behavior`'s unset rules
/// filled from the controller's defaults (`GenerateHPAScaleUpRules`/`ScaleDownRules`).
fn default_hpa(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    set_default(spec, "minReplicas", json!(1));
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        let down = json!({"selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        for (key, mut rules) in [("scaleUp", up), ("scaleDown", down)] {
            if let (Some(given), Some(out)) = (
                behavior.get(key).and_then(Value::as_object),
                rules.as_object_mut(),
            ) {
                for (k, v) in given {
                    if !v.is_null() {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            behavior.insert(key.into(), rules);
        }
    }
}

/// `SetDefaults_LimitRangeItem`: for a Container item, the default limit comes from the max,
/// and the default request from the default limit, else from the min.
fn default_limit_range_item(item: &mut Value) {
    let Some(m) = item.as_object_mut() else {
        return;
    };
    if m.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let resources = |m: &Map<String, Value>, key: &str| -> Map<String, Value> {
        m.get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut default = resources(m, "default");
    for (k, v) in resources(m, "max") {
        default.entry(k).or_insert(v);
    }
    let mut request = resources(m, "defaultRequest");
    for (k, v) in default.iter().chain(resources(m, "min").iter()) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (key, v) in [("default", default), ("defaultRequest", request)] {
        if !v.is_empty() {
            m.insert(key.into(), Value::Object(v));
        }
    }
}

/// The image pull policy Go defaults from the image reference.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        None | Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn default_probe(p: &mut Map<String, Value>) {
    set_default(p, "timeoutSeconds", json!(1));
    set_default(p, "periodSeconds", json!(10));
    set_default(p, "successThreshold", json!(1));
    set_default(p, "failureThreshold", json!(3));
    default_http_get(p);
}

/// `SetDefaults_HTTPGetAction`: path `/`, scheme HTTP (probes and lifecycle handlers).
fn default_http_get(handler: &mut Map<String, Value>) {
    if let Some(h) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        if h.get("path")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            h.insert("path".into(), json!("/"));
        }
        set_default(h, "scheme", json!("HTTP"));
    }
}

/// `SetDefaults_ObjectFieldSelector`: a field reference's API version is `v1`.
fn default_field_ref(holder: &mut Map<String, Value>) {
    if let Some(f) = holder.get_mut("fieldRef").and_then(Value::as_object_mut)
        && f.get("apiVersion")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        f.insert("apiVersion".into(), json!("v1"));
    }
}

/// `SetDefaults_PersistentVolumeClaimSpec`: a claim's volume mode is `Filesystem`.
fn default_claim_spec(claim: &mut Map<String, Value>) {
    if let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
        set_default(spec, "volumeMode", json!("Filesystem"));
    }
}

/// The volume defaulters: a volume without a source is an `emptyDir`
/// (`SetDefaults_Volume`), a host path's type is `""`, a projected service-account token
/// expires after an hour (`SetDefaults_ServiceAccountTokenProjection`), downward-API field
/// references are `v1`, and an ephemeral volume's claim template is a filesystem.
fn default_volume(v: &mut Map<String, Value>) {
    if v.keys().all(|k| k == "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    for src in ["secret", "configMap", "projected", "downwardAPI"] {
        if let Some(s) = v.get_mut(src).and_then(Value::as_object_mut) {
            set_default(s, "defaultMode", json!(420));
        }
    }
    if let Some(hp) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_default(hp, "type", json!(""));
    }
    let items = |v: &mut Value| {
        each_mut(v, "items", default_field_ref);
    };
    if let Some(d) = v.get_mut("downwardAPI") {
        items(d);
    }
    if let Some(sources) = v
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut)
    {
        for source in sources.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(t) = source
                .get_mut("serviceAccountToken")
                .and_then(Value::as_object_mut)
            {
                set_default(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = source.get_mut("downwardAPI") {
                items(d);
            }
        }
    }
    if let Some(t) = v
        .get_mut("ephemeral")
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(Value::as_object_mut)
    {
        default_claim_spec(t);
    }
}

fn default_container(c: &mut Map<String, Value>) {
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = pull_policy(image);
    set_default(c, "imagePullPolicy", json!(policy));
    set_default(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_probe(p);
        }
    }
    if let Some(l) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = l.get_mut(hook).and_then(Value::as_object_mut) {
                default_http_get(h);
            }
        }
    }
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for e in env.iter_mut() {
            if let Some(from) = e.get_mut("valueFrom").and_then(Value::as_object_mut) {
                default_field_ref(from);
            }
        }
    }
}

/// `SetDefaults_PodSpec` and the container, volume and probe defaulters.
fn default_pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    for key in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(key).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
            }
        }
    }
    if let Some(vs) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in vs.iter_mut().filter_map(Value::as_object_mut) {
            default_volume(v);
        }
    }
    // The v1 conversion of a pod spec: `serviceAccount` is the deprecated alias of
    // `serviceAccountName`, read when the name is empty and always written back.
    let alias = spec
        .get("serviceAccount")
        .and_then(Value::as_str)
        .unwrap_or("");
    if spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
        && !alias.is_empty()
    {
        spec.insert("serviceAccountName".into(), json!(alias));
    }
    if let Some(name) = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        let name = json!(name);
        spec.insert("serviceAccount".into(), name);
    }
}

fn default_template(obj: &mut Value, ptr: &str) {
    if let Some(spec) = obj.pointer_mut(ptr).and_then(Value::as_object_mut) {
        default_pod_spec(spec);
    }
}

/// `SetDefaults_Pod`: requests default to limits, container by container.
fn default_requests_from_limits(spec: &mut Value) {
    for key in ["containers", "initContainers"] {
        each_mut(spec, key, |c| {
            let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                return;
            };
            let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
                return;
            };
            let req = res.entry("requests").or_insert_with(|| json!({}));
            if let Some(req) = req.as_object_mut() {
                for (k, v) in limits {
                    req.entry(k).or_insert(v);
                }
            }
        });
    }
}

/// `qos.GetPodQOS` for cpu and memory.
pub fn pod_qos_class(spec: &Value) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    for key in ["containers", "initContainers"] {
        for c in spec
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let req = c.pointer("/resources/requests");
            let lim = c.pointer("/resources/limits");
            for r in ["cpu", "memory"] {
                let q = |m: Option<&Value>| {
                    m.and_then(|m| m.get(r))
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .filter(|s| !is_zero_quantity(s))
                };
                let (rq, lq) = (q(req), q(lim));
                if rq.is_some() || lq.is_some() {
                    any = true;
                }
                match (rq, lq) {
                    (_, None) => guaranteed = false,
                    (Some(a), Some(b)) if a != b => guaranteed = false,
                    _ => {}
                }
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Whether a quantity is zero ("0", "0m", "0.0Gi"): zero requests do not count for `QoS`.
fn is_zero_quantity(q: &str) -> bool {
    let number: String = q
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    !number.is_empty() && number.chars().all(|c| c == '0' || c == '.')
}

fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(sd)) = m.remove("stringData") else {
        return;
    };
    let data = m.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(d) = data.as_object_mut() {
        for (k, v) in sd {
            let text = v.as_str().unwrap_or("");
            d.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

fn default_service(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    // The service REST mirrors `clusterIP` into `clusterIPs` (allocation itself is not done).
    if let Some(ip) = spec.get("clusterIP").and_then(Value::as_str)
        && !ip.is_empty()
        && spec.get("clusterIPs").is_none_or(Value::is_null)
    {
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if ty != "ExternalName" {
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        set_default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if unset && let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
}

/// A Node's defaults and its v1 conversion: `SetDefaults_NodeStatus` (allocatable is the
/// capacity when unset), and the legacy `spec.podCIDR` mirrored with `spec.podCIDRs` as the
/// v1 conversion does (the list from the single value when empty, the single value from the
/// list's first entry).
fn default_node(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let first = spec
            .get("podCIDRs")
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .cloned();
        match first {
            Some(first) => {
                spec.insert("podCIDR".into(), first);
            }
            None => {
                if let Some(cidr) = spec
                    .get("podCIDR")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty())
                {
                    let list = json!([cidr]);
                    spec.insert("podCIDRs".into(), list);
                }
            }
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut)
        && status.get("allocatable").is_none_or(Value::is_null)
        && let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned()
    {
        status.insert("allocatable".into(), capacity);
    }
}

/// The parts of a Node that Go's JSON always writes, as the zero structs serialize: `spec`,
/// `status.daemonEndpoints.kubeletEndpoint.Port` and every string of `status.nodeInfo`.
fn node_zero_structs(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    if m.get("spec").is_none_or(Value::is_null) {
        m.insert("spec".into(), json!({}));
    }
    if !m.get("status").is_some_and(Value::is_object) {
        m.insert("status".into(), json!({}));
    }
    let Some(status) = obj_mut(obj, "status") else {
        return;
    };
    if !status.get("daemonEndpoints").is_some_and(Value::is_object) {
        status.insert("daemonEndpoints".into(), json!({}));
    }
    if let Some(endpoints) = status
        .get_mut("daemonEndpoints")
        .and_then(Value::as_object_mut)
    {
        if !endpoints
            .get("kubeletEndpoint")
            .is_some_and(Value::is_object)
        {
            endpoints.insert("kubeletEndpoint".into(), json!({}));
        }
        if let Some(kubelet) = endpoints
            .get_mut("kubeletEndpoint")
            .and_then(Value::as_object_mut)
        {
            set_default(kubelet, "Port", json!(0));
        }
    }
    if !status.get("nodeInfo").is_some_and(Value::is_object) {
        status.insert("nodeInfo".into(), json!({}));
    }
    if let Some(info) = status.get_mut("nodeInfo").and_then(Value::as_object_mut) {
        for field in [
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ] {
            set_default(info, field, json!(""));
        }
    }
}

impl Kind {
    /// Applies the defaults upstream's decoding applies (idempotent; run on every decoded
    /// request body, and on reads where stored objects may predate a default).
    pub fn apply_defaults(&self, obj: &mut Value) {
        match self.id {
            KindId::Secret => {
                merge_string_data(obj);
                if let Some(m) = obj.as_object_mut() {
                    set_default(m, "type", json!("Opaque"));
                }
            }
            KindId::Service => default_service(obj),
            KindId::APIService => crate::apiregistration::apply_defaults(obj),
            KindId::Endpoints => {
                if let Some(subsets) = obj.get_mut("subsets").and_then(Value::as_array_mut) {
                    for s in subsets {
                        default_port_protocols(s, "ports");
                    }
                }
            }
            KindId::EndpointSlice => default_port_protocols(obj, "ports"),
            KindId::Pod => {
                if let Some(spec) = obj.get_mut("spec") {
                    default_requests_from_limits(spec);
                }
                if let Some(spec) = obj_mut(obj, "spec") {
                    default_pod_spec(spec);
                    // `SetDefaults_Pod`, not `SetDefaults_PodSpec`: workload templates keep it
                    // unset, as upstream keeps new defaults out of templates.
                    set_default(spec, "enableServiceLinks", json!(true));
                    set_default(spec, "priority", json!(0));
                    set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
                }
            }
            KindId::NetworkPolicy => default_network_policy(obj),
            // `SetDefaults_IngressClass`: a parameters reference is cluster-scoped by default.
            KindId::IngressClass => {
                if let Some(p) = obj
                    .pointer_mut("/spec/parameters")
                    .and_then(Value::as_object_mut)
                {
                    set_default(p, "scope", json!("Cluster"));
                }
            }
            KindId::HorizontalPodAutoscaler => default_hpa(obj),
            // `autoscaling/v1`'s `SetDefaults_HorizontalPodAutoscaler`.
            KindId::HorizontalPodAutoscalerV1 => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "minReplicas", json!(1));
                }
            }
            KindId::Node => default_node(obj),
            KindId::LimitRange => {
                if let Some(limits) = obj
                    .pointer_mut("/spec/limits")
                    .and_then(Value::as_array_mut)
                {
                    limits.iter_mut().for_each(default_limit_range_item);
                }
            }
            // `SetDefaults_StorageClass`.
            KindId::CSIDriver => {
                // `SetDefaults_CSIDriver` (`SELinuxMountReadWriteOncePod` is on by default).
                if let Some(spec) = obj_mut(obj, "spec") {
                    for (field, value) in [
                        ("attachRequired", true),
                        ("podInfoOnMount", false),
                        ("storageCapacity", false),
                        ("requiresRepublish", false),
                        ("seLinuxMount", false),
                    ] {
                        set_default(spec, field, json!(value));
                    }
                    set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
                    if spec
                        .get("volumeLifecycleModes")
                        .and_then(Value::as_array)
                        .is_none_or(Vec::is_empty)
                    {
                        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
                    }
                }
            }
            KindId::StorageClass => {
                if let Some(m) = obj.as_object_mut() {
                    set_default(m, "reclaimPolicy", json!("Delete"));
                    set_default(m, "volumeBindingMode", json!("Immediate"));
                }
            }
            // `SetDefaults_PriorityClass`.
            KindId::PriorityClass => {
                if let Some(m) = obj.as_object_mut() {
                    set_default(m, "preemptionPolicy", json!("PreemptLowerPriority"));
                }
            }
            KindId::PersistentVolumeClaim => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "volumeMode", json!("Filesystem"));
                }
                if let Some(status) = obj_mut(obj, "status") {
                    set_default(status, "phase", json!("Pending"));
                }
            }
            KindId::PersistentVolume => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
                    set_default(spec, "volumeMode", json!("Filesystem"));
                    if let Some(hp) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
                        set_default(hp, "type", json!(""));
                    }
                }
                if let Some(status) = obj_mut(obj, "status") {
                    set_default(status, "phase", json!("Pending"));
                }
            }
            KindId::ReplicationController => default_replication_controller(obj),
            KindId::Deployment => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "replicas", json!(1));
                    set_default(spec, "revisionHistoryLimit", json!(10));
                    set_default(spec, "progressDeadlineSeconds", json!(600));
                    let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
                    if let Some(st) = strategy.as_object_mut() {
                        set_default(st, "type", json!("RollingUpdate"));
                        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                            let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                            if let Some(ru) = ru.as_object_mut() {
                                set_default(ru, "maxUnavailable", json!("25%"));
                                set_default(ru, "maxSurge", json!("25%"));
                            }
                        }
                    }
                }
                default_template(obj, "/spec/template/spec");
            }
            KindId::StatefulSet => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "replicas", json!(1));
                    set_default(spec, "revisionHistoryLimit", json!(10));
                    set_default(spec, "podManagementPolicy", json!("OrderedReady"));
                    set_default(
                        spec,
                        "persistentVolumeClaimRetentionPolicy",
                        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                    );
                    // The claim templates are claims: `SetDefaults_PersistentVolumeClaim`.
                    if let Some(ts) = spec
                        .get_mut("volumeClaimTemplates")
                        .and_then(Value::as_array_mut)
                    {
                        for t in ts.iter_mut().filter_map(Value::as_object_mut) {
                            default_claim_spec(t);
                            let status = t.entry("status").or_insert_with(|| json!({}));
                            if let Some(status) = status.as_object_mut() {
                                set_default(status, "phase", json!("Pending"));
                            }
                        }
                    }
                    let us = spec.entry("updateStrategy").or_insert_with(|| json!({}));
                    if let Some(us) = us.as_object_mut() {
                        set_default(us, "type", json!("RollingUpdate"));
                        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                            let ru = us.entry("rollingUpdate").or_insert_with(|| json!({}));
                            if let Some(ru) = ru.as_object_mut() {
                                set_default(ru, "partition", json!(0));
                            }
                        }
                    }
                }
                default_template(obj, "/spec/template/spec");
            }
            KindId::DaemonSet => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "revisionHistoryLimit", json!(10));
                    let us = spec.entry("updateStrategy").or_insert_with(|| json!({}));
                    if let Some(us) = us.as_object_mut() {
                        set_default(us, "type", json!("RollingUpdate"));
                        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                            let ru = us.entry("rollingUpdate").or_insert_with(|| json!({}));
                            if let Some(ru) = ru.as_object_mut() {
                                set_default(ru, "maxUnavailable", json!(1));
                                set_default(ru, "maxSurge", json!(0));
                            }
                        }
                    }
                }
                default_template(obj, "/spec/template/spec");
            }
            KindId::ReplicaSet => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "replicas", json!(1));
                }
                default_template(obj, "/spec/template/spec");
            }
            KindId::Job => {
                default_job_spec(obj.get_mut("spec"));
                let template_labels = obj.pointer("/spec/template/metadata/labels").cloned();
                if let (Some(labels), Some(meta)) = (template_labels, obj_mut(obj, "metadata")) {
                    set_if_empty_map(meta, "labels", labels);
                }
                default_template(obj, "/spec/template/spec");
            }
            KindId::CronJob => {
                if let Some(spec) = obj_mut(obj, "spec") {
                    set_default(spec, "concurrencyPolicy", json!("Allow"));
                    set_default(spec, "suspend", json!(false));
                    set_default(spec, "successfulJobsHistoryLimit", json!(3));
                    set_default(spec, "failedJobsHistoryLimit", json!(1));
                }
                default_template(obj, "/spec/jobTemplate/spec/template/spec");
            }
            KindId::Event => crate::events::core_zero_values(obj),
            KindId::PodTemplate => default_template(obj, "/template/spec"),
            KindId::CertificateSigningRequest => crate::certificates::apply_defaults(obj),
            KindId::ConfigMap
            | KindId::ServiceAccount
            | KindId::EventsV1Event
            | KindId::Ingress
            | KindId::PodDisruptionBudget
            | KindId::ControllerRevision
            | KindId::ResourceQuota
            | KindId::RuntimeClass
            | KindId::Lease => {}
            KindId::Role
            | KindId::ClusterRole
            | KindId::RoleBinding
            | KindId::ClusterRoleBinding => crate::rbac::apply_defaults(self.id, obj),
            KindId::ValidatingWebhookConfiguration => {
                crate::admissionregistration::apply_defaults(obj, false);
            }
            KindId::MutatingWebhookConfiguration => {
                crate::admissionregistration::apply_defaults(obj, true);
            }
            KindId::ValidatingAdmissionPolicy | KindId::MutatingAdmissionPolicy => {
                crate::admissionpolicy::apply_defaults(obj, false);
            }
            KindId::ValidatingAdmissionPolicyBinding | KindId::MutatingAdmissionPolicyBinding => {
                crate::admissionpolicy::apply_defaults(obj, true);
            }
        }
    }

    /// `PrepareForCreate`: status reset for kinds with a status subresource (Pods start
    /// `Pending` with their `QoS` class), generation 1 where the server tracks it, and a Job's
    /// generated selector and labels (needs `metadata.uid` set). Call after [`Kind::apply_defaults`].
    pub fn prepare_create(&self, obj: &mut Value) {
        if self.id == KindId::Node {
            // "Nodes allow *all* fields, including status, to be set on create."
            node_zero_structs(obj);
        } else if self.status
            && let Some(m) = obj.as_object_mut()
        {
            let status = match self.id {
                KindId::Pod => {
                    let qos = pod_qos_class(m.get("spec").unwrap_or(&Value::Null));
                    json!({"phase": "Pending", "qosClass": qos})
                }
                KindId::PersistentVolumeClaim => json!({"phase": "Pending"}),
                // `PersistentVolumeLastPhaseTransitionTime` (GA in 1.31): the phase's time is
                // the creation's.
                KindId::PersistentVolume => json!({
                    "phase": "Pending",
                    "lastPhaseTransitionTime": m.get("metadata").and_then(|m| m.get("creationTimestamp")),
                }),
                // Go's zero status structs as they serialize (non-`omitempty` fields stay).
                KindId::PodDisruptionBudget => {
                    json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
                }
                KindId::Service | KindId::Ingress => json!({"loadBalancer": {}}),
                KindId::ReplicaSet | KindId::ReplicationController => json!({"replicas": 0}),
                KindId::HorizontalPodAutoscaler => json!({"desiredReplicas": 0}),
                KindId::HorizontalPodAutoscalerV1 => {
                    json!({"currentReplicas": 0, "desiredReplicas": 0})
                }
                KindId::StatefulSet => json!({"replicas": 0, "availableReplicas": 0}),
                KindId::DaemonSet => {
                    json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
                }
                _ => json!({}),
            };
            m.insert("status".into(), status);
        }
        if self.generation != Generation::None
            && let Some(meta) = obj_mut(obj, "metadata")
        {
            meta.insert("generation".into(), json!(1));
        }
        if self.id == KindId::Job
            && obj.pointer("/spec/manualSelector").and_then(Value::as_bool) != Some(true)
        {
            generate_job_selector(obj);
        }
    }

    /// The metadata fields a `/status` write keeps from the stored object, as the kind's status
    /// `PrepareForUpdate` does upstream: a Deployment's labels, and a Pod's owner references
    /// (old kubelets corrupted them). Every kind's update keeps the deletion timestamp.
    pub fn status_keeps_metadata(&self) -> &'static [&'static str] {
        match self.id {
            KindId::Deployment => &["labels"],
            KindId::Pod => &["ownerReferences"],
            _ => &[],
        }
    }

    /// The grace period of a DELETE of `obj` (upstream's `CheckGracefulDelete`), for the kinds
    /// deleted gracefully: a Pod's is the requested one, else its
    /// `terminationGracePeriodSeconds`, and 0 when it is not scheduled or has finished (no
    /// kubelet would stop it). `None` for other kinds.
    pub fn grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        if self.id != KindId::Pod {
            return None;
        }
        let mut period = requested.unwrap_or_else(|| {
            obj.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        });
        let unscheduled = obj
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        let finished = matches!(
            obj.pointer("/status/phase").and_then(Value::as_str),
            Some("Failed" | "Succeeded")
        );
        if unscheduled || finished {
            period = 0;
        }
        // A negative period is one second, as upstream treats it on the delete path.
        Some(if period < 0 { 1 } else { period })
    }

    /// Whether a DELETE that removes an object of the kind answers with the object, as the
    /// kind's upstream store sets `ReturnDeletedObject` (typed clients decode the answer as
    /// the kind).
    pub fn returns_deleted_object(&self) -> bool {
        matches!(
            self.id,
            KindId::Pod
                | KindId::Service
                | KindId::ServiceAccount
                | KindId::PersistentVolume
                | KindId::PersistentVolumeClaim
        )
    }

    /// Whether a PUT of a missing object creates it (upstream's `AllowCreateOnUpdate`): the
    /// Service, Endpoints, Event, `LimitRange`, Lease, `RuntimeClass` and RBAC kinds, which
    /// their writers upsert by PUT.
    pub fn allow_create_on_update(&self) -> bool {
        matches!(
            self.id,
            KindId::Service
                | KindId::Endpoints
                | KindId::Event
                | KindId::EventsV1Event
                | KindId::LimitRange
                | KindId::Lease
                | KindId::RuntimeClass
                | KindId::Role
                | KindId::ClusterRole
                | KindId::RoleBinding
                | KindId::ClusterRoleBinding
        )
    }

    /// Whether a PUT without `metadata.resourceVersion` overwrites (upstream's
    /// `AllowUnconditionalUpdate`): all kinds but Lease and `RuntimeClass`, whose writers must
    /// name the revision they read.
    pub fn allow_unconditional_update(&self) -> bool {
        !matches!(self.id, KindId::Lease | KindId::RuntimeClass)
    }

    /// The metadata fields the kind's `/status` strategy declares reset besides `spec`
    /// (upstream's `GetResetFields`), so that an apply or update through `/status` does not own
    /// them: a Pod's deletion timestamp and owner references, a Deployment's labels (1.33+
    /// names them as the path `metadata`, `labels`; earlier releases as one field
    /// `metadata.labels`, which no object has).
    pub fn status_resets_metadata(&self) -> &'static [&'static str] {
        match self.id {
            KindId::Pod => &["deletionTimestamp", "ownerReferences"],
            KindId::Deployment => &["labels"],
            _ => &[],
        }
    }

    /// The fields a write through each of the kind's own subresources resets beyond `spec`
    /// (upstream's `GetResetFields`), as `(subresource, paths)`: a `CertificateSigningRequest`'s
    /// `/status` keeps its conditions, its `/approval` its certificate.
    pub fn subresource_resets(&self) -> &'static [(&'static str, &'static [&'static str])] {
        match self.id {
            KindId::CertificateSigningRequest => &[
                ("status", &["status", "conditions"]),
                ("approval", &["status", "certificate"]),
            ],
            _ => &[],
        }
    }

    /// What a write of one of the kind's objects must be authorized for beyond its verb (the
    /// kind's own validating admission plugins: upstream's `CertificateApproval`,
    /// `CertificateSigning` and `CertificateSubjectRestriction`), through the endpoint named
    /// `subresource` (`""` for the object itself); `old` is `None` on create.
    pub fn write_check(
        &self,
        new: &Value,
        old: Option<&Value>,
        subresource: &str,
    ) -> Option<WriteCheck> {
        use crate::certificates::{self, Endpoint};
        if self.id != KindId::CertificateSigningRequest {
            return None;
        }
        let Some(old) = old else {
            return certificates::subject_restriction(new).map(WriteCheck::Refuse);
        };
        let endpoint = match subresource {
            "status" => Endpoint::Status,
            "approval" => Endpoint::Approval,
            _ => Endpoint::Main,
        };
        certificates::signer_check(new, old, endpoint).map(|check| WriteCheck::Ask {
            verb: check.verb,
            resource: "signers",
            names: check.names().into(),
            refusal: check.refusal(),
        })
    }

    /// Records who created the object, for kinds that do (a `CertificateSigningRequest`'s
    /// `spec.username`, `uid`, `groups` and `extra`, whatever the body said).
    pub fn record_requester(
        &self,
        obj: &mut Value,
        requester: &crate::certificates::Requester<'_>,
    ) {
        if self.id == KindId::CertificateSigningRequest {
            crate::certificates::prepare_create(obj, requester);
        }
    }

    /// `PrepareForUpdate` of a write through one of [`Kind::extra_subresources`]
    /// (a `CertificateSigningRequest`'s `/approval`: only the conditions change).
    pub fn prepare_subresource_update(&self, new: &mut Value, old: &Value, subresource: &str) {
        if self.id == KindId::CertificateSigningRequest && subresource == "approval" {
            let now = crd_core::time::rfc3339_seconds(jiff::Timestamp::now());
            crate::certificates::prepare_update(
                new,
                old,
                crate::certificates::Endpoint::Approval,
                &now,
            );
        }
    }

    /// `PrepareForUpdate`: a main-resource write keeps the old status (kinds with `/status`)
    /// and bumps the generation when the spec changed (Deployments: or annotations); a
    /// `/status` write (`status_subresource`) keeps everything but `status` and `metadata`,
    /// and the metadata fields of [`Kind::status_keeps_metadata`].
    pub fn prepare_update(&self, new: &mut Value, old: &Value, status_subresource: bool) {
        if self.id == KindId::CertificateSigningRequest {
            let endpoint = if status_subresource {
                crate::certificates::Endpoint::Status
            } else {
                crate::certificates::Endpoint::Main
            };
            let now = crd_core::time::rfc3339_seconds(jiff::Timestamp::now());
            crate::certificates::prepare_update(new, old, endpoint, &now);
            return;
        }
        let Some(m) = new.as_object_mut() else {
            return;
        };
        if status_subresource {
            let keep: Vec<String> = m
                .keys()
                .chain(old.as_object().into_iter().flat_map(Map::keys))
                .filter(|k| !matches!(k.as_str(), "status" | "metadata" | "kind" | "apiVersion"))
                .cloned()
                .collect();
            for k in keep {
                match old.get(&k) {
                    Some(v) => m.insert(k, v.clone()),
                    None => m.remove(&k),
                };
            }
            let fields = self.status_keeps_metadata();
            if !fields.is_empty()
                && let Some(meta) = obj_mut(new, "metadata")
            {
                for &f in fields {
                    match old.get("metadata").and_then(|o| o.get(f)) {
                        Some(v) => meta.insert(f.to_string(), v.clone()),
                        None => meta.remove(f),
                    };
                }
            }
            if self.id == KindId::Node {
                node_zero_structs(new);
            }
            if self.id == KindId::PersistentVolume {
                phase_transition_time(new, old, || {
                    crd_core::time::rfc3339_seconds(jiff::Timestamp::now())
                });
            }
            return;
        }
        if self.status {
            match old.get("status") {
                Some(v) => m.insert("status".into(), v.clone()),
                None => m.remove("status"),
            };
        }
        if self.id == KindId::Node {
            node_zero_structs(new);
            return;
        }
        let old_gen = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let changed = match self.generation {
            Generation::None => return,
            Generation::Spec => {
                m.get("spec") != old.get("spec")
                    || (self.id == KindId::Deployment
                        && new_annotations(m) != old.pointer("/metadata/annotations"))
            }
            Generation::NonMetadata => {
                let strip = |v: &Map<String, Value>| {
                    v.iter()
                        .filter(|(k, _)| k.as_str() != "metadata")
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect::<Map<String, Value>>()
                };
                old.as_object().map(strip) != Some(strip(m))
            }
        };
        let generation = if changed { old_gen + 1 } else { old_gen };
        if let Some(meta) = obj_mut(new, "metadata") {
            meta.insert("generation".into(), json!(generation));
        }
    }
}

/// A persistent volume's `/status` write's `lastPhaseTransitionTime`, as upstream's status
/// `PrepareForUpdate` keeps it (`PersistentVolumeLastPhaseTransitionTime`, GA in 1.31): the
/// stored time while the phase stays and the write sets none; `now` when the phase changes and
/// the write sets none or the stored one; whatever else the write sets.
fn phase_transition_time(new: &mut Value, old: &Value, now: impl FnOnce() -> String) {
    const TIME: &str = "lastPhaseTransitionTime";
    let status = |v: &Value, field: &str| v.get("status").and_then(|s| s.get(field)).cloned();
    let (old_phase, new_phase) = (status(old, "phase"), status(new, "phase"));
    let old_time = status(old, TIME).filter(|t| !t.is_null());
    let new_time = status(new, TIME).filter(|t| !t.is_null());
    let time = if old_phase == new_phase && new_time.is_none() {
        old_time
    } else if old_phase != new_phase && (new_time.is_none() || new_time == old_time) {
        Some(Value::from(now()))
    } else {
        return;
    };
    let Some(time) = time else {
        return;
    };
    if let Some(m) = new.as_object_mut() {
        let status = m.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert(TIME.into(), time);
        }
    }
}

/// `SetDefaults_ReplicationController`: the selector and the labels default to the template's
/// labels, the replicas to 1.
fn default_replication_controller(obj: &mut Value) {
    let template_labels = obj.pointer("/spec/template/metadata/labels").cloned();
    if let Some(labels) = template_labels.filter(Value::is_object) {
        if let Some(spec) = obj_mut(obj, "spec") {
            set_if_empty_map(spec, "selector", labels.clone());
        }
        if let Some(meta) = obj_mut(obj, "metadata") {
            set_if_empty_map(meta, "labels", labels);
        }
    }
    if let Some(spec) = obj_mut(obj, "spec") {
        set_default(spec, "replicas", json!(1));
    }
    default_template(obj, "/spec/template/spec");
}

fn new_annotations(m: &Map<String, Value>) -> Option<&Value> {
    m.get("metadata").and_then(|x| x.get("annotations"))
}

fn default_job_spec(spec: Option<&mut Value>) {
    let Some(spec) = spec.and_then(Value::as_object_mut) else {
        return;
    };
    let unset = |m: &Map<String, Value>, k: &str| m.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        6
    } else {
        i64::from(i32::MAX)
    };
    set_default(spec, "backoffLimit", json!(backoff));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    set_default(spec, "podReplacementPolicy", json!(replacement));
}

/// batch's `generateSelector`: job-name and controller-uid labels on the template, and a
/// selector on `batch.kubernetes.io/controller-uid`.
fn generate_job_selector(obj: &mut Value) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(tmeta) = obj_mut(template, "metadata") {
        let labels = tmeta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            for k in ["job-name", "batch.kubernetes.io/job-name"] {
                l.entry(k).or_insert_with(|| json!(name));
            }
            for k in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
                l.entry(k).or_insert_with(|| json!(uid));
            }
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if selector.is_null() {
        *selector = json!({});
    }
    if let Some(sel) = obj_mut(selector, "matchLabels") {
        sel.entry("batch.kubernetes.io/controller-uid")
            .or_insert_with(|| json!(uid));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{phase_transition_time, pod_qos_class};
    use crate::{KindId, get};

    fn defaulted(id: KindId, mut obj: Value) -> Value {
        get(id).apply_defaults(&mut obj);
        obj
    }

    #[test]
    fn defaults_match_go_defaulters() {
        let cases = vec![
            (
                // `SetDefaults_ReplicationController`: selector and labels from the template.
                KindId::ReplicationController,
                json!({"metadata": {"name": "rc"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}}),
                json!({"metadata": {"name": "rc", "labels": {"app": "web"}},
                "spec": {"replicas": 1, "selector": {"app": "web"}, "template": {"metadata": {"labels": {"app": "web"}}}}}),
            ),
            (
                KindId::ReplicationController,
                json!({"metadata": {"name": "rc", "labels": {"team": "a"}}, "spec": {"replicas": 0, "selector": {"app": "web"},
                "template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}}),
                json!({"metadata": {"name": "rc", "labels": {"team": "a"}}, "spec": {"replicas": 0, "selector": {"app": "web"},
                "template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}}),
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv"}, "spec": {"hostPath": {"path": "/data"}}}),
                json!({"metadata": {"name": "pv"}, "spec": {"hostPath": {"path": "/data", "type": ""},
                "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}),
            ),
            (
                KindId::Secret,
                json!({"metadata": {"name": "s"}, "data": {"a": "MQ=="}, "stringData": {"b": "two", "a": "one"}}),
                json!({"metadata": {"name": "s"}, "data": {"a": "b25l", "b": "dHdv"}, "type": "Opaque"}),
            ),
            (
                KindId::Service,
                json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
                json!({"spec": {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
            ),
            (
                KindId::Service,
                json!({"spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "ports": [{"port": 80, "targetPort": 0}]}}),
                json!({"spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": true,
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}}),
            ),
            (
                KindId::Pod,
                json!({"spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": "1"}}, "readinessProbe": {"httpGet": {"port": 80}}}],
                "volumes": [{"name": "s", "secret": {"secretName": "x"}}]}}),
                json!({"spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}},
                "readinessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                "volumes": [{"name": "s", "secret": {"secretName": "x", "defaultMode": 420}}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "securityContext": {},
                "schedulerName": "default-scheduler", "enableServiceLinks": true, "priority": 0, "preemptionPolicy": "PreemptLowerPriority"}}),
            ),
            // Regression: the template had `enableServiceLinks: true`, which only pods get.
            (
                KindId::Deployment,
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}),
                json!({"spec": {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25", "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent", "resources": {}}],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "securityContext": {},
                    "schedulerName": "default-scheduler"}}}}),
            ),
            (
                KindId::Deployment,
                json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}),
                json!({"spec": {"replicas": 0, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "strategy": {"type": "Recreate"}}}),
            ),
            (
                KindId::StatefulSet,
                json!({"spec": {}}),
                json!({"spec": {"replicas": 1, "revisionHistoryLimit": 10, "podManagementPolicy": "OrderedReady",
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}}),
            ),
            (
                KindId::DaemonSet,
                json!({"spec": {}}),
                json!({"spec": {"revisionHistoryLimit": 10, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}}),
            ),
            (
                KindId::ReplicaSet,
                json!({"spec": {}}),
                json!({"spec": {"replicas": 1}}),
            ),
            (
                KindId::Job,
                json!({"metadata": {"name": "j"}, "spec": {"template": {"metadata": {"labels": {"app": "j"}}}}}),
                json!({"metadata": {"name": "j", "labels": {"app": "j"}}, "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6,
                "completionMode": "NonIndexed", "suspend": false, "podReplacementPolicy": "TerminatingOrFailed",
                "template": {"metadata": {"labels": {"app": "j"}}}}}),
            ),
            (
                KindId::CronJob,
                json!({"spec": {"schedule": "@hourly"}}),
                json!({"spec": {"schedule": "@hourly", "concurrencyPolicy": "Allow", "suspend": false, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}}),
            ),
            (
                KindId::PersistentVolumeClaim,
                json!({"spec": {}}),
                json!({"spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}),
            ),
            (
                KindId::EndpointSlice,
                json!({"ports": [{"port": 80}]}),
                json!({"ports": [{"port": 80, "protocol": "TCP"}]}),
            ),
            (KindId::Lease, json!({"spec": {}}), json!({"spec": {}})),
            (
                // The volume, handler, field-reference and alias defaults of a pod spec.
                KindId::Pod,
                json!({"spec": {"serviceAccount": "old", "containers": [{"name": "c", "image": "x:1",
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "lifecycle": {"preStop": {"httpGet": {"port": 80}}}}],
                    "volumes": [{"name": "none"}, {"name": "h", "hostPath": {"path": "/x"}},
                        {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}},
                            {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
                        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}]}}),
                json!({"spec": {"serviceAccount": "old", "serviceAccountName": "old", "containers": [{"name": "c", "image": "x:1",
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                    "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}}},
                    "imagePullPolicy": "IfNotPresent", "resources": {}, "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"}],
                    "volumes": [{"name": "none", "emptyDir": {}}, {"name": "h", "hostPath": {"path": "/x", "type": ""}},
                        {"name": "t", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                            {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}}]}},
                        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}}}}],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "securityContext": {}, "schedulerName": "default-scheduler", "enableServiceLinks": true,
                    "priority": 0, "preemptionPolicy": "PreemptLowerPriority"}}),
            ),
            (
                // `serviceAccount` follows `serviceAccountName`.
                KindId::Pod,
                json!({"spec": {"serviceAccount": "old", "serviceAccountName": "new", "containers": []}}),
                json!({"spec": {"serviceAccount": "new", "serviceAccountName": "new", "containers": [],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "securityContext": {}, "schedulerName": "default-scheduler", "enableServiceLinks": true,
                    "priority": 0, "preemptionPolicy": "PreemptLowerPriority"}}),
            ),
            (
                KindId::NetworkPolicy,
                json!({"spec": {"egress": [{"ports": [{"port": 53}]}]}}),
                json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}],
                    "policyTypes": ["Ingress", "Egress"]}}),
            ),
            (
                KindId::NetworkPolicy,
                json!({"spec": {"podSelector": {"matchLabels": {"a": "b"}}, "ingress": [{}]}}),
                json!({"spec": {"podSelector": {"matchLabels": {"a": "b"}}, "ingress": [{}], "policyTypes": ["Ingress"]}}),
            ),
            (
                KindId::IngressClass,
                json!({"spec": {"controller": "x.io/c", "parameters": {"kind": "P", "name": "p"}}}),
                json!({"spec": {"controller": "x.io/c", "parameters": {"kind": "P", "name": "p", "scope": "Cluster"}}}),
            ),
            (
                KindId::HorizontalPodAutoscaler,
                json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
                json!({"spec": {"maxReplicas": 3, "minReplicas": 1,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
                    "behavior": {
                        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                            {"type": "Percent", "value": 100, "periodSeconds": 15}]}}}}),
            ),
            (
                KindId::LimitRange,
                json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}},
                    {"type": "Pod", "max": {"cpu": "4"}}]}}),
                json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"},
                    "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "1Mi"}},
                    {"type": "Pod", "max": {"cpu": "4"}}]}}),
            ),
            (
                KindId::StorageClass,
                json!({"provisioner": "x.io/p"}),
                json!({"provisioner": "x.io/p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
            ),
            (
                KindId::CSIDriver,
                json!({"spec": {"attachRequired": false, "volumeLifecycleModes": []}}),
                json!({"spec": {"attachRequired": false, "podInfoOnMount": false, "storageCapacity": false,
                    "requiresRepublish": false, "seLinuxMount": false,
                    "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"]}}),
            ),
        ];
        for (id, obj, want) in cases {
            let got = defaulted(id, obj.clone());
            assert_eq!(got, want, "{id:?} {obj}");
            assert_eq!(
                defaulted(id, got.clone()),
                got,
                "{id:?} defaulting is idempotent"
            );
        }
    }

    #[test]
    fn image_pull_policies() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("localhost:5000/app", "Always"),
            ("localhost:5000/app:v1", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
        ] {
            assert_eq!(super::pull_policy(image), want, "{image}");
        }
    }

    #[test]
    fn qos_classes() {
        for (spec, want) in [
            (json!({"containers": [{"name": "a"}]}), "BestEffort"),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}),
                "BestEffort",
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}),
                "Burstable",
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]}),
                "Guaranteed",
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}]}),
                "Burstable",
            ),
        ] {
            assert_eq!(pod_qos_class(&spec), want, "{spec}");
        }
    }

    #[test]
    fn prepare_create_resets_status_and_sets_generation() {
        let cases = vec![
            (
                KindId::Pod,
                json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}),
                json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending", "qosClass": "BestEffort"}}),
            ),
            (
                KindId::Deployment,
                json!({"metadata": {"name": "d", "generation": 7}, "spec": {}, "status": {"replicas": 3}}),
                json!({"metadata": {"name": "d", "generation": 1}, "spec": {}, "status": {}}),
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": {"name": "c"}, "data": {}}),
                json!({"metadata": {"name": "c"}, "data": {}}),
            ),
            (
                KindId::ReplicationController,
                json!({"metadata": {"name": "rc"}, "spec": {}, "status": {"replicas": 3, "readyReplicas": 3}}),
                json!({"metadata": {"name": "rc", "generation": 1}, "spec": {}, "status": {"replicas": 0}}),
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv", "creationTimestamp": "2026-11-28T10:00:00Z"}, "spec": {}, "status": {"phase": "Bound"}}),
                json!({"metadata": {"name": "pv", "creationTimestamp": "2026-11-28T10:00:00Z"}, "spec": {},
                "status": {"phase": "Pending", "lastPhaseTransitionTime": "2026-11-28T10:00:00Z"}}),
            ),
            (
                KindId::EndpointSlice,
                json!({"metadata": {"name": "e"}}),
                json!({"metadata": {"name": "e", "generation": 1}}),
            ),
            (
                KindId::Job,
                json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": {"metadata": {"labels": {"app": "pi"}}}}}),
                json!({"metadata": {"name": "pi", "uid": "u-1", "generation": 1}, "status": {},
                "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
                    "template": {"metadata": {"labels": {"app": "pi", "job-name": "pi", "batch.kubernetes.io/job-name": "pi",
                        "controller-uid": "u-1", "batch.kubernetes.io/controller-uid": "u-1"}}}}}),
            ),
            (
                KindId::Job,
                json!({"metadata": {"name": "m", "uid": "u"}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}}),
                json!({"metadata": {"name": "m", "uid": "u", "generation": 1}, "status": {}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}}),
            ),
        ];
        for (id, mut obj, want) in cases {
            get(id).prepare_create(&mut obj);
            assert_eq!(obj, want, "{id:?}");
        }
    }

    #[test]
    fn prepare_update_carries_status_and_bumps_generation() {
        let old = json!({"metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        // (kind, new, status subresource, expected)
        let cases = vec![
            (
                KindId::Deployment,
                json!({"metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 3}, "status": {"replicas": 9}}),
                false,
                json!({"metadata": {"name": "d", "generation": 3}, "spec": {"replicas": 3}, "status": {"replicas": 1}}),
            ),
            (
                KindId::Deployment,
                json!({"metadata": {"name": "d", "generation": 2, "labels": {"a": "b"}}, "spec": {"replicas": 1}}),
                false,
                json!({"metadata": {"name": "d", "generation": 2, "labels": {"a": "b"}}, "spec": {"replicas": 1}, "status": {"replicas": 1}}),
            ),
            (
                KindId::Deployment,
                json!({"metadata": {"name": "d", "generation": 2, "annotations": {"x": "y"}}, "spec": {"replicas": 1}}),
                false,
                json!({"metadata": {"name": "d", "generation": 3, "annotations": {"x": "y"}}, "spec": {"replicas": 1}, "status": {"replicas": 1}}),
            ),
            (
                KindId::ReplicaSet,
                json!({"metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 5}, "status": {"replicas": 4}}),
                true,
                json!({"metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 1}, "status": {"replicas": 4}}),
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": {"name": "d"}, "data": {"a": "b"}}),
                false,
                json!({"metadata": {"name": "d"}, "data": {"a": "b"}}),
            ),
        ];
        for (id, mut new, status, want) in cases {
            get(id).prepare_update(&mut new, &old, status);
            assert_eq!(new, want, "{id:?}");
        }
        // `/status` keeps a Deployment's labels and a Pod's owner references (set, changed or
        // removed by the write); other metadata changes pass, as upstream's status strategies.
        let owner = json!([{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}]);
        let old = json!({"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {"k": "v"},
                         "ownerReferences": owner}, "spec": {"replicas": 1}});
        let cases = vec![
            (
                KindId::Deployment,
                json!({"metadata": {"name": "x", "labels": {"a": "2", "b": "3"}, "annotations": {"k": "w"}},
                       "spec": {"replicas": 5}, "status": {"replicas": 1}}),
                json!({"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {"k": "w"}},
                       "spec": {"replicas": 1}, "status": {"replicas": 1}}),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "x", "labels": {"a": "2"}, "ownerReferences": []},
                       "status": {"phase": "Running"}}),
                json!({"metadata": {"name": "x", "labels": {"a": "2"}, "ownerReferences": owner},
                       "spec": {"replicas": 1}, "status": {"phase": "Running"}}),
            ),
            (
                KindId::ReplicaSet,
                json!({"metadata": {"name": "x", "labels": {"a": "2"}}, "status": {"replicas": 1}}),
                json!({"metadata": {"name": "x", "labels": {"a": "2"}}, "spec": {"replicas": 1},
                       "status": {"replicas": 1}}),
            ),
        ];
        for (id, mut new, want) in cases {
            get(id).prepare_update(&mut new, &old, true);
            assert_eq!(new, want, "{id:?}");
        }
        let (mut new, bare) = (
            json!({"metadata": {"name": "x", "labels": {"a": "2"}}}),
            json!({}),
        );
        get(KindId::Deployment).prepare_update(&mut new, &bare, true);
        assert_eq!(
            new,
            json!({"metadata": {"name": "x"}}),
            "labels the stored object lacks"
        );
    }

    /// Upstream's `TestStatusUpdate` cases for a persistent volume's phase transition time.
    #[test]
    fn a_volume_phase_change_moves_its_transition_time() {
        let (t0, t1, now) = (
            "2026-01-01T00:00:00Z",
            "2026-02-01T00:00:00Z",
            "2026-11-28T12:00:00Z",
        );
        let pv = |phase: &str, time: Option<&str>| match time {
            Some(t) => json!({"status": {"phase": phase, "lastPhaseTransitionTime": t}}),
            None => json!({"status": {"phase": phase}}),
        };
        let cases = [
            (
                "phase kept, time unset: the stored time",
                pv("Pending", Some(t0)),
                pv("Pending", None),
                pv("Pending", Some(t0)),
            ),
            (
                "phase kept, time set: the write's",
                pv("Pending", Some(t0)),
                pv("Pending", Some(t1)),
                pv("Pending", Some(t1)),
            ),
            (
                "phase changed, time unset: now",
                pv("Pending", Some(t0)),
                pv("Bound", None),
                pv("Bound", Some(now)),
            ),
            (
                "phase changed, stored time sent back: now",
                pv("Pending", Some(t0)),
                pv("Bound", Some(t0)),
                pv("Bound", Some(now)),
            ),
            (
                "phase changed, time set: the write's",
                pv("Pending", Some(t0)),
                pv("Bound", Some(t1)),
                pv("Bound", Some(t1)),
            ),
            (
                "nothing stored, phase kept",
                pv("Pending", None),
                pv("Pending", None),
                pv("Pending", None),
            ),
        ];
        for (name, old, mut new, want) in cases {
            phase_transition_time(&mut new, &old, || now.to_string());
            assert_eq!(new, want, "{name}");
        }
        // Through the kind's status update, the time is the clock's.
        let mut new = pv("Available", None);
        get(KindId::PersistentVolume).prepare_update(&mut new, &pv("Pending", Some(t0)), true);
        let time = new["status"]["lastPhaseTransitionTime"].as_str().unwrap();
        assert!(
            time.parse::<jiff::Timestamp>().unwrap() > t0.parse().unwrap(),
            "{time}"
        );
    }
}

/// A permission a write needs beyond its verb ([`Kind::write_check`]); the server asks its
/// authorizer and refuses with upstream's admission 403 (`admission.NewForbidden`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteCheck {
    /// Refused whoever writes, with this message.
    Refuse(String),
    /// Allowed to a user who may `verb` any one of `names` (asked in order) of `resource` in
    /// the kind's group, at any version; refused with `refusal` otherwise.
    Ask {
        /// The verb asked for (`approve`, `sign`).
        verb: &'static str,
        /// The resource asked about (`signers`).
        resource: &'static str,
        /// The names, in the order upstream asks.
        names: Vec<String>,
        /// The refusal's message.
        refusal: String,
    },
}
