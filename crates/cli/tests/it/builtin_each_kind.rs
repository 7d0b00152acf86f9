//! Every built-in kind through the everyday kubectl verbs, as a user types them: `apply`
//! (client-side), `get` (the server's table), `describe`, `label`, `edit` (through `KUBE_EDITOR`),
//! `apply --server-side`, and `delete`.

use crate::support::TestServer;

/// One minimal valid manifest per kind (resource name for kubectl, object name, YAML).
const MANIFESTS: &[(&str, &str, &str)] = &[
    (
        "configmaps",
        "cm1",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\ndata:\n  a: b\n",
    ),
    (
        "secrets",
        "s1",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s1\nstringData:\n  k: v\n",
    ),
    (
        "serviceaccounts",
        "sa1",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa1\n",
    ),
    (
        "services",
        "svc1",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc1\nspec:\n  selector:\n    app: x\n  ports:\n  - port: 80\n",
    ),
    (
        "endpoints",
        "ep1",
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: ep1\n",
    ),
    (
        "pods",
        "pod1",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod1\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
    ),
    (
        "persistentvolumeclaims",
        "pvc1",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: pvc1\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n",
    ),
    (
        "persistentvolumes",
        "pv1",
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv1\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n  hostPath:\n    path: /data\n",
    ),
    (
        "csidrivers",
        "csi.example.com",
        "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: csi.example.com\nspec:\n  attachRequired: false\n  podInfoOnMount: true\n",
    ),
    (
        "podtemplates",
        "pt1",
        "apiVersion: v1\nkind: PodTemplate\nmetadata:\n  name: pt1\ntemplate:\n  metadata:\n    labels:\n      app: t\n  spec:\n    containers:\n    - name: c\n      image: nginx\n",
    ),
    (
        "apiservices",
        "v1beta1.metrics.k8s.io",
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1beta1.metrics.k8s.io\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n  insecureSkipTLSVerify: true\n  service:\n    namespace: kube-system\n    name: metrics-server\n",
    ),
    (
        "runtimeclasses",
        "rc-nvidia",
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: rc-nvidia\nhandler: nvidia\n",
    ),
    (
        "nodes",
        "node1",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node1\nspec:\n  podCIDR: 10.0.0.0/24\n",
    ),
    (
        "replicationcontrollers",
        "rc1",
        "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: rc1\nspec:\n  template:\n    metadata:\n      labels:\n        app: rc\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    ),
    (
        "events",
        "ev1",
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: ev1\ninvolvedObject:\n  kind: Pod\n  name: pod1\n  namespace: default\nreason: Tested\nmessage: hello\ntype: Normal\n",
    ),
    (
        "deployments",
        "dep1",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dep1\nspec:\n  selector:\n    matchLabels:\n      app: d\n  template:\n    metadata:\n      labels:\n        app: d\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    ),
    (
        "statefulsets",
        "sts1",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: sts1\nspec:\n  serviceName: svc1\n  selector:\n    matchLabels:\n      app: s\n  template:\n    metadata:\n      labels:\n        app: s\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    ),
    (
        "daemonsets",
        "ds1",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: ds1\nspec:\n  selector:\n    matchLabels:\n      app: ds\n  template:\n    metadata:\n      labels:\n        app: ds\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    ),
    (
        "replicasets",
        "rs1",
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: rs1\nspec:\n  selector:\n    matchLabels:\n      app: rs\n  template:\n    metadata:\n      labels:\n        app: rs\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    ),
    (
        "jobs",
        "job1",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: job1\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n",
    ),
    (
        "cronjobs",
        "cj1",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: cj1\nspec:\n  schedule: \"*/5 * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
    ),
    (
        "ingresses",
        "ing1",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: ing1\nspec:\n  defaultBackend:\n    service:\n      name: svc1\n      port:\n        number: 80\n",
    ),
    (
        "endpointslices",
        "eps1",
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: eps1\naddressType: IPv4\nendpoints: []\n",
    ),
    (
        "poddisruptionbudgets",
        "pdb1",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb1\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: d\n",
    ),
    (
        "controllerrevisions",
        "rev1",
        "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: rev1\ndata:\n  spec:\n    template: {}\nrevision: 1\n",
    ),
    (
        "priorityclasses",
        "pc1",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: pc1\nvalue: 100\n",
    ),
    (
        "networkpolicies",
        "np1",
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: np1\nspec:\n  podSelector:\n    matchLabels:\n      app: web\n  ingress:\n  - ports:\n    - port: 80\n",
    ),
    (
        "ingressclasses",
        "nginx1",
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: nginx1\nspec:\n  controller: k8s.io/ingress-nginx\n",
    ),
    (
        "horizontalpodautoscalers",
        "hpa1",
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: hpa1\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n  maxReplicas: 5\n",
    ),
    (
        "resourcequotas",
        "quota1",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota1\nspec:\n  hard:\n    pods: \"10\"\n",
    ),
    (
        "limitranges",
        "limits1",
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: limits1\nspec:\n  limits:\n  - type: Container\n    max:\n      cpu: \"2\"\n",
    ),
    (
        "storageclasses",
        "sc1",
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: sc1\nprovisioner: ebs.csi.aws.com\n",
    ),
    (
        "leases",
        "lease1",
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: lease1\nspec:\n  holderIdentity: a\n  leaseDurationSeconds: 15\n",
    ),
    (
        "validatingadmissionpolicies",
        "vap1",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: vap1\nspec:\n  matchConstraints:\n    resourceRules:\n    - operations: [CREATE]\n      apiGroups: [\"\"]\n      apiVersions: [v1]\n      resources: [configmaps]\n  validations:\n  - expression: \"true\"\n",
    ),
    (
        "validatingadmissionpolicybindings",
        "vapb1",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: vapb1\nspec:\n  policyName: vap1\n  validationActions: [Deny]\n",
    ),
];

/// A `KUBE_EDITOR` that adds the label `edited=yes` to the object kubectl hands it.
const EDITOR: &str = "import sys, yaml\np = sys.argv[1]\nd = yaml.safe_load(open(p))\n(d['metadata'].get('labels') or d['metadata'].setdefault('labels', {}))['edited'] = 'yes'\nd['metadata']['labels']['edited'] = 'yes'\nyaml.safe_dump(d, open(p, 'w'))\n";

#[test]
fn every_kind_through_the_everyday_verbs() {
    let s = TestServer::start();
    let editor = s.write("editor.py", EDITOR);
    for (resource, name, yaml) in MANIFESTS {
        let file = format!("{name}.yaml");
        s.write(&file, yaml);
        let out = s.kubectl_ok(&["apply", "-f", &file]);
        assert!(out.contains("created"), "{resource}: {out}");

        // `-o wide` shows priority-1 columns too (an Event's NAME is one, as upstream).
        let table = s.kubectl_ok(&["get", resource, name, "-o", "wide"]);
        let mut lines = table.lines();
        let head = lines.next().unwrap_or("");
        assert!(head.contains("NAME"), "{resource}: {table}");
        assert!(
            lines.next().is_some_and(|l| l.contains(name)),
            "{resource}: {table}"
        );

        let described = s.kubectl_ok(&["describe", resource, name]);
        assert!(described.contains(name), "{resource}: {described}");

        let out = s.kubectl_ok(&["label", resource, name, "tier=test"]);
        assert!(out.contains("labeled"), "{resource}: {out}");

        let out = std::process::Command::new("kubectl")
            .args(["edit", resource, name])
            .env("KUBECONFIG", s.kubeconfig())
            .env("KUBE_EDITOR", format!("python3 {}", editor.display()))
            .current_dir(s.data_dir().parent().expect("a parent dir"))
            .output()
            .expect("kubectl edit runs");
        assert!(
            out.status.success(),
            "{resource}: edit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let labels = s.kubectl_ok(&["get", resource, name, "-o", "jsonpath={.metadata.labels}"]);
        assert!(
            labels.contains("\"edited\":\"yes\"") && labels.contains("\"tier\":\"test\""),
            "{resource}: {labels}"
        );

        let out = s.kubectl_ok(&["apply", "--server-side", "--force-conflicts", "-f", &file]);
        assert!(out.contains("serverside-applied"), "{resource}: {out}");

        let out = s.kubectl_ok(&["delete", resource, name]);
        assert!(out.contains("deleted"), "{resource}: {out}");
        let gone = s.kubectl(&["get", resource, name]);
        assert!(!gone.status.success(), "{resource} is gone");
    }
}

/// `/openapi/v2` in protobuf: kubectl's first apply of a file holding a CRD and an object of it
/// says what a cluster says (the CRD is created, the object's kind is not known yet), and
/// `kubectl explain` reads the protobuf document.
#[test]
fn openapi_v2_protobuf_as_kubectl_reads_it() {
    let s = TestServer::start();
    let both = format!(
        "{}\n---\n{}",
        crate::support::crontab_crd(),
        crate::support::my_crontab()
    );
    s.write("both.yaml", &both);
    let out = s.kubectl(&["apply", "-f", "both.yaml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains(
            "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("no matches for kind \"CronTab\" in version \"stable.example.com/v1\"")
            && stderr.contains("ensure CRDs are installed first"),
        "{stderr}"
    );
    assert!(!stderr.contains("proto:"), "{stderr}");
    let out = s.kubectl_ok(&["explain", "configmap", "--output=plaintext-openapiv2"]);
    assert!(out.contains("KIND:     ConfigMap"), "{out}");
    assert!(out.contains("ConfigMap holds configuration data"), "{out}");
}

/// Field selectors of the built-in kinds, as kubectl sends them.
#[test]
fn field_selectors_of_built_in_kinds() {
    let s = TestServer::start();
    for (_, name, yaml) in MANIFESTS
        .iter()
        .filter(|(r, _, _)| matches!(*r, "pods" | "secrets" | "configmaps"))
    {
        let file = format!("{name}.yaml");
        s.write(&file, yaml);
        s.kubectl_ok(&["create", "-f", &file]);
    }
    s.write(
        "tls.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls1\ntype: kubernetes.io/tls\ndata:\n  tls.crt: YQ==\n  tls.key: Yg==\n",
    );
    s.kubectl_ok(&["create", "-f", "tls.yaml"]);
    let names = |args: &[&str]| -> String { s.kubectl_ok(args).trim().to_string() };
    assert_eq!(
        names(&[
            "get",
            "pods",
            "--field-selector",
            "status.phase=Pending",
            "-o",
            "name"
        ]),
        "pod/pod1"
    );
    assert_eq!(
        names(&[
            "get",
            "pods",
            "--field-selector",
            "status.phase=Running",
            "-o",
            "name"
        ]),
        ""
    );
    assert_eq!(
        names(&[
            "get",
            "secrets",
            "--field-selector",
            "type=kubernetes.io/tls",
            "-o",
            "name"
        ]),
        "secret/tls1"
    );
    assert_eq!(
        names(&[
            "get",
            "cm",
            "--field-selector",
            "metadata.name=cm1",
            "-o",
            "name"
        ]),
        "configmap/cm1"
    );
    // A field the kind does not index is refused as upstream refuses it.
    let out = s.kubectl(&["get", "cm", "--field-selector", "data.a=b"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("field label not supported: data.a"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kubectl get apiservices` as on a cluster: every built-in group version local and
/// available, a registered aggregated API reported unavailable with upstream's reason.
#[test]
fn kubectl_lists_api_services() {
    let s = TestServer::start();
    crate::support::eventually("v1.apps is registered", || {
        s.kubectl(&["get", "apiservice", "v1.apps"])
            .status
            .success()
    });
    let table = s.kubectl_ok(&["get", "apiservices"]);
    let header = crate::support::header(&table);
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"], "{table}");
    let apps = table
        .lines()
        .find(|l| l.starts_with("v1.apps "))
        .unwrap_or_else(|| panic!("{table}"));
    assert_eq!(
        apps.split_whitespace().collect::<Vec<_>>()[..3],
        ["v1.apps", "Local", "True"]
    );

    s.write(
        "metrics.yaml",
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1beta1.metrics.k8s.io\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n  insecureSkipTLSVerify: true\n  service:\n    namespace: kube-system\n    name: metrics-server\n",
    );
    s.kubectl_ok(&["apply", "-f", "metrics.yaml"]);
    crate::support::eventually("the aggregated API is reported unavailable", || {
        s.kubectl_ok(&[
            "get",
            "apiservice",
            "v1beta1.metrics.k8s.io",
            "--no-headers",
        ])
        .contains("kube-system/metrics-server   False (ServiceNotFound)")
    });
    let wait = s.kubectl(&[
        "wait",
        "--for=condition=Available=False",
        "apiservice/v1beta1.metrics.k8s.io",
        "--timeout=10s",
    ]);
    assert!(
        wait.status.success(),
        "{}",
        String::from_utf8_lossy(&wait.stderr)
    );
}
