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
    float16,
    bfloat16,
    uint8,
    int8,
    int16,
    int32,
    int64,
    bool,
    float,
    double,
    half,
    short,
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
    rsqrt,
    exp2,
    expm1,
    log1p,
    log2,
    log10,
    sign,
    floor,
    ceil,
    trunc,
    fix,
    frac,
    round,
    nan_to_num,
    isnan,
    isinf,
    isfinite,
    bitwise_not,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    bitwise_left_shift,
    bitwise_right_shift,
    logical_xor,
    remainder,
    fmod,
    floor_divide,
    divide,
    true_divide,
    cumsum,
    cumprod,
    all,
    any,
    count_nonzero,
    var,
    std,
    norm,
    logsumexp,
    amax,
    amin,
    clamp_min,
    clip,
    clamp_max,
    isclose,
    allclose,
    equal,
    mm,
    bmm,
    mv,
    dot,
    inner,
    outer,
    ger,
    addmm,
    einsum,
    flip,
    fliplr,
    flipud,
    roll,
    tile,
    tril,
    triu,
    diag,
    diag_embed,
    eye,
    linspace,
    logspace,
    IntOverflowError,
    IndexOverflowError,
    IndexOutOfRangeError,
)
from mutagrad._types import Size, device  # noqa: F401
from mutagrad.grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: F401,E501
from mutagrad._C import is_inference_mode_enabled  # noqa: F401
from mutagrad import autograd, backends, cuda, return_types  # noqa: F401
from mutagrad import optim  # noqa: F401  (SGD, Adam, AdamW, RMSprop)
from mutagrad._C import addcmul, addcdiv, lerp  # noqa: F401  (bindings_optim.cc)
from mutagrad import nn  # noqa: F401  (nn.functional, nn.init)
from mutagrad import utils  # noqa: F401  (utils.data: Dataset, DataLoader, ...)
from mutagrad._C import (  # noqa: F401  (random ops and generators: python/bindings_random.cc)
    Generator,
    default_generator,
    randperm,
    normal,
    bernoulli,
    multinomial,
    randint_like,
)
from mutagrad import random  # noqa: F401
from mutagrad import testing  # noqa: F401  (assert_close, make_tensor)
from mutagrad import safetensors  # noqa: F401  (save_file, load_file, safe_open)
from mutagrad import func  # noqa: F401  (capture, functionalize: docs/functionalization.md)
from mutagrad.serialization import save, load  # noqa: F401  (docs/checkpoints.md)
from mutagrad.random import seed, initial_seed, get_rng_state, set_rng_state  # noqa: F401
from mutagrad._C import softmax, log_softmax  # noqa: F401
from mutagrad._C import (  # noqa: F401  (convolutions: python/bindings_nn.cc)
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    convolution,
)
from mutagrad._C import (  # noqa: F401  (sorting and search: python/bindings_sort.cc)
    sort,
    argsort,
    msort,
    topk,
    kthvalue,
    unique,
    bincount,
    searchsorted,
)
from mutagrad._C import (  # noqa: F401  (special functions: python/bindings_math.cc)
    tan,
    erf,
    erfinv,
    lgamma,
    digamma,
    polygamma,
    reciprocal,
    square,
    atan2,
    arctan2,
    # torch's module-level in-place forms
    relu_,
    sigmoid_,
    tanh_,
    exp_,
    neg_,
    abs_,
    sqrt_,
    sin_,
    cos_,
    tan_,
    erf_,
    reciprocal_,
    square_,
    clamp_,
    clip_,
)
from mutagrad._C import (  # noqa: F401  (views and composites: python/bindings_shape.cc)
    unflatten,
    trace,
    repeat_interleave,
    kron,
    cross,
    cdist,
    meshgrid,
)
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
from mutagrad import _api_extras  # noqa: E402
from mutagrad._api_extras import (  # noqa: F401,E402  (composites of existing ops)
    var_mean,
    std_mean,
    split_with_sizes,
    unsafe_split,
    unsafe_split_with_sizes,
    unsafe_chunk,
    set_printoptions,
    broadcast_shapes,
    broadcast_tensors,
)

_api_extras.install()

# version.bzl's string, compiled into the extension (mutagrad::version()), as the wheel's.
__version__ = _C.__version__


def is_tensor(obj):
    """Whether obj is a mutagrad Tensor."""
    return isinstance(obj, Tensor)


# out= on the module functions torch offers it for (_out.py): last, so that it wraps the final
# binding of each name.
from mutagrad import _out  # noqa: E402

_out.install(globals())
