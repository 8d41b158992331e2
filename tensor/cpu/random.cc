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
            for (int64_t i = begin; i < end; ++i) {
              p[i] = random_value_as<T, decltype(d)::value>(params, i);
            }
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
