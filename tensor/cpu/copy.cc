// CPU fill and copy (with dtype conversion). memcpy for same-dtype contiguous runs.
#include <cstring>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

// See Note [Defined value conversions] in tensor/scalar.h.
template <typename To, typename From>
inline To convert(From v) {
  return convert_value<To>(v);
}

template <typename To, typename From>
void copy_loop(const StridedLoop<2>& it) {
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
    it.run(begin, end, [](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
        if constexpr (std::is_same_v<To, From>) {
          std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(To));
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
  dispatch_dtype(dst.dtype(), [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    dispatch_dtype(src.dtype(), [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      copy_loop<To, From>(it);
    });
  });
}

}  // namespace mutagrad::cpu
