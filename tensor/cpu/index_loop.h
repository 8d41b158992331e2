// The loop every CPU indexing kernel runs (tensor/cpu/indexing.cc: gathers; index_put.cc:
// writes): the indexed shape R walked in row-major order, calling op(self_offset,
// dense_offset) for each element, with each index value turned into a position by a Wrap
// (Screened or Checked) and the prefetches of Notes [Prefetch only past L2] and [Prefetch the
// next row]. Internal to tensor/cpu.
//
//   index_loop::Loop loop = index_loop::make_loop(self, indices, out);
//   index_loop::Checked checked;
//   index_loop::run(loop, 0, total, [&](int64_t s, int64_t o) { out_data[o] = self_data[s]; },
//                   checked);  // checked.bad: a value was out of range
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/cpu/indexing.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/dtype.h"
#include "tensor/native/index_ops.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu::index_loop {

inline int default_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(hw == 0 ? 1 : hw, 1, 8));
}

inline std::atomic<int>& num_threads_slot() {
  static std::atomic<int> n{default_threads()};
  return n;
}

// Below this many elements per thread, a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 15;

inline int threads_for(int64_t work) {
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
inline std::pair<int64_t, int64_t> part(int64_t total, int t, int n) {
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

inline Loop make_loop(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& dense) {
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
// of a 2-D gather's samples on an AMD EPYC VM: docs/performance/indexing.md.)

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

// Note [Prefetch the next row]
// A run whose varying index reads or writes at random within a small region of self (a gather
// along dim 1 of a [1024, 4096] float32 tensor: 1024 values within one 16 KiB row) misses on
// the first touch of each of the region's lines, one random miss after another (the hardware
// prefetchers do not follow random order). The region of the next run (the same operand one
// step along the next outer dim) is known before this run starts, so this run requests its
// lines in order, a few before each chunk of kRowChunk values, and the next run finds them in
// cache. Probe on the AMD EPYC VM (two threads, that gather, medians of 200): 0.62-0.88 ms
// without, 0.20-0.21 ms with, against 0.32-0.42 ms for all of the next row's lines at once
// before the run and 0.21-0.33 ms for one line of a row one to four ahead every 4 values; in
// the library 0.30-0.34 ms against 0.72-0.81 (libtorch 1.13: 0.56-0.90). Only where the
// per-value prefetch is off (the region fits in L2), self spans more than L2, the region is
// dense (the index's stride at most a line) and the run's values cover its lines.
constexpr int64_t kRowChunk = 128;

// run_one_operand over n values in chunks, requesting the lines of the next run's region of
// `ix` (its position 0 at self offset next_so) before each (Note [Prefetch the next row]); a
// plain run when that is this run's region (at this_so: the dim before the run's is an index
// dim that leaves the row as it is).
template <typename Op, typename Wrap>
void run_prefetching_next(const Loop& loop, const IndexOperand& ix, const int64_t* ip, int64_t i_in,
                          int64_t so, int64_t s_in, int64_t oo, int64_t o_in, int64_t n,
                          int64_t this_so, int64_t next_so, const Op& op, Wrap& wrap) {
  if (next_so == this_so) {
    run_one_operand(loop, ix, ip, i_in, so, s_in, oo, o_in, n, op, wrap);
    return;
  }
  const int64_t es = loop.element_size;
  const int64_t bytes = ((ix.bounds.size - 1) * (ix.stride < 0 ? -ix.stride : ix.stride) + 1) * es;
  const char* const first =
      loop.prefetch + (next_so + (ix.stride < 0 ? (ix.bounds.size - 1) * ix.stride : 0)) * es;
  const bool write = loop.prefetch_write != 0;
  const int64_t per = ((bytes + 63) / 64 * kRowChunk + n - 1) / n;  // lines per chunk
  int64_t at = 0;
  for (int64_t c = 0; c < n; c += kRowChunk) {
    for (const int64_t stop = std::min(bytes, at + per * 64); at < stop; at += 64) {
      prefetch_line(write, first + at);
    }
    run_one_operand(loop, ix, ip + c * i_in, i_in, so + c * s_in, s_in, oo + c * o_in, o_in,
                    std::min(kRowChunk, n - c), op, wrap);
    if constexpr (std::is_same_v<Wrap, Checked>) {
      if (wrap.bad) return;
    }
  }
  prefetch_line(write, first + bytes - 1);  // the last line, where the steps of 64 skipped it
}

// Whether a run of `ix` varying along the inner dim `in`, at loop coordinates `counter`, takes
// run_prefetching_next: Note [Prefetch the next row]. (A next run along dim in - 1 exists.)
inline bool prefetch_next_row(const Loop& loop, const IndexOperand& ix, const DimVector& counter,
                              size_t in) {
  const int64_t step = (ix.stride < 0 ? -ix.stride : ix.stride) * loop.element_size;
  return in > 0 && counter[in - 1] + 1 < loop.sizes[in - 1] && loop.prefetch != nullptr &&
         ix.reach_bytes <= kPrefetchBytes && step <= 64 && loop.sizes[in] * 64 >= ix.reach_bytes;
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
      if (ix.strides[in] != 0 && prefetch_next_row(loop, ix, counter, in)) {
        const int64_t start = so - counter[in] * s_in;  // this run's row
        run_prefetching_next(loop, ix, ix.data + io[0], ix.strides[in], so, s_in, oo, o_in, n,
                             start, start + loop.self_strides[in - 1], op, wrap);
      } else {
        run_one_operand(loop, ix, ix.data + io[0], ix.strides[in], so, s_in, oo, o_in, n, op, wrap);
      }
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
          if (prefetch_next_row(loop, ix, counter, in)) {
            // The next run's row: the constant operands one step along dim in - 1.
            const int64_t start = so - counter[in] * s_in + fixed;
            int64_t next = so - counter[in] * s_in + loop.self_strides[in - 1];
            for (size_t j = 0; j < ni; ++j) {
              const IndexOperand& c = loop.idx[j];
              if (j != varying) {
                next += wrap.peek(c.data[io[j] + c.strides[in - 1]], c.bounds) * c.stride;
              }
            }
            run_prefetching_next(loop, ix, ix.data + io[varying], ix.strides[in], so + fixed, s_in,
                                 oo, o_in, n, start, next, op, wrap);
          } else {
            run_one_operand(loop, ix, ix.data + io[varying], ix.strides[in], so + fixed, s_in, oo,
                            o_in, n, op, wrap);
          }
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
// instantiation per width serves every dtype of that width (the indexing kernels are the
// slowest of the library to compile). Read and written as unsigned char, which may alias any
// element type.
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
inline std::pair<int64_t, int64_t> offset_range(IntArrayRef sizes, IntArrayRef strides) {
  int64_t lo = 0;
  int64_t hi = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return {1, 0};
    (strides[d] < 0 ? lo : hi) += (sizes[d] - 1) * strides[d];
  }
  return {lo, hi};
}

// Element [0, ...] of t when its span exceeds L2 (Note [Prefetch only past L2]), else null.
inline const char* prefetch_base(const Tensor& t) {
  const auto [lo, hi] = offset_range(t.sizes(), t.strides());
  if ((hi - lo + 1) * t.element_size() <= kPrefetchBytes) return nullptr;
  return static_cast<const char*>(t.raw_data());
}

}  // namespace mutagrad::cpu::index_loop
