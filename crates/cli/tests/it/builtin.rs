//! The built-in kinds operators touch (config maps, secrets, service accounts, deployments,
//! events in both groups, leases), driven with the real kubectl as a user types it. The server
//! stores them only: no workload controller runs, as in envtest.

use crate::support::{TestServer, header};

/// kubectl's stderr.
fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubectl expecting failure; returns stderr.
fn kubectl_err(s: &TestServer, args: &[&str]) -> String {
    let out = s.kubectl(args);
    assert!(
        !out.status.success(),
        "kubectl {args:?} unexpectedly succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr(&out)
}

/// Regression: a Service repeating a (protocol, port) pair was stored; kube-apiserver refuses it.
#[test]
fn services_with_repeated_ports_are_refused() {
    let s = TestServer::start();
    s.write(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports:\n  - {name: a, port: 80}\n  - {name: b, port: 80}\n",
    );
    let err = kubectl_err(&s, &["apply", "-f", "svc.yaml"]);
    assert!(
        err.contains(
            "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}"
        ),
        "{err}"
    );
}

/// `kubectl replace` of a missing object creates the kinds upstream creates on update (a Role,
/// a Lease) and fails with NotFound for the others (a `ConfigMap`), as on a cluster.
#[test]
fn kubectl_replace_creates_only_the_kinds_upstream_creates_on_update() {
    let s = TestServer::start();
    s.write(
        "role.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: reader}\nrules:\n- {apiGroups: [\"\"], resources: [pods], verbs: [get]}\n",
    );
    let out = s.kubectl_ok(&["replace", "-f", "role.yaml"]);
    assert_eq!(out.trim(), "role.rbac.authorization.k8s.io/reader replaced");
    assert_eq!(
        s.kubectl_ok(&["get", "role", "reader", "-o", "jsonpath={.rules[0].verbs}"]),
        "[\"get\"]"
    );
    s.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: absent}\n",
    );
    let err = kubectl_err(&s, &["replace", "-f", "cm.yaml"]);
    assert!(err.contains("configmaps \"absent\" not found"), "{err}");
}

/// `kubectl get deploy web -o jsonpath=<expr>`.
fn web_jsonpath(s: &TestServer, expr: &str) -> String {
    s.kubectl_ok(&["get", "deploy", "web", "-o", &format!("jsonpath={expr}")])
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
";

/// kubectl's `create` generators for workloads, services, ingresses and budgets send protobuf
/// only; each object is stored as kube-apiserver stores it (defaults included).
#[test]
fn kubectl_create_generators_send_protobuf_the_server_reads() {
    let s = TestServer::start();
    for (args, created) in [
        (
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=0",
                "--port=80",
            ][..],
            "deployment.apps/web created",
        ),
        (
            &[
                "create",
                "job",
                "once",
                "--image=busybox",
                "--",
                "echo",
                "hi",
            ],
            "job.batch/once created",
        ),
        (
            &[
                "create",
                "cronjob",
                "tick",
                "--image=busybox",
                "--schedule=*/5 * * * *",
                "--",
                "date",
            ],
            "cronjob.batch/tick created",
        ),
        (
            &["create", "job", "manual", "--from=cronjob/tick"],
            "job.batch/manual created",
        ),
        (
            &["create", "service", "clusterip", "web", "--tcp=80:8080"],
            "service/web created",
        ),
        (
            &[
                "create",
                "ingress",
                "web",
                "--rule=example.com/api*=web:80",
                "--class=nginx",
            ],
            "ingress.networking.k8s.io/web created",
        ),
        (
            &[
                "create",
                "poddisruptionbudget",
                "web",
                "--selector=app=web",
                "--min-available=50%",
            ],
            "poddisruptionbudget.policy/web created",
        ),
        (
            &[
                "create",
                "priorityclass",
                "high",
                "--value=1000",
                "--description=important",
            ],
            "priorityclass.scheduling.k8s.io/high created",
        ),
        (
            &[
                "create",
                "quota",
                "q1",
                "--hard=pods=10,requests.cpu=2",
                "--scopes=NotBestEffort",
            ],
            "resourcequota/q1 created",
        ),
    ] {
        assert_eq!(s.kubectl_ok(args).trim(), created, "{args:?}");
    }
    let get =
        |what: &str, path: &str| s.kubectl_ok(&["get", what, "-o", &format!("jsonpath={path}")]);
    // `--replicas=0` is a pointer set to 0: kept, not defaulted to 1.
    assert_eq!(get("deployment/web", "{.spec.replicas}"), "0");
    assert_eq!(
        get(
            "deployment/web",
            "{.spec.template.spec.containers[0].ports[0]}"
        ),
        r#"{"containerPort":80,"protocol":"TCP"}"#
    );
    assert_eq!(
        get("deployment/web", "{.spec.strategy.type}"),
        "RollingUpdate"
    );
    assert_eq!(
        get("job/once", "{.spec.template.spec.containers[0].command}"),
        r#"["echo","hi"]"#
    );
    assert_eq!(
        get("job/once", "{.spec.template.spec.restartPolicy}"),
        "Never"
    );
    assert_eq!(get("cronjob/tick", "{.spec.schedule}"), "*/5 * * * *");
    assert_eq!(
        get(
            "job/manual",
            "{.metadata.ownerReferences[0].kind} {.metadata.annotations}"
        ),
        r#"CronJob {"cronjob.kubernetes.io/instantiate":"manual"}"#
    );
    assert_eq!(
        get("service/web", "{.spec.ports[0]}"),
        r#"{"name":"80-8080","port":80,"protocol":"TCP","targetPort":8080}"#
    );
    assert_eq!(
        get(
            "ingress/web",
            "{.spec.ingressClassName} {.spec.rules[0].http.paths[0]}"
        ),
        r#"nginx {"backend":{"service":{"name":"web","port":{"number":80}}},"path":"/api","pathType":"Prefix"}"#
    );
    assert_eq!(get("pdb/web", "{.spec.minAvailable}"), "50%");
    assert_eq!(
        get("pc/high", "{.value} {.description} {.preemptionPolicy}"),
        "1000 important PreemptLowerPriority"
    );
    assert_eq!(
        get("quota/q1", "{.spec.hard} {.spec.scopes}"),
        r#"{"pods":"10","requests.cpu":"2"} ["NotBestEffort"]"#
    );
    let err = kubectl_err(&s, &["create", "priorityclass", "system-mine", "--value=1"]);
    assert!(
        err.contains("priority class names with 'system-' prefix are reserved for system use only"),
        "{err}"
    );
    // `kubectl run` sends its Pod as protobuf.
    let out = s.kubectl_ok(&[
        "run",
        "runner",
        "--image=nginx:1.27",
        "--labels=app=run",
        "--env=A=b",
    ]);
    assert_eq!(out.trim(), "pod/runner created");
    assert_eq!(
        get(
            "pod/runner",
            "{.metadata.labels.app} {.spec.containers[0].image} {.spec.containers[0].env[0].value}"
        ),
        "run nginx:1.27 b"
    );
    // `kubectl autoscale` sends an `autoscaling/v1` HPA (protobuf); it is stored at v2, read
    // at either version.
    let out = s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=5",
    ]);
    assert_eq!(
        out.trim(),
        "horizontalpodautoscaler.autoscaling/web autoscaled"
    );
    assert_eq!(
        get(
            "hpa/web",
            "{.apiVersion} {.spec.metrics[0].resource.target.averageUtilization}"
        ),
        "autoscaling/v2 50"
    );
    let v1: serde_json::Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web",
    ]))
    .unwrap();
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(v1["spec"]["maxReplicas"], 5);
    let table = s.kubectl_ok(&["get", "hpa", "web"]);
    assert!(table.contains("Deployment/web"), "{table}");
    // `kubectl expose` reads the deployment back and creates its service.
    let out = s.kubectl_ok(&["expose", "deployment", "web", "--name=web2", "--port=80"]);
    assert_eq!(out.trim(), "service/web2 exposed");
    assert_eq!(get("service/web2", "{.spec.selector}"), r#"{"app":"web"}"#);
}

#[test]
fn configmaps_secrets_and_serviceaccounts() {
    let s = TestServer::start();
    // kubectl sends these creates as protobuf.
    let out = s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    assert_eq!(out.trim(), "configmap/x created");
    let out = s.kubectl_ok(&["get", "cm", "x"]);
    assert_eq!(header(&out), ["NAME", "DATA", "AGE"], "{out}");
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["x", "1"], "{out}");
    assert_eq!(
        s.kubectl_ok(&["get", "configmap", "x", "-o", "jsonpath={.data.a}"]),
        "b"
    );

    let out = s.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=k=v"]);
    assert_eq!(out.trim(), "secret/s created");
    assert_eq!(
        s.kubectl_ok(&["get", "secret", "s", "-o", "jsonpath={.data.k} {.type}"]),
        "dg== Opaque"
    );
    let out = s.kubectl_ok(&["get", "secrets"]);
    assert_eq!(header(&out), ["NAME", "TYPE", "DATA", "AGE"], "{out}");

    let out = s.kubectl_ok(&["create", "serviceaccount", "bot"]);
    assert_eq!(out.trim(), "serviceaccount/bot created");
    let out = s.kubectl_ok(&["get", "sa", "bot"]);
    assert_eq!(header(&out), ["NAME", "SECRETS", "AGE"], "{out}");

    // Validation with upstream's texts.
    s.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: badkey}\ndata: {\"a b\": c}\n",
    );
    let err = kubectl_err(&s, &["create", "-f", "cm.yaml"]);
    assert!(
        err.contains(r#"The ConfigMap "badkey" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"#),
        "{err}"
    );
    s.write(
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: frozen}\nimmutable: true\nstringData: {k: v}\n",
    );
    s.kubectl_ok(&["create", "-f", "secret.yaml"]);
    let err = kubectl_err(
        &s,
        &[
            "patch",
            "secret",
            "frozen",
            "-p",
            r#"{"stringData":{"k":"w"}}"#,
        ],
    );
    assert!(
        err.contains(r#"The Secret "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set"#),
        "{err}"
    );
    // Unknown fields: kubectl asks for strict decoding.
    s.write(
        "typo.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: typo}\ndat: {a: b}\n",
    );
    let err = kubectl_err(&s, &["create", "-f", "typo.yaml"]);
    assert!(
        err.contains(r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "dat""#),
        "{err}"
    );
    let out = s.kubectl(&["create", "-f", "typo.yaml", "--validate=warn"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(r#"unknown field "dat""#),
        "{}",
        stderr(&out)
    );

    // A value of the wrong JSON type is Go's decoding error.
    s.write(
        "wrongtype.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t"},"data":"x"}"#,
    );
    let err = kubectl_err(&s, &["create", "-f", "wrongtype.json"]);
    assert!(
        err.contains(r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string"#),
        "{err}"
    );

    // Discovery and OpenAPI.
    let out = s.kubectl_ok(&["explain", "configmap.data"]);
    assert!(out.contains("KIND:       ConfigMap"), "{out}");
    assert!(out.contains("FIELD: data <map[string]string>"), "{out}");
    let out = s.kubectl_ok(&["api-resources"]);
    for want in [
        "configmaps ",
        "secrets ",
        "serviceaccounts ",
        "deployments ",
        "leases ",
        "events ",
    ] {
        assert!(out.contains(want), "{want} missing in {out}");
    }
    assert!(out.contains("events.k8s.io/v1"), "{out}");
    let out = s.kubectl_ok(&["api-resources", "--api-group=apps", "-o", "name"]);
    assert!(out.contains("deployments.apps"), "{out}");
}

/// Regression: a container requesting more than its limit, or a negative quantity, was stored;
/// kube-apiserver refuses both with the quantities in their canonical form. Also: a workload's
/// template does not get `enableServiceLinks` (only pods do).
#[test]
fn resource_requests_above_limits_are_refused() {
    let s = TestServer::start();
    s.write(
        "over.yaml",
        &DEPLOYMENT.replace(
            "        ports: [{containerPort: 80}]\n",
            "        resources: {limits: {cpu: 500m}, requests: {cpu: \"0.75\", memory: -1Gi}}\n",
        ),
    );
    let err = kubectl_err(&s, &["apply", "-f", "over.yaml"]);
    assert!(
        err.contains(
            "spec.template.spec.containers[0].resources.requests: Invalid value: \"750m\": must be less than or equal to cpu limit of 500m"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "spec.template.spec.containers[0].resources.requests[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"
        ),
        "{err}"
    );
    s.write("web.yaml", DEPLOYMENT);
    s.kubectl_ok(&["apply", "-f", "web.yaml"]);
    assert_eq!(
        web_jsonpath(&s, "{.spec.template.spec.enableServiceLinks}"),
        ""
    );
}

/// `kubectl apply --prune -l` (its default allowlist names `ReplicationControllers` and
/// `PersistentVolumes`, so every kind of it must be served): an object of the set that left the
/// file is deleted, one outside the selector is kept. A `ReplicationController` defaults its
/// selector and labels from its template and scales through `/scale`.
#[test]
fn apply_prune_deletes_what_left_the_file() {
    let s = TestServer::start();
    let cm = |name: &str, app: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{app: {app}}}\ndata: {{a: b}}\n"
        )
    };
    s.write(
        "both.yaml",
        &format!("{DEPLOYMENT}---\n{}", cm("cfg", "web")),
    );
    s.kubectl_ok(&["apply", "-f", "both.yaml"]);
    s.write("other.yaml", &cm("other", "db"));
    s.kubectl_ok(&["apply", "-f", "other.yaml"]);
    s.write("web.yaml", DEPLOYMENT);
    let out = s.kubectl_ok(&["apply", "--prune", "-l", "app=web", "-f", "web.yaml"]);
    assert!(out.contains("configmap/cfg pruned"), "{out}");
    let names = s.kubectl_ok(&["get", "cm", "-o", "name"]);
    assert!(!names.contains("configmap/cfg"), "{names}");
    assert!(names.contains("configmap/other"), "{names}");

    s.write(
        "rc.yaml",
        "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: rc\nspec:\n  template:\n    metadata:\n      labels: {app: legacy}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    );
    s.kubectl_ok(&["apply", "-f", "rc.yaml"]);
    let got = s.kubectl_ok(&[
        "get",
        "rc",
        "rc",
        "-o",
        "jsonpath={.spec.selector} {.metadata.labels} {.spec.replicas} {.status.replicas}",
    ]);
    assert_eq!(got, r#"{"app":"legacy"} {"app":"legacy"} 1 0"#);
    s.kubectl_ok(&["scale", "rc/rc", "--replicas=3"]);
    let wide = s.kubectl_ok(&["get", "rc", "-o", "wide"]);
    assert_eq!(
        header(&wide),
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{wide}"
    );
    let row: Vec<&str> = wide
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], ["rc", "3", "0", "0"], "{wide}");
    assert_eq!(row[5..], ["c", "nginx", "app=legacy"], "{wide}");
}

#[test]
fn deployments_apply_scale_label_patch() {
    let s = TestServer::start();
    s.write("web.yaml", DEPLOYMENT);
    let out = s.kubectl_ok(&["apply", "-f", "web.yaml"]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    let out = s.kubectl_ok(&["get", "deploy"]);
    assert_eq!(
        header(&out),
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "{out}"
    );
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    // Stored only: no controller makes pods.
    assert_eq!(row[..4], ["web", "0/2", "0", "0"], "{out}");
    assert_eq!(
        web_jsonpath(
            &s,
            "{.metadata.generation} {.spec.strategy.type} {.spec.template.spec.containers[0].ports[0].protocol}"
        ),
        "1 RollingUpdate TCP"
    );

    let out = s.kubectl_ok(&["scale", "deploy", "web", "--replicas=5"]);
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    assert_eq!(
        web_jsonpath(&s, "{.spec.replicas} {.metadata.generation}"),
        "5 2"
    );
    let scale = s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    ]);
    let scale: serde_json::Value = serde_json::from_str(&scale).expect("scale json");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(scale["status"]["selector"], "app=web");

    let out = s.kubectl_ok(&["label", "deploy", "web", "tier=frontend"]);
    assert_eq!(out.trim(), "deployment.apps/web labeled");
    assert_eq!(
        s.kubectl_ok(&["get", "deploy", "-l", "tier=frontend", "-o", "name"])
            .trim(),
        "deployment.apps/web"
    );

    // A strategic merge patch (kubectl's default) merges containers by name.
    let out = s.kubectl_ok(&[
        "patch",
        "deploy",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}"#,
    ]);
    assert_eq!(out.trim(), "deployment.apps/web patched");
    assert_eq!(
        web_jsonpath(
            &s,
            "{.spec.template.spec.containers[*].image} {.spec.template.spec.containers[0].ports[0].containerPort} {.metadata.generation}"
        ),
        "nginx:1.28 80 3"
    );
    // Client-side apply of a change: a strategic merge patch too.
    s.write("web.yaml", &DEPLOYMENT.replace("nginx:1.27", "nginx:1.29"));
    let out = s.kubectl_ok(&["apply", "-f", "web.yaml"]);
    assert_eq!(out.trim(), "deployment.apps/web configured");
    assert_eq!(
        web_jsonpath(&s, "{.spec.template.spec.containers[*].image}"),
        "nginx:1.29"
    );

    // A selector that does not match the template's labels.
    s.write(
        "bad.yaml",
        &DEPLOYMENT
            .replace("name: web", "name: bad")
            .replace("matchLabels: {app: web}", "matchLabels: {app: api}"),
    );
    let err = kubectl_err(&s, &["apply", "-f", "bad.yaml"]);
    assert!(
        err.contains(
            r#"The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: "#
        ) && err.contains("`selector` does not match template `labels`"),
        "{err}"
    );
}

#[test]
fn events_in_both_groups_are_one_resource() {
    let s = TestServer::start();
    s.write(
        "ev.yaml",
        "apiVersion: v1
kind: Event
metadata: {name: web.1, namespace: default}
involvedObject: {kind: Deployment, name: web, namespace: default, apiVersion: apps/v1}
reason: ScalingReplicaSet
message: Scaled up replica set web-1 to 2
type: Normal
source: {component: deployment-controller}
firstTimestamp: \"2024-01-01T00:00:00Z\"
lastTimestamp: \"2024-01-01T00:00:00Z\"
count: 1
",
    );
    assert_eq!(
        s.kubectl_ok(&["create", "-f", "ev.yaml"]).trim(),
        "event/web.1 created"
    );
    s.write(
        "ev1.json",
        r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"pod-a.2","namespace":"default"},
 "eventTime":"2024-01-01T00:01:00.000000Z","reportingController":"example.com/ctl","reportingInstance":"ctl-1",
 "action":"Probe","reason":"Checked","regarding":{"kind":"Pod","name":"pod-a","namespace":"default"},"note":"all good","type":"Normal"}"#,
    );
    let out = s.kubectl_ok(&[
        "create",
        "--raw",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        "-f",
        "ev1.json",
    ]);
    let created: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "all good");

    // The events.k8s.io event is a core event ...
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "event",
            "pod-a.2",
            "-o",
            "jsonpath={.apiVersion} {.message} {.involvedObject.name} {.reportingComponent}",
        ]),
        "v1 all good pod-a example.com/ctl"
    );
    // ... and the core event an events.k8s.io one.
    let web = s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/events.k8s.io/v1/namespaces/default/events/web.1",
    ]);
    let web: serde_json::Value = serde_json::from_str(&web).expect("json");
    assert_eq!(web["note"], "Scaled up replica set web-1 to 2");
    assert_eq!(web["regarding"]["name"], "web");
    assert_eq!(web["deprecatedCount"], 1);

    let out = s.kubectl_ok(&["get", "events"]);
    assert_eq!(
        header(&out),
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{out}"
    );
    assert!(
        out.contains("deployment/web") && out.contains("pod/pod-a"),
        "{out}"
    );
    let out = s.kubectl_ok(&["events"]);
    assert!(out.contains("Scaled up replica set web-1 to 2"), "{out}");
    assert!(out.contains("all good"), "{out}");

    let out = s.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=pod-a",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "event/pod-a.2");
    let list = s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dweb",
    ]);
    let list: serde_json::Value = serde_json::from_str(&list).expect("json");
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["items"][0]["metadata"]["name"], "web.1");
    let err = kubectl_err(
        &s,
        &["get", "events", "--field-selector", "regarding.name=web"],
    );
    assert!(
        err.contains("field label not supported: regarding.name"),
        "{err}"
    );
}

#[test]
fn leases_and_namespace_deletion() {
    let s = TestServer::start();
    s.write(
        "lease.yaml",
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: leader}\nspec: {holderIdentity: a, leaseDurationSeconds: 15}\n",
    );
    let out = s.kubectl_ok(&["create", "-f", "lease.yaml"]);
    assert_eq!(out.trim(), "lease.coordination.k8s.io/leader created");
    let out = s.kubectl_ok(&["get", "lease"]);
    assert_eq!(header(&out), ["NAME", "HOLDER", "AGE"], "{out}");
    // An update (PUT) as leader election writes it, then a patch.
    s.write(
        "lease.yaml",
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: leader}\nspec: {holderIdentity: b, leaseDurationSeconds: 15}\n",
    );
    s.kubectl_ok(&["replace", "-f", "lease.yaml"]);
    s.kubectl_ok(&[
        "patch",
        "lease",
        "leader",
        "--type=merge",
        "-p",
        r#"{"spec":{"leaseTransitions":1}}"#,
    ]);
    // Regression: times were stored with the client's offset; upstream stores MicroTime in UTC.
    s.kubectl_ok(&[
        "patch",
        "lease",
        "leader",
        "--type=merge",
        "-p",
        r#"{"spec":{"renewTime":"2026-11-28T07:44:39.123456+01:00"}}"#,
    ]);
    assert_eq!(
        s.kubectl_ok(&["get", "lease", "leader", "-o", "jsonpath={.spec.renewTime}"]),
        "2026-11-28T06:44:39.123456Z"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "lease",
            "leader",
            "-o",
            "jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}"
        ]),
        "b 1"
    );

    // Deleting a namespace deletes the built-in objects in it.
    s.kubectl_ok(&["create", "namespace", "scratch"]);
    s.kubectl_ok(&[
        "-n",
        "scratch",
        "create",
        "configmap",
        "c1",
        "--from-literal=a=b",
    ]);
    s.write("web.yaml", DEPLOYMENT);
    s.kubectl_ok(&["-n", "scratch", "apply", "-f", "web.yaml"]);
    s.kubectl_ok(&["-n", "scratch", "create", "-f", "lease.yaml"]);
    s.kubectl_ok(&["delete", "namespace", "scratch", "--timeout=60s"]);
    for kind in ["configmaps", "deployments", "leases"] {
        let out = s.kubectl_ok(&["get", kind, "-A", "-o", "name"]);
        assert!(
            !out.contains("scratch") && !out.contains("c1"),
            "{kind}: {out}"
        );
    }
    let out = s.kubectl_ok(&["get", "deploy", "-n", "scratch", "-o", "name"]);
    assert!(out.trim().is_empty(), "{out}");

    // A namespace held by a finalizer says so in its conditions, and the usual way out
    // (emptying `spec.finalizers` through `namespaces/finalize`) releases it.
    s.kubectl_ok(&["create", "namespace", "stuck"]);
    s.write(
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: stuck\n  \
         finalizers: [example.com/hold]\n",
    );
    s.kubectl_ok(&["create", "-f", "held.yaml"]);
    s.kubectl_ok(&["delete", "namespace", "stuck", "--wait=false"]);
    s.kubectl_ok(&[
        "wait",
        "namespace/stuck",
        "--for=condition=NamespaceFinalizersRemaining",
        "--timeout=30s",
    ]);
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "namespace",
            "stuck",
            "-o",
            "jsonpath={.status.phase}: {.status.conditions[?(@.type==\"NamespaceContentRemaining\")].message}"
        ]),
        "Terminating: Some resources are remaining: configmaps. has 1 resource instances"
    );
    let mut ns: serde_json::Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "namespace", "stuck", "-o", "json"]))
            .expect("namespace JSON");
    ns["spec"]["finalizers"] = serde_json::json!([]);
    s.write("stuck.json", &ns.to_string());
    s.kubectl_ok(&[
        "replace",
        "--raw",
        "/api/v1/namespaces/stuck/finalize",
        "-f",
        "stuck.json",
    ]);
    let err = kubectl_err(&s, &["get", "namespace", "stuck"]);
    assert!(err.contains(r#"namespaces "stuck" not found"#), "{err}");
}

/// `kubectl rollout history` of a stateful set or daemon set reads its controller revisions: with
/// no controller writing them (as in envtest) there is no history, and a revision written by
/// hand is listed.
#[test]
fn rollout_history_reads_controller_revisions() {
    let s = TestServer::start();
    s.write(
        "sts.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector: {matchLabels: {app: db}}\n  serviceName: db\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: c, image: postgres}]}\n",
    );
    s.kubectl_ok(&["apply", "-f", "sts.yaml"]);
    let out = s.kubectl_ok(&["rollout", "history", "statefulset/db"]);
    assert!(out.contains("No rollout history found."), "{out}");
    let uid = s.kubectl_ok(&["get", "sts", "db", "-o", "jsonpath={.metadata.uid}"]);
    s.write(
        "rev.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: db-1\n  labels: {{app: db}}\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: {uid}, controller: true}}\ndata: {{spec: {{template: {{}}}}}}\nrevision: 1\n"
        ),
    );
    s.kubectl_ok(&["apply", "-f", "rev.yaml"]);
    let out = s.kubectl_ok(&["get", "controllerrevisions"]);
    assert!(out.contains("statefulset.apps/db"), "{out}");
    let out = s.kubectl_ok(&["rollout", "history", "statefulset/db"]);
    assert!(
        out.contains("REVISION") && out.lines().any(|l| l.starts_with('1')),
        "{out}"
    );
}

/// Nodes as operators' tests write them (no kubelet registers one), and what a node-maintenance
/// flow types: `get -o wide`, `cordon`, `taint`, `describe`, then `drain`, whose evictions a
/// disruption budget holds back until its status allows them.
#[test]
fn nodes_cordon_taint_and_drain_with_a_disruption_budget() {
    let s = TestServer::start();
    s.write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\n  labels: {node-role.kubernetes.io/worker: \"\"}\nspec:\n  podCIDR: 10.244.1.0/24\nstatus:\n  capacity: {cpu: \"4\", memory: 16Gi, pods: \"110\"}\n  conditions:\n  - {type: Ready, status: \"True\", reason: KubeletReady}\n  addresses:\n  - {type: InternalIP, address: 10.0.0.11}\n  nodeInfo: {kubeletVersion: v1.32.0, osImage: Debian, kernelVersion: \"6.1\", containerRuntimeVersion: containerd://1.7.0}\n",
    );
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", "node.yaml"]).trim(),
        "node/worker-1 created"
    );
    let out = s.kubectl_ok(&["get", "nodes", "-o", "wide"]);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ],
        "{out}"
    );
    assert_eq!(lines[1][..3], ["worker-1", "Ready", "worker"], "{out}");
    assert_eq!(
        lines[1][4..],
        [
            "v1.32.0",
            "10.0.0.11",
            "<none>",
            "Debian",
            "6.1",
            "containerd://1.7.0"
        ],
        "{out}"
    );
    // The v1 conversion mirrors podCIDR; allocatable defaults to the capacity.
    let get =
        |path: &str| s.kubectl_ok(&["get", "node/worker-1", "-o", &format!("jsonpath={path}")]);
    assert_eq!(
        get("{.spec.podCIDRs} {.status.allocatable.cpu}"),
        r#"["10.244.1.0/24"] 4"#
    );
    assert_eq!(
        s.kubectl_ok(&["cordon", "worker-1"]).trim(),
        "node/worker-1 cordoned"
    );
    let out = s.kubectl_ok(&[
        "get",
        "nodes",
        "--field-selector",
        "spec.unschedulable=true",
    ]);
    assert!(out.contains("Ready,SchedulingDisabled"), "{out}");
    s.kubectl_ok(&["taint", "nodes", "worker-1", "dedicated=gpu:NoSchedule"]);
    assert_eq!(
        get("{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}"),
        "dedicated=gpu:NoSchedule"
    );
    let err = kubectl_err(&s, &["taint", "nodes", "worker-1", "bad=x:Sometimes"]);
    assert!(err.contains("Sometimes"), "{err}");
    let out = s.kubectl_ok(&["describe", "node", "worker-1"]);
    assert!(
        out.contains("Taints:             dedicated=gpu:NoSchedule"),
        "{out}"
    );
    assert!(out.contains("Unschedulable:      true"), "{out}");
    // Two running pods on the node, one guarded by a budget that allows no disruption.
    for (name, app) in [("web", "web"), ("db", "db")] {
        s.kubectl_ok(&[
            "run",
            name,
            "--image=nginx",
            &format!("--labels=app={app}"),
            "--overrides={\"spec\":{\"nodeName\":\"worker-1\"}}",
        ]);
        s.kubectl_ok(&[
            "patch",
            "pod",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
        ]);
    }
    s.kubectl_ok(&[
        "create",
        "pdb",
        "db",
        "--selector=app=db",
        "--min-available=1",
    ]);
    // No disruption controller runs: the test writes the budget's status.
    let budget_status = |status: &str| {
        s.kubectl_ok(&[
            "patch",
            "pdb",
            "db",
            "--subresource=status",
            "--type=merge",
            "-p",
            &format!(r#"{{"status":{status}}}"#),
        ]);
    };
    budget_status(
        r#"{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}"#,
    );
    let out = s.kubectl(&[
        "drain",
        "worker-1",
        "--force",
        "--grace-period=0",
        "--timeout=3s",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("pod/web evicted"), "{text}");
    assert!(
        text.contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{text}"
    );
    // Once the budget allows a disruption, the drain completes.
    budget_status(r#"{"disruptionsAllowed":1,"currentHealthy":2,"desiredHealthy":1}"#);
    let out = s.kubectl_ok(&[
        "drain",
        "worker-1",
        "--force",
        "--grace-period=0",
        "--timeout=20s",
    ]);
    assert!(out.contains("node/worker-1 drained"), "{out}");
    let out = s.kubectl_ok(&["get", "pods", "-o", "name"]);
    assert_eq!(out.trim(), "", "{out}");
    let budget = s.kubectl_ok(&[
        "get",
        "pdb",
        "db",
        "-o",
        "jsonpath={.status.disruptionsAllowed} {.status.disruptedPods.db}",
    ]);
    assert!(budget.starts_with("0 20"), "{budget}");
}

/// Regression: `kubectl delete -f` of a file listing a namespace before its objects failed
/// with NotFound for the objects (exit 1), because the namespace was emptied within
/// milliseconds; kube-controller-manager waits 5 s before deleting a terminating namespace's
/// content, and so does `serve` by default.
#[test]
fn kubectl_delete_of_a_file_with_its_namespace_first_succeeds() {
    let s = TestServer::start();
    s.write(
        "app.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: app1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1, namespace: app1}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s1, namespace: app1}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d1, namespace: app1}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    s.kubectl_ok(&["apply", "-f", "app.yaml"]);
    let out = s.kubectl_ok(&["delete", "-f", "app.yaml"]);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "namespace \"app1\" deleted",
            "configmap \"c1\" deleted",
            "serviceaccount \"s1\" deleted",
            "deployment.apps \"d1\" deleted"
        ],
        "{out}"
    );
}
