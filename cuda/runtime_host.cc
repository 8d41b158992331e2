// The host-run runtime: host memory stands in for device memory, copies are memcpy, there is no
// stream (Thrust's OMP/CPP system runs each kernel to completion). See Note [Two runtimes] in
// cuda/runtime.h. Registers itself at load time.
#include <thrust/version.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/gemm.h"
#include "cuda/runtime.h"
#include "tensor/error.h"

#ifndef MUTAGRAD_HOST_RUN_SYSTEM
#error "build runtime_host.cc with HOST_RUN_COPTS (cuda/cuda.bzl)"
#endif

namespace mutagrad::cuda {
namespace {

constexpr size_t kAlignment = 256;  // what cudaMalloc guarantees

// Note [Host-run device memory]
// The host-run device has a capacity, as a GPU has: half the machine's physical memory, or
// MUTAGRAD_HOST_RUN_MEMORY_BYTES when set. A request beyond what is left returns nullptr (as
// cudaMalloc's cudaErrorMemoryAllocation) instead of reaching the C allocator, so the caching
// allocator's OutOfMemoryError path is exercised the same way here, under ASan too (whose
// allocator aborts on absurd sizes rather than returning null).
size_t capacity() {
  if (const char* env = std::getenv("MUTAGRAD_HOST_RUN_MEMORY_BYTES")) {
    return static_cast<size_t>(std::strtoull(env, nullptr, 10));
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) / 2
                               : size_t{1} << 32;
}

class HostRunRuntime final : public Runtime {
 public:
  // Which Thrust the kernels were compiled against: the CUDA Toolkit's CCCL (2.x, 3.x) or
  // Debian's libthrust-dev (1.17), see ./bazelw.
  std::string build_name() const override {
    return str(kName, ", Thrust ", THRUST_MAJOR_VERSION, ".", THRUST_MINOR_VERSION, ".",
               THRUST_SUBMINOR_VERSION, " headers");
  }
  int device_count(std::string*) override { return 1; }
  std::string device_name(int) override { return kName; }
  void* malloc(size_t nbytes) override {
    if (nbytes > capacity_ - used_) return nullptr;
    void* p = std::aligned_alloc(kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
    if (p != nullptr) used_ += nbytes;
    return p;
  }
  void free(void* ptr, size_t nbytes) override {
    std::free(ptr);
    used_ -= nbytes;
  }
  void memcpy(void* dst, const void* src, size_t nbytes, CopyKind) override {
    if (nbytes > 0) std::memcpy(dst, src, nbytes);
  }
  void synchronize() override {}
  void* stream() override { return nullptr; }
  // No BLAS, unless MUTAGRAD_HOST_RUN_BLAS=1: then the column-major reference of the call the
  // device build makes to cuBLAS (Note [cuBLAS from row-major tensors] in cuda/gemm.h).
  bool has_blas() const override { return reference_blas_; }
  void gemm(const GemmArgs& args) override {
    const ColumnMajorGemm c = to_column_major(args);
    if (c.f64) {
      reference_gemm<double>(c);
    } else {
      reference_gemm<float>(c);
    }
  }

 private:
  static constexpr const char* kName = "host-run (Thrust " MUTAGRAD_HOST_RUN_SYSTEM ")";
  const size_t capacity_ = capacity();
  const bool reference_blas_ = [] {
    const char* env = std::getenv("MUTAGRAD_HOST_RUN_BLAS");
    return env != nullptr && std::string(env) == "1";
  }();
  size_t used_ = 0;  // under the caching allocator's lock
};

const bool registered = [] {
  register_runtime(new HostRunRuntime());  // never destroyed: tensors may outlive main
  return true;
}();

}  // namespace
}  // namespace mutagrad::cuda
