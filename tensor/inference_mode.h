// Inference mode (torch.inference_mode), per thread. A tensor made while it is on is an
// inference tensor: its version counter is marked when created, so its views (which share the
// counter) are inference tensors too, while a view made in inference mode of a normal tensor
// stays normal, as torch's rules. An inference tensor's writes are not counted; one outside
// inference mode is refused before it changes anything (VersionCounter::bump), and autograd
// refuses to save one for backward (SavedVariable). Grad mode is the caller's to turn off
// (Python's mutagrad.inference_mode does both).
//
//   { InferenceModeGuard guard; NoGradGuard no_grad; Tensor y = model(x); }   // y.is_inference()
#pragma once

namespace mutagrad {

namespace detail {
inline thread_local bool g_inference_mode = false;
// Throws torch's error for an in-place write to an inference tensor outside inference mode.
[[noreturn]] void throw_inference_tensor_write();
}  // namespace detail

class InferenceMode {
 public:
  static bool is_enabled() { return detail::g_inference_mode; }
  static void set_enabled(bool enabled) { detail::g_inference_mode = enabled; }
};

class InferenceModeGuard {
 public:
  explicit InferenceModeGuard(bool enabled = true) : prev_(InferenceMode::is_enabled()) {
    InferenceMode::set_enabled(enabled);
  }
  ~InferenceModeGuard() { InferenceMode::set_enabled(prev_); }
  InferenceModeGuard(const InferenceModeGuard&) = delete;
  InferenceModeGuard& operator=(const InferenceModeGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace mutagrad
