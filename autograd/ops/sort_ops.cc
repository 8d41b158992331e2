// sort, argsort, msort, topk, kthvalue, unique, bincount, searchsorted: see sort_ops.h.
#include "autograd/ops/sort_ops.h"

#include <limits>
#include <memory>

#include "autograd/forward_ad.h"
#include "autograd/history.h"
#include "autograd/ops/scatter_ops.h"
#include "autograd/ops/statistics_ops.h"
#include "autograd/saved_variable.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/sort.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace autograd {
namespace {

// SortBackward0/1, TopkBackward0, KthvalueBackward0 (derivatives.yaml's
// value_selecting_reduction_backward): the gradient scattered into zeros of self's shape at the
// saved indices, differentiably (a scatter), so double backward works.
class SelectedValuesBackward final : public Node {
 public:
  explicit SelectedValuesBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    if (self_sizes_.empty()) return {grads[0]};  // 0-dim self: the only element
    const Tensor indices = indices_.unpack(this);
    const Tensor g = keepdim_ ? grads[0] : grads[0].unsqueeze(dim_);
    const Tensor idx = keepdim_ ? indices : native::unsqueeze(indices, dim_);
    const Tensor zero = zeros(self_sizes_, TensorOptions(g.dtype()).device(g.device()));
    return {mutagrad::scatter(zero, dim_, idx, g)};
  }
  // Tangent: the tangent at the selected indices (a gather, the scatter's transpose).
  static Tensor jvp(const Tensor& indices, int64_t dim, bool keepdim, const Tensor& t) {
    if (t.dim() == 0) return t;
    const Tensor idx = keepdim ? indices : native::unsqueeze(indices, dim);
    const Tensor picked = t.gather(dim, idx);
    return keepdim ? picked : picked.squeeze(dim);
  }
  void visit_saved(SavedVisitor& v) override { v.visit("indices", indices_); }
  SavedVariable indices_;
  DimVector self_sizes_;
  int64_t dim_ = 0;
  bool keepdim_ = true;

 private:
  const char* name_;
};

// values (fresh, not a view) and indices: records `name` as the values' grad_fn.
void record(const char* name, const Tensor& self, const Tensor& values, const Tensor& indices,
            int64_t dim, bool keepdim) {
  if (!values.is_floating_point()) return;
  fwd::propagate(name, values, {self}, [&](const auto& t) {
    return SelectedValuesBackward::jvp(indices, dim, keepdim, t[0]);
  });
  if (!compute_requires_grad_has_jvp(self)) return;
  auto node = make_pooled<SelectedValuesBackward>(name);
  node->set_next_edges(collect_next_edges(self));
  node->self_sizes_ = DimVector(self.sizes());
  node->dim_ = dim;
  node->keepdim_ = keepdim;
  node->indices_ = SavedVariable(indices, /*is_output=*/false);
  set_history(values, node);
}

int64_t size_along(const Tensor& self, int64_t dim) { return self.dim() == 0 ? 1 : self.size(dim); }

// The first k along `dim` of a sort, copied out (fresh tensors).
std::pair<Tensor, Tensor> first_k(const std::pair<Tensor, Tensor>& sorted, int64_t dim, int64_t k,
                                  bool is_0dim) {
  if (is_0dim) return sorted;
  return {native::clone(native::narrow(sorted.first, dim, 0, k)),
          native::clone(native::narrow(sorted.second, dim, 0, k))};
}

}  // namespace
}  // namespace autograd

using autograd::compute_requires_grad;

std::pair<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending,
                               std::optional<bool> stable) {
  auto [values, indices] = native::sort(self, dim, descending);
  const int64_t d = wrap_dim(dim, self.dim(), "sort");
  autograd::record(stable ? "SortBackward1" : "SortBackward0", self, values, indices, d, true);
  return {values, indices};
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending, bool /*stable: always*/) {
  return native::sort(self, dim, descending).second;
}

Tensor msort(const Tensor& self) { return mutagrad::sort(self, 0).first; }

std::pair<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                               bool /*sorted: always*/) {
  const int64_t d = wrap_dim(dim, self.dim(), "topk");
  const int64_t n = autograd::size_along(self, d);
  if (k < 0 || k > n) {
    throw ValueError(str("topk(): selected index k out of range: k = ", k, " but dim ", d,
                         " has size ", n, "; pass 0 <= k <= ", n));
  }
  auto [values, indices] = autograd::first_k(native::sort(self, d, largest), d, k, self.dim() == 0);
  autograd::record("TopkBackward0", self, values, indices, d, true);
  return {values, indices};
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, self.dim(), "kthvalue");
  const int64_t n = autograd::size_along(self, d);
  if (n == 0) {
    throw IndexError(str("kthvalue(): Expected reduction dim ", d,
                         " to have non-zero size; the tensor has shape ", self.sizes()));
  }
  if (k < 1 || k > n) {
    throw ValueError(str("kthvalue(): selected number k out of range for dimension ", d,
                         ": k = ", k, " but the dim has size ", n, "; pass 1 <= k <= ", n));
  }
  auto sorted = native::sort(self, d, false);
  Tensor values = sorted.first;
  Tensor indices = sorted.second;
  if (self.dim() > 0) {
    values = native::narrow(values, d, k - 1, 1);
    indices = native::narrow(indices, d, k - 1, 1);
    if (!keepdim) {
      values = native::squeeze(values, d);
      indices = native::squeeze(indices, d);
    }
    values = native::clone(values);
    indices = native::clone(indices);
  }
  autograd::record("KthvalueBackward0", self, values, indices, d, keepdim);
  return {values, indices};
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self) {
  const Tensor flat = native::reshape(native::detach(self), {-1});
  const int64_t n = flat.numel();
  const TensorOptions longs = TensorOptions(kInt64).device(self.device());
  auto [s, perm] = native::sort(flat, 0, false);
  if (n == 0) {
    return {s, native::view(empty({0}, longs), self.sizes()), empty({0}, longs)};
  }
  // first[i]: sorted element i starts a run of equal values (NaN never equals NaN).
  const Tensor first = empty({n}, TensorOptions(kBool).device(self.device()));
  native::fill_(native::narrow(first, 0, 0, 1), Scalar(true));
  if (n > 1) {
    native::copy_(native::narrow(first, 0, 1, n - 1),
                  native::binary(BinaryOp::kNe, native::narrow(s, 0, 1, n - 1),
                                 native::narrow(s, 0, 0, n - 1)));
  }
  const Tensor group =
      native::binary(BinaryOp::kSub, native::scan(ReduceOp::kSum, first, 0, kInt64), Scalar(1));
  const int64_t u = native::reduce(ReduceOp::kSum, first, {}, false).item<int64_t>();
  const Tensor values =
      mutagrad::scatter(empty({u}, TensorOptions(s.dtype()).device(s.device())), 0, group, s);
  const Tensor inverse = mutagrad::scatter(zeros({n}, longs), 0, perm, group);
  const Tensor counts = mutagrad::scatter_add(zeros({u}, longs), 0, group, ones({n}, longs));
  return {values, native::reshape(inverse, self.sizes()), counts};
}

Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  if (self.dim() != 1 || !(self.dtype() == kInt64 || self.dtype() == kInt32)) {
    throw ValueError(str("bincount(): only supports 1-d non-negative integral inputs, got a ",
                         self.dim(), "-d ", dtype_name(self.dtype()), " tensor"));
  }
  if (minlength < 0) {
    throw ValueError(str("bincount(): minlength should be >= 0, got ", minlength));
  }
  const int64_t n = self.numel();
  if (weights && (weights->dim() != 1 || weights->numel() != n)) {
    throw ValueError(
        str("bincount(): weights should be 1-d and have the same length as input; "
            "got weights of shape ",
            weights->sizes(), " for an input of ", n, " elements"));
  }
  if (weights) check_same_device("bincount", self.device(), weights->device());
  int64_t size = minlength;
  if (n > 0) {
    if (native::reduce(ReduceOp::kMin, self, {}, false).item<int64_t>() < 0) {
      throw ValueError(
          str("bincount(): only supports 1-d non-negative integral inputs; the "
              "input has a negative value"));
    }
    const int64_t largest = native::reduce(ReduceOp::kMax, self, {}, false).item<int64_t>();
    if (largest == std::numeric_limits<int64_t>::max()) {  // Note [Size overflow] in shape.h
      throw ShapeError(str("bincount(): the input's largest value ", largest, " needs ", largest,
                           " + 1 bins, more than int64 can count; "
                           "the values must be smaller"));
    }
    size = std::max(size, largest + 1);
  }
  const ScalarType dtype = !weights ? kInt64 : (weights->dtype() == kFloat32 ? kFloat32 : kFloat64);
  const TensorOptions options = TensorOptions(dtype).device(self.device());
  const Tensor src = weights ? native::to(native::detach(*weights), dtype) : ones({n}, options);
  return mutagrad::scatter_add(zeros({size}, options), 0, native::to(self, kInt64), src);
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32,
                    bool right) {
  return native::searchsorted(sorted_sequence, values, out_int32, right);
}

}  // namespace mutagrad
