"""CRDs installed from a directory before the fixture's server is ready."""

import os

import pytest
from kubernetes import client


@pytest.fixture
def crd_apiserver_crd_dir():
    return os.path.join(os.path.dirname(__file__), "crds")


def test_a_crd_from_the_directory_is_served_at_once(crd_apiserver):
    crds = client.ApiextensionsV1Api(crd_apiserver.api_client)
    crd = crds.read_custom_resource_definition("crontabs.stable.example.com")
    established = [c for c in crd.status.conditions if c.type == "Established"]
    assert established[0].status == "True"

    custom = client.CustomObjectsApi(crd_apiserver.api_client)
    body = {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object"},
        "spec": {"cronSpec": "* * * * */5", "replicas": 2},
    }
    custom.create_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", body)
    got = custom.get_namespaced_custom_object(
        "stable.example.com", "v1", "default", "crontabs", "my-new-cron-object"
    )
    assert got["spec"] == {"cronSpec": "* * * * */5", "replicas": 2}
