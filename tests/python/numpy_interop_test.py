"""NumPy interop against torch 1.13 (the oracle), issue 20 item 6.

Every path that reads NumPy memory honours the dtype's byte order (a non-native array raises
ValueError in tensor(), from_numpy() and as an index, as torch does; lists of arrays and NumPy
scalars are read by value), unsupported dtypes raise TypeError, and NumPy's protocols work as
torch's: np.array(t) / np.asarray(t) (__array__), a NumPy scalar or array on the left of an
operator (__array_priority__), ufuncs (__array_wrap__), and iteration / len() of 0-d tensors.

Each case runs with `lib = torch` and `lib = mutagrad` and compares what came out: the same
values and dtype, or the same exception type.
"""

import operator

import numpy as np
import pytest
import torch

import mutagrad as mg
from api_util import LIBS, outcome, same, same_ok, same_outcome

pytestmark = [
    pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays"),
    pytest.mark.filterwarnings("ignore:In future, it will be an error for 'np.bool_'"),
]

DTYPES = ["<f4", ">f4", "<f8", ">f8", "<i4", ">i4", "<i8", ">i8", "|b1"]
SCALAR_TYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def values(dtype, n):
    """n values of a NumPy dtype: negatives, zero and fractions where the kind has them."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return np.arange(n) % 3 == 0
    if kind == "f":
        return np.arange(n) * 1.25 - 3.5
    return (np.arange(n) * 5) % 7 - 2


def layouts(dtype):
    """Arrays of one dtype in every layout: contiguous (1-d, 2-d), transposed, strided,
    negative-stride, 0-d and empty."""
    base = values(dtype, 12).astype(dtype)
    return {
        "1d": base[:6].copy(),
        "2d": base.reshape(3, 4).copy(),
        "transposed": base.reshape(3, 4).T,
        "strided": base.reshape(3, 4)[:, ::2],
        "negative-stride": base[::-1],
        "negative-stride-2d": base.reshape(3, 4)[::-1, 1:],
        "0d": np.array(base[1], dtype=dtype),
        "empty": base[:0],
    }


CASES = [(d, name) for d in DTYPES for name in layouts(d)]


def array_of(dtype, layout):
    a = layouts(dtype)[layout]
    assert a.dtype == np.dtype(dtype), "the layout keeps the byte order"
    return a


# Every entry point that takes a NumPy array (or its elements).
ARRAY_ENTRY_POINTS = {
    "tensor": lambda lib, a: lib.tensor(a),
    "tensor(dtype=float64)": lambda lib, a: lib.tensor(a, dtype=lib.float64),
    "tensor(dtype=int32)": lambda lib, a: lib.tensor(a, dtype=lib.int32),
    "from_numpy": lambda lib, a: lib.from_numpy(a),
    "from_numpy values": lambda lib, a: lib.from_numpy(a).clone(),
    "tensor([a, a])": lambda lib, a: lib.tensor([a, a]),
    "tensor(list(a))": lambda lib, a: lib.tensor(list(a)),
    "tensor([a[i] scalars])": lambda lib, a: lib.tensor([a.flat[i] for i in range(a.size)]),
    "index": lambda lib, a: index_with(lib, a),
}


def index_with(lib, a):
    """a as an index, read as torch reads it: a bool array as a mask of a tensor of its shape; an
    array of up to 1 dim as an index tensor into 8 values; a 2-d one (fewer than 32 rows) as the
    tuple of its rows, each an index tensor into one of 4 dims. The values are in [-2, 5]."""
    if a.dtype.kind == "b":
        # A 0-d mask of a 1-d tensor: torch 1.13 refuses a 0-d bool array (not a 0-d bool
        # tensor) on a 0-d tensor, a quirk we don't copy.
        return lib.arange(max(a.size, 3)).reshape(a.shape or (3,))[a]
    if a.ndim <= 1:
        return lib.arange(8)[a]
    return lib.arange(8 ** 4).reshape(8, 8, 8, 8)[a]


# Where mutagrad differs on purpose (docs/python.md): tensor() and indices copy an array with
# negative strides, where torch raises ValueError; and a float array is no index (IndexError),
# where torch truncates its values to int64.
COPIES_NEGATIVE_STRIDES = {"tensor", "tensor(dtype=float64)", "tensor(dtype=int32)", "index"}


@pytest.mark.parametrize("entry", list(ARRAY_ENTRY_POINTS), ids=list(ARRAY_ENTRY_POINTS))
@pytest.mark.parametrize("dtype,layout", CASES, ids=[f"{d}-{n}" for d, n in CASES])
def test_every_dtype_byte_order_and_layout_through_every_entry_point(dtype, layout, entry):
    """mutagrad == torch: the same values and dtype, or the same exception type."""
    a = array_of(dtype, layout)
    before = a.copy()
    fn = ARRAY_ENTRY_POINTS[entry]
    oracle = a
    kind, message = outcome(lambda lib: fn(lib, a), torch)
    if entry == "index" and a.dtype.kind == "f" and a.size > 0 and a.dtype.isnative:
        with pytest.raises(IndexError, match="tensors used as indices must be long"):
            fn(mg, a)
        return
    if kind == "ValueError" and "negative" in message and entry in COPIES_NEGATIVE_STRIDES:
        oracle = a.copy()
    kt, vt = outcome(lambda lib: fn(lib, oracle), torch)
    km, vm = outcome(lambda lib: fn(lib, a), mg)
    assert km == kt, f"torch: {kt} {vt if kt != 'ok' else ''}\nmutagrad: {km} {vm if km != 'ok' else ''}"
    if kt == "ok":
        same(vt, vm)
    assert np.array_equal(a, before), "reading an array never changes it"
    if not a.dtype.isnative and entry in ("tensor", "from_numpy"):
        assert km == "ValueError" and "byte order" in vm  # never misread as native


@pytest.mark.parametrize("scalar_type", SCALAR_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_numpy_scalars_of_every_dtype_through_every_entry_point(scalar_type, byteorder):
    """NumPy scalars, including ones read out of non-native arrays (NumPy makes them native)."""
    dtype = np.dtype(scalar_type).newbyteorder(byteorder)
    for value in values(dtype, 3):
        s = np.array(value, dtype=dtype)[()]
        assert type(s) is scalar_type
        for fn in [lambda lib: lib.tensor(s), lambda lib: lib.tensor([s, s]),
                   lambda lib: lib.tensor([s, 1.5]), lambda lib: s * lib.ones(2),
                   lambda lib: lib.ones(2) * s, lambda lib: s + lib.tensor([1, 2]),
                   lambda lib: s * lib.ones(2, dtype=lib.float64), lambda lib: lib.full((2,), s),
                   lambda lib: s - lib.ones(2, requires_grad=True),
                   lambda lib: lib.tensor([True, False]) * s, lambda lib: s < lib.ones(2),
                   lambda lib: lib.arange(8)[s] if s.dtype.kind == "i" else lib.ones(1)]:
            same_outcome(fn)


# ---- the reported repros ---------------------------------------------------------------------

@pytest.mark.parametrize("entry", [lambda lib, a: lib.tensor(a), lambda lib, a: lib.from_numpy(a),
                                   lambda lib, a: lib.tensor(a, dtype=lib.float64),
                                   lambda lib, a: lib.arange(3)[a.astype(">i8")]],
                         ids=["tensor", "from_numpy", "tensor-dtype", "index"])
def test_big_endian_array_raises_value_error_like_torch(entry):
    a = np.array([1.0, 2.0, 3.0], dtype=">f4")
    assert same_outcome(lambda lib: entry(lib, a)) == "ValueError"
    with pytest.raises(ValueError, match="byte order"):
        entry(mg, a)


def test_big_endian_array_converted_first_and_in_lists_reads_its_values():
    a = np.array([1.0, 2.0, 3.0], dtype=">f4")
    native = a.astype(a.dtype.newbyteorder("="))  # what the error message tells the user
    same_ok(lambda lib: lib.tensor(native))
    assert mg.tensor(native).tolist() == [1.0, 2.0, 3.0]
    same_ok(lambda lib: lib.tensor([a, a]))  # read element by element, as torch
    assert mg.tensor([a, a]).tolist() == [[1.0, 2.0, 3.0]] * 2


@pytest.mark.parametrize("bad", [
    np.array([1, 2], dtype=np.uint32), np.array(["a"]), np.array([1, "a"], dtype=object),
    np.array(["2020-01-01"], dtype="datetime64[D]"),
])
@pytest.mark.parametrize("entry", ["tensor", "from_numpy"])
def test_dtypes_neither_library_has_raise_type_error(bad, entry):
    assert same_outcome(lambda lib: getattr(lib, entry)(bad)) == "TypeError"


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.float16])
@pytest.mark.parametrize("entry", ["tensor", "from_numpy", "element", "list_of_elements",
                                   "numpy_back"])
def test_narrow_dtypes_round_trip_as_torch(dtype, entry):
    """uint8/int8/int16/float16 arrays and scalars become tensors of that dtype, and back."""
    a = np.array([0, 1, 2, 250, 65000][: 4 if dtype != np.float16 else 5]).astype(dtype)
    fns = {
        "tensor": lambda lib: lib.tensor(a),
        "from_numpy": lambda lib: lib.from_numpy(a),
        "element": lambda lib: lib.tensor(a[1]),
        "list_of_elements": lambda lib: lib.tensor([a[1], a[2]]),
        "numpy_back": lambda lib: (str(lib.tensor(a).numpy().dtype), lib.tensor(a).numpy().tolist()),
    }
    assert same_outcome(fns[entry]) == "ok"


def test_bfloat16_to_numpy_raises_type_error_as_torch():
    assert same_outcome(lambda lib: lib.ones(2, dtype=lib.bfloat16).numpy()) == "TypeError"


@pytest.mark.parametrize("entry", ["tensor", "from_numpy"])
def test_complex_raises_type_error_naming_the_dtype(entry):
    """Documented difference: torch has complex64; mutagrad raises TypeError naming it."""
    a = np.ones(2, dtype=np.complex64)
    getattr(torch, entry)(a)
    with pytest.raises(TypeError, match="complex64"):
        getattr(mg, entry)(a)


@pytest.mark.parametrize("scalar", [np.float64(0.1), np.float32(0.1), np.int64(3), np.int32(3),
                                    np.bool_(True)], ids=repr)
@pytest.mark.parametrize("op", [operator.mul, operator.add, operator.sub, operator.truediv,
                                operator.pow, operator.lt, operator.eq], ids=lambda f: f.__name__)
def test_numpy_scalar_on_the_left_gives_a_tensor_like_torch(scalar, op):
    """A tensor where torch gives one (np.bool_ in a comparison is NumPy's own: both refuse)."""
    kind = same_outcome(lambda lib: op(scalar, lib.ones(2)), tol=1e-6)
    assert kind == "ok" or isinstance(scalar, np.bool_)


def test_numpy_scalar_times_tensor_repro():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = np.float64(0.1) * x
        y.sum().backward()
        return y, y.grad_fn.name(), x.grad

    same_ok(run, tol=1e-7)


def test_array_priority_is_torchs():
    assert mg.Tensor.__array_priority__ == torch.Tensor.__array_priority__


TENSORS = {
    "float32": lambda lib: lib.tensor([1.5, -2.0]),
    "float64": lambda lib: lib.tensor([[1.5], [-2.0]], dtype=lib.float64),
    "int32": lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    "int64": lambda lib: lib.arange(6).reshape(2, 3),
    "bool": lambda lib: lib.tensor([True, False]),
    "0-dim": lambda lib: lib.tensor(3.5),
    "transposed": lambda lib: lib.arange(6.0).reshape(2, 3).t(),
    "strided": lambda lib: lib.arange(10)[1::3],
    "empty": lambda lib: lib.zeros(0, 2),
    "detached": lambda lib: (lib.ones(2, requires_grad=True) * 2).detach(),
}


@pytest.mark.parametrize("make", list(TENSORS), ids=list(TENSORS))
@pytest.mark.parametrize("convert", [
    np.array, np.asarray, lambda t: np.array(t, dtype=np.float64),
    lambda t: np.asarray(t, dtype=np.int32), lambda t: np.array(t, copy=True),
    lambda t: np.array([t, t]) if t.dim() == 0 else np.array(t[:1]),
], ids=["array", "asarray", "array-float64", "asarray-int32", "array-copy", "array-of-0dim"])
def test_np_array_of_a_tensor_matches_torch(make, convert):
    t, m = convert(TENSORS[make](torch)), convert(TENSORS[make](mg))
    assert isinstance(m, np.ndarray) and m.dtype == t.dtype and m.dtype != object
    assert m.shape == t.shape and np.array_equal(m, t)


def test_np_asarray_shares_memory_like_torch():
    for lib in (torch, mg):
        x = lib.zeros(3)
        a = np.asarray(x)
        a[1] = 5
        assert x.tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("convert", [np.array, np.asarray, lambda t: np.array(t, dtype=np.float64)])
def test_np_array_of_a_tensor_that_requires_grad_raises_like_torch(convert):
    def run(lib):
        return convert(lib.tensor([1.0, 2.0], requires_grad=True) * 2)

    assert same_outcome(run) == "RuntimeError"
    with pytest.raises(RuntimeError) as theirs:
        run(torch)
    with pytest.raises(RuntimeError) as ours:
        run(mg)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("fn", [
    np.sin, np.exp, lambda t: np.add(np.ones(2), t), lambda t: np.maximum(t, 0),
    lambda t: np.multiply(t, np.float64(2.0)), lambda t: np.sqrt(t * 0 + 4),
], ids=["sin", "exp", "add", "maximum", "multiply", "sqrt"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_ufuncs_give_tensors_like_torch(fn, dtype):
    same_ok(lambda lib: fn(lib.tensor([0.5, 2.0]).to(getattr(lib, dtype))), tol=1e-6)


def test_ufunc_bool_results():
    """Documented difference: torch turns a bool ufunc result into uint8, which mutagrad lacks;
    mutagrad's stays bool."""
    assert torch.from_numpy(np.zeros(1)).dtype == torch.float64
    t, m = np.isnan(torch.ones(2)), np.isnan(mg.ones(2))
    assert t.dtype == torch.uint8 and m.dtype == mg.bool and m.tolist() == [False, False]


# ---- iteration and len() ---------------------------------------------------------------------

@pytest.mark.parametrize("fn", [list, len, iter, tuple, lambda t: [r for r in t],
                                lambda t: next(iter(t))], ids=["list", "len", "iter", "tuple",
                                                               "comprehension", "next"])
def test_0dim_tensor_iteration_and_len_raise_type_error_like_torch(fn):
    assert same_outcome(lambda lib: fn(lib.tensor(1.0))) == "TypeError"
    for lib in (torch, mg):
        with pytest.raises(TypeError, match="0-d tensor"):
            fn(lib.tensor(1.0))


@LIBS
def test_0dim_messages(lib):
    with pytest.raises(TypeError, match="^iteration over a 0-d tensor$"):
        list(lib.tensor(1.0))
    with pytest.raises(TypeError, match="^len\\(\\) of a 0-d tensor$"):
        len(lib.tensor(1.0))


def test_iteration_yields_rows_like_torch():
    def run(lib):
        x = lib.arange(6.0).reshape(3, 2).requires_grad_()
        h = x * 2
        rows = list(h)
        names = [r.grad_fn.name() for r in rows]  # UnbindBackward0: torch iterates unbind(0)
        sum((i + 1) * r.sum() for i, r in enumerate(rows)).backward()
        return rows, names, x.grad, len(h), list(lib.zeros(0, 2)), \
            [list(r) for r in lib.arange(4).reshape(2, 2)]

    same_ok(run)
