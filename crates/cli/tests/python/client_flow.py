"""The Python `kubernetes` client against crd-apiserver: typed, CustomObjectsApi and
DynamicClient paths. Run by crates/cli/tests/it/python_client.rs with KUBECONFIG set.
Exits non-zero (with a traceback) on the first failed expectation."""

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
print("python client flow: ok")
