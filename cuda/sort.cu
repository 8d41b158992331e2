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
// thread. A segmented Thrust/CUB radix sort would fix that at the price of a key transform
// that reproduces the NaN and -0.0 order; left for when a benchmark asks for it.
// searchsorted: one thread per value, torch's binary search on its line.
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
