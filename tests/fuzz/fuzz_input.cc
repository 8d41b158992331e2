#include "tests/fuzz/fuzz_input.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/native/factories.h"
#include "tensor/native/views.h"

namespace mutagrad::fuzz {

int64_t FuzzInput::interesting_int() {
  static constexpr int64_t kExtreme[] = {
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min() + 1,
      std::numeric_limits<int64_t>::max() - 1,
      std::numeric_limits<int32_t>::min(),
      std::numeric_limits<int32_t>::max(),
      int64_t{1} << 31,
      -(int64_t{1} << 31) - 1,
      int64_t{1} << 32,
      int64_t{1} << 62,
      -(int64_t{1} << 62),
      127,
      128,
      -129,
      255,
      256,
      32768,
      65536,
  };
  if (chance(224)) return range(-6, 6);
  return pick(kExtreme);
}

double FuzzInput::interesting_double() {
  static constexpr double kExtreme[] = {
      std::numeric_limits<double>::quiet_NaN(),
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(),
      1e300,
      -1e300,
      3.5e38,
      65504.0,
      70000.0,
      1e-310,
      -0.0,
      9.3e18,
      -9.3e18,
      2147483648.0,
  };
  if (chance(224)) return static_cast<double>(range(-12, 12)) * 0.5;
  return pick(kExtreme);
}

Scalar FuzzInput::interesting_scalar() {
  switch (range(0, 2)) {
    case 0:
      return Scalar(flag());
    case 1:
      return Scalar(interesting_int());
    default:
      return Scalar(interesting_double());
  }
}

void fail(const std::string& message) {
  std::fprintf(stderr, "FUZZ INVARIANT FAILED: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {

std::vector<int64_t> random_sizes(FuzzInput& in, int max_dim, int64_t max_numel) {
  const int ndim = static_cast<int>(in.range(0, max_dim));
  std::vector<int64_t> sizes(ndim);
  int64_t numel = 1;
  for (int64_t& s : sizes) {
    s = in.chance(24) ? 0 : in.range(1, 4);
    if (numel * s > max_numel) s = 1;
    numel *= s;
  }
  return sizes;
}

// Element i's value: from the input while it lasts, then a function of i.
void fill_values(FuzzInput& in, const Tensor& t) {
  const int64_t n = t.numel();
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (in.exhausted()) {
        p[i] = convert_value<T>(static_cast<int64_t>(i % 7) - 3);
      } else if (in.chance(8)) {
        p[i] = convert_value<T>(in.interesting_double());
      } else {
        p[i] = convert_value<T>(static_cast<double>(static_cast<int8_t>(in.byte())) * 0.25);
      }
    }
  });
}

Tensor apply_random_view(FuzzInput& in, const Tensor& t) {
  const int64_t nd = t.dim();
  switch (in.range(0, 7)) {
    case 0: {  // permute
      if (nd < 2) return t;
      std::vector<int64_t> perm(nd);
      for (int64_t i = 0; i < nd; ++i) perm[i] = i;
      for (int64_t i = nd - 1; i > 0; --i) std::swap(perm[i], perm[in.range(0, i)]);
      return native::permute(t, perm);
    }
    case 1:  // transpose
      if (nd < 2) return t;
      return native::transpose(t, in.range(0, nd - 1), in.range(0, nd - 1));
    case 2: {  // slice with a step
      if (nd < 1) return t;
      const int64_t d = in.range(0, nd - 1);
      return native::slice(t, d, in.range(-2, 3),
                           in.chance(64) ? std::nullopt : std::optional<int64_t>(in.range(-1, 4)),
                           in.range(1, 3));
    }
    case 3: {  // select
      if (nd < 1) return t;
      const int64_t d = in.range(0, nd - 1);
      if (t.size(d) == 0) return t;
      return native::select(t, d, in.range(0, t.size(d) - 1));
    }
    case 4:  // unsqueeze
      if (nd >= 5) return t;
      return native::unsqueeze(t, in.range(0, nd));
    case 5: {  // expand a size-1 dim (or a new leading one)
      std::vector<int64_t> sizes = to_vector(t.sizes());
      bool any = false;
      for (int64_t& s : sizes) {
        if (s == 1 && in.flag()) {
          s = in.range(0, 3);
          any = true;
        }
      }
      if (!any && nd < 5) sizes.insert(sizes.begin(), in.range(2, 3));
      int64_t numel = 1;
      for (int64_t s : sizes) numel *= s;
      if (numel > 512) return t;
      return native::expand(t, sizes);
    }
    case 6:  // diagonal
      if (nd < 2) return t;
      return native::diagonal(t, in.range(-1, 1), 0, 1);
    default:
      return t;
  }
}

}  // namespace

Tensor make_tensor(FuzzInput& in, ScalarType dtype, int max_dim, bool views) {
  Tensor t = zeros(random_sizes(in, max_dim, 256), dtype);
  fill_values(in, t);
  if (views) {
    const int64_t n = in.range(0, 3);
    for (int64_t i = 0; i < n; ++i) t = apply_random_view(in, t);
  }
  return t;
}

Tensor make_index_tensor(FuzzInput& in, IntArrayRef hint) {
  static constexpr ScalarType kIndexDtypes[] = {kInt64, kInt64, kInt64, kInt32, kBool,
                                                kBool,  kBool,  kUInt8, kInt16, kFloat32};
  const ScalarType dtype = in.pick(kIndexDtypes);
  std::vector<int64_t> sizes;
  if ((dtype == kBool || dtype == kUInt8) && in.chance(160) && !hint.empty()) {
    // A mask over dims [first, first + k) of the hint, sometimes off by one in a size.
    const int64_t first = in.range(0, hint.size() - 1);
    const int64_t k = in.range(0, hint.size() - first);
    sizes.assign(hint.begin() + first, hint.begin() + first + k);
    if (!sizes.empty() && in.chance(16)) sizes[in.range(0, sizes.size() - 1)] += 1;
  } else {
    sizes = random_sizes(in, 3, 64);
  }
  Tensor t = zeros(sizes, dtype);
  const int64_t n = t.numel();
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (dtype == kBool || dtype == kUInt8) {
        p[i] = convert_value<T>(in.exhausted() ? (i % 2) : in.byte() & 1);
      } else if (dtype == kInt32) {
        p[i] = static_cast<T>(static_cast<int32_t>(in.interesting_int()));
      } else {
        p[i] = convert_value<T>(in.interesting_int());
      }
    }
  });
  if (in.chance(32) && t.dim() >= 2) t = native::transpose(t, 0, 1);
  return t;
}

int64_t storage_offset_of(const Tensor& t, const std::vector<int64_t>& coords) {
  int64_t off = t.storage_offset();
  for (size_t d = 0; d < coords.size(); ++d) off += coords[d] * t.strides()[d];
  return off;
}

const uint8_t* element_at(const Tensor& t, int64_t offset) {
  return static_cast<const uint8_t*>(t.storage().data()) + offset * t.element_size();
}

double element_as_double(const Tensor& t, int64_t offset) {
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, element_at(t, offset), sizeof(T));
    return convert_value<double>(v);
  });
}

int64_t element_as_int(const Tensor& t, int64_t offset) {
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, element_at(t, offset), sizeof(T));
    return convert_value<int64_t>(v);
  });
}

std::vector<int64_t> to_vector(IntArrayRef r) { return std::vector<int64_t>(r.begin(), r.end()); }

std::vector<uint8_t> storage_bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.storage().data());
  return std::vector<uint8_t>(p, p + t.storage().nbytes());
}

}  // namespace mutagrad::fuzz
