"""`python -m crd_apiserver ARGS`: runs the bundled binary with ARGS."""

import os
import subprocess
import sys

from crd_apiserver import find_crd_apiserver_bin


def main() -> None:
    binary = find_crd_apiserver_bin()
    if os.name == "nt":
        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
