"""index_select, index_add_/index_add, index_copy_/index_copy, index_fill_/index_fill against
torch 1.13: seeded random shapes, dims (negative too), index lengths and duplicates; values,
gradients (torch's backward as the oracle), node names, versions, error kinds, and tensors
unchanged after a refused write. Duplicates in index_copy_ are compared with our stated rule
(the last occurrence wins) since torch calls them undefined; index_add_ sums in index order as
torch's CPU kernel does.
"""

import random

import pytest
import torch

import mutagrad as mg
from lib_util import assert_tensors_match, capture, from_torch, numpy_of, same_kind

SEEDS = range(6)


def case(rng):
    ndim = rng.randint(1, 3)
    shape = [rng.randint(1, 4) for _ in range(ndim)]
    dim = rng.randint(-ndim, ndim - 1)
    size = shape[dim]
    n = rng.randint(0, 5)
    index = [rng.randint(-size, size - 1) if rng.random() < 0.2 else rng.randint(0, size - 1)
             for _ in range(n)]
    return shape, dim, index


def both(lib, t):
    return from_torch(lib, t)


@pytest.mark.parametrize("seed", SEEDS)
def test_values_and_gradients_match_torch(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(40):
        shape, dim, index = case(rng)
        size = shape[dim]
        index = [i % size for i in index]  # torch's index_add_/copy_ reject negatives
        src_shape = list(shape)
        src_shape[dim] = len(index)
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        src = torch.randn(src_shape, generator=gen, dtype=torch.float64)
        alpha = rng.choice([1, 2.5, -1])
        unique = len(set(index)) == len(index)
        ops = {
            "index_select": lambda lib, a, s, i: a.index_select(dim, i),
            "index_add": lambda lib, a, s, i: a.index_add(dim, i, s, alpha=alpha),
            "index_fill": lambda lib, a, s, i: a.index_fill(dim, i, -0.5),
        }
        if unique:
            ops["index_copy"] = lambda lib, a, s, i: a.index_copy(dim, i, s)
        for name, op in ops.items():
            what = f"{name} shape {shape} dim {dim} index {index} alpha {alpha}"
            results = {}
            for lib in (torch, mg):
                a = both(lib, x).requires_grad_()
                s = both(lib, src).requires_grad_()
                i = lib.tensor(index, dtype=lib.int64)
                out = op(lib, a, s, i)
                if lib is mg:
                    torch_name = type(results["torch"][0].grad_fn).__name__
                    assert out.grad_fn.name() == torch_name, what
                weights = torch.arange(out.numel(), dtype=torch.float64).reshape(out.shape)
                (out * both(lib, weights)).sum().backward()
                results["torch" if lib is torch else "mg"] = (out, a.grad, s.grad)
            (ot, ogx, ogs), (mo, mgx, mgs) = results["torch"], results["mg"]
            assert_tensors_match(mo, ot.detach(), exact=False, rtol=1e-12, atol=1e-12, what=what)
            if ogx is not None:
                assert_tensors_match(mgx, ogx, exact=False, rtol=1e-12, atol=1e-12,
                                     what=what + " grad self")
            if ogs is not None and mgs is not None:
                assert_tensors_match(mgs, ogs, exact=False, rtol=1e-12, atol=1e-12,
                                     what=what + " grad source")


def test_duplicates_index_copy_last_wins_and_add_sums_in_order():
    x = mg.zeros(4, dtype=mg.float32)
    src = mg.tensor([1e8, 1.0, -1e8, 3.0], dtype=mg.float32)
    x.index_add_(0, mg.tensor([2, 2, 2, 0]), src)
    t = torch.zeros(4).index_add_(0, torch.tensor([2, 2, 2, 0]), torch.tensor([1e8, 1.0, -1e8,
                                                                              3.0]))
    assert numpy_of(x).tolist() == numpy_of(t).tolist() == [3.0, 0.0, 0.0, 0.0]
    assert x._version == 1
    y = mg.zeros(3)
    y.index_copy_(0, mg.tensor([1, 1, 1]), mg.tensor([5.0, 6.0, 7.0]))
    assert numpy_of(y).tolist() == [0.0, 7.0, 0.0]


@pytest.mark.parametrize("bad", [
    lambda lib, x: x.index_add_(1, lib.tensor([0, 3]), lib.ones(2, 2)),
    lambda lib, x: x.index_copy_(1, lib.tensor([0, 9]), lib.ones(2, 2)),
    lambda lib, x: x.index_fill_(1, lib.tensor([7]), 1.0),
    lambda lib, x: x.index_add_(1, lib.tensor([0, 1, 2]), lib.ones(2, 2)),
    lambda lib, x: x.index_copy_(1, lib.tensor([0, 1]), lib.ones(2, 2, dtype=lib.float64)),
    lambda lib, x: x.index_fill_(2, lib.tensor([0]), 1.0),
    lambda lib, x: x.index_fill_(0, lib.zeros(1, 1, dtype=lib.int64), 1.0),
    lambda lib, x: x.index_fill_(0, lib.zeros(1), 1.0),
])
def test_refused_writes_raise_torchs_kind_and_change_nothing(bad):
    # The same kind of error as torch; our tensor unchanged with its version (torch may have
    # written part of it first: the strong guarantee is ours, docs/indexing.md).
    kinds = {}
    for lib in (torch, mg):
        x = lib.arange(6, dtype=lib.float32).reshape(2, 3)
        kinds[lib.__name__] = capture(lambda: bad(lib, x)).kind
        if lib is mg:
            assert numpy_of(x).tolist() == [[0, 1, 2], [3, 4, 5]]
            assert x._version == 0
    assert kinds["torch"] != "ok" and same_kind(kinds["torch"], kinds["mutagrad"]), kinds


def test_stale_saved_tensor_names_the_python_line():
    x = mg.ones(3, requires_grad=True)
    y = x.exp()
    z = y * y
    y.index_fill_(0, mg.tensor([0]), 2.0)  # the line the error must name
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    assert "index_fill_" in str(err.value)
    assert "index_family_test.py" in str(err.value)


def test_index_fill_with_a_0_dim_tensor_value_matches_torch():
    grads = {}
    for lib in (torch, mg):
        x = lib.arange(8, dtype=lib.float64).reshape(2, 4).requires_grad_()
        v = lib.tensor(2.5, dtype=lib.float64, requires_grad=True)
        y = x.index_fill(1, lib.tensor([1, 3, 1]), v)
        assert type(y.grad_fn).__name__ == "IndexFillBackward1" if lib is torch else \
            y.grad_fn.name() == "IndexFillBackward1"
        (y * lib.arange(1, 9, dtype=lib.float64).reshape(2, 4)).sum().backward()
        grads[lib.__name__] = (numpy_of(y).tolist(), numpy_of(x.grad).tolist(),
                               numpy_of(v.grad).tolist())
    assert grads["torch"] == grads["mutagrad"]
    for lib in (torch, mg):
        x = lib.zeros(3)
        assert capture(lambda: x.index_fill_(0, lib.tensor([0]), lib.ones(1))).kind == \
            "RuntimeError"
