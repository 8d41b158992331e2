// Anomaly mode: the stale-tensor error names where the needing node's forward ran.
#include "grad_test_util.h"

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

}  // namespace
}  // namespace mutagrad
