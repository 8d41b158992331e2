"""Sorting and search against torch 1.13: sort (stable=True: values and indices exact, ties and
NaN included; the default: values exact, since torch's unstable CPU sort reorders ties in lines
longer than 16), argsort, msort, topk and kthvalue (values exact; indices where the values are
distinct: torch's order among ties is its own), unique (return_inverse, return_counts), bincount
(weights, minlength, dtypes), searchsorted (1-D and N-D, right/side, out_int32, NaN, scalars);
gradients, node names, namedtuple results and error kinds. mutagrad on the CPU and on the
host-run CUDA device.
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


def same(m, t, what):
    a, b = numpy_of(m), numpy_of(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    assert str(m.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{what}: dtype"
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{what}:\n mg {a}\n torch {b}"


def outcome(fn, x, grad=False):
    """fn(lib, x) for torch and mutagrad: {'torch': (capture, input), 'mutagrad': ...}."""
    out = {}
    for lib in (torch, mg):
        a = to_lib(lib, x, requires_grad=grad)
        out[lib.__name__] = (capture(lambda: fn(lib, a)), a)
    return out["torch"], out["mutagrad"]


def check(fn, x, parts=(0, 1), grad=False, what=""):
    """Same outcome kind; for a pair, the listed parts equal (0: values, 1: indices); with grad
    the values' node name and the gradient of a weighted sum."""
    (t, ta), (m, ma) = outcome(fn, x, grad)
    assert t.kind == m.kind, f"{what}: torch {t} mutagrad {m}"
    if t.kind != "ok":
        return
    tv, mv = t.value, m.value
    if isinstance(tv, tuple):
        assert type(mv).__name__ == type(tv).__name__, what
        for i in parts:
            same(mv[i], tv[i], f"{what} part {i}")
        tv, mv = tv[0], mv[0]
    else:
        same(mv, tv, what)
    if grad and tv.requires_grad:
        assert mv.grad_fn.name() == type(tv.grad_fn).__name__, what
        w = torch.arange(1, tv.numel() + 1, dtype=tv.dtype).reshape(tv.shape)
        (tv * w).sum().backward()
        (mv * to_lib(mg, w)).sum().backward()
        same(ma.grad, ta.grad, f"{what} grad")


def random_shape(rng):
    ndim = rng.randint(0, 3)
    return [rng.randint(0 if rng.random() < 0.1 else 1, 5 if ndim > 1 else 40) for _ in range(ndim)]


def tied(rng, gen, dtype=torch.float64):
    """Few distinct values (ties), NaN and -0.0 among floats; sometimes non-contiguous."""
    shape = random_shape(rng)
    x = torch.randint(-2, 3, shape, generator=gen).to(dtype)
    if dtype.is_floating_point:
        x[x == 2] = float("nan")
        x[x == 0] = -0.0 if rng.random() < 0.5 else 0.0
    if x.dim() >= 2 and rng.random() < 0.5:
        x = x.transpose(0, 1)
    return x


def distinct(rng, gen):
    """Distinct float64 values (no ties): indices are the same in any correct algorithm."""
    shape = random_shape(rng)
    x = torch.randperm(max(1, int(np.prod(shape))), generator=gen).to(torch.float64) / 7 - 3
    x = x[: int(np.prod(shape))].reshape(shape)
    if x.dim() >= 2 and rng.random() < 0.5:
        x = x.transpose(0, 1)
    return x


def random_dim(rng, x):
    n = max(x.dim(), 1)
    return rng.randrange(-n, n)


@pytest.mark.parametrize("seed", SEEDS)
def test_sort_argsort_msort_with_ties_and_nan(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for dtype in (torch.float64, torch.float32, torch.int64, torch.int32, torch.bool):
        for _ in range(12):
            x = tied(rng, gen, dtype) if dtype != torch.bool else torch.rand(
                random_shape(rng), generator=gen) < 0.5
            d = random_dim(rng, x)
            desc = rng.random() < 0.5
            what = f"{dtype} shape {list(x.shape)} dim {d} descending {desc}"
            check(lambda lib, a: a.sort(dim=d, descending=desc, stable=True), x,
                  what="sort stable " + what)
            check(lambda lib, a: lib.sort(a, dim=d, descending=desc), x, parts=(0,),
                  what="sort " + what)
            check(lambda lib, a: lib.argsort(a, dim=d, descending=desc, stable=True), x,
                  what="argsort " + what)
            if x.dim() > 0:
                check(lambda lib, a: lib.msort(a), x.transpose(0, -1) if x.dim() > 1 else x,
                      parts=(0,), what="msort " + what)


@pytest.mark.parametrize("seed", SEEDS)
def test_sort_topk_kthvalue_gradients_and_indices(seed):
    rng = random.Random(20 + seed)
    gen = torch.Generator().manual_seed(20 + seed)
    for _ in range(15):
        x = distinct(rng, gen)
        d = random_dim(rng, x)
        n = x.shape[d] if x.dim() else 1
        k = rng.randint(0, n)
        what = f"shape {list(x.shape)} dim {d} k {k}"
        check(lambda lib, a: a.sort(d), x, grad=True, what="sort " + what)
        check(lambda lib, a: lib.sort(a, stable=False, dim=d, descending=True), x, grad=True,
              what="sort1 " + what)
        check(lambda lib, a: lib.msort(a), x, grad=True, what="msort " + what)
        check(lambda lib, a: a.topk(k, d), x, grad=True, what="topk " + what)
        check(lambda lib, a: lib.topk(a, k, dim=d, largest=False), x, grad=True,
              what="topk smallest " + what)
        check(lambda lib, a: a.kthvalue(max(k, 1), d, keepdim=True), x, grad=True,
              what="kthvalue " + what)
        check(lambda lib, a: lib.kthvalue(a, max(k, 1), d), x, grad=True, what="kthvalue " + what)


@pytest.mark.parametrize("seed", SEEDS)
def test_topk_kthvalue_values_with_ties(seed):
    rng = random.Random(40 + seed)
    gen = torch.Generator().manual_seed(40 + seed)
    for _ in range(20):
        x = tied(rng, gen)
        x[torch.isnan(x)] = 5.0  # torch's topk/kthvalue over NaN are its own; NaN sorts above
        d = random_dim(rng, x)
        n = x.shape[d] if x.dim() else 1
        k = rng.randint(0, n)
        what = f"shape {list(x.shape)} dim {d} k {k}"
        largest = rng.random() < 0.5
        check(lambda lib, a: a.topk(k, d, largest), x, parts=(0,), what="topk " + what)
        if n > 0:
            check(lambda lib, a: a.kthvalue(max(k, 1), d), x, parts=(0,), what="kth " + what)


@pytest.mark.parametrize("seed", SEEDS)
def test_unique_and_bincount(seed):
    rng = random.Random(60 + seed)
    gen = torch.Generator().manual_seed(60 + seed)
    for _ in range(12):
        x = torch.randint(-3, 4, random_shape(rng), generator=gen)
        for dtype in (torch.int64, torch.float32):
            y = x.to(dtype)
            check(lambda lib, a: a.unique(), y, what=f"unique {list(y.shape)}")
            for inv, cnt in ((True, False), (False, True), (True, True)):
                check(lambda lib, a: lib.unique(a, return_inverse=inv, return_counts=cnt), y,
                      what=f"unique {inv} {cnt} {list(y.shape)}")
        v = torch.randint(0, 6, (rng.randint(0, 12),), generator=gen)
        w = torch.randn(v.shape, generator=gen)
        check(lambda lib, a: a.bincount(), v, what="bincount")
        check(lambda lib, a: lib.bincount(a, minlength=8), v, what="bincount minlength")
        for wd in (torch.float32, torch.float64, torch.int64):
            ww = w.to(wd)
            if wd == torch.float64:
                check(lambda lib, a: a.bincount(to_lib(lib, ww)), v, what=f"bincount {wd}")
            else:  # float32 sums: same order of additions (index order), same bits
                check(lambda lib, a: lib.bincount(a, weights=to_lib(lib, ww)), v,
                      what=f"bincount {wd}")


@pytest.mark.parametrize("seed", SEEDS)
def test_searchsorted(seed):
    rng = random.Random(80 + seed)
    gen = torch.Generator().manual_seed(80 + seed)
    for _ in range(15):
        lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
        n = rng.randint(0, 8)
        seq = torch.randint(-3, 4, lead + [n], generator=gen).double().sort(-1).values
        if rng.random() < 0.3 and n > 0:
            seq[..., -1] = float("nan")  # sorted as torch sorts: NaN last
        vals = torch.randint(-4, 5, lead + [rng.randint(0, 5)], generator=gen).double()
        vals[vals == 4] = float("nan")
        if rng.random() < 0.3:
            seq = seq.reshape(-1)[:n] if not lead else seq[(0,) * len(lead)]
        for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left", "out_int32": True}):
            check(lambda lib, a: lib.searchsorted(to_lib(lib, seq), a, **kw), vals,
                  what=f"searchsorted {list(seq.shape)} {list(vals.shape)} {kw}")
        check(lambda lib, a: lib.searchsorted(a, 1), seq.reshape(-1), what="scalar")
        check(lambda lib, a: lib.searchsorted(a, to_lib(lib, torch.tensor([1, 2]))),
              torch.tensor([0.5, 1.0, 2.5]), what="promoted")


def test_results_and_errors():
    x = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    m = to_lib(mg, x)
    s = mg.sort(m)
    assert type(s).__name__ == "sort" and s.values is s[0] and s.indices is s[1]
    assert "mutagrad.return_types.sort(" in repr(s)
    assert type(m.topk(2)).__name__ == "topk" and type(m.kthvalue(1)).__name__ == "kthvalue"
    cases = [
        lambda lib, a: a.topk(4),
        lambda lib, a: a.topk(-1),
        lambda lib, a: a.kthvalue(0),
        lambda lib, a: a.kthvalue(4, 1),
        lambda lib, a: a.sort(2),
        lambda lib, a: a.argsort(-3),
        lambda lib, a: a.bincount(),
        lambda lib, a: a.long().bincount(),
        lambda lib, a: a.long().reshape(-1).neg().bincount(),
        lambda lib, a: lib.searchsorted(a, to_lib(lib, torch.ones(3, 3))),
        lambda lib, a: lib.searchsorted(a, to_lib(lib, torch.ones(2, 3)), side="left", right=True),
        lambda lib, a: lib.searchsorted(a, to_lib(lib, torch.ones(2, 3)), side="middle"),
    ]
    for i, fn in enumerate(cases):
        (t, _), (mm, _) = outcome(fn, x)
        assert t.kind == mm.kind and t.kind != "ok", f"case {i}: torch {t} mutagrad {mm}"
