"""mutagrad.nn.init: torch.nn.init's initialisers, with torch 2's generator= argument. Each is
one in-place write of the tensor (one version bump, recorded with the caller's line) under
no_grad; draws come from `generator`, or the default generator of the tensor's device (seeded by
mutagrad.manual_seed). The numbers differ from torch's, the distributions match.

    w = mutagrad.empty(128, 64, requires_grad=True)
    mutagrad.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    mutagrad.nn.init.orthogonal_(w, generator=mutagrad.Generator().manual_seed(0))

trunc_normal_ and orthogonal_ compute into a scratch tensor and copy it in, so they too are one
write (torch's trunc_normal_ writes the tensor five times).
"""

import math
import warnings

import mutagrad
from mutagrad._C._nn import calculate_gain, _calculate_fan_in_and_fan_out  # noqa: F401

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_"]


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills tensor with draws from U(a, b)."""
    with mutagrad.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills tensor with draws from N(mean, std**2)."""
    with mutagrad.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills tensor with draws from N(mean, std**2) restricted to [a, b] (inverse CDF of a
    uniform draw)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with mutagrad.no_grad():
        scratch = mutagrad.empty_like(tensor)
        scratch.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        scratch.erfinv_()
        scratch.mul_(std * math.sqrt(2.0))
        scratch.add_(mean)
        scratch.clamp_(min=a, max=b)
        return tensor.copy_(scratch)


def constant_(tensor, val):
    """Fills tensor with val."""
    with mutagrad.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with mutagrad.no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity matrix (ones on the diagonal) in a 2-D tensor."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with mutagrad.no_grad():
        eye = mutagrad.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype,
                           device=tensor.device)
        return tensor.copy_(eye)


def _correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _zero_elements(tensor):
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain(nonlinearity, a) * sqrt(3 / fan)."""
    if _zero_elements(tensor):
        return tensor
    fan = _correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std**2) with std = gain(nonlinearity, a) / sqrt(fan)."""
    if _zero_elements(tensor):
        return tensor
    fan = _correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix, times gain, in tensor viewed as [size(0), numel/size(0)]: the
    Q of a QR decomposition of a normal draw with R's diagonal made positive (Gram-Schmidt,
    twice per column)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with mutagrad.no_grad():
        draw = mutagrad.empty(rows, cols, dtype=mutagrad.float64, device=tensor.device)
        draw.normal_(0.0, 1.0, generator=generator)
        a = draw.t() if rows < cols else draw
        columns = []
        for j in range(a.shape[1]):
            v = a[:, j].clone()
            if columns:
                q = mutagrad.stack(columns, dim=1)
                for _ in range(2):
                    v = v - q.matmul(q.t().matmul(v))
            columns.append(v / v.norm())
        q = mutagrad.stack(columns, dim=1)
        if rows < cols:
            q = q.t()
        return tensor.copy_((q * gain).reshape(tuple(tensor.shape)).to(tensor.dtype))
