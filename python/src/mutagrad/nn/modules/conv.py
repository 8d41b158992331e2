"""Conv1d, Conv2d, ConvTranspose1d and ConvTranspose2d (torch.nn's): torch's constructor arguments
(padding as sizes or "valid"/"same", padding_mode "zeros"/"reflect"/"replicate"/"circular" through
F.pad, output_padding and forward(input, output_size) for the transposed ones), torch's
reset_parameters (kaiming_uniform_(a=sqrt(5)) for the weight, uniform(+-1/sqrt(fan_in)) for the
bias, drawn from mutagrad's default generator: the numbers differ from torch's), repr and
state_dict keys. The math is the C++ op's (autograd/ops/convolution_ops.h).

What forward writes and saves (docs/nn.md): nothing is written. The node (ConvolutionBackward0)
saves the input and the weight, not the output, so ReLU(inplace=True) after a convolution is
safe; a write into the input or the weight between the forward and the backward is refused at
backward naming the write's line.
"""

import math

import mutagrad
from mutagrad.nn import functional as F
from mutagrad.nn import init
from mutagrad.nn.modules.module import Module
from mutagrad.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]


def _ntuple(n, name):
    def parse(x):
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")


class _ConvNd(Module):
    """The shared part: checks the arguments as torch's _ConvNd (ValueError, in its order), holds
    them as tuples, makes weight [out, in / groups, *k] ([in, out / groups, *k] transposed)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of "
                    f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        dims = len(kernel_size)
        for what, values, low in (("kernel_size", kernel_size, 1), ("stride", stride, 1),
                                  ("dilation", dilation, 1), ("output_padding", output_padding, 0),
                                  ("padding", () if isinstance(padding, str) else padding, 0)):
            if any(v < low for v in values) or (values and len(values) != dims):
                raise ValueError(f"{type(self).__name__}: {what} must be {dims} values >= {low}, "
                                 f"got {what}={values}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's pairs, last spatial dim first ("same": the odd extra position at the end).
        if isinstance(padding, str):
            pads = [0, 0] * dims
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(dims - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i] = total // 2
                    pads[2 * i + 1] = total - total // 2
        else:
            pads = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + tuple(kernel_size)
        self.weight = Parameter(mutagrad.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(mutagrad.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _ConvForward(_ConvNd):
    _conv = None  # F.conv1d or F.conv2d

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvForward):
    """input [N, C_in, L] or [C_in, L] -> [N, C_out, L_out]."""

    _conv = staticmethod(F.conv1d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         padding if isinstance(padding, str) else _single(padding),
                         _single(dilation), False, _single(0), groups, bias, padding_mode,
                         device, dtype)


class Conv2d(_ConvForward):
    """input [N, C_in, H, W] or [C_in, H, W] -> [N, C_out, H_out, W_out]."""

    _conv = staticmethod(F.conv2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         padding if isinstance(padding, str) else _pair(padding),
                         _pair(dilation), False, _pair(0), groups, bias, padding_mode, device,
                         dtype)


class _ConvTransposeNd(_ConvNd):
    _conv = None  # F.conv_transpose1d or F.conv_transpose2d

    def __init__(self, *args, **kwargs):
        padding_mode = args[10]
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        if isinstance(args[4], str):
            raise ValueError(f"{self.__class__.__name__}: padding must be sizes, not "
                             f"{args[4]!r} ('valid'/'same' are for convolutions)")
        super().__init__(*args, **kwargs)

    def _output_padding(self, input, output_size):
        """torch's: the output_padding that gives `output_size` (spatial, or with the batch
        and channel dims); ValueError when none in [0, stride) does."""
        if output_size is None:
            return self.output_padding
        dims = len(self.kernel_size)
        non_spatial = 2 if input.dim() == dims + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + dims:
            output_size = output_size[non_spatial:]
        if len(output_size) != dims:
            raise ValueError(
                f"ConvTranspose{dims}D: for {input.dim()}D input, output_size must have {dims} "
                f"or {non_spatial + dims} elements (got {len(output_size)})")
        min_sizes = [(input.size(d + non_spatial) - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(dims)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{min_sizes} to {max_sizes} (for an input of {input.shape[non_spatial:]})")
        return tuple(s - m for s, m in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._conv(input, self.weight, self.bias, self.stride, self.padding,
                                output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """input [N, C_in, L] or [C_in, L]; weight [C_in, C_out / groups, k]."""

    _conv = staticmethod(F.conv_transpose1d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         padding if isinstance(padding, str) else _single(padding),
                         _single(dilation), True, _single(output_padding), groups, bias,
                         padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """input [N, C_in, H, W] or [C_in, H, W]; weight [C_in, C_out / groups, kH, kW]."""

    _conv = staticmethod(F.conv_transpose2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         padding if isinstance(padding, str) else _pair(padding),
                         _pair(dilation), True, _pair(output_padding), groups, bias,
                         padding_mode, device, dtype)
