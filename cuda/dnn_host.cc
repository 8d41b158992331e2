// The host-run build's convolution "library": with MUTAGRAD_HOST_RUN_DNN=1, the reference of the
// call the device build makes to cuDNN (Note [The convolution library's call] in cuda/dnn.h), so
// the suite checks cuda/convolution.cc's mapping onto that call on the CPU; without it, none
// (the CUDA device's convolutions run the im2col + GEMM reference). Registers itself at load time.
#include <cstdlib>
#include <string>

#include "cuda/dnn.h"

namespace mutagrad::cuda {
namespace {

class HostRunDnn final : public Dnn {
 public:
  std::string name() const override { return "host-run reference"; }
  bool convolution(const ConvArgs& args) override {
    if (args.f64) {
      reference_convolution<double>(args);
    } else {
      reference_convolution<float>(args);
    }
    return true;
  }
};

const bool registered = [] {
  const char* env = std::getenv("MUTAGRAD_HOST_RUN_DNN");
  if (env != nullptr && std::string(env) == "1") register_dnn(new HostRunDnn());  // never freed
  return true;
}();

}  // namespace
}  // namespace mutagrad::cuda
