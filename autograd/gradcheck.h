// gradcheck / gradgradcheck: analytic Jacobians (from backward) against float64 central
// differences, for every (input, output) pair. On failure the result carries a report naming
// the pair and the worst element (analytic vs numeric), and GoogleTest prints it:
//
//   Tensor x = randn({3, 4}, gen, kFloat64).requires_grad_();
//   EXPECT_TRUE(autograd::gradcheck([](const VariableList& in) { return in[0].sigmoid(); }, {x}));
//   EXPECT_TRUE(autograd::gradgradcheck(fn, {x, w}));
//
// Inputs that require grad are differentiated and must be float64; the others are passed
// through. Numeric perturbations write the inputs' memory directly (no version bump) and
// restore it bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "autograd/functional.h"

namespace mutagrad::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  uint64_t seed = 0;  // gradgradcheck's random grad_outputs
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
// gradcheck of (inputs, v) -> grad(fn(inputs), inputs, v, create_graph=true) with random v.
GradcheckResult gradgradcheck(const TensorFunction& fn, const VariableList& inputs,
                              const GradcheckOptions& options = {});

}  // namespace mutagrad::autograd
