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
#include <vector>

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
// slower (docs/performance.md, with later designs).
constexpr int64_t kBlockBytes = int64_t{1} << 19;

// Passes 1 and 2 of Note [Partitioned scatter] (they depend on no element type): the number of
// writes of each thread's part of `plain` into each block of 2^shift elements from lo, turned
// into each (thread, block)'s first slot (`slot`, thread-major) and each block's first slot.
void count_block_slots(const Loop& plain, int64_t total, int nthreads, int64_t lo, int shift,
                       size_t nb, std::vector<int64_t>& slot, std::vector<int64_t>& block_start) {
  slot.assign(static_cast<size_t>(nthreads) * nb, 0);
  run_parallel(nthreads, [&](int t) {
    auto [a, b] = part(total, t, nthreads);
    int64_t* count = slot.data() + static_cast<size_t>(t) * nb;
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

template <typename T, bool kAccumulate, typename Combine>
void partitioned_put(T* d, const T* v, const Loop& loop, int64_t total, int64_t lo, int64_t hi,
                     int nthreads, Combine combine) {
  int shift = 0;
  while ((int64_t{1} << (shift + 1)) * static_cast<int64_t>(sizeof(T)) <= kBlockBytes) ++shift;
  // No more blocks than total / 8: the counts stay small next to the writes.
  // (An offset within a block is kept in 32 bits.)
  while (shift < 32 && ((hi - lo) >> shift) + 1 > std::max<int64_t>(1, total / 8)) ++shift;
  const size_t nb = static_cast<size_t>(((hi - lo) >> shift) + 1);
  Loop plain = loop;
  plain.prefetch = nullptr;  // the counting and copying passes touch no destination
  std::vector<int64_t> slot, block_start;
  count_block_slots(plain, total, nthreads, lo, shift, nb, slot, block_start);
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
}

// Note [Copies into the shared cache]
// The partition (Note [Partitioned scatter]) pays for two extra passes and 8 bytes per write
// where a random write waits on memory. Into a destination that fits in the last-level cache
// (1M values into 4M float32, 16 MiB, on a VM with 32 MiB of L3) a write waits on L3 only: one
// thread writing in index order, without the prefetch, took 1.75-1.85 ms where the partition
// took 1.77-2.28 ms when the VM was quiet, and 1.85-1.92 ms against 2.67-3.36 ms while other
// tenants loaded it (libtorch 1.13's racy writes from two threads: 1.26-1.63 and 1.51-2.16 ms
// in the same runs), using one core and no temporary memory. Two threads that each walk every
// index and write their own half did no better than one (docs/performance.md). So a write
// without accumulate into a destination of at most half that cache (shared_cache_bytes in
// tensor/cpu/parallel.h) skips the partition and its prefetch: one thread writes in index
// order, or two split the writes as Note [Earlier writes skip later destinations] says. An
// accumulating write keeps the partition.

// d[k] = combine(d[k], v[k]) for k < n: vectorized (Note [Whole rows]); d and v never overlap.
template <typename T, typename Combine>
MG_VECTORIZE void combine_row(T* __restrict d, const T* __restrict v, int64_t n, Combine combine) {
  for (int64_t k = 0; k < n; ++k) d[k] = combine(d[k], v[k]);
}

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
// halves 1.31-1.45 ms in the same runs (docs/performance.md, issue 12).
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
// (BM_Scatter2DAlongDim1, docs/performance.md).

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
  if constexpr (kAccumulate) {
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
  const bool partition = split < 0 && span_bytes > kPrefetchBytes;
  // Note [Copies into the shared cache]: one thread, without the prefetch.
  const bool in_shared_cache = !kAccumulate && partition && span_bytes <= shared_cache_bytes() / 2;
  if (in_shared_cache) {
    Loop direct = loop;
    direct.prefetch = nullptr;
    if (nthreads >= 2) return two_part_put<T, Wrap>(d, v, direct, total, lo, hi);
    Wrap wrap;
    run(direct, 0, total, write, wrap);
    return !wrap.bad;
  }
  if (nthreads <= 1 || (split < 0 && !partition)) {
    Wrap wrap;
    run(loop, 0, total, write, wrap);
    return !wrap.bad;
  }
  if (partition) {
    if (kChecks && !all_in_range(loop, total)) return false;
    partitioned_put<T, kAccumulate>(d, v, loop, total, lo, hi, nthreads, combine);
    return true;
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
    Wrap wrap;
    run(sub, 0, compute_numel(sub.sizes), write, wrap);
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
