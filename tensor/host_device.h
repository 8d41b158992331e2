// MG_HOST_DEVICE: marks a function that both backends call per element, on the host (the CPU
// backend, the host-run CUDA build) and on a GPU (nvcc's device build of cuda/*.cu).
//
//   template <typename T>
//   MG_HOST_DEVICE T twice(T x) { return x + x; }
#pragma once

#ifdef __CUDACC__
#define MG_HOST_DEVICE __host__ __device__
#else
#define MG_HOST_DEVICE
#endif
