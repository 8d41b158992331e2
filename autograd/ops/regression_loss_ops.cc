// l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, kl_div: see loss_ops.h.
//
// As Note [Loss forwards under no-grad, one node each] (loss_ops.cc): smooth_l1_loss,
// huber_loss and binary_cross_entropy compute under no-grad and record one FormulaNode named
// as PyTorch 1.13's (SmoothL1LossBackward0, HuberLossBackward0, BinaryCrossEntropyBackward0)
// whose formula is made of differentiable ops. l1_loss and kl_div are compositions, as torch
// 1.13 writes them (its nodes: AbsBackward0 / MeanBackward0 / SumBackward0, and for kl_div
// SubBackward0 or MulBackward0 then the reduction's).
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/formula_node.h"
#include "autograd/ops/loss_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/statistics_ops.h"
#include "autograd/ops/unary_ops.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

using autograd::make_formula_node;
using autograd::SavedList;
using autograd::VariableList;

enum class Reduction { kNone, kMean, kSum, kBatchMean };

Reduction parse_reduction(std::string_view r, const char* op, bool batchmean = false) {
  if (r == "mean") return Reduction::kMean;
  if (r == "sum") return Reduction::kSum;
  if (r == "none") return Reduction::kNone;
  if (batchmean && r == "batchmean") return Reduction::kBatchMean;
  throw ValueError(
      str(op, "(): reduction='", r, "' is not a valid value for reduction; expected ",
          batchmean ? "'none', 'batchmean', 'sum' or 'mean'" : "'none', 'mean' or 'sum'"));
}

Tensor reduce(const Tensor& losses, Reduction r) {
  if (r == Reduction::kSum) return losses.sum();
  if (r == Reduction::kMean) return losses.mean();
  return losses;
}

void check_operands(const Tensor& input, const Tensor& target, const char* op) {
  for (const Tensor* t : {&input, &target}) {
    if (!t->is_floating_point()) {
      throw DTypeError(str(op, "(): expected a floating point ", t == &input ? "input" : "target",
                           ", got ", dtype_name(t->dtype()), "; convert it with .to(kFloat32)"));
    }
  }
  check_same_device(op, input.device(), target.device());
  broadcast_shapes(input.sizes(), target.sizes(), op);  // ShapeError naming both shapes
}

// `g` (of the broadcast shape) reduced to `like`'s shape.
Tensor to_operand(const Tensor& g, const Tensor& like) {
  return g.sizes().equals(like.sizes()) ? g : sum_to(g, like.sizes());
}

// An element-wise loss of d = input - target with derivative dloss/dd = derivative(d): one
// node over (input, target).
template <typename Value, typename Derivative>
Tensor pointwise_loss(const Tensor& input, const Tensor& target, Reduction r, const char* name,
                      Value value, Derivative derivative) {
  Tensor result;
  int64_t numel = 0;
  {
    autograd::NoGradGuard no_grad;
    const Tensor losses = value(input - target);
    numel = losses.numel();
    result = reduce(losses, r);
  }
  // The node's tangent: from the composite forward above (Note [Composite tangents]).
  if (autograd::compute_requires_grad_has_jvp(input, target)) {
    auto node = make_formula_node(
        name, {input, target},
        [r, numel, derivative](const Tensor& g, const SavedList& s, const autograd::Node& n) {
          Tensor gd = derivative(s[0] - s[1]) * g;
          if (r == Reduction::kMean) gd = gd / static_cast<double>(numel);
          VariableList out(2);
          if (n.should_compute_output(0)) out[0] = to_operand(gd, s[0]);
          if (n.should_compute_output(1)) out[1] = to_operand(-gd, s[1]);
          return out;
        });
    node->save("self", input);
    node->save("target", target);
    autograd::set_history(result, node);
  }
  return result;
}

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  const char* op = "l1_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_operands(input, target, op);
  return reduce((input - target).abs(), r);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                      double beta) {
  const char* op = "smooth_l1_loss";
  const Reduction r = parse_reduction(reduction, op);
  if (beta < 0) {
    throw ValueError(str(op, "(): smooth_l1_loss does not support negative values for beta, got ",
                         beta, "; pass beta >= 0"));
  }
  check_operands(input, target, op);
  return pointwise_loss(
      input, target, r, "SmoothL1LossBackward0",
      [beta](const Tensor& d) {
        const Tensor z = d.abs();
        if (beta == 0) return z;
        return where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta);
      },
      [beta](const Tensor& d) {
        if (beta == 0) return sign(d);
        return clamp(d / beta, Scalar(-1.0), Scalar(1.0));
      });
}

Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                  double delta) {
  const char* op = "huber_loss";
  const Reduction r = parse_reduction(reduction, op);
  if (!(delta > 0)) {
    throw ValueError(str(op, "(): huber_loss does not support non-positive values for delta, got ",
                         delta, "; pass delta > 0"));
  }
  check_operands(input, target, op);
  return pointwise_loss(
      input, target, r, "HuberLossBackward0",
      [delta](const Tensor& d) {
        const Tensor z = d.abs();
        return where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta);
      },
      [delta](const Tensor& d) { return clamp(d, Scalar(-delta), Scalar(delta)); });
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            std::string_view reduction) {
  const char* op = "binary_cross_entropy";
  const Reduction r = parse_reduction(reduction, op);
  if (weight.defined() && autograd::compute_requires_grad(op, weight)) {
    throw autograd::AutogradError(
        str(op,
            "(): not differentiable with respect to argument 'weight': weight "
            "must not require grad; pass weight.detach()"));
  }
  check_operands(input, target, op);
  if (!target.sizes().equals(input.sizes())) {
    throw ShapeError(str(op, "(): using a target size (", target.sizes(),
                         ") that is different to the input size (", input.sizes(),
                         ") is not supported; please ensure they have the same size"));
  }
  if (weight.defined()) {
    check_same_device(op, input.device(), weight.device());
    if (!native::is_expandable_to(weight.sizes(), input.sizes())) {
      throw ShapeError(str(op, "(): weight of shape ", weight.sizes(),
                           " cannot be broadcast to the input's shape ", input.sizes()));
    }
  }
  {
    autograd::NoGradGuard no_grad;
    const Tensor x = input.detach();
    const bool in_range = mutagrad::all((x >= 0.0) & (x <= 1.0)).item<bool>();
    if (!in_range) {
      throw ValueError(str(op,
                           "(): all elements of input should be between 0 and 1 (they are "
                           "probabilities); apply sigmoid first or use "
                           "binary_cross_entropy_with_logits"));
    }
  }
  Tensor result;
  int64_t numel = 0;
  {
    autograd::NoGradGuard no_grad;
    // torch clamps each log at -100, so that x = 0 or 1 gives a finite loss.
    Tensor losses = -(target * clamp_min(input.log(), -100.0) +
                      (1.0 - target) * clamp_min(log1p(-input), -100.0));
    if (weight.defined()) losses = losses * weight;
    numel = losses.numel();
    result = reduce(losses, r);
  }
  // BinaryCrossEntropyBackward0's tangent: from the composite forward above (Note [Composite
  // tangents]); it differs from the node's formula only where a log is clamped at -100.
  if (autograd::compute_requires_grad_has_jvp(input, target)) {
    auto node = make_formula_node(
        "BinaryCrossEntropyBackward0", {input, target},
        [r, numel](const Tensor& g, const SavedList& s, const autograd::Node& n) {
          const Tensor& x = s[0];
          const Tensor& t = s[1];
          Tensor scale = g;
          if (s[2].defined()) scale = scale * s[2];
          if (r == Reduction::kMean) scale = scale / static_cast<double>(numel);
          VariableList out(2);
          if (n.should_compute_output(0)) {
            out[0] = (x - t) / clamp_min((1.0 - x) * x, 1e-12) * scale;
          }
          if (n.should_compute_output(1)) {
            out[1] = (clamp_min(log1p(-x), -100.0) - clamp_min(x.log(), -100.0)) * scale;
          }
          return out;
        });
    node->save("self", input);
    node->save("target", target);
    node->save("weight", weight);
    autograd::set_history(result, node);
  }
  return result;
}

Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction,
              bool log_target) {
  const char* op = "kl_div";
  const Reduction r = parse_reduction(reduction, op, /*batchmean=*/true);
  check_operands(input, target, op);
  Tensor losses;
  if (log_target) {
    losses = target.exp() * (target - input);
  } else {
    // xlogy(target, target): 0 where target is 0 (log taken of 1 there, so no NaN flows back).
    const Tensor positive = target > 0.0;
    const Tensor safe = where(positive, target, 1.0);
    losses = where(positive, target * safe.log(), 0.0) - target * input;
  }
  if (r == Reduction::kBatchMean) {
    const int64_t n = input.dim() == 0 ? 1 : input.size(0);
    // Divided by a 0-dim tensor: DivBackward0, as torch's Python division by an int.
    return losses.sum() / full({}, static_cast<double>(n), losses.dtype(), losses.device());
  }
  return reduce(losses, r);
}

}  // namespace mutagrad
