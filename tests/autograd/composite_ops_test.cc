// trace, repeat_interleave, meshgrid, kron, cross, cdist and fill_diagonal_: values against
// naive loops and hand-derived results, torch's dtypes and errors (raised before anything is
// written), gradcheck + gradgradcheck, PyTorch's node names, and fill_diagonal_ through the
// mutation engine (one bump, CopySlices on a non-leaf, the write named in the stale error).
// Runs on the CPU and, as composite_ops_test_cuda, on the CUDA device.
#include <cmath>
#include <limits>
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

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor iota(IntArrayRef sizes, ScalarType dtype = kFloat64) {
  return dev(native::view(arange(compute_numel(sizes), dtype), sizes));
}
Tensor i64(const std::vector<int64_t>& v) {
  return dev(from_vector(v, {static_cast<int64_t>(v.size())}));
}

TEST(CompositeOps, Trace) {
  EXPECT_EQ(values(iota({3, 4}).trace()), (std::vector<double>{0 + 5 + 10}));
  EXPECT_EQ(values(iota({4, 2}).trace()), (std::vector<double>{0 + 3}));
  EXPECT_EQ(values(iota({0, 2}).trace()), (std::vector<double>{0}));
  EXPECT_EQ(iota({2, 2}, kInt32).trace().dtype(), kInt64);  // sums integers in int64, as torch
  EXPECT_THROW(iota({3}).trace(), ShapeError);
  EXPECT_THROW(dev(ones({2, 2}, kBool)).trace(), DTypeError);
  CHECK_GRADS([](const VariableList& in) { return in[0].trace(); }, {strided_leaf({3, 4}, 1)});
  EXPECT_STREQ(leaf({2, 2}, 2).trace().grad_fn()->name(), "TraceBackward0");
}

TEST(CompositeOps, RepeatInterleave) {
  const Tensor x = iota({2, 3});
  EXPECT_EQ(values(x.repeat_interleave(2)),
            (std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(values(x.repeat_interleave(i64({1, 0, 2}), 1)),
            (std::vector<double>{0, 2, 2, 3, 5, 5}));
  EXPECT_EQ(x.repeat_interleave(i64({1, 0, 2}), -1).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(values(x.repeat_interleave(i64({3}), 0)),
            (std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(values(repeat_interleave(i64({1, 2, 0, 1}))), (std::vector<double>{0, 1, 1, 3}));
  EXPECT_EQ(x.repeat_interleave(2, 1, 6).sizes(), IntArrayRef({2, 6}));
  EXPECT_EQ(values(dev(full({}, 5.0, kFloat64)).repeat_interleave(3)),
            (std::vector<double>{5, 5, 5}));
  // torch's errors.
  EXPECT_THROW(x.repeat_interleave(i64({1, 2}), 1), ShapeError);
  EXPECT_THROW(x.repeat_interleave(-1), ValueError);
  EXPECT_THROW(x.repeat_interleave(i64({1, -1, 1}), 1), ValueError);
  EXPECT_THROW(x.repeat_interleave(dev(ones({1, 3}, kInt64)), 1), ShapeError);
  EXPECT_THROW(x.repeat_interleave(dev(ones({3}, kFloat32)), 1), DTypeError);
  EXPECT_THROW(x.repeat_interleave(2, 1, 5), ShapeError);
  EXPECT_THROW(x.repeat_interleave(2, 2), IndexError);
  // Differentiable through index_select (torch's node too).
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].repeat_interleave(i64({2, 0, 1}), 1);
      },
      {strided_leaf({2, 3}, 3)});
  CHECK_GRADS([](const VariableList& in) { return in[0].repeat_interleave(3); }, {leaf({2}, 4)});
  EXPECT_STREQ(leaf({2}, 5).repeat_interleave(2).grad_fn()->name(), "IndexSelectBackward0");
}

TEST(CompositeOps, Meshgrid) {
  const Tensor a = iota({2});
  const Tensor b = dev(full({3}, 7.0, kFloat64)) + iota({3});
  const Tensor c = dev(full({}, 9.0, kFloat64));
  std::vector<Tensor> ij = meshgrid({a, b, c}, "ij");
  ASSERT_EQ(ij.size(), 3u);
  for (const Tensor& g : ij) EXPECT_EQ(g.sizes(), IntArrayRef({2, 3, 1}));
  EXPECT_EQ(values(ij[0]), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(values(ij[1]), (std::vector<double>{7, 8, 9, 7, 8, 9}));
  EXPECT_EQ(values(ij[2]), (std::vector<double>(6, 9.0)));
  std::vector<Tensor> xy = meshgrid({a, b}, "xy");
  EXPECT_EQ(xy[0].sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(values(xy[0]), (std::vector<double>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(values(xy[1]), (std::vector<double>{7, 7, 8, 8, 9, 9}));
  // Views of the inputs (expand): they share the version counter.
  EXPECT_TRUE(ij[1].is_alias_of(b));
  EXPECT_THROW(meshgrid({a, iota({2, 2})}, "ij"), ShapeError);
  EXPECT_THROW(meshgrid({a, iota({2}, kFloat32)}, "ij"), DTypeError);
  EXPECT_THROW(meshgrid({a}, "ji"), ValueError);
  EXPECT_THROW(meshgrid({}, "ij"), ValueError);
  CHECK_GRADS(
      [](const VariableList& in) {
        std::vector<Tensor> g = meshgrid({in[0], in[1]}, "xy");
        return g[0] * g[1];
      },
      {leaf({2}, 6), leaf({3}, 7)});
  const Tensor x = leaf({2}, 8);
  EXPECT_STREQ(meshgrid({x, x}, "ij")[0].grad_fn()->name(), "ExpandBackward0");
}

TEST(CompositeOps, Kron) {
  // Naive: out[i*p + k][j*q + l] = a[i][j] * b[k][l].
  const Tensor a = iota({2, 3}) + 1.0;
  const Tensor b = iota({2, 2}) - 1.0;
  std::vector<double> want(4 * 6);
  const std::vector<double> av = values(a), bv = values(b);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k)
        for (int l = 0; l < 2; ++l)
          want[(i * 2 + k) * 6 + j * 2 + l] = av[i * 3 + j] * bv[k * 2 + l];
  const Tensor r = kron(a, b);
  EXPECT_EQ(r.sizes(), IntArrayRef({4, 6}));
  EXPECT_EQ(values(r), want);
  EXPECT_TRUE(r.is_contiguous());
  // Ranks are padded with leading 1s; dtypes promote as mul.
  EXPECT_EQ(kron(iota({2, 3}), iota({4})).sizes(), IntArrayRef({2, 12}));
  EXPECT_EQ(kron(iota({3}, kInt64), iota({2}, kFloat32)).dtype(), kFloat32);
  EXPECT_EQ(values(kron(i64({1, 2}), i64({1, 10}))), (std::vector<double>{1, 10, 2, 20}));
  CHECK_GRADS([](const VariableList& in) { return kron(in[0], in[1]); },
              {strided_leaf({2, 3}, 9), leaf({3}, 10)});
  EXPECT_STREQ(kron(leaf({2}, 11), leaf({2}, 12)).grad_fn()->name(), "UnsafeViewBackward0");
}

TEST(CompositeOps, Cross) {
  // Rows of a x rows of b against the textbook formula; b broadcasts.
  const Tensor a = dev(from_vector(std::vector<double>{1, 0, 0, 0, 1, 0, 2, 3, 4}, {3, 3}));
  const Tensor b = dev(from_vector(std::vector<double>{0, 1, 0}, {1, 3}));
  EXPECT_EQ(values(cross(a, b, 1)), (std::vector<double>{0, 0, 1, 0, 0, 0, -4, 0, 2}));
  EXPECT_EQ(values(linalg_cross(a, b)), values(cross(a, b, 1)));
  // Default dim: the first of size 3 (dim 0 here), as torch.cross.
  const Tensor c = iota({3, 4});
  const Tensor d = iota({3, 4}).flip({0}) * 0.5 + 1.0;
  EXPECT_EQ(values(cross(c, d)), values(cross(c, d, 0)));
  EXPECT_EQ(values(cross(i64({1, 2, 3}), i64({4, 5, 6}))), (std::vector<double>{-3, 6, -3}));
  EXPECT_THROW(cross(iota({2, 4}), iota({2, 4})), ShapeError);
  EXPECT_THROW(cross(iota({3, 4}), iota({3, 4}), 1), ShapeError);
  EXPECT_THROW(cross(a, native::to(b, kFloat32), 1), DTypeError);
  CHECK_GRADS([](const VariableList& in) { return cross(in[0], in[1], -1); },
              {strided_leaf({2, 3}, 13), leaf({1, 3}, 14)});
  EXPECT_STREQ(cross(leaf({3}, 15), leaf({3}, 16)).grad_fn()->name(), "LinalgCrossBackward0");
}

// The p-norm distance of each row pair, by a loop.
std::vector<double> naive_cdist(const Tensor& x1, const Tensor& x2, double p) {
  const std::vector<double> a = values(x1), b = values(x2);
  const int64_t P = x1.size(0), R = x2.size(0), M = x1.size(1);
  std::vector<double> out;
  for (int64_t i = 0; i < P; ++i) {
    for (int64_t j = 0; j < R; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < M; ++k) {
        const double d =
            std::abs(a[static_cast<size_t>(i * M + k)] - b[static_cast<size_t>(j * M + k)]);
        if (p == 0)
          acc += d != 0;
        else if (std::isinf(p))
          acc = std::max(acc, d);
        else
          acc += std::pow(d, p);
      }
      out.push_back(p == 0 || std::isinf(p) ? acc : std::pow(acc, 1 / p));
    }
  }
  return out;
}

TEST(CompositeOps, Cdist) {
  const Tensor x1 = leaf({4, 3}, 17).detach();
  Tensor x2 = leaf({5, 3}, 18).detach();
  x2 = cat({x2, x1.narrow(0, 0, 1)}, 0);  // a zero distance
  for (double p : {0.0, 0.5, 1.0, 2.0, 3.0, kInf}) {
    expect_close(cdist(x1, x2, p), naive_cdist(x1, x2, p), 1e-12);
  }
  // Batch dims broadcast; an empty row length gives zeros.
  EXPECT_EQ(cdist(iota({2, 3, 2}), iota({1, 4, 2})).sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(values(cdist(iota({2, 0}), iota({3, 0}), kInf)), std::vector<double>(6, 0.0));
  // torch's errors.
  EXPECT_THROW(cdist(iota({3}), iota({3})), ShapeError);
  EXPECT_THROW(cdist(iota({3, 2}), iota({3, 3})), ShapeError);
  EXPECT_THROW(cdist(iota({3, 2}), iota({3, 2}), -1.0), ValueError);
  EXPECT_THROW(cdist(iota({3, 2}, kInt64), iota({3, 2}, kInt64)), DTypeError);
  EXPECT_THROW(cdist(iota({3, 2}), iota({3, 2}, kFloat32)), DTypeError);
  // Gradients away from ties and zero distances; p = 2 with a zero distance gives 0 there.
  for (double p : {1.0, 2.0, 3.0, 1.5, kInf}) {
    SCOPED_TRACE(p);
    CHECK_GRADS([p](const VariableList& in) { return cdist(in[0], in[1], p); },
                {leaf({2, 3}, 19), strided_leaf({3, 3}, 20)});
  }
  CHECK_GRADS([](const VariableList& in) { return cdist(in[0], in[1], 2.0); },
              {leaf({2, 2, 3}, 21), leaf({1, 4, 3}, 22)});
  Tensor y1 = leaf({2, 2}, 23);
  Tensor d = cdist(y1, y1.detach(), 2.0);
  EXPECT_STREQ(d.grad_fn()->name(), "CdistBackward0");
  d.sum().backward();
  for (double g : values(y1.grad())) EXPECT_TRUE(std::isfinite(g));
  Tensor z = leaf({2, 2}, 24);
  cdist(z, z.detach() + 1.0, 0.0).sum().backward();
  EXPECT_EQ(values(z.grad()), std::vector<double>(4, 0.0));
}

TEST(CompositeOps, FillDiagonal) {
  Tensor m = dev(zeros({3, 4}, kFloat64));
  m.fill_diagonal_(5.0);
  EXPECT_EQ(values(m), (std::vector<double>{5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0}));
  EXPECT_EQ(m.version(), 1u);
  // A tall matrix: without wrap the diagonal stops; with wrap it restarts every width + 1
  // rows (7 x 2: rows 0, 1, then 3, 4, then 6).
  Tensor tall = dev(zeros({7, 2}, kFloat64));
  tall.fill_diagonal_(1.0);
  EXPECT_EQ(values(tall), (std::vector<double>{1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  const std::vector<double> wrapped = {1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0};
  Tensor w = dev(zeros({7, 2}, kFloat64));
  w.fill_diagonal_(1.0, true);
  EXPECT_EQ(values(w), wrapped);
  EXPECT_EQ(w.version(), 1u);
  // The same positions on a non-contiguous tall matrix.
  Tensor wt = dev(zeros({2, 7}, kFloat64)).t();
  wt.fill_diagonal_(1.0, true);
  EXPECT_EQ(values(wt), wrapped);
  EXPECT_EQ(wt.version(), 1u);
  // 3-D with equal sizes: the elements with all indices equal.
  Tensor cube = dev(zeros({2, 2, 2}, kInt64));
  cube.fill_diagonal_(3);
  EXPECT_EQ(values(cube), (std::vector<double>{3, 0, 0, 0, 0, 0, 0, 3}));
  // Refused before anything is written.
  Tensor bad = dev(zeros({2, 3, 2}, kFloat64));
  EXPECT_THROW(bad.fill_diagonal_(1.0), ShapeError);
  EXPECT_THROW(dev(zeros({3}, kFloat64)).fill_diagonal_(1.0), ShapeError);
  EXPECT_EQ(bad.version(), 0u);
  Tensor leaf_x = leaf({2, 2}, 25);
  const std::string message = error_of([&] { leaf_x.fill_diagonal_(0.0); });
  EXPECT_NE(message.find("a leaf Variable that requires grad"), std::string::npos) << message;
  EXPECT_EQ(leaf_x.version(), 0u);
}

TEST(CompositeOps, FillDiagonalThroughTheMutationEngine) {
  // On a non-leaf: CopySlices, and the diagonal's gradient is zero (also with wrap).
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 2.0;
        h.fill_diagonal_(0.5);
        return h;
      },
      {strided_leaf({3, 4}, 26)});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 2.0;
        h.fill_diagonal_(0.5, true);
        return h;
      },
      {leaf({5, 2}, 27)});
  Tensor x = leaf({3, 3}, 28);
  Tensor h = x * 1.0;
  Tensor saved = h * h;  // saves h
  h.fill_diagonal_(1.0);
  EXPECT_STREQ(h.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(h.version(), 1u);
  const std::string message = error_of([&] { saved.sum().backward(); });
  EXPECT_NE(message.find("fill_diagonal_"), std::string::npos) << message;
  EXPECT_NE(message.find("composite_ops_test.cc"), std::string::npos) << message;
  h.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 1, 1, 0, 1, 1, 1, 0}));
  // In no_grad mode on a leaf: allowed, one bump.
  Tensor y = leaf({2, 2}, 29);
  {
    NoGradGuard no_grad;
    y.fill_diagonal_(0.0);
  }
  EXPECT_EQ(y.version(), 1u);
  EXPECT_EQ(values(y)[0], 0.0);
}

}  // namespace
}  // namespace mutagrad
