"""mutagrad.nn.functional: torch.nn.functional's losses and activations for a classifier.

    import mutagrad.nn.functional as F
    loss = F.cross_entropy(model(x), y, weight=w, ignore_index=-1, label_smoothing=0.1)
    probs = F.softmax(logits, dim=1)

The computation and its backward nodes are C++ (autograd/ops/loss_ops.h, activation_ops.h);
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


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) (the default
    generator's draws, so the mask differs from torch's)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        scale = mutagrad.zeros_like(input)
    else:
        scale = (mutagrad.rand_like(input) >= p).to(input.dtype) / (1.0 - p)
    return input.mul_(scale) if inplace else input * scale
