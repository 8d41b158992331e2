// Max pooling (max_pool1d/2d, adaptive_max_pool2d) and the shared pooling checks of
// pooling_util.h: see pooling_ops.h (Note [Max pooling as a gather]).
#include "autograd/ops/pooling_ops.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
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

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  if (span < 0) return span / stride;  // <= 0: too small
  int64_t out = span / stride + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
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
        pool_output_size(in, g.kernel[i], g.padding[i], g.stride[i], g.dilation[i], ceil_mode));
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
  const char* name_ = "MaxPool2DWithIndicesBackward0";  // or AdaptiveMaxPool2DBackward0
};

// values and indices of each window, given every window element's flat position `pos`
// ([*out, K], position `plane` or more: not read) and the padded windows ([N, C, *out, K]).
std::tuple<Tensor, Tensor> first_maxima(const Tensor& windows, const Tensor& pos) {
  const Tensor arg = native::argmax(windows, windows.dim() - 1, true);  // the first maximum
  const Tensor values = native::squeeze(gather(windows, windows.dim() - 1, arg), -1);
  const Tensor where = native::expand(native::to(pos, windows.device()), windows.sizes());
  const Tensor indices = native::squeeze(gather(where, windows.dim() - 1, arg), -1);
  return {values, indices};
}

// Records `node_name` on values (indices saved, clamped to the plane) when input requires grad.
void record_max_pool(const char* node_name, const Tensor& input, const Tensor& values,
                     const Tensor& indices) {
  if (!autograd::compute_requires_grad(input)) return;
  auto node = autograd::make_node<MaxPoolBackward>(input);
  node->name_ = node_name;
  const int64_t plane = input.size(-2) * input.size(-1);
  node->indices_ =
      autograd::SavedVariable(native::binary(BinaryOp::kMinimum, indices, Scalar(plane)), false);
  node->input_sizes_ = DimVector(input.sizes());
  autograd::set_history(values, node);
}

std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& input, const PoolGeometry& g) {
  const DimVector &k = g.kernel, &s = g.stride, &p = g.padding, &d = g.dilation, &out = g.out;
  const int64_t h = input.size(-2), w = input.size(-1);
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
    // Each window element's flat position in the [H, W] plane. A position in the padding gets
    // the window's first in-range row and column (stepping by dilation), torch's index when no
    // in-range element beats -inf.
    std::vector<int64_t> pos;
    pos.reserve(static_cast<size_t>(out[0] * out[1] * kk));
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
    std::tie(values, indices) = first_maxima(windows, from_vector(pos, {1, 1, out[0], out[1], kk}));
    DimVector shape(input.sizes());
    shape[shape.size() - 2] = out[0];
    shape[shape.size() - 1] = out[1];
    values = native::clone(native::reshape(values, shape));
    indices = native::clone(native::reshape(indices, shape));
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
  const int64_t n = input.dim() == 4 ? input.size(0) : 1, c = input.size(-3);
  // Window i of a dim of size `in` into `o` outputs: [floor(i in / o), ceil((i + 1) in / o)).
  auto start = [](int64_t i, int64_t in, int64_t o) { return i * in / o; };
  auto end = [](int64_t i, int64_t in, int64_t o) { return ((i + 1) * in + o - 1) / o; };
  int64_t kh = 1, kw = 1;
  for (int64_t i = 0; i < out[0]; ++i) kh = std::max(kh, end(i, h, out[0]) - start(i, h, out[0]));
  for (int64_t j = 0; j < out[1]; ++j) kw = std::max(kw, end(j, w, out[1]) - start(j, w, out[1]));
  Tensor values, indices;
  {
    autograd::NoGradGuard no_grad;
    // Each window's positions in row-major order, filled up to kh x kw with its first position
    // (a repeat of the first element never beats it: argmax keeps the first maximum).
    std::vector<int64_t> pos;
    pos.reserve(static_cast<size_t>(out[0] * out[1] * kh * kw));
    for (int64_t i = 0; i < out[0]; ++i) {
      const int64_t h0 = start(i, h, out[0]), h1 = end(i, h, out[0]);
      for (int64_t j = 0; j < out[1]; ++j) {
        const int64_t w0 = start(j, w, out[1]), w1 = end(j, w, out[1]);
        for (int64_t a = 0; a < kh; ++a) {
          for (int64_t b = 0; b < kw; ++b) {
            const bool inside = h0 + a < h1 && w0 + b < w1;
            pos.push_back(inside ? (h0 + a) * w + w0 + b : h0 * w + w0);
          }
        }
      }
    }
    const Tensor where =
        native::to(from_vector(pos, {1, out[0] * out[1] * kh * kw}), input.device());
    const Tensor x = native::reshape(input.detach(), {n * c, h * w});
    const Tensor windows =
        native::reshape(gather(x, 1, native::expand(where, {n * c, where.size(1)})),
                        {n * c, out[0], out[1], kh * kw});
    std::tie(values, indices) =
        first_maxima(windows, native::reshape(where, {1, out[0], out[1], kh * kw}));
    DimVector shape(input.sizes());
    shape[shape.size() - 2] = out[0];
    shape[shape.size() - 1] = out[1];
    values = native::clone(native::reshape(values, shape));
    indices = native::clone(native::reshape(indices, shape));
  }
  record_max_pool("AdaptiveMaxPool2DBackward0", input, values, indices);
  return {values, indices};
}

}  // namespace mutagrad
