#!/usr/bin/env bash
# The wheels, installed with pip into fresh venvs without network, and the Python suite run
# against the installed package (not bazel-bin):
#   - //python:wheel (what users install; no CUDA device): a smoke test, the module
#     default_build_test.py runs in a subprocess (MUTAGRAD_DEFAULT_BUILD_PATH), and
#     no_numpy_smoke.py runs in a venv without system site packages, where NumPy is missing;
#   - //python:wheel_host_run (the same package around the host-run extension): every
#     tests/python/*_test.py, which also drive the host-run "cuda" device.
# Those two venvs see Debian's site packages (--system-site-packages): torch, numpy and pytest
# are the suite's oracle and runner, not mutagrad's dependencies.
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
need_packages python3-venv python3-pip python3-pytest python3-numpy python3-torch

step "build the wheels"
(cd "$repo" && ./bazelw build //python:wheel //python:wheel_host_run)
bin="$(cd "$repo" && ./bazelw info bazel-bin 2>/dev/null)"
wheel_name="$(cd "$bin/python" && ls mutagrad-*-cp311-cp311-linux_x86_64.whl)"
user_wheel="$bin/python/$wheel_name"
host_run_wheel="$bin/python/host_run/$wheel_name"

install_wheel() {  # venv directory, wheel
  /usr/bin/python3 -m venv --system-site-packages "$1"
  "$1/bin/python" -m pip install --quiet --no-index --disable-pip-version-check "$2"
}

step "install $wheel_name (user) and its host-run twin into fresh venvs"
install_wheel "$scratch/user" "$user_wheel"
install_wheel "$scratch/host_run" "$host_run_wheel"
user_site="$("$scratch/user/bin/python" -c \
  'import sysconfig; print(sysconfig.get_paths()["platlib"])')"

step "the user wheel"
(cd "$scratch" && "$scratch/user/bin/python" - "$wheel_name" <<'PY'
import os
import sys

import mutagrad as mg

assert os.path.realpath(mg.__file__).startswith(os.path.realpath(sys.prefix)), mg.__file__
assert sys.argv[1].startswith(f"mutagrad-{mg.__version__}-"), (sys.argv[1], mg.__version__)
assert not mg.cuda.is_available(), "the user wheel must not present the host-run device"
x = mg.arange(6, dtype=mg.float64).reshape(2, 3).requires_grad_()
(x * x).sum().backward()
assert x.grad.tolist() == [[0, 2, 4], [6, 8, 10]], x.grad
print("user wheel OK:", mg.__version__, os.path.dirname(mg.__file__))
PY
)

step "the user wheel where NumPy is not installed (a venv without system site packages)"
# NumPy is optional (an extra, mutagrad[numpy]): pip --no-index would fail if the wheel
# required it; no_numpy_smoke.py checks that `import numpy` fails there, that lists, indexing,
# setitem, autograd, an optimizer and printing work, and that numpy() says what to install.
# Without pip of its own (ensurepip would take 4 s): Debian's pip installs into it (--python).
/usr/bin/python3 -m venv --without-pip "$scratch/bare"
/usr/bin/python3 -m pip --python "$scratch/bare/bin/python" install --quiet --no-index \
  --disable-pip-version-check "$user_wheel"
(cd "$scratch" && "$scratch/bare/bin/python" - <<'PY'
import os
import sys
from importlib.metadata import requires

import mutagrad as mg

assert os.path.realpath(mg.__file__).startswith(os.path.realpath(sys.prefix)), mg.__file__
assert all("extra ==" in r for r in requires("mutagrad") or []), requires("mutagrad")
PY
"$scratch/bare/bin/python" "$repo/tests/python/no_numpy_smoke.py")

step "the Python suite against the installed host-run wheel"
cd "$repo/tests/python"
export PYTHONDONTWRITEBYTECODE=1
export MUTAGRAD_DEFAULT_BUILD_PATH="$user_site"
"$scratch/host_run/bin/python" - <<'PY'
import os
import sys

import mutagrad as mg

assert os.path.realpath(mg.__file__).startswith(os.path.realpath(sys.prefix)), mg.__file__
assert mg.cuda.is_available(), "the host-run wheel has the host-run CUDA device"
PY
"$scratch/host_run/bin/python" -m pytest -q -p no:cacheprovider ./*_test.py
echo "PASS: the Python suite against the installed wheels"
