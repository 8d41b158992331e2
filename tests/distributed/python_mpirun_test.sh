#!/usr/bin/env bash
# python_distributed_test.py under mpirun with NP ranks, importing the runfiles copy of the
# mutagrad package (//python:mutagrad):  python_mpirun_test.sh NP
set -euo pipefail
ROOT="${TEST_SRCDIR}/${TEST_WORKSPACE:-mutagrad}"
export PYTHONPATH="${ROOT}/python"
export PYTHONDONTWRITEBYTECODE=1
# Under --config=asan: the ASan runtime first (tests/python/asan_python_env.sh).
source "${ROOT}/tests/python/asan_python_env.sh" "${PYTHONPATH}/mutagrad/_C.so"
exec "${ROOT}/tests/distributed/mpirun_test.sh" "$1" /usr/bin/python3 \
  "${ROOT}/tests/distributed/python_distributed_test.py"
