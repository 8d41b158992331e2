"""Views and composites of issue 35 against torch 1.13: Tensor.unfold and unflatten (views:
values, strides, shared _version, writes through, CopySlices after a write), trace,
repeat_interleave, kron, cross, cdist, meshgrid and fill_diagonal_ (values, dtypes, gradients,
node names, gradcheck/gradgradcheck, _version, refused calls with torch's exception kind). Runs
mutagrad on the CPU and on the (host-run) CUDA device.
"""

import math
import warnings

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import capture, from_torch, numpy_of

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def to_lib(lib, t):
    if lib is torch:
        return from_torch(torch, t)
    return from_torch(mg, t).to(MG_DEVICE)


class DeviceLib:
    """mutagrad with tensor() on the test's device (torch as it is)."""

    def __getattr__(self, name):
        f = getattr(mg, name)
        if name == "tensor":
            return lambda *a, **k: mg.tensor(*a, **k).to(MG_DEVICE)
        return f


def lib_of(lib):
    return torch if lib is torch else DeviceLib()


def node_name(t):
    if t.grad_fn is None:
        return None
    return type(t.grad_fn).__name__ if isinstance(t, torch.Tensor) else t.grad_fn.name()


def same(m, t, rtol=0.0):
    """Values (NaN equal), shape and dtype; exact unless rtol."""
    a, b = numpy_of(m), numpy_of(t)
    assert str(m.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (m.dtype, t.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if rtol == 0.0 or a.dtype.kind != "f":
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"\n{a}\n{b}"
    else:
        assert np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True), f"\n{a}\n{b}"


def compare(scenario, rtol=0.0):
    """scenario(lib) on both libraries: the same outcome kind and the same values."""
    t, m = capture(scenario, torch), capture(scenario, lib_of(mg))
    assert t.kind == m.kind, f"torch {t} mutagrad {m}"
    if not t.ok:
        return
    tv, mv = t.value, m.value
    if not isinstance(tv, tuple):
        tv, mv = (tv,), (mv,)
    assert len(tv) == len(mv)
    for a, b in zip(mv, tv):
        if isinstance(b, torch.Tensor):
            same(a, b, rtol)
        else:
            assert a == b, (a, b)


def arange_like(lib, *shape, dtype="float64"):
    return to_lib(lib, torch.arange(math.prod(shape), dtype=getattr(torch, dtype)).reshape(shape))


# ---- unfold / unflatten ------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim,size,step", [
    ((3, 5, 4), 1, 2, 1), ((3, 5, 4), -1, 4, 3), ((3, 5, 4), 0, 1, 2), ((6,), 0, 3, 2),
    ((2, 7), 1, 0, 3), ((0, 4), 1, 2, 2), ((), 0, 1, 1), ((4, 6), 1, 6, 1)])
def test_unfold_matches_torch(shape, dim, size, step):
    def scenario(lib, transposed):
        x = arange_like(lib, *shape)
        if transposed and x.dim() >= 2:
            x = x.transpose(0, -1).contiguous().transpose(0, -1)
        u = x.unfold(dim, size, step)
        return u, tuple(u.stride()), u.storage_offset(), u._version
    compare(lambda lib: scenario(lib, False))
    compare(lambda lib: scenario(lib, True))


def test_unfold_is_a_view_with_history():
    def scenario(lib):
        x = to_lib(lib, torch.linspace(0.5, 1.5, 12, dtype=torch.float64)).requires_grad_()
        h = x * 2
        u = h.unfold(0, 3, 3)  # disjoint windows
        out = u * u
        u.mul_(to_lib(lib, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)))
        # The write reaches h (CopySlices), shares the version, and stales out's saved u.
        stale = capture(lambda: out.sum().backward(retain_graph=True)).kind
        (h * h).sum().backward()
        return h, u._version, h._version, node_name(h), stale, x.grad
    compare(scenario)

    def overlapping(lib):
        x = to_lib(lib, torch.arange(5.0, dtype=torch.float64))
        w = x.unfold(0, 3, 1)
        w.fill_(7.0)  # torch allows it: only zero-stride overlap is refused
        return x, x._version
    compare(overlapping)


@pytest.mark.parametrize("args", [(1, 5, 1), (1, 2, 0), (1, 2, -1), (2, 1, 1), (-3, 1, 1)])
def test_unfold_refused_as_torch(args):
    compare(lambda lib: arange_like(lib, 3, 4).unfold(*args))


@pytest.mark.parametrize("dim,sizes", [(1, (3, 4)), (1, (-1, 4)), (-1, (2, 2, 3)), (0, (1, 2)),
                                       (1, [2, 6]), (1, (5, 3)), (1, (-1, -1)), (1, ()),
                                       (2, (3, 4)), (1, (-1, 5))])
def test_unflatten_matches_torch(dim, sizes):
    compare(lambda lib: arange_like(lib, 2, 12).unflatten(dim, sizes))
    compare(lambda lib: lib.unflatten(arange_like(lib, 2, 12), dim, sizes))
    compare(lambda lib: arange_like(lib, 12, 2).t().unflatten(dim, sizes).stride())


def test_unfold_and_unflatten_gradients():
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(4, 6, generator=gen, dtype=torch.float64)
    fns = {
        "unfold": lambda a: a.unfold(1, 3, 2),
        "unfold overlap": lambda a: a.unfold(-1, 4, 1).unfold(0, 2, 1),
        "unflatten": lambda a: a.unflatten(1, (3, -1)),
    }
    for name, fn in fns.items():
        got = {}
        for lib in (torch, mg):
            a = to_lib(lib, x).requires_grad_()
            out = fn(a)
            (out * out).sum().backward()
            got[lib.__name__] = (node_name(out), numpy_of(a.grad))
        assert got["torch"][0] == got["mutagrad"][0], name
        assert np.allclose(got["torch"][1], got["mutagrad"][1], rtol=1e-12), name
        a = to_lib(mg, x).requires_grad_()
        assert mg.autograd.gradcheck(fn, (a,))
        assert mg.autograd.gradgradcheck(fn, (a,))


# ---- composites ----------------------------------------------------------------------------------

def rand(lib, *shape, seed=0, lo=-1.0, hi=1.0):
    gen = torch.Generator().manual_seed(seed)
    return to_lib(lib, torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo)


VALUE_CASES = {
    "trace": lambda lib: arange_like(lib, 3, 4).trace(),
    "trace fn": lambda lib: lib.trace(arange_like(lib, 4, 2, dtype="int32")),
    "trace 1d": lambda lib: lib.trace(arange_like(lib, 3)),
    "trace bool": lambda lib: lib.trace(arange_like(lib, 2, 2) > 1),
    "repeat_interleave int": lambda lib: arange_like(lib, 2, 3).repeat_interleave(2),
    "repeat_interleave dim": lambda lib: lib.repeat_interleave(
        arange_like(lib, 2, 3), lib.tensor([1, 0, 2]), dim=1),
    "repeat_interleave one": lambda lib: arange_like(lib, 2, 3).repeat_interleave(
        lib.tensor([3]), dim=0),
    "repeat_interleave output_size": lambda lib: arange_like(lib, 2, 3).repeat_interleave(
        2, dim=-1, output_size=6),
    "repeat_interleave repeats": lambda lib: lib.repeat_interleave(lib.tensor([1, 2, 0, 3])),
    "repeat_interleave 0-d": lambda lib: lib.tensor(5.0).repeat_interleave(3),
    "repeat_interleave bad size": lambda lib: arange_like(lib, 2, 3).repeat_interleave(
        lib.tensor([1, 2]), dim=1),
    "repeat_interleave negative": lambda lib: arange_like(lib, 2, 3).repeat_interleave(-1),
    "repeat_interleave 2-d repeats": lambda lib: arange_like(lib, 2, 3).repeat_interleave(
        lib.tensor([[1, 2, 3]]), dim=1),
    "repeat_interleave float repeats": lambda lib: arange_like(lib, 2, 3).repeat_interleave(
        lib.tensor([1.0, 2.0, 3.0]), dim=1),
    "repeat_interleave bad output_size": lambda lib: arange_like(lib, 2, 3).repeat_interleave(
        2, dim=1, output_size=5),
    "kron": lambda lib: lib.kron(arange_like(lib, 2, 3), arange_like(lib, 2, 2) - 1),
    "kron ranks": lambda lib: arange_like(lib, 2, 3).kron(arange_like(lib, 4)),
    "kron dtypes": lambda lib: lib.kron(arange_like(lib, 3, dtype="int64"),
                                        arange_like(lib, 2, dtype="float32")),
    "kron ints": lambda lib: lib.kron(arange_like(lib, 2, 2, dtype="int64"),
                                      arange_like(lib, 1, 3, dtype="int64")),
    "kron 0-d": lambda lib: lib.kron(lib.tensor(2.0), arange_like(lib, 3, dtype="float32")),
    "cross dim": lambda lib: lib.cross(rand(lib, 4, 3, seed=1), rand(lib, 1, 3, seed=2), dim=1),
    "cross default": lambda lib: lib.cross(rand(lib, 3, 4, seed=1), rand(lib, 3, 4, seed=2)),
    "cross method": lambda lib: rand(lib, 2, 3, 3, seed=3).cross(rand(lib, 2, 3, 3, seed=4), -1),
    "cross ints": lambda lib: lib.cross(lib.tensor([1, 2, 3]), lib.tensor([4, 5, 6])),
    "cross no 3": lambda lib: lib.cross(rand(lib, 2, 4), rand(lib, 2, 4)),
    "cross wrong dim": lambda lib: lib.cross(rand(lib, 3, 4), rand(lib, 3, 4), dim=1),
    "cross dtypes": lambda lib: lib.cross(rand(lib, 4, 3), rand(lib, 4, 3).float()),
    "meshgrid ij": lambda lib: lib.meshgrid(arange_like(lib, 2), arange_like(lib, 3),
                                            lib.tensor(7.0, dtype=lib.float64), indexing="ij"),
    "meshgrid xy": lambda lib: lib.meshgrid([arange_like(lib, 2), arange_like(lib, 3)],
                                            indexing="xy"),
    "meshgrid xy one": lambda lib: lib.meshgrid(arange_like(lib, 4), indexing="xy"),
    "meshgrid 2-d": lambda lib: lib.meshgrid(arange_like(lib, 2, 2), arange_like(lib, 3),
                                             indexing="ij"),
    "meshgrid dtypes": lambda lib: lib.meshgrid(arange_like(lib, 2),
                                                arange_like(lib, 3, dtype="float32"),
                                                indexing="ij"),
    "meshgrid indexing": lambda lib: lib.meshgrid(arange_like(lib, 2), indexing="ji"),
}


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_values_and_errors_match_torch(name):
    compare(VALUE_CASES[name], rtol=1e-12 if "cross" in name else 0.0)


def test_meshgrid_without_indexing_warns_as_torch():
    # torch 1.13 warns once per process (TORCH_WARN_ONCE), so only mutagrad's warning is checked
    # on every call; the grids are torch's "ij" ones.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grids = mg.meshgrid(mg.arange(2).to(MG_DEVICE), mg.arange(3).to(MG_DEVICE))
    assert any("it will be required to pass the indexing argument" in str(w.message)
               for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.meshgrid(torch.arange(2), torch.arange(3))
    for g, t in zip(grids, want):
        same(g, t)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, 3.0, math.inf])
def test_cdist_matches_torch(p):
    def scenario(lib):
        x1 = rand(lib, 2, 4, 3, seed=5)
        x2 = rand(lib, 1, 5, 3, seed=6)
        return lib.cdist(x1, x2, p=p), lib.cdist(x1[0], x1[0], p)
    compare(scenario, rtol=1e-12)


@pytest.mark.parametrize("bad", [
    lambda lib: lib.cdist(rand(lib, 3, 2), rand(lib, 4, 3)),
    lambda lib: lib.cdist(rand(lib, 3), rand(lib, 4)),
    lambda lib: lib.cdist(rand(lib, 3, 2), rand(lib, 4, 2), p=-1),
    lambda lib: lib.cdist(arange_like(lib, 3, 2, dtype="int64"), arange_like(lib, 3, 2,
                                                                             dtype="int64")),
    lambda lib: lib.cdist(rand(lib, 3, 2), rand(lib, 4, 2).float()),
    lambda lib: lib.cdist(rand(lib, 3, 2), rand(lib, 4, 2), compute_mode="bad"),
])
def test_cdist_refused_as_torch(bad):
    compare(bad)


GRAD_CASES = {
    "trace": (lambda lib, a, b: a.trace(), [(3, 4), (1,)], "TraceBackward0"),
    "repeat_interleave": (lambda lib, a, b: a.repeat_interleave(
        lib.tensor([2, 0, 1]), dim=1), [(2, 3), (1,)], "IndexSelectBackward0"),
    "repeat_interleave flat": (lambda lib, a, b: lib.repeat_interleave(a, 2),
                               [(2, 2), (1,)], "IndexSelectBackward0"),
    "kron": (lambda lib, a, b: lib.kron(a, b), [(2, 3), (3, 1)], "UnsafeViewBackward0"),
    "cross": (lambda lib, a, b: lib.cross(a, b, dim=-1), [(2, 3), (1, 3)],
              "LinalgCrossBackward0"),
    "meshgrid": (lambda lib, a, b: lib.meshgrid(a, b, indexing="xy")[1] * 2,
                 [(2,), (3,)], "MulBackward0"),
    "meshgrid expand": (lambda lib, a, b: lib.meshgrid(a, b, indexing="ij")[0],
                        [(2,), (3,)], "ExpandBackward0"),
    "cdist 2": (lambda lib, a, b: lib.cdist(a, b), [(3, 2), (4, 2)], "CdistBackward0"),
    "cdist 1": (lambda lib, a, b: lib.cdist(a, b, p=1), [(3, 2), (4, 2)], "CdistBackward0"),
    "cdist 3": (lambda lib, a, b: lib.cdist(a, b, p=3.0), [(2, 3), (2, 3)], "CdistBackward0"),
    "cdist inf": (lambda lib, a, b: lib.cdist(a, b, p=math.inf), [(3, 2), (2, 2)],
                  "CdistBackward0"),
    "cdist batch": (lambda lib, a, b: lib.cdist(a, b), [(2, 3, 2), (1, 2, 2)], "CdistBackward0"),
    "fill_diagonal_": (lambda lib, a, b: (a * b).fill_diagonal_(0.5), [(3, 4), (1,)],
                       "CopySlices"),
    "fill_diagonal_ wrap": (lambda lib, a, b: (a * b).fill_diagonal_(-1.0, wrap=True),
                            [(7, 2), (1,)], "CopySlices"),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_node_names_and_gradcheck(name):
    fn, shapes, node = GRAD_CASES[name]
    got = {}
    for lib in (torch, mg):
        a, b = (rand(lib, *s, seed=10 + i).requires_grad_() for i, s in enumerate(shapes))
        out = fn(lib_of(lib), a, b)
        w = rand(lib, *tuple(out.shape), seed=20)
        (out * w).sum().backward()
        got[lib.__name__] = (node_name(out), numpy_of(out),
                             [None if g is None else numpy_of(g) for g in (a.grad, b.grad)])
    (tn, tv, tg), (mn, mv, mg_) = got["torch"], got["mutagrad"]
    assert tn == node and mn == node, (tn, mn)
    assert np.allclose(mv, tv, rtol=1e-12, atol=1e-12), name
    for m, t in zip(mg_, tg):
        assert (t is None) == (m is None) and (t is None or np.allclose(m, t, rtol=1e-10,
                                                                        atol=1e-12)), name
    a, b = (rand(mg, *s, seed=10 + i).requires_grad_() for i, s in enumerate(shapes))
    dl = lib_of(mg)
    assert mg.autograd.gradcheck(lambda p, q: fn(dl, p, q), (a, b))
    assert mg.autograd.gradgradcheck(lambda p, q: fn(dl, p, q), (a, b))


# ---- fill_diagonal_ -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,wrap", [((3, 4), False), ((4, 3), False), ((7, 2), True),
                                        ((7, 3), True), ((20, 2), True), ((3, 2), True),
                                        ((2, 2, 2), False), ((3, 3, 3), True), ((2, 3, 2), False),
                                        ((3,), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    # torch 1.13 fills a tall matrix's wrapped part with a second fill_ (two _version bumps);
    # mutagrad's fill_diagonal_ is one write, one bump (docs/python.md).
    two_fills = wrap and len(shape) == 2 and shape[0] > shape[1] + 1

    def version(lib, t):
        return 2 if lib is not torch and two_fills and t._version == 1 else t._version

    def scenario(lib, where):
        x = to_lib(lib, torch.zeros(shape, dtype=torch.float64))
        if where == "leaf":
            x.requires_grad_()
            return x.fill_diagonal_(1.0, wrap=wrap)
        if where == "no_grad leaf":
            x.requires_grad_()
            with lib.no_grad():
                x.fill_diagonal_(2.5, wrap)
            return x.detach(), version(lib, x)
        if where == "int":
            y = x.long()
            out = y.fill_diagonal_(3, wrap=wrap)
            assert out is y
            return y, version(lib, y)
        y = x.requires_grad_() * 1
        y.fill_diagonal_(fill_value=-1.0, wrap=wrap)
        y.sum().backward()
        return y, version(lib, y), node_name(y), x.grad
    for where in ("leaf", "no_grad leaf", "int", "non-leaf"):
        compare(lambda lib: scenario(lib, where))


def test_fill_diagonal_names_the_write_in_the_stale_error():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True).to(MG_DEVICE)
    y = x * 1
    z = y * y  # saves y
    y.fill_diagonal_(0.0)
    assert y._version == 1
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    assert "is fill_diagonal_" in str(info.value) and "composite_ops_test.py" in str(info.value)


def test_fill_diagonal_wraps_a_non_contiguous_tall_matrix():
    # torch 1.13 raises ("setStorage: ... out of bounds") or writes the wrong elements for a
    # transposed tall matrix; mutagrad fills the positions the contiguous matrix gets.
    x = mg.zeros(2, 7, dtype=mg.float64).to(MG_DEVICE).t()
    x.fill_diagonal_(1.0, wrap=True)
    want = torch.zeros(7, 2, dtype=torch.float64).fill_diagonal_(1.0, wrap=True)
    same(x, want)
    assert x._version == 1
