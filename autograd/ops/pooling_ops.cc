// max_pool2d and max_pool2d_with_indices: see pooling_ops.h (Note [Max pooling as a gather]).
#include "autograd/ops/pooling_ops.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/ops/scatter_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

class MaxPool2DWithIndicesBackward0 final : public autograd::Node {
 public:
  const char* name() const override { return "MaxPool2DWithIndicesBackward0"; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    const Tensor& g = grads[0];
    if (!g.defined() || !should_compute_output(0)) return out;
    const Tensor idx = indices_.unpack(this);
    const int64_t nc = compute_numel(IntArrayRef(input_sizes_.data(), input_sizes_.size() - 2));
    const int64_t plane = input_sizes_[input_sizes_.size() - 2] * input_sizes_.back();
    // idx is clamped to `plane`: a window of padding only (torch's index lies past the plane)
    // adds its gradient to a column that is dropped.
    const Tensor base = zeros({nc, plane + 1}, TensorOptions(g.dtype()).device(g.device()));
    out[0] = scatter_add(base, 1, idx.reshape({nc, -1}), g.reshape({nc, -1}))
                 .narrow(1, 0, plane)
                 .view(input_sizes_);
    return out;
  }
  void visit_saved(autograd::SavedVisitor& v) override { v.visit("result1", indices_); }

  autograd::SavedVariable indices_;
  DimVector input_sizes_;
};

DimVector two(const char* op, const char* what, IntArrayRef v) {
  if (v.size() == 1) return DimVector{v[0], v[0]};
  if (v.size() != 2) {
    throw ValueError(
        str(op, ": ", what, " must either be a single int, or a tuple of two ints, got ", v));
  }
  return DimVector(v);
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const char* op = "max_pool2d";
  if (input.dim() != 3 && input.dim() != 4) {
    throw ShapeError(str(op,
                         ": expected 3D or 4D (batch mode) tensor for input, got input of size ",
                         input.sizes()));
  }
  if (!input.is_floating_point()) {
    throw DTypeError(str(op, ": \"max_pool2d\" not implemented for '",
                         legacy_type_name(input.dtype()),
                         "'; convert the input to a floating dtype"));
  }
  const DimVector k = two(op, "kernel_size", kernel_size);
  const DimVector s = stride.empty() ? k : two(op, "stride", stride);
  const DimVector p = two(op, "padding", padding), d = two(op, "dilation", dilation);
  const int64_t h = input.size(-2), w = input.size(-1);
  DimVector out;
  for (size_t i = 0; i < 2; ++i) {
    if (k[i] <= 0 || s[i] <= 0 || d[i] <= 0) {
      throw ValueError(str(op, ": kernel_size, stride and dilation must be greater than zero, got ",
                           "kernel_size ", k, ", stride ", s, ", dilation ", d));
    }
    if (p[i] < 0 || p[i] > k[i] / 2) {
      throw ValueError(str(op, ": pad should be at most half of kernel size and non-negative, ",
                           "but got pad=", p[i], " and kernel_size=", k[i]));
    }
    const int64_t in = i == 0 ? h : w;
    const int64_t span = in + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (ceil_mode ? s[i] - 1 : 0);
    int64_t o = span < 0 ? 0 : span / s[i] + 1;
    if (ceil_mode && o > 0 && (o - 1) * s[i] >= in + p[i]) --o;
    out.push_back(o);
  }
  if (out[0] < 1 || out[1] < 1) {
    throw ShapeError(str(op, ": given input size ", input.sizes(), ", calculated output size (",
                         out[0], "x", out[1], ") is too small (kernel_size ", k, ", stride ", s,
                         ", padding ", p, ", dilation ", d, ")"));
  }
  const int64_t n = input.dim() == 4 ? input.size(0) : 1, c = input.size(-3);
  const int64_t kk = k[0] * k[1];
  Tensor values, indices;
  {
    autograd::NoGradGuard no_grad;
    const Tensor x = native::reshape(input.detach(), {n, c, h, w});
    // The input padded with -inf, far enough right for every window (ceil_mode's last ones).
    const int64_t ph = std::max(h + 2 * p[0], (out[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1);
    const int64_t pw = std::max(w + 2 * p[1], (out[1] - 1) * s[1] + d[1] * (k[1] - 1) + 1);
    const Tensor xp = full({n, c, ph, pw}, -std::numeric_limits<double>::infinity(), input.dtype(),
                           input.device());
    native::copy_(native::narrow(native::narrow(xp, 2, p[0], h), 3, p[1], w), x);
    const Tensor windows = native::reshape(
        native::as_strided(xp, {n, c, out[0], out[1], k[0], k[1]},
                           {xp.stride(0), xp.stride(1), s[0] * pw, s[1], d[0] * pw, d[1]}),
        {n, c, out[0], out[1], kk});
    const Tensor arg = native::argmax(windows, 4, true);  // the first maximum, as torch
    values = native::squeeze(gather(windows, 4, arg), 4);
    // Each window element's flat position in the [H, W] plane.
    std::vector<int64_t> pos;
    pos.reserve(static_cast<size_t>(out[0] * out[1] * kk));
    // A position in the padding gets the window's first in-range row and column (stepping by
    // dilation), torch's index when no in-range element beats -inf.
    for (int64_t i = 0; i < out[0]; ++i) {
      int64_t h0 = i * s[0] - p[0];
      while (h0 < 0) h0 += d[0];
      for (int64_t j = 0; j < out[1]; ++j) {
        int64_t w0 = j * s[1] - p[1];
        while (w0 < 0) w0 += d[1];
        for (int64_t a = 0; a < k[0]; ++a) {
          for (int64_t b = 0; b < k[1]; ++b) {
            const int64_t ih = i * s[0] - p[0] + a * d[0], iw = j * s[1] - p[1] + b * d[1];
            const bool inside = ih >= 0 && ih < h && iw >= 0 && iw < w;
            pos.push_back(inside ? ih * w + iw : h0 * w + w0);
          }
        }
      }
    }
    const Tensor where =
        native::expand(native::to(from_vector(pos, {1, 1, out[0], out[1], kk}), input.device()),
                       {n, c, out[0], out[1], kk});
    indices = native::squeeze(gather(where, 4, arg), 4);
    DimVector shape(input.sizes());
    shape[shape.size() - 2] = out[0];
    shape[shape.size() - 1] = out[1];
    values = native::clone(native::reshape(values, shape));
    indices = native::clone(native::reshape(indices, shape));
  }
  if (autograd::compute_requires_grad(input)) {
    auto node = autograd::make_node<MaxPool2DWithIndicesBackward0>(input);
    const int64_t plane = h * w;
    node->indices_ =
        autograd::SavedVariable(native::binary(BinaryOp::kMinimum, indices, Scalar(plane)), false);
    node->input_sizes_ = DimVector(input.sizes());
    autograd::set_history(values, node);
  }
  return {values, indices};
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

}  // namespace mutagrad
