// Max pooling (max_pool1d/2d, adaptive_max_pool2d) and the shared pooling checks of
// pooling_util.h: see pooling_ops.h (Note [Max pooling as a gather]).
#include "autograd/ops/pooling_ops.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/ops/join_ops.h"
#include "autograd/ops/pooling_util.h"
#include "autograd/ops/scatter_ops.h"
#include "autograd/ops/view_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace pooling {

DimVector per_dim(const char* op, const char* what, IntArrayRef v, int64_t dims) {
  if (v.size() == 1) return DimVector(static_cast<size_t>(dims), v[0]);
  if (static_cast<int64_t>(v.size()) != dims) {
    throw ValueError(str(op, ": ", what, " must either be a single int, or a tuple of ", dims,
                         " ints, got ", v));
  }
  return DimVector(v);
}

int64_t pool_output_size(const char* op, int64_t in, int64_t kernel, int64_t pad, int64_t stride,
                         int64_t dilation, bool ceil_mode) {
  // span = in + 2 pad - (dilation (kernel - 1) + 1) (+ stride - 1 with ceil_mode); kernel,
  // stride, dilation > 0 and pad >= 0 are checked.
  int64_t padded = 0, reach = 0, span = 0;
  const bool overflow = __builtin_mul_overflow(pad, int64_t{2}, &padded) ||
                        __builtin_add_overflow(in, padded, &padded) ||
                        __builtin_mul_overflow(dilation, kernel - 1, &reach) ||
                        __builtin_add_overflow(reach, int64_t{1}, &reach) ||
                        __builtin_sub_overflow(padded, reach, &span) ||
                        (ceil_mode && __builtin_add_overflow(span, stride - 1, &span));
  if (overflow) {
    throw ValueError(str(op, ": the pooling window overflows int64 (input size ", in,
                         ", kernel_size ", kernel, ", padding ", pad, ", stride ", stride,
                         ", dilation ", dilation, "); use a smaller kernel, padding or dilation"));
  }
  if (span < 0) return span / stride;  // <= 0: too small
  int64_t out = span / stride + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

DimWindows pool_windows(const PoolGeometry& g, int64_t i) {
  DimWindows r;
  const int64_t in = g.in[i], d = g.dilation[i], reach = d * (g.kernel[i] - 1) + 1;
  r.step = d;
  for (int64_t o = 0; o < g.out[i]; ++o) {
    const int64_t start = o * g.stride[i] - g.padding[i];
    // torch's start: stepped by dilation out of the left padding.
    const int64_t first = start < 0 ? start + (d - 1 - start) / d * d : start;
    const int64_t end = std::min(start + reach, in);
    const int64_t count = first < end ? (end - first + d - 1) / d : 0;
    r.first.push_back(first);
    r.count.push_back(count);
    r.k = std::max(r.k, count);
  }
  return r;
}

DimWindows adaptive_windows(int64_t in, int64_t out) {
  int64_t product = 0;
  if (__builtin_mul_overflow(in + 1, out, &product)) {
    throw ValueError(str("adaptive pooling: input size ", in, " times output size ", out,
                         " overflows int64; use a smaller output_size"));
  }
  DimWindows r;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t a = o * in / out, b = ((o + 1) * in + out - 1) / out;
    r.first.push_back(a);
    r.count.push_back(b - a);
    r.k = std::max(r.k, b - a);
  }
  return r;
}

void check_floating(const char* op, const Tensor& input) {
  if (!input.is_floating_point()) {
    throw DTypeError(str(op, ": \"", op, "\" not implemented for '",
                         legacy_type_name(input.dtype()),
                         "'; convert the input to a floating dtype (x.to(kFloat32))"));
  }
}

PoolGeometry pool_geometry(const char* op, const Tensor& input, int64_t dims,
                           IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           IntArrayRef dilation, bool ceil_mode) {
  if (input.dim() != dims + 1 && input.dim() != dims + 2) {
    throw ShapeError(str(op, ": expected ", dims + 1, "D or ", dims + 2,
                         "D (batch mode) tensor for input, got input of size ", input.sizes()));
  }
  for (int64_t i = input.dim() - dims - 1; i < input.dim(); ++i) {
    if (input.size(i) == 0) {
      throw ShapeError(str(op, ": expected ", dims + 1, "D or ", dims + 2,
                           "D (batch mode) tensor with optional 0 dim batch size for input, but "
                           "got input of size ",
                           input.sizes(), ": only the batch dim may be empty"));
    }
  }
  check_floating(op, input);
  PoolGeometry g;
  g.kernel = per_dim(op, "kernel_size", kernel_size, dims);
  g.stride = stride.empty() ? g.kernel : per_dim(op, "stride", stride, dims);
  g.padding = per_dim(op, "padding", padding, dims);
  g.dilation = per_dim(op, "dilation", dilation, dims);
  for (int64_t i = 0; i < dims; ++i) {
    if (g.kernel[i] <= 0 || g.stride[i] <= 0 || g.dilation[i] <= 0) {
      throw ValueError(str(op, ": kernel_size, stride and dilation must be greater than zero, got ",
                           "kernel_size ", g.kernel, ", stride ", g.stride, ", dilation ",
                           g.dilation));
    }
    if (g.padding[i] < 0 || g.padding[i] > g.kernel[i] / 2) {
      throw ValueError(str(op, ": pad should be at most half of kernel size and non-negative, ",
                           "but got pad=", g.padding[i], " and kernel_size=", g.kernel[i]));
    }
  }
  bool small = false;
  for (int64_t i = 0; i < dims; ++i) {
    const int64_t in = input.size(input.dim() - dims + i);
    g.in.push_back(in);
    g.out.push_back(
        pool_output_size(op, in, g.kernel[i], g.padding[i], g.stride[i], g.dilation[i], ceil_mode));
    small = small || g.out.back() < 1;
  }
  if (small) {
    throw ShapeError(str(op, ": given input size ", input.sizes(), ", calculated output size ",
                         g.out, " is too small (kernel_size ", g.kernel, ", stride ", g.stride,
                         ", padding ", g.padding, ", dilation ", g.dilation,
                         "): every output size must be at least 1; use a smaller kernel or "
                         "more padding"));
  }
  return g;
}

PoolGeometry as_2d(const PoolGeometry& g) {
  PoolGeometry r;
  r.kernel = DimVector{1, g.kernel[0]};
  r.stride = DimVector{1, g.stride[0]};
  r.padding = DimVector{0, g.padding[0]};
  r.dilation = DimVector{1, g.dilation[0]};
  r.out = DimVector{1, g.out[0]};
  r.in = DimVector{1, g.in[0]};
  return r;
}

}  // namespace pooling

namespace {

using pooling::PoolGeometry;

// The backward of a max pooling: the gradient added at the saved flat positions of each plane.
class MaxPoolBackward final : public autograd::Node {
 public:
  const char* name() const override { return name_; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    const Tensor& g = grads[0];
    if (!g.defined() || !should_compute_output(0)) return out;
    const Tensor idx = indices_.unpack(this);
    const int64_t nc = compute_numel(IntArrayRef(input_sizes_.data(), input_sizes_.size() - 2));
    const int64_t plane = input_sizes_[input_sizes_.size() - 2] * input_sizes_.back();
    const int64_t outs = g.size(-2) * g.size(-1);  // explicit: nc may be 0
    // idx is clamped to `plane`: a window of padding only (torch's index lies past the plane)
    // adds its gradient to a column that is dropped.
    const Tensor base = zeros({nc, plane + 1}, TensorOptions(g.dtype()).device(g.device()));
    out[0] = scatter_add(base, 1, idx.reshape({nc, outs}), g.reshape({nc, outs}))
                 .narrow(1, 0, plane)
                 .view(input_sizes_);
    return out;
  }
  void visit_saved(autograd::SavedVisitor& v) override { v.visit("result1", indices_); }

  autograd::SavedVariable indices_;
  DimVector input_sizes_;
  const char* name_ = "MaxPool2DWithIndicesBackward0";  // or AdaptiveMaxPool2DBackward0
};

// The maxima of the windows rows x cols of each [H, W] plane of input [*, H, W]: values and
// torch's indices [*, oh, ow] (Note [Max pooling as a gather]).
std::tuple<Tensor, Tensor> window_maxima(const Tensor& input, const pooling::DimWindows& rows,
                                         const pooling::DimWindows& cols) {
  const int64_t h = input.size(-2), w = input.size(-1), plane = h * w;
  const auto oh = static_cast<int64_t>(rows.first.size());
  const auto ow = static_cast<int64_t>(cols.first.size());
  const int64_t kk = rows.k * cols.k;
  const int64_t nc =
      compute_numel(IntArrayRef(input.sizes().data(), static_cast<size_t>(input.dim() - 2)));
  // Per window element: the position read (`plane`: the -inf column past each plane, for an
  // element outside the clipped window) and the index reported if it wins (an element outside
  // wins only in a window of padding only: torch's index for it, first row by first column).
  std::vector<int64_t> src, at;
  src.reserve(static_cast<size_t>(oh * ow * kk));
  at.reserve(static_cast<size_t>(oh * ow * kk));
  for (int64_t i = 0; i < oh; ++i) {
    for (int64_t j = 0; j < ow; ++j) {
      // Wrapping arithmetic: a padding-only window's torch index may be far past the plane.
      const auto empty =
          static_cast<int64_t>(static_cast<uint64_t>(rows.first[i]) * static_cast<uint64_t>(w) +
                               static_cast<uint64_t>(cols.first[j]));
      for (int64_t a = 0; a < rows.k; ++a) {
        for (int64_t b = 0; b < cols.k; ++b) {
          const bool inside = a < rows.count[i] && b < cols.count[j];
          const int64_t p =
              inside ? (rows.first[i] + a * rows.step) * w + cols.first[j] + b * cols.step : 0;
          src.push_back(inside ? p : plane);
          at.push_back(inside ? p : empty);
        }
      }
    }
  }
  const Device device = input.device();
  const Tensor x = native::reshape(input.detach(), {nc, plane});
  const Tensor ext =
      cat({x, full({nc, 1}, -std::numeric_limits<double>::infinity(), input.dtype(), device)}, 1);
  const Tensor windows = native::reshape(
      ext.index_select(1, native::to(from_vector(src, {oh * ow * kk}), device)), {nc, oh, ow, kk});
  // torch's kernels keep `val > max || isnan(val)`: the last NaN of a window, else its first
  // maximum (argmax's). A NaN's key is its 1-based position, any other element's 0. The CPU
  // skips that pass when the input holds no NaN (a cheap host check; CUDA runs it, no sync).
  Tensor arg = native::argmax(windows, 3, true);
  const bool maybe_nan =
      kk > 1 && (!device.is_cpu() ||
                 native::reduce(ReduceOp::kSum, native::unary(UnaryOp::kIsNan, x), {}, false)
                         .item<int64_t>() > 0);
  if (maybe_nan) {
    const Tensor nan = native::unary(UnaryOp::kIsNan, windows);
    const Tensor ramp = arange(Scalar(1), Scalar(kk + 1), Scalar(1), kInt64, device);
    const Tensor last_nan = native::argmax(native::binary(BinaryOp::kMul, nan, ramp), 3, true);
    arg = native::where(gather(nan, 3, last_nan), last_nan, arg);
  }
  const Tensor where =
      native::expand(native::to(from_vector(at, {1, oh, ow, kk}), device), {nc, oh, ow, kk});
  DimVector shape(input.sizes());
  shape[shape.size() - 2] = oh;
  shape[shape.size() - 1] = ow;
  return {native::reshape(gather(windows, 3, arg), shape),
          native::reshape(gather(where, 3, arg), shape)};
}

// Records `node_name` on values (indices saved, clamped to the plane) when input requires grad.
void record_max_pool(const char* node_name, const Tensor& input, const Tensor& values,
                     const Tensor& indices) {
  const int64_t plane = input.size(-2) * input.size(-1);
  const Tensor clamped = native::binary(BinaryOp::kMinimum, indices, Scalar(plane));
  // MaxPoolBackward's tangent: the tangent at the saved positions (a gather, the transpose of
  // its scatter_add), a padding-only window (position `plane`) reading 0.
  autograd::fwd::propagate(node_name, values, {input}, [&](const auto& t) {
    const int64_t nc = plane == 0 ? 0 : input.numel() / plane;
    const Tensor flat = cat({t[0].reshape({nc, plane}),
                             zeros({nc, 1}, TensorOptions(t[0].dtype()).device(t[0].device()))},
                            1);
    // Explicit sizes: reshape cannot infer -1 for an empty batch (nc = 0).
    const int64_t per_plane = nc == 0 ? 0 : clamped.numel() / nc;
    return gather(flat, 1, clamped.reshape({nc, per_plane})).view(values.sizes());
  });
  if (!autograd::compute_requires_grad_has_jvp(input)) return;
  auto node = autograd::make_node<MaxPoolBackward>(input);
  node->name_ = node_name;
  node->indices_ = autograd::SavedVariable(clamped, false);
  node->input_sizes_ = DimVector(input.sizes());
  autograd::set_history(values, node);
}

std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& input, const PoolGeometry& g) {
  Tensor values, indices;
  {
    autograd::NoGradGuard no_grad;
    std::tie(values, indices) =
        window_maxima(input, pooling::pool_windows(g, 0), pooling::pool_windows(g, 1));
  }
  record_max_pool("MaxPool2DWithIndicesBackward0", input, values, indices);
  return {values, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const PoolGeometry g = pooling::pool_geometry("max_pool2d", input, 2, kernel_size, stride,
                                                padding, dilation, ceil_mode);
  return max_pool2d_impl(input, g);
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const PoolGeometry g = pooling::pool_geometry("max_pool1d", input, 1, kernel_size, stride,
                                                padding, dilation, ceil_mode);
  auto [values, indices] = max_pool2d_impl(unsqueeze(input, -2), pooling::as_2d(g));
  return {squeeze(values, -2), native::squeeze(indices, -2)};
}

Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  const char* op = "adaptive_max_pool2d";
  if (input.dim() != 3 && input.dim() != 4) {
    throw ShapeError(str(op, ": expected 3D or 4D tensor, but got input of size ", input.sizes()));
  }
  pooling::check_floating(op, input);
  const DimVector out = pooling::per_dim(op, "output_size", output_size, 2);
  const int64_t h = input.size(-2), w = input.size(-1);
  if (out[0] < 0 || out[1] < 0) {
    throw ValueError(
        str(op, ": elements of output_size must be greater than or equal to 0, got ", out));
  }
  if (h == 0 || w == 0 || (input.dim() == 4 && input.size(1) == 0)) {
    throw ShapeError(str(op, ": expected input to have non-zero size for non-batch dimensions, ",
                         "but input has sizes ", input.sizes()));
  }
  Tensor values, indices;
  {
    autograd::NoGradGuard no_grad;
    std::tie(values, indices) = window_maxima(input, pooling::adaptive_windows(h, out[0]),
                                              pooling::adaptive_windows(w, out[1]));
  }
  record_max_pool("AdaptiveMaxPool2DBackward0", input, values, indices);
  return {values, indices};
}

}  // namespace mutagrad
