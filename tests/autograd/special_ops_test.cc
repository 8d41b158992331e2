// The special functions and the in-place forms of the trigonometric family: tan, erf, erfinv,
// lgamma, digamma, polygamma, reciprocal, square and atan2 against std:: and known values,
// torch's dtype rules, gradcheck + gradgradcheck (lgamma and polygamma to every order through
// the next op of the family), PyTorch's node names, and sin_, cos_, tan_, erf_, ... through the
// mutation engine (one bump, the write named in the stale-tensor error, history through views).
// Runs on the CPU and, as special_ops_test_cuda, on the CUDA device.
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
constexpr double kPi = 3.14159265358979323846;
constexpr double kEulerGamma = 0.57721566490153286061;

Tensor f64(const std::vector<double>& v) {
  return dev(from_vector(v, {static_cast<int64_t>(v.size())}));
}

// A real GPU's libm (CUDA's libdevice) is within a few ulps of glibc's; the host-run device and
// the CPU call glibc.
bool on_gpu() {
  return testing_util::test_device().is_cuda() && cuda::build_name().rfind("device", 0) == 0;
}

// Equal within a relative `tol` (NaN equals NaN; infinities must match exactly).
void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what,
                   double tol = 1e-15) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(g[i]) : g[i] == want[i])
          << what << " element " << i << ": " << g[i] << " vs " << want[i];
      continue;
    }
    EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " element " << i;
  }
}

const std::vector<double> kPoints = {-7.25, -2.5, -0.75, -1e-300, -0.0, 0.0, 1e-300, 0.25,  0.5,
                                     1.0,   1.5,  2.0,   3.7,     10.0, 1e3, kInf,   -kInf, kNan};

TEST(SpecialOps, TanErfLgammaAreStdPerElement) {
  const Tensor x = f64(kPoints);
  struct Case {
    const char* name;
    Tensor (Tensor::*fn)() const;
    double (*want)(double);
  };
  const Case cases[] = {
      {"tan", &Tensor::tan, [](double v) { return std::tan(v); }},
      {"erf", &Tensor::erf, [](double v) { return std::erf(v); }},
      {"lgamma", &Tensor::lgamma, [](double v) { return std::lgamma(v); }},
      {"reciprocal", &Tensor::reciprocal, [](double v) { return 1.0 / v; }},
  };
  for (const Case& c : cases) {
    std::vector<double> want;
    for (double v : kPoints) want.push_back(c.want(v));
    // Bitwise std:: on the CPU and the host-run device; a few ulps on a GPU's libdevice.
    expect_values((x.*c.fn)(), want, c.name, on_gpu() ? 1e-14 : 0.0);
  }
  // The sign of zero: 1 / -0.0 is -inf, tan(-0.0) is -0.0.
  EXPECT_TRUE(std::signbit(values(f64({-0.0}).tan())[0]));
  EXPECT_EQ(values(f64({-0.0}).reciprocal())[0], -kInf);
}

TEST(SpecialOps, ErfinvInvertsErf) {
  // erfinv(erf(x)) == x to a few ulps across the central and the tail ranges.
  std::vector<double> xs, ys;
  // (Beyond |x| = 3.5, erf(x) is within 1e-6 of +-1 and its rounding alone moves erfinv.)
  for (double x = -3.5; x <= 3.5; x += 0.3125) {
    xs.push_back(x);
    ys.push_back(std::erf(x));
  }
  expect_values(f64(ys).erfinv(), xs, "erfinv(erf(x))", 1e-9);
  expect_values(f64({0.5, -0.5, 0.9, 0.999, 0.0, -0.0}).erfinv(),
                {0.47693627620446987338, -0.47693627620446987338, 1.1630871536766741628,
                 2.3267537655135244939, 0.0, -0.0},
                "erfinv known values", 1e-14);
  expect_values(f64({1.0, -1.0, 1.5, -2.0, kNan, kInf}).erfinv(),
                {kInf, -kInf, kNan, kNan, kNan, kNan}, "erfinv edges");
  EXPECT_TRUE(std::signbit(values(f64({-0.0}).erfinv())[0]));
  // float32 computes in float32 and agrees with the float64 values to float32's precision.
  const Tensor f = native::to(f64({0.25, -0.75, 0.95}), kFloat32).erfinv();
  EXPECT_EQ(f.dtype(), kFloat32);
  expect_values(f, values(f64({0.25, -0.75, 0.95}).erfinv()), "erfinv float32", 1e-6);
}

TEST(SpecialOps, DigammaAndPolygammaKnownValues) {
  // psi(1) = -gamma, psi(1/2) = -gamma - 2 ln 2, psi(x + 1) = psi(x) + 1/x, reflection below 0.
  expect_values(f64({1.0, 0.5, 2.0, 10.0, 0.0, -0.0, -1.0, -3.0, kInf, -kInf, kNan}).digamma(),
                {-kEulerGamma, -kEulerGamma - 2 * std::log(2.0), 1 - kEulerGamma,
                 2.2517525890667211076, -kInf, kInf, kNan, kNan, kInf, kNan, kNan},
                "digamma", 1e-14);
  expect_values(f64({-0.5, -2.5, 1e-8, 123.456}).digamma(),
                {0.03648997397857652056, 1.1031566406452431872, -100000000.57721564636,
                 4.8118293238289854123},
                "digamma reflection and large", 1e-13);
  // polygamma(1, 1) = pi^2 / 6, polygamma(2, 1) = -2 zeta(3), polygamma(3, 1/2) = pi^4.
  expect_values(f64({1.0, 0.5, 20.0}).polygamma(1),
                {kPi * kPi / 6, kPi * kPi / 2, 0.051270822935203119832}, "trigamma", 1e-14);
  expect_values(f64({1.0}).polygamma(2), {-2.4041138063191885708}, "polygamma(2, 1)", 1e-14);
  expect_values(f64({0.5}).polygamma(3), {kPi * kPi * kPi * kPi}, "polygamma(3, 0.5)", 1e-14);
  expect_values(f64({-0.5}).polygamma(1), {8.9348022005446793094}, "trigamma(-0.5)", 1e-13);
  expect_values(f64({0.0, -2.0, kInf, kNan}).polygamma(1), {kInf, kInf, 0.0, kNan},
                "trigamma edges");
  expect_values(f64({2.0}).polygamma(0), values(f64({2.0}).digamma()), "polygamma(0) = digamma");
  EXPECT_THROW(f64({1.0}).polygamma(-1), ValueError);
}

TEST(SpecialOps, Atan2TakesTheQuadrantAndSignedZeros) {
  const std::vector<double> y = {1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, -0.0, kInf, 2.0, kNan};
  const std::vector<double> x = {1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, kInf, 0.0, 1.0};
  std::vector<double> want;
  for (size_t i = 0; i < y.size(); ++i) want.push_back(std::atan2(y[i], x[i]));
  const Tensor r = atan2(f64(y), f64(x));
  expect_values(r, want, "atan2", on_gpu() ? 1e-15 : 0.0);
  for (size_t i = 0; i + 1 < want.size(); ++i) {
    EXPECT_EQ(std::signbit(values(r)[i]), std::signbit(want[i])) << "element " << i;
  }
  // Broadcasting, and integers compute in float32 as torch.
  const Tensor i = dev(from_vector(std::vector<int64_t>{1, -1}, {2}));
  EXPECT_EQ(atan2(i, i).dtype(), kFloat32);
  EXPECT_EQ(atan2(f64({1.0}), dev(ones({2, 3}, kFloat64))).sizes(), IntArrayRef({2, 3}));
}

TEST(SpecialOps, DtypeRulesAsTorch) {
  const Tensor i = dev(from_vector(std::vector<int64_t>{3, -2}, {2}));
  const Tensor b = dev(tensor({true, false}, kBool));
  for (const Tensor& t : {i.tan(), i.erf(), i.erfinv(), i.lgamma(), i.digamma(), i.polygamma(1),
                          i.reciprocal(), b.erf(), b.reciprocal()}) {
    EXPECT_EQ(t.dtype(), kFloat32);
  }
  EXPECT_EQ(values(i.reciprocal()), (std::vector<double>{1.0f / 3.0f, -0.5}));
  // square is pow(x, 2): integers stay integers, bool becomes int64 (torch's promotion).
  EXPECT_EQ(i.square().dtype(), kInt64);
  EXPECT_EQ(values(i.square()), (std::vector<double>{9, 4}));
  EXPECT_EQ(b.square().dtype(), kInt64);
  // float16 / bfloat16 compute in float32 and round once.
  const Tensor h = native::to(f64({0.5, 1.5}), kFloat16);
  EXPECT_EQ(h.lgamma().dtype(), kFloat16);
  expect_values(h.lgamma(), {std::lgamma(0.5), std::lgamma(1.5)}, "lgamma float16", 1e-3);
  // An in-place form whose result type does not fit the tensor: refused, nothing changes.
  for (const auto& write : std::vector<std::function<void(Tensor&)>>{
           [](Tensor& t) { t.sin_(); }, [](Tensor& t) { t.tan_(); }, [](Tensor& t) { t.erfinv_(); },
           [](Tensor& t) { t.reciprocal_(); }, [](Tensor& t) { t.lgamma_(); },
           [](Tensor& t) { t.polygamma_(1); },
           [](Tensor& t) {
             t.atan2_(f64({1.0, 1.0}));
           }}) {
    Tensor x = dev(from_vector(std::vector<int64_t>{3, -2}, {2}));
    EXPECT_THROW(write(x), DTypeError);
    EXPECT_EQ(values(x), (std::vector<double>{3, -2}));
    EXPECT_EQ(x.version(), 0u);
  }
  Tensor s = dev(from_vector(std::vector<int64_t>{3, -2}, {2}));
  s.square_();  // integer pow_ is fine
  EXPECT_EQ(values(s), (std::vector<double>{9, 4}));
  EXPECT_EQ(s.version(), 1u);
}

TEST(SpecialOps, GradientsToSecondOrder) {
  CHECK_GRADS([](const VariableList& in) { return in[0].tan(); }, {leaf({2, 3}, 1, -1.2, 1.2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].erf() * in[0]; },
              {strided_leaf({2, 3}, 2, -2, 2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].erfinv(); }, {leaf({5}, 3, -0.9, 0.9)});
  CHECK_GRADS([](const VariableList& in) { return in[0].lgamma(); }, {leaf({4}, 4, 0.3, 4)});
  CHECK_GRADS([](const VariableList& in) { return in[0].lgamma(); }, {leaf({3}, 5, -2.9, -2.1)});
  CHECK_GRADS([](const VariableList& in) { return in[0].digamma(); },
              {strided_leaf({2, 2}, 6, 0.5, 3)});
  CHECK_GRADS([](const VariableList& in) { return in[0].polygamma(1) + in[0].polygamma(2); },
              {leaf({3}, 7, 0.5, 3)});
  CHECK_GRADS([](const VariableList& in) { return in[0].reciprocal(); }, {leaf({4}, 8, 0.5, 2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].square(); }, {strided_leaf({3, 2}, 9)});
  CHECK_GRADS([](const VariableList& in) { return atan2(in[0], in[1]); },
              {leaf({2, 3}, 10), leaf({3}, 11, 0.5, 1.5)});
}

TEST(SpecialOps, NodeNamesArePyTorchs) {
  const Tensor x = leaf({2}, 12, 0.5, 0.9);
  const std::pair<Tensor, const char*> cases[] = {
      {x.tan(), "TanBackward0"},
      {x.erf(), "ErfBackward0"},
      {x.erfinv(), "ErfinvBackward0"},
      {x.lgamma(), "LgammaBackward0"},
      {x.digamma(), "DigammaBackward0"},
      {x.polygamma(2), "PolygammaBackward0"},
      {x.reciprocal(), "ReciprocalBackward0"},
      {x.square(), "PowBackward0"},
      {atan2(x, x), "Atan2Backward0"},
  };
  for (const auto& [t, name] : cases) EXPECT_STREQ(t.grad_fn()->name(), name);
}

struct InPlace {
  const char* op;
  std::function<void(Tensor&)> write;
  std::function<Tensor(const Tensor&)> out_of_place;
  const char* node;
};

std::vector<InPlace> in_place_forms() {
  return {
      {"sin_", [](Tensor& t) { t.sin_(); }, [](const Tensor& t) { return t.sin(); },
       "SinBackward0"},
      {"cos_", [](Tensor& t) { t.cos_(); }, [](const Tensor& t) { return t.cos(); },
       "CosBackward0"},
      {"tan_", [](Tensor& t) { t.tan_(); }, [](const Tensor& t) { return t.tan(); },
       "TanBackward0"},
      {"erf_", [](Tensor& t) { t.erf_(); }, [](const Tensor& t) { return t.erf(); },
       "ErfBackward0"},
      {"erfinv_", [](Tensor& t) { t.erfinv_(); }, [](const Tensor& t) { return t.erfinv(); },
       "ErfinvBackward0"},
      {"lgamma_", [](Tensor& t) { t.lgamma_(); }, [](const Tensor& t) { return t.lgamma(); },
       "LgammaBackward0"},
      {"digamma_", [](Tensor& t) { t.digamma_(); }, [](const Tensor& t) { return t.digamma(); },
       "DigammaBackward0"},
      {"polygamma_", [](Tensor& t) { t.polygamma_(1); },
       [](const Tensor& t) { return t.polygamma(1); }, "PolygammaBackward1"},
      {"reciprocal_", [](Tensor& t) { t.reciprocal_(); },
       [](const Tensor& t) { return t.reciprocal(); }, "ReciprocalBackward0"},
      {"square_", [](Tensor& t) { t.square_(); }, [](const Tensor& t) { return t.square(); },
       "PowBackward0"},
      {"atan2_",
       [](Tensor& t) {
         t.atan2_(f64({0.5, -2.0, 1.0}));
       },
       [](const Tensor& t) {
         return atan2(t, f64({0.5, -2.0, 1.0}));
       },
       "Atan2Backward0"},
      {"clip_", [](Tensor& t) { t.clip_(0.3, 0.6); },
       [](const Tensor& t) { return t.clamp(0.3, 0.6); }, "ClampBackward1"},
  };
}

TEST(SpecialOps, InPlaceFormsMatchTheOutOfPlaceOnes) {
  for (const InPlace& f : in_place_forms()) {
    SCOPED_TRACE(f.op);
    // Values, one bump, the node, and the gradient through a non-leaf.
    Tensor x = leaf({3}, 20, 0.2, 0.8);
    Tensor h = x * 1.0;
    f.write(h);
    EXPECT_EQ(h.version(), 1u);
    EXPECT_STREQ(h.grad_fn()->name(), f.node);
    const Tensor want = f.out_of_place(x);
    expect_values(h, values(want), f.op, 0.0);
    h.sum().backward();
    const Tensor g = x.grad();
    x.set_grad(Tensor());
    want.sum().backward();
    expect_values(g, values(x.grad()), f.op, 1e-15);
    // In no_grad mode on a leaf: allowed, still one bump.
    Tensor leaf_x = leaf({3}, 21, 0.2, 0.8);
    {
      NoGradGuard no_grad;
      f.write(leaf_x);
    }
    EXPECT_EQ(leaf_x.version(), 1u);
    // With grad: a leaf that requires grad is refused, unchanged.
    Tensor y = leaf({3}, 22, 0.2, 0.8);
    EXPECT_THROW(f.write(y), autograd::AutogradError);
    EXPECT_EQ(y.version(), 0u);
  }
}

TEST(SpecialOps, InPlaceFormsNameTheWriteInTheStaleError) {
  for (const InPlace& f : in_place_forms()) {
    Tensor x = leaf({3}, 23, 0.2, 0.8);
    Tensor y = x * 1.0;
    Tensor z = y * y;  // saves y
    f.write(y);
    const std::string message = error_of([&] { z.sum().backward(); });
    EXPECT_NE(message.find(f.op), std::string::npos) << message;
    EXPECT_NE(message.find("special_ops_test.cc"), std::string::npos) << message;
  }
}

TEST(SpecialOps, InPlaceThroughAViewRebasesTheBase) {
  // base[1:] written in place: base's grad_fn is CopySlices, and the gradient of the leaf is
  // the out-of-place composition's, to second order.
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor base = in[0] * 1.0;
        Tensor v = base.slice(0, 1, std::nullopt);
        v.erf_();  // saves its input (a copy)
        v.atan2_(in[1]);
        v.lgamma_();
        v.tan_();  // saves its result: the last write
        return base;
      },
      {leaf({4}, 24, 0.2, 0.8), leaf({3}, 25, 0.5, 1.5)});
  // tan_ saves its result: a later write to it makes backward stale, as in torch.
  {
    Tensor h = leaf({3}, 27, 0.2, 0.8) * 1.0;
    h.tan_();
    h.erf_();
    const std::string message = error_of([&] { h.sum().backward(); });
    EXPECT_NE(message.find("TanBackward0"), std::string::npos) << message;
    EXPECT_NE(message.find("erf_"), std::string::npos) << message;
  }
  Tensor x = leaf({4}, 26, 0.2, 0.8);
  Tensor base = x * 1.0;
  Tensor v = base.slice(0, 1, std::nullopt);
  v.reciprocal_();
  EXPECT_STREQ(base.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(base.version(), 1u);
  // The view's grad_fn: its own view op replayed on the base (Note [Regenerating a view's
  // grad_fn]).
  EXPECT_STREQ(v.grad_fn()->name(), "SliceBackward0");
  // atan2_ with other aliasing self reads the values before the write.
  Tensor a = f64({1.0, -1.0, 0.5});
  a.atan2_(a);
  expect_values(a, {std::atan2(1.0, 1.0), std::atan2(-1.0, -1.0), std::atan2(0.5, 0.5)},
                "a.atan2_(a)", on_gpu() ? 1e-15 : 0.0);
}

}  // namespace
}  // namespace mutagrad
