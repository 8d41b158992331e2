"""Identity, Linear and Bilinear (torch.nn's), initialised as torch's reset_parameters:
kaiming_uniform_(a=sqrt(5)) for the weight, uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the
bias, drawn from mutagrad's default generator (the numbers differ from torch's)."""

import math

import mutagrad
from mutagrad.nn import functional as F
from mutagrad.nn import init
from mutagrad.nn.modules.module import Module
from mutagrad.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input (arguments are accepted and ignored, as torch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias; weight [out_features, in_features]."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(mutagrad.empty(out_features, in_features, device=device,
                                               dtype=dtype))
        if bias:
            self.bias = Parameter(mutagrad.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        if input.dim() == 0 or input.shape[-1] != self.in_features:
            raise RuntimeError(
                f"Linear: the input's last dimension must be in_features={self.in_features}, "
                f"got an input of shape {list(input.shape)}; reshape the input or build the "
                f"layer with in_features={input.shape[-1] if input.dim() else 1}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y[..., k] = x1 @ weight[k] @ x2 + bias[k]; weight [out, in1, in2]."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(mutagrad.empty(out_features, in1_features, in2_features,
                                               device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(mutagrad.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
