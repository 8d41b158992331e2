// CUDA kernels of advanced indexing: gather (index) and scatter (index_put, with and without
// accumulate); the CPU's are in tensor/cpu/indexing.cc. Both walk the loop of
// Note [The index loop] (tensor/native/index_ops.h).
//
//   index_kernel(out, self, adv.indices);                 // out = self[indices]
//   index_put_kernel(self, adv.indices, values, {true});  // self[indices] += values
//
// Note [Deterministic index_put_ on the device]
// The CPU writes the elements of the indexed shape R in row-major order, so for one
// destination the last occurrence wins and accumulation adds in index order. A GPU runs the
// elements of R at once, so a plain scatter would race on duplicates. Here: one kernel writes,
// for every position r of R, its destination offset (the key) and r; a stable sort by key
// groups the writes to one destination and keeps them in index order; then, without
// accumulate, the position that ends its group writes (the last occurrence), and with
// accumulate the position that starts its group adds the group's values to the destination
// one by one, in index order, in the dtype, as the CPU does. So both builds, and a GPU, give
// the CPU's bits for any data, duplicates included; a destination with k duplicates costs
// one thread k steps. On a GPU the sort is CUB's stable radix sort over only the key bits the
// destination's storage needs (22 for 4M elements instead of 64), its scratch memory from the
// caching allocator; the host-run build sorts with Thrust. Without accumulate and when the
// destination's span is not much larger than the write, no sort: Note [index_put_ without a
// sort].
//
// Note [index_put_ without a sort]
// The last write in index order wins, so the winner of a destination is the largest position r
// of R that writes it. Pass 1 records, per destination element, max(r + 1) in a zeroed buffer
// of the destination's span (atomicMax on a GPU; a compare-and-swap loop in the host-run
// build); pass 2 lets each r whose record is r + 1 write its value. Two passes over R and a
// fill of the span instead of a sort: any order of the atomics gives the same maximum, so the
// result is deterministic and the CPU's bits. Taken when the span is at most kWinnerSpanRatio
// times the write plus kWinnerSpanSlack elements (else the fill would dominate: the sort runs);
// positions are 32-bit when R has fewer than 2^32 - 1 elements. The host-run build takes it
// only for spans of at most kHostWinnerSpan elements: on one CPU core the two passes' random
// accesses to a span beyond the caches cost more than the sort's ordered writes (1M into 4M:
// about 7 % more CPU time), while a GPU hides that latency.
//
// Note [Checked reads and one flag]
// A gather checks its index values in its own kernel (Backend::index_checked): an element
// whose value lies outside [lower, size) reads nothing and sets a flag in device memory; the
// flag is read once after the kernel (one synchronization per gather, none per index tensor).
// index_in_range() screens an index tensor with one kernel that sets the same kind of flag
// (the screen before a write: Note [Index validation on the device] in
// tensor/native/index_ops.cc). Flags are set with an atomic OR, only by offending elements.
#include <thrust/functional.h>
#include <thrust/scan.h>
#include <thrust/sort.h>

#ifdef __CUDACC__
#include <cub/device/device_radix_sort.cuh>
#endif

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/blocked_order.h"
#include "tensor/element_math.h"
#include "tensor/native/index_ops.h"

namespace mutagrad::cuda {
namespace {

constexpr int kMaxIndexOperands = 8;

// Note [The index loop] as a value a kernel can take (fixed arrays, device pointers; dims
// innermost first).
struct IndexGeometry {
  int nd = 0;
  int ni = 0;
  int64_t sizes[kMaxKernelDims] = {};
  int64_t self_strides[kMaxKernelDims] = {};
  int64_t dense_strides[kMaxKernelDims] = {};
  const int64_t* idx_data[kMaxIndexOperands] = {};
  int64_t idx_strides[kMaxIndexOperands][kMaxKernelDims] = {};
  int64_t idx_size[kMaxIndexOperands] = {};
  int64_t idx_stride[kMaxIndexOperands] = {};

  // The offsets (elements) in self and in the dense operand of row-major position r of R; with
  // `check`, false when an index value lies outside [lower_j, size_j) (lower_j is -size_j when
  // `wraps`, else 0), the offsets then unset.
  template <bool check = false>
  MG_HOST_DEVICE bool offsets(int64_t r, int64_t* self_off, int64_t* dense_off,
                              bool wraps = true) const {
    // Constant indices only: Note [No dynamic indexing in kernels] in cuda/kernel_util.h.
    int64_t s = 0, o = 0;
    int64_t io[kMaxIndexOperands] = {};
    MG_UNROLL
    for (int d = 0; d < kMaxKernelDims; ++d) {
      if (d == nd) break;
      int64_t c = r;
      if (d + 1 < nd) {
        c = r % sizes[d];
        r /= sizes[d];
      }
      s += c * self_strides[d];
      o += c * dense_strides[d];
      MG_UNROLL
      for (int j = 0; j < kMaxIndexOperands; ++j) {
        if (j == ni) break;
        io[j] += c * idx_strides[j][d];
      }
    }
    MG_UNROLL
    for (int j = 0; j < kMaxIndexOperands; ++j) {
      if (j == ni) break;
      int64_t v = idx_data[j][io[j]];
      if (check && (v >= idx_size[j] || v < (wraps ? -idx_size[j] : 0))) return false;
      v += v < 0 ? idx_size[j] : 0;
      s += v * idx_stride[j];
    }
    *self_off = s;
    *dense_off = o;
    return true;
  }
};

// *flag |= bits, from any number of threads at once.
MG_HOST_DEVICE inline void flag_or(int* flag, int bits) {
#ifdef __CUDA_ARCH__
  atomicOr(flag, bits);
#else
  __atomic_fetch_or(flag, bits, __ATOMIC_RELAXED);
#endif
}

// *p = max(*p, v), from any number of threads at once (P: uint32_t or unsigned long long).
template <typename P>
MG_HOST_DEVICE void atomic_max(P* p, P v) {
#ifdef __CUDA_ARCH__
  atomicMax(p, v);
#else
  P cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (cur < v &&
         !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}

// A zeroed int flag on the device, and its value once every kernel before the read is done.
struct DeviceFlag {
  Tensor buf;
  explicit DeviceFlag(Device device) : buf(device_buffer(1, kInt32, device)) {
    launch("index check", 1, Zero{ptr()});
  }
  int* ptr() const { return reinterpret_cast<int*>(device_data(buf)); }
  int read() const {
    int value = 0;
    runtime().memcpy(&value, ptr(), sizeof(int), CopyKind::kDeviceToHost);
    return value;
  }
  struct Zero {
    int* p;
    MG_HOST_DEVICE void operator()(int64_t) const { *p = 0; }
  };
};

IndexGeometry geometry(const Tensor& self, const std::vector<Tensor>& indices,
                       const Tensor& dense) {
  const native::IndexLoop loop = native::make_index_loop(self, indices, dense);
  IndexGeometry g;
  if (loop.sizes.size() > static_cast<size_t>(kMaxKernelDims) ||
      loop.idx.size() > static_cast<size_t>(kMaxIndexOperands)) {
    throw DeviceError(str("CUDA indexing kernels take at most ", kMaxKernelDims,
                          " dims in the indexed shape and ", kMaxIndexOperands,
                          " index tensors; this one has ", loop.sizes.size(), " and ",
                          loop.idx.size(), ". Index in two steps or reshape first"));
  }
  g.nd = static_cast<int>(loop.sizes.size());
  g.ni = static_cast<int>(loop.idx.size());
  // Innermost dim first, so that the kernel's loop indexes with constants.
  for (int d = 0; d < g.nd; ++d) {
    const size_t from = static_cast<size_t>(g.nd - 1 - d);
    g.sizes[d] = loop.sizes[from];
    g.self_strides[d] = loop.self_strides[from];
    g.dense_strides[d] = loop.dense_strides[from];
  }
  for (int j = 0; j < g.ni; ++j) {
    const native::IndexLoop::Operand& op = loop.idx[static_cast<size_t>(j)];
    g.idx_data[j] = reinterpret_cast<const int64_t*>(device_data(op.index));
    for (int d = 0; d < g.nd; ++d) {
      g.idx_strides[j][d] = op.strides[static_cast<size_t>(g.nd - 1 - d)];
    }
    g.idx_size[j] = op.size;
    g.idx_stride[j] = op.stride;
  }
  return g;
}

int64_t loop_numel(const IndexGeometry& g) {
  int64_t n = 1;
  for (int d = 0; d < g.nd; ++d) n *= g.sizes[d];
  return n;
}

template <typename T>
struct GatherFunctor {
  T* out;
  const T* self;
  IndexGeometry g;
  MG_HOST_DEVICE void operator()(int64_t r) const {
    int64_t s, o;
    g.offsets(r, &s, &o);
    out[o] = self[s];
  }
};

// The gather with its own check (Note [Checked reads and one flag]).
template <typename T>
struct GatherChecked {
  T* out;
  const T* self;
  IndexGeometry g;
  int* flag;
  bool wraps;
  MG_HOST_DEVICE void operator()(int64_t r) const {
    int64_t s, o;
    if (g.offsets<true>(r, &s, &o, wraps)) {
      out[o] = self[s];
    } else {
      flag_or(flag, 1);
    }
  }
};

// Sets *flag when a value of the index tensor lies outside [lower, size).
struct RangeScreen {
  const char* idx;
  OffsetCalc<1> calc;
  int64_t lower;
  int64_t size;
  int* flag;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[1];
    calc.get(i, off);
    const int64_t v = at<int64_t>(idx, off[0]);
    if (v < lower || v >= size) flag_or(flag, 1);
  }
};

// Pass 1 of Note [index_put_ without a sort]: each destination records its last writer + 1.
template <typename P>
struct ClaimLast {
  P* winner;
  IndexGeometry g;
  MG_HOST_DEVICE void operator()(int64_t r) const {
    int64_t s, o;
    g.offsets(r, &s, &o);
    atomic_max(winner + s, static_cast<P>(r + 1));
  }
};

// Pass 2: the recorded writer writes.
template <typename T, typename P>
struct PutWinner {
  T* dst;
  const T* values;
  const P* winner;
  IndexGeometry g;
  MG_HOST_DEVICE void operator()(int64_t r) const {
    int64_t s, o;
    g.offsets(r, &s, &o);
    if (winner[s] == static_cast<P>(r + 1)) dst[s] = values[o];
  }
};

template <typename P>
struct ZeroFill {
  P* p;
  MG_HOST_DEVICE void operator()(int64_t i) const { p[i] = 0; }
};

constexpr int64_t kWinnerSpanRatio = 16;
constexpr int64_t kWinnerSpanSlack = int64_t{1} << 20;

// Whether index_put_kernel finds winners without a sort (Note [index_put_ without a sort]).
bool winner_pass_fits(int64_t span, int64_t n) {
  if (span <= 0 || span > kWinnerSpanRatio * n + kWinnerSpanSlack) return false;
#ifdef __CUDACC__
  return true;
#else
  constexpr int64_t kHostWinnerSpan = int64_t{1} << 20;
  return span <= kHostWinnerSpan;
#endif
}

// The elements from dst's first element to its last (dst without negative strides), or -1.
int64_t element_span(const Tensor& dst) {
  int64_t span = 1;
  for (int64_t d = 0; d < dst.dim(); ++d) {
    if (dst.stride(d) < 0) return -1;
    span += (dst.size(d) - 1) * dst.stride(d);
  }
  return span;
}

template <typename P>
void put_winners(const Tensor& dst, const Tensor& values, const IndexGeometry& g, int64_t n,
                 int64_t span, const IndexPutDescriptor& desc) {
  const ScalarType pos_dtype = sizeof(P) == 4 ? kInt32 : kInt64;
  Tensor winner_buf = device_buffer(span, pos_dtype, dst.device());
  P* winner = reinterpret_cast<P*>(device_data(winner_buf));
  launch("index_put_", span, ZeroFill<P>{winner});
  launch("index_put_", n, ClaimLast<P>{winner, g});
  desc.before_write();  // Note [Allocate before the bump]
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("index_put_", n,
           PutWinner<T, P>{reinterpret_cast<T*>(device_data(dst)),
                           reinterpret_cast<const T*>(device_data(values)), winner, g});
  });
}

struct ScatterKeys {
  int64_t* keys;
  int64_t* order;
  IndexGeometry g;
  MG_HOST_DEVICE void operator()(int64_t r) const {
    int64_t s, o;
    g.offsets(r, &s, &o);
    keys[r] = s;
    order[r] = r;
  }
};

// The sorted writes: keys[p] is the destination of the p-th write in key order, order[p] its
// position in R (ascending within one key).
template <typename T>
struct SortedWrites {
  T* dst;
  const T* values;
  const int64_t* keys;
  const int64_t* order;
  int64_t n;
  IndexGeometry g;
};

// Without accumulate: the last position of each group of equal keys writes.
template <typename T>
struct PutLast : SortedWrites<T> {
  MG_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t* keys = this->keys;
    const int64_t n = this->n;
    if (p + 1 < n && keys[p + 1] == keys[p]) return;
    int64_t s, o;
    this->g.offsets(this->order[p], &s, &o);
    this->dst[s] = this->values[o];
  }
};

// With accumulate: the first position of each group folds the group's values into the
// destination with `combine` (math::AddValues, MulValues, Max/MinValues), in the order of Note
// [Blocked accumulation order] (tensor/blocked_order.h) where the order matters, else in index
// order. With `start`, the group folds into *start instead (IndexPutDescriptor::start). One
// thread per group: the host-run build's path on one thread (Note [Accumulating groups]).
template <typename T, typename Combine>
struct AccumulateGroup : SortedWrites<T> {
  Combine combine;
  const T* start;
  MG_HOST_DEVICE T value(int64_t q) const {
    int64_t s, o;
    this->g.offsets(this->order[q], &s, &o);
    return this->values[o];
  }
  MG_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t* keys = this->keys;
    if (p > 0 && keys[p - 1] == keys[p]) return;
    const int64_t key = keys[p];
    T acc = start != nullptr ? *start : this->dst[key];
    if constexpr (blocked::order_matters<T, Combine>()) {
      int64_t m = 1;
      while (p + m < this->n && keys[p + m] == key) ++m;
      acc = blocked::fold(
          acc, m, [this, p](int64_t k) { return value(p + k); }, combine);
    } else {
      for (int64_t q = p; q < this->n && keys[q] == key; ++q) acc = combine(acc, value(q));
    }
    this->dst[key] = acc;
  }
};

// Note [Accumulating groups]
// One thread folding a group of a million equal keys is a million dependent steps on a GPU. So
// where the order matters, the groups fold in the blocked order in three kernels: each position
// finds its group's first position (a max-scan of the group starts); each position that starts
// a later block of its group (rank a positive multiple of kBlock) folds that block in order into
// its partial; each group's first position folds its first block into the destination and
// chains the partials. The same association as AccumulateGroup's blocked::fold: the same bits.
// The host-run build runs these kernels when it has more than one thread (so its tests check
// their bits) and AccumulateGroup, one pass at the old cost, on one.

// gs[p]: p where p starts its group, else 0 (then max-scanned into each group's start).
struct GroupStarts {
  const int64_t* keys;
  int64_t* gs;
  MG_HOST_DEVICE void operator()(int64_t p) const {
    gs[p] = p == 0 || keys[p - 1] != keys[p] ? p : 0;
  }
};

template <typename T, typename Combine>
struct BlockPartials : AccumulateGroup<T, Combine> {
  const int64_t* gs;
  T* partial;
  MG_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t rank = p - gs[p];
    if (rank == 0 || rank % blocked::kBlock != 0) return;
    const int64_t key = this->keys[p];
    T l = this->value(p);
    for (int64_t q = p + 1; q < p + blocked::kBlock && q < this->n && this->keys[q] == key; ++q) {
      l = this->combine(l, this->value(q));
    }
    partial[p] = l;
  }
};

template <typename T, typename Combine>
struct ChainPartials : BlockPartials<T, Combine> {
  MG_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t* keys = this->keys;
    if (p > 0 && keys[p - 1] == keys[p]) return;
    const int64_t key = keys[p];
    T acc = this->start != nullptr ? *this->start : this->dst[key];
    int64_t q = p;
    for (; q < p + blocked::kBlock && q < this->n && keys[q] == key; ++q) {
      acc = this->combine(acc, this->value(q));
    }
    for (; q < this->n && keys[q] == key; q += blocked::kBlock) {
      acc = this->combine(acc, this->partial[q]);
    }
    this->dst[key] = acc;
  }
};

}  // namespace

void index_kernel(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices) {
  const IndexGeometry g = geometry(self, indices, out);
  dispatch_dtype(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("index", loop_numel(g),
           GatherFunctor<T>{reinterpret_cast<T*>(device_data(out)),
                            reinterpret_cast<const T*>(device_data(self)), g});
  });
}

bool index_checked_kernel(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices,
                          bool negative_wraps) {
  const IndexGeometry g = geometry(self, indices, out);
  const DeviceFlag flag(self.device());
  dispatch_dtype(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("index", loop_numel(g),
           GatherChecked<T>{reinterpret_cast<T*>(device_data(out)),
                            reinterpret_cast<const T*>(device_data(self)), g, flag.ptr(),
                            negative_wraps});
  });
  return flag.read() == 0;
}

bool index_in_range_kernel(const Tensor& idx, int64_t lower, int64_t size) {
  if (idx.numel() == 0) return true;
  if (idx.dim() > kMaxKernelDims) {
    throw DeviceError(str("CUDA indexing kernels take at most ", kMaxKernelDims,
                          " dims in an index tensor; this one has ", idx.dim(),
                          ". Reshape it first"));
  }
  const DeviceFlag flag(idx.device());
  launch("index check", idx.numel(),
         RangeScreen{device_data(idx), make_offset_calc<1>({&idx}), lower, size, flag.ptr()});
  return flag.read() == 0;
}

void index_put_kernel(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                      const IndexPutDescriptor& desc) {
  const IndexGeometry g = geometry(dst, indices, values);
  const int64_t n = loop_numel(g);
  if (n == 0) return;
  MG_INTERNAL_ASSERT(desc.start == nullptr || desc.accumulate,
                     "index_put_: start without accumulate");
  const int64_t span = element_span(dst);
  if (!desc.accumulate && winner_pass_fits(span, n)) {
    if (n < int64_t{0xffffffff}) {
      put_winners<uint32_t>(dst, values, g, n, span, desc);
    } else {
      put_winners<unsigned long long>(dst, values, g, n, span, desc);
    }
    return;
  }
  Tensor keys_buf = device_buffer(n, kInt64, dst.device());
  Tensor order_buf = device_buffer(n, kInt64, dst.device());
  int64_t* keys = reinterpret_cast<int64_t*>(device_data(keys_buf));
  int64_t* order = reinterpret_cast<int64_t*>(device_data(order_buf));
  launch("index_put_", n, ScatterKeys{keys, order, g});
#ifdef __CUDACC__
  // CUB's radix sort is stable and takes a bit range; Thrust's sorts all 64 bits. Keys are
  // element offsets from dst's first element, below what its storage holds past it: only that
  // many low bits need sorting.
  const int64_t key_limit =
      static_cast<int64_t>(dst.storage().nbytes()) / dst.element_size() - dst.storage_offset();
  int end_bit = 1;
  while (end_bit < 63 && (int64_t{1} << end_bit) < key_limit) ++end_bit;
  Tensor keys_sorted = device_buffer(n, kInt64, dst.device());
  Tensor order_sorted = device_buffer(n, kInt64, dst.device());
  auto* keys_in = reinterpret_cast<const uint64_t*>(keys);
  auto* keys_out = reinterpret_cast<uint64_t*>(device_data(keys_sorted));
  auto* order_out = reinterpret_cast<int64_t*>(device_data(order_sorted));
  const auto stream = static_cast<cudaStream_t>(runtime().stream());
  size_t temp_bytes = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, order,
                                                    order_out, n, 0, end_bit, stream);
  Tensor temp = device_buffer(static_cast<int64_t>(temp_bytes) + 1, kUInt8, dst.device());
  if (err == cudaSuccess) {
    err = cub::DeviceRadixSort::SortPairs(device_data(temp), temp_bytes, keys_in, keys_out, order,
                                          order_out, n, 0, end_bit, stream);
  }
  if (err != cudaSuccess) {
    throw DeviceError(str("index_put_: the CUDA sort failed: ", cudaGetErrorString(err)));
  }
  keys = reinterpret_cast<int64_t*>(keys_out);
  order = order_out;
#else
  try {
    thrust::stable_sort_by_key(host_sort_policy(), keys, keys + n, order);
  } catch (const thrust::system_error& e) {
    throw DeviceError(str("index_put_: the CUDA sort failed: ", e.what()));
  }
#endif
  dispatch_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = reinterpret_cast<T*>(device_data(dst));
    const T* v = reinterpret_cast<const T*>(device_data(values));
    const SortedWrites<T> writes{d, v, keys, order, n, g};
    if (!desc.accumulate) {
      desc.before_write();  // every temporary exists: Note [Allocate before the bump]
      launch("index_put_", n, PutLast<T>{writes});
      return;
    }
    const T* start =
        desc.start != nullptr ? reinterpret_cast<const T*>(device_data(*desc.start)) : nullptr;
    native::dispatch_combine(desc.reduce, [&](auto combine) {
      using Combine = decltype(combine);
      const AccumulateGroup<T, Combine> groups{writes, combine, start};
      bool chained = blocked::order_matters<T, Combine>() && n > blocked::kBlock;
#ifndef __CUDACC__
      chained = chained && host_threads() > 1;  // Note [Accumulating groups]
#endif
      if (!chained) {
        desc.before_write();
        launch("index_put_", n, groups);
        return;
      }
      // Note [Accumulating groups]: the partials read no destination, so they come before the
      // bump, as every temporary (Note [Allocate before the bump]).
      Tensor gs_buf = device_buffer(n, kInt64, dst.device());
      Tensor partial_buf = device_buffer(n, dst.dtype(), dst.device());
      int64_t* gs = reinterpret_cast<int64_t*>(device_data(gs_buf));
      launch("index_put_", n, GroupStarts{keys, gs});
      try {
        thrust::inclusive_scan(exec_policy(), gs, gs + n, gs, thrust::maximum<int64_t>());
      } catch (const thrust::system_error& e) {
        throw DeviceError(str("index_put_: the CUDA scan failed: ", e.what()));
      }
      const BlockPartials<T, Combine> partials{groups, gs,
                                               reinterpret_cast<T*>(device_data(partial_buf))};
      launch("index_put_", n, partials);
      desc.before_write();
      launch("index_put_", n, ChainPartials<T, Combine>{partials});
    });
  });
}

}  // namespace mutagrad::cuda
