"""BatchNorm1d and BatchNorm2d (torch.nn's).

What forward mutates, in training mode with track_running_stats (docs/nn.md):
num_batches_tracked += 1 (one write), then running_mean and running_var, each one tracked
in-place write (one version bump with the call site) made by F.batch_norm. torch 1.13 updates
them inside its kernel without a bump; here a graph that saved a running statistic (e.g.
F.batch_norm in eval mode on the same buffers) is refused at backward. Eval mode and
track_running_stats=False write nothing.
"""

import mutagrad
from mutagrad.nn import functional as F
from mutagrad.nn import init
from mutagrad.nn.modules.module import Module
from mutagrad.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(mutagrad.empty(num_features, device=device, dtype=dtype))
            self.bias = Parameter(mutagrad.empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 mutagrad.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var",
                                 mutagrad.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 mutagrad.tensor(0, dtype=mutagrad.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            # Checked here too, so that a refused batch leaves num_batches_tracked unchanged.
            _check_batch_size(input)
            with mutagrad.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)


def _check_batch_size(input):
    size = list(input.shape)
    values = 1
    for s in size[:1] + size[2:]:
        values *= s
    if values == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{input.shape}")


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")
