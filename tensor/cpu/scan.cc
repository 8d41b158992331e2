// CPU cumsum/cumprod (Backend::scan): each line along the dim folded in the order of Note
// [Blocked association order] (tensor/blocked_order.h), in double for floating dtypes, as
// PyTorch's CPU kernel accumulates. scan_kernel (cuda/reduce.cu) folds in the same order: both
// backends give the same bits.
//
// A line of at most one block is folded in order by one thread, the lines split between the
// threads. A longer line runs the order's three passes over (line, block) items: each block's
// partial, the carries chained per line, each block rescanned from its carry. A thread folds
// kLanes full blocks of a line at once: independent chains of the accumulator's adds (or
// multiplies) that the core overlaps, where one chain waits on each add's latency; the items
// split between the threads for large scans only (kParallelScanElements).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "tensor/blocked_order.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/element_math.h"
#include "tensor/native/index_ops.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

using blocked::kBlock;

constexpr int64_t kLanes = 8;
// The lag between neighbouring lanes of the rescan, in elements (Note [Staggered lanes]): 64
// bytes of float, 128 of double, so neighbouring lanes' addresses differ by a cache line or two
// besides the blocks' 4 KiB.
constexpr int64_t kSkew = 16;
static_assert((kLanes - 1) * kSkew < kBlock, "the lanes' lags fit in a block");

// Lines of more elements than this in all run the passes on both threads. Below it one thread
// runs them: on the loaded 2-core VM, waking the second thread for each pass cost more than a
// 1M-element line's passes (docs/performance/blocked-orders.md).
constexpr int64_t kParallelScanElements = int64_t{8} << 20;

Tensor line_starts(const Tensor& t, IntArrayRef line_sizes) {
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector(line_sizes), DimVector(t.strides()),
                                        t.storage_offset(), t.dtype(), VersionCounter()));
}

// One scanned line: element i of `in` at in + i * in_step (bytes), of `out` likewise; kDense:
// both steps are sizeof(T), known to the compiler.
template <typename T, typename A, bool kDense = false>
struct Line {
  const char* in;
  char* out;
  int64_t in_step;
  int64_t out_step;
  A load(int64_t i) const {
    if constexpr (kDense) return static_cast<A>(reinterpret_cast<const T*>(in)[i]);
    return static_cast<A>(*reinterpret_cast<const T*>(in + i * in_step));
  }
  void store(int64_t i, A v) const {
    if constexpr (kDense) {
      reinterpret_cast<T*>(out)[i] = static_cast<T>(v);
    } else {
      *reinterpret_cast<T*>(out + i * out_step) = static_cast<T>(v);
    }
  }
};

template <typename T, typename A, bool kDense, typename Combine>
struct BlockedScan {
  const std::vector<Line<T, A, kDense>>& lines;
  int64_t len;
  int64_t nb;  // blocks per line
  A init;
  Combine combine;
  A* carry;  // per (line, block): the block's partial, then (from block 1) its carry

  // Pass 1 over items [begin, end): each block's partial; block 0 folded from init.
  void partials(int64_t begin, int64_t end) const {
    for (int64_t item = begin; item < end;) {
      const Line<T, A, kDense>& x = lines[static_cast<size_t>(item / nb)];
      const int64_t j = item % nb;
      if (j == 0) {
        A acc = init;
        for (int64_t i = 0; i < std::min(len, kBlock); ++i) acc = combine(acc, x.load(i));
        carry[item++] = acc;
      } else if (item + kLanes <= end && (j + kLanes) * kBlock <= len) {
        A l[kLanes];
        for (int64_t k = 0; k < kLanes; ++k) l[k] = x.load((j + k) * kBlock);
        for (int64_t i = 1; i < kBlock; ++i) {
#pragma GCC unroll 8
          for (int64_t k = 0; k < kLanes; ++k) l[k] = combine(l[k], x.load((j + k) * kBlock + i));
        }
        for (int64_t k = 0; k < kLanes; ++k) carry[item + k] = l[k];
        item += kLanes;
      } else {
        const int64_t b = j * kBlock;
        const int64_t e = std::min(len, b + kBlock);
        A l = x.load(b);
        for (int64_t i = b + 1; i < e; ++i) l = combine(l, x.load(i));
        carry[item++] = l;
      }
    }
  }

  // Pass 2 over lines [begin, end): partials become carries, in order.
  void carries(int64_t begin, int64_t end) const {
    for (int64_t line = begin; line < end; ++line) {
      A* c = carry + line * nb;
      A acc = c[0];
      for (int64_t j = 1; j < nb; ++j) {
        const A partial = c[j];
        c[j] = acc;
        acc = combine(acc, partial);
      }
    }
  }

  // Pass 3 over items [begin, end): the outputs.
  void outputs(int64_t begin, int64_t end) const {
    for (int64_t item = begin; item < end;) {
      const Line<T, A, kDense>& x = lines[static_cast<size_t>(item / nb)];
      const int64_t j = item % nb;
      if (j == 0) {
        A acc = init;
        for (int64_t i = 0; i < std::min(len, kBlock); ++i) {
          acc = combine(acc, x.load(i));
          x.store(i, acc);
        }
        ++item;
      } else if (item + kLanes <= end && (j + kLanes) * kBlock <= len) {
        A l[kLanes];
        A c[kLanes];  // in registers: out's stores could alias carry (T = double)
        for (int64_t k = 0; k < kLanes; ++k) c[k] = carry[item + k];
        const int64_t base = j * kBlock;
        // Lane k's element i, the first (i == 0) starting its chain.
        auto step = [&](int64_t k, int64_t i) {
          const int64_t at = base + k * kBlock + i;
          l[k] = i == 0 ? x.load(at) : combine(l[k], x.load(at));
          x.store(at, combine(c[k], l[k]));
        };
        // Note [Staggered lanes]: at step t lane k is at element t - k kSkew, so the eight
        // blocks' reads and writes (4 KiB apart for float, all in one L1 set: 16 lines in an
        // 8-way set thrashed, 4.6x the in-order loop on an AMD EPYC, 2026-11-29) fall in
        // different sets. Each lane still folds its block in order: the same bits.
        constexpr int64_t kLag = (kLanes - 1) * kSkew;
        for (int64_t t = 0; t <= kLag; ++t) {
          for (int64_t k = 0; k < kLanes && k * kSkew <= t; ++k) step(k, t - k * kSkew);
        }
        for (int64_t t = kLag + 1; t < kBlock; ++t) {
#pragma GCC unroll 8
          for (int64_t k = 0; k < kLanes; ++k) {
            const int64_t at = base + k * kBlock + t - k * kSkew;
            l[k] = combine(l[k], x.load(at));
            x.store(at, combine(c[k], l[k]));
          }
        }
        for (int64_t t = kBlock; t < kBlock + kLag; ++t) {
          for (int64_t k = kLanes - 1; k >= 0 && t - k * kSkew < kBlock; --k)
            step(k, t - k * kSkew);
        }
        item += kLanes;
      } else {
        const int64_t b = j * kBlock;
        const int64_t e = std::min(len, b + kBlock);
        const A c = carry[item++];
        A l = x.load(b);
        x.store(b, combine(c, l));
        for (int64_t i = b + 1; i < e; ++i) {
          l = combine(l, x.load(i));
          x.store(i, combine(c, l));
        }
      }
    }
  }
};

}  // namespace

void CpuBackend::scan(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim) {
  if (out.numel() == 0) return;
  const size_t d = static_cast<size_t>(dim);
  const int64_t len = in.sizes()[d];
  const int64_t in_step = in.strides()[d] * in.element_size();
  const int64_t out_step = out.strides()[d] * out.element_size();
  DimVector line_sizes(out.sizes());
  line_sizes[d] = 1;
  // out and in seen with one element per line: the start of each line.
  const Tensor out_starts = line_starts(out, line_sizes);
  const Tensor in_starts = line_starts(in, line_sizes);
  StridedLoop<2> it({&out_starts, &in_starts});
  const int64_t nb = blocked::num_blocks(len);
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    native::dispatch_combine(op, [&](auto combine) {
      const A init = op == ReduceOp::kProd ? A(1) : A(0);
      if (nb == 1) {  // every line in order, one thread each
        parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
          it.run(begin, end, [&](char** p, const int64_t* s, int64_t n) {
            for (int64_t k = 0; k < n; ++k) {
              const Line<T, A> x{p[1] + k * s[1], p[0] + k * s[0], in_step, out_step};
              A acc = init;
              for (int64_t i = 0; i < len; ++i) {
                acc = combine(acc, x.load(i));
                x.store(i, acc);
              }
            }
          });
        });
        return;
      }
      auto blocked = [&](auto dense) {
        constexpr bool kDense = decltype(dense)::value;
        std::vector<Line<T, A, kDense>> lines;
        lines.reserve(static_cast<size_t>(it.numel()));
        it.run(0, it.numel(), [&](char** p, const int64_t* s, int64_t n) {
          for (int64_t k = 0; k < n; ++k) {
            lines.push_back(
                Line<T, A, kDense>{p[1] + k * s[1], p[0] + k * s[0], in_step, out_step});
          }
        });
        const int64_t items = static_cast<int64_t>(lines.size()) * nb;
        std::unique_ptr<A[]> carry(new A[static_cast<size_t>(items)]);
        const BlockedScan<T, A, kDense, decltype(combine)> scan{lines, len,     nb,
                                                                init,  combine, carry.get()};
        const int64_t items_threshold =
            std::max<int64_t>(1, (kParallelScanElements + kBlock - 1) / kBlock);
        parallel_for(
            items, [&](int64_t b, int64_t e) { scan.partials(b, e); }, items_threshold);
        parallel_for(
            static_cast<int64_t>(lines.size()), [&](int64_t b, int64_t e) { scan.carries(b, e); },
            std::max<int64_t>(1, kParallelThreshold / nb));
        parallel_for(
            items, [&](int64_t b, int64_t e) { scan.outputs(b, e); }, items_threshold);
      };
      const int64_t dense_step = static_cast<int64_t>(sizeof(T));
      if (in_step == dense_step && out_step == dense_step) {
        blocked(std::true_type{});
      } else {
        blocked(std::false_type{});
      }
    });
  });
}

}  // namespace mutagrad::cpu
