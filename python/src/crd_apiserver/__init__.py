"""crd-apiserver: a Kubernetes-compatible API server in one binary, shipped in this wheel.

`find_crd_apiserver_bin()` returns the bundled binary's path; `crd_apiserver.testing` has the
pytest fixture (registered through the `pytest11` entry point) and the `serve` context manager.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

__all__ = ["find_crd_apiserver_bin"]

#: Set to a path to use another binary (a development build, say) instead of the bundled one.
BIN_ENV = "CRD_APISERVER_BIN"


def find_crd_apiserver_bin() -> str:
    """Returns the path of the `crd-apiserver` binary.

    In order: `$CRD_APISERVER_BIN`; the scripts directory of this interpreter's installation
    (where the wheel puts it), then of the user scheme (`pip install --user`); then `PATH`.
    Raises FileNotFoundError when none has it.
    """
    override = os.environ.get(BIN_ENV)
    if override:
        if not os.path.isfile(override):
            raise FileNotFoundError(f"${BIN_ENV} names {override!r}, which is not a file")
        return override
    exe = "crd-apiserver" + (sysconfig.get_config_var("EXE") or "")
    candidates = [sysconfig.get_path("scripts")]
    user_scheme = _user_scheme()
    if user_scheme:
        candidates.append(sysconfig.get_path("scripts", scheme=user_scheme))
    for directory in candidates:
        path = os.path.join(directory, exe)
        if os.path.isfile(path):
            return path
    on_path = shutil.which(exe)
    if on_path:
        return on_path
    raise FileNotFoundError(
        f"{exe} is not in {candidates} nor on PATH; reinstall the crd-apiserver package "
        f"or set ${BIN_ENV}"
    )


def _user_scheme() -> str | None:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and sys._framework:  # type: ignore[attr-defined]
        return "osx_framework_user"
    return "posix_user"
