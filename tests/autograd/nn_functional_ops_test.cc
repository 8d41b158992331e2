// The nn functional ops of nn_ops.h and the losses of regression_loss_ops.cc: values against
// naive double loops and hand-derived numbers, gradcheck + gradgradcheck for every
// differentiable argument, PyTorch 1.13's node names, the tracked writes (running statistics,
// embedding_renorm_, in-place activations and dropout: one bump each with the call site), and
// typed errors that change nothing. Runs on the CPU and, as nn_functional_ops_test_cuda, on the
// CUDA device.
#include <cmath>
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
using testing_util::test_device;
using testing_util::values;

Tensor f64(const std::vector<double>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }
Tensor i64(const std::vector<int64_t>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }
std::string node_name(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "none"; }

std::vector<double> map(const std::vector<double>& v, double (*f)(double, double), double a) {
  std::vector<double> out;
  for (double x : v) out.push_back(f(x, a));
  return out;
}

double gelu_ref(double x, double tanh_approx) {
  if (tanh_approx != 0) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double silu_ref(double x, double) { return x / (1 + std::exp(-x)); }
double leaky_ref(double x, double s) { return x > 0 ? x : s * x; }
double elu_ref(double x, double a) { return x > 0 ? x : a * (std::exp(x) - 1); }
double softplus_ref(double x, double beta) {
  return beta * x > 20 ? x : std::log1p(std::exp(beta * x)) / beta;
}

// ---- Activations -------------------------------------------------------------------------------

TEST(NnActivations, ValuesMatchNaiveFormulas) {
  const std::vector<double> v{-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 25.0};
  const Tensor x = f64(v, {7});
  expect_close(gelu(x), map(v, gelu_ref, 0), 1e-12);
  expect_close(gelu(x, "tanh"), map(v, gelu_ref, 1), 1e-12);
  expect_close(silu(x), map(v, silu_ref, 0), 1e-12);
  expect_close(leaky_relu(x, 0.2), map(v, leaky_ref, 0.2), 1e-12);
  expect_close(elu(x, 1.5), map(v, elu_ref, 1.5), 1e-12);
  expect_close(softplus(x, 2.0), map(v, softplus_ref, 2.0), 1e-12);
  expect_close(softplus(x), map(v, softplus_ref, 1.0), 1e-12);
}

TEST(NnActivations, GradientsAndNodeNames) {
  const Tensor x = leaf({3, 4}, 1, -2.0, 2.0);
  const Tensor xs = strided_leaf({3, 4}, 2, -2.0, 2.0);
  for (const Tensor& in : {x, xs}) {
    CHECK_GRADS([](const VariableList& i) { return gelu(i[0]); }, {in});
    CHECK_GRADS([](const VariableList& i) { return gelu(i[0], "tanh"); }, {in});
    CHECK_GRADS([](const VariableList& i) { return silu(i[0]); }, {in});
    CHECK_GRADS([](const VariableList& i) { return leaky_relu(i[0], 0.1); }, {in});
    CHECK_GRADS([](const VariableList& i) { return elu(i[0], 0.7); }, {in});
    CHECK_GRADS([](const VariableList& i) { return softplus(i[0], 1.5, 2.0); }, {in});
  }
  EXPECT_EQ(node_name(gelu(x)), "GeluBackward0");
  EXPECT_EQ(node_name(gelu(x, "tanh")), "GeluBackward0");
  EXPECT_EQ(node_name(silu(x)), "SiluBackward0");
  EXPECT_EQ(node_name(leaky_relu(x)), "LeakyReluBackward0");
  EXPECT_EQ(node_name(elu(x)), "EluBackward0");
  EXPECT_EQ(node_name(softplus(x)), "SoftplusBackward0");
}

TEST(NnActivations, InPlaceFormsBumpOnceAndDifferentiate) {
  const std::vector<double> v{-2.0, -0.5, 0.5, 3.0};
  Tensor a = f64(v, {4});
  const int line = __LINE__ + 1;
  leaky_relu_(a, 0.3);
  EXPECT_EQ(a.version(), 1u);
  EXPECT_STREQ(a.version_counter().site_of_bump(0)->op, "leaky_relu_");
  EXPECT_EQ(a.version_counter().site_of_bump(0)->line, line);
  expect_close(a, map(v, leaky_ref, 0.3), 1e-12);
  Tensor b = f64(v, {4});
  elu_(b, 1.2);
  EXPECT_EQ(b.version(), 1u);
  expect_close(b, map(v, elu_ref, 1.2), 1e-12);
  // Through a non-leaf: LeakyReluBackward1 / EluBackward1, gradients of the out-of-place forms.
  auto in_place = [](bool use_elu) {
    return [use_elu](const VariableList& i) {
      Tensor y = i[0] * 1.0;
      if (use_elu) return elu_(y, 0.8);
      return leaky_relu_(y, 0.1);
    };
  };
  const Tensor x = leaf({5}, 3, -2.0, 2.0);
  CHECK_GRADS(in_place(false), {x});
  CHECK_GRADS(in_place(true), {x});
  Tensor y = x * 1.0;
  EXPECT_EQ(node_name(leaky_relu_(y)), "LeakyReluBackward1");
  Tensor z = x * 1.0;
  EXPECT_EQ(node_name(elu_(z)), "EluBackward1");
  // A leaf requiring grad is refused before the write.
  Tensor leaf_x = leaf({3}, 4);
  const std::vector<double> before = values(leaf_x);
  error_of([&] { leaky_relu_(leaf_x); });
  EXPECT_EQ(leaf_x.version(), 0u);
  expect_close(leaf_x, before, 0);
  error_of<ValueError>([] { gelu(f64({1.0}, {1}), "fast"); });
  error_of<DTypeError>([] { silu(i64({1}, {1})); });
}

// ---- Normalization -----------------------------------------------------------------------------

// Normalizes each run of `group` consecutive values of v.
std::vector<double> naive_normalize(const std::vector<double>& v, size_t group, double eps) {
  std::vector<double> out(v.size());
  for (size_t s = 0; s < v.size(); s += group) {
    double m = 0, var = 0;
    for (size_t i = 0; i < group; ++i) m += v[s + i];
    m /= group;
    for (size_t i = 0; i < group; ++i) var += (v[s + i] - m) * (v[s + i] - m);
    var /= group;
    for (size_t i = 0; i < group; ++i) out[s + i] = (v[s + i] - m) / std::sqrt(var + eps);
  }
  return out;
}

TEST(NnNormalization, LayerNormValuesGradientsAndName) {
  const Tensor x = leaf({2, 3, 4}, 5, -2.0, 2.0);
  const Tensor w = leaf({3, 4}, 6);
  const Tensor b = leaf({3, 4}, 7);
  std::vector<double> expected = naive_normalize(values(x), 12, 1e-5);
  const std::vector<double> wv = values(w), bv = values(b);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = expected[i] * wv[i % 12] + bv[i % 12];
  const Tensor y = layer_norm(x, {3, 4}, w, b);
  expect_close(y, expected, 1e-10);
  EXPECT_EQ(node_name(y), "NativeLayerNormBackward0");
  CHECK_GRADS(
      [](const VariableList& i) {
        return layer_norm(i[0], {3, 4}, i[1], i[2]);
      },
      {x, w, b});
  CHECK_GRADS([](const VariableList& i) { return layer_norm(i[0], {4}); },
              {strided_leaf({4, 3}, 8).t()});
  const std::string msg = error_of<ShapeError>([&] { layer_norm(x, {5}); });
  EXPECT_NE(msg.find("normalized_shape"), std::string::npos) << msg;
}

TEST(NnNormalization, GroupNormValuesGradientsAndName) {
  const Tensor x = leaf({2, 4, 3}, 9, -2.0, 2.0);
  const Tensor w = leaf({4}, 10);
  const Tensor b = leaf({4}, 11);
  // Groups of 2 channels x 3 positions: 6 consecutive values.
  std::vector<double> expected = naive_normalize(values(x), 6, 1e-5);
  const std::vector<double> wv = values(w), bv = values(b);
  for (size_t i = 0; i < expected.size(); ++i) {
    const size_t c = (i / 3) % 4;
    expected[i] = expected[i] * wv[c] + bv[c];
  }
  const Tensor y = group_norm(x, 2, w, b);
  expect_close(y, expected, 1e-10);
  EXPECT_EQ(node_name(y), "NativeGroupNormBackward0");
  CHECK_GRADS([](const VariableList& i) { return group_norm(i[0], 2, i[1], i[2]); }, {x, w, b});
  CHECK_GRADS([](const VariableList& i) { return group_norm(i[0], 4); }, {x});
  error_of<ShapeError>([&] { group_norm(x, 3); });
}

TEST(NnNormalization, BatchNormTrainingUpdatesRunningStatsOnceEach) {
  const Tensor x = leaf({3, 2, 2}, 12, -2.0, 2.0);
  const Tensor w = leaf({2}, 13);
  const Tensor b = leaf({2}, 14);
  Tensor rm = f64({0.5, -1.0}, {2});
  Tensor rv = f64({2.0, 1.0}, {2});
  const int line = __LINE__ + 1;
  const Tensor y = batch_norm(x, rm, rv, w, b, /*training=*/true, /*momentum=*/0.25);
  EXPECT_EQ(node_name(y), "NativeBatchNormBackward0");
  // Per channel c: the 6 values x[n, c, k].
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
  std::vector<double> expected(xv.size());
  const std::vector<double> rm0{0.5, -1.0}, rv0{2.0, 1.0};
  std::vector<double> rm1(2), rv1(2);
  for (int c = 0; c < 2; ++c) {
    std::vector<double> ch;
    for (int n = 0; n < 3; ++n) {
      for (int k = 0; k < 2; ++k) ch.push_back(xv[n * 4 + c * 2 + k]);
    }
    double m = 0, var = 0;
    for (double e : ch) m += e;
    m /= 6;
    for (double e : ch) var += (e - m) * (e - m);
    for (int n = 0; n < 3; ++n) {
      for (int k = 0; k < 2; ++k) {
        const int i = n * 4 + c * 2 + k;
        expected[i] = (xv[i] - m) / std::sqrt(var / 6 + 1e-5) * wv[c] + bv[c];
      }
    }
    rm1[c] = 0.75 * rm0[c] + 0.25 * m;
    rv1[c] = 0.75 * rv0[c] + 0.25 * var / 5;  // unbiased
  }
  expect_close(y, expected, 1e-10);
  expect_close(rm, rm1, 1e-12);
  expect_close(rv, rv1, 1e-12);
  for (const Tensor* t : {&rm, &rv}) {
    EXPECT_EQ(t->version(), 1u);
    EXPECT_STREQ(t->version_counter().site_of_bump(0)->op, "batch_norm");
    EXPECT_EQ(t->version_counter().site_of_bump(0)->line, line);
  }
  CHECK_GRADS(
      [](const VariableList& i) {
        return batch_norm(i[0], Tensor(), Tensor(), i[1], i[2], /*training=*/true);
      },
      {x, w, b});
  CHECK_GRADS(
      [](const VariableList& i) {
        return batch_norm(i[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
      },
      {leaf({4, 3}, 15)});
}

TEST(NnNormalization, BatchNormEvalUsesRunningStats) {
  const Tensor x = leaf({2, 2, 3}, 16, -2.0, 2.0);
  const Tensor w = leaf({2}, 17);
  const Tensor b = leaf({2}, 18);
  const Tensor rm = f64({0.5, -1.0}, {2});
  const Tensor rv = f64({2.0, 0.5}, {2});
  const Tensor y = batch_norm(x, rm, rv, w, b, /*training=*/false);
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
  std::vector<double> expected;
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t c = (i / 3) % 2;
    const double m = c == 0 ? 0.5 : -1.0, v = c == 0 ? 2.0 : 0.5;
    expected.push_back((xv[i] - m) / std::sqrt(v + 1e-5) * wv[c] + bv[c]);
  }
  expect_close(y, expected, 1e-10);
  EXPECT_EQ(rm.version(), 0u);
  EXPECT_EQ(node_name(y), "NativeBatchNormBackward0");
  CHECK_GRADS([&](const VariableList& i) { return batch_norm(i[0], rm, rv, i[1], i[2], false); },
              {x, w, b});
  // A training forward writes the statistics an eval graph saved: its backward is refused.
  const Tensor e = batch_norm(x, rm, rv, w, b, false);
  batch_norm(x.detach(), rm, rv, Tensor(), Tensor(), true);
  error_of([&] { e.sum().backward(); });
}

TEST(NnNormalization, BadBatchNormChangesNothing) {
  Tensor rm = f64({0.0, 0.0, 0.0}, {3});
  Tensor rv = f64({1.0, 1.0, 1.0}, {3});
  const std::string msg = error_of<ValueError>([&] {
    batch_norm(f64({1, 2, 3}, {1, 3}), rm, rv, Tensor(), Tensor(), true);
  });
  EXPECT_NE(msg.find("Expected more than 1 value per channel when training, got input size "
                     "[1, 3]"),
            std::string::npos)
      << msg;
  error_of<ShapeError>([&] {
    batch_norm(f64({1, 2, 3, 4}, {2, 2}), rm, rv, Tensor(), Tensor(), true);
  });
  error_of<ValueError>([&] {
    batch_norm(f64({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor(), Tensor(), Tensor(), Tensor());
  });
  EXPECT_EQ(rm.version(), 0u);
  EXPECT_EQ(rv.version(), 0u);
  expect_close(rm, {0, 0, 0}, 0);
  expect_close(rv, {1, 1, 1}, 0);
}

TEST(NnNormalization, Normalize) {
  const Tensor x = f64({3, 4, 0, 5, 1, 1}, {2, 3});
  // Columns (3, 5), (4, 1), (0, 1).
  const double r34 = std::sqrt(34.0), r17 = std::sqrt(17.0);
  expect_close(normalize(x, 2.0, 0), {3 / r34, 4 / r17, 0, 5 / r34, 1 / r17, 1}, 1e-12);
  EXPECT_EQ(node_name(normalize(leaf({2, 3}, 19))), "DivBackward0");
  CHECK_GRADS([](const VariableList& i) { return normalize(i[0]); }, {leaf({2, 3}, 19)});
  CHECK_GRADS([](const VariableList& i) { return normalize(i[0], 1.0, 0); }, {leaf({2, 3}, 20)});
}

// ---- Embedding, one_hot, pad -------------------------------------------------------------------

TEST(NnLookup, EmbeddingValuesPaddingGradientAndName) {
  const Tensor w = leaf({4, 3}, 21);
  const Tensor ids = i64({1, 3, 1, 0, 2, 1}, {2, 3});
  const Tensor y = embedding(ids, w, /*padding_idx=*/1);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 3}));
  EXPECT_EQ(node_name(y), "EmbeddingBackward0");
  const std::vector<double> wv = values(w);
  std::vector<double> expected;
  for (int64_t r : {1, 3, 1, 0, 2, 1}) {
    for (int j = 0; j < 3; ++j) expected.push_back(wv[r * 3 + j]);
  }
  expect_close(y, expected, 0);
  y.sum().backward();
  // Row 1 is padding: no gradient; rows 0, 2, 3 once each.
  expect_close(w.grad(), {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1}, 0);
  CHECK_GRADS([&](const VariableList& i) { return embedding(ids, i[0]); }, {leaf({4, 3}, 22)});
  // scale_grad_by_freq: each row's gradient divided by its count (row 1, looked up 3 times,
  // gets 1); padding_idx -1 is the last row.
  const Tensor w2 = leaf({4, 3}, 23);
  embedding(ids, w2, -1, std::nullopt, 2, true).sum().backward();
  expect_close(w2.grad(), {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, 1e-15);
}

TEST(NnLookup, EmbeddingMaxNormRenormalizesInPlace) {
  Tensor w = f64({3, 4, 0.3, 0.4, 6, 8}, {3, 2});
  const Tensor ids = i64({0, 1, 0}, {3});
  const int line = __LINE__ + 1;
  const Tensor y = embedding(ids, w, std::nullopt, /*max_norm=*/1.0);
  // Row 0 (norm 5) scaled to norm 1 (less 1e-7 relative); row 1 (norm 0.5) and row 2 (not
  // looked up) unchanged.
  const double s = 1.0 / (5 + 1e-7);
  expect_close(w, {3 * s, 4 * s, 0.3, 0.4, 6, 8}, 1e-12);
  expect_close(y, {3 * s, 4 * s, 0.3, 0.4, 3 * s, 4 * s}, 1e-12);
  EXPECT_EQ(w.version(), 1u);
  EXPECT_STREQ(w.version_counter().site_of_bump(0)->op, "embedding_renorm_");
  EXPECT_EQ(w.version_counter().site_of_bump(0)->line, line);
  // A graph that saved the weight before is refused.
  Tensor p = f64({3, 4, 0.3, 0.4, 6, 8}, {3, 2}).requires_grad_();
  const Tensor saved = p * p;
  embedding(ids, p, std::nullopt, 1.0);
  EXPECT_EQ(p.version(), 1u);
  error_of([&] { saved.sum().backward(); });
}

TEST(NnLookup, BadEmbeddingChangesNothing) {
  Tensor w = f64({3, 4, 6, 8}, {2, 2});
  error_of<IndexError>([&] { embedding(i64({0, 2}, {2}), w, std::nullopt, 1.0); });
  error_of<IndexError>([&] { embedding(i64({0}, {1}), w, 2); });
  error_of<DTypeError>([&] { embedding(f64({0}, {1}), w); });
  EXPECT_EQ(w.version(), 0u);
  expect_close(w, {3, 4, 6, 8}, 0);
}

TEST(NnLookup, OneHot) {
  const Tensor h = one_hot(i64({0, 2, 1}, {3}));
  EXPECT_EQ(h.dtype(), kInt64);
  expect_close(h, {1, 0, 0, 0, 0, 1, 0, 1, 0}, 0);
  expect_close(one_hot(i64({1}, {1, 1}), 3), {0, 1, 0}, 0);
  error_of<ValueError>([] { one_hot(i64({3}, {1}), 2); });
  error_of<ValueError>([] { one_hot(i64({-1}, {1}), 2); });
}

// Naive padding of a [rows, cols] matrix by (left, right, top, bottom).
std::vector<double> naive_pad2d(const std::vector<double>& v, int rows, int cols, int l, int r,
                                int t, int b, const std::string& mode) {
  std::vector<double> out;
  for (int i = -t; i < rows + b; ++i) {
    for (int j = -l; j < cols + r; ++j) {
      int ii = i, jj = j;
      if (mode == "reflect") {
        ii = ii < 0 ? -ii : ii >= rows ? 2 * (rows - 1) - ii : ii;
        jj = jj < 0 ? -jj : jj >= cols ? 2 * (cols - 1) - jj : jj;
      } else if (mode == "replicate") {
        ii = std::min(std::max(ii, 0), rows - 1);
        jj = std::min(std::max(jj, 0), cols - 1);
      } else if (mode == "circular") {
        ii = (ii + rows) % rows;
        jj = (jj + cols) % cols;
      } else if (ii < 0 || ii >= rows || jj < 0 || jj >= cols) {
        out.push_back(-1.5);
        continue;
      }
      out.push_back(v[ii * cols + jj]);
    }
  }
  return out;
}

TEST(NnPad, ModesMatchNaiveAndDifferentiate) {
  const Tensor x = leaf({1, 3, 4}, 24);
  const std::vector<double> xv = values(x);
  expect_close(pad(x, {1, 2, 2, 1}, "constant", -1.5), naive_pad2d(xv, 3, 4, 1, 2, 2, 1, "c"), 0);
  expect_close(pad(x, {1, 2, 2, 1}, "reflect"), naive_pad2d(xv, 3, 4, 1, 2, 2, 1, "reflect"), 0);
  expect_close(pad(x, {3, 1, 0, 2}, "replicate"), naive_pad2d(xv, 3, 4, 3, 1, 0, 2, "replicate"),
               0);
  expect_close(pad(x, {1, 2, 2, 1}, "circular"), naive_pad2d(xv, 3, 4, 1, 2, 2, 1, "circular"), 0);
  // Negative constant pads crop.
  expect_close(pad(x, {-1, 0, 0, -2}), {xv[1], xv[2], xv[3]}, 0);
  EXPECT_EQ(pad(x, {-1, 0, 0, -2}).sizes(), IntArrayRef({1, 1, 3}));
  EXPECT_EQ(node_name(pad(x, {1, 1})), "ConstantPadNdBackward0");
  EXPECT_EQ(node_name(pad(x, {1, 1}, "reflect")), "ReflectionPad1DBackward0");
  EXPECT_EQ(node_name(pad(x, {1, 1, 1, 1}, "reflect")), "ReflectionPad2DBackward0");
  EXPECT_EQ(node_name(pad(x, {1, 1}, "replicate")), "ReplicationPad1DBackward0");
  EXPECT_EQ(node_name(pad(x, {1, 1, 1, 1}, "replicate")), "ReplicationPad2DBackward0");
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    CHECK_GRADS([mode](const VariableList& i) { return pad(i[0], {1, 2, 2, 1}, mode, 0.5); }, {x});
  }
  CHECK_GRADS([](const VariableList& i) { return pad(i[0], {-1, 1, 0, 0, 1, 0}); }, {x});
  error_of<ValueError>([&] { pad(x, {4, 4}, "reflect"); });
  error_of<ValueError>([&] { pad(x, {1}); });
}

// ---- Dropout, bilinear -------------------------------------------------------------------------

TEST(NnDropout, MaskScaleSeedAndInPlace) {
  const Tensor x = dev(ones({200}, kFloat64));
  Generator g1(7, test_device()), g2(7, test_device());
  const Tensor a = dropout(x, 0.25, true, false, g1);
  const Tensor b = dropout(x, 0.25, true, false, g2);
  expect_close(a, values(b), 0);
  int zeros_seen = 0;
  for (double v : values(a)) {
    EXPECT_TRUE(v == 0.0 || std::abs(v - 1 / 0.75) < 1e-12) << v;
    zeros_seen += v == 0.0;
  }
  EXPECT_GT(zeros_seen, 20);
  EXPECT_LT(zeros_seen, 80);
  // Channels: every [n, c] slice all kept or all dropped.
  const Tensor f = feature_dropout(dev(ones({4, 8, 5}, kFloat64)), 0.5, true, false, g1);
  const std::vector<double> fv = values(f);
  for (size_t ch = 0; ch < 32; ++ch) {
    for (size_t k = 1; k < 5; ++k) EXPECT_EQ(fv[ch * 5 + k], fv[ch * 5]);
  }
  EXPECT_EQ(dropout(x, 0.5, /*train=*/false).unsafe_impl(), x.unsafe_impl());
  Tensor y = dev(ones({10}, kFloat64));
  dropout(y, 0.5, true, /*inplace=*/true, g1);
  EXPECT_EQ(y.version(), 1u);
  EXPECT_EQ(node_name(dropout(leaf({3}, 25), 0.5)), "MulBackward0");
  error_of<ValueError>([&] { dropout(x, 1.5); });
  // Gradient: the same mask (the generator replayed from one seed).
  const Tensor in = leaf({6}, 26);
  CHECK_GRADS(
      [](const VariableList& i) {
        Generator g(3, i[0].device());
        return dropout(i[0], 0.5, true, false, g);
      },
      {in});
}

TEST(NnBilinear, ValuesAndGradients) {
  const Tensor x1 = leaf({2, 3}, 27), x2 = leaf({2, 2}, 28), w = leaf({4, 3, 2}, 29),
               b = leaf({4}, 30);
  const std::vector<double> a = values(x1), c = values(x2), wv = values(w), bv = values(b);
  std::vector<double> expected;
  for (int n = 0; n < 2; ++n) {
    for (int o = 0; o < 4; ++o) {
      double s = bv[o];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 2; ++j) s += a[n * 3 + i] * wv[o * 6 + i * 2 + j] * c[n * 2 + j];
      }
      expected.push_back(s);
    }
  }
  expect_close(bilinear(x1, x2, w, b), expected, 1e-12);
  CHECK_GRADS([](const VariableList& i) { return bilinear(i[0], i[1], i[2], i[3]); },
              {x1, x2, w, b});
}

// ---- Losses ------------------------------------------------------------------------------------

TEST(NnLosses, ValuesMatchNaive) {
  const std::vector<double> xv{0.1, -2.0, 0.5, 3.0}, tv{0.3, 0.0, 1.5, 0.5};
  const Tensor x = f64(xv, {4}), t = f64(tv, {4});
  std::vector<double> l1, sl1, hub;
  for (size_t i = 0; i < 4; ++i) {
    const double z = std::abs(xv[i] - tv[i]);
    l1.push_back(z);
    sl1.push_back(z < 0.5 ? 0.5 * z * z / 0.5 : z - 0.25);
    hub.push_back(z < 2.0 ? 0.5 * z * z : 2.0 * (z - 1.0));
  }
  expect_close(l1_loss(x, t, "none"), l1, 1e-12);
  expect_close(smooth_l1_loss(x, t, "none", 0.5), sl1, 1e-12);
  expect_close(huber_loss(x, t, "none", 2.0), hub, 1e-12);
  expect_close(l1_loss(x, t), {(l1[0] + l1[1] + l1[2] + l1[3]) / 4}, 1e-12);
  expect_close(huber_loss(x, t, "sum", 2.0), {hub[0] + hub[1] + hub[2] + hub[3]}, 1e-12);
  const std::vector<double> pv{0.2, 0.9, 0.0, 1.0}, qv{0.0, 1.0, 0.5, 0.25}, wv{1, 2, 3, 4};
  std::vector<double> bce;
  for (size_t i = 0; i < 4; ++i) {
    bce.push_back(-wv[i] * (qv[i] * std::max(std::log(pv[i]), -100.0) +
                            (1 - qv[i]) * std::max(std::log(1 - pv[i]), -100.0)));
  }
  expect_close(binary_cross_entropy(f64(pv, {4}), f64(qv, {4}), f64(wv, {4}), "none"), bce, 1e-10);
  std::vector<double> kl, kl_log;
  for (size_t i = 0; i < 4; ++i) {
    kl.push_back((qv[i] > 0 ? qv[i] * std::log(qv[i]) : 0.0) - qv[i] * xv[i]);
    kl_log.push_back(std::exp(tv[i]) * (tv[i] - xv[i]));
  }
  expect_close(kl_div(x, f64(qv, {4}), "none"), kl, 1e-12);
  expect_close(kl_div(x, t, "none", /*log_target=*/true), kl_log, 1e-12);
  const Tensor x2 = f64(xv, {2, 2});
  expect_close(kl_div(x2, f64(qv, {2, 2}), "batchmean"), {(kl[0] + kl[1] + kl[2] + kl[3]) / 2},
               1e-12);
}

TEST(NnLosses, GradientsAndNodeNames) {
  const Tensor x = leaf({3, 4}, 31, -2.0, 2.0), t = leaf({3, 4}, 32, -2.0, 2.0);
  for (const char* r : {"none", "mean", "sum"}) {
    SCOPED_TRACE(r);
    CHECK_GRADS([r](const VariableList& i) { return l1_loss(i[0], i[1], r); }, {x, t});
    CHECK_GRADS([r](const VariableList& i) { return smooth_l1_loss(i[0], i[1], r, 0.8); }, {x, t});
    CHECK_GRADS([r](const VariableList& i) { return huber_loss(i[0], i[1], r, 0.7); }, {x, t});
    CHECK_GRADS([r](const VariableList& i) { return kl_div(i[0], i[1], r, true); }, {x, t});
  }
  const Tensor p = leaf({3, 4}, 33, 0.1, 0.9), q = leaf({3, 4}, 34, 0.0, 1.0);
  const Tensor w = dev(full({4}, 0.5, kFloat64));
  CHECK_GRADS([&](const VariableList& i) { return binary_cross_entropy(i[0], i[1], w); }, {p, q});
  CHECK_GRADS([](const VariableList& i) { return kl_div(i[0], i[1], "batchmean"); },
              {x, leaf({3, 4}, 35, 0.1, 1.0)});
  EXPECT_EQ(node_name(smooth_l1_loss(x, t)), "SmoothL1LossBackward0");
  EXPECT_EQ(node_name(huber_loss(x, t)), "HuberLossBackward0");
  EXPECT_EQ(node_name(binary_cross_entropy(p, q)), "BinaryCrossEntropyBackward0");
  EXPECT_EQ(node_name(l1_loss(x, t)), "MeanBackward0");
  EXPECT_EQ(node_name(l1_loss(x, t, "none")), "AbsBackward0");
  EXPECT_EQ(node_name(kl_div(x, t, "none")), "SubBackward0");
  EXPECT_EQ(node_name(kl_div(x, t, "batchmean")), "DivBackward0");
  error_of<ValueError>([&] { binary_cross_entropy(x, q); });
  error_of<ValueError>([&] { huber_loss(x, t, "mean", 0.0); });
  error_of<ValueError>([&] { smooth_l1_loss(x, t, "mean", -1.0); });
  error_of<ValueError>([&] { l1_loss(x, t, "avg"); });
}

}  // namespace
}  // namespace mutagrad
