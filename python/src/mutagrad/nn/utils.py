"""mutagrad.nn.utils: clip_grad_norm_ and clip_grad_value_ with torch.nn.utils' signatures
(optim/clip_grad.h): the gradients are scaled or clamped in place.

    total = mutagrad.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    mutagrad.nn.utils.clip_grad_value_(params, clip_value=0.5)
"""

from mutagrad import _C

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _tensors(parameters):
    if isinstance(parameters, _C.Tensor):
        return [parameters]
    return list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients so that their total norm is at most max_norm; returns the total
    norm before clipping (a 0-dim tensor)."""
    return _C._optim.clip_grad_norm_(_tensors(parameters), float(max_norm), float(norm_type),
                                     bool(error_if_nonfinite))


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient element into [-clip_value, clip_value]."""
    _C._optim.clip_grad_value_(_tensors(parameters), float(clip_value))
