// Factories: shapes, dtypes (PyTorch's defaults), values, fresh storage and version counters,
// deterministic random generation. Expected values were derived with PyTorch 1.13.
#include "tensor/native/factories.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <type_traits>
#include <vector>

#include "tensor/backend.h"
#include "tensor/native/views.h"
#include "tensor/philox.h"
#include "tensor/random_draw.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  EXPECT_TRUE(t.is_contiguous());
  const T* p = t.data_ptr<T>();
  return std::vector<T>(p, p + t.numel());
}

TEST(Factories, EmptyIsContiguousWithFreshStorage) {
  Tensor t = empty({2, 3, 4});
  EXPECT_EQ(t.sizes().vec(), std::vector<int64_t>({2, 3, 4}));
  EXPECT_EQ(t.strides().vec(), std::vector<int64_t>({12, 4, 1}));
  EXPECT_EQ(t.storage_offset(), 0);
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_TRUE(t.device().is_cpu());
  EXPECT_EQ(t.storage().nbytes(), 24u * 4u);
  EXPECT_EQ(t.version(), 0u);
  EXPECT_FALSE(t.is_view());
  EXPECT_EQ(t.unsafe_impl()->autograd_meta(), nullptr);
  EXPECT_EQ(empty({2}, kFloat64).storage().nbytes(), 16u);
  EXPECT_EQ(empty({0, 3}).numel(), 0);
  EXPECT_EQ(empty({}).dim(), 0);
  EXPECT_EQ(empty({}).numel(), 1);
}

TEST(Factories, EmptyStridedAllocatesTheReachableSpan) {
  Tensor t = empty_strided({2, 3}, {1, 4}, kInt32);
  EXPECT_EQ(t.strides().vec(), std::vector<int64_t>({1, 4}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage().nbytes(), (1u + 1u + 2u * 4u) * 4u);  // max offset 9, so 10 elements
  EXPECT_EQ(empty_strided({0, 3}, {3, 1}).storage().nbytes(), 0u);
}

TEST(Factories, ZerosOnesFull) {
  EXPECT_EQ(values_of<float>(zeros({2, 2})), std::vector<float>(4, 0.0f));
  EXPECT_EQ(values_of<int64_t>(ones({3}, kInt64)), std::vector<int64_t>(3, 1));
  EXPECT_EQ(values_of<bool>(ones({2}, kBool)), std::vector<bool>(2, true));
  EXPECT_EQ(values_of<double>(full({2}, 2.5, kFloat64)), std::vector<double>(2, 2.5));
  EXPECT_EQ(values_of<int32_t>(full({2, 1}, -4, kInt32)), std::vector<int32_t>(2, -4));
  // The dtype follows the value, as torch.full: int64, bool, float32.
  EXPECT_EQ(full({1}, 7).dtype(), kInt64);
  EXPECT_EQ(full({1}, true).dtype(), kBool);
  EXPECT_EQ(full({1}, 1.5).dtype(), kFloat32);
  EXPECT_EQ(full({1}, 1.5f).dtype(), kFloat32);
  EXPECT_EQ(values_of<int64_t>(full({2}, 2.9, kInt64)), std::vector<int64_t>(2, 2));
  EXPECT_EQ(zeros({0}).numel(), 0);
  EXPECT_EQ(full({}, 3).item<int64_t>(), 3);
}

TEST(Factories, ArangeIntegers) {
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(values_of<int64_t>(arange(5)), std::vector<int64_t>({0, 1, 2, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(arange(0, 5, 2)), std::vector<int64_t>({0, 2, 4}));
  EXPECT_EQ(values_of<int64_t>(arange(1, 10, 3)), std::vector<int64_t>({1, 4, 7}));
  EXPECT_EQ(values_of<int64_t>(arange(10, 1, -3)), std::vector<int64_t>({10, 7, 4}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  // torch.arange(0, 2.5, dtype=int64) converts the bounds first: [0, 1].
  EXPECT_EQ(values_of<int64_t>(arange(0, 2.5, 1, kInt64)), std::vector<int64_t>({0, 1}));
  EXPECT_EQ(values_of<int32_t>(arange(0, 2.5, 1, kInt32)), std::vector<int32_t>({0, 1, 2}));
}

TEST(Factories, ArangeFloats) {
  Tensor a = arange(0, 1, 0.1);
  EXPECT_EQ(a.dtype(), kFloat32);
  ASSERT_EQ(a.numel(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(a.data_ptr<float>()[i], static_cast<float>(i * 0.1));
  EXPECT_EQ(arange(0.0, 1.0, 0.3).numel(), 4);
  EXPECT_EQ(arange(0, 2.5).numel(), 3);
  Tensor b = arange(-2.5, 2.5, 0.5);
  ASSERT_EQ(b.numel(), 10);
  EXPECT_EQ(b.data_ptr<float>()[0], -2.5f);
  EXPECT_EQ(b.data_ptr<float>()[9], 2.0f);
  EXPECT_EQ(values_of<double>(arange(0, 10, 3, kFloat64)), std::vector<double>({0, 3, 6, 9}));
}

TEST(Factories, TensorFromNestedLists) {
  Tensor a = tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.sizes().vec(), std::vector<int64_t>({2, 2}));
  EXPECT_EQ(values_of<int64_t>(a), std::vector<int64_t>({1, 2, 3, 4}));

  Tensor b = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_EQ(b.sizes().vec(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(values_of<float>(b), std::vector<float>({1, 2, 3, 4, 5, 6}));

  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1, 2.5}).dtype(), kFloat32);  // any float -> float32
  EXPECT_EQ(tensor({true, 2}).dtype(), kInt64);   // bool + int -> int64
  EXPECT_EQ(values_of<double>(tensor({1, 2.5}, kFloat64)), std::vector<double>({1.0, 2.5}));
  EXPECT_EQ(values_of<int64_t>(tensor({1.7, -2.2}, kInt64)), std::vector<int64_t>({1, -2}));

  Tensor s = tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.5);

  Tensor e = tensor({});
  EXPECT_EQ(e.sizes().vec(), std::vector<int64_t>({0}));
  EXPECT_EQ(e.dtype(), kFloat32);
  Tensor e2 = tensor({{}, {}});
  EXPECT_EQ(e2.sizes().vec(), std::vector<int64_t>({2, 0}));

  Tensor c = tensor({{{1}, {2}}, {{3}, {4}}, {{5}, {6}}});
  EXPECT_EQ(c.sizes().vec(), std::vector<int64_t>({3, 2, 1}));
  EXPECT_EQ(values_of<int64_t>(c), std::vector<int64_t>({1, 2, 3, 4, 5, 6}));
}

TEST(Factories, ScalarTensor) {
  Tensor a = scalar_tensor(2.5);
  EXPECT_EQ(a.dim(), 0);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.item<float>(), 2.5f);
  EXPECT_EQ(scalar_tensor(3).dtype(), kInt64);
  EXPECT_EQ(scalar_tensor(true).dtype(), kBool);
  EXPECT_EQ(scalar_tensor(3, kFloat64).item<double>(), 3.0);
}

TEST(Factories, FromBlobViewsExternalMemoryAndKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<double>>(std::vector<double>{0, 1, 2, 3, 4, 5});
  std::weak_ptr<std::vector<double>> watch = owner;
  Tensor t = from_blob(owner->data(), {2, 3}, {1, 2}, kFloat64, owner);
  owner.reset();
  EXPECT_FALSE(watch.expired());  // the storage holds it
  EXPECT_EQ(t.sizes().vec(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(t.strides().vec(), std::vector<int64_t>({1, 2}));
  const double* p = t.data_ptr<double>();
  EXPECT_EQ(p[1 * 1 + 2 * 2], 5.0);  // t[1][2]
  EXPECT_EQ(t.storage().nbytes(), 6u * 8u);
  p = nullptr;
  t = Tensor();
  EXPECT_TRUE(watch.expired());  // released with the last tensor
}

TEST(Factories, FromVector) {
  Tensor t = from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(t.dtype(), kInt32);
  EXPECT_EQ(t.sizes().vec(), std::vector<int64_t>({3, 2}));
  EXPECT_EQ(values_of<int32_t>(t), std::vector<int32_t>({1, 2, 3, 4, 5, 6}));
}

TEST(Factories, RandIsDeterministicPerSeedAndInRange) {
  Generator g1(7), g2(7), g3(8);
  Tensor a = rand({100}, g1);
  Tensor b = rand({100}, g2);
  Tensor c = rand({100}, g3);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(values_of<float>(a), values_of<float>(b));
  EXPECT_NE(values_of<float>(a), values_of<float>(c));
  for (float v : values_of<float>(a)) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 1.0f);  // a double just below 1 may round up to 1.0f
  }
  Generator g4(7);
  Tensor d = rand({100}, g4, kFloat64);
  std::set<double> distinct;
  for (double v : values_of<double>(d)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
    distinct.insert(v);
  }
  EXPECT_EQ(distinct.size(), 100u);
  // The generator continues: a second draw differs from the first.
  EXPECT_NE(values_of<double>(rand({100}, g4, kFloat64)), values_of<double>(d));
}

TEST(Factories, RandnHasStandardNormalMoments) {
  Generator gen(123);
  Tensor x = randn({20000}, gen, kFloat64);
  double sum = 0, sq = 0;
  for (double v : values_of<double>(x)) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  double mean = sum / 20000;
  double var = sq / 20000 - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(var, 1.0, 0.05);
  Generator again(123);
  EXPECT_EQ(values_of<double>(randn({20000}, again, kFloat64)), values_of<double>(x));
}

// The host-side draws take one counter each and give what a tensor draw gives there.
TEST(Factories, GeneratorHostDrawsMatchTensorDraws) {
  Generator g(5);
  const double u = g.next_double();
  const double z = g.next_normal();
  const uint64_t bits = g.next_u64();
  EXPECT_EQ(g.offset(), 3u);
  Generator h(5);
  const std::vector<double> draws = values_of<double>(rand({1}, h, kFloat64));
  EXPECT_EQ(draws[0], u);
  EXPECT_EQ(values_of<double>(randn({1}, h, kFloat64))[0], z);
  const Philox4 r = philox4x32_10(2, 0, 5);
  EXPECT_EQ(bits, join64(r.w[0], r.w[1]));
  // Box-Muller's cosine branch on the counter's two 53-bit uniforms.
  const Philox4 w = philox4x32_10(1, 0, 5);
  const double u1 = 1.0 - uniform53(w.w[0], w.w[1]), u2 = uniform53(w.w[2], w.w[3]);
  EXPECT_DOUBLE_EQ(z, std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
}

// The CPU's random kernel takes Philox words a block of counters at a time (Note [Vectorized
// Philox] in tensor/cpu/vec_philox_impl.h): still, element i of every distribution must be
// random_value at counter offset + i, across blocks, the two threads' halves and the tails
// (100,003 elements: no split falls on a block boundary), with offsets whose low word carries and
// that wrap at 2^64.
template <typename T>
void expect_counters_values(const RandomParams& p, int64_t n) {
  Tensor out = empty({n}, TensorOptions(std::is_same_v<T, float> ? kFloat32 : kFloat64));
  backend_for(kCPU).random(out, p);
  const T* got = out.data_ptr<T>();
  for (int64_t i = 0; i < n; ++i) {
    const T want = random_value<T>(p, i);
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(T)), 0)
        << "dist " << static_cast<int>(p.dist) << " offset " << p.offset << " element " << i;
  }
}

TEST(Factories, RandomKernelGivesEachElementItsCountersValue) {
  constexpr int64_t kN = 100003;
  const RandomDist dists[] = {RandomDist::kUniform, RandomDist::kNormal, RandomDist::kInteger,
                              RandomDist::kExponential, RandomDist::kBernoulli};
  for (uint64_t offset : {uint64_t{7}, (uint64_t{1} << 32) - 1000, ~uint64_t{0} - 50000}) {
    for (RandomDist dist : dists) {
      RandomParams p;
      p.dist = dist;
      p.seed = 0x9e3779b97f4a7c15u;
      p.offset = offset;
      p.a = dist == RandomDist::kBernoulli ? 0.3 : dist == RandomDist::kExponential ? 1.5 : -1.0;
      p.b = 2.0;
      p.low = -5;
      p.range = 11;
      p.uniform_bits = 24;
      expect_counters_values<float>(p, kN);
      p.uniform_bits = 53;
      expect_counters_values<double>(p, kN);
    }
  }
}

TEST(Factories, RandintCoversTheHalfOpenRange) {
  Generator gen(99);
  Tensor t = randint(-2, 3, {1000}, gen);
  EXPECT_EQ(t.dtype(), kInt64);
  std::set<int64_t> seen;
  for (int64_t v : values_of<int64_t>(t)) {
    EXPECT_GE(v, -2);
    EXPECT_LT(v, 3);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 5u);
  Tensor f = randint(0, 10, {50}, gen, kFloat64);
  for (double v : values_of<double>(f)) EXPECT_EQ(v, std::floor(v));
}

TEST(Factories, LikeFactoriesAreContiguousWithTheSourceShape) {
  Tensor src = native::transpose(empty({2, 3}, kFloat64), 0, 1);
  Tensor e = empty_like(src);
  EXPECT_EQ(e.sizes().vec(), std::vector<int64_t>({3, 2}));
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(e.dtype(), kFloat64);
  EXPECT_FALSE(e.is_alias_of(src));
  EXPECT_EQ(values_of<double>(zeros_like(src)), std::vector<double>(6, 0.0));
  EXPECT_EQ(values_of<int32_t>(ones_like(src, kInt32)), std::vector<int32_t>(6, 1));
  EXPECT_EQ(values_of<double>(full_like(src, 4)), std::vector<double>(6, 4.0));
  EXPECT_EQ(full_like(src, 4).dtype(), kFloat64);  // the source's dtype, not the value's
  Generator g(1);
  EXPECT_EQ(rand_like(src, g).dtype(), kFloat64);
  EXPECT_EQ(randn_like(src, g).sizes().vec(), std::vector<int64_t>({3, 2}));
}

}  // namespace
}  // namespace mutagrad
