// The public CUDA queries (cuda.h) and the runtime registry (runtime.h).
#include "cuda/cuda.h"

#include "cuda/allocator.h"
#include "cuda/runtime.h"

namespace mutagrad::cuda {
namespace {

// What a build without a CUDA backend has: no device, and a reason that says how to get one.
class NoCudaRuntime final : public Runtime {
 public:
  std::string build_name() const override { return "none (built without CUDA)"; }
  int device_count(std::string* reason) override {
    if (reason != nullptr) {
      *reason =
          "mutagrad was built without a CUDA backend; rebuild with --config=cuda (the device "
          "build, needs the CUDA Toolkit) or --config=cuda_host (the host-run device, for "
          "trying CUDA code paths on a CPU)";
    }
    return 0;
  }
  std::string device_name(int) override { return "none"; }
  void* malloc(size_t) override { return nullptr; }
  void free(void*, size_t) override {}
  void memcpy(void*, const void*, size_t, CopyKind) override {
    MG_INTERNAL_ASSERT(false, "memcpy without a CUDA runtime");
  }
  void synchronize() override {}
  void* stream() override { return nullptr; }
};

Runtime*& slot() {
  static Runtime* registered = nullptr;
  return registered;
}

}  // namespace

void Runtime::gemm(const GemmArgs&) {
  throw DeviceError(
      str("matmul: ", build_name(), " has no BLAS; its matmul runs the Thrust kernel"));
}

Runtime& runtime() {
  static NoCudaRuntime* none = new NoCudaRuntime();  // never destroyed, as the backends
  Runtime* r = slot();
  return r != nullptr ? *r : *none;
}

void register_runtime(Runtime* runtime) { slot() = runtime; }

bool is_available() { return device_count() > 0; }

int device_count() { return runtime().device_count(nullptr); }

std::string unavailable_reason() {
  std::string reason;
  return runtime().device_count(&reason) > 0 ? std::string() : reason;
}

std::string device_name(int device) {
  check_available();
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw DeviceError(str("cuda.device_name(): device ", device, " does not exist; there ",
                          count == 1 ? "is 1 CUDA device" : str("are ", count, " CUDA devices"),
                          " (indices 0 to ", count - 1, ")"));
  }
  return runtime().device_name(device);
}

std::string build_name() { return runtime().build_name(); }

void synchronize() {
  if (is_available()) runtime().synchronize();
}

int64_t memory_allocated() { return caching_allocator().stats().allocated; }
int64_t max_memory_allocated() { return caching_allocator().stats().max_allocated; }
int64_t memory_reserved() { return caching_allocator().stats().reserved; }
void reset_peak_memory_stats() { caching_allocator().reset_peak(); }
void empty_cache() { caching_allocator().empty_cache(); }

Generator& default_generator() { return mutagrad::default_generator(kCUDA); }

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

void check_available() {
  std::string reason;
  if (runtime().device_count(&reason) > 0) return;
  throw DeviceError(str("CUDA is not available: ", reason,
                        ". Check that a GPU and its driver are visible with `nvidia-smi`, and "
                        "ask mutagrad::cuda::is_available() before creating CUDA tensors"));
}

}  // namespace mutagrad::cuda
