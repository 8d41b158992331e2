// layer_norm, group_norm, batch_norm, normalize: see nn_ops.h.
//
// Note [Normalization backward recomputes the statistics]
// NativeLayerNormBackward0, NativeGroupNormBackward0 and NativeBatchNormBackward0 save the
// input (and weight), not mean and rstd: the formula recomputes x_hat = (x - mean) * rstd from
// the input with differentiable ops and applies PyTorch's
//   dx = rstd * (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)),  dx_hat = g * weight
// over the normalized dims, so the gradient differentiates again with respect to the input as
// well as the weight (the statistics' own dependence on x is part of that graph). The cost is
// one more pass over the input per backward.
//
// Note [Running statistics are tracked writes]
// batch_norm in training writes running_mean and running_var with one version bump each (op
// "batch_norm", the caller's file:line) through the mutation engine, after every argument was
// checked and both new values were computed: a rejected call changes nothing. torch 1.13 updates
// them inside its kernel without a bump; here a graph that saved a running statistic (an eval
// forward) is refused after a training forward wrote it, naming the write.
#include <memory>

#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/formula_node.h"
#include "autograd/ops/inplace_ops.h"
#include "autograd/ops/nn_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/statistics_ops.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/ops/view_ops.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

using autograd::make_formula_node;
using autograd::SavedList;
using autograd::VariableList;

void check_floating_arg(const Tensor& t, const char* op, const char* what) {
  if (t.defined() && !t.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a floating point ", what, ", got ",
                         dtype_name(t.dtype()), "; convert it with .to(kFloat32)"));
  }
}

void check_param(const Tensor& t, IntArrayRef shape, const Tensor& input, const char* op,
                 const char* what) {
  if (!t.defined()) return;
  if (!t.sizes().equals(shape)) {
    throw ShapeError(str(op, "(): expected ", what, " of shape ", shape, " for an input of shape ",
                         input.sizes(), ", got ", t.sizes(), "; pass one value per ",
                         "normalized element or none"));
  }
  check_floating_arg(t, op, what);
  check_same_device(op, input.device(), t.device());
}

// x_hat = (x - mean) * rstd over `dims` (keepdim), with differentiable ops; rstd out.
Tensor normalized(const Tensor& x, IntArrayRef dims, double eps, Tensor* rstd_out = nullptr) {
  const Tensor centered = x - mean(x, dims, /*keepdim=*/true);
  const Tensor rstd = rsqrt(mean(centered * centered, dims, /*keepdim=*/true) + eps);
  if (rstd_out != nullptr) *rstd_out = rstd;
  return centered * rstd;
}

// PyTorch's input gradient of normalization over `dims`, given dx_hat (see the Note).
Tensor normalized_input_grad(const Tensor& x, const Tensor& gxhat, IntArrayRef dims, double eps) {
  Tensor rstd;
  const Tensor xhat = normalized(x, dims, eps, &rstd);
  return rstd * (gxhat - mean(gxhat, dims, true) - xhat * mean(gxhat * xhat, dims, true));
}

// [C] -> [1, C, 1, ...] for an input of `ndim` dims.
Tensor channel_view(const Tensor& t, int64_t ndim) {
  DimVector shape(static_cast<size_t>(ndim), 1);
  shape[1] = t.numel();
  return view(t, shape);
}

DimVector all_but_channel(int64_t ndim) {
  DimVector dims{0};
  for (int64_t d = 2; d < ndim; ++d) dims.push_back(d);
  return dims;
}

}  // namespace

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  const char* op = "layer_norm";
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const int64_t nd = input.dim();
  bool ok = k >= 1 && nd >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.size(nd - k + i) == normalized_shape[i];
  if (!ok) {
    throw ShapeError(str(op, "(): given normalized_shape=", normalized_shape,
                         ", expected input with shape [*, ", normalized_shape,
                         "], but got input of size ", input.sizes(),
                         "; normalized_shape must be the input's last dims"));
  }
  check_floating_arg(input, op, "input");
  check_param(weight, normalized_shape, input, op, "weight");
  check_param(bias, normalized_shape, input, op, "bias");
  DimVector dims;
  for (int64_t d = nd - k; d < nd; ++d) dims.push_back(d);
  const DimVector shape(normalized_shape);
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = normalized(input, dims, eps);
    if (weight.defined()) result = result * weight;
    if (bias.defined()) result = result + bias;
  }
  // The node's tangent: from the composite forward above (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(input, weight, bias)) {
    auto node = make_formula_node(
        "NativeLayerNormBackward0", {input, weight, bias},
        [dims, shape, eps](const Tensor& g, const SavedList& s, const autograd::Node& n) {
          const Tensor& x = s[0];
          const Tensor& w = s[1];
          VariableList out(3);
          if (n.should_compute_output(0)) {
            out[0] = normalized_input_grad(x, w.defined() ? g * w : g, dims, eps);
          }
          if (n.should_compute_output(1)) out[1] = sum_to(g * normalized(x, dims, eps), shape);
          if (n.should_compute_output(2)) out[2] = sum_to(g, shape);
          return out;
        });
    node->save("input", input);
    node->save("weight", weight);
    autograd::set_history(result, node);
  }
  return result;
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const char* op = "group_norm";
  if (input.dim() < 2) {
    throw ShapeError(str(op, "(): expected an input of at least 2 dims [N, C, *], got shape ",
                         input.sizes(), "; add a batch dim with unsqueeze(0)"));
  }
  const int64_t n = input.size(0), c = input.size(1);
  if (num_groups <= 0 || c % num_groups != 0) {
    throw ShapeError(str(op,
                         "(): expected number of channels in input to be divisible by "
                         "num_groups, but got input of shape ",
                         input.sizes(), " and num_groups=", num_groups));
  }
  check_floating_arg(input, op, "input");
  const DimVector cshape{c};
  check_param(weight, cshape, input, op, "weight");
  check_param(bias, cshape, input, op, "bias");
  const DimVector in_shape(input.sizes());
  const int64_t groups = n * num_groups;
  const DimVector grouped{n, num_groups, groups == 0 ? 0 : input.numel() / groups};
  const DimVector gdims{2};
  const int64_t nd = input.dim();
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = reshape(normalized(reshape(input, grouped), gdims, eps), in_shape);
    if (weight.defined()) result = result * channel_view(weight, nd);
    if (bias.defined()) result = result + channel_view(bias, nd);
  }
  // The node's tangent: from the composite forward above (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(input, weight, bias)) {
    auto node = make_formula_node(
        "NativeGroupNormBackward0", {input, weight, bias},
        [grouped, gdims, in_shape, nd, eps](const Tensor& g, const SavedList& s,
                                            const autograd::Node& node) {
          const Tensor& x = s[0];
          const Tensor& w = s[1];
          VariableList out(3);
          if (node.should_compute_output(0)) {
            const Tensor gxhat = w.defined() ? g * channel_view(w, nd) : g;
            out[0] = reshape(
                normalized_input_grad(reshape(x, grouped), reshape(gxhat, grouped), gdims, eps),
                in_shape);
          }
          if (node.should_compute_output(1)) {
            const Tensor xhat = reshape(normalized(reshape(x, grouped), gdims, eps), in_shape);
            out[1] = sum(g * xhat, all_but_channel(nd));
          }
          if (node.should_compute_output(2)) out[2] = sum(g, all_but_channel(nd));
          return out;
        });
    node->save("input", input);
    node->save("weight", weight);
    autograd::set_history(result, node);
  }
  return result;
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps, CallSite site) {
  const char* op = "batch_norm";
  if (input.dim() < 2) {
    throw ShapeError(str(op, "(): expected an input of at least 2 dims [N, C, *], got shape ",
                         input.sizes(), "; add a batch dim with unsqueeze(0)"));
  }
  check_floating_arg(input, op, "input");
  const int64_t nd = input.dim();
  const int64_t c = input.size(1);
  const DimVector cshape{c};
  check_param(weight, cshape, input, op, "weight");
  check_param(bias, cshape, input, op, "bias");
  check_param(running_mean, cshape, input, op, "running_mean");
  check_param(running_var, cshape, input, op, "running_var");
  if (!training && (!running_mean.defined() || !running_var.defined())) {
    throw ValueError(str(op,
                         "(): running_mean and running_var must be defined in evaluation "
                         "mode (training=false); pass them or training=true"));
  }
  if (training && running_mean.defined() != running_var.defined()) {
    throw ValueError(str(op, "(): pass both running_mean and running_var or neither"));
  }
  // An empty input is returned as a copy (CloneBackward0) and writes nothing, as torch's.
  if (input.numel() == 0) return input.clone();
  const int64_t per_channel = input.numel() / c;
  if (training && per_channel <= 1) {
    throw ValueError(str("Expected more than 1 value per channel when training, got input size ",
                         input.sizes()));
  }
  const DimVector dims = all_but_channel(nd);
  Tensor result;
  Tensor new_mean, new_var;
  {
    autograd::NoGradGuard no_grad;
    if (training) {
      const Tensor batch_mean = mean(input, dims);
      const Tensor centered = input - channel_view(batch_mean, nd);
      const Tensor biased_var = mean(centered * centered, dims);
      result = centered * channel_view(rsqrt(biased_var + eps), nd);
      if (running_mean.defined()) {
        const double unbias = static_cast<double>(per_channel) / (per_channel - 1);
        // Detached: the running statistics get no tangent (torch's forward AD).
        new_mean = (running_mean * (1.0 - momentum) +
                    batch_mean.detach().to(running_mean.dtype()) * momentum);
        new_var = (running_var * (1.0 - momentum) +
                   (biased_var.detach() * unbias).to(running_var.dtype()) * momentum);
      }
    } else {
      result = (input - channel_view(running_mean.to(input.dtype()), nd)) *
               channel_view(rsqrt(running_var.to(input.dtype()) + eps), nd);
    }
    if (weight.defined()) result = result * channel_view(weight, nd);
    if (bias.defined()) result = result + channel_view(bias, nd);
  }
  // The node's tangent: from the composite forward above (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(input, weight, bias)) {
    auto node = make_formula_node(
        "NativeBatchNormBackward0", {input, weight, bias},
        [dims, nd, eps, training](const Tensor& g, const SavedList& s, const autograd::Node& n) {
          const Tensor& x = s[0];
          const Tensor& w = s[1];
          VariableList out(3);
          const Tensor gxhat = w.defined() ? g * channel_view(w, nd) : g;
          if (training) {
            if (n.should_compute_output(0)) out[0] = normalized_input_grad(x, gxhat, dims, eps);
            if (n.should_compute_output(1)) out[1] = sum(g * normalized(x, dims, eps), dims);
          } else {
            const Tensor rstd = channel_view(rsqrt(s[3].to(x.dtype()) + eps), nd);
            if (n.should_compute_output(0)) out[0] = gxhat * rstd;
            if (n.should_compute_output(1)) {
              out[1] = sum(g * (x - channel_view(s[2].to(x.dtype()), nd)) * rstd, dims);
            }
          }
          if (n.should_compute_output(2)) out[2] = sum(g, dims);
          return out;
        });
    node->save("input", input);
    node->save("weight", weight);
    // The running statistics are read by the eval formula only (training writes them below).
    node->save("running_mean", training ? Tensor() : running_mean);
    node->save("running_var", training ? Tensor() : running_var);
    autograd::set_history(result, node);
  }
  if (new_mean.defined()) {  // Note [Running statistics are tracked writes]
    autograd::NoGradGuard no_grad;
    const MutationSite ms{"batch_norm", site.file, site.line};
    autograd::copy_(running_mean, new_mean, ms);
    autograd::copy_(running_var, new_var, ms);
  }
  return result;
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
  check_floating_arg(input, "normalize", "input");
  const int64_t d = wrap_dim(dim, input.dim() == 0 ? 1 : input.dim(), "normalize");
  const Tensor denom = clamp_min(norm(input, p, {d}, /*keepdim=*/true), eps);
  return input / denom.expand_as(input);
}

}  // namespace mutagrad
