#!/usr/bin/env bash
# run_python_suite.sh: the Python differential suites (tests/python/*_test.py) with PyTorch 2.x
# as the oracle, from the venv of tools/torch2/setup_venv.sh, instead of Debian's torch 1.13.
#
#   tools/torch2/run_python_suite.sh                    # all suites against torch 2.x
#   tools/torch2/run_python_suite.sh -k index_put       # extra arguments go to pytest
#   MUTAGRAD_TORCH=1.13 tools/torch2/run_python_suite.sh   # the same run against Debian's 1.13
#   NO_BUILD=1 tools/torch2/run_python_suite.sh         # the module as built, no bazel call
#
# It builds //python:mutagrad_host_run and //python:mutagrad (what //tests/python:python_test
# uses) and runs pytest from tests/python with the same environment as run_pytest.sh. The same
# suites under Bazel with torch 2.x:
#   ./bazelw test //tests/python:python_test \
#       --test_env=MUTAGRAD_TEST_PYTHON=$HOME/.cache/mutagrad/torch2-venv/bin/python
# Without the venv this exits with status 3 and says so (the ordinary suite, 1.13, is unaffected).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${MUTAGRAD_TORCH2_VENV:-${HOME}/.cache/mutagrad/torch2-venv}"

if [[ "${MUTAGRAD_TORCH:-2}" == "1.13" ]]; then
  python=/usr/bin/python3
  export MUTAGRAD_EXPECT_TORCH=1.13
else
  python="${venv}/bin/python"
  if [ ! -x "${python}" ] || ! "${python}" -c 'import torch' 2>/dev/null; then
    echo "run_python_suite.sh: no PyTorch 2.x venv at ${venv}: run tools/torch2/setup_venv.sh" >&2
    echo "  (or MUTAGRAD_TORCH=1.13 for Debian's torch)." >&2
    exit 3
  fi
  export MUTAGRAD_EXPECT_TORCH=2
fi

cd "${root}"
if [[ -z "${NO_BUILD:-}" ]]; then  # NO_BUILD=1: use what is built
  ./bazelw build //python:mutagrad_host_run //python:mutagrad >&2
fi
# The default configuration's outputs (-c opt): stable while others build under other configs,
# which move the bazel-bin symlink.
bin="${BAZEL_BIN:-${root}/bazel-out/k8-opt/bin}"
# A private copy of the two builds: in a checkout shared with others, another build can delete
# and rewrite bazel-out's module in the middle of a run (every test then fails to import it).
snapshot="$(mktemp -d)"
trap 'rm -rf "${snapshot}"' EXIT
mkdir -p "${snapshot}/default"
cp -rL "${bin}/python/host_run" "${snapshot}/host_run"
cp -rL "${bin}/python/mutagrad" "${snapshot}/default/mutagrad"
find "${snapshot}" -name '*.runfiles*' -prune -exec rm -rf {} +
export PYTHONPATH="${snapshot}/host_run"
export MUTAGRAD_DEFAULT_BUILD_PATH="${snapshot}/default"
export PYTHONDONTWRITEBYTECODE=1
cd tests/python
"${python}" -m pytest -q -p no:cacheprovider "$@" *_test.py
