#!/bin/bash
# Runs the Python differential tests (mutagrad vs torch) against the runfiles copy of the
# mutagrad package built by //python:mutagrad.
set -euo pipefail
ROOT="${TEST_SRCDIR}/${TEST_WORKSPACE:-mutagrad}"
export PYTHONPATH="${ROOT}/python"
export PYTHONDONTWRITEBYTECODE=1
cd "${ROOT}/tests/python"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider *_test.py
