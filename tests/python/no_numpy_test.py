"""NumPy is optional (docs/packaging.md): no_numpy_smoke.py in a fresh interpreter where every
`import numpy` fails (a sys.meta_path finder installed before mutagrad is imported), so an
unconditional NumPy import anywhere in the package or the extension fails the suite without
building a wheel. tests/packaging/wheel_test.sh runs the same script where NumPy is not
installed at all."""
import os
import subprocess
import sys

SMOKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "no_numpy_smoke.py")


def run_smoke(*args):
    return subprocess.run([sys.executable, SMOKE, *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_mutagrad_works_without_numpy():
    r = run_smoke("--block-numpy")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("no-numpy smoke OK"), r.stdout


def test_the_block_hides_an_installed_numpy():
    # The oracle for the test above: NumPy is installed here, so without the block the smoke
    # script's own first check (that `import numpy` fails) must fail.
    import numpy  # noqa: F401  (the suite's machine has it)

    r = run_smoke()
    assert r.returncode != 0 and "expected ImportError" in r.stderr, r.stdout + r.stderr
