"""mutagrad.nn.utils: clip_grad_norm_ and clip_grad_value_ with torch.nn.utils' signatures
(optim/clip_grad.h): the gradients are scaled or clamped in place.

    total = mutagrad.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    mutagrad.nn.utils.clip_grad_value_(params, clip_value=0.5)
"""

from mutagrad import _C

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


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


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one new 1-D tensor (differentiable)."""
    device = None
    vec = []
    for param in parameters:
        if device is None:
            device = param.device
        elif param.device != device:
            raise TypeError("Found two parameters on different devices, this is currently not "
                            "supported.")
        vec.append(param.reshape(-1))
    return _C.cat(vec)


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of vec into the parameters' data (each parameter's .data is
    replaced by a view of vec, as torch: the parameter then shares vec's memory)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != total:
        raise ValueError(f"vector_to_parameters: vec must be 1-D with {total} elements (the "
                         f"parameters' total), got shape {list(vec.shape)}")
    device = None
    pointer = 0
    for param in params:
        if device is None:
            device = param.device
        elif param.device != device:
            raise TypeError("Found two parameters on different devices, this is currently not "
                            "supported.")
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
