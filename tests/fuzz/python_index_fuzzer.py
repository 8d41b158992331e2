"""python_index_fuzzer: atheris drives mutagrad's x[index] and x[index] = value from Python.

    tests/fuzz/run_python_fuzzer.sh -max_total_time=60      # sets up the venv, then runs this

The input decodes to a tensor (any dtype, 0-4 dims, sizes 0-3, transposed, sliced or expanded),
an index built from arbitrary Python objects (ints incl. beyond int64, slices with any bounds
and steps, None, Ellipsis, bools, nested tuples and lists, NumPy arrays and scalars of every
dtype, floats, strings, tensors) and, for a write, a value (a Python scalar, a list, a NumPy
array, a tensor of any shape and dtype). The same expression runs on mutagrad and on torch
1.13. Invariants (an AssertionError is a finding):
  - mutagrad raises only IndexError, TypeError, ValueError, RuntimeError or OverflowError, and
    then the tensor's bytes and _version are unchanged;
  - where torch does not raise, mutagrad gives the same shape, dtype and values (for a write:
    the same whole tensor afterwards), or raises for one of the documented differences
    (docs/indexing.md, "Where mutagrad goes beyond PyTorch 1.13"): writes into an expanded
    tensor are refused.
"""

import atexit
import os
import sys
import warnings

import atheris

with atheris.instrument_imports(include=["mutagrad"]):
    import mutagrad as mg

import numpy as np
import torch

warnings.simplefilter("ignore")
if os.environ.get("MUTAGRAD_FUZZ_STATS"):
    atexit.register(lambda: print("python_index:", STATS, file=sys.stderr))

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32,
             np.uint64, np.float16, np.float32, np.float64, np.complex64, np.object_]
HUGE_INTS = [2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**64, 2**70, -2**70, 2**31, -2**31 - 1]
FLOATS = [0.0, -0.0, 1.5, -2.5, float("nan"), float("inf"), -float("inf"), 1e300, 3.5e38,
          65504.0, 1e-310]
ALLOWED = (IndexError, TypeError, ValueError, RuntimeError, OverflowError)
# Outcome counts, printed at exit when MUTAGRAD_FUZZ_STATS is set.
STATS = {"compared": 0, "both raised": 0, "torch raised only": 0, "documented difference": 0}


class Input:
    def __init__(self, data):
        self.fdp = atheris.FuzzedDataProvider(data)

    def int_in(self, lo, hi):
        return self.fdp.ConsumeIntInRange(lo, hi)

    def chance(self, num, den=256):
        return self.int_in(0, den - 1) < num

    def pick(self, options):
        return options[self.int_in(0, len(options) - 1)]

    def small_or_huge(self):
        if self.chance(224):
            return self.int_in(-5, 5)
        return self.pick(HUGE_INTS)


class Both:
    """An index or value object as each library needs it (tensors differ, the rest is shared)."""

    def __init__(self, for_mg, for_torch):
        self.mg = for_mg
        self.torch = for_torch


def same(obj):
    return Both(obj, obj)


def make_tensor(inp, dtype, max_dim, views=True):
    shape = [inp.int_in(0, 3) for _ in range(inp.int_in(0, max_dim))]
    n = int(np.prod(shape)) if shape else 1
    values = np.array([inp.int_in(-6, 6) * 0.5 for _ in range(n)], dtype=np.float64).reshape(shape)
    t = torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype))
    m = mg.tensor(values, dtype=mg.float64).to(getattr(mg, dtype))
    if views and shape:
        kind = inp.int_in(0, 4)
        if kind == 1 and len(shape) >= 2:
            t, m = t.transpose(0, -1), m.transpose(0, -1)
        elif kind == 2:
            t, m = t[::2], m[::2]
        elif kind == 3 and shape[0] == 1:
            k = inp.int_in(0, 3)
            t = t.expand(k, *shape[1:])
            m = m.expand(k, *shape[1:])
    return Both(m, t)


def make_numpy(inp):
    dtype = inp.pick(NP_DTYPES)
    shape = [inp.int_in(0, 3) for _ in range(inp.int_in(0, 2))]
    n = int(np.prod(shape)) if shape else 1
    vals = [inp.small_or_huge() if inp.chance(16) else inp.int_in(-3, 3) for _ in range(n)]
    try:
        arr = np.array(vals, dtype=np.float64).astype(dtype).reshape(shape)
    except (OverflowError, ValueError, TypeError):
        arr = np.zeros(shape, dtype=dtype)
    if inp.chance(32):
        return same(arr.reshape(()) if arr.size == 1 else arr.dtype.type(0))  # a NumPy scalar
    return same(arr)


def make_index_entry(inp, base_shape, depth):
    kind = inp.int_in(0, 31)
    if kind <= 8:
        return same(inp.small_or_huge() if inp.chance(32) else inp.int_in(-3, 3))
    if kind <= 14:
        def bound():
            return None if inp.chance(64) else inp.small_or_huge()
        step = None if inp.chance(96) else (inp.int_in(-1, 3) if inp.chance(200) else inp.small_or_huge())
        return same(slice(bound(), bound(), step))
    if kind <= 16:
        return same(None)
    if kind == 17:
        return same(Ellipsis)
    if kind <= 19:
        return same(inp.chance(128))
    if kind <= 21 and depth < 2:  # a list (nested sometimes)
        items = [make_index_entry(inp, base_shape, depth + 1) if inp.chance(48)
                 else same(inp.small_or_huge() if inp.chance(200) else inp.chance(128))
                 for _ in range(inp.int_in(0, 4))]
        return Both([i.mg for i in items], [i.torch for i in items])
    if kind <= 23:
        return make_numpy(inp)
    if kind == 24:
        return same(inp.pick(FLOATS) if inp.chance(200) else inp.pick(["a", b"x", 1j, object()]))
    # an index tensor or mask
    dtype = inp.pick(["int64", "int64", "int32", "bool", "bool", "uint8", "float32", "int16"])
    if dtype in ("bool", "uint8") and base_shape and inp.chance(160):
        first = inp.int_in(0, len(base_shape) - 1)
        shape = list(base_shape[first:first + inp.int_in(1, len(base_shape) - first)])
        vals = np.array([inp.int_in(0, 1) for _ in range(int(np.prod(shape)))]).reshape(shape)
    else:
        shape = [inp.int_in(0, 3) for _ in range(inp.int_in(0, 2))]
        vals = np.array([inp.int_in(-4, 4) for _ in range(int(np.prod(shape)) if shape else 1)])
        vals = vals.reshape(shape)
    return Both(mg.tensor(vals, dtype=mg.int64).to(getattr(mg, dtype)),
                torch.tensor(vals, dtype=torch.int64).to(getattr(torch, dtype)))


def make_index(inp, base_shape):
    if inp.chance(64):
        return make_index_entry(inp, base_shape, 0)
    items = [make_index_entry(inp, base_shape, 1) for _ in range(inp.int_in(0, 5))]
    return Both(tuple(i.mg for i in items), tuple(i.torch for i in items))


def make_value(inp):
    kind = inp.int_in(0, 6)
    if kind == 0:
        return same(inp.small_or_huge())
    if kind == 1:
        return same(inp.pick(FLOATS))
    if kind == 2:
        return same(inp.chance(128))
    if kind == 3:
        return make_numpy(inp)
    if kind == 4:
        return same([inp.int_in(-3, 3) for _ in range(inp.int_in(0, 3))])
    if kind == 5:
        return same(inp.pick([None, "a", 1j]))
    return make_tensor(inp, inp.pick(DTYPES), 3, views=False)


def as_array(t):
    """Values as float64 NumPy (bfloat16/float16 widened; nan compared equal)."""
    if t.dtype in (torch.bfloat16, mg.bfloat16, torch.float16, mg.float16):
        t = t.float()
    return np.asarray(t.detach().cpu() if isinstance(t, torch.Tensor) else t.numpy(),
                      dtype=np.float64)


def snapshot(m):
    return (m.clone().to(mg.float64).numpy().copy() if m.dtype != mg.bfloat16
            else m.float().numpy().copy(), m._version)


def check_same(what, got, want):
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} vs torch {tuple(want.shape)}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (
        f"{what}: dtype {got.dtype} vs torch {want.dtype}")
    a, b = as_array(got), as_array(want)
    assert np.array_equal(a, b, equal_nan=True), f"{what}: values\n{a}\nvs torch\n{b}"


def has_float_sequence(obj):
    """Whether an index holds a non-empty float/complex list or array: documented (docs/python.md):
    mutagrad raises IndexError/TypeError where torch truncates it to int64."""
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind == "c" or (obj.dtype.kind == "f" and obj.size > 0)
    if isinstance(obj, (tuple, list)):
        return any(isinstance(o, (float, complex)) or has_float_sequence(o) for o in obj)
    return False


def has_0d_array_in_list(obj, in_list=False):
    """Whether a list in the index holds a 0-d NumPy array: mutagrad raises TypeError (len() of
    unsized object) as torch.tensor([np.array(1)]) does; torch's indexing accepts some of these
    lists (those that start with a tensor: [tensor([True]), np.array(0)] reads as [1, 0])."""
    if isinstance(obj, np.ndarray):
        return in_list and obj.ndim == 0
    if isinstance(obj, (list, tuple)):
        return any(has_0d_array_in_list(o, in_list or isinstance(obj, list)) for o in obj)
    return False


def has_multidim_mask(obj):
    """Whether the index holds a mask of 2+ dims: documented (docs/indexing.md): it covers as
    many dims as it has, where torch 1.13 moved on by one, so the entries after it differ."""
    if isinstance(obj, (np.ndarray, mg.Tensor)):
        return str(obj.dtype).split(".")[-1] in ("bool", "uint8") and obj.ndim >= 2
    if isinstance(obj, (list, tuple)):
        return any(has_multidim_mask(o) for o in obj)
    return False


def has_entries_after_multidim_mask(obj):
    """Whether a tuple index holds a mask of 2+ dims followed by more entries. A k-dim mask
    covers k dims (docs/indexing.md, as torch 2.x); torch 1.13 moved on by one dim, so the
    entries after it address other dims, and a write can succeed there on the wrong elements
    (x[(mask3d, 1)] = v: finding 10 in docs/reliability.md)."""
    if not isinstance(obj, tuple):
        return False
    for k, entry in enumerate(obj):
        if has_multidim_mask(entry) and k + 1 < len(obj):
            return True
    return False


def has_mask_array_not_1d(obj):
    """Whether the index holds a bool/uint8 NumPy array that is not 1-d. torch 1.13 counts any
    array as one dim when it expands an Ellipsis or counts indices, then uses a bool/uint8 one as
    a mask of its own dims: x[(np.array(253, np.uint8), ..., -1)] is x[:, -1][None] in torch but
    x[..., -1][None] with the same tensor; mutagrad treats the array as that tensor."""
    if isinstance(obj, np.ndarray):
        return obj.dtype in (np.bool_, np.uint8) and obj.ndim != 1
    if isinstance(obj, (list, tuple)):
        return any(has_mask_array_not_1d(o) for o in obj)
    return False


def is_complex(v):
    return isinstance(v, complex) or (isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind == "c")


def is_expanded(t):
    return any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape))


def documented_refusal(index, value, t, mg_error, write):
    """Whether mutagrad's error where torch succeeds is a documented difference."""
    if write and is_expanded(t):
        return True  # docs/indexing.md: mutagrad refuses writes into expanded tensors
    if has_float_sequence(index.mg) and isinstance(mg_error, (IndexError, TypeError)):
        return True  # docs/python.md: a float array or list is no index
    if write and is_complex(value.mg) and isinstance(mg_error, TypeError):
        return True  # docs/python.md: no complex dtypes
    if has_0d_array_in_list(index.mg) and isinstance(mg_error, TypeError):
        return True
    if has_multidim_mask(index.mg) and isinstance(mg_error, IndexError):
        return True  # docs/indexing.md: a k-dim mask covers k dims
    if isinstance(mg_error, (TypeError, ValueError)) and "rectangular" in str(mg_error):
        return True  # torch 1.13 reads [[], 1, 2] as shape (3, 0): it skips the rest of a ragged list
    if write and t.dim() == 0 and isinstance(index.torch, slice):
        return True  # torch 1.13 reads sizes()[0] of a 0-dim tensor (x[:0] = v writes x)
    return False


def TestOneInput(data):
    inp = Input(data)
    base = make_tensor(inp, inp.pick(DTYPES), 4)
    index = make_index(inp, list(base.torch.shape))
    write = inp.chance(128)
    value = make_value(inp) if write else None
    m, t = base.mg, base.torch
    before = snapshot(m)
    what = f"x{'[' + repr(index.torch) + ']'} on {tuple(t.shape)} {t.dtype}" + (
        f" = {value.torch!r}" if write else "")
    mg_error = None
    try:
        if write:
            m[index.mg] = value.mg
            got = m
        else:
            got = m[index.mg]
    except ALLOWED as e:
        mg_error = e
    except Exception as e:  # noqa: BLE001 - any other type is a finding
        raise AssertionError(f"{what}: mutagrad raised {type(e).__name__}: {e}") from e
    if mg_error is not None:
        after = snapshot(m)
        assert np.array_equal(after[0], before[0], equal_nan=True), f"{what}: wrote before raising {mg_error!r}"
        assert after[1] == before[1], f"{what}: bumped _version before raising {mg_error!r}"
    try:
        if write:
            t[index.torch] = value.torch
            want = t
        else:
            want = t[index.torch]
    except Exception:  # torch refuses: nothing to compare with
        STATS["both raised" if mg_error is not None else "torch raised only"] += 1
        return
    if (has_mask_array_not_1d(index.mg) or has_entries_after_multidim_mask(index.mg)
            or any(n < 0 for n in want.shape)):
        # (torch 1.13 computes a negative size for x[::2**63 - 1] after a slice with bounds
        # beyond int64: shape (-1, 0, 0) where mutagrad gives (1, 0, 0))
        STATS["documented difference"] += 1
        return
    if mg_error is not None:
        if not documented_refusal(index, value, t, mg_error, write):
            raise AssertionError(f"{what}: mutagrad raised {type(mg_error).__name__}: {mg_error}; "
                                 f"torch gives {tuple(want.shape)}")
        STATS["documented difference"] += 1
        return
    check_same(what, got, want)
    STATS["compared"] += 1


def main():
    # Coverage of this file's decisions guides the fuzzer (the extension itself is not
    # instrumented): instrument every function defined here.
    module = sys.modules[__name__]
    for name, obj in list(vars(module).items()):
        if callable(obj) and getattr(obj, "__module__", None) == __name__ and name != "main":
            if isinstance(obj, type):
                for attr, fn in list(vars(obj).items()):
                    if callable(fn):
                        setattr(obj, attr, atheris.instrument_func(fn))
            else:
                setattr(module, name, atheris.instrument_func(obj))
    atheris.Setup(sys.argv, module.TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
