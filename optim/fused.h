// Internal to optim/: the pieces the optimizers share.
//
//   if (detail::fusable(param, {&grad, &exp_avg, &exp_avg_sq})) { ... one pass ... }
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "mutagrad.h"
#include "tensor/cpu/fused_optim.h"

namespace mutagrad::optim::detail {

// Whether a step may run as one pass over the parameter (Note [Fused optimizer steps] in
// tensor/cpu/fused_optim.h): outside every forward-AD level, a contiguous float32/float64 CPU
// parameter, and operands (gradient, state) of its dtype, sizes and layout that share no memory
// with it or with each other. Otherwise the optimizer takes its op-by-op path.
bool fusable(const Tensor& param, std::initializer_list<const Tensor*> operands);

// Bumps each tensor once for a fused step, with the step's site, before anything is written.
void bump_for_step(std::initializer_list<const Tensor*> written, const MutationSite& site);

// Note [One pass per group]
// torch's foreach and fused optimizers update a group's parameters together. Here update()
// bumps a fusable parameter's tensors and queues its one-pass step (Note [Fused optimizer
// steps] in tensor/cpu/fused_optim.h), and Optimizer::step runs the queue at the end of the
// group as one pass over all the queued elements, split between the two threads by their total:
// one start and join of the threads per group instead of one per parameter, and a model's many
// parameters below the parallel threshold share both threads. Each element's update reads and
// writes that element only, so every value is the one-parameter-at-a-time one when the queued
// steps share no memory; when they do (parameters that alias one another), the queue runs its
// steps one after another in order, as before. The group's writes keep their order: a step of
// another kind (float32 after float64, or an op-by-op update) runs the queue first, and so does
// an exception leaving update(), since every queued tensor was bumped and must be written.
class FusedSteps {
 public:
  template <typename Step>
  void add(const Step& step) {
    std::vector<Step>& q = queue<Step>();
    if (q.empty()) run();  // the steps of another kind go first
    q.push_back(step);
  }
  // Runs what is queued (one kind at most) and empties the queue.
  void run();

 private:
  template <typename Step>
  std::vector<Step>& queue() {
    if constexpr (std::is_same_v<Step, cpu::SGDStep<float>>) {
      return sgd_f32_;
    } else if constexpr (std::is_same_v<Step, cpu::SGDStep<double>>) {
      return sgd_f64_;
    } else if constexpr (std::is_same_v<Step, cpu::AdamStep<float>>) {
      return adam_f32_;
    } else {
      static_assert(std::is_same_v<Step, cpu::AdamStep<double>>, "a step of fused_optim.h");
      return adam_f64_;
    }
  }
  template <typename Step>
  void run(std::vector<Step>& q);
  // Whether the memory ranges in ranges_ are pairwise disjoint (sorts them).
  bool ranges_disjoint();

  std::vector<cpu::SGDStep<float>> sgd_f32_;
  std::vector<cpu::SGDStep<double>> sgd_f64_;
  std::vector<cpu::AdamStep<float>> adam_f32_;
  std::vector<cpu::AdamStep<double>> adam_f64_;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;  // scratch: [begin, end) in bytes
};

}  // namespace mutagrad::optim::detail
