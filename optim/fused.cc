// fusable, bump_for_step, FusedSteps: see fused.h.
#include "optim/fused.h"

#include <algorithm>

#include "autograd/forward_ad.h"
#include "tensor/native/copy.h"

namespace mutagrad::optim::detail {

bool fusable(const Tensor& param, std::initializer_list<const Tensor*> operands) {
  // Inside a dual level a parameter or gradient may carry a tangent, which the op-by-op step
  // updates too (Note [Tangents under mutation] in autograd/forward_ad.h).
  if (forward_ad::current_level().has_value()) return false;
  const ScalarType t = param.dtype();
  if (!param.device().is_cpu() || (t != kFloat32 && t != kFloat64) || !param.is_contiguous()) {
    return false;
  }
  for (const Tensor* op : operands) {
    if (!op->defined() || op->dtype() != t || !op->device().is_cpu() || !op->is_contiguous() ||
        !op->sizes().equals(param.sizes()) || native::may_overlap(*op, param)) {
      return false;
    }
    for (const Tensor* other : operands) {
      if (other != op && native::may_overlap(*op, *other)) return false;
    }
  }
  return true;
}

void bump_for_step(std::initializer_list<const Tensor*> written, const MutationSite& site) {
  for (const Tensor* t : written) t->version_counter().bump(site, t->unsafe_impl());
}

namespace {

template <typename T>
void add_range(std::vector<std::pair<uintptr_t, uintptr_t>>& ranges, const T* p, int64_t n) {
  if (p == nullptr || n == 0) return;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  ranges.emplace_back(begin, begin + static_cast<uintptr_t>(n) * sizeof(T));
}

template <typename T>
void add_ranges(std::vector<std::pair<uintptr_t, uintptr_t>>& ranges, const cpu::SGDStep<T>& s) {
  add_range(ranges, s.param, s.n);
  add_range(ranges, s.grad, s.n);
  add_range(ranges, s.momentum_buffer, s.n);
}

template <typename T>
void add_ranges(std::vector<std::pair<uintptr_t, uintptr_t>>& ranges, const cpu::AdamStep<T>& s) {
  add_range(ranges, s.param, s.n);
  add_range(ranges, s.grad, s.n);
  add_range(ranges, s.exp_avg, s.n);
  add_range(ranges, s.exp_avg_sq, s.n);
  add_range(ranges, s.max_exp_avg_sq, s.n);
}

template <typename T>
void run_steps(const cpu::SGDStep<T>* steps, size_t count) {
  cpu::sgd_steps(steps, count);
}
template <typename T>
void run_steps(const cpu::AdamStep<T>* steps, size_t count) {
  cpu::adam_steps(steps, count);
}

}  // namespace

bool FusedSteps::ranges_disjoint() {
  std::sort(ranges_.begin(), ranges_.end());
  for (size_t i = 1; i < ranges_.size(); ++i) {
    if (ranges_[i].first < ranges_[i - 1].second) return false;
  }
  return true;
}

template <typename Step>
void FusedSteps::run(std::vector<Step>& q) {
  if (q.empty()) return;
  ranges_.clear();
  for (const Step& s : q) add_ranges(ranges_, s);
  if (ranges_disjoint()) {
    run_steps(q.data(), q.size());
  } else {
    for (const Step& s : q) run_steps(&s, 1);  // aliasing parameters: in order, one by one
  }
  q.clear();
}

void FusedSteps::run() {
  run(sgd_f32_);
  run(sgd_f64_);
  run(adam_f32_);
  run(adam_f64_);
}

}  // namespace mutagrad::optim::detail
