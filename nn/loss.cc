// Loss modules (nn/loss.h).
#include "nn/loss.h"

namespace mutagrad::nn {

Tensor Loss::operator()(const Tensor& input, const Tensor& target) {
  Tensor x = run_forward_pre_hooks(input);
  return run_forward_hooks(x, forward(x, target));
}

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyLossOptions options)
    : Loss("CrossEntropyLoss"), options_(std::move(options)) {
  if (options_.weight().defined()) weight = register_buffer("weight", options_.weight());
}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, weight, options_.ignore_index(), options_.reduction(),
                       options_.label_smoothing());
}

NLLLoss::NLLLoss(NLLLossOptions options) : Loss("NLLLoss"), options_(std::move(options)) {
  if (options_.weight().defined()) weight = register_buffer("weight", options_.weight());
}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, weight, options_.ignore_index(), options_.reduction());
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, reduction_);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(BCEWithLogitsLossOptions options)
    : Loss("BCEWithLogitsLoss"), options_(std::move(options)) {
  if (options_.weight().defined()) weight = register_buffer("weight", options_.weight());
  if (options_.pos_weight().defined()) {
    pos_weight = register_buffer("pos_weight", options_.pos_weight());
  }
}

Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, weight, pos_weight, options_.reduction());
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return l1_loss(input, target, reduction_);
}

Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction_, beta_);
}

Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, reduction_, delta_);
}

BCELoss::BCELoss(const Tensor& weight, std::string reduction)
    : Loss("BCELoss"), reduction_(std::move(reduction)) {
  if (weight.defined()) this->weight = register_buffer("weight", weight);
}

Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, weight, reduction_);
}

Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return kl_div(input, target, reduction_, log_target_);
}

std::shared_ptr<Module> CrossEntropyLoss::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->options_.weight(copy->weight);
  return copy;
}

std::shared_ptr<Module> NLLLoss::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->options_.weight(copy->weight);
  return copy;
}

std::shared_ptr<Module> BCEWithLogitsLoss::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->pos_weight = cloned(pos_weight);
  copy->options_.weight(copy->weight).pos_weight(copy->pos_weight);
  return copy;
}

std::shared_ptr<Module> BCELoss::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  return copy;
}

}  // namespace mutagrad::nn
