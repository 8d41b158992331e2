// Raw random ops (no autograd): in-place fills and the random factories beyond rand/randn/
// randint, every number from a Generator's counters (Note [Counter-based generators] in
// tensor/generator.h), so the same seed gives the same tensor on every device.
//
//   Generator gen(0);
//   native::random_fill_(x, gen, native::normal_params(x.dtype(), 0.0, 2.0), "normal_");
//   Tensor p = native::randperm(10, gen);                  // int64, a permutation of 0..9
//   Tensor s = native::multinomial(probs, 3, false, gen);  // 3 categories per row, no repeats
#pragma once

#include <optional>
#include <string>

#include "tensor/generator.h"
#include "tensor/native/factories.h"
#include "tensor/random_draw.h"
#include "tensor/tensor.h"

namespace mutagrad::native {

// DeviceError unless `gen` has `device`'s type (a factory refuses another's generator, as torch).
void check_generator(const Generator& gen, Device device, const char* op);

// self (any strides, no two elements sharing memory) = the draws of `params` from gen's next
// numel counters, in row-major order (params' seed and offset are gen's). With `bump`, bumps
// self's version once after every check; the generator moves on only when the write happens.
void random_fill_(const Tensor& self, Generator& gen, RandomParams params, const char* op,
                  const MutationSite* bump = nullptr);

// The parameters of each fill, checked as torch checks them: DTypeError for a dtype the
// distribution has no values in, ValueError for a bad argument (messages name op and values).
// uniform_(from, to): floating; from <= to, both finite in dtype, to - from finite.
RandomParams uniform_params(ScalarType dtype, double from, double to, const char* op = "uniform_");
// normal_(mean, std): floating; std >= 0.
RandomParams normal_params(ScalarType dtype, double mean, double std, const char* op = "normal_");
// exponential_(lambd): floating; lambd >= 0 (0 gives +inf, as torch 1.13).
RandomParams exponential_params(ScalarType dtype, double lambd, const char* op = "exponential_");
// bernoulli_(p): any dtype; p in [0, 1].
RandomParams bernoulli_params(double p, const char* op = "bernoulli_");
// random_(from, to): integers in [from, to), or in [from, the dtype's largest value] when `to` is
// nullopt (for a floating dtype, 2**significand bits: the largest of a run of exact integers).
// random_() is random_params(dtype, 0, nullopt). Integer and bool dtypes refuse a range that
// does not fit them.
RandomParams random_params(ScalarType dtype, int64_t from, std::optional<int64_t> to,
                           const char* op = "random_");
// torch's warning for random_ on a floating dtype whose range leaves its exact integers
// ("to - 1 is out of bounds [-(2^24), 2^24] ..."), or "" when there is none.
std::string random_precision_warning(ScalarType dtype, int64_t from, std::optional<int64_t> to);

// self = 1 where a uniform draw is below p, else 0 (any dtype). p is floating, broadcasts to
// self's shape, on self's device, every element in [0, 1]; it may alias self.
void bernoulli_(const Tensor& self, const Tensor& p, Generator& gen,
                const MutationSite* bump = nullptr);

// A uniformly random permutation of 0..n-1 of `options`' dtype (int64 by default; not bool;
// every value exact in the dtype) on its device.
Tensor randperm(int64_t n, Generator& gen, TensorOptions options = kInt64);

// Indices (int64) of `num_samples` categories drawn from each row of `probs` (1-D [n], or 2-D
// [rows, n]: the result is [num_samples] or [rows, num_samples]), each with probability
// proportional to its weight; without replacement a category is drawn at most once (the
// zero-weight ones last, in index order, when the positive ones run out, as torch 1.13's CPU).
// probs is floating, without inf, nan or negative values, each row's sum > 0.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator& gen);

// Normal draws of mean and std (any shapes that broadcast; 0-dim for a number), of `dtype`
// (floating) and the broadcast shape, on mean's device. ValueError when an element of std is
// negative or nan.
Tensor normal(const Tensor& mean, const Tensor& std, ScalarType dtype, Generator& gen);

}  // namespace mutagrad::native
