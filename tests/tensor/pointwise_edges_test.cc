// Edge values through every floating element-wise kernel (tensor/cpu/pointwise.cc), against
// the scalar std:: reference computed here: +-inf, nan, +-0, subnormals, the overflow and
// underflow thresholds of each op, in every SIMD lane and in the scalar tail of contiguous runs
// of several lengths and alignments, in place, through strided inputs and broadcast scalars,
// and across the threads of a large op. See Note [Vectorized transcendental edges].
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

// Lengths of the contiguous runs: every SIMD width up to 16 lanes, with and without a tail.
const int64_t kLengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 33};
// Where a run starts, in elements past a 64-byte boundary (aligned, and not).
const int64_t kOffsets[] = {0, 1};
// Relative tolerance, in epsilons, of the ops computed by SIMD approximations (Eigen's exp, log,
// sin, cos, tanh are not correctly rounded in the normal range: at most 3.5 eps measured).
constexpr double kApproxEps = 4;
// std::pow against x*x, 1/x, sqrt: glibc's pow is not correctly rounded in every case.
constexpr double kPowEps = 1;

template <typename T>
std::string dtype_label() {
  return std::is_same_v<T, float> ? "float32" : "float64";
}

// Ordinary values, and the thresholds (exp overflows, leaves the normal range, rounds to
// 0 near 88.7, -87.3, -103.9 in float and 709.8, -708.4, -745.2 in double).
const double kEdgeLiterals[] = {0.5,    1,     1.5,    2,     3.1415926535897932,
                                0.1,    1e-5,  4e-4,   10,    100,
                                87.3,   88.7,  88.73,  103.9, 104,
                                708.4,  709.8, 745.2,  746,   1e-40,
                                1e-310, 1e-30, 1e-300, 1e4,   1e6,
                                1e10,   1e20,  1e30,   1e38,  1e300};

// The edge values of T: specials, limits, each op's thresholds and their neighbours (both
// signs), and ordinary values.
template <typename T>
std::vector<T> edge_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {L::infinity(), L::quiet_NaN(), T(0), L::denorm_min(), L::min(), L::max()};
  for (double d : kEdgeLiterals) {
    if (d <= L::max()) v.push_back(static_cast<T>(d));  // a float out of range would be UB
  }
  // exp overflows, leaves the normal range, rounds to 0 past the first four (sigmoid mirrors
  // them); then where pointwise.cc's VecDomains end and where Eigen's approximations change.
  const T thresholds[] = {std::log(L::max()),
                          std::log(L::min()),
                          std::log(L::denorm_min()),
                          std::log(L::denorm_min()) - std::log(T(2)),
                          L::min() * 2,
                          T(87),
                          T(708),
                          T(65536),
                          T(7.90531110763549805),  // Eigen's float tanh clamps here
                          T(9.01),                 // float tanh rounds to 1
                          T(19.07),                // double tanh rounds to 1
                          T(71476.0625),           // Eigen's float sin/cos fast-path limits
                          T(117435.992),
                          T(104),  // exp and sigmoid are +0 below minus these in the vector
                          T(746),  // pass (Note [Exact zeros in the vector pass])
                          T(89),
                          T(710)};
  for (T t : thresholds) {
    v.push_back(t);
    v.push_back(std::nextafter(t, L::infinity()));
    v.push_back(std::nextafter(t, -L::infinity()));
  }
  const size_t positive = v.size();
  for (size_t i = 0; i < positive; ++i) v.push_back(-v[i]);
  return v;
}

// got matches want: nan for nan; infinities and zeros exactly, sign included; finite values
// within `eps` epsilons relative, or a few denorm_min absolute (subnormal results).
template <typename T>
bool matches(T got, T want, double eps) {
  if constexpr (std::is_same_v<T, bool>) {
    return got == want;
  } else {
    if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
    if (want == 0 || got == 0 || std::isinf(want) || std::isinf(got)) {
      return got == want && std::signbit(got) == std::signbit(want);
    }
    const double diff = std::abs(static_cast<double>(got) - static_cast<double>(want));
    return diff <= eps * std::numeric_limits<T>::epsilon() * std::abs(static_cast<double>(want)) ||
           diff <= 4 * static_cast<double>(std::numeric_limits<T>::denorm_min());
  }
}

// A result at an infinite input is a limit (exp(-inf) = 0, tanh(inf) = 1): exact.
template <typename T>
double exact_at_inf(double eps, T x) {
  return std::isinf(x) ? 0 : eps;
}

template <typename T>
std::string show(T v) {
  std::ostringstream s;
  s.precision(std::numeric_limits<T>::max_digits10);
  s << +v;
  return s.str();
}

// Counts the mismatches of one op and dtype, keeps the first few, and reports them at the end.
class Mismatches {
 public:
  explicit Mismatches(std::string what) : what_(std::move(what)) {}
  ~Mismatches() { EXPECT_EQ(count_, 0) << what_ << ": " << count_ << " wrong\n" << first_.str(); }
  // `input()` names the operands; it is only called for a mismatch.
  template <typename Out, typename Input>
  void check(Out got, Out want, double eps, const Input& input, const char* layout) {
    if (matches(got, want, eps)) return;
    if (++count_ <= 12) {
      first_ << "  " << layout << ": f(" << input() << ") = " << show(got) << ", want "
             << show(want) << "\n";
    }
  }

 private:
  std::string what_;
  int64_t count_ = 0;
  std::ostringstream first_;
};

// Element i (row-major) of a 0-d, 1-d or 2-d tensor, through its strides.
int64_t position(const Tensor& t, int64_t i) {
  if (t.dim() == 0) return 0;
  if (t.dim() == 1) return i * t.strides()[0];
  return (i / t.sizes()[1]) * t.strides()[0] + (i % t.sizes()[1]) * t.strides()[1];
}
template <typename T>
T get(const Tensor& t, int64_t i) {
  return static_cast<const T*>(t.raw_data())[position(t, i)];
}
template <typename T>
void set(const Tensor& t, int64_t i, T v) {
  static_cast<T*>(t.raw_data())[position(t, i)] = v;
}

// A [rows, n] tensor over fresh storage whose rows are runs of n contiguous elements, each
// `offset` elements past a 64-byte boundary (the row pitch is a multiple of 64 bytes and the
// storage is 64-byte aligned): each row reaches the kernel as one run of n, aligned as a
// separate tensor of n elements would be. The padding holds `pad`.
template <typename T>
Tensor runs(int64_t rows, int64_t n, int64_t offset, T pad) {
  const int64_t pitch = (n + 16) / 16 * 16 + 16;
  const int64_t total = offset + rows * pitch;
  return strided_view(from_vector(std::vector<T>(total, pad), {total}), {rows, n}, {pitch, 1},
                      offset);
}

// Whether every storage element of a runs() tensor outside its elements still holds `pad`.
template <typename T>
bool padding_intact(const Tensor& t, T pad) {
  const int64_t rows = t.sizes()[0], n = t.sizes()[1], pitch = t.strides()[0];
  const T* base = static_cast<const T*>(t.raw_data()) - t.storage_offset();
  for (int64_t i = 0; i < t.storage_offset() + rows * pitch; ++i) {
    const int64_t k = i - t.storage_offset();
    const bool element = k >= 0 && k % pitch < n;
    if (!element && base[i] != pad) return false;
  }
  return true;
}

// Every value of `values` once, strided: every other element of a buffer of twice the length.
template <typename T>
Tensor strided(const std::vector<T>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  Tensor storage = from_vector(std::vector<T>(2 * n + 1, T(0.5)), {2 * n + 1});
  Tensor t = strided_view(storage, {n}, {2}, 1);
  for (int64_t i = 0; i < n; ++i) set<T>(t, i, values[i]);
  return t;
}

// Compares out[i] with ref(in[i]) for every element.
template <typename T, typename Out, typename Ref>
void expect_unary(Mismatches& m, const Tensor& in, const Tensor& out, const Ref& ref, double eps,
                  const char* layout) {
  ASSERT_EQ(in.numel(), out.numel());
  for (int64_t i = 0; i < in.numel(); ++i) {
    const T x = get<T>(in, i);
    m.check<Out>(
        get<Out>(out, i), ref(x), exact_at_inf(eps, x), [&] { return show(x); }, layout);
  }
}

// op(x) against ref(x) for every edge value x of T, in every layout. Out is the result's C++
// type (bool for logical_not).
template <typename T, typename Out, typename Ref>
void check_unary(const std::string& name, UnaryOp op, const UnaryArgs& args, const Ref& ref,
                 double eps) {
  const std::vector<T> edges = edge_values<T>();
  const int64_t e = static_cast<int64_t>(edges.size());
  Mismatches m(name + " " + dtype_label<T>());
  const T filler = T(0.5);
  const Out out_pad = Out(1);

  for (int64_t n : kLengths) {
    for (int64_t offset : kOffsets) {
      // Rows 0..n-1: one edge value at position p of ordinary values; row n: all of it.
      for (T v : edges) {
        Tensor in = runs<T>(n + 1, n, offset, T(0.5));
        for (int64_t p = 0; p < n; ++p) {
          for (int64_t k = 0; k < n; ++k) set<T>(in, p * n + k, k == p ? v : filler);
        }
        for (int64_t k = 0; k < n; ++k) set<T>(in, n * n + k, v);
        Tensor out = runs<Out>(n + 1, n, offset, out_pad);
        native::unary_out(op, out, in, args);
        expect_unary<T, Out>(m, in, out, ref, eps, "one value in a run of ordinary ones");
        EXPECT_TRUE(padding_intact(out, out_pad)) << name << " wrote outside its runs, n=" << n;
      }
      // Row j holds edges[(j + k) % e] at position k: every value in every lane, mixed.
      Tensor in = runs<T>(e, n, offset, T(0.5));
      for (int64_t j = 0; j < e; ++j) {
        for (int64_t k = 0; k < n; ++k) set<T>(in, j * n + k, edges[(j + k) % e]);
      }
      Tensor out = runs<Out>(e, n, offset, out_pad);
      native::unary_out(op, out, in, args);
      expect_unary<T, Out>(m, in, out, ref, eps, "mixed edge values");
    }
  }
  // Strided input: the kernel's non-contiguous loop.
  Tensor s = strided(edges);
  expect_unary<T, Out>(m, s, native::unary(op, s, args), ref, eps, "strided input");
  // Many elements: split across threads at arbitrary points.
  std::vector<T> many;
  while (many.size() < 40000) many.insert(many.end(), edges.begin(), edges.end());
  Tensor big = from_vector(many, {static_cast<int64_t>(many.size())});
  expect_unary<T, Out>(m, big, native::unary(op, big, args), ref, eps, "large, threaded");
  // In place (the output is the input).
  if constexpr (std::is_same_v<T, Out>) {
    auto in_place = [&](const std::vector<T>& values, const char* layout) {
      Tensor x = from_vector(values, {static_cast<int64_t>(values.size())});
      native::unary_out(op, x, x, args);
      for (int64_t i = 0; i < x.numel(); ++i) {
        m.check<Out>(
            get<Out>(x, i), ref(values[i]), exact_at_inf(eps, values[i]),
            [&] { return show(values[i]); }, layout);
      }
    };
    auto out_of_place = [&](const std::vector<T>& values, const char* layout) {
      Tensor x = from_vector(values, {static_cast<int64_t>(values.size())});
      expect_unary<T, Out>(m, x, native::unary(op, x, args), ref, eps, layout);
    };
    // Masked: every tenth element of a middle stretch is a mask's value (-inf; log: 0, which a
    // masked log or an entropy meets), then v, among ordinary values in [-8, 8) (log's in
    // (0, 8]); the kernels decide per block of 1,024 (kBlock in tensor/cpu/vec_kernels_impl.h;
    // a block's way is tried first on the next one): the first block holds no mask, two blocks
    // of the first mask come before the block where v starts, and the last block holds neither.
    const bool log_like = op == UnaryOp::kLog;
    const T first_mask = log_like ? T(0) : -std::numeric_limits<T>::infinity();
    for (T v : edges) {
      std::vector<T> values(7000);
      for (size_t i = 0; i < values.size(); ++i) {
        const bool masked = i >= 1100 && i < 5900 && i % 10 == 3;
        const T mask = i < 3500 ? first_mask : v;
        const double u = static_cast<double>(i * 37 % 101) / 101;
        values[i] = masked ? mask : static_cast<T>(log_like ? 1e-3 + 8.0 * u : -8.0 + 16.0 * u);
      }
      in_place(values, "masked, in place");
      out_of_place(values, "masked");
    }
    for (int64_t n : kLengths) {
      std::vector<T> values;
      for (int64_t k = 0; k < e + n; ++k) values.push_back(edges[k % e]);
      in_place(values, "in place");
    }
  }
}

UnaryArgs pow_args(double e) {
  UnaryArgs u;
  u.arg = e;
  u.has_arg = true;
  return u;
}

template <typename T>
void check_every_unary_op() {
  const double approx = kApproxEps;  // the Eigen-vectorized ops
  check_unary<T, T>(
      "neg", UnaryOp::kNeg, {}, [](T x) { return -x; }, 0);
  check_unary<T, T>(
      "abs", UnaryOp::kAbs, {}, [](T x) { return std::abs(x); }, 0);
  check_unary<T, T>(
      "exp", UnaryOp::kExp, {}, [](T x) { return std::exp(x); }, approx);
  check_unary<T, T>(
      "log", UnaryOp::kLog, {}, [](T x) { return std::log(x); }, approx);
  check_unary<T, T>(
      "sqrt", UnaryOp::kSqrt, {}, [](T x) { return std::sqrt(x); }, 0);
  check_unary<T, T>(
      "sin", UnaryOp::kSin, {}, [](T x) { return std::sin(x); }, approx);
  check_unary<T, T>(
      "cos", UnaryOp::kCos, {}, [](T x) { return std::cos(x); }, approx);
  check_unary<T, T>(
      "tanh", UnaryOp::kTanh, {}, [](T x) { return std::tanh(x); }, approx);
  check_unary<T, T>(
      "sigmoid", UnaryOp::kSigmoid, {}, [](T x) { return T(1) / (T(1) + std::exp(-x)); }, approx);
  // relu keeps nan and -0 (as torch).
  check_unary<T, T>(
      "relu", UnaryOp::kRelu, {}, [](T x) { return std::isnan(x) ? x : std::max(x, T(0)); }, 0);
  check_unary<T, bool>(
      "logical_not", UnaryOp::kLogicalNot, {}, [](T x) { return x == T(0); }, 0);
  // pow(x, 0.5) is sqrt(x), as torch defines it (std::pow differs at -0 and -inf).
  check_unary<T, T>(
      "pow 0.5", UnaryOp::kPowScalar, pow_args(0.5), [](T x) { return std::sqrt(x); }, 0);
  for (double e : {2.0, -1.0, 3.5, 1.0, 0.0, -2.0, 3.0, -0.5}) {
    check_unary<T, T>(
        "pow " + show(e), UnaryOp::kPowScalar, pow_args(e),
        [e](T x) { return std::pow(x, static_cast<T>(e)); }, kPowEps);
  }
  auto clamp_ref = [](std::optional<double> lo, std::optional<double> hi) {
    return [lo, hi](T x) {
      if (std::isnan(x)) return x;
      if (lo) x = std::max(x, static_cast<T>(*lo));
      if (hi) x = std::min(x, static_cast<T>(*hi));
      return x;
    };
  };
  const std::pair<std::optional<double>, std::optional<double>> bounds[] = {
      {-1.0, 2.0}, {0.0, std::nullopt}, {std::nullopt, 0.5}, {-88.0, 88.0}};
  for (const auto& [lo, hi] : bounds) {
    std::optional<Scalar> slo, shi;
    if (lo) slo = *lo;
    if (hi) shi = *hi;
    check_unary<T, T>("clamp", UnaryOp::kClamp, native::clamp_args(slo, shi, "clamp"),
                      clamp_ref(lo, hi), 0);
  }
}

TEST(PointwiseEdges, EveryUnaryOpFloat32) { check_every_unary_op<float>(); }
TEST(PointwiseEdges, EveryUnaryOpFloat64) { check_every_unary_op<double>(); }

// ---- Binary ---------------------------------------------------------------------------------

template <typename T, typename Out, typename Ref>
void expect_binary(Mismatches& m, const Tensor& a, const Tensor& b, const Tensor& out,
                   const Ref& ref, double eps, const char* layout) {
  ASSERT_EQ(a.numel(), out.numel());
  ASSERT_EQ(b.numel(), out.numel());
  for (int64_t i = 0; i < out.numel(); ++i) {
    const T x = get<T>(a, i), y = get<T>(b, i);
    m.check<Out>(
        get<Out>(out, i), ref(x, y), exact_at_inf(exact_at_inf(eps, x), y),
        [&] { return show(x) + ", " + show(y); }, layout);
  }
}

// op(x, y) against ref(x, y) for every pair of edge values of T, in every layout.
template <typename T, typename Out, typename Ref>
void check_binary(const std::string& name, BinaryOp op, const Ref& ref, double eps) {
  const std::vector<T> edges = edge_values<T>();
  const int64_t e = static_cast<int64_t>(edges.size());
  Mismatches m(name + " " + dtype_label<T>());
  const T filler = T(1.5);
  const Out out_pad = Out(1);

  // Every pair, contiguous and strided.
  std::vector<T> xs, ys;
  for (T x : edges) {
    for (T y : edges) {
      xs.push_back(x);
      ys.push_back(y);
    }
  }
  const int64_t pairs = static_cast<int64_t>(xs.size());
  Tensor a = from_vector(xs, {pairs}), b = from_vector(ys, {pairs});
  expect_binary<T, Out>(m, a, b, native::binary(op, a, b), ref, eps, "every pair");
  Tensor as = strided(xs), bs = strided(ys);
  expect_binary<T, Out>(m, as, bs, native::binary(op, as, bs), ref, eps, "every pair, strided");
  // A broadcast scalar on either side: the kernel's scalar-operand loops.
  Tensor all = from_vector(edges, {e});
  for (T v : edges) {
    Tensor sv = scalar_tensor(Scalar(v), scalar_type_of<T>());
    Tensor vs = strided_view(sv, {e}, {0}, 0);
    expect_binary<T, Out>(m, all, vs, native::binary(op, all, sv), ref, eps, "tensor op scalar");
    expect_binary<T, Out>(m, vs, all, native::binary(op, sv, all), ref, eps, "scalar op tensor");
    expect_binary<T, Out>(m, all, vs, native::binary(op, all, Scalar(v)), ref, eps,
                          "tensor op number");
  }
  // Each edge value at every position of runs of every length, against an ordinary value, on
  // either side, and against edge values. Aligned runs only: these loops are the compiler's,
  // whose vector and scalar iterations do the same IEEE operation (and the test stays small
  // under ASan).
  for (int64_t n : kLengths) {
    for (int64_t vi = 0; vi < e; ++vi) {
      Tensor x = runs<T>(3 * n, n, 0, T(0.5)), y = runs<T>(3 * n, n, 0, T(0.5));
      for (int64_t p = 0; p < n; ++p) {
        for (int64_t k = 0; k < n; ++k) {
          const T v = k == p ? edges[vi] : filler;
          const T w = k == p ? edges[(vi + p + 1) % e] : filler;
          set<T>(x, p * n + k, v);
          set<T>(y, p * n + k, filler);
          set<T>(x, (n + p) * n + k, filler);
          set<T>(y, (n + p) * n + k, v);
          set<T>(x, (2 * n + p) * n + k, v);
          set<T>(y, (2 * n + p) * n + k, w);
        }
      }
      Tensor out = runs<Out>(3 * n, n, 0, out_pad);
      native::binary_out(op, out, x, y);
      expect_binary<T, Out>(m, x, y, out, ref, eps, "one value in a run of ordinary ones");
      EXPECT_TRUE(padding_intact(out, out_pad)) << name << " wrote outside its runs, n=" << n;
    }
  }
  // A broadcast row or column on either side, out of place and in place: blocks of runs in one
  // kernel call (Note [Blocks of runs] in tensor/cpu/pointwise.cc). Every edge value is in every
  // column of the grid and meets every value of the column; short rows take the inline loop,
  // and 2001 rows of 33 are split between the two threads inside a row.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{e, 5}, {e, 16}, {e, 33}, {2001, 33}}) {
    std::vector<T> grid(static_cast<size_t>(rows * n)), row(static_cast<size_t>(n));
    std::vector<T> col(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < n; ++k) grid[size_t(r * n + k)] = edges[(r + k) % e];
      col[size_t(r)] = edges[(5 * r + 3) % e];
    }
    for (int64_t k = 0; k < n; ++k) row[size_t(k)] = edges[(7 * k + 1) % e];
    Tensor x = from_vector(grid, {rows, n}), rv = from_vector(row, {n});
    Tensor cv = from_vector(col, {rows, 1});
    Tensor rx = strided_view(rv, {rows, n}, {0, 1}, 0), cx = strided_view(cv, {rows, n}, {1, 0}, 0);
    expect_binary<T, Out>(m, x, rx, native::binary(op, x, rv), ref, eps, "tensor op row");
    expect_binary<T, Out>(m, rx, x, native::binary(op, rv, x), ref, eps, "row op tensor");
    expect_binary<T, Out>(m, x, cx, native::binary(op, x, cv), ref, eps, "tensor op column");
    expect_binary<T, Out>(m, cx, x, native::binary(op, cv, x), ref, eps, "column op tensor");
    // Rows of a wider tensor (a slice), against a broadcast row.
    Tensor sx = runs<T>(rows, n, 1, T(0.5));
    native::copy_(sx, x);
    expect_binary<T, Out>(m, sx, rx, native::binary(op, sx, rv), ref, eps, "slice op row");
    if constexpr (std::is_same_v<Out, T>) {
      Tensor y = native::clone(x);
      native::binary_out(op, y, y, rv);
      expect_binary<T, Out>(m, x, rx, y, ref, eps, "tensor op= row");
      y = native::clone(x);
      native::binary_out(op, y, y, cv);
      expect_binary<T, Out>(m, x, cx, y, ref, eps, "tensor op= column");
    }
  }
}

template <typename T>
void check_every_binary_op() {
  auto nan_or = [](auto f) {
    return [f](T x, T y) {
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<T>::quiet_NaN() : f(x, y);
    };
  };
  check_binary<T, T>(
      "add", BinaryOp::kAdd, [](T x, T y) { return x + y; }, 0);
  check_binary<T, T>(
      "sub", BinaryOp::kSub, [](T x, T y) { return x - y; }, 0);
  check_binary<T, T>(
      "mul", BinaryOp::kMul, [](T x, T y) { return x * y; }, 0);
  check_binary<T, T>(
      "div", BinaryOp::kDiv, [](T x, T y) { return x / y; }, 0);
  check_binary<T, T>(
      "pow", BinaryOp::kPow, [](T x, T y) { return std::pow(x, y); }, 0);
  // On ties (-0 vs 0) the first operand, as torch.
  check_binary<T, T>("maximum", BinaryOp::kMaximum, nan_or([](T x, T y) { return std::max(x, y); }),
                     0);
  check_binary<T, T>("minimum", BinaryOp::kMinimum, nan_or([](T x, T y) { return std::min(x, y); }),
                     0);
  check_binary<T, bool>(
      "eq", BinaryOp::kEq, [](T x, T y) { return x == y; }, 0);
  check_binary<T, bool>(
      "ne", BinaryOp::kNe, [](T x, T y) { return x != y; }, 0);
  check_binary<T, bool>(
      "lt", BinaryOp::kLt, [](T x, T y) { return x < y; }, 0);
  check_binary<T, bool>(
      "le", BinaryOp::kLe, [](T x, T y) { return x <= y; }, 0);
  check_binary<T, bool>(
      "gt", BinaryOp::kGt, [](T x, T y) { return x > y; }, 0);
  check_binary<T, bool>(
      "ge", BinaryOp::kGe, [](T x, T y) { return x >= y; }, 0);
  check_binary<T, bool>(
      "logical_and", BinaryOp::kLogicalAnd, [](T x, T y) { return x != T(0) && y != T(0); }, 0);
  check_binary<T, bool>(
      "logical_or", BinaryOp::kLogicalOr, [](T x, T y) { return x != T(0) || y != T(0); }, 0);
}

TEST(PointwiseEdges, EveryBinaryOpFloat32) { check_every_binary_op<float>(); }
TEST(PointwiseEdges, EveryBinaryOpFloat64) { check_every_binary_op<double>(); }

// ---- The repros ---------------------------------------------------------------------

TEST(PointwiseEdges, ExpOfMinusInfinityIsZeroInEveryLane) {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n = 1; n <= 9; ++n) {
      Tensor r = native::unary(UnaryOp::kExp, full({n}, -inf, dt));
      for (double v : elements(r)) {
        EXPECT_EQ(v, 0.0) << dt << " n=" << n;
      }
    }
    Tensor x = native::to(from_vector(std::vector<double>{0, -inf, -inf, -inf, -inf}, {5}), dt);
    EXPECT_EQ(elements(native::unary(UnaryOp::kExp, x)), (std::vector<double>{1, 0, 0, 0, 0}));
  }
}

TEST(PointwiseEdges, MaskedSoftmaxPutsNoWeightOnMaskedPositions) {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor logits = native::to(
        from_vector(std::vector<double>{2, -inf, -inf, 1, -inf, -inf, -inf, 0.5}, {8}), dt);
    std::vector<double> w = elements(native::unary(UnaryOp::kExp, logits));
    for (size_t i : {1, 2, 4, 5, 6}) EXPECT_EQ(w[i], 0.0) << dt << " position " << i;
  }
}

TEST(PointwiseEdges, LogOfSubnormalsIsNotFlushed) {
  for (int64_t n = 1; n <= 9; ++n) {
    for (double v : elements(native::unary(UnaryOp::kLog, full({n}, 1e-40, kFloat32)))) {
      EXPECT_NEAR(v, -92.1034037, 1e-4) << "n=" << n;
    }
    for (double v : elements(native::unary(UnaryOp::kLog, full({n}, 1e-310, kFloat64)))) {
      EXPECT_NEAR(v, -713.801378, 1e-5) << "n=" << n;
    }
  }
}

}  // namespace
}  // namespace mutagrad
