// Convolution: the three maps (forward, backward_input, backward_weight) against a naive loop
// over random geometries (stride, padding per side, dilation, groups, 1x1 and large kernels, odd
// sizes) in float32 (oneDNN on the CPU) and float64 (the im2col reference), the backend kernels
// against the reference under exact geometry, non-contiguous inputs, gradcheck + gradgradcheck
// of conv1d/conv2d/conv_transpose1d/2d, node names, the in-place rules (a write into a saved input
// is refused naming the line; relu_ on the output is fine) and refused arguments with nothing
// changed. Runs on the CPU and, as convolution_ops_test_cuda, on the CUDA device.
#include <random>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "tensor/native/convolution.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::values;

// ---- A naive loop (2-D; a 1-D geometry is 2-D with height 1) ---------------------------------

struct Geo {
  int64_t n, c, o, groups;
  DimVector in, k, stride, pl, pr, dil;
  DimVector out() const {
    DimVector r;
    for (size_t i = 0; i < in.size(); ++i) {
      r.push_back((in[i] + pl[i] + pr[i] - dil[i] * (k[i] - 1) - 1) / stride[i] + 1);
    }
    return r;
  }
  ConvParams params() const { return ConvParams{stride, pl, pr, dil, groups}; }
  DimVector x_shape() const {
    DimVector s{n, c};
    for (int64_t v : in) s.push_back(v);
    return s;
  }
  DimVector w_shape() const {
    DimVector s{o, c / groups};
    for (int64_t v : k) s.push_back(v);
    return s;
  }
  DimVector y_shape() const {
    DimVector s{n, o};
    for (int64_t v : out()) s.push_back(v);
    return s;
  }
  std::string str() const {
    return mutagrad::str("n ", n, " c ", c, " o ", o, " groups ", groups, " in ", in, " k ", k,
                         " stride ", stride, " pad ", pl, "/", pr, " dilation ", dil);
  }
};

// y[n, o, oh, ow] = sum over the group's c and (kh, kw) of x[n, c, ih, iw] w[o, c', kh, kw].
std::vector<double> naive_forward(const Geo& g, const std::vector<double>& x,
                                  const std::vector<double>& w) {
  const bool one = g.in.size() == 1;
  const int64_t ih_n = one ? 1 : g.in[0], iw_n = g.in.back();
  const int64_t kh_n = one ? 1 : g.k[0], kw_n = g.k.back();
  const DimVector out = g.out();
  const int64_t oh_n = one ? 1 : out[0], ow_n = out.back();
  const int64_t sh = one ? 1 : g.stride[0], sw = g.stride.back();
  const int64_t ph = one ? 0 : g.pl[0], pw = g.pl.back();
  const int64_t dh = one ? 1 : g.dil[0], dw = g.dil.back();
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t o = 0; o < g.o; ++o) {
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double acc = 0;
          for (int64_t cc = 0; cc < cg; ++cc) {
            const int64_t c = (o / og) * cg + cc;
            for (int64_t kh = 0; kh < kh_n; ++kh) {
              for (int64_t kw = 0; kw < kw_n; ++kw) {
                const int64_t ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                if (ih < 0 || ih >= ih_n || iw < 0 || iw >= iw_n) continue;
                acc += x[static_cast<size_t>(((n * g.c + c) * ih_n + ih) * iw_n + iw)] *
                       w[static_cast<size_t>(((o * cg + cc) * kh_n + kh) * kw_n + kw)];
              }
            }
          }
          y.push_back(acc);
        }
      }
    }
  }
  return y;
}

// A random geometry whose kernel fits the padded input.
Geo random_geo(std::mt19937& rng, int64_t dims) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Geo g;
  g.groups = pick(1, 3);
  g.n = pick(1, 3);
  g.c = g.groups * pick(1, 3);
  g.o = g.groups * pick(1, 3);
  for (int64_t i = 0; i < dims; ++i) {
    const int64_t k = pick(0, 5) == 0 ? 1 : pick(1, 5);  // 1x1 kernels often
    const int64_t dil = pick(0, 2) == 0 ? pick(2, 3) : 1;
    g.k.push_back(k);
    g.dil.push_back(dil);
    g.stride.push_back(pick(1, 3));
    g.pl.push_back(pick(0, 2));
    g.pr.push_back(pick(0, 2));
    const int64_t extent = dil * (k - 1) + 1;
    g.in.push_back(std::max<int64_t>(1, extent - g.pl[i] - g.pr[i]) + pick(0, 6));
  }
  return g;
}

Tensor random_tensor(IntArrayRef sizes, uint64_t seed, ScalarType dtype) {
  return native::to(leaf(sizes, seed).detach(), dtype);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::abs(e));
  return m;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
  }
}

double dot_values(const Tensor& a, const Tensor& b) {
  const std::vector<double> u = values(a), v = values(b);
  double s = 0;
  for (size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
  return s;
}

// The forward against the naive loop, and the two adjoints by <Bx(gy, w), x> = <gy, F(x, w)> =
// <Bw(x, gy), w>, in float64 (tight) and float32 (oneDNN on the CPU).
TEST(ConvolutionOps, MapsMatchANaiveLoopOnRandomGeometries) {
  std::mt19937 rng(37);
  for (int trial = 0; trial < 120; ++trial) {
    const Geo g = random_geo(rng, trial % 3 == 0 ? 1 : 2);
    SCOPED_TRACE(g.str());
    for (ScalarType dtype : {kFloat64, kFloat32}) {
      const double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
      const Tensor x = random_tensor(g.x_shape(), 3 * trial + 1, dtype);
      const Tensor w = random_tensor(g.w_shape(), 3 * trial + 2, dtype);
      const Tensor gy = random_tensor(g.y_shape(), 3 * trial + 3, dtype);
      const Tensor y = native::conv_forward(x, w, g.params());
      ASSERT_EQ(y.sizes(), IntArrayRef(g.y_shape()));
      ASSERT_EQ(y.dtype(), dtype);
      const std::vector<double> want = naive_forward(g, values(x), values(w));
      expect_near_all(values(y), want, tol * std::max(1.0, max_abs(want)), "forward");
      const Tensor gx = native::conv_backward_input(gy, w, g.params(), g.x_shape());
      const Tensor gw = native::conv_backward_weight(x, gy, g.params(), g.w_shape());
      ASSERT_EQ(gx.sizes(), IntArrayRef(g.x_shape()));
      ASSERT_EQ(gw.sizes(), IntArrayRef(g.w_shape()));
      const double ref = dot_values(gy, native::conv_forward(x, w, g.params()));
      const double scale = tol * std::max(1.0, std::abs(ref)) * 10;
      EXPECT_NEAR(dot_values(gx, x), ref, scale) << "backward_input";
      EXPECT_NEAR(dot_values(gw, w), ref, scale) << "backward_weight";
    }
  }
}

// The device's kernels (oneDNN for float32 on the CPU) against the im2col reference under the
// backend contract's exact geometry, element by element for all three maps.
TEST(ConvolutionOps, BackendKernelsMatchTheReference) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int trial = 0; trial < 80; ++trial) {
    Geo g = random_geo(rng, trial % 2 == 0 ? 1 : 2);
    for (size_t i = 0; i < g.in.size(); ++i) {  // exact: cut padding_r to what is read
      const DimVector out = g.out();
      g.pr[i] = (out[i] - 1) * g.stride[i] + g.dil[i] * (g.k[i] - 1) + 1 - g.in[i] - g.pl[i];
    }
    bool exact = true;
    for (int64_t v : g.pr) exact = exact && v >= 0;
    if (!exact) continue;
    ++checked;
    SCOPED_TRACE(g.str());
    const Tensor x = random_tensor(g.x_shape(), trial + 100, kFloat32);
    const Tensor w = random_tensor(g.w_shape(), trial + 200, kFloat32);
    const Tensor gy = random_tensor(g.y_shape(), trial + 300, kFloat32);
    Backend& be = backend_for(x.device());
    auto both = [&](const DimVector& shape, auto kernel, auto reference, const char* what) {
      Tensor a = empty(shape, TensorOptions(kFloat32).device(x.device()));
      Tensor b = empty(shape, TensorOptions(kFloat32).device(x.device()));
      kernel(a);
      reference(b);
      expect_near_all(values(a), values(b), 1e-4, what);
    };
    both(
        g.y_shape(), [&](const Tensor& y) { be.conv_forward(y, x, w, g.params()); },
        [&](const Tensor& y) { native::conv_reference_forward(y, x, w, g.params()); }, "forward");
    both(
        g.x_shape(), [&](const Tensor& gx) { be.conv_backward_input(gx, gy, w, g.params()); },
        [&](const Tensor& gx) { native::conv_reference_backward_input(gx, gy, w, g.params()); },
        "backward_input");
    both(
        g.w_shape(), [&](const Tensor& gw) { be.conv_backward_weight(gw, x, gy, g.params()); },
        [&](const Tensor& gw) { native::conv_reference_backward_weight(gw, x, gy, g.params()); },
        "backward_weight");
  }
  EXPECT_GT(checked, 20);
}

// Transposed, sliced and channels-last inputs and weights give the contiguous values.
TEST(ConvolutionOps, NonContiguousOperandsGiveTheSameValues) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const Tensor x = random_tensor({2, 4, 7, 6}, 1, dtype);
    const Tensor w = random_tensor({6, 2, 3, 2}, 2, dtype);
    const Tensor b = random_tensor({6}, 3, dtype);
    const Tensor want = conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}, 2);
    // Channels-last: NHWC memory seen as NCHW.
    const Tensor x_cl = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    const Tensor w_cl = w.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    ASSERT_FALSE(x_cl.is_contiguous());
    // Transposed spatial dims, and every other element of a larger tensor.
    const Tensor x_t = x.transpose(2, 3).contiguous().transpose(2, 3);
    const Tensor big = random_tensor({2, 4, 14, 7}, 4, dtype);
    native::copy_(native::slice(native::slice(big, 2, 0, 14, 2), 3, 1, 7), x);
    const Tensor x_sliced = big.slice(2, 0, 14, 2).slice(3, 1, 7);
    ASSERT_FALSE(x_sliced.is_contiguous());
    for (const Tensor& xi : {x_cl, x_t, x_sliced}) {
      for (const Tensor& wi : {w, w_cl}) {
        EXPECT_EQ(values(conv2d(xi, wi, b, {2, 1}, {1, 0}, {1, 2}, 2)), values(want));
      }
    }
  }
}

// ---- Autograd ----------------------------------------------------------------------------------

TEST(ConvolutionOps, GradcheckAndGradgradcheck) {
  const Tensor x = leaf({2, 4, 5, 4}, 1), w = leaf({4, 2, 3, 2}, 2), b = leaf({4}, 3);
  CHECK_GRADS(
      [](const VariableList& in) {
        return conv2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 2}, 2);
      },
      {x, w, b});
  CHECK_GRADS(
      [](const VariableList& in) {
        return conv2d(in[0], in[1], Tensor(), {1}, ConvPadding::kSame);
      },
      {leaf({1, 2, 4, 5}, 4), leaf({3, 2, 2, 3}, 5)});
  CHECK_GRADS([](const VariableList& in) { return conv1d(in[0], in[1], in[2], {3}, {2}, {2}, 1); },
              {leaf({2, 3, 9}, 6), leaf({2, 3, 3}, 7), leaf({2}, 8)});
  // Transposed: weight [C_in, C_out / groups, k], output_padding < stride.
  CHECK_GRADS(
      [](const VariableList& in) {
        return conv_transpose2d(in[0], in[1], in[2], {2, 3}, {1, 0}, {1, 2}, 2, {1, 1});
      },
      {leaf({2, 4, 3, 2}, 9), leaf({4, 1, 3, 2}, 10), leaf({2}, 11)});
  CHECK_GRADS(
      [](const VariableList& in) {
        return conv_transpose1d(in[0], in[1], Tensor(), {2}, {1}, {0}, 1, {2});
      },
      {leaf({1, 2, 4}, 12), leaf({2, 3, 3}, 13)});
  // output_padding >= stride (< dilation): trailing outputs no input reaches (bias only).
  CHECK_GRADS(
      [](const VariableList& in) {
        return conv_transpose1d(in[0], in[1], in[2], {2}, {1}, {2}, 2, {3});
      },
      {leaf({1, 2, 3}, 16), leaf({2, 2, 3}, 17), leaf({4}, 18)});
  // Unbatched input; strided (non-contiguous) leaves.
  CHECK_GRADS([](const VariableList& in) { return conv2d(in[0], in[1], Tensor(), {1}, {1}); },
              {testing_util::strided_leaf({2, 4, 3}, 14), leaf({2, 2, 2, 2}, 15)});
}

// Third order: each map's backward is made of the maps, so it goes on.
TEST(ConvolutionOps, DifferentiatesAThirdTime) {
  const Tensor x = leaf({1, 2, 4, 4}, 1), w = leaf({2, 2, 2, 2}, 2);
  const Tensor y = conv2d(x, w, Tensor(), {1}, {1});
  const Tensor loss = (y * y).sum();
  const VariableList g1 = autograd::grad({loss}, {x, w}, {}, std::nullopt, true);
  EXPECT_STREQ(g1[0].grad_fn()->name(), "ConvolutionBackwardBackward0");
  const Tensor s = (g1[0] * g1[0]).sum() + (g1[1] * g1[1]).sum();
  const VariableList g2 = autograd::grad({s}, {x, w}, {}, std::nullopt, true);
  const VariableList g3 = autograd::grad({(g2[0] * g2[0]).sum() + g2[1].sum()}, {x, w});
  ASSERT_TRUE(g3[0].defined() && g3[1].defined());
  EXPECT_TRUE(autograd::gradgradcheck(
      [](const VariableList& in) {
        const Tensor y = conv2d(in[0], in[1], Tensor(), {1}, {1});
        const VariableList g = autograd::grad({(y * y).sum()}, {in[0]}, {}, std::nullopt, true);
        return g[0];
      },
      {x, w}));
}

TEST(ConvolutionOps, NodeNames) {
  const Tensor x = leaf({1, 2, 4, 4}, 1), w = leaf({2, 2, 3, 3}, 2), b = leaf({2}, 3);
  const Tensor y = conv2d(x, w, b);
  EXPECT_STREQ(y.grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_EQ(y.grad_fn()->num_outputs(), 3u);
  EXPECT_STREQ(conv_transpose2d(y, w).grad_fn()->name(), "ConvolutionBackward0");
  const VariableList g = autograd::grad({y.sum()}, {x, w}, {}, std::nullopt, true);
  EXPECT_STREQ(g[0].grad_fn()->name(), "ConvolutionBackwardBackward0");
  EXPECT_STREQ(g[1].grad_fn()->name(), "ConvolutionBackwardBackward0");
  // An unbatched input gains and loses the batch dim as views (torch's SqueezeBackward1).
  EXPECT_STREQ(conv2d(x.squeeze(0), w).grad_fn()->name(), "SqueezeBackward1");
  // No grad required: no node.
  EXPECT_FALSE(conv2d(x.detach(), w.detach()).grad_fn());
}

// ---- In-place rules ----------------------------------------------------------------------------

TEST(ConvolutionOps, AWriteIntoTheSavedInputIsRefusedNamingTheLine) {
  const Tensor w = leaf({2, 2, 3, 3}, 2);
  Tensor x = leaf({1, 2, 5, 5}, 1) * 1.0;
  const Tensor y = conv2d(x, w);
  const int line = __LINE__ + 1;
  x.add_(1.0);
  const std::string message = error_of([&] { y.sum().backward(); });
  EXPECT_NE(message.find("add_"), std::string::npos) << message;
  EXPECT_NE(message.find("convolution_ops_test.cc:" + std::to_string(line)), std::string::npos)
      << message;
  EXPECT_EQ(w.grad().defined(), false);
}

TEST(ConvolutionOps, ReluInPlaceOnTheOutputIsFine) {
  const Tensor x = leaf({2, 2, 5, 5}, 1), w = leaf({3, 2, 3, 3}, 2), b = leaf({3}, 3);
  Tensor y = conv2d(x, w, b, {1}, {1});
  y.relu_();
  y.sum().backward();
  const Tensor gx = x.grad(), gw = w.grad(), gb = b.grad();
  const VariableList want = autograd::grad({conv2d(x, w, b, {1}, {1}).relu().sum()}, {x, w, b});
  EXPECT_EQ(values(gx), values(want[0]));
  EXPECT_EQ(values(gw), values(want[1]));
  EXPECT_EQ(values(gb), values(want[2]));
}

// ---- Refused arguments -------------------------------------------------------------------------

TEST(ConvolutionOps, BadArgumentsAreTypedErrorsThatChangeNothing) {
  const Tensor x = leaf({1, 4, 5, 5}, 1), w = leaf({6, 2, 3, 3}, 2), b = leaf({6}, 3);
  auto expect_message = [](const std::string& message, const std::vector<std::string>& parts) {
    for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << message;
  };
  // Channels not divisible by groups; input channels not matching.
  expect_message(error_of<ShapeError>([&] {
                   conv2d(x, leaf({5, 1, 3, 3}, 4), {}, {1}, {0}, {1}, 4);
                 }),
                 {"groups=4", "[5, 1, 3, 3]", "divisible by 4"});
  expect_message(error_of<ShapeError>([&] { conv2d(x, w, b, {1}, {0}, {1}, 1); }),
                 {"[6, 2, 3, 3]", "[1, 4, 5, 5]", "to have 2 channels", "got 4 channels"});
  // Kernel larger than the padded input.
  expect_message(error_of<ShapeError>([&] {
                   conv2d(x, leaf({6, 2, 7, 3}, 5), {}, {1}, {0}, {1}, 2);
                 }),
                 {"(5 x 5)", "(7 x 3)", "Kernel size can't be greater"});
  expect_message(error_of<ShapeError>([&] { conv2d(x, w, {}, {1}, {0}, {3}, 2); }),
                 {"(7 x 7)", "dilation [3, 3]"});
  // Negative padding, zero stride, zero dilation, bad output_padding.
  expect_message(error_of<ValueError>([&] { conv2d(x, w, {}, {1}, {-1}, {1}, 2); }),
                 {"negative padding", "[-1, -1]"});
  EXPECT_THROW(conv2d(x, w, {}, {0}, {0}, {1}, 2), ValueError);
  EXPECT_THROW(conv2d(x, w, {}, {1}, {0}, {0}, 2), ValueError);
  EXPECT_THROW(conv2d(x, w, {}, {1, 1, 1}, {0}, {1}, 2), ValueError);
  EXPECT_THROW(conv2d(x, w, {}, {2}, ConvPadding::kSame, {1}, 2), ValueError);
  EXPECT_THROW(conv_padding_mode("conv2d", "full"), ValueError);
  expect_message(error_of<ValueError>([&] {
                   conv_transpose2d(x, leaf({4, 2, 3, 3}, 6), {}, {1}, {0}, {1});
                 }),
                 {"output padding must be smaller than either stride or dilation"});
  // Wrong weight rank, wrong input rank, a bias of the wrong size.
  expect_message(error_of<ShapeError>([&] {
                   conv2d(x, leaf({6, 2, 3}, 7));
                 }),
                 {"4-D weight", "[6, 2, 3]"});
  expect_message(error_of<ShapeError>([&] {
                   conv2d(leaf({4, 5}, 8), w);
                 }),
                 {"3D (unbatched) or 4D (batched) input to conv2d", "[4, 5]"});
  expect_message(error_of<ShapeError>([&] { conv2d(x, w, leaf({5}, 9), {1}, {0}, {1}, 2); }),
                 {"bias", "6 elements", "[5]"});
  // dtype mismatch; an integer input.
  expect_message(error_of<DTypeError>([&] { conv2d(x, w.to(kFloat32), {}, {1}, {0}, {1}, 2); }),
                 {"float64", "float32"});
  EXPECT_THROW(conv2d(x, w, b.to(kFloat32), {1}, {0}, {1}, 2), DTypeError);
  EXPECT_THROW(conv2d(x.to(kInt64), w.to(kInt64), {}, {1}, {0}, {1}, 2), DTypeError);
  // A device mismatch (on the CUDA run: a CPU weight).
  if (testing_util::test_device() != Device(kCPU)) {
    EXPECT_THROW(conv2d(x, w.cpu(), {}, {1}, {0}, {1}, 2), DeviceError);
  }
  for (const Tensor& t : {x, w, b}) {
    EXPECT_EQ(t.version(), 0u);
    EXPECT_FALSE(t.grad().defined());
  }
}

// Degenerate sizes: an empty batch, zero channels, an output that reads only padding.
TEST(ConvolutionOps, EmptyOperandsAndPaddingOnlyOutputs) {
  const Tensor w = leaf({2, 3, 1, 1}, 1);
  const Tensor y0 = conv2d(leaf({0, 3, 4, 4}, 2), w);
  EXPECT_EQ(y0.sizes(), IntArrayRef({0, 2, 4, 4}));
  // stride 4 over 1 real position between 2 + 2 padding ones: both outputs read padding only.
  const Tensor x = leaf({1, 3, 1, 1}, 3);
  const Tensor y = conv2d(x, w, Tensor(), {4}, {2});
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 2, 2, 2}));
  EXPECT_EQ(values(y), std::vector<double>(8, 0.0));
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>(3, 0.0));
  EXPECT_EQ(values(w.grad()), std::vector<double>(6, 0.0));
}

}  // namespace
}  // namespace mutagrad
