// CPU kernels of the reads of the indexing family (index_kernel: out = self[indices], and the
// bounds screen index_in_range) and the indexing thread count. See tensor/cpu/indexing.h. The
// loop they share with the writes is tensor/cpu/index_loop.h; the writes are index_put.cc
// (Note [Deterministic index_put_ on the CPU]), masked_fill_ masked_fill.cc. A gather splits
// its output into one range per thread.
#include "tensor/cpu/indexing.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/index_loop.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/shape.h"

namespace mutagrad::cpu {

using namespace index_loop;  // the loop these kernels share with the writes

void set_indexing_num_threads(int n) { num_threads_slot().store(std::max(1, n)); }
int indexing_num_threads() { return num_threads_slot().load(std::memory_order_relaxed); }

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

void CpuBackend::masked_fill(const Tensor& dst, const Tensor& mask, const Scalar& value) {
  masked_fill_kernel(dst, mask, value);
}

}  // namespace mutagrad::cpu
