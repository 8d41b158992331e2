// Matrix products: forward functions and their backward nodes (see linalg_ops.h for naming).
#include "autograd/ops/linalg_ops.h"

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/view_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/linalg.h"

namespace mutagrad {
namespace autograd {

class MmBackward0 final : public Node {
 public:
  const char* name() const override { return "MmBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = grads[0].matmul(mat2_.unpack(this).t());
    if (should_compute_output(1)) out[1] = self_.unpack(this).t().matmul(grads[0]);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("mat2", mat2_);
  }
  SavedVariable self_, mat2_;
};

// Any matmul that is not matrix x matrix: 1-D operands get a dim added (and the gradient's
// removed dim put back), batch dims broadcast (gradients are summed back to each shape).
class MatmulBackward0 final : public Node {
 public:
  const char* name() const override { return "MatmulBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    Tensor self = self_.unpack(this);
    Tensor other = other_.unpack(this);
    const bool self_vec = self.dim() == 1;
    const bool other_vec = other.dim() == 1;
    Tensor a = self_vec ? self.unsqueeze(0) : self;
    Tensor b = other_vec ? other.unsqueeze(-1) : other;
    Tensor g = grads[0];
    if (other_vec) g = g.unsqueeze(-1);
    if (self_vec) g = g.unsqueeze(-2);
    if (should_compute_output(0)) {
      out[0] = sum_to(g.matmul(b.transpose(-1, -2)), a.sizes()).reshape(self.sizes());
    }
    if (should_compute_output(1)) {
      out[1] = sum_to(a.transpose(-1, -2).matmul(g), b.sizes()).reshape(other.sizes());
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("other", other_);
  }
  SavedVariable self_, other_;
};

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::make_node;
using autograd::SavedVariable;
using autograd::set_history;

namespace {

// Matrix x matrix with MmBackward0; operands already checked (matmul promotes their dtypes).
Tensor mm_unchecked(const Tensor& self, const Tensor& other) {
  Tensor result = native::matmul(self, other);
  // MmBackward0's tangent: mm is bilinear.
  autograd::fwd::propagate("mm", result, {self, other}, [&](const auto& t) {
    return autograd::fwd::bilinear_tangent(mm_unchecked, self, other, t[0], t[1]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, other)) {
    auto node = make_node<autograd::MmBackward0>(self, other);
    // Edge validity, not should_compute_output(): a backward formula may run this inside another
    // node's apply(), whose output mask should_compute_output() would read.
    if (node->next_edge(0).is_valid()) node->mat2_ = SavedVariable(other, false);
    if (node->next_edge(1).is_valid()) node->self_ = SavedVariable(self, false);
    set_history(result, node);
  }
  return result;
}

}  // namespace

namespace detail {

void check_same_dtype(const char* op, const Tensor& self, const Tensor& other) {
  if (self.dtype() != other.dtype()) {
    throw DTypeError(str(op, "(): expected scalar type ", legacy_type_name(self.dtype()),
                         " but found ", legacy_type_name(other.dtype()), " (", op, " of ",
                         dtype_name(self.dtype()), " and ", dtype_name(other.dtype()),
                         "); convert one operand with .to() first"));
  }
}

void check_matrix(const char* op, const char* name, const Tensor& t) {
  if (t.dim() != 2) {
    throw ShapeError(str(op, "(): ", name, " must be a matrix, got ", t.dim(),
                         "-D tensor of shape ", t.sizes(),
                         "; use matmul() for vectors and batches"));
  }
}

}  // namespace detail

Tensor mm(const Tensor& self, const Tensor& other) {
  detail::check_matrix("mm", "self", self);
  detail::check_matrix("mm", "mat2", other);
  detail::check_same_dtype("mm", self, other);
  autograd::capture::OpScope cap("mm", autograd::capture::OpKind::kFunctional);
  return cap.done(mm_unchecked(self, other), [&] { return autograd::capture::Args{self, other}; });
}

Tensor matmul(const Tensor& self, const Tensor& other) {
  autograd::capture::OpScope cap("matmul", autograd::capture::OpKind::kFunctional);
  auto args = [&] { return autograd::capture::Args{self, other}; };
  if (self.dim() == 2 && other.dim() == 2) return cap.done(mm_unchecked(self, other), args);
  Tensor result = native::matmul(self, other);
  // MatmulBackward0's tangent: matmul is bilinear.
  autograd::fwd::propagate("matmul", result, {self, other}, [&](const auto& t) {
    return autograd::fwd::bilinear_tangent(
        [](const Tensor& a, const Tensor& b) { return mutagrad::matmul(a, b); }, self, other, t[0],
        t[1]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, other)) {
    auto node = make_node<autograd::MatmulBackward0>(self, other);
    node->self_ = SavedVariable(self, false);
    node->other_ = SavedVariable(other, false);
    set_history(result, node);
  }
  return cap.done(result, args);
}

Tensor Tensor::matmul(const Tensor& other) const { return mutagrad::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& mat2) const { return mutagrad::mm(*this, mat2); }

}  // namespace mutagrad
