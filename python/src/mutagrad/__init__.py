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
    split,
    index_select,
    index_add,
    index_copy,
    index_fill,
    gather,
    scatter,
    scatter_add,
    scatter_reduce,
    take,
    put,
    masked_select,
    masked_scatter,
    IntOverflowError,
    IndexOverflowError,
)
from mutagrad._types import Size, device  # noqa: F401
from mutagrad.grad_mode import no_grad, enable_grad, set_grad_enabled  # noqa: F401
from mutagrad import autograd, cuda, return_types  # noqa: F401
from mutagrad import _conveniences
from mutagrad._conveniences import (  # noqa: F401  (re-exported API)
    as_tensor,
    can_cast,
    finfo,
    get_default_dtype,
    iinfo,
    is_floating_point,
    moveaxis,
    movedim,
    nonzero,
    promote_types,
    result_type,
    set_default_dtype,
    swapaxes,
    swapdims,
    where,
    # These accept NumPy's axis= / keepdims= too, as torch's.
    numpy_sum as sum,
    numpy_mean as mean,
    numpy_prod as prod,
    numpy_max as max,
    numpy_min as min,
    numpy_argmax as argmax,
    numpy_argmin as argmin,
    numpy_cat as cat,
    numpy_stack as stack,
    numpy_unbind as unbind,
    numpy_chunk as chunk,
)

# Tensor methods and properties written in Python (_conveniences.py): __format__, .data's
# setter, new_*, mT/mH/H, movedim, nonzero, type(), axis=/keepdims=, ...
_conveniences.install()


def is_tensor(obj):
    """Whether obj is a mutagrad Tensor."""
    return isinstance(obj, Tensor)

