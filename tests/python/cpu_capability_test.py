"""mutagrad.backends.cpu (Note [CPU capability dispatch] in tensor/cpu/vec_kernels.h): the
build reported is what /proc/cpuinfo's flags allow, torch's spelling, and every runnable build
gives matmul and the vectorized transcendentals within float32 rounding of torch 1.13's
(exactly torch's values where the result is exact); an unknown name is a ValueError that
changes nothing.
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import from_torch as _from_torch, numpy_of


def from_torch(t):
    return _from_torch(mg, t)


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def runnable():
    flags = cpu_flags()
    builds = ["DEFAULT"]
    if {"avx2", "fma"} <= flags:
        builds.append("AVX2")
        if {"avx512f", "avx512dq", "avx512vl", "avx512bw"} <= flags:
            builds.append("AVX512")
    return builds


@pytest.fixture(autouse=True)
def restore_capability():
    saved = mg.backends.cpu.get_cpu_capability()
    yield
    mg.backends.cpu.set_cpu_capability(saved)


def test_the_best_build_is_what_the_cpu_flags_allow():
    assert mg.backends.cpu.supported_cpu_capability() == runnable()[-1]
    # The environment of this suite does not pin one: the best runs.
    assert mg.backends.cpu.get_cpu_capability() == runnable()[-1]


@pytest.mark.parametrize("capability", ["DEFAULT", "AVX2", "AVX512"])
def test_each_build_computes_matmul_and_transcendentals_as_torch(capability):
    if capability not in runnable():
        with pytest.raises(ValueError):
            mg.backends.cpu.set_cpu_capability(capability)
        assert mg.backends.cpu.get_cpu_capability() == "DEFAULT"
        return
    mg.backends.cpu.set_cpu_capability(capability)
    assert mg.backends.cpu.get_cpu_capability() == capability
    gen = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, torch.float64):
        # Small integers: every product and sum is exact, so equal to torch's bit for bit.
        a = torch.randint(-8, 8, (37, 53), generator=gen).to(dtype)
        b = torch.randint(-8, 8, (53, 29), generator=gen).to(dtype)
        got = numpy_of(from_torch(a) @ from_torch(b))
        np.testing.assert_array_equal(got, (a @ b).numpy())
        got_t = numpy_of(from_torch(a.t().contiguous()).t() @ from_torch(b))
        np.testing.assert_array_equal(got_t, (a @ b).numpy())
        x = torch.empty(5000, dtype=dtype).uniform_(-30, 30, generator=gen)
        x[::97] = float("-inf")
        x[::89] = float("nan")
        tol = 4 * torch.finfo(dtype).eps
        for name in ("exp", "tanh", "sigmoid", "sin", "cos"):
            want = getattr(torch, name)(x).numpy()
            got = numpy_of(getattr(mg, name)(from_torch(x)))
            np.testing.assert_allclose(got, want, rtol=tol, atol=1e-30, equal_nan=True,
                                       err_msg=f"{name} {dtype} {capability}")
        pos = x.abs() + 1e-3
        np.testing.assert_allclose(numpy_of(mg.log(from_torch(pos))), torch.log(pos).numpy(),
                                   rtol=tol, equal_nan=True)


def test_an_unknown_name_is_a_value_error_and_changes_nothing():
    before = mg.backends.cpu.get_cpu_capability()
    with pytest.raises(ValueError, match="not a CPU capability"):
        mg.backends.cpu.set_cpu_capability("avx3")
    assert mg.backends.cpu.get_cpu_capability() == before
