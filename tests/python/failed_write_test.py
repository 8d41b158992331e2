"""A write that raises changes nothing, for every in-place op of the module.

The op list is read from the module itself: every Tensor method whose name ends in '_' (minus
the two that change autograd flags, not data) plus the in-place operators and __setitem__. Each
op is called on every kind of tensor with every argument set of a generated pool (wrong dtype,
wrong shape, overlapping memory, autograd refusals, values a dtype cannot hold, out-of-range
indices, bad keywords); whenever a call raises, the tensor's values and version must be exactly
what they were. A new in-place method is picked up automatically, and the test fails until the
pool makes it raise at least once (so it is really covered).
"""

import itertools
import math

import numpy as np
import pytest

import mutagrad as mg

NOT_DATA_WRITES = {"requires_grad_", "detach_"}
DUNDERS = ["__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__iand__",
           "__ior__", "__ixor__", "__imatmul__", "__setitem__"]


def inplace_ops():
    methods = [n for n in dir(mg.Tensor)
               if n.endswith("_") and not n.startswith("_") and n not in NOT_DATA_WRITES]
    return sorted(methods) + DUNDERS


def selves():
    """name -> factory of a fresh tensor to write into."""
    def leaf():
        return mg.tensor([0.5, -1.5, 2.0], dtype=mg.float64, requires_grad=True)

    def nograd_view():
        base = leaf() * 1
        with mg.no_grad():
            return base[:3]

    return {
        "bool": lambda: mg.tensor([True, False, True]),
        "int32": lambda: mg.tensor([1, 2, 3], dtype=mg.int32),
        "int64": lambda: mg.tensor([1, 2, 3]),
        "float32": lambda: mg.tensor([0.5, -1.5, 2.0]),
        "expanded": lambda: mg.tensor([0.5]).expand(3),
        "leaf": leaf,
        "view of leaf": lambda: leaf()[:3],
        "no_grad view": nograd_view,
        "unbind output": lambda: (leaf() * 1).view(1, 3).unbind(0)[0],
    }


def argument_pool():
    """(args, kwargs) pairs; each is tried with every op and every self."""
    f3 = lambda: mg.tensor([1.0, 2.0, 3.0])  # noqa: E731
    pool = [
        ((), {}),
        ((2 ** 40,), {}), ((2 ** 31,), {}), ((float("nan"),), {}), ((float("inf"),), {}),
        ((1e300,), {}), ((0.5,), {}), ((True,), {}), ((-1,), {}),
        ((f3(),), {}), ((mg.tensor([True, False, True]),), {}), ((mg.tensor([1, 2, 3]),), {}),
        ((mg.zeros(2),), {}), ((mg.zeros(2, 3),), {}), ((mg.tensor(1.0),), {}),
        ((f3(),), {"alpha": 0.5}), ((f3(),), {"alpha": True}), ((mg.tensor([1, 2, 3]),), {"alpha": 0.5}),
        ((), {"min": 2 ** 40}), ((), {"min": 0.5}), ((), {"max": float("nan")}),
        ((mg.tensor([True, False, True]), 2 ** 40), {}),
        ((mg.tensor([True, False, True]), float("nan")), {}),
        ((mg.tensor([1, 0, 1]), 0), {}),
        ((mg.tensor([True, False]), 0), {}),
        ((mg.tensor([True, False, True]), f3()), {}),
        (((mg.tensor([0, 5]),), mg.zeros(2)), {}),
        (((mg.tensor([0, 1]),), mg.zeros(3)), {}),
        (((mg.tensor([0, 1]),), mg.zeros(2, dtype=mg.int64)), {}),
        (((mg.tensor([0, 1]),), mg.zeros(2)), {"accumulate": True}),
        ((7, 1.0), {}), ((slice(0, 2), mg.zeros(3)), {}), ((0, 2 ** 40), {}),
        ((slice(0, 2), float("nan")), {}), ((mg.tensor([True, False, True]), 2 ** 40), {}),
        ((mg.tensor([5]), 1.0), {}), ((0, 1e300), {}), ((None, 0, 0, 0), {}),
        ((f3(),), {"bogus": 1}),
    ]
    return pool


def snapshot(t):
    return np.array(t.detach().tolist(), dtype=np.float64), t._version


def same_values(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def test_every_failed_inplace_write_changes_nothing():
    raised = {op: 0 for op in inplace_ops()}
    offenders = []
    for op, (self_name, make_self), (args, kwargs) in itertools.product(
            inplace_ops(), selves().items(), argument_pool()):
        t = make_self()
        before, version = snapshot(t)
        try:
            getattr(t, op)(*args, **kwargs)
        except Exception:  # noqa: BLE001 - any failure must leave the tensor untouched
            raised[op] += 1
            after, after_version = snapshot(t)
            if not same_values(before, after) or after_version != version:
                offenders.append(f"{op}{args!r}{kwargs!r} on {self_name}: "
                                 f"{before} v{version} -> {after} v{after_version}")
    assert not offenders, "failed writes that changed something:\n" + "\n".join(offenders)
    never = [op for op, n in raised.items() if n == 0]
    assert not never, f"the argument pool never makes these ops fail (extend it): {never}"


def test_failed_write_does_not_make_a_saved_tensor_stale():
    # Issue 20 item 7: the raising sub_ used to bump, and backward then blamed it.
    x = mg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    m = x.detach() > 0
    y = x.masked_fill(m, 0.0)
    with pytest.raises(RuntimeError):
        m.sub_(m)
    assert m._version == 0
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("write", [
    lambda b: b.sub_(b), lambda b: b.relu_(), lambda b: b.neg_(),
], ids=["sub_", "relu_", "neg_"])
def test_bool_writes_that_raise_keep_the_version(write):
    b = mg.tensor([True, False])
    with pytest.raises(RuntimeError):
        write(b)
    assert b._version == 0 and b.tolist() == [True, False]


def test_integer_alpha_rules_match_torch():
    import torch
    for lib in (torch, mg):
        t = lib.tensor([1, 2])
        with pytest.raises(RuntimeError):
            t.sub_(lib.tensor([1, 1]), alpha=0.5)
        assert t._version == 0 and t.tolist() == [1, 2]
        b = lib.tensor([True, False])
        b.add_(b, alpha=2)  # alpha converts to the result dtype (bool), as in torch
        assert b.tolist() == [True, False]
