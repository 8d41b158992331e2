// im2col and col2im (F.unfold / F.fold): im2col against a naive window loop over random
// geometries, col2im as its adjoint (<im2col(x), c> == <x, col2im(c)>), gradcheck +
// gradgradcheck, node names, unbatched forms, and refused arguments with nothing changed.
// (torch 1.13 is the oracle of tests/python/pool_test.py.) Runs on the CPU and, as
// im2col_ops_test_cuda, on the CUDA device.
#include <random>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

TEST(Im2ColOps, Im2ColMatchesANaiveLoopAndCol2ImIsItsAdjoint) {
  std::mt19937 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 3), h = pick(1, 8), w = pick(1, 8);
    const DimVector k{pick(1, 3), pick(1, 3)}, s{pick(1, 3), pick(1, 3)}, d{pick(1, 2), pick(1, 2)};
    const DimVector p{pick(0, 2), pick(0, 2)};
    const Tensor x = trial % 2 ? strided_leaf({n, c, h, w}, trial) : leaf({n, c, h, w}, trial);
    Tensor cols;
    try {
      cols = im2col(x, k, d, p, s);
    } catch (const ShapeError&) {
      continue;  // no window fits
    }
    ++checked;
    EXPECT_STREQ(cols.grad_fn()->name(), "Im2ColBackward0");
    const int64_t oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) / s[0] + 1;
    const int64_t ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1] + 1;
    ASSERT_EQ(DimVector(cols.sizes()), (DimVector{n, c * k[0] * k[1], oh * ow})) << trial;
    const std::vector<double> xv = values(x);
    std::vector<double> want;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t a = 0; a < k[0]; ++a) {
          for (int64_t e = 0; e < k[1]; ++e) {
            for (int64_t i = 0; i < oh; ++i) {
              for (int64_t j = 0; j < ow; ++j) {
                const int64_t ih = i * s[0] - p[0] + a * d[0], iw = j * s[1] - p[1] + e * d[1];
                const bool in = ih >= 0 && ih < h && iw >= 0 && iw < w;
                want.push_back(in ? xv[static_cast<size_t>(((b * c + ch) * h + ih) * w + iw)] : 0);
              }
            }
          }
        }
      }
    }
    EXPECT_EQ(values(cols), want) << trial;
    // The adjoint: <im2col(x), r> == <x, col2im(r)>.
    const Tensor r = leaf(cols.sizes(), 100 + trial).detach();
    const Tensor back = col2im(r, {h, w}, k, d, p, s);
    ASSERT_EQ(DimVector(back.sizes()), DimVector(x.sizes()));
    EXPECT_NEAR((cols.detach() * r).sum().item<double>(), (x.detach() * back).sum().item<double>(),
                1e-10)
        << trial;
  }
  EXPECT_GT(checked, 30);
}

TEST(Im2ColOps, GradcheckGradgradcheckAndNodeNames) {
  const Tensor x = leaf({2, 2, 5, 6}, 1);
  CHECK_GRADS(
      [](const VariableList& in) {
        return im2col(in[0], {3, 2}, {1, 2}, {1, 0}, {2, 1});
      },
      {x});
  CHECK_GRADS([](const VariableList& in) { return im2col(in[0], {2}, {1}, {1}, {2}); },
              {strided_leaf({3, 4, 5}, 2)});
  const Tensor c = leaf({2, 2 * 6, 9}, 3);
  const Tensor y = col2im(c, {5, 6}, {2, 3}, {1}, {1}, {2});
  EXPECT_STREQ(y.grad_fn()->name(), "Col2ImBackward0");
  EXPECT_EQ(DimVector(y.sizes()), (DimVector{2, 2, 5, 6}));
  CHECK_GRADS(
      [](const VariableList& in) {
        return col2im(in[0], {5, 6}, {2, 3}, {1}, {1}, {2});
      },
      {c});
  CHECK_GRADS(
      [](const VariableList& in) {
        return col2im(in[0], {4, 4}, {2}, {2}, {0}, {1});
      },
      {strided_leaf({4, 4}, 4)});
}

TEST(Im2ColOps, UnbatchedFormsAreTheBatchOfOne) {
  const Tensor x = leaf({3, 4, 5}, 5);
  const Tensor cols = im2col(x, {2, 3}, {1}, {1}, {1});
  EXPECT_EQ(values(cols), values(im2col(x.unsqueeze(0), {2, 3}, {1}, {1}, {1})));
  EXPECT_EQ(cols.dim(), 2);
  const Tensor back = col2im(cols, {4, 5}, {2, 3}, {1}, {1}, {1});
  EXPECT_EQ(DimVector(back.sizes()), DimVector(x.sizes()));
  EXPECT_EQ(values(back), values(col2im(cols.unsqueeze(0), {4, 5}, {2, 3}, {1}, {1}, {1})));
}

TEST(Im2ColOps, RefusedArguments) {
  const Tensor x = leaf({1, 2, 4, 4}, 6);
  EXPECT_NE(error_of<ShapeError>([&] { im2col(x, {6}); }).find("(-1, -1)"), std::string::npos);
  EXPECT_THROW(im2col(x, {2}, {1}, {0}, {0}), ValueError);
  EXPECT_THROW(im2col(x, {0}), ValueError);
  EXPECT_THROW(im2col(x, {2}, {0}), ValueError);
  EXPECT_THROW(im2col(x, {2}, {1}, {-1}), ValueError);
  EXPECT_THROW(im2col(x, {2, 2, 2}), ValueError);
  EXPECT_THROW(im2col(leaf({4, 4}, 7), {2}), ShapeError);
  EXPECT_THROW(im2col(x.detach().to(kInt64), {2}), DTypeError);
  const Tensor c = leaf({2, 4, 4}, 8);
  EXPECT_NE(error_of<ShapeError>([&] {
              col2im(c, {3, 3}, {3});
            }).find("input.size(1)=4"),
            std::string::npos);
  EXPECT_NE(error_of<ShapeError>([&] {
              col2im(c, {3, 4}, {2});
            }).find("input.size(2)=4"),
            std::string::npos);
  EXPECT_THROW(col2im(c, {0, 3}, {2}), ShapeError);
  EXPECT_THROW(col2im(c, {3, 3}, {2}, {1}, {0}, {0}), ValueError);
  EXPECT_THROW(col2im(leaf({1, 2, 4, 4}, 9), {3, 3}, {2}), ShapeError);
  EXPECT_EQ(x.version(), 0u);
  EXPECT_EQ(c.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
