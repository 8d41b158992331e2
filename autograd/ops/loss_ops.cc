// nll_loss, cross_entropy, mse_loss, binary_cross_entropy_with_logits: see loss_ops.h.
//
// Note [Loss forwards under no-grad, one node each]
// Each loss computes its value with differentiable ops under a NoGradGuard (no graph), then
// records one node named as PyTorch's whose backward formula is written with differentiable
// ops, so double backward (gradgradcheck, HVP) works. All validation (dtypes, shapes, class
// index range, reduction) happens before any computation.
#include "autograd/ops/loss_ops.h"

#include <memory>
#include <vector>

#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/activation_ops.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/index_family_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/scatter_ops.h"
#include "autograd/ops/take_put_ops.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

enum class Reduction { kNone, kMean, kSum };

Reduction parse_reduction(std::string_view r, const char* op) {
  if (r == "mean") return Reduction::kMean;
  if (r == "sum") return Reduction::kSum;
  if (r == "none") return Reduction::kNone;
  throw ValueError(str(op, "(): reduction='", r,
                       "' is not a valid value for reduction; expected 'none', 'mean' or 'sum'"));
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  if (!t.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a floating point ", what, ", got ",
                         dtype_name(t.dtype()), "; convert it with .to(kFloat32)"));
  }
}

// weight / pos_weight are constants (torch: "not differentiable with respect to argument").
void check_constant(const Tensor& t, const char* arg, const char* op) {
  if (t.defined() && compute_requires_grad(op, t)) {
    throw AutogradError(str(op, "(): not differentiable with respect to argument '", arg,
                            "': ", arg, " must not require grad; pass ", arg, ".detach()"));
  }
}

// weight: one per class, 1-D of C elements; returned in the input's dtype.
Tensor class_weight(const Tensor& weight, const Tensor& input, int64_t classes, const char* op) {
  if (!weight.defined()) return weight;
  if (weight.dim() != 1 || weight.numel() != classes) {
    throw ShapeError(str(op, "(): weight must hold one value per class (shape [", classes,
                         "]) for an input with ", classes, " classes, got shape ", weight.sizes(),
                         "; pass a 1-D weight of ", classes, " elements or none"));
  }
  check_floating(weight, op, "weight");
  check_same_device(op, weight.device(), input.device());
  return weight.dtype() == input.dtype() ? weight : weight.to(input.dtype());
}

Tensor reduce(const Tensor& losses, Reduction r) {
  if (r == Reduction::kSum) return losses.sum();
  if (r == Reduction::kMean) return losses.mean();
  return losses;
}

// ---- nll_loss ----------------------------------------------------------------------------------

// Validates input/target for nll_loss: floating input of >= 1 dims, int64 target of the
// matching shape on the same device, every class index in [0, C) or ignore_index.
void check_nll(const Tensor& input, const Tensor& target, int64_t ignore_index, const char* op) {
  check_floating(input, op, "input (log-probabilities)");
  if (input.dim() == 0) {
    throw ShapeError(str(op,
                         "(): input must have at least 1 dim ([C] or [N, C, d1, ...]), got a "
                         "0-dim tensor; unsqueeze it or pass class scores"));
  }
  if (target.dtype() != kInt64) {
    throw DTypeError(str(op, "(): expected a target of class indices of dtype int64, got ",
                         dtype_name(target.dtype()), "; convert it with .to(kInt64)"));
  }
  check_same_device(op, input.device(), target.device());
  const int64_t nd = input.dim();
  if (nd == 1 && target.dim() != 0) {
    throw ShapeError(str(op, "(): for one sample (input of shape ", input.sizes(),
                         ") the target must be 0-dim (one class index), got shape ", target.sizes(),
                         "; or pass a batch: input [N, C] and target [N]"));
  }
  if (nd >= 2) {
    bool ok = target.dim() == nd - 1;
    for (int64_t d = 0; ok && d < nd - 1; ++d) {
      ok = target.size(d) == input.size(d == 0 ? 0 : d + 1);
    }
    if (!ok) {
      DimVector want;
      for (int64_t d = 0; d < nd; ++d) {
        if (d != 1) want.push_back(input.size(d));
      }
      throw ShapeError(str(op, "(): expected a target of shape ", IntArrayRef(want),
                           " (the input's shape ", input.sizes(), " without the class dim 1), got ",
                           target.sizes(), "; the batch sizes (", input.size(0), " vs ",
                           target.dim() > 0 ? target.size(0) : 0, ") and spatial dims must match"));
    }
  }
  const int64_t classes = input.size(nd == 1 ? 0 : 1);
  // On a device the targets (ignored ones as 0) are screened there: one kernel and one flag
  // read (Backend::index_in_range), no copy. The CPU, and a device whose screen finds an
  // offender, read them on the host for the first offender's message.
  if (!target.device().is_cpu() && target.numel() > 0) {
    const Tensor valid = native::binary(BinaryOp::kNe, target, Scalar(ignore_index));
    const Tensor zero = native::wrap_scalar(int64_t{0}, kInt64, target.device());
    if (backend_for(target.device())
            .index_in_range(native::where(valid, target, zero), 0, classes)) {
      return;
    }
  }
  const Tensor host = native::contiguous(native::to(target, kCPU));
  const int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    const int64_t v = p[i];
    if (v != ignore_index && (v < 0 || v >= classes)) {
      throw IndexOutOfRangeError(
          str(op, "(): target ", v, " is out of bounds: class indices must be in [0, ", classes - 1,
              "] for an input with ", classes, " classes, or equal ignore_index (", ignore_index,
              "); found at flat position ", i, " of the target"));
    }
  }
}

class NllLossBackward0 final : public Node {
 public:
  // PyTorch runs inputs of 3 or more dims through nll_loss2d (NllLoss2DBackward0).
  const char* name() const override { return spatial_ ? "NllLoss2DBackward0" : "NllLossBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    Tensor g = grads[0];
    if (reduction_ == Reduction::kNone && one_sample_) g = g.unsqueeze(0);
    Tensor c = coef_ * g.neg();  // -weight[target] * grad; 0 where ignored
    // Ignored entries get 0 even when every entry is ignored (total weight 0), as PyTorch.
    if (reduction_ == Reduction::kMean) c = where(valid_, c / total_weight_, 0.0);
    Tensor zero = zeros(sizes_, TensorOptions(coef_.dtype()).device(coef_.device()));
    Tensor grad_input = zero.scatter_add(1, index_, c.unsqueeze(1));
    return {one_sample_ ? grad_input.squeeze(0) : grad_input};
  }
  Reduction reduction_ = Reduction::kMean;
  bool one_sample_ = false;
  bool spatial_ = false;
  DimVector sizes_;      // the input's, as [N, C, ...]
  Tensor index_;         // the class indices (ignored ones as 0), unsqueezed at dim 1
  Tensor coef_;          // weight[target], 0 where ignored, the target's shape
  Tensor valid_;         // bool, the target's shape: not ignore_index
  Tensor total_weight_;  // 0-dim: the sum of coef_ (mean)
};

}  // namespace
}  // namespace autograd

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, std::string_view reduction) {
  using namespace autograd;
  const char* op = "nll_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_constant(weight, "weight", op);
  check_nll(input, target, ignore_index, op);
  const bool one_sample = input.dim() == 1;
  const Tensor w = class_weight(weight, input, input.size(one_sample ? 0 : 1), op);
  Tensor result, index, coef, total, valid;
  {
    NoGradGuard no_grad;
    const Tensor in = one_sample ? input.unsqueeze(0) : input;
    const Tensor tgt = one_sample ? target.unsqueeze(0) : target;
    valid = ne(tgt, Scalar(ignore_index));
    index = where(valid, tgt, Scalar(int64_t{0})).unsqueeze(1);
    const Tensor picked = in.gather(1, index).squeeze(1);
    coef = w.defined() ? w.index_select(0, index.flatten()).view(tgt.sizes()) : ones_like(picked);
    coef = where(valid, coef, Scalar(0.0));
    const Tensor losses = where(valid, picked.neg() * coef, Scalar(0.0));
    if (r == Reduction::kNone) {
      result = one_sample ? losses.squeeze(0) : losses;
    } else {
      result = losses.sum();
      if (r == Reduction::kMean) {
        total = coef.sum();
        result = result / total;
      }
    }
  }
  // NllLossBackward0's tangent: from the composite forward above (Note [Composite tangents]).
  if (compute_requires_grad_has_jvp(input)) {
    auto node = make_node<NllLossBackward0>(input);
    node->reduction_ = r;
    node->one_sample_ = one_sample;
    node->spatial_ = input.dim() >= 3;
    node->sizes_ = DimVector(input.sizes());
    if (one_sample) node->sizes_ = DimVector{1, input.size(0)};
    node->index_ = index;
    node->coef_ = coef;
    node->valid_ = valid;
    node->total_weight_ = total;
    set_history(result, node);
    // PyTorch reshapes a >= 3-dim input to 4 dims for nll_loss2d and views the unreduced
    // result back (ViewBackward0 over NllLoss2DBackward0): the same graph here.
    if (node->spatial_ && r == Reduction::kNone) result = result.view(result.sizes());
  }
  return result;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, std::string_view reduction, double label_smoothing) {
  using namespace autograd;
  const char* op = "cross_entropy";
  const Reduction r = parse_reduction(reduction, op);
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    throw ValueError(
        str(op, "(): label_smoothing must be between 0.0 and 1.0, got ", label_smoothing));
  }
  check_constant(weight, "weight", op);
  check_floating(input, op, "input (class scores)");
  if (input.dim() == 0) {
    throw ShapeError(str(op,
                         "(): input must have at least 1 dim ([C] or [N, C, d1, ...]), got a "
                         "0-dim tensor"));
  }
  const int64_t cls = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(cls);
  // The class dim of weight, for broadcasting against [N, C, d1, ...].
  DimVector wshape(static_cast<size_t>(input.dim()), 1);
  wshape[static_cast<size_t>(cls)] = classes;

  if (target.sizes().equals(input.sizes())) {  // class probabilities
    if (!target.is_floating_point()) {
      throw DTypeError(str(op, "(): a target of the input's shape ", input.sizes(),
                           " holds class probabilities and must be floating point, got ",
                           dtype_name(target.dtype()),
                           "; for class indices pass an int64 target without the class dim"));
    }
    check_same_device(op, input.device(), target.device());
    const Tensor w = class_weight(weight, input, classes, op);
    const Tensor lsm = log_softmax(input, cls);
    const Tensor t =
        label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / classes : target;
    Tensor prod = lsm * t;
    if (w.defined()) prod = prod * w.view(wshape);
    if (r == Reduction::kNone) return -prod.sum({cls});
    if (r == Reduction::kSum) return -prod.sum();
    const int64_t samples = classes == 0 ? 0 : input.numel() / classes;
    return -prod.sum() / static_cast<double>(samples);  // 0 samples: 0 / 0 = NaN, as torch
  }

  if (target.is_floating_point()) {
    throw ShapeError(str(op,
                         "(): a floating point target holds class probabilities and must "
                         "have the input's shape ",
                         input.sizes(), ", got ", target.sizes(),
                         "; for class indices pass an int64 target without the class dim"));
  }
  check_nll(input, target, ignore_index, op);  // before any computation
  const Tensor lsm = log_softmax(input, cls);
  const Tensor nll = nll_loss(lsm, target, weight, ignore_index, reduction);
  if (label_smoothing == 0) return nll;
  // PyTorch's cross_entropy_loss_label_smoothing: the loss against the uniform distribution,
  // weighted per class, ignored entries 0, "mean" normalised as nll_loss's.
  const Tensor w = class_weight(weight, input, classes, op);
  const Tensor ignored = eq(target, Scalar(ignore_index));
  Tensor smooth = w.defined() ? -(lsm * w.view(wshape)).sum({cls}) : -lsm.sum({cls});
  smooth = smooth.masked_fill(ignored, 0.0);
  Tensor ret;
  if (r == Reduction::kMean) {
    const Tensor kept = ignored.logical_not();
    if (w.defined()) {
      ret = smooth.sum() / w.index_select(0, target.masked_select(kept).flatten()).sum();
    } else {
      ret = smooth.sum() / kept.sum().to(smooth.dtype());
    }
  } else {
    ret = reduce(smooth, r);
  }
  return nll * (1 - label_smoothing) + ret * (label_smoothing / static_cast<double>(classes));
}

// ---- mse_loss ----------------------------------------------------------------------------------

namespace autograd {
namespace {

// `g` (of the broadcast shape) reduced to `sizes` and converted to `dtype`.
Tensor to_operand(const Tensor& g, IntArrayRef sizes, ScalarType dtype) {
  Tensor out = g.sizes().equals(sizes) ? g : sum_to(g, sizes);
  return out.dtype() == dtype ? out : out.to(dtype);
}

class MseLossBackward0 final : public Node {
 public:
  const char* name() const override { return "MseLossBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (!grads[0].defined()) return out;
    const Tensor self = self_.unpack(this);
    const Tensor target = target_.unpack(this);
    Tensor g = (self - target) * grads[0] * 2.0;
    if (reduction_ == Reduction::kMean) g = g / static_cast<double>(numel_);
    if (should_compute_output(0)) out[0] = to_operand(g, self.sizes(), self.dtype());
    if (should_compute_output(1)) out[1] = to_operand(-g, target.sizes(), target.dtype());
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("target", target_);
  }
  Reduction reduction_ = Reduction::kMean;
  int64_t numel_ = 1;
  SavedVariable self_, target_;
};

// softplus(-x) = log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)), finite for any x.
Tensor softplus_neg(const Tensor& x) { return clamp_min(-x, 0) + (-x.abs()).exp().log1p(); }

class BinaryCrossEntropyWithLogitsBackward0 final : public Node {
 public:
  const char* name() const override { return "BinaryCrossEntropyWithLogitsBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (!grads[0].defined()) return out;
    const Tensor x = self_.unpack(this);
    const Tensor t = target_.unpack(this);
    const Tensor w = weight_.unpack(this);
    const Tensor pw = pos_weight_.unpack(this);
    Tensor scale = grads[0];
    if (w.defined()) scale = scale * w;
    if (reduction_ == Reduction::kMean) scale = scale / static_cast<double>(numel_);
    if (should_compute_output(0)) {
      // d/dx = (1 + (pw - 1) t) sigmoid(x) - pw t  (pw = 1: sigmoid(x) - t)
      Tensor gi;
      if (pw.defined()) {
        const Tensor pt = pw * t;
        gi = (pt + 1.0 - t) * x.sigmoid() - pt;
      } else {
        gi = x.sigmoid() - t;
      }
      out[0] = to_operand(gi * scale, x.sizes(), x.dtype());
    }
    if (should_compute_output(1)) {
      // d/dt = -x + (pw - 1) softplus(-x)
      Tensor gt = pw.defined() ? (pw - 1.0) * softplus_neg(x) - x : -x;
      out[1] = to_operand(gt * scale, t.sizes(), t.dtype());
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("target", target_);
    v.visit("weight", weight_);
    v.visit("pos_weight", pos_weight_);
  }
  Reduction reduction_ = Reduction::kMean;
  int64_t numel_ = 1;
  SavedVariable self_, target_, weight_, pos_weight_;
};

}  // namespace
}  // namespace autograd

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  using namespace autograd;
  const char* op = "mse_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  check_same_device(op, input.device(), target.device());
  broadcast_shapes(input.sizes(), target.sizes(), op);  // ShapeError naming both shapes
  Tensor result;
  int64_t numel = 0;
  {
    NoGradGuard no_grad;
    const Tensor d = input - target;
    numel = d.numel();
    result = reduce(d * d, r);
  }
  // MseLossBackward0's tangent: from the composite forward above (Note [Composite tangents]).
  if (compute_requires_grad_has_jvp(input, target)) {
    auto node = make_node<MseLossBackward0>(input, target);
    node->reduction_ = r;
    node->numel_ = numel;
    node->self_ = SavedVariable(input, /*is_output=*/false);
    node->target_ = SavedVariable(target, /*is_output=*/false);
    set_history(result, node);
  }
  return result;
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        std::string_view reduction) {
  using namespace autograd;
  const char* op = "binary_cross_entropy_with_logits";
  const Reduction r = parse_reduction(reduction, op);
  check_constant(weight, "weight", op);
  check_constant(pos_weight, "pos_weight", op);
  check_floating(input, op, "input (logits)");
  check_floating(target, op, "target");
  if (!target.sizes().equals(input.sizes())) {
    throw ShapeError(str(op, "(): target size ", target.sizes(), " must be the same as input size ",
                         input.sizes(), "; pass one target per logit"));
  }
  check_same_device(op, input.device(), target.device());
  DimVector out_shape(input.sizes());
  for (const Tensor* extra : {&weight, &pos_weight}) {
    if (!extra->defined()) continue;
    check_floating(*extra, op, extra == &weight ? "weight" : "pos_weight");
    check_same_device(op, input.device(), extra->device());
    out_shape = broadcast_shapes(out_shape, extra->sizes(), op);
  }
  Tensor result;
  int64_t numel = 0;
  {
    NoGradGuard no_grad;
    const Tensor sp = softplus_neg(input);  // -log(sigmoid(x))
    Tensor loss = pos_weight.defined()
                      ? (1.0 - target) * input + ((pos_weight - 1.0) * target + 1.0) * sp
                      : (1.0 - target) * input + sp;
    if (weight.defined()) loss = loss * weight;
    numel = loss.numel();
    result = reduce(loss, r);
  }
  // The node's tangent: from the composite forward above (Note [Composite tangents]).
  if (compute_requires_grad_has_jvp(input, target)) {
    auto node = make_node<BinaryCrossEntropyWithLogitsBackward0>(input, target);
    node->reduction_ = r;
    node->numel_ = numel;
    node->self_ = SavedVariable(input, /*is_output=*/false);
    node->target_ = SavedVariable(target, /*is_output=*/false);
    if (weight.defined()) node->weight_ = SavedVariable(weight, /*is_output=*/false);
    if (pos_weight.defined()) node->pos_weight_ = SavedVariable(pos_weight, /*is_output=*/false);
    set_history(result, node);
  }
  return result;
}

}  // namespace mutagrad
