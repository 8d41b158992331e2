"""out= on the module functions torch offers it for: ``mutagrad.add(a, b, out=o)``.

Each function below is wrapped once at import (``install``): without ``out`` (or with
``out=None``) it is the function itself; with ``out`` it computes the result out of place and
hands it to ``_C._write_out`` (python/bindings_out.cc, autograd/ops/out_ops.h), which checks
torch's rules (no autograd, device, dtype, resize) before changing anything, then writes each
out through the mutation engine (one version bump, this call's file:line). The caller gets
``out`` back (a namedtuple of the outs for sort, topk, max(dim), ...). docs/python.md, "out=".
"""

import functools
import sys

from mutagrad import _C

# Where torch requires out's dtype to be the result's exactly (per output; the others take any
# dtype the result casts to, can_cast): the products, the index outputs, the gathers, and the
# element-wise ops whose result keeps the input's dtype.
_EXACT = {
    "mm", "bmm", "matmul", "addmm", "mv", "dot", "index_select", "gather", "masked_select",
    "take", "tril", "triu", "cross", "amax", "amin", "argmax", "argmin", "neg", "negative",
    "abs", "absolute", "clamp", "clip", "floor", "ceil", "trunc", "fix", "round", "frac",
    "sign", "square", "pow", "bitwise_not",
}
# The functions that return (values, indices): the indices must be int64 (exact).
_PAIRS = {"sort", "topk", "kthvalue", "max", "min", "cummax", "cummin", "median", "mode"}

_NAMES = (
    # element-wise, one input
    "abs", "absolute", "neg", "negative", "exp", "exp2", "expm1", "log", "log2", "log10",
    "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "sqrt", "rsqrt", "reciprocal",
    "square", "sign", "sgn", "floor", "ceil", "trunc", "fix", "frac", "round", "erf", "erfc",
    "erfinv", "lgamma", "digamma", "logical_not", "bitwise_not", "nan_to_num",
    # element-wise, two or more inputs
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
    "float_power", "atan2", "arctan2", "remainder", "fmod", "floor_divide", "maximum", "minimum",
    "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "clamp", "clip",
    "where", "lerp", "addcmul", "addcdiv", "hypot", "xlogy",
    # reductions and scans
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var",
    "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "norm", "median", "mode", "nansum",
    # products
    "mm", "bmm", "matmul", "addmm", "mv", "dot", "outer", "kron", "cross",
    # joining, sorting, indexing
    "cat", "concat", "stack", "hstack", "vstack", "sort", "topk", "kthvalue", "index_select",
    "gather", "masked_select", "take", "tril", "triu",
)


def _exact_flags(name):
    if name in _PAIRS:
        return [False, True]
    return [name in _EXACT]


def _with_out(fn, name):
    exact = _exact_flags(name)

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        caller = sys._getframe(1)
        return _C._write_out(name, result, out, exact, caller.f_code.co_filename,
                             caller.f_lineno)

    return with_out


def install(namespace):
    """Wraps each of _NAMES that namespace (the mutagrad module's globals) defines."""
    for name in _NAMES:
        fn = namespace.get(name)
        if fn is not None and not getattr(fn, "_takes_out", False):
            wrapped = _with_out(fn, name)
            wrapped._takes_out = True
            namespace[name] = wrapped
