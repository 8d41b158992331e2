// Max pooling (max_pool1d/2d, adaptive_max_pool2d) and the shared pooling checks of
// pooling_util.h: see pooling_ops.h (Note [Max pooling's windows and indices]).
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
#include "tensor/native/pooling.h"
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
  r.set_ranges(in);
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
  r.set_ranges(in);
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

PoolRecord::PoolRecord(const char* name, const char* backward_name, const Tensor& input,
                       DimWindows rows, DimWindows cols)
    : name(name),
      backward_name(backward_name),
      rows(std::move(rows)),
      cols(std::move(cols)),
      input_sizes(input.sizes()),
      output_sizes(input.sizes()),
      planes(
          compute_numel(IntArrayRef(input.sizes().data(), static_cast<size_t>(input.dim() - 2)))) {
  output_sizes[output_sizes.size() - 2] = static_cast<int64_t>(this->rows.first.size());
  output_sizes.back() = static_cast<int64_t>(this->cols.first.size());
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

using pooling::DimWindows;
using pooling::PoolGeometry;

// A max pooling's record; its positions (the winners' indices clamped to the plane: a window of
// padding only reads or adds at `plane`, a dropped column) are saved by the nodes.
using MaxPoolRecord = pooling::PoolRecord;

// t [*, H, W] at the saved positions -> [*, oh, ow]: a gather, a position `plane` reading 0 (the
// transpose of max_pool_backward_op, differentiable again).
Tensor gather_positions(const MaxPoolRecord& m, const Tensor& t, const Tensor& positions) {
  const int64_t plane = m.input_sizes[m.input_sizes.size() - 2] * m.input_sizes.back();
  const int64_t outs = m.output_sizes[m.output_sizes.size() - 2] * m.output_sizes.back();
  const Tensor flat = cat({t.reshape({m.planes, plane}),
                           zeros({m.planes, 1}, TensorOptions(t.dtype()).device(t.device()))},
                          1);
  return gather(flat, 1, positions.reshape({m.planes, outs})).view(m.output_sizes);
}

// The gradient of a max pooling: g [*, oh, ow] added at the saved positions of each plane ->
// [*, H, W] (Note [Pooling kernels] in tensor/native/pooling.h), recorded as m's backward node
// when g requires grad.
Tensor max_pool_backward_op(const std::shared_ptr<const MaxPoolRecord>& m, const Tensor& g,
                            const Tensor& positions);

// The node of max_pool_backward_op: its adjoint, a gather at the saved positions.
class MaxPoolBackwardBackward final : public autograd::Node {
 public:
  const char* name() const override { return record_->backward_name; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    out[0] = gather_positions(*record_, grads[0], positions_.unpack(this));
    return out;
  }
  void visit_saved(autograd::SavedVisitor& v) override { v.visit("indices", positions_); }

  std::shared_ptr<const MaxPoolRecord> record_;
  autograd::SavedVariable positions_;
};

// The backward of a max pooling (MaxPool2DWithIndicesBackward0 / AdaptiveMaxPool2DBackward0).
class MaxPoolBackward final : public autograd::Node {
 public:
  const char* name() const override { return record_->name; }
  autograd::VariableList apply(autograd::VariableList&& grads) override {
    autograd::VariableList out(1);
    if (!grads[0].defined() || !should_compute_output(0)) return out;
    out[0] = max_pool_backward_op(record_, grads[0], indices_.unpack(this));
    return out;
  }
  void visit_saved(autograd::SavedVisitor& v) override { v.visit("result1", indices_); }

  std::shared_ptr<const MaxPoolRecord> record_;
  autograd::SavedVariable indices_;
};

Tensor max_pool_backward_op(const std::shared_ptr<const MaxPoolRecord>& m, const Tensor& g,
                            const Tensor& positions) {
  const int64_t oh = m->output_sizes[m->output_sizes.size() - 2], ow = m->output_sizes.back();
  const int64_t h = m->input_sizes[m->input_sizes.size() - 2], w = m->input_sizes.back();
  Tensor gx;
  {
    autograd::NoGradGuard no_grad;
    gx = native::reshape(
        native::max_pool2d_backward(native::reshape(g.detach(), {m->planes, oh, ow}),
                                    native::reshape(positions, {m->planes, oh, ow}), m->rows,
                                    m->cols, {m->planes, h, w}),
        m->input_sizes);
  }
  // Linear in g: its tangent is the same map of g's tangent.
  autograd::fwd::propagate(m->backward_name, gx, {g},
                           [&](const auto& t) { return max_pool_backward_op(m, t[0], positions); });
  if (autograd::compute_requires_grad_has_jvp(g)) {
    auto node = autograd::make_node<MaxPoolBackwardBackward>(g);
    node->record_ = m;
    node->positions_ = autograd::SavedVariable(positions, false);
    autograd::set_history(gx, node);
  }
  return gx;
}

// The maxima of the windows rows x cols of each [H, W] plane of input [*, H, W] and their
// positions (torch's indices), recorded as node `name` when input requires grad (Note [Max
// pooling's windows and indices]).
std::tuple<Tensor, Tensor> max_pool_op(const char* name, const char* backward_name,
                                       const Tensor& input, DimWindows rows, DimWindows cols) {
  const int64_t plane = input.size(-2) * input.size(-1);
  auto m = std::make_shared<const MaxPoolRecord>(name, backward_name, input, std::move(rows),
                                                 std::move(cols));
  Tensor values, indices;
  {
    autograd::NoGradGuard no_grad;
    std::tie(values, indices) = native::max_pool2d(
        native::reshape(input.detach(), {m->planes, m->h(), m->w()}), m->rows, m->cols);
    values = native::reshape(values, m->output_sizes);
    indices = native::reshape(indices, m->output_sizes);
  }
  if (!autograd::fwd::enabled() && !autograd::compute_requires_grad_has_jvp(input)) {
    return {values, indices};
  }
  const Tensor clamped = native::binary(BinaryOp::kMinimum, indices, Scalar(plane));
  // The tangent at the saved positions (the transpose of the backward's scatter).
  autograd::fwd::propagate(name, values, {input},
                           [&](const auto& t) { return gather_positions(*m, t[0], clamped); });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    auto node = autograd::make_node<MaxPoolBackward>(input);
    node->record_ = m;
    node->indices_ = autograd::SavedVariable(clamped, false);
    autograd::set_history(values, node);
  }
  return {values, indices};
}

std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& input, const PoolGeometry& g) {
  return max_pool_op("MaxPool2DWithIndicesBackward0", "MaxPool2DWithIndicesBackwardBackward0",
                     input, pooling::pool_windows(g, 0), pooling::pool_windows(g, 1));
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
  return max_pool_op("AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool2DBackwardBackward0", input,
                     pooling::adaptive_windows(h, out[0]), pooling::adaptive_windows(w, out[1]));
}

}  // namespace mutagrad
