// The CPU kernels built once per instruction set, and the choice between them at run time.
//
//   vec_kernels().unary_f32(VecUnaryOp::kExp, out, in, n);   // AVX2+FMA where the CPU has it
//   set_cpu_capability(CpuCapability::kBaseline);            // tests: pin the SSE2 build
//
// Note [CPU capability dispatch]
// The library is compiled for baseline x86-64 (SSE2), so it runs on every x86-64 machine. The
// loops that are compute-bound on such a build (Eigen's GEMM for matmul, Eigen's SIMD exp, log,
// tanh, ... for the transcendental ops) are compiled a second time with -mavx2 -mfma
// (vec_kernels_avx2.cc), as libtorch builds ATen's kernels per CPU capability. The first call
// picks the best build the CPU supports (cpuid), unless MUTAGRAD_CPU_CAPABILITY=baseline (or
// avx2) says otherwise; set_cpu_capability() changes it at run time.
//
// The two builds give the same results where the op is exact (every lane outside a
// VecDomain, see Note [Vectorized transcendental edges]); Eigen's approximations and GEMM's
// FMAs may round differently in the last bits, as libtorch's do between capabilities. Pin
// MUTAGRAD_CPU_CAPABILITY=baseline for bits that do not depend on the machine.
//
// One source, two builds, no ODR clash: vec_kernels_impl.h is included by
// vec_kernels_baseline.cc and vec_kernels_avx2.cc with a different namespace, and the AVX2 one
// renames namespace Eigen (a macro) so that no inline or template function is compiled both
// ways under one name (the linker would keep one copy, maybe the AVX2 one, for both: SIGILL on
// a CPU without AVX2). tests/tensor/vec_kernels_symbols_test.sh checks the AVX2 object exports
// no weak symbol outside its namespaces.
#pragma once

#include <cstdint>

namespace mutagrad::cpu {

enum class CpuCapability { kBaseline, kAvx2 };

const char* cpu_capability_name(CpuCapability c);  // "baseline", "avx2"
// The best build this CPU runs.
CpuCapability cpu_capability_supported();
// The build in use: MUTAGRAD_CPU_CAPABILITY if set (an unknown or unsupported value throws
// ValueError at the first kernel call), else the best supported.
CpuCapability cpu_capability();
// Switches every later kernel call; ValueError if this CPU cannot run `c`. Not for use while
// another thread runs kernels (tests and benchmarks only).
void set_cpu_capability(CpuCapability c);

// The transcendental ops with a vectorized build (UnaryOp's names).
enum class VecUnaryOp { kExp, kLog, kSin, kCos, kTanh, kSigmoid };

struct VecKernels {
  CpuCapability capability;
  // o[k] = op(a[k]) for k < n (contiguous; o may be a): exact std:: values outside the op's
  // domain, the SIMD approximation inside (Note [Vectorized transcendental edges]).
  void (*unary_f32)(VecUnaryOp op, float* o, const float* a, int64_t n);
  void (*unary_f64)(VecUnaryOp op, double* o, const double* a, int64_t n);
  // c = op(a) * op(b), c row-major m x n with leading dimension ldc; op(x) is x or its
  // transpose (a_t, b_t); a and b row-major with leading dimensions lda, ldb. k may be 0.
  void (*gemm_f32)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_t,
                   const float* b, int64_t ldb, bool b_t, float* c, int64_t ldc);
  void (*gemm_f64)(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool a_t,
                   const double* b, int64_t ldb, bool b_t, double* c, int64_t ldc);
  // Integer products wrap: int32/int64 go through the unsigned type of the same width.
  void (*gemm_u32)(int64_t m, int64_t n, int64_t k, const uint32_t* a, int64_t lda, bool a_t,
                   const uint32_t* b, int64_t ldb, bool b_t, uint32_t* c, int64_t ldc);
  void (*gemm_u64)(int64_t m, int64_t n, int64_t k, const uint64_t* a, int64_t lda, bool a_t,
                   const uint64_t* b, int64_t ldb, bool b_t, uint64_t* c, int64_t ldc);
  // Whether any of data[0, n) lies outside [lower, lower + span) (as unsigned: u - lower <
  // span): the bounds screen of the index kernels (Note [Vectorized bounds screen]).
  bool (*any_out_of_range)(const int64_t* data, int64_t n, uint64_t lower, uint64_t span);
};

// The table of the build in use.
const VecKernels& vec_kernels();

namespace baseline {
extern const VecKernels kVecKernels;
}
namespace avx2 {
extern const VecKernels kVecKernels;
}

}  // namespace mutagrad::cpu
