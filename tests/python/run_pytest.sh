#!/bin/bash
# Runs the Python tests (mutagrad vs torch) against the runfiles copy of the mutagrad package
# built by //python:mutagrad_host_run (its "cuda" device is the host-run backend). The user
# build, //python:mutagrad, is at MUTAGRAD_DEFAULT_BUILD_PATH for default_build_test.py.
set -euo pipefail
ROOT="${TEST_SRCDIR}/${TEST_WORKSPACE:-mutagrad}"
export PYTHONPATH="${ROOT}/python/host_run"
export MUTAGRAD_DEFAULT_BUILD_PATH="${ROOT}/python"
export PYTHONDONTWRITEBYTECODE=1

# Under --config=asan the extension is ASan-instrumented, but /usr/bin/python3 is not: the ASan
# runtime must then be loaded first, or the import fails ("ASan runtime does not come first").
# libstdc++ is preloaded with it: python3 does not link it, and ASan's __cxa_throw interceptor
# aborts on the first C++ exception unless libstdc++ is there when ASan starts. CPython
# deliberately leaves objects alive at exit, so leak detection is off (appended: the last
# setting of an ASan option wins); every other ASan check stays on.
so_libs="$(ldd "${PYTHONPATH}/mutagrad/_C.so")"
libasan="$(awk '/libasan/ { print $3 }' <<<"${so_libs}")"
if [[ -n "${libasan}" ]]; then
  libstdcxx="$(awk '/libstdc\+\+/ { print $3 }' <<<"${so_libs}")"
  preload="${libasan}${libstdcxx:+:${libstdcxx}}"
  export LD_PRELOAD="${preload}${LD_PRELOAD:+:${LD_PRELOAD}}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+${ASAN_OPTIONS}:}detect_leaks=0"
fi

cd "${ROOT}/tests/python"
# The oracle is Debian's torch 1.13 under /usr/bin/python3. With
# --test_env=MUTAGRAD_TEST_PYTHON=<venv>/bin/python the suites run against that interpreter's
# torch instead (PyTorch 2.x: tools/torch2/run_python_suite.sh).
exec "${MUTAGRAD_TEST_PYTHON:-/usr/bin/python3}" -m pytest -q -p no:cacheprovider *_test.py
