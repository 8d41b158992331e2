// The order of sort, topk, kthvalue and searchsorted, shared by the CPU and CUDA kernels
// (tensor/cpu/sort.cc, cuda/sort.cu): NaN is greater than every number and equal to NaN, as
// PyTorch's sort; -0.0 equals 0.0. A strict weak order, so a stable sort's result is unique.
//
//   std::stable_sort(v.begin(), v.end(), SortBefore<float>{descending});
//   if (!sort_order_greater_equal(mid, value)) lo = mid + 1;   // searchsorted's lower bound
#pragma once

#include <cstdint>
#include <type_traits>

#include "tensor/host_device.h"

namespace mutagrad {

template <typename T>
MG_HOST_DEVICE bool sort_is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// a comes strictly before b: a < b ascending, a > b descending, NaN as the greatest.
template <typename T>
struct SortBefore {
  bool descending = false;
  MG_HOST_DEVICE bool operator()(T a, T b) const {
    if (descending) return (sort_is_nan(a) && !sort_is_nan(b)) || a > b;
    return (!sort_is_nan(a) && sort_is_nan(b)) || a < b;
  }
};

// The tests of PyTorch's searchsorted binary search (plain IEEE comparisons, as torch's
// cus_lower_bound / cus_upper_bound): the lower bound moves right while !(mid >= value), the
// upper bound while !(mid > value).
template <typename T>
MG_HOST_DEVICE int64_t search_line(const char* line, int64_t step, int64_t n, T value, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const T m = *reinterpret_cast<const T*>(line + mid * step);
    const bool go_right = right ? !(m > value) : !(m >= value);
    if (go_right) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace mutagrad
