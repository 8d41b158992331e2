// max_pool2d_with_indices (and max_pool1d): values and indices against a naive window loop over
// random geometries, gradcheck + gradgradcheck, the node name, a window of padding only, and
// refused arguments; inf and NaN in inputs and gradients against torch's kernel loop (the last
// NaN of a window wins), empty batches, huge kernels and padding, overflowing geometry. Runs on
// the CPU and, as pooling_ops_test_cuda, on the CUDA device.
#include <cmath>
#include <cstdint>
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

// --- inf and NaN: torch 1.13's kernel loops, written out ---

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Mostly small integers (ties), with NaN, inf and -inf sprinkled in.
std::vector<double> special_values(int64_t n, std::mt19937& rng) {
  const double pool[] = {kNan, kInf, -kInf, -2, -1, 0, 1, 2, 3, 1, 0, -1};
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(pool[rng() % 12]);
  return v;
}

Tensor special_leaf(IntArrayRef sizes, const std::vector<double>& v) {
  return testing_util::dev(from_vector(v, sizes)).requires_grad_();
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE((std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i])
        << what << " at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

struct Window {
  int64_t h0, h1, dh, w0, w1, dw;  // rows h0, h0 + dh, .. < h1; columns likewise
};

// torch's loop over one plane's windows: index starts at (h0, w0), keeps `v > max || isnan(v)`;
// the gradient goes to the index when it lies in the plane.
void torch_max_loop(const std::vector<double>& x, const std::vector<double>& gout, int64_t plane,
                    int64_t h, int64_t w, const std::vector<Window>& windows,
                    std::vector<double>* val, std::vector<double>* idx, std::vector<double>* grad) {
  grad->assign(x.size(), 0.0);
  const int64_t planes = static_cast<int64_t>(x.size()) / (h * w);
  const auto nwin = static_cast<int64_t>(windows.size());
  for (int64_t q = 0; q < planes; ++q) {
    for (int64_t o = 0; o < nwin; ++o) {
      const Window& win = windows[static_cast<size_t>(o)];
      int64_t at = win.h0 * w + win.w0;
      double best = -kInf;
      for (int64_t a = win.h0; a < win.h1; a += win.dh) {
        for (int64_t b = win.w0; b < win.w1; b += win.dw) {
          const double v = x[static_cast<size_t>(q * plane + a * w + b)];
          if (v > best || std::isnan(v)) {
            best = v;
            at = a * w + b;
          }
        }
      }
      val->push_back(best);
      idx->push_back(static_cast<double>(at));
      if (at < plane) (*grad)[static_cast<size_t>(q * plane + at)] += gout[val->size() - 1];
    }
  }
}

TEST(PoolingOps, MaxPoolNanAndInfFollowTorchsKernel) {
  std::mt19937 rng(21);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int checked = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 2), h = pick(1, 7), w = pick(1, 7);
    const DimVector k{pick(1, 4), pick(1, 4)}, s{pick(1, 3), pick(1, 3)}, d{pick(1, 3), pick(1, 2)};
    const DimVector p{pick(0, k[0] / 2), pick(0, k[1] / 2)};
    const bool ceil_mode = pick(0, 1) == 1;
    const Tensor x = special_leaf({n, c, h, w}, special_values(n * c * h * w, rng));
    Tensor y, idx;
    try {
      std::tie(y, idx) = max_pool2d_with_indices(x, k, s, p, d, ceil_mode);
    } catch (const ShapeError&) {
      continue;  // output too small
    }
    ++checked;
    const int64_t oh = y.size(2), ow = y.size(3);
    std::vector<Window> windows;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        Window win{i * s[0] - p[0], 0, d[0], j * s[1] - p[1], 0, d[1]};
        win.h1 = std::min(win.h0 + (k[0] - 1) * d[0] + 1, h);
        win.w1 = std::min(win.w0 + (k[1] - 1) * d[1] + 1, w);
        while (win.h0 < 0) win.h0 += d[0];
        while (win.w0 < 0) win.w0 += d[1];
        windows.push_back(win);
      }
    }
    const std::vector<double> gout = special_values(y.numel(), rng);
    std::vector<double> val, at, grad;
    torch_max_loop(values(x), gout, h * w, h, w, windows, &val, &at, &grad);
    const std::string what = "trial " + std::to_string(trial);
    expect_same(values(y), val, what + " values");
    expect_same(values(idx), at, what + " indices");
    y.backward(testing_util::dev(from_vector(gout, y.sizes())));
    expect_same(values(x.grad()), grad, what + " grad");
  }
  EXPECT_GT(checked, 40);
}

TEST(PoolingOps, AdaptiveMaxPoolNanAndInfFollowTorchsKernel) {
  std::mt19937 rng(22);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 2), h = pick(1, 7), w = pick(1, 7);
    const int64_t oh = pick(1, 8), ow = pick(1, 8);
    const Tensor x = special_leaf({n, c, h, w}, special_values(n * c * h * w, rng));
    auto [y, idx] = adaptive_max_pool2d(x, {oh, ow});
    std::vector<Window> windows;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        windows.push_back(Window{i * h / oh, ((i + 1) * h + oh - 1) / oh, 1, j * w / ow,
                                 ((j + 1) * w + ow - 1) / ow, 1});
      }
    }
    const std::vector<double> gout = special_values(y.numel(), rng);
    std::vector<double> val, at, grad;
    torch_max_loop(values(x), gout, h * w, h, w, windows, &val, &at, &grad);
    const std::string what = "trial " + std::to_string(trial);
    expect_same(values(y), val, what + " values");
    expect_same(values(idx), at, what + " indices");
    y.backward(testing_util::dev(from_vector(gout, y.sizes())));
    expect_same(values(x.grad()), grad, what + " grad");
  }
}

// torch 1.13: max_pool1d([1, nan, 3, nan], 4) is (nan, 3), the last NaN, on CPU and CUDA.
TEST(PoolingOps, SeveralNansInAWindowPickTheLast) {
  const Tensor x = special_leaf({1, 1, 4}, {1, kNan, 3, kNan});
  auto [y, idx] = max_pool1d_with_indices(x, {4});
  EXPECT_TRUE(std::isnan(values(y)[0]));
  EXPECT_EQ(values(idx), std::vector<double>{3});
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 0, 1}));
  auto [y2, idx2] = adaptive_max_pool2d(special_leaf({1, 2, 2}, {1, kNan, 3, kNan}), {1, 1});
  EXPECT_EQ(values(idx2), std::vector<double>{3});
}

// torch: an empty batch pools and back-propagates; an empty non-batch dim is refused.
TEST(PoolingOps, EmptyBatchForwardAndBackward) {
  const Tensor x = testing_util::dev(zeros({0, 3, 4, 4}, TensorOptions(kFloat64))).requires_grad_();
  auto [y, idx] = max_pool2d_with_indices(x, {2}, {}, {1});
  EXPECT_EQ(DimVector(y.sizes()), (DimVector{0, 3, 3, 3}));
  y.sum().backward();
  EXPECT_EQ(DimVector(x.grad().sizes()), (DimVector{0, 3, 4, 4}));
  const Tensor a = testing_util::dev(zeros({0, 3, 4, 4}, TensorOptions(kFloat64))).requires_grad_();
  std::get<0>(adaptive_max_pool2d(a, {2, 3})).sum().backward();
  EXPECT_EQ(DimVector(a.grad().sizes()), (DimVector{0, 3, 4, 4}));
  const Tensor l = testing_util::dev(zeros({0, 3, 5}, TensorOptions(kFloat64))).requires_grad_();
  max_pool1d(l, {2}).sum().backward();
  EXPECT_EQ(DimVector(l.grad().sizes()), (DimVector{0, 3, 5}));
  for (const DimVector& sizes :
       {DimVector{3, 0, 4, 4}, DimVector{0, 4, 4}, DimVector{2, 3, 0, 4}}) {
    const Tensor e = testing_util::dev(zeros(sizes, TensorOptions(kFloat64)));
    EXPECT_NE(error_of<ShapeError>([&] { max_pool2d(e, {2}, {}, {1}); }).find("batch dim"),
              std::string::npos);
  }
  EXPECT_THROW(max_pool1d(testing_util::dev(zeros({2, 0, 5})), {2}), ShapeError);
  EXPECT_THROW(adaptive_max_pool2d(testing_util::dev(zeros({3, 0, 4, 4})), {2}), ShapeError);
}

// torch: max_pool2d(x [1, 1, 4, 4], (1, 1e8), padding=(0, 5e7)) is each row's maximum; windows
// are clipped to the input, so memory follows it, not the kernel or the padding.
TEST(PoolingOps, HugeKernelAndPadding) {
  const Tensor x = leaf({1, 1, 4, 4}, 23);
  auto [y, idx] = max_pool2d_with_indices(x, {1, 100000000}, {}, {0, 50000000});
  EXPECT_EQ(DimVector(y.sizes()), (DimVector{1, 1, 4, 1}));
  const std::vector<double> xv = values(x);
  std::vector<double> want, at, grad(16, 0.0);
  for (int64_t r = 0; r < 4; ++r) {
    const auto row = xv.begin() + r * 4;
    const auto best = std::max_element(row, row + 4);
    want.push_back(*best);
    at.push_back(static_cast<double>(best - xv.begin()));
    grad[static_cast<size_t>(best - xv.begin())] = 1;
  }
  EXPECT_EQ(values(y), want);
  EXPECT_EQ(values(idx), at);
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), grad);
  const Tensor l = leaf({2, 3}, 25);  // max_pool1d: the same through the 2-d path
  auto [yl, il] = max_pool1d_with_indices(l, {100000000}, {}, {50000000});
  EXPECT_EQ(DimVector(yl.sizes()), (DimVector{2, 1}));
}

// Geometry whose window arithmetic overflows int64 is a ValueError naming the values (it was
// signed overflow, undefined behaviour); the input is unchanged.
TEST(PoolingOps, OverflowingGeometryIsAValueError) {
  const Tensor x = leaf({1, 1, 4, 4}, 24);
  const int64_t big = int64_t{1} << 62;
  const std::string m = error_of<ValueError>([&] {
    max_pool2d(x, {1, big}, {}, {0, big / 2}, {1, 4});
  });
  EXPECT_NE(m.find("overflows int64"), std::string::npos) << m;
  EXPECT_NE(m.find("dilation 4"), std::string::npos) << m;
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_THROW(max_pool2d(x, {1, max}, {}, {0, max / 2}), ValueError);
  EXPECT_THROW(max_pool1d(x.squeeze(0), {max}, {}, {max / 2}, {1}, true), ValueError);
  EXPECT_THROW(avg_pool2d(x, {max, 1}, {}, {max / 2, 0}), ValueError);
  EXPECT_EQ(x.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
