// Embedding and Dropout (nn/embedding.h).
#include "nn/embedding.h"

#include "autograd/ops/nn_ops.h"

namespace mutagrad::nn {

Embedding::Embedding(const EmbeddingOptions& options) : Module("Embedding"), options_(options) {
  const int64_t n = options.num_embeddings();
  if (n < 0 || options.embedding_dim() < 0) {
    throw ValueError(str("Embedding: num_embeddings and embedding_dim must be >= 0, got ", n,
                         " and ", options.embedding_dim()));
  }
  if (options.padding_idx()) {
    const int64_t p = *options.padding_idx();
    if (p < -n || p >= n) {
      throw IndexError(str("Embedding: padding_idx ", p, " must be within num_embeddings (",
                           "expected ", -n, " <= padding_idx < ", n, ")"));
    }
    options_.padding_idx(p < 0 ? p + n : p);
  }
  weight = register_parameter("weight", empty({n, options.embedding_dim()}));
  reset_parameters(default_generator(kCPU));
}

void Embedding::reset_parameters(Generator& gen) {
  init::normal_(weight, gen);
  if (options_.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *options_.padding_idx()).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  return embedding(indices, weight, options_.padding_idx(), options_.max_norm(),
                   options_.norm_type(), options_.scale_grad_by_freq(), write_site());
}

std::string Embedding::extra_repr() const {
  std::string s = str(options_.num_embeddings(), ", ", options_.embedding_dim());
  if (options_.padding_idx()) s += str(", padding_idx=", *options_.padding_idx());
  if (options_.max_norm()) s += ", max_norm=" + python_float_repr(*options_.max_norm());
  if (options_.norm_type() != 2.0) s += ", norm_type=" + python_float_repr(options_.norm_type());
  if (options_.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  return s;
}

Dropout::Dropout(double p, bool inplace) : Module("Dropout"), p_(p), inplace_(inplace) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(str("Dropout: probability has to be between 0 and 1, but got ", p));
  }
}

Tensor Dropout::forward(const Tensor& input) {
  return dropout(input, p_, is_training(), inplace_, std::nullopt, write_site());
}

std::string Dropout::extra_repr() const {
  return str("p=", python_float_repr(p_), ", inplace=", python_bool(inplace_));
}

Dropout2d::Dropout2d(double p, bool inplace) : Module("Dropout2d"), p_(p), inplace_(inplace) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(str("Dropout2d: probability has to be between 0 and 1, but got ", p));
  }
}

Tensor Dropout2d::forward(const Tensor& input) {
  return feature_dropout(input, p_, is_training(), inplace_, std::nullopt, write_site());
}

std::string Dropout2d::extra_repr() const {
  return str("p=", python_float_repr(p_), ", inplace=", python_bool(inplace_));
}

std::shared_ptr<Module> Embedding::clone_module() const {
  auto copy = copy_module(*this);
  copy->weight = cloned(weight);
  return copy;
}

}  // namespace mutagrad::nn
