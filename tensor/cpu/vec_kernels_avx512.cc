// The AVX-512 build of vec_kernels_impl.h (compiled with -mavx512f -mavx512dq -mavx512vl
// -mavx512bw -mavx2 -mfma, tensor/cpu/BUILD.bazel): Note [CPU capability dispatch]. Eigen is
// renamed so that none of its inline functions shares a name with another build's copy;
// vec_kernels_symbols_test.sh checks what is left.
#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__) || \
    !defined(__AVX512BW__) || !defined(__FMA__)
#error "vec_kernels_avx512.cc is compiled with -mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma"
#endif
#define Eigen mutagrad_eigen_avx512
#define MUTAGRAD_VEC_NS avx512
#define MUTAGRAD_VEC_CAPABILITY CpuCapability::kAvx512
#include "tensor/cpu/vec_kernels_impl.h"
