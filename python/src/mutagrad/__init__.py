"""mutagrad: tensors with an autograd-aware mutation engine, with torch's names.

    import mutagrad as mg
    x = mg.zeros(3, 4, requires_grad=True)
    y = (x * 2).sum()
    y.backward()

The same script runs with ``import torch as lib`` or ``import mutagrad as lib`` for
everything mutagrad implements. All semantics live in C++ (``mutagrad._C``); this package
only arranges the names.
"""

from mutagrad import _C
from mutagrad._C import (  # noqa: F401  (re-exported API)
    Tensor,
    dtype,
    float32,
    float64,
    int32,
    int64,
    bool,
    float,
    double,
    int,
    long,
    tensor,
    zeros,
    ones,
    full,
    empty,
    arange,
    zeros_like,
    ones_like,
    full_like,
    empty_like,
    rand,
    randn,
    randint,
    manual_seed,
    from_numpy,
    where,
    matmul,
    add,
    sub,
    mul,
    div,
    pow,
    neg,
    abs,
    exp,
    log,
    sqrt,
    sin,
    cos,
    tanh,
    sigmoid,
    relu,
    maximum,
    minimum,
    clamp,
    sum,
    mean,
    prod,
    max,
    min,
    argmax,
    argmin,
    reshape,
    view_as,
    transpose,
    permute,
    unsqueeze,
    squeeze,
    narrow,
    select,
    flatten,
    diagonal,
    masked_fill,
    index_put,
    contiguous,
    detach,
    clone,
    t,
    cat,
    stack,
    rand_like,
    randn_like,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    logical_and,
    logical_or,
    logical_not,
    is_grad_enabled,
    numel,
    unbind,
    split,
    chunk,
    IntOverflowError,
    IndexOverflowError,
)
from mutagrad._types import Size, device  # noqa: F401
from mutagrad.grad_mode import no_grad, enable_grad, set_grad_enabled  # noqa: F401
from mutagrad import autograd, cuda, return_types  # noqa: F401


def is_tensor(obj):
    """Whether obj is a mutagrad Tensor."""
    return isinstance(obj, Tensor)

