// Printing matches PyTorch 1.13's repr. Each expected string is `repr(t)` from PyTorch for the
// same values, with "dtype=torch.X" written "dtype=X".
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

template <typename T>
Tensor make(std::vector<T> values, IntArrayRef sizes) {
  return from_vector<T>(values, sizes);
}

template <typename T, typename Fn>
Tensor generate(int64_t n, IntArrayRef sizes, Fn fn) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = fn(i);
  return from_vector<T>(v, sizes);
}

TEST(Print, Float2d) {
  Tensor t = generate<float>(6, {2, 3}, [](int64_t i) { return static_cast<float>(i); });
  EXPECT_EQ(t.to_string(), R"(tensor([[0., 1., 2.],
        [3., 4., 5.]]))");
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), t.to_string());
}

TEST(Print, Integers) {
  EXPECT_EQ(make<int64_t>({0, 1, 2, 3, 4}, {5}).to_string(), "tensor([0, 1, 2, 3, 4])");
  EXPECT_EQ(make<int32_t>({1, -20, 300, 4}, {2, 2}).to_string(), R"(tensor([[  1, -20],
        [300,   4]], dtype=int32))");
}

TEST(Print, Bools) {
  EXPECT_EQ(make<bool>({true, false, true}, {3}).to_string(), "tensor([ True, False,  True])");
}

TEST(Print, ZeroDim) {
  EXPECT_EQ(scalar_tensor(3.5).to_string(), "tensor(3.5000)");
  EXPECT_EQ(scalar_tensor(-7).to_string(), "tensor(-7)");
  EXPECT_EQ(scalar_tensor(2.0, kFloat64).to_string(), "tensor(2., dtype=float64)");
}

TEST(Print, Empty) {
  EXPECT_EQ(zeros({0, 3}).to_string(), "tensor([], size=(0, 3))");
  EXPECT_EQ(zeros({0}, kInt64).to_string(), "tensor([], dtype=int64)");
  EXPECT_EQ(zeros({2, 0}, kFloat64).to_string(), "tensor([], size=(2, 0), dtype=float64)");
}

TEST(Print, FixedPointWithSigns) {
  EXPECT_EQ(make<double>({1.5, -2.25}, {2}).to_string(),
            "tensor([ 1.5000, -2.2500], dtype=float64)");
  EXPECT_EQ(make<float>({-1.25f, 3.0f, 0.5f}, {3}).to_string(),
            "tensor([-1.2500,  3.0000,  0.5000])");
  EXPECT_EQ(make<float>({0.0f, 0.0f, 0.0f}, {3}).to_string(), "tensor([0., 0., 0.])");
  EXPECT_EQ(make<float>({-0.0f, 1.0f}, {2}).to_string(), "tensor([-0., 1.])");
}

TEST(Print, ScientificNotation) {
  EXPECT_EQ(make<float>({1e-5f, 1.0f, 2.5f}, {3}).to_string(),
            "tensor([1.0000e-05, 1.0000e+00, 2.5000e+00])");
  EXPECT_EQ(make<float>({1e10f, 1.5f}, {2}).to_string(), "tensor([1.0000e+10, 1.5000e+00])");
  EXPECT_EQ(make<float>({1.0f, 5000.0f}, {2}).to_string(), "tensor([1.0000e+00, 5.0000e+03])");
  EXPECT_EQ(make<float>({1e9f, 2.0f}, {2}).to_string(), "tensor([1.0000e+09, 2.0000e+00])");
  EXPECT_EQ(make<float>({0.00015f, 0.12345f, 2.71828f}, {3}).to_string(),
            "tensor([1.5000e-04, 1.2345e-01, 2.7183e+00])");
}

TEST(Print, NonFinite) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(make<float>({nan, inf, -inf, 1.5f}, {4}).to_string(),
            "tensor([   nan,    inf,   -inf, 1.5000])");
  EXPECT_EQ(make<float>({-nan, 2.0f, -3.0f}, {3}).to_string(), "tensor([nan,  2., -3.])");
}

TEST(Print, ThreeDimensions) {
  Tensor t = generate<float>(12, {2, 3, 2}, [](int64_t i) { return static_cast<float>(i); });
  EXPECT_EQ(t.to_string(), R"(tensor([[[ 0.,  1.],
         [ 2.,  3.],
         [ 4.,  5.]],

        [[ 6.,  7.],
         [ 8.,  9.],
         [10., 11.]]]))");
}

TEST(Print, NonContiguousViewPrintsLogicalOrder) {
  Tensor t = generate<float>(6, {2, 3}, [](int64_t i) { return static_cast<float>(i); });
  EXPECT_EQ(native::t(t).to_string(), R"(tensor([[0., 3.],
        [1., 4.],
        [2., 5.]]))");
  EXPECT_EQ(native::select(native::t(t), 0, 1).to_string(), "tensor([1., 4.])");
}

TEST(Print, LongRowsWrapAt80Columns) {
  Tensor f = generate<float>(30, {30}, [](int64_t i) { return static_cast<float>(i) / 3.0f; });
  EXPECT_EQ(f.to_string(),
            R"(tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,
        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,
        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,
        9.0000, 9.3333, 9.6667]))");
  Tensor i = generate<int64_t>(40, {40}, [](int64_t k) { return k * 1000; });
  EXPECT_EQ(i.to_string(),
            R"(tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,
        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,
        20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000,
        30000, 31000, 32000, 33000, 34000, 35000, 36000, 37000, 38000, 39000]))");
}

TEST(Print, SummarizesAboveAThousandElements) {
  Tensor a = generate<int64_t>(2000, {2000}, [](int64_t i) { return i; });
  EXPECT_EQ(a.to_string(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  Tensor f = generate<float>(2000, {2000}, [](int64_t i) { return static_cast<float>(i) / 7.0f; });
  EXPECT_EQ(f.to_string(),
            R"(tensor([0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 2.8529e+02, 2.8543e+02,
        2.8557e+02]))");
}

TEST(Print, Summarizes2d) {
  Tensor t = generate<float>(10000, {100, 100}, [](int64_t i) { return static_cast<float>(i); });
  EXPECT_EQ(t.to_string(),
            R"(tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,
         9.9000e+01],
        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,
         1.9900e+02],
        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,
         2.9900e+02],
        ...,
        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, 9.7980e+03,
         9.7990e+03],
        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, 9.8980e+03,
         9.8990e+03],
        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, 9.9980e+03,
         9.9990e+03]]))");
}

TEST(Print, Summarizes3d) {
  Tensor t = generate<int64_t>(2400, {20, 10, 12}, [](int64_t i) { return i; });
  EXPECT_EQ(t.to_string(), R"(tensor([[[   0,    1,    2,  ...,    9,   10,   11],
         [  12,   13,   14,  ...,   21,   22,   23],
         [  24,   25,   26,  ...,   33,   34,   35],
         ...,
         [  84,   85,   86,  ...,   93,   94,   95],
         [  96,   97,   98,  ...,  105,  106,  107],
         [ 108,  109,  110,  ...,  117,  118,  119]],

        [[ 120,  121,  122,  ...,  129,  130,  131],
         [ 132,  133,  134,  ...,  141,  142,  143],
         [ 144,  145,  146,  ...,  153,  154,  155],
         ...,
         [ 204,  205,  206,  ...,  213,  214,  215],
         [ 216,  217,  218,  ...,  225,  226,  227],
         [ 228,  229,  230,  ...,  237,  238,  239]],

        [[ 240,  241,  242,  ...,  249,  250,  251],
         [ 252,  253,  254,  ...,  261,  262,  263],
         [ 264,  265,  266,  ...,  273,  274,  275],
         ...,
         [ 324,  325,  326,  ...,  333,  334,  335],
         [ 336,  337,  338,  ...,  345,  346,  347],
         [ 348,  349,  350,  ...,  357,  358,  359]],

        ...,

        [[2040, 2041, 2042,  ..., 2049, 2050, 2051],
         [2052, 2053, 2054,  ..., 2061, 2062, 2063],
         [2064, 2065, 2066,  ..., 2073, 2074, 2075],
         ...,
         [2124, 2125, 2126,  ..., 2133, 2134, 2135],
         [2136, 2137, 2138,  ..., 2145, 2146, 2147],
         [2148, 2149, 2150,  ..., 2157, 2158, 2159]],

        [[2160, 2161, 2162,  ..., 2169, 2170, 2171],
         [2172, 2173, 2174,  ..., 2181, 2182, 2183],
         [2184, 2185, 2186,  ..., 2193, 2194, 2195],
         ...,
         [2244, 2245, 2246,  ..., 2253, 2254, 2255],
         [2256, 2257, 2258,  ..., 2265, 2266, 2267],
         [2268, 2269, 2270,  ..., 2277, 2278, 2279]],

        [[2280, 2281, 2282,  ..., 2289, 2290, 2291],
         [2292, 2293, 2294,  ..., 2301, 2302, 2303],
         [2304, 2305, 2306,  ..., 2313, 2314, 2315],
         ...,
         [2364, 2365, 2366,  ..., 2373, 2374, 2375],
         [2376, 2377, 2378,  ..., 2385, 2386, 2387],
         [2388, 2389, 2390,  ..., 2397, 2398, 2399]]]))");
}

// Stands in for autograd/'s metadata: printing only asks these two questions.
class FakeAutogradMeta : public AutogradMetaInterface {
 public:
  FakeAutogradMeta(bool requires_grad, std::string grad_fn)
      : requires_grad_(requires_grad), grad_fn_(std::move(grad_fn)) {}
  bool requires_grad() const override { return requires_grad_; }
  std::string grad_fn_name() const override { return grad_fn_; }

 private:
  bool requires_grad_;
  std::string grad_fn_;
};

Tensor with_meta(Tensor t, bool requires_grad, const std::string& grad_fn) {
  t.unsafe_impl()->set_autograd_meta(std::make_unique<FakeAutogradMeta>(requires_grad, grad_fn));
  return t;
}

TEST(Print, AutogradSuffixes) {
  EXPECT_EQ(with_meta(make<float>({1, 2}, {2}), true, "").to_string(),
            "tensor([1., 2.], requires_grad=True)");
  EXPECT_EQ(with_meta(make<float>({2, 4}, {2}), true, "MulBackward0").to_string(),
            "tensor([2., 4.], grad_fn=<MulBackward0>)");
  EXPECT_EQ(with_meta(make<double>({2, 4, 6, 8}, {2, 2}), true, "MulBackward0").to_string(),
            R"(tensor([[2., 4.],
        [6., 8.]], dtype=float64, grad_fn=<MulBackward0>))");
  // A leaf that does not require grad prints nothing extra.
  EXPECT_EQ(with_meta(make<float>({1, 2}, {2}), false, "").to_string(), "tensor([1., 2.])");
}

TEST(Print, SuffixMovesToItsOwnLineWhenTooLong) {
  Tensor t = generate<float>(16, {16}, [](int64_t i) { return static_cast<float>(i) * 1.5f; });
  EXPECT_EQ(with_meta(t, true, "MulBackward0").to_string(),
            R"(tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,
        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000],
       grad_fn=<MulBackward0>))");
}

TEST(Print, UndefinedTensor) { EXPECT_EQ(Tensor().to_string(), "tensor(undefined)"); }

}  // namespace
}  // namespace mutagrad
