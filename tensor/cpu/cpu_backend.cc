// CpuBackend's allocator and its registration for DeviceType::CPU at load time. The kernels
// live in files named after their op family (copy.cc, pointwise.cc, reduce.cc, matmul.cc,
// misc.cc, indexing.cc and index_put.cc over index_loop.h, masked_fill.cc).
#include "tensor/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace mutagrad::cpu {

std::shared_ptr<void> CpuAllocator::allocate(size_t nbytes) {
  // aligned_alloc wants a size that is a multiple of the alignment (and > 0 to be useful).
  size_t rounded =
      (std::max<size_t>(nbytes, 1) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* p = std::aligned_alloc(kCpuAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

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
