// One-pass optimizer steps over contiguous float32/float64 CPU memory, for optim/'s SGD, Adam
// and AdamW: each element goes through the same sequence of roundings as the op-by-op step
// (torch 1.13's _single_tensor_* formulas as optim/ writes them), so the parameters and the
// state come out bitwise equal, without the step's temporaries and with one read and one write
// of each array instead of one per op.
//
//   cpu::AdamStep<float> s{param, grad, exp_avg, exp_avg_sq, nullptr, n};
//   s.beta1 = 0.9; ...; cpu::adam_step(s);
//
// Note [Fused optimizer steps]
// The op-by-op step rounds after every op: mul_ by a number in the tensor's dtype, add_(g,
// alpha) and addcmul_ as one fused multiply-add each (Note [Torch's fused multiply-adds] in
// tensor/native/fma.h), sqrt, the division by a number and addcdiv_ in the dtype.
// Every op is element-wise, so doing the whole sequence for one element before the next gives
// the same values as doing each op over the whole array; these loops repeat each op's formula
// from tensor/cpu/scalar_inplace.cc and pointwise.cc, and tests/optim/fused_step_test checks
// bit equality against the op-by-op path for every option. Callers check the operands
// (contiguous, one dtype and size, no overlap) and bump the versions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mutagrad::cpu {

template <typename T>
struct AdamStep {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;  // amsgrad's, else null
  int64_t n;
  double beta1 = 0.9, beta2 = 0.999, lr = 1e-3, weight_decay = 0, eps = 1e-8;
  double step_size = 0;              // lr / (1 - beta1^step)
  double bias_correction2_sqrt = 1;  // sqrt(1 - beta2^step)
  bool maximize = false;
  bool decoupled = false;  // AdamW: the parameter decays; Adam: the gradient gets wd * param
};

template <typename T>
struct SGDStep {
  T* param;
  const T* grad;
  T* momentum_buffer;  // null without momentum (or before the buffer exists)
  int64_t n;
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
};

// steps[0, count) as one pass over all their elements, split between two threads by the total
// (torch's foreach over a group: Note [One pass per group] in optim/fused.h). Each element's
// update reads and writes that element only, so the result is each step's alone as long as the
// steps share no memory, which the caller makes sure of.
template <typename T>
void adam_steps(const AdamStep<T>* steps, size_t count);
template <typename T>
void sgd_steps(const SGDStep<T>* steps, size_t count);

}  // namespace mutagrad::cpu
