// avg_pool1d/2d, adaptive_avg_pool1d/2d and adaptive_max_pool2d: values against naive window
// loops over random geometries (torch's divisor rules written out by hand), gradcheck +
// gradgradcheck, node names, non-contiguous inputs, and refused arguments with nothing changed;
// inf and NaN in inputs and gradients (each stays in its windows), reduced dtypes summed in
// float, empty batches, huge kernels and padding, an overflowing divisor. (torch 1.13 itself is
// the oracle of tests/python/pool_test.py.) Runs on the CPU and, as avg_pooling_ops_test_cuda,
// on the CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
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

struct Rng {
  std::mt19937 gen;
  int64_t operator()(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
};

// torch's avg_pool2d CPU loop, written out: out[i][j] = sum of the in-range window / divisor.
std::vector<double> naive_avg(const std::vector<double>& x, int64_t planes, int64_t h, int64_t w,
                              int64_t oh, int64_t ow, const DimVector& k, const DimVector& s,
                              const DimVector& p, bool include_pad, std::optional<int64_t> div) {
  std::vector<double> out;
  for (int64_t q = 0; q < planes; ++q) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        int64_t h0 = i * s[0] - p[0], w0 = j * s[1] - p[1];
        int64_t h1 = std::min(h0 + k[0], h + p[0]), w1 = std::min(w0 + k[1], w + p[1]);
        const int64_t pool = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, h);
        w1 = std::min(w1, w);
        double sum = 0;
        for (int64_t a = h0; a < h1; ++a) {
          for (int64_t b = w0; b < w1; ++b) sum += x[static_cast<size_t>((q * h + a) * w + b)];
        }
        const int64_t count = div ? *div : include_pad ? pool : (h1 - h0) * (w1 - w0);
        out.push_back(sum / static_cast<double>(count));
      }
    }
  }
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, int trial) {
  ASSERT_EQ(got.size(), want.size()) << trial;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << trial << " " << i;
}

TEST(AvgPoolingOps, AvgPool2dMatchesANaiveLoop) {
  Rng pick{std::mt19937(7)};
  int checked = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 3), h = pick(1, 9), w = pick(1, 9);
    const DimVector k{pick(1, 4), pick(1, 4)}, s{pick(1, 3), pick(1, 3)};
    const DimVector p{pick(0, k[0] / 2), pick(0, k[1] / 2)};
    const bool ceil_mode = pick(0, 1) == 1, include_pad = pick(0, 1) == 1;
    const std::optional<int64_t> div =
        pick(0, 3) == 0 ? std::optional<int64_t>(pick(-3, 5) | 1) : std::nullopt;
    const Tensor x = trial % 3 == 0 ? strided_leaf({n, c, h, w}, trial) : leaf({n, c, h, w}, trial);
    Tensor y;
    try {
      y = avg_pool2d(x, k, s, p, ceil_mode, include_pad, div);
    } catch (const ShapeError&) {
      continue;  // output too small
    }
    ++checked;
    EXPECT_STREQ(y.grad_fn()->name(), "AvgPool2DBackward0");
    expect_near(values(y),
                naive_avg(values(x), n * c, h, w, y.size(2), y.size(3), k, s, p, include_pad, div),
                trial);
  }
  EXPECT_GT(checked, 40);
}

TEST(AvgPoolingOps, AvgPool1dIsTheRowOf2d) {
  const Tensor x = leaf({2, 3, 11}, 3);
  const Tensor y = avg_pool1d(x, {4}, {3}, {2}, true, false);
  EXPECT_STREQ(y.grad_fn()->name(), "SqueezeBackward1");
  expect_near(values(y), values(avg_pool2d(x.unsqueeze(1), {1, 4}, {1, 3}, {0, 2}, true, false)),
              0);
  EXPECT_EQ(DimVector(y.sizes()), (DimVector{2, 3, 5}));  // ceil_mode: 5 windows
}

// The adaptive windows: [floor(i in / o), ceil((i + 1) in / o)).
int64_t lo(int64_t i, int64_t in, int64_t o) { return i * in / o; }
int64_t hi(int64_t i, int64_t in, int64_t o) { return ((i + 1) * in + o - 1) / o; }

TEST(AvgPoolingOps, AdaptivePoolsMatchANaiveLoop) {
  Rng pick{std::mt19937(9)};
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 3), h = pick(1, 10), w = pick(1, 10);
    const int64_t oh = pick(1, 12), ow = pick(1, 12);
    const Tensor x = trial % 2 ? strided_leaf({n, c, h, w}, trial) : leaf({n, c, h, w}, trial);
    const Tensor ya = adaptive_avg_pool2d(x, {oh, ow});
    auto [ym, idx] = adaptive_max_pool2d(x, {oh, ow});
    EXPECT_STREQ(ya.grad_fn()->name(),
                 oh == 1 && ow == 1 ? "MeanBackward1" : "AdaptiveAvgPool2DBackward0");
    EXPECT_STREQ(ym.grad_fn()->name(), "AdaptiveMaxPool2DBackward0");
    const std::vector<double> xv = values(x);
    std::vector<double> avg, mx, at;
    for (int64_t q = 0; q < n * c; ++q) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          double sum = 0, best = -std::numeric_limits<double>::infinity();
          int64_t where = -1;
          for (int64_t a = lo(i, h, oh); a < hi(i, h, oh); ++a) {
            for (int64_t b = lo(j, w, ow); b < hi(j, w, ow); ++b) {
              const double v = xv[static_cast<size_t>((q * h + a) * w + b)];
              sum += v;
              if (v > best) {
                best = v;
                where = a * w + b;
              }
            }
          }
          avg.push_back(sum / static_cast<double>((hi(i, h, oh) - lo(i, h, oh)) *
                                                  (hi(j, w, ow) - lo(j, w, ow))));
          mx.push_back(best);
          at.push_back(static_cast<double>(where));
        }
      }
    }
    expect_near(values(ya), avg, trial);
    EXPECT_EQ(values(ym), mx) << trial;
    EXPECT_EQ(values(idx), at) << trial;
  }
}

// Ties: the first maximum in row-major window order is chosen and gets the whole gradient.
TEST(AvgPoolingOps, AdaptiveMaxTiesGoToTheFirstMaximum) {
  const Tensor x = testing_util::dev(full({1, 1, 3, 3}, 1.0, kFloat64)).requires_grad_();
  auto [y, idx] = adaptive_max_pool2d(x, {2, 2});
  EXPECT_EQ(values(idx), (std::vector<double>{0, 1, 3, 4}));
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 1, 0, 1, 1, 0, 0, 0, 0}));
}

TEST(AvgPoolingOps, GradcheckAndGradgradcheck) {
  const Tensor x = leaf({2, 2, 5, 6}, 1);
  CHECK_GRADS(
      [](const VariableList& in) {
        return avg_pool2d(in[0], {3, 2}, {2, 1}, {1, 1}, true, false);
      },
      {x});
  CHECK_GRADS(
      [](const VariableList& in) {
        return avg_pool2d(in[0], {2}, {}, {1}, false, true, std::optional<int64_t>(-3));
      },
      {strided_leaf({3, 4, 5}, 2)});
  CHECK_GRADS([](const VariableList& in) { return avg_pool1d(in[0], {3}, {2}, {1}, true, true); },
              {leaf({2, 7}, 3)});
  CHECK_GRADS([](const VariableList& in) { return adaptive_avg_pool2d(in[0], {3, 4}); }, {x});
  CHECK_GRADS([](const VariableList& in) { return adaptive_avg_pool1d(in[0], {4}); },
              {strided_leaf({2, 3, 7}, 4)});
  CHECK_GRADS(
      [](const VariableList& in) {
        return std::get<0>(adaptive_max_pool2d(in[0], {4, 3}));
      },
      {x});
}

// Average pooling saves no tensor: writing into its input after the forward is allowed.
TEST(AvgPoolingOps, SavesNoTensor) {
  const Tensor x = leaf({1, 1, 4, 4}, 6);
  Tensor a = x * 1.0;
  const Tensor y = avg_pool2d(a, {2});
  const Tensor z = adaptive_avg_pool2d(a, {3, 3});
  a.mul_(2.0);  // no staleness error at backward: neither node saved `a`
  (y.sum() + z.sum()).backward();
  // Each element: 1/4 from its one 2x2 window of y, 1/4 from each 2x2 window of z covering it
  // (z's windows start at rows and columns 0, 1, 2).
  const double cover[4] = {1, 2, 2, 1};
  std::vector<double> want;
  for (double r : cover) {
    for (double c : cover) want.push_back(0.25 + 0.25 * r * c);
  }
  expect_near(values(x.grad()), want, 0);
}

TEST(AvgPoolingOps, EmptyBatchAndChannels) {
  const Tensor x = testing_util::dev(zeros({0, 3, 4, 5}, TensorOptions(kFloat64)));
  EXPECT_EQ(DimVector(avg_pool2d(x, {2}).sizes()), (DimVector{0, 3, 2, 2}));
  EXPECT_EQ(DimVector(adaptive_avg_pool2d(x, {2, 3}).sizes()), (DimVector{0, 3, 2, 3}));
  EXPECT_EQ(DimVector(std::get<0>(adaptive_max_pool2d(x, {2, 3})).sizes()),
            (DimVector{0, 3, 2, 3}));
  const Tensor y = leaf({1, 2, 4, 5}, 7);
  EXPECT_EQ(DimVector(adaptive_avg_pool2d(y, {0, 3}).sizes()), (DimVector{1, 2, 0, 3}));
}

TEST(AvgPoolingOps, RefusedArguments) {
  const Tensor x = leaf({1, 2, 5, 5}, 4);
  EXPECT_NE(error_of<ValueError>([&] { avg_pool2d(x, {3}, {}, {2}); }).find("pad=2"),
            std::string::npos);
  EXPECT_NE(error_of<ShapeError>([&] { avg_pool2d(x, {6}); }).find("[1, 2, 5, 5]"),
            std::string::npos);
  EXPECT_THROW(avg_pool2d(x, {2}, {0}), ValueError);
  EXPECT_THROW(avg_pool2d(x, {0}), ValueError);
  EXPECT_THROW(avg_pool2d(x, {2}, {}, {0}, false, true, std::optional<int64_t>(0)), ValueError);
  EXPECT_THROW(avg_pool2d(x, {2, 2, 2}), ValueError);
  EXPECT_THROW(avg_pool2d(leaf({5, 5}, 5), {2}), ShapeError);
  EXPECT_THROW(avg_pool2d(x.detach().to(kInt64), {2}), DTypeError);
  EXPECT_THROW(avg_pool1d(x, {2}), ShapeError);
  EXPECT_THROW(avg_pool1d(leaf({2, 4}, 8), {2}, {}, {2}), ValueError);
  EXPECT_NE(error_of<ValueError>([&] {
              adaptive_avg_pool2d(x, {-1, 2});
            }).find("[-1, 2]"),
            std::string::npos);
  EXPECT_THROW(adaptive_avg_pool2d(leaf({4, 5}, 9), {2}), ShapeError);
  EXPECT_THROW(adaptive_avg_pool2d(x, {1, 2, 3}), ValueError);
  EXPECT_THROW(adaptive_avg_pool2d(testing_util::dev(zeros({1, 2, 0, 3})), {2}), ShapeError);
  EXPECT_THROW(adaptive_avg_pool1d(x, {2}), ShapeError);
  EXPECT_THROW(adaptive_max_pool2d(leaf({4, 5}, 9), {2}), ShapeError);
  EXPECT_THROW(adaptive_max_pool2d(x, {-2}), ValueError);
  EXPECT_THROW(adaptive_max_pool2d(x.detach().to(kInt64), {2}), DTypeError);
  EXPECT_EQ(x.version(), 0u);
  EXPECT_FALSE(x.grad().defined());
}

// --- inf and NaN, reduced dtypes, empty batches, huge geometry ---

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Mostly small integers (exact sums), with NaN, inf and -inf sprinkled in.
std::vector<double> special_values(int64_t n, std::mt19937& gen) {
  const double pool[] = {kNan, kInf, -kInf, -2, -1, 0, 1, 2, 3, 1, 0, -1, 2, -3, 4, 0};
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(pool[gen() % 16]);
  return v;
}

// NaN where want is NaN, the same infinity, else within 1e-12.
void expect_same(const std::vector<double>& got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i])   ? std::isnan(got[i])
                      : std::isinf(want[i]) ? got[i] == want[i]
                                            : std::abs(got[i] - want[i]) <= 1e-12;
    EXPECT_TRUE(same) << what << " at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// One output's window along both dims (clipped to the input) and its divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};

// torch's loops: each window's sum / divisor, and the gradient gout / divisor added to each
// element of the window.
void torch_avg_loop(const std::vector<double>& x, const std::vector<double>& gout, int64_t h,
                    int64_t w, const std::vector<AvgWindow>& windows, std::vector<double>* val,
                    std::vector<double>* grad) {
  grad->assign(x.size(), 0.0);
  const int64_t planes = static_cast<int64_t>(x.size()) / (h * w);
  for (int64_t q = 0; q < planes; ++q) {
    for (const AvgWindow& win : windows) {
      double sum = 0;
      const double g = gout[val->size()] / win.divisor;
      for (int64_t a = win.h0; a < win.h1; ++a) {
        for (int64_t b = win.w0; b < win.w1; ++b) {
          const auto at = static_cast<size_t>((q * h + a) * w + b);
          sum += x[at];
          (*grad)[at] += g;
        }
      }
      val->push_back(sum / win.divisor);
    }
  }
}

TEST(AvgPoolingOps, InfAndNanStayInTheirWindows) {
  Rng pick{std::mt19937(31)};
  int checked = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 2), h = pick(1, 7), w = pick(1, 7);
    const bool adaptive = trial % 2 == 1;
    const DimVector k{pick(1, 4), pick(1, 4)}, s{pick(1, 3), pick(1, 3)};
    const DimVector p{pick(0, k[0] / 2), pick(0, k[1] / 2)};
    const bool ceil_mode = pick(0, 1) == 1, include_pad = pick(0, 1) == 1;
    const Tensor x =
        testing_util::dev(from_vector(special_values(n * c * h * w, pick.gen), {n, c, h, w}))
            .requires_grad_();
    Tensor y;
    std::vector<AvgWindow> windows;
    if (adaptive) {
      const int64_t oh = pick(2, 8), ow = pick(1, 8);
      y = adaptive_avg_pool2d(x, {oh, ow});
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          AvgWindow win{lo(i, h, oh), hi(i, h, oh), lo(j, w, ow), hi(j, w, ow), 0};
          win.divisor = static_cast<double>((win.h1 - win.h0) * (win.w1 - win.w0));
          windows.push_back(win);
        }
      }
    } else {
      try {
        y = avg_pool2d(x, k, s, p, ceil_mode, include_pad);
      } catch (const ShapeError&) {
        continue;  // output too small
      }
      for (int64_t i = 0; i < y.size(2); ++i) {
        for (int64_t j = 0; j < y.size(3); ++j) {
          const int64_t h0 = i * s[0] - p[0], w0 = j * s[1] - p[1];
          const int64_t h1 = std::min(h0 + k[0], h + p[0]), w1 = std::min(w0 + k[1], w + p[1]);
          AvgWindow win{std::max<int64_t>(h0, 0), std::min(h1, h), std::max<int64_t>(w0, 0),
                        std::min(w1, w), 0};
          win.divisor = static_cast<double>(include_pad ? (h1 - h0) * (w1 - w0)
                                                        : (win.h1 - win.h0) * (win.w1 - win.w0));
          windows.push_back(win);
        }
      }
    }
    ++checked;
    const std::vector<double> gout = special_values(y.numel(), pick.gen);
    std::vector<double> val, grad;
    torch_avg_loop(values(x), gout, h, w, windows, &val, &grad);
    const std::string what = "trial " + std::to_string(trial);
    expect_same(values(y), val, what + " values");
    y.backward(testing_util::dev(from_vector(gout, y.sizes())));
    expect_same(values(x.grad()), grad, what + " grad");
  }
  EXPECT_GT(checked, 60);
}

// The review's case: one inf poisoned every output of its plane (0 * inf in a matmul).
TEST(AvgPoolingOps, AdaptiveAvgOfOneInf) {
  std::vector<double> v(16, 0.0);
  v[0] = kInf;
  const Tensor x = testing_util::dev(from_vector(v, {1, 1, 4, 4})).requires_grad_();
  const Tensor y = adaptive_avg_pool2d(x, {2, 2});
  EXPECT_EQ(values(y), (std::vector<double>{kInf, 0, 0, 0}));
  y.backward(testing_util::dev(from_vector(std::vector<double>{kInf, 0, 0, 0}, {1, 1, 2, 2})));
  EXPECT_EQ(values(x.grad()),
            (std::vector<double>{kInf, kInf, 0, 0, kInf, kInf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

// bfloat16 sums and divides in float32 and rounds once, as torch 1.13 (its values).
TEST(AvgPoolingOps, ReducedDtypesAccumulateInFloat) {
  const Tensor three = testing_util::dev(full({1, 1, 4, 4}, 3.0, kBFloat16)).requires_grad_();
  const Tensor y = avg_pool2d(three, {2}, {}, {0}, false, true, std::optional<int64_t>(257));
  EXPECT_EQ(values(y), std::vector<double>(4, 0.046630859375));
  y.sum().backward();
  // The gradient 1/257 is also computed in float32 and rounded once. (torch 1.13's backward
  // rounds the divisor to bfloat16, 257 -> 256, and gives 0.00390625.)
  const double step = values(testing_util::dev(full({1}, 1.0 / 257, kFloat32).to(kBFloat16)))[0];
  EXPECT_EQ(step, 0.0038909912109375);
  EXPECT_EQ(values(three.grad()), std::vector<double>(16, step));
  std::vector<double> v(6, 1.0 / 256);
  v[0] = 1;  // 1 + 1/256 rounds back to 1 in bfloat16
  const Tensor x = testing_util::dev(from_vector(v, {1, 1, 1, 6}).to(kBFloat16));
  EXPECT_EQ(values(adaptive_avg_pool2d(x, {1, 2})), (std::vector<double>{0.3359375, 0.00390625}));
  EXPECT_EQ(values(adaptive_avg_pool1d(x.squeeze(0), {2})),
            (std::vector<double>{0.3359375, 0.00390625}));
  EXPECT_EQ(values(avg_pool2d(x, {1, 3})), (std::vector<double>{0.3359375, 0.00390625}));
  EXPECT_EQ(adaptive_avg_pool2d(x, {1, 2}).dtype(), kBFloat16);
}

// torch: an empty batch pools and back-propagates; an empty non-batch dim is refused.
TEST(AvgPoolingOps, EmptyBatchBackward) {
  for (int op = 0; op < 3; ++op) {
    const Tensor x =
        testing_util::dev(zeros({0, 3, 4, 4}, TensorOptions(kFloat64))).requires_grad_();
    const Tensor y = op == 0   ? avg_pool2d(x, {2}, {}, {1})
                     : op == 1 ? adaptive_avg_pool2d(x, {2, 3})
                               : avg_pool1d(x.reshape({0, 3, 16}), {3});
    y.sum().backward();
    EXPECT_EQ(DimVector(x.grad().sizes()), (DimVector{0, 3, 4, 4})) << op;
  }
  const Tensor c0 = testing_util::dev(zeros({3, 0, 4, 4}));
  EXPECT_NE(error_of<ShapeError>([&] { avg_pool2d(c0, {2}); }).find("[3, 0, 4, 4]"),
            std::string::npos);
  EXPECT_THROW(avg_pool1d(testing_util::dev(zeros({2, 0})), {1}), ShapeError);
}

// torch: avg_pool2d(x [1, 1, 4, 4], (1, 1e8), padding=(0, 5e7)) is each row's sum / 1e8 (or its
// mean without count_include_pad); windows are clipped to the input, so memory follows it.
TEST(AvgPoolingOps, HugeKernelAndPadding) {
  const Tensor x = leaf({1, 1, 4, 4}, 33);
  const Tensor y = avg_pool2d(x, {1, 100000000}, {}, {0, 50000000});
  const Tensor m = avg_pool2d(x, {1, 100000000}, {}, {0, 50000000}, false, false);
  EXPECT_EQ(DimVector(y.sizes()), (DimVector{1, 1, 4, 1}));
  const std::vector<double> xv = values(x);
  std::vector<double> sums;
  for (size_t r = 0; r < 4; ++r)
    sums.push_back(xv[r * 4] + xv[r * 4 + 1] + xv[r * 4 + 2] + xv[r * 4 + 3]);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_NEAR(values(y)[r], sums[r] / 1e8, 1e-20);
    EXPECT_NEAR(values(m)[r], sums[r] / 4, 1e-15);
  }
  (y.sum() + m.sum()).backward();
  for (double g : values(x.grad())) EXPECT_NEAR(g, 1e-8 + 0.25, 1e-15);
}

// A count_include_pad divisor whose product overflows int64 is a ValueError (it was signed
// overflow); divisor_override needs no count.
TEST(AvgPoolingOps, OverflowingDivisorIsAValueError) {
  const Tensor x = leaf({1, 1, 4, 4}, 34);
  const int64_t k = int64_t{1} << 32;
  const std::string msg = error_of<ValueError>([&] { avg_pool2d(x, {k, k}, {}, {k / 2, k / 2}); });
  EXPECT_NE(msg.find("overflows int64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("divisor_override"), std::string::npos) << msg;
  const Tensor y =
      avg_pool2d(x, {k, k}, {}, {k / 2, k / 2}, false, true, std::optional<int64_t>(3));
  double sum = 0;
  for (double v : values(x)) sum += v;
  EXPECT_NEAR(values(y)[0], sum / 3, 1e-12);
  EXPECT_EQ(x.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
