// The AVX2+FMA build of vec_kernels_impl.h (compiled with -mavx2 -mfma, tensor/cpu/BUILD.bazel):
// Note [CPU capability dispatch]. Eigen is renamed so that none of its inline functions shares
// a name with the baseline build's copy; vec_kernels_symbols_test.sh checks what is left.
#if !defined(__AVX2__) || !defined(__FMA__)
#error "vec_kernels_avx2.cc is compiled with -mavx2 -mfma"
#endif
#define Eigen mutagrad_eigen_avx2
#define MUTAGRAD_VEC_NS avx2
#define MUTAGRAD_VEC_CAPABILITY CpuCapability::kAvx2
#include "tensor/cpu/vec_kernels_impl.h"
