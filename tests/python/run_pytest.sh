#!/bin/bash
# Runs the Python tests (mutagrad vs torch) against the runfiles copy of the mutagrad package
# built by //python:mutagrad_host_run (its "cuda" device is the host-run backend). The user
# build, //python:mutagrad, is at MUTAGRAD_DEFAULT_BUILD_PATH for default_build_test.py.
set -euo pipefail
ROOT="${TEST_SRCDIR}/${TEST_WORKSPACE:-mutagrad}"
export PYTHONPATH="${ROOT}/python/host_run"
export MUTAGRAD_DEFAULT_BUILD_PATH="${ROOT}/python"
export PYTHONDONTWRITEBYTECODE=1

# Under --config=asan: the ASan runtime first (asan_python_env.sh).
source "${ROOT}/tests/python/asan_python_env.sh" "${PYTHONPATH}/mutagrad/_C.so"

cd "${ROOT}/tests/python"
# The oracle is Debian's torch 1.13 under /usr/bin/python3. With
# --test_env=MUTAGRAD_TEST_PYTHON=<venv>/bin/python the suites run against that interpreter's
# torch instead (PyTorch 2.x: tools/torch2/run_python_suite.sh).
exec "${MUTAGRAD_TEST_PYTHON:-/usr/bin/python3}" -m pytest -q -p no:cacheprovider *_test.py
