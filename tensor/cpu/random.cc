// The CPU's random kernel: random_value<T> (tensor/random_draw.h) per element, split between
// threads by parallel_for. Each element depends on its index alone, so the split changes no bit.
// The Philox words come a few blocks of kPhiloxBlock counters at a time from the per-capability
// kernels (Note [Vectorized Philox] in vec_philox_impl.h), the distributions' formulas then run
// per element; a tail shorter than a block takes the scalar rounds.
#include <algorithm>
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/random_draw.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

void CpuBackend::random(const Tensor& out, const RandomParams& params) {
  MG_INTERNAL_ASSERT(out.is_contiguous(), "random: out must be contiguous");
  dispatch_compute_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.raw_data());
    const VecKernels& vk = vec_kernels();
    // The distribution chosen once, outside the loop over elements.
    auto draw = [&](auto d) {
      parallel_for(
          out.numel(),
          [&](int64_t begin, int64_t end) {
            constexpr RandomDist kDist = decltype(d)::value;
            constexpr int64_t kChunk = 2 * kPhiloxBlock;
            uint32_t words[4 * kChunk];
            int64_t i = begin;
            while (end - i >= kPhiloxBlock) {  // whole blocks, then the tail one by one
              const int64_t m = std::min(kChunk, (end - i) / kPhiloxBlock * kPhiloxBlock);
              vk.philox(params.offset + static_cast<uint64_t>(i), params.seed, m, words);
              for (int64_t j = 0; j < m; ++j) {
                const uint32_t* w = words + 4 * j;
                p[i + j] = random_from_words<T, kDist>(params, Philox4{{w[0], w[1], w[2], w[3]}});
              }
              i += m;
            }
            for (; i < end; ++i) p[i] = random_value_as<T, kDist>(params, i);
          },
          kParallelThresholdCostly);
    };
    switch (params.dist) {
      case RandomDist::kUniform:
        return draw(std::integral_constant<RandomDist, RandomDist::kUniform>{});
      case RandomDist::kNormal:
        return draw(std::integral_constant<RandomDist, RandomDist::kNormal>{});
      case RandomDist::kExponential:
        return draw(std::integral_constant<RandomDist, RandomDist::kExponential>{});
      case RandomDist::kBernoulli:
        return draw(std::integral_constant<RandomDist, RandomDist::kBernoulli>{});
      case RandomDist::kInteger:
        return draw(std::integral_constant<RandomDist, RandomDist::kInteger>{});
    }
  });
}

}  // namespace mutagrad::cpu
