"""Shared helpers for the differential tests: run one scenario with `lib = torch` and with
`lib = mutagrad`, and compare what came out (values, shapes, dtypes, exception kinds).

A scenario is a plain function whose first argument is the library module:

    def scenario(lib):
        x = lib.arange(6, dtype=lib.float32).reshape(2, 3)
        x[:, 1] = 5
        return x, x._version

    assert_same_outcome(*run_both(scenario))

It returns any nesting of tuples, lists and dicts of tensors, numbers, strings, bools and None;
`assert_same_value` walks both results in step. An exception is an outcome too: its kind is
the exception class's name ("IndexError", "RuntimeError", ...), which must match.
"""

import math

import numpy as np
import torch

import mutagrad as mg

LIBS = (torch, mg)
DTYPE_NAMES = ("float32", "float64", "int32", "int64", "bool")
FLOAT_DTYPES = ("float32", "float64")


def dtype_name(t):
    """'float32', 'int64', ... for a torch or a mutagrad tensor (or dtype)."""
    d = t.dtype if hasattr(t, "dtype") else t
    return str(d).rsplit(".", 1)[-1]


def dtype_of(lib, name):
    return getattr(lib, name)


def is_tensor(x):
    return isinstance(x, (torch.Tensor, mg.Tensor))


def numpy_of(t):
    """The values of a torch or mutagrad tensor as a (fresh) NumPy array; bfloat16, which NumPy
    lacks, as float32 (exact)."""
    if dtype_name(t) == "bfloat16":
        t = t.float()
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy().copy()
    return np.array(t.detach().cpu().numpy(), copy=True)


def to_torch(m):
    """A torch copy of a mutagrad tensor (same shape, dtype and values)."""
    out = torch.from_numpy(numpy_of(m).reshape(tuple(m.shape)))
    return out.to(torch.bfloat16) if dtype_name(m) == "bfloat16" else out


def from_torch(lib, t):
    """A `lib` copy of a torch tensor: the tensor itself's clone for torch, else via NumPy.
    Shapes with zero sizes survive (mutagrad.tensor([]) would lose them), with contiguous
    strides (NumPy gives empty arrays zero strides)."""
    if lib is torch:
        return t.detach().clone()
    out = mg.from_numpy(numpy_of(t).reshape(-1)).reshape(tuple(t.shape)).clone()
    return out.to(mg.bfloat16) if t.dtype == torch.bfloat16 else out


def _describe(x):
    if is_tensor(x):
        return f"{type(x).__module__}.Tensor(shape={tuple(x.shape)}, dtype={dtype_name(x)})"
    return repr(x)


def assert_tensors_match(m, t, exact=True, rtol=1e-5, atol=1e-6, what="tensor"):
    """m (mutagrad) has t's (torch) shape, dtype and values: bitwise when exact (NaNs equal),
    else allclose(rtol, atol)."""
    assert isinstance(m, mg.Tensor), f"{what}: expected a mutagrad Tensor, got {_describe(m)}"
    assert isinstance(t, torch.Tensor), f"{what}: expected a torch Tensor, got {_describe(t)}"
    assert tuple(m.shape) == tuple(t.shape), \
        f"{what}: mutagrad shape {tuple(m.shape)} != torch shape {tuple(t.shape)}"
    assert dtype_name(m) == dtype_name(t), \
        f"{what}: mutagrad dtype {dtype_name(m)} != torch dtype {dtype_name(t)}"
    a, b = numpy_of(m).reshape(tuple(t.shape)), numpy_of(t)
    if exact or a.dtype.kind not in "fc":
        same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    else:
        same = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    assert same, f"{what}: values differ\nmutagrad: {a.tolist()}\ntorch:    {b.tolist()}"


def assert_same_value(m, t, exact=True, rtol=1e-5, atol=1e-6, what="result"):
    """Walks a mutagrad result and a torch result in step (tuples, lists, dicts, tensors,
    numbers, torch.Size vs tuple)."""
    if isinstance(t, torch.Tensor):
        assert_tensors_match(m, t, exact, rtol, atol, what)
    elif isinstance(t, dict):
        assert isinstance(m, dict) and sorted(m) == sorted(t), f"{what}: keys {m!r} vs {t!r}"
        for k in t:
            assert_same_value(m[k], t[k], exact, rtol, atol, f"{what}[{k!r}]")
    elif isinstance(t, (tuple, list)) and not isinstance(t, torch.Size):
        assert isinstance(m, (tuple, list)) and len(m) == len(t), \
            f"{what}: mutagrad {_describe(m)} vs torch {_describe(t)}"
        for i, (a, b) in enumerate(zip(m, t)):
            assert_same_value(a, b, exact, rtol, atol, f"{what}[{i}]")
    elif isinstance(t, float) and not exact:
        assert isinstance(m, (float, int)) and (
            math.isclose(m, t, rel_tol=rtol, abs_tol=atol) or (math.isnan(m) and math.isnan(t))), \
            f"{what}: mutagrad {m!r} vs torch {t!r}"
    elif isinstance(t, torch.Size):
        assert tuple(m) == tuple(t), f"{what}: mutagrad {m!r} vs torch {tuple(t)!r}"
    else:
        assert type(m) is type(t) and m == t, f"{what}: mutagrad {m!r} vs torch {t!r}"


# mutagrad's exceptions that are two of Python's kinds at once, and those kinds: torch raises
# IndexError for an out-of-range index of x[idx], index_put_, take, put_, index_select, ... and
# RuntimeError for gather and the scatters; mutagrad.IndexOutOfRangeError is both
# (docs/python.md, "Errors").
BOTH_KINDS = {
    "IndexOutOfRangeError": ("IndexError", "RuntimeError"),
    "IndexOverflowError": ("IndexError", "RuntimeError"),
}


def same_kind(torch_kind, mg_kind):
    """Whether mutagrad's outcome kind (an exception class name, or 'ok') is torch's: the same
    name, or one of mutagrad's exceptions that are both of torch's possible kinds."""
    return mg_kind == torch_kind or torch_kind in BOTH_KINDS.get(mg_kind, ())


class Outcome:
    """What running a scenario gave: kind 'ok' with a value, or an exception's class name,
    message and the exception itself."""

    def __init__(self, kind, value=None, message="", error=None):
        self.kind, self.value, self.message, self.error = kind, value, message, error

    @property
    def ok(self):
        return self.kind == "ok"

    def __repr__(self):
        if self.ok:
            return f"ok: {_describe(self.value)}"
        return f"{self.kind}: {self.message}"


def capture(fn, *args, **kwargs):
    """fn(*args, **kwargs) as an Outcome; any Exception is caught."""
    try:
        return Outcome("ok", fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 (every kind is compared)
        return Outcome(type(e).__name__, message=str(e), error=e)


def run_both(scenario, *args, **kwargs):
    """(torch outcome, mutagrad outcome) of scenario(lib, *args, **kwargs)."""
    return capture(scenario, torch, *args, **kwargs), capture(scenario, mg, *args, **kwargs)


def assert_same_outcome(ot, om, exact=True, rtol=1e-5, atol=1e-6, what="scenario"):
    """Both ok with matching values, or both raised the same kind of exception."""
    assert ot.ok == om.ok and same_kind(ot.kind, om.kind), \
        f"{what}: torch gave {ot!r}\nmutagrad gave {om!r}"
    if ot.ok:
        assert_same_value(om.value, ot.value, exact, rtol, atol, what)


def assert_phrases(message, phrases, what="message"):
    """Every phrase occurs in message (the key phrases of torch's text)."""
    missing = [p for p in phrases if p not in message]
    assert not missing, f"{what}: missing {missing!r} in:\n{message}"
