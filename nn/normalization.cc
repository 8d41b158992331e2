// BatchNorm1d/2d, LayerNorm, GroupNorm (nn/normalization.h).
#include "nn/normalization.h"

#include "autograd/ops/nn_ops.h"

namespace mutagrad::nn {

BatchNormBase::BatchNormBase(std::string name, const BatchNormOptions& options)
    : Module(std::move(name)), options_(options) {
  const int64_t c = options.num_features();
  if (c <= 0) throw ValueError(str(this->name(), ": num_features must be > 0, got ", c));
  if (options.affine()) {
    weight = register_parameter("weight", empty({c}));
    bias = register_parameter("bias", empty({c}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!options_.track_running_stats()) return;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (options_.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  if (input.dim() < 2 || input.size(1) != options_.num_features()) {
    throw ShapeError(str(name(), "(", options_.num_features(), "): the input's dim 1 must be ",
                         options_.num_features(), " (the channels), got an input of shape ",
                         input.sizes()));
  }
  double factor = options_.momentum().value_or(0.0);
  const bool training = is_training();
  if (training && options_.track_running_stats()) {
    // Checked before the counter moves: batch_norm refuses one value per channel.
    int64_t per_channel = input.numel() / std::max<int64_t>(input.size(1), 1);
    if (per_channel <= 1) {
      throw ValueError(str(name(),
                           ": expected more than 1 value per channel when training, got "
                           "input size ",
                           input.sizes(), "; use a larger batch or eval()"));
    }
    num_batches_tracked.add_(1, write_site());
    if (!options_.momentum()) {
      factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
    }
  }
  const bool use_batch_stats = training || !options_.track_running_stats();
  return batch_norm(input, options_.track_running_stats() ? running_mean : Tensor(),
                    options_.track_running_stats() ? running_var : Tensor(), weight, bias,
                    use_batch_stats, factor, options_.eps(), write_site());
}

std::string BatchNormBase::extra_repr() const {
  return str(options_.num_features(), ", eps=", python_float_repr(options_.eps()),
             ", momentum=", options_.momentum() ? python_float_repr(*options_.momentum()) : "None",
             ", affine=", python_bool(options_.affine()),
             ", track_running_stats=", python_bool(options_.track_running_stats()));
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  if (input.dim() != 2 && input.dim() != 3) {
    throw ShapeError(str("BatchNorm1d: expected 2D or 3D input (got ", input.dim(), "D input)"));
  }
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  if (input.dim() != 4) {
    throw ShapeError(str("BatchNorm2d: expected 4D input (got ", input.dim(), "D input)"));
  }
}

LayerNorm::LayerNorm(const LayerNormOptions& options) : Module("LayerNorm"), options_(options) {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", mutagrad::empty(options.normalized_shape()));
    bias = register_parameter("bias", mutagrad::empty(options.normalized_shape()));
  }
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (!options_.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& input) {
  return layer_norm(input, options_.normalized_shape(), weight, bias, options_.eps());
}

std::string LayerNorm::extra_repr() const {
  // Python's tuple: (4,) or (2, 3).
  const auto& shape = options_.normalized_shape();
  std::string tuple = "(";
  for (size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
  tuple += shape.size() == 1 ? ",)" : ")";
  return str(tuple, ", eps=", python_float_repr(options_.eps()),
             ", elementwise_affine=", python_bool(options_.elementwise_affine()));
}

GroupNorm::GroupNorm(const GroupNormOptions& options) : Module("GroupNorm"), options_(options) {
  if (options.num_groups() <= 0 || options.num_channels() % options.num_groups() != 0) {
    throw ValueError(str("GroupNorm: num_channels (", options.num_channels(),
                         ") must be divisible by num_groups (", options.num_groups(), ")"));
  }
  if (options.affine()) {
    weight = register_parameter("weight", empty({options.num_channels()}));
    bias = register_parameter("bias", empty({options.num_channels()}));
  }
  reset_parameters();
}

void GroupNorm::reset_parameters() {
  if (!options_.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNorm::forward(const Tensor& input) {
  return group_norm(input, options_.num_groups(), weight, bias, options_.eps());
}

std::string GroupNorm::extra_repr() const {
  return str(options_.num_groups(), ", ", options_.num_channels(),
             ", eps=", python_float_repr(options_.eps()),
             ", affine=", python_bool(options_.affine()));
}

void BatchNormBase::rebind_cloned() {
  weight = cloned(weight);
  bias = cloned(bias);
  running_mean = cloned(running_mean);
  running_var = cloned(running_var);
  num_batches_tracked = cloned(num_batches_tracked);
}

std::shared_ptr<Module> BatchNorm1d::clone_module() const {
  auto copy = copy_module(*this);
  copy->rebind_cloned();
  return copy;
}

std::shared_ptr<Module> BatchNorm2d::clone_module() const {
  auto copy = copy_module(*this);
  copy->rebind_cloned();
  return copy;
}

std::shared_ptr<Module> LayerNorm::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->bias = cloned(bias);
  return copy;
}

std::shared_ptr<Module> GroupNorm::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->bias = cloned(bias);
  return copy;
}

}  // namespace mutagrad::nn
