//! The server's Prometheus metrics, named, labelled and bucketed as kube-apiserver's
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/metrics`, the storage and webhook metrics), in
//! one process-wide registry served as text at `/metrics`.
//!
//! Handles are resolved once: the request path looks up a child by label values (a hash and a
//! read lock, no allocation once the child exists) and the in-flight gauges are cached.
//! Other modules record through the small functions here ([`conversion_webhook`],
//! [`admission_webhook`], [`validating_admission_policy`], [`mutating_admission_policy`],
//! [`watch_event`], [`etcd_request`], [`authorization_decision`], [`authorization_webhook`]),
//! never through `prometheus` types.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// The `component` label of request metrics: this server is the API server.
pub const COMPONENT: &str = "apiserver";

/// kube-apiserver's `apiserver_request_duration_seconds` buckets.
const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// `etcd_request_duration_seconds` buckets (apiserver/pkg/storage/etcd3/metrics).
const ETCD_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// `apiserver_conversion_webhook_duration_seconds` buckets (apiextensions conversion metrics).
const CONVERSION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0,
];

/// `apiserver_admission_webhook_admission_duration_seconds` buckets (admission metrics).
const ADMISSION_BUCKETS: &[f64] = &[0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

/// `apiserver_validating_admission_policy_check_duration_seconds` buckets (apiserver
/// `admission/plugin/policy/validating/metrics`).
const POLICY_CHECK_BUCKETS: &[f64] = &[0.000_000_5, 0.001, 0.01, 0.1, 1.0];

/// `apiserver_watch_cache_read_wait_seconds` buckets (apiserver `storage/cacher/metrics`).
const READ_WAIT_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0,
];

/// Every metric family the server exports.
pub struct Metrics {
    registry: Registry,
    request_total: IntCounterVec,
    request_duration: HistogramVec,
    inflight_read: IntGauge,
    inflight_mutating: IntGauge,
    storage_objects: IntGaugeVec,
    etcd_duration: HistogramVec,
    watch_events: IntCounterVec,
    conversion_total: IntCounterVec,
    conversion_duration: HistogramVec,
    admission_total: IntCounterVec,
    admission_duration: HistogramVec,
    policy_check_total: IntCounterVec,
    policy_check_duration: HistogramVec,
    mutating_policy_check_total: IntCounterVec,
    mutating_policy_check_duration: HistogramVec,
    audit_events: IntCounter,
    audit_errors: IntCounterVec,
    authn_config_reloads: IntCounterVec,
    authz_config_reloads: IntCounterVec,
    authz_decisions: IntCounterVec,
    authz_webhook_total: IntCounterVec,
    authz_webhook_duration: HistogramVec,
    authz_webhook_fail_open: IntCounterVec,
    authz_match_exclusions: IntCounterVec,
    authz_match_errors: IntCounterVec,
    watch_cache: WatchCacheFamilies,
}

/// The watch cache's families (upstream's `storage/cacher/metrics`), labelled by group and
/// resource.
struct WatchCacheFamilies {
    events_received: IntCounterVec,
    events_dispatched: IntCounterVec,
    initializations: IntCounterVec,
    init_events: IntCounterVec,
    terminated_watchers: IntCounterVec,
    read_wait: HistogramVec,
    capacity: IntGaugeVec,
    capacity_increase: IntCounterVec,
    capacity_decrease: IntCounterVec,
}

impl WatchCacheFamilies {
    fn new(registry: &Registry) -> Self {
        let gr = ["group", "resource"];
        let capacity = IntGaugeVec::new(
            Opts::new(
                "watch_cache_capacity",
                "[ALPHA] Total capacity of watch cache broken by resource type.",
            ),
            &gr,
        )
        .expect("valid gauge");
        registry
            .register(Box::new(capacity.clone()))
            .expect("unique name");
        WatchCacheFamilies {
            events_received: counter(
                registry,
                "apiserver_watch_cache_events_received_total",
                "[ALPHA] Counter of events received in watch cache broken by resource type.",
                &gr,
            ),
            events_dispatched: counter(
                registry,
                "apiserver_watch_cache_events_dispatched_total",
                "[ALPHA] Counter of events dispatched in watch cache broken by resource type.",
                &gr,
            ),
            initializations: counter(
                registry,
                "apiserver_watch_cache_initializations_total",
                "[ALPHA] Counter of watch cache initializations broken by resource type.",
                &gr,
            ),
            init_events: counter(
                registry,
                "apiserver_init_events_total",
                "[ALPHA] Counter of init events processed in watch cache broken by resource type.",
                &gr,
            ),
            terminated_watchers: counter(
                registry,
                "apiserver_terminated_watchers_total",
                "[ALPHA] Counter of watchers closed due to unresponsiveness broken by resource \
                 type.",
                &gr,
            ),
            read_wait: histogram(
                registry,
                "apiserver_watch_cache_read_wait_seconds",
                "[ALPHA] Histogram of time spent waiting for a watch cache to become fresh.",
                READ_WAIT_BUCKETS,
                &gr,
            ),
            capacity,
            capacity_increase: counter(
                registry,
                "watch_cache_capacity_increase_total",
                "[ALPHA] Total number of watch cache capacity increase events broken by resource \
                 type.",
                &gr,
            ),
            capacity_decrease: counter(
                registry,
                "watch_cache_capacity_decrease_total",
                "[ALPHA] Total number of watch cache capacity decrease events broken by resource \
                 type.",
                &gr,
            ),
        }
    }
}

/// The live heap's samples between two scrapes (see [`heap_sample`]): the latest sample and
/// the highest since the window started, with and without the allocator's thread caches.
#[derive(Default)]
struct HeapPeaks {
    latest: AtomicU64,
    peak: AtomicU64,
    live: AtomicU64,
    live_peak: AtomicU64,
    cached: AtomicU64,
}

/// What one scrape reports of [`HeapPeaks`], in bytes.
#[derive(Debug, PartialEq, Eq)]
struct HeapReading {
    allocated: u64,
    allocated_peak: u64,
    live: u64,
    live_peak: u64,
    cached: u64,
}

impl HeapPeaks {
    fn sample(&self, allocated: u64, cached: u64) {
        let live = allocated.saturating_sub(cached);
        self.latest.store(allocated, Ordering::Relaxed);
        self.peak.fetch_max(allocated, Ordering::Relaxed);
        self.live.store(live, Ordering::Relaxed);
        self.live_peak.fetch_max(live, Ordering::Relaxed);
        self.cached.store(cached, Ordering::Relaxed);
    }

    /// The window so far (the peaks include the latest samples).
    fn read(&self) -> HeapReading {
        let latest = self.latest.load(Ordering::Relaxed);
        let live = self.live.load(Ordering::Relaxed);
        HeapReading {
            allocated: latest,
            allocated_peak: self.peak.load(Ordering::Relaxed).max(latest),
            live,
            live_peak: self.live_peak.load(Ordering::Relaxed).max(live),
            cached: self.cached.load(Ordering::Relaxed),
        }
    }

    /// Starts a new window: only samples taken from now on count in the next peak (what was
    /// sampled before, a scrape's own rendering among it, does not). A window without a
    /// sample yet reads as the latest one.
    fn restart(&self) {
        self.peak.store(0, Ordering::Relaxed);
        self.live_peak.store(0, Ordering::Relaxed);
    }
}

/// A rendered `/metrics` body that restarts the heap's peaks once written and dropped.
struct Rendered(Vec<u8>);

impl AsRef<[u8]> for Rendered {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Rendered {
    fn drop(&mut self) {
        if let Some(heap) = HEAP.get() {
            heap.peaks.restart();
        }
    }
}

/// The live heap as the binary's allocator counts it (see [`heap_sample`]).
struct Heap {
    peaks: HeapPeaks,
    allocated: IntGauge,
    allocated_peak: IntGauge,
    live: IntGauge,
    live_peak: IntGauge,
    cached: IntGauge,
}

static HEAP: OnceLock<Heap> = OnceLock::new();

/// Records one sample of the live heap in bytes: what the allocator counts as allocated, and
/// how much of that sits freed in its threads' caches. Only a binary whose allocator can tell
/// calls it (`crd-apiserver` built with `jemalloc`, every few milliseconds): then `/metrics` has
/// `crd_apiserver_heap_allocated_bytes` (the latest sample) and
/// `crd_apiserver_heap_allocated_peak_bytes` (the highest sample since the previous scrape's
/// response was written, [`Metrics::render_body`]), so
/// that a benchmark can show what one request form holds at its peak, independent of what the
/// allocator keeps resident; and the same without the thread caches
/// (`crd_apiserver_heap_live_bytes`, `crd_apiserver_heap_live_peak_bytes`, with
/// `crd_apiserver_heap_thread_cache_bytes`), because how full those caches happen to be is
/// chance, not what a request holds.
///
/// # Panics
///
/// Never: the gauges' names are valid and registered once.
pub fn heap_sample(allocated: u64, cached: u64) {
    let heap = HEAP.get_or_init(|| {
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help).expect("valid gauge");
            metrics()
                .registry
                .register(Box::new(g.clone()))
                .expect("unique name");
            g
        };
        Heap {
            peaks: HeapPeaks::default(),
            allocated: gauge(
                "crd_apiserver_heap_allocated_bytes",
                "Bytes of live heap allocations (the allocator's count), sampled.",
            ),
            allocated_peak: gauge(
                "crd_apiserver_heap_allocated_peak_bytes",
                "The highest sampled live heap since the previous scrape of /metrics.",
            ),
            live: gauge(
                "crd_apiserver_heap_live_bytes",
                "Bytes of live heap allocations without the allocator's thread caches, sampled.",
            ),
            live_peak: gauge(
                "crd_apiserver_heap_live_peak_bytes",
                "The highest sampled live heap without the thread caches since the previous \
                 scrape of /metrics.",
            ),
            cached: gauge(
                "crd_apiserver_heap_thread_cache_bytes",
                "Bytes freed into the allocator's thread caches, counted as allocated, sampled.",
            ),
        }
    });
    heap.peaks.sample(allocated, cached);
}

/// The process-wide metrics, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter");
    registry.register(Box::new(c.clone())).expect("unique name");
    c
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
    labels: &[&str],
) -> HistogramVec {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )
    .expect("valid histogram");
    registry.register(Box::new(h.clone())).expect("unique name");
    h
}

impl Metrics {
    fn new() -> Self {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        {
            let _ = registry.register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ));
        }
        let request_labels = [
            "verb",
            "dry_run",
            "group",
            "version",
            "resource",
            "subresource",
            "scope",
            "component",
        ];
        let mut total_labels = request_labels.to_vec();
        total_labels.push("code");
        let inflight = IntGaugeVec::new(
            Opts::new(
                "apiserver_current_inflight_requests",
                "Maximal number of currently used inflight request limit of this apiserver per \
                 request kind in last second.",
            ),
            &["request_kind"],
        )
        .expect("valid gauge");
        registry
            .register(Box::new(inflight.clone()))
            .expect("unique name");
        let storage_objects = IntGaugeVec::new(
            Opts::new(
                "apiserver_storage_objects",
                "[STABLE] Number of stored objects at the time of last check split by kind. In \
                 case of a fetching error, the value will be -1.",
            ),
            &["resource"],
        )
        .expect("valid gauge");
        registry
            .register(Box::new(storage_objects.clone()))
            .expect("unique name");
        let audit_events = IntCounter::new(
            "apiserver_audit_event_total",
            "[ALPHA] Counter of audit events generated and sent to the audit backend.",
        )
        .expect("valid counter");
        registry
            .register(Box::new(audit_events.clone()))
            .expect("unique name");
        Metrics {
            request_total: counter(
                &registry,
                "apiserver_request_total",
                "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, \
                 group, version, resource, scope, component, and HTTP response code.",
                &total_labels,
            ),
            request_duration: histogram(
                &registry,
                "apiserver_request_duration_seconds",
                "[STABLE] Response latency distribution in seconds for each verb, dry run value, \
                 group, version, resource, subresource, scope and component.",
                REQUEST_BUCKETS,
                &request_labels,
            ),
            inflight_read: inflight.with_label_values(&["readOnly"]),
            inflight_mutating: inflight.with_label_values(&["mutating"]),
            storage_objects,
            etcd_duration: histogram(
                &registry,
                "etcd_request_duration_seconds",
                "[ALPHA] Etcd request latency in seconds for each operation and object type.",
                ETCD_BUCKETS,
                &["operation", "type"],
            ),
            watch_events: counter(
                &registry,
                "apiserver_watch_events_total",
                "[ALPHA] Number of events sent in watch clients",
                &["group", "version", "kind"],
            ),
            conversion_total: counter(
                &registry,
                "apiserver_conversion_webhook_request_total",
                "[ALPHA] Counter for conversion webhook requests with success/failure and \
                 failure error type",
                &["result", "failure_type"],
            ),
            conversion_duration: histogram(
                &registry,
                "apiserver_conversion_webhook_duration_seconds",
                "[ALPHA] Conversion webhook request latency",
                CONVERSION_BUCKETS,
                &["result", "failure_type"],
            ),
            admission_total: counter(
                &registry,
                "apiserver_admission_webhook_request_total",
                "[ALPHA] Admission webhook request total, identified by name and broken out for \
                 each admission type (validating or mutating) and operation. Additional labels \
                 specify whether the request was rejected or not and an HTTP status code. Codes \
                 greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
                &["name", "type", "operation", "code", "rejected"],
            ),
            admission_duration: histogram(
                &registry,
                "apiserver_admission_webhook_admission_duration_seconds",
                "[STABLE] Admission webhook latency histogram in seconds, identified by name and \
                 broken out for each operation and API resource and type (validate or admit).",
                ADMISSION_BUCKETS,
                &["name", "type", "operation", "rejected"],
            ),
            policy_check_total: counter(
                &registry,
                "apiserver_validating_admission_policy_check_total",
                "[BETA] Validation admission policy check total, labeled by policy and further \
                 identified by binding and enforcement action taken.",
                &[
                    "policy",
                    "policy_binding",
                    "error_type",
                    "enforcement_action",
                ],
            ),
            policy_check_duration: histogram(
                &registry,
                "apiserver_validating_admission_policy_check_duration_seconds",
                "[BETA] Validation admission latency for individual validation expressions in \
                 seconds, labeled by policy and further including binding and enforcement action \
                 taken.",
                POLICY_CHECK_BUCKETS,
                &[
                    "policy",
                    "policy_binding",
                    "error_type",
                    "enforcement_action",
                ],
            ),
            mutating_policy_check_total: counter(
                &registry,
                "apiserver_mutating_admission_policy_check_total",
                "[ALPHA] Mutation admission policy check total, labeled by policy and further \
                 identified by binding.",
                &["policy", "policy_binding", "error_type"],
            ),
            mutating_policy_check_duration: histogram(
                &registry,
                "apiserver_mutating_admission_policy_check_duration_seconds",
                "[ALPHA] Mutation admission latency for individual mutation expressions in \
                 seconds, labeled by policy and binding.",
                POLICY_CHECK_BUCKETS,
                &["policy", "policy_binding", "error_type"],
            ),
            audit_events,
            audit_errors: counter(
                &registry,
                "apiserver_audit_error_total",
                "[ALPHA] Counter of audit events that failed to be audited properly. Plugin \
                 identifies the plugin affected by the error.",
                &["plugin"],
            ),
            authz_config_reloads: counter(
                &registry,
                "apiserver_authorization_config_controller_automatic_reloads_total",
                "[BETA] Total number of automatic reloads of authorization configuration split \
                 by status.",
                &["status"],
            ),
            authz_decisions: counter(
                &registry,
                "apiserver_authorization_decisions_total",
                "[ALPHA] Total number of terminal decisions made by an authorizer split by \
                 authorizer type, name, and decision.",
                &["type", "name", "decision"],
            ),
            authz_webhook_total: counter(
                &registry,
                "apiserver_authorization_webhook_evaluations_total",
                "[ALPHA] Round-trips to authorization webhooks.",
                &["name", "result"],
            ),
            authz_webhook_duration: histogram(
                &registry,
                "apiserver_authorization_webhook_duration_seconds",
                "[ALPHA] Request latency in seconds.",
                prometheus::DEFAULT_BUCKETS,
                &["name", "result"],
            ),
            authz_webhook_fail_open: counter(
                &registry,
                "apiserver_authorization_webhook_evaluations_fail_open_total",
                "[ALPHA] NoOpinion results due to webhook timeout or error.",
                &["name", "result"],
            ),
            authz_match_exclusions: counter(
                &registry,
                "apiserver_authorization_match_condition_exclusions_total",
                "[ALPHA] Total number of exclusions when an authorization webhook is skipped by \
                 match conditions, split by authorizer type and name.",
                &["type", "name"],
            ),
            authz_match_errors: counter(
                &registry,
                "apiserver_authorization_match_condition_evaluation_errors_total",
                "[ALPHA] Total number of errors when an authorization webhook encounters a match \
                 condition error split by authorizer type and name.",
                &["type", "name"],
            ),
            authn_config_reloads: counter(
                &registry,
                "apiserver_authentication_config_controller_automatic_reloads_total",
                "[BETA] Total number of automatic reloads of authentication configuration split \
                 by status.",
                &["status"],
            ),
            watch_cache: WatchCacheFamilies::new(&registry),
            registry,
        }
    }

    /// Renders every family in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> Vec<u8> {
        if let Some(heap) = HEAP.get() {
            let r = heap.peaks.read();
            let set = |g: &IntGauge, v: u64| g.set(i64::try_from(v).unwrap_or(i64::MAX));
            set(&heap.allocated, r.allocated);
            set(&heap.allocated_peak, r.allocated_peak);
            set(&heap.live, r.live);
            set(&heap.live_peak, r.live_peak);
            set(&heap.cached, r.cached);
        }
        let mut out = Vec::with_capacity(16 * 1024);
        // Encoding into a Vec cannot fail for well-formed families.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        out
    }

    /// [`Metrics::render`] as a response body. The live heap's peaks start over when the body
    /// is dropped, once the connection has written it: the render's own allocations (the
    /// gathered families, then the 150 KB of text until it is sent) are then never part of the
    /// next window's peak, so a benchmark's baseline scrape is not counted in the peak it
    /// waits for.
    pub fn render_body(&self) -> bytes::Bytes {
        bytes::Bytes::from_owner(Rendered(self.render()))
    }

    /// Sets `apiserver_storage_objects` for one resource (`-1` when counting failed).
    pub fn set_storage_objects(&self, resource: &str, count: i64) {
        self.storage_objects
            .with_label_values(&[resource])
            .set(count);
    }
}

/// The `Content-Type` of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The labels of one request, as kube-apiserver's `MonitorRequest` fills them.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestLabels<'a> {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `DELETECOLLECTION`.
    pub verb: &'a str,
    /// `""`, `All`, or `invalid`.
    pub dry_run: &'a str,
    /// API group (empty for core and non-resource requests).
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, or the path of a non-resource request.
    pub subresource: &'a str,
    /// `namespace`, `resource`, `cluster`, or empty for non-resource requests.
    pub scope: &'a str,
}

/// Records one finished request: `apiserver_request_total` and
/// `apiserver_request_duration_seconds`.
pub fn request(labels: &RequestLabels<'_>, code: u16, elapsed: Duration) {
    let m = metrics();
    let l = labels;
    let code = code_str(code);
    m.request_total
        .with_label_values(&[
            l.verb,
            l.dry_run,
            l.group,
            l.version,
            l.resource,
            l.subresource,
            l.scope,
            COMPONENT,
            &code,
        ])
        .inc();
    m.request_duration
        .with_label_values(&[
            l.verb,
            l.dry_run,
            l.group,
            l.version,
            l.resource,
            l.subresource,
            l.scope,
            COMPONENT,
        ])
        .observe(elapsed.as_secs_f64());
}

/// How many successful reads (`GET`, `LIST`, `WATCH`) of `resource` at `group/version` this
/// process has served, from `apiserver_request_total`: the upgrade check asks whether clients
/// still read a version a CRD change would stop serving.
pub fn read_requests(group: &str, version: &str, resource: &str) -> u64 {
    use prometheus::core::Collector as _;
    let mut total = 0;
    for family in metrics().request_total.collect() {
        for m in family.get_metric() {
            let label = |name: &str| {
                m.get_label()
                    .iter()
                    .find(|l| l.name() == name)
                    .map_or("", |l| l.value())
            };
            if matches!(label("verb"), "GET" | "LIST" | "WATCH")
                && label("group") == group
                && label("version") == version
                && label("resource") == resource
                && label("code").starts_with('2')
            {
                total += m.get_counter().get_value() as u64;
            }
        }
    }
    total
}

/// Counts a request in `apiserver_current_inflight_requests` until the guard drops.
pub struct InflightGuard(&'static IntGauge);

impl InflightGuard {
    /// Starts counting a request of the kind (`mutating` or `readOnly`).
    pub fn new(mutating: bool) -> Self {
        let m = metrics();
        let gauge = if mutating {
            &m.inflight_mutating
        } else {
            &m.inflight_read
        };
        gauge.inc();
        InflightGuard(gauge)
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Records one storage call in `etcd_request_duration_seconds`.
pub fn etcd_request(operation: &str, object_type: &str, elapsed: Duration) {
    metrics()
        .etcd_duration
        .with_label_values(&[operation, object_type])
        .observe(elapsed.as_secs_f64());
}

/// Counts one event sent to a watch client in `apiserver_watch_events_total`.
pub fn watch_event(group: &str, version: &str, kind: &str) {
    metrics()
        .watch_events
        .with_label_values(&[group, version, kind])
        .inc();
}

/// Why a conversion-webhook call failed, as upstream's `ConversionWebhookErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConversionFailure {
    /// The call itself failed (connection, timeout, non-200).
    CallFailure,
    /// The response could not be decoded or was not a ConversionReview.
    MalformedResponse,
    /// The response had another number of objects than the request.
    PartialResponse,
    /// A converted object was invalid (kind, apiVersion, metadata changes).
    InvalidConvertedObject,
    /// The response carried no objects.
    NoObjectsReturned,
}

impl ConversionFailure {
    fn label(self) -> &'static str {
        match self {
            ConversionFailure::CallFailure => "conversion_webhook_call_failure",
            ConversionFailure::MalformedResponse => "conversion_webhook_malformed_response_failure",
            ConversionFailure::PartialResponse => "conversion_webhook_partial_response_failure",
            ConversionFailure::InvalidConvertedObject => {
                "conversion_webhook_invalid_converted_object_failure"
            }
            ConversionFailure::NoObjectsReturned => {
                "conversion_webhook_no_objects_returned_failure"
            }
        }
    }
}

/// Records one conversion-webhook call: success (`None`) or the failure type.
pub fn conversion_webhook(failure: Option<ConversionFailure>, elapsed: Duration) {
    let (result, failure_type) = match failure {
        None => ("success", ""),
        Some(f) => ("failure", f.label()),
    };
    let m = metrics();
    m.conversion_total
        .with_label_values(&[result, failure_type])
        .inc();
    m.conversion_duration
        .with_label_values(&[result, failure_type])
        .observe(elapsed.as_secs_f64());
}

/// Records one admission-webhook call (`apiserver_admission_webhook_request_total` and
/// `apiserver_admission_webhook_admission_duration_seconds`). `webhook_type` is `validating`
/// or `admit`, `operation` `CREATE`/`UPDATE`/`DELETE`/`CONNECT`, `code` the HTTP status of the
/// call (0 when none was received; above 600 is recorded as 600, as upstream).
pub fn admission_webhook(
    name: &str,
    webhook_type: &str,
    operation: &str,
    rejected: bool,
    code: u16,
    elapsed: Duration,
) {
    let m = metrics();
    let rejected = if rejected { "true" } else { "false" };
    let code = code_str(code.min(600));
    m.admission_total
        .with_label_values(&[name, webhook_type, operation, &code, rejected])
        .inc();
    m.admission_duration
        .with_label_values(&[name, webhook_type, operation, rejected])
        .observe(elapsed.as_secs_f64());
}

/// Records one validating admission policy decision
/// (`apiserver_validating_admission_policy_check_total` and `..._check_duration_seconds`):
/// `error_type` is `no_error`, `compile_error`, `out_of_budget` or `invalid_error`,
/// `enforcement_action` `allow` (an error ignored by `failurePolicy: Ignore`), `deny`, `warn` or
/// `audit`; `elapsed` is the time the decision's expression took.
pub fn validating_admission_policy(
    policy: &str,
    binding: &str,
    error_type: &str,
    enforcement_action: &str,
    elapsed: Duration,
) {
    let m = metrics();
    let labels = [policy, binding, error_type, enforcement_action];
    m.policy_check_total.with_label_values(&labels).inc();
    m.policy_check_duration
        .with_label_values(&labels)
        .observe(elapsed.as_secs_f64());
}

/// Records one mutation of a mutating admission policy
/// (`apiserver_mutating_admission_policy_check_total` and `..._check_duration_seconds`, as
/// apiserver's `policy/mutating/metrics`): `error_type` is `no_error`, `compile_error`,
/// `out_of_budget` or `invalid_error`; `elapsed` is the time the mutation took.
pub fn mutating_admission_policy(policy: &str, binding: &str, error_type: &str, elapsed: Duration) {
    let m = metrics();
    let labels = [policy, binding, error_type];
    m.mutating_policy_check_total
        .with_label_values(&labels)
        .inc();
    m.mutating_policy_check_duration
        .with_label_values(&labels)
        .observe(elapsed.as_secs_f64());
}

/// Counts an audit event handed to the backend (`apiserver_audit_event_total`).
pub fn audit_event() {
    metrics().audit_events.inc();
}

/// Counts an audit event the backend failed to write or dropped (`apiserver_audit_error_total`).
pub fn audit_error(plugin: &str) {
    metrics().audit_errors.with_label_values(&[plugin]).inc();
}

/// Counts an authorizer's terminal decision (`apiserver_authorization_decisions_total`):
/// `kind` is its type (`RBAC`, `Webhook`, ...), `decision` `allowed` or `denied`.
pub fn authorization_decision(kind: &str, name: &str, allowed: bool) {
    metrics()
        .authz_decisions
        .with_label_values(&[kind, name, if allowed { "allowed" } else { "denied" }])
        .inc();
}

/// What became of one authorization webhook evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookEvaluation {
    /// An answer came back (`success`).
    Success,
    /// The call failed (`error`).
    Error,
    /// The call timed out (`timeout`).
    Timeout,
    /// The match conditions excluded the request (no call).
    Excluded,
    /// A match condition failed to evaluate (no call).
    MatchError,
}

/// Records one authorization webhook evaluation (`apiserver_authorization_webhook_*` and
/// `apiserver_authorization_match_condition_*`); `fail_open` when a failure became no opinion.
pub fn authorization_webhook(
    name: &str,
    outcome: WebhookEvaluation,
    elapsed: Duration,
    fail_open: bool,
) {
    let m = metrics();
    let result = match outcome {
        WebhookEvaluation::Success => "success",
        WebhookEvaluation::Error => "error",
        WebhookEvaluation::Timeout => "timeout",
        WebhookEvaluation::Excluded => {
            m.authz_match_exclusions
                .with_label_values(&["Webhook", name])
                .inc();
            return;
        }
        WebhookEvaluation::MatchError => {
            m.authz_match_errors
                .with_label_values(&["Webhook", name])
                .inc();
            return;
        }
    };
    m.authz_webhook_total
        .with_label_values(&[name, result])
        .inc();
    m.authz_webhook_duration
        .with_label_values(&[name, result])
        .observe(elapsed.as_secs_f64());
    if fail_open && outcome != WebhookEvaluation::Success {
        m.authz_webhook_fail_open
            .with_label_values(&[name, result])
            .inc();
    }
}

/// Counts a reload of the authorization configuration file (`success` or `failure`).
pub fn authorization_config_reload(success: bool) {
    metrics()
        .authz_config_reloads
        .with_label_values(&[if success { "success" } else { "failure" }])
        .inc();
}

/// Counts a reload of the authentication configuration file (`success` or `failure`).
pub fn authentication_config_reload(success: bool) {
    metrics()
        .authn_config_reloads
        .with_label_values(&[if success { "success" } else { "failure" }])
        .inc();
}

/// A status code as a label without allocating for the codes the server sends.
fn code_str(code: u16) -> Cow<'static, str> {
    Cow::Borrowed(match code {
        0 => "0",
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        304 => "304",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        406 => "406",
        409 => "409",
        410 => "410",
        413 => "413",
        415 => "415",
        422 => "422",
        429 => "429",
        500 => "500",
        503 => "503",
        504 => "504",
        600 => "600",
        other => return Cow::Owned(other.to_string()),
    })
}

/// The group and resource a storage key (or a prefix of one collection) belongs to: a built-in
/// kind's key root (the longest that matches), else `/registry/<group>/<resource>/...` for keys
/// under a dotted group (CRDs and their objects), else `/registry/<resource>/...` (core).
pub fn key_group_resource(key: &str) -> (&str, &str) {
    if let Some(k) = builtin_kind_of(key) {
        return (k.group, k.plural);
    }
    let mut segments = key
        .strip_prefix("/registry/")
        .unwrap_or(key)
        .split('/')
        .filter(|s| !s.is_empty());
    match (segments.next(), segments.next()) {
        (Some(group), Some(resource)) if group.contains('.') => (group, resource),
        (Some(resource), _) => ("", resource),
        (None, _) => ("", ""),
    }
}

/// The built-in kind whose key root `key` lies under (the longest such root).
fn builtin_kind_of(key: &str) -> Option<&'static crd_builtin::Kind> {
    BuiltinRoots::get()
        .candidates(key)
        .iter()
        .map(|&i| &crd_builtin::KINDS[i])
        .filter(|k| {
            key.strip_prefix(k.key_root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
        .max_by_key(|k| k.key_root.len())
}

/// The built-in kinds' key roots by their first segment under `/registry/`: a key can only lie
/// under a root whose first segment is the key's own, so [`key_group_resource`] compares a key
/// with those few roots instead of every built-in kind's (it runs for every event the watch
/// cache receives and dispatches; a custom resource's key matched none after comparing them
/// all).
struct BuiltinRoots {
    /// (first segment, indices into `KINDS` of the kinds under it and of `elsewhere`,
    /// ascending), sorted by segment.
    by_segment: Vec<(&'static str, Vec<usize>)>,
    /// Indices of the kinds whose root is not under `/registry/<segment>` (none today), which
    /// every key is compared with.
    elsewhere: Vec<usize>,
}

impl BuiltinRoots {
    fn get() -> &'static BuiltinRoots {
        static ROOTS: LazyLock<BuiltinRoots> =
            LazyLock::new(|| BuiltinRoots::of(crd_builtin::KINDS));
        &ROOTS
    }

    fn of(kinds: &[crd_builtin::Kind]) -> BuiltinRoots {
        let mut elsewhere = Vec::new();
        let mut by_segment: Vec<(&'static str, Vec<usize>)> = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            match first_segment(k.key_root) {
                Some(seg) if !seg.is_empty() => {
                    match by_segment.iter_mut().find(|(s, _)| *s == seg) {
                        Some((_, v)) => v.push(i),
                        None => by_segment.push((seg, vec![i])),
                    }
                }
                _ => elsewhere.push(i),
            }
        }
        // Kept in `KINDS` order, so that equal roots resolve as a scan of every kind does.
        for (_, v) in &mut by_segment {
            v.extend(&elsewhere);
            v.sort_unstable();
        }
        by_segment.sort_by(|a, b| a.0.cmp(b.0));
        BuiltinRoots {
            by_segment,
            elsewhere,
        }
    }

    /// The kinds whose root `key` may lie under, in `KINDS` order.
    fn candidates(&self, key: &str) -> &[usize] {
        let Some(seg) = first_segment(key) else {
            return &self.elsewhere;
        };
        match self.by_segment.binary_search_by(|(s, _)| (*s).cmp(seg)) {
            Ok(i) => &self.by_segment[i].1,
            Err(_) => &self.elsewhere,
        }
    }
}

/// The segment of a key (or key root) after `/registry/`, up to the next `/`.
fn first_segment(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("/registry/")?;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// Records the watch cache's reports as upstream's `apiserver_watch_cache_*` metrics, labelled
/// by the group and resource of each key ([`key_group_resource`]). The cache has one event
/// window for every resource: its capacity, and one initialization per load, are reported with
/// empty labels.
pub struct WatchCacheMetrics;

impl crd_storage::cache::CacheObserver for WatchCacheMetrics {
    fn initialized(&self, keys: &mut dyn Iterator<Item = &str>) {
        let m = &metrics().watch_cache;
        // The whole cache (one for every resource), then each resource it loaded objects of.
        m.initializations.with_label_values(&["", ""]).inc();
        let mut seen = std::collections::HashSet::new();
        for key in keys {
            let (group, resource) = key_group_resource(key);
            m.init_events.with_label_values(&[group, resource]).inc();
            if seen.insert((group.to_string(), resource.to_string())) {
                m.initializations
                    .with_label_values(&[group, resource])
                    .inc();
            }
        }
    }

    fn received(&self, key: &str) {
        let (group, resource) = key_group_resource(key);
        metrics()
            .watch_cache
            .events_received
            .with_label_values(&[group, resource])
            .inc();
    }

    fn dispatched(&self, key: &str) {
        let (group, resource) = key_group_resource(key);
        metrics()
            .watch_cache
            .events_dispatched
            .with_label_values(&[group, resource])
            .inc();
    }

    fn watcher_terminated(&self, prefix: &str) {
        let (group, resource) = key_group_resource(prefix);
        metrics()
            .watch_cache
            .terminated_watchers
            .with_label_values(&[group, resource])
            .inc();
    }

    fn read_wait(&self, prefix: &str, waited: Duration) {
        let (group, resource) = key_group_resource(prefix);
        metrics()
            .watch_cache
            .read_wait
            .with_label_values(&[group, resource])
            .observe(waited.as_secs_f64());
    }

    fn capacity(&self, old: usize, capacity: usize) {
        let m = &metrics().watch_cache;
        m.capacity
            .with_label_values(&["", ""])
            .set(i64::try_from(capacity).unwrap_or(i64::MAX));
        if capacity > old {
            m.capacity_increase.with_label_values(&["", ""]).inc();
        } else if capacity < old {
            m.capacity_decrease.with_label_values(&["", ""]).inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_labelled_with_their_group_and_resource() {
        let cases = [
            ("/registry/configmaps/default/a", ("", "configmaps")),
            ("/registry/configmaps/", ("", "configmaps")),
            ("/registry/services/specs/default/s", ("", "services")),
            ("/registry/services/endpoints/default/s", ("", "endpoints")),
            ("/registry/deployments/ns/d", ("apps", "deployments")),
            ("/registry/namespaces/default", ("", "namespaces")),
            (
                "/registry/apiextensions.k8s.io/customresourcedefinitions/a.b.c",
                ("apiextensions.k8s.io", "customresourcedefinitions"),
            ),
            (
                "/registry/stable.example.com/crontabs/ns/x",
                ("stable.example.com", "crontabs"),
            ),
            (
                "/registry/stable.example.com/crontabs/",
                ("stable.example.com", "crontabs"),
            ),
            ("/registry/", ("", "")),
            ("/registry/configmapsx/a", ("", "configmapsx")),
        ];
        for (key, want) in cases {
            assert_eq!(key_group_resource(key), want, "{key}");
        }
    }

    /// The built-in kind as comparing the key with every built-in kind's root finds it (what
    /// `key_group_resource` did before it looked the roots up by their first segment).
    fn builtin_kind_by_scanning_every_root(key: &str) -> Option<&'static crd_builtin::Kind> {
        crd_builtin::KINDS
            .iter()
            .filter(|k| {
                key.strip_prefix(k.key_root)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .max_by_key(|k| k.key_root.len())
    }

    #[test]
    fn looking_roots_up_by_segment_labels_as_scanning_every_root() {
        let mut keys: Vec<String> = vec![
            String::new(),
            "/".into(),
            "/registry".into(),
            "/registry/".into(),
            "/registry//x".into(),
            "registry/configmaps/a".into(),
            "/other/configmaps/a".into(),
            "/registry/stable.example.com/crontabs/ns/x".into(),
            "/registry/stable.example.com".into(),
            "/registry/apiextensions.k8s.io".into(),
            "/registry/apiextensions.k8s.io/other/x".into(),
        ];
        for k in crd_builtin::KINDS {
            let root = k.key_root;
            keys.extend([
                root.to_string(),
                format!("{root}/"),
                format!("{root}/ns/name"),
                format!("{root}/name"),
                format!("{root}x"),
                format!("{root}x/ns/name"),
                root[..root.len() - 1].to_string(),
                format!("{}/y", &root[..root.len() - 1]),
            ]);
        }
        let at = |k: Option<&'static crd_builtin::Kind>| k.map(std::ptr::from_ref);
        for key in &keys {
            let scanned = builtin_kind_by_scanning_every_root(key);
            assert_eq!(at(builtin_kind_of(key)), at(scanned), "{key:?}");
        }
        // Every root is under `/registry/<segment>` today, so no key is compared with all.
        assert!(BuiltinRoots::get().elsewhere.is_empty());
    }

    #[test]
    fn heap_peaks_leave_out_the_thread_caches_and_start_over_after_a_scrape() {
        let peaks = super::HeapPeaks::default();
        // (allocated, in thread caches) samples of one window.
        for (allocated, cached) in [(1_000, 100), (1_600, 700), (1_400, 100), (1_200, 200)] {
            peaks.sample(allocated, cached);
        }
        let want = super::HeapReading {
            allocated: 1_200,
            allocated_peak: 1_600,
            live: 1_000,
            // 1,300 live at the third sample; the allocated peak was mostly cached blocks.
            live_peak: 1_300,
            cached: 200,
        };
        assert_eq!(peaks.read(), want);
        // A scrape's render allocates after reading (its families), then restarts the window.
        peaks.sample(1_900, 200);
        peaks.sample(1_200, 200);
        peaks.restart();
        peaks.sample(1_250, 150);
        let want = super::HeapReading {
            allocated: 1_250,
            allocated_peak: 1_250,
            live: 1_100,
            live_peak: 1_100,
            cached: 150,
        };
        assert_eq!(peaks.read(), want);
    }

    #[test]
    fn a_scrapes_body_restarts_the_heap_peak_once_it_is_dropped() {
        // (Only this test samples the process-wide heap.)
        let line = |text: &str, name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{name} ")))
                .map(str::to_string)
        };
        for (allocated, cached) in [(1_000, 0), (5_000, 1_000), (2_000, 500)] {
            super::heap_sample(allocated, cached);
        }
        let body = metrics().render_body();
        let text = String::from_utf8_lossy(&body).into_owned();
        for (name, want) in [
            ("crd_apiserver_heap_allocated_bytes", 2_000),
            ("crd_apiserver_heap_allocated_peak_bytes", 5_000),
            ("crd_apiserver_heap_live_bytes", 1_500),
            ("crd_apiserver_heap_live_peak_bytes", 4_000),
            ("crd_apiserver_heap_thread_cache_bytes", 500),
        ] {
            assert_eq!(line(&text, name), Some(format!("{name} {want}")));
        }
        // Sampled while the body is being written: not the next window's.
        super::heap_sample(9_000, 0);
        drop(body);
        super::heap_sample(2_100, 0);
        let text = String::from_utf8(metrics().render()).unwrap();
        assert_eq!(
            line(&text, "crd_apiserver_heap_allocated_peak_bytes"),
            Some("crd_apiserver_heap_allocated_peak_bytes 2100".into()),
        );
    }

    #[test]
    fn request_metrics_render_with_upstream_names_and_labels() {
        let labels = RequestLabels {
            verb: "POST",
            group: "unit.test.io",
            version: "v1",
            resource: "widgets",
            scope: "namespace",
            ..RequestLabels::default()
        };
        request(&labels, 201, Duration::from_millis(3));
        let text = String::from_utf8(metrics().render()).unwrap();
        assert!(text.contains(
            "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",\
             group=\"unit.test.io\",resource=\"widgets\",scope=\"namespace\",subresource=\"\",\
             verb=\"POST\",version=\"v1\"} 1"
        ));
        assert!(
            text.contains(
                "apiserver_request_duration_seconds_bucket{component=\"apiserver\",dry_run=\"\",\
             group=\"unit.test.io\",resource=\"widgets\",scope=\"namespace\",\
             subresource=\"\",verb=\"POST\",version=\"v1\",le=\"0.005\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE apiserver_request_duration_seconds histogram"),
            "{text}"
        );
    }

    #[test]
    fn admission_codes_above_600_are_truncated() {
        admission_webhook(
            "unit.hook",
            "validating",
            "CREATE",
            true,
            999,
            Duration::ZERO,
        );
        let text = String::from_utf8(metrics().render()).unwrap();
        assert!(text.contains(
            "apiserver_admission_webhook_request_total{code=\"600\",name=\"unit.hook\",\
             operation=\"CREATE\",rejected=\"true\",type=\"validating\"} 1"
        ));
    }
}
