// The losses a classifier or a regressor needs, with PyTorch's names, arguments and backward
// nodes (forward + backward in loss_ops.cc): NllLossBackward0, MseLossBackward0,
// BinaryCrossEntropyWithLogitsBackward0; cross_entropy is log_softmax then nll_loss (or, with
// label smoothing or class-probability targets, their composition as torch writes it).
//
//   Tensor loss = mutagrad::cross_entropy(logits, labels);       // logits [N, C], labels int64 [N]
//   Tensor l2 = mutagrad::cross_entropy(logits, labels, weight, /*ignore_index=*/-100, "sum",
//                                       /*label_smoothing=*/0.1);
//   Tensor m = mutagrad::mse_loss(pred, target, "none");
//   Tensor b = mutagrad::binary_cross_entropy_with_logits(logits, targets01);
//
// reduction: "mean" (the default), "sum" or "none"; anything else is a ValueError. Inputs are
// [N, C, d1, ...] or [C] (one sample) with class indices [N, d1, ...] or 0-dim (int64), or
// class probabilities of the input's shape (cross_entropy only). A class index outside
// [0, C) that is not ignore_index is an IndexError naming the value and the range, raised
// before anything is computed. weight / pos_weight are constants: passing one that requires
// grad is an AutogradError, as in torch.
#pragma once

#include <string_view>

#include "tensor/tensor.h"

namespace mutagrad {

// -input[n, target[n]] * weight[target[n]], entries equal to ignore_index contributing 0;
// "mean" divides by the summed weights of the non-ignored entries (NaN when all are ignored).
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, std::string_view reduction = "mean");
// nll_loss(log_softmax(input, class dim), target, ...) for class indices; for probabilities,
// -sum(log_softmax(input) * target [* weight]) per sample. label_smoothing in [0, 1] mixes
// the target with the uniform distribution over the C classes.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, std::string_view reduction = "mean",
                     double label_smoothing = 0.0);
// (input - target)^2, the two broadcast together.
Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
// -[pos_weight * target * log(sigmoid(input)) + (1 - target) * log(1 - sigmoid(input))] *
// weight, computed without overflow for any logit (log-sum-exp form). target has the input's
// shape; weight and pos_weight broadcast (pos_weight along the last dim: one per class).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        std::string_view reduction = "mean");

// regression_loss_ops.cc: element-wise losses of d = input - target (the two broadcast).
// |d| (AbsBackward0, then MeanBackward0 / SumBackward0 as torch's composition).
Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta >= 0; 0: |d|).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      std::string_view reduction = "mean", double beta = 1.0);
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (delta > 0).
Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                  double delta = 1.0);
// -weight (t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as torch; input in [0, 1]
// (ValueError otherwise), target of the input's shape, weight broadcasting to it (a constant).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), std::string_view reduction = "mean");
// input holds log-probabilities: target (log target - input), or with log_target
// exp(target) (target - input). reduction "batchmean": the sum over input.size(0).
Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
              bool log_target = false);

}  // namespace mutagrad
