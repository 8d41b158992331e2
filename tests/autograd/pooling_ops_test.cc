// max_pool2d_with_indices (and max_pool1d): values and indices against a naive window loop over
// random geometries, gradcheck + gradgradcheck, the node name, a window of padding only, and
// refused arguments. Runs on the CPU and, as pooling_ops_test_cuda, on the CUDA device.
#include <limits>
#include <random>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::values;

TEST(PoolingOps, MaxPoolMatchesANaiveLoop) {
  std::mt19937 rng(5);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 3), h = pick(1, 8), w = pick(1, 8);
    const DimVector k{pick(1, 3), pick(1, 3)}, s{pick(1, 3), pick(1, 3)}, d{pick(1, 2), pick(1, 2)};
    const DimVector p{pick(0, k[0] / 2), pick(0, k[1] / 2)};
    const bool ceil_mode = pick(0, 1) == 1;
    const Tensor x = leaf({n, c, h, w}, trial);
    Tensor y, idx;
    try {
      std::tie(y, idx) = max_pool2d_with_indices(x, k, s, p, d, ceil_mode);
    } catch (const ShapeError&) {
      continue;  // output too small
    }
    ++checked;
    const std::vector<double> xv = values(x), yv = values(y), iv = values(idx);
    const int64_t oh = y.size(2), ow = y.size(3);
    for (int64_t plane = 0; plane < n * c; ++plane) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t at = -1;
          for (int64_t a = 0; a < k[0]; ++a) {
            for (int64_t b = 0; b < k[1]; ++b) {
              const int64_t ih = i * s[0] - p[0] + a * d[0], iw = j * s[1] - p[1] + b * d[1];
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const double v = xv[static_cast<size_t>(plane * h * w + ih * w + iw)];
              if (v > best) {
                best = v;
                at = ih * w + iw;
              }
            }
          }
          const size_t o = static_cast<size_t>((plane * oh + i) * ow + j);
          EXPECT_EQ(yv[o], best) << trial;
          if (at >= 0) {
            EXPECT_EQ(iv[o], static_cast<double>(at)) << trial;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 30);
}

TEST(PoolingOps, GradcheckGradgradcheckAndNodeName) {
  const Tensor x = leaf({2, 2, 5, 6}, 1);
  EXPECT_STREQ(max_pool2d(x, {2}).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_STREQ(max_pool2d(x.squeeze(0).select(0, 0).unsqueeze(0), {2}).grad_fn()->name(),
               "MaxPool2DWithIndicesBackward0");
  CHECK_GRADS(
      [](const VariableList& in) {
        return max_pool2d(in[0], {3, 2}, {2, 1}, {1, 1}, {1, 2}, true);
      },
      {x});
  CHECK_GRADS([](const VariableList& in) { return max_pool2d(in[0], {2}); },
              {testing_util::strided_leaf({3, 4, 5}, 2)});
}

// kernel 2 with padding 1 and dilation 2 over one row: the windows read padding only. Their
// value is -inf and their gradient goes nowhere (torch's index lies past the plane).
TEST(PoolingOps, WindowsOfPaddingOnly) {
  const Tensor x = leaf({1, 1, 1, 1}, 3);
  auto [y, idx] = max_pool2d_with_indices(x, {2, 1}, {2, 2}, {1, 0}, {2, 2});
  EXPECT_EQ(values(y), std::vector<double>{-std::numeric_limits<double>::infinity()});
  EXPECT_EQ(values(idx), std::vector<double>{1});  // torch 1.13's
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>{0});
}

TEST(PoolingOps, MaxPool1dIsTheRowOf2dWithTorchsGraph) {
  const Tensor x = testing_util::strided_leaf({3, 2, 9}, 8);
  auto [y, idx] = max_pool1d_with_indices(x, {3}, {2}, {1}, {2}, true);
  auto [y2, idx2] = max_pool2d_with_indices(x.unsqueeze(-2), {1, 3}, {1, 2}, {0, 1}, {1, 2}, true);
  EXPECT_EQ(DimVector(y.sizes()), (DimVector{3, 2, 4}));
  EXPECT_EQ(values(y), values(y2));
  EXPECT_EQ(values(idx), values(idx2));  // positions along L
  EXPECT_STREQ(y.grad_fn()->name(), "SqueezeBackward1");
  EXPECT_STREQ(y.grad_fn()->next_edges()[0].function->name(), "MaxPool2DWithIndicesBackward0");
  CHECK_GRADS([](const VariableList& in) { return max_pool1d(in[0], {3}, {2}, {1}, {2}, true); },
              {x});
  CHECK_GRADS([](const VariableList& in) { return max_pool1d(in[0], {2}); }, {leaf({2, 7}, 9)});
}

// The node saves its own copy of the indices: writes into the input, the output or the returned
// indices leave its backward valid (the gradient goes where the forward's maxima were).
TEST(PoolingOps, SavesOnlyItsOwnIndices) {
  const Tensor x = leaf({1, 1, 2, 2}, 10);
  Tensor a = x * 1.0;
  auto [y, idx] = max_pool2d_with_indices(a, {2});
  const std::vector<double> at = values(idx);
  a.mul_(-1.0);
  idx.fill_(0);
  y.sum().backward();
  std::vector<double> want(4, 0.0);
  want[static_cast<size_t>(at[0])] = 1.0;
  EXPECT_EQ(values(x.grad()), want);
}

TEST(PoolingOps, RefusedArguments) {
  const Tensor x = leaf({1, 2, 5, 5}, 4);
  EXPECT_NE(error_of<ValueError>([&] { max_pool2d(x, {3}, {}, {2}); }).find("pad=2"),
            std::string::npos);
  EXPECT_THROW(max_pool2d(x, {0}), ValueError);
  EXPECT_THROW(max_pool2d(x, {2}, {0}), ValueError);
  EXPECT_THROW(max_pool2d(x, {7}), ShapeError);
  EXPECT_THROW(max_pool2d(x, {2, 2, 2}), ValueError);
  EXPECT_THROW(max_pool2d(leaf({5, 5}, 5), {2}), ShapeError);
  EXPECT_THROW(max_pool2d(x.detach().to(kInt64), {2}), DTypeError);
  EXPECT_THROW(max_pool1d(x, {2}), ShapeError);
  EXPECT_NE(error_of<ValueError>([&] {
              max_pool1d(leaf({2, 4}, 6), {2}, {}, {2});
            }).find("pad=2"),
            std::string::npos);
  EXPECT_THROW(max_pool1d(leaf({2, 4}, 6), {2}, {0}), ValueError);
  EXPECT_THROW(max_pool1d(leaf({2, 4}, 6), {5}), ShapeError);
  EXPECT_EQ(x.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
