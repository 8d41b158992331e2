"""gather, scatter_/scatter, scatter_add_/scatter_add, scatter_reduce_/scatter_reduce, take,
put_/put, masked_select, masked_scatter_/masked_scatter against torch 1.13: seeded random shapes,
dims (negative too), index shapes and duplicates; values, gradients (torch's backward as the
oracle), node names, versions, error kinds, and tensors unchanged after a refused write; on the
CPU and on the (host-run) CUDA device, torch on the CPU as the oracle.

Where torch leaves duplicates undefined (scatter_ and put_ without accumulate) the values are
compared with our stated rule, a naive loop in which the last write wins; torch is the oracle
there only for unique destinations.
"""

import itertools
import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import assert_tensors_match, capture, from_torch, numpy_of, same_kind

SEEDS = range(4)
CASES = 60  # per seed and device: each op sees 240 random cases per device
REDUCES = ("sum", "prod", "mean", "amax", "amin")
TOL = dict(exact=False, rtol=1e-10, atol=1e-12)

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def lib_tensor(lib, t, requires_grad=False):
    """A copy of torch tensor t for lib (mutagrad's on MG_DEVICE)."""
    out = from_torch(lib, t)
    if lib is mg:
        out = out.to(MG_DEVICE)
    return out.requires_grad_() if requires_grad else out


def lib_index(lib, values, shape):
    t = torch.tensor(values, dtype=torch.int64).reshape(shape)
    return lib_tensor(lib, t)


def scatter_case(rng):
    """self shape, dim (maybe negative), index shape and values (in range), src shape."""
    ndim = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(ndim)]
    dim = rng.randint(-ndim, ndim - 1)
    d = dim % ndim
    index_shape = [rng.randint(1, 5) if k == d else rng.randint(1, shape[k]) for k in range(ndim)]
    n = int(np.prod(index_shape))
    index = [rng.randint(0, shape[d] - 1) for _ in range(n)]
    return shape, dim, index_shape, index


def run_both(op, x, src, index, index_shape, grad_of_src=True):
    """op(lib, a, s, i) on torch and mutagrad: (out, grad a, grad s) for each, with a weighted
    sum's backward; checks the node names."""
    results = {}
    for lib in (torch, mg):
        a = lib_tensor(lib, x, requires_grad=True)
        s = lib_tensor(lib, src, requires_grad=grad_of_src)
        i = lib_index(lib, index, index_shape)
        out = op(lib, a, s, i)
        if lib is mg and results["torch"][0].grad_fn is not None:
            assert out.grad_fn.name() == type(results["torch"][0].grad_fn).__name__
        w = torch.arange(1, out.numel() + 1, dtype=torch.float64).reshape(out.shape)
        (out * lib_tensor(lib, w)).sum().backward()
        results[lib.__name__] = (out, a.grad, s.grad if grad_of_src else None)
    return results["torch"], results["mutagrad"]


def compare(torch_result, mg_result, what):
    for name, t, m in zip(("value", "grad self", "grad src"), torch_result, mg_result):
        if t is None:
            assert m is None or not np.any(numpy_of(m)), what + " " + name
            continue
        assert_tensors_match(m, t.detach(), **TOL, what=f"{what} {name}")


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_scatter_add_and_reduce_match_torch(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(CASES):
        shape, dim, index_shape, index = scatter_case(rng)
        # Away from zero so that prod's and mean's gradients are well conditioned; distinct
        # values, so amax/amin have no ties.
        x = torch.rand(shape, generator=gen, dtype=torch.float64) + 0.5
        src = torch.rand(index_shape, generator=gen, dtype=torch.float64) + 0.5
        what = f"shape {shape} dim {dim} index {index_shape} {index}"
        compare(*run_both(lambda lib, a, s, i: a.gather(dim, i), x, src, index, index_shape,
                          grad_of_src=False), "gather " + what)
        compare(*run_both(lambda lib, a, s, i: lib.gather(a, dim, i), x, src, index, index_shape,
                          grad_of_src=False), "torch.gather " + what)
        compare(*run_both(lambda lib, a, s, i: a.scatter_add(dim, i, s), x, src, index,
                          index_shape), "scatter_add " + what)
        for reduce, include_self in itertools.product(REDUCES, (True, False)):
            compare(*run_both(
                lambda lib, a, s, i: a.scatter_reduce(dim, i, s, reduce, include_self=include_self),
                x, src, index, index_shape), f"scatter_reduce {reduce} {include_self} " + what)
        # In place on a non-leaf.
        compare(*run_both(lambda lib, a, s, i: (a * 1.0).scatter_add_(dim, i, s), x, src, index,
                          index_shape), "scatter_add_ " + what)
        compare(*run_both(lambda lib, a, s, i: (a * 1.0).scatter_reduce_(dim, i, s, "amax"), x,
                          src, index, index_shape), "scatter_reduce_ " + what)


def naive_scatter(x, dim, index_shape, index, src):
    """x with src written at index along dim, row-major, the last write winning."""
    out = numpy_of(x).copy()
    s = numpy_of(src)
    ix = np.array(index).reshape(index_shape)
    for c in itertools.product(*[range(n) for n in index_shape]):
        dst = list(c)
        dst[dim] = ix[c]
        out[tuple(dst)] = s[c]
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_scatter_matches_torch_and_last_write_wins(seed):
    rng = random.Random(100 + seed)
    gen = torch.Generator().manual_seed(100 + seed)
    for _ in range(CASES):
        shape, dim, index_shape, index = scatter_case(rng)
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        src = torch.randn(index_shape, generator=gen, dtype=torch.float64)
        what = f"shape {shape} dim {dim} index {index_shape} {index}"
        m = lib_tensor(mg, x)
        m.scatter_(dim, lib_index(mg, index, index_shape), lib_tensor(mg, src))
        assert m._version == 1
        want = naive_scatter(x, dim % len(shape), index_shape, index, src)
        assert np.array_equal(numpy_of(m), want), what
        # torch as the oracle where no destination repeats (its duplicates are undefined).
        d = dim % len(shape)
        coords = [tuple(c[k] if k != d else index[n] for k in range(len(shape)))
                  for n, c in enumerate(itertools.product(*[range(k) for k in index_shape]))]
        if len(set(coords)) == len(coords):
            compare(*run_both(lambda lib, a, s, i: a.scatter(dim, i, s), x, src, index,
                              index_shape), "scatter " + what)
        compare(*run_both(lambda lib, a, s, i: a.scatter(dim, i, -2.5), x, src, index,
                          index_shape, grad_of_src=False), "scatter value " + what)


@pytest.mark.parametrize("seed", SEEDS)
def test_take_put_and_masked_ops_match_torch(seed):
    rng = random.Random(200 + seed)
    gen = torch.Generator().manual_seed(200 + seed)
    for _ in range(CASES):
        ndim = rng.randint(0, 3)
        shape = [rng.randint(1, 4) for _ in range(ndim)]
        numel = int(np.prod(shape))
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        if ndim >= 2 and rng.random() < 0.5:
            x = x.transpose(0, 1)  # non-contiguous: take/put_ number elements row-major
            shape = list(x.shape)
        n = rng.randint(1, 5)
        flat = [rng.randint(-numel, numel - 1) for _ in range(n)]
        unique = len({i % numel for i in flat}) == n
        src = torch.randn([n], generator=gen, dtype=torch.float64)
        what = f"shape {shape} index {flat}"
        compare(*run_both(lambda lib, a, s, i: a.take(i), x, src, flat, [n], grad_of_src=False),
                "take " + what)
        compare(*run_both(lambda lib, a, s, i: a.put(i, s, accumulate=True), x, src, flat, [n]),
                "put accumulate " + what)
        if unique:
            compare(*run_both(lambda lib, a, s, i: a.put(i, s), x, src, flat, [n]), "put " + what)
        mask = torch.rand(shape, generator=gen) < 0.5
        source = torch.randn([numel + 1], generator=gen, dtype=torch.float64)
        results = {}
        for lib in (torch, mg):
            a = lib_tensor(lib, x, requires_grad=True)
            s = lib_tensor(lib, source, requires_grad=True)
            m = lib_tensor(lib, mask)
            # Contiguous operands: on a non-contiguous tensor torch 1.13's CPU masked_scatter_
            # writes in memory order, not the row-major order it documents (and that later
            # torch and we follow), and so does its masked_select backward (a wrong gradient).
            # Ours on strided tensors: gradcheck in tests/autograd/scatter_ops_test.cc.
            out1 = a.contiguous().masked_select(m)
            out2 = (a * 1.0).contiguous().masked_scatter_(m, s)
            if lib is mg:
                assert out1.grad_fn.name() == "MaskedSelectBackward0"
                assert out2.grad_fn.name() == "MaskedScatterBackward0"
            w1 = torch.arange(1, out1.numel() + 1, dtype=torch.float64)
            w2 = torch.arange(1, out2.numel() + 1, dtype=torch.float64).reshape(out2.shape)
            ((out1 * lib_tensor(lib, w1)).sum() + (out2 * lib_tensor(lib, w2)).sum()).backward()
            results[lib.__name__] = (out1, out2, a.grad, s.grad)
        for name, t, m in zip(("masked_select", "masked_scatter_", "grad self", "grad source"),
                              results["torch"], results["mutagrad"]):
            assert_tensors_match(m, t.detach(), **TOL, what=f"{name} {what}")


def test_determinism_of_duplicates():
    # float32 sums whose value depends on the order: index order, on every device.
    x = mg.zeros(2, dtype=mg.float32).to(MG_DEVICE)
    src = mg.tensor([1e8, 1.0, -1e8, 3.0, 1.0], dtype=mg.float32).to(MG_DEVICE)
    x.scatter_add_(0, mg.tensor([1, 1, 1, 0, 1]).to(MG_DEVICE), src)
    assert numpy_of(x).tolist() == [3.0, 1.0]
    y = mg.zeros(3, dtype=mg.float64).to(MG_DEVICE)
    y.put_(mg.tensor([2, -1, 0]).to(MG_DEVICE), mg.tensor([1.0, 2.0, 3.0]).double().to(MG_DEVICE))
    assert numpy_of(y).tolist() == [3.0, 0.0, 2.0]
    # The winner-only gradient: torch credits both occurrences of index 2.
    a = mg.zeros(3, dtype=mg.float64).to(MG_DEVICE).requires_grad_()
    s = mg.tensor([1.0, 2.0]).double().to(MG_DEVICE).requires_grad_()
    a.scatter(0, mg.tensor([2, 2]).to(MG_DEVICE), s).sum().backward()
    assert numpy_of(s.grad).tolist() == [0.0, 1.0]


def test_scatter_reduce_argument_forms():
    # reduce="add"/"multiply" (torch's older spelling) and the value form, as torch.
    for lib in (torch, mg):
        x = lib.ones(4, dtype=lib.float64)
        i = lib.tensor([0, 0, 3])
        if lib is mg:
            x, i = x.to(MG_DEVICE), i.to(MG_DEVICE)
        r = [x.scatter(0, i, 2.0, reduce="add"), x.scatter(0, i, 3.0, reduce="multiply"),
             x.scatter(0, i, value=5.0), lib.scatter(x, 0, i, 7.0)]
        if lib is torch:
            want = [numpy_of(t).tolist() for t in r]
        else:
            assert [numpy_of(t).tolist() for t in r] == want


# An out-of-range index: torch raises RuntimeError for gather/scatter and IndexError for
# take/put_; mutagrad raises mutagrad.IndexOutOfRangeError, both (docs/python.md).
OUT_OF_RANGE = "out of range"


@pytest.mark.parametrize("bad,kind", [
    (lambda lib, x: x.scatter_(1, lib.tensor([[0, 3]]), lib.ones(1, 2)), OUT_OF_RANGE),
    (lambda lib, x: x.scatter_(1, lib.tensor([[0, -1]]), lib.ones(1, 2)), OUT_OF_RANGE),
    (lambda lib, x: x.scatter_add_(1, lib.tensor([[0], [1], [0]]), lib.ones(3, 1)), None),
    (lambda lib, x: x.scatter_add_(1, lib.tensor([0, 1]), lib.ones(2)), None),
    (lambda lib, x: x.scatter_(1, lib.tensor([[0, 1]]), lib.ones(1, 2, dtype=lib.float64)), None),
    (lambda lib, x: x.scatter_(1, lib.tensor([[0, 1]], dtype=lib.int32), lib.ones(1, 2)), None),
    (lambda lib, x: x.scatter_(2, lib.tensor([[0, 1]]), lib.ones(1, 2)), None),
    (lambda lib, x: x.scatter_reduce_(1, lib.tensor([[0, 1]]), lib.ones(1, 2), "max"), None),
    (lambda lib, x: x.put_(lib.tensor([6]), lib.ones(1)), None),  # torch: IndexError
    (lambda lib, x: x.put_(lib.tensor([0, 1]), lib.ones(3)), None),
    (lambda lib, x: x.put_(lib.tensor([0]), lib.ones(1, dtype=lib.float64)), None),
    (lambda lib, x: x.masked_scatter_(lib.ones(2, 3, dtype=lib.bool), lib.ones(5)), None),
    (lambda lib, x: x.masked_scatter_(lib.ones(4, dtype=lib.bool), lib.ones(9)), None),
    (lambda lib, x: x.gather(1, lib.tensor([[3]])), OUT_OF_RANGE),
    (lambda lib, x: x.take(lib.tensor([-7])), None),
    (lambda lib, x: x.masked_select(lib.ones(2, 3)), None),
])
def test_refused_calls_raise_torchs_kind_and_change_nothing(bad, kind):
    kinds = {}
    for lib in (torch, mg):
        x = lib.arange(6, dtype=lib.float32).reshape(2, 3)
        if lib is mg:
            x = x.to(MG_DEVICE)

            class Lib:  # mutagrad with its factories on the test's device
                def __getattr__(self, name):
                    f = getattr(mg, name)
                    if name in ("tensor", "ones"):
                        return lambda *a, **k: f(*a, **k).to(MG_DEVICE)
                    return f
            outcome = capture(lambda: bad(Lib(), x))
            assert numpy_of(x).tolist() == [[0, 1, 2], [3, 4, 5]]
            assert x._version == 0
        else:
            outcome = capture(lambda: bad(lib, x))
        kinds[lib.__name__] = outcome.kind
    if kind == OUT_OF_RANGE:
        assert kinds == {"torch": "RuntimeError", "mutagrad": "IndexOutOfRangeError"}, kinds
    else:
        assert kinds["torch"] != "ok" and same_kind(kinds["torch"], kinds["mutagrad"]), kinds


@pytest.mark.parametrize("write", [
    lambda y: y.scatter_(0, mg.tensor([0]).to(y.device), 2.0),
    lambda y: y.scatter_add_(0, mg.tensor([0]).to(y.device), y.detach()[:1].clone()),
    lambda y: y.scatter_reduce_(0, mg.tensor([1]).to(y.device), y.detach()[:1].clone(), "prod"),
    lambda y: y.put_(mg.tensor([2]).to(y.device), mg.ones(1).to(y.device)),
    lambda y: y.masked_scatter_(mg.tensor([True, False, False]).to(y.device), mg.ones(3).to(
        y.device)),
])
def test_stale_saved_tensor_names_the_python_line(write):
    x = mg.ones(3, requires_grad=True).to(MG_DEVICE)
    y = x.exp()
    z = y * y
    write(y)  # the line the error must name
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    assert "scatter_family_test.py" in str(err.value)
    assert "_(" in str(err.value) or "_ " in str(err.value), str(err.value)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_refused_writes_raise_torchs_kind_and_change_nothing(seed):
    """Random geometries with one bad index value (too large, or negative where it does not
    wrap) or a bad shape: torch's exception kind (our IndexOutOfRangeError, also a RuntimeError,
    for an out-of-range gather and scatter), our tensor unchanged, version unmoved."""
    rng = random.Random(300 + seed)
    gen = torch.Generator().manual_seed(300 + seed)
    for _ in range(CASES):
        shape, dim, index_shape, index = scatter_case(rng)
        d = dim % len(shape)
        bad = list(index)
        kind = rng.choice(["large", "negative", "shape"])
        if kind == "large":
            bad[rng.randrange(len(bad))] = shape[d] + rng.randint(0, 3)
        elif kind == "negative":
            bad[rng.randrange(len(bad))] = -rng.randint(1, shape[d])
        src_shape = list(index_shape)
        bad_shape = list(index_shape)
        if kind == "shape":
            others = [k for k in range(len(shape)) if k != d]
            if not others:
                continue
            k = rng.choice(others)
            bad_shape[k] = shape[k] + 1
            src_shape[k] = shape[k] + 1
            bad = [0] * int(np.prod(bad_shape))
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        src = torch.randn(src_shape, generator=gen, dtype=torch.float64)
        ops = {
            "scatter_": lambda a, i, s: a.scatter_(dim, i, s),
            "scatter_add_": lambda a, i, s: a.scatter_add_(dim, i, s),
            "scatter_reduce_": lambda a, i, s: a.scatter_reduce_(dim, i, s, "amin"),
            "gather": lambda a, i, s: a.gather(dim, i),
        }
        for name, op in ops.items():
            kinds = {}
            for lib in (torch, mg):
                a = lib_tensor(lib, x)
                outcome = capture(lambda: op(a, lib_index(lib, bad, bad_shape),
                                             lib_tensor(lib, src)))
                kinds[lib.__name__] = outcome.kind
                if lib is mg:
                    assert np.array_equal(numpy_of(a), numpy_of(x)), name
                    assert a._version == 0, name
            what = f"{name} {kind} shape {shape} dim {dim} index {bad_shape} {bad}"
            if kind == "shape":
                assert kinds["torch"] == kinds["mutagrad"] == "RuntimeError", (what, kinds)
            else:
                assert kinds == {"torch": "RuntimeError", "mutagrad": "IndexOutOfRangeError"}, \
                    (what, kinds)
        # take / put_: negative indices wrap there; beyond -numel or numel is an IndexError.
        numel = x.numel()
        flat = [rng.randint(-numel, numel - 1) for _ in range(3)]
        flat[rng.randrange(3)] = rng.choice([numel + rng.randint(0, 2), -numel - 1])
        for lib in (torch, mg):
            a = lib_tensor(lib, x)
            i = lib_index(lib, flat, [3])
            s3 = lib_tensor(lib, torch.ones(3, dtype=torch.float64))
            want = "IndexError" if lib is torch else "IndexOutOfRangeError"
            assert capture(lambda: a.put_(i, s3)).kind == want, flat
            assert capture(lambda: a.take(i)).kind == want, flat
            if lib is mg:
                assert np.array_equal(numpy_of(a), numpy_of(x)) and a._version == 0
