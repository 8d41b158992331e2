"""mutagrad.nn.functional: torch.nn.functional's activations, normalizations, losses and the
other functional ops that nn layers call.

    import mutagrad.nn.functional as F
    loss = F.cross_entropy(model(x), y, weight=w, ignore_index=-1, label_smoothing=0.1)
    probs = F.softmax(logits, dim=1)

The computation and its backward nodes are C++ (autograd/ops/loss_ops.h, activation_ops.h,
nn_ops.h; torch 1.13's node names, every op differentiable twice);
this module adds torch's Python argument handling: the legacy size_average/reduce arguments,
softmax's implicit dim, and the ValueErrors torch raises for a bad reduction or batch size.
"""

import warnings

import mutagrad
from mutagrad import _C
from mutagrad._C import _nn

__all__ = [
    "softmax",
    "log_softmax",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "binary_cross_entropy_with_logits",
    "relu",
    "sigmoid",
    "tanh",
    "linear",
    "dropout",
    "dropout2d",
    "gelu",
    "silu",
    "leaky_relu",
    "leaky_relu_",
    "elu",
    "elu_",
    "softplus",
    "layer_norm",
    "group_norm",
    "batch_norm",
    "normalize",
    "embedding",
    "one_hot",
    "pad",
    "bilinear",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "kl_div",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool1d",
    "max_pool1d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "unfold",
    "fold",
]


def _reduction(size_average, reduce, reduction):
    """torch's _Reduction.legacy_get_string when a legacy argument is given; the reduction
    checked against 'none', 'mean' and 'sum' (ValueError otherwise, as torch)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _softmax_dim(ndim):
    warnings.warn(
        "Implicit dimension choice for softmax has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim, computed after subtracting the maximum."""
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along dim."""
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.log_softmax(input, dim, dtype=dtype)


def _check_batch(input, target):
    if input.dim() >= 2 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        if tuple(input.shape) != tuple(target.shape):
            raise ValueError(
                f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                f"({target.shape[0]})."
            )


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """log_softmax over the class dim (1, or 0 for an unbatched input) then nll_loss; a
    floating target of the input's shape is read as class probabilities."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_batch(input, target)
    return _nn.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    """-input[n, target[n]] * weight[target[n]], ignore_index skipped."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_batch(input, target)
    return _nn.nll_loss(input, target, weight, ignore_index, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """(input - target) ** 2; a target of another shape is broadcast (with torch's warning)."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=2,
        )
    return _nn.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """Sigmoid plus binary cross entropy in one numerically stable expression."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    return _nn.binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight)


def relu(input, inplace=False):
    return input.relu_() if inplace else mutagrad.relu(input)


def sigmoid(input):
    return mutagrad.sigmoid(input)


def tanh(input):
    return mutagrad.tanh(input)


def linear(input, weight, bias=None):
    """input @ weight.T + bias (weight [out_features, in_features])."""
    out = mutagrad.matmul(input, weight.t())
    return out if bias is None else out + bias


def _check_dropout_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) (MulBackward0,
    as torch). The mask is drawn from mutagrad's default generator of the input's device
    (Philox: the same seed gives the same mask on the CPU and CUDA; not torch's numbers).
    inplace: one tracked write of the input."""
    _check_dropout_p(p)
    return _nn.dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels: input [N, C, H, W] or [C, H, W] (torch 1.13 reads a 3-D input as
    [N, C, L], with its warning)."""
    _check_dropout_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide channel-"
            "wise dropout on inputs with 2 spatial dimensions, a channel dimension, and an "
            "optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _nn.feature_dropout(input, p, training, inplace)


# ---- Activations --------------------------------------------------------------------------


def gelu(input, approximate="none"):
    """x * Phi(x), or its tanh approximation (GeluBackward0)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _nn.gelu(input, approximate)


def silu(input, inplace=False):
    """x * sigmoid(x) (SiluBackward0; inplace: one write of the input, MulBackward0)."""
    if inplace:
        return input.mul_(mutagrad.sigmoid(input))
    return _nn.silu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x (LeakyReluBackward0; inplace: LeakyReluBackward1)."""
    if inplace:
        return _nn.leaky_relu_(input, negative_slope)
    return _nn.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _nn.leaky_relu_(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1) (EluBackward0; inplace: EluBackward1)."""
    if inplace:
        return _nn.elu_(input, alpha)
    return _nn.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _nn.elu_(input, alpha)


def softplus(input, beta=1, threshold=20):
    """log(1 + exp(beta x)) / beta, x where beta x > threshold (SoftplusBackward0)."""
    return _nn.softplus(input, beta, threshold)


# ---- Normalization ------------------------------------------------------------------------


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalizes over the last len(normalized_shape) dims (NativeLayerNormBackward0)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _nn.layer_norm(input, list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalizes groups of channels of [N, C, *] per sample (NativeGroupNormBackward0)."""
    return _nn.group_norm(input, num_groups, weight, bias, eps)


def _verify_batch_size(size):
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """Per-channel normalization of [N, C, *] (NativeBatchNormBackward0). training: the batch's
    statistics, and running_mean / running_var (when given) updated in place, one tracked write
    each (torch 1.13 does not bump their versions; mutagrad does, with this call's line)."""
    if training:
        _verify_batch_size(input.size())
    return _nn.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps) (DivBackward0)."""
    result = _nn.normalize(input, float(p), dim, eps)
    if out is not None:
        return out.copy_(result)
    return result


# ---- Lookup, padding, bilinear ------------------------------------------------------------


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """weight[input] (EmbeddingBackward0): no gradient to row padding_idx; max_norm renormalises
    the looked-up rows of weight in place first (one embedding_renorm_ tracked write)."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    if sparse:
        raise NotImplementedError("embedding(sparse=True): mutagrad has no sparse gradients")
    return _nn.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


def one_hot(tensor, num_classes=-1):
    """int64 [*, num_classes] with a 1 at each index."""
    return _nn.one_hot(tensor, num_classes)


def pad(input, pad, mode="constant", value=None):
    """Pads (before, after) pairs from the last dim: 'constant' (ConstantPadNdBackward0, any
    dims, negative pads crop), 'reflect' / 'replicate' (the last 1-3 dims), 'circular'."""
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(
            f"Padding mode \"{mode}\" doesn't take in value argument."
        )
    if mode != "constant" and (len(pad), input.dim()) not in (
        (2, 2), (2, 3), (4, 3), (4, 4), (6, 4), (6, 5)
    ):
        raise NotImplementedError(
            "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"
        )
    return _nn.pad(input, list(pad), mode, 0.0 if value is None else float(value))


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    return _nn.bilinear(input1, input2, weight, bias)


# ---- More losses --------------------------------------------------------------------------


def _warn_target_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """|input - target| (AbsBackward0, then MeanBackward0 / SumBackward0)."""
    _warn_target_size(input, target)
    return _nn.l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (SmoothL1LossBackward0)."""
    _warn_target_size(input, target)
    return _nn.smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (HuberLossBackward0)."""
    _warn_target_size(input, target)
    return _nn.huber_loss(input, target, _reduction(None, None, reduction), delta)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """-weight (t log x + (1 - t) log(1 - x)), logs clamped at -100 (BinaryCrossEntropyBackward0)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    return _nn.binary_cross_entropy(input, target, weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input), or exp(target) (target - input) with log_target; input holds
    log-probabilities. 'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, "mean")
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _nn.kl_div(input, target, reduction, log_target)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: padding an int, a tuple or "valid"/"same" (node
    ConvolutionBackward0; C++: autograd/ops/convolution_ops.h)."""
    return _C.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d (see conv1d)."""
    return _C.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """torch.nn.functional.conv_transpose1d: weight [in_channels, out_channels / groups, k]."""
    return _C.conv_transpose1d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """torch.nn.functional.conv_transpose2d (see conv_transpose1d)."""
    return _C.conv_transpose2d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """torch.nn.functional.max_pool2d_with_indices: (values, flat positions in each [H, W] plane);
    node MaxPool2DWithIndicesBackward0 (C++: autograd/ops/pooling_ops.h)."""
    if stride == []:
        stride = None
    return _nn.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """torch.nn.functional.max_pool2d; with return_indices, also the positions of the maxima."""
    out = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def _no_stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else stride


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """torch.nn.functional.max_pool1d_with_indices: (values, positions along L); the graph is
    torch's: SqueezeBackward1 over MaxPool2DWithIndicesBackward0 (C++: autograd/ops/pooling_ops.h)."""
    return _nn.max_pool1d_with_indices(
        input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """torch.nn.functional.max_pool1d; with return_indices, also the positions of the maxima."""
    out = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """torch.nn.functional.avg_pool1d (SqueezeBackward1 over AvgPool2DBackward0)."""
    return _nn.avg_pool1d(input, kernel_size, _no_stride(stride), padding, ceil_mode,
                          count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """torch.nn.functional.avg_pool2d: each window's sum over torch's divisor (node
    AvgPool2DBackward0, which saves no tensor)."""
    return _nn.avg_pool2d(input, kernel_size, _no_stride(stride), padding, ceil_mode,
                          count_include_pad, divisor_override)


def _adaptive_size(input, output_size, dims):
    """torch's _list_with_default: None takes the input's size in that dim."""
    if isinstance(output_size, int):
        return output_size
    sizes = list(output_size)
    if len(sizes) != dims:
        return sizes  # the C++ op names the mismatch
    shape = tuple(input.shape)
    return [shape[len(shape) - dims + i] if v is None else v for i, v in enumerate(sizes)]


def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d (SqueezeBackward1 over
    AdaptiveAvgPool2DBackward0; an output of 1 is a mean)."""
    return _nn.adaptive_avg_pool1d(input, _adaptive_size(input, output_size, 1))


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: windows [floor(i H / oh), ceil((i + 1) H / oh))
    (node AdaptiveAvgPool2DBackward0; an output of 1x1 is a mean, MeanBackward1, as torch)."""
    return _nn.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d_with_indices: (values, flat positions in each
    [H, W] plane); node AdaptiveMaxPool2DBackward0."""
    return _nn.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d; with return_indices, also the positions."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): [N, C, H, W] -> [N, C kh kw, L] (node
    Im2ColBackward0, whose backward is fold)."""
    return _nn.im2col(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im), unfold's adjoint: [N, C kh kw, L] -> [N, C,
    *output_size], overlapping entries summed (node Col2ImBackward0)."""
    return _nn.col2im(input, output_size, kernel_size, dilation, padding, stride)
