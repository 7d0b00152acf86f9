"""The Python `kubernetes` client against crd-apiserver: typed, CustomObjectsApi and
DynamicClient paths. Run by crates/cli/tests/it/python_client.rs with KUBECONFIG set.
Exits non-zero (with a traceback) on the first failed expectation."""

import base64
import json
import os
import time

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
api_client = client.ApiClient()

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "scope": "Namespaced",
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                "type": "object", "properties": {
                    "cronSpec": {"type": "string"}, "image": {"type": "string"},
                    "replicas": {"type": "integer"}}}}}},
        }],
    },
}

ext = client.ApiextensionsV1Api(api_client)
ext.create_custom_resource_definition(CRD)
for _ in range(200):
    crd = ext.read_custom_resource_definition("crontabs.stable.example.com")
    conds = crd.status.conditions or []
    if any(c.type == "Established" and c.status == "True" for c in conds):
        break
    time.sleep(0.02)
else:
    raise SystemExit("CRD never became Established")

# Typed core API: namespaces.
core = client.CoreV1Api(api_client)
names = [ns.metadata.name for ns in core.list_namespace().items]
assert "default" in names, names

# CustomObjectsApi.
objs = client.CustomObjectsApi(api_client)
body = {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "py-cron"}, "spec": {"cronSpec": "* * * * */5", "image": "img"}}
created = objs.create_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", body)
assert created["metadata"]["generation"] == 1, created
got = objs.get_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", "py-cron")
assert got["spec"]["image"] == "img", got
patched = objs.patch_namespaced_custom_object(
    "stable.example.com", "v1", "default", "crontabs", "py-cron", {"spec": {"replicas": 3}})
assert patched["spec"]["replicas"] == 3 and patched["metadata"]["generation"] == 2, patched
try:
    objs.get_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", "missing")
    raise SystemExit("expected a 404")
except ApiException as e:
    assert e.status == 404, e
    assert '"reason":"NotFound"' in e.body, e.body

# Watch: the Python client splits the stream on newlines.
listed = objs.list_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs")
rv = listed["metadata"]["resourceVersion"]
objs.create_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs",
                                     dict(body, metadata={"name": "py-cron-2"}))
w = watch.Watch()
seen = []
for event in w.stream(objs.list_namespaced_custom_object, "stable.example.com", "v1", "default",
                      "crontabs", resource_version=rv, timeout_seconds=2):
    seen.append((event["type"], event["object"]["metadata"]["name"]))
    w.stop()
assert seen == [("ADDED", "py-cron-2")], seen

# DynamicClient: legacy discovery only.
dyn = dynamic.DynamicClient(api_client)
crontabs = dyn.resources.get(api_version="stable.example.com/v1", kind="CronTab")
items = crontabs.get(namespace="default").items
assert sorted(i.metadata.name for i in items) == ["py-cron", "py-cron-2"], items
crontabs.delete(name="py-cron", namespace="default")
items = crontabs.get(namespace="default").items
assert [i.metadata.name for i in items] == ["py-cron-2"], items

# Server-side apply through DynamicClient: create, then a second manager conflicts, then force.
applied = dyn.server_side_apply(crontabs,
    body={"apiVersion": "stable.example.com/v1", "kind": "CronTab",
          "metadata": {"name": "py-ssa", "namespace": "default"},
          "spec": {"image": "one"}},
    field_manager="py-operator", namespace="default")
assert applied.spec.image == "one", applied
entries = [(e.manager, e.operation) for e in applied.metadata.managedFields]
assert entries == [("py-operator", "Apply")], entries
try:
    dyn.server_side_apply(
        crontabs,
        body={"apiVersion": "stable.example.com/v1", "kind": "CronTab",
              "metadata": {"name": "py-ssa", "namespace": "default"}, "spec": {"image": "two"}},
        field_manager="someone-else", namespace="default")
    raise SystemExit("expected a 409 conflict")
except ApiException as e:
    assert e.status == 409, e
    assert 'conflict with \\"py-operator\\"' in e.body, e.body
forced = dyn.server_side_apply(crontabs,
    body={"apiVersion": "stable.example.com/v1", "kind": "CronTab",
          "metadata": {"name": "py-ssa", "namespace": "default"}, "spec": {"image": "two"}},
    field_manager="someone-else", force_conflicts=True, namespace="default")
assert forced.spec.image == "two", forced

# Built-in kinds through the typed APIs: ConfigMaps, Secrets, Events, Deployments with scale.
cm = core.create_namespaced_config_map("default", client.V1ConfigMap(
    metadata=client.V1ObjectMeta(name="py-cm"), data={"a": "b"}))
assert cm.data == {"a": "b"}, cm
assert core.read_namespaced_config_map("py-cm", "default").data["a"] == "b"
# Every namespace also has the CA bundle kube-controller-manager publishes.
for _ in range(200):
    if core.list_namespaced_config_map("default", field_selector="metadata.name=kube-root-ca.crt").items:
        break
    time.sleep(0.02)
assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["kube-root-ca.crt", "py-cm"]
sec = core.create_namespaced_secret("default", client.V1Secret(
    metadata=client.V1ObjectMeta(name="py-secret"), string_data={"token": "s3cret"}))
assert sec.type == "Opaque" and sec.data == {"token": "czNjcmV0"}, sec
try:
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="bad"), data={"bad key": "x"}))
    raise SystemExit("expected a 422 for a bad ConfigMap key")
except ApiException as e:
    assert e.status == 422, e
    assert "a valid config key must consist of alphanumeric characters" in e.body, e.body
ev = core.create_namespaced_event("default", client.CoreV1Event(
    metadata=client.V1ObjectMeta(name="py-event"),
    involved_object=client.V1ObjectReference(kind="ConfigMap", name="py-cm", namespace="default"),
    reason="Tested", message="from python", type="Normal"))
assert ev.reason == "Tested", ev
found = core.list_namespaced_event("default", field_selector="involvedObject.name=py-cm").items
assert [e.metadata.name for e in found] == ["py-event"], found

apps = client.AppsV1Api(api_client)
dep = apps.create_namespaced_deployment("default", client.V1Deployment(
    metadata=client.V1ObjectMeta(name="py-deploy"),
    spec=client.V1DeploymentSpec(
        replicas=1,
        selector=client.V1LabelSelector(match_labels={"app": "py"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "py"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))))
assert dep.spec.strategy.type == "RollingUpdate", dep.spec.strategy
scale = apps.read_namespaced_deployment_scale("py-deploy", "default")
assert scale.spec.replicas == 1 and scale.status.selector == "app=py", scale
apps.patch_namespaced_deployment_scale("py-deploy", "default", {"spec": {"replicas": 4}})
assert apps.read_namespaced_deployment("py-deploy", "default").spec.replicas == 4
# A scheduler's binding, as Python schedulers post it. Upstream answers a binding with a Success
# Status, which the generated client cannot read back as a V1Binding, so schedulers pass
# _preload_content=False.
core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="py-node")))
for name in ["py-pod", "py-pod-2"]:
    core.create_namespaced_pod("default", client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))
binding = client.V1Binding(
    metadata=client.V1ObjectMeta(name="py-pod"),
    target=client.V1ObjectReference(api_version="v1", kind="Node", name="py-node"))
resp = core.create_namespaced_binding("default", binding, _preload_content=False)
assert resp.status == 201 and json.loads(resp.data)["status"] == "Success", resp.data
pod = core.read_namespaced_pod("py-pod", "default")
assert pod.spec.node_name == "py-node", pod.spec
assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")], pod.status
binding.metadata.name = "py-pod-2"
resp = core.create_namespaced_pod_binding("py-pod-2", "default", binding, _preload_content=False)
assert resp.status == 201, resp.data
assert core.read_namespaced_pod("py-pod-2", "default").spec.node_name == "py-node"
try:
    core.create_namespaced_binding("default", binding, _preload_content=False)
    raise SystemExit("expected a 409 for a bound pod")
except ApiException as e:
    assert e.status == 409, e
    assert json.loads(e.body)["message"].endswith('pod py-pod-2 is already assigned to node "py-node"'), e.body

# A token bound to the node, as a node agent asks for one: whoever presents it is the service
# account, with the node's name in its extra.
core.create_namespaced_service_account("default", client.V1ServiceAccount(
    metadata=client.V1ObjectMeta(name="py-agent")))
node = core.read_node("py-node")
tr = core.create_namespaced_service_account_token("py-agent", "default", client.AuthenticationV1TokenRequest(
    spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600,
        bound_object_ref=client.V1BoundObjectReference(api_version="v1", kind="Node", name="py-node"))))
review = client.AuthenticationV1Api(api_client).create_token_review(client.V1TokenReview(
    spec=client.V1TokenReviewSpec(token=tr.status.token)))
assert review.status.authenticated, review.status
assert review.status.user.username == "system:serviceaccount:default:py-agent", review.status
assert review.status.user.extra["authentication.kubernetes.io/node-name"] == ["py-node"], review.status
assert review.status.user.extra["authentication.kubernetes.io/node-uid"] == [node.metadata.uid], review.status
core.delete_node("py-node")
review = client.AuthenticationV1Api(api_client).create_token_review(client.V1TokenReview(
    spec=client.V1TokenReviewSpec(token=tr.status.token)))
assert not review.status.authenticated, review.status
# A certificate signing request, approved through /approval and issued through /status as an
# approver and a signer do it (the request and the certificate come from the test, in PEM).
certs = client.CertificatesV1Api(api_client)
csr = certs.create_certificate_signing_request(client.V1CertificateSigningRequest(
    metadata=client.V1ObjectMeta(name="py-csr"),
    spec=client.V1CertificateSigningRequestSpec(
        request=base64.b64encode(os.environ["CSR_PEM"].encode()).decode(),
        signer_name="example.com/py", usages=["client auth"], username="mallory")))
assert csr.spec.username != "mallory" and csr.spec.username, csr.spec
assert csr.status.conditions is None, csr.status
csr.status.conditions = [client.V1CertificateSigningRequestCondition(
    type="Approved", status="True", reason="PyApprove", message="approved by the python test")]
approved = certs.replace_certificate_signing_request_approval("py-csr", csr)
assert [(c.type, c.reason) for c in approved.status.conditions] == [("Approved", "PyApprove")], approved.status
assert approved.status.conditions[0].last_update_time is not None, approved.status
approved.status.certificate = base64.b64encode(os.environ["CERT_PEM"].encode()).decode()
issued = certs.replace_certificate_signing_request_status("py-csr", approved)
assert base64.b64decode(issued.status.certificate).decode() == os.environ["CERT_PEM"], issued.status
listed = certs.list_certificate_signing_request(field_selector="spec.signerName=example.com/py")
assert [c.metadata.name for c in listed.items] == ["py-csr"], listed
print("python client flow: ok")
