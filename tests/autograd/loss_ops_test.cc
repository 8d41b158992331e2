// softmax, log_softmax, nll_loss, cross_entropy, mse_loss, binary_cross_entropy_with_logits:
// values against naive double loops and hand-derived numbers, gradcheck + gradgradcheck for
// every differentiable argument, PyTorch's node names, finite results at logits of +-1e4,
// and typed errors that leave every tensor and version unchanged. Runs on the CPU and, as
// loss_ops_test_cuda, on the CUDA device.
#include <cmath>
#include <limits>
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

Tensor f64(const std::vector<double>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }
Tensor i64(const std::vector<int64_t>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }

// log_softmax of each row of a row-major [n, c] matrix, in double.
std::vector<double> naive_log_softmax(const std::vector<double>& x, int64_t n, int64_t c) {
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < c; ++j) m = std::max(m, x[i * c + j]);
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += std::exp(x[i * c + j] - m);
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = x[i * c + j] - m - std::log(s);
  }
  return out;
}

// PyTorch's cross_entropy with class indices, written out per sample: the nll term, and the
// label-smoothing term against the uniform distribution (both 0 for ignored samples).
std::vector<double> naive_cross_entropy(const std::vector<double>& x, const std::vector<int64_t>& t,
                                        const std::vector<double>& w, int64_t ignore, int64_t c,
                                        const std::string& reduction, double ls) {
  const int64_t n = static_cast<int64_t>(t.size());
  const std::vector<double> lp = naive_log_softmax(x, n, c);
  std::vector<double> nll(n, 0.0), smooth(n, 0.0);
  double wsum = 0, kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] == ignore) continue;
    const double wt = w.empty() ? 1.0 : w[t[i]];
    nll[i] = -lp[i * c + t[i]] * wt;
    for (int64_t j = 0; j < c; ++j) smooth[i] -= lp[i * c + j] * (w.empty() ? 1.0 : w[j]);
    wsum += wt;
    kept += 1;
  }
  std::vector<double> out;
  if (reduction == "none") {
    for (int64_t i = 0; i < n; ++i) out.push_back((1 - ls) * nll[i] + ls / c * smooth[i]);
    return out;
  }
  double a = 0, b = 0;
  for (int64_t i = 0; i < n; ++i) {
    a += nll[i];
    b += smooth[i];
  }
  if (reduction == "mean") {
    a /= wsum;
    b /= w.empty() ? kept : wsum;
  }
  return {(1 - ls) * a + ls / c * b};
}

TEST(ActivationOps, SoftmaxAndLogSoftmaxMatchNaiveRows) {
  const Tensor x = leaf({5, 7}, 1, -3, 3);
  const std::vector<double> lp = naive_log_softmax(values(x), 5, 7);
  std::vector<double> p(lp.size());
  for (size_t i = 0; i < lp.size(); ++i) p[i] = std::exp(lp[i]);
  expect_close(log_softmax(x, 1), lp, 1e-12);
  expect_close(x.softmax(-1), p, 1e-12);
  // Along dim 0: the same on the transpose.
  expect_close(log_softmax(x.t().contiguous(), 0).t(), lp, 1e-12);
  EXPECT_EQ(softmax(x, 1).grad_fn()->name(), std::string("SoftmaxBackward0"));
  EXPECT_EQ(log_softmax(x, 1).grad_fn()->name(), std::string("LogSoftmaxBackward0"));
  // Hand-derived: softmax([0, log 3]) = [1/4, 3/4].
  expect_close(softmax(f64({0.0, std::log(3.0)}, {2}), 0), {0.25, 0.75}, 1e-15);
  // A 0-dim input is one element: softmax 1, log_softmax 0.
  expect_close(softmax(f64({2.5}, {}), 0), {1.0});
  expect_close(log_softmax(f64({2.5}, {}), -1), {0.0});
}

TEST(ActivationOps, ExtremeLogitsStayFinite) {
  const Tensor x = f64({1e4, -1e4, 0.0}, {3});
  expect_close(softmax(x, 0), {1.0, 0.0, 0.0}, 0);
  expect_close(log_softmax(x, 0), {0.0, -2e4, -1e4}, 0);
  const Tensor f = dev(tensor({1e4f, -1e4f, 0.0f}));
  EXPECT_EQ(values(log_softmax(f, 0)), (std::vector<double>{0.0, -2e4, -1e4}));
  const Tensor logits = f64({1e4, -1e4, -1e4, 1e4}, {2, 2});
  const Tensor labels = i64({1, 1}, {2});
  // Sample 0 is wrong by 2e4, sample 1 right: mean loss 1e4, finite gradients.
  Tensor l = logits.detach().requires_grad_();
  Tensor loss = cross_entropy(l, labels);
  expect_close(loss, {1e4}, 0);
  loss.backward();
  expect_close(l.grad(), {0.5, -0.5, 0.0, 0.0}, 0);
  // Bce: log(1 + exp(1e4)) = 1e4 without overflow.
  Tensor b = f64({1e4, -1e4, 1e4, -1e4}, {4}).requires_grad_();
  Tensor bl =
      binary_cross_entropy_with_logits(b, f64({0, 1, 1, 0}, {4}), Tensor(), Tensor(), "none");
  expect_close(bl, {1e4, 1e4, 0.0, 0.0}, 0);
  bl.sum().backward();
  expect_close(b.grad(), {1.0, -1.0, 0.0, 0.0}, 0);
}

TEST(ActivationOps, Gradients) {
  for (int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE(dim);
    CHECK_GRADS([dim](const VariableList& in) { return softmax(in[0], dim); }, {leaf({3, 4}, 2)});
    CHECK_GRADS([dim](const VariableList& in) { return log_softmax(in[0], dim); },
                {strided_leaf({3, 4}, 3)});
  }
  CHECK_GRADS([](const VariableList& in) { return softmax(in[0], 1) * in[1]; },
              {leaf({2, 3, 2}, 4), leaf({2, 3, 2}, 5)});
}

TEST(ActivationOps, RejectsIntegersAndBadDims) {
  const Tensor i = dev(arange(6).view({2, 3}));
  EXPECT_THROW(softmax(i, 1), DTypeError);
  expect_close(softmax(i, 1, kFloat64).sum({1}), {1.0, 1.0}, 1e-15);
  EXPECT_THROW(log_softmax(i.to(kFloat32), 2), IndexError);
}

TEST(LossOps, CrossEntropyHandDerived) {
  // Row 0: logsumexp(1, 2, 3) - 3; row 1: log 3 - 1 + 1 = log 3.
  const Tensor x = f64({1, 2, 3, 1, 1, 1}, {2, 3}).requires_grad_();
  const Tensor t = i64({2, 0}, {2});
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  expect_close(cross_entropy(x, t, Tensor(), -100, "none"), {lse0 - 3, std::log(3.0)}, 1e-14);
  Tensor loss = cross_entropy(x, t);
  expect_close(loss, {(lse0 - 3 + std::log(3.0)) / 2}, 1e-14);
  EXPECT_EQ(loss.grad_fn()->name(), std::string("NllLossBackward0"));
  loss.backward();
  // d/dx = (softmax - onehot) / N.
  const double e = std::exp(lse0);
  expect_close(x.grad(),
               {std::exp(1.0) / e / 2, std::exp(2.0) / e / 2, (std::exp(3.0) / e - 1) / 2,
                (1.0 / 3 - 1) / 2, 1.0 / 6, 1.0 / 6},
               1e-14);
}

TEST(LossOps, CrossEntropyMatchesNaiveOverOptions) {
  std::mt19937_64 rng(7);
  const int64_t n = 6, c = 4;
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE(trial);
    const Tensor x = leaf({n, c}, 100 + trial, -4, 4);
    std::vector<int64_t> t(n);
    for (auto& v : t) v = static_cast<int64_t>(rng() % c);
    const int64_t ignore = trial % 2 ? t[0] == 1 ? 1 : 2 : -100;
    std::vector<double> w;
    if (trial % 3 == 1) w = {0.5, 2.0, 1.0, 0.25};
    const std::string reduction = std::vector<std::string>{"mean", "sum", "none"}[trial % 3];
    const double ls = trial % 4 >= 2 ? 0.2 : 0.0;
    const Tensor weight = w.empty() ? Tensor() : f64(w, {c});
    const Tensor target = i64(t, {n});
    expect_close(cross_entropy(x, target, weight, ignore, reduction, ls),
                 naive_cross_entropy(values(x), t, w, ignore, c, reduction, ls), 1e-12);
    CHECK_GRADS(
        [&](const VariableList& in) {
          return cross_entropy(in[0], target, weight, ignore, reduction, ls);
        },
        {x});
  }
}

TEST(LossOps, CrossEntropyWithSpatialDimsAndOneSample) {
  // [N, C, d] against the same with the class dim moved last and flattened.
  const Tensor x = leaf({2, 3, 4}, 11);
  const Tensor t = i64({0, 1, 2, 1, 2, 2, 0, -100}, {2, 4});
  const Tensor flat = x.permute({0, 2, 1}).reshape({8, 3});
  for (const char* r : {"mean", "sum", "none"}) {
    expect_close(cross_entropy(x, t, Tensor(), -100, r, 0.1).flatten(),
                 values(cross_entropy(flat, t.flatten(), Tensor(), -100, r, 0.1)), 1e-13);
  }
  CHECK_GRADS([&](const VariableList& in) { return cross_entropy(in[0], t); }, {x});
  // One sample: input [C], a 0-dim class index.
  const Tensor one = leaf({5}, 12);
  const Tensor k = i64({3}, {});
  expect_close(cross_entropy(one, k, Tensor(), -100, "none"),
               values(cross_entropy(one.unsqueeze(0), i64({3}, {1}), Tensor(), -100, "none")));
  EXPECT_EQ(cross_entropy(one, k, Tensor(), -100, "none").dim(), 0);
  CHECK_GRADS([&](const VariableList& in) { return nll_loss(in[0], k, Tensor(), -100, "none"); },
              {one});
}

TEST(LossOps, CrossEntropyWithProbabilities) {
  const int64_t n = 3, c = 4;
  const Tensor x = leaf({n, c}, 21, -2, 2);
  const Tensor p = softmax(leaf({n, c}, 22).detach(), 1);
  const Tensor w = f64({1.0, 0.5, 2.0, 1.5}, {c});
  const std::vector<double> lp = naive_log_softmax(values(x), n, c);
  const std::vector<double> pv = values(p), wv = values(w);
  for (double ls : {0.0, 0.3}) {
    std::vector<double> per(n, 0.0);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        per[i] -= lp[i * c + j] * (pv[i * c + j] * (1 - ls) + ls / c) * wv[j];
      }
      total += per[i];
    }
    expect_close(cross_entropy(x, p, w, -100, "none", ls), per, 1e-13);
    expect_close(cross_entropy(x, p, w, -100, "sum", ls), {total}, 1e-13);
    expect_close(cross_entropy(x, p, w, -100, "mean", ls), {total / n}, 1e-13);
  }
  EXPECT_EQ(cross_entropy(x, p).grad_fn()->name(), std::string("DivBackward1"));
  CHECK_GRADS(
      [&](const VariableList& in) { return cross_entropy(in[0], in[1], w, -100, "mean", 0.1); },
      {x, leaf({n, c}, 23, 0, 1)});
}

TEST(LossOps, NllLossWeightsIgnoreAndReductions) {
  const Tensor lp = leaf({4, 3}, 31, -3, 0);
  const Tensor t = i64({2, -1, 0, 2}, {4});
  const Tensor w = f64({1.0, 3.0, 0.5}, {3});
  const std::vector<double> v = values(lp);
  // Hand-derived: sample 1 ignored; weights 0.5, 1.0, 0.5.
  const std::vector<double> none = {-v[2] * 0.5, 0.0, -v[6] * 1.0, -v[11] * 0.5};
  expect_close(nll_loss(lp, t, w, -1, "none"), none, 1e-15);
  expect_close(nll_loss(lp, t, w, -1, "sum"), {none[0] + none[2] + none[3]}, 1e-15);
  expect_close(nll_loss(lp, t, w, -1, "mean"), {(none[0] + none[2] + none[3]) / 2.0}, 1e-15);
  // Every sample ignored: mean is 0 / 0.
  EXPECT_TRUE(std::isnan(nll_loss(lp, i64({-1, -1, -1, -1}, {4}), w, -1).item<double>()));
  for (const char* r : {"mean", "sum", "none"}) {
    SCOPED_TRACE(r);
    CHECK_GRADS([&](const VariableList& in) { return nll_loss(in[0], t, w, -1, r); }, {lp});
  }
  EXPECT_EQ(nll_loss(lp, t, w, -1, "none").grad_fn()->name(), std::string("NllLossBackward0"));
}

TEST(LossOps, MseLoss) {
  const Tensor a = leaf({2, 3}, 41), b = leaf({2, 3}, 42);
  const std::vector<double> av = values(a), bv = values(b);
  double s = 0;
  std::vector<double> none;
  for (size_t i = 0; i < av.size(); ++i) {
    none.push_back((av[i] - bv[i]) * (av[i] - bv[i]));
    s += none.back();
  }
  expect_close(mse_loss(a, b, "none"), none, 1e-15);
  expect_close(mse_loss(a, b, "sum"), {s}, 1e-15);
  expect_close(mse_loss(a, b), {s / 6}, 1e-15);
  EXPECT_EQ(mse_loss(a, b).grad_fn()->name(), std::string("MseLossBackward0"));
  for (const char* r : {"mean", "sum", "none"}) {
    SCOPED_TRACE(r);
    CHECK_GRADS([r](const VariableList& in) { return mse_loss(in[0], in[1], r); }, {a, b});
    // Broadcast target (torch warns; the gradient is summed back to [3]).
    CHECK_GRADS([r](const VariableList& in) { return mse_loss(in[0], in[1], r); },
                {a, leaf({3}, 43)});
  }
}

TEST(LossOps, BinaryCrossEntropyWithLogits) {
  const Tensor x = leaf({3, 4}, 51, -5, 5);
  const Tensor t = leaf({3, 4}, 52, 0, 1);
  const Tensor w = f64({1.0, 0.5, 2.0, 1.5}, {4});
  const Tensor pw = f64({3.0, 1.0, 0.5, 2.0}, {4});
  const std::vector<double> xv = values(x), tv = values(t), wv = values(w), pv = values(pw);
  std::vector<double> none;
  double s = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double sig = 1 / (1 + std::exp(-xv[i]));
    const size_t j = i % 4;
    none.push_back(-wv[j] * (pv[j] * tv[i] * std::log(sig) + (1 - tv[i]) * std::log(1 - sig)));
    s += none.back();
  }
  expect_close(binary_cross_entropy_with_logits(x, t, w, pw, "none"), none, 1e-12);
  expect_close(binary_cross_entropy_with_logits(x, t, w, pw, "sum"), {s}, 1e-12);
  expect_close(binary_cross_entropy_with_logits(x, t, w, pw), {s / 12}, 1e-12);
  EXPECT_EQ(binary_cross_entropy_with_logits(x, t).grad_fn()->name(),
            std::string("BinaryCrossEntropyWithLogitsBackward0"));
  for (const char* r : {"mean", "sum", "none"}) {
    SCOPED_TRACE(r);
    CHECK_GRADS(
        [&](const VariableList& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], w, pw, r);
        },
        {x, t});
    CHECK_GRADS(
        [&](const VariableList& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], Tensor(), Tensor(), r);
        },
        {x, t});
  }
}

TEST(LossOps, TypedErrorsLeaveEverythingUnchanged) {
  const Tensor x = leaf({4, 5}, 61);
  const Tensor t = i64({1, 0, 4, 2}, {4});
  const uint32_t xv = x.version(), tv = t.version();
  const std::vector<double> before = values(x);
  const std::string range = error_of<IndexError>([&] { cross_entropy(x, i64({1, 0, 5, 2}, {4})); });
  EXPECT_NE(range.find("target 5 is out of bounds"), std::string::npos) << range;
  EXPECT_NE(range.find("[0, 4]"), std::string::npos) << range;
  EXPECT_NE(error_of<IndexError>([&] {
              nll_loss(x, i64({1, 0, -1, 2}, {4}));
            }).find("target -1"),
            std::string::npos);
  const std::string dt = error_of<DTypeError>([&] { cross_entropy(x, t.to(kInt32)); });
  EXPECT_NE(dt.find("int64"), std::string::npos) << dt;
  EXPECT_NE(dt.find("int32"), std::string::npos) << dt;
  const std::string shape = error_of<ShapeError>([&] { cross_entropy(x, i64({1, 0, 4}, {3})); });
  EXPECT_NE(shape.find("[4]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[3]"), std::string::npos) << shape;
  EXPECT_THROW(cross_entropy(x, dev(zeros({4, 6}, kFloat64))), ShapeError);
  EXPECT_THROW(cross_entropy(x, dev(zeros({4, 5}, kInt64))), DTypeError);
  EXPECT_THROW(cross_entropy(x, t, dev(ones({4}, kFloat64))), ShapeError);
  EXPECT_THROW(cross_entropy(x, t, Tensor(), -100, "avg"), ValueError);
  EXPECT_THROW(cross_entropy(x, t, Tensor(), -100, "mean", 1.5), ValueError);
  EXPECT_THROW(cross_entropy(x, t, leaf({5}, 62)), autograd::AutogradError);
  EXPECT_THROW(nll_loss(x.to(kInt64), t), DTypeError);
  EXPECT_THROW(mse_loss(x, leaf({3, 5}, 63)), ShapeError);
  EXPECT_THROW(binary_cross_entropy_with_logits(x, leaf({5}, 64)), ShapeError);
  EXPECT_EQ(x.version(), xv);
  EXPECT_EQ(t.version(), tv);
  EXPECT_EQ(values(x), before);
  EXPECT_EQ(values(t), (std::vector<double>{1, 0, 4, 2}));
}

}  // namespace
}  // namespace mutagrad
