#include "indexing/get_set.h"

#include <sstream>
#include <utility>

#include "autograd/capture_hook.h"
#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/ops/indexing_ops.h"
#include "autograd/ops/inplace_ops.h"
#include "indexing/slicing.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/views.h"

namespace mutagrad::indexing {
namespace {

constexpr const char* kSetItem = "set_item_";
constexpr const char* kIndexPut = "index_put_";

// The index expressions a MutationLog shows (IndexExpression in tensor/version_counter.h).
std::string format_tensor_indices(const void* indices) {
  return to_string(*static_cast<const ArrayRef<TensorIndex>*>(indices));
}

std::string format_index_tensors(const void* indices) {
  std::ostringstream os;
  os << '[';
  const TensorList& list = *static_cast<const TensorList*>(indices);
  for (size_t i = 0; i < list.size(); ++i) {
    os << (i ? ", " : "") << (list[i].defined() ? TensorIndex(list[i]) : TensorIndex(None));
  }
  os << ']';
  return os.str();
}

bool requires_grad_raw(const Tensor& t) {
  const AutogradMetaInterface* meta = t.unsafe_impl()->autograd_meta();
  return meta != nullptr && meta->requires_grad();
}

// Whether a write must go through autograd (record history, run the in-place checks).
bool needs_autograd(const Tensor& self, const Tensor* value) {
  // Under capture the write goes through the covered ops (Note [Capture hook]).
  if (autograd::capture::capturing()) return true;
  // A dual on either side: the write updates tangents too (Note [Tangents under mutation] in
  // autograd/forward_ad.h), in grad mode or not.
  if (autograd::fwd::enabled() &&
      autograd::fwd::has_tangent({self, value != nullptr ? *value : Tensor()})) {
    return true;
  }
  if (!autograd::GradMode::is_enabled()) return false;
  return requires_grad_raw(self) || (value != nullptr && requires_grad_raw(*value));
}

// `t` without its leading size-1 dims (a view), the form set_item_ broadcasts.
Tensor strip_leading_ones_view(const Tensor& t, bool differentiable) {
  DimVector stripped = native::strip_leading_ones(t.sizes());
  if (stripped.size() == static_cast<size_t>(t.dim())) return t;
  return differentiable ? t.view(stripped) : native::view(t, stripped);
}

void check_value_broadcasts(const Tensor& dst, const Tensor& value) {
  if (!native::is_expandable_to(value.sizes(), dst.sizes())) {
    throw ShapeError(str("set_item_(): the value of shape ", value.sizes(),
                         " cannot be broadcast to the indexed shape ", dst.sizes(),
                         "; give the value that shape, or sizes of 1 (or fewer dims) to "
                         "broadcast"));
  }
}

// Note [Advanced sets keep the value's dtype]
// As PyTorch 1.13: a basic write (Path A) converts a tensor value to self's dtype (copy_), and
// so does a number; an advanced write (Path B) gives the tensor value to index_put_ as it is,
// which refuses another dtype (DTypeError "Index put requires the source and destination dtypes
// match") before anything is written -- except for a bool mask with a one-element CPU value,
// index_put_'s masked fill, which converts (x[mask] = tensor(1.5) on an int64 x writes 1).
// Converting here would silently truncate int_x[idx] = float_tensor.

// Path A / Path B writes without autograd: validate everything, bump once, then write.
void write_native(const Tensor& self, const Sliced& sliced, const Tensor* value,
                  const Scalar* scalar, const MutationSite& site) {
  const Tensor& dst = sliced.tensor;
  if (!sliced.has_advanced()) {
    native::assert_no_internal_overlap(dst, kSetItem);
    if (scalar != nullptr) {
      native::fill_(dst, *scalar, &site);  // checks, bumps once, writes
      return;
    }
    Tensor v = strip_leading_ones_view(*value, false);
    check_value_broadcasts(dst, v);
    native::copy_(dst, v, &site);  // checks, bumps once, writes
    return;
  }
  // A mask with a scalar (or one-element) value becomes a masked fill inside index_put_. The
  // scalar stays a CPU tensor for a CUDA destination too: index_put_ takes the masked fill only
  // for a CPU value (reading a device one would cost a synchronization) and moves it otherwise.
  // A tensor value keeps its dtype (Note [Advanced sets keep the value's dtype]).
  if (scalar != nullptr) check_scalar_fits(*scalar, dst.dtype(), kSetItem);
  Tensor v = scalar != nullptr ? full({}, *scalar, dst.dtype(), kCPU)
                               : strip_leading_ones_view(*value, false);
  native::AdvancedIndex adv =
      native::prepare_index_put(dst, sliced.indices, v, /*accumulate=*/false);
  const PendingBump bump(self.version_counter(), site, self.unsafe_impl());
  native::index_put_validated(dst, adv, v, /*accumulate=*/false, &bump);
}

void set_item_impl(const Tensor& self, ArrayRef<TensorIndex> indices, const Tensor* value,
                   const Scalar* scalar, CallSite site) {
  const IndexExpression expr{self.unsafe_impl(), &format_tensor_indices, &indices};
  const MutationSite ms{kSetItem, site.file, site.line, &expr};
  // PyTorch (Python's bare x[False] = v and C++'s set_item with {false}): writes nothing, checks
  // nothing and does not bump, so no saved tensor becomes stale. Every other empty selection
  // (x[3:3], an empty index tensor, an all-false mask, (False,)) is a write of no elements: it
  // runs the checks and bumps once, as PyTorch does.
  if (indices.size() == 1 && indices[0].is_boolean() && !indices[0].boolean()) return;
  // PyTorch's set_item reads a lone `true` (Python's bare x[True] = v) as x.unsqueeze(0) = v: a
  // basic write, which converts the value's dtype (x[None] = v here). In a longer list (Python's
  // (True,)) `true` is an advanced index.
  const TensorIndex new_dim(None);
  const ArrayRef<TensorIndex> list =
      indices.size() == 1 && indices[0].is_boolean() ? ArrayRef<TensorIndex>(new_dim) : indices;
  if (!needs_autograd(self, value)) {
    write_native(self, apply_slicing(self, list, ViewMode::kNative), value, scalar, ms);
    return;
  }
  Sliced sliced = apply_slicing(self, list, ViewMode::kDifferentiable);
  const Tensor& dst = sliced.tensor;
  if (!sliced.has_advanced()) {
    if (scalar != nullptr) {
      autograd::fill_(dst, *scalar, ms);
      return;
    }
    Tensor v = strip_leading_ones_view(value->to(self.dtype()), true);
    check_value_broadcasts(dst, v);
    autograd::copy_(dst, v, ms);
    return;
  }
  if (scalar != nullptr) check_scalar_fits(*scalar, self.dtype(), kSetItem);
  Tensor v = scalar != nullptr ? full({}, *scalar, self.dtype(), self.device())
                               : strip_leading_ones_view(*value, true);
  autograd::index_put_(dst, sliced.indices, v, /*accumulate=*/false, ms);
}

}  // namespace

Tensor get_item(const Tensor& self, ArrayRef<TensorIndex> indices) {
  Sliced sliced = apply_slicing(self, indices, ViewMode::kDifferentiable);
  if (sliced.has_advanced()) return autograd::index(sliced.tensor, sliced.indices);
  // Always a new tensor, as PyTorch: x[...] is not x, but a view of it.
  if (sliced.tensor.is_same(self)) return self.alias();
  return sliced.tensor;
}

void set_item_(const Tensor& self, ArrayRef<TensorIndex> indices, const Tensor& value,
               CallSite site) {
  if (!value.defined()) {
    throw ValueError("set_item_(): the value is an undefined Tensor; pass a tensor or a scalar");
  }
  set_item_impl(self, indices, &value, nullptr, site);
}

void set_item_(const Tensor& self, ArrayRef<TensorIndex> indices, const Scalar& value,
               CallSite site) {
  if (try_set_element(self, indices, value, site)) return;
  set_item_impl(self, indices, nullptr, &value, site);
}

void index_put_(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                CallSite site) {
  const IndexExpression expr{self.unsafe_impl(), &format_index_tensors, &indices};
  const MutationSite ms{kIndexPut, site.file, site.line, &expr};
  if (!needs_autograd(self, &values)) {
    native::AdvancedIndex adv = native::prepare_index_put(self, indices, values, accumulate);
    const PendingBump bump(self.version_counter(), ms, self.unsafe_impl());
    native::index_put_validated(self, adv, values, accumulate, &bump);
    return;
  }
  autograd::index_put_(self, std::vector<Tensor>(indices.begin(), indices.end()), values,
                       accumulate, ms);
}

bool try_set_element(const Tensor& self, ArrayRef<TensorIndex> indices, const Scalar& value,
                     CallSite site) {
  if (autograd::capture::capturing()) return false;  // the general path is captured
  TensorImpl* impl = self.unsafe_impl();
  const size_t n = indices.size();
  if (impl == nullptr || n == 0 || static_cast<int64_t>(n) != impl->dim() ||
      !impl->device().is_cpu()) {
    return false;
  }
  const AutogradMetaInterface* meta = impl->autograd_meta();
  if (meta != nullptr && meta->requires_grad()) return false;
  if (autograd::fwd::enabled() && autograd::fwd::has_tangent({self})) return false;
  IntArrayRef sizes = impl->sizes();
  IntArrayRef strides = impl->strides();
  int64_t offset = 0;
  for (size_t d = 0; d < n; ++d) {
    if (!indices[d].is_integer()) return false;
    int64_t i = indices[d].integer();
    const int64_t size = sizes[d];
    if (i < -size || i >= size) return false;  // the general path raises the error
    offset += (i < 0 ? i + size : i) * strides[d];
  }
  if (!value.fits(impl->dtype())) return false;  // the general path raises the error
  const IndexExpression expr{impl, &format_tensor_indices, &indices};
  impl->version_counter().bump(MutationSite{kSetItem, site.file, site.line, &expr}, impl);
  dispatch_dtype(impl->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    static_cast<T*>(impl->data())[offset] = value.to<T>();
  });
  return true;
}

}  // namespace mutagrad::indexing
