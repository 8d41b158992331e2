"""Writes whose operands alias the written tensor (docs/indexing.md, "Operands that alias the
written tensor"): every operand is read as if copied before the write. The three repros of
issue 34 with their values, and each write of the family with an operand that is self, a view
overlapping it or a view next to it, against torch 1.13 given copies of the operands (torch
itself refuses most overlaps: "unsupported operation"). On the CPU and the host-run CUDA device.
"""

import pytest
import torch

import mutagrad as mg
from lib_util import numpy_of

MG_DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global MG_DEVICE
    MG_DEVICE = request.param
    yield request.param
    MG_DEVICE = "cpu"


def on(t):
    return t.to(MG_DEVICE)


def test_scatter_reduce_without_self_reads_src_first():
    x = on(mg.tensor([1., 2., 3., 4.]))
    x.scatter_reduce_(0, on(mg.tensor([1, 0])), x[0:2], "sum", include_self=False)
    assert numpy_of(x).tolist() == [2, 1, 3, 4]
    assert x._version == 1
    # torch refuses the overlap.
    t = torch.tensor([1., 2., 3., 4.])
    with pytest.raises(RuntimeError, match="unsupported operation"):
        t.scatter_reduce_(0, torch.tensor([1, 0]), t[0:2], "sum", include_self=False)


def test_scatter_reduce_without_self_reads_its_index_first():
    x = on(mg.tensor([1, 0, 5, 7]))
    x.scatter_reduce_(0, x[0:2], on(mg.tensor([10, 20])), "sum", include_self=False)
    assert numpy_of(x).tolist() == [20, 10, 5, 7]


def test_scatter_reduce_amin_never_writes_outside_self():
    base = on(mg.full((100,), 3))
    x = base[40:44]
    x.copy_(on(mg.tensor([1, 0, 5, 7])))
    x.scatter_reduce_(0, x[0:2], on(mg.tensor([-10, -20])), "amin", include_self=False)
    assert numpy_of(x).tolist() == [-20, -10, 5, 7]
    values = numpy_of(base).tolist()
    assert values[:40] == [3] * 40 and values[44:] == [3] * 56


# (name, write(lib, self, operand)): operand is an int64 tensor of 4 values in [0, 4), used as
# an index, a source or both.
WRITES = [
    ("index_put_", lambda lib, s, o: s.index_put_((o,), o)),
    ("index_put_ accumulate", lambda lib, s, o: s.index_put_((o,), o, accumulate=True)),
    ("setitem", lambda lib, s, o: s.__setitem__(o, o)),
    ("scatter_", lambda lib, s, o: s.scatter_(0, o, o)),
    ("scatter_add_", lambda lib, s, o: s.scatter_add_(0, o, o)),
    ("index_add_", lambda lib, s, o: s.index_add_(0, o, o)),
    ("index_copy_", lambda lib, s, o: s.index_copy_(0, o, o)),
    ("index_fill_", lambda lib, s, o: s.index_fill_(0, o, 9)),
    ("put_", lambda lib, s, o: s.put_(o, o)),
    ("put_ accumulate", lambda lib, s, o: s.put_(o, o, accumulate=True)),
    ("masked_scatter_", lambda lib, s, o: s.masked_scatter_(s > 1, o)),
    ("masked_fill_", lambda lib, s, o: s.masked_fill_(s > 1, o[0])),
] + [(f"scatter_reduce_ {r} {inc}",
      (lambda r, inc: lambda lib, s, o: s.scatter_reduce_(0, o, o, r, include_self=inc))(r, inc))
     for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)]

# Where the operand starts in base, in elements of self's step (self = base[4:4 + 4 * step:step]),
# or in elements ("interleaved": between self's elements when step is 2).
PLACES = {"same": (0, 0), "overlapping": (2, 0), "before": (-2, 0), "interleaved": (0, 1),
          "disjoint": (5, 0)}


@pytest.mark.parametrize("name,write", WRITES, ids=[w[0] for w in WRITES])
@pytest.mark.parametrize("step", [1, 2])
@pytest.mark.parametrize("place", list(PLACES))
def test_aliasing_operand_reads_as_if_copied(name, write, step, place):
    values = [1, 0, 3, 2, 2, 1, 0, 3, 1, 3, 0, 2, 3, 1, 2, 0, 0, 1, 2, 3, 1, 1, 0, 2]
    in_self = [4 <= i < 4 + 4 * step and (i - 4) % step == 0 for i in range(len(values))]
    results = {}
    for lib in (torch, mg):
        base = lib.tensor(values)
        if lib is mg:
            base = on(base)
        self = base[4:4 + 4 * step:step]
        start = 4 + PLACES[place][0] * step + PLACES[place][1]
        operand = base[start:start + 4 * step:step]
        if lib is torch:
            operand = operand.clone()  # torch's answer for operands copied first
        write(lib, self, operand)
        got = numpy_of(base).tolist() if lib is mg else base.tolist()
        outside = [(v, w) for v, w, s in zip(got, values, in_self) if not s]
        assert all(v == w for v, w in outside), f"{lib.__name__} wrote outside self: {got}"
        if lib is mg:
            assert self._version == 1
        results[lib.__name__] = numpy_of(self).tolist() if lib is mg else self.tolist()
    assert results["mutagrad"] == results["torch"], results
