"""The module users build by default (//python:mutagrad) has no CUDA device: is_available() is
False, unavailable_reason() says how to get one, and creating a CUDA tensor raises a
RuntimeError that says why. The rest of the suite imports the host-run build; this file runs
the default build in a subprocess, from MUTAGRAD_DEFAULT_BUILD_PATH (set by run_pytest.sh; by
hand: MUTAGRAD_DEFAULT_BUILD_PATH=bazel-bin/python after ./bazelw build //python:mutagrad).
"""

import os
import subprocess
import sys
import textwrap

import mutagrad as mg


def default_build_path():
    path = os.environ.get("MUTAGRAD_DEFAULT_BUILD_PATH")
    assert path, ("MUTAGRAD_DEFAULT_BUILD_PATH is not set: point it at the directory holding the "
                  "default build's mutagrad package (bazel-bin/python)")
    assert os.path.isfile(os.path.join(path, "mutagrad", "_C.so")), f"no mutagrad/_C.so in {path}"
    return os.path.abspath(path)


def run_in_default_build(code):
    env = dict(os.environ, PYTHONPATH=default_build_path())
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_suite_runs_the_host_run_build():
    assert mg.cuda.is_available()
    assert os.path.abspath(os.path.dirname(mg.__file__)) != \
        os.path.join(default_build_path(), "mutagrad")


def test_default_build_has_no_cuda_device():
    out = run_in_default_build("""
        import os
        import mutagrad as mg
        print(os.path.dirname(mg.__file__))
        assert not mg.cuda.is_available()
        assert mg.cuda.device_count() == 0
        assert mg.cuda.build_name() == "none (built without CUDA)"
        reason = mg.cuda.unavailable_reason()
        assert "built without a CUDA backend" in reason and "--config=cuda" in reason, reason
        assert mg.cuda.memory_allocated() == 0 and mg.cuda.memory_reserved() == 0
        mg.manual_seed(3)       # seeds the CUDA generator too; fine without a device
        mg.cuda.manual_seed(3)
        for make in [lambda: mg.zeros(2, device="cuda"), lambda: mg.ones(2).cuda(),
                     lambda: mg.tensor([1.0]).to("cuda"), lambda: mg.rand(2, device="cuda"),
                     lambda: mg.cuda.synchronize(), lambda: mg.cuda.get_device_name()]:
            try:
                make()
            except RuntimeError as e:
                assert str(e).startswith("CUDA is not available: mutagrad was built without a "
                                         "CUDA backend"), str(e)
            else:
                raise AssertionError("no error")
        x = mg.zeros(2, device="cpu")
        assert x.device == mg.device("cpu") and not x.is_cuda and x.cpu() is x
        print("ok")
    """)
    lines = out.split()
    assert lines[-1] == "ok"
    assert os.path.abspath(lines[0]) == os.path.join(default_build_path(), "mutagrad")
