// GradMode: whether differentiable ops record graph nodes on this thread.
//
//   {
//     NoGradGuard guard;            // ops below record nothing (in-place ops still bump)
//     w.sub_(lr * w.grad());
//   }
//   bool on = GradMode::is_enabled();  // true again
#pragma once

namespace mutagrad::autograd {

class GradMode {
 public:
  static bool is_enabled() { return enabled_; }
  static void set_enabled(bool enabled) { enabled_ = enabled; }

 private:
  static inline thread_local bool enabled_ = true;
};

// Sets grad mode for a scope and restores the previous value on exit.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

// PyTorch's torch.no_grad() / torch.enable_grad() as scope guards.
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

}  // namespace mutagrad::autograd

namespace mutagrad {
using autograd::EnableGradGuard;
using autograd::GradMode;
using autograd::NoGradGuard;
}  // namespace mutagrad
