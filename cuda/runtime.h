// Runtime: the small CUDA-specific layer (device discovery, memory, copies, the stream) behind
// one interface, so that the host-run build can replace it.
//
//   Runtime& rt = runtime();                // the registered one, or "not built with CUDA"
//   void* p = rt.malloc(1024);              // nullptr when the device is out of memory
//   rt.memcpy(p, host, 1024, CopyKind::kHostToDevice);
//
// Note [Two runtimes]
// runtime_cuda.cc (device build) calls the CUDA runtime API: cudaGetDeviceCount, cudaMalloc,
// cudaMemcpyAsync on one stream per process, cudaStreamSynchronize; every call's error is
// reported with the call's name and cudaGetErrorString. runtime_host.cc (host-run build) hands
// out host memory, copies with memcpy and has no stream: kernels run to completion on the
// calling thread (Thrust OMP/CPP). Whichever is linked registers itself at load time; a build
// with neither answers every query with "mutagrad was built without CUDA". Nothing outside
// cuda/ sees this interface: the rest of the code uses cuda.h and the Backend.
#pragma once

#include <cstddef>
#include <string>

namespace mutagrad::cuda {

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

// C = A B for `batch` matrices in row-major memory: A is m x k, B k x n, C m x n. A matrix is
// stored row-major with leading dimension ld, or (trans) as the row-major matrix of its
// transpose; matrix i of a batch starts `stride` elements after matrix i - 1 (0: the same
// matrix for every i). Elements are float (f64 false) or double.
struct GemmArgs {
  bool f64 = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  bool trans_a = false;
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  bool trans_b = false;
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  // What this build is: "device (nvcc, CUDA runtime 13.0)" or "host-run (Thrust OMP), Thrust
  // 3.0.1 headers".
  virtual std::string build_name() const = 0;
  // Usable devices; 0 with `reason` set (the cudaError string, or why there is no CUDA).
  virtual int device_count(std::string* reason) = 0;
  virtual std::string device_name(int index) = 0;
  // Device memory; nullptr when the device is out of memory, DeviceError on other failures.
  // Called by the caching allocator only, under its lock.
  virtual void* malloc(size_t nbytes) = 0;
  virtual void free(void* ptr, size_t nbytes) = 0;
  // Returns when `dst` holds the bytes (host memory may be reused at once).
  virtual void memcpy(void* dst, const void* src, size_t nbytes, CopyKind kind) = 0;
  // Waits for every kernel launched so far.
  virtual void synchronize() = 0;
  // The stream kernels are launched on (a cudaStream_t); nullptr in the host-run build.
  virtual void* stream() = 0;
  // Whether gemm() is there: cuBLAS in the device build; the host-run runtime has no BLAS (its
  // matmul is the Thrust kernel).
  virtual bool has_blas() const { return false; }
  // Runs `args` with the device's BLAS on the stream; every size fits in int (32 bits).
  virtual void gemm(const GemmArgs& args);
};

// The registered runtime, or one that reports "built without CUDA" and allocates nothing.
Runtime& runtime();
// Called once at load time by runtime_cuda.cc or runtime_host.cc.
void register_runtime(Runtime* runtime);

}  // namespace mutagrad::cuda
