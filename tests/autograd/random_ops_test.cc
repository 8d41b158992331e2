// Random fills, random functions and generators (autograd/ops/random_ops.h,
// tensor/native/random.h, tensor/generator.h), on the test's device (the _cuda twin runs every
// tensor on the host-run CUDA device):
// - each draw is Philox at consecutive counters, the same bits on the CPU and the device;
// - the distributions are right (fixed seeds, so deterministic; bounds many standard errors
//   wide, so a correct formula passes with room and a wrong one fails by far);
// - the fills are tracked writes (one bump with the call site, the leaf refusal, zero
//   gradients), and bad arguments change nothing (version, values, generator).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "mutagrad.h"
#include "tests/autograd/grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::dev;
using testing_util::error_of;
using testing_util::test_device;
using testing_util::values;

Generator gen_on(uint64_t seed, Device device = test_device()) { return Generator(seed, device); }

Tensor zeros_on(IntArrayRef sizes, ScalarType dtype = kFloat64) {
  return zeros(sizes, TensorOptions(dtype).device(test_device()));
}

// The bytes of a tensor (for bitwise comparisons across devices).
std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor h = native::contiguous(testing_device::host_copy(t));
  const auto* p = static_cast<const uint8_t*>(h.raw_data());
  return std::vector<uint8_t>(p, p + h.numel() * h.element_size());
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double variance_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0.0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

// Pearson's statistic of observed counts against expected ones.
double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double s = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    s += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return s;
}

// A bound that chi-square with k - 1 degrees of freedom exceeds with negligible probability
// (its mean plus 8 standard deviations).
double chi_square_bound(size_t k) {
  const double df = static_cast<double>(k - 1);
  return df + 8.0 * std::sqrt(2.0 * df);
}

constexpr int64_t kN = 100000;

// ---- The draws are Philox at consecutive counters, equal on every device ----------------------

TEST(RandomDraws, ElementIIsPhiloxAtOffsetPlusI) {
  Generator gen = gen_on(1234);
  Tensor a = zeros_on({5, 7});
  a.uniform_(0.0, 1.0, gen);
  Tensor b = zeros_on({3}, kFloat32);
  b.uniform_(0.0, 1.0, gen);
  EXPECT_EQ(gen.offset(), 38u);
  const std::vector<double> va = values(a), vb = values(b);
  for (int64_t i = 0; i < 35; ++i) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(i), 0, 1234);
    EXPECT_EQ(va[i], uniform53(r.w[0], r.w[1])) << i;
  }
  for (int64_t i = 0; i < 3; ++i) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(35 + i), 0, 1234);
    EXPECT_EQ(static_cast<float>(vb[i]), uniform24(r.w[0])) << i;
  }
}

// Every op draws the same bits on the test's device as on the CPU for the same seed.
TEST(RandomDraws, SameSeedSameBitsOnTheCpu) {
  using Draw = std::function<Tensor(Device, Generator&)>;
  const std::vector<std::pair<const char*, Draw>> draws = {
      {"rand", [](Device d, Generator& g) { return rand({257}, g, TensorOptions().device(d)); }},
      {"randn",
       [](Device d, Generator& g) { return randn({257}, g, TensorOptions(kFloat64).device(d)); }},
      {"randint",
       [](Device d, Generator& g) { return randint(-5, 9, {300}, g, TensorOptions().device(d)); }},
      {"uniform_ float16",
       [](Device d, Generator& g) {
         return zeros({300}, TensorOptions(kFloat16).device(d)).uniform_(-2.0, 3.0, g);
       }},
      {"normal_ strided",
       [](Device d, Generator& g) {
         return zeros({6, 50}, TensorOptions().device(d)).t().normal_(1.0, 2.0, g);
       }},
      {"exponential_",
       [](Device d, Generator& g) {
         return zeros({300}, TensorOptions(kFloat64).device(d)).exponential_(0.5, g);
       }},
      {"bernoulli_ p",
       [](Device d, Generator& g) {
         return zeros({300}, TensorOptions(kInt32).device(d)).bernoulli_(0.3, g);
       }},
      {"bernoulli_ tensor",
       [](Device d, Generator& g) {
         Tensor p = native::to(arange(0.0, 1.0, 1.0 / 300, kFloat64), d);
         return zeros({300}, TensorOptions(kUInt8).device(d)).bernoulli_(p, g);
       }},
      {"random_ int64",
       [](Device d, Generator& g) {
         return zeros({300}, TensorOptions(kInt64).device(d)).random_(g);
       }},
      {"random_ int16",
       [](Device d, Generator& g) {
         return zeros({300}, TensorOptions(kInt16).device(d)).random_(-7, 100, g);
       }},
      {"randperm",
       [](Device d, Generator& g) { return randperm(300, g, TensorOptions(kInt64).device(d)); }},
      {"multinomial",
       [](Device d, Generator& g) {
         Tensor w = native::to(arange(1.0, 31.0, 1.0, kFloat64).view({3, 10}), d);
         return multinomial(w, 6, false, g);
       }},
      {"multinomial replacement",
       [](Device d, Generator& g) {
         Tensor w = native::to(arange(0.0, 10.0, 1.0, kFloat32), d);
         return multinomial(w, 50, true, g);
       }},
      {"normal tensors",
       [](Device d, Generator& g) {
         Tensor m = native::to(arange(0.0, 6.0, 1.0, kFloat32).view({2, 3}), d);
         return normal(m, native::to(full({3}, 0.5, kFloat32), d), g);
       }},
  };
  for (const auto& [name, draw] : draws) {
    SCOPED_TRACE(name);
    Generator here = gen_on(77), cpu = gen_on(77, kCPU);
    Tensor a = draw(test_device(), here);
    Tensor b = draw(kCPU, cpu);
    EXPECT_EQ(a.device(), test_device());
    EXPECT_EQ(bytes_of(a), bytes_of(b));
    EXPECT_EQ(here.offset(), cpu.offset());
  }
}

// A fill of a non-contiguous tensor gives element i of the logical (row-major) order counter i,
// as the contiguous fill; the write goes through the view to the base.
TEST(RandomDraws, StridedFillsFollowTheLogicalOrder) {
  Tensor base = zeros_on({4, 3});
  Tensor view = base.t();  // [3, 4]
  Generator g1 = gen_on(5), g2 = gen_on(5);
  view.normal_(0.0, 1.0, g1);
  Tensor c = zeros_on({3, 4});
  c.normal_(0.0, 1.0, g2);
  EXPECT_EQ(values(view), values(c));
  EXPECT_EQ(base.version(), 1u);
  EXPECT_EQ(values(base.t()), values(c));
}

// bernoulli_ with a tensor of equal probabilities draws the bits of bernoulli_ with the number.
TEST(RandomDraws, BernoulliTensorAndNumberAgree) {
  Generator g1 = gen_on(9), g2 = gen_on(9);
  Tensor a = zeros_on({1000});
  a.bernoulli_(0.3, g1);
  Tensor b = zeros_on({1000});
  b.bernoulli_(dev(full({1}, 0.3, kFloat64)), g2);
  EXPECT_EQ(values(a), values(b));
}

// ---- Generators -----------------------------------------------------------------------------

TEST(Generators, StateRoundTripRestoresTheSequence) {
  Generator gen = gen_on(3);
  zeros_on({10}).normal_(0.0, 1.0, gen);
  const Tensor state = gen.get_state();
  EXPECT_EQ(state.dtype(), kUInt8);
  EXPECT_EQ(state.numel(), Generator::kStateSize);
  const std::vector<double> first = values(zeros_on({50}).uniform_(0.0, 1.0, gen));
  const std::vector<double> second =
      values(randperm(20, gen, TensorOptions().device(test_device())));
  gen.manual_seed(99);  // elsewhere
  zeros_on({7}).random_(gen);
  gen.set_state(state);
  EXPECT_EQ(values(zeros_on({50}).uniform_(0.0, 1.0, gen)), first);
  EXPECT_EQ(values(randperm(20, gen, TensorOptions().device(test_device()))), second);
  EXPECT_EQ(gen.seed(), 3u);
  // A state moves between generators and devices.
  Generator other(0, kCPU);
  other.set_state(state);
  EXPECT_EQ(values(zeros({50}, kFloat64).uniform_(0.0, 1.0, other)), first);
}

TEST(Generators, SeedOffsetAndSharing) {
  Generator gen = gen_on(11);
  Generator copy = gen;  // a handle: one state
  zeros_on({5}).uniform_(0.0, 1.0, copy);
  EXPECT_EQ(gen.offset(), 5u);
  EXPECT_TRUE(copy.is_same(gen));
  EXPECT_EQ(&gen.manual_seed(12), &gen);
  EXPECT_EQ(copy.seed(), 12u);
  EXPECT_EQ(copy.offset(), 0u);
  const uint64_t s = gen.seed_nondeterministic();
  EXPECT_EQ(gen.seed(), s);
  // Empty draws take no counter.
  zeros_on({0}).normal_(0.0, 1.0, gen);
  EXPECT_EQ(gen.offset(), 0u);
}

TEST(Generators, DefaultGeneratorsPerDevice) {
  Generator& cpu = default_generator(kCPU);
  Generator& cuda_gen = default_generator(kCUDA);
  EXPECT_TRUE(cpu.device().is_cpu());
  EXPECT_TRUE(cuda_gen.device().is_cuda());
  EXPECT_TRUE(cuda::default_generator().is_same(cuda_gen));
  Generator& mine = default_generator(test_device());
  mine.manual_seed(21);
  Tensor a = zeros_on({8}).normal_();  // no generator: the device's default
  EXPECT_EQ(mine.offset(), 8u);
  Tensor b = zeros_on({8}).normal_(0.0, 1.0, gen_on(21));
  EXPECT_EQ(values(a), values(b));
}

TEST(Generators, BadStatesAreRefused) {
  Generator gen = gen_on(1);
  const Tensor good = gen.get_state();
  EXPECT_THROW(gen.set_state(zeros({24}, kFloat32)), DTypeError);
  EXPECT_THROW(gen.set_state(zeros({5}, kUInt8)), ValueError);
  EXPECT_THROW(gen.set_state(zeros({24}, kUInt8)), ValueError);  // no tag
  EXPECT_EQ(bytes_of(gen.get_state()), bytes_of(good));
}

TEST(Generators, AFillRefusesAnotherDeviceTypesGenerator) {
  Generator other(0, test_device().is_cpu() ? kCUDA : kCPU);
  Tensor x = zeros_on({3});
  EXPECT_THROW(x.normal_(0.0, 1.0, other), DeviceError);
  EXPECT_THROW(x.bernoulli_(dev(full({3}, 0.5)), other), DeviceError);
  EXPECT_EQ(x.version(), 0u);
  EXPECT_THROW(randperm(3, other, TensorOptions().device(test_device())), DeviceError);
  EXPECT_THROW(multinomial(dev(ones({3})), 1, false, other), DeviceError);
  EXPECT_EQ(other.offset(), 0u);
}

// ---- Distributions --------------------------------------------------------------------------

TEST(RandomDistributions, UniformNormalExponentialMoments) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Generator gen = gen_on(0);
    // uniform_(-2, 3): mean 0.5, variance 25 / 12.
    std::vector<double> u = values(zeros_on({kN}, dtype).uniform_(-2.0, 3.0, gen));
    EXPECT_GE(*std::min_element(u.begin(), u.end()), -2.0);
    EXPECT_LT(*std::max_element(u.begin(), u.end()), 3.0);
    const double u_se = std::sqrt(25.0 / 12.0 / kN);
    EXPECT_NEAR(mean_of(u), 0.5, 6 * u_se);
    EXPECT_NEAR(variance_of(u), 25.0 / 12.0, 0.03);
    // normal_(1, 2): mean 1, variance 4 (standard error of the variance 4 sqrt(2 / n)).
    std::vector<double> z = values(zeros_on({kN}, dtype).normal_(1.0, 2.0, gen));
    EXPECT_NEAR(mean_of(z), 1.0, 6 * 2.0 / std::sqrt(kN));
    EXPECT_NEAR(variance_of(z), 4.0, 6 * 4.0 * std::sqrt(2.0 / kN));
    // Tail mass beyond 2 std: 4.55 %.
    const double tail =
        std::count_if(z.begin(), z.end(), [](double v) { return std::abs(v - 1.0) > 4.0; }) /
        static_cast<double>(kN);
    EXPECT_NEAR(tail, 0.0455, 6 * std::sqrt(0.0455 * 0.9545 / kN));
    // exponential_(0.5): mean 2, variance 4, never negative.
    std::vector<double> e = values(zeros_on({kN}, dtype).exponential_(0.5, gen));
    EXPECT_GE(*std::min_element(e.begin(), e.end()), 0.0);
    EXPECT_NEAR(mean_of(e), 2.0, 6 * 2.0 / std::sqrt(kN));
    EXPECT_NEAR(variance_of(e), 4.0, 0.25);
  }
}

TEST(RandomDistributions, ReducedDtypesStayInRange) {
  for (ScalarType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Generator gen = gen_on(4);
    std::vector<double> u = values(rand({kN}, gen, TensorOptions(dtype).device(test_device())));
    EXPECT_GE(*std::min_element(u.begin(), u.end()), 0.0);
    EXPECT_LT(*std::max_element(u.begin(), u.end()), 1.0);  // never rounded up to 1
    EXPECT_NEAR(mean_of(u), 0.5, 0.01);
    std::vector<double> z = values(zeros_on({kN}, dtype).normal_(0.0, 1.0, gen));
    EXPECT_NEAR(mean_of(z), 0.0, 0.02);
    EXPECT_NEAR(variance_of(z), 1.0, 0.05);
  }
}

TEST(RandomDistributions, BernoulliFrequencies) {
  Generator gen = gen_on(0);
  for (ScalarType dtype : {kFloat32, kInt64, kBool, kUInt8}) {
    std::vector<double> b = values(zeros_on({kN}, dtype).bernoulli_(0.3, gen));
    EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](double v) { return v == 0.0 || v == 1.0; }));
    EXPECT_NEAR(mean_of(b), 0.3, 6 * std::sqrt(0.3 * 0.7 / kN)) << dtype_name(dtype);
  }
  // p = 0 and p = 1 are certain.
  EXPECT_EQ(values(zeros_on({100}).bernoulli_(1.0, gen)), std::vector<double>(100, 1.0));
  EXPECT_EQ(values(zeros_on({100}).bernoulli_(0.0, gen)), std::vector<double>(100, 0.0));
  // A tensor p, per element: rows with p 0.1 and 0.8.
  Tensor p = dev(tensor({0.1, 0.8}, kFloat64)).expand({kN / 2, 2});
  std::vector<double> b = values(bernoulli(p, gen));
  double c0 = 0, c1 = 0;
  for (int64_t i = 0; i < kN / 2; ++i) {
    c0 += b[2 * i];
    c1 += b[2 * i + 1];
  }
  EXPECT_NEAR(c0 / (kN / 2), 0.1, 6 * std::sqrt(0.09 / (kN / 2)));
  EXPECT_NEAR(c1 / (kN / 2), 0.8, 6 * std::sqrt(0.16 / (kN / 2)));
}

TEST(RandomDistributions, RandomAndRandintAreUniformOverTheirRange) {
  Generator gen = gen_on(0);
  // random_(-3, 7): 10 values, chi-square against 10000 each.
  std::vector<double> r = values(zeros_on({kN}, kInt32).random_(-3, 7, gen));
  std::vector<double> counts(10, 0.0);
  for (double v : r) {
    ASSERT_TRUE(v >= -3 && v < 7) << v;
    counts[static_cast<size_t>(v + 3)] += 1;
  }
  EXPECT_LT(chi_square(counts, std::vector<double>(10, kN / 10.0)), chi_square_bound(10));
  // random_() of int8 is [0, 127], of bool [0, 1], of float32 the integers [0, 2^24].
  std::vector<double> i8 = values(zeros_on({kN}, kInt8).random_(gen));
  std::vector<double> c8(128, 0.0);
  for (double v : i8) {
    ASSERT_TRUE(v >= 0 && v <= 127) << v;
    c8[static_cast<size_t>(v)] += 1;
  }
  EXPECT_LT(chi_square(c8, std::vector<double>(128, kN / 128.0)), chi_square_bound(128));
  std::vector<double> bools = values(zeros_on({1000}, kBool).random_(gen));
  EXPECT_NEAR(mean_of(bools), 0.5, 0.1);
  std::vector<double> f = values(zeros_on({kN}, kFloat32).random_(gen));
  for (double v : f) ASSERT_TRUE(v >= 0 && v <= 16777216.0 && v == std::floor(v)) << v;
  EXPECT_NEAR(mean_of(f), 8388608.0, 6 * 16777216.0 / std::sqrt(12.0 * kN));
  // random_(from, nullopt) on int64 from INT64_MIN: all 64 bits (both signs, mean near 0).
  Tensor full_range =
      zeros_on({kN}, kInt64).random_(std::numeric_limits<int64_t>::min(), std::nullopt, gen);
  std::vector<double> fr = values(full_range);
  EXPECT_NEAR(mean_of(fr) / 9.223372036854775808e18, 0.0, 6 / std::sqrt(3.0 * kN));
  // random_() on int64: [0, 2^63 - 1], so never negative, mean 2^62.
  std::vector<double> pos = values(zeros_on({kN}, kInt64).random_(gen));
  EXPECT_GE(*std::min_element(pos.begin(), pos.end()), 0.0);
  EXPECT_NEAR(mean_of(pos) / 9.223372036854775808e18, 0.5, 6 / std::sqrt(12.0 * kN));
  // randint_like: self's shape and dtype.
  Tensor like = randint_like(zeros_on({2, 3}, kFloat32), 4, 9, gen);
  EXPECT_EQ(like.dtype(), kFloat32);
  EXPECT_EQ(like.sizes().vec(), std::vector<int64_t>({2, 3}));
  for (double v : values(like)) EXPECT_TRUE(v >= 4 && v < 9 && v == std::floor(v));
}

TEST(RandomDistributions, RandpermIsAUniformPermutation) {
  Generator gen = gen_on(0);
  for (ScalarType dtype : {kInt64, kInt32, kFloat32, kUInt8}) {
    std::vector<double> p = values(randperm(200, gen, TensorOptions(dtype).device(test_device())));
    std::vector<double> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<double> expected(200);
    std::iota(expected.begin(), expected.end(), 0.0);
    EXPECT_EQ(sorted, expected) << dtype_name(dtype);
  }
  EXPECT_EQ(randperm(0, gen, TensorOptions().device(test_device())).numel(), 0);
  // Where 0 lands in 5000 permutations of 5: uniform over the 5 positions.
  std::vector<double> pos(5, 0.0);
  for (int64_t k = 0; k < 5000; ++k) {
    std::vector<double> p = values(randperm(5, gen, TensorOptions().device(test_device())));
    pos[static_cast<size_t>(std::find(p.begin(), p.end(), 0.0) - p.begin())] += 1;
  }
  EXPECT_LT(chi_square(pos, std::vector<double>(5, 1000.0)), chi_square_bound(5));
}

TEST(RandomDistributions, MultinomialFrequencies) {
  Generator gen = gen_on(0);
  // Probabilities .1, 0, .2, .7.
  Tensor probs = dev(tensor({1.0, 0.0, 2.0, 7.0}, kFloat64));
  // With replacement: frequencies, and the zero-weight category never drawn.
  Tensor s = multinomial(probs, kN, true, gen);
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.sizes().vec(), std::vector<int64_t>({kN}));
  std::vector<double> counts(4, 0.0);
  for (double v : values(s)) counts[static_cast<size_t>(v)] += 1;
  EXPECT_EQ(counts[1], 0.0);
  std::vector<double> obs = {counts[0], counts[2], counts[3]};
  EXPECT_LT(chi_square(obs, {0.1 * kN, 0.2 * kN, 0.7 * kN}), chi_square_bound(3));
  // Without replacement, 2 of 3 positive categories from 20000 rows: distinct, never the
  // zero-weight one, and the first draw has the weights' probabilities.
  Tensor rows = probs.unsqueeze(0).expand({20000, 4});
  std::vector<double> two = values(multinomial(rows, 2, false, gen));
  std::vector<double> first(4, 0.0);
  for (int64_t r = 0; r < 20000; ++r) {
    ASSERT_NE(two[2 * r], two[2 * r + 1]);
    ASSERT_NE(two[2 * r], 1.0);
    ASSERT_NE(two[2 * r + 1], 1.0);
    first[static_cast<size_t>(two[2 * r])] += 1;
  }
  EXPECT_LT(chi_square({first[0], first[2], first[3]}, {2000.0, 4000.0, 14000.0}),
            chi_square_bound(3));
  // P(second = 0 | first = 3) = 1 / 3: Efraimidis-Spirakis' conditional.
  double after3 = 0, zero_after3 = 0;
  for (int64_t r = 0; r < 20000; ++r) {
    if (two[2 * r] == 3.0) {
      after3 += 1;
      zero_after3 += two[2 * r + 1] == 0.0;
    }
  }
  EXPECT_NEAR(zero_after3 / after3, 1.0 / 3.0, 6 * std::sqrt(2.0 / 9.0 / after3));
  // All 4 without replacement: the zero-weight category comes last.
  std::vector<double> all = values(multinomial(probs, 4, false, gen));
  EXPECT_EQ(all[3], 1.0);
  // Rows are independent draws of their own weights.
  Tensor two_rows = dev(tensor({{0.0, 1.0}, {1.0, 0.0}}, kFloat32));
  EXPECT_EQ(values(multinomial(two_rows, 3, true, gen)), std::vector<double>({1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(multinomial(dev(zeros({0, 3})), 2, false, gen).sizes().vec(),
            std::vector<int64_t>({0, 2}));
}

TEST(RandomDistributions, NormalWithTensorArguments) {
  Generator gen = gen_on(0);
  Tensor mean = dev(tensor({{-5.0}, {10.0}}, kFloat64));  // [2, 1]
  Tensor std = dev(full({kN / 2}, 3.0, kFloat64));        // [n / 2]
  Tensor z = normal(mean, std, gen);                      // [2, n / 2]
  EXPECT_EQ(z.sizes().vec(), std::vector<int64_t>({2, kN / 2}));
  std::vector<double> v = values(z);
  std::vector<double> r0(v.begin(), v.begin() + kN / 2), r1(v.begin() + kN / 2, v.end());
  EXPECT_NEAR(mean_of(r0), -5.0, 6 * 3.0 / std::sqrt(kN / 2));
  EXPECT_NEAR(mean_of(r1), 10.0, 6 * 3.0 / std::sqrt(kN / 2));
  EXPECT_NEAR(variance_of(r1), 9.0, 6 * 9.0 * std::sqrt(2.0 / (kN / 2)));
  // The dtype is mean's, or std's when mean is a number.
  EXPECT_EQ(normal(dev(zeros({2}, kFloat32)), 1.0, gen).dtype(), kFloat32);
  EXPECT_EQ(normal(0.0, dev(ones({2}, kFloat64)), gen).dtype(), kFloat64);
  Tensor sized = normal(2.0, 0.5, {kN}, gen, TensorOptions(kFloat64).device(test_device()));
  EXPECT_NEAR(mean_of(values(sized)), 2.0, 6 * 0.5 / std::sqrt(kN));
}

// ---- Tracked writes --------------------------------------------------------------------------

TEST(RandomFills, BumpOnceWithTheCallSite) {
  Generator gen = gen_on(0);
  auto check = [&](const char* op, const std::function<void(Tensor&)>& fill) {
    Tensor x = zeros_on({4});
    fill(x);
    EXPECT_EQ(x.version(), 1u) << op;
    const auto site = x.version_counter().site_of_bump(0);
    ASSERT_TRUE(site.has_value()) << op;
    EXPECT_STREQ(site->op, op);
    EXPECT_STREQ(site->file, __FILE__);
  };
  check("uniform_", [&](Tensor& x) { x.uniform_(0.0, 1.0, gen); });
  check("normal_", [&](Tensor& x) { x.normal_(0.0, 1.0, gen); });
  check("exponential_", [&](Tensor& x) { x.exponential_(1.0, gen); });
  check("bernoulli_", [&](Tensor& x) { x.bernoulli_(0.5, gen); });
  check("bernoulli_", [&](Tensor& x) { x.bernoulli_(dev(full({4}, 0.5, kFloat64)), gen); });
  check("random_", [&](Tensor& x) { x.random_(gen); });
  check("random_", [&](Tensor& x) { x.random_(5, gen); });
  check("random_", [&](Tensor& x) { x.random_(1, 5, gen); });
  Tensor y = zeros_on({2});
  const int line = __LINE__ + 1;
  y.normal_(0.0, 1.0, gen);
  EXPECT_EQ(y.version_counter().site_of_bump(0)->line, line);
}

TEST(RandomFills, LeafRequiringGradIsRefusedInGradMode) {
  Tensor leaf = zeros_on({3}).requires_grad_();
  Generator gen = gen_on(0);
  const std::string msg = error_of([&] { leaf.normal_(0.0, 1.0, gen); });
  EXPECT_NE(msg.find("a leaf Variable that requires grad is being used in an in-place operation."),
            std::string::npos)
      << msg;
  // The leaf error comes before the argument checks, as torch.
  EXPECT_THROW(leaf.uniform_(2.0, 1.0, gen), autograd::AutogradError);
  EXPECT_THROW(leaf.random_(gen), autograd::AutogradError);
  EXPECT_THROW(leaf.bernoulli_(dev(full({3}, 0.5, kFloat64)), gen), autograd::AutogradError);
  EXPECT_EQ(leaf.version(), 0u);
  EXPECT_EQ(gen.offset(), 0u);
  {
    autograd::NoGradGuard no_grad;
    leaf.uniform_(0.0, 1.0, gen);  // allowed: nn.init's way
  }
  EXPECT_EQ(leaf.version(), 1u);
  EXPECT_TRUE(leaf.is_leaf());
}

TEST(RandomFills, GradientsThroughAFillAreZero) {
  Generator gen = gen_on(0);
  struct Case {
    const char* node;
    std::function<void(Tensor&)> fill;
  };
  const std::vector<Case> cases = {
      {"UniformBackward0", [&](Tensor& y) { y.uniform_(0.0, 1.0, gen); }},
      {"NormalBackward0", [&](Tensor& y) { y.normal_(0.0, 1.0, gen); }},
      {"ExponentialBackward0", [&](Tensor& y) { y.exponential_(1.0, gen); }},
      {"BernoulliBackward2", [&](Tensor& y) { y.bernoulli_(0.5, gen); }},
      {"RandomBackward2", [&](Tensor& y) { y.random_(gen); }},
      {"RandomBackward1", [&](Tensor& y) { y.random_(5, gen); }},
      {"RandomBackward0", [&](Tensor& y) { y.random_(1, 5, gen); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.node);
    Tensor x = testing_util::leaf({3}, 1);
    Tensor y = x * 2.0;
    c.fill(y);
    ASSERT_TRUE(y.grad_fn());
    EXPECT_STREQ(y.grad_fn()->name(), c.node);
    Tensor z = (y * x).sum();  // x's gradient: y's values (through the product) + 0 through y
    z.backward();
    testing_util::expect_close(x.grad(), values(y));
  }
  // A fill of a view rebases its base through CopySlices: the filled part gets no gradient.
  Tensor x = testing_util::leaf({4}, 2);
  Tensor y = x * 3.0;
  y.narrow(0, 1, 2).normal_(0.0, 1.0, gen);
  y.sum().backward();
  testing_util::expect_close(x.grad(), {3.0, 0.0, 0.0, 3.0});
  // bernoulli_ with p requiring grad: an edge to p, zero gradient.
  Tensor p = testing_util::leaf({3}, 3, 0.2, 0.8);
  Tensor t = zeros_on({3});
  t.bernoulli_(p, gen);
  EXPECT_STREQ(t.grad_fn()->name(), "BernoulliBackward1");
  t.sum().backward();
  testing_util::expect_close(p.grad(), {0.0, 0.0, 0.0});
  // normal and bernoulli with tensor arguments: zero gradients, torch's node names.
  Tensor mean = testing_util::leaf({3}, 4), stdev = testing_util::leaf({3}, 5, 0.5, 1.0);
  Tensor n3 = normal(mean, stdev, gen);
  EXPECT_STREQ(n3.grad_fn()->name(), "NormalBackward3");
  EXPECT_STREQ(normal(mean, 1.0, gen).grad_fn()->name(), "NormalBackward1");
  EXPECT_STREQ(normal(0.0, stdev, gen).grad_fn()->name(), "NormalBackward2");
  auto grads = autograd::grad({n3.sum()}, {mean, stdev});
  testing_util::expect_close(grads[0], {0, 0, 0});
  testing_util::expect_close(grads[1], {0, 0, 0});
  Tensor b = p.bernoulli(gen);
  EXPECT_STREQ(b.grad_fn()->name(), "BernoulliBackward0");
  EXPECT_FALSE(bernoulli(p, 0.5, gen).requires_grad());
}

// ---- Bad arguments change nothing --------------------------------------------------------------

TEST(RandomFills, BadArgumentsChangeNothing) {
  Generator gen = gen_on(0);
  Tensor f = zeros_on({4}, kFloat32);
  Tensor i = zeros_on({4}, kInt64);
  Tensor u8 = zeros_on({4}, kUInt8);
  Tensor b = zeros_on({4}, kBool);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto expect_value_error = [&](const std::function<void()>& call, const std::string& text) {
    const std::string msg = error_of<ValueError>(call);
    EXPECT_NE(msg.find(text), std::string::npos) << msg;
  };
  expect_value_error([&] { f.uniform_(2.0, 1.0, gen); },
                     "uniform_(): expects to return a [from, to) range, but found from=2 > to=1");
  expect_value_error([&] { f.uniform_(0.0, inf, gen); }, "to=inf is out of bounds for float32");
  expect_value_error([&] { f.uniform_(-3.4e38, 3.4e38, gen); }, "to-from to exceed the limit");
  expect_value_error([&] { f.normal_(0.0, -1.0, gen); }, "expects std >= 0.0, but found std -1");
  expect_value_error([&] { f.normal_(0.0, nan, gen); }, "but found std nan");
  expect_value_error([&] { f.exponential_(-1.0, gen); }, "expects lambda >= 0.0");
  expect_value_error([&] { f.bernoulli_(1.5, gen); }, "expects p to be in [0, 1], but got p=1.5");
  expect_value_error(
      [&] {
        f.bernoulli_(dev(tensor({0.5, 2.0, 0.1, 0.0}, kFloat64)), gen);
      },
      "but p has 2 at flat index 1");
  expect_value_error([&] { f.random_(5, 2, gen); },
                     "random_ expects 'from' to be less than 'to', but got from=5 >= to=2");
  expect_value_error([&] { f.random_(0, gen); }, "from=0 >= to=0");
  expect_value_error([&] { b.random_(0, 3, gen); }, "to - 1=2 is out of bounds for bool");
  expect_value_error([&] { u8.random_(-1, 3, gen); }, "from=-1 is out of bounds for uint8");
  expect_value_error([&] { u8.random_(0, 300, gen); }, "to - 1=299 is out of bounds for uint8");
  expect_value_error([&] { f.random_(int64_t{1} << 25, std::nullopt, gen); }, "at most 16777216");
  EXPECT_THROW(i.uniform_(0.0, 1.0, gen), DTypeError);
  EXPECT_THROW(i.normal_(0.0, 1.0, gen), DTypeError);
  EXPECT_THROW(b.exponential_(1.0, gen), DTypeError);
  EXPECT_THROW(f.bernoulli_(dev(tensor({1, 0, 1, 0})), gen), DTypeError);
  EXPECT_THROW(f.bernoulli_(dev(full({3}, 0.5)), gen), ShapeError);
  EXPECT_THROW(zeros_on({3}).expand({2, 3}).normal_(0.0, 1.0, gen), ValueError);  // overlap
  for (const Tensor& t : {f, i, u8, b}) {
    EXPECT_EQ(t.version(), 0u);
    EXPECT_EQ(values(t), std::vector<double>(4, 0.0));
  }
  EXPECT_EQ(gen.offset(), 0u);
  // Accepted edges, as torch 1.13: from == to, std 0, lambda 0 (inf) and inf (0).
  EXPECT_EQ(values(f.uniform_(1.0, 1.0, gen)), std::vector<double>(4, 1.0));
  EXPECT_EQ(values(f.normal_(2.0, 0.0, gen)), std::vector<double>(4, 2.0));
  EXPECT_EQ(values(f.exponential_(0.0, gen)), std::vector<double>(4, inf));
  EXPECT_EQ(values(f.exponential_(inf, gen)), std::vector<double>(4, 0.0));
}

TEST(RandomFunctions, BadArgumentsChangeNothing) {
  Generator gen = gen_on(0);
  const TensorOptions on = TensorOptions().device(test_device());
  EXPECT_THROW(randperm(-1, gen, on), ValueError);
  EXPECT_THROW(randperm(3, gen, on.dtype(kBool)), DTypeError);
  EXPECT_THROW(randperm(257, gen, on.dtype(kUInt8)), ValueError);
  EXPECT_EQ(randperm(256, gen, on.dtype(kUInt8)).numel(), 256);
  EXPECT_THROW(randperm(2050, gen, on.dtype(kFloat16)), ValueError);
  const uint64_t offset = gen.offset();
  Tensor w = dev(tensor({0.1, 0.2, 0.7}));
  EXPECT_THROW(multinomial(dev(tensor({1, 2, 3})), 1, false, gen), DTypeError);
  EXPECT_THROW(multinomial(dev(zeros({2, 2, 2})), 1, false, gen), ShapeError);
  EXPECT_THROW(multinomial(w, 0, false, gen), ValueError);
  const std::string many = error_of<ValueError>([&] { multinomial(w, 4, false, gen); });
  EXPECT_NE(many.find("cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
            std::string::npos);
  EXPECT_EQ(multinomial(w, 4, true, gen).numel(), 4);
  const std::string neg = error_of<ValueError>([&] {
    multinomial(dev(tensor({0.1, -0.2, 0.7})), 1, false, gen);
  });
  EXPECT_NE(neg.find("probability tensor contains either `inf`, `nan` or element < 0"),
            std::string::npos);
  for (double bad :
       {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(multinomial(dev(tensor({0.1, bad, 0.7}, kFloat64)), 1, true, gen), ValueError);
  }
  const std::string zero_row = error_of<ValueError>([&] {
    multinomial(dev(tensor({{0.0, 1.0}, {0.0, 0.0}})), 1, true, gen);
  });
  EXPECT_NE(zero_row.find("invalid multinomial distribution (sum of probabilities <= 0) in row 1"),
            std::string::npos);
  EXPECT_THROW(normal(dev(zeros({2})), dev(tensor({1.0, -1.0})), gen), ValueError);
  EXPECT_THROW(normal(dev(zeros({2})), -1.0, gen), ValueError);
  EXPECT_THROW(normal(dev(zeros({2}, kInt64)), dev(ones({2})), gen), DTypeError);
  EXPECT_THROW(normal(dev(zeros({2})), dev(ones({3})), gen), ShapeError);
  EXPECT_THROW(normal(0.0, -1.0, {2}, gen, on), ValueError);
  EXPECT_THROW(bernoulli(dev(tensor({0.5, 2.0})), gen), ValueError);
  EXPECT_EQ(gen.offset(), offset + 4);  // only the accepted multinomial drew
}

}  // namespace
}  // namespace mutagrad
