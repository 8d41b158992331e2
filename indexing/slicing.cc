#include "indexing/slicing.h"

#include "tensor/native/factories.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/views.h"

namespace mutagrad::indexing {
namespace {

// A uint8 index tensor is a mask too, as in PyTorch (which deprecates it for bool).
bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

// The dims (of self) an entry addresses; see count_specified_dims().
int64_t specified_dims_of(const TensorIndex& index) {
  switch (index.type()) {
    case TensorIndexType::Integer:
    case TensorIndexType::Slice:
      return 1;
    case TensorIndexType::Tensor:
      return is_mask(index.tensor()) ? index.tensor().dim() : 1;
    default:
      return 0;
  }
}

// A bool scalar is an advanced index on a new dim of size 1: [0] for true, [] for false.
Tensor bool_to_index(bool value, Device device) {
  return zeros({value ? 1 : 0}, TensorOptions(kInt64).device(device));
}

void check_dim_exists(const Tensor& t, int64_t dim, int64_t extra, const char* what) {
  if (dim < 0 || dim >= t.dim() + extra) {
    throw IndexError(str("dimension out of range: ", what, " at dim ", dim, " of a tensor with ",
                         t.dim(),
                         " dims (the index list addresses more dims than the tensor "
                         "has; check the Ellipsis entries)"));
  }
}

class ViewOps {
 public:
  explicit ViewOps(ViewMode mode) : differentiable_(mode == ViewMode::kDifferentiable) {}
  Tensor select(const Tensor& t, int64_t dim, int64_t i) const {
    return differentiable_ ? t.select(dim, i) : native::select(t, dim, i);
  }
  Tensor slice(const Tensor& t, int64_t dim, const Slice& s) const {
    return differentiable_ ? t.slice(dim, s.start(), s.stop(), s.step())
                           : native::slice(t, dim, s.start(), s.stop(), s.step());
  }
  Tensor unsqueeze(const Tensor& t, int64_t dim) const {
    return differentiable_ ? t.unsqueeze(dim) : native::unsqueeze(t, dim);
  }

 private:
  bool differentiable_;
};

}  // namespace

int64_t count_specified_dims(ArrayRef<TensorIndex> indices) {
  int64_t n = 0;
  for (const TensorIndex& index : indices) n += specified_dims_of(index);
  return n;
}

Sliced apply_slicing(const Tensor& self, ArrayRef<TensorIndex> indices, ViewMode mode) {
  const ViewOps views(mode);
  const int64_t ndim = self.dim();
  const int64_t specified = count_specified_dims(indices);
  if (specified > ndim) {
    if (ndim == 0 && indices.size() == 1 && indices[0].is_integer()) {
      throw IndexError(
          "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
          "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    }
    throw IndexError(native::too_many_indices_message(ndim, specified));
  }

  Sliced out;
  Tensor result = self;
  int64_t dim = 0;    // the dim of `result` the next entry applies to
  int64_t orig = 0;   // the dim of `self` it addresses (for messages)
  int64_t extra = 0;  // dims covered by masks beyond their one slot in `out.indices`
  // Records an advanced entry covering `covers` dims at `dim`: its slot is `dim - extra`, so
  // that a k-dim mask, later expanded into its k nonzero() columns, lines up with the dims.
  auto record = [&](Tensor t, int64_t covers) {
    const int64_t slot = dim - extra;
    if (static_cast<int64_t>(out.indices.size()) < slot + 1) out.indices.resize(slot + 1);
    out.indices[slot] = std::move(t);
    dim += covers;
    extra += covers - 1;
  };
  auto select_checked = [&](int64_t i) {
    check_dim_exists(result, dim, 0, "an integer index");
    int64_t size = result.size(dim);
    if (i < -size || i >= size) {
      throw IndexOutOfRangeError(native::out_of_bounds_message(i, orig, size));
    }
    result = views.select(result, dim, i < 0 ? i + size : i);
    ++orig;
  };
  auto add_bool = [&](bool value) {
    check_dim_exists(result, dim, 1, "a bool index");
    result = views.unsqueeze(result, dim);
    record(bool_to_index(value, self.device()), 1);
  };

  for (const TensorIndex& index : indices) {
    switch (index.type()) {
      case TensorIndexType::Integer:
        select_checked(index.integer());
        break;
      case TensorIndexType::Slice: {
        const Slice& s = index.slice();
        if (s.step() <= 0) {
          throw ValueError(str("step must be greater than zero (got ", s.step(), " in the slice ",
                               s, "); to reverse a dim, index it with a reversed index tensor"));
        }
        check_dim_exists(result, dim, 0, "a slice");
        result = views.slice(result, dim, s);
        ++dim;
        ++orig;
        break;
      }
      case TensorIndexType::Ellipsis:
        dim += ndim - specified;
        orig += ndim - specified;
        break;
      case TensorIndexType::None:
        check_dim_exists(result, dim, 1, "None");
        result = views.unsqueeze(result, dim);
        ++dim;
        break;
      case TensorIndexType::Boolean:
        add_bool(index.boolean());
        break;
      case TensorIndexType::Tensor: {
        const Tensor& t = index.tensor();
        if (t.dim() == 0 && is_integral(t.dtype(), /*include_bool=*/true)) {
          if (is_mask(t)) {
            add_bool(t.item<bool>());
          } else {
            select_checked(t.item<int64_t>());
          }
        } else {
          // A k-dim mask covers k dims (as PyTorch >= 2.1; 1.13 advanced by one dim only,
          // which made x[mask2d, 0] fail; see docs/indexing.md).
          const int64_t covers = specified_dims_of(index);
          orig += covers;
          record(t, covers);
        }
        break;
      }
    }
  }
  out.tensor = std::move(result);
  return out;
}

}  // namespace mutagrad::indexing
