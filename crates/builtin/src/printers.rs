//! Server-side printer columns and row cells of the built-in kinds, as kube-apiserver's Table
//! output has them (`pkg/printers/internalversion/printers.go`, printed with `Wide: true` as
//! the server's table convertor does).
//!
//! Ages: Go printers put translated durations (`"5m"`, `"<unknown>"`) in `string` columns, so
//! [`Kind::cells`] takes the current time and renders them the same way
//! ([`human_duration`]); a server renders these rows as they are, without re-typing cells.
//! The Name column is part of [`Kind::columns`] and of every row (for Events it is the last,
//! wide-only column, as upstream).

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::{Kind, KindId, schema};

/// Where a column's description comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Description {
    /// A literal text.
    Text(&'static str),
    /// A field's documentation (upstream uses the Go types' `SwaggerDoc()`, the same text the
    /// OpenAPI definition carries): `(definition, field)`.
    Field(&'static str, &'static str),
}

/// One Table column definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header ("Name", "Ready", ...; kubectl upper-cases it).
    pub name: &'static str,
    /// `string`, `integer`, `boolean`, ...
    pub kind: &'static str,
    /// `name` for the Name column, else "".
    pub format: &'static str,
    /// Where the description comes from.
    pub description: Description,
    /// 0 for default output, 1 for `-o wide`.
    pub priority: i32,
}

impl Column {
    /// The description text.
    pub fn description(&self) -> String {
        match self.description {
            Description::Text(t) => t.to_string(),
            Description::Field(def, field) => schema::field_description(def, field),
        }
    }

    /// The `meta.k8s.io/v1` `TableColumnDefinition`.
    pub fn definition(&self) -> Value {
        json!({"name": self.name, "type": self.kind, "format": self.format,
               "description": self.description(), "priority": self.priority})
    }
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const fn col(name: &'static str, kind: &'static str, d: Description, priority: i32) -> Column {
    Column {
        name,
        kind,
        format: "",
        description: d,
        priority,
    }
}
const fn text(name: &'static str, kind: &'static str, t: &'static str, priority: i32) -> Column {
    col(name, kind, Description::Text(t), priority)
}
const fn doc(
    name: &'static str,
    kind: &'static str,
    def: &'static str,
    field: &'static str,
    priority: i32,
) -> Column {
    col(name, kind, Description::Field(def, field), priority)
}

/// `column` shown without `-o wide` (a `PodTemplate`'s containers and images, wide-only for
/// workloads).
const fn in_default_output(column: Column) -> Column {
    Column {
        priority: 0,
        ..column
    }
}

const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    description: Description::Field(META, "name"),
    priority: 0,
};
const AGE: Column = doc("Age", "string", META, "creationTimestamp", 0);
const CONTAINERS: Column = text(
    "Containers",
    "string",
    "Names of each container in the template.",
    1,
);
const IMAGES: Column = text(
    "Images",
    "string",
    "Images referenced by each container in the template.",
    1,
);

/// `ConfigMap`: NAME DATA AGE.
pub const CONFIG_MAP: &[Column] = &[
    NAME,
    doc("Data", "string", "io.k8s.api.core.v1.ConfigMap", "data", 0),
    AGE,
];
/// Secret: NAME TYPE DATA AGE.
pub const SECRET: &[Column] = &[
    NAME,
    doc("Type", "string", "io.k8s.api.core.v1.Secret", "type", 0),
    doc("Data", "string", "io.k8s.api.core.v1.Secret", "data", 0),
    AGE,
];
/// `ServiceAccount`: NAME SECRETS AGE.
pub const SERVICE_ACCOUNT: &[Column] = &[
    NAME,
    doc(
        "Secrets",
        "string",
        "io.k8s.api.core.v1.ServiceAccount",
        "secrets",
        0,
    ),
    AGE,
];
/// Service: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE (SELECTOR).
pub const SERVICE: &[Column] = &[
    NAME,
    doc(
        "Type",
        "string",
        "io.k8s.api.core.v1.ServiceSpec",
        "type",
        0,
    ),
    doc(
        "Cluster-IP",
        "string",
        "io.k8s.api.core.v1.ServiceSpec",
        "clusterIP",
        0,
    ),
    doc(
        "External-IP",
        "string",
        "io.k8s.api.core.v1.ServiceSpec",
        "externalIPs",
        0,
    ),
    doc(
        "Port(s)",
        "string",
        "io.k8s.api.core.v1.ServiceSpec",
        "ports",
        0,
    ),
    AGE,
    doc(
        "Selector",
        "string",
        "io.k8s.api.core.v1.ServiceSpec",
        "selector",
        1,
    ),
];
/// Endpoints: NAME ENDPOINTS AGE.
pub const ENDPOINTS: &[Column] = &[
    NAME,
    doc(
        "Endpoints",
        "string",
        "io.k8s.api.core.v1.Endpoints",
        "subsets",
        0,
    ),
    AGE,
];
/// Pod: NAME READY STATUS RESTARTS AGE (IP NODE NOMINATED NODE READINESS GATES).
pub const POD: &[Column] = &[
    NAME,
    text(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
        0,
    ),
    text(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
        0,
    ),
    text(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        0,
    ),
    AGE,
    doc("IP", "string", "io.k8s.api.core.v1.PodStatus", "podIP", 1),
    doc(
        "Node",
        "string",
        "io.k8s.api.core.v1.PodSpec",
        "nodeName",
        1,
    ),
    doc(
        "Nominated Node",
        "string",
        "io.k8s.api.core.v1.PodStatus",
        "nominatedNodeName",
        1,
    ),
    doc(
        "Readiness Gates",
        "string",
        "io.k8s.api.core.v1.PodSpec",
        "readinessGates",
        1,
    ),
];
/// `PersistentVolumeClaim`.
pub const PVC: &[Column] = &[
    NAME,
    doc(
        "Status",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "phase",
        0,
    ),
    doc(
        "Volume",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        "volumeName",
        0,
    ),
    doc(
        "Capacity",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "capacity",
        0,
    ),
    doc(
        "Access Modes",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "accessModes",
        0,
    ),
    text("StorageClass", "string", "StorageClass of the pvc", 0),
    text(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
        0,
    ),
    AGE,
    doc(
        "VolumeMode",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        "volumeMode",
        1,
    ),
];
/// `PersistentVolume`: NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS
/// VOLUMEATTRIBUTESCLASS REASON AGE (VOLUMEMODE).
pub const PV: &[Column] = &[
    NAME,
    doc(
        "Capacity",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        "capacity",
        0,
    ),
    doc(
        "Access Modes",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        "accessModes",
        0,
    ),
    doc(
        "Reclaim Policy",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        "persistentVolumeReclaimPolicy",
        0,
    ),
    doc(
        "Status",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeStatus",
        "phase",
        0,
    ),
    doc(
        "Claim",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        "claimRef",
        0,
    ),
    text("StorageClass", "string", "StorageClass of the pv", 0),
    text(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
        0,
    ),
    doc(
        "Reason",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeStatus",
        "reason",
        0,
    ),
    AGE,
    doc(
        "VolumeMode",
        "string",
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        "volumeMode",
        1,
    ),
];
/// `ReplicationController`: NAME DESIRED CURRENT READY AGE (CONTAINERS IMAGES SELECTOR).
pub const REPLICATION_CONTROLLER: &[Column] = &[
    NAME,
    doc(
        "Desired",
        "integer",
        "io.k8s.api.core.v1.ReplicationControllerSpec",
        "replicas",
        0,
    ),
    doc(
        "Current",
        "integer",
        "io.k8s.api.core.v1.ReplicationControllerStatus",
        "replicas",
        0,
    ),
    doc(
        "Ready",
        "integer",
        "io.k8s.api.core.v1.ReplicationControllerStatus",
        "readyReplicas",
        0,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    doc(
        "Selector",
        "string",
        "io.k8s.api.core.v1.ReplicationControllerSpec",
        "selector",
        1,
    ),
];
/// Event (core/v1 and events.k8s.io/v1): LAST SEEN TYPE REASON OBJECT MESSAGE, Name last.
pub const EVENT: &[Column] = &[
    doc(
        "Last Seen",
        "string",
        "io.k8s.api.core.v1.Event",
        "lastTimestamp",
        0,
    ),
    doc("Type", "string", "io.k8s.api.core.v1.Event", "type", 0),
    doc("Reason", "string", "io.k8s.api.core.v1.Event", "reason", 0),
    doc(
        "Object",
        "string",
        "io.k8s.api.core.v1.Event",
        "involvedObject",
        0,
    ),
    doc(
        "Subobject",
        "string",
        "io.k8s.api.core.v1.ObjectReference",
        "fieldPath",
        1,
    ),
    doc("Source", "string", "io.k8s.api.core.v1.Event", "source", 1),
    doc(
        "Message",
        "string",
        "io.k8s.api.core.v1.Event",
        "message",
        0,
    ),
    doc(
        "First Seen",
        "string",
        "io.k8s.api.core.v1.Event",
        "firstTimestamp",
        1,
    ),
    doc("Count", "string", "io.k8s.api.core.v1.Event", "count", 1),
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: Description::Field(META, "name"),
        priority: 1,
    },
];
/// Deployment: NAME READY UP-TO-DATE AVAILABLE AGE (CONTAINERS IMAGES SELECTOR).
pub const DEPLOYMENT: &[Column] = &[
    NAME,
    text("Ready", "string", "Number of the pod with ready state", 0),
    doc(
        "Up-to-date",
        "string",
        "io.k8s.api.apps.v1.DeploymentStatus",
        "updatedReplicas",
        0,
    ),
    doc(
        "Available",
        "string",
        "io.k8s.api.apps.v1.DeploymentStatus",
        "availableReplicas",
        0,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    doc(
        "Selector",
        "string",
        "io.k8s.api.apps.v1.DeploymentSpec",
        "selector",
        1,
    ),
];
/// `StatefulSet`: NAME READY AGE (CONTAINERS IMAGES).
pub const STATEFUL_SET: &[Column] = &[
    NAME,
    text("Ready", "string", "Number of the pod with ready state", 0),
    AGE,
    CONTAINERS,
    IMAGES,
];
/// `DaemonSet`: NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE (...).
pub const DAEMON_SET: &[Column] = &[
    NAME,
    doc(
        "Desired",
        "integer",
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "desiredNumberScheduled",
        0,
    ),
    doc(
        "Current",
        "integer",
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "currentNumberScheduled",
        0,
    ),
    doc(
        "Ready",
        "integer",
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "numberReady",
        0,
    ),
    doc(
        "Up-to-date",
        "integer",
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "updatedNumberScheduled",
        0,
    ),
    doc(
        "Available",
        "integer",
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "numberAvailable",
        0,
    ),
    doc(
        "Node Selector",
        "string",
        "io.k8s.api.core.v1.PodSpec",
        "nodeSelector",
        0,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    doc(
        "Selector",
        "string",
        "io.k8s.api.apps.v1.DaemonSetSpec",
        "selector",
        1,
    ),
];
/// `ReplicaSet`: NAME DESIRED CURRENT READY AGE (CONTAINERS IMAGES SELECTOR).
pub const REPLICA_SET: &[Column] = &[
    NAME,
    doc(
        "Desired",
        "integer",
        "io.k8s.api.apps.v1.ReplicaSetSpec",
        "replicas",
        0,
    ),
    doc(
        "Current",
        "integer",
        "io.k8s.api.apps.v1.ReplicaSetStatus",
        "replicas",
        0,
    ),
    doc(
        "Ready",
        "integer",
        "io.k8s.api.apps.v1.ReplicaSetStatus",
        "readyReplicas",
        0,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    doc(
        "Selector",
        "string",
        "io.k8s.api.apps.v1.ReplicaSetSpec",
        "selector",
        1,
    ),
];
/// Job: NAME STATUS COMPLETIONS DURATION AGE (CONTAINERS IMAGES SELECTOR).
pub const JOB: &[Column] = &[
    NAME,
    text("Status", "string", "Status of the job.", 0),
    doc(
        "Completions",
        "string",
        "io.k8s.api.batch.v1.JobStatus",
        "succeeded",
        0,
    ),
    text(
        "Duration",
        "string",
        "Time required to complete the job.",
        0,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    doc(
        "Selector",
        "string",
        "io.k8s.api.batch.v1.JobSpec",
        "selector",
        1,
    ),
];
/// `CronJob`: NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE (...).
pub const CRON_JOB: &[Column] = &[
    NAME,
    doc(
        "Schedule",
        "string",
        "io.k8s.api.batch.v1.CronJobSpec",
        "schedule",
        0,
    ),
    doc(
        "Timezone",
        "string",
        "io.k8s.api.batch.v1.CronJobSpec",
        "timeZone",
        0,
    ),
    doc(
        "Suspend",
        "boolean",
        "io.k8s.api.batch.v1.CronJobSpec",
        "suspend",
        0,
    ),
    doc(
        "Active",
        "integer",
        "io.k8s.api.batch.v1.CronJobStatus",
        "active",
        0,
    ),
    doc(
        "Last Schedule",
        "string",
        "io.k8s.api.batch.v1.CronJobStatus",
        "lastScheduleTime",
        0,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    doc(
        "Selector",
        "string",
        "io.k8s.api.batch.v1.JobSpec",
        "selector",
        1,
    ),
];
/// Ingress: NAME CLASS HOSTS ADDRESS PORTS AGE.
pub const INGRESS: &[Column] = &[
    NAME,
    text(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
        0,
    ),
    text(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
        0,
    ),
    text(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
        0,
    ),
    text(
        "Ports",
        "string",
        "Ports of TLS configurations that open",
        0,
    ),
    AGE,
];
/// `EndpointSlice`: NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
pub const ENDPOINT_SLICE: &[Column] = &[
    NAME,
    doc(
        "AddressType",
        "string",
        "io.k8s.api.discovery.v1.EndpointSlice",
        "addressType",
        0,
    ),
    doc(
        "Ports",
        "string",
        "io.k8s.api.discovery.v1.EndpointSlice",
        "ports",
        0,
    ),
    doc(
        "Endpoints",
        "string",
        "io.k8s.api.discovery.v1.EndpointSlice",
        "endpoints",
        0,
    ),
    AGE,
];
/// `PodDisruptionBudget`: NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE.
pub const PDB: &[Column] = &[
    NAME,
    text(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
        0,
    ),
    text(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
        0,
    ),
    text(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
        0,
    ),
    AGE,
];
/// `NetworkPolicy`: NAME POD-SELECTOR AGE.
pub const NETWORK_POLICY: &[Column] = &[
    NAME,
    doc(
        "Pod-Selector",
        "string",
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        "podSelector",
        0,
    ),
    AGE,
];
/// `IngressClass`: NAME CONTROLLER PARAMETERS AGE.
pub const INGRESS_CLASS: &[Column] = &[
    NAME,
    text(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
        0,
    ),
    text(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
        0,
    ),
    AGE,
];
/// `HorizontalPodAutoscaler`: NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE.
pub const HPA: &[Column] = &[
    NAME,
    doc("Reference", "string", HPA_SPEC, "scaleTargetRef", 0),
    doc("Targets", "string", HPA_SPEC, "metrics", 0),
    doc("MinPods", "string", HPA_SPEC, "minReplicas", 0),
    doc("MaxPods", "string", HPA_SPEC, "maxReplicas", 0),
    doc(
        "Replicas",
        "string",
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        "currentReplicas",
        0,
    ),
    AGE,
];
const HPA_SPEC: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec";
/// `ResourceQuota`: NAME REQUEST LIMIT AGE.
pub const RESOURCE_QUOTA: &[Column] = &[
    NAME,
    text(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
        0,
    ),
    text(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        0,
    ),
    AGE,
];
/// `StorageClass`: NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE.
pub const STORAGE_CLASS: &[Column] = &[
    NAME,
    doc("Provisioner", "string", STORAGE_CLASS_DEF, "provisioner", 0),
    doc(
        "ReclaimPolicy",
        "string",
        STORAGE_CLASS_DEF,
        "reclaimPolicy",
        0,
    ),
    doc(
        "VolumeBindingMode",
        "string",
        STORAGE_CLASS_DEF,
        "volumeBindingMode",
        0,
    ),
    doc(
        "AllowVolumeExpansion",
        "string",
        STORAGE_CLASS_DEF,
        "allowVolumeExpansion",
        0,
    ),
    AGE,
];
const STORAGE_CLASS_DEF: &str = "io.k8s.api.storage.v1.StorageClass";
/// `Node`: NAME STATUS ROLES AGE VERSION, and with `-o wide` INTERNAL-IP EXTERNAL-IP OS-IMAGE
/// KERNEL-VERSION CONTAINER-RUNTIME (`printNode`).
pub const NODE: &[Column] = &[
    NAME,
    text("Status", "string", "The status of the node", 0),
    text("Roles", "string", "The roles of the node", 0),
    AGE,
    doc("Version", "string", NODE_INFO, "kubeletVersion", 0),
    doc("Internal-IP", "string", NODE_STATUS, "addresses", 1),
    doc("External-IP", "string", NODE_STATUS, "addresses", 1),
    doc("OS-Image", "string", NODE_INFO, "osImage", 1),
    doc("Kernel-Version", "string", NODE_INFO, "kernelVersion", 1),
    doc(
        "Container-Runtime",
        "string",
        NODE_INFO,
        "containerRuntimeVersion",
        1,
    ),
];
const NODE_INFO: &str = "io.k8s.api.core.v1.NodeSystemInfo";
const NODE_STATUS: &str = "io.k8s.api.core.v1.NodeStatus";

/// `CSIDriver`: NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS
/// REQUIRESREPUBLISH MODES AGE.
pub const CSI_DRIVER: &[Column] = &[
    NAME,
    doc("AttachRequired", "boolean", CSI_SPEC, "attachRequired", 0),
    doc("PodInfoOnMount", "boolean", CSI_SPEC, "podInfoOnMount", 0),
    doc("StorageCapacity", "boolean", CSI_SPEC, "storageCapacity", 0),
    doc("TokenRequests", "string", CSI_SPEC, "tokenRequests", 0),
    doc(
        "RequiresRepublish",
        "boolean",
        CSI_SPEC,
        "requiresRepublish",
        0,
    ),
    doc("Modes", "string", CSI_SPEC, "volumeLifecycleModes", 0),
    AGE,
];
const CSI_SPEC: &str = "io.k8s.api.storage.v1.CSIDriverSpec";
/// `PodTemplate`: NAME CONTAINERS IMAGES POD LABELS.
pub const POD_TEMPLATE: &[Column] = &[
    NAME,
    in_default_output(CONTAINERS),
    in_default_output(IMAGES),
    text(
        "Pod Labels",
        "string",
        "The labels for the pod template.",
        0,
    ),
];

const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";

/// `CertificateSigningRequest`: NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION.
pub const CERTIFICATE_SIGNING_REQUEST: &[Column] = &[
    NAME,
    AGE,
    doc("SignerName", "string", CSR_SPEC, "signerName", 0),
    doc("Requestor", "string", CSR_SPEC, "request", 0),
    doc(
        "RequestedDuration",
        "string",
        CSR_SPEC,
        "expirationSeconds",
        0,
    ),
    doc(
        "Condition",
        "string",
        "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
        "conditions",
        0,
    ),
];

/// `APIService` (kube-aggregator's table convertor): NAME SERVICE AVAILABLE AGE.
pub const API_SERVICE: &[Column] = &[
    NAME,
    text(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
        0,
    ),
    text(
        "Available",
        "string",
        "Whether this service is available.",
        0,
    ),
    AGE,
];

/// `RuntimeClass`: NAME HANDLER AGE.
pub const RUNTIME_CLASS: &[Column] = &[
    NAME,
    text("Handler", "string", "RuntimeClass Handler", 0),
    AGE,
];
/// The generic registry's `DefaultTableConvertor` for kinds without printers (`LimitRange`):
/// NAME and CREATED AT (the creation time in RFC 3339, a `date` column).
pub const DEFAULT_TABLE: &[Column] = &[
    NAME,
    doc("Created At", "date", META, "creationTimestamp", 0),
];
/// `PriorityClass`: NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY.
pub const PRIORITY_CLASS: &[Column] = &[
    NAME,
    doc(
        "Value",
        "integer",
        "io.k8s.api.scheduling.v1.PriorityClass",
        "value",
        0,
    ),
    doc(
        "Global-Default",
        "boolean",
        "io.k8s.api.scheduling.v1.PriorityClass",
        "globalDefault",
        0,
    ),
    AGE,
    doc(
        "PreemptionPolicy",
        "string",
        "io.k8s.api.scheduling.v1.PriorityClass",
        "preemptionPolicy",
        0,
    ),
];
/// `ControllerRevision`: NAME CONTROLLER REVISION AGE.
pub const CONTROLLER_REVISION: &[Column] = &[
    NAME,
    text("Controller", "string", "Controller of the object", 0),
    doc(
        "Revision",
        "string",
        "io.k8s.api.apps.v1.ControllerRevision",
        "revision",
        0,
    ),
    AGE,
];
/// Lease: NAME HOLDER AGE.
pub const LEASE: &[Column] = &[
    NAME,
    doc(
        "Holder",
        "string",
        "io.k8s.api.coordination.v1.LeaseSpec",
        "holderIdentity",
        0,
    ),
    AGE,
];

/// Role and `ClusterRole`: NAME CREATED AT.
pub const ROLE: &[Column] = &[
    NAME,
    doc("Created At", "date", META, "creationTimestamp", 0),
];
/// `RoleBinding`: NAME ROLE AGE (USERS GROUPS SERVICEACCOUNTS).
pub const ROLE_BINDING: &[Column] = &[
    NAME,
    doc(
        "Role",
        "string",
        "io.k8s.api.rbac.v1.RoleBinding",
        "roleRef",
        0,
    ),
    AGE,
    text("Users", "string", "Users in the roleBinding", 1),
    text("Groups", "string", "Groups in the roleBinding", 1),
    text(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
        1,
    ),
];
/// `ClusterRoleBinding`: NAME ROLE AGE (USERS GROUPS SERVICEACCOUNTS).
pub const CLUSTER_ROLE_BINDING: &[Column] = &[
    NAME,
    doc(
        "Role",
        "string",
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
        "roleRef",
        0,
    ),
    AGE,
    text("Users", "string", "Users in the clusterRoleBinding", 1),
    text("Groups", "string", "Groups in the clusterRoleBinding", 1),
    text(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
        1,
    ),
];
/// `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration`: NAME WEBHOOKS AGE.
pub const WEBHOOK_CONFIGURATION: &[Column] = &[
    NAME,
    text(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
        0,
    ),
    AGE,
];

/// `ValidatingAdmissionPolicy`: NAME VALIDATIONS PARAMKIND AGE.
pub const ADMISSION_POLICY: &[Column] = &[
    NAME,
    text(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
        0,
    ),
    text(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
        0,
    ),
    AGE,
];
/// `MutatingAdmissionPolicy`: NAME MUTATIONS PARAMKIND AGE.
pub const MUTATING_ADMISSION_POLICY: &[Column] = &[
    NAME,
    text(
        "Mutations",
        "integer",
        "Mutation indicates the number of mutations rules defined in this configuration",
        0,
    ),
    text(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
        0,
    ),
    AGE,
];
/// `ValidatingAdmissionPolicyBinding` and `MutatingAdmissionPolicyBinding`: NAME POLICYNAME
/// PARAMREF AGE.
pub const ADMISSION_POLICY_BINDING: &[Column] = &[
    NAME,
    text(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
        0,
    ),
    text(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
        0,
    ),
    AGE,
];

/// A `LabelSelector` as its generated Go `String()` prints it (match labels only; expressions
/// are listed by key and operator).
fn go_label_selector(sel: &Value) -> String {
    let labels: Vec<String> = at(sel, "/matchLabels")
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    let exprs: Vec<String> = arr(sel, "/matchExpressions")
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                s(e, "/key"),
                s(e, "/operator"),
                arr(e, "/values")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{}}},MatchExpressions:[]LabelSelectorRequirement{{{}}},}}",
        labels.join(""),
        exprs.join("")
    )
}

/// A quantity as apimachinery's `Quantity.String()` prints it (its canonical form); a value
/// that does not parse is printed as given.
fn quantity_string(v: &Value) -> String {
    let text = match v {
        Value::String(t) => t.clone(),
        Value::Number(n) => n.to_string(),
        Value::Null => return "0".into(),
        _ => return String::new(),
    };
    crd_core::quantity::Quantity::parse(&text).map_or(text, |q| q.to_string())
}

/// `formatHPAMetrics`: each metric's `current/target` (at most two, then `+ N more...`),
/// `<unknown>` until the autoscaler reports a current value.
fn format_hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let current = |i: usize, source: &str, ptr: &str| -> Option<&Value> {
        statuses
            .get(i)
            .map(|st| at(st, &format!("/{source}")))
            .filter(|st| st.is_object())
            .map(|st| at(st, ptr))
    };
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let kind = s(spec, "/type");
            let source = match kind {
                "External" => "external",
                "Pods" => "pods",
                "Object" => "object",
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                _ => return "<unknown type>".to_string(),
            };
            let target = at(spec, &format!("/{source}/target"));
            let unknown = || "<unknown>".to_string();
            match kind {
                "External" | "Object" if !at(target, "/averageValue").is_null() => format!(
                    "{}/{} (avg)",
                    current(i, source, "/current/averageValue")
                        .filter(|v| !v.is_null())
                        .map_or_else(unknown, quantity_string),
                    quantity_string(at(target, "/averageValue"))
                ),
                "External" | "Object" => format!(
                    "{}/{}",
                    current(i, source, "/current/value").map_or_else(unknown, quantity_string),
                    quantity_string(at(target, "/value"))
                ),
                "Pods" => format!(
                    "{}/{}",
                    current(i, source, "/current/averageValue")
                        .map_or_else(unknown, quantity_string),
                    quantity_string(at(target, "/averageValue"))
                ),
                _ => {
                    let name = s(spec, &format!("/{source}/name"));
                    if at(target, "/averageValue").is_null() {
                        let cur = current(i, source, "/current/averageUtilization")
                            .and_then(Value::as_i64)
                            .map_or_else(unknown, |n| format!("{n}%"));
                        let tgt = at(target, "/averageUtilization")
                            .as_i64()
                            .map_or_else(|| "<auto>".to_string(), |n| format!("{n}%"));
                        format!("{name}: {cur}/{tgt}")
                    } else {
                        format!(
                            "{name}: {}/{}",
                            current(i, source, "/current/averageValue")
                                .map_or_else(unknown, quantity_string),
                            quantity_string(at(target, "/averageValue"))
                        )
                    }
                }
            }
        })
        .collect();
    if list.len() > 2 {
        format!("{} + {} more...", list[..2].join(", "), list.len() - 2)
    } else {
        list.join(", ")
    }
}

/// `printResourceQuota`'s REQUEST and LIMIT cells: `name: used/hard` for each hard limit by
/// name, `limits.*` names in the second.
fn quota_columns(obj: &Value) -> (String, String) {
    let hard = at(obj, "/status/hard").as_object();
    let mut names: Vec<&String> = hard.into_iter().flat_map(|h| h.keys()).collect();
    names.sort();
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for n in names {
        let used = quantity_string(
            at(obj, "/status/used")
                .get(n.as_str())
                .unwrap_or(&Value::Null),
        );
        let max = quantity_string(hard.and_then(|h| h.get(n.as_str())).unwrap_or(&Value::Null));
        let cell = format!("{n}: {used}/{max}");
        let pieces: Vec<&str> = n.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limit.push(cell);
        } else {
            request.push(cell);
        }
    }
    (request.join(", "), limit.join(", "))
}

// ---------------------------------------------------------------------------------------------
// Value helpers

fn at<'a>(v: &'a Value, ptr: &str) -> &'a Value {
    v.pointer(ptr).unwrap_or(&Value::Null)
}
fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    at(v, ptr).as_str().unwrap_or("")
}
fn int(v: &Value, ptr: &str) -> i64 {
    at(v, ptr).as_i64().unwrap_or(0)
}
fn arr<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    at(v, ptr).as_array().map_or(&[], Vec::as_slice)
}
fn obj_len(v: &Value, ptr: &str) -> usize {
    at(v, ptr).as_object().map_or(0, serde_json::Map::len)
}
fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s.to_string()
    }
}
/// An int-or-string as Go's `IntOrString.String()` prints it.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn parse_time(v: &Value) -> Option<Timestamp> {
    v.as_str().and_then(|s| s.parse::<Timestamp>().ok())
}

/// Go's `translateTimestampSince`: `"<unknown>"` for a missing time, else a human duration.
pub fn since(v: &Value, now: Timestamp) -> String {
    match parse_time(v) {
        Some(t) => human_duration(now.as_second() - t.as_second()),
        None => "<unknown>".into(),
    }
}

/// apimachinery's `duration.HumanDuration` for a number of seconds.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// `labels.FormatLabels`: sorted `k=v` pairs, `"<none>"` when empty.
fn format_labels(v: &Value) -> String {
    let Some(m) = v.as_object() else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    or_none(&pairs.join(","))
}

/// `metav1.LabelSelectorAsSelector(sel).String()`.
fn selector_string(v: &Value) -> String {
    crd_core::labels::Selector::from_label_selector_json(v)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// `metav1.FormatLabelSelector`: `"<none>"` for a missing or empty selector.
fn format_label_selector(v: &Value) -> String {
    if v.is_null() {
        return "<none>".into();
    }
    or_none(&selector_string(v))
}

/// `layoutContainerCells`: container names and images, comma-joined.
fn containers_images(pod_spec: &Value) -> (String, String) {
    let cs = arr(pod_spec, "/containers");
    let names: Vec<&str> = cs.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// `loadBalancerStatusStringer`: ingress IPs or hostnames, truncated unless wide.
fn load_balancer(status: &Value, wide: bool) -> String {
    let mut ips: Vec<&str> = arr(status, "/ingress")
        .iter()
        .filter_map(|i| {
            let ip = s(i, "/ip");
            let host = s(i, "/hostname");
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    // A sorted set, as upstream's `sets.NewString`.
    ips.sort_unstable();
    ips.dedup();
    let r = ips.join(",");
    if !wide && r.len() > 16 {
        // Go cuts at byte 13; cut at the last character boundary at or before it.
        let cut = (0..=13).rev().find(|&i| r.is_char_boundary(i)).unwrap_or(0);
        format!("{}...", &r[..cut])
    } else {
        r
    }
}

// ---------------------------------------------------------------------------------------------
// Rows

impl Kind {
    /// The Table column definitions (`columnDefinitions`), Name included.
    pub fn column_definitions(&self) -> Vec<Value> {
        self.columns.iter().map(Column::definition).collect()
    }

    /// One Table row's cells for an object of this kind, one per [`Kind::columns`] entry,
    /// with ages relative to `now`.
    pub fn cells(&self, obj: &Value, now: Timestamp) -> Vec<Value> {
        let name = json!(s(obj, "/metadata/name"));
        let age = json!(since(at(obj, "/metadata/creationTimestamp"), now));
        match self.id {
            KindId::ConfigMap => {
                let n = obj_len(obj, "/data") + obj_len(obj, "/binaryData");
                vec![name, json!(n), age]
            }
            KindId::Secret => vec![
                name,
                json!(s(obj, "/type")),
                json!(obj_len(obj, "/data")),
                age,
            ],
            KindId::ServiceAccount => vec![name, json!(arr(obj, "/secrets").len()), age],
            KindId::Service => service_cells(obj, name, age),
            KindId::Endpoints => vec![name, json!(format_endpoints(obj)), age],
            KindId::Pod => pod_cells(obj, name, age, now),
            KindId::PersistentVolumeClaim => pvc_cells(obj, name, age),
            KindId::PersistentVolume => pv_cells(obj, name, age),
            KindId::Event => event_cells(obj, now),
            KindId::EventsV1Event => event_cells(&crate::events::to_core(obj), now),
            KindId::Deployment => {
                let (c, i) = containers_images(at(obj, "/spec/template/spec"));
                vec![
                    name,
                    json!(format!(
                        "{}/{}",
                        int(obj, "/status/readyReplicas"),
                        int(obj, "/spec/replicas")
                    )),
                    json!(int(obj, "/status/updatedReplicas")),
                    json!(int(obj, "/status/availableReplicas")),
                    age,
                    json!(c),
                    json!(i),
                    json!(selector_string(at(obj, "/spec/selector"))),
                ]
            }
            KindId::StatefulSet => {
                let (c, i) = containers_images(at(obj, "/spec/template/spec"));
                vec![
                    name,
                    json!(format!(
                        "{}/{}",
                        int(obj, "/status/readyReplicas"),
                        int(obj, "/spec/replicas")
                    )),
                    age,
                    json!(c),
                    json!(i),
                ]
            }
            KindId::DaemonSet => {
                let (c, i) = containers_images(at(obj, "/spec/template/spec"));
                vec![
                    name,
                    json!(int(obj, "/status/desiredNumberScheduled")),
                    json!(int(obj, "/status/currentNumberScheduled")),
                    json!(int(obj, "/status/numberReady")),
                    json!(int(obj, "/status/updatedNumberScheduled")),
                    json!(int(obj, "/status/numberAvailable")),
                    json!(format_labels(at(obj, "/spec/template/spec/nodeSelector"))),
                    age,
                    json!(c),
                    json!(i),
                    json!(format_label_selector(at(obj, "/spec/selector"))),
                ]
            }
            KindId::ReplicaSet | KindId::ReplicationController => {
                let (c, i) = containers_images(at(obj, "/spec/template/spec"));
                let selector = at(obj, "/spec/selector");
                // A ReplicationController's selector is a label set.
                let selector = if self.id == KindId::ReplicaSet {
                    format_label_selector(selector)
                } else {
                    format_labels(selector)
                };
                vec![
                    name,
                    json!(int(obj, "/spec/replicas")),
                    json!(int(obj, "/status/replicas")),
                    json!(int(obj, "/status/readyReplicas")),
                    age,
                    json!(c),
                    json!(i),
                    json!(selector),
                ]
            }
            KindId::Job => job_cells(obj, name, age, now),
            KindId::CronJob => {
                let (c, i) = containers_images(at(obj, "/spec/jobTemplate/spec/template/spec"));
                let tz = at(obj, "/spec/timeZone")
                    .as_str()
                    .map_or_else(|| "<none>".to_string(), String::from);
                let suspend = match at(obj, "/spec/suspend") {
                    Value::Bool(true) => "True",
                    Value::Bool(false) => "False",
                    _ => "<unset>",
                };
                let last = at(obj, "/status/lastScheduleTime");
                let last = if last.is_null() {
                    "<none>".to_string()
                } else {
                    since(last, now)
                };
                vec![
                    name,
                    json!(s(obj, "/spec/schedule")),
                    json!(tz),
                    json!(suspend),
                    json!(arr(obj, "/status/active").len()),
                    json!(last),
                    age,
                    json!(c),
                    json!(i),
                    json!(format_label_selector(at(
                        obj,
                        "/spec/jobTemplate/spec/selector"
                    ))),
                ]
            }
            KindId::Ingress => {
                let class = at(obj, "/spec/ingressClassName")
                    .as_str()
                    .map_or_else(|| "<none>".to_string(), String::from);
                let ports = if arr(obj, "/spec/tls").is_empty() {
                    "80"
                } else {
                    "80, 443"
                };
                vec![
                    name,
                    json!(class),
                    json!(format_hosts(arr(obj, "/spec/rules"))),
                    json!(load_balancer(at(obj, "/status/loadBalancer"), true)),
                    json!(ports),
                    age,
                ]
            }
            KindId::EndpointSlice => vec![
                name,
                json!(s(obj, "/addressType")),
                json!(format_discovery_ports(arr(obj, "/ports"))),
                json!(format_discovery_endpoints(arr(obj, "/endpoints"))),
                age,
            ],
            KindId::PodDisruptionBudget => {
                let na = |p: &str| match at(obj, p) {
                    Value::Null => "N/A".to_string(),
                    v => int_or_string(v),
                };
                vec![
                    name,
                    json!(na("/spec/minAvailable")),
                    json!(na("/spec/maxUnavailable")),
                    json!(int(obj, "/status/disruptionsAllowed")),
                    age,
                ]
            }
            KindId::NetworkPolicy => vec![
                name,
                json!(format_label_selector(at(obj, "/spec/podSelector"))),
                age,
            ],
            KindId::IngressClass => {
                // `printIngressClass`: `<kind>.<group>/<name>` (or `<kind>/<name>`), else
                // `<none>`.
                let p = at(obj, "/spec/parameters");
                let parameters = if p.is_object() {
                    let group = s(p, "/apiGroup");
                    if group.is_empty() {
                        format!("{}/{}", s(p, "/kind"), s(p, "/name"))
                    } else {
                        format!("{}.{group}/{}", s(p, "/kind"), s(p, "/name"))
                    }
                } else {
                    "<none>".into()
                };
                vec![
                    name,
                    json!(s(obj, "/spec/controller")),
                    json!(parameters),
                    age,
                ]
            }
            KindId::HorizontalPodAutoscaler => {
                let reference = format!(
                    "{}/{}",
                    s(obj, "/spec/scaleTargetRef/kind"),
                    s(obj, "/spec/scaleTargetRef/name")
                );
                let min = at(obj, "/spec/minReplicas")
                    .as_i64()
                    .map_or_else(|| "<unset>".to_string(), |n| n.to_string());
                vec![
                    name,
                    json!(reference),
                    json!(format_hpa_metrics(
                        arr(obj, "/spec/metrics"),
                        arr(obj, "/status/currentMetrics")
                    )),
                    json!(min),
                    json!(int(obj, "/spec/maxReplicas")),
                    json!(int(obj, "/status/currentReplicas")),
                    age,
                ]
            }
            // Printed from the internal (v2) form, as upstream prints every version.
            KindId::HorizontalPodAutoscalerV1 => {
                crate::get(KindId::HorizontalPodAutoscaler).cells(&crate::hpa::to_v2(obj), now)
            }
            KindId::ResourceQuota => {
                let (request, limit) = quota_columns(obj);
                vec![name, json!(request), json!(limit), age]
            }
            KindId::LimitRange => vec![name, json!(s(obj, "/metadata/creationTimestamp"))],
            KindId::Node => node_cells(obj, name, age),
            KindId::RuntimeClass => vec![name, json!(s(obj, "/handler")), age],
            KindId::PodTemplate => {
                let (c, i) = containers_images(at(obj, "/template/spec"));
                let labels = format_labels(at(obj, "/template/metadata/labels"));
                vec![name, json!(c), json!(i), json!(labels)]
            }
            KindId::CertificateSigningRequest => {
                let duration = obj
                    .pointer("/spec/expirationSeconds")
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<none>".to_string(), human_duration);
                vec![
                    name,
                    age,
                    json!(or_none(s(obj, "/spec/signerName"))),
                    json!(s(obj, "/spec/username")),
                    json!(duration),
                    json!(crate::certificates::condition_summary(obj)),
                ]
            }
            KindId::APIService => vec![
                name,
                json!(crate::apiregistration::service_column(obj)),
                json!(crate::apiregistration::available_column(obj)),
                age,
            ],
            KindId::CSIDriver => {
                let flag = |ptr: &str, default: bool| at(obj, ptr).as_bool().unwrap_or(default);
                let joined = |list: Vec<&str>, none: &str| {
                    if list.is_empty() {
                        none.to_string()
                    } else {
                        list.join(",")
                    }
                };
                let audiences = arr(obj, "/spec/tokenRequests")
                    .iter()
                    .map(|t| s(t, "/audience"))
                    .collect();
                let modes = arr(obj, "/spec/volumeLifecycleModes")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                vec![
                    name,
                    json!(flag("/spec/attachRequired", true)),
                    json!(flag("/spec/podInfoOnMount", false)),
                    json!(flag("/spec/storageCapacity", false)),
                    json!(joined(audiences, "<unset>")),
                    json!(flag("/spec/requiresRepublish", false)),
                    json!(joined(modes, "<none>")),
                    age,
                ]
            }
            KindId::StorageClass => {
                let default = [
                    "storageclass.kubernetes.io/is-default-class",
                    "storageclass.beta.kubernetes.io/is-default-class",
                ]
                .iter()
                .any(|a| {
                    s(
                        obj,
                        &format!("/metadata/annotations/{}", a.replace('/', "~1")),
                    ) == "true"
                });
                let shown = if default {
                    format!("{} (default)", s(obj, "/metadata/name"))
                } else {
                    s(obj, "/metadata/name").to_string()
                };
                let or =
                    |ptr: &str, default: &str| at(obj, ptr).as_str().unwrap_or(default).to_string();
                vec![
                    json!(shown),
                    json!(s(obj, "/provisioner")),
                    json!(or("/reclaimPolicy", "Delete")),
                    json!(or("/volumeBindingMode", "Immediate")),
                    json!(at(obj, "/allowVolumeExpansion").as_bool().unwrap_or(false)),
                    age,
                ]
            }
            KindId::Lease => vec![name, json!(s(obj, "/spec/holderIdentity")), age],
            KindId::PriorityClass => vec![
                name,
                json!(int(obj, "/value")),
                json!(at(obj, "/globalDefault").as_bool().unwrap_or(false)),
                age,
                json!(s(obj, "/preemptionPolicy")),
            ],
            // The controller as `formatResourceName` prints it: `statefulset.apps/web`.
            KindId::ControllerRevision => {
                let controller = arr(obj, "/metadata/ownerReferences")
                    .iter()
                    .find(|r| r.get("controller") == Some(&Value::Bool(true)))
                    .map_or_else(
                        || "<none>".to_string(),
                        |r| {
                            let group = s(r, "/apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
                            let kind = s(r, "/kind").to_lowercase();
                            let kind = if group.is_empty() {
                                kind
                            } else {
                                format!("{kind}.{group}")
                            };
                            format!("{kind}/{}", s(r, "/name"))
                        },
                    );
                vec![name, json!(controller), json!(int(obj, "/revision")), age]
            }
            KindId::Role
            | KindId::ClusterRole
            | KindId::RoleBinding
            | KindId::ClusterRoleBinding => crate::rbac::cells(self.id, obj, name, age, now),
            KindId::ValidatingWebhookConfiguration | KindId::MutatingWebhookConfiguration => {
                vec![name, json!(arr(obj, "/webhooks").len()), age]
            }
            KindId::ValidatingAdmissionPolicy | KindId::MutatingAdmissionPolicy => {
                let pk = at(obj, "/spec/paramKind");
                let param_kind = if pk.is_object() {
                    format!("{}/{}", s(pk, "/apiVersion"), s(pk, "/kind"))
                } else {
                    "<unset>".to_string()
                };
                let counted = if self.id == KindId::MutatingAdmissionPolicy {
                    "/spec/mutations"
                } else {
                    "/spec/validations"
                };
                vec![name, json!(arr(obj, counted).len()), json!(param_kind), age]
            }
            KindId::ValidatingAdmissionPolicyBinding | KindId::MutatingAdmissionPolicyBinding => {
                let pr = at(obj, "/spec/paramRef");
                let (ns, n) = (s(pr, "/namespace"), s(pr, "/name"));
                let param_ref = if !n.is_empty() && !ns.is_empty() {
                    format!("{ns}/{n}")
                } else if !n.is_empty() {
                    // Upstream cannot tell whether the param is cluster-scoped.
                    format!("*/{n}")
                } else if at(pr, "/selector").is_object() {
                    go_label_selector(at(pr, "/selector"))
                } else {
                    "<unset>".to_string()
                };
                vec![
                    name,
                    json!(s(obj, "/spec/policyName")),
                    json!(param_ref),
                    age,
                ]
            }
        }
    }

    /// Row conditions (`TableRow.conditions`): pods that completed or failed carry
    /// `Completed`, as upstream's pod printer sets them.
    pub fn row_conditions(&self, obj: &Value) -> Option<Value> {
        if self.id != KindId::Pod {
            return None;
        }
        match s(obj, "/status/phase") {
            "Succeeded" => Some(
                json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
            ),
            "Failed" => Some(
                json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
            ),
            _ => None,
        }
    }
}

fn service_cells(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let ty = s(obj, "/spec/type");
    let cluster_ip = or_none(
        arr(obj, "/spec/clusterIPs")
            .first()
            .and_then(Value::as_str)
            .unwrap_or(""),
    );
    let external: Vec<&str> = arr(obj, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external_ip = match ty {
        "ClusterIP" | "NodePort" => or_none(&external.join(",")),
        "LoadBalancer" => {
            let lb = load_balancer(at(obj, "/status/loadBalancer"), true);
            if !external.is_empty() {
                let mut all: Vec<&str> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').collect()
                };
                all.extend(external);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => s(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = arr(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let port = int(p, "/port");
            let proto = s(p, "/protocol");
            match int(p, "/nodePort") {
                n if n > 0 => format!("{port}:{n}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    vec![
        name,
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(or_none(&ports.join(","))),
        age,
        json!(format_labels(at(obj, "/spec/selector"))),
    ]
}

/// `formatEndpoints` with no port filter.
fn format_endpoints(obj: &Value) -> String {
    let subsets = arr(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let max = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0;
    for ss in subsets {
        let addrs = arr(ss, "/addresses");
        let ports = arr(ss, "/ports");
        if ports.is_empty() {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    more = true;
                }
                if !more {
                    list.push(s(a, "/ip").to_string());
                }
            }
            continue;
        }
        for p in ports {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    more = true;
                }
                if !more {
                    list.push(join_host_port(s(a, "/ip"), int(p, "/port")));
                }
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn format_hosts(rules: &[Value]) -> String {
    let max = 3;
    let mut list = Vec::new();
    let mut more = false;
    for r in rules {
        if list.len() == max {
            more = true;
        }
        let h = s(r, "/host");
        if !more && !h.is_empty() {
            list.push(h);
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", rules.len() - max)
    } else {
        ret
    }
}

fn format_discovery_ports(ports: &[Value]) -> String {
    if ports.is_empty() {
        return "<unset>".into();
    }
    let max = 3;
    let mut list = Vec::new();
    let mut more = false;
    for p in ports {
        if list.len() == max {
            more = true;
        }
        if !more {
            list.push(match at(p, "/port") {
                Value::Number(n) => n.to_string(),
                _ => "<unset>".into(),
            });
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", ports.len() - max)
    } else {
        ret
    }
}

fn format_discovery_endpoints(endpoints: &[Value]) -> String {
    if endpoints.is_empty() {
        return "<unset>".into();
    }
    let max = 3;
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for e in endpoints {
        for a in arr(e, "/addresses") {
            count += 1;
            if list.len() == max {
                more = true;
            }
            if !more {
                list.push(a.as_str().unwrap_or(""));
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

/// `printPersistentVolume`.
fn pv_cells(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut phase = s(obj, "/status/phase").to_string();
    if !at(obj, "/metadata/deletionTimestamp").is_null() {
        phase = "Terminating".into();
    }
    let claim = match at(obj, "/spec/claimRef") {
        Value::Object(_) => format!(
            "{}/{}",
            s(obj, "/spec/claimRef/namespace"),
            s(obj, "/spec/claimRef/name")
        ),
        _ => String::new(),
    };
    let capacity = match at(obj, "/spec/capacity/storage") {
        Value::String(q) => q.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".to_string(),
    };
    let class = match at(obj, "/spec/storageClassName").as_str() {
        Some(c) => c.to_string(),
        None => s(
            obj,
            "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
        )
        .into(),
    };
    let or_unset = |ptr: &str| {
        at(obj, ptr)
            .as_str()
            .map_or_else(|| "<unset>".to_string(), String::from)
    };
    vec![
        name,
        json!(capacity),
        json!(access_modes(arr(obj, "/spec/accessModes"))),
        json!(s(obj, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase),
        json!(claim),
        json!(class),
        json!(or_unset("/spec/volumeAttributesClassName")),
        json!(s(obj, "/status/reason")),
        age,
        json!(or_unset("/spec/volumeMode")),
    ]
}

fn pvc_cells(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut phase = s(obj, "/status/phase").to_string();
    if !at(obj, "/metadata/deletionTimestamp").is_null() {
        phase = "Terminating".into();
    }
    let volume = s(obj, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let cap = match at(obj, "/status/capacity/storage") {
            Value::String(q) => q.clone(),
            Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        (cap, access_modes(arr(obj, "/status/accessModes")))
    };
    let class = match at(obj, "/spec/storageClassName").as_str() {
        Some(c) => c.to_string(),
        None => s(
            obj,
            "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
        )
        .into(),
    };
    let vac = at(obj, "/spec/volumeAttributesClassName")
        .as_str()
        .map_or_else(|| "<unset>".to_string(), String::from);
    let mode = at(obj, "/spec/volumeMode")
        .as_str()
        .map_or_else(|| "<unset>".to_string(), String::from);
    vec![
        name,
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(vac),
        age,
        json!(mode),
    ]
}

/// `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order, each once.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    let mut out = Vec::new();
    for (m, short) in [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ] {
        if has(m) {
            out.push(short);
        }
    }
    out.join(",")
}

fn event_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let first_ts = at(obj, "/firstTimestamp");
    let first = if first_ts.is_null() {
        since(at(obj, "/eventTime"), now)
    } else {
        since(first_ts, now)
    };
    let last_ts = at(obj, "/lastTimestamp");
    let mut last = if last_ts.is_null() {
        first.clone()
    } else {
        since(last_ts, now)
    };
    let mut count = int(obj, "/count");
    let series = at(obj, "/series");
    if series.is_null() {
        if count == 0 {
            count = 1;
        }
    } else {
        last = since(at(series, "/lastObservedTime"), now);
        count = int(series, "/count");
    }
    let kind = s(obj, "/involvedObject/kind").to_lowercase();
    let target_name = s(obj, "/involvedObject/name");
    let target = if target_name.is_empty() {
        kind
    } else {
        format!("{kind}/{target_name}")
    };
    let component = first_non_empty(s(obj, "/source/component"), s(obj, "/reportingComponent"));
    let instance = first_non_empty(s(obj, "/source/host"), s(obj, "/reportingInstance"));
    let source = if component.is_empty() {
        "<unknown>".to_string()
    } else if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(s(obj, "/type")),
        json!(s(obj, "/reason")),
        json!(target),
        json!(s(obj, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(obj, "/message").trim()),
        json!(first),
        json!(count),
        json!(s(obj, "/metadata/name")),
    ]
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

fn has_condition(obj: &Value, ty: &str) -> bool {
    arr(obj, "/status/conditions")
        .iter()
        .any(|c| s(c, "/type") == ty && s(c, "/status") == "True")
}

fn job_cells(obj: &Value, name: Value, age: Value, now: Timestamp) -> Vec<Value> {
    let succeeded = int(obj, "/status/succeeded");
    let completions = match at(obj, "/spec/completions").as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None => match at(obj, "/spec/parallelism").as_i64().unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = parse_time(at(obj, "/status/startTime"));
    let end = parse_time(at(obj, "/status/completionTime"));
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(now.as_second() - s.as_second()),
        (Some(s), Some(e)) => human_duration(e.as_second() - s.as_second()),
    };
    let status = if has_condition(obj, "Complete") {
        "Complete"
    } else if has_condition(obj, "Failed") {
        "Failed"
    } else if !at(obj, "/metadata/deletionTimestamp").is_null() {
        "Terminating"
    } else if has_condition(obj, "Suspended") {
        "Suspended"
    } else if has_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (c, i) = containers_images(at(obj, "/spec/template/spec"));
    vec![
        name,
        json!(status),
        json!(completions),
        json!(duration),
        age,
        json!(c),
        json!(i),
        json!(format_label_selector(at(obj, "/spec/selector"))),
    ]
}

fn is_restartable_init(spec: &Value, name: &str) -> bool {
    arr(spec, "/initContainers")
        .iter()
        .any(|c| s(c, "/name") == name && s(c, "/restartPolicy") == "Always")
}

fn pod_cells(obj: &Value, name: Value, age: Value, now: Timestamp) -> Vec<Value> {
    let spec = at(obj, "/spec");
    let status = at(obj, "/status");
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut total = arr(spec, "/containers").len();
    let mut ready = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_sidecar_restart: Option<Timestamp> = None;
    let phase = s(status, "/phase");
    let mut reason = phase.to_string();
    if !s(status, "/reason").is_empty() {
        reason = s(status, "/reason").to_string();
    }
    for c in arr(status, "/conditions") {
        if s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated" {
            reason = "SchedulingGated".into();
        }
    }
    let init_specs = arr(spec, "/initContainers");
    total += init_specs
        .iter()
        .filter(|c| s(c, "/restartPolicy") == "Always")
        .count();
    let later = |cur: Option<Timestamp>, t: Option<Timestamp>| match (cur, t) {
        (Some(a), Some(b)) if b > a => Some(b),
        (None, Some(b)) => Some(b),
        (a, _) => a,
    };
    let mut initializing = false;
    for (i, c) in arr(status, "/initContainerStatuses").iter().enumerate() {
        let cname = s(c, "/name");
        restarts += int(c, "/restartCount");
        let finished = parse_time(at(c, "/lastState/terminated/finishedAt"));
        last_restart = later(last_restart, finished);
        let sidecar = is_restartable_init(spec, cname);
        if sidecar {
            sidecar_restarts += int(c, "/restartCount");
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = at(c, "/state/terminated");
        let waiting_reason = s(c, "/state/waiting/reason");
        if !terminated.is_null() && int(terminated, "/exitCode") == 0 {
            continue;
        }
        if sidecar && at(c, "/started").as_bool() == Some(true) {
            if at(c, "/ready").as_bool() == Some(true) {
                ready += 1;
            }
            continue;
        }
        if !terminated.is_null() {
            let r = s(terminated, "/reason");
            reason = if r.is_empty() {
                match int(terminated, "/signal") {
                    0 => format!("Init:ExitCode:{}", int(terminated, "/exitCode")),
                    sig => format!("Init:Signal:{sig}"),
                }
            } else {
                format!("Init:{r}")
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }
    let initialized = arr(status, "/conditions")
        .iter()
        .any(|c| s(c, "/type") == "Initialized" && s(c, "/status") == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in arr(status, "/containerStatuses").iter().rev() {
            restarts += int(c, "/restartCount");
            last_restart = later(
                last_restart,
                parse_time(at(c, "/lastState/terminated/finishedAt")),
            );
            let waiting = s(c, "/state/waiting/reason");
            let terminated = at(c, "/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if !terminated.is_null() && !s(terminated, "/reason").is_empty() {
                reason = s(terminated, "/reason").to_string();
            } else if !terminated.is_null() {
                reason = match int(terminated, "/signal") {
                    0 => format!("ExitCode:{}", int(terminated, "/exitCode")),
                    sig => format!("Signal:{sig}"),
                };
            } else if at(c, "/ready").as_bool() == Some(true) && !at(c, "/state/running").is_null()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = arr(status, "/conditions")
                .iter()
                .any(|c| s(c, "/type") == "Ready" && s(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    let deleting = !at(obj, "/metadata/deletionTimestamp").is_null();
    if deleting && s(status, "/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let restarts_str = match last_restart {
        Some(t) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            human_duration(now.as_second() - t.as_second())
        ),
        _ => restarts.to_string(),
    };
    let ip = arr(status, "/podIPs").first().map_or("", |p| s(p, "/ip"));
    let gates = arr(spec, "/readinessGates");
    let gates_str = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conds = arr(status, "/conditions");
        let t = gates
            .iter()
            .filter(|g| {
                conds
                    .iter()
                    .find(|c| s(c, "/type") == s(g, "/conditionType"))
                    .is_some_and(|c| s(c, "/status") == "True")
            })
            .count();
        format!("{t}/{}", gates.len())
    };
    vec![
        name,
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_str),
        age,
        json!(or_none(ip)),
        json!(or_none(s(spec, "/nodeName"))),
        json!(or_none(s(status, "/nominatedNodeName"))),
        json!(gates_str),
    ]
}

/// `printNode`'s cells: the Ready condition (`Ready`, `NotReady`, or `Unknown` without one)
/// and `SchedulingDisabled` when cordoned; the roles from `node-role.kubernetes.io/<role>` and
/// `kubernetes.io/role` labels, sorted; the first internal and external addresses.
fn node_cells(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut status: Vec<&str> = Vec::new();
    if let Some(ready) = arr(obj, "/status/conditions")
        .iter()
        .rfind(|c| s(c, "/type") == "Ready")
    {
        status.push(if s(ready, "/status") == "True" {
            "Ready"
        } else {
            "NotReady"
        });
    }
    if status.is_empty() {
        status.push("Unknown");
    }
    if at(obj, "/spec/unschedulable").as_bool() == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles = std::collections::BTreeSet::new();
    if let Some(labels) = at(obj, "/metadata/labels").as_object() {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |ty: &str| {
        arr(obj, "/status/addresses")
            .iter()
            .find(|a| s(a, "/type") == ty)
            .map_or("<none>", |a| s(a, "/address"))
            .to_string()
    };
    let info = |field: &str| {
        let v = s(obj, &format!("/status/nodeInfo/{field}"));
        if v.is_empty() { "<unknown>" } else { v }.to_string()
    };
    vec![
        name,
        json!(status.join(",")),
        json!(roles),
        age,
        json!(s(obj, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KINDS, get};

    const NOW: &str = "2024-01-01T01:00:00Z";
    const CREATED: &str = "2024-01-01T00:55:00Z"; // 5m before NOW

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    fn headers(id: KindId) -> Vec<&'static str> {
        get(id).columns.iter().map(|c| c.name).collect()
    }

    #[test]
    fn columns_match_kube_apiserver() {
        let cases: &[(KindId, &[&str])] = &[
            (KindId::ConfigMap, &["Name", "Data", "Age"]),
            (KindId::Secret, &["Name", "Type", "Data", "Age"]),
            (KindId::ServiceAccount, &["Name", "Secrets", "Age"]),
            (
                KindId::Service,
                &[
                    "Name",
                    "Type",
                    "Cluster-IP",
                    "External-IP",
                    "Port(s)",
                    "Age",
                    "Selector",
                ],
            ),
            (KindId::Endpoints, &["Name", "Endpoints", "Age"]),
            (
                KindId::Pod,
                &[
                    "Name",
                    "Ready",
                    "Status",
                    "Restarts",
                    "Age",
                    "IP",
                    "Node",
                    "Nominated Node",
                    "Readiness Gates",
                ],
            ),
            (
                KindId::PersistentVolume,
                &[
                    "Name",
                    "Capacity",
                    "Access Modes",
                    "Reclaim Policy",
                    "Status",
                    "Claim",
                    "StorageClass",
                    "VolumeAttributesClass",
                    "Reason",
                    "Age",
                    "VolumeMode",
                ],
            ),
            (
                KindId::ReplicationController,
                &[
                    "Name",
                    "Desired",
                    "Current",
                    "Ready",
                    "Age",
                    "Containers",
                    "Images",
                    "Selector",
                ],
            ),
            (
                KindId::PersistentVolumeClaim,
                &[
                    "Name",
                    "Status",
                    "Volume",
                    "Capacity",
                    "Access Modes",
                    "StorageClass",
                    "VolumeAttributesClass",
                    "Age",
                    "VolumeMode",
                ],
            ),
            (
                KindId::Event,
                &[
                    "Last Seen",
                    "Type",
                    "Reason",
                    "Object",
                    "Subobject",
                    "Source",
                    "Message",
                    "First Seen",
                    "Count",
                    "Name",
                ],
            ),
            (
                KindId::Deployment,
                &[
                    "Name",
                    "Ready",
                    "Up-to-date",
                    "Available",
                    "Age",
                    "Containers",
                    "Images",
                    "Selector",
                ],
            ),
            (
                KindId::StatefulSet,
                &["Name", "Ready", "Age", "Containers", "Images"],
            ),
            (
                KindId::DaemonSet,
                &[
                    "Name",
                    "Desired",
                    "Current",
                    "Ready",
                    "Up-to-date",
                    "Available",
                    "Node Selector",
                    "Age",
                    "Containers",
                    "Images",
                    "Selector",
                ],
            ),
            (
                KindId::ReplicaSet,
                &[
                    "Name",
                    "Desired",
                    "Current",
                    "Ready",
                    "Age",
                    "Containers",
                    "Images",
                    "Selector",
                ],
            ),
            (
                KindId::Job,
                &[
                    "Name",
                    "Status",
                    "Completions",
                    "Duration",
                    "Age",
                    "Containers",
                    "Images",
                    "Selector",
                ],
            ),
            (
                KindId::CronJob,
                &[
                    "Name",
                    "Schedule",
                    "Timezone",
                    "Suspend",
                    "Active",
                    "Last Schedule",
                    "Age",
                    "Containers",
                    "Images",
                    "Selector",
                ],
            ),
            (
                KindId::Ingress,
                &["Name", "Class", "Hosts", "Address", "Ports", "Age"],
            ),
            (
                KindId::EndpointSlice,
                &["Name", "AddressType", "Ports", "Endpoints", "Age"],
            ),
            (
                KindId::PodDisruptionBudget,
                &[
                    "Name",
                    "Min Available",
                    "Max Unavailable",
                    "Allowed Disruptions",
                    "Age",
                ],
            ),
            (KindId::Lease, &["Name", "Holder", "Age"]),
            (
                KindId::ControllerRevision,
                &["Name", "Controller", "Revision", "Age"],
            ),
            (
                KindId::PriorityClass,
                &["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
            ),
            (KindId::NetworkPolicy, &["Name", "Pod-Selector", "Age"]),
            (
                KindId::IngressClass,
                &["Name", "Controller", "Parameters", "Age"],
            ),
            (
                KindId::HorizontalPodAutoscaler,
                &[
                    "Name",
                    "Reference",
                    "Targets",
                    "MinPods",
                    "MaxPods",
                    "Replicas",
                    "Age",
                ],
            ),
            (KindId::ResourceQuota, &["Name", "Request", "Limit", "Age"]),
            (KindId::LimitRange, &["Name", "Created At"]),
            (
                KindId::StorageClass,
                &[
                    "Name",
                    "Provisioner",
                    "ReclaimPolicy",
                    "VolumeBindingMode",
                    "AllowVolumeExpansion",
                    "Age",
                ],
            ),
        ];
        for (id, want) in cases {
            assert_eq!(headers(*id), *want, "{id:?}");
        }
        let pod = get(KindId::Pod).column_definitions();
        assert_eq!(pod[0]["format"], json!("name"));
        assert_eq!(pod[5]["priority"], json!(1));
        assert!(
            pod[5]["description"]
                .as_str()
                .unwrap()
                .starts_with("podIP address allocated to the pod")
        );
        assert!(
            pod[4]["description"]
                .as_str()
                .unwrap()
                .starts_with("CreationTimestamp is a timestamp")
        );
        for k in KINDS {
            for c in k.columns {
                assert!(!c.description().is_empty(), "{} {}", k.kind, c.name);
            }
        }
    }

    #[test]
    fn cells_match_kube_apiserver_rows() {
        let cases: Vec<(KindId, Value, Value)> = vec![
            (
                KindId::PodTemplate,
                json!({"metadata": {"name": "t", "creationTimestamp": CREATED},
                    "template": {"metadata": {"labels": {"b": "2", "a": "1"}},
                        "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "side", "image": "envoy"}]}}}),
                json!(["t", "web,side", "nginx,envoy", "a=1,b=2"]),
            ),
            (
                KindId::CertificateSigningRequest,
                json!({"metadata": {"name": "csr-1", "creationTimestamp": CREATED},
                    "spec": {"signerName": "example.com/s", "username": "alice", "expirationSeconds": 86400},
                    "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "eA=="}}),
                json!([
                    "csr-1",
                    "5m",
                    "example.com/s",
                    "alice",
                    "24h",
                    "Approved,Issued"
                ]),
            ),
            (
                KindId::CertificateSigningRequest,
                json!({"metadata": {"name": "csr-2", "creationTimestamp": CREATED}, "spec": {}}),
                json!(["csr-2", "5m", "<none>", "", "<none>", "Pending"]),
            ),
            (
                KindId::APIService,
                json!({"metadata": {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": CREATED},
                    "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                    "status": {"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound"}]}}),
                json!([
                    "v1beta1.metrics.k8s.io",
                    "kube-system/metrics-server",
                    "False (ServiceNotFound)",
                    "5m"
                ]),
            ),
            (
                KindId::APIService,
                json!({"metadata": {"name": "v1.apps", "creationTimestamp": CREATED}, "spec": {},
                    "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}),
                json!(["v1.apps", "Local", "True", "5m"]),
            ),
            (
                KindId::CSIDriver,
                json!({"metadata": {"name": "ebs.csi.aws.com", "creationTimestamp": CREATED},
                    "spec": {"attachRequired": false, "podInfoOnMount": true, "storageCapacity": false,
                             "requiresRepublish": false, "volumeLifecycleModes": ["Persistent", "Ephemeral"],
                             "tokenRequests": [{"audience": "vault"}, {"audience": ""}]}}),
                json!([
                    "ebs.csi.aws.com",
                    false,
                    true,
                    false,
                    "vault,",
                    false,
                    "Persistent,Ephemeral",
                    "5m"
                ]),
            ),
            (
                KindId::CSIDriver,
                json!({"metadata": {"name": "bare"}, "spec": {}}),
                json!([
                    "bare",
                    true,
                    false,
                    false,
                    "<unset>",
                    false,
                    "<none>",
                    "<unknown>"
                ]),
            ),
            (
                KindId::RuntimeClass,
                json!({"metadata": {"name": "nvidia", "creationTimestamp": CREATED}, "handler": "nvidia"}),
                json!(["nvidia", "nvidia", "5m"]),
            ),
            (
                KindId::Node,
                json!({"metadata": {"name": "n1", "creationTimestamp": CREATED,
                        "labels": {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "",
                                   "node-role.kubernetes.io/": "", "kubernetes.io/role": "edge"}},
                    "spec": {"unschedulable": true},
                    "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
                               "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.1"},
                                             {"type": "InternalIP", "address": "10.0.0.2"}],
                               "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "", "kernelVersion": "6.1",
                                            "containerRuntimeVersion": ""}}}),
                json!([
                    "n1",
                    "NotReady,SchedulingDisabled",
                    "control-plane,edge,worker",
                    "5m",
                    "v1.32.0",
                    "10.0.0.1",
                    "<none>",
                    "<unknown>",
                    "6.1",
                    "<unknown>"
                ]),
            ),
            (
                KindId::Node,
                json!({"metadata": {"name": "bare"}, "spec": {}, "status": {}}),
                json!([
                    "bare",
                    "Unknown",
                    "<none>",
                    "<unknown>",
                    "",
                    "<none>",
                    "<none>",
                    "<unknown>",
                    "<unknown>",
                    "<unknown>"
                ]),
            ),
            (
                KindId::ConfigMap,
                json!({"metadata": {"name": "cm", "creationTimestamp": CREATED}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}}),
                json!(["cm", 3, "5m"]),
            ),
            (
                KindId::Secret,
                json!({"metadata": {"name": "s", "creationTimestamp": CREATED}, "type": "Opaque", "data": {"a": "MQ=="}}),
                json!(["s", "Opaque", 1, "5m"]),
            ),
            (
                KindId::ServiceAccount,
                json!({"metadata": {"name": "default"}}),
                json!(["default", 0, "<unknown>"]),
            ),
            (
                KindId::Service,
                json!({"metadata": {"name": "web", "creationTimestamp": CREATED},
                    "spec": {"type": "NodePort", "clusterIP": "10.0.0.10", "clusterIPs": ["10.0.0.10"], "selector": {"app": "web"},
                             "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}}),
                json!([
                    "web",
                    "NodePort",
                    "10.0.0.10",
                    "<none>",
                    "80:30080/TCP,53/UDP",
                    "5m",
                    "app=web"
                ]),
            ),
            (
                KindId::Service,
                json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIP": "None", "clusterIPs": ["None"]},
                    "status": {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}, {"ip": "1.2.3.4"}]}}}),
                json!([
                    "lb",
                    "LoadBalancer",
                    "None",
                    "1.2.3.4,5.6.7.8,lb.example.com",
                    "<none>",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                KindId::Service,
                json!({"metadata": {"name": "lb2"}, "spec": {"type": "LoadBalancer"}}),
                json!([
                    "lb2",
                    "LoadBalancer",
                    "<none>",
                    "<pending>",
                    "<none>",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                KindId::Service,
                json!({"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
                json!([
                    "ext",
                    "ExternalName",
                    "<none>",
                    "example.com",
                    "<none>",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                KindId::Endpoints,
                json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}, {"ip": "10.1.0.3"}, {"ip": "10.1.0.4"}], "ports": [{"port": 8080}]}]}),
                json!([
                    "web",
                    "10.1.0.1:8080,10.1.0.2:8080,10.1.0.3:8080 + 1 more...",
                    "<unknown>"
                ]),
            ),
            (
                KindId::Endpoints,
                json!({"metadata": {"name": "e"}}),
                json!(["e", "<none>", "<unknown>"]),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "p", "creationTimestamp": CREATED},
                    "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "node-1"},
                    "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}],
                               "conditions": [{"type": "Ready", "status": "True"}],
                               "containerStatuses": [
                                 {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                                  "lastState": {"terminated": {"finishedAt": "2024-01-01T00:58:00Z"}}},
                                 {"name": "b", "ready": false, "restartCount": 0, "state": {"running": {}}}]}}),
                json!([
                    "p",
                    "1/2",
                    "Running",
                    "2 (2m ago)",
                    "5m",
                    "10.1.0.5",
                    "node-1",
                    "<none>",
                    "<none>"
                ]),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "new"}, "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}}),
                json!([
                    "new",
                    "0/1",
                    "Pending",
                    "0",
                    "<unknown>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>"
                ]),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "crash"}, "spec": {"containers": [{"name": "a"}], "readinessGates": [{"conditionType": "x"}]},
                    "status": {"phase": "Running", "conditions": [{"type": "x", "status": "True"}],
                               "containerStatuses": [{"name": "a", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}),
                json!([
                    "crash",
                    "0/1",
                    "CrashLoopBackOff",
                    "4",
                    "<unknown>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "1/1"
                ]),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "init"}, "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
                    "status": {"phase": "Pending", "initContainerStatuses": [
                        {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                        {"name": "i2", "state": {"running": {}}}]}}),
                json!([
                    "init",
                    "0/1",
                    "Init:1/2",
                    "0",
                    "<unknown>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>"
                ]),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "done"}, "spec": {"containers": [{"name": "a"}]},
                    "status": {"phase": "Succeeded", "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}),
                json!([
                    "done",
                    "0/1",
                    "Completed",
                    "0",
                    "<unknown>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>"
                ]),
            ),
            (
                KindId::Pod,
                json!({"metadata": {"name": "bye", "deletionTimestamp": NOW}, "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running"}}),
                json!([
                    "bye",
                    "0/1",
                    "Terminating",
                    "0",
                    "<unknown>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>"
                ]),
            ),
            (
                KindId::PersistentVolume,
                json!({"metadata": {"name": "pv1", "creationTimestamp": CREATED}, "spec": {"capacity": {"storage": "5Gi"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                    "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard", "volumeMode": "Block"},
                    "status": {"phase": "Bound"}}),
                json!([
                    "pv1",
                    "5Gi",
                    "RWO,RWX",
                    "Retain",
                    "Bound",
                    "default/data",
                    "standard",
                    "<unset>",
                    "",
                    "5m",
                    "Block"
                ]),
            ),
            (
                KindId::ReplicationController,
                json!({"metadata": {"name": "rc", "creationTimestamp": CREATED}, "spec": {"replicas": 3, "selector": {"tier": "fe", "app": "web"},
                    "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]}}},
                    "status": {"replicas": 2, "readyReplicas": 1}}),
                json!(["rc", 3, 2, 1, "5m", "a,b", "nginx,redis", "app=web,tier=fe"]),
            ),
            (
                KindId::PersistentVolumeClaim,
                json!({"metadata": {"name": "data"}, "spec": {"volumeName": "pv1", "storageClassName": "standard", "volumeMode": "Filesystem"},
                    "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}}),
                json!([
                    "data",
                    "Bound",
                    "pv1",
                    "1Gi",
                    "RWO,ROX",
                    "standard",
                    "<unset>",
                    "<unknown>",
                    "Filesystem"
                ]),
            ),
            (
                KindId::Event,
                json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
                    "reason": "Pulled", "message": " pulled \n", "type": "Normal", "source": {"component": "kubelet", "host": "n1"},
                    "firstTimestamp": "2024-01-01T00:50:00Z", "lastTimestamp": CREATED, "count": 3}),
                json!([
                    "5m",
                    "Normal",
                    "Pulled",
                    "pod/p",
                    "spec.containers{a}",
                    "kubelet, n1",
                    "pulled",
                    "10m",
                    3,
                    "e1"
                ]),
            ),
            (
                KindId::EventsV1Event,
                json!({"metadata": {"name": "e2"}, "regarding": {"kind": "Deployment", "name": "web"}, "reason": "Scaled",
                    "note": "up", "type": "Normal", "eventTime": "2024-01-01T00:55:00.000000Z", "reportingController": "ctl",
                    "reportingInstance": "ctl-1", "series": {"count": 4, "lastObservedTime": "2024-01-01T00:59:00.000000Z"}}),
                json!([
                    "60s",
                    "Normal",
                    "Scaled",
                    "deployment/web",
                    "",
                    "ctl, ctl-1",
                    "up",
                    "5m",
                    4,
                    "e2"
                ]),
            ),
            (
                KindId::Deployment,
                json!({"metadata": {"name": "web", "creationTimestamp": CREATED},
                    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                             "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}, {"name": "side", "image": "busybox"}]}}},
                    "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}),
                json!([
                    "web",
                    "2/3",
                    3,
                    2,
                    "5m",
                    "nginx,side",
                    "nginx:1.25,busybox",
                    "app=web"
                ]),
            ),
            (
                KindId::StatefulSet,
                json!({"metadata": {"name": "db"}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres"}]}}}}),
                json!(["db", "0/1", "<unknown>", "pg", "postgres"]),
            ),
            (
                KindId::DaemonSet,
                json!({"metadata": {"name": "agent"}, "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["b", "a"]}]},
                    "template": {"spec": {"nodeSelector": {"os": "linux"}, "containers": [{"name": "a", "image": "agent"}]}}},
                    "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 1}}),
                json!([
                    "agent",
                    2,
                    2,
                    1,
                    2,
                    1,
                    "os=linux",
                    "<unknown>",
                    "a",
                    "agent",
                    "app in (a,b)"
                ]),
            ),
            (
                KindId::ReplicaSet,
                json!({"metadata": {"name": "web-1"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}, "status": {"replicas": 2}}),
                json!(["web-1", 2, 2, 0, "<unknown>", "", "", "app=web"]),
            ),
            (
                KindId::ReplicaSet,
                json!({"metadata": {"name": "none"}, "spec": {"replicas": 1}}),
                json!(["none", 1, 0, 0, "<unknown>", "", "", "<none>"]),
            ),
            (
                KindId::Job,
                json!({"metadata": {"name": "pi"}, "spec": {"completions": 1, "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
                    "status": {"succeeded": 1, "startTime": "2024-01-01T00:50:00Z", "completionTime": "2024-01-01T00:50:30Z",
                               "conditions": [{"type": "Complete", "status": "True"}]}}),
                json!([
                    "pi",
                    "Complete",
                    "1/1",
                    "30s",
                    "<unknown>",
                    "pi",
                    "perl",
                    "<none>"
                ]),
            ),
            (
                KindId::Job,
                json!({"metadata": {"name": "par"}, "spec": {"parallelism": 3}, "status": {"startTime": "2024-01-01T00:55:00Z"}}),
                json!([
                    "par",
                    "Running",
                    "0/1 of 3",
                    "5m",
                    "<unknown>",
                    "",
                    "",
                    "<none>"
                ]),
            ),
            (
                KindId::CronJob,
                json!({"metadata": {"name": "hello"}, "spec": {"schedule": "*/1 * * * *", "suspend": false,
                    "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
                    "status": {"lastScheduleTime": "2024-01-01T00:59:00Z", "active": [{"name": "j"}]}}),
                json!([
                    "hello",
                    "*/1 * * * *",
                    "<none>",
                    "False",
                    1,
                    "60s",
                    "<unknown>",
                    "c",
                    "busybox",
                    "<none>"
                ]),
            ),
            (
                KindId::Ingress,
                json!({"metadata": {"name": "ing"}, "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}, {}], "tls": [{}]},
                    "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}),
                json!([
                    "ing",
                    "nginx",
                    "a.example.com",
                    "1.2.3.4",
                    "80, 443",
                    "<unknown>"
                ]),
            ),
            (
                KindId::Ingress,
                json!({"metadata": {"name": "bare"}, "spec": {}}),
                json!(["bare", "<none>", "*", "", "80", "<unknown>"]),
            ),
            (
                KindId::EndpointSlice,
                json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}],
                    "endpoints": [{"addresses": ["10.1.0.1"]}, {"addresses": ["10.1.0.2"]}]}),
                json!([
                    "web-abc",
                    "IPv4",
                    "80,<unset>",
                    "10.1.0.1,10.1.0.2",
                    "<unknown>"
                ]),
            ),
            (
                KindId::PodDisruptionBudget,
                json!({"metadata": {"name": "pdb"}, "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}}),
                json!(["pdb", "50%", "N/A", 1, "<unknown>"]),
            ),
            (
                KindId::Lease,
                json!({"metadata": {"name": "leader", "creationTimestamp": CREATED}, "spec": {"holderIdentity": "node-1_abc"}}),
                json!(["leader", "node-1_abc", "5m"]),
            ),
            (
                KindId::ControllerRevision,
                json!({"metadata": {"name": "web-7d9", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true}]},
                    "data": {}, "revision": 2}),
                json!(["web-7d9", "statefulset.apps/web", 2, "<unknown>"]),
            ),
            (
                KindId::PriorityClass,
                json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}),
                json!(["high", 1000, false, "<unknown>", "Never"]),
            ),
            (
                KindId::NetworkPolicy,
                json!({"metadata": {"name": "np"}, "spec": {"podSelector": {}}}),
                json!(["np", "<none>", "<unknown>"]),
            ),
            (
                KindId::IngressClass,
                json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
                    "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}}),
                json!([
                    "nginx",
                    "k8s.io/ingress-nginx",
                    "IngressParameters.k8s.example.com/p",
                    "<unknown>"
                ]),
            ),
            (
                KindId::HorizontalPodAutoscaler,
                json!({"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 5, "metrics": [
                        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1000m"}}},
                        {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}}}]},
                    "status": {"currentReplicas": 2, "currentMetrics": [
                        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}]}}),
                json!([
                    "web",
                    "Deployment/web",
                    "cpu: 45%/80%, <unknown>/1 + 1 more...",
                    "1",
                    5,
                    2,
                    "<unknown>"
                ]),
            ),
            (
                KindId::ResourceQuota,
                json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "10", "limits.cpu": "2000m", "requests.memory": "1Gi"},
                    "used": {"pods": "3"}}}),
                json!([
                    "q",
                    "pods: 3/10, requests.memory: 0/1Gi",
                    "limits.cpu: 0/2",
                    "<unknown>"
                ]),
            ),
            (
                KindId::LimitRange,
                json!({"metadata": {"name": "l", "creationTimestamp": "2026-01-02T03:04:05Z"}}),
                json!(["l", "2026-01-02T03:04:05Z"]),
            ),
            (
                KindId::StorageClass,
                json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                    "provisioner": "ebs.csi.aws.com", "allowVolumeExpansion": true}),
                json!([
                    "fast (default)",
                    "ebs.csi.aws.com",
                    "Delete",
                    "Immediate",
                    true,
                    "<unknown>"
                ]),
            ),
        ];
        for (id, obj, want) in cases {
            let got = Value::from(get(id).cells(&obj, now()));
            assert_eq!(got, want, "{id:?} {obj}");
            assert_eq!(
                got.as_array().map(Vec::len),
                Some(get(id).columns.len()),
                "{id:?}"
            );
        }
    }

    #[test]
    fn load_balancer_addresses_are_cut_unless_wide() {
        let st = json!({"ingress": [{"hostname": "a-very-long-hostname.example.com"}]});
        assert_eq!(load_balancer(&st, false), "a-very-long-h...");
        assert_eq!(load_balancer(&st, true), "a-very-long-hostname.example.com");
        let st = json!({"ingress": [{"hostname": "ééééééééééééééééé"}]});
        assert_eq!(load_balancer(&st, false), "éééééé...");
    }

    #[test]
    fn pod_row_conditions() {
        let pod = get(KindId::Pod);
        assert_eq!(
            pod.row_conditions(&json!({"status": {"phase": "Failed"}})),
            Some(
                json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}])
            )
        );
        assert_eq!(
            pod.row_conditions(&json!({"status": {"phase": "Running"}})),
            None
        );
    }

    #[test]
    fn human_durations_match_apimachinery() {
        for (s, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 24 * 3600, "8d"),
            (2 * 365 * 24 * 3600, "2y"),
            (9 * 365 * 24 * 3600, "9y"),
        ] {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }
}
