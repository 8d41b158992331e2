#include "tests/fuzz/index_reference.h"

#include <algorithm>
#include <map>
#include <optional>

#include "tensor/native/factories.h"
#include "tests/fuzz/fuzz_input.h"

namespace mutagrad::fuzz {
namespace {

using indexing::TensorIndex;
using indexing::TensorIndexType;

struct RefView {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

// One advanced entry over result dims [dim, dim + k): k = 1 for an index, mask.dim() for a
// mask (k index arrays, its nonzero() columns).
struct Advanced {
  int64_t dim;
  std::vector<int64_t> shape;                // of each index array
  std::vector<std::vector<int64_t>> values;  // k arrays, row-major
};

bool is_mask_dtype(ScalarType t) { return t == kBool || t == kUInt8; }

// An index tensor's values, row-major.
std::vector<int64_t> values_of(const Tensor& t) {
  std::vector<int64_t> out;
  for_each_coord(to_vector(t.sizes()), [&](const std::vector<int64_t>& c) {
    out.push_back(element_as_int(t, storage_offset_of(t, c)));
  });
  return out;
}

// Turns `t` (recorded at result dim `dim`) into index arrays; false with `error` if invalid.
bool to_advanced(const Tensor& t, int64_t dim, const RefView& v, Advanced* a, std::string* error) {
  a->dim = dim;
  if (is_mask_dtype(t.dtype())) {
    const int64_t k = t.dim();
    if (dim + k > static_cast<int64_t>(v.sizes.size())) {
      *error = "too many indices (mask)";
      return false;
    }
    for (int64_t i = 0; i < k; ++i) {
      if (t.size(i) != v.sizes[dim + i]) {
        *error = "mask shape mismatch";
        return false;
      }
    }
    a->values.assign(k, {});
    for_each_coord(to_vector(t.sizes()), [&](const std::vector<int64_t>& c) {
      if (element_as_int(t, storage_offset_of(t, c)) != 0) {
        for (int64_t i = 0; i < k; ++i) a->values[i].push_back(c[i]);
      }
    });
    const int64_t nnz = k == 0 ? 0 : static_cast<int64_t>(a->values[0].size());
    a->shape = {nnz};
    // A 0-dim mask (k = 0) never reaches here: it is handled as a bool.
    return true;
  }
  if (t.dtype() != kInt64 && t.dtype() != kInt32) {
    *error = "index dtype";
    return false;
  }
  if (dim >= static_cast<int64_t>(v.sizes.size())) {
    *error = "too many indices";
    return false;
  }
  a->shape = to_vector(t.sizes());
  a->values = {values_of(t)};
  return true;
}

bool broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t>* out) {
  size_t nd = 0;
  for (const auto& s : shapes) nd = std::max(nd, s.size());
  out->assign(nd, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = (*out)[nd - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) return false;
      o = s[i];
    }
  }
  return true;
}

// Row-major position in `shape` of the element that coordinates `c` of `target` (shape
// right-aligned with target, size-1 dims broadcast) reads.
int64_t broadcast_position(const std::vector<int64_t>& shape, const std::vector<int64_t>& target,
                           const std::vector<int64_t>& c) {
  int64_t pos = 0;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    pos = pos * shape[i] + (shape[i] == 1 ? 0 : c[lead + i]);
  return pos;
}

// The advanced step over the view: the gather of PyTorch's index().
RefIndex gather(const RefView& v, std::vector<Advanced> adv) {
  RefIndex r;
  // Expand masks: one (dim, shape, values) per covered dim.
  struct Column {
    int64_t dim;
    const std::vector<int64_t>* shape;
    const std::vector<int64_t>* values;
  };
  std::vector<Column> cols;
  for (const Advanced& a : adv) {
    for (size_t i = 0; i < a.values.size(); ++i) {
      cols.push_back({a.dim + static_cast<int64_t>(i), &a.shape, &a.values[i]});
    }
  }
  if (cols.empty()) {
    // Only 0-dim masks (none reach here) would do this; treat as the view itself.
    r.error = "no advanced index";
    return r;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const Column& c : cols) shapes.push_back(*c.shape);
  std::vector<int64_t> b;
  if (!broadcast_shapes(shapes, &b)) {
    r.error = "index shapes do not broadcast";
    return r;
  }
  int64_t bnumel = 1;
  for (int64_t s : b) bnumel *= s;
  std::vector<bool> indexed(v.sizes.size(), false);
  int64_t lo = static_cast<int64_t>(v.sizes.size()), hi = -1;
  for (const Column& c : cols) {
    indexed[c.dim] = true;
    lo = std::min(lo, c.dim);
    hi = std::max(hi, c.dim);
  }
  const bool adjacent = hi - lo + 1 == static_cast<int64_t>(cols.size());
  // Result dims: each is either a broadcast dim (bdim >= 0) or a view dim taken whole.
  struct RDim {
    int64_t size, bdim, vdim;
  };
  std::vector<RDim> rdims;
  auto push_b = [&]() {
    for (size_t i = 0; i < b.size(); ++i) rdims.push_back({b[i], static_cast<int64_t>(i), -1});
  };
  if (!adjacent) push_b();
  for (int64_t d = 0; d < static_cast<int64_t>(v.sizes.size()); ++d) {
    if (indexed[d]) {
      if (adjacent && d == lo) push_b();
      continue;
    }
    rdims.push_back({v.sizes[d], -1, d});
  }
  for (const RDim& d : rdims) r.shape.push_back(d.size);
  // Bounds: checked only when the result has elements (nothing is read otherwise), as PyTorch;
  // but an index into a dim of size 0 is an error whenever the index shape is non-empty.
  int64_t rnumel = 1;
  for (int64_t s : r.shape) rnumel *= s;
  for (const Column& c : cols) {
    const int64_t size = v.sizes[c.dim];
    if (size == 0 && bnumel > 0) {
      r.error = "index into an empty dim";
      return r;
    }
    for (int64_t x : *c.values) {
      if (rnumel > 0 && (x < -size || x >= size)) {
        r.error = "index out of bounds";
        return r;
      }
    }
  }
  std::vector<int64_t> bc(b.size());
  for_each_coord(r.shape, [&](const std::vector<int64_t>& c) {
    int64_t off = v.offset;
    for (size_t i = 0; i < rdims.size(); ++i) {
      if (rdims[i].bdim >= 0) {
        bc[rdims[i].bdim] = c[i];
      } else {
        off += c[i] * v.strides[rdims[i].vdim];
      }
    }
    for (const Column& col : cols) {
      int64_t x = (*col.values)[broadcast_position(*col.shape, b, bc)];
      if (x < 0) x += v.sizes[col.dim];
      off += x * v.strides[col.dim];
    }
    r.offsets.push_back(off);
  });
  r.ok = true;
  return r;
}

RefView view_of(const Tensor& t) {
  return RefView{to_vector(t.sizes()), to_vector(t.strides()), t.storage_offset()};
}

std::vector<int64_t> offsets_of(const RefView& v) {
  std::vector<int64_t> out;
  for_each_coord(v.sizes, [&](const std::vector<int64_t>& c) {
    int64_t off = v.offset;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * v.strides[d];
    out.push_back(off);
  });
  return out;
}

}  // namespace

RefIndex reference_index(const Tensor& self, ArrayRef<TensorIndex> indices) {
  RefIndex r;
  const int64_t ndim = self.dim();
  int64_t specified = 0;
  for (const TensorIndex& e : indices) {
    if (e.is_integer() || e.is_slice()) ++specified;
    if (e.is_tensor()) {
      const Tensor& t = e.tensor();
      specified += is_mask_dtype(t.dtype()) ? t.dim() : 1;
    }
  }
  if (specified > ndim) {
    r.error = "too many indices";
    return r;
  }
  RefView v = view_of(self);
  std::vector<std::pair<int64_t, Tensor>> recorded;  // (result dim, tensor)
  int64_t dim = 0;
  auto rank = [&]() { return static_cast<int64_t>(v.sizes.size()); };
  auto select = [&](int64_t i) {
    if (dim >= rank()) return false;
    const int64_t size = v.sizes[dim];
    if (i < -size || i >= size) return false;
    if (i < 0) i += size;
    v.offset += i * v.strides[dim];
    v.sizes.erase(v.sizes.begin() + dim);
    v.strides.erase(v.strides.begin() + dim);
    return true;
  };
  auto add_bool = [&](bool value) {
    if (dim > rank()) return false;
    v.sizes.insert(v.sizes.begin() + dim, 1);
    v.strides.insert(v.strides.begin() + dim, 0);
    recorded.emplace_back(dim, zeros({value ? 1 : 0}, kInt64));
    ++dim;
    return true;
  };
  for (const TensorIndex& e : indices) {
    bool ok = true;
    switch (e.type()) {
      case TensorIndexType::Integer:
        ok = select(e.integer());
        break;
      case TensorIndexType::Slice: {
        const indexing::Slice& s = e.slice();
        if (s.step() <= 0 || dim >= rank()) {
          ok = false;
          break;
        }
        const int64_t size = v.sizes[dim];
        auto clamp = [&](std::optional<int64_t> x, int64_t dflt) {
          if (!x) return dflt;
          int64_t y = *x;
          if (y < 0) y = y < -size ? 0 : y + size;
          return std::min(y, size);
        };
        const int64_t start = clamp(s.start(), 0), stop = clamp(s.stop(), size);
        const int64_t len = stop > start ? (stop - start - 1) / s.step() + 1 : 0;
        v.offset += len > 0 ? start * v.strides[dim] : 0;
        if (len > 1) v.strides[dim] *= s.step();
        v.sizes[dim] = len;
        ++dim;
        break;
      }
      case TensorIndexType::Ellipsis:
        dim += ndim - specified;
        break;
      case TensorIndexType::None:
        if (dim > rank()) {
          ok = false;
          break;
        }
        v.sizes.insert(v.sizes.begin() + dim, 1);
        v.strides.insert(v.strides.begin() + dim, 0);
        ++dim;
        break;
      case TensorIndexType::Boolean:
        ok = add_bool(e.boolean());
        break;
      case TensorIndexType::Tensor: {
        const Tensor& t = e.tensor();
        if (t.dim() == 0 && (is_integral(t.dtype(), true))) {
          const int64_t x = element_as_int(t, t.storage_offset());
          ok = is_mask_dtype(t.dtype()) ? add_bool(x != 0) : select(x);
        } else {
          recorded.emplace_back(dim, t);
          dim += is_mask_dtype(t.dtype()) ? t.dim() : 1;
        }
        break;
      }
    }
    if (!ok) {
      r.error = "basic entry invalid";
      return r;
    }
  }
  if (recorded.empty()) {
    r.ok = true;
    r.is_view = true;
    r.shape = v.sizes;
    r.offsets = offsets_of(v);
    return r;
  }
  std::vector<Advanced> adv;
  for (const auto& [d, t] : recorded) {
    Advanced a;
    if (!to_advanced(t, d, v, &a, &r.error)) return r;
    adv.push_back(std::move(a));
  }
  return gather(v, std::move(adv));
}

RefIndex reference_index_put(const Tensor& self, const std::vector<Tensor>& indices) {
  RefIndex r;
  const RefView v = view_of(self);
  std::vector<Advanced> adv;
  int64_t dim = 0;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      ++dim;
      continue;
    }
    if (t.dim() == 0 && is_mask_dtype(t.dtype())) {
      r.error = "0-dim mask in index_put_";
      return r;
    }
    Advanced a;
    if (!to_advanced(t, dim, v, &a, &r.error)) return r;
    dim += static_cast<int64_t>(a.values.size());
    adv.push_back(std::move(a));
  }
  if (dim > static_cast<int64_t>(v.sizes.size())) {
    r.error = "too many indices";
    return r;
  }
  if (adv.empty()) {
    // No index tensor: the whole of self (mutagrad's choice; PyTorch 1.13 fails with an
    // internal assert or "strides() called on an undefined Tensor").
    r.ok = true;
    r.shape = v.sizes;
    r.offsets = offsets_of(v);
    return r;
  }
  return gather(v, std::move(adv));
}

bool reference_broadcast(const std::vector<int64_t>& value_shape,
                         const std::vector<int64_t>& target, bool strip_leading_ones,
                         std::vector<int64_t>* value_index) {
  std::vector<int64_t> shape = value_shape;
  if (strip_leading_ones) {
    size_t i = 0;
    while (i < shape.size() && shape[i] == 1) ++i;
    shape.erase(shape.begin(), shape.begin() + i);
  }
  if (shape.size() > target.size()) return false;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 1 && shape[i] != target[lead + i]) return false;
  }
  value_index->clear();
  for_each_coord(target, [&](const std::vector<int64_t>& c) {
    value_index->push_back(broadcast_position(shape, target, c));
  });
  return true;
}

}  // namespace mutagrad::fuzz
