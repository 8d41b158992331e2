// bmm, mv, dot, addmm (each with its node), and the composites outer, inner and einsum. See
// products_ops.h. The backward formulas are written with these ops, so double backward works.
#include "autograd/ops/products_ops.h"

#include <algorithm>
#include <array>
#include <vector>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/linalg_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/view_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {

class BmmBackward0 final : public Node {
 public:
  const char* name() const override { return "BmmBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = bmm(grads[0], mat2_.unpack(this).transpose(1, 2));
    if (should_compute_output(1)) out[1] = bmm(self_.unpack(this).transpose(1, 2), grads[0]);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("mat2", mat2_);
  }
  SavedVariable self_, mat2_;
};

class MvBackward0 final : public Node {
 public:
  const char* name() const override { return "MvBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = outer(grads[0], vec_.unpack(this));
    if (should_compute_output(1)) out[1] = mv(self_.unpack(this).t(), grads[0]);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("vec", vec_);
  }
  SavedVariable self_, vec_;
};

class DotBackward0 final : public Node {
 public:
  const char* name() const override { return "DotBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    if (should_compute_output(0)) out[0] = grads[0] * other_.unpack(this);
    if (should_compute_output(1)) out[1] = grads[0] * self_.unpack(this);
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("self", self_);
    v.visit("tensor", other_);
  }
  SavedVariable self_, other_;
};

// Edges {self, mat1, mat2}; self's gradient is summed back to its (broadcast) shape.
class AddmmBackward0 final : public Node {
 public:
  const char* name() const override { return "AddmmBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(3);
    const Tensor& grad = grads[0];
    if (should_compute_output(0)) {
      out[0] = sum_to(beta_.to<double>() == 1.0 ? grad : grad * beta_, self_sizes_);
    }
    const bool scaled = alpha_.to<double>() != 1.0;
    if (should_compute_output(1)) {
      Tensor g = mm(grad, mat2_.unpack(this).t());
      out[1] = scaled ? g * alpha_ : g;
    }
    if (should_compute_output(2)) {
      Tensor g = mm(mat1_.unpack(this).t(), grad);
      out[2] = scaled ? g * alpha_ : g;
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override {
    v.visit("mat1", mat1_);
    v.visit("mat2", mat2_);
  }
  SavedVariable mat1_, mat2_;
  DimVector self_sizes_;
  Scalar alpha_ = 1, beta_ = 1;
};

}  // namespace autograd

using autograd::compute_requires_grad;
using autograd::make_node;
using autograd::SavedVariable;
using autograd::set_history;

namespace {

// A Scalar as the value it has in `dtype`'s arithmetic (torch converts beta and alpha to the
// tensors' type: 0.5 is 0 for integers).
Scalar in_dtype(const Scalar& s, ScalarType dtype) {
  if (is_floating_point(dtype)) return Scalar(s.to<double>());
  if (dtype == kBool) return Scalar(s.to<bool>());
  return Scalar(s.to<int64_t>());
}

}  // namespace

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  autograd::capture::OpScope cap("bmm", autograd::capture::OpKind::kFunctional);
  if (self.dim() != 3 || mat2.dim() != 3) {
    const bool first = self.dim() != 3;
    throw ShapeError(str("bmm(): ", first ? "batch1" : "batch2", " must be a 3D tensor, got ",
                         (first ? self : mat2).dim(), "-D tensor of shape ",
                         (first ? self : mat2).sizes(), "; use matmul() to broadcast batches"));
  }
  if (mat2.size(0) != self.size(0) || mat2.size(1) != self.size(2)) {
    throw ShapeError(str("bmm(): Expected size for first two dimensions of batch2 tensor to be: [",
                         self.size(0), ", ", self.size(2), "] but got: [", mat2.size(0), ", ",
                         mat2.size(1), "] (batch1 ", self.sizes(), ", batch2 ", mat2.sizes(),
                         "); bmm does not broadcast, use matmul() for that"));
  }
  detail::check_same_dtype("bmm", self, mat2);
  Tensor result = native::matmul(self, mat2);
  // BmmBackward0's tangent: bmm is bilinear.
  autograd::fwd::propagate("bmm", result, {self, mat2}, [&](const auto& t) {
    return autograd::fwd::bilinear_tangent(
        [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, self, mat2, t[0], t[1]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, mat2)) {
    auto node = make_node<autograd::BmmBackward0>(self, mat2);
    // Edge validity, not should_compute_output(): see mm in linalg_ops.cc.
    if (node->next_edge(0).is_valid()) node->mat2_ = SavedVariable(mat2, false);
    if (node->next_edge(1).is_valid()) node->self_ = SavedVariable(self, false);
    set_history(result, node);
  }
  return cap.done(result, [&] { return autograd::capture::Args{self, mat2}; });
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  if (self.dim() != 2 || vec.dim() != 1) {
    throw ShapeError(str("mv(): vector + matrix @ vector expected, got self of ", self.dim(),
                         " dims and vec of ", vec.dim(), " dims (shapes ", self.sizes(), " and ",
                         vec.sizes(), "); use matmul() for other shapes"));
  }
  if (self.size(1) != vec.size(0)) {
    throw ShapeError(str("mv(): size mismatch, got ", self.size(0), ", ", self.size(0), "x",
                         self.size(1), ",", vec.size(0),
                         ": the vector's length must equal the "
                         "matrix's number of columns"));
  }
  detail::check_same_dtype("mv", self, vec);
  Tensor result = native::matmul(self, vec);
  // MvBackward0's tangent: mv is bilinear.
  autograd::fwd::propagate("mv", result, {self, vec}, [&](const auto& t) {
    return autograd::fwd::bilinear_tangent(
        [](const Tensor& a, const Tensor& b) { return mv(a, b); }, self, vec, t[0], t[1]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, vec)) {
    auto node = make_node<autograd::MvBackward0>(self, vec);
    if (node->next_edge(0).is_valid()) node->vec_ = SavedVariable(vec, false);
    if (node->next_edge(1).is_valid()) node->self_ = SavedVariable(self, false);
    set_history(result, node);
  }
  return result;
}

Tensor dot(const Tensor& self, const Tensor& other) {
  if (self.dim() != 1 || other.dim() != 1) {
    throw ShapeError(str("dot(): 1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
                         "D tensors; use matmul() or inner() for other shapes"));
  }
  if (self.size(0) != other.size(0)) {
    throw ShapeError(str("dot(): inconsistent tensor size, expected tensor [", self.size(0),
                         "] and src [", other.size(0),
                         "] to have the same number of elements, but got ", self.size(0), " and ",
                         other.size(0), " elements respectively"));
  }
  if (self.dtype() != other.dtype()) {
    throw DTypeError(str("dot(): expected both vectors to have same dtype, but found ",
                         legacy_type_name(self.dtype()), " and ", legacy_type_name(other.dtype()),
                         "; convert one with .to() first"));
  }
  if (self.dtype() == kBool) {
    throw DTypeError("dot(): \"dot\" not implemented for 'Bool'; convert to an integer dtype");
  }
  Tensor result = native::matmul(self, other);
  // DotBackward0's tangent: dot is bilinear.
  autograd::fwd::propagate("dot", result, {self, other}, [&](const auto& t) {
    return autograd::fwd::bilinear_tangent(
        [](const Tensor& a, const Tensor& b) { return dot(a, b); }, self, other, t[0], t[1]);
  });
  if (autograd::compute_requires_grad_has_jvp(self, other)) {
    auto node = make_node<autograd::DotBackward0>(self, other);
    if (node->next_edge(0).is_valid()) node->other_ = SavedVariable(other, false);
    if (node->next_edge(1).is_valid()) node->self_ = SavedVariable(self, false);
    set_history(result, node);
  }
  return result;
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  for (const auto& [t, name] : {std::pair{&self, "self"}, std::pair{&vec2, "vec2"}}) {
    if (t->dim() != 1) {
      throw ShapeError(str("outer(): Expected 1-D argument ", name, ", but got ", t->dim(),
                           "-D; flatten it first or use matmul()"));
    }
  }
  return self.reshape({self.size(0), 1}) * vec2;
}

Tensor inner(const Tensor& self, const Tensor& other) {
  if (self.dim() == 0 || other.dim() == 0) return self * other;
  const int64_t k = self.size(-1);
  if (other.size(-1) != k) {
    throw ShapeError(
        str("inner(): the last dimension must match on both input tensors but got "
            "shapes ",
            self.sizes(), " and ", other.sizes()));
  }
  const IntArrayRef self_lead(self.sizes().data(), static_cast<size_t>(self.dim() - 1));
  const IntArrayRef other_lead(other.sizes().data(), static_cast<size_t>(other.dim() - 1));
  const int64_t rows = compute_numel(self_lead);
  const int64_t cols = compute_numel(other_lead);
  DimVector shape(self_lead);
  for (int64_t s : other_lead) shape.push_back(s);
  return mm(self.reshape({rows, k}), other.reshape({cols, k}).t()).reshape(shape);
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  detail::check_matrix("addmm", "mat1", mat1);
  detail::check_matrix("addmm", "mat2", mat2);
  if (mat1.size(1) != mat2.size(0)) {
    throw ShapeError(str("addmm(): mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
                         mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")"));
  }
  const DimVector out_shape{mat1.size(0), mat2.size(1)};
  if (!native::is_expandable_to(self.sizes(), out_shape)) {
    throw ShapeError(str("addmm(): the tensor of shape ", self.sizes(),
                         " cannot be expanded to the product's shape ", IntArrayRef(out_shape),
                         " (Target sizes: ", IntArrayRef(out_shape),
                         ".  Tensor sizes: ", self.sizes(), ")"));
  }
  detail::check_same_dtype("addmm", mat1, mat2);
  if (self.dtype() != mat1.dtype()) {
    throw DTypeError(str("addmm(): self and mat2 must have the same dtype, but got ",
                         dtype_name(self.dtype()), " and ", dtype_name(mat2.dtype())));
  }
  const ScalarType dtype = self.dtype();
  const Scalar a = in_dtype(alpha, dtype), b = in_dtype(beta, dtype);
  Tensor product = native::matmul(mat1, mat2);
  if (a.to<double>() != 1.0) product = native::binary(BinaryOp::kMul, product, a);
  Tensor result;
  if (b.to<double>() == 0.0) {
    result = product;  // self is not read: its nan and inf do not propagate
  } else {
    Tensor scaled = b.to<double>() == 1.0 ? self : native::binary(BinaryOp::kMul, self, b);
    result = native::binary(BinaryOp::kAdd, scaled, product);
  }
  // AddmmBackward0's tangent: beta ts + alpha (t1 mat2 + mat1 t2), bilinear in (mat1, mat2).
  autograd::fwd::propagate("addmm", result, {self, mat1, mat2}, [&](const auto& t) {
    Tensor out = autograd::fwd::bilinear_tangent(
        [](const Tensor& x, const Tensor& y) { return x.mm(y); }, mat1, mat2, t[1], t[2]);
    if (out.defined() && a.to<double>() != 1.0) out = out * a;
    if (t[0].defined() && b.to<double>() != 0.0) {
      const Tensor ts = b.to<double>() == 1.0 ? t[0] : t[0] * b;
      out = out.defined() ? out.add(ts) : ts.expand(out_shape);
    }
    return out;
  });
  if (autograd::compute_requires_grad_has_jvp(self, mat1, mat2)) {
    auto node = make_node<autograd::AddmmBackward0>(self, mat1, mat2);
    if (node->next_edge(1).is_valid()) node->mat2_ = SavedVariable(mat2, false);
    if (node->next_edge(2).is_valid()) node->mat1_ = SavedVariable(mat1, false);
    node->self_sizes_ = DimVector(self.sizes());
    node->alpha_ = a;
    node->beta_ = b;
    set_history(result, node);
  }
  return result;
}

// ---- einsum ------------------------------------------------------------------------------------
namespace {

constexpr int kLetters = 52;  // A-Z are labels 0-25, a-z 26-51 (torch's order)

int label_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  return -1;
}

char letter_of(int label) {
  return static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26));
}

// One side of the equation: its labels in order, and where '...' sits among them (-1: none).
struct Term {
  std::vector<int> labels;
  int ellipsis_at = -1;
};

// Parses the subscripts of `text` (spaces skipped) starting at `offset` in the equation.
// `who` is "operand N" or "output" for the messages.
Term parse_term(std::string_view text, size_t offset, const std::string& who) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (term.ellipsis_at >= 0) {
        throw ValueError(str("einsum(): found '.' for ", who,
                             " for which an ellipsis was already found; use at most one '...'"));
      }
      if (i + 2 >= text.size() || text[i + 1] != '.' || text[i + 2] != '.') {
        throw ValueError(str("einsum(): found '.' for ", who,
                             " that is not part of any ellipsis; write '...' (three dots)"));
      }
      term.ellipsis_at = static_cast<int>(term.labels.size());
      i += 2;
      continue;
    }
    const int label = label_of(c);
    if (label < 0) {
      throw ValueError(str("einsum(): invalid subscript given at index ", offset + i,
                           " in the equation string, subscripts must be in [a-zA-Z]"));
    }
    term.labels.push_back(label);
  }
  return term;
}

// left * right summed over `sum_dims` (kept as size 1), for operands with one dim per key in
// the same order; dims of size 1 broadcast. As torch's sumproduct_pair: a bmm over the dims
// both share (batch), the dims only one has and the summed dims.
Tensor sumproduct_pair(Tensor left, Tensor right, const std::vector<int64_t>& sum_dims) {
  if (sum_dims.empty()) return left * right;
  const int64_t ndim = left.dim();
  std::vector<int64_t> lro, lo, ro, summed;
  int64_t batch = 1, lo_size = 1, ro_size = 1, sum_size = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    const bool sl = left.size(d) != 1, sr = right.size(d) != 1;
    if (std::find(sum_dims.begin(), sum_dims.end(), d) != sum_dims.end()) {
      if (sl && !sr) left = left.sum({d}, true);
      if (sr && !sl) right = right.sum({d}, true);
      if (sl && sr) sum_size *= left.size(d);
      summed.push_back(d);
    } else if (sl && sr) {
      lro.push_back(d);
      batch *= left.size(d);
    } else if (sl) {
      lo.push_back(d);
      lo_size *= left.size(d);
    } else {
      ro.push_back(d);
      ro_size *= right.size(d);
    }
  }
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    DimVector out;
    for (const auto* p : parts) {
      for (int64_t d : *p) out.push_back(d);
    }
    return out;
  };
  Tensor l3 = left.permute(concat({&lro, &lo, &summed, &ro})).reshape({batch, lo_size, sum_size});
  Tensor r3 = right.permute(concat({&lro, &summed, &ro, &lo})).reshape({batch, sum_size, ro_size});
  Tensor product = bmm(l3, r3);
  DimVector split;
  for (int64_t d : lro) split.push_back(left.size(d));
  for (int64_t d : lo) split.push_back(left.size(d));
  for (int64_t d : ro) split.push_back(right.size(d));
  split.resize(split.size() + summed.size(), 1);
  const DimVector order = concat({&lro, &lo, &ro, &summed});
  DimVector inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = i;
  return product.reshape(split).permute(inverse);
}

}  // namespace

Tensor einsum(std::string_view equation, TensorList operands) {
  if (operands.empty()) throw ValueError("einsum(): must provide at least one operand");
  const size_t arrow = equation.find("->");
  const std::string_view lhs = equation.substr(0, arrow);
  // Terms of the inputs.
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    const size_t end = comma == std::string_view::npos ? lhs.size() : comma;
    if (terms.size() == operands.size()) {
      throw ValueError(
          str("einsum(): fewer operands were provided than specified in the equation (", equation,
              " with ", operands.size(), " operands)"));
    }
    terms.push_back(
        parse_term(lhs.substr(start, end - start), start, str("operand ", terms.size())));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (terms.size() < operands.size()) {
    throw ValueError(str("einsum(): more operands were provided than specified in the equation (",
                         equation, " with ", operands.size(), " operands)"));
  }
  // Dims per operand, and how many dims '...' stands for (the most of any operand).
  std::array<int, kLetters> count{};
  int64_t ell_max = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t n = static_cast<int64_t>(terms[i].labels.size());
    const int64_t ndim = operands[i].dim();
    if (terms[i].ellipsis_at < 0 && n != ndim) {
      throw ShapeError(str("einsum(): the number of subscripts in the equation (", n,
                           ") does not match the number of dimensions (", ndim, ") for operand ", i,
                           " and no ellipsis was given"));
    }
    if (terms[i].ellipsis_at >= 0 && n > ndim) {
      throw ShapeError(str("einsum(): the number of subscripts in the equation (", n,
                           ") is more than the number of dimensions (", ndim, ") for operand ", i));
    }
    if (terms[i].ellipsis_at >= 0) ell_max = std::max(ell_max, ndim - n);
    for (int label : terms[i].labels) ++count[static_cast<size_t>(label)];
  }
  // Keys: a label (0-51) or ellipsis dim k (kLetters + k). Output keys first, then the summed.
  const bool any_ellipsis =
      std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.ellipsis_at >= 0; });
  std::vector<int> keys;
  auto push_ellipsis = [&] {
    for (int64_t k = 0; k < ell_max; ++k) keys.push_back(kLetters + static_cast<int>(k));
  };
  bool ellipsis_in_output = false;
  if (arrow != std::string_view::npos) {
    Term out = parse_term(equation.substr(arrow + 2), arrow + 2, "output");
    std::array<bool, kLetters> seen{};
    for (size_t i = 0; i <= out.labels.size(); ++i) {
      if (static_cast<int>(i) == out.ellipsis_at) {
        push_ellipsis();
        ellipsis_in_output = true;
      }
      if (i == out.labels.size()) break;
      const int label = out.labels[i];
      if (count[static_cast<size_t>(label)] == 0) {
        throw ValueError(str("einsum(): output subscript ", letter_of(label),
                             " does not appear in the equation for any input operand"));
      }
      if (seen[static_cast<size_t>(label)]) {
        throw ValueError(str("einsum(): output subscript ", letter_of(label),
                             " appears more than once in the output"));
      }
      seen[static_cast<size_t>(label)] = true;
      keys.push_back(label);
    }
  } else {
    if (any_ellipsis) {
      push_ellipsis();
      ellipsis_in_output = true;
    }
    for (int label = 0; label < kLetters; ++label) {
      if (count[static_cast<size_t>(label)] == 1) keys.push_back(label);
    }
  }
  const int64_t n_out = static_cast<int64_t>(keys.size());
  if (!ellipsis_in_output) push_ellipsis();  // summed
  for (int label = 0; label < kLetters; ++label) {
    if (count[static_cast<size_t>(label)] > 0 &&
        std::find(keys.begin(), keys.end(), label) == keys.end()) {
      keys.push_back(label);
    }
  }
  const int64_t total = static_cast<int64_t>(keys.size());
  std::vector<int64_t> position(static_cast<size_t>(kLetters + ell_max), -1);
  for (size_t p = 0; p < keys.size(); ++p) position[static_cast<size_t>(keys[p])] = p;

  // Each operand: diagonals of repeated labels, then one dim per key in key order (size 1
  // where it has none).
  std::vector<int64_t> key_size(position.size(), 1);
  std::vector<size_t> last_use(static_cast<size_t>(total), 0);  // the last operand with the key
  std::vector<Tensor> prepared;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& term = terms[i];
    Tensor t = operands[i];
    const int64_t ell_dims = term.ellipsis_at < 0 ? 0 : t.dim() - int64_t(term.labels.size());
    std::vector<int> dim_keys;
    for (size_t j = 0; j <= term.labels.size(); ++j) {
      if (static_cast<int>(j) == term.ellipsis_at) {
        for (int64_t k = 0; k < ell_dims; ++k) {
          dim_keys.push_back(kLetters + static_cast<int>(ell_max - ell_dims + k));
        }
      }
      if (j < term.labels.size()) dim_keys.push_back(term.labels[j]);
    }
    for (bool again = true; again;) {
      again = false;
      for (size_t a = 0; a < dim_keys.size() && !again; ++a) {
        for (size_t b = a + 1; b < dim_keys.size() && !again; ++b) {
          if (dim_keys[a] != dim_keys[b]) continue;
          const int64_t sa = t.size(int64_t(a)), sb = t.size(int64_t(b));
          if (sa != sb) {
            throw ShapeError(str("einsum(): subscript ", letter_of(dim_keys[a]),
                                 " is repeated for operand ", i, " but the sizes don't match, ", sb,
                                 " != ", sa));
          }
          t = t.diagonal(0, int64_t(a), int64_t(b));
          const int key = dim_keys[a];
          dim_keys.erase(dim_keys.begin() + static_cast<std::ptrdiff_t>(b));
          dim_keys.erase(dim_keys.begin() + static_cast<std::ptrdiff_t>(a));
          dim_keys.push_back(key);
          again = true;
        }
      }
    }
    for (size_t d = 0; d < dim_keys.size(); ++d) {
      int64_t& seen = key_size[static_cast<size_t>(dim_keys[d])];
      const int64_t size = t.size(int64_t(d));
      if (size == 1) continue;
      if (seen != 1 && seen != size) {
        const int key = dim_keys[d];
        if (key < kLetters) {
          throw ShapeError(str("einsum(): subscript ", letter_of(key), " has size ", size,
                               " for operand ", i,
                               " which does not broadcast with previously seen size ", seen));
        }
        throw ShapeError(str("einsum(): the dims of '...' do not broadcast: operand ", i,
                             " has size ", size, " where an earlier operand has ", seen));
      }
      seen = size;
    }
    DimVector order(dim_keys.size());
    for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return position[size_t(dim_keys[size_t(a)])] < position[size_t(dim_keys[size_t(b)])];
    });
    if (!std::is_sorted(order.begin(), order.end())) t = t.permute(order);
    std::vector<bool> has(static_cast<size_t>(total), false);
    for (int key : dim_keys) {
      const size_t p = static_cast<size_t>(position[static_cast<size_t>(key)]);
      has[p] = true;
      last_use[p] = i;
    }
    for (int64_t p = 0; p < total; ++p) {
      if (!has[static_cast<size_t>(p)]) t = t.unsqueeze(p);
    }
    prepared.push_back(t);
  }

  Tensor result = prepared[0];
  if (prepared.size() == 1) {
    std::vector<int64_t> summed;
    for (int64_t p = n_out; p < total; ++p) summed.push_back(p);
    return summed.empty() ? result : result.sum(summed, false);
  }
  for (size_t i = 1; i < prepared.size(); ++i) {
    // Sum now the summed keys that no later operand has (those of operand 0 alone with 1).
    std::vector<int64_t> sum_dims;
    for (int64_t p = n_out; p < total; ++p) {
      const size_t last = last_use[static_cast<size_t>(p)];
      if (last == i || (i == 1 && last == 0)) sum_dims.push_back(p);
    }
    result = sumproduct_pair(result, prepared[i], sum_dims);
  }
  if (total == n_out) return result;
  return result.reshape(IntArrayRef(result.sizes().data(), static_cast<size_t>(n_out)));
}

// ---- Tensor members ----------------------------------------------------------------------------
Tensor Tensor::bmm(const Tensor& mat2) const { return mutagrad::bmm(*this, mat2); }
Tensor Tensor::mv(const Tensor& vec) const { return mutagrad::mv(*this, vec); }
Tensor Tensor::dot(const Tensor& other) const { return mutagrad::dot(*this, other); }
Tensor Tensor::inner(const Tensor& other) const { return mutagrad::inner(*this, other); }
Tensor Tensor::outer(const Tensor& vec2) const { return mutagrad::outer(*this, vec2); }
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha) const {
  return mutagrad::addmm(*this, mat1, mat2, beta, alpha);
}

}  // namespace mutagrad
