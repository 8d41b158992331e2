// What every kernel source (cuda/*.cu) uses: MG_HOST_DEVICE, the strided offset calculator,
// and launch(), which runs a functor over [0, n) with Thrust on the build's device system.
//
//   struct Neg { float* o; const float* a; OffsetCalc<2> calc;
//                MG_HOST_DEVICE void operator()(int64_t i) const { ... } };
//   launch("neg", n, Neg{...});    // thrust::for_each_n over a counting iterator
//
// Note [Two builds of one kernel source]
// A kernel is a Thrust algorithm with a small __host__ __device__ functor (no lambdas, no raw
// __global__ kernels), launched with exec_policy(). nvcc (device build) compiles it for the
// GPU and exec_policy() is thrust::cuda::par_nosync on the runtime's stream. g++ (host-run
// build, -DTHRUST_DEVICE_SYSTEM=..._OMP or _CPP) compiles the same file as C++, MG_HOST_DEVICE
// is empty and exec_policy() is thrust::device, which is then the host's OpenMP (or
// sequential) system: the same functor runs on the same pointers, which are host memory there.
// So the suite, which links the host-run build, runs these exact algorithms.
// Note [Bitwise equal to the CPU backend]
// Every elementwise CUDA kernel computes each element with the CPU backend's scalar formula,
// so the two backends agree bit for bit where the formula is exactly rounded: integer ops,
// comparisons, conversions, + - * / and sqrt (IEEE in both; nvcc builds with --fmad=false so
// no a*b+c becomes an FMA), abs, neg, relu, clamp, max/min. The transcendental functions (exp,
// log, sin, cos, tanh, sigmoid, pow with a non-special exponent) are std:: per element here:
// in the host-run build that is glibc, the same as the CPU backend's scalar path, while the
// CPU backend's contiguous runs use Eigen's SIMD versions (within a few ulps; Note
// [Vectorized transcendental edges] in tensor/cpu/pointwise.cc); on a GPU they are CUDA's
// libdevice functions (within CUDA's documented ulp bounds). The conformance test checks the
// first group bitwise against the CPU and the second bitwise against std:: per element.
// The integer, comparison and conversion formulas are the CPU backend's own functions
// (tensor/element_math.h, convert_value in tensor/scalar.h), compiled for the device.
#pragma once

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system_error.h>

#include <array>
#include <cstdint>

#include "cuda/allocator.h"
#include "cuda/runtime.h"
#include "tensor/host_device.h"
#include "tensor/native/factories.h"
#include "tensor/tensor.h"

#ifdef __CUDACC__
#include <thrust/system/cuda/execution_policy.h>
#else
#include <thrust/system/cpp/execution_policy.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#endif

// MG_UNROLL: unroll the next loop fully in device code (a loop over a kernel's dims with a
// compile-time bound and a `break`; Note [No dynamic indexing in kernels]). Nothing for g++,
// which also compiles nvcc's host side (__CUDA_ARCH__ is set in the device passes only).
#ifdef __CUDA_ARCH__
#define MG_UNROLL _Pragma("unroll")
#else
#define MG_UNROLL
#endif

namespace mutagrad::cuda {

// Dims a kernel operand may have after coalescing (Note [Offset calculator]).
constexpr int kMaxKernelDims = 16;

// The address of element [0, ..., 0] on the device: for kernels only (host code must not
// dereference it; see Note [Host code never reads device memory] in tensor/tensor.h). The
// host-run build checks that `t`'s storage is device memory (Note [Host-run device arena] in
// cuda/runtime_host.cc); the device build compiles no check.
inline char* device_data(const Tensor& t) {
  char* p = static_cast<char*>(t.unsafe_impl()->data());
#ifdef MUTAGRAD_HOST_RUN_SYSTEM
  const Storage& s = t.storage();
  runtime().check_device_pointer(s.data(), s.nbytes(), "a CUDA kernel's operand");
#endif
  return p;
}

// The element at byte `offset` from `base`.
template <typename T>
MG_HOST_DEVICE T& at(char* base, int64_t offset) {
  return *reinterpret_cast<T*>(base + offset);
}
template <typename T>
MG_HOST_DEVICE const T& at(const char* base, int64_t offset) {
  return *reinterpret_cast<const T*>(base + offset);
}

// `t`'s memory seen with other sizes and strides (same storage, offset and dtype), for building
// offset calculators over a subset of dims; no autograd, no version counter of its own.
inline Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector(sizes), DimVector(strides),
                                        t.storage_offset(), t.dtype(), VersionCounter()));
}

// A temporary contiguous buffer of `numel` elements on `device` (from the caching allocator).
inline Tensor device_buffer(int64_t numel, ScalarType dtype, Device device) {
  return empty({numel}, TensorOptions(dtype).device(device));
}

// Note [No dynamic indexing in kernels]
// A kernel's functor is a kernel parameter. Indexing one of its arrays with a value known only
// at run time (sizes[d] in a loop up to ndim) makes nvcc copy the whole functor into each
// thread's local memory first: ptxas reported a 944-byte stack frame for the unary kernel,
// and on the first GPU run (H100, docs/cuda.md) exp over 4M float32 took 380 us against
// PyTorch's 23 us. Loops over dims or operands therefore run to the compile-time bound with a
// `break` and MG_UNROLL, so every index is a constant and the arrays stay in parameter space.
// `-Xptxas -v` (tools/gpu/ptxas_report.sh) shows each kernel's stack frame: a few bytes at most.

// Note [Offset calculator]
// Operands of one kernel share a shape; each has its own byte strides. On the host, size-1 dims
// are dropped and neighbouring dims merged where every operand is contiguous across them; the
// kernel turns a linear (row-major) element index into each operand's byte offset with one
// div/mod per remaining dim. Row-major order is kept (no permutation as the CPU's
// StridedLoop does): the order only affects speed, never a value, since every element is
// computed independently.
template <int N>
struct OffsetCalc {
  int ndim = 0;
  int64_t sizes[kMaxKernelDims] = {};       // innermost first
  int64_t strides[N][kMaxKernelDims] = {};  // bytes

  // See Note [No dynamic indexing in kernels]: d is a constant in every unrolled iteration.
  // The outermost dim needs no division: what is left of `linear` is its coordinate.
  MG_HOST_DEVICE void get(int64_t linear, int64_t (&offsets)[N]) const {
    MG_UNROLL
    for (int k = 0; k < N; ++k) offsets[k] = 0;
    MG_UNROLL
    for (int d = 0; d < kMaxKernelDims; ++d) {
      if (d == ndim) break;
      int64_t i = linear;
      if (d + 1 < ndim) {
        i = linear % sizes[d];
        linear /= sizes[d];
      }
      MG_UNROLL
      for (int k = 0; k < N; ++k) offsets[k] += i * strides[k][d];
    }
  }
};

// The offset calculator of operands that all have ops[0]'s shape (inputs already expanded).
template <int N>
OffsetCalc<N> make_offset_calc(const std::array<const Tensor*, N>& ops) {
  OffsetCalc<N> calc;
  const IntArrayRef shape = ops[0]->sizes();
  for (int64_t d = ops[0]->dim() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    int64_t bytes[N];
    for (int k = 0; k < N; ++k) bytes[k] = ops[k]->strides()[d] * ops[k]->element_size();
    bool merge = calc.ndim > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = bytes[k] == calc.strides[k][calc.ndim - 1] * calc.sizes[calc.ndim - 1];
    }
    if (merge) {
      calc.sizes[calc.ndim - 1] *= shape[d];
      continue;
    }
    if (calc.ndim == kMaxKernelDims) {
      throw DeviceError(str("CUDA kernels take at most ", kMaxKernelDims,
                            " non-mergeable dims; this operand of shape ", shape,
                            " has more. "
                            "Make it contiguous first (.contiguous())"));
    }
    calc.sizes[calc.ndim] = shape[d];
    for (int k = 0; k < N; ++k) calc.strides[k][calc.ndim] = bytes[k];
    ++calc.ndim;
  }
  return calc;
}

// Temporary storage from the caching allocator: Note [Thrust temporaries] in cuda/allocator.h.
inline auto exec_policy() {
  static ThrustAllocator alloc;  // stateless
#ifdef __CUDACC__
  return thrust::cuda::par_nosync(alloc).on(static_cast<cudaStream_t>(runtime().stream()));
#else
  return thrust::device(alloc);
#endif
}

#ifndef __CUDACC__
// The host-run build's policy for Thrust's sorts: the sequential system, with the same
// allocator. The OpenMP system's stable_sort_by_key allocates its temporaries inside its
// parallel region, where an OutOfMemoryError cannot propagate (std::terminate); the
// sequential one allocates on the calling thread, so the error reaches the op (Note [Allocate
// before the bump] in tensor/version_counter.h; memory_limits_test).
inline auto host_sort_policy() {
  static ThrustAllocator alloc;  // stateless
  return thrust::cpp::par(alloc);
}

// The threads a host-run launch runs on: OpenMP's (Thrust's OMP system), or 1 (its CPP system).
inline int64_t host_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
#endif

// Runs f(i) for i in [0, n) on the device; a launch failure becomes a DeviceError naming `op`.
template <typename F>
void launch(const char* op, int64_t n, const F& f) {
  if (n <= 0) return;
  try {
    thrust::for_each_n(exec_policy(), thrust::counting_iterator<int64_t>(0), n, f);
  } catch (const thrust::system_error& e) {
    throw DeviceError(str(op, ": the CUDA kernel failed: ", e.what()));
  }
}

}  // namespace mutagrad::cuda
