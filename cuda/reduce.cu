// CUDA reductions (sum, mean, prod, max, min over any dims) and argmax; the CPU's are in
// tensor/cpu/reduce.cc.
//
//   reduce_kernel(ReduceOp::kSum, out, in, {false, true});   // out keepdim-shaped
//
// Note [Deterministic CUDA reductions]
// out has M elements, each reducing K input elements. Pass 1 splits each output's K elements
// into C chunks and reduces every (output, chunk) pair serially, in index order, into a
// partial; then levels of kFanIn combine each output's partials in chunk order until one is
// left. C depends only on M and K (enough (output, chunk) pairs to fill a GPU), so a result
// depends only on the shape: the same bits on every run, in both builds, on any GPU. No
// atomics, no shared-memory tree whose shape depends on the block size. Sum and prod take
// interleaved chunks (chunk c holds elements c, c + C, ...: neighbouring threads read
// neighbouring elements, so the loads coalesce), and so do integer and bool max and min;
// floating max, min and argmax take contiguous ones, whose in-order combination is the CPU's
// left fold (which nan, which of -0.0 and 0.0, which first maximum). sum/prod/mean accumulate
// floats in double and integers in int64 as the CPU does; the order of additions differs from the
// CPU's (eight lanes per run), so floating sums agree with the CPU's to a rounding of the double
// accumulator (the conformance test's tolerance), integers exactly, max/min/argmax exactly.
// argmax's partial is the first maximum of its chunk (a nan counts as the maximum, the first
// one wins); combining those in chunk order with the same rule gives the first maximum of the
// line, the CPU's answer.
#include <cmath>
#include <limits>
#include <type_traits>

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/blocked_order.h"
#include "tensor/element_math.h"
#include "tensor/native/index_ops.h"

namespace mutagrad::cuda {
namespace {

// Enough (output, chunk) pairs for a GPU's threads; chunks no shorter than this. Interleaved
// chunks (sum, prod) are shorter and more: their loads coalesce, so more of them pay off.
constexpr int64_t kTargetParallelism = 65536;
constexpr int64_t kMinChunk = 256;
constexpr int64_t kInterleavedParallelism = 262144;
constexpr int64_t kMinInterleavedChunk = 32;
// Partials combined per thread in each level of the finishing passes.
constexpr int64_t kFanIn = 32;

template <typename A>
struct SumOp {
  MG_HOST_DEVICE static A identity() { return A(0); }
  MG_HOST_DEVICE static A combine(A a, A b) { return math::wrapping_add<A>(a, b); }
};
template <typename A>
struct ProdOp {
  MG_HOST_DEVICE static A identity() { return A(1); }
  MG_HOST_DEVICE static A combine(A a, A b) { return math::wrapping_mul<A>(a, b); }
};
template <typename A>
struct MaxOp {
  MG_HOST_DEVICE static A identity() {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::lowest();
  }
  MG_HOST_DEVICE static A combine(A a, A b) { return math::max_propagate_nan<A>(a, b); }
};
template <typename A>
struct MinOp {
  MG_HOST_DEVICE static A identity() {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::max();
  }
  MG_HOST_DEVICE static A combine(A a, A b) { return math::min_propagate_nan<A>(a, b); }
};

// How the K elements of each output are split (Note [Deterministic CUDA reductions]). A
// contiguous chunk c holds elements [c * length, (c + 1) * length); an interleaved one holds
// c, c + C, c + 2C, ... (neighbouring threads read neighbouring elements).
struct Chunking {
  int64_t chunks = 1;  // C
  int64_t length = 0;  // elements per chunk (the last may be shorter)
  bool interleaved = false;
};

Chunking chunking(int64_t m, int64_t k, bool interleaved = false) {
  Chunking c;
  c.interleaved = interleaved;
  if (k == 0) return c;
  const int64_t min_chunk = interleaved ? kMinInterleavedChunk : kMinChunk;
  const int64_t target = interleaved ? kInterleavedParallelism : kTargetParallelism;
  const int64_t by_length = (k + min_chunk - 1) / min_chunk;
  const int64_t by_parallelism = std::max<int64_t>(1, target / std::max<int64_t>(m, 1));
  c.chunks = std::max<int64_t>(1, std::min(by_length, by_parallelism));
  c.length = (k + c.chunks - 1) / c.chunks;
  c.chunks = (k + c.length - 1) / c.length;
  return c;
}

// The input seen two ways: `outer` walks the kept dims (one position per output, with the
// output's own offsets), `inner` the reduced dims of one output.
struct ReduceGeometry {
  OffsetCalc<2> outer;  // {out, in}
  OffsetCalc<1> inner;  // {in}
  int64_t m = 1;
  int64_t k = 1;
};

ReduceGeometry reduce_geometry(const Tensor& out, const Tensor& in,
                               const std::vector<bool>& reduce_dim) {
  DimVector kept_sizes, out_strides, in_kept_strides, red_sizes, red_strides;
  ReduceGeometry g;
  for (size_t d = 0; d < reduce_dim.size(); ++d) {
    const int64_t size = in.sizes()[d];
    if (reduce_dim[d]) {
      red_sizes.push_back(size);
      red_strides.push_back(in.strides()[d]);
      g.k *= size;
    } else {
      kept_sizes.push_back(size);
      out_strides.push_back(out.strides()[d]);
      in_kept_strides.push_back(in.strides()[d]);
      g.m *= size;
    }
  }
  const Tensor out_kept = restride(out, kept_sizes, out_strides);
  const Tensor in_kept = restride(in, kept_sizes, in_kept_strides);
  const Tensor in_red = restride(in, red_sizes, red_strides);
  g.outer = make_offset_calc<2>({&out_kept, &in_kept});
  g.inner = make_offset_calc<1>({&in_red});
  return g;
}

// The elements of chunk c of output o, for the pair i = o * C + c: their input offsets.
struct ChunkWalk {
  const char* in;
  OffsetCalc<2> outer;
  OffsetCalc<1> inner;
  int64_t k;
  Chunking chunk;
  // The chunk's first and past-the-end element numbers and its step, and the input offset of
  // its output.
  MG_HOST_DEVICE void range(int64_t i, int64_t* base, int64_t* begin, int64_t* end,
                            int64_t* step) const {
    int64_t off[2];
    outer.get(i / chunk.chunks, off);
    *base = off[1];
    if (chunk.interleaved) {
      *begin = i % chunk.chunks;
      *end = k;
      *step = chunk.chunks;
      return;
    }
    *begin = i % chunk.chunks * chunk.length;
    *end = *begin + chunk.length < k ? *begin + chunk.length : k;
    *step = 1;
  }
  template <typename T>
  MG_HOST_DEVICE T element(int64_t base, int64_t j) const {
    int64_t off[1];
    inner.get(j, off);
    return at<T>(in, base + off[0]);
  }
};

// Pass 1: partial[o * C + c] = Op over chunk c of output o's elements.
template <typename T, typename A, typename Op>
struct PartialReduce {
  ChunkWalk walk;
  A* partial;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t base, begin, end, step;
    walk.range(i, &base, &begin, &end, &step);
    A acc = Op::identity();
    for (int64_t j = begin; j < end; j += step) {
      acc = Op::combine(acc, static_cast<A>(walk.template element<T>(base, j)));
    }
    partial[i] = acc;
  }
};

// A finishing level: next[o * G + g] = Op over partial[o * C + g * kFanIn ...] (at most kFanIn
// of output o's C partials, in order), G = ceil(C / kFanIn). Grouping keeps the order, so max,
// min and their nan and first-maximum rules give what one fold would.
template <typename A, typename Op>
struct CombineLevel {
  const A* partial;
  A* next;
  int64_t chunks;  // C
  int64_t groups;  // G
  MG_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t o = i / groups, g = i % groups;
    const int64_t begin = o * chunks + g * kFanIn;
    const int64_t end = begin + kFanIn < (o + 1) * chunks ? begin + kFanIn : (o + 1) * chunks;
    A acc = partial[begin];
    for (int64_t j = begin + 1; j < end; ++j) acc = Op::combine(acc, partial[j]);
    next[i] = acc;
  }
};

// Pass 2: out[o] = Op over partial[o * C .. o * C + C), in order; mean divides by K.
template <typename Out, typename A, typename Op>
struct FinishReduce {
  const A* partial;
  char* out;
  OffsetCalc<2> outer;
  int64_t chunks;
  bool mean;
  double count;
  MG_HOST_DEVICE void operator()(int64_t o) const {
    A acc = partial[o * chunks];
    for (int64_t c = 1; c < chunks; ++c) acc = Op::combine(acc, partial[o * chunks + c]);
    int64_t off[2];
    outer.get(o, off);
    if constexpr (std::is_floating_point_v<A>) {
      if (mean) acc = acc / static_cast<A>(count);  // 0 / 0 is nan, as PyTorch
    }
    at<Out>(out, off[0]) = convert_value<Out>(acc);
  }
};

// Sums and products take interleaved chunks (their order is free within the summation error
// bound); max and min keep contiguous ones, whose in-order combination is the CPU's fold.
template <typename T, typename A, typename Op>
void run_reduce(const Tensor& out, const Tensor& in, const ReduceGeometry& g, bool mean,
                bool interleaved) {
  const Chunking chunk = chunking(g.m, g.k, interleaved);
  Tensor partial = device_buffer(g.m * chunk.chunks, scalar_type_of<A>(), out.device());
  A* p = reinterpret_cast<A*>(device_data(partial));
  launch("reduce", g.m * chunk.chunks,
         PartialReduce<T, A, Op>{ChunkWalk{device_data(in), g.outer, g.inner, g.k, chunk}, p});
  // Fold many partials per output in levels of kFanIn, so no thread walks thousands of them.
  int64_t chunks = chunk.chunks;
  while (chunks > kFanIn) {
    const int64_t groups = (chunks + kFanIn - 1) / kFanIn;
    Tensor next = device_buffer(g.m * groups, scalar_type_of<A>(), out.device());
    A* q = reinterpret_cast<A*>(device_data(next));
    launch("reduce", g.m * groups, CombineLevel<A, Op>{p, q, chunks, groups});
    partial = next;  // the old buffer returns to the cache, behind the queued kernel
    p = q;
    chunks = groups;
  }
  dispatch_compute_dtype(out.dtype(), [&](auto out_tag) {
    using Out = typename decltype(out_tag)::type;
    launch("reduce", g.m,
           FinishReduce<Out, A, Op>{p, device_data(out), g.outer, chunks, mean,
                                    static_cast<double>(g.k)});
  });
}

template <typename T>
MG_HOST_DEVICE bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// The CPU's argmax rule: v replaces best when it is larger, or a nan while best is not.
template <typename T>
MG_HOST_DEVICE bool better(T v, T best) {
  return !is_nan(best) && (is_nan(v) || v > best);
}

template <typename T>
struct PartialArgmax {
  ChunkWalk walk;
  T* best_value;
  int64_t* best_index;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t base, begin, end, step;
    walk.range(i, &base, &begin, &end, &step);  // contiguous chunks: step 1
    T best = walk.template element<T>(base, begin);
    int64_t best_i = begin;
    for (int64_t j = begin + 1; j < end; ++j) {
      const T v = walk.template element<T>(base, j);
      if (better(v, best)) {
        best = v;
        best_i = j;
      }
    }
    best_value[i] = best;
    best_index[i] = best_i;
  }
};

template <typename T>
struct FinishArgmax {
  const T* best_value;
  const int64_t* best_index;
  char* out;
  OffsetCalc<2> outer;
  int64_t chunks;
  MG_HOST_DEVICE void operator()(int64_t o) const {
    T best = best_value[o * chunks];
    int64_t best_i = best_index[o * chunks];
    for (int64_t c = 1; c < chunks; ++c) {
      if (better(best_value[o * chunks + c], best)) {
        best = best_value[o * chunks + c];
        best_i = best_index[o * chunks + c];
      }
    }
    int64_t off[2];
    outer.get(o, off);
    at<int64_t>(out, off[0]) = best_i;
  }
};

}  // namespace

void reduce_kernel(ReduceOp op, const Tensor& out, const Tensor& in,
                   const std::vector<bool>& reduce_dim) {
  const ReduceGeometry g = reduce_geometry(out, in, reduce_dim);
  const bool float_acc = is_floating_point(out.dtype());
  const bool mean = op == ReduceOp::kMean;
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        if (float_acc)
          run_reduce<T, double, SumOp<double>>(out, in, g, mean, true);
        else
          run_reduce<T, int64_t, SumOp<int64_t>>(out, in, g, mean, true);
        break;
      case ReduceOp::kProd:
        if (float_acc)
          run_reduce<T, double, ProdOp<double>>(out, in, g, mean, true);
        else
          run_reduce<T, int64_t, ProdOp<int64_t>>(out, in, g, mean, true);
        break;
      // Integer and bool max/min do not depend on the order (no nan, no -0.0): interleaved.
      case ReduceOp::kMax:
        run_reduce<T, T, MaxOp<T>>(out, in, g, mean, !std::is_floating_point_v<T>);
        break;
      case ReduceOp::kMin:
        run_reduce<T, T, MinOp<T>>(out, in, g, mean, !std::is_floating_point_v<T>);
        break;
    }
  });
}

void argmax_kernel(const Tensor& out, const Tensor& in, int64_t dim) {
  std::vector<bool> reduce_dim(static_cast<size_t>(in.dim()), false);
  reduce_dim[static_cast<size_t>(dim)] = true;
  const ReduceGeometry g = reduce_geometry(out, in, reduce_dim);
  const Chunking chunk = chunking(g.m, g.k);  // k >= 1: native refuses an empty line
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor values = device_buffer(g.m * chunk.chunks, in.dtype(), out.device());
    Tensor indices = device_buffer(g.m * chunk.chunks, kInt64, out.device());
    T* v = reinterpret_cast<T*>(device_data(values));
    int64_t* ix = reinterpret_cast<int64_t*>(device_data(indices));
    launch("argmax", g.m * chunk.chunks,
           PartialArgmax<T>{ChunkWalk{device_data(in), g.outer, g.inner, g.k, chunk}, v, ix});
    launch("argmax", g.m, FinishArgmax<T>{v, ix, device_data(out), g.outer, chunk.chunks});
  });
}

namespace {

// One thread per line along the scanned dim, folding it in order in the CPU's accumulator type
// (double for floating dtypes): a line of at most one block (Note [Blocked association order]
// in tensor/blocked_order.h), the CPU backend's bits.
template <typename T, typename Combine>
struct ScanLines {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  char* out;
  const char* in;
  OffsetCalc<2> calc;  // over the line starts
  int64_t len;
  int64_t out_step;  // bytes
  int64_t in_step;
  A init;
  Combine combine;
  MG_HOST_DEVICE void operator()(int64_t line) const {
    int64_t off[2];
    calc.get(line, off);
    A acc = init;
    for (int64_t i = 0; i < len; ++i) {
      acc = combine(acc, static_cast<A>(at<T>(in, off[1] + i * in_step)));
      at<T>(out, off[0] + i * out_step) = static_cast<T>(acc);
    }
  }
};

#ifndef __CUDACC__
// A longer line in the blocked order in one pass, one thread per line: each block folds its
// partial l from its own first element and writes carry . l, the carry moving on at the block's
// end; block 0 folds from init. The same association as the three passes below (the same bits),
// reading the line once: the host-run build's path when its threads have a line each (Note
// [Host-run scans]). Host code only.
//
// Note [Two blocks at once]
// The fold of one block is a chain of dependent combines, each waiting for the one before: the
// in-order loop's cost, and one combine more per element for the carry. Blocks b and b + 1
// fold as two independent chains instead; b + 1's partials wait in `later` (one block of A on
// the stack) until b's end gives their carry, then go out in a second, independent pass. Each
// element gets the same combines in the same order: the same bits.
template <typename T, typename Combine>
struct ScanLinesBlocked : ScanLines<T, Combine> {
  using A = typename ScanLines<T, Combine>::A;
  void operator()(int64_t line) const {
    int64_t off[2];
    this->calc.get(line, off);
    const char* in = this->in + off[1];
    char* out = this->out + off[0];
    const int64_t len = this->len;
    auto load = [&](int64_t i) { return static_cast<A>(at<T>(in, i * this->in_step)); };
    auto store = [&](int64_t i, A v) { at<T>(out, i * this->out_step) = static_cast<T>(v); };
    const int64_t first = len < blocked::kBlock ? len : blocked::kBlock;
    A carry = this->init;
    for (int64_t i = 0; i < first; ++i) {
      carry = this->combine(carry, load(i));
      store(i, carry);
    }
    int64_t b = first;
    A later[blocked::kBlock];
    for (; b + 2 * blocked::kBlock <= len; b += 2 * blocked::kBlock) {
      const int64_t b2 = b + blocked::kBlock;
      A l = load(b), m = load(b2);
      store(b, this->combine(carry, l));
      later[0] = m;
      for (int64_t i = 1; i < blocked::kBlock; ++i) {
        l = this->combine(l, load(b + i));
        m = this->combine(m, load(b2 + i));
        store(b + i, this->combine(carry, l));
        later[i] = m;
      }
      carry = this->combine(carry, l);
      for (int64_t i = 0; i < blocked::kBlock; ++i) store(b2 + i, this->combine(carry, later[i]));
      carry = this->combine(carry, m);
    }
    for (; b < len; b += blocked::kBlock) {
      const int64_t e = b + blocked::kBlock < len ? b + blocked::kBlock : len;
      A l = load(b);
      store(b, this->combine(carry, l));
      for (int64_t i = b + 1; i < e; ++i) {
        l = this->combine(l, load(i));
        store(i, this->combine(carry, l));
      }
      carry = this->combine(carry, l);
    }
  }
};
#endif

// A longer line in the blocked order's three passes, over items (line, block) = line * nb +
// block: the same association as the CPU's (tensor/cpu/scan.cc), so the same bits.
template <typename T, typename Combine>
struct BlockedScanPass {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  char* out;
  const char* in;
  OffsetCalc<2> calc;  // over the line starts
  int64_t len;
  int64_t nb;
  int64_t out_step;  // bytes
  int64_t in_step;
  A init;
  Combine combine;
  A* carry;  // per item: the block's partial, then (from block 1) its carry
  MG_HOST_DEVICE A load(const int64_t* off, int64_t i) const {
    return static_cast<A>(at<T>(in, off[1] + i * in_step));
  }
  MG_HOST_DEVICE void store(const int64_t* off, int64_t i, A v) const {
    at<T>(out, off[0] + i * out_step) = static_cast<T>(v);
  }
};

// Pass 1: each block's partial; block 0 folded from init.
template <typename T, typename Combine>
struct ScanPartials : BlockedScanPass<T, Combine> {
  MG_HOST_DEVICE void operator()(int64_t item) const {
    using A = typename BlockedScanPass<T, Combine>::A;
    int64_t off[2];
    this->calc.get(item / this->nb, off);
    const int64_t b = item % this->nb * blocked::kBlock;
    const int64_t e = b + blocked::kBlock < this->len ? b + blocked::kBlock : this->len;
    A acc = b == 0 ? this->combine(this->init, this->load(off, 0)) : this->load(off, b);
    for (int64_t i = b + 1; i < e; ++i) acc = this->combine(acc, this->load(off, i));
    this->carry[item] = acc;
  }
};

// Pass 2, one thread per line: the partials become carries, in order.
template <typename T, typename Combine>
struct ScanCarries : BlockedScanPass<T, Combine> {
  MG_HOST_DEVICE void operator()(int64_t line) const {
    using A = typename BlockedScanPass<T, Combine>::A;
    A* c = this->carry + line * this->nb;
    A acc = c[0];
    for (int64_t j = 1; j < this->nb; ++j) {
      const A partial = c[j];
      c[j] = acc;
      acc = this->combine(acc, partial);
    }
  }
};

// Pass 3: each block rescanned from its carry (block 0 from init, in order).
template <typename T, typename Combine>
struct ScanOutputs : BlockedScanPass<T, Combine> {
  MG_HOST_DEVICE void operator()(int64_t item) const {
    using A = typename BlockedScanPass<T, Combine>::A;
    int64_t off[2];
    this->calc.get(item / this->nb, off);
    const int64_t j = item % this->nb;
    const int64_t b = j * blocked::kBlock;
    const int64_t e = b + blocked::kBlock < this->len ? b + blocked::kBlock : this->len;
    if (j == 0) {
      A acc = this->init;
      for (int64_t i = 0; i < e; ++i) {
        acc = this->combine(acc, this->load(off, i));
        this->store(off, i, acc);
      }
      return;
    }
    const A c = this->carry[item];
    A l = this->load(off, b);
    this->store(off, b, this->combine(c, l));
    for (int64_t i = b + 1; i < e; ++i) {
      l = this->combine(l, this->load(off, i));
      this->store(off, i, this->combine(c, l));
    }
  }
};

}  // namespace

void scan_kernel(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim) {
  const size_t d = static_cast<size_t>(dim);
  DimVector line_sizes(out.sizes());
  line_sizes[d] = 1;
  const Tensor out_starts = restride(out, line_sizes, out.strides());
  const Tensor in_starts = restride(in, line_sizes, in.strides());
  const OffsetCalc<2> calc = make_offset_calc<2>({&out_starts, &in_starts});
  const int64_t lines = out_starts.numel();
  const int64_t len = in.sizes()[d];
  const int64_t nb = blocked::num_blocks(len);
  const int64_t out_step = out.strides()[d] * out.element_size();
  const int64_t in_step = in.strides()[d] * in.element_size();
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    native::dispatch_combine(op, [&](auto combine) {
      using Combine = decltype(combine);
      using A = typename ScanLines<T, Combine>::A;
      const A init = op == ReduceOp::kProd ? A(1) : A(0);
      if (nb == 1) {
        launch("scan", lines,
               ScanLines<T, Combine>{device_data(out), device_data(in), calc, len, out_step,
                                     in_step, init, combine});
        return;
      }
#ifndef __CUDACC__
      // Note [Host-run scans]
      // The three passes pay a carry buffer, three launches and a second read of the line, which
      // a GPU repays with a thread per block; the host-run build's few CPU threads gain nothing
      // from them once every thread has a line: there one pass per line gives the same bits at
      // the in-order loop's cost (docs/performance/blocked-orders.md). Fewer lines than threads
      // (one long line) still take the passes, so the host-run tests check their bits too.
      if (lines >= host_threads()) {
        launch("scan", lines,
               ScanLinesBlocked<T, Combine>{{device_data(out), device_data(in), calc, len, out_step,
                                             in_step, init, combine}});
        return;
      }
#endif
      const Tensor carry_buf =
          device_buffer(lines * nb * static_cast<int64_t>(sizeof(A)), kUInt8, out.device());
      const BlockedScanPass<T, Combine> pass{device_data(out),
                                             device_data(in),
                                             calc,
                                             len,
                                             nb,
                                             out_step,
                                             in_step,
                                             init,
                                             combine,
                                             reinterpret_cast<A*>(device_data(carry_buf))};
      launch("scan", lines * nb, ScanPartials<T, Combine>{pass});
      launch("scan", lines, ScanCarries<T, Combine>{pass});
      launch("scan", lines * nb, ScanOutputs<T, Combine>{pass});
    });
  });
}

}  // namespace mutagrad::cuda
