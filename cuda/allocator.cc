// The caching allocator. See Note [Caching allocator] in cuda/allocator.h.
#include "cuda/allocator.h"

#include <algorithm>

#include "cuda/cuda.h"

namespace mutagrad::cuda {
namespace {

constexpr size_t kSmallGranule = 512;
constexpr size_t kLargeThreshold = size_t{1} << 20;

std::string mib(int64_t bytes) {
  return str(static_cast<double>(bytes) / (1024.0 * 1024.0), " MiB");
}

}  // namespace

size_t CachingAllocator::round_size(size_t nbytes) {
  nbytes = std::max<size_t>(nbytes, 1);
  if (nbytes < kLargeThreshold) return (nbytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  size_t pow2 = kLargeThreshold;
  while (pow2 * 2 <= nbytes) pow2 *= 2;
  const size_t quarter = pow2 / 4;
  return (nbytes + quarter - 1) / quarter * quarter;  // 1, 1.25, 1.5, 1.75 or 2 times pow2
}

std::shared_ptr<void> CachingAllocator::allocate(size_t nbytes) {
  const size_t size = round_size(nbytes);
  void* ptr = allocate_raw(nbytes);
  return std::shared_ptr<void>(ptr, [this, size](void* p) { release(p, size); });
}

void* CachingAllocator::allocate_raw(size_t nbytes) {
  check_available();
  const size_t size = round_size(nbytes);
  void* ptr = nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = free_blocks_.find(size);
  if (it != free_blocks_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
  } else {
    ptr = runtime().malloc(size);
    if (ptr == nullptr) {  // out of memory: give the cache back and try once more
      empty_cache_locked();
      ptr = runtime().malloc(size);
    }
    if (ptr == nullptr) {
      throw OutOfMemoryError(
          str("CUDA out of memory: tried to allocate ", mib(static_cast<int64_t>(nbytes)), " (",
              nbytes, " bytes) on cuda:", runtime().current_device(), " (",
              runtime().device_name(runtime().current_device()), "); ", mib(stats_.allocated),
              " allocated by tensors, ", mib(stats_.reserved - stats_.allocated),
              " cached and already released. Free tensors you no longer need, or use smaller "
              "ones"));
    }
    stats_.reserved += static_cast<int64_t>(size);
  }
  stats_.allocated += static_cast<int64_t>(size);
  stats_.max_allocated = std::max(stats_.max_allocated, stats_.allocated);
  return ptr;
}

void CachingAllocator::free_raw(void* ptr, size_t nbytes) {
  if (ptr != nullptr) release(ptr, round_size(nbytes));
}

void CachingAllocator::release(void* ptr, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_blocks_[size].push_back(ptr);
  stats_.allocated -= static_cast<int64_t>(size);
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.max_allocated = stats_.allocated;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() {
  for (auto& [size, blocks] : free_blocks_) {
    for (void* p : blocks) runtime().free(p, size);
    stats_.reserved -= static_cast<int64_t>(size * blocks.size());
    blocks.clear();
  }
  free_blocks_.clear();
}

CachingAllocator& caching_allocator() {
  static CachingAllocator* allocator = new CachingAllocator();  // never destroyed
  return *allocator;
}

}  // namespace mutagrad::cuda
