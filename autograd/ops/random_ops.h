// Random ops with autograd: the Tensor members uniform_, normal_, exponential_, bernoulli_,
// random_ (tracked writes: check_inplace, one bump with the call site, history), and the
// random functions below. None is differentiable: as torch 1.13, the nodes recorded
// (UniformBackward0, NormalBackward0..3, BernoulliBackward0..2, RandomBackward0..2,
// ExponentialBackward0) give zero gradients. A missing generator means the default generator
// of the result's device (default_generator in tensor/generator.h).
//
//   Generator gen(0);
//   y.normal_(0.0, 2.0, gen);                   // y.grad_fn(): NormalBackward0 when y has history
//   Tensor perm = randperm(10, gen);             // int64, a permutation of 0..9
//   Tensor s = normal(mean, 1.0, gen);           // mean's shape and dtype
#pragma once

#include <optional>

#include "tensor/native/factories.h"
#include "tensor/tensor.h"

namespace mutagrad {

// Normal draws with the given means and standard deviations (broadcast together): the dtype
// of mean (of std when mean is a number). ValueError for a negative or nan std.
Tensor normal(const Tensor& mean, const Tensor& std,
              std::optional<Generator> generator = std::nullopt);
Tensor normal(const Tensor& mean, double std = 1.0,
              std::optional<Generator> generator = std::nullopt);
Tensor normal(double mean, const Tensor& std, std::optional<Generator> generator = std::nullopt);
Tensor normal(double mean, double std, IntArrayRef size,
              std::optional<Generator> generator = std::nullopt, TensorOptions options = {});
// 1 with probability p[i] (p floating, values in [0, 1]), else 0: p's shape and dtype.
Tensor bernoulli(const Tensor& p, std::optional<Generator> generator = std::nullopt);
// 1 with probability p, else 0: self's shape and dtype (no history, as torch).
Tensor bernoulli(const Tensor& self, double p, std::optional<Generator> generator = std::nullopt);
// native::multinomial (tensor/native/random.h): int64 category indices.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   std::optional<Generator> generator = std::nullopt);
// A random permutation of 0..n-1 (native::randperm).
Tensor randperm(int64_t n, std::optional<Generator> generator = std::nullopt,
                TensorOptions options = kInt64);
// randint(low, high) of self's shape, its dtype unless given, on its device.
Tensor randint_like(const Tensor& self, int64_t high,
                    std::optional<Generator> generator = std::nullopt,
                    std::optional<ScalarType> dtype = std::nullopt);
Tensor randint_like(const Tensor& self, int64_t low, int64_t high,
                    std::optional<Generator> generator = std::nullopt,
                    std::optional<ScalarType> dtype = std::nullopt);

}  // namespace mutagrad
