// gather, scatter_, scatter_add_, scatter_reduce_ and their out-of-place forms: see
// scatter_ops.h.
//
// Note [Deterministic scatter]
// A scatter is index_put_ with the index list {c_0, ..., index, ..., c_n}: c_d is the
// coordinate along dim d (arange(index.size(d)) shaped to broadcast), `index` sits at `dim`,
// and all of them broadcast to index's shape, which is then the indexed shape. Its kernels walk
// that shape in row-major order, so duplicates resolve in row-major order of `index` on every
// backend and thread count: scatter_ keeps the last write, scatter_add_ sums in that order from
// the old value, scatter_reduce_ folds prod/amax/amin in that order (max/min propagate NaN),
// and "mean" is that sum divided by the count (floor division for integers, as PyTorch).
// Negative indices are out of bounds here, as in PyTorch (they wrap in x[idx]). On
// CUDA the same bits come from the sorted kernel of Note [Deterministic index_put_ on the
// device]. PyTorch leaves scatter_'s duplicates undefined and sums with atomics on CUDA.
#include "autograd/ops/scatter_ops.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/capture_hook.h"
#include "autograd/errors.h"
#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/index_rules.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

enum class Kind { kScatter, kScatterValue, kAdd, kReduce };

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMax:
      return "amax";
    case ReduceOp::kMin:
      return "amin";
  }
  return "sum";
}

ReduceOp parse_reduce(const char* op, std::string_view reduce) {
  for (ReduceOp r :
       {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
    if (reduce == reduce_name(r)) return r;
  }
  throw ValueError(
      str(op, "(): reduce argument must be either sum, prod, mean, amax or amin, got ", reduce));
}

// PyTorch's ensure_nonempty: a 0-dim tensor takes part as a 1-dim tensor of one element.
Tensor as_nonempty(const Tensor& t) { return t.dim() == 0 ? native::view(t, {1}) : t; }

// A validated gather or scatter: dim wrapped; index int64 on self's device.
struct ScatterWrite {
  const char* op = "";
  Kind kind = Kind::kScatter;
  int64_t dim = 0;
  Tensor index;
  Tensor src;    // kScatter, kAdd, kReduce
  Scalar value;  // kScatterValue
  ReduceOp reduce = ReduceOp::kSum;
  bool include_self = true;
  // The index was checked against a tensor of self's sizes by the forward that saved it, and is
  // unchanged since (Note [Indices known in range] in tensor/native/index_ops.h).
  bool index_known = false;
};

int64_t wrap_scatter_dim(const char* op, const Tensor& self, int64_t dim) {
  return wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
}

void check_index_tensor(const char* op, const Tensor& self, const Tensor& index) {
  if (index.dtype() != kInt64) {
    throw DTypeError(str(op, "(): Expected dtype int64 for index, but got ",
                         dtype_name(index.dtype()), "; convert it with .to(kInt64)"));
  }
  check_same_device(op, self.device(), index.device());
}

int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t nonempty_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

// PyTorch's gather_shape_check: index has self's number of dims and is no larger than self
// on every dim but `dim`.
void check_gather_shape(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  if (nonempty_dim(index) != nonempty_dim(self)) {
    throw ShapeError(str(op, "(): Index tensor must have the same number of dimensions as input ",
                         "tensor (index ", index.sizes(), ", input ", self.sizes(),
                         "); unsqueeze or reshape the index"));
  }
  for (int64_t d = 0; d < nonempty_dim(self); ++d) {
    if (d == dim || nonempty_size(index, d) <= nonempty_size(self, d)) continue;
    throw ShapeError(str(op, "(): Size does not match at dimension ", d, " expected index ",
                         index.sizes(), " to be smaller than self ", self.sizes(),
                         " apart from dimension ", dim));
  }
}

// PyTorch's scatter_shape_check (nothing to check for an empty index): index has the dims of
// self and src, fits in src on every dim and in self on every dim but `dim`.
void check_scatter_shape(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& src) {
  if (index.numel() == 0) return;
  if (nonempty_dim(index) != nonempty_dim(self)) {
    throw ShapeError(str(op, "(): Index tensor must have the same number of dimensions as self ",
                         "tensor (index ", index.sizes(), ", self ", self.sizes(),
                         "); unsqueeze or reshape the index"));
  }
  if (src.defined() && nonempty_dim(index) != nonempty_dim(src)) {
    throw ShapeError(str(op, "(): Index tensor must have the same number of dimensions as src ",
                         "tensor (index ", index.sizes(), ", src ", src.sizes(),
                         "); unsqueeze or reshape the index"));
  }
  for (int64_t d = 0; d < nonempty_dim(self); ++d) {
    const int64_t n = nonempty_size(index, d);
    const bool too_big =
        (src.defined() && n > nonempty_size(src, d)) || (d != dim && n > nonempty_size(self, d));
    if (!too_big) continue;
    throw ShapeError(
        str(op, "(): Expected index ", index.sizes(), " to be smaller than self ", self.sizes(),
            " apart from dimension ", dim,
            src.defined() ? str(" and to be smaller size than src ", src.sizes()) : std::string()));
  }
}

ScatterWrite validate(const char* op, Kind kind, const Tensor& self, int64_t dim,
                      const Tensor& index, const Tensor& src, const Scalar& value,
                      ReduceOp reduce = ReduceOp::kSum, bool include_self = true) {
  ScatterWrite w;
  w.op = op;
  w.kind = kind;
  w.dim = wrap_scatter_dim(op, self, dim);
  check_index_tensor(op, self, index);
  w.index = index;
  w.src = src;
  w.value = value;
  w.reduce = reduce;
  w.include_self = include_self;
  if (kind == Kind::kScatterValue) {
    check_scalar_fits(value, self.dtype(), op);
  } else {
    if (src.dtype() != self.dtype()) {
      throw DTypeError(str(op, "(): Expected self.dtype to be equal to src.dtype (self ",
                           dtype_name(self.dtype()), ", src ", dtype_name(src.dtype()),
                           "); convert src with .to(", dtype_name(self.dtype()), ")"));
    }
    check_same_device(op, self.device(), src.device());
  }
  check_scatter_shape(op, self, w.dim, index, kind == Kind::kScatterValue ? Tensor() : src);
  return w;
}

// {c_0, ..., index, ..., c_n} of Note [Deterministic scatter], for a >= 1-dim index.
std::vector<Tensor> coordinate_indices(const Tensor& index, int64_t dim) {
  const int64_t n = index.dim();
  std::vector<Tensor> list;
  list.reserve(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) {
    if (d == dim) {
      list.push_back(index);
      continue;
    }
    DimVector shape(static_cast<size_t>(n), 1);
    shape[static_cast<size_t>(d)] = index.size(d);
    list.push_back(native::view(arange(index.size(d), kInt64, index.device()), shape));
  }
  return list;
}

// The entries of coordinate_indices(index, dim) that need no bounds screen: the aranges, and
// `index` itself when `index_known` (scatter and gather refuse negative indices, so every
// known entry is nonnegative). Note [Indices known in range] in tensor/native/index_ops.h.
native::KnownIndices coordinate_known(int64_t ndim, int64_t dim, bool index_known) {
  native::KnownIndices known;
  for (int64_t d = 0; d < ndim && d < 64; ++d) {
    if (d == dim && !index_known) continue;
    known.in_range |= uint64_t{1} << d;
  }
  known.nonnegative = known.in_range;
  return known;
}

// `t` (>= 1-dim) narrowed to `sizes` from the start of every dim.
Tensor narrow_to(Tensor t, IntArrayRef sizes) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (t.size(static_cast<int64_t>(d)) != sizes[d]) {
      t = native::narrow(t, static_cast<int64_t>(d), 0, sizes[d]);
    }
  }
  return t;
}

// The identity of an accumulating reduce in `dtype` (what include_self=false starts from).
Scalar identity_of(ReduceOp op, ScalarType dtype) {
  switch (op) {
    case ReduceOp::kProd:
      return Scalar(int64_t{1});
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      const bool max = op == ReduceOp::kMax;
      Scalar s(int64_t{0});
      dispatch_dtype(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) {
          s = Scalar(!max);
        } else if constexpr (is_floating_type_v<T>) {
          const double inf = std::numeric_limits<double>::infinity();
          s = Scalar(max ? -inf : inf);
        } else {
          s = Scalar(static_cast<int64_t>(max ? std::numeric_limits<T>::lowest()
                                              : std::numeric_limits<T>::max()));
        }
      });
      return s;
    }
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      break;
  }
  return Scalar(int64_t{0});
}

// Everything a scatter writes with, prepared (and so validated: bounds, overlap) before the
// bump: the kernels cannot fail after it.
struct ScatterPlan {
  Tensor self;  // >= 1-dim view of self
  Tensor values;
  native::AdvancedIndex adv;
  Tensor identity;  // kReduce without include_self: what the destinations start from
  Tensor count;     // "mean": how many values each destination averages, in opmath dtype
  Tensor quotient;  // "mean" on a dtype without kernels: the division's result, in opmath dtype
};

ScatterPlan plan(const ScatterWrite& w, const Tensor& self) {
  ScatterPlan p;
  p.self = as_nonempty(native::detach(self));
  const Tensor index = as_nonempty(w.index);
  const std::vector<Tensor> list = coordinate_indices(index, w.dim);
  const ScalarType dtype = self.dtype();
  p.values = w.kind == Kind::kScatterValue
                 ? native::wrap_scalar(w.value, dtype, self.device(), w.op)
                 : narrow_to(as_nonempty(native::detach(w.src)), index.sizes());
  // scatter_reduce_ writes with p.adv, then ("mean") divides: src is read before the write (the
  // index is copied by prepare_index_put: Note [Operands read before the write] in
  // tensor/native/index_ops.cc), and the write is not staged.
  if (native::may_overlap(p.self, p.values)) p.values = native::clone(p.values);
  const bool accumulate = w.kind == Kind::kAdd || w.kind == Kind::kReduce;
  const native::KnownIndices known = coordinate_known(index.dim(), w.dim, w.index_known);
  p.adv = native::prepare_index_put(p.self, list, p.values, accumulate,
                                    native::negative_index_wraps(native::IndexedOp::kScatter),
                                    /*may_stage=*/w.kind != Kind::kReduce, known);
  if (w.kind != Kind::kReduce) return p;
  if (!w.include_self) {
    p.identity = native::wrap_scalar(identity_of(w.reduce, dtype), dtype, self.device(), w.op);
  }
  if (w.reduce == ReduceOp::kMean) {
    Tensor count = full(p.self.sizes(), w.include_self ? 1 : 0, dtype, self.device());
    const Tensor one = native::wrap_scalar(1, dtype, self.device(), w.op);
    native::index_put_(count, list, one, /*accumulate=*/true,
                       coordinate_known(index.dim(), w.dim, /*index_known=*/true));
    native::masked_fill_(count, native::binary(BinaryOp::kEq, count, Scalar(0)), 1);
    p.count = native::to_opmath(count);  // Note [Reduced dtypes]
    if (!has_kernels(dtype)) p.quotient = empty_like(count, opmath_dtype(dtype));
  }
  return p;
}

// `bump`: self's (Note [Allocate before the bump]). Every temporary exists (plan()): one
// index_put pass, which fires the bump, and for "mean" a division in place (in opmath dtype
// through p.quotient), which allocates nothing. PyTorch's integer "mean" rounds toward negative
// infinity (div_ with rounding_mode="floor"; every count is positive).
void run(const ScatterWrite& w, const ScatterPlan& p, const PendingBump* bump = nullptr) {
  if (w.kind != Kind::kReduce) {
    native::index_put_validated(p.self, p.adv, p.values, w.kind == Kind::kAdd, bump);
    return;
  }
  IndexPutDescriptor desc{true, w.reduce == ReduceOp::kMean ? ReduceOp::kSum : w.reduce};
  desc.bump = bump;
  if (p.identity.defined()) desc.start = &p.identity;
  native::index_put_validated(p.self, p.adv, p.values, desc);
  if (w.reduce != ReduceOp::kMean || p.self.numel() == 0) return;
  const BinaryOp div = is_floating_point(p.self.dtype()) ? BinaryOp::kDiv : BinaryOp::kFloorDivide;
  Backend& backend = backend_for(p.self.device());
  if (!p.quotient.defined()) {
    backend.binary(div, p.self, p.self, p.count);
    return;
  }
  backend.copy(p.quotient, p.self);
  backend.binary(div, p.quotient, p.quotient, p.count);
  backend.copy(p.self, p.quotient);
}

Tensor write_copy(const ScatterWrite& w, const Tensor& self);

// A scatter's src gradient: grad gathered at index, zero-padded to src's shape.
Tensor src_gradient(const Tensor& gathered, IntArrayRef src_sizes) {
  return pad_gradient_to(gathered, src_sizes);
}

class GatherBackward0 final : public Node {
 public:
  const char* name() const override { return "GatherBackward0"; }
  VariableList apply(VariableList&& grads) override {
    if (!should_compute_output(0) || !grads[0].defined()) return {Tensor()};
    Tensor index = index_.unpack(this);
    Tensor zero = zeros(self_sizes_, TensorOptions(grads[0].dtype()).device(grads[0].device()));
    // scatter_add(zero, dim, index, grad) with the index the forward checked against self's
    // sizes (zero's): no bounds screen, no wait for a device.
    ScatterWrite w = validate("scatter_add", Kind::kAdd, zero, dim_, index, grads[0], 0);
    w.index_known = true;
    return {write_copy(w, zero)};
  }
  void visit_saved(SavedVisitor& v) override { v.visit("index", index_); }
  SavedVariable index_;
  DimVector self_sizes_;
  int64_t dim_ = 0;
};

// scatter_ with src (ScatterBackward0) or a value (ScatterBackward1), scatter_add_
// (ScatterAddBackward0): edges {self, src} (the value form has only self).
class ScatterBackward final : public Node {
 public:
  const char* name() const override {
    return kind_ == Kind::kScatter        ? "ScatterBackward0"
           : kind_ == Kind::kScatterValue ? "ScatterBackward1"
                                          : "ScatterAddBackward0";
  }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    Tensor index = index_.unpack(this);
    if (should_compute_output(0)) {
      out[0] = kind_ == Kind::kAdd ? grad : mutagrad::scatter(grad, dim_, index, Scalar(0));
    }
    if (num_outputs() > 1 && should_compute_output(1)) {
      Tensor g = mutagrad::gather(grad, dim_, index);
      if (kind_ == Kind::kScatter) {
        // Only the winning (last) write of a duplicated destination reached self.
        g = g * native::to(scatter_winners(index, dim_, grad.sizes()), g.dtype());
      }
      out[1] = src_gradient(g, src_sizes_);
    }
    return out;
  }
  void visit_saved(SavedVisitor& v) override { v.visit("index", index_); }
  Kind kind_ = Kind::kScatter;
  SavedVariable index_;
  int64_t dim_ = 0;
  DimVector src_sizes_;
};

// Stands in for a gradient PyTorch can give but not differentiate again: applying it raises.
class DelayedError final : public Node {
 public:
  explicit DelayedError(std::string message) : message_(std::move(message)) {}
  const char* name() const override { return "DelayedError"; }
  VariableList apply(VariableList&&) override { throw AutogradError(message_); }

 private:
  std::string message_;
};

// scatter_reduce_ (ScatterReduceBackward0): PyTorch's scatter_reduce_backward. Edges
// {self, src}; saves self's value before the write, src, index and (prod/amax/amin) the
// result.
class ScatterReduceBackward0 final : public Node {
 public:
  const char* name() const override { return "ScatterReduceBackward0"; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(2);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return out;
    const Tensor index = index_.unpack(this);
    const Tensor src = narrowed_src(src_.unpack(this), index);
    const bool saved =
        reduce_ == ReduceOp::kProd || reduce_ == ReduceOp::kMax || reduce_ == ReduceOp::kMin;
    Tensor grad_self, grad_src;
    gradients(reduce_, include_self_, dim_, grad, index, src, saved ? self_.unpack(this) : Tensor(),
              saved ? result_.unpack(this) : Tensor(), &grad_self, &grad_src);
    if (should_compute_output(0)) out[0] = grad_self;
    if (should_compute_output(1)) out[1] = src_gradient(grad_src, src_sizes_);
    return out;
  }
  // Tangent: result_i depends on self_i and the src elements written to i only, so with the
  // backward's gradients for grad = 1 (d result_i / d self_i and d result_index(k) / d src_k)
  // it is g_self · t_self + scatter_add(g_src · t_src).
  static Tensor jvp(ReduceOp reduce, bool include_self, int64_t dim, const Tensor& index,
                    const Tensor& self, const Tensor& src_in, const Tensor& result,
                    const Tensor& ts, const Tensor& tsrc) {
    const Tensor src = narrowed_src(src_in, index);
    Tensor g_self, g_src;
    gradients(reduce, include_self, dim, ones_like(result), index, src, self, result, &g_self,
              &g_src);
    Tensor out = ts.defined() ? g_self * ts : zeros_like(result);
    if (tsrc.defined()) {
      out = mutagrad::scatter_add(out, dim, index, g_src * narrowed_src(tsrc, index));
    }
    return out;
  }

 private:
  // The gradients of self (self's shape) and of the written part of src (index's shape).
  static void gradients(ReduceOp reduce, bool include_self, int64_t dim_, const Tensor& grad,
                        const Tensor& index, const Tensor& src, const Tensor& self,
                        const Tensor& result, Tensor* out_self, Tensor* out_src) {
    Tensor grad_self;
    Tensor grad_src;
    switch (reduce) {
      case ReduceOp::kSum:
        grad_self = grad;
        grad_src = mutagrad::gather(grad, dim_, index);
        break;
      case ReduceOp::kMean: {
        Tensor n = include_self ? ones_like(grad) : zeros_like(grad);
        n = mutagrad::scatter_add(n, dim_, index, ones_like(src));
        n = n.masked_fill(n.eq(zeros_like(n)), 1);
        grad_self = grad / n;
        grad_src = mutagrad::gather(grad, dim_, index) / mutagrad::gather(n, dim_, index);
        break;
      }
      case ReduceOp::kProd:
        prod_gradients(include_self, dim_, grad, index, src, self, result, &grad_self, &grad_src);
        break;
      case ReduceOp::kMax:
      case ReduceOp::kMin: {
        // The gradient is shared evenly between the elements equal to the result.
        const Tensor value = mutagrad::gather(result, dim_, index);
        const Tensor self_is = native::to(self.eq(result), grad.dtype());
        const Tensor src_is = native::to(src.eq(value), grad.dtype());
        const Tensor n = mutagrad::scatter_add(self_is, dim_, index, src_is);
        const Tensor shared = grad / n;
        grad_self = self_is * shared;
        grad_src = src_is * mutagrad::gather(shared, dim_, index);
        break;
      }
    }
    if (!include_self) grad_self = mutagrad::scatter(grad_self, dim_, index, Scalar(0));
    *out_self = grad_self;
    *out_src = grad_src;
  }

 public:
  void visit_saved(SavedVisitor& v) override {
    v.visit("index", index_);
    v.visit("src", src_);
    v.visit("self", self_);
    v.visit("result", result_);
  }

  ReduceOp reduce_ = ReduceOp::kSum;
  bool include_self_ = true;
  int64_t dim_ = 0;
  DimVector src_sizes_;
  SavedVariable index_;
  SavedVariable src_;
  SavedVariable self_;    // prod, amax, amin
  SavedVariable result_;  // prod, amax, amin

 private:
  // src's part that was scattered (index's shape).
  static Tensor narrowed_src(const Tensor& src, const Tensor& index) {
    Tensor s = src.dim() == 0 ? src.reshape({1}) : src;
    for (int64_t d = 0; d < s.dim(); ++d) {
      const int64_t n = index.dim() == 0 ? 1 : index.size(d);
      if (s.size(d) != n) s = s.narrow(d, 0, n);
    }
    return index.dim() == 0 ? s.reshape({}) : s;
  }

  // The product's gradient without dividing by zero: an element's gradient is the product of
  // the others (PyTorch's exclusive-product formulation).
  static void prod_gradients(bool include_self_, int64_t dim_, const Tensor& grad,
                             const Tensor& index, const Tensor& src, const Tensor& self,
                             const Tensor& result, Tensor* grad_self, Tensor* grad_src) {
    const char* reduce = "prod";
    const Tensor masked_self = self.masked_fill(self.eq(zeros_like(self)), 1);
    const Tensor masked_self_result =
        mutagrad::scatter_reduce(masked_self, dim_, index, src, reduce, include_self_);
    *grad_self = grad * masked_self_result / masked_self;
    const Tensor src_zero = src.eq(zeros_like(src));
    const Tensor zeros_at = mutagrad::gather(
        mutagrad::scatter_add(zeros_like(self), dim_, index, native::to(src_zero, self.dtype())),
        dim_, index);
    const Tensor single_zero = src_zero.logical_and(zeros_at.eq(ones_like(zeros_at)));
    const Tensor masked_src = src.masked_fill(single_zero, 1);
    const Tensor masked_src_result =
        mutagrad::scatter_reduce(self, dim_, index, masked_src, reduce, include_self_);
    Tensor g = mutagrad::where(
        single_zero, mutagrad::gather(grad * masked_src_result, dim_, index),
        mutagrad::gather(grad * result, dim_, index) / src.masked_fill(src_zero, 1));
    const bool several_zeros =
        native::reduce(ReduceOp::kMax, native::to(zeros_at, kFloat64), {}, false).item<double>() >
        1;
    if (several_zeros && GradMode::is_enabled() && tensor_requires_grad(g)) {
      // The first derivative is right (zero); its own derivative would not be: refuse it.
      auto node = std::make_shared<DelayedError>(
          "scatter_reduce(): Double backward is unsupported for src when more than one zero in "
          "src is scattered to the same position in self; compute the second derivative "
          "without reduce=\"prod\" or without repeated zeros");
      node->set_next_edges(collect_next_edges(g));
      Tensor wrapped = native::detach(g);
      set_history(wrapped, node);
      g = wrapped;
    }
    *grad_src = g;
  }
};

std::shared_ptr<Node> make_write_node(const ScatterWrite& w, const Tensor& self) {
  if (w.kind == Kind::kReduce) {
    auto node = make_node<ScatterReduceBackward0>(self, w.src);
    node->reduce_ = w.reduce;
    node->include_self_ = w.include_self;
    node->dim_ = w.dim;
    node->src_sizes_ = DimVector(w.src.sizes());
    node->index_ = SavedVariable(w.index, /*is_output=*/false);
    node->src_ = SavedVariable(w.src, /*is_output=*/false);
    return node;
  }
  std::shared_ptr<ScatterBackward> node = w.kind == Kind::kScatterValue
                                              ? make_node<ScatterBackward>(self)
                                              : make_node<ScatterBackward>(self, w.src);
  node->kind_ = w.kind;
  node->index_ = SavedVariable(w.index, /*is_output=*/false);
  node->dim_ = w.dim;
  if (w.src.defined()) node->src_sizes_ = DimVector(w.src.sizes());
  return node;
}

bool saves_self_and_result(const ScatterWrite& w) {
  return w.kind == Kind::kReduce &&
         (w.reduce == ReduceOp::kProd || w.reduce == ReduceOp::kMax || w.reduce == ReduceOp::kMin);
}

bool write_requires_grad(const ScatterWrite& w, const Tensor& self) {
  if (w.kind == Kind::kReduce) {
    return self.is_floating_point() && compute_requires_grad_has_jvp(self, w.src);
  }
  return self.is_floating_point() &&
         (w.kind == Kind::kScatterValue ? compute_requires_grad_has_jvp(self)
                                        : compute_requires_grad_has_jvp(self, w.src));
}

// Forward mode: scatter_, scatter_ with a value and scatter_add_ are linear in (self, src);
// the tangent is the same write of src's tangent (0 for a value) into self's, through the
// same kernel, so duplicates resolve the same way (ScatterBackward0/1, ScatterAddBackward0).
Tensor write_tangent(const ScatterWrite& w, const Tensor& self, const Tensor& ts,
                     const Tensor& tsrc) {
  if (w.kind == Kind::kReduce) {  // ScatterReduceBackward0::jvp, given the result
    MG_INTERNAL_ASSERT(false, "write_tangent(): scatter_reduce needs its result");
  }
  ScatterWrite tw = w;
  if (w.kind == Kind::kScatterValue) {
    tw.value = 0;
  } else {
    tw.src = fwd::tangent_or_zeros(tsrc, w.src);
  }
  return write_copy(tw, fwd::tangent_or_zeros(ts, self));
}

void write_in_place(const ScatterWrite& w, const Tensor& self, const MutationSite& site) {
  const bool requires_grad = write_requires_grad(w, self);
  check_inplace(self, requires_grad);
  const ScatterPlan p = plan(w, self);
  Tensor reduced;  // scatter_reduce_ on a dual: its result, computed aside for the tangent
  if (w.kind == Kind::kReduce && fwd::has_tangent({self, w.src})) {
    reduced = native::clone(native::detach(self));
    run(w, plan(w, reduced));
  }
  fwd::PendingTangents tangents = fwd::inplace_tangents(self, {w.src}, [&](const auto& t) {
    return w.kind == Kind::kReduce
               ? ScatterReduceBackward0::jvp(w.reduce, w.include_self, w.dim, w.index, self, w.src,
                                             reduced, t[0], t[1])
               : write_tangent(w, self, t[0], t[1]);
  });
  std::shared_ptr<Node> node;
  if (requires_grad) {
    node = make_write_node(w, self);
    if (saves_self_and_result(w)) {
      // Differentiable: double backward reaches self's history.
      static_cast<ScatterReduceBackward0&>(*node).self_ =
          SavedVariable(self.clone(), /*is_output=*/false);
    }
  }
  const PendingBump bump(self.version_counter(), site, self.unsafe_impl());  // checks passed
  run(w, p, &bump);
  fwd::write_tangents(self, std::move(tangents), site.op);
  if (!node) return;
  rebase_history(self, node);
  if (saves_self_and_result(w)) {
    static_cast<ScatterReduceBackward0&>(*node).result_ =
        SavedVariable(self, /*is_output=*/true, is_differentiable_view(self));
  }
}

// Out of place: a copy written below autograd (version 0, as PyTorch), with the same node.
Tensor write_copy(const ScatterWrite& w, const Tensor& self) {
  Tensor result = native::clone(native::detach(self));
  run(w, plan(w, result));
  fwd::propagate(w.op, result, {self, w.src}, [&](const auto& t) {
    return w.kind == Kind::kReduce
               ? ScatterReduceBackward0::jvp(w.reduce, w.include_self, w.dim, w.index, self, w.src,
                                             result, t[0], t[1])
               : write_tangent(w, self, t[0], t[1]);
  });
  if (!write_requires_grad(w, self)) return result;
  std::shared_ptr<Node> node = make_write_node(w, self);
  set_history(result, node);
  if (saves_self_and_result(w)) {
    auto& n = static_cast<ScatterReduceBackward0&>(*node);
    n.self_ = SavedVariable(self, /*is_output=*/false);
    n.result_ = SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

Tensor gather_impl(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  const int64_t d = wrap_scatter_dim(op, self, dim);
  check_index_tensor(op, self, index);
  check_gather_shape(op, self, d, index);
  const Tensor index1 = as_nonempty(index);
  Tensor result = native::index(as_nonempty(native::detach(self)), coordinate_indices(index1, d),
                                native::negative_index_wraps(native::IndexedOp::kGather),
                                coordinate_known(index1.dim(), d, /*index_known=*/false));
  if (index.dim() == 0) result = native::view(result, {});
  // GatherBackward0's tangent: the same gather of the tangent (linear).
  fwd::propagate(op, result, {self}, [&](const auto& t) { return t[0].gather(dim, index); });
  if (compute_requires_grad_has_jvp(self)) {
    auto node = make_node<GatherBackward0>(self);
    node->index_ = SavedVariable(index, /*is_output=*/false);
    node->self_sizes_ = DimVector(self.sizes());
    node->dim_ = d;
    set_history(result, node);
  }
  return result;
}

}  // namespace

Tensor scatter_winners(const Tensor& index, int64_t dim, IntArrayRef sizes) {
  const Tensor index1 = as_nonempty(index);
  DimVector shape(sizes);
  if (shape.empty()) shape.push_back(1);
  const Tensor positions =
      native::view(arange(index1.numel(), kInt64, index1.device()), index1.sizes());
  Tensor last = full(shape, -1, kInt64, index1.device());
  const std::vector<Tensor> list = coordinate_indices(index1, dim);
  const native::KnownIndices known = coordinate_known(index1.dim(), dim, /*index_known=*/false);
  native::index_put_(last, list, positions, /*accumulate=*/false, known);
  // The index went through the write's screen just above: all known now.
  const native::KnownIndices all = coordinate_known(index1.dim(), dim, /*index_known=*/true);
  Tensor won = native::binary(BinaryOp::kEq, native::index(last, list, true, all), positions);
  return native::view(won, index.sizes());
}

Tensor pad_gradient_to(const Tensor& gradient, IntArrayRef sizes) {
  if (gradient.sizes().equals(sizes)) return gradient;
  if (sizes.empty()) return gradient.reshape({});
  const Tensor g = gradient.dim() == 0 ? gradient.reshape({1}) : gradient;
  if (g.sizes().equals(sizes)) return g;
  Tensor padded = zeros(sizes, TensorOptions(g.dtype()).device(g.device()));
  Tensor window = padded;
  for (int64_t d = 0; d < g.dim(); ++d) window = window.narrow(d, 0, g.size(d));
  window.copy_(g);
  return padded;
}

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  return gather_impl(self, dim, index);
}

void scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
              const MutationSite& site) {
  write_in_place(validate(site.op, Kind::kScatter, self, dim, index, src, 0), self, site);
}

void scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
              const MutationSite& site) {
  write_in_place(validate(site.op, Kind::kScatterValue, self, dim, index, Tensor(), value), self,
                 site);
}

void scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                  const MutationSite& site) {
  write_in_place(validate(site.op, Kind::kAdd, self, dim, index, src, 0), self, site);
}

void scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     std::string_view reduce, bool include_self, const MutationSite& site) {
  const ReduceOp op = parse_reduce(site.op, reduce);
  write_in_place(validate(site.op, Kind::kReduce, self, dim, index, src, 0, op, include_self), self,
                 site);
}

}  // namespace autograd

namespace {
MutationSite site_of(const char* op, CallSite site) {
  return MutationSite{op, site.file, site.line};
}
}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  return autograd::gather(self, dim, index);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  using autograd::Kind;
  return autograd::write_copy(
      autograd::validate("scatter", Kind::kScatter, self, dim, index, src, 0), self);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  using autograd::Kind;
  return autograd::write_copy(
      autograd::validate("scatter", Kind::kScatterValue, self, dim, index, Tensor(), value), self);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  using autograd::Kind;
  return autograd::write_copy(
      autograd::validate("scatter_add", Kind::kAdd, self, dim, index, src, 0), self);
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self) {
  using autograd::Kind;
  const char* op = "scatter_reduce";
  const ReduceOp r = autograd::parse_reduce(op, reduce);
  return autograd::write_copy(
      autograd::validate(op, Kind::kReduce, self, dim, index, src, 0, r, include_self), self);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return autograd::gather(*this, dim, index);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  autograd::capture::OpScope cap("scatter", autograd::capture::OpKind::kFunctional);
  return cap.done(mutagrad::scatter(*this, dim, index, src), [&] {
    return autograd::capture::Args{*this, dim, index, src};
  });
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  autograd::capture::OpScope cap("scatter", autograd::capture::OpKind::kFunctional);
  return cap.done(mutagrad::scatter(*this, dim, index, value), [&] {
    return autograd::capture::Args{*this, dim, index, value};
  });
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  autograd::capture::OpScope cap("scatter_add", autograd::capture::OpKind::kFunctional);
  return cap.done(mutagrad::scatter_add(*this, dim, index, src), [&] {
    return autograd::capture::Args{*this, dim, index, src};
  });
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self) const {
  autograd::capture::OpScope cap("scatter_reduce", autograd::capture::OpKind::kFunctional);
  return cap.done(mutagrad::scatter_reduce(*this, dim, index, src, reduce, include_self), [&] {
    return autograd::capture::Args{*this, dim, index, src, std::string(reduce), include_self};
  });
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, CallSite site) {
  autograd::capture::OpScope cap("scatter", autograd::capture::OpKind::kInPlace);
  autograd::scatter_(*this, dim, index, src, site_of("scatter_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, src}; });
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value, CallSite site) {
  autograd::capture::OpScope cap("scatter", autograd::capture::OpKind::kInPlace);
  autograd::scatter_(*this, dim, index, value, site_of("scatter_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, value}; });
  return *this;
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src, CallSite site) {
  autograd::capture::OpScope cap("scatter_add", autograd::capture::OpKind::kInPlace);
  autograd::scatter_add_(*this, dim, index, src, site_of("scatter_add_", site));
  cap.done(*this, [&] { return autograd::capture::Args{*this, dim, index, src}; });
  return *this;
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                                std::string_view reduce, bool include_self, CallSite site) {
  autograd::capture::OpScope cap("scatter_reduce", autograd::capture::OpKind::kInPlace);
  autograd::scatter_reduce_(*this, dim, index, src, reduce, include_self,
                            site_of("scatter_reduce_", site));
  cap.done(*this, [&] {
    return autograd::capture::Args{*this, dim, index, src, std::string(reduce), include_self};
  });
  return *this;
}

}  // namespace mutagrad
