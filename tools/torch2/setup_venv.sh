#!/usr/bin/env bash
# setup_venv.sh: installs current PyTorch (2.x, PyPI's `torch` wheel) into a venv outside the
# checkout, for the *_vs_torch2 benchmarks (@libtorch2 links the wheel's libtorch) and the
# Python differential suites (tools/torch2/run_python_suite.sh). The system Python is not
# touched; nothing in the ordinary build or test suite needs this venv.
#
#   tools/torch2/setup_venv.sh              # latest torch on PyPI
#   tools/torch2/setup_venv.sh 2.15.0       # a given version
#   MUTAGRAD_TORCH2_VENV=/path tools/torch2/setup_venv.sh
#
# The venv (default ~/.cache/mutagrad/torch2-venv) is made by Debian's /usr/bin/python3 -m venv
# --system-site-packages: the mutagrad module is built for that interpreter, and numpy and
# pytest stay Debian's (the same as in the 1.13 runs, so that only torch differs). The venv's
# site-packages come before the system's, so its torch shadows Debian's python3-torch 1.13.
#
# Size: PyPI's Linux x86-64 wheel is the CUDA build. With its dependencies (the CUDA 13
# runtime, cuBLAS, cuDNN, NCCL, ... as nvidia-* wheels, and triton) `import torch` works; the
# download is about 3.0 GB (torch 2.15.0: 539 MB for torch itself) and the venv 5.3 GB. Even
# libtorch_cpu.so needs libcudart and libcupti to load, so --no-deps is not offered.
#
# Exit status: 0 with the version printed; 3 when the registry cannot provide torch (then the
# 1.13 oracle, Debian's python3-torch and libtorch-dev, is what the suites and benchmarks use:
# say so where figures are reported); 1 on other errors.
set -euo pipefail

venv="${MUTAGRAD_TORCH2_VENV:-${HOME}/.cache/mutagrad/torch2-venv}"
spec="torch"
if (($# > 0)); then spec="torch==$1"; fi

if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "setup_venv.sh: needs Debian's python3 with python3-venv (sudo apt-get install" >&2
  echo "  python3-venv)." >&2
  exit 1
fi

if [ ! -x "${venv}/bin/python" ]; then
  echo "setup_venv.sh: creating ${venv}" >&2
  /usr/bin/python3 -m venv --system-site-packages "${venv}"
fi

start=$(date +%s)
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
unavailable="No matching distribution|Could not find a version|Failed to establish"
unavailable+="|Temporary failure|Max retries|HTTP error|Could not fetch"
if ! "${venv}/bin/python" -m pip install --progress-bar off --upgrade "${spec}" 2>&1 |
  tee "${log}"; then
  if grep -qE "${unavailable}" "${log}"; then
    echo >&2
    echo "setup_venv.sh: PyPI could not provide ${spec} today (see above). PyTorch 2.x is NOT" >&2
    echo "  available: the *_vs_torch2 benchmarks cannot be built, and the Python suites run" >&2
    echo "  against Debian's torch 1.13 only. Report 1.13 figures as such." >&2
    exit 3
  fi
  echo "setup_venv.sh: pip install ${spec} failed (see above)." >&2
  exit 1
fi
echo "setup_venv.sh: pip took $(($(date +%s) - start)) s;" \
  "venv size: $(du -sh "${venv}" | cut -f1)" >&2

# `import torch` must see the venv's torch, not Debian's 1.13 (which --system-site-packages
# also makes visible).
"${venv}/bin/python" - <<'PY'
import sys
import torch
assert "/dist-packages/" not in torch.__file__, f"Debian's torch shadows: {torch.__file__}"
print(f"torch {torch.__version__} at {torch.__file__}")
print(f"  C++11 ABI {int(torch._C._GLIBCXX_USE_CXX11_ABI)}, "
      f"{torch.backends.cpu.get_cpu_capability()}, python {sys.version.split()[0]}")
PY
