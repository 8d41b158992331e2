"""add/sub with alpha, addcmul and lerp against torch, bit for bit: torch's kernels round each
multiply-add once (vec::fmadd on the CPU; nvcc contracts `a + alpha * b` on CUDA), and so do
ours (Note [Torch's fused multiply-adds] in tensor/native/fma.h). Before, 10-27 % of random
float32/float64 elements were an ulp away from torch's. Same-shaped operands, in place and
not, contiguous and strided, with torch.optim's SGD and Adam steps, and the hand-derived
midpoint case, where a sum rounded to double first ties the other way.
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import FLOAT_DTYPES, numpy_of
from torch_oracle import torch_version

DEVICES = ("cpu", "cuda")


def operands(dtype, seed, n=4099):
    """Values of both signs over 2^-12 .. 2^12, with zeros: every kind of rounding."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(1, 2, n) * np.exp2(rng.integers(-12, 13, n)) * rng.choice([-1, 1], n)
    v[::17] = 0
    return v.astype(dtype)


def both(values, device, strided):
    """The same values as a torch tensor and a mutagrad one; strided: a transposed view."""
    shape = (values.size,)
    if strided:
        values = values[: (values.size // 8) * 8]
        shape = (8, values.size // 8)
    t = torch.from_numpy(values.copy()).reshape(shape)
    m = mg.from_numpy(values.copy()).reshape(shape).to(device)
    if strided:
        t, m = t.t().contiguous().t(), m.t().contiguous().t()
    return t, m


def assert_bits(m, t):
    a, b = numpy_of(m), numpy_of(t)
    assert a.dtype == b.dtype and a.shape == b.shape
    same = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
    differ = np.flatnonzero(~same)
    assert differ.size == 0, (differ.size, a.flat[differ[:3]], b.flat[differ[:3]])


CASES = {
    "add": lambda lib, x, y, z: lib.add(x, y, alpha=0.3),
    "sub": lambda lib, x, y, z: lib.sub(x, y, alpha=1.7),
    "add_": lambda lib, x, y, z: x.clone().add_(y, alpha=-2.5),
    "sub_": lambda lib, x, y, z: x.clone().sub_(y, alpha=1e-3),
    "addcmul": lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.7),
    "addcmul_": lambda lib, x, y, z: x.clone().addcmul_(y, z, value=-0.3),
    "lerp small": lambda lib, x, y, z: lib.lerp(x, y, 0.3),
    "lerp large": lambda lib, x, y, z: lib.lerp(x, y, 0.7),
    "lerp_": lambda lib, x, y, z: x.clone().lerp_(y, 1.5),
    # Weights in [0, 4.1): torch 1.13 takes the small weight's side for w < 0.5, 2.x (and
    # mutagrad) for |w| < 0.5 (docs/torch-versions.md); fma_ops_test covers negative weights.
    "lerp tensor": lambda lib, x, y, z: lib.lerp(x, y, z.abs() * 1e-3),
    "lerp_ tensor": lambda lib, x, y, z: x.clone().lerp_(y, z.abs() * 1e-3),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strided", (False, True))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_element_is_torchs(case, dtype, strided, device):
    (tx, mx), (ty, my), (tz, mz) = (both(operands(dtype, s), device, strided) for s in (1, 2, 3))
    assert_bits(CASES[case](mg, mx, my, mz), CASES[case](torch, tx, ty, tz))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype, x, alpha, y, want", [
    ("float32", 1 + 2.0**-23, 1 + 2.0**-15, 2.0**-24 * (1 - 2.0**-15), 1 + 2.0**-23),
    ("float64", 1 + 2.0**-52, 1 + 2.0**-30, 2.0**-53 * (1 - 2.0**-30), 1 + 2.0**-52),
])
def test_the_midpoint_case(dtype, x, alpha, y, want, device):
    """x + alpha * y lies just below a midpoint: one rounding gives x, a sum rounded to double
    first (or alpha * y rounded first) ties to even, one ulp above."""
    for lib, dev in ((torch, "cpu"), (mg, device)):
        xs = lib.full((67,), x, dtype=getattr(lib, dtype)).to(dev)
        ys = lib.full((67,), y, dtype=getattr(lib, dtype)).to(dev)
        alphas = lib.full((67,), alpha, dtype=getattr(lib, dtype)).to(dev)
        for r in (lib.add(xs, ys, alpha=alpha), xs.clone().add_(ys, alpha=alpha),
                  lib.addcmul(xs, alphas, ys)):
            assert (numpy_of(r) == want).all(), (lib.__name__, numpy_of(r)[:2])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("opt", ("sgd", "sgd nesterov wd", "adam", "adamw amsgrad"))
def test_optimizer_steps_are_torchs(opt, dtype):
    """20 steps of torch.optim and of mutagrad.optim on the same parameters and gradients:
    the same bits (both round each add_(alpha) and addcmul_ once). torch 2.x's Adam moves
    exp_avg with lerp_ where 1.13 (and mutagrad) use mul_ and add_(alpha): close there."""
    params = {}
    for lib in (torch, mg):
        p = lib.tensor(operands(dtype, 4, 1000).tolist(), dtype=getattr(lib, dtype),
                       requires_grad=True)
        o = lib.optim
        make = {
            "sgd": lambda: o.SGD([p], lr=0.1, momentum=0.9, dampening=0.1),
            "sgd nesterov wd": lambda: o.SGD([p], lr=0.1, momentum=0.9, nesterov=True,
                                             weight_decay=0.01),
            "adam": lambda: o.Adam([p], lr=0.01, weight_decay=0.1),
            "adamw amsgrad": lambda: o.AdamW([p], lr=0.01, amsgrad=True),
        }[opt]
        optimizer = make()
        for step in range(20):
            p.grad = lib.tensor(operands(dtype, 100 + step, 1000).tolist(),
                                dtype=getattr(lib, dtype))
            optimizer.step()
        params[lib.__name__] = numpy_of(p.detach())
    if opt.startswith("adam") and torch_version() >= (2, 0):
        np.testing.assert_allclose(params["mutagrad"], params["torch"], rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(params["mutagrad"], params["torch"])


NUMBER_CASES = {
    "add": lambda lib, x: lib.add(x, 0.1, alpha=0.3),
    "sub": lambda lib, x: lib.sub(x, 0.1, alpha=0.7),
    "method add": lambda lib, x: x.add(2.5, alpha=-1.3),
    "method sub": lambda lib, x: x.sub(0.1, alpha=3),
    "add_": lambda lib, x: x.clone().add_(0.1, alpha=0.3),
    "sub_": lambda lib, x: x.clone().sub_(0.7, alpha=0.1),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", sorted(NUMBER_CASES))
def test_a_number_with_alpha(case, dtype, device):
    """A number other with alpha: torch wraps it as a tensor of the result's dtype, then one FMA.
    mutagrad.add(x, number, alpha=a) ignored alpha before 2026-11-29 (x + number). 4,096
    elements: torch 1.13's loop over a broadcast number rounds twice in some positions of its
    vector tail (Note [Torch's fused multiply-adds])."""
    tx, mx = both(operands(dtype, 5, 4096), device, False)
    assert_bits(NUMBER_CASES[case](mg, mx), NUMBER_CASES[case](torch, tx))
