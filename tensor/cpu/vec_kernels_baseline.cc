// The baseline (SSE2) build of vec_kernels_impl.h: Note [CPU capability dispatch].
#define MUTAGRAD_VEC_NS baseline
#define MUTAGRAD_VEC_CAPABILITY CpuCapability::kBaseline
#include "tensor/cpu/vec_kernels_impl.h"
