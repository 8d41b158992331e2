// Average pooling (avg_pool1d/2d, adaptive_avg_pool1d/2d): see pooling_ops.h
// (Note [Average pooling as a linear map]).
#include <algorithm>
#include <memory>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/join_ops.h"
#include "autograd/ops/linalg_ops.h"
#include "autograd/ops/pooling_ops.h"
#include "autograd/ops/pooling_util.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/pooling.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

using pooling::PoolGeometry;

using pooling::DimWindows;

// What an average pooling's gradient nodes share: the record and the divisors.
struct WindowMean : pooling::PoolRecord {
  WindowMean(const char* name, const char* backward_name, const Tensor& input, DimWindows rows,
             DimWindows cols, Tensor divisor)
      : PoolRecord(name, backward_name, input, std::move(rows), std::move(cols)),
        divisor(std::move(divisor)) {}
  Tensor divisor;  // [oh, ow] of the acc dtype, a constant
};

Tensor window_mean_backward_op(const std::shared_ptr<const WindowMean>& m, const Tensor& g);

// x [*, H, W] -> [*, oh, ow]: each window's sum / its divisor, in the acc dtype (Note [Pooling
// kernels] in tensor/native/pooling.h), recorded as m's node when x requires grad. The map is
// linear: its tangent is the same map of x's tangent.
Tensor window_mean_op(const std::shared_ptr<const WindowMean>& m, const Tensor& x);

// The node of window_mean_op: its adjoint, window_mean_backward_op.
class WindowMeanBackward final : public autograd::Node {
 public:
  const char* name() const override { return record_->name; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    out[0] = window_mean_backward_op(record_, grads[0]);
    return out;
  }
  std::shared_ptr<const WindowMean> record_;
};

// The node of window_mean_backward_op: its adjoint, window_mean_op.
class WindowMeanBackwardBackward final : public autograd::Node {
 public:
  const char* name() const override { return record_->backward_name; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    out[0] = window_mean_op(record_, grads[0]);
    return out;
  }
  std::shared_ptr<const WindowMean> record_;
};

Tensor window_mean_op(const std::shared_ptr<const WindowMean>& m, const Tensor& x) {
  const int64_t h = m->input_sizes[m->input_sizes.size() - 2], w = m->input_sizes.back();
  Tensor y;
  {
    autograd::NoGradGuard no_grad;
    y = native::reshape(native::avg_pool2d(native::reshape(x.detach(), {m->planes, h, w}), m->rows,
                                           m->cols, m->divisor),
                        m->output_sizes);
  }
  autograd::fwd::propagate(m->name, y, {x}, [&](const auto& t) { return window_mean_op(m, t[0]); });
  if (autograd::compute_requires_grad_has_jvp(x)) {
    auto node = autograd::make_node<WindowMeanBackward>(x);
    node->record_ = m;
    autograd::set_history(y, node);
  }
  return y;
}

// g [*, oh, ow] -> [*, H, W]: g / divisor spread over each window, recorded as m's backward
// node when g requires grad.
Tensor window_mean_backward_op(const std::shared_ptr<const WindowMean>& m, const Tensor& g) {
  const int64_t oh = m->output_sizes[m->output_sizes.size() - 2], ow = m->output_sizes.back();
  const int64_t h = m->input_sizes[m->input_sizes.size() - 2], w = m->input_sizes.back();
  Tensor gx;
  {
    autograd::NoGradGuard no_grad;
    gx = native::reshape(
        native::avg_pool2d_backward(native::reshape(g.detach(), {m->planes, oh, ow}), m->rows,
                                    m->cols, m->divisor, {m->planes, h, w}),
        m->input_sizes);
  }
  autograd::fwd::propagate(m->backward_name, gx, {g},
                           [&](const auto& t) { return window_mean_backward_op(m, t[0]); });
  if (autograd::compute_requires_grad_has_jvp(g)) {
    auto node = autograd::make_node<WindowMeanBackwardBackward>(g);
    node->record_ = m;
    autograd::set_history(gx, node);
  }
  return gx;
}

// The pooling of input over windows rows x cols divided by divisor ([oh, ow] of the acc dtype).
Tensor window_mean(const char* name, const char* backward_name, const Tensor& input,
                   DimWindows rows, DimWindows cols, Tensor divisor) {
  auto m = std::make_shared<const WindowMean>(name, backward_name, input, std::move(rows),
                                              std::move(cols), std::move(divisor));
  return window_mean_op(m, input);
}

Tensor avg_pool2d_impl(const char* op, const Tensor& input, const PoolGeometry& g,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (divisor_override && *divisor_override == 0) {
    throw ValueError(str(op, ": divisor_override must be nonzero, got 0"));
  }
  const DimWindows rows = pooling::pool_windows(g, 0), cols = pooling::pool_windows(g, 1);
  // torch's divisor per output: the window clipped to the padded input (count_include_pad) or
  // its count of input elements.
  auto padded_extent = [&](int64_t dim, int64_t o) {
    const int64_t start = o * g.stride[dim] - g.padding[dim];
    return std::min(start + g.kernel[dim], g.in[dim] + g.padding[dim]) - start;
  };
  std::vector<double> div;
  div.reserve(rows.first.size() * cols.first.size());
  for (int64_t i = 0; i < g.out[0]; ++i) {
    for (int64_t j = 0; j < g.out[1]; ++j) {
      int64_t count = 0;
      const bool overflow =
          count_include_pad
              ? __builtin_mul_overflow(padded_extent(0, i), padded_extent(1, j), &count)
              : __builtin_mul_overflow(rows.count[static_cast<size_t>(i)],
                                       cols.count[static_cast<size_t>(j)], &count);
      if (overflow && !divisor_override) {
        throw ValueError(str(op, ": the window size (kernel_size ", g.kernel, ", padding ",
                             g.padding,
                             ") overflows int64 as a divisor; use a smaller kernel "
                             "or pass divisor_override"));
      }
      div.push_back(
          static_cast<double>(divisor_override ? *divisor_override : std::max<int64_t>(count, 1)));
    }
  }
  const Tensor divisor = native::to(from_vector(div, {g.out[0], g.out[1]}), input.device(),
                                    opmath_dtype(input.dtype()));
  return window_mean("AvgPool2DBackward0", "AvgPool2DBackwardBackward0", input, rows, cols,
                     divisor);
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
  const DimWindows rows = pooling::adaptive_windows(h, out[0]);
  const DimWindows cols = pooling::adaptive_windows(w, out[1]);
  std::vector<double> counts;
  for (int64_t a : rows.count) {
    for (int64_t b : cols.count) counts.push_back(static_cast<double>(a * b));
  }
  const Tensor count = native::to(from_vector(counts, {out[0], out[1]}), input.device(),
                                  opmath_dtype(input.dtype()));
  return window_mean("AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool2DBackwardBackward0", input,
                     rows, cols, count);
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
