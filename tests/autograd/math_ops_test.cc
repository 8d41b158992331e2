// The rounding, division, bit and float-classification ops: values against std:: and exact
// integer oracles (Python's semantics for % and //), torch's dtype rules and errors, gradcheck +
// gradgradcheck of the differentiable ones, PyTorch's node names, and the in-place forms through
// the mutation engine. Runs on the CPU and, as math_ops_test_cuda, on the CUDA device.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const std::vector<double>& v) {
  return dev(from_vector(v, {static_cast<int64_t>(v.size())}));
}
Tensor i64(const std::vector<int64_t>& v) {
  return dev(from_vector(v, {static_cast<int64_t>(v.size())}));
}

// Whether the test's tensors are on a real GPU, whose libm (CUDA's libdevice) is within a few
// ulps of glibc's instead of bitwise equal (the host-run CUDA device calls glibc).
bool on_gpu() {
  return testing_util::test_device().is_cuda() && cuda::build_name().rfind("device", 0) == 0;
}

// Bitwise-equal doubles (NaN equals NaN, 0.0 differs from -0.0), or within `ulps` (finite).
void expect_bits(const Tensor& got, const std::vector<double>& want, const std::string& what,
                 int64_t ulps = 0) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool near =
        ulps > 0 && std::isfinite(want[i]) && std::isfinite(g[i]) &&
        std::abs(g[i] - want[i]) <= ulps * std::abs(std::nextafter(want[i], kInf) - want[i]);
    const bool same = (std::isnan(g[i]) && std::isnan(want[i])) || near ||
                      (g[i] == want[i] && std::signbit(g[i]) == std::signbit(want[i]));
    EXPECT_TRUE(same) << what << " element " << i << ": " << g[i] << " vs " << want[i];
  }
}

const std::vector<double> kSpecial = {0.0,  -0.0,   0.5,   -0.5, 1.5,   -1.5, 2.5,   -2.5, 3.7,
                                      -3.7, 1e-300, 1e300, 7.0,  -7.25, kInf, -kInf, kNan};

TEST(MathOps, UnaryValuesAreStdsPerElement) {
  const Tensor x = f64(kSpecial);
  struct Case {
    const char* name;
    Tensor (Tensor::*fn)() const;
    double (*want)(double);
  };
  const Case cases[] = {
      {"rsqrt", &Tensor::rsqrt, [](double v) { return 1.0 / std::sqrt(v); }},
      {"exp2", &Tensor::exp2, [](double v) { return std::exp2(v); }},
      {"expm1", &Tensor::expm1, [](double v) { return std::expm1(v); }},
      {"log1p", &Tensor::log1p, [](double v) { return std::log1p(v); }},
      {"log2", &Tensor::log2, [](double v) { return std::log2(v); }},
      {"log10", &Tensor::log10, [](double v) { return std::log10(v); }},
      {"floor", &Tensor::floor, [](double v) { return std::floor(v); }},
      {"ceil", &Tensor::ceil, [](double v) { return std::ceil(v); }},
      {"trunc", &Tensor::trunc, [](double v) { return std::trunc(v); }},
      {"frac", &Tensor::frac, [](double v) { return v - std::trunc(v); }},
      {"sign", &Tensor::sign,
       [](double v) { return v > 0   ? 1.0
                             : v < 0 ? -1.0
                                     : 0.0; }},  // 0 for NaN, as torch 1.13
  };
  for (const Case& c : cases) {
    std::vector<double> want;
    for (double v : kSpecial) want.push_back(c.want(v));
    // CUDA's exp2, expm1, log1p, log2, log10 are within 2 ulps of the exact value (CUDA C
    // Programming Guide, "Mathematical Functions"); the rest are exact everywhere.
    const std::string name = c.name;
    const bool libm =
        name == "exp2" || name == "expm1" || name == "log1p" || name == "log2" || name == "log10";
    expect_bits((x.*c.fn)(), want, c.name, libm && on_gpu() ? 4 : 0);
  }
  // round: half to even; decimals scale by 10^|decimals| first, as torch.
  expect_bits(f64({0.5, 1.5, 2.5, -2.5, 2.675, -0.4}).round(), {0, 2, 2, -2, 3, -0.0}, "round");
  expect_bits(f64({2.675, 1.25, -1.35}).round(1), {2.7, 1.2, -1.4}, "round(1)");
  expect_bits(f64({1250.0, 1350.0, -49.0}).round(-2), {1200, 1400, -0.0}, "round(-2)");
  // nan_to_num: the defaults are 0 and the dtype's extremes.
  const double big = std::numeric_limits<double>::max();
  expect_bits(f64({kNan, kInf, -kInf, 2.0}).nan_to_num(), {0, big, -big, 2}, "nan_to_num");
  expect_bits(f64({kNan, kInf, -kInf}).nan_to_num(1.0, 2.0, 3.0), {1, 2, 3}, "nan_to_num args");
  Tensor f = dev(full({1}, kInf, kFloat32)).nan_to_num();
  EXPECT_EQ(values(f)[0], static_cast<double>(std::numeric_limits<float>::max()));
  // Classification: bool results for every dtype.
  const Tensor c = f64({1.0, kNan, kInf, -kInf});
  EXPECT_EQ(values(c.isnan()), (std::vector<double>{0, 1, 0, 0}));
  EXPECT_EQ(values(c.isinf()), (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(values(c.isfinite()), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(c.isnan().dtype(), kBool);
  EXPECT_EQ(values(i64({3, -2}).isfinite()), (std::vector<double>{1, 1}));
}

TEST(MathOps, DtypeRulesAsTorch) {
  const Tensor i = i64({3, -2});
  const Tensor b = dev(tensor({true, false}, kBool));
  EXPECT_EQ(i.rsqrt().dtype(), kFloat32);  // float-only ops compute integers in float32
  EXPECT_EQ(i.floor().dtype(), kInt64);    // rounding passes integers through
  EXPECT_EQ(values(i.round()), (std::vector<double>{3, -2}));
  EXPECT_EQ(i.sign().dtype(), kInt64);
  EXPECT_EQ(b.sign().dtype(), kBool);
  EXPECT_EQ(values(i.bitwise_not()), (std::vector<double>{-4, 1}));
  EXPECT_EQ(values(b.bitwise_not()), (std::vector<double>{0, 1}));
  EXPECT_THROW(b.floor(), DTypeError);
  EXPECT_THROW(i.frac(), DTypeError);
  EXPECT_THROW(i.round(1), DTypeError);
  EXPECT_THROW(f64({1.0}).bitwise_not(), DTypeError);
  EXPECT_THROW(remainder(b, b), DTypeError);
  EXPECT_THROW(bitwise_and(f64({1.0}), i), DTypeError);
  EXPECT_THROW(bitwise_left_shift(b, b), DTypeError);
  EXPECT_EQ(remainder(i, 2.5).dtype(), kFloat32);  // promotion as any binary op
  EXPECT_EQ(bitwise_and(i, b).dtype(), kInt64);
  EXPECT_EQ(logical_xor(f64({1.0, 0.0}), i).dtype(), kBool);
}

// Python's // and % on integers, from exact double arithmetic (small values).
TEST(MathOps, IntegerDivisionFollowsPython) {
  std::vector<int64_t> as, bs;
  for (int64_t a = -9; a <= 9; ++a) {
    for (int64_t b = -4; b <= 4; ++b) {
      if (b == 0) continue;
      as.push_back(a);
      bs.push_back(b);
    }
  }
  const Tensor a = i64(as), b = i64(bs);
  std::vector<double> floor_q, rem, fmod_r, trunc_q;
  for (size_t k = 0; k < as.size(); ++k) {
    const double q = std::floor(static_cast<double>(as[k]) / static_cast<double>(bs[k]));
    floor_q.push_back(q);
    rem.push_back(static_cast<double>(as[k]) - q * static_cast<double>(bs[k]));
    fmod_r.push_back(std::fmod(static_cast<double>(as[k]), static_cast<double>(bs[k])));
    trunc_q.push_back(std::trunc(static_cast<double>(as[k]) / static_cast<double>(bs[k])));
  }
  EXPECT_EQ(values(floor_divide(a, b)), floor_q);
  EXPECT_EQ(values(div(a, b, "floor")), floor_q);
  EXPECT_EQ(values(remainder(a, b)), rem);
  EXPECT_EQ(values(fmod(a, b)), fmod_r);
  EXPECT_EQ(values(div(a, b, "trunc")), trunc_q);
  EXPECT_EQ(floor_divide(a, b).dtype(), kInt64);
  // A zero divisor is refused before anything is written.
  Tensor x = i64({7, -7});
  const std::string message = error_of<ValueError>([&] { x.remainder_(i64({0, 2})); });
  EXPECT_NE(message.find("ZeroDivisionError"), std::string::npos) << message;
  EXPECT_THROW(x.floor_divide_(0), ValueError);
  EXPECT_THROW(fmod(x, i64({1, 0})), ValueError);
  EXPECT_THROW(div(x, i64({0, 1}), "trunc"), ValueError);
  EXPECT_THROW(div(x, i64({1, 1}), "round"), ValueError);
  EXPECT_EQ(values(x), (std::vector<double>{7, -7}));
  EXPECT_EQ(x.version(), 0u);
  EXPECT_EQ(values(x.remainder_(3)), (std::vector<double>{1, 2}));
  EXPECT_EQ(x.version(), 1u);
}

TEST(MathOps, FloatingDivisionFollowsPython) {
  const Tensor a = f64({5.0, -5.0, 5.0, -5.0, 0.5, 7.5, 1.0, -1.0, 0.0});
  const Tensor b = f64({3.0, 3.0, -3.0, -3.0, 0.1, 2.5, 0.0, 0.0, -2.0});
  expect_bits(floor_divide(a, b), {1, -2, -2, 1, 4, 3, kInf, -kInf, -0.0}, "floor_divide");
  expect_bits(remainder(a, b), {2, 1, -1, -2, std::fmod(0.5, 0.1), 0, kNan, kNan, 0.0},
              "remainder");
  expect_bits(fmod(a, b), {2, -2, 2, -2, std::fmod(0.5, 0.1), 0, kNan, kNan, 0.0}, "fmod");
  expect_bits(div(a, b, "trunc"), {1, -1, -1, 1, 5, 3, kInf, -kInf, -0.0}, "trunc");
}

TEST(MathOps, BitsAndShifts) {
  const Tensor a = i64({12, -12, 5, -1, 1});
  const Tensor b = i64({10, 3, 1, 63, 64});
  EXPECT_EQ(values(bitwise_and(a, b)), (std::vector<double>{8, 0, 1, 63, 0}));
  EXPECT_EQ(values(bitwise_or(a, b)), (std::vector<double>{14, -9, 5, -1, 65}));
  EXPECT_EQ(values(bitwise_xor(a, b)), (std::vector<double>{6, -9, 4, -64, 65}));
  // In range: as C; a count of 64 or more (or negative): 0 to the left, the sign to the right.
  const std::vector<double> left = values(bitwise_left_shift(a, i64({2, 2, 0, 63, 64})));
  EXPECT_EQ(left[0], 48);
  EXPECT_EQ(left[1], -48);
  EXPECT_EQ(left[2], 5);
  EXPECT_EQ(left[3], static_cast<double>(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(left[4], 0);
  EXPECT_EQ(values(bitwise_right_shift(a, i64({2, 2, 70, -1, 0}))),
            (std::vector<double>{3, -3, 0, -1, 1}));
  const Tensor t = dev(tensor({true, true, false}, kBool));
  const Tensor u = dev(tensor({true, false, false}, kBool));
  EXPECT_EQ(values(bitwise_xor(t, u)), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(bitwise_xor(t, u).dtype(), kBool);
  EXPECT_EQ(values(logical_xor(t, u)), (std::vector<double>{0, 1, 0}));
  Tensor x = i64({6, 3});
  x.bitwise_and_(i64({3, 3}));
  x.bitwise_left_shift_(i64({1, 1}));
  EXPECT_EQ(values(x), (std::vector<double>{4, 6}));
  EXPECT_EQ(x.version(), 2u);
}

TEST(MathOps, GradientsAtEveryArgument) {
  // Positive inputs for the logs and rsqrt.
  CHECK_GRADS([](const VariableList& in) { return in[0].rsqrt(); }, {leaf({2, 3}, 1, 0.5, 2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].exp2() + in[0].expm1(); },
              {strided_leaf({2, 3}, 2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].log1p() + in[0].log2() + in[0].log10(); },
              {leaf({3}, 3, 0.5, 2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].nan_to_num() * in[0]; }, {leaf({3}, 4)});
  CHECK_GRADS([](const VariableList& in) { return in[0].frac() * in[0]; },
              {leaf({4}, 5, 0.1, 0.9)});
  // The rounding ops: zero gradients (inputs away from the jumps).
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].floor() + in[0].ceil() + in[0].trunc() + in[0].round() + in[0].sign() +
               in[0].round(1) + in[0] * 0.5;
      },
      {leaf({3}, 6, 0.11, 0.14)});
  // remainder / fmod away from their jumps: self in (0.1, 0.9), other in (1.1, 1.9).
  CHECK_GRADS([](const VariableList& in) { return remainder(in[0], in[1]) * fmod(in[0], in[1]); },
              {leaf({3}, 7, 0.1, 0.9), leaf({3}, 8, 1.1, 1.9)});
  CHECK_GRADS([](const VariableList& in) { return remainder(in[0], 1.5) + fmod(in[0], -1.5); },
              {leaf({3}, 9, 0.1, 0.9)});
  CHECK_GRADS(
      [](const VariableList& in) {
        return div(in[0], in[1], "floor") + div(in[0], in[1], "trunc") + in[0] * in[1];
      },
      {leaf({3}, 10, 0.1, 0.9), leaf({3}, 11, 1.1, 1.9)});
}

TEST(MathOps, NodeNamesArePyTorchs) {
  const Tensor x = leaf({2}, 12, 0.5, 1.0);
  const Tensor y = leaf({2}, 13, 1.5, 2.0);
  const std::pair<Tensor, const char*> cases[] = {
      {x.rsqrt(), "RsqrtBackward0"},
      {x.exp2(), "Exp2Backward0"},
      {x.expm1(), "Expm1Backward0"},
      {x.log1p(), "Log1PBackward0"},
      {x.log2(), "Log2Backward0"},
      {x.log10(), "Log10Backward0"},
      {x.sign(), "SignBackward0"},
      {x.floor(), "FloorBackward0"},
      {x.ceil(), "CeilBackward0"},
      {x.round(), "RoundBackward0"},
      {x.round(2), "RoundBackward1"},
      {x.trunc(), "TruncBackward0"},
      {x.frac(), "FracBackward0"},
      {x.nan_to_num(), "NanToNumBackward0"},
      {remainder(x, y), "RemainderBackward1"},
      {remainder(x, 2), "RemainderBackward0"},
      {fmod(x, y), "FmodBackward1"},
      {fmod(x, 2), "FmodBackward0"},
      {div(x, y, "floor"), "DivBackward2"},
      {div(x, 2, "trunc"), "DivBackward3"},
  };
  for (const auto& [t, name] : cases) EXPECT_STREQ(t.grad_fn()->name(), name);
}

TEST(MathOps, InPlaceFormsBumpOnceAndNameTheWrite) {
  const std::vector<std::pair<const char*, std::function<void(Tensor&)>>> writes = {
      {"floor_", [](Tensor& y) { y.floor_(); }},
      {"round_", [](Tensor& y) { y.round_(1); }},
      {"sqrt_", [](Tensor& y) { y.sqrt_(); }},
      {"abs_", [](Tensor& y) { y.abs_(); }},
      {"remainder_",
       [](Tensor& y) {
         y.remainder_(f64({0.7, 0.7, 0.7}));
       }},
      {"fmod_", [](Tensor& y) { y.fmod_(0.7); }},
      {"div_", [](Tensor& y) { y.div_(2.0, "floor"); }},
      {"nan_to_num_", [](Tensor& y) { y.nan_to_num_(); }},
  };
  for (const auto& [op, write] : writes) {
    Tensor x = leaf({3}, 14, 0.5, 1.0);
    Tensor y = x.exp();
    Tensor z = y * y;  // saves y
    write(y);
    EXPECT_EQ(y.version(), 1u) << op;
    const std::string message = error_of([&] { z.sum().backward(); });
    EXPECT_NE(message.find(op), std::string::npos) << message;
    EXPECT_NE(message.find("math_ops_test.cc"), std::string::npos) << message;
  }
  // Differentiable in place: the gradient of remainder_ and frac_ through a non-leaf.
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.remainder_(in[1]);
        h.frac_();
        return h;
      },
      {leaf({3}, 15, 0.1, 0.9), leaf({3}, 16, 1.1, 1.9)});
}

}  // namespace
}  // namespace mutagrad
