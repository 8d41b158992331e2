// Activation layers (nn/activation.h).
#include "nn/activation.h"

namespace mutagrad::nn {

Tensor ReLU::forward(const Tensor& input) {
  if (!inplace_) return input.relu();
  Tensor x = input;
  return x.relu_(write_site());
}

}  // namespace mutagrad::nn
