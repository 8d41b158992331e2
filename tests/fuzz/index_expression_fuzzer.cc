// The index_expression fuzz target (see targets.h and docs/reliability.md).
//
// Note [What the index fuzzer checks]
// For every input: no crash, no sanitizer report, no InternalError; every error is a
// mutagrad::Error, after which self's storage is bit-for-bit unchanged and its version has not
// moved (the strong guarantee). On success:
//  - get_item: succeeds exactly when reference_index() does, with its shape, each element read
//    from the storage offset the reference names (bit-for-bit), a view exactly when the
//    reference says so; self untouched.
//  - set_item_ / index_put_: the reference must accept the expression and the value (shape,
//    dtype); every storage byte the reference does not address is unchanged; each addressed
//    element holds the value written last (in index order), or with accumulate its old value
//    plus all values addressed to it (exact for integers, within summation error for floats);
//    the version moved by exactly one.
//  - the rest of the write family: only the error invariants (no reference yet).
// Where self's elements overlap in memory (an expanded view) a write may be refused; when it is
// not, any of the values addressed to an element is accepted there.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>

#include "indexing/indexing.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/index_reference.h"
#include "tests/fuzz/targets.h"

namespace mutagrad::fuzz {
namespace {

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
using indexing::TensorIndex;

std::optional<int64_t> maybe_bound(FuzzInput& in) {
  if (in.chance(64)) return std::nullopt;
  return in.interesting_int();
}

std::vector<TensorIndex> make_indices(FuzzInput& in, const Tensor& self) {
  std::vector<TensorIndex> out;
  const int64_t n = in.range(0, 6);
  for (int64_t i = 0; i < n; ++i) {
    switch (in.range(0, 9)) {
      case 0:
      case 1:
        out.emplace_back(in.interesting_int());
        break;
      case 2:
      case 3: {
        const std::optional<int64_t> start = maybe_bound(in), stop = maybe_bound(in);
        std::optional<int64_t> step;
        if (!in.chance(96)) step = in.chance(200) ? in.range(-1, 3) : in.interesting_int();
        out.emplace_back(Slice(start, stop, step));
        break;
      }
      case 4:
        out.emplace_back(None);
        break;
      case 5:
        out.emplace_back(Ellipsis);
        break;
      case 6:
        out.emplace_back(in.flag());
        break;
      default:
        out.emplace_back(make_index_tensor(in, self.sizes()));
        break;
    }
  }
  return out;
}

// A value for a write into a result of shape `target`: usually broadcastable, sometimes not;
// any dtype; sometimes a view of self itself (read as if copied first).
Tensor make_value(FuzzInput& in, const Tensor& self, const std::vector<int64_t>& target,
                  ScalarType dtype) {
  if (in.chance(16) && self.numel() > 0) {
    Tensor v = self;
    if (v.dim() > 0 && in.flag()) v = native::select(v, 0, in.range(0, v.size(0) - 1));
    return v;
  }
  std::vector<int64_t> shape = target;
  switch (in.range(0, 5)) {
    case 0:  // drop leading dims
      shape.erase(shape.begin(), shape.begin() + in.range(0, shape.size()));
      break;
    case 1:  // some dims to 1
      for (int64_t& s : shape) {
        if (in.flag()) s = 1;
      }
      break;
    case 2:  // leading 1s
      shape.insert(shape.begin(), in.range(1, 2), 1);
      break;
    case 3: {  // anything
      Tensor v = make_tensor(in, dtype, 3, true);
      return v;
    }
    default:
      break;
  }
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel > 4096) shape = {};
  Tensor v = zeros(shape, dtype);
  const int64_t nv = v.numel();
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(v.raw_data());
    for (int64_t i = 0; i < nv; ++i) p[i] = convert_value<T>(static_cast<double>(i % 11) - 5);
  });
  if (in.chance(32) && v.dim() >= 2) v = native::transpose(v, 0, v.dim() - 1).contiguous();
  return v;
}

bool self_overlaps(const Tensor& self) {
  std::vector<int64_t> all;
  for_each_coord(to_vector(self.sizes()),
                 [&](const std::vector<int64_t>& c) { all.push_back(storage_offset_of(self, c)); });
  std::sort(all.begin(), all.end());
  return std::adjacent_find(all.begin(), all.end()) != all.end();
}

// The dtype's rounding unit (relative), for the accumulate tolerance.
double epsilon_of(ScalarType t) {
  switch (t) {
    case kFloat16:
      return 1.0 / 1024;
    case kBFloat16:
      return 1.0 / 128;
    case kFloat32:
      return 1.0 / (1 << 23);
    default:
      return 1.0 / (int64_t{1} << 52);
  }
}
double max_of(ScalarType t) {
  switch (t) {
    case kFloat16:
      return 65504.0;
    case kBFloat16:
    case kFloat32:
      return 3.0e38;
    default:
      return 1.0e307;
  }
}

// After a successful write through `ref`: unaddressed bytes unchanged, addressed elements as
// expected. `values` holds, per result element, the value (already converted to self's dtype:
// a tensor of self's dtype, row-major, with `value_index` mapping result -> value element).
void check_write(const Tensor& self, const std::vector<uint8_t>& before, const RefIndex& ref,
                 const Tensor& values, const std::vector<int64_t>& value_index, bool accumulate,
                 const char* op) {
  const int64_t es = self.element_size();
  const std::vector<uint8_t> after = storage_bytes(self);
  FUZZ_CHECK(after.size() == before.size(), op, ": storage size changed");
  std::map<int64_t, std::vector<int64_t>> writes;  // offset -> value elements, in index order
  for (size_t i = 0; i < ref.offsets.size(); ++i) writes[ref.offsets[i]].push_back(value_index[i]);
  // Unaddressed bytes.
  std::vector<bool> addressed(after.size(), false);
  for (const auto& [off, unused] : writes) {
    for (int64_t b = 0; b < es; ++b) addressed[off * es + b] = true;
  }
  for (size_t b = 0; b < after.size(); ++b) {
    FUZZ_CHECK(addressed[b] || after[b] == before[b], op, ": wrote byte ", b,
               " of the storage, which the index does not address");
  }
  const bool overlap = self_overlaps(self);
  const Tensor before_t =
      from_blob(const_cast<uint8_t*>(before.data()), {static_cast<int64_t>(before.size() / es)},
                {1}, self.dtype(), nullptr);
  const auto value_bytes = [&](int64_t vi) { return element_at(values, vi); };
  for (const auto& [off, vis] : writes) {
    const uint8_t* got = element_at(self, off);
    if (!accumulate) {
      bool match = std::memcmp(got, value_bytes(vis.back()), es) == 0;
      for (size_t k = 0; overlap && !match && k < vis.size(); ++k) {
        match = std::memcmp(got, value_bytes(vis[k]), es) == 0;
      }
      FUZZ_CHECK(match, op, ": element at storage offset ", off, " is ",
                 element_as_double(self, off), ", expected ",
                 element_as_double(values, vis.back()));
      continue;
    }
    if (overlap && vis.size() > 1) continue;
    if (self.dtype() == kBool) {
      bool any = element_as_int(before_t, off) != 0;
      for (int64_t vi : vis) any = any || element_as_int(values, vi) != 0;
      FUZZ_CHECK((element_as_int(self, off) != 0) == any, op, ": bool accumulate at ", off);
    } else if (!is_floating_point(self.dtype())) {
      uint64_t sum = static_cast<uint64_t>(element_as_int(before_t, off));
      for (int64_t vi : vis) sum += static_cast<uint64_t>(element_as_int(values, vi));
      const int bits = static_cast<int>(self.element_size()) * 8;
      const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      FUZZ_CHECK((static_cast<uint64_t>(element_as_int(self, off)) & mask) == (sum & mask), op,
                 ": integer accumulate at ", off, " gave ", element_as_int(self, off));
    } else {
      double sum = element_as_double(before_t, off), mag = std::fabs(sum);
      for (int64_t vi : vis) {
        sum += element_as_double(values, vi);
        mag += std::fabs(element_as_double(values, vi));
      }
      const double got_v = element_as_double(self, off);
      if (!std::isfinite(mag) || mag > max_of(self.dtype()) / 2) continue;
      const double tol = (static_cast<double>(vis.size()) + 2) * epsilon_of(self.dtype()) * mag +
                         std::numeric_limits<double>::denorm_min();
      FUZZ_CHECK(std::fabs(got_v - sum) <= tol, op, ": float accumulate at ", off, " gave ", got_v,
                 ", expected ", sum, " +- ", tol);
    }
  }
}

// Outcome counts per op, printed at exit when MUTAGRAD_FUZZ_STATS is set.
struct Stats {
  long ok[13] = {}, refused[13] = {};
  ~Stats() {
    if (std::getenv("MUTAGRAD_FUZZ_STATS") == nullptr) return;
    for (int op = 0; op < 13; ++op) {
      std::fprintf(stderr, "index_expression op %d: %ld succeeded, %ld raised\n", op, ok[op],
                   refused[op]);
    }
  }
};
Stats stats;
int current_op = 0;  // the op of this input, for Stats

void check_get(const Tensor& self, const std::vector<TensorIndex>& indices,
               const std::vector<uint8_t>& before, uint32_t version, const RefIndex& ref) {
  Tensor out;
  try {
    out = indexing::get_item(self, indices);
  } catch (const InternalError& e) {
    fail(str("get_item ", indexing::to_string(indices), ": InternalError: ", e.what()));
  } catch (const Error& e) {
    ++stats.refused[0];
    FUZZ_CHECK(!ref.ok, "get_item ", indexing::to_string(indices), " on ", self.sizes(),
               " raised but the reference accepts it (shape ", IntArrayRef(ref.shape),
               "): ", e.what());
    return;
  }
  ++stats.ok[0];
  FUZZ_CHECK(ref.ok, "get_item ", indexing::to_string(indices), " on ", self.sizes(),
             " succeeded but the reference says: ", ref.error);
  FUZZ_CHECK(to_vector(out.sizes()) == ref.shape, "get_item ", indexing::to_string(indices),
             ": shape ", out.sizes(), ", reference ", IntArrayRef(ref.shape));
  FUZZ_CHECK(out.dtype() == self.dtype(), "get_item changed the dtype");
  FUZZ_CHECK(out.is_alias_of(self) == ref.is_view || out.numel() == 0, "get_item ",
             indexing::to_string(indices), ": view ", out.is_alias_of(self), ", reference ",
             ref.is_view);
  size_t i = 0;
  const int64_t es = self.element_size();
  for_each_coord(ref.shape, [&](const std::vector<int64_t>& c) {
    const int64_t src = ref.offsets[i++];
    const uint8_t* want = element_at(self, src);
    const uint8_t* got = element_at(out, storage_offset_of(out, c));
    if (ref.is_view)
      FUZZ_CHECK(got == want, "get_item view element ", i - 1, " at another address");
    FUZZ_CHECK(std::memcmp(got, want, es) == 0, "get_item ", indexing::to_string(indices),
               ": element ", i - 1, " is ", element_as_double(out, storage_offset_of(out, c)),
               ", reference ", element_as_double(self, src));
  });
  FUZZ_CHECK(storage_bytes(self) == before, "get_item wrote into self");
  FUZZ_CHECK(self.version() == version, "get_item bumped the version");
}

// Runs a write; on error checks the strong guarantee and returns false.
template <typename Fn>
bool run_write(const Tensor& self, const std::vector<uint8_t>& before, uint32_t version,
               const char* op, Fn&& fn, uint32_t bumps = 1) {
  try {
    fn();
  } catch (const InternalError& e) {
    fail(str(op, ": InternalError: ", e.what()));
  } catch (const Error& e) {
    FUZZ_CHECK(storage_bytes(self) == before, op, " raised (", e.what(),
               ") after writing into self");
    FUZZ_CHECK(self.version() == version, op, " raised (", e.what(), ") after bumping the version");
    ++stats.refused[current_op];
    return false;
  }
  ++stats.ok[current_op];
  FUZZ_CHECK(self.version() == version + bumps, op, " moved the version by ",
             self.version() - version, ", expected ", bumps);
  return true;
}

}  // namespace

void index_expression(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const ScalarType dtype = in.pick(kAllScalarTypes);
  const Tensor self = make_tensor(in, dtype, 5, true);
  const std::vector<TensorIndex> indices = make_indices(in, self);
  const std::vector<uint8_t> before = storage_bytes(self);
  const uint32_t version = self.version();
  const int64_t op = in.range(0, 12);
  current_op = static_cast<int>(op);
  const RefIndex ref = reference_index(self, indices);
  const std::string where = indexing::to_string(indices);
  // x[False] = v writes nothing, checks nothing and does not bump, as PyTorch (get_set.cc).
  const bool bare_false = indices.size() == 1 && indices[0].is_boolean() && !indices[0].boolean();

  if (op == 0) {
    check_get(self, indices, before, version, ref);
    return;
  }
  if (op == 1) {  // x[indices] = scalar
    const Scalar value = in.interesting_scalar();
    if (!run_write(
            self, before, version, "set_item_(scalar)",
            [&] { indexing::set_item_(self, indices, value, CallSite::current()); },
            bare_false ? 0 : 1) ||
        bare_false) {
      return;
    }
    FUZZ_CHECK(ref.ok, "set_item_ ", where, " = ", value, " succeeded; the reference says ",
               ref.error);
    FUZZ_CHECK(value.fits(dtype), "set_item_ stored ", value, ", which does not fit ",
               dtype_name(dtype));
    const Tensor v = full({1}, value, dtype);
    check_write(self, before, ref, v, std::vector<int64_t>(ref.offsets.size(), 0), false,
                "set_item_(scalar)");
    return;
  }
  if (op == 2 || op == 3 || op == 4) {  // x[indices] = tensor; index_put_ (accumulate)
    const bool put = op != 2, accumulate = op == 4;
    std::vector<Tensor> put_indices;
    for (const TensorIndex& e : indices) {
      put_indices.push_back(e.is_tensor() ? e.tensor() : Tensor());
    }
    const RefIndex r = put ? reference_index_put(self, put_indices) : ref;
    const ScalarType vdtype = in.chance(put ? 200 : 128) ? dtype : in.pick(kAllScalarTypes);
    const Tensor value = make_value(in, self, r.ok ? r.shape : std::vector<int64_t>{}, vdtype);
    // What the value reads as, before the write (it may alias self), in self's dtype.
    const Tensor converted = native::to(native::clone(value), dtype).contiguous();
    const char* name = put ? (accumulate ? "index_put_(accumulate)" : "index_put_") : "set_item_";
    const bool nothing = !put && bare_false;
    if (!run_write(
            self, before, version, name,
            [&] {
              if (put) {
                indexing::index_put_(self, put_indices, value, accumulate, CallSite::current());
              } else {
                indexing::set_item_(self, indices, value, CallSite::current());
              }
            },
            nothing ? 0 : 1) ||
        nothing) {
      return;
    }
    FUZZ_CHECK(r.ok, name, " ", where, " succeeded; the reference says ", r.error);
    // A one-element value written through one bool (or uint8) mask is a masked fill, which
    // converts the value (as PyTorch, whose index_put_ also takes that path); otherwise dtypes
    // must match.
    int defined = 0, masks = 0;
    for (const Tensor& t : put_indices) {
      defined += t.defined();
      masks += t.defined() && (t.dtype() == kBool || t.dtype() == kUInt8) && t.dim() > 0;
    }
    const bool masked_fill = !accumulate && value.numel() == 1 && defined == 1 && masks == 1;
    FUZZ_CHECK(!put || masked_fill || value.dtype() == dtype, name, " accepted values of dtype ",
               dtype_name(value.dtype()), " for self of dtype ", dtype_name(dtype));
    // The masked fill takes any one-element value, whatever its shape (as PyTorch).
    std::vector<int64_t> value_index(r.offsets.size(), 0);
    FUZZ_CHECK((put && masked_fill) ||
                   reference_broadcast(to_vector(value.sizes()), r.shape, !put, &value_index),
               name, " ", where, " accepted a value of shape ", value.sizes(),
               " for a result of shape ", IntArrayRef(r.shape));
    check_write(self, before, r, converted, value_index, accumulate, name);
    return;
  }
  // The rest of the write family: error invariants only. Arguments are plausible three times
  // in four (so that the kernels run), arbitrary otherwise.
  const int64_t dim = in.chance(224) ? in.range(-2, 4) : in.interesting_int();
  Tensor index, source;
  if (in.chance(192) && self.dim() > 0) {
    const int64_t d = ((dim % self.dim()) + self.dim()) % self.dim();
    std::vector<int64_t> sizes = to_vector(self.sizes());
    if (op == 8 || op == 9) {  // scatter: an index of self's rank, no larger than self
      for (int64_t& sz : sizes) sz = in.range(0, sz);
    } else if (op == 11 || op == 12) {  // a mask of self's shape (or a suffix of it)
      sizes.erase(sizes.begin(), sizes.begin() + in.range(0, 1));
    } else {
      sizes = {in.range(0, 4)};
    }
    const bool mask = op == 11 || op == 12;
    index = zeros(sizes, mask ? kBool : kInt64);
    const int64_t limit = op == 10 ? self.numel() : self.size(d);
    for (int64_t i = 0; i < index.numel(); ++i) {
      if (mask) {
        index.data_ptr<bool>()[i] = in.flag();
      } else {
        const int64_t lo = op == 8 || op == 9 ? 0 : -limit;
        index.data_ptr<int64_t>()[i] =
            limit > 0 && in.chance(240) ? in.range(lo, limit - 1) : in.interesting_int();
      }
    }
    std::vector<int64_t> src_sizes = to_vector(self.sizes());
    if (op == 5 || op == 6) src_sizes[d] = index.numel();
    if (op == 8 || op == 9) src_sizes = to_vector(index.sizes());
    if (op == 10) src_sizes = to_vector(index.sizes());
    if (op == 12) src_sizes = {self.numel()};
    source = zeros(src_sizes, in.chance(240) ? dtype : in.pick(kAllScalarTypes));
  } else {
    index = make_index_tensor(in, self.sizes());
    source = make_tensor(in, in.chance(192) ? dtype : in.pick(kAllScalarTypes), 4, true);
  }
  const Scalar scalar = in.interesting_scalar();
  run_write(self, before, version, "write family", [&] {
    Tensor s = self;
    switch (op) {
      case 5:
        s.index_add_(dim, index, source, scalar);
        break;
      case 6:
        s.index_copy_(dim, index, source);
        break;
      case 7:
        s.index_fill_(dim, index, scalar);
        break;
      case 8:
        s.scatter_(dim, index, source);
        break;
      case 9:
        s.scatter_add_(dim, index, source);
        break;
      case 10:
        s.put_(index, source, in.flag());
        break;
      case 11:
        s.masked_fill_(index, scalar);
        break;
      default:
        s.masked_scatter_(index, source);
        break;
    }
  });
}

}  // namespace mutagrad::fuzz
