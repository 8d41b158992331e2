// CPU sort (stable, per line along one dim) and searchsorted; the CUDA kernels are in
// cuda/sort.cu and give the same results (the order is tensor/sort_order.h's).
//
// sort: each line is copied into (value, index) pairs, std::stable_sort'ed with SortBefore and
// written back; lines run in parallel (parallel.h). A stable sort under a strict weak order has
// one result, so any stable algorithm (the CUDA merge sort included) gives the same indices.
#include <algorithm>
#include <utility>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/sort_order.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

Tensor restrided(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector(sizes), DimVector(strides),
                                        t.storage_offset(), t.dtype(), VersionCounter()));
}

}  // namespace

void CpuBackend::sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                      bool descending) {
  if (values.numel() == 0) return;
  const size_t d = static_cast<size_t>(dim);
  const int64_t len = in.sizes()[d];
  const int64_t v_step = values.strides()[d] * values.element_size();
  const int64_t i_step = indices.strides()[d] * indices.element_size();
  const int64_t in_step = in.strides()[d] * in.element_size();
  DimVector line_sizes(in.sizes());
  line_sizes[d] = 1;
  // One element per line: the start of each line of the three operands.
  const Tensor v_starts = restrided(values, line_sizes, values.strides());
  const Tensor i_starts = restrided(indices, line_sizes, indices.strides());
  const Tensor in_starts = restrided(in, line_sizes, in.strides());
  StridedLoop<3> it({&v_starts, &i_starts, &in_starts});
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const SortBefore<T> before{descending};
    // Lines in parallel once there is enough work (each line costs len log len).
    parallel_for(
        it.numel(),
        [&](int64_t begin, int64_t end) {
          std::vector<std::pair<T, int64_t>> line(static_cast<size_t>(len));
          it.run(begin, end, [&](char** p, const int64_t* s, int64_t n) {
            for (int64_t k = 0; k < n; ++k) {
              const char* x = p[2] + k * s[2];
              for (int64_t i = 0; i < len; ++i) {
                line[static_cast<size_t>(i)] = {*reinterpret_cast<const T*>(x + i * in_step), i};
              }
              std::stable_sort(line.begin(), line.end(), [&](const auto& a, const auto& b) {
                return before(a.first, b.first);
              });
              char* v = p[0] + k * s[0];
              char* ix = p[1] + k * s[1];
              for (int64_t i = 0; i < len; ++i) {
                *reinterpret_cast<T*>(v + i * v_step) = line[static_cast<size_t>(i)].first;
                *reinterpret_cast<int64_t*>(ix + i * i_step) = line[static_cast<size_t>(i)].second;
              }
            }
          });
        },
        std::max<int64_t>(1, kParallelThreshold / std::max<int64_t>(len, 1)));
  });
}

void CpuBackend::searchsorted(const Tensor& out, const Tensor& sorted, const Tensor& values,
                              bool right) {
  if (out.numel() == 0) return;
  const int64_t last = sorted.dim() - 1;
  const int64_t n = sorted.sizes()[static_cast<size_t>(last)];
  const int64_t step = sorted.strides()[static_cast<size_t>(last)] * sorted.element_size();
  // sorted seen with values' shape: each element is the start of its line (stride 0 on the
  // last dim).
  DimVector starts_strides(sorted.strides());
  starts_strides[static_cast<size_t>(last)] = 0;
  const Tensor starts = restrided(sorted, values.sizes(), starts_strides);
  StridedLoop<3> it({&out, &values, &starts});
  const bool int32_out = out.dtype() == kInt32;
  dispatch_compute_dtype(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(it.numel(), [&](int64_t begin, int64_t end) {
      it.run(begin, end, [&](char** p, const int64_t* s, int64_t count) {
        for (int64_t k = 0; k < count; ++k) {
          const T value = *reinterpret_cast<const T*>(p[1] + k * s[1]);
          const int64_t pos = search_line<T>(p[2] + k * s[2], step, n, value, right);
          if (int32_out) {
            *reinterpret_cast<int32_t*>(p[0] + k * s[0]) = static_cast<int32_t>(pos);
          } else {
            *reinterpret_cast<int64_t*>(p[0] + k * s[0]) = pos;
          }
        }
      });
    });
  });
}

}  // namespace mutagrad::cpu
