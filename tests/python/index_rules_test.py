"""Index values against torch 1.13, op by op (issue 34, items 3, 7 and 8; docs/indexing.md,
"Negative indices", and docs/python.md, "Errors"):

- a negative index: every op that takes index values wraps it or refuses it as torch does
  (tensor/native/index_rules.h holds the rule of each op): the same values, or an exception of
  torch's kind, with our tensor and its version unchanged;
- an out-of-range index: every op raises mutagrad.IndexOutOfRangeError, which both
  `except IndexError` and `except RuntimeError` catch (torch raises one or the other depending
  on the op), and changes nothing; the other index errors keep torch's exact type;
- x[idx] = v with v of another dtype: torch's rule (basic writes and numbers convert, advanced
  writes refuse a tensor of another dtype, a lone mask with a one-element CPU value converts),
  nothing written on refusal.

mutagrad runs on the CPU and on the host-run CUDA device; torch (CPU) is the oracle. The C++
twin: tests/autograd/index_rules_ops_test.cc.
"""

import warnings

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import numpy_of

DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global DEVICE
    DEVICE = request.param
    yield request.param
    DEVICE = "cpu"


def dev(lib, t):
    """t on the device under test (mutagrad's; torch stays on the CPU)."""
    return t.to(DEVICE) if lib is mg else t


def T(lib, values, dtype=None):
    return dev(lib, lib.tensor(values, dtype=dtype))


def make_x(lib):
    return dev(lib, lib.arange(12, dtype=lib.float32).reshape(3, 4))


def set_(x, index, value):
    x[index] = value
    return x


def functional(lib):
    return torch.nn.functional if lib is torch else mg.nn.functional


# (name, size the index value addresses, call(lib, x, i)). An in-place call returns x.
CALLS = [
    ("x[idx]", 3, lambda lib, x, i: x[T(lib, [0, i])]),
    ("x[:, idx]", 4, lambda lib, x, i: x[:, T(lib, [i, 1])]),
    ("x[list]", 3, lambda lib, x, i: x[[i, 0]]),
    ("x[i]", 3, lambda lib, x, i: x[i]),
    ("x[tensor(i)]", 3, lambda lib, x, i: x[T(lib, i)]),
    ("x.select(1, i)", 4, lambda lib, x, i: x.select(1, i)),
    ("x[idx] = v", 3, lambda lib, x, i: set_(x, T(lib, [i]), dev(lib, lib.full((1, 4), 100.)))),
    ("x[:, idx] = 5", 4, lambda lib, x, i: set_(x, (slice(None), T(lib, [i])), 5.0)),
    ("x[1, i] = 5", 4, lambda lib, x, i: set_(x, (1, i), 5.0)),
    ("x[idx, None] = 5", 3, lambda lib, x, i: set_(x, (T(lib, [0, i]), None), 5.0)),
    ("index_put_", 3,
     lambda lib, x, i: x.index_put_((T(lib, [i]),), dev(lib, lib.full((4,), 100.)))),
    ("index_put_ accumulate", 4,
     lambda lib, x, i: x.index_put_((T(lib, [0]), T(lib, [i])), T(lib, 1.), accumulate=True)),
    ("index_put", 3, lambda lib, x, i: x.index_put((T(lib, [i]),), T(lib, 100.))),
    ("take", 12, lambda lib, x, i: x.take(T(lib, [[0, i]]))),
    ("take of a transpose", 12, lambda lib, x, i: lib.take(x.t(), T(lib, [i]))),
    ("put_", 12, lambda lib, x, i: x.put_(T(lib, [i]), T(lib, [100.]))),
    ("put_ accumulate", 12, lambda lib, x, i: x.put_(T(lib, [i]), T(lib, [100.]), True)),
    ("put", 12, lambda lib, x, i: x.put(T(lib, [i, 0]), T(lib, [100., 50.]))),
    ("index_select", 3, lambda lib, x, i: x.index_select(0, T(lib, [0, i]))),
    ("index_select(1)", 4, lambda lib, x, i: lib.index_select(x, 1, T(lib, [i]))),
    ("index_select, 0-dim index", 3, lambda lib, x, i: x.index_select(0, T(lib, i))),
    ("index_add_", 3, lambda lib, x, i: x.index_add_(0, T(lib, [i]), T(lib, [[1., 2, 3, 4]]))),
    ("index_add", 4,
     lambda lib, x, i: x.index_add(1, T(lib, [i]), T(lib, [[1.], [2], [3]]), alpha=2)),
    ("index_copy_", 4, lambda lib, x, i: x.index_copy_(1, T(lib, [i]), T(lib, [[1.], [2], [3]]))),
    ("index_copy", 3, lambda lib, x, i: x.index_copy(0, T(lib, [i]), T(lib, [[1., 2, 3, 4]]))),
    ("index_fill_", 4, lambda lib, x, i: x.index_fill_(1, T(lib, [i]), 5.0)),
    ("index_fill_ of a 0-dim tensor", 3,
     lambda lib, x, i: x.index_fill_(0, T(lib, [i]), T(lib, 5.0))),
    ("index_fill", 3, lambda lib, x, i: x.index_fill(0, T(lib, [i, 0]), 5.0)),
    ("gather", 3, lambda lib, x, i: x.gather(0, T(lib, [[0, i, 1, 2]]))),
    ("gather(1)", 4, lambda lib, x, i: lib.gather(x, 1, T(lib, [[i], [0], [1]]))),
    ("scatter_", 4, lambda lib, x, i: x.scatter_(1, T(lib, [[i]]), T(lib, [[100.]]))),
    ("scatter_ of a value", 3, lambda lib, x, i: x.scatter_(0, T(lib, [[0, i]]), 5.0)),
    ("scatter_ reduce=add", 3,
     lambda lib, x, i: x.scatter_(0, T(lib, [[i]]), T(lib, [[100.]]), reduce="add")),
    ("scatter_add_", 3, lambda lib, x, i: x.scatter_add_(0, T(lib, [[i]]), T(lib, [[100.]]))),
    ("scatter", 4, lambda lib, x, i: x.scatter(1, T(lib, [[i]]), T(lib, [[100.]]))),
    ("scatter_add", 4, lambda lib, x, i: lib.scatter_add(x, 1, T(lib, [[i]]), T(lib, [[9.]]))),
    ("scatter_reduce", 4,
     lambda lib, x, i: x.scatter_reduce(1, T(lib, [[i]]), T(lib, [[9.]]), "amax")),
    ("nll_loss", 4, lambda lib, x, i: functional(lib).nll_loss(x, T(lib, [0, i, 1]))),
    ("cross_entropy", 4, lambda lib, x, i: functional(lib).cross_entropy(x, T(lib, [i, 2, 1]))),
] + [
    (f"scatter_reduce_ {reduce}{'' if include_self else ' without self'}", 3,
     lambda lib, x, i, reduce=reduce, include_self=include_self: x.scatter_reduce_(
         0, T(lib, [[i, 0]]), T(lib, [[100., 7.]]), reduce, include_self=include_self))
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)
]
IDS = [c[0] for c in CALLS]


def run(lib, call, i):
    """(x after the call, the result, or None and the exception)."""
    x = make_x(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's scatter_reduce is "in beta"
        try:
            return x, call(lib, x, i), None
        except Exception as e:  # noqa: BLE001 - the exception is the outcome
            return x, None, e


def assert_unchanged(x, what):
    assert numpy_of(x).tolist() == np.arange(12.0).reshape(3, 4).tolist(), what
    assert x._version == 0, f"{what}: version {x._version}"


@pytest.mark.parametrize("call", CALLS, ids=IDS)
@pytest.mark.parametrize("i", [-1, -2], ids=["-1", "-2"])
def test_a_negative_index_is_read_as_torch_reads_it(call, i):
    name, size, fn = call
    xt, rt, et = run(torch, fn, i)
    xm, rm, em = run(mg, fn, i)
    if et is None:
        assert em is None, f"{name}: torch wraps {i}, mutagrad raised {em!r}"
        assert numpy_of(rm).tolist() == numpy_of(rt).tolist(), name
        assert numpy_of(xm).tolist() == numpy_of(xt).tolist(), name
        assert xm._version == xt._version, name
    else:
        assert em is not None, f"{name}: torch raised {et!r}, mutagrad accepted {i}"
        assert isinstance(em, type(et)), f"{name}: torch {et!r}, mutagrad {em!r}"
        assert isinstance(em, mg.IndexOutOfRangeError), f"{name}: {em!r}"
        assert f"index {i} is out of bounds" in str(em) or f"target {i}" in str(em), str(em)
        assert_unchanged(xm, name)


@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_an_out_of_range_index_is_an_index_and_a_runtime_error(call):
    name, size, fn = call
    for bad in (size, -size - 1, 2**62):
        _, _, et = run(torch, fn, bad)
        assert et is not None, f"{name}: torch accepted {bad}"
        for catch in (IndexError, RuntimeError, mg.IndexOutOfRangeError):
            x = make_x(mg)
            with pytest.raises(catch) as err:
                fn(mg, x, bad)
            assert isinstance(err.value, type(et)), f"{name}: torch {et!r}, mutagrad {err.value!r}"
            assert str(bad) in str(err.value), str(err.value)
            assert_unchanged(x, f"{name} with index {bad}")


def test_narrow_start_is_an_out_of_range_index():
    for lib in (torch, mg):
        x = make_x(lib)
        assert x.narrow(1, -1, 1).tolist() == [[3.0], [7.0], [11.0]]
        assert x.narrow(1, 4, 0).shape == (3, 0)  # start == size: an empty narrow, as torch
        for bad in (5, -5):
            with pytest.raises(IndexError):
                x.narrow(1, bad, 0)
    with pytest.raises(RuntimeError, match="start out of range"):
        make_x(mg).narrow(1, 5, 0)


def test_the_exception_types():
    assert issubclass(mg.IndexOutOfRangeError, IndexError)
    assert issubclass(mg.IndexOutOfRangeError, RuntimeError)
    # An int index beyond int64 is out of range too, and an overflow (docs/torch-versions.md).
    assert issubclass(mg.IndexOverflowError, mg.IndexOutOfRangeError)
    assert issubclass(mg.IndexOverflowError, mg.IntOverflowError)
    with pytest.raises(RuntimeError):
        make_x(mg)[2**70]
    with pytest.raises(mg.IndexOutOfRangeError):
        make_x(mg)[[0, 2**70]]


# Index errors that are not an index value out of range: the exact type torch raises.
OTHER_INDEX_ERRORS = [
    ("too many indices", lambda lib, x: x[0, 0, T(lib, [0])]),
    ("index tensors that do not broadcast", lambda lib, x: x[T(lib, [0, 1]), T(lib, [0, 1, 2])]),
    ("the mask's shape", lambda lib, x: x[T(lib, [True, False])]),
    ("a float index", lambda lib, x: x[T(lib, [0.0])]),
    ("an index of a 0-dim tensor", lambda lib, x: x[0, 0][0]),
    ("index_select's dim", lambda lib, x: x.index_select(2, T(lib, [0]))),
    ("set with too many indices", lambda lib, x: set_(x, (0, 0, T(lib, [0])), 1.0)),
    ("set with the mask's shape", lambda lib, x: set_(x, T(lib, [True, False]), 1.0)),
]


@pytest.mark.parametrize("call", OTHER_INDEX_ERRORS, ids=[c[0] for c in OTHER_INDEX_ERRORS])
def test_other_index_errors_keep_torchs_type(call):
    name, fn = call
    xt, _, et = run(torch, lambda lib, x, i: fn(lib, x), 0)
    xm, _, em = run(mg, lambda lib, x, i: fn(lib, x), 0)
    assert et is not None and em is not None, (name, et, em)
    assert type(em) is type(et), f"{name}: torch {et!r}, mutagrad {em!r}"
    assert_unchanged(xm, name)


# ---- x[idx] = v and dtypes ----------------------------------------------------------------------

X_DTYPES = ["int64", "int32", "float32", "float64", "bool"]
INDICES = {
    "tensor": lambda lib: T(lib, [1, 2]),
    "mask": lambda lib: T(lib, [True, False, True, False]),
    "[:, tensor]": lambda lib: (slice(None), T(lib, [0, 1])),
    "[tensor, None]": lambda lib: (T(lib, [1, 2]), None),
    "(True,)": lambda lib: (True,),
    "True": lambda lib: True,
    "slice": lambda lib: slice(1, 3),
    "tensor(1)": lambda lib: T(lib, 1),
}
VALUES = {  # (the value's dtype or None for a number, how to make it from a shape)
    "float32 tensor": lambda lib, shape: lib.full(shape, 1.5, dtype=lib.float32),
    "float64 tensor": lambda lib, shape: lib.full(shape, 2.5, dtype=lib.float64),
    "int64 tensor": lambda lib, shape: lib.full(shape, 7, dtype=lib.int64),
    "int32 tensor": lambda lib, shape: lib.full(shape, 7, dtype=lib.int32),
    "bool tensor": lambda lib, shape: lib.full(shape, True, dtype=lib.bool),
    "float64 0-dim": lambda lib, shape: lib.tensor(1.5, dtype=lib.float64),
    "int64 [1]": lambda lib, shape: lib.tensor([7]),
    "float32 [1]": lambda lib, shape: lib.tensor([1.5]),
    "float": lambda lib, shape: 1.5,
    "int": lambda lib, shape: 7,
}


def write(lib, x_dtype, index, value, requires_grad=False):
    """x of 4 x 2 (rows 0..3): (x, outcome) of x[index] = value."""
    x = lib.arange(8).reshape(4, 2).to(getattr(lib, x_dtype))
    if requires_grad:
        x = x.requires_grad_() * 1
    x = dev(lib, x)
    idx = INDICES[index](lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shape = tuple(x[idx].shape)
    v = VALUES[value](lib, shape)
    if isinstance(v, (torch.Tensor, mg.Tensor)):
        if requires_grad and v.is_floating_point():
            v.requires_grad_()
        if v.numel() != 1:  # one-element values stay on the CPU (torch's CPU paths)
            v = dev(lib, v)
    try:
        x[idx] = v
        return x, None
    except Exception as e:  # noqa: BLE001
        return x, e


@pytest.mark.parametrize("x_dtype", X_DTYPES)
@pytest.mark.parametrize("index", list(INDICES))
def test_setitem_dtypes_match_torch(x_dtype, index):
    for value in VALUES:
        what = f"{x_dtype} x[{index}] = {value}"
        xt, et = write(torch, x_dtype, index, value)
        xm, em = write(mg, x_dtype, index, value)
        if et is None:
            assert em is None, f"{what}: torch wrote, mutagrad raised {em!r}"
            assert numpy_of(xm).tolist() == numpy_of(xt).tolist(), what
            assert xm._version == xt._version == 1, what
        else:
            assert type(em) is type(et), f"{what}: torch {et!r}, mutagrad {em!r}"
            assert "Index put requires the source and destination dtypes match" in str(em), \
                f"{what}: {em}"
            assert numpy_of(xm).tolist() == np.arange(8).reshape(4, 2).astype(x_dtype).tolist()
            assert xm._version == 0, what


@pytest.mark.parametrize("index", ["tensor", "mask", "(True,)", "True", "slice"])
def test_setitem_dtypes_under_autograd_match_torch(index):
    for value in ("float64 tensor", "float64 0-dim", "float32 [1]", "int64 tensor", "float"):
        what = f"float32 x[{index}] = {value} with grad"
        xt, et = write(torch, "float32", index, value, requires_grad=True)
        xm, em = write(mg, "float32", index, value, requires_grad=True)
        assert (et is None) == (em is None), f"{what}: torch {et!r}, mutagrad {em!r}"
        if et is None:
            assert numpy_of(xm).tolist() == numpy_of(xt).tolist(), what
        else:
            assert type(em) is type(et), f"{what}: torch {et!r}, mutagrad {em!r}"
            assert xm._version == 0, what


def test_index_put_refuses_another_dtype_as_torch():
    for lib in (torch, mg):
        for accumulate in (False, True):
            x = dev(lib, lib.arange(4))
            with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                                   "dtypes match, got Long for the destination and "
                                                   "Float for the source"):
                x.index_put_((T(lib, [1, 2]),), T(lib, [1.5, 2.5]), accumulate=accumulate)
            assert x.tolist() == [0, 1, 2, 3] and x._version == 0
