"""Which torch the differential suites compare with (tests/python/conftest.py prints it).

Debian's 1.13 by default; PyTorch 2.x from tools/torch2/setup_venv.sh's venv when the suites
run through tools/torch2/run_python_suite.sh. A test whose expectation differs between the
two says which it expects with torch_version() (docs/torch-versions.md lists the differences).
"""

import torch


def torch_version():
    """(major, minor) of the torch under test, e.g. (1, 13) or (2, 15)."""
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int(minor)
