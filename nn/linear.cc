// Linear, Identity, Flatten (nn/linear.h).
#include "nn/linear.h"

#include <cmath>

#include "autograd/ops/nn_ops.h"

namespace mutagrad::nn {

Linear::Linear(const LinearOptions& options) : Module("Linear"), options_(options) {
  if (options.in_features() < 0 || options.out_features() < 0) {
    throw ValueError(str("Linear: in_features and out_features must be >= 0, got ",
                         options.in_features(), " and ", options.out_features()));
  }
  TensorOptions to = TensorOptions(options.dtype()).device(options.device());
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}, to));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_features()}, to));
  reset_parameters(default_generator(kCPU));
}

void Linear::reset_parameters(Generator& gen) {
  init::kaiming_uniform_(weight, gen, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = options_.in_features();
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, gen, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  if (input.dim() == 0 || input.size(-1) != options_.in_features()) {
    throw ShapeError(str("Linear(in_features=", options_.in_features(),
                         "): the input's last dim must be ", options_.in_features(),
                         ", got an input of shape ", input.sizes(),
                         "; reshape the input or change in_features"));
  }
  if (input.dim() == 2 && bias.defined()) return bias.addmm(input, weight.t());
  Tensor out = input.matmul(weight.t());
  return bias.defined() ? out.add(bias) : out;
}

std::string Linear::extra_repr() const {
  return str("in_features=", options_.in_features(), ", out_features=", options_.out_features(),
             ", bias=", python_bool(bias.defined()));
}

std::string Flatten::extra_repr() const {
  return str("start_dim=", start_dim_, ", end_dim=", end_dim_);
}

std::string Unflatten::extra_repr() const {
  std::string tuple = "(";
  for (size_t i = 0; i < sizes_.size(); ++i) tuple += (i ? ", " : "") + std::to_string(sizes_[i]);
  tuple += sizes_.size() == 1 ? ",)" : ")";
  return str("dim=", dim_, ", unflattened_size=", tuple);
}

Bilinear::Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias)
    : Module("Bilinear"), in1_(in1_features), in2_(in2_features), out_(out_features) {
  if (in1_ < 0 || in2_ < 0 || out_ < 0) {
    throw ValueError(
        str("Bilinear: feature counts must be >= 0, got ", in1_, ", ", in2_, ", ", out_));
  }
  weight = register_parameter("weight", empty({out_, in1_, in2_}));
  if (bias) this->bias = register_parameter("bias", empty({out_}));
  reset_parameters(default_generator(kCPU));
}

void Bilinear::reset_parameters(Generator& gen) {
  const double bound = in1_ > 0 ? 1.0 / std::sqrt(static_cast<double>(in1_)) : 0.0;
  init::uniform_(weight, gen, -bound, bound);
  if (bias.defined()) init::uniform_(bias, gen, -bound, bound);
}

Tensor Bilinear::forward(const Tensor& input1, const Tensor& input2) {
  return bilinear(input1, input2, weight, bias);
}

std::string Bilinear::extra_repr() const {
  return str("in1_features=", in1_, ", in2_features=", in2_, ", out_features=", out_,
             ", bias=", python_bool(bias.defined()));
}

std::shared_ptr<Module> Linear::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->bias = cloned(bias);
  return copy;
}

std::shared_ptr<Module> Bilinear::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  copy->bias = cloned(bias);
  return copy;
}

}  // namespace mutagrad::nn
