"""The `crd_apiserver` fixture from the installed wheel: a server per test, the kubernetes
client ready, the binary found, and the server gone after teardown."""

import os
import subprocess
import sys

import pytest
from kubernetes import client

import crd_apiserver
from crd_apiserver.testing import ServerError, serve


def test_a_configmap_round_trip(crd_apiserver):
    core = client.CoreV1Api(crd_apiserver.api_client)
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "settings"}, "data": {"k": "v"}}
    )
    assert core.read_namespaced_config_map("settings", "default").data == {"k": "v"}
    assert crd_apiserver.url.startswith("https://127.0.0.1:")
    assert os.path.isfile(crd_apiserver.kubeconfig)


def test_each_test_gets_its_own_server(crd_apiserver):
    # The ConfigMap of the test above is not here.
    core = client.CoreV1Api(crd_apiserver.api_client)
    names = [cm.metadata.name for cm in core.list_namespaced_config_map("default").items]
    assert "settings" not in names


def test_the_binary_is_the_one_in_the_wheel():
    path = crd_apiserver.find_crd_apiserver_bin()
    assert os.path.basename(path) == "crd-apiserver"
    assert path.startswith(sys.prefix), (path, sys.prefix)
    out = subprocess.run([path, "--help"], capture_output=True, text=True, check=True)
    assert "serve" in out.stdout
    # `python -m crd_apiserver` runs the same binary.
    module = subprocess.run(
        [sys.executable, "-m", "crd_apiserver", "--help"], capture_output=True, text=True, check=True
    )
    assert module.stdout == out.stdout


def test_serve_stops_the_server_and_removes_its_files():
    with serve() as server:
        process, kubeconfig = server.process, server.kubeconfig
        assert process.poll() is None
    assert process.returncode is not None
    assert not os.path.exists(kubeconfig)


def test_a_server_that_cannot_start_is_an_error_with_its_stderr():
    with pytest.raises(ServerError) as error:
        with serve(args=["--no-such-flag"]):
            pass
    assert "exited with 2" in str(error.value)
    assert "--no-such-flag" in str(error.value)
