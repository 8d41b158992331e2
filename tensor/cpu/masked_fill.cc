// The CPU kernel of masked_fill_ (dst[mask] = value; declared in tensor/cpu/indexing.h):
//
//   cpu::masked_fill_kernel(dst, mask, 0.0);  // mask: bool, already expanded to dst's shape
//
// Each element depends on its own mask byte only, so any split between threads gives the same
// bits. Contiguous runs take a branch-free blend that vectorizes; other runs test each byte.
#include <cstdint>
#include <cstring>

#include "tensor/cpu/indexing.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/dtype.h"

namespace mutagrad::cpu {
namespace {

// Unsigned integers of an element's width that may alias it (the blend works on its bits).
template <size_t kBytes>
struct BitsOf;
template <>
struct BitsOf<1> {
  typedef uint8_t __attribute__((may_alias)) type;
};
template <>
struct BitsOf<2> {
  typedef uint16_t __attribute__((may_alias)) type;
};
template <>
struct BitsOf<4> {
  typedef uint32_t __attribute__((may_alias)) type;
};
template <>
struct BitsOf<8> {
  typedef uint64_t __attribute__((may_alias)) type;
};

// d[i] = m[i] ? value : d[i] as a bit blend (m[i] is 0 or 1), which vectorizes.
template <typename Bits>
void masked_fill_bits(Bits* d, const unsigned char* m, Bits value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const Bits keep = static_cast<Bits>(static_cast<Bits>(m[i]) - 1);  // all ones where m == 0
    d[i] = static_cast<Bits>((d[i] & keep) | (value & static_cast<Bits>(~keep)));
  }
}

template <typename T>
void masked_fill_typed(const Tensor& dst, const Tensor& mask, T value) {
  using Bits = typename BitsOf<sizeof(T)>::type;
  Bits bits;
  std::memcpy(&bits, &value, sizeof(T));
  StridedLoop<2> it({&dst, &mask});
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
    it.run(begin, end, [bits](char** p, const int64_t* s, int64_t n) {
      const unsigned char* m = reinterpret_cast<const unsigned char*>(p[1]);
      if (s[0] == sizeof(T) && s[1] == 1) {
        masked_fill_bits(reinterpret_cast<Bits*>(p[0]), m, bits, n);
        return;
      }
      for (int64_t k = 0; k < n; ++k) {
        if (m[k * s[1]] != 0) *reinterpret_cast<Bits*>(p[0] + k * s[0]) = bits;
      }
    });
  });
}

}  // namespace

void masked_fill_kernel(const Tensor& dst, const Tensor& mask, const Scalar& value) {
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    masked_fill_typed<T>(dst, mask, value.to<T>());
  });
}

}  // namespace mutagrad::cpu
