// The one translation from a row-major GemmArgs (cuda/runtime.h) to a column-major BLAS call
// (cuBLAS's convention), and a reference implementation of that call for the host-run build.
//
//   ColumnMajorGemm c = to_column_major(args);     // what runtime_cuda.cc hands to cuBLAS
//   reference_gemm<float>(c);                      // what the host-run "BLAS" computes
//
// Note [cuBLAS from row-major tensors]
// cuBLAS is column-major. A row-major matrix with leading dimension ld is, to cuBLAS, the
// column-major matrix of its transpose with the same ld, so row-major C = A B is computed as
// column-major C^T = B^T A^T: B is passed first, each operand with OP_N when it is stored
// row-major and OP_T when it is stored transposed (GemmArgs::trans_*). The device build calls
// cuBLAS with exactly these fields; the host-run build, with MUTAGRAD_HOST_RUN_BLAS=1, runs
// reference_gemm on them, so the suite checks the translation and the operand preparation of
// cuda/linalg.cu against the CPU (//tests/cuda:reduce_linalg_conformance_test_host_blas).
#pragma once

#include <cstdint>

#include "cuda/runtime.h"

namespace mutagrad::cuda {

// C[:, :, i] = op(first) op(second) for i < batch, column-major, as cublas<t>gemmStridedBatched
// takes it (alpha 1, beta 0).
struct ColumnMajorGemm {
  bool f64 = false;
  bool trans_first = false, trans_second = false;
  int64_t m = 0, n = 0, k = 0;  // C is m x n
  const void* first = nullptr;
  int64_t ld_first = 0, stride_first = 0;
  const void* second = nullptr;
  int64_t ld_second = 0, stride_second = 0;
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
};

inline ColumnMajorGemm to_column_major(const GemmArgs& g) {
  ColumnMajorGemm c;
  c.f64 = g.f64;
  c.trans_first = g.trans_b;
  c.trans_second = g.trans_a;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  c.first = g.b;
  c.ld_first = g.ldb;
  c.stride_first = g.stride_b;
  c.second = g.a;
  c.ld_second = g.lda;
  c.stride_second = g.stride_a;
  c.c = g.c;
  c.ldc = g.ldc;
  c.stride_c = g.stride_c;
  c.batch = g.batch;
  return c;
}

// The column-major BLAS call, element by element (host memory).
template <typename T>
void reference_gemm(const ColumnMajorGemm& g) {
  const T* x = static_cast<const T*>(g.first);
  const T* y = static_cast<const T*>(g.second);
  T* out = static_cast<T*>(g.c);
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        T acc = T(0);
        for (int64_t p = 0; p < g.k; ++p) {
          // op(first)[i, p] and op(second)[p, j], column-major with their leading dims.
          const T u = g.trans_first ? x[b * g.stride_first + i * g.ld_first + p]
                                    : x[b * g.stride_first + p * g.ld_first + i];
          const T v = g.trans_second ? y[b * g.stride_second + p * g.ld_second + j]
                                     : y[b * g.stride_second + j * g.ld_second + p];
          acc += u * v;
        }
        out[b * g.stride_c + j * g.ldc + i] = acc;
      }
    }
  }
}

}  // namespace mutagrad::cuda
