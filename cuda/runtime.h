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
//
// Note [One device per process]
// A process drives one CUDA device, chosen once by choose_device() below (LOCAL_RANK, else
// the launcher's local rank, else rank % count, else 0) when the runtime first counts its
// devices, and changeable with set_device() until the device is in use: the runtime makes it
// current (cudaSetDevice, on every thread that calls in) before its first allocation, stream
// or handle, so the caching allocator, the stream, cuBLAS and NCCL all work on it, and a
// tensor made with "cuda" (no index) is on it and reports cuda:N. Another index is refused
// with DeviceError (CudaBackend::check_device) rather than silently mixing GPUs.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
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

// The device a process uses out of `count` (> 0), from its environment (`getenv`: a name ->
// its value or nullptr): LOCAL_RANK (torchrun), else the MPI launcher's node-local rank
// (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID), each taken modulo `count`;
// else the global rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK) modulo `count`; else 0.
// `source` (if not null) gets what decided it, e.g. "LOCAL_RANK=3". DeviceError when the
// first variable that is set is not a non-negative integer.
int choose_device(int count, const std::function<const char*(const char*)>& getenv,
                  std::string* source = nullptr);

// The bookkeeping of Note [One device per process], shared by the runtimes (thread-safe).
class DeviceSelection {
 public:
  // Once the runtime knows it has `count` (> 0) devices: choose_device() from the process's
  // environment. DeviceError as choose_device().
  void choose(int count);
  int device() const;
  std::string source() const;
  // set_device(index): DeviceError when index is not in [0, count), or when the device is in
  // use and index is another one.
  void set(int index);
  // Fixes the device (set() may no longer change it) and returns it: the runtime calls this
  // before it allocates, creates its stream or a handle.
  int use();

 private:
  mutable std::mutex mutex_;
  int count_ = 0;
  int device_ = 0;
  bool in_use_ = false;
  std::string source_ = "default";
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
  // The process's device (Note [One device per process]); 0 when there is none.
  virtual int current_device() = 0;
  // What chose it: "LOCAL_RANK=1", "set_device(2)", "default" (for error messages).
  virtual std::string device_source() = 0;
  // Makes `index` the process's device. DeviceError when it does not exist, or when the
  // runtime already works on another one (memory, stream or handles exist there).
  virtual void set_device(int index) = 0;
  // In the host-run build: DeviceError unless [ptr, ptr + nbytes) lies in device memory the
  // runtime handed out (Note [Host-run device arena]); the device build checks nothing.
  virtual void check_device_pointer(const void* ptr, size_t nbytes, const char* what) {}
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

  // Note [Streams and events]
  // Events are handles (cudaEvent_t) recorded on a stream; query_event() says whether the
  // stream has passed the point where it was recorded. The host-run runtime runs every kernel
  // and copy to completion on the calling thread, so its events are complete when recorded;
  // the device build calls cudaEventCreateWithFlags (no timing), cudaEventRecord,
  // cudaEventQuery, cudaEventDestroy.
  virtual void* create_event() = 0;
  virtual void destroy_event(void* event) = 0;
  virtual void record_event(void* event, void* stream) = 0;
  virtual bool query_event(void* event) = 0;
  // Page-locked host memory (cudaHostAlloc), for CachingHostAllocator only; nullptr when none
  // is left. The host-run runtime hands out ordinary host memory (outside its device arena).
  virtual void* host_alloc(size_t nbytes) = 0;
  virtual void host_free(void* ptr) = 0;
  // Queues the copy on the stream and returns at once (cudaMemcpyAsync): host memory must be
  // pinned and must not be touched until an event recorded after the copy completed (Note
  // [Non-blocking transfers] in cuda/cuda_backend.cc). The host-run runtime copies at once.
  virtual void memcpy_async(void* dst, const void* src, size_t nbytes, CopyKind kind) = 0;
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
