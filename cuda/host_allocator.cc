// The pinned host allocator. See Note [Pinned host blocks] in cuda/host_allocator.h.
#include "cuda/host_allocator.h"

#include "cuda/cuda.h"
#include "cuda/runtime.h"

namespace mutagrad::cuda {
namespace {

constexpr size_t kMinHostBlock = 512;

// The runtime's page-locked memory and its stream's events.
class RuntimeHostMemory final : public HostMemorySource {
 public:
  void* host_alloc(size_t nbytes) override { return runtime().host_alloc(nbytes); }
  void host_free(void* ptr) override { runtime().host_free(ptr); }
  void* record_event() override {
    void* event = runtime().create_event();
    runtime().record_event(event, runtime().stream());
    return event;
  }
  bool query_event(void* event) override { return runtime().query_event(event); }
  void destroy_event(void* event) override { runtime().destroy_event(event); }
};

}  // namespace

CachingHostAllocator::CachingHostAllocator(HostMemorySource* source)
    : source_(source), on_runtime_(source == nullptr) {
  static RuntimeHostMemory* runtime_memory = new RuntimeHostMemory();  // never destroyed
  if (on_runtime_) source_ = runtime_memory;
}

CachingHostAllocator::~CachingHostAllocator() {
  // Only test allocators are destroyed; the process's one lives forever.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [ptr, block] : blocks_) {
    if (block.event != nullptr) source_->destroy_event(block.event);
    source_->host_free(const_cast<char*>(ptr));
  }
}

size_t CachingHostAllocator::round_size(size_t nbytes) {
  size_t size = kMinHostBlock;
  while (size < nbytes) size *= 2;
  return size;
}

std::shared_ptr<void> CachingHostAllocator::allocate(size_t nbytes) {
  void* ptr = allocate_raw(nbytes);
  return std::shared_ptr<void>(ptr, [this](void* p) { release(p); });
}

void* CachingHostAllocator::allocate_raw(size_t nbytes) {
  if (on_runtime_) check_available();
  const size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  process_events_locked();
  const char* ptr = nullptr;
  auto it = free_.lower_bound({size, nullptr});
  if (it != free_.end()) {
    ptr = it->second;
    free_.erase(it);
  } else {
    void* p = source_->host_alloc(size);
    if (p == nullptr) {  // give the cache back and try once more
      empty_cache_locked();
      p = source_->host_alloc(size);
    }
    if (p == nullptr) {
      throw OutOfMemoryError(str("pinned host memory: cannot page-lock ", size, " bytes (", nbytes,
                                 " asked for); ", stats_.allocated,
                                 " bytes are pinned by tensors and staging buffers. Free pinned "
                                 "tensors, or copy without non_blocking"));
    }
    ptr = static_cast<const char*>(p);
    blocks_.emplace(ptr, Block{size});
    stats_.reserved += static_cast<int64_t>(size);
    ++stats_.host_allocs;
  }
  Block& b = blocks_.at(ptr);
  b.allocated = true;
  b.used = false;
  stats_.allocated += static_cast<int64_t>(b.size);
  return const_cast<char*>(ptr);
}

void CachingHostAllocator::free_raw(void* ptr) {
  if (ptr != nullptr) release(ptr);
}

void CachingHostAllocator::release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* p = static_cast<const char*>(ptr);
  auto it = blocks_.find(p);
  MG_INTERNAL_ASSERT(it != blocks_.end() && it->second.allocated,
                     "CachingHostAllocator: freeing a block it did not hand out");
  Block& b = it->second;
  b.allocated = false;
  stats_.allocated -= static_cast<int64_t>(b.size);
  if (b.used) {  // a queued transfer may still touch it: reusable once the stream passed here
    b.event = source_->record_event();
    pending_.push_back(p);
    stats_.pending += static_cast<int64_t>(b.size);
  } else {
    free_.insert({b.size, p});
  }
}

void CachingHostAllocator::record_use(const void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* p = static_cast<const char*>(ptr);
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return;
  --it;
  if (p < it->first + it->second.size && it->second.allocated) it->second.used = true;
}

bool CachingHostAllocator::contains(const void* ptr, size_t nbytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* p = static_cast<const char*>(ptr);
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return false;
  --it;
  return p >= it->first && nbytes <= it->second.size &&
         static_cast<size_t>(p - it->first) <= it->second.size - nbytes;
}

void CachingHostAllocator::process_events_locked() {
  for (size_t k = 0; k < pending_.size();) {
    Block& b = blocks_.at(pending_[k]);
    if (!source_->query_event(b.event)) {
      ++k;
      continue;
    }
    source_->destroy_event(b.event);
    b.event = nullptr;
    b.used = false;
    free_.insert({b.size, pending_[k]});
    stats_.pending -= static_cast<int64_t>(b.size);
    pending_[k] = pending_.back();
    pending_.pop_back();
  }
}

CachingHostAllocator::Stats CachingHostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingHostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  process_events_locked();
  empty_cache_locked();
}

void CachingHostAllocator::empty_cache_locked() {
  for (const auto& [size, ptr] : free_) {
    source_->host_free(const_cast<char*>(ptr));
    blocks_.erase(ptr);
    stats_.reserved -= static_cast<int64_t>(size);
  }
  free_.clear();
}

CachingHostAllocator& host_allocator() {
  static CachingHostAllocator* allocator = new CachingHostAllocator();  // never destroyed
  return *allocator;
}

}  // namespace mutagrad::cuda
