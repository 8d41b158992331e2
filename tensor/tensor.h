// Tensor: a reference-counted handle to a TensorImpl.
//
// Copying a Tensor copies the handle, never the data. The data-model accessors below are
// defined in tensor/. The operations (math, views, in-place writes, autograd, indexing) are
// declared here so that users write `x.sum()` and `x[{1, 2}] = 3.0`, and defined by the layer
// that owns them: autograd/ (differentiable ops, see autograd/tensor_autograd.cc and
// autograd/ops/*.cc) and indexing/ (see indexing/tensor_indexing.cc). See Note [Tensor methods
// across layers] in docs/notes/layers.md. Code inside tensor/ uses the raw ops of mutagrad::native
// instead.
//
//   Tensor x = mutagrad::arange(6).view({2, 3});   // [[0, 1, 2], [3, 4, 5]]
//   Tensor row = x.select(0, 1);                  // a view: shares storage and version
//   row.fill_(7);                                 // x[1] is now 7s; x.version() == 1
//
// Note [Host code never reads device memory]
// data_ptr<T>() and raw_data() hand out host pointers: on a tensor that is not on the CPU they
// throw DeviceError, in every build. On a real GPU, host code dereferencing device memory
// crashes; in the host-run CUDA build (docs/cuda.md) that memory is host memory and the read
// would silently work, hiding the bug. So host paths (item(), printing, tolist(), index
// validation) go through an explicit device-to-host copy, and backends, which do work on device
// memory, take the address with unsafe_impl()->data().
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/scalar.h"
#include "tensor/small_vector.h"
#include "tensor/tensor_impl.h"
#include "tensor/version_counter.h"

namespace mutagrad {

class Tensor;
using TensorList = ArrayRef<Tensor>;

namespace autograd {
class Node;
class RemovableHandle;  // autograd/hooks.h
}  // namespace autograd
namespace indexing {
class TensorIndex;
class TensorIndexProxy;
}  // namespace indexing

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- Data model (tensor/tensor.cc) ---------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  TensorImpl* unsafe_impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  int64_t dim() const { return impl_->dim(); }
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const;    // negative dims wrap
  int64_t stride(int64_t dim) const;  // negative dims wrap
  int64_t numel() const { return impl_->numel(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_floating_point() const { return mutagrad::is_floating_point(dtype()); }
  int64_t element_size() const { return mutagrad::element_size(dtype()); }
  const Storage& storage() const { return impl_->storage(); }

  // Host pointer to element [0, ..., 0]; DTypeError if T is not the tensor's dtype, DeviceError
  // if the tensor is not on the CPU (Note [Host code never reads device memory]).
  template <typename T>
  T* data_ptr() const;
  void* raw_data() const {
    check_host_access("raw_data");
    return impl_->data();
  }

  // The value of a one-element tensor (any shape with numel 1); ValueError otherwise.
  Scalar item() const;
  template <typename T>
  T item() const {
    return item().to<T>();
  }

  // The version counter shared with every alias (views, detach()).
  uint32_t version() const { return impl_->version_counter().current(); }
  VersionCounter& version_counter() const { return impl_->version_counter(); }

  // Whether this tensor is a view, and of what (the root base, as PyTorch's ._base).
  bool is_view() const { return impl_->view_base() != nullptr; }
  Tensor base() const { return Tensor(impl_->view_base()); }
  // Same storage (so a write through one may be seen through the other).
  bool is_alias_of(const Tensor& other) const {
    return impl_->storage().is_same(other.impl_->storage());
  }
  // The same TensorImpl (the same handle target).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  std::string to_string() const;

  // ---- Autograd state (defined in autograd/) -------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  // Python's `x.data = other`: x takes other's storage, shape and dtype (so it aliases other),
  // keeping its identity, version counter and autograd state, as PyTorch's set_data. Refused on
  // a view, and with a non-floating other while x requires grad.
  void set_data(const Tensor& other);
  bool is_leaf() const;
  // The accumulated gradient of a leaf (or of a non-leaf after retain_grad()); undefined if none.
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  uint32_t output_nr() const;
  void retain_grad() const;
  bool retains_grad() const;
  // Calls `hook` with this tensor's gradient in backward; it may return a replacement (an
  // undefined tensor keeps it). See autograd/hooks.h (autograd::register_hook).
  autograd::RemovableHandle register_hook(std::function<Tensor(const Tensor&)> hook) const;
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // A new tensor sharing storage and version counter, outside the graph.
  Tensor detach() const;
  // Detaches in place: this tensor leaves the graph (a view keeps its base).
  Tensor& detach_();
  // Shares storage but not the version counter (PyTorch's x.data): writes are not tracked.
  Tensor variable_data() const;

  // ---- Differentiable ops (defined in autograd/ops/*.cc) -------------------------------------
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor pow(const Scalar& exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_not() const;
  Tensor sign() const;
  Tensor rsqrt() const;
  Tensor exp2() const;
  Tensor expm1() const;
  Tensor log1p() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor trunc() const;
  Tensor frac() const;
  Tensor round(int64_t decimals = 0) const;
  Tensor nan_to_num(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor bitwise_not() const;
  // Special functions (autograd/ops/unary_ops.h) and atan2 (binary_ops.h).
  Tensor tan() const;
  Tensor erf() const;
  Tensor erfinv() const;
  Tensor lgamma() const;
  Tensor digamma() const;
  Tensor polygamma(int64_t n) const;
  Tensor reciprocal() const;
  Tensor square() const;
  Tensor atan2(const Tensor& other) const;
  Tensor matmul(const Tensor& other) const;
  Tensor sum() const;
  Tensor sum(IntArrayRef dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntArrayRef dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(IntArrayRef dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(IntArrayRef dims, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(IntArrayRef dims, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // Running and statistical reductions (autograd/ops/statistics_ops.h); empty dims = all.
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor count_nonzero(IntArrayRef dims = {}) const;
  Tensor var(IntArrayRef dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor norm(double p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  // Along `dim` (autograd/ops/activation_ops.h); dtype converts the input first.
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor clone() const;
  Tensor contiguous() const;
  Tensor to(ScalarType dtype) const;
  // A copy on `device` (converted to `dtype` when given), or self when nothing changes:
  // x.to(kCPU), x.to(Device(DeviceType::CUDA, 0)). Differentiable (ToCopyBackward0: the
  // gradient goes back to self's device). non_blocking as in PyTorch: a transfer from pinned
  // host memory to the device, or from the device into pinned memory, may still be queued on
  // the device's stream when this returns (cuda::synchronize() before reading such a CPU
  // result; docs/cuda.md); every other copy has completed.
  Tensor to(Device device, std::optional<ScalarType> dtype = std::nullopt,
            bool non_blocking = false) const;
  Tensor cuda(int8_t index = -1) const;  // to(Device(DeviceType::CUDA, index)); -1: the current
  Tensor cpu() const;                    // to(kCPU)
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  // self + value * tensor1 * tensor2, self + value * tensor1 / tensor2, and self + weight *
  // (end - self) (autograd/ops/ternary_ops.h).
  Tensor addcmul(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1) const;
  Tensor addcdiv(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;

  // Views: metadata only, sharing storage and version counter with this tensor.
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
               int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor view(IntArrayRef sizes) const;
  Tensor view_as(const Tensor& other) const;  // view(other.sizes())
  Tensor reshape(IntArrayRef sizes) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor alias() const;
  // Sliding windows along dim as a new last dim (a view), and dim split into sizes (a view).
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  // In-place ops: each checks, bumps the version counter once, writes, and records history.
  // `site` is the caller's file:line (filled in by default), reported if the write makes a
  // saved tensor stale.
  Tensor& copy_(const Tensor& src, CallSite site = CallSite::current());
  // non_blocking as to()'s.
  Tensor& copy_(const Tensor& src, bool non_blocking, CallSite site = CallSite::current());
  Tensor& fill_(const Scalar& value, CallSite site = CallSite::current());
  Tensor& fill_(const Tensor& value, CallSite site = CallSite::current());
  Tensor& zero_(CallSite site = CallSite::current());
  // Random fills (autograd/ops/random_ops.cc): tracked writes like every in-place op, recorded
  // as torch's UniformBackward0, NormalBackward0, ... whose gradient is zero. The numbers come
  // from `generator`, else from default_generator(device()) (tensor/generator.h).
  Tensor& uniform_(double from = 0.0, double to = 1.0,
                   std::optional<Generator> generator = std::nullopt,
                   CallSite site = CallSite::current());
  Tensor& normal_(double mean = 0.0, double std = 1.0,
                  std::optional<Generator> generator = std::nullopt,
                  CallSite site = CallSite::current());
  Tensor& exponential_(double lambd = 1.0, std::optional<Generator> generator = std::nullopt,
                       CallSite site = CallSite::current());
  Tensor& bernoulli_(double p = 0.5, std::optional<Generator> generator = std::nullopt,
                     CallSite site = CallSite::current());
  Tensor& bernoulli_(const Tensor& p, std::optional<Generator> generator = std::nullopt,
                     CallSite site = CallSite::current());
  // Integers in [0, the dtype's largest] (2^significand bits for floating dtypes), [0, to),
  // [from, to), or [from, largest] when to is nullopt.
  Tensor& random_(std::optional<Generator> generator = std::nullopt,
                  CallSite site = CallSite::current());
  Tensor& random_(int64_t to, std::optional<Generator> generator = std::nullopt,
                  CallSite site = CallSite::current());
  Tensor& random_(int64_t from, std::optional<int64_t> to,
                  std::optional<Generator> generator = std::nullopt,
                  CallSite site = CallSite::current());
  // 1 with probability self (a tensor of probabilities), or p, else 0; self's dtype and shape.
  Tensor bernoulli(std::optional<Generator> generator = std::nullopt) const;
  Tensor bernoulli(double p, std::optional<Generator> generator = std::nullopt) const;
  // Category indices drawn from self's rows of weights (native::multinomial).
  Tensor multinomial(int64_t num_samples, bool replacement = false,
                     std::optional<Generator> generator = std::nullopt) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1, CallSite site = CallSite::current());
  Tensor& add_(const Scalar& other, CallSite site = CallSite::current());
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1, CallSite site = CallSite::current());
  Tensor& sub_(const Scalar& other, CallSite site = CallSite::current());
  Tensor& mul_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& mul_(const Scalar& other, CallSite site = CallSite::current());
  Tensor& div_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& div_(const Scalar& other, CallSite site = CallSite::current());
  Tensor& neg_(CallSite site = CallSite::current());
  Tensor& relu_(CallSite site = CallSite::current());
  Tensor& sigmoid_(CallSite site = CallSite::current());
  Tensor& tanh_(CallSite site = CallSite::current());
  Tensor& exp_(CallSite site = CallSite::current());
  Tensor& sin_(CallSite site = CallSite::current());
  Tensor& cos_(CallSite site = CallSite::current());
  Tensor& tan_(CallSite site = CallSite::current());
  Tensor& erf_(CallSite site = CallSite::current());
  Tensor& erfinv_(CallSite site = CallSite::current());
  Tensor& lgamma_(CallSite site = CallSite::current());
  Tensor& digamma_(CallSite site = CallSite::current());
  Tensor& polygamma_(int64_t n, CallSite site = CallSite::current());
  Tensor& reciprocal_(CallSite site = CallSite::current());
  Tensor& square_(CallSite site = CallSite::current());  // pow_(2): PowBackward0, as torch
  Tensor& atan2_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& pow_(const Scalar& exponent, CallSite site = CallSite::current());
  Tensor& pow_(const Tensor& exponent, CallSite site = CallSite::current());
  // & | ^ in place (Python's &= |= ^=); bool tensors only, as the operators.
  Tensor& bitwise_and_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& bitwise_or_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& bitwise_xor_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
                 CallSite site = CallSite::current());
  // clamp_ under torch's alias name (ClampBackward1; the write is recorded as "clip_").
  Tensor& clip_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
                CallSite site = CallSite::current());
  Tensor& bitwise_left_shift_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& bitwise_right_shift_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& bitwise_not_(CallSite site = CallSite::current());
  Tensor& clamp_min_(const Scalar& min, CallSite site = CallSite::current());
  Tensor& clamp_max_(const Scalar& max, CallSite site = CallSite::current());
  Tensor& remainder_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& remainder_(const Scalar& other, CallSite site = CallSite::current());
  Tensor& fmod_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& fmod_(const Scalar& other, CallSite site = CallSite::current());
  Tensor& floor_divide_(const Tensor& other, CallSite site = CallSite::current());
  Tensor& floor_divide_(const Scalar& other, CallSite site = CallSite::current());
  // rounding_mode: "trunc" or "floor" (nullopt: true division, as div_(other)).
  Tensor& div_(const Tensor& other, std::optional<std::string_view> rounding_mode,
               CallSite site = CallSite::current());
  Tensor& div_(const Scalar& other, std::optional<std::string_view> rounding_mode,
               CallSite site = CallSite::current());
  Tensor& abs_(CallSite site = CallSite::current());
  Tensor& sqrt_(CallSite site = CallSite::current());
  Tensor& rsqrt_(CallSite site = CallSite::current());
  Tensor& log_(CallSite site = CallSite::current());
  Tensor& log1p_(CallSite site = CallSite::current());
  Tensor& expm1_(CallSite site = CallSite::current());
  Tensor& sign_(CallSite site = CallSite::current());
  Tensor& floor_(CallSite site = CallSite::current());
  Tensor& ceil_(CallSite site = CallSite::current());
  Tensor& trunc_(CallSite site = CallSite::current());
  Tensor& frac_(CallSite site = CallSite::current());
  Tensor& round_(int64_t decimals = 0, CallSite site = CallSite::current());
  Tensor& nan_to_num_(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt,
                      CallSite site = CallSite::current());
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value,
                       CallSite site = CallSite::current());
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value,
                       CallSite site = CallSite::current());
  Tensor& addcmul_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1,
                   CallSite site = CallSite::current());
  Tensor& addcdiv_(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1,
                   CallSite site = CallSite::current());
  Tensor& lerp_(const Tensor& end, const Scalar& weight, CallSite site = CallSite::current());
  Tensor& lerp_(const Tensor& end, const Tensor& weight, CallSite site = CallSite::current());

  // ---- Indexing (defined in indexing/tensor_indexing.cc) -------------------------------------
  // x.index({1, Slice(None, 2), idx}) is Python's x[1, :2, idx].
  Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  // x.set_item_({Slice(), 0}, v) is Python's x[:, 0] = v.
  Tensor& set_item_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value,
                    CallSite site = CallSite::current());
  Tensor& set_item_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value,
                    CallSite site = CallSite::current());
  Tensor& set_item_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value,
                    CallSite site = CallSite::current());
  Tensor& set_item_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value,
                    CallSite site = CallSite::current());
  // x.index_put_({i, j}, v, true) is Python's x.index_put_((i, j), v, accumulate=True).
  // Dim-wise indexing (autograd/ops/index_family_ops.h): x.index_add_(0, idx, src) is
  // x[idx] += src along dim 0 with duplicates summed in index order; index_copy_ keeps the
  // last duplicate; index_fill_ writes a scalar.
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& alpha = 1, CallSite site = CallSite::current());
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source,
                      CallSite site = CallSite::current());
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value,
                      CallSite site = CallSite::current());
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = 1) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  // A 0-dim tensor value, as torch (differentiable in the value).
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Tensor& value,
                      CallSite site = CallSite::current());
  Tensor index_fill(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor& index_put_(TensorList indices, const Tensor& values, bool accumulate = false,
                     CallSite site = CallSite::current());
  // Element-wise indexing along one dim (autograd/ops/scatter_ops.h): out[i][j] =
  // self[index[i][j]][j] for gather along 0; scatter_ writes the other way (last duplicate
  // wins), scatter_add_ sums duplicates in index order, scatter_reduce_ folds them with "sum",
  // "prod", "mean", "amax" or "amin".
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self = true) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src,
                   CallSite site = CallSite::current());
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value,
                   CallSite site = CallSite::current());
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src,
                       CallSite site = CallSite::current());
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, bool include_self = true,
                          CallSite site = CallSite::current());
  // Flat and masked relatives (autograd/ops/take_put_ops.h): take/put_ index self as if it
  // were 1-D (row-major); masked_select reads self[mask], masked_scatter_ writes source's
  // leading elements into the masked positions in row-major order.
  Tensor take(const Tensor& index) const;
  Tensor& put_(const Tensor& index, const Tensor& source, bool accumulate = false,
               CallSite site = CallSite::current());
  Tensor put(const Tensor& index, const Tensor& source, bool accumulate = false) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source,
                          CallSite site = CallSite::current());
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  // x[{1, Slice()}] reads as x.index(...) and `x[{...}] = v` calls set_item_.
  indexing::TensorIndexProxy operator[](std::initializer_list<indexing::TensorIndex> indices);

  // Products and shape helpers (autograd/ops/shape_ops.h).
  // Products (autograd/ops/products_ops.h, linalg_ops.h): operands of one dtype, as torch.
  Tensor mm(const Tensor& mat2) const;
  Tensor bmm(const Tensor& mat2) const;
  Tensor mv(const Tensor& vec) const;
  Tensor dot(const Tensor& other) const;
  Tensor inner(const Tensor& other) const;
  Tensor outer(const Tensor& vec2) const;
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
               const Scalar& alpha = 1) const;
  // Copies with a new arrangement of the elements.
  Tensor flip(IntArrayRef dims) const;
  Tensor fliplr() const;
  Tensor flipud() const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor tile(IntArrayRef dims) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor diag(int64_t diagonal = 0) const;
  Tensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) const;
  int64_t ndimension() const { return dim(); }
  // torch's composite helpers (autograd/ops/composite_ops.h).
  Tensor trace() const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  Tensor kron(const Tensor& other) const;
  Tensor cross(const Tensor& other, std::optional<int64_t> dim = std::nullopt) const;
  // The main diagonal (all indices equal) set to value, through the mutation engine; wrap: a
  // tall matrix's diagonal restarts every width + 1 rows (torch's fill_diagonal_).
  Tensor& fill_diagonal_(const Scalar& value, bool wrap = false,
                         CallSite site = CallSite::current());
  // In place through the mutation engine (one bump each): tril_/triu_ zero a triangle; the view
  // ops change this tensor's own sizes and strides (Note [In-place view ops]).
  Tensor& tril_(int64_t diagonal = 0, CallSite site = CallSite::current());
  Tensor& triu_(int64_t diagonal = 0, CallSite site = CallSite::current());
  Tensor& t_(CallSite site = CallSite::current());
  Tensor& transpose_(int64_t dim0, int64_t dim1, CallSite site = CallSite::current());
  Tensor& unsqueeze_(int64_t dim, CallSite site = CallSite::current());
  Tensor& squeeze_(CallSite site = CallSite::current());
  Tensor& squeeze_(int64_t dim, CallSite site = CallSite::current());
  Tensor& as_strided_(IntArrayRef sizes, IntArrayRef strides,
                      std::optional<int64_t> storage_offset = std::nullopt,
                      CallSite site = CallSite::current());

 private:
  void check_host_access(const char* accessor) const {
    if (__builtin_expect(!impl_->device().is_cpu(), 0)) throw_device_access(accessor);
  }
  [[noreturn]] void throw_device_access(const char* accessor) const;

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

template <typename T>
T* Tensor::data_ptr() const {
  if (scalar_type_of<T>() != dtype()) {
    throw DTypeError(str("data_ptr<", dtype_name(scalar_type_of<T>()),
                         ">(): the tensor's dtype is ", dtype_name(dtype()),
                         "; call data_ptr<T>() with the matching C++ type or convert with .to()"));
  }
  check_host_access("data_ptr");
  return static_cast<T*>(impl_->data());
}

}  // namespace mutagrad
