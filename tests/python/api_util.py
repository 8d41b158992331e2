"""Shared helpers of the api_*_test.py files: run one scenario with `lib = torch` and with
`lib = mutagrad` and compare what came out.

    same_ok(lambda lib: lib.zeros(2, 3).t().contiguous())      # both succeed, same results
    assert same_outcome(lambda lib: lib.ones(2)[5]) == "IndexError"
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import same_kind

LIBS = pytest.mark.parametrize("lib", [torch, mg], ids=["torch", "mutagrad"])


def dtype_name(x):
    """'float32', ... for a torch/mutagrad tensor or dtype."""
    d = x.dtype if hasattr(x, "dtype") and not isinstance(x, (torch.dtype, mg.dtype)) else x
    return str(d).rsplit(".", 1)[-1]


def is_tensor(x):
    return isinstance(x, (torch.Tensor, mg.Tensor))


def same(t, m, tol=None, path="result"):
    """Walks a torch result `t` and a mutagrad result `m` in step: tensors agree in type, shape,
    dtype and values (exactly, or within tol); containers agree in type and length."""
    if is_tensor(t):
        assert isinstance(t, torch.Tensor) and isinstance(m, mg.Tensor), \
            f"{path}: {type(t).__name__} vs {type(m).__name__}"
        assert tuple(m.shape) == tuple(t.shape), f"{path}: shape {tuple(m.shape)} vs {tuple(t.shape)}"
        assert dtype_name(m) == dtype_name(t), f"{path}: dtype {m.dtype} vs {t.dtype}"
        a = np.asarray(m.detach().tolist(), dtype=np.float64)
        b = np.asarray(t.detach().tolist(), dtype=np.float64)
        if tol is None:
            assert np.array_equal(a, b, equal_nan=True), f"{path}: {m} vs {t}"
        else:
            assert np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True), f"{path}: {m} vs {t}"
    elif isinstance(t, (tuple, list)):
        assert isinstance(m, tuple) == isinstance(t, tuple) and \
            isinstance(m, list) == isinstance(t, list) and type(m).__name__ == type(t).__name__, \
            f"{path}: {type(t).__name__} vs {type(m).__name__}"
        assert len(m) == len(t), f"{path}: length {len(m)} vs {len(t)}"
        for i, (a, b) in enumerate(zip(t, m)):
            same(a, b, tol, f"{path}[{i}]")
    elif isinstance(t, (torch.dtype, mg.dtype)):
        assert dtype_name(t) == dtype_name(m), f"{path}: {m} vs {t}"
    elif isinstance(t, float):
        assert isinstance(m, float), f"{path}: {m!r} vs {t!r}"
        assert m == pytest.approx(t, rel=tol or 0, abs=tol or 0, nan_ok=True), f"{path}: {m} vs {t}"
    else:
        assert type(m) is type(t) and m == t, f"{path}: {m!r} vs {t!r}"


def outcome(fn, lib):
    """('ok', value) or (exception type name, message)."""
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the kind is the outcome
        return type(e).__name__, str(e)


def same_ok(fn, tol=None):
    """Both libraries run fn without error and give the same results."""
    assert same_outcome(fn, tol) == "ok"


def same_outcome(fn, tol=None):
    kt, vt = outcome(fn, torch)
    km, vm = outcome(fn, mg)
    assert same_kind(kt, km), f"torch: {kt} {vt if kt != 'ok' else ''}\nmutagrad: {km} {vm if km != 'ok' else ''}"
    if kt == "ok":
        same(vt, vm, tol)
    return kt
