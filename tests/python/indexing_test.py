"""Differential tests of Python indexing (x[idx], x[idx] = v, index_put_) against torch."""

import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import same_kind


def to_mg(t):
    return mg.from_numpy(t.numpy()).clone()  # keeps empty shapes like (0, 2)


def random_index(rng, shape):
    """A random index expression (tuple) in both libraries' forms, valid or not."""
    parts_t, parts_m = [], []
    dim = 0
    n = rng.randint(1, len(shape) + 1)
    used_ellipsis = False
    while len(parts_t) < n:
        kind = rng.choice(["int", "slice", "slice", "none", "ellipsis", "list", "mask"])
        size = shape[dim] if dim < len(shape) else 1
        if kind == "int":
            i = rng.randint(-size - 1, size)  # sometimes out of range
            parts_t.append(i)
            parts_m.append(i)
            dim += 1
        elif kind == "slice":
            s = slice(rng.choice([None, rng.randint(-size, size)]),
                      rng.choice([None, rng.randint(-size, size + 1)]),
                      rng.choice([None, 1, 2, 3]))
            parts_t.append(s)
            parts_m.append(s)
            dim += 1
        elif kind == "none":
            parts_t.append(None)
            parts_m.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            parts_t.append(Ellipsis)
            parts_m.append(Ellipsis)
        elif kind == "list" and size > 0:
            idx = [rng.randint(-size, size - 1) for _ in range(rng.randint(1, 3))]
            parts_t.append(torch.tensor(idx))
            parts_m.append(mg.tensor(idx))
            dim += 1
        elif kind == "mask" and dim < len(shape):
            mask = [rng.random() < 0.5 for _ in range(size)]
            parts_t.append(torch.tensor(mask))
            parts_m.append(mg.tensor(mask))
            dim += 1
    return tuple(parts_t), tuple(parts_m)


def outcome(fn):
    try:
        return "ok", fn()
    except (IndexError, RuntimeError, ValueError, TypeError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("seed", range(300))
def test_random_getitem_matches_torch(seed):
    rng = random.Random(seed)
    shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
    xt = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
    xm = mg.arange(int(np.prod(shape)), dtype=mg.float32).reshape(shape)
    it, im = random_index(rng, shape)
    kt, vt = outcome(lambda: xt[it])
    km, vm = outcome(lambda: xm[im])
    if kt == "ok":
        assert km == "ok", f"index {it}: torch ok, mutagrad raised {km}: {vm}"
        assert vm.shape == tuple(vt.shape)
        assert vm.tolist() == vt.tolist()
        assert vm._version == 0
    else:
        assert km != "ok", f"index {it}: torch raised {kt}, mutagrad returned {vm}"
        if kt == "IndexError":
            assert same_kind("IndexError", km), f"index {it}: mutagrad raised {km}: {vm}"


@pytest.mark.parametrize("seed", range(300))
def test_random_setitem_matches_torch(seed):
    rng = random.Random(1000 + seed)
    shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
    xt = torch.zeros(shape)
    xm = mg.zeros(*shape)
    it, im = random_index(rng, shape)
    use_scalar = rng.random() < 0.5
    if use_scalar:
        vt = vm = 7.5
    else:
        # A value shaped like the indexed result when torch can index, else a 1-element one.
        try:
            res_shape = tuple(xt[it].shape)
        except (IndexError, RuntimeError):
            res_shape = (1,)
        n = int(np.prod(res_shape))
        data = torch.arange(1, n + 1, dtype=torch.float32).reshape(res_shape)
        vt, vm = data, to_mg(data)
    kt, _ = outcome(lambda: xt.__setitem__(it, vt))
    km, em = outcome(lambda: xm.__setitem__(im, vm))
    if kt == "ok":
        assert km == "ok", f"index {it}: torch ok, mutagrad raised {km}: {em}"
        assert xm.tolist() == xt.tolist()
        assert (xm._version > 0) == (xt._version > 0)
    else:
        assert km != "ok", f"index {it}: torch raised {kt}, mutagrad did not"
        assert xm.tolist() == torch.zeros(shape).tolist(), "a failed setitem wrote"
        assert xm._version == 0


def test_index_put_accumulate_matches_torch():
    xt = torch.zeros(5)
    xm = mg.zeros(5)
    idx = [0, 2, 2, 4, 0, 0]
    vals = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    xt.index_put_((torch.tensor(idx),), torch.tensor(vals), accumulate=True)
    xm.index_put_((mg.tensor(idx),), mg.tensor(vals), accumulate=True)
    assert xm.tolist() == xt.tolist()
    assert xm._version == xt._version == 1


def test_index_put_2d_accumulate_matches_torch():
    xt = torch.ones(3, 4)
    xm = mg.ones(3, 4)
    rows, cols = [0, 1, 0, 2], [1, 3, 1, 0]
    xt.index_put_((torch.tensor(rows), torch.tensor(cols)), torch.tensor(2.0), accumulate=True)
    xm.index_put_((mg.tensor(rows), mg.tensor(cols)), mg.tensor(2.0), accumulate=True)
    assert xm.tolist() == xt.tolist()


def test_setitem_view_shares_memory_and_bumps_base_version():
    xm = mg.zeros(3, 4)
    v = xm[1]
    v[2] = 5.0
    xt = torch.zeros(3, 4)
    vt = xt[1]
    vt[2] = 5.0
    assert xm.tolist() == xt.tolist()
    assert xm._version == xt._version
    assert v._version == vt._version


def test_numpy_round_trip_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = mg.from_numpy(a)
    t[0, 0] = 100.0
    assert a[0, 0] == 100.0
    assert t.numpy().tolist() == a.tolist()
