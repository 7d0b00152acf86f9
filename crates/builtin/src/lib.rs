//! The built-in kinds (`ConfigMap`, `Secret`, `Deployment`, `Lease`, ...) as data, so the server drives
//! them from one table on the same machinery as custom resources.
//!
//! Main items: [`Kind`] (one row per kind: names, scope, subresources, etcd key root, printer
//! columns, field labels) and [`KINDS`]; per-kind pure functions on [`Kind`]:
//! [`Kind::cells`] (`printers`), [`Kind::field_value`] (`fields`), [`Kind::schema`] and
//! [`Kind::definition_schema`] (`schema`), [`Kind::validate`] (`validation`), [`Kind::apply_defaults`],
//! [`Kind::prepare_create`] and [`Kind::prepare_update`] (`prepare`); [`events`] converts
//! between `events.k8s.io/v1` and core/v1 Events (stored as core events).
//!
//! Everything takes and returns `serde_json::Value` objects in the kind's own wire shape.
//!
//! How a server drives a kind from its row (one generic strategy):
//! - discovery and routing: `group`, `version`, `plural`, `singular`, `kind`, `list_kind`,
//!   `short_names`, `categories`, `scope`, `verbs`, `status`, `scale`;
//! - storage: `<key_root>/<namespace>/<name>`; a kind with `stored_as` shares another kind's
//!   keys and is converted with [`events::to_core`] on writes and [`events::from_core`] on reads;
//! - decode: prune/type-check with [`Kind::bare_schema`] (structural; `crd_schema::prune::prune`
//!   with `is_resource_root`), then [`Kind::apply_defaults`] (also on reads of
//!   stored objects);
//! - create: [`Kind::prepare_create`] (after uid and creationTimestamp are set), then
//!   [`Kind::validate`] with `old = None`;
//! - update: [`Kind::prepare_update`], then [`Kind::validate`] with the old object (for `/status`
//!   writes only the metadata part of the result is meaningful);
//! - `/scale`: [`Kind::scale_of`]; tables: [`Kind::column_definitions`], [`Kind::cells`],
//!   [`Kind::row_conditions`]; field selectors: [`Kind::supports_field`], [`Kind::field_value`];
//! - OpenAPI: [`schema::definitions`] and [`schema::reachable`].
//!
//! Architecture Invariant: this crate does no IO and knows no HTTP, async runtime or storage.

pub mod admissionpolicy;
pub mod admissionregistration;
pub mod apiregistration;
pub mod certificates;
pub mod cron;
pub mod events;
pub mod fields;
pub mod hpa;
pub mod node;
pub mod policy_kinds;
pub mod prepare;
pub mod printers;
pub mod rbac;
pub mod schema;
pub mod validation;

pub use crd_core::validation::Scope;
pub use printers::{Column, Description};

/// Which built-in kind a row describes; selects the per-kind code paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum KindId {
    ConfigMap,
    Secret,
    ServiceAccount,
    Service,
    Endpoints,
    Pod,
    PersistentVolumeClaim,
    PersistentVolume,
    /// core/v1 `Node` (cluster-scoped; operators watch them and tests create them, as in
    /// envtest: no kubelet registers or heartbeats one here).
    Node,
    ReplicationController,
    Event,
    Deployment,
    StatefulSet,
    DaemonSet,
    ReplicaSet,
    /// `apps/v1` `ControllerRevision`: the revisions stateful sets and daemon sets keep
    /// (`kubectl rollout history|undo` reads them).
    ControllerRevision,
    /// `scheduling.k8s.io/v1` `PriorityClass` (cluster-scoped; charts install them).
    PriorityClass,
    /// `networking.k8s.io/v1` `NetworkPolicy` (charts install them; nothing enforces them).
    NetworkPolicy,
    /// `networking.k8s.io/v1` `IngressClass` (cluster-scoped; ingress controllers' charts).
    IngressClass,
    /// `autoscaling/v2` `HorizontalPodAutoscaler` (charts install them; no autoscaler runs).
    HorizontalPodAutoscaler,
    /// `autoscaling/v1` `HorizontalPodAutoscaler` (`kubectl autoscale` sends it), stored as v2
    /// (see [`hpa`]).
    HorizontalPodAutoscalerV1,
    /// core/v1 `ResourceQuota` (`kubectl create quota`; stored, not enforced).
    ResourceQuota,
    /// core/v1 `LimitRange` (stored with upstream's defaults, not applied to pods).
    LimitRange,
    /// `storage.k8s.io/v1` `StorageClass` (cluster-scoped; storage charts).
    StorageClass,
    /// `node.k8s.io/v1` `RuntimeClass` (cluster-scoped; GPU and sandbox runtime charts).
    RuntimeClass,
    /// `storage.k8s.io/v1` `CSIDriver` (cluster-scoped; CSI driver charts).
    CSIDriver,
    /// core/v1 `PodTemplate` (templates some controllers and charts keep as objects).
    PodTemplate,
    /// `apiregistration.k8s.io/v1` `APIService` (cluster-scoped; kube-aggregator's registration
    /// of a group version, local or served by a Service).
    APIService,
    /// `certificates.k8s.io/v1` `CertificateSigningRequest` (cluster-scoped; stamped with its
    /// requester, approved through `/approval`, issued through `/status`; see [`certificates`]).
    CertificateSigningRequest,
    Job,
    CronJob,
    Ingress,
    EndpointSlice,
    PodDisruptionBudget,
    Lease,
    /// `events.k8s.io/v1` Event, stored as a core/v1 Event.
    EventsV1Event,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    ValidatingWebhookConfiguration,
    MutatingWebhookConfiguration,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    /// `admissionregistration.k8s.io/v1beta1` (Kubernetes 1.34 serves it at beta).
    MutatingAdmissionPolicy,
    MutatingAdmissionPolicyBinding,
}

/// The paths of a `/scale` subresource, as a CRD's `subresources.scale` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// `.spec.replicas`.
    pub spec_replicas: &'static str,
    /// `.status.replicas`.
    pub status_replicas: &'static str,
    /// Where the label selector lives. For built-ins it is a `LabelSelector` object at
    /// `.spec.selector` (a `ReplicationController`'s is a label set there); the Scale's `status.selector` is its string form ([`Kind::scale_of`]).
    pub label_selector: &'static str,
}

/// How `metadata.generation` moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// Not set by the server (`ConfigMap`, `Pod`, `Lease`, ...).
    None,
    /// 1 on create; +1 when `spec` changes (apps, batch, policy, networking).
    Spec,
    /// 1 on create; +1 when anything outside `metadata` changes (`EndpointSlice`).
    NonMetadata,
}

/// One built-in kind: everything the server needs to serve it generically.
#[derive(Debug)]
pub struct Kind {
    /// Which kind (selects code paths).
    pub id: KindId,
    /// The API group ("" for core).
    pub group: &'static str,
    /// The served (and storage) version.
    pub version: &'static str,
    /// The Kind.
    pub kind: &'static str,
    /// The list Kind.
    pub list_kind: &'static str,
    /// The resource (plural).
    pub plural: &'static str,
    /// The singular name discovery reports.
    pub singular: &'static str,
    /// `kubectl` short names, as discovery reports them.
    pub short_names: &'static [&'static str],
    /// Discovery categories (`all`).
    pub categories: &'static [&'static str],
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Whether `/status` exists.
    pub status: bool,
    /// The `/scale` subresource, when it exists.
    pub scale: Option<ScalePaths>,
    /// Discovery verbs of the main resource.
    pub verbs: &'static [&'static str],
    /// kube-apiserver's etcd key root (objects at `<root>/<namespace>/<name>`).
    pub key_root: &'static str,
    /// The OpenAPI definition name, such as `io.k8s.api.core.v1.Pod`.
    pub definition: &'static str,
    /// How `metadata.generation` moves.
    pub generation: Generation,
    /// The server-side printer columns, Name included, as kube-apiserver's Table has them.
    pub columns: &'static [Column],
    /// Field labels usable in field selectors (besides `metadata.name`/`metadata.namespace`).
    pub field_labels: &'static [&'static str],
    /// For kinds stored in another kind's shape and place: that kind's plural
    /// (`events.k8s.io/v1` Events are stored as core/v1 `events`; see [`events`]).
    pub stored_as: Option<&'static str>,
    /// Subresources besides `status` and `scale` that get, update and patch the object
    /// (a `CertificateSigningRequest`'s `approval`).
    pub extra_subresources: &'static [&'static str],
}

/// The verbs every built-in kind here serves.
pub const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const APPS_SCALE: Option<ScalePaths> = Some(ScalePaths {
    spec_replicas: ".spec.replicas",
    status_replicas: ".status.replicas",
    label_selector: ".spec.selector",
});

macro_rules! kind {
    ($id:ident, $group:literal, $version:literal, $kind:literal, $plural:literal, $singular:literal,
     short: [$($short:literal),*], cat: [$($cat:literal),*], $scope:ident, status: $status:literal,
     scale: $scale:expr, key: $key:literal, def: $def:literal, gen: $gen:ident,
     columns: $columns:expr, fields: [$($field:literal),*], stored_as: $stored:expr
     $(, extra: [$($extra:literal),*])?) => {
        Kind {
            id: KindId::$id,
            group: $group,
            version: $version,
            kind: $kind,
            list_kind: concat!($kind, "List"),
            plural: $plural,
            singular: $singular,
            short_names: &[$($short),*],
            categories: &[$($cat),*],
            scope: Scope::$scope,
            status: $status,
            scale: $scale,
            verbs: VERBS,
            key_root: $key,
            definition: $def,
            generation: Generation::$gen,
            columns: $columns,
            field_labels: &[$($field),*],
            stored_as: $stored,
            extra_subresources: &[$($($extra),*)?],
        }
    };
}

/// Every built-in kind this crate describes.
pub static KINDS: &[Kind] = &[
    kind!(ConfigMap, "", "v1", "ConfigMap", "configmaps", "configmap", short: ["cm"], cat: [],
        Namespaced, status: false, scale: None, key: "/registry/configmaps",
        def: "io.k8s.api.core.v1.ConfigMap", gen: None, columns: printers::CONFIG_MAP,
        fields: [], stored_as: None),
    kind!(Secret, "", "v1", "Secret", "secrets", "secret", short: [], cat: [],
        Namespaced, status: false, scale: None, key: "/registry/secrets",
        def: "io.k8s.api.core.v1.Secret", gen: None, columns: printers::SECRET,
        fields: ["type"], stored_as: None),
    kind!(ServiceAccount, "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount",
        short: ["sa"], cat: [], Namespaced, status: false, scale: None,
        key: "/registry/serviceaccounts", def: "io.k8s.api.core.v1.ServiceAccount", gen: None,
        columns: printers::SERVICE_ACCOUNT, fields: [], stored_as: None),
    kind!(Service, "", "v1", "Service", "services", "service", short: ["svc"], cat: ["all"],
        Namespaced, status: true, scale: None, key: "/registry/services/specs",
        def: "io.k8s.api.core.v1.Service", gen: None, columns: printers::SERVICE,
        fields: ["spec.clusterIP", "spec.type"], stored_as: None),
    kind!(Endpoints, "", "v1", "Endpoints", "endpoints", "endpoints", short: ["ep"], cat: [],
        Namespaced, status: false, scale: None, key: "/registry/services/endpoints",
        def: "io.k8s.api.core.v1.Endpoints", gen: None, columns: printers::ENDPOINTS,
        fields: [], stored_as: None),
    kind!(Pod, "", "v1", "Pod", "pods", "pod", short: ["po"], cat: ["all"], Namespaced,
        status: true, scale: None, key: "/registry/pods", def: "io.k8s.api.core.v1.Pod",
        gen: None, columns: printers::POD,
        fields: ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                 "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                 "status.podIPs", "status.nominatedNodeName"],
        stored_as: None),
    kind!(PersistentVolumeClaim, "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims",
        "persistentvolumeclaim", short: ["pvc"], cat: [], Namespaced, status: true, scale: None,
        key: "/registry/persistentvolumeclaims", def: "io.k8s.api.core.v1.PersistentVolumeClaim",
        gen: None, columns: printers::PVC, fields: [], stored_as: None),
    kind!(PersistentVolume, "", "v1", "PersistentVolume", "persistentvolumes",
        "persistentvolume", short: ["pv"], cat: [], Cluster, status: true, scale: None,
        key: "/registry/persistentvolumes", def: "io.k8s.api.core.v1.PersistentVolume",
        gen: None, columns: printers::PV, fields: [], stored_as: None),
    kind!(Node, "", "v1", "Node", "nodes", "node", short: ["no"], cat: [], Cluster,
        status: true, scale: None, key: "/registry/minions", def: "io.k8s.api.core.v1.Node",
        gen: None, columns: printers::NODE, fields: ["spec.unschedulable"], stored_as: None),
    kind!(ReplicationController, "", "v1", "ReplicationController", "replicationcontrollers",
        "replicationcontroller", short: ["rc"], cat: ["all"], Namespaced, status: true,
        scale: APPS_SCALE, key: "/registry/controllers",
        def: "io.k8s.api.core.v1.ReplicationController", gen: Spec,
        columns: printers::REPLICATION_CONTROLLER, fields: ["status.replicas"], stored_as: None),
    kind!(Event, "", "v1", "Event", "events", "event", short: ["ev"], cat: [], Namespaced,
        status: false, scale: None, key: "/registry/events", def: "io.k8s.api.core.v1.Event",
        gen: None, columns: printers::EVENT,
        fields: ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion",
                 "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                 "reportingComponent", "source", "type"],
        stored_as: None),
    kind!(Deployment, "apps", "v1", "Deployment", "deployments", "deployment",
        short: ["deploy"], cat: ["all"], Namespaced, status: true, scale: APPS_SCALE,
        key: "/registry/deployments", def: "io.k8s.api.apps.v1.Deployment", gen: Spec,
        columns: printers::DEPLOYMENT, fields: [], stored_as: None),
    kind!(StatefulSet, "apps", "v1", "StatefulSet", "statefulsets", "statefulset",
        short: ["sts"], cat: ["all"], Namespaced, status: true, scale: APPS_SCALE,
        key: "/registry/statefulsets", def: "io.k8s.api.apps.v1.StatefulSet", gen: Spec,
        columns: printers::STATEFUL_SET, fields: [], stored_as: None),
    kind!(DaemonSet, "apps", "v1", "DaemonSet", "daemonsets", "daemonset", short: ["ds"],
        cat: ["all"], Namespaced, status: true, scale: None, key: "/registry/daemonsets",
        def: "io.k8s.api.apps.v1.DaemonSet", gen: Spec, columns: printers::DAEMON_SET,
        fields: [], stored_as: None),
    kind!(ReplicaSet, "apps", "v1", "ReplicaSet", "replicasets", "replicaset", short: ["rs"],
        cat: ["all"], Namespaced, status: true, scale: APPS_SCALE,
        key: "/registry/replicasets", def: "io.k8s.api.apps.v1.ReplicaSet", gen: Spec,
        columns: printers::REPLICA_SET, fields: ["status.replicas"], stored_as: None),
    kind!(Job, "batch", "v1", "Job", "jobs", "job", short: [], cat: ["all"], Namespaced,
        status: true, scale: None, key: "/registry/jobs", def: "io.k8s.api.batch.v1.Job",
        gen: Spec, columns: printers::JOB, fields: ["status.successful"], stored_as: None),
    kind!(CronJob, "batch", "v1", "CronJob", "cronjobs", "cronjob", short: ["cj"],
        cat: ["all"], Namespaced, status: true, scale: None, key: "/registry/cronjobs",
        def: "io.k8s.api.batch.v1.CronJob", gen: Spec, columns: printers::CRON_JOB,
        fields: [], stored_as: None),
    kind!(Ingress, "networking.k8s.io", "v1", "Ingress", "ingresses", "ingress",
        short: ["ing"], cat: [], Namespaced, status: true, scale: None,
        key: "/registry/ingress", def: "io.k8s.api.networking.v1.Ingress", gen: Spec,
        columns: printers::INGRESS, fields: [], stored_as: None),
    kind!(EndpointSlice, "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices",
        "endpointslice", short: [], cat: [], Namespaced, status: false, scale: None,
        key: "/registry/endpointslices", def: "io.k8s.api.discovery.v1.EndpointSlice",
        gen: NonMetadata, columns: printers::ENDPOINT_SLICE, fields: [], stored_as: None),
    kind!(PodDisruptionBudget, "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets",
        "poddisruptionbudget", short: ["pdb"], cat: [], Namespaced, status: true, scale: None,
        key: "/registry/poddisruptionbudgets", def: "io.k8s.api.policy.v1.PodDisruptionBudget",
        gen: Spec, columns: printers::PDB, fields: [], stored_as: None),
    kind!(ControllerRevision, "apps", "v1", "ControllerRevision", "controllerrevisions",
        "controllerrevision", short: [], cat: [], Namespaced, status: false, scale: None,
        key: "/registry/controllerrevisions", def: "io.k8s.api.apps.v1.ControllerRevision",
        gen: None, columns: printers::CONTROLLER_REVISION, fields: [], stored_as: None),
    kind!(PriorityClass, "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses",
        "priorityclass", short: ["pc"], cat: [], Cluster, status: false, scale: None,
        key: "/registry/priorityclasses", def: "io.k8s.api.scheduling.v1.PriorityClass",
        gen: None, columns: printers::PRIORITY_CLASS, fields: [], stored_as: None),
    kind!(NetworkPolicy, "networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies",
        "networkpolicy", short: ["netpol"], cat: [], Namespaced, status: false, scale: None,
        key: "/registry/networkpolicies", def: "io.k8s.api.networking.v1.NetworkPolicy",
        gen: Spec, columns: printers::NETWORK_POLICY, fields: [], stored_as: None),
    kind!(IngressClass, "networking.k8s.io", "v1", "IngressClass", "ingressclasses",
        "ingressclass", short: [], cat: [], Cluster, status: false, scale: None,
        key: "/registry/ingressclasses", def: "io.k8s.api.networking.v1.IngressClass",
        gen: Spec, columns: printers::INGRESS_CLASS, fields: [], stored_as: None),
    kind!(HorizontalPodAutoscaler, "autoscaling", "v2", "HorizontalPodAutoscaler",
        "horizontalpodautoscalers", "horizontalpodautoscaler", short: ["hpa"], cat: ["all"],
        Namespaced, status: true, scale: None, key: "/registry/horizontalpodautoscalers",
        def: "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", gen: None,
        columns: printers::HPA, fields: [], stored_as: None),
    kind!(HorizontalPodAutoscalerV1, "autoscaling", "v1", "HorizontalPodAutoscaler",
        "horizontalpodautoscalers", "horizontalpodautoscaler", short: ["hpa"], cat: ["all"],
        Namespaced, status: true, scale: None, key: "/registry/horizontalpodautoscalers",
        def: "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", gen: None,
        columns: printers::HPA, fields: [], stored_as: Some("horizontalpodautoscalers")),
    kind!(ResourceQuota, "", "v1", "ResourceQuota", "resourcequotas", "resourcequota",
        short: ["quota"], cat: [], Namespaced, status: true, scale: None,
        key: "/registry/resourcequotas", def: "io.k8s.api.core.v1.ResourceQuota", gen: None,
        columns: printers::RESOURCE_QUOTA, fields: [], stored_as: None),
    kind!(LimitRange, "", "v1", "LimitRange", "limitranges", "limitrange", short: ["limits"],
        cat: [], Namespaced, status: false, scale: None, key: "/registry/limitranges",
        def: "io.k8s.api.core.v1.LimitRange", gen: None, columns: printers::DEFAULT_TABLE,
        fields: [], stored_as: None),
    kind!(CSIDriver, "storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver",
        short: [], cat: [], Cluster, status: false, scale: None,
        key: "/registry/csidrivers", def: "io.k8s.api.storage.v1.CSIDriver", gen: None,
        columns: printers::CSI_DRIVER, fields: [], stored_as: None),
    kind!(PodTemplate, "", "v1", "PodTemplate", "podtemplates", "podtemplate", short: [],
        cat: [], Namespaced, status: false, scale: None, key: "/registry/podtemplates",
        def: "io.k8s.api.core.v1.PodTemplate", gen: None, columns: printers::POD_TEMPLATE,
        fields: [], stored_as: None),
    kind!(CertificateSigningRequest, "certificates.k8s.io", "v1", "CertificateSigningRequest",
        "certificatesigningrequests", "certificatesigningrequest", short: ["csr"], cat: [],
        Cluster, status: true, scale: None, key: "/registry/certificatesigningrequests",
        def: "io.k8s.api.certificates.v1.CertificateSigningRequest", gen: None,
        columns: printers::CERTIFICATE_SIGNING_REQUEST, fields: ["spec.signerName"],
        stored_as: None, extra: ["approval"]),
    kind!(APIService, "apiregistration.k8s.io", "v1", "APIService", "apiservices", "apiservice",
        short: [], cat: ["api-extensions"], Cluster, status: true, scale: None,
        key: "/registry/apiregistration.k8s.io/apiservices",
        def: "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", gen: None,
        columns: printers::API_SERVICE, fields: [], stored_as: None),
    kind!(RuntimeClass, "node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", "runtimeclass",
        short: [], cat: [], Cluster, status: false, scale: None,
        key: "/registry/runtimeclasses", def: "io.k8s.api.node.v1.RuntimeClass", gen: None,
        columns: printers::RUNTIME_CLASS, fields: [], stored_as: None),
    kind!(StorageClass, "storage.k8s.io", "v1", "StorageClass", "storageclasses",
        "storageclass", short: ["sc"], cat: [], Cluster, status: false, scale: None,
        key: "/registry/storageclasses", def: "io.k8s.api.storage.v1.StorageClass", gen: None,
        columns: printers::STORAGE_CLASS, fields: [], stored_as: None),
    kind!(Lease, "coordination.k8s.io", "v1", "Lease", "leases", "lease", short: [], cat: [],
        Namespaced, status: false, scale: None, key: "/registry/leases",
        def: "io.k8s.api.coordination.v1.Lease", gen: None, columns: printers::LEASE,
        fields: [], stored_as: None),
    kind!(EventsV1Event, "events.k8s.io", "v1", "Event", "events", "event", short: ["ev"],
        cat: [], Namespaced, status: false, scale: None, key: "/registry/events",
        def: "io.k8s.api.events.v1.Event", gen: None, columns: printers::EVENT,
        fields: ["regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                 "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
                 "reason", "reportingController", "deprecatedSource", "type"],
        stored_as: Some("events")),
    kind!(Role, "rbac.authorization.k8s.io", "v1", "Role", "roles", "role", short: [],
        cat: [], Namespaced, status: false, scale: None, key: "/registry/roles",
        def: "io.k8s.api.rbac.v1.Role", gen: None, columns: printers::ROLE, fields: [],
        stored_as: None),
    kind!(ClusterRole, "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles",
        "clusterrole", short: [], cat: [], Cluster, status: false, scale: None,
        key: "/registry/clusterroles", def: "io.k8s.api.rbac.v1.ClusterRole", gen: None,
        columns: printers::ROLE, fields: [], stored_as: None),
    kind!(RoleBinding, "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings",
        "rolebinding", short: [], cat: [], Namespaced, status: false, scale: None,
        key: "/registry/rolebindings", def: "io.k8s.api.rbac.v1.RoleBinding", gen: None,
        columns: printers::ROLE_BINDING, fields: [], stored_as: None),
    kind!(ClusterRoleBinding, "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding",
        "clusterrolebindings", "clusterrolebinding", short: [], cat: [], Cluster,
        status: false, scale: None, key: "/registry/clusterrolebindings",
        def: "io.k8s.api.rbac.v1.ClusterRoleBinding", gen: None,
        columns: printers::CLUSTER_ROLE_BINDING, fields: [], stored_as: None),
    kind!(ValidatingWebhookConfiguration, "admissionregistration.k8s.io", "v1",
        "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
        "validatingwebhookconfiguration", short: [], cat: ["api-extensions"], Cluster,
        status: false, scale: None, key: "/registry/validatingwebhookconfigurations",
        def: "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        gen: NonMetadata, columns: printers::WEBHOOK_CONFIGURATION, fields: [], stored_as: None),
    kind!(MutatingWebhookConfiguration, "admissionregistration.k8s.io", "v1",
        "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration", short: [], cat: ["api-extensions"], Cluster,
        status: false, scale: None, key: "/registry/mutatingwebhookconfigurations",
        def: "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        gen: NonMetadata, columns: printers::WEBHOOK_CONFIGURATION, fields: [], stored_as: None),
    kind!(ValidatingAdmissionPolicy, "admissionregistration.k8s.io", "v1",
        "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
        "validatingadmissionpolicy", short: [], cat: ["api-extensions"], Cluster,
        status: true, scale: None, key: "/registry/validatingadmissionpolicies",
        def: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        gen: Spec, columns: printers::ADMISSION_POLICY, fields: [], stored_as: None),
    kind!(ValidatingAdmissionPolicyBinding, "admissionregistration.k8s.io", "v1",
        "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding", short: [], cat: ["api-extensions"], Cluster,
        status: false, scale: None, key: "/registry/validatingadmissionpolicybindings",
        def: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        gen: Spec, columns: printers::ADMISSION_POLICY_BINDING, fields: [], stored_as: None),
    kind!(MutatingAdmissionPolicy, "admissionregistration.k8s.io", "v1beta1",
        "MutatingAdmissionPolicy", "mutatingadmissionpolicies",
        "mutatingadmissionpolicy", short: [], cat: ["api-extensions"], Cluster,
        status: false, scale: None, key: "/registry/mutatingadmissionpolicies",
        def: "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicy",
        gen: Spec, columns: printers::MUTATING_ADMISSION_POLICY, fields: [], stored_as: None),
    kind!(MutatingAdmissionPolicyBinding, "admissionregistration.k8s.io", "v1beta1",
        "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings",
        "mutatingadmissionpolicybinding", short: [], cat: ["api-extensions"], Cluster,
        status: false, scale: None, key: "/registry/mutatingadmissionpolicybindings",
        def: "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicyBinding",
        gen: Spec, columns: printers::ADMISSION_POLICY_BINDING, fields: [], stored_as: None),
];

/// The kind served at `group`/`plural` (any version here is `v1`).
pub fn lookup(group: &str, plural: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.plural == plural)
}

/// The kind served at `group`/`version`/`plural`.
pub fn lookup_version(group: &str, version: &str, plural: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.plural == plural)
}

/// A stored object as the kind `kind` serves it: stored objects of a kind kept in another
/// version's or group's shape (`stored_as`) are converted (events.k8s.io Events from core
/// Events; `autoscaling/v1` `HorizontalPodAutoscalers` from v2, after v2's defaults, as upstream
/// decodes the storage version first).
pub fn from_stored(kind: &Kind, obj: &serde_json::Value) -> serde_json::Value {
    match kind.id {
        KindId::EventsV1Event => events::from_core(obj),
        KindId::HorizontalPodAutoscalerV1 => {
            let mut v2 = obj.clone();
            get(KindId::HorizontalPodAutoscaler).apply_defaults(&mut v2);
            hpa::to_v1(&v2)
        }
        _ => obj.clone(),
    }
}

/// An object of kind `kind` in the shape it is stored in (the inverse of [`from_stored`]).
pub fn to_stored(kind: &Kind, obj: &serde_json::Value) -> serde_json::Value {
    match kind.id {
        KindId::EventsV1Event => events::to_core(obj),
        KindId::HorizontalPodAutoscalerV1 => hpa::to_v2(obj),
        _ => obj.clone(),
    }
}

/// The kind with this group and Kind.
pub fn by_kind(group: &str, kind: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}

/// The row for one kind.
pub fn get(id: KindId) -> &'static Kind {
    KINDS
        .iter()
        .find(|k| k.id == id)
        .unwrap_or_else(|| unreachable!("every KindId has a row"))
}

impl Kind {
    /// `<group>/<version>`, or `v1` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// Whether `field` may be used in a field selector on this kind.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || (field == "metadata.namespace" && self.namespaced())
            || self.field_labels.contains(&field)
    }

    /// The `autoscaling/v1` Scale of an object with a `/scale` subresource: spec.replicas,
    /// status.replicas and the selector's string form, as upstream's scale REST builds it.
    pub fn scale_of(&self, obj: &serde_json::Value) -> Option<serde_json::Value> {
        self.scale?;
        let m = obj.get("metadata").cloned().unwrap_or_default();
        // A ReplicationController's selector is a label set, not a `LabelSelector`.
        let selector = obj.pointer("/spec/selector");
        let selector = match self.id {
            KindId::ReplicationController => {
                selector.map(|s| serde_json::json!({ "matchLabels": s }))
            }
            _ => selector.cloned(),
        };
        let selector = selector
            .as_ref()
            .and_then(|s| crd_core::labels::Selector::from_label_selector_json(s).ok())
            .map(|s| s.to_string())
            .unwrap_or_default();
        let mut meta = serde_json::Map::new();
        for k in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = m.get(k) {
                meta.insert(k.into(), v.clone());
            }
        }
        Some(serde_json::json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": meta,
            "spec": {"replicas": obj.pointer("/spec/replicas").and_then(serde_json::Value::as_i64).unwrap_or(0)},
            "status": {
                "replicas": obj.pointer("/status/replicas").and_then(serde_json::Value::as_i64).unwrap_or(0),
                "selector": selector,
            },
        }))
    }
}

impl Kind {
    /// Applies a `/scale` write (an `autoscaling/v1` Scale) to the object: validates
    /// `spec.replicas` as upstream's `ValidateScale` does and sets the object's
    /// `spec.replicas`. Returns the errors (the object is unchanged when there are any).
    pub fn apply_scale(
        &self,
        obj: &mut serde_json::Value,
        scale: &serde_json::Value,
    ) -> crd_core::ErrorList {
        let mut errs = crd_core::ErrorList::new();
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            errs.push(crd_core::FieldError::invalid(
                &crd_core::Path::new("spec").child("replicas"),
                replicas,
                "must be greater than or equal to 0",
            ));
            return errs;
        }
        if let Some(spec) = obj
            .as_object_mut()
            .map(|m| m.entry("spec").or_insert_with(|| serde_json::json!({})))
            .and_then(serde_json::Value::as_object_mut)
        {
            spec.insert("replicas".into(), serde_json::json!(replicas));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_every_kind_once() {
        let ids = [
            KindId::ConfigMap,
            KindId::Secret,
            KindId::ServiceAccount,
            KindId::Service,
            KindId::Endpoints,
            KindId::Pod,
            KindId::PersistentVolumeClaim,
            KindId::PersistentVolume,
            KindId::Node,
            KindId::ReplicationController,
            KindId::Event,
            KindId::Deployment,
            KindId::StatefulSet,
            KindId::DaemonSet,
            KindId::ReplicaSet,
            KindId::Job,
            KindId::CronJob,
            KindId::Ingress,
            KindId::EndpointSlice,
            KindId::PodDisruptionBudget,
            KindId::ControllerRevision,
            KindId::PriorityClass,
            KindId::NetworkPolicy,
            KindId::IngressClass,
            KindId::HorizontalPodAutoscaler,
            KindId::HorizontalPodAutoscalerV1,
            KindId::ResourceQuota,
            KindId::LimitRange,
            KindId::StorageClass,
            KindId::RuntimeClass,
            KindId::PodTemplate,
            KindId::CertificateSigningRequest,
            KindId::APIService,
            KindId::CSIDriver,
            KindId::Lease,
            KindId::EventsV1Event,
            KindId::Role,
            KindId::ClusterRole,
            KindId::RoleBinding,
            KindId::ClusterRoleBinding,
            KindId::ValidatingWebhookConfiguration,
            KindId::MutatingWebhookConfiguration,
            KindId::ValidatingAdmissionPolicy,
            KindId::ValidatingAdmissionPolicyBinding,
            KindId::MutatingAdmissionPolicy,
            KindId::MutatingAdmissionPolicyBinding,
        ];
        assert_eq!(KINDS.len(), ids.len());
        for id in ids {
            assert_eq!(KINDS.iter().filter(|k| k.id == id).count(), 1, "{id:?}");
        }
    }

    #[test]
    fn names_match_upstream_discovery() {
        // (group, plural, kind, short names, categories, status, scale, key root)
        type Row<'a> = (
            &'a str,
            &'a str,
            &'a str,
            &'a [&'a str],
            &'a [&'a str],
            bool,
            bool,
            &'a str,
        );
        let cases: &[Row] = &[
            (
                "",
                "configmaps",
                "ConfigMap",
                &["cm"],
                &[],
                false,
                false,
                "/registry/configmaps",
            ),
            (
                "storage.k8s.io",
                "csidrivers",
                "CSIDriver",
                &[],
                &[],
                false,
                false,
                "/registry/csidrivers",
            ),
            (
                "",
                "podtemplates",
                "PodTemplate",
                &[],
                &[],
                false,
                false,
                "/registry/podtemplates",
            ),
            (
                "certificates.k8s.io",
                "certificatesigningrequests",
                "CertificateSigningRequest",
                &["csr"],
                &[],
                true,
                false,
                "/registry/certificatesigningrequests",
            ),
            (
                "apiregistration.k8s.io",
                "apiservices",
                "APIService",
                &[],
                &["api-extensions"],
                true,
                false,
                "/registry/apiregistration.k8s.io/apiservices",
            ),
            (
                "node.k8s.io",
                "runtimeclasses",
                "RuntimeClass",
                &[],
                &[],
                false,
                false,
                "/registry/runtimeclasses",
            ),
            (
                "",
                "nodes",
                "Node",
                &["no"],
                &[],
                true,
                false,
                "/registry/minions",
            ),
            (
                "",
                "secrets",
                "Secret",
                &[],
                &[],
                false,
                false,
                "/registry/secrets",
            ),
            (
                "",
                "serviceaccounts",
                "ServiceAccount",
                &["sa"],
                &[],
                false,
                false,
                "/registry/serviceaccounts",
            ),
            (
                "",
                "services",
                "Service",
                &["svc"],
                &["all"],
                true,
                false,
                "/registry/services/specs",
            ),
            (
                "",
                "endpoints",
                "Endpoints",
                &["ep"],
                &[],
                false,
                false,
                "/registry/services/endpoints",
            ),
            (
                "",
                "pods",
                "Pod",
                &["po"],
                &["all"],
                true,
                false,
                "/registry/pods",
            ),
            (
                "",
                "persistentvolumeclaims",
                "PersistentVolumeClaim",
                &["pvc"],
                &[],
                true,
                false,
                "/registry/persistentvolumeclaims",
            ),
            (
                "",
                "persistentvolumes",
                "PersistentVolume",
                &["pv"],
                &[],
                true,
                false,
                "/registry/persistentvolumes",
            ),
            (
                "",
                "replicationcontrollers",
                "ReplicationController",
                &["rc"],
                &["all"],
                true,
                true,
                "/registry/controllers",
            ),
            (
                "",
                "events",
                "Event",
                &["ev"],
                &[],
                false,
                false,
                "/registry/events",
            ),
            (
                "apps",
                "deployments",
                "Deployment",
                &["deploy"],
                &["all"],
                true,
                true,
                "/registry/deployments",
            ),
            (
                "apps",
                "statefulsets",
                "StatefulSet",
                &["sts"],
                &["all"],
                true,
                true,
                "/registry/statefulsets",
            ),
            (
                "apps",
                "daemonsets",
                "DaemonSet",
                &["ds"],
                &["all"],
                true,
                false,
                "/registry/daemonsets",
            ),
            (
                "apps",
                "replicasets",
                "ReplicaSet",
                &["rs"],
                &["all"],
                true,
                true,
                "/registry/replicasets",
            ),
            (
                "batch",
                "jobs",
                "Job",
                &[],
                &["all"],
                true,
                false,
                "/registry/jobs",
            ),
            (
                "batch",
                "cronjobs",
                "CronJob",
                &["cj"],
                &["all"],
                true,
                false,
                "/registry/cronjobs",
            ),
            (
                "networking.k8s.io",
                "ingresses",
                "Ingress",
                &["ing"],
                &[],
                true,
                false,
                "/registry/ingress",
            ),
            (
                "discovery.k8s.io",
                "endpointslices",
                "EndpointSlice",
                &[],
                &[],
                false,
                false,
                "/registry/endpointslices",
            ),
            (
                "policy",
                "poddisruptionbudgets",
                "PodDisruptionBudget",
                &["pdb"],
                &[],
                true,
                false,
                "/registry/poddisruptionbudgets",
            ),
            (
                "coordination.k8s.io",
                "leases",
                "Lease",
                &[],
                &[],
                false,
                false,
                "/registry/leases",
            ),
            (
                "events.k8s.io",
                "events",
                "Event",
                &["ev"],
                &[],
                false,
                false,
                "/registry/events",
            ),
            (
                "rbac.authorization.k8s.io",
                "roles",
                "Role",
                &[],
                &[],
                false,
                false,
                "/registry/roles",
            ),
            (
                "rbac.authorization.k8s.io",
                "clusterroles",
                "ClusterRole",
                &[],
                &[],
                false,
                false,
                "/registry/clusterroles",
            ),
            (
                "rbac.authorization.k8s.io",
                "rolebindings",
                "RoleBinding",
                &[],
                &[],
                false,
                false,
                "/registry/rolebindings",
            ),
            (
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                "ClusterRoleBinding",
                &[],
                &[],
                false,
                false,
                "/registry/clusterrolebindings",
            ),
        ];
        for (group, plural, kind, short, cat, status, scale, key) in cases {
            let k = lookup(group, plural).unwrap_or_else(|| panic!("{group}/{plural}"));
            assert_eq!(k.kind, *kind);
            assert_eq!(k.list_kind, format!("{kind}List"));
            assert_eq!(k.short_names, *short, "{plural}");
            assert_eq!(k.categories, *cat, "{plural}");
            assert_eq!(k.status, *status, "{plural}");
            assert_eq!(k.scale.is_some(), *scale, "{plural}");
            assert_eq!(k.key_root, *key, "{plural}");
            let cluster = plural.starts_with("cluster")
                || matches!(
                    *plural,
                    "persistentvolumes"
                        | "nodes"
                        | "runtimeclasses"
                        | "csidrivers"
                        | "certificatesigningrequests"
                        | "apiservices"
                );
            assert_eq!(k.namespaced(), !cluster, "{plural}");
            assert_eq!(by_kind(group, kind).map(|k| k.plural), Some(*plural));
        }
        assert_eq!(get(KindId::Deployment).api_version(), "apps/v1");
        assert_eq!(get(KindId::Pod).api_version(), "v1");
    }

    #[test]
    fn odd_inputs_never_panic() {
        let now: jiff::Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let odd = [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!("x"),
            serde_json::json!({}),
            serde_json::json!({"metadata": "x", "spec": [], "status": 3, "data": "x", "stringData": [1]}),
            serde_json::json!({"metadata": {"name": 5, "creationTimestamp": "nope", "finalizers": "x"},
                "spec": {"containers": "x", "template": [], "selector": "x", "ports": {"a": 1},
                         "replicas": "3", "rules": [null, 1], "jobTemplate": 1},
                "status": {"containerStatuses": [null, {"state": "x"}], "conditions": "x"},
                "subsets": [{"addresses": "x"}], "endpoints": [1], "series": "x", "regarding": 1}),
        ];
        for k in KINDS {
            for o in &odd {
                let mut obj = o.clone();
                k.apply_defaults(&mut obj);
                k.prepare_create(&mut obj);
                let _ = k.validate(&obj, None);
                let _ = k.validate(&obj, Some(o));
                let mut upd = obj.clone();
                k.prepare_update(&mut upd, o, false);
                k.prepare_update(&mut upd, o, true);
                for sub in k.extra_subresources {
                    k.prepare_subresource_update(&mut upd, o, sub);
                    let _ = k.validate_subresource_update(&upd, o, sub);
                }
                let none = std::collections::BTreeMap::new();
                k.record_requester(
                    &mut obj,
                    &certificates::Requester {
                        name: "u",
                        uid: "",
                        groups: &[],
                        extra: &none,
                    },
                );
                assert_eq!(k.cells(o, now).len(), k.columns.len(), "{}", k.kind);
                let _ = k.row_conditions(o);
                for f in k.field_labels {
                    assert!(k.field_value(o, f).is_some());
                }
                let _ = k.scale_of(o);
                let _ = k.apply_scale(&mut obj, o);
                let _ = events::to_core(o);
                let _ = events::from_core(o);
            }
        }
    }

    #[test]
    fn scale_of_deployment() {
        let d = serde_json::json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "fe"}}},
            "status": {"replicas": 2}});
        let s = get(KindId::Deployment).scale_of(&d);
        assert_eq!(
            s,
            Some(
                serde_json::json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "web", "namespace": "ns", "uid": "u"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web,tier=fe"}})
            )
        );
        assert_eq!(get(KindId::DaemonSet).scale_of(&d), None);
        let mut d2 = d.clone();
        let errs = get(KindId::Deployment)
            .apply_scale(&mut d2, &serde_json::json!({"spec": {"replicas": 5}}));
        assert!(errs.is_empty());
        assert_eq!(d2["spec"]["replicas"], serde_json::json!(5));
        let errs = get(KindId::Deployment)
            .apply_scale(&mut d2, &serde_json::json!({"spec": {"replicas": -1}}));
        assert_eq!(
            errs.aggregate(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(d2["spec"]["replicas"], serde_json::json!(5));
    }
}
