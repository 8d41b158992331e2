// The CPU kernels built once per instruction set, and the choice between them at run time.
//
//   vec_kernels().unary_f32(VecUnaryOp::kExp, out, in, n);   // AVX-512 where the CPU has it
//   set_cpu_capability(CpuCapability::kBaseline);            // tests: pin the SSE2 build
//
// Note [CPU capability dispatch]
// The library is compiled for baseline x86-64 (SSE2), so it runs on every x86-64 machine. The
// loops that are compute-bound on such a build (Eigen's GEMM for matmul, Eigen's SIMD exp, log,
// tanh, ... for the transcendental ops, the one-pass optimizer steps of fused_optim.h and the
// fused multiply-adds of Backend::fma (fused_optim_impl.h), the float
// binary ops and comparisons of vec_pointwise_impl.h, the reduction kernels of
// vec_reduce_impl.h, the random draws' Philox rounds of vec_philox_impl.h) are
// compiled twice more: with -mavx2 -mfma (vec_kernels_avx2.cc, 8 float lanes) and with
// -mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma (vec_kernels_avx512.cc, 16 float lanes), as
// libtorch builds ATen's kernels per CPU capability. The first call picks the best build the
// CPU supports (cpuid, which libgcc checks against the OS's saved register state), unless
// MUTAGRAD_CPU_CAPABILITY=baseline, avx2 or avx512 says otherwise; set_cpu_capability() changes
// it at run time. A build above what cpuid allows is refused, never run: a machine without
// AVX-512 runs the AVX2 or the baseline build of the same source.
//
// The builds give the same results where the op is exact (every lane outside a VecDomain, see
// Note [Vectorized transcendental edges]; the optimizer steps everywhere, Note [Fused steps per
// capability]; binary ops, comparisons and reductions everywhere, Note [Pointwise kernels per
// capability]); Eigen's approximations and GEMM's FMAs may round differently in the last bits,
// as libtorch's do between capabilities. Pin MUTAGRAD_CPU_CAPABILITY=baseline for bits that do
// not depend on the machine.
//
// One source, three builds, no ODR clash: vec_kernels_impl.h is included by
// vec_kernels_baseline.cc, vec_kernels_avx2.cc and vec_kernels_avx512.cc with a different
// namespace, and the AVX ones rename namespace Eigen (a macro) so that no inline or template
// function is compiled two ways under one name (the linker would keep one copy, maybe the AVX
// one, for all: SIGILL on a CPU without it). tests/tensor/vec_kernels_symbols_test.sh checks
// that neither AVX object exports a weak symbol outside its namespaces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/cpu/fused_optim.h"

namespace mutagrad::cpu {

// In increasing order: a CPU that runs one runs those before it.
enum class CpuCapability { kBaseline, kAvx2, kAvx512 };
constexpr CpuCapability kCpuCapabilities[] = {CpuCapability::kBaseline, CpuCapability::kAvx2,
                                              CpuCapability::kAvx512};

const char* cpu_capability_name(CpuCapability c);  // "baseline", "avx2", "avx512"
// The best build this CPU runs (cpuid).
CpuCapability cpu_capability_supported();
// Whether this CPU runs build c (c <= cpu_capability_supported()).
bool cpu_capability_runs(CpuCapability c);
// The build in use: MUTAGRAD_CPU_CAPABILITY if set (an unknown or unsupported value throws
// ValueError at the first kernel call), else the best supported.
CpuCapability cpu_capability();
// Switches every later kernel call; ValueError if this CPU cannot run `c`. Not for use while
// another thread runs kernels (tests and benchmarks only).
void set_cpu_capability(CpuCapability c);

// The transcendental ops with a vectorized build (UnaryOp's names).
enum class VecUnaryOp { kExp, kLog, kSin, kCos, kTanh, kSigmoid };
// The float binary ops and comparisons with a vectorized build (BinaryOp's names; maximum and
// minimum propagate NaN as math::max_propagate_nan).
enum class VecBinaryOp { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum };
enum class VecCompareOp { kEq, kNe, kLt, kLe, kGt, kGe };
// Backend::fma's formulas (FmaOp in tensor/backend.h, same order).
enum class VecFmaOp { kAddAlpha, kAddcmul, kLerp };
// Which operand of a binary run is one scalar repeated (only its element [0] is read).
enum class VecBroadcast { kNone, kScalarA, kScalarB };

struct VecKernels {
  CpuCapability capability;
  // o[k] = op(a[k]) for k < n (contiguous; o may be a): exact std:: values outside the op's
  // domain, the SIMD approximation inside (Note [Vectorized transcendental edges]).
  void (*unary_f32)(VecUnaryOp op, float* o, const float* a, int64_t n);
  void (*unary_f64)(VecUnaryOp op, double* o, const double* a, int64_t n);
  // o[k] = op(a[k], b[k]) for k < n (contiguous, or a scalar per `bc`) in each of `rows` runs:
  // run r of o, a and b at o + r * step[0], a + r * step[1] and b + r * step[2] (element
  // strides; a step of 0 reuses one run, a broadcast row; a kScalar operand's step moves its
  // scalar, a broadcast column), r increasing; o may be a or b. One call takes a block of
  // StridedLoop::run_rows (rows = 1: one run). The bits of the scalar formula in every build
  // (Note [Pointwise kernels per capability] in vec_pointwise_impl.h).
  void (*binary_rows_f32)(VecBinaryOp op, VecBroadcast bc, float* o, const float* a, const float* b,
                          int64_t n, int64_t rows, const int64_t* step);
  void (*binary_rows_f64)(VecBinaryOp op, VecBroadcast bc, double* o, const double* a,
                          const double* b, int64_t n, int64_t rows, const int64_t* step);
  void (*compare_rows_f32)(VecCompareOp op, VecBroadcast bc, bool* o, const float* a,
                           const float* b, int64_t n, int64_t rows, const int64_t* step);
  void (*compare_rows_f64)(VecCompareOp op, VecBroadcast bc, bool* o, const double* a,
                           const double* b, int64_t n, int64_t rows, const int64_t* step);
  // The reduction folds of reduce.cc, in its documented order (Note [Reduction order]): the sum
  // of x[0, n) in double, the maximum or minimum (op kMaximum or kMinimum, NaN propagating; the
  // identity for n = 0), and acc[k] += x[k] in double.
  double (*sum_f32)(const float* x, int64_t n);
  double (*sum_f64)(const double* x, int64_t n);
  float (*extremum_f32)(VecBinaryOp op, const float* x, int64_t n);
  double (*extremum_f64)(VecBinaryOp op, const double* x, int64_t n);
  void (*add_widened_f32)(double* acc, const float* x, int64_t n);
  // Blocks of runs with the bits of the folds above, one run at a time (Note [Reduction kernels
  // over runs] in vec_reduce_impl.h): `rows` runs of n contiguous elements, run r at x + r * xs
  // (strides in elements). *_rows: acc[r * as] = combine(acc[r * as], the fold of run r), r
  // increasing (as may be 0); *_cols: acc[k] = combine(acc[k], x[r * xs + k]), r increasing.
  // combine is + in double for sums, the op (kMaximum or kMinimum) for extrema.
  void (*sum_rows_f32)(double* acc, int64_t as, const float* x, int64_t xs, int64_t rows,
                       int64_t n);
  void (*sum_rows_f64)(double* acc, int64_t as, const double* x, int64_t xs, int64_t rows,
                       int64_t n);
  void (*extremum_rows_f32)(VecBinaryOp op, float* acc, int64_t as, const float* x, int64_t xs,
                            int64_t rows, int64_t n);
  void (*extremum_rows_f64)(VecBinaryOp op, double* acc, int64_t as, const double* x, int64_t xs,
                            int64_t rows, int64_t n);
  void (*sum_cols_f32)(double* acc, const float* x, int64_t xs, int64_t rows, int64_t n);
  void (*sum_cols_f64)(double* acc, const double* x, int64_t xs, int64_t rows, int64_t n);
  void (*extremum_cols_f32)(VecBinaryOp op, float* acc, const float* x, int64_t xs, int64_t rows,
                            int64_t n);
  void (*extremum_cols_f64)(VecBinaryOp op, double* acc, const double* x, int64_t xs, int64_t rows,
                            int64_t n);
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
  // d[0, bytes) = s[0, bytes) with non-temporal stores (Note [Streaming copies] in
  // tensor/cpu/copy.cc): memcpy's bits, the stores ordered by an sfence the caller issues.
  void (*stream_copy)(char* d, const char* s, size_t bytes);
  // o[k s0] = op(a[k s1], b[k s2], c[k s3]) for k < n, element strides s[0, 4); c null where
  // the op takes `value` instead (then s[3] is not read); o may be a, b or c (the same
  // elements). One fused multiply-add per step, the same bits in every build (Note [Torch's
  // fused multiply-adds] in tensor/native/fma.h).
  void (*fma_f32)(VecFmaOp op, float* o, const float* a, const float* b, const float* c,
                  float value, int64_t n, const int64_t* s);
  void (*fma_f64)(VecFmaOp op, double* o, const double* a, const double* b, const double* c,
                  double value, int64_t n, const int64_t* s);
  // Elements [begin, end) of a one-pass optimizer step (fused_optim.h; the same bits in every
  // build: Note [Fused steps per capability] in fused_optim_impl.h).
  void (*sgd_f32)(const SGDStep<float>& s, int64_t begin, int64_t end);
  void (*sgd_f64)(const SGDStep<double>& s, int64_t begin, int64_t end);
  void (*adam_f32)(const AdamStep<float>& s, int64_t begin, int64_t end);
  void (*adam_f64)(const AdamStep<double>& s, int64_t begin, int64_t end);
  // The Philox4x32-10 words of counters (counter + j, 0) under `key`, j < n, n a multiple of
  // kPhiloxBlock: words[4 j + r] = philox4x32_10(counter + j, 0, key).w[r] (tensor/philox.h),
  // the same words in every build (Note [Vectorized Philox] in vec_philox_impl.h).
  void (*philox)(uint64_t counter, uint64_t key, int64_t n, uint32_t* words);
};
constexpr int64_t kPhiloxBlock = 32;

// The table of the build in use.
const VecKernels& vec_kernels();

namespace baseline {
extern const VecKernels kVecKernels;
}
namespace avx2 {
extern const VecKernels kVecKernels;
}
namespace avx512 {
extern const VecKernels kVecKernels;
}

}  // namespace mutagrad::cpu
