// mutagrad's module layer, as libtorch's C++ frontend (torch/nn.h). Include "nn/nn.h".
//
//   auto model = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Linear>(784, 128), std::make_shared<nn::BatchNorm1d>(128),
//       std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 10));
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
//   nn::CrossEntropyLoss criterion;
//   Tensor loss = criterion((*model)(x), y);
//
// docs/nn.md ("C++ (nn/)") says what each module writes and when.
#pragma once

#include "nn/activation.h"
#include "nn/activation_nn_ops.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "nn/pooling.h"
#include "nn/swa_utils.h"
