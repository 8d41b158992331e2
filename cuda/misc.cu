// CUDA arange, nonzero and random; the CPU's are in tensor/cpu/misc.cc and random.cc.
//
//   arange_kernel(out, 0, 2);                        // out[i] = 2 i
//   Tensor coords = nonzero_kernel(mask);            // [count, ndim], row-major order
//   random_kernel(out, RandomParams{RandomDist::kNormal, seed, offset});
#include <thrust/copy.h>
#include <thrust/count.h>

#ifdef __CUDACC__
#include <cub/device/device_select.cuh>
#endif

#include <cmath>
#include <type_traits>

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/random_draw.h"
#include "tensor/shape.h"

namespace mutagrad::cuda {
namespace {

// The CPU's formula: floating and bool values computed in double and rounded once, integers in
// int64.
template <typename T>
struct ArangeFunctor {
  char* out;
  int64_t stride;  // bytes
  double start_f, step_f;
  int64_t start_i, step_i;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    T& dst = at<T>(out, i * stride);
    if constexpr (std::is_floating_point_v<T>) {
      dst = static_cast<T>(start_f + step_f * static_cast<double>(i));
    } else if constexpr (std::is_same_v<T, bool>) {
      dst = (start_f + step_f * static_cast<double>(i)) != 0.0;
    } else {
      dst = static_cast<T>(start_i + step_i * i);
    }
  }
};

template <typename T>
struct IsNonzero {
  const char* in;
  OffsetCalc<1> calc;
  MG_HOST_DEVICE bool operator()(int64_t i) const {
    int64_t off[1];
    calc.get(i, off);
    return at<T>(in, off[0]) != T(0);
  }
};

// coords[j, :] = the row-major coordinates of linear index positions[j] in the shape whose
// sizes are `inner_sizes`, innermost first (constant indices: Note [No dynamic indexing in
// kernels] in cuda/kernel_util.h).
struct Coordinates {
  const int64_t* positions;
  int64_t* coords;
  int64_t ndim;
  int64_t inner_sizes[kMaxKernelDims];
  MG_HOST_DEVICE void operator()(int64_t j) const {
    int64_t linear = positions[j];
    MG_UNROLL
    for (int e = 0; e < kMaxKernelDims; ++e) {
      if (e == ndim) break;
      coords[j * ndim + ndim - 1 - e] = linear % inner_sizes[e];
      linear /= inner_sizes[e];
    }
  }
};

// Element i of a draw: the CPU's formula (Note [Random draws] in tensor/random_draw.h).
template <typename T>
struct RandomFunctor {
  T* out;
  RandomParams params;
  MG_HOST_DEVICE void operator()(int64_t i) const { out[i] = random_value<T>(params, i); }
};

}  // namespace

void arange_kernel(const Tensor& out, const Scalar& start, const Scalar& step) {
  const int64_t stride = (out.dim() == 0 ? 0 : out.stride(0)) * out.element_size();
  dispatch_compute_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("arange", out.numel(),
           ArangeFunctor<T>{
               device_data(out), stride, start.to<double>(), step.to<double>(),
               std::is_integral_v<T> && !std::is_same_v<T, bool> ? start.to<int64_t>() : 0,
               std::is_integral_v<T> && !std::is_same_v<T, bool> ? step.to<int64_t>() : 0});
  });
}

#ifdef __CUDACC__
// The positions i in [0, n) with pred(i), in increasing order, into pos; n < 2^31.
template <typename Pred>
void select_nonzero(int64_t* pos, const Pred& pred, int64_t n, Device device) {
  const auto stream = static_cast<cudaStream_t>(runtime().stream());
  const thrust::counting_iterator<int64_t> first(0);
  Tensor count = device_buffer(1, kInt64, device);
  auto* selected = reinterpret_cast<int64_t*>(device_data(count));
  size_t temp_bytes = 0;
  cudaError_t err = cub::DeviceSelect::If(nullptr, temp_bytes, first, pos, selected,
                                          static_cast<int>(n), pred, stream);
  Tensor temp = device_buffer(static_cast<int64_t>(temp_bytes) + 1, kUInt8, device);
  if (err == cudaSuccess) {
    err = cub::DeviceSelect::If(device_data(temp), temp_bytes, first, pos, selected,
                                static_cast<int>(n), pred, stream);
  }
  if (err != cudaSuccess) {
    throw DeviceError(str("nonzero: the CUDA select failed: ", cudaGetErrorString(err)));
  }
}
#endif

// Note [nonzero on the device]
// Two passes over the input, both Thrust algorithms: count_if gives the result's size (the one
// device-to-host synchronization, as in torch, since the shape depends on the data), then
// a stable select (CUB's DeviceSelect on a GPU, which leaves its count on the device; Thrust's
// copy_if in the host-run build) writes the linear positions of the nonzero elements in increasing
// order (copy_if is stable) and a third kernel turns each into its coordinates. The order is
// row-major, as the CPU's.
Tensor nonzero_kernel(const Tensor& in) {
  const int64_t nd = in.dim();
  if (nd > kMaxKernelDims) {
    throw DeviceError(str("nonzero(): CUDA kernels take at most ", kMaxKernelDims,
                          " dims; this tensor has ", nd, ". Reshape it first"));
  }
  const OffsetCalc<1> calc = make_offset_calc<1>({&in});
  const int64_t n = in.numel();
  return dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const IsNonzero<T> pred{device_data(in), calc};
    int64_t count = 0;
    try {
      if (n > 0) {
        count = static_cast<int64_t>(thrust::count_if(exec_policy(),
                                                      thrust::counting_iterator<int64_t>(0),
                                                      thrust::counting_iterator<int64_t>(n), pred));
      }
    } catch (const thrust::system_error& e) {
      throw DeviceError(str("nonzero: the CUDA kernel failed: ", e.what()));
    }
    Tensor out = empty({count, nd}, TensorOptions(kInt64).device(in.device()));
    if (count == 0) return out;
    Tensor positions = device_buffer(count, kInt64, in.device());
    int64_t* pos = reinterpret_cast<int64_t*>(device_data(positions));
#ifdef __CUDACC__
    // CUB's select writes its count to device memory: no second synchronization (Thrust's
    // copy_if reads the count back to return its end iterator).
    if (n < (int64_t{1} << 31)) {
      select_nonzero(pos, pred, n, in.device());
    } else
#endif
    {
      try {
        thrust::copy_if(exec_policy(), thrust::counting_iterator<int64_t>(0),
                        thrust::counting_iterator<int64_t>(n), pos, pred);
      } catch (const thrust::system_error& e) {
        throw DeviceError(str("nonzero: the CUDA kernel failed: ", e.what()));
      }
    }
    Coordinates coords{pos, reinterpret_cast<int64_t*>(device_data(out)), nd, {}};
    for (int64_t d = 0; d < nd; ++d) coords.inner_sizes[d] = in.size(nd - 1 - d);
    launch("nonzero", count, coords);
    return out;
  });
}

void random_kernel(const Tensor& out, const RandomParams& params) {
  dispatch_compute_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("random", out.numel(), RandomFunctor<T>{reinterpret_cast<T*>(device_data(out)), params});
  });
}

}  // namespace mutagrad::cuda
