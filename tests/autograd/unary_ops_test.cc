// Unary ops: gradcheck and gradgradcheck, contiguous and strided inputs, plus node names.
#include <cmath>
#include <cstring>
#include <limits>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::leaf;
using testing_util::strided_leaf;

// Inputs away from the kinks of abs/relu/clamp (|x| in [0.2, 1]) with both signs.
Tensor away_from_zero(IntArrayRef sizes, uint64_t seed, bool strided) {
  Tensor x = strided ? strided_leaf(sizes, seed, 0.2, 1.0) : leaf(sizes, seed, 0.2, 1.0);
  NoGradGuard guard;
  Tensor sign_flip = sign(dev(arange(x.numel(), kFloat64)).view(x.sizes()) - 1.5);  // - - + + ...
  native::binary_out(BinaryOp::kMul, x, x, sign_flip);
  return x;
}

TEST(UnaryOps, Neg) {
  CHECK_GRADS([](const VariableList& in) { return in[0].neg(); }, {leaf({2, 3}, 1)});
  CHECK_GRADS([](const VariableList& in) { return -in[0]; }, {strided_leaf({2, 3}, 2)});
}

TEST(UnaryOps, Abs) {
  CHECK_GRADS([](const VariableList& in) { return in[0].abs(); },
              {away_from_zero({2, 3}, 3, false)});
  CHECK_GRADS([](const VariableList& in) { return in[0].abs(); },
              {away_from_zero({3, 2}, 4, true)});
}

TEST(UnaryOps, ExpLogSqrt) {
  CHECK_GRADS([](const VariableList& in) { return in[0].exp(); }, {leaf({2, 3}, 5)});
  CHECK_GRADS([](const VariableList& in) { return in[0].exp(); }, {strided_leaf({2, 3}, 6)});
  CHECK_GRADS([](const VariableList& in) { return in[0].log(); }, {leaf({2, 3}, 7, 0.5, 2.0)});
  CHECK_GRADS([](const VariableList& in) { return in[0].log(); },
              {strided_leaf({2, 3}, 8, 0.5, 2.0)});
  CHECK_GRADS([](const VariableList& in) { return in[0].sqrt(); }, {leaf({2, 3}, 9, 0.5, 2.0)});
  CHECK_GRADS([](const VariableList& in) { return in[0].sqrt(); },
              {strided_leaf({2, 3}, 10, 0.5, 2.0)});
}

TEST(UnaryOps, Trigonometric) {
  CHECK_GRADS([](const VariableList& in) { return in[0].sin(); }, {leaf({2, 3}, 11)});
  CHECK_GRADS([](const VariableList& in) { return in[0].cos(); }, {strided_leaf({2, 3}, 12)});
  CHECK_GRADS([](const VariableList& in) { return in[0].tanh(); }, {leaf({2, 3}, 13)});
  CHECK_GRADS([](const VariableList& in) { return in[0].tanh(); }, {strided_leaf({3, 2}, 14)});
}

TEST(UnaryOps, SigmoidRelu) {
  CHECK_GRADS([](const VariableList& in) { return in[0].sigmoid(); }, {leaf({2, 3}, 15)});
  CHECK_GRADS([](const VariableList& in) { return in[0].sigmoid(); }, {strided_leaf({2, 3}, 16)});
  CHECK_GRADS([](const VariableList& in) { return in[0].relu(); },
              {away_from_zero({2, 3}, 17, false)});
  CHECK_GRADS([](const VariableList& in) { return in[0].relu(); },
              {away_from_zero({2, 3}, 18, true)});
}

TEST(UnaryOps, PowScalar) {
  for (Scalar e : {Scalar(2), Scalar(3), Scalar(0.5), Scalar(-1.5), Scalar(0)}) {
    SCOPED_TRACE(e.to<double>());
    CHECK_GRADS([e](const VariableList& in) { return in[0].pow(e); }, {leaf({2, 3}, 19, 0.5, 2.0)});
    CHECK_GRADS([e](const VariableList& in) { return in[0].pow(e); },
                {strided_leaf({2, 3}, 20, 0.5, 2.0)});
  }
}

TEST(UnaryOps, Clamp) {
  Tensor x = away_from_zero({3, 4}, 21, false);
  CHECK_GRADS([](const VariableList& in) { return in[0].clamp(-0.5, 0.5); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].clamp(-0.1); }, {x});
  CHECK_GRADS([](const VariableList& in) { return in[0].clamp(std::nullopt, 0.1); },
              {away_from_zero({3, 4}, 22, true)});
}

TEST(UnaryOps, NodeNames) {
  Tensor x = leaf({2}, 23);
  EXPECT_STREQ((-x).grad_fn()->name(), "NegBackward0");
  EXPECT_STREQ(x.abs().grad_fn()->name(), "AbsBackward0");
  EXPECT_STREQ(x.exp().grad_fn()->name(), "ExpBackward0");
  EXPECT_STREQ(x.log().grad_fn()->name(), "LogBackward0");
  EXPECT_STREQ(x.sqrt().grad_fn()->name(), "SqrtBackward0");
  EXPECT_STREQ(x.sin().grad_fn()->name(), "SinBackward0");
  EXPECT_STREQ(x.cos().grad_fn()->name(), "CosBackward0");
  EXPECT_STREQ(x.tanh().grad_fn()->name(), "TanhBackward0");
  EXPECT_STREQ(x.sigmoid().grad_fn()->name(), "SigmoidBackward0");
  EXPECT_STREQ(x.relu().grad_fn()->name(), "ReluBackward0");
  EXPECT_STREQ(x.pow(2).grad_fn()->name(), "PowBackward0");
  EXPECT_STREQ(x.clamp(0, 1).grad_fn()->name(), "ClampBackward1");
}

TEST(UnaryOps, HandDerivedGradients) {
  Tensor x = dev(tensor({-2.0, 0.5, 3.0}, kFloat64)).requires_grad_();
  x.relu().sum().backward();
  testing_util::expect_close(x.grad(), {0, 1, 1});
  x.set_grad(Tensor());
  x.clamp(-1.0, 1.0).sum().backward();
  testing_util::expect_close(x.grad(), {0, 1, 0});
  x.set_grad(Tensor());
  x.pow(3).sum().backward();
  testing_util::expect_close(x.grad(), {12, 0.75, 27});
}

// Bit patterns of t's values as float64 (exact for float32; signed zeros kept), every NaN as one
// pattern: a NaN's sign and payload are the compiler's and the device's choice (Note [NaN bits]
// in tests/cuda/conformance_util.h).
std::vector<uint64_t> bits(const Tensor& t) {
  std::vector<uint64_t> out;
  for (double v : testing_util::values(t)) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(b));
    out.push_back(std::isnan(v) ? ~uint64_t{0} : b);
  }
  return out;
}

// n x 2 values, edge values first (zeros, tiny, huge, infinities, NaN), then a spread in [-4, 4).
Tensor edge_values(int64_t n, const std::vector<double>& edges, uint64_t seed, ScalarType dtype) {
  std::vector<double> v(static_cast<size_t>(2 * n));
  uint64_t s = seed;
  for (size_t i = 0; i < v.size(); ++i) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    v[i] = i < edges.size() ? edges[i] : static_cast<double>(s >> 11) * 0x1p-53 * 8.0 - 4.0;
  }
  return dev(from_vector(v, {n, 2}).to(dtype));
}

// Note [Fused activation backward]: without a graph to record, TanhBackward0 and
// SigmoidBackward0 ask the backend for the whole formula; its value must be the formula's ops'
// bit for bit, for every value, on each layout (the CPU's contiguous loop, the default's binary
// kernels for strided operands, two threads above 65,536 elements), and with a graph to record
// the formula's ops must run (a differentiable gradient).
TEST(UnaryOps, FusedTanhSigmoidBackwardIsTheFormulaBitForBit) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Element 13 pairs a NaN gradient with a NaN y; element 9 a NaN gradient with a finite y.
  const std::vector<double> xs = {0.0,  -0.0, 1e-30, -1e-30, 0.5, -0.75, 3.0,
                                  -3.0, 20.0, -20.0, 1e-300, inf, -inf,  nan};
  const std::vector<double> gs = {1.0, -0.0, 0.0, 1e-38, -2.5,  3e38, 1e-45,
                                  inf, -inf, nan, 7.0,   -1e-7, 2.0,  -nan};
  for (bool sigmoid : {false, true}) {
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{40000}}) {
        for (int layout = 0; layout < 3; ++layout) {
          SCOPED_TRACE(
              str(sigmoid ? "sigmoid " : "tanh ", dtype_name(dtype), " n=", n, " layout=", layout));
          auto act = [sigmoid](Tensor t) { return sigmoid ? t.sigmoid() : t.tanh(); };
          Tensor x = edge_values(n, xs, 40 + static_cast<uint64_t>(n), dtype).requires_grad_();
          // layout 1: a transposed gradient; 2: the saved output a transposed view (in place).
          Tensor g = edge_values(n, gs, 41, dtype);
          if (layout == 1) g = edge_values(n, gs, 41, dtype).t().contiguous().t();
          Tensor y;
          if (layout == 2) {
            Tensor base = (x.t() * 1).contiguous();  // 2 x n: its transpose is x's shape, strided
            y = base.t();
            sigmoid ? y.sigmoid_() : y.tanh_();
          } else {
            y = act(x);
          }
          y.backward(g);
          Tensor want;
          {
            NoGradGuard no_grad;
            const Tensor r = act(x.detach());
            want = sigmoid ? g * (r * (1 - r)) : g * (1 - r * r);
          }
          ASSERT_EQ(bits(x.grad()), bits(want));
        }
      }
    }
  }
  // With a graph to record, the formula's ops run: the gradient has history and a gradient.
  Tensor x = leaf({3}, 42);
  for (bool sigmoid : {false, true}) {
    Tensor y = sigmoid ? x.sigmoid() : x.tanh();
    Tensor gx = autograd::grad({y}, {x}, {dev(ones({3}, kFloat64))}, true, true)[0];
    ASSERT_TRUE(gx.requires_grad());
    EXPECT_STREQ(gx.grad_fn()->name(), "MulBackward0");
  }
}

TEST(UnaryOps, ComparisonsAndLogicalNotAreNotDifferentiable) {
  Tensor x = leaf({3}, 24);
  EXPECT_FALSE((x > 0.0).requires_grad());
  EXPECT_EQ((x > 0.0).dtype(), kBool);
  EXPECT_FALSE((!(x > 0.0)).requires_grad());
  // sign has a (zero) gradient node, as PyTorch's SignBackward0 (math_ops_test.cc).
  EXPECT_STREQ(sign(x).grad_fn()->name(), "SignBackward0");
}

}  // namespace
}  // namespace mutagrad
