#!/usr/bin/env bash
# Runs tests/fuzz/python_index_fuzzer.py (atheris) against the host-run Python module.
#   tests/fuzz/run_python_fuzzer.sh -max_total_time=60          # libFuzzer flags pass through
# Builds //python:mutagrad_host_run, makes the venv (Debian's python3 with its site packages:
# numpy, torch 1.13; the module is built for that interpreter) and installs atheris from PyPI
# into it once. Writes new corpus entries to $MUTAGRAD_FUZZ_WORK (a temporary directory by
# default); reads the checked-in seeds in tests/fuzz/corpus/python_index.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${MUTAGRAD_FUZZ_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mutagrad/fuzz-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import atheris" 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --quiet atheris
fi
# MUTAGRAD_FUZZ_NO_BUILD=1: use the module already built, in bazel-bin or in
# MUTAGRAD_FUZZ_MODULE_DIR (a copy of bazel-bin/python/host_run).
[ -n "${MUTAGRAD_FUZZ_NO_BUILD:-}" ] || ./bazelw build //python:mutagrad_host_run >&2
work=${MUTAGRAD_FUZZ_WORK:-$(mktemp -d)}
mkdir -p "$work/python_index"
echo "run_python_fuzzer: new inputs and crash files go to $work" >&2
PYTHONPATH="${MUTAGRAD_FUZZ_MODULE_DIR:-$PWD/bazel-bin/python/host_run}" "$venv/bin/python" tests/fuzz/python_index_fuzzer.py \
  -artifact_prefix="$work/" "$@" "$work/python_index" tests/fuzz/corpus/python_index
