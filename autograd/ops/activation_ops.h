// softmax and log_softmax along one dim (forward + backward nodes in activation_ops.cc,
// PyTorch's names: SoftmaxBackward0, LogSoftmaxBackward0). relu, sigmoid and tanh are unary ops
// (autograd/ops/unary_ops.h).
//
//   Tensor p = mutagrad::softmax(logits, 1);        // rows sum to 1
//   Tensor lp = logits.log_softmax(-1);             // log of the same, without overflow
//   Tensor q = mutagrad::softmax(counts, 0, kFloat64);  // integer input: pass a dtype
//
// Both subtract the maximum along `dim` first, so logits of +-1e4 give finite results where
// the mathematical result is finite. Floating inputs only; `dtype` converts the input first
// (differentiably), as torch's dtype= argument.
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace mutagrad {

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

}  // namespace mutagrad
