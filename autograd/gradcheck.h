// gradcheck / gradgradcheck: analytic Jacobians (from backward) against float64 central
// differences, for every (input, output) pair. On failure the result carries a report naming
// the pair and the worst element (analytic vs numeric), and GoogleTest prints it:
//
//   Tensor x = randn({3, 4}, gen, kFloat64).requires_grad_();
//   EXPECT_TRUE(autograd::gradcheck([](const VariableList& in) { return in[0].sigmoid(); }, {x}));
//   EXPECT_TRUE(autograd::gradgradcheck(fn, {x, w}));
//
// Inputs that require grad are differentiated and must be float64 (unless require_float64 is
// false); the others are passed through. Numeric perturbations write the inputs' memory directly
// (no version bump) and restore it bit for bit. The checks follow torch 1.13's gradcheck, in its
// order: the Jacobians (every element, or with fast_mode one random projection v^T J u each), each
// backward run twice and compared within nondet_tol, then check_batched_grad, backward with zero
// grad_outputs gives zeros, then check_undefined_grad. See Note [gradcheck's checks] in
// gradcheck.cc. A failing check gives a report; an exception thrown by fn or by a backward
// (other than a mutagrad Error during the undefined-grad check) propagates.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "autograd/functional.h"

namespace mutagrad::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  uint64_t seed = 0;  // the random vectors: fast_mode, check_batched_grad, gradgradcheck
  // Each backward runs twice; the results must agree within this (0: bit for bit).
  double nondet_tol = 0.0;
  // Backward through outputs whose gradient is undefined (all at once, and with several
  // outputs one at a time) must not fail and must give undefined or zero input gradients.
  bool check_undefined_grad = true;
  // Each input gradient must have its input's dtype and device.
  bool check_grad_dtypes = false;
  // Backward for several random grad_outputs, each computed twice on fresh graphs, must agree
  // (mutagrad has no vmap: the batch is a loop; see Note [gradcheck's checks]).
  bool check_batched_grad = false;
  // Compare v^T J u for random unit u (per input) and v (per output) instead of every
  // Jacobian element: one backward per output and two evaluations per input.
  bool fast_mode = false;
  // Also compare the Jacobians from forward-mode jvps (autograd/forward_ad.h) with the numeric
  // ones, every element (as torch's check_forward_ad).
  bool check_forward_ad = false;
  // false: inputs requiring grad may be any floating dtype (the Python binding warns instead).
  bool require_float64 = true;
  // gradgradcheck's random grad_outputs are non-contiguous (every other element of a buffer).
  bool gen_non_contig_grad_outputs = false;
  // During the undefined-grad check, a mutagrad Error thrown by a backward fails the check;
  // other exceptions propagate unless this returns true for them (the Python binding: a
  // Python RuntimeError, as torch catches RuntimeError there).
  std::function<bool(const std::exception&)> is_backward_failure;
};

class GradcheckResult {
 public:
  GradcheckResult(bool ok, std::string report) : ok_(ok), report_(std::move(report)) {}
  bool ok() const { return ok_; }
  // Empty when ok; otherwise what failed, where, and by how much.
  const std::string& report() const { return report_; }
  explicit operator bool() const { return ok_; }

  // Converts to ::testing::AssertionResult (detected by shape, so this header does not need
  // GoogleTest): EXPECT_TRUE(gradcheck(...)) then prints the report on failure.
  template <typename R,
            typename = std::enable_if_t<
                std::is_constructible_v<R, bool> &&
                std::is_same_v<decltype(std::declval<R&>().failure_message()), const char*>>>
  operator R() const {  // NOLINT: implicit by design
    R result(ok_);
    if (!ok_) result << "\n" << report_;
    return result;
  }

 private:
  bool ok_;
  std::string report_;
};

GradcheckResult gradcheck(const TensorFunction& fn, const VariableList& inputs,
                          const GradcheckOptions& options = {});
// gradcheck of (inputs, v) -> grad(fn(inputs), inputs, v, create_graph=true) with random v
// (one per output that requires grad), or the given grad_outputs (those requiring grad are
// differentiated too).
GradcheckResult gradgradcheck(const TensorFunction& fn, const VariableList& inputs,
                              const GradcheckOptions& options = {});
GradcheckResult gradgradcheck(const TensorFunction& fn, const VariableList& inputs,
                              const VariableList& grad_outputs,
                              const GradcheckOptions& options = {});

}  // namespace mutagrad::autograd
