// The host-run runtime: host memory stands in for device memory, copies are memcpy, there is no
// stream (Thrust's OMP/CPP system runs each kernel to completion). See Note [Two runtimes] in
// cuda/runtime.h. Registers itself at load time.
#include <sys/mman.h>
#include <thrust/version.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "cuda/gemm.h"
#include "cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/sanitizers.h"

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

// Note [Host-run device arena]
// Device memory is one range of address space the runtime reserves for itself (mmap,
// MAP_NORESERVE: pages exist once touched) and hands out first-fit. So "is this device
// memory?" is a range check, and check_device_pointer() -- called by device_data() for every
// kernel operand and by memcpy() for the device side of each transfer -- refuses a host
// pointer that a GPU would fault on (or read garbage through): the host-run build would
// otherwise run such a kernel happily on the CPU. Under ASan, each block is followed by a
// poisoned red zone and freed blocks are poisoned, so a kernel running past its block or into
// a freed one is reported as ASan reported it on aligned_alloc's blocks.
class Arena {
 public:
  explicit Arena(size_t bytes) {
    bytes = bytes / kAlignment * kAlignment;
    while (bytes >= kAlignment) {  // a smaller reservation when the address space refuses
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) {
        base_ = static_cast<char*>(p);
        size_ = bytes;
        free_[0] = bytes;
        return;
      }
      bytes = bytes / 2 / kAlignment * kAlignment;
    }
  }
  // nullptr when no free range is large enough.
  void* allocate(size_t nbytes) {
    const size_t need = round(nbytes) + kRedZone;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need) continue;
      const size_t offset = it->first, left = it->second - need;
      free_.erase(it);
      if (left > 0) free_[offset + need] = left;
      char* p = base_ + offset;
      asan_unpoison(p, nbytes);
      asan_poison(p + nbytes, need - nbytes);
      return p;
    }
    return nullptr;
  }
  void free(void* ptr, size_t nbytes) {
    const size_t need = round(nbytes) + kRedZone;
    char* p = static_cast<char*>(ptr);
    if (need >= kReleaseBytes) release_pages(p, need);
    asan_poison(p, need);
    std::lock_guard<std::mutex> lock(mutex_);
    size_t offset = static_cast<size_t>(p - base_), size = need;
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + size) {  // merge with the range after
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {  // and with the one before
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free_[offset] = size;
  }
  bool contains(const void* ptr, size_t nbytes) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(base_);
    return p >= b && p - b <= size_ && nbytes <= size_ - (p - b);
  }

 private:
  static size_t round(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
  // Gives back the whole pages inside [p, p + n) only: MADV_DONTNEED zeroes every page it
  // touches, and a block's first or last page may hold a neighbouring block's bytes (blocks
  // are 256-byte aligned, pages 4 KiB).
  static void release_pages(char* p, size_t n) {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
#ifdef MUTAGRAD_ASAN
  static constexpr size_t kRedZone = kAlignment;
#else
  static constexpr size_t kRedZone = 0;
#endif
  static constexpr size_t kReleaseBytes = size_t{1} << 20;
  char* base_ = nullptr;  // immutable after construction: contains() takes no lock
  size_t size_ = 0;
  std::mutex mutex_;
  std::map<size_t, size_t> free_;  // offset -> length of each free range, disjoint, merged
};

// MUTAGRAD_HOST_RUN_DEVICE_COUNT: how many devices the host-run build reports (default 1), to
// test the choice of Note [One device per process] without GPUs. Every one is the same arena.
int simulated_device_count(std::string* reason) {
  const char* env = std::getenv("MUTAGRAD_HOST_RUN_DEVICE_COUNT");
  if (env == nullptr) return 1;
  const std::string s = env;
  if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos) {
    *reason = str("MUTAGRAD_HOST_RUN_DEVICE_COUNT='", s, "' is not a device count (0 to 999)");
    return 0;
  }
  if (std::stoi(s) == 0) *reason = "MUTAGRAD_HOST_RUN_DEVICE_COUNT=0: no host-run device";
  return std::stoi(s);
}

class HostRunRuntime final : public Runtime {
 public:
  // Which Thrust the kernels were compiled against: the CUDA Toolkit's CCCL (2.x, 3.x) or
  // Debian's libthrust-dev (1.17), see ./bazelw.
  std::string build_name() const override {
    return str(kName, ", Thrust ", THRUST_MAJOR_VERSION, ".", THRUST_MINOR_VERSION, ".",
               THRUST_SUBMINOR_VERSION, " headers");
  }
  int device_count(std::string* reason) override {
    std::call_once(init_, [this] {
      count_ = simulated_device_count(&reason_);
      if (count_ == 0) return;
      try {
        selection_.choose(count_);
      } catch (const DeviceError& e) {
        reason_ = e.what();
        count_ = 0;
      }
    });
    if (count_ == 0 && reason != nullptr) *reason = reason_;
    return count_;
  }
  std::string device_name(int) override { return kName; }
  int current_device() override { return device_count(nullptr) > 0 ? selection_.device() : 0; }
  std::string device_source() override { return selection_.source(); }
  void set_device(int index) override {
    device_count(nullptr);
    selection_.set(index);
  }
  void check_device_pointer(const void* ptr, size_t nbytes, const char* what) override {
    if (ptr == nullptr && nbytes == 0) return;
    if (arena_.contains(ptr, nbytes)) return;
    throw DeviceError(str(what, ": handed ", ptr, " (", nbytes,
                          " bytes), which is not memory of the CUDA device (", kName,
                          "): host code passed a CPU pointer where a GPU needs device memory. "
                          "Copy the data to the device first (.cuda(), Note [Host-run device "
                          "arena] in cuda/runtime_host.cc)"));
  }
  void* malloc(size_t nbytes) override {
    selection_.use();
    if (nbytes > capacity_ - used_) return nullptr;
    void* p = arena_.allocate(nbytes);
    if (p != nullptr) used_ += nbytes;
    return p;
  }
  void free(void* ptr, size_t nbytes) override {
    arena_.free(ptr, nbytes);
    used_ -= nbytes;
  }
  void memcpy(void* dst, const void* src, size_t nbytes, CopyKind kind) override {
    if (nbytes == 0) return;
    if (kind != CopyKind::kDeviceToHost) check_device_pointer(dst, nbytes, "memcpy to the device");
    if (kind != CopyKind::kHostToDevice)
      check_device_pointer(src, nbytes, "memcpy from the device");
    std::memcpy(dst, src, nbytes);
  }
  void synchronize() override {}
  void* stream() override { return nullptr; }
  // Note [Streams and events]: every copy and kernel is done when its call returns.
  void* create_event() override { return new char(0); }
  void destroy_event(void* event) override { delete static_cast<char*>(event); }
  void record_event(void*, void*) override {}
  bool query_event(void*) override { return true; }
  // "Pinned" memory is plain host memory, outside the arena: kernels refuse it as they would
  // refuse any host pointer.
  void* host_alloc(size_t nbytes) override {
    return std::aligned_alloc(kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  void host_free(void* ptr) override { std::free(ptr); }
  void memcpy_async(void* dst, const void* src, size_t nbytes, CopyKind kind) override {
    memcpy(dst, src, nbytes, kind);
  }
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
  // The reservation leaves room for the red zones and the first-fit's fragmentation.
  Arena arena_{capacity_ + capacity_ / 4 + (size_t{1} << 24)};
  const bool reference_blas_ = [] {
    const char* env = std::getenv("MUTAGRAD_HOST_RUN_BLAS");
    return env != nullptr && std::string(env) == "1";
  }();
  std::once_flag init_;
  int count_ = 0;
  std::string reason_;
  DeviceSelection selection_;
  size_t used_ = 0;  // under the caching allocator's lock
};

const bool registered = [] {
  register_runtime(new HostRunRuntime());  // never destroyed: tensors may outlive main
  return true;
}();

}  // namespace
}  // namespace mutagrad::cuda
