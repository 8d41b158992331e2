// CPU kernels of the writes of the indexing family (index_put_kernel and
// index_put_checked_kernel: tensor/cpu/indexing.h): x[idx] = v, x[idx] += v and the scatters,
// index_add_, index_copy_ and put_ that native lowers to them.
//
// Note [Deterministic index_put_ on the CPU]
// A kernel loops over the indexed shape R (the shape of self[indices]) in row-major order; for
// a destination element, row-major order over R is index order. Threads never share a
// destination element: when R has a dim that is sliced whole (not indexed), the threads split
// that dim (distinct coordinates there are distinct elements of a tensor without internal
// overlap); otherwise, into a destination beyond L2, the writes are sorted by destination block
// first and each thread replays whole blocks (Note [Partitioned scatter]), or, without
// accumulate into one that fits in the shared cache, the earlier writes skip the destinations
// of the later ones (Note [Earlier writes skip later destinations]). Either way each element is
// written by one thread, in index order, so "last occurrence wins" and the accumulation order
// do not depend on the thread count.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tensor/blocked_order.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/index_loop.h"
#include "tensor/cpu/indexing.h"
#include "tensor/cpu/parallel.h"
#include "tensor/element_math.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::cpu {
namespace {

using namespace index_loop;  // the loop these kernels share with the gathers

// Note [Partitioned scatter]
// A random write into a destination beyond L2 waits on the line it writes (1M int64 indices
// into 4M float32: about 5 ms on one core here), and two threads that each scan every index but
// write only their own half of the destination do no better (each still misses once per own
// write). So with every dim of R an index dim, the writes are first sorted into blocks of the
// destination that fit in L2, as a counting sort that keeps index order within a block:
//   1. each thread counts, over its part of R (in order), the writes that land in each block;
//   2. prefix sums give each (block, thread) pair its slot: a block's slots hold thread 0's
//      writes, then thread 1's, ..., so index order within a block is R's order;
//   3. each thread copies its part's (offset in block, value) pairs into those slots;
//   4. the threads split the blocks and replay each block's pairs in order, in cache.
// Every destination element is then written by one thread, in index order: last-wins and the
// order of accumulation are those of one thread walking R (bitwise the same for any thread
// count: Note [Deterministic index_put_ on the CPU]). The price is one more pass over the
// indices and 8 bytes per write (float32) of temporary memory. On an Intel Xeon VM (2 threads,
// 1M into 4M float32) this took 6.15-7.5 ms, libtorch 1.13 4.9-7.2 ms in the same runs;
// per-(thread, block) std::vector buckets and a bitmap of later threads' destinations were
// slower (docs/performance/indexing.md, with later designs).
constexpr int64_t kBlockBytes = int64_t{1} << 19;

// Passes 1 and 2 of Note [Partitioned scatter] (they depend on no element type): the number of
// writes of each thread's part of `plain` into each block of 2^shift elements from lo, turned
// into each (thread, block)'s first slot (`slot`, thread-major) and each block's first slot.
// d[k] = combine(d[k], v[k]) for k < n: vectorized (Note [Whole rows]); d and v never overlap.
template <typename T, typename Combine>
MG_VECTORIZE void combine_row(T* __restrict d, const T* __restrict v, int64_t n, Combine combine) {
  for (int64_t k = 0; k < n; ++k) d[k] = combine(d[k], v[k]);
}

// Note [Blocked accumulation on the CPU]
// An accumulating write folds each destination's values in the order of Note [Blocked
// accumulation order] (tensor/blocked_order.h), which is index order for a destination with at
// most kBlock values. Counting every destination's values would cost a pass and a counter per
// element, so a sketch bounds them: the writes are counted per bucket of a hash of their
// destination (a destination's count is at most its bucket's). With no bucket above kBlock,
// every kernel below folds in index order, which is the blocked order. Only a write of more than
// kBlock values can fill a bucket. The partition counts the buckets in its counting pass, before
// it writes; the paths that write from one thread (per part) count as they write (Note
// [Counting while writing]); a self with overlapping memory counts in a pass of its own. Where
// a bucket is full, heavy_put runs: one thread in index order, destinations of full buckets
// keeping their rank and open block's partial in a small table, flushed into the destination at
// each block's end and at the end of the write. Rows sorted by destination know each row's
// count and fold its blocks directly. Only floating sums and products (blocked::order_matters)
// need any of this.
struct Sketch {
  int bits = 0;  // 2^bits buckets; 0: no sketch
  std::vector<uint32_t> counts;
  explicit Sketch(int64_t total) {
    bits = 10;  // about 256 writes per bucket: a full one is rare unless a destination is
    while (bits < 20 && (int64_t{1} << bits) * 256 < total) ++bits;
  }
  size_t size() const { return size_t{1} << bits; }
  size_t bucket(int64_t s) const { return bucket_at(s, 64 - bits); }
  // The bucket of s with `shift` = 64 - bits: a loop keeps the shift in a register (a bits
  // member read through a reference is reloaded after every increment: an int may alias the
  // uint32_t counts).
  static size_t bucket_at(int64_t s, int shift) {
    return static_cast<size_t>((static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ull) >> shift);
  }
  // Whether some bucket holds more than kBlock writes (counts: `parts` arrays summed).
  bool full(int parts) {
    bool any = false;
    for (size_t i = 0; i < size(); ++i) {
      uint32_t c = counts[i];
      for (int t = 1; t < parts; ++t) c += counts[static_cast<size_t>(t) * size() + i];
      counts[i] = c;
      any |= c > blocked::kBlock;
    }
    return any;
  }
};

void count_block_slots(const Loop& plain, int64_t total, int nthreads, int64_t lo, int shift,
                       size_t nb, std::vector<int64_t>& slot, std::vector<int64_t>& block_start,
                       Sketch* sketch = nullptr) {
  slot.assign(static_cast<size_t>(nthreads) * nb, 0);
  if (sketch != nullptr) sketch->counts.assign(static_cast<size_t>(nthreads) * sketch->size(), 0);
  run_parallel(nthreads, [&](int t) {
    auto [a, b] = part(total, t, nthreads);
    int64_t* count = slot.data() + static_cast<size_t>(t) * nb;
    if (sketch != nullptr) {
      uint32_t* bucket = sketch->counts.data() + static_cast<size_t>(t) * sketch->size();
      const int bucket_shift = 64 - sketch->bits;
      run(plain, a, b, [count, bucket, bucket_shift, lo, shift](int64_t s, int64_t) {
        ++count[(s - lo) >> shift];
        ++bucket[Sketch::bucket_at(s, bucket_shift)];
      });
      return;
    }
    run(plain, a, b, [count, lo, shift](int64_t s, int64_t) { ++count[(s - lo) >> shift]; });
  });
  block_start.assign(nb + 1, 0);
  int64_t at = 0;
  for (size_t blk = 0; blk < nb; ++blk) {
    block_start[blk] = at;
    for (size_t t = 0; t < static_cast<size_t>(nthreads); ++t) {
      const int64_t n = slot[t * nb + blk];
      slot[t * nb + blk] = at;
      at += n;
    }
  }
  block_start[nb] = at;
}

// False, before writing anything, when `sketch` (given where the accumulation order matters)
// finds a bucket above kBlock: heavy_put's case (Note [Blocked accumulation on the CPU]).
template <typename T, bool kAccumulate, typename Combine>
bool partitioned_put(T* d, const T* v, const Loop& loop, int64_t total, int64_t lo, int64_t hi,
                     int nthreads, Combine combine, Sketch* sketch) {
  int shift = 0;
  while ((int64_t{1} << (shift + 1)) * static_cast<int64_t>(sizeof(T)) <= kBlockBytes) ++shift;
  // No more blocks than total / 8: the counts stay small next to the writes.
  // (An offset within a block is kept in 32 bits.)
  while (shift < 32 && ((hi - lo) >> shift) + 1 > std::max<int64_t>(1, total / 8)) ++shift;
  const size_t nb = static_cast<size_t>(((hi - lo) >> shift) + 1);
  Loop plain = loop;
  plain.prefetch = nullptr;  // the counting and copying passes touch no destination
  std::vector<int64_t> slot, block_start;
  count_block_slots(plain, total, nthreads, lo, shift, nb, slot, block_start, sketch);
  if (sketch != nullptr && sketch->full(nthreads)) return false;
  // One stream of (offset in block, value) pairs per block and thread, in one array.
  struct Entry {
    uint32_t at;
    T value;
  };
  std::unique_ptr<Entry[]> entries(new Entry[static_cast<size_t>(total)]);
  run_parallel(nthreads, [&](int t) {
    auto [a, b] = part(total, t, nthreads);
    int64_t* next = slot.data() + static_cast<size_t>(t) * nb;
    Entry* e = entries.get();
    run(plain, a, b, [next, e, v, lo, shift](int64_t s, int64_t o) {
      const int64_t rel = s - lo;
      Entry& entry = e[next[rel >> shift]++];
      entry.at = static_cast<uint32_t>(rel & ((int64_t{1} << shift) - 1));
      entry.value = v[o];
    });
  });
  run_parallel(nthreads, [&](int t) {
    // Blocks split by their writes, so the threads share the work evenly.
    const int64_t first_write = total * t / nthreads;
    const int64_t last_write = total * (t + 1) / nthreads;
    const Entry* e = entries.get();
    for (size_t blk = 0; blk < nb; ++blk) {
      const int64_t begin = block_start[blk];
      if (begin < first_write || begin >= last_write) continue;  // the block's owner: its start
      T* base = d + lo + (static_cast<int64_t>(blk) << shift);
      const int64_t end = block_start[blk + 1];
      // Bring the block in as a stream (the hardware prefetcher follows it) before its random
      // writes, which then hit.
      const int64_t block_end = std::min<int64_t>(
          int64_t{1} << shift, hi - lo + 1 - (static_cast<int64_t>(blk) << shift));
      const char* bytes = reinterpret_cast<const char*>(base);
      for (int64_t off = 0; off < block_end * static_cast<int64_t>(sizeof(T)); off += 64) {
        __builtin_prefetch(bytes + off, 1);
      }
      if constexpr (kAccumulate) {
        for (int64_t k = begin; k < end; ++k) base[e[k].at] = combine(base[e[k].at], e[k].value);
      } else {
        for (int64_t k = begin; k < end; ++k) base[e[k].at] = e[k].value;
      }
    }
  });
  return true;
}

// Note [Blocked accumulation on the CPU]: one thread, index order, the destinations of full
// buckets folded in blocks.
template <typename T, typename Combine>
struct HeavyTable {
  struct Entry {
    int64_t s = -1;  // the destination's offset; -1: a free slot
    int64_t rank = 0;
    T partial{};
  };
  std::vector<Entry> slots = std::vector<Entry>(64);
  size_t used = 0;
  Entry* last = nullptr;
  Entry& find(int64_t s) {
    if (last != nullptr && last->s == s) return *last;
    if (4 * (used + 1) > slots.size()) {
      std::vector<Entry> old(2 * slots.size());
      old.swap(slots);
      used = 0;
      last = nullptr;
      for (const Entry& e : old) {
        if (e.s >= 0) find(e.s) = e;
      }
    }
    const size_t mask = slots.size() - 1;
    size_t i = static_cast<size_t>((static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ull) >> 40) & mask;
    while (slots[i].s >= 0 && slots[i].s != s) i = (i + 1) & mask;
    if (slots[i].s < 0) {
      slots[i].s = s;
      ++used;
    }
    return *(last = &slots[i]);
  }
};

template <typename T, typename Combine>
struct HeavyOp {
  T* d;
  const T* v;
  Combine combine;
  const Sketch* sketch;
  HeavyTable<T, Combine>* table;
  void operator()(int64_t s, int64_t o) const {
    if (sketch->counts[sketch->bucket(s)] <= blocked::kBlock) {
      d[s] = combine(d[s], v[o]);
      return;
    }
    auto& e = table->find(s);
    const int64_t r = e.rank++;
    const int64_t in_block = r % blocked::kBlock;
    if (r < blocked::kBlock) {
      d[s] = combine(d[s], v[o]);
    } else if (in_block == 0) {
      e.partial = v[o];
    } else {
      e.partial = combine(e.partial, v[o]);
    }
    if (r >= blocked::kBlock && in_block == blocked::kBlock - 1) d[s] = combine(d[s], e.partial);
  }
};

// `sketch` counted every write (Sketch::full). Wrap: as index_put_typed's.
template <typename T, typename Wrap, typename Combine>
bool heavy_put(T* d, const T* v, const Loop& loop, int64_t total, Combine combine,
               const Sketch& sketch) {
  HeavyTable<T, Combine> table;
  Wrap wrap;
  run(loop, 0, total, HeavyOp<T, Combine>{d, v, combine, &sketch, &table}, wrap);
  for (const auto& e : table.slots) {  // the open blocks
    if (e.s >= 0 && e.rank > blocked::kBlock && e.rank % blocked::kBlock != 0) {
      d[e.s] = combine(d[e.s], e.partial);
    }
  }
  return !wrap.bad;
}

// Whether some destination may take more than kBlock of the writes: their sketch, counted in a
// pass of its own (Note [Blocked accumulation on the CPU]). Wrap: values not screened are
// hashed as they are (an out-of-range one is refused by the write's own pass).
bool sketch_full(const Loop& loop, int64_t total, Sketch& sketch) {
  sketch.counts.assign(sketch.size(), 0);
  Loop plain = loop;
  plain.prefetch = nullptr;
  uint32_t* bucket = sketch.counts.data();
  const int shift = 64 - sketch.bits;
  run(plain, 0, total,
      [bucket, shift](int64_t s, int64_t) { ++bucket[Sketch::bucket_at(s, shift)]; });
  return sketch.full(1);
}

// Note [Counting while writing]
// A pass of its own to fill the sketch cost as much as a write into a destination in cache
// (scatter_add_ of 1M values into 64K: twice the time). So the paths that write from one thread
// per part of a self without overlap count as they write: each call of the op (an element, or a
// whole row: Note [Whole rows]; rows of one start cover the same elements) adds one to the
// bucket of its start, and writes while the bucket holds at most kBlock calls: then its start's
// rank is below kBlock, in the first block, folded in index order as the blocked order does.
// A call into a fuller bucket is kept, in order, instead of written. Only if some were kept
// (a destination with many values, or a rare full bucket), a second pass replays the buckets'
// counts to find how many calls each kept start had written, and the kept calls continue from
// there in the blocked order. Without long runs the cost is an increment in L1 per call.
template <typename T>
struct Deferred {
  int64_t s, o, n;
};

template <typename T, typename Combine>
struct CountingPutOp {
  T* d;
  const T* v;
  Combine combine;
  uint32_t* bucket;
  int shift;  // 64 - Sketch::bits, held in the op (a register) rather than read per call
  std::vector<Deferred<T>>* kept;
  uint32_t& count(int64_t s) const { return bucket[Sketch::bucket_at(s, shift)]; }
  void row(int64_t s, int64_t o, int64_t n) const {
    if (++count(s) <= blocked::kBlock) {
      combine_row(d + s, v + o, n, combine);
    } else {
      kept->push_back({s, o, n});
    }
  }
  void operator()(int64_t s, int64_t o) const {
    if (++count(s) <= blocked::kBlock) {
      d[s] = combine(d[s], v[o]);
    } else {
      kept->push_back({s, o, 1});
    }
  }
};

// The rank each start of a full bucket had reached when its bucket filled (the second pass).
struct ReplayOp {
  uint32_t* bucket;
  const uint32_t* full;
  const Sketch* sketch;
  std::unordered_map<int64_t, int64_t>* written;
  void row(int64_t s, int64_t, int64_t) const { (*this)(s, 0); }
  void operator()(int64_t s, int64_t) const {
    const size_t b = sketch->bucket(s);
    if (full[b] > blocked::kBlock && ++bucket[b] <= blocked::kBlock) ++(*written)[s];
  }
};

// `loop` on one thread (a self without overlap): Note [Counting while writing].
template <typename T, typename Wrap, typename Combine>
bool counting_put(T* d, const T* v, const Loop& loop, int64_t total, Combine combine) {
  Sketch sketch(total);
  sketch.counts.assign(sketch.size(), 0);
  std::vector<Deferred<T>> kept;
  Wrap wrap;
  run(loop, 0, total,
      CountingPutOp<T, Combine>{d, v, combine, sketch.counts.data(), 64 - sketch.bits, &kept},
      wrap);
  if (wrap.bad || kept.empty()) return !wrap.bad;
  std::vector<uint32_t> replay(sketch.size(), 0);
  std::unordered_map<int64_t, int64_t> written;
  run(loop, 0, total, ReplayOp{replay.data(), sketch.counts.data(), &sketch, &written});
  struct State {
    int64_t rank = 0;
    std::vector<T> partial;
  };
  std::unordered_map<int64_t, State> states;
  int64_t last_s = -1;
  State* last = nullptr;
  for (const Deferred<T>& k : kept) {
    if (k.s != last_s) {
      auto [it, fresh] = states.try_emplace(k.s);
      if (fresh) {
        const auto w = written.find(k.s);
        it->second.rank = w == written.end() ? 0 : w->second;
        it->second.partial.resize(static_cast<size_t>(k.n));
      }
      last_s = k.s;
      last = &it->second;
    }
    const int64_t r = last->rank++;
    const int64_t in_block = r % blocked::kBlock;
    T* p = last->partial.data();
    if (r < blocked::kBlock) {
      combine_row(d + k.s, v + k.o, k.n, combine);
    } else if (in_block == 0) {
      std::copy(v + k.o, v + k.o + k.n, p);
    } else {
      combine_row(p, v + k.o, k.n, combine);
    }
    if (r >= blocked::kBlock && in_block == blocked::kBlock - 1)
      combine_row(d + k.s, p, k.n, combine);
  }
  for (auto& [at, st] : states) {  // the open blocks
    if (st.rank > blocked::kBlock && st.rank % blocked::kBlock != 0) {
      combine_row(d + at, st.partial.data(), static_cast<int64_t>(st.partial.size()), combine);
    }
  }
  return true;
}

// Note [Copies into the shared cache]
// The partition (Note [Partitioned scatter]) pays for two extra passes and 8 bytes per write
// where a random write waits on memory. Into a destination that fits in the last-level cache
// (1M values into 4M float32, 16 MiB, on a VM with 32 MiB of L3) a write waits on L3 only: one
// thread writing in index order, without the prefetch, took 1.75-1.85 ms where the partition
// took 1.77-2.28 ms when the VM was quiet, and 1.85-1.92 ms against 2.67-3.36 ms while other
// tenants loaded it (libtorch 1.13's racy writes from two threads: 1.26-1.63 and 1.51-2.16 ms
// in the same runs), using one core and no temporary memory. Two threads that each walk every
// index and write their own half did no better than one (docs/performance/indexing.md). So a write
// without accumulate into a destination of at most half that cache (shared_cache_bytes in
// tensor/cpu/parallel.h) skips the partition and its prefetch: one thread writes in index
// order, or two split the writes as Note [Earlier writes skip later destinations] says. An
// accumulating write keeps the partition.

// The write of one element (self offset s, value offset o), and of a whole row (Note [Whole
// rows]).
template <typename T, bool kAccumulate, typename Combine>
struct PutOp {
  T* d;
  const T* v;
  Combine combine;
  void operator()(int64_t s, int64_t o) const {
    if constexpr (kAccumulate) {
      d[s] = combine(d[s], v[o]);
    } else {
      d[s] = v[o];
    }
  }
  void row(int64_t s, int64_t o, int64_t n) const {
    if constexpr (kAccumulate) {
      combine_row(d + s, v + o, n, combine);
    } else {
      std::memcpy(d + s, v + o, static_cast<size_t>(n) * sizeof(T));
    }
  }
};

// Note [Counting beside the write]
// Counting while writing (above) put a bucket increment beside every write: scatter_add_ of 1M
// float32 values into 64K, one thread, 2.39-2.81 ms against 1.64-2.24 ms for the plain write.
// With a second thread, a dense destination that fits in L2 takes the plain write in index
// order on one thread while the other fills the sketch in a pass of its own; the destination's
// old values are kept first (a copy of at most kPrefetchBytes). No bucket above kBlock: the
// plain write was the blocked order. Otherwise (an all-equal index, one hot destination) the old
// values go back and heavy_put writes. Either way the bits of Note [Blocked accumulation order].
template <typename T, typename Wrap, typename Combine>
bool put_counting_beside(T* d, const T* v, const Loop& loop, int64_t total, int64_t lo, int64_t hi,
                         Combine combine) {
  const size_t span = static_cast<size_t>(hi - lo + 1);
  std::unique_ptr<T[]> before(new T[span]);
  std::copy(d + lo, d + hi + 1, before.get());
  Sketch sketch(total);
  bool bad = false, full = false;
  run_parallel(2, [&](int t) {
    if (t == 1) {
      full = sketch_full(loop, total, sketch);
      return;
    }
    Wrap wrap;
    run(loop, 0, total, PutOp<T, true, Combine>{d, v, combine}, wrap);
    bad = wrap.bad;
  });
  if (bad) return false;  // Checked: the caller drops the copy (Note [Staged writes])
  if (!full) return true;
  std::copy(before.get(), before.get() + span, d + lo);
  return heavy_put<T, Wrap>(d, v, loop, total, combine, sketch);
}

// Note [Earlier writes skip later destinations]
// One thread writing in index order leaves the second core idle; two threads writing halves
// race where the halves share a destination (libtorch 1.13's writes: either value may win).
// Here the writes R[0, cut) and R[cut, total) split between two threads that share no
// destination element: thread 1 writes the later part at once; thread 0 first marks the later
// part's destinations in a bitmap over the destination's span (512 KiB for 4M elements: it
// stays in L2), then writes the earlier part, storing to a dummy instead where a later write
// lands (a select, not a branch: the hits are random). So each element is written by one
// thread, and the write that stays is its last in index order: the bits of one thread walking
// R, for any thread count. Thread 0 also reads the later part's indices, so it takes the
// smaller share (3/10 measured best of 2/10-4/10). 1M into 4M float32, AMD EPYC VM, medians of
// 8 repetitions: one thread 1.73-1.83 ms, the two parts 1.30-1.34 ms, libtorch 1.13's racy
// halves 1.31-1.45 ms in the same runs (docs/performance/indexing.md, issue 12).
constexpr int64_t kEarlierShareTenths = 3;

// The write of one element of the earlier part: to a dummy where a later write lands.
template <typename T>
struct SkipLaterOp {
  T* d;
  const T* v;
  const uint64_t* later;
  int64_t lo;
  T* dummy;
  void operator()(int64_t s, int64_t o) const {
    const uint64_t bit = static_cast<uint64_t>(s - lo);
    const bool skip = (later[bit >> 6] >> (bit & 63)) & 1;
    *(skip ? dummy : d + s) = v[o];
  }
};

template <typename T, typename Wrap>
bool two_part_put(T* d, const T* v, const Loop& loop, int64_t total, int64_t lo, int64_t hi) {
  const int64_t cut = total * kEarlierShareTenths / 10;
  const size_t words = static_cast<size_t>((hi - lo) / 64 + 1);
  std::unique_ptr<uint64_t[]> later(new uint64_t[words]);
  std::atomic<bool> bad{false};
  run_parallel(2, [&](int t) {
    Wrap wrap;
    if (t == 1) {
      run(loop, cut, total, PutOp<T, false, math::AddValues>{d, v, {}}, wrap);
    } else {
      uint64_t* bits = later.get();
      std::memset(bits, 0, words * sizeof(uint64_t));
      run(
          loop, cut, total,
          [bits, lo](int64_t s, int64_t) {
            const uint64_t bit = static_cast<uint64_t>(s - lo);
            bits[bit >> 6] |= uint64_t{1} << (bit & 63);
          },
          wrap);
      T dummy;
      if (!wrap.bad) run(loop, 0, cut, SkipLaterOp<T>{d, v, bits, lo, &dummy}, wrap);
    }
    if (wrap.bad) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load(std::memory_order_relaxed);
}

// Note [Rows sorted by destination]
// index_add_ of many rows into a table beyond L2 (1M rows of 64 float32 into 100000 rows: each
// table row is hit about ten times) waited on the table: every write read its row from memory
// and wrote it back, 512 MiB of traffic for a 25 MiB table, with the row prefetch holding the
// line fill buffers. So when every run is one whole contiguous row picked by one index value,
// the table exceeds L2 and the values cover it at least once, the writes are first grouped by
// destination row with a stable counting sort (index order kept within a row); then each
// destination row is read once, gets its values combined in index order while it stays in L1,
// and is written once, and the threads split the destination rows. Each element is combined in
// index order: the bits are the element loop's, for any thread count. PyTorch 2.x sorts too
// (a radix sort, cpu_scatter_reduce_expanded_index).
constexpr int64_t kAheadEntries = 4;  // value rows requested ahead of their combine

// Whether `loop` is whole rows as above (a 2-D loop: the index dim, then the row).
bool whole_rows_beyond_l2(const Loop& loop, int64_t element_size) {
  if (loop.idx.size() != 1 || loop.sizes.size() != 2) return false;
  const IndexOperand& ix = loop.idx[0];
  if (loop.is_index_dim[0] == 0 || loop.is_index_dim[1] != 0 || ix.strides[1] != 0 ||
      loop.self_strides[1] != 1 || loop.dense_strides[1] != 1) {
    return false;
  }
  const int64_t row_bytes = loop.sizes[1] * element_size;
  const int64_t table_bytes = ix.bounds.size * row_bytes;
  return row_bytes >= 64 && table_bytes > kPrefetchBytes &&
         loop.sizes[0] * row_bytes >= table_bytes;
}

// The m value rows at v + order[k] * v_step (k < m) folded into `row` in the order of Note
// [Blocked accumulation order]: the first kBlock in order, then each block's partial row.
template <typename T, typename Combine>
void blocked_rows(T* row, const T* v, const int64_t* order, int64_t m, int64_t v_step,
                  int64_t width, Combine combine) {
  std::vector<T> partial(static_cast<size_t>(width));
  for (int64_t b = 0; b < m; b += blocked::kBlock) {
    const int64_t e = std::min(m, b + blocked::kBlock);
    T* into = row;
    if (b > 0) {
      std::copy(v + order[b] * v_step, v + order[b] * v_step + width, partial.begin());
      into = partial.data();
    }
    for (int64_t k = b > 0 ? b + 1 : b; k < e; ++k) {
      combine_row(into, v + order[k] * v_step, width, combine);
    }
    if (b > 0) combine_row(row, partial.data(), width, combine);
  }
}

template <typename T, typename Combine>
void rows_sorted_by_destination(T* d, const T* v, const Loop& loop, int nthreads, Combine combine) {
  const IndexOperand& ix = loop.idx[0];
  const int64_t n = loop.sizes[0];
  const int64_t width = loop.sizes[1];
  const int64_t rows = ix.bounds.size;
  const int64_t i_step = ix.strides[0];
  auto row_of = [&](int64_t i) {
    const int64_t r = ix.data[i * i_step];
    return r < 0 ? r + rows : r;  // screened: in [-rows, rows)
  };
  // start[r]: the first entry of row r in `order` (a stable counting sort).
  std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++start[static_cast<size_t>(row_of(i)) + 1];
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) start[r + 1] += start[r];
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  std::unique_ptr<int64_t[]> order(new int64_t[static_cast<size_t>(n)]);
  for (int64_t i = 0; i < n; ++i) order[next[static_cast<size_t>(row_of(i))]++] = i;
  const int64_t v_step = loop.dense_strides[0];
  const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
  run_parallel(nthreads, [&](int t) {
    // The rows whose first entry falls in this thread's share of the entries.
    auto first_row = [&](int u) {
      const int64_t entry = n * u / nthreads;
      return std::lower_bound(start.begin(), start.end() - 1, entry) - start.begin();
    };
    const int64_t rb = t == 0 ? 0 : first_row(t);
    const int64_t re = t + 1 == nthreads ? rows : first_row(t + 1);
    for (int64_t r = rb; r < re; ++r) {
      const int64_t a = start[static_cast<size_t>(r)];
      const int64_t b = start[static_cast<size_t>(r) + 1];
      T* row = d + loop.self_base + r * ix.stride;
      if constexpr (blocked::order_matters<T, Combine>()) {
        if (b - a > blocked::kBlock) {  // Note [Blocked accumulation on the CPU]
          blocked_rows(row, v + loop.dense_base, order.get() + a, b - a, v_step, width, combine);
          continue;
        }
      }
      for (int64_t j = a; j < b; ++j) {
        if (j + kAheadEntries < n) {
          const char* ahead = reinterpret_cast<const char*>(
              v + loop.dense_base + order[static_cast<size_t>(j + kAheadEntries)] * v_step);
          for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(ahead + off, 0);
        }
        combine_row(row, v + loop.dense_base + order[static_cast<size_t>(j)] * v_step, width,
                    combine);
      }
    }
  });
}

// Whether every index value of `loop` lies in its bounds: a pass of its own, for the paths of
// a Checked write that read the indices before writing (Note [Staged writes]).
bool all_in_range(const Loop& loop, int64_t total) {
  Loop plain = loop;
  plain.prefetch = nullptr;
  Checked checked;
  run(
      plain, 0, total, [](int64_t, int64_t) {}, checked);
  return !checked.bad;
}

// Note [Rows named by a coordinate]
// A scatter along dim 1 of a [1024, 4096] tensor is index_put_ with the index list {c_0,
// index} (Note [Deterministic scatter] in autograd/ops/scatter_ops.cc): every loop dim is an
// index dim, so no sliced dim could be split between threads, and the writes took the
// partition or the two-part write: scatter_ 0.73-1.10 ms and scatter_add_ 1.10-1.75 ms for
// 1024 values into each row, where libtorch 1.13, whose threads split the rows, took 0.21-0.51
// and 0.31-0.94 ms in the same runs (AMD EPYC VM). But c_0
// is arange(1024) along loop dim 0: where it sits, a loop coordinate k always writes
// coordinate k along c_0's dim of self, so two loop coordinates never share a destination
// element and the threads can split that loop dim as they split a sliced one. An operand is
// such a coordinate when it varies along one loop dim only and its values there are exactly 0,
// 1, ..., size - 1 (read here: size values), all inside self's dim. Each thread writes its
// rows in index order: the bits of one thread walking R. Now 0.40 and 0.45 ms
// (BM_Scatter2DAlongDim1, docs/performance/indexing.md).

// The loop dim (the largest) on which an index operand is the coordinate 0, 1, ..., size - 1
// (Note [Rows named by a coordinate]), or -1.
int64_t coordinate_dim(const Loop& loop) {
  int64_t best = -1;
  for (const IndexOperand& ix : loop.idx) {
    int64_t dim = -1;
    for (size_t r = 0; r < loop.sizes.size(); ++r) {
      if (ix.strides[r] == 0 || loop.sizes[r] < 2) continue;
      if (dim >= 0) {
        dim = -1;  // varies along two dims
        break;
      }
      dim = static_cast<int64_t>(r);
    }
    if (dim < 0) continue;
    const size_t r = static_cast<size_t>(dim);
    const int64_t n = loop.sizes[r];
    if (n > ix.bounds.size) continue;
    bool identity = true;
    for (int64_t k = 0; k < n && identity; ++k) identity = ix.data[k * ix.strides[r]] == k;
    if (identity && (best < 0 || n > loop.sizes[static_cast<size_t>(best)])) best = dim;
  }
  return best;
}

// Note [Short runs need no counting]
// The blocked order (Note [Blocked accumulation order]) is index order for a destination with at
// most kBlock values, so a write whose every destination element gets at most kBlock values needs
// no counting (Note [Counting while writing]): it writes in index order. In a self without
// overlap, loop coordinates that differ along a sliced dim are distinct elements, and so are
// those that differ along a dim a coordinate operand names (Note [Rows named by a coordinate]):
// one element gets at most the product of the other index dims' sizes. scatter_add_ along dim 1
// of a [1024, 4096] self with 1024 values a row: at most 1024, and the count over its 1M writes
// was a third of its time (docs/performance/indexing.md, session 11).
int64_t most_per_destination(const Loop& loop, int64_t coordinate) {
  int64_t most = 1;
  for (size_t r = 0; r < loop.sizes.size(); ++r) {
    if (loop.is_index_dim[r] && static_cast<int64_t>(r) != coordinate) most *= loop.sizes[r];
  }
  return most;  // a product of some of the sizes of a loop whose numel fits int64
}

// Note [Self with overlapping strides]
// The splits above rest on distinct loop coordinates being distinct elements of self, and the
// row sort on distinct rows being distinct memory. A self whose non-zero strides make elements
// share memory (as_strided({2, 3}, {1, 1}): has_internal_overlap says kTooHard; a zero stride,
// kYes, is refused before any kernel, as PyTorch) breaks both: two threads would write one
// element, racing, and the row sort would combine in row order. PyTorch accepts such a self and
// lets its threads race; here one thread walks R in order (the partition and the two-part write
// would be right, as they key by memory offset, but one thread is simpler to show right): the
// last write in index order wins, and accumulation runs in index order, per memory location. A
// self that merely cannot be proved free of overlap (kTooHard without overlap) takes this path
// too: correct, on one thread.

// Note [The partition is for copies and common sums]
// This file was the slowest of the library to compile, in every build (above 350 s under
// asan, tsan and the fuzz build on CI's two cores), and most of its code was the partition and
// the row sort instantiated for every dtype and every reduction. Those two paths now exist for
// the writes that meet them in practice: copies (every width) and sums of float32, float64,
// int32 and int64 (index_add_, scatter_add_, x[idx] += v, embedding gradients). Products, max,
// min (scatter_reduce_, index_reduce_) and sums of the other dtypes split a sliced dim or a
// coordinate between threads, or write from one thread in index order, as PyTorch's CPU does
// for a 1-D scatter. The bits are the same on every path.
template <typename T, bool kAccumulate, typename Combine>
constexpr bool takes_partition() {
  return !kAccumulate || (std::is_same_v<Combine, math::AddValues> &&
                          (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                           std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>));
}

// `combine` (math::AddValues, ...) folds a value into its destination when accumulating;
// integers wrap (defined: unsigned arithmetic), as every integer kernel does. Wrap is Screened
// (the values were screened) or Checked (they were not: false when one is out of range, the
// destination then partly written; Note [Staged writes]).
template <typename T, bool kAccumulate, typename Wrap, typename Combine>
bool index_put_typed(const Tensor& dst, const Loop& loop, const Tensor& values, Combine combine) {
  constexpr bool kChecks = std::is_same_v<Wrap, Checked>;
  T* d = static_cast<T*>(dst.raw_data());
  const T* v = static_cast<const T*>(values.raw_data());
  const int64_t total = compute_numel(loop.sizes);
  // Note [Self with overlapping strides]
  const bool distinct = has_internal_overlap(dst.sizes(), dst.strides()) == MemOverlap::kNo;
  // Note [The partition is for copies and common sums]
  constexpr bool kPartition = takes_partition<T, kAccumulate, Combine>();
  if constexpr (kAccumulate && kPartition) {
    if (distinct && whole_rows_beyond_l2(loop, static_cast<int64_t>(sizeof(T)))) {
      if (kChecks && !all_in_range(loop, total)) return false;
      rows_sorted_by_destination(d, v, loop, threads_for(total), combine);
      return true;
    }
  }
  // Only the instantiations a call can take (compile time: this file is the slowest to build).
  const PutOp<T, kAccumulate, Combine> write{d, v, combine};

  int nthreads = distinct ? threads_for(total) : 1;
  // A sliced dim (not indexed) of size >= 2 to split between threads, the largest one; else a
  // dim a coordinate operand names (Note [Rows named by a coordinate]).
  int64_t split = -1;
  for (size_t r = 0; r < loop.sizes.size(); ++r) {
    if (loop.is_index_dim[r] || loop.sizes[r] < 2) continue;
    if (split < 0 || loop.sizes[r] > loop.sizes[static_cast<size_t>(split)]) {
      split = static_cast<int64_t>(r);
    }
  }
  if (split < 0 && nthreads > 1) split = coordinate_dim(loop);
  const auto [lo, hi] = offset_range(dst.sizes(), dst.strides());
  const int64_t span_bytes = (hi - lo + 1) * dst.element_size();
  // Random scatter does not scale to a second core by splitting the destination (Note
  // [Partitioned scatter]): without a sliced dim to split, the writes are partitioned by block
  // when the destination exceeds L2; into a smaller one, one thread writes.
  const bool partition = kPartition && split < 0 && span_bytes > kPrefetchBytes;
  // Note [Copies into the shared cache]: one thread, without the prefetch.
  if constexpr (!kAccumulate) {
    if (partition && span_bytes <= shared_cache_bytes() / 2) {
      Loop direct = loop;
      direct.prefetch = nullptr;
      if (nthreads >= 2) return two_part_put<T, Wrap>(d, v, direct, total, lo, hi);
      Wrap wrap;
      run(direct, 0, total, write, wrap);
      return !wrap.bad;
    }
  }
  // Note [Blocked accumulation on the CPU]
  constexpr bool kBlocked = kAccumulate && blocked::order_matters<T, Combine>();
  // Note [Short runs need no counting]: split is -1, a sliced dim or a coordinate's dim.
  const bool counts =
      kBlocked && (!distinct || most_per_destination(loop, split) > blocked::kBlock);
  if constexpr (kBlocked) {
    if (total > blocked::kBlock && counts) {
      Sketch sketch(total);
      const bool counted = nthreads > 1 && partition;
      if constexpr (kPartition) {
        if (counted) {
          if (kChecks && !all_in_range(loop, total)) return false;
          if (partitioned_put<T, kAccumulate>(d, v, loop, total, lo, hi, nthreads, combine,
                                              &sketch)) {
            return true;
          }
        }
      }
      if (!counted && distinct) {
        // Note [Counting beside the write]: a dense destination in L2, two threads.
        if (nthreads > 1 && split < 0 && hi - lo + 1 == dst.numel()) {
          return put_counting_beside<T, Wrap>(d, v, loop, total, lo, hi, combine);
        }
        // Note [Counting while writing]: here on one thread, or below on each part of a split.
        if (nthreads <= 1 || split < 0) return counting_put<T, Wrap>(d, v, loop, total, combine);
      } else if (counted || sketch_full(loop, total, sketch)) {
        return heavy_put<T, Wrap>(d, v, loop, total, combine, sketch);
      }
    }
  }
  if (nthreads <= 1 || (split < 0 && !partition)) {
    Wrap wrap;
    run(loop, 0, total, write, wrap);
    return !wrap.bad;
  }
  if constexpr (kPartition) {
    if (partition) {
      if (kChecks && !all_in_range(loop, total)) return false;
      partitioned_put<T, kAccumulate>(d, v, loop, total, lo, hi, nthreads, combine, nullptr);
      return true;
    }
  }
  const size_t s = static_cast<size_t>(split);
  nthreads = static_cast<int>(std::min<int64_t>(nthreads, loop.sizes[s]));
  std::atomic<bool> bad{false};
  run_parallel(nthreads, [&](int t) {
    auto [a, b] = part(loop.sizes[s], t, nthreads);
    Loop sub = loop;
    sub.sizes[s] = b - a;
    sub.self_base += a * loop.self_strides[s];
    sub.dense_base += a * loop.dense_strides[s];
    for (IndexOperand& ix : sub.idx) ix.data += a * ix.strides[s];  // 0 on a sliced dim
    const int64_t sub_total = compute_numel(sub.sizes);
    if constexpr (kBlocked) {
      if (sub_total > blocked::kBlock && counts) {  // Note [Counting while writing]
        if (!counting_put<T, Wrap>(d, v, sub, sub_total, combine)) {
          bad.store(true, std::memory_order_relaxed);
        }
        return;
      }
    }
    Wrap wrap;
    run(sub, 0, sub_total, write, wrap);
    if (wrap.bad) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load(std::memory_order_relaxed);
}

// The kernel of index_put_kernel (Screened) and index_put_checked_kernel (Checked).
template <typename Wrap>
bool index_put_with(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                    const IndexPutDescriptor& desc, bool negative_wraps) {
  Loop loop = make_loop(dst, indices, values);
  loop.prefetch = prefetch_base(dst);
  loop.element_size = dst.element_size();
  loop.prefetch_write = 1;
  loop.nonnegative = desc.nonnegative;
  if (!negative_wraps) {
    for (IndexOperand& ix : loop.idx) ix.bounds.lower = 0;
  }
  bool ok = true;
  if (!desc.accumulate) {
    dispatch_width(dst.element_size(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ok = index_put_typed<T, false, Wrap>(dst, loop, values, math::AddValues{});
    });
    return ok;
  }
  constexpr bool kChecks = std::is_same_v<Wrap, Checked>;
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kChecks && desc.reduce == ReduceOp::kSum) {
      ok = index_put_typed<T, true, Wrap>(dst, loop, values, math::AddValues{});
      return;
    }
    // Products, max and min are never staged: no Checked instantiations; screen, then write.
    if (kChecks && !(ok = all_in_range(loop, compute_numel(loop.sizes)))) return;
    native::dispatch_combine(desc.reduce, [&](auto combine) {
      index_put_typed<T, true, Screened>(dst, loop, values, combine);
    });
  });
  return ok;
}

}  // namespace

void index_put_kernel(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                      const IndexPutDescriptor& desc) {
  index_put_with<Screened>(dst, indices, values, desc, /*negative_wraps=*/true);
}

bool index_put_checked_kernel(const Tensor& dst, const std::vector<Tensor>& indices,
                              const Tensor& values, const IndexPutDescriptor& desc,
                              bool negative_wraps) {
  IndexPutDescriptor d = desc;
  d.nonnegative = false;
  return index_put_with<Checked>(dst, indices, values, d, negative_wraps);
}

void CpuBackend::index_put(const Tensor& dst, const std::vector<Tensor>& indices,
                           const Tensor& values, const IndexPutDescriptor& desc) {
  desc.before_write();  // the CPU kernel's buffers are host memory (std::bad_alloc)
  if (desc.start == nullptr) {
    index_put_kernel(dst, indices, values, desc);
    return;
  }
  // Each written destination starts from *desc.start: written first (the last write wins, all
  // equal), then the values fold into it as into any destination.
  IndexPutDescriptor first{false};
  first.nonnegative = desc.nonnegative;
  index_put_kernel(dst, indices, native::expand(*desc.start, values.sizes()), first);
  IndexPutDescriptor rest = desc;
  rest.start = nullptr;
  index_put_kernel(dst, indices, values, rest);
}

bool CpuBackend::index_put_checked(const Tensor& dst, const std::vector<Tensor>& indices,
                                   const Tensor& values, const std::vector<Tensor>& /*unexpanded*/,
                                   const IndexPutDescriptor& desc, bool negative_wraps) {
  return index_put_checked_kernel(dst, indices, values, desc, negative_wraps);
}

}  // namespace mutagrad::cpu
