// convolution, conv1d/2d, conv_transpose1d/2d and the three differentiable maps of Note
// [Convolution's three bilinear maps]. See convolution_ops.h.
#include "autograd/ops/convolution_ops.h"

#include <memory>
#include <string>
#include <utility>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"
#include "tensor/native/convolution.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"

namespace mutagrad {
namespace autograd {
namespace {

enum class ConvMap : int8_t { kForward, kInput, kWeight };

constexpr const char* kBackwardBackward = "ConvolutionBackwardBackward0";

// y cut to gy's spatial sizes: a grad_output smaller than the forward's output (Note in
// tensor/native/convolution.h) has the adjoint F(.)'s leading positions only.
Tensor fit(const Tensor& y, const Tensor& gy) {
  Tensor r = y;
  for (int64_t i = 2; i < y.dim(); ++i) {
    if (r.size(i) != gy.size(i)) r = r.narrow(i, 0, gy.size(i));
  }
  return r;
}

// One node for the three maps: edges (a, b[, bias]) with a, b the map's operands in order.
class ConvolutionNode final : public Node {
 public:
  ConvolutionNode(const char* name, ConvMap map, ConvParams params)
      : name_(name), map_(map), params_(std::move(params)) {}
  const char* name() const override { return name_; }

  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    const Tensor& h = grads[0];
    if (!h.defined()) return out;
    const Tensor a = a_.unpack(this), b = b_.unpack(this);
    const bool ga = should_compute_output(0), gb = should_compute_output(1);
    switch (map_) {
      case ConvMap::kForward:  // y = F(x = a, w = b)
        if (ga) out[0] = conv_backward_input(h, b, params_, a.sizes(), kBackwardBackward);
        if (gb) out[1] = conv_backward_weight(a, h, params_, b.sizes(), kBackwardBackward);
        break;
      case ConvMap::kInput:  // gx = Bx(gy = a, w = b)
        if (ga) out[0] = fit(conv_forward(h, b, params_, kBackwardBackward), a);
        if (gb) out[1] = conv_backward_weight(h, a, params_, b.sizes(), kBackwardBackward);
        break;
      case ConvMap::kWeight:  // gw = Bw(x = a, gy = b)
        if (ga) out[0] = conv_backward_input(b, h, params_, a.sizes(), kBackwardBackward);
        if (gb) out[1] = fit(conv_forward(a, h, params_, kBackwardBackward), b);
        break;
    }
    if (num_outputs() > 2 && should_compute_output(2)) {
      DimVector dims{0};
      for (int64_t i = 2; i < h.dim(); ++i) dims.push_back(i);
      out[2] = h.sum(dims, false);
    }
    return out;
  }

  void visit_saved(SavedVisitor& v) override {
    v.visit(map_ == ConvMap::kInput ? "grad_output" : "input", a_);
    v.visit(map_ == ConvMap::kWeight ? "grad_output" : "weight", b_);
  }

  SavedVariable a_, b_;

 private:
  const char* name_;
  ConvMap map_;
  ConvParams params_;
};

Edge edge_of(const Tensor& t) { return t.defined() ? gradient_edge(t) : Edge(); }

// map(a, b) [+ bias over dim 1], recorded as `name` when any operand requires grad.
Tensor conv_map(ConvMap map, const Tensor& a, const Tensor& b, const Tensor& bias,
                const ConvParams& p, IntArrayRef size, const char* name) {
  Tensor r;
  switch (map) {
    case ConvMap::kForward:
      r = native::conv_forward(a, b, p);
      break;
    case ConvMap::kInput:
      r = native::conv_backward_input(a, b, p, size);
      break;
    case ConvMap::kWeight:
      r = native::conv_backward_weight(a, b, p, size);
      break;
  }
  if (bias.defined()) {
    DimVector shape(static_cast<size_t>(r.dim()), 1);
    shape[1] = bias.numel();
    // r is the map's fresh output, seen by nobody yet: the bias is added into it (no second
    // output-sized buffer; the same bits as r + bias).
    native::binary_out(BinaryOp::kAdd, r, r, native::view(bias, shape));
  }
  // ConvolutionNode's tangent: each map is bilinear in (a, b), plus the bias's tangent.
  fwd::propagate(name, r, {a, b, bias}, [&](const auto& t) {
    Tensor out = fwd::bilinear_tangent(
        [&](const Tensor& x, const Tensor& y) {
          return conv_map(map, x, y, Tensor(), p, size, name);
        },
        a, b, t[0], t[1]);
    if (t[2].defined()) {
      DimVector shape(static_cast<size_t>(r.dim()), 1);
      shape[1] = t[2].numel();
      out = out.defined() ? out.add(t[2].view(shape)) : t[2].view(shape).expand(r.sizes());
    }
    return out;
  });
  if (compute_requires_grad_has_jvp(a, b, bias)) {
    auto node = std::make_shared<ConvolutionNode>(name, map, p);
    EdgeList edges{edge_of(a), edge_of(b)};
    if (bias.defined()) edges.push_back(edge_of(bias));
    node->set_next_edges(std::move(edges));
    node->a_ = SavedVariable(a, false);
    node->b_ = SavedVariable(b, false);
    set_history(r, node);
  }
  return r;
}

}  // namespace

Tensor conv_forward(const Tensor& x, const Tensor& w, const ConvParams& p, const char* node_name) {
  return conv_map(ConvMap::kForward, x, w, Tensor(), p, {}, node_name);
}

Tensor conv_backward_input(const Tensor& gy, const Tensor& w, const ConvParams& p,
                           IntArrayRef input_size, const char* node_name) {
  return conv_map(ConvMap::kInput, gy, w, Tensor(), p, input_size, node_name);
}

Tensor conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvParams& p,
                            IntArrayRef weight_size, const char* node_name) {
  return conv_map(ConvMap::kWeight, x, gy, Tensor(), p, weight_size, node_name);
}

}  // namespace autograd

namespace {

using autograd::ConvMap;

// A one-element list stands for every spatial dim; otherwise one value per dim.
DimVector per_dim(const char* op, const char* what, IntArrayRef v, int64_t d) {
  if (v.size() == 1) return DimVector(static_cast<size_t>(d), v[0]);
  if (static_cast<int64_t>(v.size()) != d) {
    throw ValueError(str(op, ": expected ", what, " to be a single integer value or a list of ", d,
                         " values to match the convolution dimensions, but got ", what, "=", v));
  }
  return DimVector(v);
}

// Checks that hold for both directions: dtypes, devices, the weight's rank and the bias.
void check_common(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (w.dim() != x.dim()) {
    throw ShapeError(str(op, ": expected a ", x.dim(), "-D weight for a ", x.dim(),
                         "-D input of size ", x.sizes(), ", got weight of size ", w.sizes()));
  }
  if (!x.is_floating_point()) {
    throw DTypeError(str(op, ": expected a floating-point input, got ", dtype_name(x.dtype()),
                         "; convert it with .to(kFloat32)"));
  }
  if (w.dtype() != x.dtype()) {
    throw DTypeError(str(op, ": input type (", dtype_name(x.dtype()), ") and weight type (",
                         dtype_name(w.dtype()), ") should be the same"));
  }
  check_same_device(op, x.device(), w.device());
  if (bias.defined()) {
    if (bias.dtype() != x.dtype()) {
      throw DTypeError(str(op, ": input type (", dtype_name(x.dtype()), ") and bias type (",
                           dtype_name(bias.dtype()), ") should be the same"));
    }
    check_same_device(op, x.device(), bias.device());
  }
}

void check_bias(const char* op, const Tensor& w, const Tensor& bias, int64_t out_channels) {
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out_channels)) {
    throw ShapeError(str(op, ": given weight of size ", w.sizes(),
                         ", expected bias to be 1-dimensional with ", out_channels,
                         " elements, but got bias of size ", bias.sizes(), " instead"));
  }
}

Tensor conv_impl(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                 const ConvParams& p, bool transposed, IntArrayRef output_padding) {
  check_common(op, x, w, bias);
  if (!transposed) {
    native::check_conv_operands(op, x, w, p);
    check_bias(op, w, bias, w.size(0));
    return autograd::conv_map(ConvMap::kForward, x, w, bias, p, {}, "ConvolutionBackward0");
  }
  // The transposed convolution is Bx: x plays grad_output, the result the input of size `size`.
  if (p.groups <= 0) {
    throw ValueError(str(op, ": non-positive groups is not supported, got groups=", p.groups));
  }
  if (w.size(0) % p.groups != 0) {
    throw ShapeError(str(op, ": given groups=", p.groups, ", expected weight to be divisible by ",
                         p.groups, " at dimension 0, but got weight of size ", w.sizes(),
                         " instead"));
  }
  if (x.size(1) != w.size(0)) {
    throw ShapeError(str(op, ": given transposed=1, weight of size ", w.sizes(), ", expected input",
                         x.sizes(), " to have ", w.size(0), " channels, but got ", x.size(1),
                         " channels instead"));
  }
  const int64_t d = x.dim() - 2;
  DimVector size{x.size(0), w.size(1) * p.groups};
  for (int64_t i = 0; i < d; ++i) {
    if (p.stride[i] <= 0 || p.dilation[i] <= 0 || p.padding_l[i] < 0) {
      native::check_conv_operands(op, x, w, p);  // throws the message of the bad value
    }
    if (output_padding[i] < 0 ||
        (output_padding[i] >= p.stride[i] && output_padding[i] >= p.dilation[i])) {
      throw ValueError(str(op, ": output padding must be smaller than either stride or dilation, ",
                           "got output_padding ", output_padding, ", stride ", p.stride,
                           " and dilation ", p.dilation));
    }
    const int64_t n = (x.size(i + 2) - 1) * p.stride[i] - p.padding_l[i] - p.padding_r[i] +
                      p.dilation[i] * (w.size(i + 2) - 1) + output_padding[i] + 1;
    if (n <= 0) {
      throw ShapeError(str(op, ": the output size ", n, " at spatial dim ", i,
                           " is too small (input of size ", x.sizes(), ", weight of size ",
                           w.sizes(), ", stride ", p.stride, ", padding ", p.padding_l,
                           ", dilation ", p.dilation, ", output_padding ", output_padding,
                           "); it must be positive"));
    }
    size.push_back(n);
  }
  check_bias(op, w, bias, size[1]);
  return autograd::conv_map(ConvMap::kInput, x, w, bias, p, size, "ConvolutionBackward0");
}

ConvParams make_params(const char* op, int64_t d, IntArrayRef stride, IntArrayRef pad_l,
                       IntArrayRef pad_r, IntArrayRef dilation, int64_t groups) {
  return ConvParams{per_dim(op, "stride", stride, d), per_dim(op, "padding", pad_l, d),
                    per_dim(op, "padding", pad_r, d), per_dim(op, "dilation", dilation, d), groups};
}

// conv1d/conv2d/conv_transpose*d: an unbatched input [C, *in] gains and loses the batch dim.
Tensor conv_nd(const char* op, int64_t d, const Tensor& input, const Tensor& weight,
               const Tensor& bias, const ConvParams& p, bool transposed,
               IntArrayRef output_padding) {
  if (input.dim() != d + 1 && input.dim() != d + 2) {
    throw ShapeError(str("Expected ", d + 1, "D (unbatched) or ", d + 2, "D (batched) input to ",
                         op, ", but got input of size: ", input.sizes()));
  }
  const bool unbatched = input.dim() == d + 1;
  const Tensor x = unbatched ? input.unsqueeze(0) : input;
  const Tensor r = conv_impl(op, x, weight, bias, p, transposed, output_padding);
  return unbatched ? r.squeeze(0) : r;
}

Tensor conv_nd_padding(const char* op, int64_t d, const Tensor& input, const Tensor& weight,
                       const Tensor& bias, IntArrayRef stride, ConvPadding padding,
                       IntArrayRef dilation, int64_t groups) {
  DimVector pl(static_cast<size_t>(d), 0), pr(static_cast<size_t>(d), 0);
  const DimVector s = per_dim(op, "stride", stride, d), dil = per_dim(op, "dilation", dilation, d);
  if (padding == ConvPadding::kSame) {
    for (int64_t v : s) {
      if (v != 1) {
        throw ValueError(str(op, ": padding='same' is not supported for strided convolutions, ",
                             "got stride ", s));
      }
    }
    if (weight.dim() == d + 2) {
      for (int64_t i = 0; i < d; ++i) {
        const int64_t total = dil[i] * (weight.size(i + 2) - 1);
        pl[i] = total / 2;
        pr[i] = total - pl[i];
      }
    }
  }
  return conv_nd(op, d, input, weight, bias, ConvParams{s, pl, pr, dil, groups}, false, {});
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  const char* op = "convolution";
  if (input.dim() < 3) {
    throw ShapeError(str(op, ": expected an input [batch, channels, spatial...] of at least 3 ",
                         "dims, got input of size ", input.sizes()));
  }
  const int64_t d = input.dim() - 2;
  const ConvParams p = make_params(op, d, stride, padding, padding, dilation, groups);
  const DimVector op_pad = per_dim(op, "output_padding", output_padding, d);
  return conv_impl(op, input, weight, bias, p, transposed, op_pad);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias,
                 make_params("conv1d", 1, stride, padding, padding, dilation, groups), false, {});
}

ConvPadding conv_padding_mode(const char* op, std::string_view padding) {
  if (padding == "same") return ConvPadding::kSame;
  if (padding == "valid") return ConvPadding::kValid;
  throw ValueError(
      str(op, ": invalid padding string '", padding, "', should be one of {'valid', 'same'}"));
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd_padding("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias,
                 make_params("conv2d", 2, stride, padding, padding, dilation, groups), false, {});
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd_padding("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose1d";
  return conv_nd(op, 1, input, weight, bias,
                 make_params(op, 1, stride, padding, padding, dilation, groups), true,
                 per_dim(op, "output_padding", output_padding, 1));
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose2d";
  return conv_nd(op, 2, input, weight, bias,
                 make_params(op, 2, stride, padding, padding, dilation, groups), true,
                 per_dim(op, "output_padding", output_padding, 2));
}

}  // namespace mutagrad
