#!/usr/bin/env bash
# python_distributed_test.py under mpirun with NP ranks, importing the runfiles copy of the
# mutagrad package (//python:mutagrad):  python_mpirun_test.sh NP
set -euo pipefail
ROOT="${TEST_SRCDIR}/${TEST_WORKSPACE:-mutagrad}"
export PYTHONPATH="${ROOT}/python"
export PYTHONDONTWRITEBYTECODE=1
# Under --config=asan the extension is instrumented and python3 is not: load the ASan runtime
# (and libstdc++) first, and leave CPython's deliberate exit-time leaks alone (as
# tests/python/run_pytest.sh does).
so_libs="$(ldd "${PYTHONPATH}/mutagrad/_C.so")"
libasan="$(awk '/libasan/ { print $3 }' <<<"${so_libs}")"
if [[ -n "${libasan}" ]]; then
  libstdcxx="$(awk '/libstdc\+\+/ { print $3 }' <<<"${so_libs}")"
  export LD_PRELOAD="${libasan}${libstdcxx:+:${libstdcxx}}${LD_PRELOAD:+:${LD_PRELOAD}}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+${ASAN_OPTIONS}:}detect_leaks=0"
fi
exec "${ROOT}/tests/distributed/mpirun_test.sh" "$1" /usr/bin/python3 \
  "${ROOT}/tests/distributed/python_distributed_test.py"
