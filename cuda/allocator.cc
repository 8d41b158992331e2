// The caching allocator. See Note [Caching allocator] in cuda/allocator.h.
#include "cuda/allocator.h"

#include <algorithm>
#include <string>

#include "cuda/cuda.h"

// The few helpers of the common path (Note [Allocator bookkeeping cost]) are inlined into
// allocate_raw and release: GCC's -O2 left them as calls.
#define MG_HOT_INLINE __attribute__((always_inline)) inline

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

// One cache line each (the hot fields are read on every free and allocate).
struct alignas(64) CachingAllocator::Block {
  char* ptr;
  size_t size;
  bool small;
  bool allocated = false;
  bool deferred = false;  // freed, not merged yet: in a *_deferred_ bin, still in live_
  Block* prev = nullptr;  // neighbours in the segment, by address
  Block* next = nullptr;
  Block* free_prev = nullptr;  // its bin's list while free (not kept in small_deferred_)
  Block* free_next = nullptr;
};

namespace {

size_t bin_of(size_t size, bool small) {
  return small ? size / kMinBlockSize - 1 : std::min<size_t>(size >> 20, 63);
}

}  // namespace

MG_HOT_INLINE size_t CachingAllocator::FreeBins::first_nonempty(size_t i) const {
  if (i >= head.size()) return head.size();
  size_t word = i / 64;
  uint64_t found = bits[word] & (~uint64_t{0} << (i % 64));
  if (found == 0) {
    const uint64_t later = word == 63 ? 0 : summary & (~uint64_t{0} << (word + 1));
    if (later == 0) return head.size();
    word = static_cast<size_t>(__builtin_ctzll(later));
    found = bits[word];
  }
  return word * 64 + static_cast<size_t>(__builtin_ctzll(found));
}

MG_HOT_INLINE size_t CachingAllocator::LiveTable::home(const void* ptr) const {
  // Addresses are multiples of 512: drop those bits, then mix (Fibonacci hashing).
  const uint64_t h = (reinterpret_cast<uintptr_t>(ptr) >> 9) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> shift_);  // the top bits: the best mixed
}

void CachingAllocator::LiveTable::insert(void* ptr, Block* b) {
  if (4 * (count_ + 1) > slots_.size()) {  // grow: rehash into twice the slots
    std::vector<std::pair<void*, Block*>> old(2 * slots_.size());
    old.swap(slots_);
    --shift_;
    count_ = 0;
    for (const auto& [p, block] : old) {
      if (p != nullptr) insert(p, block);
    }
  }
  const size_t mask = slots_.size() - 1;
  size_t i = home(ptr);
  while (slots_[i].first != nullptr) i = (i + 1) & mask;
  slots_[i] = {ptr, b};
  ++count_;
}

MG_HOT_INLINE CachingAllocator::Block* CachingAllocator::LiveTable::find(const void* ptr) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(ptr);; i = (i + 1) & mask) {
    if (slots_[i].first == ptr) return slots_[i].second;
    if (slots_[i].first == nullptr) return nullptr;
  }
}

CachingAllocator::Block* CachingAllocator::LiveTable::take(void* ptr) {
  const size_t mask = slots_.size() - 1;
  size_t i = home(ptr);
  while (slots_[i].first != ptr) {
    if (slots_[i].first == nullptr) return nullptr;
    i = (i + 1) & mask;
  }
  Block* b = slots_[i].second;
  // Backward shift: move up each later entry of the run that may sit at the hole.
  for (size_t j = (i + 1) & mask; slots_[j].first != nullptr; j = (j + 1) & mask) {
    const size_t h = home(slots_[j].first);
    const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);  // h in (i, j]
    if (!stays) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = {nullptr, nullptr};
  --count_;
  return b;
}

MG_HOT_INLINE void CachingAllocator::FreeBins::insert(Block* b, size_t i) {
  b->free_prev = nullptr;
  b->free_next = head[i];
  if (head[i] != nullptr) head[i]->free_prev = b;
  head[i] = b;
  bits[i / 64] |= uint64_t{1} << (i % 64);
  summary |= uint64_t{1} << (i / 64);
}

MG_HOT_INLINE void CachingAllocator::FreeBins::erase(Block* b, size_t i) {
  if (b->free_prev != nullptr) {
    b->free_prev->free_next = b->free_next;
  } else {
    head[i] = b->free_next;
  }
  if (b->free_next != nullptr) b->free_next->free_prev = b->free_prev;
  if (head[i] == nullptr) {
    bits[i / 64] &= ~(uint64_t{1} << (i % 64));
    if (bits[i / 64] == 0) summary &= ~(uint64_t{1} << (i / 64));
  }
}

CachingAllocator::Block* CachingAllocator::FreeBins::best_in(Block* b, size_t size) {
  Block* best = nullptr;
  for (; b != nullptr; b = b->free_next) {
    if (b->size < size) continue;
    if (best == nullptr || b->size < best->size || (b->size == best->size && b->ptr < best->ptr)) {
      best = b;
    }
  }
  return best;
}

CachingAllocator::Block* CachingAllocator::FreeBins::best_fit(size_t size, bool small) const {
  const size_t i = bin_of(size, small);
  if (Block* b = best_in(head[i], size)) return b;  // the request's own bin
  const size_t j = first_nonempty(i + 1);           // else every block of a later bin fits
  return j == head.size() ? nullptr : best_in(head[j], size);
}

MG_HOT_INLINE CachingAllocator::Block* CachingAllocator::FreeBins::exact(size_t size,
                                                                         bool small) const {
  Block* b = head[bin_of(size, small)];  // small: the first block has the size
  while (b != nullptr && b->size != size) b = b->free_next;
  return b;
}

MG_HOT_INLINE void CachingAllocator::pool_insert(Block* b) {
  (b->small ? small_free_ : large_free_).insert(b, bin_of(b->size, b->small));
}

MG_HOT_INLINE void CachingAllocator::pool_erase(Block* b) {
  (b->small ? small_free_ : large_free_).erase(b, bin_of(b->size, b->small));
}

MG_HOT_INLINE void CachingAllocator::FreeBins::push(Block* b, size_t i) {
  b->free_next = head[i];
  head[i] = b;
  bits[i / 64] |= uint64_t{1} << (i % 64);
  summary |= uint64_t{1} << (i / 64);
}

MG_HOT_INLINE void CachingAllocator::FreeBins::pop(size_t i) {
  head[i] = head[i]->free_next;
  if (head[i] == nullptr) {
    bits[i / 64] &= ~(uint64_t{1} << (i % 64));
    if (bits[i / 64] == 0) summary &= ~(uint64_t{1} << (i / 64));
  }
}

MG_HOT_INLINE void CachingAllocator::defer(Block* b) {
  b->deferred = true;
  if (b->small) {
    small_deferred_.push(b, bin_of(b->size, true));
  } else {
    large_deferred_.insert(b, bin_of(b->size, false));
  }
  ++deferred_count_;
}

MG_HOT_INLINE void CachingAllocator::undefer(Block* b) {
  if (b->small) {
    small_deferred_.pop(bin_of(b->size, true));  // b is its stack's top
  } else {
    large_deferred_.erase(b, bin_of(b->size, false));
  }
  b->deferred = false;
  --deferred_count_;
}

void CachingAllocator::merge_into_pool(Block* b) {
  if (b->prev != nullptr && !b->prev->allocated && !b->prev->deferred) {  // the free block before
    Block* p = b->prev;
    pool_erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    drop_block(b);
    b = p;
  }
  if (b->next != nullptr && !b->next->allocated && !b->next->deferred) {  // and the one after
    Block* n = b->next;
    pool_erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    drop_block(n);
  }
  pool_insert(b);
}

void CachingAllocator::coalesce_deferred() {
  for (FreeBins* bins : {&small_deferred_, &large_deferred_}) {
    while (bins->summary != 0) {
      Block* b = bins->head[bins->first_nonempty(0)];
      undefer(b);
      live_.take(b->ptr);
      merge_into_pool(b);
    }
  }
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
  for (Block* b : spare_blocks_) delete b;
}

CachingAllocator::Block* CachingAllocator::new_block() {
  if (spare_blocks_.empty()) return new Block{};
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void CachingAllocator::drop_block(Block* b) { spare_blocks_.push_back(b); }

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
  Block* b = new_block();
  *b = Block{static_cast<char*>(ptr), size, small};
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
  FreeBins& deferred = small ? small_deferred_ : large_deferred_;
  if (Block* d = deferred.exact(size, small)) {  // Note [Deferred merging]: the common path
    undefer(d);
    d->allocated = true;  // still in live_
    stats_.allocated += static_cast<int64_t>(d->size);
    stats_.max_allocated = std::max(stats_.max_allocated, stats_.allocated);
    return d->ptr;
  }
  // Else the best fit among the merged free blocks, else a deferred block that fits.
  Block* b = (small ? small_free_ : large_free_).best_fit(size, small);
  Block* d = nullptr;
  if (b == nullptr && small) {  // the top of the first non-empty stack above the size
    const size_t j = small_deferred_.first_nonempty(bin_of(size, true));
    if (j != small_deferred_.head.size()) d = small_deferred_.head[j];
  } else if (b == nullptr) {
    d = large_deferred_.best_fit(size, false);
  }
  const bool from_deferred = d != nullptr;
  if (from_deferred) {
    b = d;
    undefer(b);
  } else if (b != nullptr) {
    pool_erase(b);
  } else {
    if (deferred_count_ != 0) {  // nothing fits unmerged: merge the deferred blocks, look again
      coalesce_deferred();
      b = (small ? small_free_ : large_free_).best_fit(size, small);
    }
    if (b != nullptr) {
      pool_erase(b);
    } else {
      b = new_segment(size, small);
    }
    if (b == nullptr) {
      throw OutOfMemoryError(str(
          "CUDA out of memory: tried to allocate ", mib(static_cast<int64_t>(nbytes)), " (", nbytes,
          " bytes) on ", source_->device_text(), "; ", mib(stats_.allocated),
          " allocated by tensors, ", mib(stats_.reserved - stats_.allocated),
          " cached and already released. Free tensors you no longer need, or use smaller ones"));
    }
  }
  b->allocated = true;
  const size_t rest = b->size - size;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {  // split: the rest stays free
    Block* r = new_block();
    *r = Block{b->ptr + size, rest, small, false, false, b, b->next};
    if (b->next != nullptr) b->next->prev = r;
    b->next = r;
    b->size = size;
    merge_into_pool(r);  // a deferred block's next neighbour may be free
  }
  if (!from_deferred) live_.insert(b->ptr, b);
  stats_.allocated += static_cast<int64_t>(b->size);
  stats_.max_allocated = std::max(stats_.max_allocated, stats_.allocated);
  return b->ptr;
}

void CachingAllocator::free_raw(void* ptr, size_t /*nbytes*/) {
  if (ptr != nullptr) release(ptr);
}

void CachingAllocator::release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = live_.find(ptr);
  MG_INTERNAL_ASSERT(b != nullptr && b->allocated,
                     "CachingAllocator: freeing a block it did not hand out");
  b->allocated = false;
  stats_.allocated -= static_cast<int64_t>(b->size);
  defer(b);
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
  coalesce_deferred();
  for (auto it = segments_.begin(); it != segments_.end();) {
    Block* b = *it;
    if (b->allocated || b->next != nullptr) {  // a live block, or a split one: stays
      ++it;
      continue;
    }
    pool_erase(b);
    source_->free(b->ptr, b->size);
    stats_.reserved -= static_cast<int64_t>(b->size);
    --stats_.segments;
    ++stats_.device_frees;
    it = segments_.erase(it);
    drop_block(b);
  }
}

std::vector<CachingAllocator::SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<char*, SegmentInfo>> out;
  for (const Block* first : segments_) {
    SegmentInfo s{0, first->small, {}};
    for (const Block* b = first; b != nullptr; b = b->next) {
      s.blocks.push_back(
          {static_cast<size_t>(b->ptr - first->ptr), b->size, b->allocated, b->deferred});
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
