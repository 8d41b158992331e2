// The functional ops of torch.nn.functional that layers need, with PyTorch 1.13's node names
// and formulas; every backward is written with differentiable ops, so each differentiates
// twice (gradgradcheck, HVP). Losses are in loss_ops.h.
//
//   Tensor h = mutagrad::gelu(x, "tanh");                       // GeluBackward0
//   Tensor n = mutagrad::layer_norm(h, {64}, w, b);             // NativeLayerNormBackward0
//   Tensor y = mutagrad::batch_norm(x, w, b, running_mean, running_var, /*training=*/true);
//   Tensor e = mutagrad::embedding(ids, table, /*padding_idx=*/0);
//   Tensor p = mutagrad::pad(img, {1, 1, 2, 2}, "reflect");     // ReflectionPad2DBackward0
//
// Files: nn_activation_ops.cc (gelu ... softplus), normalization_ops.cc (layer_norm,
// group_norm, batch_norm, normalize), nn_misc_ops.cc (embedding, one_hot, pad, dropout,
// feature_dropout, bilinear).
//
// What they write (each a tracked write through the mutation engine: one version bump with
// the caller's file:line, refused where an in-place write would be):
// - leaky_relu_, elu_: the input (LeakyReluBackward1 / EluBackward1, saving the result);
// - batch_norm in training: running_mean and running_var, once each (op "batch_norm"), as
//   (1 - momentum) * running + momentum * batch statistic, the variance unbiased (a module
//   with momentum None passes 1 / num_batches_tracked: the cumulative average);
// - embedding with max_norm: the rows of `weight` that `indices` names whose norm exceeds
//   max_norm, scaled to max_norm (op "embedding_renorm_"), before the lookup;
// - dropout / feature_dropout with inplace: the input (MulBackward0).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace mutagrad {

// ---- Activations (nn_activation_ops.cc) ----
// x * Phi(x) (approximate "none") or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) ("tanh").
Tensor gelu(const Tensor& self, std::string_view approximate = "none");
// x * sigmoid(x).
Tensor silu(const Tensor& self);
// x for x > 0, negative_slope * x otherwise.
Tensor leaky_relu(const Tensor& self, double negative_slope = 0.01);
Tensor& leaky_relu_(Tensor& self, double negative_slope = 0.01,
                    CallSite site = CallSite::current());
// x for x > 0, alpha * (exp(x) - 1) otherwise.
Tensor elu(const Tensor& self, double alpha = 1.0);
Tensor& elu_(Tensor& self, double alpha = 1.0, CallSite site = CallSite::current());
// log(1 + exp(beta x)) / beta, and x where beta x > threshold.
Tensor softplus(const Tensor& self, double beta = 1.0, double threshold = 20.0);

// ---- Normalization (normalization_ops.cc) ----
// Normalizes over the last normalized_shape.size() dims (which must equal normalized_shape),
// then weight * . + bias (each of normalized_shape, optional).
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// input [N, C, *]: normalizes each of num_groups groups of C / num_groups channels per sample,
// then weight[c] * . + bias[c].
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// input [N, C, *]. training: normalizes with the batch's statistics per channel and updates
// the running statistics (when given) in place; otherwise normalizes with the running ones
// (required then).
// A batch with one value per channel in training is a ValueError.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5,
                  CallSite site = CallSite::current());
// input / max(||input||_p along dim, eps).
Tensor normalize(const Tensor& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

// ---- Lookup, padding, dropout, bilinear (nn_misc_ops.cc) ----
// weight[indices] (indices int64 or int32, any shape; result indices.shape + [D]). No gradient
// flows to row padding_idx (negative: counted from the end). max_norm: see above.
Tensor embedding(const Tensor& indices, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                 bool scale_grad_by_freq = false, CallSite site = CallSite::current());
// The rows of `weight` named by `indices` with a p-norm above max_norm scaled to max_norm
// (times 1 / (1 + 1e-7), as torch): one tracked write. Returns weight.
Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type,
                          CallSite site = CallSite::current());
// int64 [*, num_classes] with a 1 at each index (num_classes -1: max + 1).
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);
// pad: pairs (before, after) from the last dim backwards, as torch.nn.functional.pad.
// "constant" (any number of dims, negative pads crop; ConstantPadNdBackward0), "reflect",
// "replicate" (the last 1, 2 or 3 dims of a batched or unbatched input; Reflection/
// ReplicationPad{1,2,3}DBackward0) and "circular" (the last 1-3 dims).
Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode = "constant",
           double value = 0.0);
// input * mask / (1 - p), mask ~ Bernoulli(1 - p) per element (dropout) or per [N, C] channel
// (feature_dropout: dropout2d/3d); `train` false or p == 0: the input itself. inplace: writes
// the input. The draws come from `generator` (the device's default one when nullopt).
Tensor dropout(const Tensor& input, double p = 0.5, bool train = true, bool inplace = false,
               std::optional<Generator> generator = std::nullopt,
               CallSite site = CallSite::current());
Tensor feature_dropout(const Tensor& input, double p = 0.5, bool train = true, bool inplace = false,
                       std::optional<Generator> generator = std::nullopt,
                       CallSite site = CallSite::current());
// y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias = Tensor());

}  // namespace mutagrad
