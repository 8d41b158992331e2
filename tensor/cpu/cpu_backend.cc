// CpuBackend's allocator (cpu_allocator.cc) and its registration for DeviceType::CPU at load time.
// The kernels live in files named after their op family (copy.cc, pointwise.cc, reduce.cc,
// matmul.cc, misc.cc, indexing.cc and index_put.cc over index_loop.h, masked_fill.cc).
#include "tensor/cpu/cpu_backend.h"

#include "tensor/cpu/cpu_allocator.h"

namespace mutagrad::cpu {

// The caching allocator, or plain aligned_alloc (Note [CPU caching allocator]).
std::shared_ptr<void> CpuAllocator::allocate(size_t nbytes) { return cpu_allocate(nbytes); }

CpuBackend& cpu_backend() {
  static CpuBackend* backend = new CpuBackend();  // never destroyed: tensors may outlive main
  return *backend;
}

namespace {
const bool registered = [] {
  register_backend(DeviceType::CPU, &cpu_backend());
  return true;
}();
}  // namespace

}  // namespace mutagrad::cpu
