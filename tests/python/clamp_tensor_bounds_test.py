"""clamp_ / clip_ with tensor bounds (Tensor methods and module functions) against torch 1.13:
values, one bump, ClampBackward0 (CopySlices through a view), gradients of self and both
bounds, bounds aliasing self, and the refusals (shape, dtype, a number with a tensor, no bound)
leaving self and its version unchanged. mutagrad on the CPU and the host-run CUDA device."""

import pytest
import torch

import mutagrad as mg
from lib_util import same_kind

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def make(lib, values, requires_grad=False, dtype=None):
    t = lib.tensor(values, dtype=getattr(lib, dtype)) if dtype else lib.tensor(values)
    if lib is mg:
        t = t.to(MG_DEVICE)
    return t.requires_grad_() if requires_grad else t


X = [-2.0, 0.5, 3.0, 1.5]
LO = [-1.0, 1.0, 0.0, 2.0]
HI = [0.0, 2.0, 2.0, 1.0]  # the last has lo > hi: torch gives hi


@pytest.mark.parametrize("name", ["clamp_", "clip_"])
@pytest.mark.parametrize("bounds", ["both", "min", "max"])
@pytest.mark.parametrize("form", ["method", "function"])
def test_values_versions_and_gradients(name, bounds, form):
    results = []
    for lib in (torch, mg):
        x = make(lib, X, requires_grad=True)
        lo = make(lib, LO, requires_grad=True)
        hi = make(lib, HI, requires_grad=True)
        y = x * 1.0
        args = {"both": (lo, hi), "min": (lo, None), "max": (None, hi)}[bounds]
        out = getattr(y, name)(*args) if form == "method" else getattr(lib, name)(y, *args)
        assert out is y
        version = y._version
        node = type(y.grad_fn).__name__
        (y * make(lib, [1.0, 2.0, 3.0, 4.0])).sum().backward()
        grads = [t.grad.tolist() if t.grad is not None else None for t in (x, lo, hi)]
        results.append((y.tolist(), version, node, grads))
    assert results[1] == results[0]


def test_through_a_view_and_broadcast_bounds():
    results = []
    for lib in (torch, mg):
        x = make(lib, [[-2.0, 0.5], [3.0, 1.5]], requires_grad=True)
        base = x.clone()
        row = base[1]
        lo = make(lib, [2.0], requires_grad=True)  # broadcasts
        row.clamp_(lo, None)
        base.sum().backward()
        results.append((base.tolist(), type(base.grad_fn).__name__, base._version,
                        x.grad.tolist(), lo.grad.tolist()))
    assert results[1] == results[0]


def test_bound_aliasing_self():
    results = []
    for lib in (torch, mg):
        x = make(lib, [1.0, -1.0, 2.0], requires_grad=True)
        y = x * 1.0
        y.clamp_(None, y * 0.5)  # max computed from y before the write
        y.sum().backward()
        results.append((y.tolist(), x.grad.tolist()))
    assert results[1] == results[0]


def refusal(lib, case):
    y = make(lib, [1.0, 2.0, 3.0])
    ints = make(lib, [1, 2, 3])
    calls = {
        "shape": lambda: y.clamp_(make(lib, [[0.0] * 3] * 2)),
        "dtype": lambda: ints.clamp_(make(lib, [1.5]), None),
        "mixed": lambda: y.clamp_(make(lib, [0.0, 0.0, 0.0]), 1.0),
        "leaf": lambda: make(lib, [1.0], requires_grad=True).clamp_(make(lib, [0.0])),
    }
    try:
        calls[case]()
    except Exception as e:  # noqa: BLE001 (the outcome is the exception's kind)
        return type(e).__name__, y.tolist(), y._version, ints.tolist(), ints._version
    return None


@pytest.mark.parametrize("case", ["shape", "dtype", "mixed", "leaf"])
def test_refusals_change_nothing(case):
    t = refusal(torch, case)
    m = refusal(mg, case)
    assert t is not None and m is not None
    assert same_kind(t[0], m[0]), (t, m)
    assert m[1:] == t[1:]


def test_no_bound():
    with pytest.raises(Exception) as info:
        make(mg, [1.0]).clamp_(None, None)
    assert "at least one of 'min' or 'max'" in str(info.value)
