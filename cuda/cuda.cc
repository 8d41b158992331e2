// The public CUDA queries (cuda.h) and the runtime registry (runtime.h).
#include "cuda/cuda.h"

#include <algorithm>
#include <cstdlib>

#include "cuda/allocator.h"
#include "cuda/host_allocator.h"
#include "cuda/runtime.h"
#include "tensor/native/copy.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::cuda {
namespace {

// A non-negative decimal integer (at most 9 digits), or -1.
int parse_rank(const char* text) {
  const std::string s = text;
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoi(s);
}

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
  int current_device() override { return 0; }
  std::string device_source() override { return "none"; }
  void set_device(int) override { check_available(); }
  void* malloc(size_t) override { return nullptr; }
  void free(void*, size_t) override {}
  void memcpy(void*, const void*, size_t, CopyKind) override {
    MG_INTERNAL_ASSERT(false, "memcpy without a CUDA runtime");
  }
  void synchronize() override {}
  void* stream() override { return nullptr; }
  void* create_event() override { return nullptr; }
  void destroy_event(void*) override {}
  void record_event(void*, void*) override {}
  bool query_event(void*) override { return true; }
  void* host_alloc(size_t) override { return nullptr; }
  void host_free(void*) override {}
  void memcpy_async(void*, const void*, size_t, CopyKind) override {
    MG_INTERNAL_ASSERT(false, "memcpy_async without a CUDA runtime");
  }
};

Runtime*& slot() {
  static Runtime* registered = nullptr;
  return registered;
}

}  // namespace

int choose_device(int count, const std::function<const char*(const char*)>& getenv,
                  std::string* source) {
  MG_INTERNAL_ASSERT(count > 0, "choose_device without devices");
  // Node-local ranks first (a node's ranks take its GPUs in turn), then the global rank.
  static const char* const kNames[] = {
      "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
      "RANK",       "OMPI_COMM_WORLD_RANK",       "PMI_RANK"};
  for (const char* name : kNames) {
    const char* value = getenv(name);
    if (value == nullptr) continue;
    const int rank = parse_rank(value);
    if (rank < 0) {
      throw DeviceError(str("choosing the CUDA device: ", name, "='", value,
                            "' is not a non-negative integer; unset it or give the process's "
                            "rank (docs/cuda.md, one device per process)"));
    }
    if (source != nullptr) *source = str(name, "=", value);
    return rank % count;
  }
  if (source != nullptr) *source = "default";
  return 0;
}

void DeviceSelection::choose(int count) {
  std::string source;
  const int device = choose_device(
      count, [](const char* name) { return std::getenv(name); }, &source);
  std::lock_guard<std::mutex> lock(mutex_);
  count_ = count;
  device_ = device;
  source_ = source;
}

int DeviceSelection::device() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return device_;
}

std::string DeviceSelection::source() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return source_;
}

void DeviceSelection::set(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index < 0 || index >= count_) {
    throw DeviceError(str("set_device(", index, "): CUDA device ", index, " does not exist; there ",
                          count_ == 1 ? "is 1 CUDA device" : str("are ", count_, " CUDA devices"),
                          " (indices 0 to ", count_ - 1, ")"));
  }
  if (index == device_) return;
  if (in_use_) {
    throw DeviceError(str("set_device(", index, "): this process already works on cuda:", device_,
                          " (chosen by ", source_,
                          "; its memory, stream and handles are there), and mutagrad drives one "
                          "CUDA device per process. Call set_device before the first CUDA tensor "
                          "is made, or run one process per GPU (LOCAL_RANK)"));
  }
  device_ = index;
  source_ = str("set_device(", index, ")");
}

int DeviceSelection::use() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_ = true;
  return device_;
}

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

int current_device() {
  check_available();
  return runtime().current_device();
}

void set_device(int device) {
  check_available();
  runtime().set_device(device);
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

bool is_pinned(const Tensor& self) {
  if (!self.defined() || !self.device().is_cpu() || runtime().device_count(nullptr) == 0) {
    return false;
  }
  const Storage& storage = self.unsafe_impl()->storage();
  return storage.data() != nullptr &&
         host_allocator().contains(storage.data(), std::max<size_t>(storage.nbytes(), 1));
}

Tensor pin_memory(const Tensor& self) {
  if (!self.device().is_cpu()) {
    throw DeviceError(str("pin_memory(): cannot pin a tensor on ", self.device(),
                          ": only CPU tensors can be pinned (it is device memory already)"));
  }
  check_available();
  if (is_pinned(self)) return self;
  const size_t nbytes = static_cast<size_t>(self.numel() * self.element_size());
  std::shared_ptr<void> block = host_allocator().allocate(nbytes);
  Tensor out =
      from_blob(block.get(), self.sizes(), contiguous_strides(self.sizes()), self.dtype(), block);
  if (out.numel() > 0) native::copy_(out, self);
  return out;
}

Generator& default_generator() { return mutagrad::default_generator(kCUDA); }

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace {
// "cuda" without an index: the process's device (Note [One device per process]); 0 while there
// is no CUDA device, so that the error says the device is unavailable.
const bool hook_registered = [] {
  set_current_cuda_index_hook([]() -> int8_t {
    std::string reason;
    if (runtime().device_count(&reason) == 0) return 0;
    return static_cast<int8_t>(runtime().current_device());
  });
  return true;
}();
}  // namespace

void check_available() {
  std::string reason;
  if (runtime().device_count(&reason) > 0) return;
  throw DeviceError(str("CUDA is not available: ", reason,
                        ". Check that a GPU and its driver are visible with `nvidia-smi`, and "
                        "ask mutagrad::cuda::is_available() before creating CUDA tensors"));
}

}  // namespace mutagrad::cuda
