// CUDA fill, masked_fill and copy (strided, dtype-converting) kernels; the CPU's are in
// tensor/cpu/copy.cc and tensor/cpu/indexing.cc (masked_fill).
// A copy between two contiguous tensors of one dtype is a device-to-device memcpy.
#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/element_math.h"
#include "tensor/native/views.h"

namespace mutagrad::cuda {
namespace {

template <typename T>
struct FillFunctor {
  char* out;
  OffsetCalc<1> calc;
  T value;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[1];
    calc.get(i, off);
    *reinterpret_cast<T*>(out + off[0]) = value;
  }
};

// dst[i] = value where mask[i] (mask expanded to dst's shape).
template <typename T>
struct MaskedFillFunctor {
  char* out;
  const char* mask;
  OffsetCalc<2> calc;
  T value;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[2];
    calc.get(i, off);
    if (*reinterpret_cast<const bool*>(mask + off[1])) *reinterpret_cast<T*>(out + off[0]) = value;
  }
};

template <typename To, typename From>
struct CopyFunctor {
  char* out;
  const char* in;
  OffsetCalc<2> calc;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[2];
    calc.get(i, off);
    *reinterpret_cast<To*>(out + off[0]) =
        convert_value<To>(*reinterpret_cast<const From*>(in + off[1]));
  }
};

}  // namespace

void fill_kernel(const Tensor& dst, const Scalar& value) {
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("fill_", dst.numel(),
           FillFunctor<T>{device_data(dst), make_offset_calc<1>({&dst}), value.to<T>()});
  });
}

void masked_fill_kernel(const Tensor& dst, const Tensor& mask, const Scalar& value) {
  const Tensor expanded =
      mask.sizes().equals(dst.sizes()) ? mask : native::expand(mask, dst.sizes());
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("masked_fill_", dst.numel(),
           MaskedFillFunctor<T>{device_data(dst), device_data(expanded),
                                make_offset_calc<2>({&dst, &expanded}), value.to<T>()});
  });
}

void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    runtime().memcpy(device_data(dst), device_data(src),
                     static_cast<size_t>(dst.numel() * dst.element_size()),
                     CopyKind::kDeviceToDevice);
    return;
  }
  const OffsetCalc<2> calc = make_offset_calc<2>({&dst, &src});
  dispatch_dtype(dst.dtype(), [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    dispatch_dtype(src.dtype(), [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      launch("copy_", dst.numel(), CopyFunctor<To, From>{device_data(dst), device_data(src), calc});
    });
  });
}

}  // namespace mutagrad::cuda
