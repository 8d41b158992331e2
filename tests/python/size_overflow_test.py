"""Sizes whose element, stride or byte count overflows int64 (issue 20 item 11, issue 18), against
torch 1.13: each entry point raises (RuntimeError, as torch) instead of wrapping to a small or zero
count, and the largest counts that fit still work. Note [Size overflow] in tensor/shape.h; the
C++ side, with every entry point and a check that nothing was allocated, is
tests/tensor/size_overflow_test.cc.
"""

import pytest
import torch

import mutagrad as mg
from torch_oracle import torch_version

B40 = 2**40

# (name, fn(lib), a phrase mutagrad's message must contain)
OVERFLOWS = [
    # The two repros: accepted with numel() == 0, and a sum of 0.
    ("zeros(1).expand(2**40, 2**40)", lambda lib: lib.zeros(1).expand(B40, B40),
     "expand(): the sizes [1099511627776, 1099511627776]"),
    ("ones(3).expand(2**62, 3).sum()", lambda lib: lib.ones(3).expand(2**62, 3).sum(),
     "numel: integer multiplication overflow"),
    ("write into zeros(1).expand(2**40, 2**40)",
     lambda lib: lib.zeros(1).expand(B40, B40).fill_(1.0), "expand():"),
    ("expand overflowing at the last multiply",
     lambda lib: lib.zeros(1).expand(2**31, 2**31, 2), "expand():"),
    ("zeros(2**40, 2**40)", lambda lib: lib.zeros(B40, B40),
     "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]"),
    ("ones(2**40, 2**40)", lambda lib: lib.ones(B40, B40), "Storage size calculation"),
    ("empty(2**40, 2**40)", lambda lib: lib.empty(B40, B40), "Storage size calculation"),
    ("full((2**40, 2**40), 1.0)", lambda lib: lib.full((B40, B40), 1.0), "Storage size"),
    ("empty(2**61, 2): numel fits, bytes do not", lambda lib: lib.empty(2**61, 2),
     "4-byte elements"),
    ("arange(2**62)", lambda lib: lib.arange(2**62), "arange():"),
    ("arange(-2**62, 2**62)", lambda lib: lib.arange(-2**62, 2**62), "arange():"),
    ("ones(1).view(2**40, 2**40)", lambda lib: lib.ones(1).view(B40, B40), "overflows int64"),
    ("ones(1).view(-1, 2**40, 2**40)", lambda lib: lib.ones(1).view(-1, B40, B40), "view():"),
    ("ones(1).reshape(2**40, 2**40)", lambda lib: lib.ones(1).reshape(B40, B40), "reshape():"),
    ("broadcast of two expanded tensors",
     lambda lib: lib.ones(1, 1).expand(B40, 1) + lib.ones(1, 1).expand(1, B40),
     "Storage size calculation"),
    ("contiguous() of a huge expanded tensor",
     lambda lib: lib.zeros(1, 2).expand(2**61, 2).contiguous(), "Storage size calculation"),
    ("cat of two huge expanded tensors",
     lambda lib: lib.cat([lib.ones(1).expand(2**62), lib.ones(1).expand(2**62)]), "cat():"),
    # Issue 18: the ops that compute a shape from their arguments.
    ("ones(2, 3).repeat(2**62, 1)", lambda lib: lib.ones(2, 3).repeat(2**62, 1), "repeat():"),
    ("ones(2, 3).tile((2**31, 2**31))", lambda lib: lib.ones(2, 3).tile((2**31, 2**31)),
     "Storage size calculation"),
    ("eye(2**40)", lambda lib: lib.eye(2**40), "Storage size calculation"),
    ("ones(3).diag_embed(2**63 - 1)", lambda lib: lib.ones(3).diag_embed(2**63 - 1),
     "diag_embed(): a vector of 3 elements on diagonal offset 9223372036854775807"),
    ("ones(3).diag_embed(-2**63)", lambda lib: lib.ones(3).diag_embed(-2**63), "diag_embed():"),
    ("ones(3).diag_embed(2**40)", lambda lib: lib.ones(3).diag_embed(2**40),
     "Storage size calculation overflowed with sizes=[1099511627779, 1099511627779]"),
    ("ones(3).diag(2**63 - 1)", lambda lib: lib.ones(3).diag(2**63 - 1), "diag():"),
]

FITS = [
    ("expand to 2**63 - 1 elements", lambda lib: lib.zeros(1).expand(2**63 - 1).numel()),
    ("expand to 2**62 elements", lambda lib: tuple(lib.zeros(2).expand(2**61, 2).shape)),
    ("unsqueeze of a huge expanded tensor",
     lambda lib: tuple(lib.zeros(1).expand(2**62).unsqueeze(0).shape)),
    ("flatten of a huge expanded tensor",
     lambda lib: tuple(lib.zeros(1, 1).expand(2**31, 2**31).flatten().shape)),
    ("empty with a 0 and huge sizes", lambda lib: tuple(lib.zeros(2**61, 2, 0).shape)),
]


def outcome(fn, lib):
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the kind is the outcome
        return type(e).__name__, str(e)


class TestSizeOverflow:
    @pytest.mark.parametrize("name,fn,phrase", OVERFLOWS, ids=[c[0] for c in OVERFLOWS])
    def test_raises_like_torch(self, name, fn, phrase):
        (kt, _), (km, message) = outcome(fn, torch), outcome(fn, mg)
        assert kt == "RuntimeError", f"{name}: torch gave {kt}"
        assert km == kt, f"{name}: mutagrad gave {km}: {message}"
        assert phrase in message, f"{name}: {phrase!r} not in {message!r}"

    @pytest.mark.parametrize("name,fn", FITS, ids=[c[0] for c in FITS])
    def test_largest_counts_that_fit_work(self, name, fn):
        assert outcome(fn, mg) == outcome(fn, torch), name

    def test_empty_tensors_whose_nonzero_sizes_overflow(self):
        # torch 1.13 multiplies left to right: it refuses [2**62, 4, 0] but accepts
        # [0, 2**62, 4] with wrapped strides. Ours refuses both (docs/python.md), as torch 2.x
        # does ("Stride calculation overflowed"; docs/torch-versions.md).
        for sizes in [(2**62, 4, 0), (0, 2**62, 4)]:
            kind, message = outcome(lambda lib: lib.zeros(*sizes), mg)
            assert kind == "RuntimeError" and "Storage size calculation" in message, sizes
        assert outcome(lambda lib: lib.zeros(2**62, 4, 0), torch)[0] == "RuntimeError"
        torch_2 = "RuntimeError" if torch_version() >= (2, 0) else "ok"
        assert outcome(lambda lib: lib.zeros(0, 2**62, 4), torch)[0] == torch_2
