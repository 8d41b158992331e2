#!/usr/bin/env bash
# checkpoint_interop.sh: mutagrad's checkpoints against current PyTorch (2.x) and the safetensors
# package, from the venv of setup_venv.sh (checkpoint_interop.py says what is checked; the
# record of runs is in docs/checkpoints.md).
#   tools/torch2/checkpoint_interop.sh            # builds //python:mutagrad_host_run first
#   NO_BUILD=1 tools/torch2/checkpoint_interop.sh
# Without the venv this is NOT a pass: it says so on stderr and exits 3. It installs the
# safetensors package into the venv (pip, PyPI) when it is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${MUTAGRAD_TORCH2_VENV:-${HOME}/.cache/mutagrad/torch2-venv}"
python="${venv}/bin/python"
if [ ! -x "${python}" ] || ! "${python}" -c 'import torch' 2>/dev/null; then
  echo "checkpoint_interop.sh: SKIPPED, NOT A PASS: no PyTorch 2.x venv at ${venv};" >&2
  echo "  run tools/torch2/setup_venv.sh first." >&2
  exit 3
fi
if ! "${python}" -c 'import safetensors' 2>/dev/null; then
  "${venv}/bin/pip" install --quiet safetensors >&2
fi
cd "${root}"
if [[ -z "${NO_BUILD:-}" ]]; then
  ./bazelw build //python:mutagrad_host_run >&2
fi
bin="${BAZEL_BIN:-${root}/bazel-out/k8-opt/bin}"
# A private copy: another build in a shared checkout can replace the module mid-run.
copy="$(mktemp -d)"
trap 'rm -rf "${copy}"' EXIT
cp -rL "${bin}/python/host_run/mutagrad" "${copy}/"
PYTHONPATH="${copy}" "${python}" "${root}/tools/torch2/checkpoint_interop.py"
