// flip, roll, repeat/tile, tril/triu (+ tril_/triu_), diag, diag_embed, eye, linspace,
// logspace and the in-place view ops (t_, transpose_, unsqueeze_, squeeze_, as_strided_):
// values against naive loops over random shapes, torch's linspace/logspace bits, gradcheck +
// gradgradcheck, PyTorch's node names, error types, and the mutation engine's rules for the
// in-place forms (one bump with the call site, refused leaves and views, stale saved tensors
// naming the op). Runs on the CPU and, as shape_ops_test_cuda, on the CUDA device.
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

using Coord = std::vector<int64_t>;

// Calls fn(coordinates) for every element of `sizes`, row-major.
void for_each_coord(const Coord& sizes, const std::function<void(const Coord&)>& fn) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Coord c(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(c);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
  }
}

int64_t offset_of(const Coord& sizes, const Coord& c) {
  int64_t o = 0;
  for (size_t d = 0; d < sizes.size(); ++d) o = o * sizes[d] + c[d];
  return o;
}

// out[c] = self[source(c)] over out's shape.
std::vector<double> gather_naive(const Tensor& self, const Coord& out_sizes,
                                 const std::function<Coord(const Coord&)>& source) {
  const std::vector<double> v = values(self);
  const Coord sizes = self.sizes().vec();
  std::vector<double> out;
  for_each_coord(out_sizes, [&](const Coord& c) {
    out.push_back(v[static_cast<size_t>(offset_of(sizes, source(c)))]);
  });
  return out;
}

Tensor ints(IntArrayRef sizes, uint64_t seed, ScalarType dtype = kFloat64) {
  Generator gen(seed);
  return dev(randint(-9, 10, sizes, gen, kInt64).to(dtype));
}

Coord random_shape(std::mt19937_64& rng, int64_t min_dim, int64_t max_dim) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Coord s;
  for (int64_t d = pick(min_dim, max_dim); d > 0; --d) s.push_back(pick(0, 4));
  return s;
}

TEST(ShapeOps, FlipRollRepeatMatchNaiveLoops) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 80; ++trial) {
    const Coord shape = random_shape(rng, 1, 3);
    const int64_t nd = static_cast<int64_t>(shape.size());
    Tensor x = ints(shape, trial);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " shape " << IntArrayRef(shape));
    // flip along a random subset of dims, given negative half the time.
    Coord dims;
    for (int64_t d = 0; d < nd; ++d) {
      if (rng() % 2) dims.push_back(rng() % 2 ? d : d - nd);
    }
    expect_close(x.flip(dims), gather_naive(x, shape, [&](Coord c) {
                   for (int64_t d : dims) {
                     const size_t k = static_cast<size_t>(d < 0 ? d + nd : d);
                     c[k] = shape[k] - 1 - c[k];
                   }
                   return c;
                 }));
    // roll along each dim, and along the flattened tensor.
    const int64_t shift = static_cast<int64_t>(rng() % 11) - 5;
    const int64_t dim = static_cast<int64_t>(rng() % static_cast<uint64_t>(nd));
    expect_close(x.roll({shift}, {dim}), gather_naive(x, shape, [&](Coord c) {
                   const int64_t n = shape[static_cast<size_t>(dim)];
                   int64_t& v = c[static_cast<size_t>(dim)];
                   v = ((v - shift) % n + n) % n;
                   return c;
                 }));
    const std::vector<double> flat = values(x);
    std::vector<double> rolled(flat.size());
    const int64_t n = static_cast<int64_t>(flat.size());
    for (int64_t i = 0; i < n; ++i)
      rolled[static_cast<size_t>(((i + shift) % n + n) % n)] = flat[i];
    expect_close(x.roll({shift}), rolled);
    EXPECT_EQ(x.roll({shift}).sizes(), IntArrayRef(shape));
    // repeat with one extra leading dim.
    Coord repeats{static_cast<int64_t>(rng() % 3)}, out_shape{repeats[0]};
    for (int64_t s : shape) {
      repeats.push_back(static_cast<int64_t>(rng() % 3) + (trial % 5 == 0 ? 0 : 1));
      out_shape.push_back(s * repeats.back());
    }
    expect_close(x.repeat(repeats), gather_naive(x, out_shape, [&](const Coord& c) {
                   Coord s;
                   for (size_t d = 1; d < c.size(); ++d) s.push_back(c[d] % shape[d - 1]);
                   return s;
                 }));
    EXPECT_EQ(x.tile({repeats.back()}).sizes()[nd - 1], shape.back() * repeats.back());
  }
}

TEST(ShapeOps, RollsSeveralDimsAndZeroDimTensors) {
  Tensor x = dev(arange(6, kFloat64).view({2, 3}));
  expect_close(x.roll({1, -1}, {0, 1}), {4, 5, 3, 1, 2, 0});
  expect_close(x.roll({1, 1}, {1, 1}), {1, 2, 0, 4, 5, 3});  // a dim twice: rolled twice
  expect_close(x.roll({-8}), {2, 3, 4, 5, 0, 1});
  Tensor s = dev(scalar_tensor(2.0, kFloat64));
  expect_close(s.roll({3}), {2});
  expect_close(s.flip({0}), {2});
  expect_close(s.repeat({3}), {2, 2, 2});
  EXPECT_EQ(s.repeat({}).dim(), 0);
  expect_close(x.fliplr(), {2, 1, 0, 5, 4, 3});
  expect_close(x.flipud(), {3, 4, 5, 0, 1, 2});
  expect_close(x.tile({2}), {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
  EXPECT_EQ(x.tile({2, 1, 1}).sizes(), IntArrayRef({2, 2, 3}));
}

TEST(ShapeOps, TriangleAndDiagonalsMatchNaiveLoops) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 60; ++trial) {
    Coord shape = random_shape(rng, 0, 2);
    shape.push_back(static_cast<int64_t>(rng() % 5));
    shape.push_back(static_cast<int64_t>(rng() % 5));
    const int64_t k = static_cast<int64_t>(rng() % 9) - 4;
    SCOPED_TRACE(::testing::Message() << IntArrayRef(shape) << " k " << k);
    Tensor x = ints(shape, trial + 1000);
    const std::vector<double> v = values(x);
    std::vector<double> lower, upper;
    size_t i = 0;
    for_each_coord(shape, [&](const Coord& c) {
      const int64_t diff = c[c.size() - 1] - c[c.size() - 2];
      lower.push_back(diff <= k ? v[i] : 0.0);
      upper.push_back(diff >= k ? v[i] : 0.0);
      ++i;
    });
    expect_close(x.tril(k), lower);
    expect_close(x.triu(k), upper);
    Tensor y = x.clone();
    y.tril_(k);
    expect_close(y, lower);
    EXPECT_EQ(y.version(), 1u);
    // diag_embed of the last dim, on the last two dims (square, |k| wider).
    const int64_t n = shape.back() + std::abs(k);
    Coord embed_shape = shape;
    embed_shape.push_back(n);
    embed_shape[embed_shape.size() - 2] = n;
    std::vector<double> embedded;
    for_each_coord(embed_shape, [&](const Coord& c) {
      const int64_t r = c[c.size() - 2], col = c[c.size() - 1];
      Coord src(c.begin(), c.end() - 2);
      const int64_t j = k >= 0 ? r : col;
      src.push_back(j);
      embedded.push_back(col - r == k ? v[static_cast<size_t>(offset_of(shape, src))] : 0.0);
    });
    expect_close(x.diag_embed(k), embedded);
  }
  // diag: vector -> matrix, matrix -> its diagonal (any offset inside the matrix).
  Tensor v = dev(tensor({1.0, 2.0}, kFloat64));
  expect_close(v.diag(), {1, 0, 0, 2});
  expect_close(v.diag(1), {0, 1, 0, 0, 0, 2, 0, 0, 0});
  expect_close(diag(v, -1), {0, 0, 0, 1, 0, 0, 0, 2, 0});
  Tensor m = dev(arange(12, kFloat64).view({3, 4}));
  expect_close(m.diag(), {0, 5, 10});
  expect_close(m.diag(2), {2, 7});
  expect_close(m.diag(-2), {8});
  EXPECT_EQ(m.diag(4).numel(), 0);
  EXPECT_EQ(m.diag(-3).numel(), 0);
  expect_close(m.t().diag(1), {4, 9});
  // Other dtypes: a copy with zeros.
  Tensor b = dev(ones({2, 2}, kBool)).tril();
  EXPECT_EQ(b.dtype(), kBool);
  expect_close(b, {1, 0, 1, 1});
  EXPECT_EQ(dev(tensor({3, 4}, kInt64)).diag().dtype(), kInt64);
}

TEST(ShapeOps, EyeLinspaceLogspace) {
  const Device d = testing_util::test_device();
  Tensor e = eye(2, 3, TensorOptions(kInt64).device(d));
  EXPECT_EQ(e.device(), d);
  EXPECT_EQ(e.dtype(), kInt64);
  expect_close(e, {1, 0, 0, 0, 1, 0});
  expect_close(eye(2), {1, 0, 0, 1});
  EXPECT_EQ(eye(0).sizes(), IntArrayRef({0, 0}));
  EXPECT_EQ(eye(3, 0).sizes(), IntArrayRef({3, 0}));
  EXPECT_THROW(eye(-1), ValueError);
  EXPECT_THROW(eye(2, -1), ValueError);
  // torch 1.13's CPU values, bit for bit (Note [linspace's values]); 12 of these 37 float32
  // values differ from the plain formula start + step * i.
  const std::vector<float> f32 = {
      -0x1.266666p+1f, -0x1.027d28p+1f, -0x1.bd27d0p+0f, -0x1.755554p+0f, -0x1.2d82d6p+0f,
      -0x1.cb60b0p-1f, -0x1.3bbbb8p-1f, -0x1.582d78p-2f, -0x1.c71c00p-5f, 0x1.ccccecp-3f,
      0x1.02d836p-1f,  0x1.927d30p-1f,  0x1.111116p+0f,  0x1.58e394p+0f,  0x1.a0b610p+0f,
      0x1.e8888ep+0f,  0x1.182d86p+1f,  0x1.3c16c4p+1f,  0x1.600004p+1f,  0x1.83e942p+1f,
      0x1.a7d280p+1f,  0x1.cbbbc0p+1f,  0x1.efa4fep+1f,  0x1.09c71ep+2f,  0x1.1bbbbcp+2f,
      0x1.2db05cp+2f,  0x1.3fa4fap+2f,  0x1.51999ap+2f,  0x1.638e3ap+2f,  0x1.7582d8p+2f,
      0x1.877778p+2f,  0x1.996c18p+2f,  0x1.ab60b6p+2f,  0x1.bd5556p+2f,  0x1.cf49f6p+2f,
      0x1.e13e94p+2f,  0x1.f33334p+2f};
  Tensor l32 = linspace(-2.3, 7.8, 37, TensorOptions(kFloat32).device(d));
  EXPECT_EQ(l32.device(), d);
  Tensor host32 = l32.cpu();
  EXPECT_EQ(std::memcmp(host32.data_ptr<float>(), f32.data(), f32.size() * sizeof(float)), 0);
  const std::vector<double> f64 = {
      0x1.999999999999ap-4, 0x1.eb851eb851eb8p-3, 0x1.851eb851eb852p-2, 0x1.0a3d70a3d70a3p-1,
      0x1.51eb851eb851ep-1, 0x1.9999999999999p-1, 0x1.e147ae147ae14p-1, 0x1.147ae147ae147p+0,
      0x1.3851eb851eb85p+0, 0x1.5c28f5c28f5c2p+0, 0x1.8000000000000p+0, 0x1.a3d70a3d70a3dp+0,
      0x1.c7ae147ae147bp+0, 0x1.eb851eb851eb8p+0, 0x1.07ae147ae147bp+1, 0x1.199999999999ap+1,
      0x1.2b851eb851eb8p+1, 0x1.3d70a3d70a3d7p+1, 0x1.4f5c28f5c28f6p+1, 0x1.6147ae147ae14p+1,
      0x1.7333333333333p+1};
  Tensor host64 = linspace(0.1, 2.9, 21, TensorOptions(kFloat64).device(d)).cpu();
  EXPECT_EQ(std::memcmp(host64.data_ptr<double>(), f64.data(), f64.size() * sizeof(double)), 0);
  expect_close(linspace(-7, 12, 19, kInt64),
               {-7, -5, -4, -3, -2, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12});
  expect_close(linspace(3, -40, 17, kInt32),
               {3, 0, -2, -5, -7, -10, -13, -15, -18, -20, -23, -26, -28, -31, -34, -36, -40});
  expect_close(linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
  expect_close(linspace(3, 1, 1), {3});
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_THROW(linspace(0, 1, -1), ValueError);
  EXPECT_THROW(linspace(0, 1, 3, kBool), DTypeError);
  const std::vector<double> log64 = {
      0x1.8a2345cc04426p-3, 0x1.49d04d33b2515p-2, 0x1.13fcc63fd4c07p-1,
      0x1.cde43080fb504p-1, 0x1.82827ded97349p+0, 0x1.436e37fd4c5d5p+1,
      0x1.0ea56094cd8edp+2, 0x1.c4f3b823f96d5p+2, 0x1.7b07813c56f93p+3};
  Tensor hostlog = logspace(-1.5, 2.25, 9, 3.0, TensorOptions(kFloat64).device(d)).cpu();
  EXPECT_EQ(std::memcmp(hostlog.data_ptr<double>(), log64.data(), log64.size() * sizeof(double)),
            0);
  expect_close(logspace(0, 2, 3, 10.0, kInt64), {1, 10, 100});
  expect_close(logspace(2, 3, 1), {100});
}

const autograd::TensorFunction kFlip = [](const VariableList& in) { return in[0].flip({0, -1}); };
const autograd::TensorFunction kRoll = [](const VariableList& in) {
  return in[0].roll({1, -2}, {1, 0});
};
const autograd::TensorFunction kRollFlat = [](const VariableList& in) { return in[0].roll({4}); };
const autograd::TensorFunction kRepeat = [](const VariableList& in) {
  return in[0].repeat({2, 1, 3});
};
const autograd::TensorFunction kTile = [](const VariableList& in) { return in[0].tile({2}); };
const autograd::TensorFunction kTril = [](const VariableList& in) { return in[0].tril(-1); };
const autograd::TensorFunction kTriu = [](const VariableList& in) { return triu(in[0], 1); };
const autograd::TensorFunction kDiag = [](const VariableList& in) { return in[0].diag(1); };
const autograd::TensorFunction kDiagNeg = [](const VariableList& in) { return in[0].diag(-1); };
const autograd::TensorFunction kDiagEmbed = [](const VariableList& in) {
  return in[0].diag_embed(1, 0, 2);
};

TEST(ShapeOps, GradientsAtEveryArgument) {
  CHECK_GRADS(kFlip, {leaf({2, 3}, 1)});
  CHECK_GRADS(kFlip, {strided_leaf({3, 2}, 2)});
  CHECK_GRADS(kRoll, {leaf({3, 4}, 3)});
  CHECK_GRADS(kRollFlat, {strided_leaf({2, 3}, 4)});
  CHECK_GRADS(kRepeat, {leaf({2, 2}, 5)});
  CHECK_GRADS(kRepeat, {leaf({2}, 6)});
  CHECK_GRADS(kTile, {leaf({2, 3}, 7)});
  CHECK_GRADS(kTril, {leaf({2, 3, 3}, 8)});
  CHECK_GRADS(kTriu, {strided_leaf({3, 4}, 9)});
  CHECK_GRADS(kDiag, {leaf({3}, 10)});
  CHECK_GRADS(kDiag, {leaf({3, 4}, 11)});
  CHECK_GRADS(kDiagNeg, {strided_leaf({4, 3}, 12)});
  CHECK_GRADS(kDiagEmbed, {leaf({2, 3}, 13)});
  const autograd::TensorFunction tril_ = [](const VariableList& in) {
    Tensor y = in[0] * 1.0;
    return y.tril_(1);
  };
  CHECK_GRADS(tril_, {leaf({3, 3}, 14)});
  const autograd::TensorFunction triu_view = [](const VariableList& in) {
    Tensor y = in[0] * 1.0;
    y.select(0, 1).triu_();  // a view: the base gets CopySlices
    return y;
  };
  CHECK_GRADS(triu_view, {leaf({2, 3, 3}, 15)});
}

TEST(ShapeOps, NodeNamesArePyTorchs) {
  Tensor x = leaf({3, 3}, 1);
  EXPECT_STREQ(x.flip({0}).grad_fn()->name(), "FlipBackward0");
  EXPECT_STREQ(x.fliplr().grad_fn()->name(), "FlipBackward0");
  EXPECT_STREQ(x.roll({1}).grad_fn()->name(), "RollBackward0");
  EXPECT_STREQ(x.repeat({2, 2}).grad_fn()->name(), "RepeatBackward0");
  EXPECT_STREQ(x.tile({2}).grad_fn()->name(), "RepeatBackward0");
  EXPECT_STREQ(x.tril().grad_fn()->name(), "TrilBackward0");
  EXPECT_STREQ(x.triu().grad_fn()->name(), "TriuBackward0");
  EXPECT_STREQ(x.diag().grad_fn()->name(), "DiagBackward0");
  EXPECT_STREQ(x.diag_embed().grad_fn()->name(), "DiagEmbedBackward0");
  Tensor y = x * 1.0;
  y.triu_();
  EXPECT_STREQ(y.grad_fn()->name(), "TriuBackward0");
}

TEST(ShapeOps, RefusedWithTorchsErrorKinds) {
  Tensor x = leaf({2, 3}, 1);
  EXPECT_THROW(x.flip({0, -2}), ValueError);  // dim 0 twice
  EXPECT_THROW(x.flip({2}), IndexError);
  EXPECT_THROW(leaf({3}, 2).fliplr(), ShapeError);
  EXPECT_THROW(dev(scalar_tensor(1.0)).flipud(), ShapeError);
  EXPECT_THROW(x.roll({}), ValueError);
  EXPECT_THROW(x.roll({1, 2}), ValueError);  // two shifts without dims
  EXPECT_THROW(x.roll({1, 2}, {0}), ValueError);
  EXPECT_THROW(x.roll({1}, {2}), IndexError);
  EXPECT_THROW(dev(scalar_tensor(1.0)).roll({1}, {0}), IndexError);
  EXPECT_THROW(x.repeat({2}), ShapeError);
  EXPECT_THROW(x.repeat({-1, 2}), ValueError);
  EXPECT_THROW(x.tile({-1}), ValueError);
  EXPECT_THROW(leaf({3}, 3).tril(), IndexError);
  EXPECT_EQ(dev(zeros({0}, kFloat64)).tril().sizes(), IntArrayRef({0}));  // empty: a copy
  EXPECT_THROW(x.diag(4), ShapeError);
  EXPECT_THROW(leaf({2, 2, 2}, 4).diag(), ShapeError);
  EXPECT_THROW(x.diag_embed(0, 1, -2), ValueError);  // the same dim twice
  EXPECT_THROW(x.diag_embed(0, 3, 1), IndexError);
}

// ---- In-place forms
// ------------------------------------------------------------------------------

TEST(ShapeOps, TriangleInPlaceFollowsTheMutationEngine) {
  Tensor x = leaf({3, 3}, 1);
  EXPECT_THROW(x.tril_(), autograd::AutogradError);  // a leaf that requires grad
  EXPECT_THROW(x.select(0, 0).unsqueeze(0).triu_(), autograd::AutogradError);  // view of a leaf
  EXPECT_EQ(x.version(), 0u);
  Tensor plain = dev(ones({3}, kFloat64));
  EXPECT_THROW(plain.tril_(), IndexError);
  EXPECT_EQ(plain.version(), 0u);
  for (const char* op : {"tril_", "triu_"}) {
    Tensor y = x.exp();
    Tensor z = y * y;  // saves y
    if (std::string(op) == "tril_") {
      y.tril_();
    } else {
      y.triu_();
    }
    EXPECT_EQ(y.version(), 1u) << op;
    const std::string message = error_of([&] { z.sum().backward(); });
    EXPECT_NE(message.find(op), std::string::npos) << message;
    EXPECT_NE(message.find("shape_ops_test.cc"), std::string::npos) << message;
  }
}

TEST(ShapeOps, InPlaceViewOpsChangeGeometryAndBumpOnce) {
  Tensor x = leaf({2, 3}, 1);
  Tensor y = x * 2.0;
  const std::vector<double> before = values(y);
  y.t_();
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(y.version(), 1u);
  EXPECT_STREQ(y.grad_fn()->name(), "TBackward1");
  EXPECT_STREQ(y.grad_fn()->next_edge(0).function->name(), "MulBackward1");
  expect_close(y, values(dev(from_vector(before, {2, 3})).t()));
  y.transpose_(0, -1);
  EXPECT_STREQ(y.grad_fn()->name(), "TransposeBackward1");
  y.unsqueeze_(1);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 1, 3}));
  EXPECT_STREQ(y.grad_fn()->name(), "UnsqueezeBackward1");
  y.squeeze_(1);
  EXPECT_STREQ(y.grad_fn()->name(), "SqueezeBackward3");
  y.unsqueeze_(0).squeeze_();
  EXPECT_STREQ(y.grad_fn()->name(), "SqueezeBackward2");
  y.as_strided_({2}, {4}, 0);  // y's storage is x * 2, row-major [2, 3]: elements 0 and 4
  EXPECT_STREQ(y.grad_fn()->name(), "AsStridedBackward1");
  EXPECT_EQ(y.version(), 7u);
  expect_close(y, {before[0], before[4]});
  (y * dev(tensor({1.0, 3.0}, kFloat64))).sum().backward();
  expect_close(x.grad(), {2, 0, 0, 0, 6, 0});
}

const autograd::TensorFunction kTInPlace = [](const VariableList& in) {
  Tensor y = in[0] * 1.0;
  return y.t_();
};
const autograd::TensorFunction kViewOpsInPlace = [](const VariableList& in) {
  Tensor y = in[0] * 1.0;
  y.transpose_(0, 2).unsqueeze_(1).squeeze_(3);
  return y * y;
};
const autograd::TensorFunction kSqueezeAllInPlace = [](const VariableList& in) {
  Tensor y = in[0] * 1.0;
  return y.squeeze_();
};
const autograd::TensorFunction kAsStridedInPlace = [](const VariableList& in) {
  Tensor y = in[0] * 1.0;
  return y.as_strided_({2, 2}, {1, 3}, 1);
};

TEST(ShapeOps, InPlaceViewOpsGradients) {
  CHECK_GRADS(kTInPlace, {leaf({2, 3}, 1)});
  CHECK_GRADS(kViewOpsInPlace, {leaf({2, 3, 1}, 2)});
  CHECK_GRADS(kSqueezeAllInPlace, {strided_leaf({1, 3, 1}, 3)});
  CHECK_GRADS(kAsStridedInPlace, {leaf({2, 3}, 4)});
  // Through a view: the view's grad_fn is the op's node, the base keeps its history.
  const autograd::TensorFunction view_t = [](const VariableList& in) {
    Tensor y = in[0] * 1.0;
    Tensor v = y.view({3, 2});
    v.t_();
    return v * y.view({2, 3});
  };
  CHECK_GRADS(view_t, {leaf({6}, 5)});
}

TEST(ShapeOps, InPlaceViewOpOnAViewLeavesTheBaseAlone) {
  Tensor x = leaf({6}, 1);
  Tensor y = x * 2.0;
  Tensor v = y.view({2, 3});
  v.t_();
  EXPECT_STREQ(v.grad_fn()->name(), "TBackward1");
  EXPECT_STREQ(y.grad_fn()->name(), "MulBackward1");
  EXPECT_EQ(y.version(), 1u);
  EXPECT_TRUE(v.is_view());
  Tensor w = dev(arange(6, kFloat64).view({3, 2}));
  (v * w).sum().backward();
  // v[i][j] = y[3j + i] = 2 x[3j + i]; its weight w[i][j] = 2i + j.
  expect_close(x.grad(), {0, 4, 8, 2, 6, 10});
  // A write into the base regenerates v's grad_fn from the extended replay chain (the view op,
  // then t).
  Tensor x2 = leaf({6}, 2);
  Tensor y2 = x2 * 1.0;
  Tensor v2 = y2.view({2, 3});
  v2.t_();
  y2.mul_(3.0);
  EXPECT_STREQ(v2.grad_fn()->name(), "TBackward0");
  (v2 * w).sum().backward();
  expect_close(x2.grad(), {0, 6, 12, 3, 9, 15});
  // A write through the view after t_: CopySlices takes the view's new geometry.
  Tensor x3 = leaf({6}, 3);
  Tensor y3 = x3 * 1.0;
  Tensor v3 = y3.view({2, 3});
  v3.t_();
  v3.mul_(w);
  EXPECT_STREQ(y3.grad_fn()->name(), "CopySlices");
  y3.sum().backward();
  expect_close(x3.grad(), {0, 2, 4, 1, 3, 5});
}

TEST(ShapeOps, BaseChangingGeometryKeepsItsViewsRight) {
  // The view's replay chain (select row 1) no longer applies once its base is transposed: its
  // grad_fn falls back to as_strided on the base's new geometry.
  Tensor x = leaf({2, 3}, 1);
  Tensor y = x * 1.0;
  Tensor row = y.select(0, 1);
  y.t_();
  EXPECT_STREQ(row.grad_fn()->name(), "AsStridedBackward0");
  Tensor w = dev(tensor({1.0, 2.0, 3.0}, kFloat64));
  (row * w).sum().backward(Tensor(), true);
  expect_close(x.grad(), {0, 0, 0, 1, 2, 3});
  // A write through that view, and a gradient through the base.
  Tensor x2 = leaf({2, 3}, 2);
  Tensor y2 = x2 * 1.0;
  Tensor row2 = y2.select(0, 1);
  y2.t_();
  row2.mul_(w);
  (y2 * dev(ones({3, 2}, kFloat64))).sum().backward();
  expect_close(x2.grad(), {1, 1, 1, 1, 2, 3});
}

TEST(ShapeOps, InPlaceViewOpsFollowTheMutationEngine) {
  Tensor x = leaf({2, 3}, 1);
  EXPECT_THROW(x.t_(), autograd::AutogradError);
  EXPECT_THROW(x.select(0, 0).unsqueeze_(0), autograd::AutogradError);
  EXPECT_THROW(x.split(1)[0].squeeze_(), autograd::AutogradError);
  EXPECT_EQ(x.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(x.version(), 0u);
  {
    NoGradGuard no_grad;
    x.t_();  // allowed: nothing is recorded
  }
  EXPECT_EQ(x.sizes(), IntArrayRef({3, 2}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.version(), 1u);
  Tensor y = leaf({2, 3, 1}, 2) * 1.0;
  EXPECT_THROW(y.t_(), ShapeError);
  EXPECT_THROW(y.transpose_(0, 3), IndexError);
  EXPECT_THROW(y.unsqueeze_(4), IndexError);
  EXPECT_THROW(y.squeeze_(-4), IndexError);
  EXPECT_THROW(y.as_strided_({2, 2}, {1, 3}, 100), ValueError);
  EXPECT_THROW(y.as_strided_({2, 2}, {1, -1}), ValueError);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 1}));
  EXPECT_EQ(y.version(), 0u);
  y.squeeze_(1);  // not size 1: no change, still a bump (as torch)
  EXPECT_EQ(y.version(), 1u);
  // Nothing requires grad: metadata and a bump, shared with views.
  Tensor p = dev(zeros({6}, kFloat64));
  Tensor pv = p.view({2, 3});
  pv.t_();
  EXPECT_EQ(p.version(), 1u);
  EXPECT_EQ(pv.sizes(), IntArrayRef({3, 2}));
  for (const char* op : {"t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_"}) {
    Tensor a = leaf({2, 2}, 3).exp();
    Tensor z = a * a;  // saves a
    const std::string name = op;
    if (name == "t_") a.t_();
    if (name == "transpose_") a.transpose_(0, 1);
    if (name == "unsqueeze_") a.unsqueeze_(0);
    if (name == "squeeze_") a.squeeze_();
    if (name == "as_strided_") a.as_strided_({4}, {1});
    EXPECT_EQ(a.version(), 1u) << op;
    const std::string message = error_of([&] { z.sum().backward(); });
    EXPECT_NE(message.find(std::string("is ") + op), std::string::npos) << message;
    EXPECT_NE(message.find("shape_ops_test.cc"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace mutagrad
