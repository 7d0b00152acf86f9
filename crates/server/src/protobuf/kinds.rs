//! The protobuf messages this server reads, as tables ([`super::table`]): field numbers from
//! `k8s.io/api`'s `generated.proto`, JSON names and zero handling from the Go types' tags.
//! They cover what kubectl's `create` generators and `auth` commands send (kubectl sends those
//! as protobuf only) and the fields a typed client commonly sets beside them; any other field
//! set in a body is refused by name, not dropped.
//!
//! A status is skipped ([`Ty::Ignored`]): every kind here resets it on create and keeps the
//! stored one on a main-resource write.

use super::table::{Field, Msg, Ty};

const fn keep(tag: u32, json: &'static str, ty: Ty) -> Field {
    Field::keep(tag, json, ty)
}
const fn omit(tag: u32, json: &'static str, ty: Ty) -> Field {
    Field::omit(tag, json, ty)
}
const fn list(tag: u32, json: &'static str, ty: Ty) -> Field {
    Field::list(tag, json, ty)
}
/// A struct embedded inline (`json:",inline"`): its fields join the parent's.
const fn inline(tag: u32, msg: &'static Msg) -> Field {
    Field::keep(tag, "", Ty::Msg(msg))
}

pub static OBJECT_META: Msg = Msg {
    name: "v1.ObjectMeta",
    fields: &[
        omit(1, "name", Ty::String),
        omit(2, "generateName", Ty::String),
        omit(3, "namespace", Ty::String),
        omit(4, "selfLink", Ty::String),
        omit(5, "uid", Ty::String),
        omit(6, "resourceVersion", Ty::String),
        omit(7, "generation", Ty::Int64),
        keep(8, "creationTimestamp", Ty::Time),
        keep(9, "deletionTimestamp", Ty::Time),
        keep(10, "deletionGracePeriodSeconds", Ty::Int64),
        omit(11, "labels", Ty::StringMap),
        omit(12, "annotations", Ty::StringMap),
        list(13, "ownerReferences", Ty::Msg(&OWNER_REFERENCE)),
        list(14, "finalizers", Ty::String),
        list(17, "managedFields", Ty::Msg(&MANAGED_FIELDS_ENTRY)),
    ],
};

/// `metav1.ManagedFieldsEntry` (kubectl sends them back on `replace` and `auth reconcile`).
static MANAGED_FIELDS_ENTRY: Msg = Msg {
    name: "v1.ManagedFieldsEntry",
    fields: &[
        omit(1, "manager", Ty::String),
        omit(2, "operation", Ty::String),
        omit(3, "apiVersion", Ty::String),
        keep(4, "time", Ty::Time),
        omit(6, "fieldsType", Ty::String),
        keep(7, "fieldsV1", Ty::FieldsV1),
        omit(8, "subresource", Ty::String),
    ],
};

static OWNER_REFERENCE: Msg = Msg {
    name: "v1.OwnerReference",
    fields: &[
        keep(1, "kind", Ty::String),
        keep(3, "name", Ty::String),
        keep(4, "uid", Ty::String),
        keep(5, "apiVersion", Ty::String),
        keep(6, "controller", Ty::Bool),
        keep(7, "blockOwnerDeletion", Ty::Bool),
    ],
};

static LABEL_SELECTOR: Msg = Msg {
    name: "v1.LabelSelector",
    fields: &[
        omit(1, "matchLabels", Ty::StringMap),
        list(2, "matchExpressions", Ty::Msg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Msg = Msg {
    name: "v1.LabelSelectorRequirement",
    fields: &[
        keep(1, "key", Ty::String),
        keep(2, "operator", Ty::String),
        list(3, "values", Ty::String),
    ],
};

/// `metav1.DeleteOptions` (every pointer field is kept when sent).
pub static DELETE_OPTIONS: Msg = Msg {
    name: "v1.DeleteOptions",
    fields: &[
        keep(1, "gracePeriodSeconds", Ty::Int64),
        keep(2, "preconditions", Ty::Msg(&PRECONDITIONS)),
        keep(3, "orphanDependents", Ty::Bool),
        keep(4, "propagationPolicy", Ty::String),
        list(5, "dryRun", Ty::String),
        keep(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            Ty::Bool,
        ),
    ],
};

static PRECONDITIONS: Msg = Msg {
    name: "v1.Preconditions",
    fields: &[
        keep(1, "uid", Ty::String),
        keep(2, "resourceVersion", Ty::String),
    ],
};

// core/v1

static POD_TEMPLATE_SPEC: Msg = Msg {
    name: "v1.PodTemplateSpec",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&POD_SPEC)),
    ],
};

static POD_SPEC: Msg = Msg {
    name: "v1.PodSpec",
    fields: &[
        list(2, "containers", Ty::Msg(&CONTAINER)),
        omit(3, "restartPolicy", Ty::String),
        keep(4, "terminationGracePeriodSeconds", Ty::Int64),
        keep(5, "activeDeadlineSeconds", Ty::Int64),
        omit(6, "dnsPolicy", Ty::String),
        omit(7, "nodeSelector", Ty::StringMap),
        omit(8, "serviceAccountName", Ty::String),
        omit(9, "serviceAccount", Ty::String),
        omit(10, "nodeName", Ty::String),
        omit(11, "hostNetwork", Ty::Bool),
        omit(12, "hostPID", Ty::Bool),
        omit(13, "hostIPC", Ty::Bool),
        keep(14, "securityContext", Ty::Msg(&POD_SECURITY_CONTEXT)),
        list(15, "imagePullSecrets", Ty::Msg(&LOCAL_OBJECT_REFERENCE)),
        omit(16, "hostname", Ty::String),
        omit(17, "subdomain", Ty::String),
        omit(19, "schedulerName", Ty::String),
        list(20, "initContainers", Ty::Msg(&CONTAINER)),
        keep(21, "automountServiceAccountToken", Ty::Bool),
        list(22, "tolerations", Ty::Msg(&TOLERATION)),
        omit(24, "priorityClassName", Ty::String),
        keep(25, "priority", Ty::Int32),
        keep(27, "shareProcessNamespace", Ty::Bool),
        keep(29, "runtimeClassName", Ty::String),
        keep(30, "enableServiceLinks", Ty::Bool),
        keep(31, "preemptionPolicy", Ty::String),
        keep(35, "setHostnameAsFQDN", Ty::Bool),
        keep(37, "hostUsers", Ty::Bool),
        list(1, "volumes", Ty::Msg(&VOLUME)),
        keep(18, "affinity", Ty::Msg(&AFFINITY)),
        list(23, "hostAliases", Ty::Msg(&HOST_ALIAS)),
        list(28, "readinessGates", Ty::Msg(&POD_READINESS_GATE)),
        list(
            33,
            "topologySpreadConstraints",
            Ty::Msg(&TOPOLOGY_SPREAD_CONSTRAINT),
        ),
    ],
};

static VOLUME: Msg = Msg {
    name: "v1.Volume",
    fields: &[keep(1, "name", Ty::String), inline(2, &VOLUME_SOURCE)],
};

/// The volume sources operators and charts use; another one is refused by name.
static VOLUME_SOURCE: Msg = Msg {
    name: "v1.VolumeSource",
    fields: &[
        keep(1, "hostPath", Ty::Msg(&HOST_PATH_VOLUME_SOURCE)),
        keep(2, "emptyDir", Ty::Msg(&EMPTY_DIR_VOLUME_SOURCE)),
        keep(6, "secret", Ty::Msg(&SECRET_VOLUME_SOURCE)),
        keep(10, "persistentVolumeClaim", Ty::Msg(&PVC_VOLUME_SOURCE)),
        keep(16, "downwardAPI", Ty::Msg(&DOWNWARD_API_VOLUME_SOURCE)),
        keep(19, "configMap", Ty::Msg(&CONFIG_MAP_VOLUME_SOURCE)),
        keep(26, "projected", Ty::Msg(&PROJECTED_VOLUME_SOURCE)),
        keep(28, "csi", Ty::Msg(&CSI_VOLUME_SOURCE)),
    ],
};

static HOST_PATH_VOLUME_SOURCE: Msg = Msg {
    name: "v1.HostPathVolumeSource",
    fields: &[keep(1, "path", Ty::String), keep(2, "type", Ty::String)],
};

static EMPTY_DIR_VOLUME_SOURCE: Msg = Msg {
    name: "v1.EmptyDirVolumeSource",
    fields: &[
        omit(1, "medium", Ty::String),
        keep(2, "sizeLimit", Ty::Quantity),
    ],
};

static SECRET_VOLUME_SOURCE: Msg = Msg {
    name: "v1.SecretVolumeSource",
    fields: &[
        omit(1, "secretName", Ty::String),
        list(2, "items", Ty::Msg(&KEY_TO_PATH)),
        keep(3, "defaultMode", Ty::Int32),
        keep(4, "optional", Ty::Bool),
    ],
};

static KEY_TO_PATH: Msg = Msg {
    name: "v1.KeyToPath",
    fields: &[
        keep(1, "key", Ty::String),
        keep(2, "path", Ty::String),
        keep(3, "mode", Ty::Int32),
    ],
};

static PVC_VOLUME_SOURCE: Msg = Msg {
    name: "v1.PersistentVolumeClaimVolumeSource",
    fields: &[
        keep(1, "claimName", Ty::String),
        omit(2, "readOnly", Ty::Bool),
    ],
};

static DOWNWARD_API_VOLUME_SOURCE: Msg = Msg {
    name: "v1.DownwardAPIVolumeSource",
    fields: &[
        list(1, "items", Ty::Msg(&DOWNWARD_API_VOLUME_FILE)),
        keep(2, "defaultMode", Ty::Int32),
    ],
};

static DOWNWARD_API_VOLUME_FILE: Msg = Msg {
    name: "v1.DownwardAPIVolumeFile",
    fields: &[
        keep(1, "path", Ty::String),
        keep(2, "fieldRef", Ty::Msg(&OBJECT_FIELD_SELECTOR)),
        keep(3, "resourceFieldRef", Ty::Msg(&RESOURCE_FIELD_SELECTOR)),
        keep(4, "mode", Ty::Int32),
    ],
};

static RESOURCE_FIELD_SELECTOR: Msg = Msg {
    name: "v1.ResourceFieldSelector",
    fields: &[
        omit(1, "containerName", Ty::String),
        keep(2, "resource", Ty::String),
        keep(3, "divisor", Ty::Quantity),
    ],
};

static CONFIG_MAP_VOLUME_SOURCE: Msg = Msg {
    name: "v1.ConfigMapVolumeSource",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        list(2, "items", Ty::Msg(&KEY_TO_PATH)),
        keep(3, "defaultMode", Ty::Int32),
        keep(4, "optional", Ty::Bool),
    ],
};

static PROJECTED_VOLUME_SOURCE: Msg = Msg {
    name: "v1.ProjectedVolumeSource",
    fields: &[
        list(1, "sources", Ty::Msg(&VOLUME_PROJECTION)),
        keep(2, "defaultMode", Ty::Int32),
    ],
};

static VOLUME_PROJECTION: Msg = Msg {
    name: "v1.VolumeProjection",
    fields: &[
        keep(1, "secret", Ty::Msg(&KEYS_PROJECTION)),
        keep(2, "downwardAPI", Ty::Msg(&DOWNWARD_API_PROJECTION)),
        keep(3, "configMap", Ty::Msg(&KEYS_PROJECTION)),
        keep(
            4,
            "serviceAccountToken",
            Ty::Msg(&SERVICE_ACCOUNT_TOKEN_PROJECTION),
        ),
    ],
};

/// `SecretProjection` and `ConfigMapProjection` (the same fields).
static KEYS_PROJECTION: Msg = Msg {
    name: "v1.SecretProjection",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        list(2, "items", Ty::Msg(&KEY_TO_PATH)),
        keep(4, "optional", Ty::Bool),
    ],
};

static DOWNWARD_API_PROJECTION: Msg = Msg {
    name: "v1.DownwardAPIProjection",
    fields: &[list(1, "items", Ty::Msg(&DOWNWARD_API_VOLUME_FILE))],
};

static SERVICE_ACCOUNT_TOKEN_PROJECTION: Msg = Msg {
    name: "v1.ServiceAccountTokenProjection",
    fields: &[
        omit(1, "audience", Ty::String),
        keep(2, "expirationSeconds", Ty::Int64),
        keep(3, "path", Ty::String),
    ],
};

static CSI_VOLUME_SOURCE: Msg = Msg {
    name: "v1.CSIVolumeSource",
    fields: &[
        keep(1, "driver", Ty::String),
        keep(2, "readOnly", Ty::Bool),
        keep(3, "fsType", Ty::String),
        omit(4, "volumeAttributes", Ty::StringMap),
        keep(5, "nodePublishSecretRef", Ty::Msg(&LOCAL_OBJECT_REFERENCE)),
    ],
};

static AFFINITY: Msg = Msg {
    name: "v1.Affinity",
    fields: &[
        keep(1, "nodeAffinity", Ty::Msg(&NODE_AFFINITY)),
        keep(2, "podAffinity", Ty::Msg(&POD_AFFINITY)),
        keep(3, "podAntiAffinity", Ty::Msg(&POD_AFFINITY)),
    ],
};

static NODE_AFFINITY: Msg = Msg {
    name: "v1.NodeAffinity",
    fields: &[
        keep(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&NODE_SELECTOR),
        ),
        list(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&PREFERRED_SCHEDULING_TERM),
        ),
    ],
};

static NODE_SELECTOR: Msg = Msg {
    name: "v1.NodeSelector",
    fields: &[list(1, "nodeSelectorTerms", Ty::Msg(&NODE_SELECTOR_TERM))],
};

static NODE_SELECTOR_TERM: Msg = Msg {
    name: "v1.NodeSelectorTerm",
    fields: &[
        list(1, "matchExpressions", Ty::Msg(&NODE_SELECTOR_REQUIREMENT)),
        list(2, "matchFields", Ty::Msg(&NODE_SELECTOR_REQUIREMENT)),
    ],
};

static NODE_SELECTOR_REQUIREMENT: Msg = Msg {
    name: "v1.NodeSelectorRequirement",
    fields: &[
        keep(1, "key", Ty::String),
        keep(2, "operator", Ty::String),
        list(3, "values", Ty::String),
    ],
};

static PREFERRED_SCHEDULING_TERM: Msg = Msg {
    name: "v1.PreferredSchedulingTerm",
    fields: &[
        keep(1, "weight", Ty::Int32),
        keep(2, "preference", Ty::Msg(&NODE_SELECTOR_TERM)),
    ],
};

/// `PodAffinity` and `PodAntiAffinity` (the same fields).
static POD_AFFINITY: Msg = Msg {
    name: "v1.PodAffinity",
    fields: &[
        list(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&POD_AFFINITY_TERM),
        ),
        list(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&WEIGHTED_POD_AFFINITY_TERM),
        ),
    ],
};

static POD_AFFINITY_TERM: Msg = Msg {
    name: "v1.PodAffinityTerm",
    fields: &[
        keep(1, "labelSelector", Ty::Msg(&LABEL_SELECTOR)),
        list(2, "namespaces", Ty::String),
        keep(3, "topologyKey", Ty::String),
        keep(4, "namespaceSelector", Ty::Msg(&LABEL_SELECTOR)),
        list(5, "matchLabelKeys", Ty::String),
        list(6, "mismatchLabelKeys", Ty::String),
    ],
};

static WEIGHTED_POD_AFFINITY_TERM: Msg = Msg {
    name: "v1.WeightedPodAffinityTerm",
    fields: &[
        keep(1, "weight", Ty::Int32),
        keep(2, "podAffinityTerm", Ty::Msg(&POD_AFFINITY_TERM)),
    ],
};

static TOPOLOGY_SPREAD_CONSTRAINT: Msg = Msg {
    name: "v1.TopologySpreadConstraint",
    fields: &[
        keep(1, "maxSkew", Ty::Int32),
        keep(2, "topologyKey", Ty::String),
        keep(3, "whenUnsatisfiable", Ty::String),
        keep(4, "labelSelector", Ty::Msg(&LABEL_SELECTOR)),
        keep(5, "minDomains", Ty::Int32),
        keep(6, "nodeAffinityPolicy", Ty::String),
        keep(7, "nodeTaintsPolicy", Ty::String),
        list(8, "matchLabelKeys", Ty::String),
    ],
};

static HOST_ALIAS: Msg = Msg {
    name: "v1.HostAlias",
    fields: &[keep(1, "ip", Ty::String), list(2, "hostnames", Ty::String)],
};

static POD_READINESS_GATE: Msg = Msg {
    name: "v1.PodReadinessGate",
    fields: &[keep(1, "conditionType", Ty::String)],
};

static LIFECYCLE: Msg = Msg {
    name: "v1.Lifecycle",
    fields: &[
        keep(1, "postStart", Ty::Msg(&LIFECYCLE_HANDLER)),
        keep(2, "preStop", Ty::Msg(&LIFECYCLE_HANDLER)),
        keep(3, "stopSignal", Ty::String),
    ],
};

static LIFECYCLE_HANDLER: Msg = Msg {
    name: "v1.LifecycleHandler",
    fields: &[
        keep(1, "exec", Ty::Msg(&EXEC_ACTION)),
        keep(2, "httpGet", Ty::Msg(&HTTP_GET_ACTION)),
        keep(3, "tcpSocket", Ty::Msg(&TCP_SOCKET_ACTION)),
        keep(4, "sleep", Ty::Msg(&SLEEP_ACTION)),
    ],
};

static SLEEP_ACTION: Msg = Msg {
    name: "v1.SleepAction",
    fields: &[keep(1, "seconds", Ty::Int64)],
};

static CONTAINER_RESIZE_POLICY: Msg = Msg {
    name: "v1.ContainerResizePolicy",
    fields: &[
        keep(1, "resourceName", Ty::String),
        keep(2, "restartPolicy", Ty::String),
    ],
};

static POD_SECURITY_CONTEXT: Msg = Msg {
    name: "v1.PodSecurityContext",
    fields: &[
        keep(2, "runAsUser", Ty::Int64),
        keep(3, "runAsNonRoot", Ty::Bool),
        list(4, "supplementalGroups", Ty::Int64),
        keep(5, "fsGroup", Ty::Int64),
        keep(6, "runAsGroup", Ty::Int64),
        keep(9, "fsGroupChangePolicy", Ty::String),
    ],
};

static SECURITY_CONTEXT: Msg = Msg {
    name: "v1.SecurityContext",
    fields: &[
        keep(1, "capabilities", Ty::Msg(&CAPABILITIES)),
        keep(2, "privileged", Ty::Bool),
        keep(4, "runAsUser", Ty::Int64),
        keep(5, "runAsNonRoot", Ty::Bool),
        keep(6, "readOnlyRootFilesystem", Ty::Bool),
        keep(7, "allowPrivilegeEscalation", Ty::Bool),
        keep(8, "runAsGroup", Ty::Int64),
    ],
};

static CAPABILITIES: Msg = Msg {
    name: "v1.Capabilities",
    fields: &[list(1, "add", Ty::String), list(2, "drop", Ty::String)],
};

static CONTAINER: Msg = Msg {
    name: "v1.Container",
    fields: &[
        keep(1, "name", Ty::String),
        omit(2, "image", Ty::String),
        list(3, "command", Ty::String),
        list(4, "args", Ty::String),
        omit(5, "workingDir", Ty::String),
        list(6, "ports", Ty::Msg(&CONTAINER_PORT)),
        list(7, "env", Ty::Msg(&ENV_VAR)),
        keep(8, "resources", Ty::Msg(&RESOURCE_REQUIREMENTS)),
        list(9, "volumeMounts", Ty::Msg(&VOLUME_MOUNT)),
        keep(10, "livenessProbe", Ty::Msg(&PROBE)),
        keep(11, "readinessProbe", Ty::Msg(&PROBE)),
        omit(13, "terminationMessagePath", Ty::String),
        omit(14, "imagePullPolicy", Ty::String),
        keep(15, "securityContext", Ty::Msg(&SECURITY_CONTEXT)),
        omit(16, "stdin", Ty::Bool),
        omit(17, "stdinOnce", Ty::Bool),
        omit(18, "tty", Ty::Bool),
        list(19, "envFrom", Ty::Msg(&ENV_FROM_SOURCE)),
        omit(20, "terminationMessagePolicy", Ty::String),
        keep(22, "startupProbe", Ty::Msg(&PROBE)),
        keep(24, "restartPolicy", Ty::String),
        keep(12, "lifecycle", Ty::Msg(&LIFECYCLE)),
        list(23, "resizePolicy", Ty::Msg(&CONTAINER_RESIZE_POLICY)),
    ],
};

static CONTAINER_PORT: Msg = Msg {
    name: "v1.ContainerPort",
    fields: &[
        omit(1, "name", Ty::String),
        omit(2, "hostPort", Ty::Int32),
        keep(3, "containerPort", Ty::Int32),
        omit(4, "protocol", Ty::String),
        omit(5, "hostIP", Ty::String),
    ],
};

static ENV_VAR: Msg = Msg {
    name: "v1.EnvVar",
    fields: &[
        keep(1, "name", Ty::String),
        omit(2, "value", Ty::String),
        keep(3, "valueFrom", Ty::Msg(&ENV_VAR_SOURCE)),
    ],
};

static ENV_VAR_SOURCE: Msg = Msg {
    name: "v1.EnvVarSource",
    fields: &[
        keep(1, "fieldRef", Ty::Msg(&OBJECT_FIELD_SELECTOR)),
        keep(3, "configMapKeyRef", Ty::Msg(&KEY_SELECTOR)),
        keep(4, "secretKeyRef", Ty::Msg(&KEY_SELECTOR)),
    ],
};

static OBJECT_FIELD_SELECTOR: Msg = Msg {
    name: "v1.ObjectFieldSelector",
    fields: &[
        omit(1, "apiVersion", Ty::String),
        keep(2, "fieldPath", Ty::String),
    ],
};

/// `ConfigMapKeySelector` and `SecretKeySelector`, which share their shape.
static KEY_SELECTOR: Msg = Msg {
    name: "v1.KeySelector",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        keep(2, "key", Ty::String),
        keep(3, "optional", Ty::Bool),
    ],
};

static ENV_FROM_SOURCE: Msg = Msg {
    name: "v1.EnvFromSource",
    fields: &[
        omit(1, "prefix", Ty::String),
        keep(2, "configMapRef", Ty::Msg(&ENV_SOURCE)),
        keep(3, "secretRef", Ty::Msg(&ENV_SOURCE)),
    ],
};

/// `ConfigMapEnvSource` and `SecretEnvSource`.
static ENV_SOURCE: Msg = Msg {
    name: "v1.EnvSource",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        keep(2, "optional", Ty::Bool),
    ],
};

static LOCAL_OBJECT_REFERENCE: Msg = Msg {
    name: "v1.LocalObjectReference",
    fields: &[omit(1, "name", Ty::String)],
};

static RESOURCE_REQUIREMENTS: Msg = Msg {
    name: "v1.ResourceRequirements",
    fields: &[
        omit(1, "limits", Ty::QuantityMap),
        omit(2, "requests", Ty::QuantityMap),
    ],
};

static VOLUME_MOUNT: Msg = Msg {
    name: "v1.VolumeMount",
    fields: &[
        keep(1, "name", Ty::String),
        omit(2, "readOnly", Ty::Bool),
        keep(3, "mountPath", Ty::String),
        omit(4, "subPath", Ty::String),
        keep(5, "mountPropagation", Ty::String),
        omit(6, "subPathExpr", Ty::String),
        keep(7, "recursiveReadOnly", Ty::String),
    ],
};

static TOLERATION: Msg = Msg {
    name: "v1.Toleration",
    fields: &[
        omit(1, "key", Ty::String),
        omit(2, "operator", Ty::String),
        omit(3, "value", Ty::String),
        omit(4, "effect", Ty::String),
        keep(5, "tolerationSeconds", Ty::Int64),
    ],
};

static PROBE: Msg = Msg {
    name: "v1.Probe",
    fields: &[
        inline(1, &PROBE_HANDLER),
        omit(2, "initialDelaySeconds", Ty::Int32),
        omit(3, "timeoutSeconds", Ty::Int32),
        omit(4, "periodSeconds", Ty::Int32),
        omit(5, "successThreshold", Ty::Int32),
        omit(6, "failureThreshold", Ty::Int32),
        keep(7, "terminationGracePeriodSeconds", Ty::Int64),
    ],
};

static PROBE_HANDLER: Msg = Msg {
    name: "v1.ProbeHandler",
    fields: &[
        keep(1, "exec", Ty::Msg(&EXEC_ACTION)),
        keep(2, "httpGet", Ty::Msg(&HTTP_GET_ACTION)),
        keep(3, "tcpSocket", Ty::Msg(&TCP_SOCKET_ACTION)),
    ],
};

static EXEC_ACTION: Msg = Msg {
    name: "v1.ExecAction",
    fields: &[list(1, "command", Ty::String)],
};

static HTTP_GET_ACTION: Msg = Msg {
    name: "v1.HTTPGetAction",
    fields: &[
        omit(1, "path", Ty::String),
        keep(2, "port", Ty::IntOrString),
        omit(3, "host", Ty::String),
        omit(4, "scheme", Ty::String),
    ],
};

static TCP_SOCKET_ACTION: Msg = Msg {
    name: "v1.TCPSocketAction",
    fields: &[
        keep(1, "port", Ty::IntOrString),
        omit(2, "host", Ty::String),
    ],
};

pub static NAMESPACE: Msg = Msg {
    name: "v1.Namespace",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&NAMESPACE_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static NAMESPACE_SPEC: Msg = Msg {
    name: "v1.NamespaceSpec",
    fields: &[list(1, "finalizers", Ty::String)],
};

pub static CONFIG_MAP: Msg = Msg {
    name: "v1.ConfigMap",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        omit(2, "data", Ty::StringMap),
        omit(3, "binaryData", Ty::BytesMap),
        keep(4, "immutable", Ty::Bool),
    ],
};

pub static SECRET: Msg = Msg {
    name: "v1.Secret",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        omit(2, "data", Ty::BytesMap),
        omit(3, "type", Ty::String),
        omit(4, "stringData", Ty::StringMap),
        keep(5, "immutable", Ty::Bool),
    ],
};

pub static SERVICE_ACCOUNT: Msg = Msg {
    name: "v1.ServiceAccount",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        list(3, "imagePullSecrets", Ty::Msg(&LOCAL_OBJECT_REFERENCE)),
        keep(4, "automountServiceAccountToken", Ty::Bool),
    ],
};

pub static SERVICE: Msg = Msg {
    name: "v1.Service",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&SERVICE_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static SERVICE_SPEC: Msg = Msg {
    name: "v1.ServiceSpec",
    fields: &[
        list(1, "ports", Ty::Msg(&SERVICE_PORT)),
        omit(2, "selector", Ty::StringMap),
        omit(3, "clusterIP", Ty::String),
        omit(4, "type", Ty::String),
        list(5, "externalIPs", Ty::String),
        omit(7, "sessionAffinity", Ty::String),
        omit(8, "loadBalancerIP", Ty::String),
        list(9, "loadBalancerSourceRanges", Ty::String),
        omit(10, "externalName", Ty::String),
        omit(11, "externalTrafficPolicy", Ty::String),
        omit(12, "healthCheckNodePort", Ty::Int32),
        omit(13, "publishNotReadyAddresses", Ty::Bool),
        keep(17, "ipFamilyPolicy", Ty::String),
        list(18, "clusterIPs", Ty::String),
        list(19, "ipFamilies", Ty::String),
        keep(20, "allocateLoadBalancerNodePorts", Ty::Bool),
        keep(21, "loadBalancerClass", Ty::String),
        keep(22, "internalTrafficPolicy", Ty::String),
        keep(23, "trafficDistribution", Ty::String),
    ],
};

static SERVICE_PORT: Msg = Msg {
    name: "v1.ServicePort",
    fields: &[
        omit(1, "name", Ty::String),
        omit(2, "protocol", Ty::String),
        keep(3, "port", Ty::Int32),
        keep(4, "targetPort", Ty::IntOrString),
        omit(5, "nodePort", Ty::Int32),
        keep(6, "appProtocol", Ty::String),
    ],
};

// apps/v1

pub static DEPLOYMENT: Msg = Msg {
    name: "v1.Deployment",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&DEPLOYMENT_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static DEPLOYMENT_SPEC: Msg = Msg {
    name: "v1.DeploymentSpec",
    fields: &[
        keep(1, "replicas", Ty::Int32),
        keep(2, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(3, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        keep(4, "strategy", Ty::Msg(&DEPLOYMENT_STRATEGY)),
        omit(5, "minReadySeconds", Ty::Int32),
        keep(6, "revisionHistoryLimit", Ty::Int32),
        omit(7, "paused", Ty::Bool),
        keep(9, "progressDeadlineSeconds", Ty::Int32),
    ],
};

static DEPLOYMENT_STRATEGY: Msg = Msg {
    name: "v1.DeploymentStrategy",
    fields: &[
        omit(1, "type", Ty::String),
        keep(2, "rollingUpdate", Ty::Msg(&ROLLING_UPDATE_DEPLOYMENT)),
    ],
};

static ROLLING_UPDATE_DEPLOYMENT: Msg = Msg {
    name: "v1.RollingUpdateDeployment",
    fields: &[
        keep(1, "maxUnavailable", Ty::IntOrString),
        keep(2, "maxSurge", Ty::IntOrString),
    ],
};

// batch/v1

pub static JOB: Msg = Msg {
    name: "v1.Job",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&JOB_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static JOB_SPEC: Msg = Msg {
    name: "v1.JobSpec",
    fields: &[
        keep(1, "parallelism", Ty::Int32),
        keep(2, "completions", Ty::Int32),
        keep(3, "activeDeadlineSeconds", Ty::Int64),
        keep(4, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(5, "manualSelector", Ty::Bool),
        keep(6, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        keep(7, "backoffLimit", Ty::Int32),
        keep(8, "ttlSecondsAfterFinished", Ty::Int32),
        keep(9, "completionMode", Ty::String),
        keep(10, "suspend", Ty::Bool),
        keep(12, "backoffLimitPerIndex", Ty::Int32),
        keep(13, "maxFailedIndexes", Ty::Int32),
        keep(14, "podReplacementPolicy", Ty::String),
        keep(15, "managedBy", Ty::String),
    ],
};

pub static CRON_JOB: Msg = Msg {
    name: "v1.CronJob",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&CRON_JOB_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static CRON_JOB_SPEC: Msg = Msg {
    name: "v1.CronJobSpec",
    fields: &[
        keep(1, "schedule", Ty::String),
        keep(2, "startingDeadlineSeconds", Ty::Int64),
        omit(3, "concurrencyPolicy", Ty::String),
        keep(4, "suspend", Ty::Bool),
        keep(5, "jobTemplate", Ty::Msg(&JOB_TEMPLATE_SPEC)),
        keep(6, "successfulJobsHistoryLimit", Ty::Int32),
        keep(7, "failedJobsHistoryLimit", Ty::Int32),
        keep(8, "timeZone", Ty::String),
    ],
};

static JOB_TEMPLATE_SPEC: Msg = Msg {
    name: "v1.JobTemplateSpec",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&JOB_SPEC)),
    ],
};

// networking/v1

pub static INGRESS: Msg = Msg {
    name: "v1.Ingress",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&INGRESS_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static INGRESS_SPEC: Msg = Msg {
    name: "v1.IngressSpec",
    fields: &[
        keep(1, "defaultBackend", Ty::Msg(&INGRESS_BACKEND)),
        list(2, "tls", Ty::Msg(&INGRESS_TLS)),
        list(3, "rules", Ty::Msg(&INGRESS_RULE)),
        keep(4, "ingressClassName", Ty::String),
    ],
};

static INGRESS_TLS: Msg = Msg {
    name: "v1.IngressTLS",
    fields: &[
        list(1, "hosts", Ty::String),
        omit(2, "secretName", Ty::String),
    ],
};

static INGRESS_RULE: Msg = Msg {
    name: "v1.IngressRule",
    fields: &[omit(1, "host", Ty::String), inline(2, &INGRESS_RULE_VALUE)],
};

static INGRESS_RULE_VALUE: Msg = Msg {
    name: "v1.IngressRuleValue",
    fields: &[keep(1, "http", Ty::Msg(&HTTP_INGRESS_RULE_VALUE))],
};

static HTTP_INGRESS_RULE_VALUE: Msg = Msg {
    name: "v1.HTTPIngressRuleValue",
    fields: &[list(1, "paths", Ty::Msg(&HTTP_INGRESS_PATH))],
};

static HTTP_INGRESS_PATH: Msg = Msg {
    name: "v1.HTTPIngressPath",
    fields: &[
        omit(1, "path", Ty::String),
        keep(2, "backend", Ty::Msg(&INGRESS_BACKEND)),
        keep(3, "pathType", Ty::String),
    ],
};

static INGRESS_BACKEND: Msg = Msg {
    name: "v1.IngressBackend",
    fields: &[
        keep(3, "resource", Ty::Msg(&TYPED_LOCAL_OBJECT_REFERENCE)),
        keep(4, "service", Ty::Msg(&INGRESS_SERVICE_BACKEND)),
    ],
};

static TYPED_LOCAL_OBJECT_REFERENCE: Msg = Msg {
    name: "v1.TypedLocalObjectReference",
    fields: &[
        keep(1, "apiGroup", Ty::String),
        keep(2, "kind", Ty::String),
        keep(3, "name", Ty::String),
    ],
};

static INGRESS_SERVICE_BACKEND: Msg = Msg {
    name: "v1.IngressServiceBackend",
    fields: &[
        keep(1, "name", Ty::String),
        keep(2, "port", Ty::Msg(&SERVICE_BACKEND_PORT)),
    ],
};

static SERVICE_BACKEND_PORT: Msg = Msg {
    name: "v1.ServiceBackendPort",
    fields: &[omit(1, "name", Ty::String), omit(2, "number", Ty::Int32)],
};

// policy/v1

pub static POD_DISRUPTION_BUDGET: Msg = Msg {
    name: "v1.PodDisruptionBudget",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&POD_DISRUPTION_BUDGET_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static POD_DISRUPTION_BUDGET_SPEC: Msg = Msg {
    name: "v1.PodDisruptionBudgetSpec",
    fields: &[
        keep(1, "minAvailable", Ty::IntOrString),
        keep(2, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(3, "maxUnavailable", Ty::IntOrString),
        keep(4, "unhealthyPodEvictionPolicy", Ty::String),
    ],
};

/// `ResourceQuota` (`kubectl create quota`).
pub static RESOURCE_QUOTA: Msg = Msg {
    name: "v1.ResourceQuota",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&RESOURCE_QUOTA_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static RESOURCE_QUOTA_SPEC: Msg = Msg {
    name: "v1.ResourceQuotaSpec",
    fields: &[
        omit(1, "hard", Ty::QuantityMap),
        list(2, "scopes", Ty::String),
        keep(3, "scopeSelector", Ty::Msg(&SCOPE_SELECTOR)),
    ],
};

static SCOPE_SELECTOR: Msg = Msg {
    name: "v1.ScopeSelector",
    fields: &[list(
        1,
        "matchExpressions",
        Ty::Msg(&SCOPED_RESOURCE_SELECTOR_REQUIREMENT),
    )],
};

static SCOPED_RESOURCE_SELECTOR_REQUIREMENT: Msg = Msg {
    name: "v1.ScopedResourceSelectorRequirement",
    fields: &[
        keep(1, "scopeName", Ty::String),
        keep(2, "operator", Ty::String),
        list(3, "values", Ty::String),
    ],
};

// Workloads operators create (controller-runtime sends every built-in as protobuf).

/// core/v1 `Pod`.
pub static POD: Msg = Msg {
    name: "v1.Pod",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&POD_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

/// core/v1 `PersistentVolumeClaim`.
pub static PERSISTENT_VOLUME_CLAIM: Msg = Msg {
    name: "v1.PersistentVolumeClaim",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&PVC_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static PVC_SPEC: Msg = Msg {
    name: "v1.PersistentVolumeClaimSpec",
    fields: &[
        list(1, "accessModes", Ty::String),
        keep(2, "resources", Ty::Msg(&VOLUME_RESOURCE_REQUIREMENTS)),
        omit(3, "volumeName", Ty::String),
        keep(4, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(5, "storageClassName", Ty::String),
        keep(6, "volumeMode", Ty::String),
        keep(7, "dataSource", Ty::Msg(&TYPED_LOCAL_OBJECT_REFERENCE)),
        keep(9, "volumeAttributesClassName", Ty::String),
    ],
};

static VOLUME_RESOURCE_REQUIREMENTS: Msg = Msg {
    name: "v1.VolumeResourceRequirements",
    fields: &[
        omit(1, "limits", Ty::QuantityMap),
        omit(2, "requests", Ty::QuantityMap),
    ],
};

/// apps/v1 `StatefulSet` (claim templates are claims; their status is skipped).
pub static STATEFUL_SET: Msg = Msg {
    name: "v1.StatefulSet",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&STATEFUL_SET_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static STATEFUL_SET_SPEC: Msg = Msg {
    name: "v1.StatefulSetSpec",
    fields: &[
        keep(1, "replicas", Ty::Int32),
        keep(2, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(3, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        list(4, "volumeClaimTemplates", Ty::Msg(&PERSISTENT_VOLUME_CLAIM)),
        omit(5, "serviceName", Ty::String),
        omit(6, "podManagementPolicy", Ty::String),
        keep(7, "updateStrategy", Ty::Msg(&STATEFUL_SET_UPDATE_STRATEGY)),
        keep(8, "revisionHistoryLimit", Ty::Int32),
        omit(9, "minReadySeconds", Ty::Int32),
        keep(
            10,
            "persistentVolumeClaimRetentionPolicy",
            Ty::Msg(&PVC_RETENTION_POLICY),
        ),
        keep(11, "ordinals", Ty::Msg(&STATEFUL_SET_ORDINALS)),
    ],
};

static STATEFUL_SET_UPDATE_STRATEGY: Msg = Msg {
    name: "v1.StatefulSetUpdateStrategy",
    fields: &[
        omit(1, "type", Ty::String),
        keep(2, "rollingUpdate", Ty::Msg(&ROLLING_UPDATE_STATEFUL_SET)),
    ],
};

static ROLLING_UPDATE_STATEFUL_SET: Msg = Msg {
    name: "v1.RollingUpdateStatefulSetStrategy",
    fields: &[
        keep(1, "partition", Ty::Int32),
        keep(2, "maxUnavailable", Ty::IntOrString),
    ],
};

static PVC_RETENTION_POLICY: Msg = Msg {
    name: "v1.StatefulSetPersistentVolumeClaimRetentionPolicy",
    fields: &[
        omit(1, "whenDeleted", Ty::String),
        omit(2, "whenScaled", Ty::String),
    ],
};

static STATEFUL_SET_ORDINALS: Msg = Msg {
    name: "v1.StatefulSetOrdinals",
    fields: &[omit(1, "start", Ty::Int32)],
};

/// apps/v1 `DaemonSet`.
pub static DAEMON_SET: Msg = Msg {
    name: "v1.DaemonSet",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&DAEMON_SET_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static DAEMON_SET_SPEC: Msg = Msg {
    name: "v1.DaemonSetSpec",
    fields: &[
        keep(1, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(2, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        keep(3, "updateStrategy", Ty::Msg(&DAEMON_SET_UPDATE_STRATEGY)),
        omit(4, "minReadySeconds", Ty::Int32),
        keep(6, "revisionHistoryLimit", Ty::Int32),
    ],
};

static DAEMON_SET_UPDATE_STRATEGY: Msg = Msg {
    name: "v1.DaemonSetUpdateStrategy",
    fields: &[
        omit(1, "type", Ty::String),
        keep(2, "rollingUpdate", Ty::Msg(&ROLLING_UPDATE_DAEMON_SET)),
    ],
};

static ROLLING_UPDATE_DAEMON_SET: Msg = Msg {
    name: "v1.RollingUpdateDaemonSet",
    fields: &[
        keep(1, "maxUnavailable", Ty::IntOrString),
        keep(2, "maxSurge", Ty::IntOrString),
    ],
};

/// apps/v1 `ReplicaSet`.
pub static REPLICA_SET: Msg = Msg {
    name: "v1.ReplicaSet",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&REPLICA_SET_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static REPLICA_SET_SPEC: Msg = Msg {
    name: "v1.ReplicaSetSpec",
    fields: &[
        keep(1, "replicas", Ty::Int32),
        keep(2, "selector", Ty::Msg(&LABEL_SELECTOR)),
        keep(3, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        omit(4, "minReadySeconds", Ty::Int32),
    ],
};

// coordination.k8s.io/v1 and events: what leader election and event recorders send.

/// `Lease` (client-go's leader election lock).
pub static LEASE: Msg = Msg {
    name: "v1.Lease",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&LEASE_SPEC)),
    ],
};

static LEASE_SPEC: Msg = Msg {
    name: "v1.LeaseSpec",
    fields: &[
        keep(1, "holderIdentity", Ty::String),
        keep(2, "leaseDurationSeconds", Ty::Int32),
        keep(3, "acquireTime", Ty::MicroTime),
        keep(4, "renewTime", Ty::MicroTime),
        keep(5, "leaseTransitions", Ty::Int32),
        keep(6, "strategy", Ty::String),
        keep(7, "preferredHolder", Ty::String),
    ],
};

/// core/v1 `Event` (client-go's event recorder).
pub static EVENT: Msg = Msg {
    name: "v1.Event",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "involvedObject", Ty::Msg(&OBJECT_REFERENCE)),
        omit(3, "reason", Ty::String),
        omit(4, "message", Ty::String),
        keep(5, "source", Ty::Msg(&EVENT_SOURCE)),
        keep(6, "firstTimestamp", Ty::Time),
        keep(7, "lastTimestamp", Ty::Time),
        omit(8, "count", Ty::Int32),
        omit(9, "type", Ty::String),
        keep(10, "eventTime", Ty::MicroTime),
        keep(11, "series", Ty::Msg(&CORE_EVENT_SERIES)),
        omit(12, "action", Ty::String),
        keep(13, "related", Ty::Msg(&OBJECT_REFERENCE)),
        keep(14, "reportingComponent", Ty::String),
        keep(15, "reportingInstance", Ty::String),
    ],
};

static OBJECT_REFERENCE: Msg = Msg {
    name: "v1.ObjectReference",
    fields: &[
        omit(1, "kind", Ty::String),
        omit(2, "namespace", Ty::String),
        omit(3, "name", Ty::String),
        omit(4, "uid", Ty::String),
        omit(5, "apiVersion", Ty::String),
        omit(6, "resourceVersion", Ty::String),
        omit(7, "fieldPath", Ty::String),
    ],
};

static EVENT_SOURCE: Msg = Msg {
    name: "v1.EventSource",
    fields: &[
        omit(1, "component", Ty::String),
        omit(2, "host", Ty::String),
    ],
};

static CORE_EVENT_SERIES: Msg = Msg {
    name: "v1.EventSeries",
    fields: &[
        omit(1, "count", Ty::Int32),
        keep(2, "lastObservedTime", Ty::MicroTime),
    ],
};

/// `events.k8s.io/v1` `Event` (the newer event recorders).
pub static EVENTS_V1_EVENT: Msg = Msg {
    name: "v1.Event",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "eventTime", Ty::MicroTime),
        keep(3, "series", Ty::Msg(&EVENTS_V1_EVENT_SERIES)),
        omit(4, "reportingController", Ty::String),
        omit(5, "reportingInstance", Ty::String),
        omit(6, "action", Ty::String),
        omit(7, "reason", Ty::String),
        keep(8, "regarding", Ty::Msg(&OBJECT_REFERENCE)),
        keep(9, "related", Ty::Msg(&OBJECT_REFERENCE)),
        omit(10, "note", Ty::String),
        omit(11, "type", Ty::String),
        keep(12, "deprecatedSource", Ty::Msg(&EVENT_SOURCE)),
        keep(13, "deprecatedFirstTimestamp", Ty::Time),
        keep(14, "deprecatedLastTimestamp", Ty::Time),
        omit(15, "deprecatedCount", Ty::Int32),
    ],
};

static EVENTS_V1_EVENT_SERIES: Msg = Msg {
    name: "v1.EventSeries",
    fields: &[
        keep(1, "count", Ty::Int32),
        keep(2, "lastObservedTime", Ty::MicroTime),
    ],
};

// autoscaling/v1

/// `autoscaling/v1` `HorizontalPodAutoscaler` (`kubectl autoscale`).
pub static HORIZONTAL_POD_AUTOSCALER_V1: Msg = Msg {
    name: "v1.HorizontalPodAutoscaler",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&HPA_V1_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static HPA_V1_SPEC: Msg = Msg {
    name: "v1.HorizontalPodAutoscalerSpec",
    fields: &[
        keep(
            1,
            "scaleTargetRef",
            Ty::Msg(&CROSS_VERSION_OBJECT_REFERENCE),
        ),
        keep(2, "minReplicas", Ty::Int32),
        keep(3, "maxReplicas", Ty::Int32),
        keep(4, "targetCPUUtilizationPercentage", Ty::Int32),
    ],
};

static CROSS_VERSION_OBJECT_REFERENCE: Msg = Msg {
    name: "v1.CrossVersionObjectReference",
    fields: &[
        keep(1, "kind", Ty::String),
        keep(2, "name", Ty::String),
        omit(3, "apiVersion", Ty::String),
    ],
};

/// core/v1 `Node`: a create keeps its status ("Nodes allow *all* fields, including status, to
/// be set on create"), so the status is read here, for `/status` writes too.
pub static NODE: Msg = Msg {
    name: "v1.Node",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&NODE_SPEC)),
        keep(3, "status", Ty::Msg(&NODE_STATUS)),
    ],
};

static NODE_SPEC: Msg = Msg {
    name: "v1.NodeSpec",
    fields: &[
        omit(1, "podCIDR", Ty::String),
        list(7, "podCIDRs", Ty::String),
        omit(3, "providerID", Ty::String),
        omit(4, "unschedulable", Ty::Bool),
        list(5, "taints", Ty::Msg(&TAINT)),
        omit(2, "externalID", Ty::String),
    ],
};

static TAINT: Msg = Msg {
    name: "v1.Taint",
    fields: &[
        keep(1, "key", Ty::String),
        omit(2, "value", Ty::String),
        keep(3, "effect", Ty::String),
        keep(4, "timeAdded", Ty::Time),
    ],
};

static NODE_STATUS: Msg = Msg {
    name: "v1.NodeStatus",
    fields: &[
        omit(1, "capacity", Ty::QuantityMap),
        omit(2, "allocatable", Ty::QuantityMap),
        omit(3, "phase", Ty::String),
        list(4, "conditions", Ty::Msg(&NODE_CONDITION)),
        list(5, "addresses", Ty::Msg(&NODE_ADDRESS)),
        keep(6, "daemonEndpoints", Ty::Msg(&NODE_DAEMON_ENDPOINTS)),
        keep(7, "nodeInfo", Ty::Msg(&NODE_SYSTEM_INFO)),
        list(8, "images", Ty::Msg(&CONTAINER_IMAGE)),
        list(9, "volumesInUse", Ty::String),
        list(10, "volumesAttached", Ty::Msg(&ATTACHED_VOLUME)),
        list(12, "runtimeHandlers", Ty::Msg(&NODE_RUNTIME_HANDLER)),
        keep(13, "features", Ty::Msg(&NODE_FEATURES)),
    ],
};

static NODE_CONDITION: Msg = Msg {
    name: "v1.NodeCondition",
    fields: &[
        keep(1, "type", Ty::String),
        keep(2, "status", Ty::String),
        keep(3, "lastHeartbeatTime", Ty::Time),
        keep(4, "lastTransitionTime", Ty::Time),
        omit(5, "reason", Ty::String),
        omit(6, "message", Ty::String),
    ],
};

static NODE_ADDRESS: Msg = Msg {
    name: "v1.NodeAddress",
    fields: &[keep(1, "type", Ty::String), keep(2, "address", Ty::String)],
};

static NODE_DAEMON_ENDPOINTS: Msg = Msg {
    name: "v1.NodeDaemonEndpoints",
    fields: &[keep(1, "kubeletEndpoint", Ty::Msg(&DAEMON_ENDPOINT))],
};

static DAEMON_ENDPOINT: Msg = Msg {
    name: "v1.DaemonEndpoint",
    fields: &[keep(1, "Port", Ty::Int32)],
};

static NODE_SYSTEM_INFO: Msg = Msg {
    name: "v1.NodeSystemInfo",
    fields: &[
        keep(1, "machineID", Ty::String),
        keep(2, "systemUUID", Ty::String),
        keep(3, "bootID", Ty::String),
        keep(4, "kernelVersion", Ty::String),
        keep(5, "osImage", Ty::String),
        keep(6, "containerRuntimeVersion", Ty::String),
        keep(7, "kubeletVersion", Ty::String),
        keep(8, "kubeProxyVersion", Ty::String),
        keep(9, "operatingSystem", Ty::String),
        keep(10, "architecture", Ty::String),
        keep(11, "swap", Ty::Msg(&NODE_SWAP_STATUS)),
    ],
};

static NODE_SWAP_STATUS: Msg = Msg {
    name: "v1.NodeSwapStatus",
    fields: &[keep(1, "capacity", Ty::Int64)],
};

static CONTAINER_IMAGE: Msg = Msg {
    name: "v1.ContainerImage",
    fields: &[
        list(1, "names", Ty::String),
        omit(2, "sizeBytes", Ty::Int64),
    ],
};

static ATTACHED_VOLUME: Msg = Msg {
    name: "v1.AttachedVolume",
    fields: &[
        keep(1, "name", Ty::String),
        keep(2, "devicePath", Ty::String),
    ],
};

static NODE_RUNTIME_HANDLER: Msg = Msg {
    name: "v1.NodeRuntimeHandler",
    fields: &[
        keep(1, "name", Ty::String),
        keep(2, "features", Ty::Msg(&NODE_RUNTIME_HANDLER_FEATURES)),
    ],
};

static NODE_RUNTIME_HANDLER_FEATURES: Msg = Msg {
    name: "v1.NodeRuntimeHandlerFeatures",
    fields: &[
        keep(1, "recursiveReadOnlyMounts", Ty::Bool),
        keep(2, "userNamespaces", Ty::Bool),
    ],
};

static NODE_FEATURES: Msg = Msg {
    name: "v1.NodeFeatures",
    fields: &[keep(1, "supplementalGroupsPolicy", Ty::Bool)],
};

/// `storage.k8s.io/v1` `CSIDriver`.
pub static CSI_DRIVER: Msg = Msg {
    name: "v1.CSIDriver",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&CSI_DRIVER_SPEC)),
    ],
};

static CSI_DRIVER_SPEC: Msg = Msg {
    name: "v1.CSIDriverSpec",
    fields: &[
        keep(1, "attachRequired", Ty::Bool),
        keep(2, "podInfoOnMount", Ty::Bool),
        list(3, "volumeLifecycleModes", Ty::String),
        keep(4, "storageCapacity", Ty::Bool),
        keep(5, "fsGroupPolicy", Ty::String),
        list(6, "tokenRequests", Ty::Msg(&STORAGE_TOKEN_REQUEST)),
        keep(7, "requiresRepublish", Ty::Bool),
        keep(8, "seLinuxMount", Ty::Bool),
        keep(9, "nodeAllocatableUpdatePeriodSeconds", Ty::Int64),
    ],
};

static STORAGE_TOKEN_REQUEST: Msg = Msg {
    name: "v1.TokenRequest",
    fields: &[
        keep(1, "audience", Ty::String),
        keep(2, "expirationSeconds", Ty::Int64),
    ],
};

/// core/v1 `PodTemplate`.
pub static POD_TEMPLATE: Msg = Msg {
    name: "v1.PodTemplate",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
    ],
};

/// `certificates.k8s.io/v1` `CertificateSigningRequest`, with its status: kubectl's `certificate
/// approve|deny` sends the whole object, conditions included, to `/approval`. `spec.extra` is
/// read and left out: every write takes the spec from the requester or the stored object.
pub static CERTIFICATE_SIGNING_REQUEST: Msg = Msg {
    name: "v1.CertificateSigningRequest",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&CSR_SPEC)),
        omit(3, "status", Ty::Msg(&CSR_STATUS)),
    ],
};

static CSR_SPEC: Msg = Msg {
    name: "v1.CertificateSigningRequestSpec",
    fields: &[
        keep(1, "request", Ty::Bytes),
        omit(2, "username", Ty::String),
        omit(3, "uid", Ty::String),
        list(4, "groups", Ty::String),
        list(5, "usages", Ty::String),
        list(6, "extra", Ty::Ignored),
        keep(7, "signerName", Ty::String),
        keep(8, "expirationSeconds", Ty::Int32),
    ],
};

static CSR_STATUS: Msg = Msg {
    name: "v1.CertificateSigningRequestStatus",
    fields: &[
        list(1, "conditions", Ty::Msg(&CSR_CONDITION)),
        omit(2, "certificate", Ty::Bytes),
    ],
};

static CSR_CONDITION: Msg = Msg {
    name: "v1.CertificateSigningRequestCondition",
    fields: &[
        keep(1, "type", Ty::String),
        omit(2, "reason", Ty::String),
        omit(3, "message", Ty::String),
        keep(4, "lastUpdateTime", Ty::Time),
        keep(5, "lastTransitionTime", Ty::Time),
        keep(6, "status", Ty::String),
    ],
};

/// `node.k8s.io/v1` `RuntimeClass`.
pub static RUNTIME_CLASS: Msg = Msg {
    name: "v1.RuntimeClass",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "handler", Ty::String),
        keep(3, "overhead", Ty::Msg(&OVERHEAD)),
        keep(4, "scheduling", Ty::Msg(&SCHEDULING)),
    ],
};

static OVERHEAD: Msg = Msg {
    name: "v1.Overhead",
    fields: &[omit(1, "podFixed", Ty::QuantityMap)],
};

static SCHEDULING: Msg = Msg {
    name: "v1.Scheduling",
    fields: &[
        omit(1, "nodeSelector", Ty::StringMap),
        list(2, "tolerations", Ty::Msg(&TOLERATION)),
    ],
};

// scheduling.k8s.io/v1

pub static PRIORITY_CLASS: Msg = Msg {
    name: "v1.PriorityClass",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "value", Ty::Int32),
        omit(3, "globalDefault", Ty::Bool),
        omit(4, "description", Ty::String),
        keep(5, "preemptionPolicy", Ty::String),
    ],
};

// rbac.authorization.k8s.io/v1

/// `Role` and `ClusterRole` (a Role has no aggregation rule).
pub static ROLE: Msg = Msg {
    name: "v1.ClusterRole",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        list(2, "rules", Ty::Msg(&POLICY_RULE)),
        keep(3, "aggregationRule", Ty::Msg(&AGGREGATION_RULE)),
    ],
};

static POLICY_RULE: Msg = Msg {
    name: "v1.PolicyRule",
    fields: &[
        list(1, "verbs", Ty::String),
        list(2, "apiGroups", Ty::String),
        list(3, "resources", Ty::String),
        list(4, "resourceNames", Ty::String),
        list(5, "nonResourceURLs", Ty::String),
    ],
};

static AGGREGATION_RULE: Msg = Msg {
    name: "v1.AggregationRule",
    fields: &[list(1, "clusterRoleSelectors", Ty::Msg(&LABEL_SELECTOR))],
};

/// `RoleBinding` and `ClusterRoleBinding`.
pub static ROLE_BINDING: Msg = Msg {
    name: "v1.RoleBinding",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        list(2, "subjects", Ty::Msg(&SUBJECT)),
        keep(3, "roleRef", Ty::Msg(&ROLE_REF)),
    ],
};

static SUBJECT: Msg = Msg {
    name: "v1.Subject",
    fields: &[
        keep(1, "kind", Ty::String),
        omit(2, "apiGroup", Ty::String),
        keep(3, "name", Ty::String),
        omit(4, "namespace", Ty::String),
    ],
};

static ROLE_REF: Msg = Msg {
    name: "v1.RoleRef",
    fields: &[
        keep(1, "apiGroup", Ty::String),
        keep(2, "kind", Ty::String),
        keep(3, "name", Ty::String),
    ],
};

// authorization.k8s.io/v1 and authentication.k8s.io/v1: the reviews kubectl's `auth` commands
// and `create token` send.

pub static SELF_SUBJECT_ACCESS_REVIEW: Msg = Msg {
    name: "v1.SelfSubjectAccessReview",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&ACCESS_REVIEW_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static ACCESS_REVIEW_SPEC: Msg = Msg {
    name: "v1.SelfSubjectAccessReviewSpec",
    fields: &[
        keep(1, "resourceAttributes", Ty::Msg(&RESOURCE_ATTRIBUTES)),
        keep(
            2,
            "nonResourceAttributes",
            Ty::Msg(&NON_RESOURCE_ATTRIBUTES),
        ),
    ],
};

static RESOURCE_ATTRIBUTES: Msg = Msg {
    name: "v1.ResourceAttributes",
    fields: &[
        omit(1, "namespace", Ty::String),
        omit(2, "verb", Ty::String),
        omit(3, "group", Ty::String),
        omit(4, "version", Ty::String),
        omit(5, "resource", Ty::String),
        omit(6, "subresource", Ty::String),
        omit(7, "name", Ty::String),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Msg = Msg {
    name: "v1.NonResourceAttributes",
    fields: &[omit(1, "path", Ty::String), omit(2, "verb", Ty::String)],
};

pub static SELF_SUBJECT_RULES_REVIEW: Msg = Msg {
    name: "v1.SelfSubjectRulesReview",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&RULES_REVIEW_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static RULES_REVIEW_SPEC: Msg = Msg {
    name: "v1.SelfSubjectRulesReviewSpec",
    fields: &[omit(1, "namespace", Ty::String)],
};

pub static SELF_SUBJECT_REVIEW: Msg = Msg {
    name: "v1.SelfSubjectReview",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "status", Ty::Ignored),
    ],
};

pub static TOKEN_REQUEST: Msg = Msg {
    name: "v1.TokenRequest",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "spec", Ty::Msg(&TOKEN_REQUEST_SPEC)),
        keep(3, "status", Ty::Ignored),
    ],
};

static TOKEN_REQUEST_SPEC: Msg = Msg {
    name: "v1.TokenRequestSpec",
    fields: &[
        list(1, "audiences", Ty::String),
        keep(3, "boundObjectRef", Ty::Msg(&BOUND_OBJECT_REFERENCE)),
        keep(4, "expirationSeconds", Ty::Int64),
    ],
};

static BOUND_OBJECT_REFERENCE: Msg = Msg {
    name: "v1.BoundObjectReference",
    fields: &[
        omit(1, "kind", Ty::String),
        omit(2, "apiVersion", Ty::String),
        omit(3, "name", Ty::String),
        omit(4, "uid", Ty::String),
    ],
};

/// core/v1 `Binding` (`pods/<name>/binding`, what schedulers send).
static BINDING: Msg = Msg {
    name: "v1.Binding",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "target", Ty::Msg(&OBJECT_REFERENCE)),
    ],
};

/// `policy/v1` `Eviction` (`pods/<name>/eviction`; `kubectl drain` sends it as protobuf).
static EVICTION: Msg = Msg {
    name: "v1.Eviction",
    fields: &[
        keep(1, "metadata", Ty::Msg(&OBJECT_META)),
        keep(2, "deleteOptions", Ty::Msg(&DELETE_OPTIONS)),
    ],
};

/// The table of a review's protobuf body, by its API version and kind.
pub fn review(api_version: &str, kind: &str) -> Option<&'static Msg> {
    Some(match (api_version, kind) {
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => &SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => &SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => &SELF_SUBJECT_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => &TOKEN_REQUEST,
        ("v1", "Binding") => &BINDING,
        ("policy/v1" | "policy/v1beta1", "Eviction") => &EVICTION,
        _ => return None,
    })
}

/// The table of a built-in kind's protobuf body, by its API version and kind.
pub fn of(api_version: &str, kind: &str) -> Option<&'static Msg> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "Secret") => &SECRET,
        ("v1", "ResourceQuota") => &RESOURCE_QUOTA,
        ("v1", "Pod") => &POD,
        ("v1", "PersistentVolumeClaim") => &PERSISTENT_VOLUME_CLAIM,
        ("v1", "Node") => &NODE,
        ("node.k8s.io/v1", "RuntimeClass") => &RUNTIME_CLASS,
        ("v1", "PodTemplate") => &POD_TEMPLATE,
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => &CERTIFICATE_SIGNING_REQUEST,
        ("storage.k8s.io/v1", "CSIDriver") => &CSI_DRIVER,
        ("apps/v1", "StatefulSet") => &STATEFUL_SET,
        ("apps/v1", "DaemonSet") => &DAEMON_SET,
        ("apps/v1", "ReplicaSet") => &REPLICA_SET,
        ("v1", "Event") => &EVENT,
        ("events.k8s.io/v1", "Event") => &EVENTS_V1_EVENT,
        ("coordination.k8s.io/v1", "Lease") => &LEASE,
        ("autoscaling/v1", "HorizontalPodAutoscaler") => &HORIZONTAL_POD_AUTOSCALER_V1,
        ("v1", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("v1", "Service") => &SERVICE,
        ("apps/v1", "Deployment") => &DEPLOYMENT,
        ("batch/v1", "Job") => &JOB,
        ("batch/v1", "CronJob") => &CRON_JOB,
        ("networking.k8s.io/v1", "Ingress") => &INGRESS,
        ("policy/v1", "PodDisruptionBudget") => &POD_DISRUPTION_BUDGET,
        ("scheduling.k8s.io/v1", "PriorityClass") => &PRIORITY_CLASS,
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => &ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => &ROLE_BINDING,
        _ => return None,
    })
}

// Statuses, read only for `/status` writes (controller-runtime's `Status().Update`, which tests
// use to fake what no controller writes here); main-resource writes skip them.

macro_rules! with_status {
    ($name:ident, $msg:literal, $spec:ident, $status:ident) => {
        static $name: Msg = Msg {
            name: $msg,
            fields: &[
                keep(1, "metadata", Ty::Msg(&OBJECT_META)),
                keep(2, "spec", Ty::Msg(&$spec)),
                keep(3, "status", Ty::Msg(&$status)),
            ],
        };
    };
}

with_status!(
    DEPLOYMENT_WITH_STATUS,
    "v1.Deployment",
    DEPLOYMENT_SPEC,
    DEPLOYMENT_STATUS
);
with_status!(
    STATEFUL_SET_WITH_STATUS,
    "v1.StatefulSet",
    STATEFUL_SET_SPEC,
    STATEFUL_SET_STATUS
);
with_status!(
    DAEMON_SET_WITH_STATUS,
    "v1.DaemonSet",
    DAEMON_SET_SPEC,
    DAEMON_SET_STATUS
);
with_status!(
    REPLICA_SET_WITH_STATUS,
    "v1.ReplicaSet",
    REPLICA_SET_SPEC,
    REPLICA_SET_STATUS
);
with_status!(JOB_WITH_STATUS, "v1.Job", JOB_SPEC, JOB_STATUS);

static DEPLOYMENT_STATUS: Msg = Msg {
    name: "v1.DeploymentStatus",
    fields: &[
        omit(1, "observedGeneration", Ty::Int64),
        omit(2, "replicas", Ty::Int32),
        omit(3, "updatedReplicas", Ty::Int32),
        omit(7, "readyReplicas", Ty::Int32),
        omit(4, "availableReplicas", Ty::Int32),
        omit(5, "unavailableReplicas", Ty::Int32),
        keep(9, "terminatingReplicas", Ty::Int32),
        list(6, "conditions", Ty::Msg(&DEPLOYMENT_CONDITION)),
        keep(8, "collisionCount", Ty::Int32),
    ],
};

static DEPLOYMENT_CONDITION: Msg = Msg {
    name: "v1.DeploymentCondition",
    fields: &[
        keep(1, "type", Ty::String),
        keep(2, "status", Ty::String),
        keep(6, "lastUpdateTime", Ty::Time),
        keep(7, "lastTransitionTime", Ty::Time),
        omit(4, "reason", Ty::String),
        omit(5, "message", Ty::String),
    ],
};

/// The conditions of stateful sets, daemon sets and replica sets (the same fields).
static WORKLOAD_CONDITION: Msg = Msg {
    name: "v1.StatefulSetCondition",
    fields: &[
        keep(1, "type", Ty::String),
        keep(2, "status", Ty::String),
        keep(3, "lastTransitionTime", Ty::Time),
        omit(4, "reason", Ty::String),
        omit(5, "message", Ty::String),
    ],
};

static STATEFUL_SET_STATUS: Msg = Msg {
    name: "v1.StatefulSetStatus",
    fields: &[
        omit(1, "observedGeneration", Ty::Int64),
        keep(2, "replicas", Ty::Int32),
        omit(3, "readyReplicas", Ty::Int32),
        omit(4, "currentReplicas", Ty::Int32),
        omit(5, "updatedReplicas", Ty::Int32),
        omit(6, "currentRevision", Ty::String),
        omit(7, "updateRevision", Ty::String),
        keep(9, "collisionCount", Ty::Int32),
        list(10, "conditions", Ty::Msg(&WORKLOAD_CONDITION)),
        keep(11, "availableReplicas", Ty::Int32),
    ],
};

static DAEMON_SET_STATUS: Msg = Msg {
    name: "v1.DaemonSetStatus",
    fields: &[
        keep(1, "currentNumberScheduled", Ty::Int32),
        keep(2, "numberMisscheduled", Ty::Int32),
        keep(3, "desiredNumberScheduled", Ty::Int32),
        keep(4, "numberReady", Ty::Int32),
        omit(5, "observedGeneration", Ty::Int64),
        omit(6, "updatedNumberScheduled", Ty::Int32),
        omit(7, "numberAvailable", Ty::Int32),
        omit(8, "numberUnavailable", Ty::Int32),
        keep(9, "collisionCount", Ty::Int32),
        list(10, "conditions", Ty::Msg(&WORKLOAD_CONDITION)),
    ],
};

static REPLICA_SET_STATUS: Msg = Msg {
    name: "v1.ReplicaSetStatus",
    fields: &[
        keep(1, "replicas", Ty::Int32),
        omit(2, "fullyLabeledReplicas", Ty::Int32),
        omit(4, "readyReplicas", Ty::Int32),
        omit(5, "availableReplicas", Ty::Int32),
        keep(7, "terminatingReplicas", Ty::Int32),
        omit(3, "observedGeneration", Ty::Int64),
        list(6, "conditions", Ty::Msg(&WORKLOAD_CONDITION)),
    ],
};

static JOB_STATUS: Msg = Msg {
    name: "v1.JobStatus",
    fields: &[
        list(1, "conditions", Ty::Msg(&JOB_CONDITION)),
        keep(2, "startTime", Ty::Time),
        keep(3, "completionTime", Ty::Time),
        omit(4, "active", Ty::Int32),
        omit(5, "succeeded", Ty::Int32),
        omit(6, "failed", Ty::Int32),
        keep(11, "terminating", Ty::Int32),
        omit(7, "completedIndexes", Ty::String),
        keep(10, "failedIndexes", Ty::String),
        keep(
            8,
            "uncountedTerminatedPods",
            Ty::Msg(&UNCOUNTED_TERMINATED_PODS),
        ),
        keep(9, "ready", Ty::Int32),
    ],
};

static JOB_CONDITION: Msg = Msg {
    name: "v1.JobCondition",
    fields: &[
        keep(1, "type", Ty::String),
        keep(2, "status", Ty::String),
        keep(3, "lastProbeTime", Ty::Time),
        keep(4, "lastTransitionTime", Ty::Time),
        omit(5, "reason", Ty::String),
        omit(6, "message", Ty::String),
    ],
};

static UNCOUNTED_TERMINATED_PODS: Msg = Msg {
    name: "v1.UncountedTerminatedPods",
    fields: &[
        list(1, "succeeded", Ty::String),
        list(2, "failed", Ty::String),
    ],
};

/// The table of a kind whose `/status` writes are read as protobuf (its status decoded).
pub fn with_status(api_version: &str, kind: &str) -> Option<&'static Msg> {
    Some(match (api_version, kind) {
        ("apps/v1", "Deployment") => &DEPLOYMENT_WITH_STATUS,
        ("apps/v1", "StatefulSet") => &STATEFUL_SET_WITH_STATUS,
        ("apps/v1", "DaemonSet") => &DAEMON_SET_WITH_STATUS,
        ("apps/v1", "ReplicaSet") => &REPLICA_SET_WITH_STATUS,
        ("batch/v1", "Job") => &JOB_WITH_STATUS,
        ("v1", "Node") => &NODE,
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => &CERTIFICATE_SIGNING_REQUEST,
        _ => return None,
    })
}
