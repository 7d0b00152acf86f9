"""A crd-apiserver per test: the `crd_apiserver` pytest fixture and the `serve` context manager.

The fixture is registered through the `pytest11` entry point, so installing the package is
enough. Each use runs `crd-apiserver serve --ephemeral --secure-port 0
--namespace-deletion-grace-period 0s --kubeconfig-out FILE` (with `--crd-dir DIR` when CRDs are
configured), waits until the server announces itself
(ready, the CRDs Established), yields a `Server`, and stops the server at teardown (SIGTERM: the
temporary data directory is removed; SIGKILL if it has not exited within 10 seconds).

CRDs: the `crd_apiserver_crd_dir` ini option (relative to the rootdir), or override the
`crd_apiserver_crd_dir` fixture. More `serve` flags: the `crd_apiserver_args` ini option or
fixture.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

from crd_apiserver import find_crd_apiserver_bin

__all__ = ["Server", "ServerError", "serve", "crd_apiserver"]

#: How long start-up may take (the CRDs of `--crd-dir` included). Longer than the server's own
#: 30 s wait for its CRDs, so that its error (which CRD, and why) is the one reported.
START_TIMEOUT = 60.0
#: How long the server gets to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 10.0
_READY_PREFIX = "export KUBECONFIG="
_LISTENING_PREFIX = "crd-apiserver listening on "


class ServerError(RuntimeError):
    """The server exited or did not become ready; the message carries its stderr."""


@dataclass
class Server:
    """A running crd-apiserver: its admin kubeconfig, URL and a ready `kubernetes` client."""

    #: Path of the admin kubeconfig (`KUBECONFIG=...` for kubectl, kopf or a subprocess).
    kubeconfig: str
    #: `https://127.0.0.1:<port>`.
    url: str
    #: The server process.
    process: subprocess.Popen
    #: A `kubernetes.client.ApiClient` for the admin, or None when `kubernetes` is not installed.
    api_client: Any = None
    #: Extra output lines the server printed on stdout after it was ready.
    output: list = field(default_factory=list)


@contextlib.contextmanager
def serve(
    crd_dir: Optional[os.PathLike | str] = None,
    args: Sequence[str] = (),
    binary: Optional[str] = None,
    timeout: float = START_TIMEOUT,
) -> Iterator[Server]:
    """Runs one ephemeral server for the length of the `with` block.

    `crd_dir`: install every CRD in its `*.yaml`/`*.yml` files before ready. `args`: more
    `serve` flags. `binary`: another binary than the bundled one.
    """
    executable = binary or find_crd_apiserver_bin()
    args = list(args)
    def given(flag: str) -> bool:
        return any(a == flag or a.startswith(flag + "=") for a in args)

    # A port of the caller's wins over the default of any free one.
    port_given = given("--secure-port")
    workdir = tempfile.mkdtemp(prefix="crd-apiserver-pytest-")
    kubeconfig = os.path.join(workdir, "kubeconfig")
    stderr_path = os.path.join(workdir, "stderr")
    command = [executable, "serve", "--ephemeral", "--kubeconfig-out", kubeconfig]
    if not port_given:
        command += ["--secure-port", "0"]
    # Tests wait for no one: a deleted namespace is emptied at once, as the Rust harness does
    # (`serve` waits 5 s, as kube-controller-manager does), unless the caller says otherwise.
    if not given("--namespace-deletion-grace-period"):
        command += ["--namespace-deletion-grace-period", "0s"]
    if crd_dir is not None:
        command += ["--crd-dir", os.fspath(crd_dir)]
    command += args
    try:
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                bufsize=1,
                preexec_fn=_DIE_WITH_PARENT,
            )
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    server = None
    try:
        server = Server(kubeconfig=kubeconfig, url="", process=process)
        server.url = _wait_ready(process, stderr_path, timeout, server.output)
        server.api_client = _api_client(kubeconfig)
        yield server
    finally:
        if server is not None and server.api_client is not None:
            server.api_client.close()
        _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def _pdeathsig() -> Optional[Any]:
    """A `preexec_fn` that asks Linux to SIGTERM the child when the test process dies (a CI
    timeout's SIGKILL included), so that no server outlives its tests (`PR_SET_PDEATHSIG`).
    Resolved once here: the child, forked while other threads may hold locks, only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def die_with_parent() -> None:
        prctl(pr_set_pdeathsig, sigterm)

    return die_with_parent


_DIE_WITH_PARENT = _pdeathsig()


def _wait_ready(
    process: subprocess.Popen, stderr_path: str, timeout: float, output: list
) -> str:
    """Reads stdout (on a thread that keeps draining it) until the server announces itself;
    what it prints later is appended to `output`."""
    lines: queue.Queue = queue.Queue()

    def drain() -> None:
        assert process.stdout is not None
        ready = False
        for line in process.stdout:
            line = line.rstrip("\n")
            if ready:
                output.append(line)
                continue
            lines.put(line)
            ready = line.startswith(_READY_PREFIX)
        if not ready:
            lines.put(None)

    threading.Thread(target=drain, name="crd-apiserver-stdout", daemon=True).start()
    url = ""
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise ServerError(
                f"crd-apiserver was not ready within {timeout}s: {_read(stderr_path)}"
            ) from None
        if line is None:
            code = process.wait()
            raise ServerError(f"crd-apiserver exited with {code}: {_read(stderr_path)}")
        if line.startswith(_LISTENING_PREFIX):
            url = line[len(_LISTENING_PREFIX) :]
        if line.startswith(_READY_PREFIX):
            return url


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().strip()


def _api_client(kubeconfig: str) -> Any:
    try:
        from kubernetes import config
    except ImportError:
        return None
    return config.new_client_from_config(config_file=kubeconfig)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


try:
    import pytest
except ImportError:  # `serve` works without pytest.
    pytest = None

if pytest is not None:

    def pytest_addoption(parser: Any) -> None:
        parser.addini(
            "crd_apiserver_crd_dir",
            "crd-apiserver: a directory of CRD YAML installed in every server (relative to "
            "the rootdir)",
            default="",
        )
        parser.addini(
            "crd_apiserver_args",
            "crd-apiserver: more `serve` flags for every server",
            type="args",
            default=[],
        )

    @pytest.fixture
    def crd_apiserver_crd_dir(request: Any) -> Optional[str]:
        """The CRD directory of the `crd_apiserver` fixture (override it to choose another)."""
        configured = request.config.getini("crd_apiserver_crd_dir")
        if not configured:
            return None
        return os.path.join(str(request.config.rootpath), configured)

    @pytest.fixture
    def crd_apiserver_args(request: Any) -> list:
        """More `serve` flags for the `crd_apiserver` fixture (override it to choose others)."""
        return list(request.config.getini("crd_apiserver_args"))

    @pytest.fixture
    def crd_apiserver(crd_apiserver_crd_dir: Any, crd_apiserver_args: list) -> Iterator[Server]:
        """A fresh crd-apiserver for this test, ready, with the configured CRDs Established."""
        with serve(crd_dir=crd_apiserver_crd_dir, args=crd_apiserver_args) as server:
            yield server
