// Average pooling (avg_pool1d/2d, adaptive_avg_pool1d/2d): see pooling_ops.h
// (Note [Average pooling as a linear map]).
#include <algorithm>
#include <memory>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/linalg_ops.h"
#include "autograd/ops/pooling_ops.h"
#include "autograd/ops/pooling_util.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

using pooling::PoolGeometry;

// A constant [rows, cols] tensor of `like`'s dtype and device.
Tensor constant(const std::vector<double>& v, IntArrayRef sizes, const Tensor& like) {
  return native::to(from_vector(v, sizes), like.device(), like.dtype());
}

// grad [*, oh, ow] -> input [*, h, w]: grad / divisor spread over each window (col2im over the
// padded extent, then the input's part).
class AvgPool2DBackward0 final : public autograd::Node {
 public:
  const char* name() const override { return "AvgPool2DBackward0"; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    const Tensor& g = grads[0];
    if (!g.defined() || !should_compute_output(0)) return out;
    const DimVector& k = geom_.kernel;
    const int64_t oh = geom_.out[0], ow = geom_.out[1];
    const int64_t nc = compute_numel(IntArrayRef(input_sizes_.data(), input_sizes_.size() - 2));
    const Tensor q = g.reshape({nc, 1, 1, oh, ow}) / divisor_;
    const Tensor cols = q.expand({nc, k[0], k[1], oh, ow}).reshape({nc, k[0] * k[1], oh * ow});
    const Tensor spread = col2im(cols, padded_, k, {1}, {0}, geom_.stride);  // [nc, ph, pw]
    out[0] = spread.narrow(-2, geom_.padding[0], geom_.in[0])
                 .narrow(-1, geom_.padding[1], geom_.in[1])
                 .reshape(input_sizes_);
    return out;
  }

  PoolGeometry geom_;
  DimVector padded_;  // the zero-padded extent the windows read: [ph, pw]
  Tensor divisor_;    // [oh, ow], a constant
  DimVector input_sizes_;
};

Tensor avg_pool2d_impl(const char* op, const Tensor& input, const PoolGeometry& g,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (divisor_override && *divisor_override == 0) {
    throw ValueError(str(op, ": divisor_override must be nonzero, got 0"));
  }
  const DimVector &k = g.kernel, &s = g.stride, &p = g.padding, &out = g.out;
  const int64_t h = g.in[0], w = g.in[1];
  const int64_t nc =
      compute_numel(IntArrayRef(input.sizes().data(), static_cast<size_t>(input.dim() - 2)));
  const int64_t ph = std::max(h + 2 * p[0], (out[0] - 1) * s[0] + k[0]);
  const int64_t pw = std::max(w + 2 * p[1], (out[1] - 1) * s[1] + k[1]);
  // torch's divisor per output: the window clipped to the padded input (count_include_pad) or
  // to the input.
  std::vector<double> div;
  div.reserve(static_cast<size_t>(out[0] * out[1]));
  for (int64_t i = 0; i < out[0]; ++i) {
    const int64_t h0 = i * s[0] - p[0], h1 = std::min(h0 + k[0], h + p[0]);
    for (int64_t j = 0; j < out[1]; ++j) {
      const int64_t w0 = j * s[1] - p[1], w1 = std::min(w0 + k[1], w + p[1]);
      int64_t count = (h1 - h0) * (w1 - w0);
      if (!count_include_pad) {
        count = (std::min(h1, h) - std::max<int64_t>(h0, 0)) *
                (std::min(w1, w) - std::max<int64_t>(w0, 0));
      }
      div.push_back(
          static_cast<double>(divisor_override ? *divisor_override : std::max<int64_t>(count, 1)));
    }
  }
  const Tensor divisor = constant(div, {out[0], out[1]}, input);
  Tensor values;
  {
    autograd::NoGradGuard no_grad;
    const Tensor x = native::reshape(input.detach(), {nc, h, w});
    const Tensor xp = zeros({nc, ph, pw}, TensorOptions(input.dtype()).device(input.device()));
    native::copy_(native::narrow(native::narrow(xp, 1, p[0], h), 2, p[1], w), x);
    const Tensor windows = native::as_strided(xp, {nc, out[0], out[1], k[0], k[1]},
                                              {xp.stride(0), s[0] * pw, s[1], pw, 1});
    const Tensor sums = native::reduce(ReduceOp::kSum, windows, {3, 4}, false);
    DimVector shape(input.sizes());
    shape[shape.size() - 2] = out[0];
    shape[shape.size() - 1] = out[1];
    values = native::reshape(native::binary(BinaryOp::kDiv, sums, divisor), shape);
  }
  if (autograd::compute_requires_grad(input)) {
    auto node = autograd::make_node<AvgPool2DBackward0>(input);
    node->geom_ = g;
    node->padded_ = DimVector{ph, pw};
    node->divisor_ = divisor;
    node->input_sizes_ = DimVector(input.sizes());
    autograd::set_history(values, node);
  }
  return values;
}

// grad [*, oh, ow] -> input [*, h, w]: S_h^T (grad / counts) S_w.
class AdaptiveAvgPool2DBackward0 final : public autograd::Node {
 public:
  const char* name() const override { return "AdaptiveAvgPool2DBackward0"; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    const Tensor& g = grads[0];
    if (!g.defined() || !should_compute_output(0)) return out;
    out[0] = matmul(matmul(rows_.t(), g / counts_), cols_);
    return out;
  }

  Tensor rows_, cols_, counts_;  // S_h [oh, H], S_w [ow, W], counts [oh, ow]: constants
};

// S [o, in]: row i is 1 over torch's adaptive window i, [floor(i in / o), ceil((i + 1) in / o)).
std::vector<double> adaptive_windows(int64_t o, int64_t in, std::vector<int64_t>* lengths) {
  std::vector<double> m(static_cast<size_t>(o * in), 0.0);
  for (int64_t i = 0; i < o; ++i) {
    const int64_t a = i * in / o, b = ((i + 1) * in + o - 1) / o;
    for (int64_t j = a; j < b; ++j) m[static_cast<size_t>(i * in + j)] = 1.0;
    lengths->push_back(b - a);
  }
  return m;
}

}  // namespace

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d";
  const PoolGeometry g =
      pooling::pool_geometry(op, input, 2, kernel_size, stride, padding, {1}, ceil_mode);
  return avg_pool2d_impl(op, input, g, count_include_pad, divisor_override);
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  const char* op = "avg_pool1d";
  const PoolGeometry g =
      pooling::pool_geometry(op, input, 1, kernel_size, stride, padding, {1}, ceil_mode);
  return squeeze(
      avg_pool2d_impl(op, unsqueeze(input, -2), pooling::as_2d(g), count_include_pad, std::nullopt),
      -2);
}

namespace {

Tensor adaptive_avg_pool2d_impl(const char* op, const Tensor& input, const DimVector& out) {
  const int64_t h = input.size(-2), w = input.size(-1);
  if (out[0] < 0 || out[1] < 0) {
    throw ValueError(
        str(op, ": elements of output_size must be greater than or equal to 0, got ", out));
  }
  if (h == 0 || w == 0 || (input.dim() == 4 && input.size(1) == 0)) {
    throw ShapeError(str(op, ": expected input to have non-zero size for non-batch dimensions, ",
                         "but input has sizes ", input.sizes()));
  }
  if (out[0] == 1 && out[1] == 1) return mean(input, {-2, -1}, true);  // torch's MeanBackward1
  std::vector<int64_t> lh, lw;
  const Tensor rows = constant(adaptive_windows(out[0], h, &lh), {out[0], h}, input);
  const Tensor cols = constant(adaptive_windows(out[1], w, &lw), {out[1], w}, input);
  std::vector<double> counts;
  for (int64_t a : lh) {
    for (int64_t b : lw) counts.push_back(static_cast<double>(a * b));
  }
  const Tensor count = constant(counts, {out[0], out[1]}, input);
  Tensor values;
  {
    autograd::NoGradGuard no_grad;
    const Tensor x = input.detach();
    const Tensor sums = native::matmul(native::matmul(rows, x), native::t(cols));
    values = native::binary(BinaryOp::kDiv, sums, count);
  }
  if (autograd::compute_requires_grad(input)) {
    auto node = autograd::make_node<AdaptiveAvgPool2DBackward0>(input);
    node->rows_ = rows;
    node->cols_ = cols;
    node->counts_ = count;
    autograd::set_history(values, node);
  }
  return values;
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool2d";
  if (input.dim() != 3 && input.dim() != 4) {
    throw ShapeError(str(op, ": expected 3D or 4D tensor, but got input of size ", input.sizes()));
  }
  pooling::check_floating(op, input);
  return adaptive_avg_pool2d_impl(op, input, pooling::per_dim(op, "output_size", output_size, 2));
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool1d";
  if (input.dim() != 2 && input.dim() != 3) {
    throw ShapeError(str(op, ": expected 2D or 3D tensor, but got input of size ", input.sizes()));
  }
  pooling::check_floating(op, input);
  const DimVector o = pooling::per_dim(op, "output_size", output_size, 1);
  return squeeze(adaptive_avg_pool2d_impl(op, unsqueeze(input, -2), DimVector{1, o[0]}), -2);
}

}  // namespace mutagrad
