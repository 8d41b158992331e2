// One-pass optimizer steps: see fused_optim.h (Note [Fused optimizer steps]). The loops are
// compiled per CPU capability (fused_optim_impl.h, Note [Fused steps per capability]); this file
// splits the steps' elements across threads and calls the build in use.
#include "tensor/cpu/fused_optim.h"

#include <algorithm>
#include <type_traits>

#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vec_kernels.h"

namespace mutagrad::cpu {

namespace {

// Units of 16 elements: a thread's part of a step starts on a 64-byte boundary of its arrays
// (CPU tensors are 64-byte aligned). Split at any element, the second thread's loads of a
// million-parameter SGD step straddled cache lines and took up to 10 % longer.
constexpr int64_t kUnit = 16;

// The elements of steps[0, count) in order, as one range of units split between the threads;
// each step's part of a thread's half goes to kernel(step, begin, end) in the step's own
// element indices.
template <typename Step, typename Kernel>
void run_over(const Step* steps, size_t count, const Kernel& kernel) {
  int64_t units = 0;
  for (size_t k = 0; k < count; ++k) units += (steps[k].n + kUnit - 1) / kUnit;
  const auto run_units = [&](int64_t begin, int64_t end) {
    int64_t offset = 0;  // the first unit of step k
    for (size_t k = 0; k < count && offset < end; ++k) {
      const int64_t n_units = (steps[k].n + kUnit - 1) / kUnit;
      const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + n_units);
      if (lo < hi) {
        kernel(steps[k], (lo - offset) * kUnit, std::min(steps[k].n, (hi - offset) * kUnit));
      }
      offset += n_units;
    }
  };
  parallel_for(units, run_units, kParallelThreshold / kUnit);
}

}  // namespace

template <typename T>
void adam_steps(const AdamStep<T>* steps, size_t count) {
  const VecKernels& vk = vec_kernels();
  run_over(steps, count, [&vk](const AdamStep<T>& s, int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      vk.adam_f32(s, begin, end);
    else
      vk.adam_f64(s, begin, end);
  });
}

template <typename T>
void sgd_steps(const SGDStep<T>* steps, size_t count) {
  const VecKernels& vk = vec_kernels();
  run_over(steps, count, [&vk](const SGDStep<T>& s, int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      vk.sgd_f32(s, begin, end);
    else
      vk.sgd_f64(s, begin, end);
  });
}

template void adam_steps<float>(const AdamStep<float>*, size_t);
template void adam_steps<double>(const AdamStep<double>*, size_t);
template void sgd_steps<float>(const SGDStep<float>*, size_t);
template void sgd_steps<double>(const SGDStep<double>*, size_t);

}  // namespace mutagrad::cpu
