"""mutagrad.testing: assert_close and make_tensor, with torch 1.13's rules and messages.

    mutagrad.testing.assert_close(y, expected)            # dtype-based default tolerances
    mutagrad.testing.assert_close([a, b], [c, d], rtol=0, atol=0)
    x = mutagrad.testing.make_tensor((3, 4), dtype=mutagrad.float32, device="cpu", low=-1, high=1)

assert_close raises AssertionError with torch's message ("Tensor-likes are not close!",
mismatched elements, greatest absolute and relative differences with their indices), compares
sequences and mappings element by element (naming the failing item) and Python scalars.
"""

import collections.abc
import math

from mutagrad import _C

__all__ = ["assert_close", "make_tensor"]

# {dtype: (rtol, atol)}: torch's defaults; other dtypes (integers, bool) compare exactly.
_DTYPE_PRECISIONS = {
    _C.float16: (0.001, 1e-5),
    _C.bfloat16: (0.016, 1e-5),
    _C.float32: (1.3e-6, 1e-5),
    _C.float64: (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: _C.int64, float: _C.float64}


class _Failure(Exception):
    """A comparison failure: the exception type, the message, and the id of the failing item."""

    def __init__(self, type_, msg, id_=()):
        super().__init__(msg)
        self.type = type_
        self.msg = msg
        self.id = id_

    def to_error(self, msg):
        if isinstance(msg, str):
            return self.type(msg)
        generated = self.msg
        if self.id:
            generated += "\n\nThe failure occurred for item " + "".join(
                str([item]) for item in self.id)
        return self.type(msg(generated) if callable(msg) else generated)


def _tolerances(dtypes, rtol, atol, id_):
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError,
                       f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                       f"{'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        if idx is None:
            msg = f"{kind.title()} difference: {diff}"
        else:
            msg = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _divide(a, b):
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.inf
    return a / b


def _scalar_mismatch_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", None, abs_diff, None, atol, rel_diff, None, rtol)


def _isclose(a, b, rtol, atol, equal_nan):
    if a == b:
        return True
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return equal_nan and math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return False
    return abs(a - b) <= atol + rtol * abs(b)


def _greatest(values):
    """(value, flat index) of the maximum, NaN winning as torch.max's does."""
    best, best_idx = values[0], 0
    for k, v in enumerate(values):
        if isinstance(best, float) and math.isnan(best):
            break
        if (isinstance(v, float) and math.isnan(v)) or v > best:
            best, best_idx = v, k
    return best, best_idx


def _unravel(flat, shape):
    idx = []
    for size in reversed(shape):
        flat, mod = divmod(flat, size)
        idx.append(mod)
    return tuple(reversed(idx))


def _values(t, dtype):
    return t.detach().cpu().to(dtype).reshape(-1).tolist()


def _compare_tensors(actual, expected, id_, rtol, atol, equal_nan, check_device, check_dtype,
                     check_stride):
    def mismatch(name, a, e):
        raise _Failure(AssertionError,
                       f"The values for attribute '{name}' do not match: {a} != {e}.", id_)

    if tuple(actual.shape) != tuple(expected.shape):
        mismatch("shape", actual.shape, expected.shape)
    if check_stride and tuple(actual.stride()) != tuple(expected.stride()):
        mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)
    rtol, atol = _tolerances([actual.dtype, expected.dtype], rtol, atol, id_)
    floating = actual.is_floating_point() or expected.is_floating_point()
    # Both promoted to their common dtype first (as torch), then compared in float64 or int64.
    if actual.dtype != expected.dtype:
        import mutagrad
        common = mutagrad.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    dtype = _C.float64 if floating else _C.int64
    a, e = _values(actual, dtype), _values(expected, dtype)
    mismatches = [not _isclose(x, y, rtol, atol, equal_nan) for x, y in zip(a, e)]
    if not any(mismatches):
        return
    if len(actual.shape) == 0:
        raise _Failure(AssertionError, _scalar_mismatch_msg(a[0], e[0], rtol, atol), id_)
    total = sum(mismatches)
    extra = f"Mismatched elements: {total} / {len(a)} ({total / len(a):.1%})"
    abs_diff = [abs(x - y) if bad else (0.0 if floating else 0)
                for x, y, bad in zip(a, e, mismatches)]
    rel_diff = [_divide(d, abs(y)) if bad else 0.0 for d, y, bad in zip(abs_diff, e, mismatches)]
    max_abs, abs_idx = _greatest(abs_diff)
    max_rel, rel_idx = _greatest(rel_diff)
    shape = tuple(actual.shape)
    raise _Failure(AssertionError,
                   _mismatch_msg("Tensor-likes", extra, max_abs, _unravel(abs_idx, shape), atol,
                                 max_rel, _unravel(rel_idx, shape), rtol), id_)


def _compare_numbers(actual, expected, id_, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError,
                       f"The (d)types do not match: {type(actual)} != {type(expected)}.", id_)
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(v)] for v in (actual, expected)], rtol, atol,
                             id_)
    if actual == expected:
        return
    if equal_nan and math.isnan(actual) and math.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if math.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id_)


def _compare(actual, expected, id_, options):
    is_seq = (lambda x: isinstance(x, collections.abc.Sequence) and not isinstance(x, str))
    if is_seq(actual) and is_seq(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} "
                           f"!= {len(expected)}", id_)
        for k in range(len(actual)):
            _compare(actual[k], expected[k], (*id_, k), options)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected,
                                                                  collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Failure(AssertionError, (
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}"),
                id_)
        keys = actual_keys
        try:
            keys = sorted(keys)
        except Exception:  # noqa: BLE001  (unorderable keys keep the set's order, as torch)
            pass
        for key in keys:
            _compare(actual[key], expected[key], (*id_, key), options)
        return
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", id_)
        return
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id_)
        return
    number = (int, float)
    if (isinstance(actual, number) and not isinstance(actual, bool)
            and isinstance(expected, number) and not isinstance(expected, bool)):
        _compare_numbers(actual, expected, id_, options["rtol"], options["atol"],
                         options["equal_nan"], options["check_dtype"])
        return
    if isinstance(actual, _C.Tensor) and isinstance(expected, _C.Tensor):
        _compare_tensors(actual, expected, id_, **options)
        return
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                   f"{type(actual)} and {type(expected)}.", id_)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Asserts that `actual` and `expected` are close, as torch.testing.assert_close (1.13):
    tensors need the same shape (and device, dtype, and with check_stride strides) and
    |actual - expected| <= atol + rtol * |expected| elementwise, with per-dtype defaults when
    rtol and atol are both omitted (float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32
    1.3e-6/1e-5, float64 1e-7/1e-7, integers and bool exact). Sequences and mappings compare
    element by element, Python numbers, bools and None too. Raises AssertionError with torch's
    message (or `msg`: a string, or a callable given the generated message); TypeError for
    inputs that cannot be compared; ValueError when only one of rtol and atol is given."""
    del allow_subclasses, check_layout  # one tensor class and one (strided) layout
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error(msg) from None


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False):
    """A tensor of `shape` filled with uniform random values in [low, high) (torch's defaults:
    [-9, 9] for floating and signed types, [0, 10) for uint8, random bools for bool), as
    torch.testing.make_tensor. noncontiguous gives every other element of a larger buffer;
    exclude_zero replaces zeros by the dtype's smallest positive step (tiny for floats, 1 for
    integers)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    import mutagrad as mg
    if dtype == _C.bool:
        result = mg.randint(0, 2, shape, device=device).to(_C.bool)
    elif dtype.is_floating_point:
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
        if lo > hi:
            raise ValueError(f"make_tensor: low ({lo}) must not exceed high ({hi})")
        result = (mg.rand(shape, dtype=_C.float64, device=device) * (hi - lo) + lo).to(dtype)
    else:
        lo = (0 if dtype == _C.uint8 else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        if hi <= lo:
            raise ValueError(f"make_tensor: low ({lo}) must be less than high ({hi})")
        result = mg.randint(lo, hi, shape, device=device).to(dtype)
    if noncontiguous and result.numel() > 1:
        result = result.repeat_interleave(2, dim=-1)[..., ::2]
    if exclude_zero:
        step = 1 if not (dtype.is_floating_point) else mg.finfo(dtype).tiny
        result = mg.where(result == 0, mg.full_like(result, step), result)
    if requires_grad:
        result.requires_grad_(True)
    return result
