// One-pass optimizer steps: see fused_optim.h (Note [Fused optimizer steps]). The loops are
// compiled per CPU capability (fused_optim_impl.h, Note [Fused steps per capability]); this file
// splits the range across threads and calls the build in use.
#include "tensor/cpu/fused_optim.h"

#include <type_traits>

#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vec_kernels.h"

namespace mutagrad::cpu {

template <typename T>
void adam_step(const AdamStep<T>& s) {
  const VecKernels& vk = vec_kernels();
  parallel_for(s.n, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      vk.adam_f32(s, begin, end);
    else
      vk.adam_f64(s, begin, end);
  });
}

template <typename T>
void sgd_step(const SGDStep<T>& s) {
  const VecKernels& vk = vec_kernels();
  parallel_for(s.n, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      vk.sgd_f32(s, begin, end);
    else
      vk.sgd_f64(s, begin, end);
  });
}

template void adam_step<float>(const AdamStep<float>&);
template void adam_step<double>(const AdamStep<double>&);
template void sgd_step<float>(const SGDStep<float>&);
template void sgd_step<double>(const SGDStep<double>&);

}  // namespace mutagrad::cpu
