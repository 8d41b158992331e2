// im2col and col2im (F.unfold / F.fold): see pooling_ops.h (Note [im2col and col2im]).
#include <memory>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/ops/pooling_ops.h"
#include "autograd/ops/pooling_util.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"

namespace mutagrad {
namespace {

// The arguments of im2col/col2im: two values each (one value: both), checked as torch's.
struct Im2ColArgs {
  DimVector kernel, dilation, padding, stride;
};

Im2ColArgs im2col_args(const char* op, IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride) {
  Im2ColArgs a{pooling::per_dim(op, "kernel_size", kernel_size, 2),
               pooling::per_dim(op, "dilation", dilation, 2),
               pooling::per_dim(op, "padding", padding, 2),
               pooling::per_dim(op, "stride", stride, 2)};
  for (size_t i = 0; i < 2; ++i) {
    if (a.kernel[i] <= 0 || a.dilation[i] <= 0 || a.stride[i] <= 0 || a.padding[i] < 0) {
      throw ValueError(str(op, ": kernel_size, dilation and stride must be greater than zero and ",
                           "padding non-negative, got kernel_size=", a.kernel, ", dilation=",
                           a.dilation, ", padding=", a.padding, ", stride=", a.stride));
    }
  }
  return a;
}

// The number of windows along a dim of size `in` (< 1: none fits; floor division, as torch's
// message shows).
int64_t blocks(int64_t in, const Im2ColArgs& a, size_t i) {
  const int64_t span = in + 2 * a.padding[i] - a.dilation[i] * (a.kernel[i] - 1) - 1;
  const int64_t s = a.stride[i];
  return (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
}

// x [N, C, H, W] -> [N, C kh kw, oh ow] (no autograd).
Tensor im2col_raw(const Tensor& x, const Im2ColArgs& a, int64_t oh, int64_t ow) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  Tensor xp = x;
  if (a.padding[0] != 0 || a.padding[1] != 0) {
    xp = zeros({n, c, h + 2 * a.padding[0], w + 2 * a.padding[1]},
               TensorOptions(x.dtype()).device(x.device()));
    native::copy_(native::narrow(native::narrow(xp, 2, a.padding[0], h), 3, a.padding[1], w), x);
  }
  const Tensor windows = native::as_strided(
      xp, {n, c, a.kernel[0], a.kernel[1], oh, ow},
      {xp.stride(0), xp.stride(1), a.dilation[0] * xp.stride(2), a.dilation[1] * xp.stride(3),
       a.stride[0] * xp.stride(2), a.stride[1] * xp.stride(3)},
      xp.storage_offset());
  return native::view(native::contiguous(windows), {n, c * a.kernel[0] * a.kernel[1], oh * ow});
}

// cols [N, C kh kw, oh ow] -> [N, C, h, w], overlapping entries summed one kernel offset after
// the other (no autograd).
Tensor col2im_raw(const Tensor& cols, int64_t h, int64_t w, const Im2ColArgs& a, int64_t oh,
                  int64_t ow) {
  const int64_t n = cols.size(0), kh = a.kernel[0], kw = a.kernel[1];
  const int64_t c = cols.size(1) / (kh * kw);
  const Tensor cv = native::view(native::contiguous(cols), {n, c, kh, kw, oh, ow});
  const Tensor out = zeros({n, c, h + 2 * a.padding[0], w + 2 * a.padding[1]},
                           TensorOptions(cols.dtype()).device(cols.device()));
  const DimVector sizes{n, c, oh, ow};
  const DimVector strides{out.stride(0), out.stride(1), a.stride[0] * out.stride(2),
                          a.stride[1] * out.stride(3)};
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      const int64_t offset = i * a.dilation[0] * out.stride(2) + j * a.dilation[1] * out.stride(3);
      const Tensor dst = native::as_strided(out, sizes, strides, offset);
      native::binary_out(BinaryOp::kAdd, dst, dst, native::select(native::select(cv, 2, i), 2, j));
    }
  }
  return native::contiguous(
      native::narrow(native::narrow(out, 2, a.padding[0], h), 3, a.padding[1], w));
}

class Im2ColBackward0 final : public autograd::Node {
 public:
  const char* name() const override { return "Im2ColBackward0"; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    out[0] = col2im(grads[0], input_hw_, args_.kernel, args_.dilation, args_.padding, args_.stride);
    return out;
  }
  Im2ColArgs args_;
  DimVector input_hw_;
};

class Col2ImBackward0 final : public autograd::Node {
 public:
  const char* name() const override { return "Col2ImBackward0"; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    out[0] = im2col(grads[0], args_.kernel, args_.dilation, args_.padding, args_.stride);
    return out;
  }
  Im2ColArgs args_;
};

}  // namespace

Tensor im2col(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  const char* op = "im2col";
  if ((input.dim() != 3 && input.dim() != 4) || input.size(-1) == 0 || input.size(-2) == 0 ||
      input.size(-3) == 0) {
    throw ShapeError(str(op, ": expected a 3D or 4D (batch mode) input with non-zero sizes ",
                         "except the batch, got input of size ", input.sizes()));
  }
  pooling::check_floating(op, input);
  const Im2ColArgs a = im2col_args(op, kernel_size, dilation, padding, stride);
  const int64_t h = input.size(-2), w = input.size(-1);
  const int64_t oh = blocks(h, a, 0), ow = blocks(w, a, 1);
  if (oh < 1 || ow < 1) {
    throw ShapeError(str(op, ": given input of spatial size (", h, ", ", w, "), kernel_size=",
                         a.kernel, ", dilation=", a.dilation, ", padding=", a.padding,
                         ", the array of sliding blocks would be (", oh, ", ", ow,
                         "), but its components must be at least one: use a smaller kernel or "
                         "dilation, or more padding"));
  }
  const bool batched = input.dim() == 4;
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    const Tensor x = batched ? input.detach() : native::unsqueeze(input.detach(), 0);
    result = im2col_raw(x, a, oh, ow);
    if (!batched) result = native::squeeze(result, 0);
  }
  // Im2ColBackward0's tangent: im2col of the tangent (linear).
  autograd::fwd::propagate(op, result, {input}, [&](const auto& t) {
    return im2col(t[0], kernel_size, dilation, padding, stride);
  });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    auto node = autograd::make_node<Im2ColBackward0>(input);
    node->args_ = a;
    node->input_hw_ = DimVector{h, w};
    autograd::set_history(result, node);
  }
  return result;
}

Tensor col2im(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size,
              IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  const char* op = "col2im";
  if ((input.dim() != 2 && input.dim() != 3) || input.size(-1) == 0 || input.size(-2) == 0) {
    throw ShapeError(str(op, ": expected a 2D or 3D (batch mode) input with non-zero sizes ",
                         "except the batch, got input of size ", input.sizes()));
  }
  pooling::check_floating(op, input);
  const DimVector o = pooling::per_dim(op, "output_size", output_size, 2);
  const Im2ColArgs a = im2col_args(op, kernel_size, dilation, padding, stride);
  const int64_t kk = a.kernel[0] * a.kernel[1];
  if (input.size(-2) % kk != 0) {
    throw ShapeError(str(op, ": expected size of input's dimension ", input.dim() - 2,
                         " to be divisible by the product of kernel_size, but got input.size(",
                         input.dim() - 2, ")=", input.size(-2), " and kernel_size=", a.kernel));
  }
  const int64_t oh = blocks(o[0], a, 0), ow = blocks(o[1], a, 1);
  if (oh < 1 || ow < 1 || oh * ow != input.size(-1)) {
    throw ShapeError(str(op, ": given output_size=", o, ", kernel_size=", a.kernel,
                         ", dilation=", a.dilation, ", padding=", a.padding, ", stride=", a.stride,
                         ", expected size of input's dimension ", input.dim() - 1,
                         " to match the calculated number of sliding blocks ", oh, " * ", ow, " = ",
                         oh * ow, ", but got input.size(", input.dim() - 1, ")=", input.size(-1)));
  }
  const bool batched = input.dim() == 3;
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    const Tensor cols = batched ? input.detach() : native::unsqueeze(input.detach(), 0);
    result = col2im_raw(cols, o[0], o[1], a, oh, ow);
    if (!batched) result = native::squeeze(result, 0);
  }
  // Col2ImBackward0's tangent: col2im of the tangent (linear).
  autograd::fwd::propagate(op, result, {input}, [&](const auto& t) {
    return col2im(t[0], output_size, kernel_size, dilation, padding, stride);
  });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    auto node = autograd::make_node<Col2ImBackward0>(input);
    node->args_ = a;
    autograd::set_history(result, node);
  }
  return result;
}

}  // namespace mutagrad
