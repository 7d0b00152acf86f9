"""The `crd_apiserver` fixture from the installed wheel: a server per test, the kubernetes
client ready, the binary found, and the server gone after teardown."""

import glob
import os
import socket
import subprocess
import sys
import tempfile
import time

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


def _until(condition, what, timeout=30.0):
    """Polls `condition` until it holds; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {timeout}s")
        time.sleep(0.05)


def _pytest_dirs():
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "crd-apiserver-pytest-*")))


def test_what_the_server_prints_after_ready_is_in_output(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    args = ["--audit-log-path", "-", "--audit-policy-file", str(policy)]
    with serve(args=args) as server:
        client.CoreV1Api(server.api_client).list_namespaced_config_map("default")
        _until(
            lambda: any('"configmaps"' in line for line in server.output),
            "the audit event of the list is in output",
        )


def test_a_missing_binary_leaves_no_temporary_directory():
    before = _pytest_dirs()
    with pytest.raises(FileNotFoundError):
        with serve(binary="/nonexistent/crd-apiserver"):
            pass
    assert _pytest_dirs() == before


def test_a_port_of_the_callers_is_used():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with serve(args=["--secure-port", str(port)]) as server:
        assert server.url == f"https://127.0.0.1:{port}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_server_dies_with_the_test_process():
    # A test process killed outright (a CI timeout's SIGKILL) takes its server with it.
    script = (
        "import sys, time\n"
        "from crd_apiserver.testing import serve\n"
        "with serve() as server:\n"
        "    print(server.process.pid, flush=True)\n"
        "    time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait()

    def gone():
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            return True
        # A zombie waits for init to reap it: gone too.
        with open(f"/proc/{server_pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")

    _until(gone, "the server exited after its test process was killed")
