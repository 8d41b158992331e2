// CUDA sort (stable, per line along one dim) and searchsorted; the CPU's are in
// tensor/cpu/sort.cc.
//
//   sort_kernel(values, indices, in, /*dim=*/1, /*descending=*/false);
//   searchsorted_kernel(out, sorted, values, /*right=*/false);
//
// Note [Sorting lines on the device]
// One thread per line runs a bottom-up merge sort of (value, index) pairs in two scratch
// buffers (2 x numel values and 2 x numel int64 indices from the caching allocator), taking the
// left run's element on ties, so it is stable; under tensor/sort_order.h's strict weak order a
// stable sort has exactly one result, the CPU's std::stable_sort's: values and indices agree bit
// for bit. Cost: O(len log len) serial work per line and no parallelism inside a line, so it
// suits many short lines (the usual sort(dim=-1) of a batch); a single long line runs on one
// thread; long lines take a radix sort instead (Note [Long lines: a radix sort]).
// searchsorted: one thread per value, torch's binary search on its line.
//
// Note [Long lines: a radix sort]
// A line of at least kRadixLineLength elements is sorted by a stable radix sort of
// (key, position) pairs, where the key is an unsigned integer whose order is
// tensor/sort_order.h's: the value's bits with the sign handled so that unsigned order is
// numeric order, -0.0 first turned into +0.0 (they are equal), every NaN the largest key (all
// NaNs equal), and for a descending sort the key's complement (so NaN first, as the CPU's
// descending order, and ties still in index order). A stable sort has one result, so the
// values (read back from the input at the sorted positions: -0.0 stays -0.0) and indices are
// the merge sort's and the CPU's. On a GPU: CUB's DeviceRadixSort for one line,
// DeviceSegmentedRadixSort for several, scratch from the caching allocator. Host-run: Thrust's
// stable_sort_by_key on each line's keys (the same keys, so the key transform is tested there),
// for up to kHostRadixLines lines; more lines keep the merge sort's parallelism over lines.
#include <thrust/sort.h>

#include <cstring>
#include <type_traits>

#ifdef __CUDACC__
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#endif

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/sort_order.h"

namespace mutagrad::cuda {
namespace {

template <typename T>
struct SortLines {
  char* values;
  char* indices;
  const char* in;
  T* scratch;          // 2 * lines * len values: buffer A then buffer B
  int64_t* scratch_i;  // the same for the indices
  OffsetCalc<3> calc;  // over the line starts of values, indices, in
  int64_t lines;
  int64_t len;
  int64_t v_step;  // bytes
  int64_t i_step;
  int64_t in_step;
  bool descending;

  MG_HOST_DEVICE void operator()(int64_t line) const {
    int64_t off[3];
    calc.get(line, off);
    const int64_t total = lines * len;
    T* a = scratch + line * len;
    int64_t* ai = scratch_i + line * len;
    T* b = scratch + total + line * len;
    int64_t* bi = scratch_i + total + line * len;
    for (int64_t i = 0; i < len; ++i) {
      a[i] = at<T>(in, off[2] + i * in_step);
      ai[i] = i;
    }
    const SortBefore<T> before{descending};
    for (int64_t width = 1; width < len; width *= 2) {
      for (int64_t lo = 0; lo < len; lo += 2 * width) {
        const int64_t mid = lo + width < len ? lo + width : len;
        const int64_t hi = lo + 2 * width < len ? lo + 2 * width : len;
        int64_t l = lo, r = mid, o = lo;
        while (l < mid && r < hi) {
          // The right element goes first only when strictly before: ties keep index order.
          if (before(a[r], a[l])) {
            b[o] = a[r];
            bi[o++] = ai[r++];
          } else {
            b[o] = a[l];
            bi[o++] = ai[l++];
          }
        }
        while (l < mid) {
          b[o] = a[l];
          bi[o++] = ai[l++];
        }
        while (r < hi) {
          b[o] = a[r];
          bi[o++] = ai[r++];
        }
      }
      T* t = a;
      a = b;
      b = t;
      int64_t* ti = ai;
      ai = bi;
      bi = ti;
    }
    for (int64_t i = 0; i < len; ++i) {
      at<T>(values, off[0] + i * v_step) = a[i];
      at<int64_t>(indices, off[1] + i * i_step) = ai[i];
    }
  }
};

constexpr int64_t kRadixLineLength = 2048;

// The unsigned key type of T's radix sort.
template <typename T>
using RadixKey = std::conditional_t<sizeof(T) == 8, uint64_t,
                                    std::conditional_t<sizeof(T) == 4, uint32_t, uint8_t>>;

// Note [Long lines: a radix sort]: unsigned key order is SortBefore<T>{descending}'s order.
template <typename T>
MG_HOST_DEVICE RadixKey<T> radix_key(T x, bool descending) {
  using U = RadixKey<T>;
  U k;
  if constexpr (std::is_same_v<T, bool>) {
    k = x ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    k = static_cast<U>(static_cast<U>(x) ^ (U{1} << (8 * sizeof(T) - 1)));
  } else {
    const U sign = U{1} << (8 * sizeof(T) - 1);
    if (x != x) {
      k = static_cast<U>(~U{0});
    } else {
      U b = 0;
      if (x != 0) memcpy(&b, &x, sizeof(T));  // -0.0 as +0.0
      k = (b & sign) != 0 ? static_cast<U>(~b) : static_cast<U>(b | sign);
    }
  }
  return descending ? static_cast<U>(~k) : k;
}

// keys[i], pos[i] of element j of line l (i = l * len + j).
template <typename T>
struct MakeRadixKeys {
  RadixKey<T>* keys;
  int64_t* pos;
  const char* in;
  OffsetCalc<1> calc;  // over in's line starts
  int64_t len;
  int64_t in_step;  // bytes
  bool descending;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t line = i / len;
    const int64_t j = i - line * len;
    int64_t off[1];
    calc.get(line, off);
    keys[i] = radix_key(at<T>(in, off[0] + j * in_step), descending);
    pos[i] = j;
  }
};

// values[l, j] = in[l, pos[i]], indices[l, j] = pos[i] for the sorted positions.
template <typename T>
struct WriteSorted {
  char* values;
  char* indices;
  const char* in;
  const int64_t* pos;
  OffsetCalc<3> calc;  // over the line starts of values, indices, in
  int64_t len;
  int64_t v_step;  // bytes
  int64_t i_step;
  int64_t in_step;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t line = i / len;
    const int64_t j = i - line * len;
    int64_t off[3];
    calc.get(line, off);
    const int64_t p = pos[i];
    at<T>(values, off[0] + j * v_step) = at<T>(in, off[2] + p * in_step);
    at<int64_t>(indices, off[1] + j * i_step) = p;
  }
};

struct LineOffsets {
  int* offsets;
  int64_t len;
  MG_HOST_DEVICE void operator()(int64_t k) const { offsets[k] = static_cast<int>(k * len); }
};

// Sorts each line's (keys, pos) run stably by key, into (keys_out, pos_out) or in place;
// returns the sorted positions.
template <typename U>
const int64_t* radix_sort_lines(U* keys, int64_t* pos, U* keys_out, int64_t* pos_out, int64_t lines,
                                int64_t len, Device device) {
  const int64_t n = lines * len;
#ifdef __CUDACC__
  const auto stream = static_cast<cudaStream_t>(runtime().stream());
  const int items = static_cast<int>(n);
  size_t temp_bytes = 0;
  cudaError_t err = cudaSuccess;
  Tensor offsets_buf;
  int* offsets = nullptr;
  if (lines > 1) {
    offsets_buf = device_buffer(lines + 1, kInt32, device);
    offsets = reinterpret_cast<int*>(device_data(offsets_buf));
    launch("sort", lines + 1, LineOffsets{offsets, len});
  }
  auto run = [&](void* temp) {
    if (lines == 1) {
      return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_out, pos, pos_out, items,
                                             0, static_cast<int>(8 * sizeof(U)), stream);
    }
    return cub::DeviceSegmentedRadixSort::SortPairs(
        temp, temp_bytes, keys, keys_out, pos, pos_out, items, static_cast<int>(lines), offsets,
        offsets + 1, 0, static_cast<int>(8 * sizeof(U)), stream);
  };
  err = run(nullptr);
  Tensor temp = device_buffer(static_cast<int64_t>(temp_bytes) + 1, kUInt8, device);
  if (err == cudaSuccess) err = run(device_data(temp));
  if (err != cudaSuccess) {
    throw DeviceError(str("sort: the CUDA radix sort failed: ", cudaGetErrorString(err)));
  }
  return pos_out;
#else
  (void)device;
  try {
    for (int64_t l = 0; l < lines; ++l) {
      thrust::stable_sort_by_key(host_sort_policy(), keys + l * len, keys + (l + 1) * len,
                                 pos + l * len);
    }
  } catch (const thrust::system_error& e) {
    throw DeviceError(str("sort: the CUDA sort failed: ", e.what()));
  }
  (void)keys_out;
  (void)pos_out;
  (void)n;
  return pos;
#endif
}

// Whether sort_kernel takes the radix sort (Note [Long lines: a radix sort]).
bool radix_sorts(int64_t lines, int64_t len) {
  if (len < kRadixLineLength || lines * len >= (int64_t{1} << 31)) return false;
#ifdef __CUDACC__
  return true;
#else
  constexpr int64_t kHostRadixLines = 4;
  return lines <= kHostRadixLines;
#endif
}

template <typename T>
struct SearchValues {
  char* out;
  const char* values;
  const char* sorted;
  OffsetCalc<3> calc;  // over out, values, and sorted's line starts
  int64_t n;
  int64_t step;  // bytes
  bool right;
  bool int32_out;
  MG_HOST_DEVICE void operator()(int64_t i) const {
    int64_t off[3];
    calc.get(i, off);
    const int64_t pos = search_line<T>(sorted + off[2], step, n, at<T>(values, off[1]), right);
    if (int32_out) {
      at<int32_t>(out, off[0]) = static_cast<int32_t>(pos);
    } else {
      at<int64_t>(out, off[0]) = pos;
    }
  }
};

}  // namespace

void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                 bool descending) {
  const size_t d = static_cast<size_t>(dim);
  DimVector line_sizes(in.sizes());
  line_sizes[d] = 1;
  const Tensor v_starts = restride(values, line_sizes, values.strides());
  const Tensor i_starts = restride(indices, line_sizes, indices.strides());
  const Tensor in_starts = restride(in, line_sizes, in.strides());
  const OffsetCalc<3> calc = make_offset_calc<3>({&v_starts, &i_starts, &in_starts});
  const int64_t lines = v_starts.numel();
  const int64_t len = in.sizes()[d];
  if (radix_sorts(lines, len)) {
    const OffsetCalc<1> in_calc = make_offset_calc<1>({&in_starts});
    const int64_t n = lines * len;
    dispatch_compute_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using U = RadixKey<T>;
      const ScalarType key_dtype = sizeof(U) == 8 ? kInt64 : sizeof(U) == 4 ? kInt32 : kUInt8;
      const Tensor keys = device_buffer(2 * n, key_dtype, in.device());
      const Tensor pos = device_buffer(2 * n, kInt64, in.device());
      U* k = reinterpret_cast<U*>(device_data(keys));
      int64_t* p = reinterpret_cast<int64_t*>(device_data(pos));
      const int64_t in_step = in.strides()[d] * in.element_size();
      launch("sort", n, MakeRadixKeys<T>{k, p, device_data(in), in_calc, len, in_step, descending});
      const int64_t* sorted = radix_sort_lines<U>(k, p, k + n, p + n, lines, len, in.device());
      launch("sort", n,
             WriteSorted<T>{device_data(values), device_data(indices), device_data(in), sorted,
                            calc, len, values.strides()[d] * values.element_size(),
                            indices.strides()[d] * indices.element_size(), in_step});
    });
    return;
  }
  const Tensor scratch = device_buffer(2 * in.numel(), in.dtype(), in.device());
  const Tensor scratch_i = device_buffer(2 * in.numel(), kInt64, in.device());
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("sort", lines,
           SortLines<T>{device_data(values), device_data(indices), device_data(in),
                        reinterpret_cast<T*>(device_data(scratch)),
                        reinterpret_cast<int64_t*>(device_data(scratch_i)), calc, lines, len,
                        values.strides()[d] * values.element_size(),
                        indices.strides()[d] * indices.element_size(),
                        in.strides()[d] * in.element_size(), descending});
  });
}

void searchsorted_kernel(const Tensor& out, const Tensor& sorted, const Tensor& values,
                         bool right) {
  const size_t last = static_cast<size_t>(sorted.dim() - 1);
  DimVector starts_strides(sorted.strides());
  starts_strides[last] = 0;
  const Tensor starts = restride(sorted, values.sizes(), starts_strides);
  const OffsetCalc<3> calc = make_offset_calc<3>({&out, &values, &starts});
  dispatch_compute_dtype(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("searchsorted", out.numel(),
           SearchValues<T>{device_data(out), device_data(values), device_data(sorted), calc,
                           sorted.sizes()[last], sorted.strides()[last] * sorted.element_size(),
                           right, out.dtype() == kInt32});
  });
}

}  // namespace mutagrad::cuda
