"""One Python object per tensor (Note [One Python object per tensor] in python/tensor_caster.h),
against torch 1.13: `_base`, `.grad`, in-place results and custom Function outputs return the
Python object that already wraps the tensor (issue 34, item 13), and new tensors (views,
detach(), .data, copies) get new objects.
"""

import gc
import weakref

import pytest

import mutagrad as mg
from lib_util import assert_same_outcome, run_both


def identities(lib):
    x = lib.arange(6, dtype=lib.float32).reshape(2, 3)
    v = x.narrow(0, 1, 1)
    w = v.view(-1)  # a view of a view: the root base
    rows = list(x)  # unbind views
    chunk = x.chunk(2)[1]
    t = x.t()
    a = lib.ones(3, requires_grad=True)
    (a * 2).sum().backward()
    h = a * 1
    h.retain_grad()
    (h * h).sum().backward()
    return {
        "narrow base": v._base is x,
        "base twice": v._base is v._base,
        "view of view": w._base is x,
        "unbind": rows[1]._base is x,
        "chunk": chunk._base is x,
        "t": t._base is x,
        "base of base": x._base is None,
        "grad": a.grad is a.grad,
        "retained grad": h.grad is h.grad,
        "add_ returns self": x.add_(1) is x,
        "setitem keeps object": x.__setitem__(0, 1.0) is None and v._base is x,
        "requires_grad_ returns self": (lambda d: d.requires_grad_() is d)(a.detach()),
        "detach is new": x.detach() is not x,
        "data is new": x.data is not x.data,
        "view is new": x.view(6) is not x.view(6),
        "clone is new": x.clone() is not x,
        "contiguous of contiguous": x.contiguous() is x,
        "to same dtype": x.to(lib.float32) is x,
    }


def test_python_objects_match_torch():
    assert_same_outcome(*run_both(identities))


def test_issue_34_repro():
    x = mg.ones(5)
    v = x.narrow(0, 1, 2)
    assert v._base is x
    assert v._base is v._base


def test_base_outlives_its_python_object():
    x = mg.arange(4.0)
    v = x[1:]
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None  # the table does not keep the object alive
    b = v._base  # a new object for the same tensor
    assert b is v._base and b.tolist() == [0.0, 1.0, 2.0, 3.0]
    b[0] = 7.0
    assert v._base[0].item() == 7.0


def test_custom_function_outputs():
    class Id(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = mg.ones(3) * 1
    assert Id.apply(x) is x


@pytest.mark.parametrize("n", [1, 1000])
def test_many_tensors_do_not_confuse_the_table(n):
    # Objects die and addresses are reused: every lookup still gives the right tensor.
    bases = [mg.full((2,), float(i)) for i in range(n)]
    views = [b[1:] for b in bases]
    del bases
    gc.collect()
    for i, v in enumerate(views):
        assert v._base.tolist() == [float(i), float(i)]
        assert v._base is v._base
