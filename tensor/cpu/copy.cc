// CPU fill and copy (with dtype conversion). memcpy for same-dtype contiguous runs, or
// non-temporal stores when the destination is larger than the shared cache (Note [Streaming
// copies]).
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

// See Note [Defined value conversions] in tensor/scalar.h.
template <typename To, typename From>
inline To convert(From v) {
  return convert_value<To>(v);
}

// Note [Streaming copies]
// A copy into a destination larger than the shared cache cannot leave its result in cache, and
// an ordinary store first reads the line it writes (the core must own it): a third stream of
// memory traffic beside the source's reads and the destination's writes. So such a copy writes
// its same-dtype runs with non-temporal stores (vec_kernels' stream_copy: the build's widest,
// from the first aligned byte; the ends through memcpy), which skip that read, and each thread
// fences its stores (sfence) before its part returns, so any reader after the op sees them.
// glibc's memcpy does the same for one large block, but a strided copy reaches it one row at a
// time, below its threshold. The bits are those of memcpy. x[:, 1:-1] = y on 4096 x 4096
// float32 (64 MiB, rows of 16 KiB): docs/performance/cpu-kernels.md, sessions 10 and 11.
void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

template <typename To, typename From>
void copy_loop(const StridedLoop<2>& it, bool stream) {
  const VecKernels& vk = vec_kernels();
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
    // [&]: where To != From nothing reads `stream` (a named capture: clang's unused warning).
    it.run(begin, end, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
        if constexpr (std::is_same_v<To, From>) {
          const size_t bytes = static_cast<size_t>(n) * sizeof(To);
          if (stream) {
            vk.stream_copy(p[0], p[1], bytes);
          } else {
            std::memcpy(p[0], p[1], bytes);
          }
        } else {
          To* o = reinterpret_cast<To*>(p[0]);
          const From* i = reinterpret_cast<const From*>(p[1]);
          for (int64_t k = 0; k < n; ++k) o[k] = convert<To>(i[k]);
        }
      } else if (s[0] == sizeof(To) && s[1] == 0) {
        To v = convert<To>(*reinterpret_cast<const From*>(p[1]));
        To* o = reinterpret_cast<To*>(p[0]);
        for (int64_t k = 0; k < n; ++k) o[k] = v;
      } else {
        for (int64_t k = 0; k < n; ++k) {
          *reinterpret_cast<To*>(p[0] + k * s[0]) =
              convert<To>(*reinterpret_cast<const From*>(p[1] + k * s[1]));
        }
      }
    });
    if (stream) stream_fence();
  });
}

}  // namespace

void CpuBackend::fill(const Tensor& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  StridedLoop<1> it({&dst});
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>();
    parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
      it.run(begin, end, [v](char** p, const int64_t* s, int64_t n) {
        if (s[0] == sizeof(T)) {
          T* o = reinterpret_cast<T*>(p[0]);
          for (int64_t k = 0; k < n; ++k) o[k] = v;
        } else {
          for (int64_t k = 0; k < n; ++k) *reinterpret_cast<T*>(p[0] + k * s[0]) = v;
        }
      });
    });
  });
}

void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  StridedLoop<2> it({&dst, &src});
  // Note [Streaming copies]
  const int64_t cache = shared_cache_bytes();
  const bool stream = dst.dtype() == src.dtype() && cache > 0 &&
                      dst.numel() * static_cast<int64_t>(dst.element_size()) > cache;
  dispatch_dtype(dst.dtype(), [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    dispatch_dtype(src.dtype(), [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      copy_loop<To, From>(it, stream);
    });
  });
}

}  // namespace mutagrad::cpu
