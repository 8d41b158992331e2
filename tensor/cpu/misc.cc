// CPU arange and nonzero.
#include <cmath>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

void CpuBackend::arange(const Tensor& out, const Scalar& start, const Scalar& step) {
  const int64_t n = out.numel();
  const int64_t stride = out.dim() == 0 ? 0 : out.stride(0);
  dispatch_compute_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.raw_data());
    if constexpr (std::is_floating_point_v<T>) {
      // As PyTorch: computed in double, rounded once.
      const double s = start.to<double>(), d = step.to<double>();
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = static_cast<T>(s + d * static_cast<double>(i));
    } else if constexpr (std::is_same_v<T, bool>) {
      const double s = start.to<double>(), d = step.to<double>();
      for (int64_t i = 0; i < n; ++i) p[i * stride] = (s + d * static_cast<double>(i)) != 0.0;
    } else {
      const int64_t s = start.to<int64_t>(), d = step.to<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i * stride] = static_cast<T>(s + d * i);
    }
  });
}

Tensor CpuBackend::nonzero(const Tensor& in) {
  const int64_t nd = in.dim();
  // Pass 1 counts, pass 2 writes coordinates in row-major order.
  auto for_each_element = [&](auto&& visit) {
    dispatch_compute_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t numel = in.numel();
      if (numel == 0) return;
      DimVector idx(static_cast<size_t>(nd), 0);
      const char* base = static_cast<const char*>(in.raw_data());
      IntArrayRef sizes = in.sizes(), strides = in.strides();
      int64_t offset = 0;
      for (int64_t i = 0; i < numel; ++i) {
        T v = *reinterpret_cast<const T*>(base + offset * static_cast<int64_t>(sizeof(T)));
        if (v != T(0)) visit(idx);
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (++idx[d] < sizes[d]) {
            offset += strides[d];
            break;
          }
          offset -= (sizes[d] - 1) * strides[d];
          idx[d] = 0;
        }
      }
    });
  };
  int64_t count = 0;
  for_each_element([&](const DimVector&) { ++count; });
  DimVector out_sizes{count, nd};
  Storage storage = Storage::allocate(kCPU, static_cast<size_t>(count * nd) * sizeof(int64_t));
  Tensor out(make_pooled<TensorImpl>(storage, out_sizes, contiguous_strides(out_sizes), 0, kInt64,
                                     VersionCounter()));
  int64_t* o = static_cast<int64_t*>(storage.data());
  for_each_element([&](const DimVector& idx) {
    for (int64_t d = 0; d < nd; ++d) *o++ = idx[d];
  });
  return out;
}

}  // namespace mutagrad::cpu
