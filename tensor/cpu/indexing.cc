// CPU kernels of the indexing family. See tensor/cpu/indexing.h.
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
// do not depend on the thread count. Gathers split their output into ranges. (masked_fill_'s
// kernel: tensor/cpu/masked_fill.cc.)
#include "tensor/cpu/indexing.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/element_math.h"
#include "tensor/native/index_ops.h"
#include "tensor/shape.h"

namespace mutagrad::cpu {
namespace {

int default_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(hw == 0 ? 1 : hw, 1, 8));
}

std::atomic<int>& num_threads_slot() {
  static std::atomic<int> n{default_threads()};
  return n;
}

// Below this many elements per thread, a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 15;

int threads_for(int64_t work) {
  int64_t by_work = std::max<int64_t>(1, work / kGrain);
  return static_cast<int>(std::min<int64_t>(indexing_num_threads(), by_work));
}

// Runs fn(0), ..., fn(n - 1) concurrently, fn(0) on the calling thread. Two parts use the
// backend's persistent worker (parallel.h); more (set_indexing_num_threads) start threads.
// Kernels do not throw (their arguments are validated), so no exception crosses a thread.
template <typename Fn>
void run_parallel(int n, const Fn& fn) {
  if (n <= 1) {
    fn(0);
    return;
  }
  if (n == 2) {
    parallel_run(
        [](void* ctx, int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) (*static_cast<const Fn*>(ctx))(static_cast<int>(t));
        },
        const_cast<void*>(static_cast<const void*>(&fn)), 2);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(n - 1));
  for (int t = 1; t < n; ++t) workers.emplace_back([&fn, t] { fn(t); });
  fn(0);
  for (std::thread& w : workers) w.join();
}

// [begin, end) of the t-th of n near-equal parts of [0, total).
std::pair<int64_t, int64_t> part(int64_t total, int t, int n) {
  return {total * t / n, total * (t + 1) / n};
}

// The valid values of one index operand, [lower, size).
struct Bounds {
  int64_t size;   // size of the indexed dim of self (for wrapping negatives)
  int64_t lower;  // the least valid value: -size when negatives wrap, else 0 (Checked)
};

struct IndexOperand {
  const int64_t* data;  // element [0, ...] of the (expanded) index tensor
  DimVector strides;    // per loop dim; 0 on dims that are not index dims
  Bounds bounds;
  int64_t stride;  // stride of the indexed dim of self
  // Bytes of self one run of this operand can reach (size x |stride| x element size): whether
  // its random accesses can miss the caches (Note [Prefetch only past L2]).
  int64_t reach_bytes;
};

// The loop over R: for each element, an offset into self (the indexed operand) and one into
// the dense operand (gather output / scattered values), both in elements.
struct Loop {
  DimVector sizes;
  DimVector self_strides;  // 0 on index dims
  DimVector dense_strides;
  DimVector is_index_dim;  // 1 on dims that come from the index tensors
  std::vector<IndexOperand> idx;
  int64_t self_base = 0;
  int64_t dense_base = 0;
  // Element [0, ...] of self, to prefetch the lines the index values point at (or null).
  const char* prefetch = nullptr;
  int64_t element_size = 0;
  int prefetch_write = 0;  // 1 for scatters
  // Every index value lies in [0, size) (IndexPutDescriptor::nonnegative): no run wraps.
  bool nonnegative = false;
};

// Note [Prefetch only past L2]
// The index loop requests the line kAhead elements ahead because random accesses into a
// tensor larger than the caches wait on memory. Into a tensor that fits in L2 (scatter_add_ of
// 1M values into 64K segments: 256 KiB) they hit anyway, and the prefetch's index load, select
// and spilled loop variables only slow the loop (perf: 66% of scatter_add_'s time was that
// loop). So only tensors whose span exceeds kPrefetchBytes are prefetched, and within those
// only runs whose varying index can reach more than kPrefetchBytes: a gather along dim 1 of a
// [1024, 4096] float32 tensor reads random elements of one 16 KiB row per run, which stay in
// L1 after their first touch (the prefetch made that gather 2.7x slower than libtorch's).
constexpr int64_t kPrefetchBytes = int64_t{1} << 20;

constexpr int64_t kAhead = 16;
// Rows ahead for runs whose index is constant along the row (Note [Prefetch only past L2]).
constexpr int64_t kAheadRows = 4;

// Requests the line at p for reading (gathers) or writing (scatters).
inline void prefetch_line(bool write, const char* p) {
  if (write) {
    __builtin_prefetch(p, 1);
  } else {
    __builtin_prefetch(p, 0);
  }
}

Loop make_loop(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& dense) {
  // The kernel table (vec_kernels), resolved here on the calling thread by every indexing
  // kernel whether its path uses it or not: an invalid MUTAGRAD_CPU_CAPABILITY throws before
  // any write, on every path, never on a kernel thread.
  static_cast<void>(vec_kernels());
  native::IndexLoop g = native::make_index_loop(self, indices, dense);
  Loop loop;
  loop.sizes = std::move(g.sizes);
  loop.self_strides = std::move(g.self_strides);
  loop.dense_strides = std::move(g.dense_strides);
  loop.is_index_dim = std::move(g.is_index_dim);
  for (native::IndexLoop::Operand& op : g.idx) {
    const int64_t reach = op.size * (op.stride < 0 ? -op.stride : op.stride) * self.element_size();
    loop.idx.push_back(IndexOperand{op.index.data_ptr<int64_t>(), std::move(op.strides),
                                    Bounds{op.size, -op.size}, op.stride, reach});
  }
  return loop;
}

// Note [Bounds checked in the loop]
// A write checks every index value before its first store (the strong guarantee): in a pass of
// its own (Backend::index_in_range) before the version bump, or, when it is staged (Note
// [Staged writes] in tensor/native/index_ops.cc), in the loop that writes the copy. A gather
// writes only its fresh output, which is dropped when a value is out of range, so its loop
// checks each value as it reads it: one read of the index tensor, not two (the separate screen
// was a fifth of a 2-D gather's time). How a loop turns an index value into a position along
// its dim is its Wrap:
//   Screened: the values were checked already; negatives wrap (they are >= -size).
//   Checked:  a value outside [lower, size) sets `bad`, and the caller drops what was written
//             and throws (native::index, native::prepare_index_put). A unit-stride run ends at
//             it (Note [Plain loops]); other runs read position 0 for it (in range, so no
//             access strays); run_range stops after a run that found one.
// peek() converts a value for a prefetch, which must not overflow but may point anywhere.
struct Screened {
  static constexpr bool bad = false;
  int64_t operator()(int64_t v, const Bounds& b) const { return v + (v < 0 ? b.size : 0); }
  int64_t peek(int64_t v, const Bounds& b) const { return (*this)(v, b); }
};

struct Checked {
  bool bad = false;
  static bool outside(int64_t v, const Bounds& b) {
    return static_cast<uint64_t>(v) - static_cast<uint64_t>(b.lower) >=
           static_cast<uint64_t>(b.size) - static_cast<uint64_t>(b.lower);
  }
  int64_t operator()(int64_t v, const Bounds& b) {
    const bool out = outside(v, b);
    bad |= out;
    return out ? 0 : v + (v < 0 ? b.size : 0);
  }
  int64_t peek(int64_t v, const Bounds& b) const {
    return outside(v, b) ? 0 : v + (v < 0 ? b.size : 0);
  }
};

// GCC's -O2 vectorizes only loops it needs no runtime checks for; these blends pay for them.
#if defined(__GNUC__) && !defined(__clang__)
#define MG_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define MG_VECTORIZE
#endif

// Whether any of data[0, n) lies outside [lower, lower + span): Note [Vectorized bounds
// screen] in tensor/cpu/vec_kernels_impl.h (AVX2 where the CPU has it).
inline bool any_out_of_range(const int64_t* data, int64_t n, uint64_t lower, uint64_t span) {
  return vec_kernels().any_out_of_range(data, n, lower, span);
}

// Note [Plain loops]
// A random read into memory waits on it, and the out-of-order core overlaps as many such reads
// as it holds loop iterations: fewer instructions per element, more reads in flight. Checked's
// flag and select and Screened's wrap of negatives made a 2-D gather's row loop 18
// instructions where a plain a[i[k]] loop is 7, and the gather 1.4-1.65x slower than that loop
// (one thread, an Intel Xeon VM). So a unit-stride run (a gather or scatter along the last dim
// of a contiguous tensor, x[idx] of a 1-D x) takes a plain loop: a Checked run tests each value
// with one compare and a never-taken branch and ends at an offender, as libtorch's loops check;
// a Screened write whose values all lie in [0, size) (IndexPutDescriptor::nonnegative:
// native::check_index_bounds screens [0, size) first) tests nothing and is unrolled 4 times.
// (A vectorized screen of each 512-value chunk before a plain loop, the earlier form, took 22%
// of a 2-D gather's samples on an AMD EPYC VM: docs/performance.md.)

// Note [Whole rows]
// A run whose index is constant along it writes one contiguous row of self from one of the
// values (index_add_ of rows, index_copy_, x[idx] = v of a 2-D x). An element-at-a-time loop
// through the op is scalar, so an op may offer row(self_offset, dense_offset, n) for such a
// run: the writes move the row with memcpy and accumulate it in a vectorized loop (the values
// never overlap self: native::index_put_validated copies them first; each element is combined
// on its own, so the bits are the element loop's).
template <typename Op, typename = void>
struct HasRow : std::false_type {};
template <typename Op>
struct HasRow<Op, std::void_t<decltype(&Op::row)>> : std::true_type {};

// Note [Loop state in locals]
// The gather and the non-accumulating writes store unsigned char elements (ElementBytes), and
// the partition's counting pass int64_t counts: stores the compiler must assume may alias any
// object reached through a reference. Read through `ix`, `loop`, `op` or `wrap` inside the
// element loop, the bounds, the stride and the op's pointers were reloaded at every element
// and Checked's flag was read, or-ed and stored back (a store-to-load chain per element). So
// run_one_operand copies them into locals first (wrap's state is copied back at the end).

// A unit-stride run of a Checked loop (Note [Plain loops]): the index of the first value
// outside [lower, size), or n.
template <typename Op>
int64_t run_checked(const int64_t* ip, int64_t so, int64_t oo, int64_t stride, int64_t n,
                    const Bounds& b, const Op& op) {
  const uint64_t lower = static_cast<uint64_t>(b.lower);
  const uint64_t span = static_cast<uint64_t>(b.size) - lower;
  int64_t k = 0;
  if (lower == 0 && stride == 1) {  // gather and scatter_add_ along the last dim
    for (; k < n; ++k) {
      const int64_t v = ip[k];
      if (__builtin_expect(static_cast<uint64_t>(v) >= span, 0)) break;
      op(so + v, oo + k);
    }
  } else {
    for (; k < n; ++k) {
      const int64_t v = ip[k];
      if (__builtin_expect(static_cast<uint64_t>(v) - lower >= span, 0)) break;
      op(so + (v < 0 ? v + b.size : v) * stride, oo + k);
    }
  }
  return k;
}

// One run of n elements along the inner loop dim in which one index operand `ix` varies (its
// values at ip, stride i_in); everything else is folded into the self offset `so`.
template <typename Op, typename Wrap>
void run_one_operand(const Loop& loop, const IndexOperand& ix, const int64_t* ip, int64_t i_in,
                     int64_t so, int64_t s_in, int64_t oo, int64_t o_in, int64_t n,
                     const Op& op_ref, Wrap& wrap_ref) {
  // Note [Loop state in locals]
  const Op op = op_ref;
  Wrap wrap = wrap_ref;
  const Bounds b = ix.bounds;
  const int64_t stride = ix.stride;
  int64_t k = 0;
  if (loop.prefetch != nullptr && i_in != 0 && ix.reach_bytes > kPrefetchBytes) {
    // Random accesses into self are latency-bound: request the line kAhead ahead.
    const char* const prefetch = loop.prefetch;
    const int64_t element_size = loop.element_size;
    const bool write = loop.prefetch_write != 0;
    for (; k + kAhead < n; ++k) {
      const int64_t ahead = wrap.peek(ip[(k + kAhead) * i_in], b);
      prefetch_line(write, prefetch + (so + (k + kAhead) * s_in + ahead * stride) * element_size);
      const int64_t v = wrap(ip[k * i_in], b);
      op(so + k * s_in + v * stride, oo + k * o_in);
    }
  }
  if (i_in == 0) {
    // The index is constant along the run: whole rows (index_add_, index_select, x[idx] of a
    // 2-D x) take one offset, then a plain row loop.
    const int64_t base = so + wrap(ip[0], b) * stride;
    if (s_in == 1 && o_in == 1) {
      if constexpr (HasRow<Op>::value) {
        op.row(base, oo, n);  // Note [Whole rows]
      } else {
        for (; k < n; ++k) op(base + k, oo + k);
      }
    } else {
      for (; k < n; ++k) op(base + k * s_in, oo + k * o_in);
    }
  } else if (i_in == 1 && s_in == 0 && o_in == 1) {
    // The common run: unit strides, so the loop keeps no stride multiplies (Note [Plain loops]).
    if constexpr (std::is_same_v<Wrap, Checked>) {
      wrap.bad |= run_checked(ip + k, so, oo + k, stride, n - k, b, op) < n - k;
    } else if (loop.nonnegative) {
      const int64_t* const p = ip + k;
      const int64_t o = oo + k;
      const int64_t m = n - k;
      if (stride == 1) {
#pragma GCC unroll 4
        for (int64_t j = 0; j < m; ++j) op(so + p[j], o + j);
      } else {
        for (int64_t j = 0; j < m; ++j) op(so + p[j] * stride, o + j);
      }
    } else {
      for (; k < n; ++k) op(so + wrap(ip[k], b) * stride, oo + k);
    }
  } else {
    for (; k < n; ++k) op(so + k * s_in + wrap(ip[k * i_in], b) * stride, oo + k * o_in);
  }
  wrap_ref = wrap;
}

// Calls op(self_offset, dense_offset) for the elements [begin, end) of the loop, row-major.
// kOne: exactly one index operand (the common case, kept free of the inner operand loop).
template <bool kOne, typename Op, typename Wrap>
void run_range(const Loop& loop, int64_t begin, int64_t end, const Op& op, Wrap& wrap) {
  if (begin >= end) return;
  const size_t nd = loop.sizes.size();
  const size_t ni = loop.idx.size();
  DimVector counter(nd, 0);
  int64_t rem = begin;
  for (size_t d = nd; d-- > 0;) {
    counter[d] = rem % loop.sizes[d];
    rem /= loop.sizes[d];
  }
  int64_t so = loop.self_base;
  int64_t oo = loop.dense_base;
  DimVector io(ni, 0);
  for (size_t d = 0; d < nd; ++d) {
    so += counter[d] * loop.self_strides[d];
    oo += counter[d] * loop.dense_strides[d];
    for (size_t j = 0; j < ni; ++j) io[j] += counter[d] * loop.idx[j].strides[d];
  }
  const size_t in = nd - 1;
  const int64_t inner = loop.sizes[in];
  const int64_t s_in = loop.self_strides[in];
  const int64_t o_in = loop.dense_strides[in];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min(inner - counter[in], end - pos);
    if constexpr (kOne) {
      const IndexOperand& ix = loop.idx[0];
      if (ix.strides[in] == 0 && in > 0 && counter[in] == 0 && loop.prefetch != nullptr &&
          ix.reach_bytes > kPrefetchBytes && counter[in - 1] + kAheadRows < loop.sizes[in - 1]) {
        // Whole rows at random (index_add_, index_select): request the row kAheadRows ahead.
        const int64_t ahead =
            wrap.peek(ix.data[io[0] + kAheadRows * ix.strides[in - 1]], ix.bounds);
        const char* row =
            loop.prefetch +
            (so + kAheadRows * loop.self_strides[in - 1] + ahead * ix.stride) * loop.element_size;
        const int64_t bytes = s_in == 1 ? inner * loop.element_size : 0;
        for (int64_t b = 0; b < std::max<int64_t>(bytes, 1); b += 64)
          prefetch_line(loop.prefetch_write != 0, row + b);
      }
      run_one_operand(loop, loop.idx[0], loop.idx[0].data + io[0], loop.idx[0].strides[in], so,
                      s_in, oo, o_in, n, op, wrap);
    } else {
      // Index operands constant along this run (the coordinates of a gather/scatter, Note
      // [Deterministic scatter]) add a fixed offset: with one varying operand left, the run
      // takes the single-operand loop and its prefetch.
      int64_t fixed = 0;
      size_t varying = ni;
      size_t num_varying = 0;
      for (size_t j = 0; j < ni; ++j) {
        const IndexOperand& ix = loop.idx[j];
        if (ix.strides[in] != 0) {
          varying = j;
          ++num_varying;
          continue;
        }
        fixed += wrap(ix.data[io[j]], ix.bounds) * ix.stride;
      }
      if (num_varying <= 1) {
        if (num_varying == 0) {
          if constexpr (HasRow<Op>::value) {
            if (s_in == 1 && o_in == 1) {
              op.row(so + fixed, oo, n);  // Note [Whole rows]
            } else {
              for (int64_t k = 0; k < n; ++k) op(so + fixed + k * s_in, oo + k * o_in);
            }
          } else {
            for (int64_t k = 0; k < n; ++k) op(so + fixed + k * s_in, oo + k * o_in);
          }
        } else {
          const IndexOperand& ix = loop.idx[varying];
          run_one_operand(loop, ix, ix.data + io[varying], ix.strides[in], so + fixed, s_in, oo,
                          o_in, n, op, wrap);
        }
      } else {
        for (int64_t k = 0; k < n; ++k) {
          int64_t s = so + k * s_in;
          for (size_t j = 0; j < ni; ++j) {
            const IndexOperand& ix = loop.idx[j];
            s += wrap(ix.data[io[j] + k * ix.strides[in]], ix.bounds) * ix.stride;
          }
          op(s, oo + k * o_in);
        }
      }
    }
    if constexpr (std::is_same_v<Wrap, Checked>) {
      if (wrap.bad) return;
    }
    pos += n;
    counter[in] += n;
    so += n * s_in;
    oo += n * o_in;
    for (size_t j = 0; j < ni; ++j) io[j] += n * loop.idx[j].strides[in];
    if (counter[in] < inner) continue;
    // Carry into the outer dims.
    so -= inner * s_in;
    oo -= inner * o_in;
    for (size_t j = 0; j < ni; ++j) io[j] -= inner * loop.idx[j].strides[in];
    counter[in] = 0;
    for (size_t d = in; d-- > 0;) {
      so += loop.self_strides[d];
      oo += loop.dense_strides[d];
      for (size_t j = 0; j < ni; ++j) io[j] += loop.idx[j].strides[d];
      if (++counter[d] < loop.sizes[d]) break;
      so -= counter[d] * loop.self_strides[d];
      oo -= counter[d] * loop.dense_strides[d];
      for (size_t j = 0; j < ni; ++j) io[j] -= counter[d] * loop.idx[j].strides[d];
      counter[d] = 0;
    }
  }
}

template <typename Op, typename Wrap>
void run(const Loop& loop, int64_t begin, int64_t end, const Op& op, Wrap& wrap) {
  if (loop.idx.size() == 1) {
    run_range<true>(loop, begin, end, op, wrap);
  } else {
    run_range<false>(loop, begin, end, op, wrap);
  }
}
template <typename Op>
void run(const Loop& loop, int64_t begin, int64_t end, const Op& op) {
  Screened screened;
  run(loop, begin, end, op, screened);
}

// An element's bytes. The gather and the non-accumulating writes only move elements, so one
// instantiation per width serves every dtype of that width (this file is the slowest of the
// library to compile). Read and written as unsigned char, which may alias any element type.
template <size_t kBytes>
struct alignas(kBytes) ElementBytes {
  unsigned char b[kBytes];
};

// f(TypeTag<ElementBytes<width>>{}) for an element width of 1, 2, 4 or 8 bytes.
template <typename F>
void dispatch_width(int64_t width, const F& f) {
  switch (width) {
    case 1:
      return f(TypeTag<ElementBytes<1>>{});
    case 2:
      return f(TypeTag<ElementBytes<2>>{});
    case 4:
      return f(TypeTag<ElementBytes<4>>{});
    case 8:
      return f(TypeTag<ElementBytes<8>>{});
    default:
      MG_INTERNAL_ASSERT(false, "no element of ", width, " bytes");
  }
}

// The smallest and largest offsets (in elements) the elements of (sizes, strides) reach; lo > hi
// when there are none.
std::pair<int64_t, int64_t> offset_range(IntArrayRef sizes, IntArrayRef strides) {
  int64_t lo = 0;
  int64_t hi = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return {1, 0};
    (strides[d] < 0 ? lo : hi) += (sizes[d] - 1) * strides[d];
  }
  return {lo, hi};
}

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
// halves 1.31-1.45 ms in the same runs (docs/performance.md, run 16).
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
  if constexpr (kAccumulate) {
    if (whole_rows_beyond_l2(loop, static_cast<int64_t>(sizeof(T)))) {
      if (kChecks && !all_in_range(loop, total)) return false;
      rows_sorted_by_destination(d, v, loop, threads_for(total), combine);
      return true;
    }
  }
  // Only the instantiations a call can take (compile time: this file is the slowest to build).
  const PutOp<T, kAccumulate, Combine> write{d, v, combine};

  int nthreads = threads_for(total);
  // A sliced dim (not indexed) of size >= 2 to split between threads, the largest one.
  int64_t split = -1;
  for (size_t r = 0; r < loop.sizes.size(); ++r) {
    if (loop.is_index_dim[r] || loop.sizes[r] < 2) continue;
    if (split < 0 || loop.sizes[r] > loop.sizes[static_cast<size_t>(split)]) {
      split = static_cast<int64_t>(r);
    }
  }
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
    Wrap wrap;
    run(sub, 0, compute_numel(sub.sizes), write, wrap);
    if (wrap.bad) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load(std::memory_order_relaxed);
}

}  // namespace

void set_indexing_num_threads(int n) { num_threads_slot().store(std::max(1, n)); }
int indexing_num_threads() { return num_threads_slot().load(std::memory_order_relaxed); }

const char* prefetch_base(const Tensor& t) {
  const auto [lo, hi] = offset_range(t.sizes(), t.strides());
  if ((hi - lo + 1) * t.element_size() <= kPrefetchBytes) return nullptr;
  return static_cast<const char*>(t.raw_data());
}

bool index_kernel(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices,
                  bool negative_wraps) {
  Loop loop = make_loop(self, indices, out);
  loop.prefetch = prefetch_base(self);
  loop.element_size = self.element_size();
  if (!negative_wraps) {
    for (IndexOperand& ix : loop.idx) ix.bounds.lower = 0;
  }
  const int64_t total = compute_numel(loop.sizes);
  const int nthreads = threads_for(total);
  std::atomic<bool> bad{false};
  dispatch_width(self.element_size(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(self.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    run_parallel(nthreads, [&](int t) {
      auto [a, b] = part(total, t, nthreads);
      Checked checked;  // Note [Bounds checked in the loop]
      run(
          loop, a, b, [src, dst](int64_t s, int64_t o) { dst[o] = src[s]; }, checked);
      if (checked.bad) bad.store(true, std::memory_order_relaxed);
    });
  });
  return !bad.load(std::memory_order_relaxed);
}

namespace {

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

void CpuBackend::index(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices) {
  index_kernel(out, self, indices, /*negative_wraps=*/true);  // screened by the caller
}

bool CpuBackend::index_checked(const Tensor& out, const Tensor& self,
                               const std::vector<Tensor>& indices,
                               const std::vector<Tensor>& /*unexpanded*/, bool negative_wraps) {
  return index_kernel(out, self, indices, negative_wraps);
}

bool CpuBackend::index_in_range(const Tensor& idx, int64_t lower, int64_t size) {
  static_cast<void>(vec_kernels());  // as make_loop: throws here, not on the worker
  const uint64_t low = static_cast<uint64_t>(lower);
  const uint64_t span = static_cast<uint64_t>(size - lower);
  const int64_t* data = idx.data_ptr<int64_t>();
  std::atomic<bool> bad{false};
  if (idx.is_contiguous()) {
    // A streaming read: on two threads from 64K indices (the indices of x[idx] of 1M elements
    // take 8 MiB).
    parallel_for(idx.numel(), [&](int64_t b, int64_t e) {
      if (any_out_of_range(data + b, e - b, low, span)) bad.store(true, std::memory_order_relaxed);
    });
    return !bad.load(std::memory_order_relaxed);
  }
  StridedLoop<1> it({&idx});
  it.run(0, it.numel(), [&](char** p, const int64_t* s, int64_t n) {
    const int64_t* d = reinterpret_cast<const int64_t*>(p[0]);
    const int64_t step = s[0] / static_cast<int64_t>(sizeof(int64_t));
    bool any = false;
    for (int64_t k = 0; k < n; ++k) any |= static_cast<uint64_t>(d[k * step]) - low >= span;
    if (any) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load(std::memory_order_relaxed);
}

void CpuBackend::index_put(const Tensor& dst, const std::vector<Tensor>& indices,
                           const Tensor& values, const IndexPutDescriptor& desc) {
  index_put_kernel(dst, indices, values, desc);
}

bool CpuBackend::index_put_checked(const Tensor& dst, const std::vector<Tensor>& indices,
                                   const Tensor& values, const std::vector<Tensor>& /*unexpanded*/,
                                   const IndexPutDescriptor& desc, bool negative_wraps) {
  return index_put_checked_kernel(dst, indices, values, desc, negative_wraps);
}

void CpuBackend::masked_fill(const Tensor& dst, const Tensor& mask, const Scalar& value) {
  masked_fill_kernel(dst, mask, value);
}

}  // namespace mutagrad::cpu
