// Run with MUTAGRAD_CPU_CAPABILITY=avx3 (tests/tensor/BUILD.bazel): a misspelt capability is a
// ValueError naming the value and the accepted ones at the first kernel call, which writes
// nothing; set_cpu_capability() repairs it (Note [CPU capability dispatch]).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tensor/cpu/vec_kernels.h"
#include "tensor/error.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

TEST(VecKernelsEnvironment, AMisspeltCapabilityIsAValueErrorUntilOneIsSet) {
  Tensor a = full({2, 2}, 1.0, kFloat32);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the error stays until fixed
    try {
      native::matmul(a, a);
      FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("MUTAGRAD_CPU_CAPABILITY=avx3"), std::string::npos) << what;
      EXPECT_NE(what.find("expected \"baseline\""), std::string::npos) << what;
      EXPECT_NE(what.find("\"avx2\""), std::string::npos) << what;
    }
  }
  cpu::set_cpu_capability(cpu::CpuCapability::kBaseline);
  EXPECT_EQ(elements(native::matmul(a, a)), (std::vector<double>{2, 2, 2, 2}));
}

}  // namespace
}  // namespace mutagrad
