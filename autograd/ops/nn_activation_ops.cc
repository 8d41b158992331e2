// gelu, silu, leaky_relu(_), elu(_), softplus: see nn_ops.h.
//
// Note [Activations: forward under no-grad, one named node]
// Each forward computes its value with differentiable ops under a NoGradGuard and records one
// FormulaNode named as PyTorch 1.13's (GeluBackward0, SiluBackward0, LeakyReluBackward0/1,
// EluBackward0/1, SoftplusBackward0); its formula is PyTorch's derivative written with
// differentiable ops of the saved input (or, for the in-place forms, the saved result), so the
// gradient differentiates again. Piecewise formulas pick a branch with where(), whose gradient
// ignores the branch not taken (exp overflowing there does no harm).
#include <cmath>
#include <memory>
#include <string>

#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/formula_node.h"
#include "autograd/ops/nn_ops.h"
#include "autograd/ops/unary_ops.h"
#include "tensor/native/copy.h"

namespace mutagrad {
namespace {

using autograd::FormulaNode;
using autograd::make_formula_node;
using autograd::SavedList;
using autograd::VariableList;

void check_floating_input(const Tensor& t, const char* op) {
  if (!t.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a floating point input, got ", dtype_name(t.dtype()),
                         "; convert it with .to(kFloat32)"));
  }
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kGeluCoeff = 0.044715;

// The forward value of each op, with differentiable ops (used under no-grad).
Tensor gelu_value(const Tensor& x, bool tanh_approx) {
  if (tanh_approx) {
    const Tensor u = (x + x * x * x * kGeluCoeff) * kSqrt2OverPi;
    return x * 0.5 * (u.tanh() + 1.0);
  }
  return x * 0.5 * (mutagrad::erf(x * M_SQRT1_2) + 1.0);
}

// d gelu / dx.
Tensor gelu_derivative(const Tensor& x, bool tanh_approx) {
  if (tanh_approx) {
    const Tensor x2 = x * x;
    const Tensor t = ((x + x2 * x * kGeluCoeff) * kSqrt2OverPi).tanh();
    return (t + 1.0) * 0.5 +
           x * 0.5 * (1.0 - t * t) * ((x2 * (3.0 * kGeluCoeff) + 1.0) * kSqrt2OverPi);
  }
  const Tensor cdf = (mutagrad::erf(x * M_SQRT1_2) + 1.0) * 0.5;
  const Tensor pdf = mutagrad::exp(x * x * -0.5) * kInvSqrt2Pi;
  return cdf + x * pdf;
}

Tensor leaky_value(const Tensor& x, double slope) { return where(x > 0.0, x, x * slope); }
Tensor elu_value(const Tensor& x, double alpha) {
  return where(x > 0.0, x, mutagrad::expm1(x) * alpha);
}

// Records `node` (over self's edge) as the history of `result`, saving self as "self".
// Tangents: each forward here is written in differentiable ops (run without grad), which
// propagate a dual input's tangent themselves (Note [Composite tangents] in forward_ad.h).
Tensor with_node(const Tensor& self, Tensor result, const char* name, FormulaNode::Formula f) {
  if (autograd::compute_requires_grad_has_jvp(self)) {
    auto node = make_formula_node(name, {self}, std::move(f));
    node->save("self", self);
    autograd::set_history(result, node);
  }
  return result;
}

// The in-place form: check, compute the value from the input, one bump (op, site), write, and
// the node (saving the result) as self's new history.
Tensor& activation_(Tensor& self, const char* op, const char* node_name,
                    Tensor (*value)(const Tensor&, double), double arg, FormulaNode::Formula f,
                    CallSite site) {
  const bool requires_grad = autograd::compute_requires_grad_has_jvp(self);
  autograd::check_inplace(self, requires_grad);
  check_floating_input(self, op);
  native::assert_no_internal_overlap(self, op);
  Tensor v;
  {
    autograd::NoGradGuard no_grad;
    v = value(autograd::fwd::has_tangent({self}) ? self : self.detach(), arg);
  }
  // Tangent: v's, from its composite forward (Note [Composite tangents]), before the write.
  autograd::fwd::PendingTangents pending =
      autograd::fwd::inplace_tangents(self, {v}, [](const auto& t) { return t[1]; });
  std::shared_ptr<FormulaNode> node;
  if (requires_grad) node = make_formula_node(node_name, {self}, std::move(f));
  const MutationSite ms{op, site.file, site.line};
  native::copy_(self, v, &ms);  // checks, bumps once, writes
  autograd::fwd::write_tangents(self, std::move(pending), op);
  if (node) {
    autograd::rebase_history(self, node);
    node->save("result", self, /*is_output=*/true);
  }
  return self;
}

}  // namespace

Tensor gelu(const Tensor& self, std::string_view approximate) {
  const char* op = "gelu";
  if (approximate != "none" && approximate != "tanh") {
    throw ValueError(
        str(op, "(): approximate='", approximate, "' is not supported; expected 'none' or 'tanh'"));
  }
  check_floating_input(self, op);
  const bool tanh_approx = approximate == "tanh";
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = gelu_value(self, tanh_approx);
  }
  return with_node(self, result, "GeluBackward0",
                   [tanh_approx](const Tensor& g, const SavedList& s, const autograd::Node&) {
                     return VariableList{g * gelu_derivative(s[0], tanh_approx)};
                   });
}

Tensor silu(const Tensor& self) {
  check_floating_input(self, "silu");
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = self * self.sigmoid();
  }
  return with_node(self, result, "SiluBackward0",
                   [](const Tensor& g, const SavedList& s, const autograd::Node&) {
                     const Tensor sig = s[0].sigmoid();
                     return VariableList{g * sig * (s[0] * (1.0 - sig) + 1.0)};
                   });
}

Tensor leaky_relu(const Tensor& self, double negative_slope) {
  check_floating_input(self, "leaky_relu");
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = leaky_value(self, negative_slope);
  }
  return with_node(self, result, "LeakyReluBackward0",
                   [negative_slope](const Tensor& g, const SavedList& s, const autograd::Node&) {
                     return VariableList{where(s[0] > 0.0, g, g * negative_slope)};
                   });
}

Tensor& leaky_relu_(Tensor& self, double negative_slope, CallSite site) {
  if (negative_slope < 0 && autograd::compute_requires_grad_has_jvp(self)) {
    // The saved result cannot tell the sign of the input then (torch raises at backward).
    throw ValueError(str("leaky_relu_(): in-place leaky_relu with a negative slope (",
                         negative_slope,
                         ") cannot be differentiated: the input's sign is lost; "
                         "use leaky_relu (out of place)"));
  }
  return activation_(
      self, "leaky_relu_", "LeakyReluBackward1", &leaky_value, negative_slope,
      [negative_slope](const Tensor& g, const SavedList& s, const autograd::Node&) {
        return VariableList{where(s[0] > 0.0, g, g * negative_slope)};
      },
      site);
}

Tensor elu(const Tensor& self, double alpha) {
  check_floating_input(self, "elu");
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = elu_value(self, alpha);
  }
  return with_node(self, result, "EluBackward0",
                   [alpha](const Tensor& g, const SavedList& s, const autograd::Node&) {
                     return VariableList{where(s[0] > 0.0, g, g * mutagrad::exp(s[0]) * alpha)};
                   });
}

Tensor& elu_(Tensor& self, double alpha, CallSite site) {
  if (alpha < 0 && autograd::compute_requires_grad_has_jvp(self)) {
    throw ValueError(str("elu_(): in-place elu with a negative alpha (", alpha,
                         ") cannot be differentiated: the input's sign is lost; use elu (out of "
                         "place)"));
  }
  // d/dx = alpha exp(x) = result + alpha where x <= 0.
  return activation_(
      self, "elu_", "EluBackward1", &elu_value, alpha,
      [alpha](const Tensor& g, const SavedList& s, const autograd::Node&) {
        return VariableList{where(s[0] > 0.0, g, g * (s[0] + alpha))};
      },
      site);
}

Tensor softplus(const Tensor& self, double beta, double threshold) {
  check_floating_input(self, "softplus");
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    const Tensor bx = self * beta;
    result = where(bx > threshold, self, mutagrad::log1p(mutagrad::exp(bx)) / beta);
  }
  return with_node(self, result, "SoftplusBackward0",
                   [beta, threshold](const Tensor& g, const SavedList& s, const autograd::Node&) {
                     const Tensor bx = s[0] * beta;
                     return VariableList{where(bx > threshold, g, g * bx.sigmoid())};
                   });
}

}  // namespace mutagrad
