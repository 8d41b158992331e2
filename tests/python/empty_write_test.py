"""Writes that select no element (issue 20 item 10), against torch 1.13.

torch skips only the bare `x[False] = v`: nothing is written, the value is not checked and the
version does not move, so a tensor saved for backward stays valid. Every other write whose
selection is empty (an empty slice, an empty index tensor, an all-False mask, the tuple
`(False,)`, index_put_, masked_fill_, fill_/zero_/copy_ on an empty tensor or view) runs its
checks and bumps the version once, and backward through a tensor saved before it then fails.
Each case compares with torch: the version after the write, the write's outcome, backward's
outcome and the gradient.
"""

import pytest
import torch

import mutagrad as mg


def empty_long(lib):
    return lib.tensor([], dtype=lib.int64)


# (name, write): write(lib, h) writes into h (shape [3]) a selection with no element.
SET_ITEM = [
    ("bare False, scalar", lambda lib, h: h.__setitem__(False, 7.0)),
    ("bare False, tensor", lambda lib, h: h.__setitem__(False, lib.tensor([1.0, 2.0, 3.0]))),
    ("bare False, value of a wrong shape", lambda lib, h: h.__setitem__(False, lib.zeros(4, 2))),
    ("(False,), scalar", lambda lib, h: h.__setitem__((False,), 7.0)),
    ("(None, False), scalar", lambda lib, h: h.__setitem__((None, False), 7.0)),
    ("(..., False), scalar", lambda lib, h: h.__setitem__((Ellipsis, False), 7.0)),
    ("tensor(False), scalar", lambda lib, h: h.__setitem__(lib.tensor(False), 7.0)),
    ("empty index tensor, scalar", lambda lib, h: h.__setitem__(empty_long(lib), 7.0)),
    ("empty index tensor, empty tensor",
     lambda lib, h: h.__setitem__(empty_long(lib), lib.tensor([]))),
    ("empty list, scalar", lambda lib, h: h.__setitem__([], 7.0)),
    ("all-False mask, scalar", lambda lib, h: h.__setitem__(h > 100, 7.0)),
    ("all-False mask, 0-dim tensor", lambda lib, h: h.__setitem__(h > 100, lib.tensor(7.0))),
    ("all-False mask, empty tensor", lambda lib, h: h.__setitem__(h > 100, lib.tensor([]))),
    ("empty slice 3:3, scalar", lambda lib, h: h.__setitem__(slice(3, 3), 7.0)),
    ("empty slice 0:0, empty tensor", lambda lib, h: h.__setitem__(slice(0, 0), lib.tensor([]))),
    ("empty slice 0:0, 0-dim tensor", lambda lib, h: h.__setitem__(slice(0, 0), lib.tensor(1.0))),
]

OTHER_WRITES = [
    ("index_put_ empty index", lambda lib, h: h.index_put_((empty_long(lib),), lib.tensor([]))),
    ("index_put_ empty index, accumulate",
     lambda lib, h: h.index_put_((empty_long(lib),), lib.tensor([]), accumulate=True)),
    ("index_put_ empty index, 0-dim value",
     lambda lib, h: h.index_put_((empty_long(lib),), lib.tensor(3.0))),
    ("index_put_ all-False mask", lambda lib, h: h.index_put_((h > 100,), lib.tensor(3.0))),
    ("index_put_ all-False mask, accumulate",
     lambda lib, h: h.index_put_((h > 100,), lib.tensor(3.0), accumulate=True)),
    ("masked_fill_ all-False mask, scalar", lambda lib, h: h.masked_fill_(h > 100, 3.0)),
    ("masked_fill_ all-False mask, 0-dim tensor",
     lambda lib, h: h.masked_fill_(h > 100, lib.tensor(3.0))),
    ("fill_ on an empty view", lambda lib, h: h[3:3].fill_(1.0)),
    ("zero_ on an empty view", lambda lib, h: h[3:3].zero_()),
    ("copy_ on an empty view", lambda lib, h: h[3:3].copy_(lib.tensor([]))),
]

ALL_WRITES = SET_ITEM + OTHER_WRITES
IDS = [name for name, _ in ALL_WRITES]


def kind(fn):
    """'ok' or the exception class's name."""
    try:
        fn()
        return "ok"
    except Exception as e:  # noqa: BLE001 - the kind is the outcome
        return type(e).__name__


def through_saved_tensor(lib, write):
    """h = x.exp() saves h for backward; write into h; backward. What happened."""
    x = lib.ones(3, requires_grad=True)
    h = x.exp()
    wrote = kind(lambda: write(lib, h))
    version = h._version
    backward = kind(lambda: h.sum().backward())
    grad = None if x.grad is None else [round(v, 5) for v in x.grad.tolist()]
    return {"write": wrote, "version": version, "backward": backward, "grad": grad}


def without_autograd(lib, write):
    """The same write on a tensor that does not require grad: its outcome and version."""
    h = lib.arange(3.0)
    wrote = kind(lambda: write(lib, h))
    return {"write": wrote, "version": h._version, "values": h.tolist()}


class TestEmptySelectionWrites:
    @pytest.mark.parametrize("name,write", ALL_WRITES, ids=IDS)
    def test_version_and_backward_match_torch(self, name, write):
        got, want = through_saved_tensor(mg, write), through_saved_tensor(torch, write)
        assert got == want, f"{name}: mutagrad {got}, torch {want}"

    @pytest.mark.parametrize("name,write", ALL_WRITES, ids=IDS)
    def test_without_autograd_matches_torch(self, name, write):
        got, want = without_autograd(mg, write), without_autograd(torch, write)
        assert got == want, f"{name}: mutagrad {got}, torch {want}"

    def test_bare_false_keeps_saved_tensors_valid(self):
        # The repro: torch succeeds, and so must we.
        for lib in (torch, mg):
            x = lib.ones(3, requires_grad=True)
            h = x.exp()
            h[False] = 7.0
            assert h._version == 0
            h.sum().backward()
            assert [round(v, 5) for v in x.grad.tolist()] == [2.71828] * 3

    def test_bare_false_on_a_leaf_is_allowed(self):
        # No write happens, so the leaf check does not run either (torch: no error).
        for lib in (torch, mg):
            x = lib.ones(3, requires_grad=True)
            x[False] = 7.0
            assert x._version == 0 and x.tolist() == [1.0, 1.0, 1.0]

    def test_bare_false_on_a_0_dim_tensor(self):
        for lib in (torch, mg):
            x = lib.tensor(1.0)
            x[False] = 7.0
            assert x._version == 0 and x.item() == 1.0

    @pytest.mark.parametrize("op", ["fill_", "zero_", "copy_"])
    def test_in_place_ops_on_an_empty_tensor_bump(self, op):
        def run(lib):
            e = lib.ones(0)
            for _ in range(2):
                if op == "fill_":
                    e.fill_(1.0)
                elif op == "zero_":
                    e.zero_()
                else:
                    e.copy_(lib.ones(0))
            return e._version

        assert run(mg) == run(torch) == 2
