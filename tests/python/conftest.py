"""pytest setup shared by the differential suites: which torch is the oracle.

The suites compare mutagrad with `import torch`: Debian's python3-torch 1.13 under
/usr/bin/python3 (the default, and CI's), or PyTorch 2.x from the venv that
tools/torch2/setup_venv.sh makes (tools/torch2/run_python_suite.sh runs them so). The report
header names the torch that ran. MUTAGRAD_EXPECT_TORCH=2 (or 1.13) makes the session fail at
once if another torch was imported, e.g. Debian's 1.13 shadowing the venv's. A test whose
expectation depends on the version asks `torch_oracle.torch_version()` (docs/torch-versions.md
lists the differences).
"""

import os

import pytest
import torch


def pytest_report_header(config):
    return f"oracle: torch {torch.__version__} from {os.path.dirname(torch.__file__)}"


def pytest_configure(config):
    expected = os.environ.get("MUTAGRAD_EXPECT_TORCH")
    if expected and not torch.__version__.startswith(expected):
        raise pytest.UsageError(
            f"MUTAGRAD_EXPECT_TORCH={expected}, but torch {torch.__version__} was imported from "
            f"{torch.__file__}: check the interpreter (tools/torch2/run_python_suite.sh)")


def pytest_collection_modifyitems(config, items):
    """Bazel's test sharding (shard_count in tests/python/BUILD.bazel): shard i of n runs the
    collected tests i, i + n, i + 2n, ... (a round robin keeps the shards' times close whatever
    the files' sizes). Without TEST_TOTAL_SHARDS every test runs."""
    total = int(os.environ.get("TEST_TOTAL_SHARDS", "1"))
    if total <= 1:
        return
    index = int(os.environ["TEST_SHARD_INDEX"])
    status_file = os.environ.get("TEST_SHARD_STATUS_FILE")
    if status_file:  # tells Bazel that this runner shards
        open(status_file, "w").close()
    config.hook.pytest_deselected(items=[t for i, t in enumerate(items) if i % total != index])
    items[:] = [t for i, t in enumerate(items) if i % total == index]
