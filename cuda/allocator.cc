// The caching allocator. See Note [Caching allocator] in cuda/allocator.h.
#include "cuda/allocator.h"

#include <algorithm>
#include <string>

#include "cuda/cuda.h"

namespace mutagrad::cuda {
namespace {

constexpr size_t kMinBlockSize = 512;                // every size is a multiple of it
constexpr size_t kSmallSize = size_t{1} << 20;       // the small pool's largest request
constexpr size_t kSmallBuffer = size_t{2} << 20;     // a small segment
constexpr size_t kLargeBuffer = size_t{20} << 20;    // a large segment for requests below ...
constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // ... this; above it, rounded to ...
constexpr size_t kRoundLarge = size_t{2} << 20;      // ... this

std::string mib(int64_t bytes) {
  return str(static_cast<double>(bytes) / (1024.0 * 1024.0), " MiB");
}

// The runtime's memory (the process's device).
class RuntimeSegments final : public SegmentSource {
 public:
  void* malloc(size_t nbytes) override { return runtime().malloc(nbytes); }
  void free(void* ptr, size_t nbytes) override { runtime().free(ptr, nbytes); }
  std::string device_text() override {
    return str("cuda:", runtime().current_device(), " (",
               runtime().device_name(runtime().current_device()), ")");
  }
};

}  // namespace

struct CachingAllocator::Block {
  char* ptr;
  size_t size;
  bool small;
  bool allocated = false;
  Block* prev = nullptr;  // neighbours in the segment, by address
  Block* next = nullptr;
};

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

CachingAllocator::CachingAllocator(SegmentSource* source)
    : source_(source), on_runtime_(source == nullptr) {
  static RuntimeSegments* runtime_segments = new RuntimeSegments();  // never destroyed
  if (on_runtime_) source_ = runtime_segments;
}

CachingAllocator::~CachingAllocator() {
  // Only test allocators are destroyed; the process's one lives forever.
  for (Block* first : segments_) {
    for (Block* b = first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

size_t CachingAllocator::round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

std::shared_ptr<void> CachingAllocator::allocate(size_t nbytes) {
  void* ptr = allocate_raw(nbytes);
  return std::shared_ptr<void>(ptr, [this](void* p) { release(p); });
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t rounded, bool small) {
  SegmentSource& source = *source_;
  size_t size = segment_size(rounded);
  void* ptr = source.malloc(size);
  if (ptr == nullptr) {  // out of memory: give the cache back and try once more
    empty_cache_locked();
    ptr = source.malloc(size);
  }
  if (ptr == nullptr && size != rounded) {  // a nearly full device: exactly the request
    size = rounded;
    ptr = source.malloc(size);
  }
  if (ptr == nullptr) return nullptr;
  Block* b = new Block{static_cast<char*>(ptr), size, small};
  segments_.insert(b);
  stats_.reserved += static_cast<int64_t>(size);
  ++stats_.segments;
  ++stats_.device_mallocs;
  return b;
}

void* CachingAllocator::allocate_raw(size_t nbytes) {
  if (on_runtime_) check_available();
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  std::lock_guard<std::mutex> lock(mutex_);
  Pool& pool = pool_of(small);
  Block key{nullptr, size, small};
  Block* b = nullptr;
  auto it = pool.lower_bound(&key);
  if (it != pool.end()) {
    b = *it;
    pool.erase(it);
  } else {
    b = new_segment(size, small);
    if (b == nullptr) {
      throw OutOfMemoryError(str(
          "CUDA out of memory: tried to allocate ", mib(static_cast<int64_t>(nbytes)), " (", nbytes,
          " bytes) on ", source_->device_text(), "; ", mib(stats_.allocated),
          " allocated by tensors, ", mib(stats_.reserved - stats_.allocated),
          " cached and already released. Free tensors you no longer need, or use smaller ones"));
    }
  }
  const size_t rest = b->size - size;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {  // split: the rest stays free
    Block* r = new Block{b->ptr + size, rest, small, false, b, b->next};
    if (b->next != nullptr) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool.insert(r);
  }
  b->allocated = true;
  live_.emplace(b->ptr, b);
  stats_.allocated += static_cast<int64_t>(b->size);
  stats_.max_allocated = std::max(stats_.max_allocated, stats_.allocated);
  return b->ptr;
}

void CachingAllocator::free_raw(void* ptr, size_t /*nbytes*/) {
  if (ptr != nullptr) release(ptr);
}

void CachingAllocator::release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  MG_INTERNAL_ASSERT(it != live_.end(), "CachingAllocator: freeing a block it did not hand out");
  Block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  stats_.allocated -= static_cast<int64_t>(b->size);
  Pool& pool = pool_of(b->small);
  if (b->prev != nullptr && !b->prev->allocated) {  // merge into the free block before
    Block* p = b->prev;
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    delete b;
    b = p;
  }
  if (b->next != nullptr && !b->next->allocated) {  // and absorb the free block after
    Block* n = b->next;
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    delete n;
  }
  pool.insert(b);
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
  for (auto it = segments_.begin(); it != segments_.end();) {
    Block* b = *it;
    if (b->allocated || b->next != nullptr) {  // a live block, or a split one: stays
      ++it;
      continue;
    }
    pool_of(b->small).erase(b);
    source_->free(b->ptr, b->size);
    stats_.reserved -= static_cast<int64_t>(b->size);
    --stats_.segments;
    ++stats_.device_frees;
    it = segments_.erase(it);
    delete b;
  }
}

std::vector<CachingAllocator::SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<char*, SegmentInfo>> out;
  for (const Block* first : segments_) {
    SegmentInfo s{0, first->small, {}};
    for (const Block* b = first; b != nullptr; b = b->next) {
      s.blocks.push_back({static_cast<size_t>(b->ptr - first->ptr), b->size, b->allocated});
      s.size += b->size;
    }
    out.emplace_back(first->ptr, std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SegmentInfo> result;
  for (auto& [ptr, s] : out) result.push_back(std::move(s));
  return result;
}

CachingAllocator& caching_allocator() {
  static CachingAllocator* allocator = new CachingAllocator();  // never destroyed
  return *allocator;
}

}  // namespace mutagrad::cuda
