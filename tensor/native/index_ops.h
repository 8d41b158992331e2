// Raw advanced-indexing ops: gather (index), scatter (index_put_) and masked_fill_ (no autograd,
// no version bump: callers bump). Every argument is validated before anything is written, so a
// failed call leaves every tensor bit-for-bit unchanged (the strong guarantee).
//
//   Tensor rows = native::index(x, {idx});                  // x[idx], a copy
//   native::index_put_(x, {Tensor(), idx}, v, false);       // x[:, idx] = v
//   native::index_put_(x, {i, j}, v, /*accumulate=*/true);  // x[i, j] += v, duplicates summed
//   native::masked_fill_(x, x.gt(0), 0.0);                  // x[x > 0] = 0
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/backend.h"
#include "tensor/element_math.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// Note [Indices known in range]
// An index entry whose values are known to lie in range needs no screen: the coordinates a
// scatter or gather builds with arange, the columns of a mask's nonzero(), and indices that
// were checked against a tensor of the same sizes and are unchanged since (a backward reusing
// its forward's saved indices, which SavedVariable refuses once modified). On a device the
// screen is a kernel and a synchronization per index tensor; skipping it lets a write or a
// read of known indices run without waiting for the device. Bits are per entry of the caller's
// list (entries past 63 are never known).
struct KnownIndices {
  uint64_t in_range = 0;     // bit p: entry p's values lie in the op's range of its dim
  uint64_t nonnegative = 0;  // bit p: and in [0, size)
  static KnownIndices all() { return {~uint64_t{0}, 0}; }
  bool has(size_t p) const { return p < 64 && ((in_range >> p) & 1) != 0; }
  bool has_nonnegative(size_t p) const { return has(p) && ((nonnegative >> p) & 1) != 0; }
};

// An index list in the normal form the backend kernels take (see Backend::index). Built and
// validated by make_advanced_index() from a user list whose entries are: undefined (the dim is
// taken whole), an int64/int32 index tensor (one dim), or a bool mask (as many dims as it has,
// replaced by the columns of its nonzero()).
struct AdvancedIndex {
  // One entry per leading dim of self that the list covers; undefined = taken whole. Defined
  // entries are int64 and expanded (stride 0 where broadcast) to `index_shape`.
  std::vector<Tensor> indices;
  // The defined entries before expansion (for bounds checks), parallel to `indices`.
  std::vector<Tensor> unexpanded;
  DimVector index_shape;   // the broadcast shape of the index tensors
  DimVector result_shape;  // the shape of self[indices]
  // Whether the defined entries are one run of dims: then index_shape replaces them in place,
  // otherwise it goes to the front of the result (PyTorch/NumPy rule).
  bool adjacent = true;
  int64_t first_dim = 0;    // the first indexed dim of self
  int64_t num_defined = 0;  // how many entries are defined
  // Set by prepare_index_put() when the write is a masked fill (see there): the mask, viewed
  // to broadcast to self's shape. The other fields are then unset.
  Tensor fill_mask;
  // Whether a negative index counts from the end (Python's rule, indexing and index_put_) or
  // is out of bounds (gather and scatter, as PyTorch). Read by check_index_bounds().
  bool negative_wraps = true;
  // Set by prepare_index_put(): every index value was found in [0, size), so a kernel need not
  // wrap negatives (IndexPutDescriptor::nonnegative). False is always correct.
  bool nonnegative = false;
  // The entries (of `indices`) that need no bounds screen (Note [Indices known in range]):
  // the caller's known ones and the columns of a mask's nonzero().
  KnownIndices known;
  // Set by prepare_index_put() when it wrote the result already (Note [Staged writes]): a
  // contiguous copy of self with the write done, for index_put_validated() to copy into self.
  Tensor staged;
  bool staged_accumulate = false;
};

// Validates `indices` against `self` and brings them to normal form, in PyTorch's order of
// checks: too many indices (IndexError), index dtype (IndexError), device (DeviceError), mask
// shape (IndexError), broadcasting of the index tensors (IndexError), a non-empty index into
// an empty dim (IndexError). Other values are NOT range checked here; call
// check_index_bounds() once the other arguments are validated too.
AdvancedIndex make_advanced_index(const Tensor& self, TensorList indices, KnownIndices known = {});
// IndexOutOfRangeError "index 5 is out of bounds for dimension 0 with size 3" for the first
// index value outside [-size, size) (negative values wrap, as in Python), or [0, size) when
// !index.negative_wraps (the op's rule: tensor/native/index_rules.h). Nothing is checked when the
// result is empty (nothing is accessed then), as PyTorch. Returns whether every value lies in [0,
// size) (false for an empty result). Entries in index.known are not screened.
bool check_index_bounds(const Tensor& self, const AdvancedIndex& index);

// Note [The index loop]
// Every backend's gather and scatter kernel walks the indexed shape R (the shape of
// self[indices]) in row-major order, which for one destination element is index order. A dim of
// R is either a dim of self taken whole (self's stride) or a dim of the broadcast index shape
// (stride 0 in self; each index tensor has its stride there). The element at R-coordinates c
// is self at sum(c * self_strides) + sum over index operands of (value, wrapped if negative) *
// operand.stride, and the dense operand (gather output / scattered values) at
// sum(c * dense_strides). A 0-dim R is one element of a 1-dim loop.
struct IndexLoop {
  struct Operand {
    Tensor index;       // int64, expanded to the index shape (on the kernel's device)
    DimVector strides;  // per dim of R (elements); 0 on dims that are not index dims
    int64_t size;       // size of the indexed dim of self (negative values wrap by it)
    int64_t stride;     // stride of the indexed dim of self
  };
  DimVector sizes;
  DimVector self_strides;  // 0 on index dims
  DimVector dense_strides;
  DimVector is_index_dim;  // 1 on dims that come from the index tensors
  std::vector<Operand> idx;
};
// The loop of a kernel over self[indices] (normal form: AdvancedIndex::indices) with the dense
// operand `dense` of the indexed shape.
IndexLoop make_index_loop(const Tensor& self, const std::vector<Tensor>& indices,
                          const Tensor& dense);

// Calls fn(math::AddValues{}) (or Mul/Max/MinValues) for the combine of an accumulating
// index_put kernel (IndexPutDescriptor::reduce); every backend compiles one loop per op.
template <typename Fn>
decltype(auto) dispatch_combine(ReduceOp op, Fn&& fn) {
  switch (op) {
    case ReduceOp::kProd:
      return fn(math::MulValues{});
    case ReduceOp::kMax:
      return fn(math::MaxValues{});
    case ReduceOp::kMin:
      return fn(math::MinValues{});
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      break;
  }
  return fn(math::AddValues{});
}

// self[indices] as a new tensor (never a view): gather.
// With every defined entry known (Note [Indices known in range]), no check at all.
Tensor index(const Tensor& self, TensorList indices, bool negative_wraps = true,
             KnownIndices known = {});
// self[indices] = values (accumulate: +=). values must have self's dtype (DTypeError otherwise,
// as PyTorch) and broadcast to the indexed shape (ShapeError). Duplicates: without accumulate
// the last occurrence in index order wins; with accumulate the values are summed per element
// in index order, bitwise the same for any thread count. Writing into a tensor whose elements
// share memory (an expanded tensor) is a ValueError. A `values` that overlaps self is read as
// if copied first.
void index_put_(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                KnownIndices known = {});
// Every check of index_put_ (index list, value shape, dtype, device, destination overlap,
// bounds) without writing: the normal form to pass to index_put_validated(). As PyTorch
// (canDispatchToMaskedFill), a write without accumulate whose only index is a bool mask and
// whose value has one element on the CPU is a masked fill (a uint8 mask too, as torch): only the
// mask is checked, and the value is converted to self's dtype. `may_stage`: the result feeds
// exactly one index_put_validated() with these values and this accumulate (a sum), so the
// write may be done here into a copy (Note [Staged writes]). Index tensors and a mask that share
// memory with self are copied here: every pass with the result reads the values checked here,
// whatever the passes before it wrote (Note [Operands read before the write]).
// `known`: entries that need no bounds screen (Note [Indices known in range]).
AdvancedIndex prepare_index_put(const Tensor& self, TensorList indices, const Tensor& values,
                                bool accumulate, bool negative_wraps = true, bool may_stage = true,
                                KnownIndices known = {});
// index_put_ on an already validated normal form (values already of self's dtype and
// broadcastable, bounds checked); of a staged one, the copy into self. Values that overlap
// self are read as if copied at this call. `bump`: the write's version bump, fired after every
// temporary is allocated and before self changes (Note [Allocate before the bump] in
// tensor/version_counter.h); null when the caller bumps nothing.
void index_put_validated(const Tensor& self, const AdvancedIndex& index, const Tensor& values,
                         bool accumulate, const PendingBump* bump = nullptr);
// The same with every kernel option (accumulate with a product, max or min: scatter_reduce_;
// desc.bump as `bump` above).
void index_put_validated(const Tensor& self, const AdvancedIndex& index, const Tensor& values,
                         const IndexPutDescriptor& desc);
// self[mask] = value, mask bool and broadcastable to self's shape (self's shape is kept);
// ValueError when the value does not fit self's dtype. `bump`: see Note [In-place writes bump
// after validation] in tensor/native/pointwise.h.
void masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value,
                  const MutationSite* bump = nullptr);

// True when shape `from` broadcasts to `to` without changing `to` (PyTorch's is_expandable_to).
bool is_expandable_to(IntArrayRef from, IntArrayRef to);

// The shape of `values` with leading size-1 dims dropped (PyTorch's slicePrefix1sSize): the
// form set_item_ broadcasts to the indexed shape.
DimVector strip_leading_ones(IntArrayRef sizes);

// Error texts shared with indexing/ (each one states the rule and how to fix it).
std::string too_many_indices_message(int64_t ndim, int64_t got);
// "index 5 is out of bounds for dimension 0 with size 3; valid indices are in [-3, 2]" (or [0, 2]
// and a word on negatives, for an op whose rule refuses them: tensor/native/index_rules.h).
std::string out_of_bounds_message(int64_t index, int64_t dim, int64_t size,
                                  bool negative_wraps = true);

}  // namespace mutagrad::native
