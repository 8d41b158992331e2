"""Reductions against torch 1.13: sum/mean/prod(dtype=), cumsum/cumprod, all/any, count_nonzero,
var/std (unbiased, correction=, the legacy positional bool), norm (p numbers, inf, 'fro' with and
without dim), logsumexp, amax/amin, clamp_min/clamp_max, isclose/allclose/equal. Seeded random
shapes (0-dim, empty, non-contiguous), dims (negative, tuples), keepdim; values, dtypes,
gradients and node names; error kinds. mutagrad on the CPU and on the host-run CUDA device.
"""

import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import capture, from_torch, numpy_of

MG_DEVICE = "cpu"
SEEDS = range(3)


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def to_lib(lib, t, requires_grad=False):
    out = from_torch(lib, t)
    if lib is mg:
        out = out.to(MG_DEVICE)
    return out.requires_grad_() if requires_grad else out


def close(m, t, rtol):
    a, b = numpy_of(m), numpy_of(t)
    if a.shape != b.shape or str(m.dtype).split(".")[-1] != str(t.dtype).split(".")[-1]:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    if a.dtype == np.float32 and rtol:
        rtol = max(rtol, 2e-6)  # float32 results: torch's summation order differs from ours
    return np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)


def check(fn, x, rtol=1e-12, grad=False, what=""):
    """fn(lib, x) in both: same outcome kind, values and dtype (and, with grad, the gradient of
    a weighted sum and the node name)."""
    results = {}
    for lib in (torch, mg):
        a = to_lib(lib, x, requires_grad=grad)
        out = capture(lambda: fn(lib, a))
        results[lib.__name__] = (out, a)
    (t, ta), (m, ma) = results["torch"], results["mutagrad"]
    assert t.kind == m.kind, f"{what}: torch {t} mutagrad {m}"
    if t.kind != "ok":
        return
    if isinstance(t.value, bool):
        assert m.value == t.value, what
        return
    assert close(m.value, t.value, rtol), f"{what}:\n torch {t.value}\n mg {numpy_of(m.value)}"
    if grad and t.value.requires_grad:
        assert m.value.grad_fn.name() == type(t.value.grad_fn).__name__, what
        w = torch.arange(1, t.value.numel() + 1, dtype=t.value.dtype).reshape(t.value.shape)
        if capture(lambda: (t.value * w).sum().backward()).kind != "ok":
            # torch 1.13's own backward fails on some shapes (std of one element: "returned an
            # invalid gradient"); ours must still run.
            (m.value * to_lib(mg, w)).sum().backward()
            return
        (m.value * to_lib(mg, w)).sum().backward()
        if ta.grad is None:  # torch: no gradient at all (norm p=0); ours: zeros
            assert ma.grad is None or not np.any(numpy_of(ma.grad)), what
            return
        assert close(ma.grad, ta.grad, max(rtol, 1e-10)), f"{what} grad:\n torch {ta.grad}\n" \
                                                          f" mg {numpy_of(ma.grad)}"


def random_case(rng, gen, dtype=torch.float64):
    ndim = rng.randint(0, 3)
    shape = [rng.randint(0 if rng.random() < 0.1 else 1, 4) for _ in range(ndim)]
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=gen, dtype=dtype)
    elif dtype == torch.bool:
        x = torch.rand(shape, generator=gen) < 0.5
    else:
        x = torch.randint(-3, 4, shape, generator=gen, dtype=dtype)
    if ndim >= 2 and rng.random() < 0.5:
        x = x.transpose(0, 1)
    return x


def random_dims(rng, ndim):
    if ndim == 0:
        return rng.choice([0, -1])
    k = rng.randint(1, ndim)
    dims = rng.sample(range(ndim), k)
    dims = [d - ndim if rng.random() < 0.3 else d for d in dims]
    return dims[0] if k == 1 and rng.random() < 0.5 else tuple(dims)


@pytest.mark.parametrize("seed", SEEDS)
def test_float_reductions_values_and_gradients(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(30):
        x = random_case(rng, gen)
        dim = random_dims(rng, x.dim())
        keepdim = rng.random() < 0.5
        one = dim if isinstance(dim, int) else dim[0]
        what = f"shape {list(x.shape)} dim {dim} keepdim {keepdim}"
        cases = {
            "sum dtype": lambda lib, a: a.sum(dim, keepdim, dtype=lib.float32),
            "mean dtype": lambda lib, a: lib.mean(a, dtype=lib.float64),
            "cumsum": lambda lib, a: a.cumsum(one),
            "cumprod": lambda lib, a: lib.cumprod(a, one),
            "var": lambda lib, a: a.var(dim, keepdim=keepdim),
            "var correction": lambda lib, a: lib.var(a, dim, correction=0, keepdim=keepdim),
            "var unbiased": lambda lib, a: a.var(False),
            "std": lambda lib, a: a.std(dim, True, keepdim),
            "std all": lambda lib, a: lib.std(a),
            "norm": lambda lib, a: a.norm(),
            "norm fro dim": lambda lib, a: a.norm("fro", dim, keepdim),
            "logsumexp": lambda lib, a: lib.logsumexp(a, dim, keepdim),
            "amax": lambda lib, a: a.amax(dim, keepdim),
            "amin": lambda lib, a: lib.amin(a, dim),
            "clamp_min": lambda lib, a: a.clamp_min(0.1),
            "clamp_max": lambda lib, a: lib.clamp_max(a, -0.2),
        }
        for p in (1, 2, 3, 0.5, float("inf"), -float("inf"), 0):
            cases[f"norm p={p}"] = lambda lib, a, p=p: a.norm(p, dim, keepdim)
        for name, fn in cases.items():
            check(fn, x, rtol=1e-10, grad=True, what=f"{name} {what}")


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_and_bool_reductions(seed):
    rng = random.Random(10 + seed)
    gen = torch.Generator().manual_seed(10 + seed)
    for dtype in (torch.int32, torch.int64, torch.bool, torch.float32):
        for _ in range(8):
            x = random_case(rng, gen, dtype)
            dim = random_dims(rng, x.dim())
            one = dim if isinstance(dim, int) else dim[0]
            what = f"{dtype} shape {list(x.shape)} dim {dim}"
            cases = {
                "all": lambda lib, a: a.all(),
                "any dim": lambda lib, a: a.any(one, keepdim=True),
                "all dim": lambda lib, a: lib.all(a, one),
                "count_nonzero": lambda lib, a: lib.count_nonzero(a, dim),
                "count_nonzero all": lambda lib, a: a.count_nonzero(),
                "cumsum": lambda lib, a: a.cumsum(one),
                "cumsum dtype": lambda lib, a: a.cumsum(one, dtype=lib.float64),
                "cumprod": lambda lib, a: lib.cumprod(a, one),
                "sum dtype": lambda lib, a: a.sum(dtype=lib.int32),
                "var": lambda lib, a: a.var(),
                "norm": lambda lib, a: a.norm(),
                "logsumexp": lambda lib, a: a.logsumexp(one),
            }
            for name, fn in cases.items():
                check(fn, x, rtol=1e-6, what=f"{name} {what}")


def test_cumsum_float32_accumulates_in_double_as_torch():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1000, generator=gen) * 1000
    check(lambda lib, a: a.cumsum(0), x, rtol=0)
    check(lambda lib, a: (a / 1000).cumprod(0), x, rtol=0)


def test_cumprod_gradient_through_zeros_matches_torch():
    x = torch.tensor([[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 2.0], [1.5, 2.0, 3.0, 0.0]],
                     dtype=torch.float64)
    check(lambda lib, a: a.cumprod(1), x, grad=True, what="cumprod zeros")
    check(lambda lib, a: a.cumprod(0), x, grad=True, what="cumprod zeros dim 0")


def test_isclose_allclose_equal():
    a = torch.tensor([1.0, float("nan"), float("inf"), 2.0, 1e-9])
    b = torch.tensor([1.0 + 1e-6, float("nan"), float("inf"), 2.1, 0.0])
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 0.0, "rtol": 0.0}):
        for lib_fn in ("isclose", "allclose"):
            results = []
            for lib in (torch, mg):
                x, y = to_lib(lib, a), to_lib(lib, b)
                r = getattr(lib, lib_fn)(x, y, **kwargs)
                results.append(r if isinstance(r, bool) else numpy_of(r).tolist())
            assert results[0] == results[1], (lib_fn, kwargs)
    for lib in (torch, mg):
        x = to_lib(lib, a)
        assert lib.equal(x, x.clone()) is False  # nan != nan
        assert lib.equal(to_lib(lib, b[3:]), to_lib(lib, b[3:]).clone()) is True
        assert lib.equal(to_lib(lib, b[3:]), to_lib(lib, b)) is False
    assert capture(lambda: mg.isclose(mg.ones(2), mg.ones(2, dtype=mg.float64))).kind == \
        capture(lambda: torch.isclose(torch.ones(2), torch.ones(2, dtype=torch.float64))).kind


@pytest.mark.parametrize("bad", [
    lambda lib, x: x.var(),
    lambda lib, x: x.std(0),
    lambda lib, x: x.norm(),
    lambda lib, x: x.float().cumsum(2),
    lambda lib, x: x.float().logsumexp(5),
])
def test_refused_calls_raise_torchs_kind(bad):
    kinds = []
    for lib in (torch, mg):
        x = lib.tensor([[1, 2], [3, 4]])
        if lib is mg:
            x = x.to(MG_DEVICE)
        kinds.append(capture(lambda: bad(lib, x)).kind)
    assert kinds[0] == kinds[1] and kinds[0] != "ok", kinds


def test_in_place_scans_and_clamps_name_their_line():
    x = mg.ones(3, requires_grad=True).to(MG_DEVICE)
    y = x.exp()
    z = y * y
    y.cumsum_(0)  # the line the error must name
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    assert "cumsum_" in str(err.value) and "statistics_ops_test.py" in str(err.value)
    w = mg.tensor([-1.0, 0.5, 2.0]).to(MG_DEVICE)
    w.clamp_min_(0.0).clamp_max_(1.0)
    assert numpy_of(w).tolist() == [0.0, 0.5, 1.0] and w._version == 2


def test_clamp_with_tensor_bounds_matches_torch():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    lo = torch.randn(4, generator=gen, dtype=torch.float64) - 0.5
    hi = torch.randn(3, 1, generator=gen, dtype=torch.float64) + 0.5
    for kwargs in ({"min": lo, "max": hi}, {"min": lo}, {"max": hi}):
        results = {}
        for lib in (torch, mg):
            a = to_lib(lib, x, requires_grad=True)
            bounds = {k: (to_lib(lib, v, requires_grad=True) if isinstance(v, torch.Tensor)
                          else v) for k, v in kwargs.items()}
            y = lib.clamp(a, **bounds) if lib is torch else mg.clamp(a, **bounds)
            w = torch.arange(1.0, 13.0, dtype=torch.float64).reshape(3, 4)
            (y * to_lib(lib, w)).sum().backward()
            name = type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name()
            grads = [numpy_of(b.grad).tolist() for b in bounds.values()
                     if not isinstance(b, float)]
            results[lib.__name__] = (name, numpy_of(y).tolist(), numpy_of(a.grad).tolist(), grads)
        assert results["torch"] == results["mutagrad"], kwargs
