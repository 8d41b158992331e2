// Embedding and Dropout (torch.nn's) over autograd/ops/nn_ops.h's embedding and dropout.
//
//   auto emb = std::make_shared<nn::Embedding>(
//       nn::EmbeddingOptions(1000, 64).padding_idx(0).max_norm(1.0));
//   Tensor e = (*emb)(ids);            // max_norm: renormalizes the looked-up rows in place
//   auto drop = std::make_shared<nn::Dropout>(0.25);   // identity in eval()
//
// What they write: Embedding with max_norm, the rows of `weight` it looks up whose norm
// exceeds max_norm (one tracked write, "embedding_renorm_", before the lookup; a graph that
// saved the weight earlier is refused at backward); Dropout with inplace, its input.
#pragma once

#include <optional>

#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  MUTAGRAD_ARG(int64_t, num_embeddings);
  MUTAGRAD_ARG(int64_t, embedding_dim);
  MUTAGRAD_ARG(std::optional<int64_t>, padding_idx);
  MUTAGRAD_ARG(std::optional<double>, max_norm);
  MUTAGRAD_ARG(double, norm_type) = 2.0;
  MUTAGRAD_ARG(bool, scale_grad_by_freq) = false;
};

// weight [num_embeddings, embedding_dim] ~ N(0, 1) with row padding_idx zero. padding_idx
// outside [-num_embeddings, num_embeddings) is an IndexError at construction; a negative one
// is stored as num_embeddings + padding_idx, as torch.
class Embedding : public Module {
 public:
  explicit Embedding(const EmbeddingOptions& options);
  Embedding(int64_t num_embeddings, int64_t embedding_dim)
      : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  void reset_parameters(Generator& gen);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  const EmbeddingOptions& options() const { return options_; }
  Tensor weight;

 private:
  EmbeddingOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

// Zeroes each element with probability p and scales the rest by 1 / (1 - p) in training; the
// identity in eval(). p outside [0, 1] is a ValueError at construction.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, bool inplace = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double p_;
  bool inplace_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// Zeroes whole channels ([N, C, ...] -> per (n, c)) with probability p in training and scales
// the rest by 1 / (1 - p) (feature_dropout); the identity in eval().
class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5, bool inplace = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double p_;
  bool inplace_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

}  // namespace mutagrad::nn
