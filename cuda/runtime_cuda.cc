// The device build's runtime: the CUDA runtime API, every call checked and reported with its
// name and cudaGetErrorString. See Note [Two runtimes] in cuda/runtime.h. Registers itself at
// load time. One device per process (Note [One device per process] in cuda/runtime.h).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "cuda/gemm.h"
#include "cuda/runtime.h"
#include "tensor/error.h"

namespace mutagrad::cuda {
namespace {

std::string describe(const char* call, cudaError_t err) {
  return str(call, " failed: ", cudaGetErrorString(err), " (", cudaGetErrorName(err), ")");
}

void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw DeviceError(describe(call, err));
}

void check_blas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw DeviceError(str(call, " failed: ", cublasGetStatusString(status)));
  }
}

class CudaRuntime final : public Runtime {
 public:
  std::string build_name() const override {
    return str("device (nvcc, CUDA runtime ", CUDART_VERSION / 1000, ".",
               CUDART_VERSION % 1000 / 10, ")");
  }

  int device_count(std::string* reason) override {
    std::call_once(init_, [this] {
      int count = 0;
      cudaError_t err = cudaGetDeviceCount(&count);
      if (err != cudaSuccess) {
        (void)cudaGetLastError();  // clear it: the process may go on without CUDA
        reason_ = describe("cudaGetDeviceCount", err);
        count = 0;
      } else if (count == 0) {
        reason_ = "cudaGetDeviceCount found no CUDA device";
      } else {
        try {
          selection_.choose(count);  // no context yet: set_device may still change it
        } catch (const DeviceError& e) {
          reason_ = e.what();
          count = 0;
        }
      }
      count_ = count;
    });
    if (count_ == 0 && reason != nullptr) *reason = reason_;
    return count_;
  }

  int current_device() override { return device_count(nullptr) > 0 ? selection_.device() : 0; }
  std::string device_source() override { return selection_.source(); }
  void set_device(int index) override {
    device_count(nullptr);
    selection_.set(index);
  }

  std::string device_name(int index) override {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    return prop.name;
  }

  void* malloc(size_t nbytes) override {
    activate();
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: the caching allocator retries or reports
      return nullptr;
    }
    check(err, "cudaMalloc");
    return p;
  }

  void free(void* ptr, size_t) override {
    activate();
    check(cudaFree(ptr), "cudaFree");
  }

  void memcpy(void* dst, const void* src, size_t nbytes, CopyKind kind) override {
    if (nbytes == 0) return;
    activate();
    const cudaMemcpyKind k = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                               : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(dst, src, nbytes, k, stream_), "cudaMemcpyAsync");
    // A host buffer (pageable, possibly a temporary) is only safe to reuse, and device-to-host
    // results only readable, once the copy is done; device-to-device copies stay queued.
    if (kind != CopyKind::kDeviceToDevice) {
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }
  }

  // Note [Streams and events] in cuda/runtime.h.
  void* create_event() override {
    activate();
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return event;
  }
  void destroy_event(void* event) override {
    check(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
  }
  void record_event(void* event, void* stream) override {
    activate();
    check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
          "cudaEventRecord");
  }
  bool query_event(void* event) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: still queued
      return false;
    }
    check(err, "cudaEventQuery");
    return true;
  }

  void* host_alloc(size_t nbytes) override {
    activate();
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, nbytes, cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    check(err, "cudaHostAlloc");
    return p;
  }
  void host_free(void* ptr) override { check(cudaFreeHost(ptr), "cudaFreeHost"); }

  void memcpy_async(void* dst, const void* src, size_t nbytes, CopyKind kind) override {
    if (nbytes == 0) return;
    activate();
    const cudaMemcpyKind k = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                               : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(dst, src, nbytes, k, stream_), "cudaMemcpyAsync");
  }

  void synchronize() override {
    activate();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void* stream() override {
    activate();
    return stream_;
  }

  // Note [cuBLAS from row-major tensors] in cuda/gemm.h. Default math mode: no TF32 for float,
  // so float32 products keep float32 rounding as on the CPU.
  bool has_blas() const override { return true; }

  void gemm(const GemmArgs& args) override {
    activate();
    std::call_once(blas_init_, [this] {
      check_blas(cublasCreate(&blas_), "cublasCreate");
      check_blas(cublasSetStream(blas_, stream_), "cublasSetStream");
      check_blas(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    });
    const ColumnMajorGemm c = to_column_major(args);
    const cublasOperation_t op_first = c.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_second = c.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(c.m), n = static_cast<int>(c.n), k = static_cast<int>(c.k);
    const int ld_first = static_cast<int>(c.ld_first), ld_second = static_cast<int>(c.ld_second);
    const int ldc = static_cast<int>(c.ldc), batch = static_cast<int>(c.batch);
    if (c.f64) {
      const double one = 1.0, zero = 0.0;
      check_blas(cublasDgemmStridedBatched(
                     blas_, op_first, op_second, m, n, k, &one, static_cast<const double*>(c.first),
                     ld_first, c.stride_first, static_cast<const double*>(c.second), ld_second,
                     c.stride_second, &zero, static_cast<double*>(c.c), ldc, c.stride_c, batch),
                 "cublasDgemmStridedBatched");
    } else {
      const float one = 1.0f, zero = 0.0f;
      check_blas(cublasSgemmStridedBatched(
                     blas_, op_first, op_second, m, n, k, &one, static_cast<const float*>(c.first),
                     ld_first, c.stride_first, static_cast<const float*>(c.second), ld_second,
                     c.stride_second, &zero, static_cast<float*>(c.c), ldc, c.stride_c, batch),
                 "cublasSgemmStridedBatched");
    }
  }

 private:
  // Fixes the process's device on first use and creates the stream there; then makes it the
  // calling thread's current device (the CUDA runtime's current device is per thread, and
  // cudaMalloc, kernels and handles work on it), once per thread.
  void activate() {
    std::call_once(active_, [this] {
      const int device = selection_.use();
      check(cudaSetDevice(device), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
      device_ = device;
    });
    thread_local int thread_device = -1;
    if (thread_device != device_) {
      check(cudaSetDevice(device_), "cudaSetDevice");
      thread_device = device_;
    }
  }

  std::once_flag init_;
  int count_ = 0;
  std::string reason_;
  DeviceSelection selection_;
  std::once_flag active_;
  int device_ = -1;  // the device in use, set once by activate()
  cudaStream_t stream_ = nullptr;
  std::once_flag blas_init_;
  cublasHandle_t blas_ = nullptr;
};

const bool registered = [] {
  register_runtime(new CudaRuntime());  // never destroyed: tensors may outlive main
  return true;
}();

}  // namespace
}  // namespace mutagrad::cuda
