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
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

using pooling::PoolGeometry;

using pooling::DimWindows;

// Reduced floating dtypes sum and divide in float32, as torch's kernels (their acc type).
ScalarType acc_dtype(ScalarType t) { return t == kHalf || t == kBFloat16 ? kFloat32 : t; }

// Each window's flat position along dim (its size `in` there: the zero appended past it).
Tensor window_positions(const DimWindows& win, int64_t in, Device device) {
  std::vector<int64_t> src;
  src.reserve(win.first.size() * static_cast<size_t>(win.k));
  for (size_t o = 0; o < win.first.size(); ++o) {
    for (int64_t j = 0; j < win.k; ++j) {
      src.push_back(j < win.count[o] ? win.first[o] + j * win.step : in);
    }
  }
  return native::to(from_vector(src, {static_cast<int64_t>(src.size())}), device);
}

// x [.., in, ..] -> [.., out, ..]: the sum of each window along dim, its elements added
// directly (an inf or NaN stays in the windows that hold it).
Tensor window_sums(const Tensor& x, int64_t dim, const DimWindows& win) {
  const int64_t in = x.size(dim), out = static_cast<int64_t>(win.first.size());
  DimVector one(x.sizes());
  one[static_cast<size_t>(dim)] = 1;
  const Tensor ext = cat({x, zeros(one, TensorOptions(x.dtype()).device(x.device()))}, dim);
  DimVector split(x.sizes());
  split[static_cast<size_t>(dim)] = out;
  split.insert(static_cast<size_t>(dim + 1), win.k);
  return ext.index_select(dim, window_positions(win, in, x.device())).reshape(split).sum({dim + 1});
}

// The adjoint of window_sums: g [.., out, ..] -> [.., in, ..], each window's value added to its
// elements (index_add: differentiable again, deterministic).
Tensor window_sums_backward(const Tensor& g, int64_t dim, const DimWindows& win, int64_t in) {
  const int64_t out = static_cast<int64_t>(win.first.size());
  DimVector spread(g.sizes()), merged(g.sizes()), ext(g.sizes());
  spread.insert(static_cast<size_t>(dim + 1), win.k);
  merged[static_cast<size_t>(dim)] = out * win.k;
  ext[static_cast<size_t>(dim)] = in + 1;
  const Tensor src = g.unsqueeze(dim + 1).expand(spread).reshape(merged);
  return zeros(ext, TensorOptions(g.dtype()).device(g.device()))
      .index_add(dim, window_positions(win, in, g.device()), src)
      .narrow(dim, 0, in);
}

// The stride of windows that each read `k` consecutive positions, starting a constant stride
// apart (none clipped), or 0.
int64_t uniform_stride(const DimWindows& win) {
  const size_t n = win.first.size();
  if (win.step != 1 || n == 0) return 0;
  const int64_t stride = n > 1 ? win.first[1] - win.first[0] : 1;
  if (stride <= 0) return 0;
  for (size_t o = 0; o < n; ++o) {
    if (win.count[o] != win.k || win.first[o] != win.first[0] + static_cast<int64_t>(o) * stride) {
      return 0;
    }
  }
  return stride;
}

// input [*, H, W] -> [*, oh, ow]: each window rows x cols summed (along W, then H; or, when no
// window is clipped, over a strided view of the input) and divided by divisor [oh, ow] (of the
// acc dtype), in the acc dtype.
Tensor window_means(const Tensor& input, const DimWindows& rows, const DimWindows& cols,
                    const Tensor& divisor) {
  const int64_t h = input.size(-2), w = input.size(-1);
  const auto oh = static_cast<int64_t>(rows.first.size());
  const auto ow = static_cast<int64_t>(cols.first.size());
  const int64_t nc =
      compute_numel(IntArrayRef(input.sizes().data(), static_cast<size_t>(input.dim() - 2)));
  const Tensor x = input.reshape({nc, h, w}).to(divisor.dtype());
  const int64_t sh = uniform_stride(rows), sw = uniform_stride(cols);
  Tensor sums;
  if (sh > 0 && sw > 0) {
    const Tensor c = x.contiguous();
    sums = native::reduce(
        ReduceOp::kSum,
        native::as_strided(c, {nc, oh, ow, rows.k, cols.k}, {h * w, sh * w, sw, w, 1},
                           c.storage_offset() + rows.first[0] * w + cols.first[0]),
        {3, 4}, false);
  } else {
    sums = window_sums(window_sums(x, 2, cols), 1, rows);
  }
  DimVector shape(input.sizes());
  shape[shape.size() - 2] = oh;
  shape[shape.size() - 1] = ow;
  return (sums / divisor).to(input.dtype()).reshape(shape);
}

// grad [*, oh, ow] -> input [*, H, W]: grad / divisor spread over each window (window_sums'
// adjoint along H, then W).
class WindowMeanBackward final : public autograd::Node {
 public:
  const char* name() const override { return name_; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    const Tensor& g = grads[0];
    if (!g.defined() || !should_compute_output(0)) return out;
    const size_t d = input_sizes_.size();
    const int64_t h = input_sizes_[d - 2], w = input_sizes_[d - 1];
    const int64_t nc = compute_numel(IntArrayRef(input_sizes_.data(), d - 2));
    const Tensor q = g.reshape({nc, g.size(-2), g.size(-1)}).to(divisor_.dtype()) / divisor_;
    out[0] = window_sums_backward(window_sums_backward(q, 1, rows_, h), 2, cols_, w)
                 .to(g.dtype())
                 .reshape(input_sizes_);
    return out;
  }

  const char* name_ = "AvgPool2DBackward0";  // or AdaptiveAvgPool2DBackward0
  DimWindows rows_, cols_;
  Tensor divisor_;  // [oh, ow] of the acc dtype, a constant
  DimVector input_sizes_;
};

void record_window_mean(const char* node_name, const Tensor& input, const Tensor& values,
                        const DimWindows& rows, const DimWindows& cols, const Tensor& divisor) {
  auto node = autograd::make_node<WindowMeanBackward>(input);
  node->name_ = node_name;
  node->rows_ = rows;
  node->cols_ = cols;
  node->divisor_ = divisor;
  node->input_sizes_ = DimVector(input.sizes());
  autograd::set_history(values, node);
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
  const Tensor divisor =
      native::to(from_vector(div, {g.out[0], g.out[1]}), input.device(), acc_dtype(input.dtype()));
  Tensor values;
  {
    autograd::NoGradGuard no_grad;
    values = window_means(input.detach(), rows, cols, divisor);
  }
  // AvgPool2DBackward0's tangent: the pooled tangent (linear).
  autograd::fwd::propagate("avg_pool2d", values, {input}, [&](const auto& t) {
    return avg_pool2d_impl(op, t[0], g, count_include_pad, divisor_override);
  });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    record_window_mean("AvgPool2DBackward0", input, values, rows, cols, divisor);
  }
  return values;
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
  const Tensor count =
      native::to(from_vector(counts, {out[0], out[1]}), input.device(), acc_dtype(input.dtype()));
  Tensor values;
  {
    autograd::NoGradGuard no_grad;
    values = window_means(input.detach(), rows, cols, count);
  }
  // AdaptiveAvgPool2DBackward0's tangent: the pooled tangent (linear).
  autograd::fwd::propagate("adaptive_avg_pool2d", values, {input},
                           [&](const auto& t) { return adaptive_avg_pool2d_impl(op, t[0], out); });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    record_window_mean("AdaptiveAvgPool2DBackward0", input, values, rows, cols, count);
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
