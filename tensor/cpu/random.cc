// The CPU's random kernel: random_value<T> (tensor/random_draw.h) per element, split between
// threads by parallel_for. Each element depends on its index alone, so the split changes no bit.
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/random_draw.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

void CpuBackend::random(const Tensor& out, const RandomParams& params) {
  MG_INTERNAL_ASSERT(out.is_contiguous(), "random: out must be contiguous");
  dispatch_compute_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.raw_data());
    // The distribution chosen once, outside the loop over elements.
    auto draw = [&](auto d) {
      parallel_for(
          out.numel(),
          [&](int64_t begin, int64_t end) {
            constexpr RandomDist kDist = decltype(d)::value;
            // kBatch elements' Philox words at a time (philox4x32_10_batch), then their values.
            constexpr int kBatch = 8;
            int64_t i = begin;
            for (; i + kBatch <= end; i += kBatch) {
              uint64_t counters[kBatch];
              for (int j = 0; j < kBatch; ++j) {
                counters[j] = params.offset + static_cast<uint64_t>(i + j);
              }
              Philox4 words[kBatch];
              philox4x32_10_batch(counters, params.seed, words);
              for (int j = 0; j < kBatch; ++j) {
                p[i + j] = random_from_words<T, kDist>(params, words[j]);
              }
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
