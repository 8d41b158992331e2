// Random ops with autograd (see random_ops.h): the random fills as Tensor members and the
// random functions, over the raw ops of tensor/native/random.h.
#include "autograd/ops/random_ops.h"

#include <utility>

#include "autograd/history.h"
#include "autograd/node.h"
#include "tensor/native/copy.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/random.h"

namespace mutagrad {
namespace autograd {
namespace {

// Note [Random ops have zero gradients]
// A random fill replaces self's values by numbers that do not depend on them, and torch 1.13
// treats its samplers (normal with tensor arguments, bernoulli) as constants of their inputs:
// each records a node under torch's name whose gradient is zero for every input, so backward
// through a fill reaches self's earlier history with zeros (not an error, not None).
// Forward AD, the same rule (RandomBackward::jvp): a fill gives the region it wrote a zero
// tangent when self has one (torch's self_t.zero_(): bernoulli_(p) with a dual p into a plain
// tensor gives it none), and a sampler's result a zero tangent when an input has one.
class RandomBackward final : public Node {
 public:
  explicit RandomBackward(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  VariableList apply(VariableList&& grads) override {
    VariableList out(num_outputs());
    for (size_t i = 0; i < out.size(); ++i) {
      if (should_compute_output(i)) out[i] = zeros_like(grads[0]);  // summed to each input
    }
    return out;
  }
  // Tangent: zeros shaped like the written tensor or the result.
  static Tensor jvp(const Tensor& like) {
    return zeros(like.sizes(), TensorOptions(like.dtype()).device(like.device()));
  }

 private:
  const char* name_;
};

Generator generator_for(const std::optional<Generator>& generator, Device device) {
  return generator ? *generator : default_generator(device);
}

// The steps of every in-place op (inplace_ops.h): check_inplace, then `write` (validates,
// bumps once, writes), then the history. `p` (may be undefined) is bernoulli_'s tensor.
template <typename Write>
Tensor& random_write(Tensor& self, const char* node_name, const Tensor& p, Write&& write) {
  const bool requires_grad = compute_requires_grad_has_jvp(self, p);
  check_inplace(self, requires_grad);
  // Only self's tangent asks for a new one (p's alone does not: torch's rule, above).
  fwd::PendingTangents tangents =
      fwd::inplace_tangents(self, {}, [&](const auto&) { return RandomBackward::jvp(self); });
  std::shared_ptr<Node> node;
  if (requires_grad) {
    node = make_pooled<RandomBackward>(node_name);
    node->set_next_edges(p.defined() ? collect_next_edges(self, p) : collect_next_edges(self));
  }
  write();
  if (node) rebase_history(self, node);
  fwd::write_tangents(self, std::move(tangents), node_name);
  return self;
}

Tensor& fill(Tensor& self, const char* node_name, const char* op, const RandomParams& params,
             const std::optional<Generator>& generator, CallSite site) {
  const MutationSite ms{op, site.file, site.line};
  Generator gen = generator_for(generator, self.device());
  return random_write(self, node_name, Tensor(),
                      [&] { native::random_fill_(self, gen, params, op, &ms); });
}

// Checks `self` before the parameters (torch's order: check_inplace, then the arguments).
template <typename MakeParams>
Tensor& checked_fill(Tensor& self, const char* node_name, const char* op,
                     const std::optional<Generator>& generator, CallSite site,
                     MakeParams&& make_params) {
  check_inplace(self, compute_requires_grad_has_jvp(self));
  return fill(self, node_name, op, make_params(), generator, site);
}

// `out` (fresh) gets a node of `name` over `inputs` when any of them requires grad.
// Its tangent: zeros when an input has one (RandomBackward::jvp).
template <typename... Ts>
Tensor with_history(Tensor out, const char* name, const Ts&... inputs) {
  fwd::propagate(name, out, {inputs...}, [&](const auto&) { return RandomBackward::jvp(out); });
  if (compute_requires_grad_has_jvp(inputs...)) {
    auto node = make_pooled<RandomBackward>(name);
    node->set_next_edges(collect_next_edges(inputs...));
    set_history(out, node);
  }
  return out;
}

Tensor number_tensor(double value, Device device) {
  return native::wrap_scalar(value, kFloat64, device, "normal");
}

}  // namespace
}  // namespace autograd

using autograd::checked_fill;

Tensor& Tensor::uniform_(double from, double to, std::optional<Generator> generator,
                         CallSite site) {
  return checked_fill(*this, "UniformBackward0", "uniform_", generator, site,
                      [&] { return native::uniform_params(dtype(), from, to); });
}

Tensor& Tensor::normal_(double mean, double std, std::optional<Generator> generator,
                        CallSite site) {
  return checked_fill(*this, "NormalBackward0", "normal_", generator, site,
                      [&] { return native::normal_params(dtype(), mean, std); });
}

Tensor& Tensor::exponential_(double lambd, std::optional<Generator> generator, CallSite site) {
  return checked_fill(*this, "ExponentialBackward0", "exponential_", generator, site,
                      [&] { return native::exponential_params(dtype(), lambd); });
}

Tensor& Tensor::bernoulli_(double p, std::optional<Generator> generator, CallSite site) {
  return checked_fill(*this, "BernoulliBackward2", "bernoulli_", generator, site,
                      [&] { return native::bernoulli_params(p); });
}

Tensor& Tensor::bernoulli_(const Tensor& p, std::optional<Generator> generator, CallSite site) {
  const MutationSite ms{"bernoulli_", site.file, site.line};
  Generator gen = autograd::generator_for(generator, device());
  return autograd::random_write(*this, "BernoulliBackward1", p,
                                [&] { native::bernoulli_(*this, p, gen, &ms); });
}

Tensor& Tensor::random_(std::optional<Generator> generator, CallSite site) {
  return checked_fill(*this, "RandomBackward2", "random_", generator, site,
                      [&] { return native::random_params(dtype(), 0, std::nullopt); });
}

Tensor& Tensor::random_(int64_t to, std::optional<Generator> generator, CallSite site) {
  return checked_fill(*this, "RandomBackward1", "random_", generator, site,
                      [&] { return native::random_params(dtype(), 0, to); });
}

Tensor& Tensor::random_(int64_t from, std::optional<int64_t> to, std::optional<Generator> generator,
                        CallSite site) {
  return checked_fill(*this, "RandomBackward0", "random_", generator, site,
                      [&] { return native::random_params(dtype(), from, to); });
}

Tensor Tensor::bernoulli(std::optional<Generator> generator) const {
  return mutagrad::bernoulli(*this, std::move(generator));
}

Tensor Tensor::bernoulli(double p, std::optional<Generator> generator) const {
  return mutagrad::bernoulli(*this, p, std::move(generator));
}

Tensor Tensor::multinomial(int64_t num_samples, bool replacement,
                           std::optional<Generator> generator) const {
  return mutagrad::multinomial(*this, num_samples, replacement, std::move(generator));
}

Tensor normal(const Tensor& mean, const Tensor& std, std::optional<Generator> generator) {
  Generator gen = autograd::generator_for(generator, mean.device());
  return autograd::with_history(native::normal(mean, std, mean.dtype(), gen), "NormalBackward3",
                                mean, std);
}

Tensor normal(const Tensor& mean, double std, std::optional<Generator> generator) {
  native::normal_params(mean.dtype(), 0.0, std, "normal");  // the number's check, as torch
  Generator gen = autograd::generator_for(generator, mean.device());
  const Tensor s = autograd::number_tensor(std, mean.device());
  return autograd::with_history(native::normal(mean, s, mean.dtype(), gen), "NormalBackward1",
                                mean);
}

Tensor normal(double mean, const Tensor& std, std::optional<Generator> generator) {
  Generator gen = autograd::generator_for(generator, std.device());
  const Tensor m = autograd::number_tensor(mean, std.device());
  return autograd::with_history(native::normal(m, std, std.dtype(), gen), "NormalBackward2", std);
}

Tensor normal(double mean, double std, IntArrayRef size, std::optional<Generator> generator,
              TensorOptions options) {
  const RandomParams params = native::normal_params(options.dtype(), mean, std, "normal");
  Generator gen = autograd::generator_for(generator, options.device());
  native::check_generator(gen, options.device(), "normal");
  Tensor out = empty(size, options);
  native::random_fill_(out, gen, params, "normal");
  return out;
}

Tensor bernoulli(const Tensor& p, std::optional<Generator> generator) {
  Generator gen = autograd::generator_for(generator, p.device());
  Tensor out = empty_like(p);
  native::bernoulli_(out, p, gen);
  return autograd::with_history(out, "BernoulliBackward0", p);
}

Tensor bernoulli(const Tensor& self, double p, std::optional<Generator> generator) {
  const RandomParams params = native::bernoulli_params(p, "bernoulli");
  Generator gen = autograd::generator_for(generator, self.device());
  Tensor out = empty_like(self);
  native::random_fill_(out, gen, params, "bernoulli");
  return out;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement,
                   std::optional<Generator> generator) {
  Generator gen = autograd::generator_for(generator, probs.device());
  return native::multinomial(probs, num_samples, replacement, gen);
}

Tensor randperm(int64_t n, std::optional<Generator> generator, TensorOptions options) {
  Generator gen = autograd::generator_for(generator, options.device());
  return native::randperm(n, gen, options);
}

Tensor randint_like(const Tensor& self, int64_t high, std::optional<Generator> generator,
                    std::optional<ScalarType> dtype) {
  return randint_like(self, 0, high, std::move(generator), dtype);
}

Tensor randint_like(const Tensor& self, int64_t low, int64_t high,
                    std::optional<Generator> generator, std::optional<ScalarType> dtype) {
  Generator gen = autograd::generator_for(generator, self.device());
  return randint(low, high, self.sizes(), gen,
                 TensorOptions(dtype.value_or(self.dtype())).device(self.device()));
}

}  // namespace mutagrad
