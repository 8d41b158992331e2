// Anomaly mode: the stale-tensor error names where the needing node's forward ran: a
// provider's site, the C++ caller found on the stack without one, and the write's own line for
// a node an in-place write installed.
#include "autograd/stack_trace.h"
#include "grad_test_util.h"

// Outside namespace mutagrad: user code, as anomaly mode's stack walk sees it.
__attribute__((noinline)) mutagrad::Tensor user_square_loss(const mutagrad::Tensor& h) {
  mutagrad::Tensor loss = (h * h).sum();
  asm volatile("");  // no tail call: this frame stays on the stack
  return loss;
}

namespace mutagrad {
namespace {

using testing_util::leaf;

int g_line = 0;
CallSite test_site() { return CallSite{"model.py", g_line}; }

std::string stale_error(Tensor& loss) {
  try {
    loss.backward();
  } catch (const autograd::AutogradError& e) {
    return e.what();
  }
  return "";
}

TEST(AnomalyMode, StaleErrorNamesTheForwardSite) {
  autograd::set_forward_site_provider(&test_site);
  Tensor a = leaf({3}, 1);
  Tensor h = a * 2.0;
  {
    autograd::DetectAnomalyGuard guard;
    EXPECT_TRUE(autograd::is_anomaly_enabled());
    g_line = 12;
    Tensor loss = (h * h).sum();
    g_line = 13;
    h.add_(1.0);
    const std::string message = stale_error(loss);
    EXPECT_NE(message.find("MulBackward0 saved it and needs it to compute gradients. The forward "
                           "of MulBackward0 ran at model.py:12."),
              std::string::npos)
        << message;
  }
  EXPECT_FALSE(autograd::is_anomaly_enabled());
  // Off: nothing recorded, the message has no forward site.
  Tensor b = leaf({3}, 2) * 1.0;
  Tensor loss = (b * b).sum();
  b.add_(1.0);
  const std::string message = stale_error(loss);
  EXPECT_NE(message.find("MulBackward0 saved it"), std::string::npos) << message;
  EXPECT_EQ(message.find("The forward of"), std::string::npos) << message;
  autograd::set_forward_site_provider(nullptr);
}

TEST(AnomalyMode, WithoutAProviderTheStackNamesTheCppCaller) {
  Tensor a = leaf({3}, 3);
  Tensor h = a * 2.0;
  autograd::DetectAnomalyGuard guard;
  Tensor loss = user_square_loss(h);
  h.add_(1.0);
  const std::string message = stale_error(loss);
  EXPECT_NE(message.find("The forward of MulBackward0 ran in user_square_loss(mutagrad::Tensor "
                         "const&) (anomaly_mode_test+0x"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("addr2line"), std::string::npos) << message;
}

TEST(AnomalyMode, ANodeAnInPlaceWriteInstalledRecordsTheWrite) {
  autograd::set_forward_site_provider(&test_site);
  g_line = 40;  // the provider's line is not the write's: the write's own site wins
  Tensor a = leaf({3}, 4);
  Tensor h = a * 1.0;
  Tensor w = a * 3.0;
  autograd::DetectAnomalyGuard guard;
  const int write_line = __LINE__ + 1;
  h.mul_(w);  // MulBackward0 (installed by the write) saves w
  w.add_(1.0);
  Tensor loss = h.sum();
  const std::string message = stale_error(loss);
  EXPECT_NE(message.find("The forward of MulBackward0 ran at "), std::string::npos) << message;
  EXPECT_NE(message.find("anomaly_mode_test.cc:" + std::to_string(write_line) + "."),
            std::string::npos)
      << message;
  autograd::set_forward_site_provider(nullptr);
}

TEST(AnomalyMode, LibraryFramesAreSkipped) {
  using autograd::detail::is_library_frame;
  EXPECT_TRUE(is_library_frame("mutagrad::operator*(mutagrad::Tensor const&, double)"));
  EXPECT_TRUE(is_library_frame("mutagrad::autograd::(anonymous namespace)::mul(int)"));
  EXPECT_TRUE(is_library_frame("void mutagrad::dispatch<float>(int)"));
  // A return type with parentheses, and template arguments naming a function type.
  EXPECT_TRUE(is_library_frame(
      "decltype(auto) mutagrad::dispatch_compute_dtype<mutagrad::cpu::CpuBackend::reduce("
      "mutagrad::ReduceOp, mutagrad::Tensor const&)::{lambda(auto:1)#1}>(mutagrad::ScalarType)"));
  EXPECT_TRUE(is_library_frame("auto mutagrad::cpu::f<void (int)>(int)"));
  EXPECT_FALSE(is_library_frame("decltype(auto) user_dispatch<int>(int)"));
  EXPECT_TRUE(is_library_frame("std::function<void ()>::operator()() const"));
  EXPECT_FALSE(is_library_frame("user_square_loss(mutagrad::Tensor const&)"));
  EXPECT_FALSE(is_library_frame("void train<std::vector<int> >(int)"));
  EXPECT_FALSE(is_library_frame("main"));
}

}  // namespace
}  // namespace mutagrad
