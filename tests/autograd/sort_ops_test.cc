// sort, argsort, msort, topk, kthvalue, unique, bincount, searchsorted: values and indices
// against a naive std::stable_sort per line (ties, NaN, descending, non-contiguous, 0-dim,
// empty), gradcheck + gradgradcheck of the differentiable values, PyTorch's node names and
// error kinds. Runs on the CPU and, as sort_ops_test_cuda, on the CUDA device.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Equal element by element, NaN equal to NaN, -0.0 distinct from 0.0.
void expect_same(const std::vector<double>& got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = (std::isnan(got[i]) && std::isnan(want[i])) ||
                      (got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]));
    EXPECT_TRUE(same) << what << ": element " << i << " got " << got[i] << " want " << want[i];
  }
}

// Row-major strides of `sizes`.
std::vector<int64_t> strides_of(IntArrayRef sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * sizes[d];
  return s;
}

// The naive reference: each line along `dim` of the row-major `v` stable-sorted as pairs.
std::pair<std::vector<double>, std::vector<double>> naive_sort(const std::vector<double>& v,
                                                               IntArrayRef sizes, int64_t dim,
                                                               bool descending) {
  const std::vector<int64_t> st = strides_of(sizes);
  std::vector<double> vals(v.size()), idx(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if ((static_cast<int64_t>(i) / st[dim]) % sizes[dim] != 0) continue;  // not a line start
    std::vector<std::pair<double, int64_t>> line;
    for (int64_t k = 0; k < sizes[dim]; ++k) line.push_back({v[i + k * st[dim]], k});
    std::stable_sort(line.begin(), line.end(), [&](const auto& a, const auto& b) {
      const bool an = std::isnan(a.first), bn = std::isnan(b.first);
      if (an || bn) return descending ? an && !bn : !an && bn;  // NaN is the greatest
      return descending ? a.first > b.first : a.first < b.first;
    });
    for (int64_t k = 0; k < sizes[dim]; ++k) {
      vals[i + k * st[dim]] = line[k].first;
      idx[i + k * st[dim]] = static_cast<double>(line[k].second);
    }
  }
  return {vals, idx};
}

// Small integers (many ties), some NaN and -0.0, as float64 on the test's device.
Tensor tied(IntArrayRef sizes, std::mt19937_64& rng) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = rng() % 8;
    v.push_back(r == 0 ? kNan : r == 1 ? -0.0 : static_cast<double>(r % 4) - 1.0);
  }
  return dev(from_vector(v, sizes));
}

TEST(SortOps, SortMatchesStableSortPerLine) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 80; ++trial) {
    std::vector<int64_t> sizes;
    const int ndim = static_cast<int>(rng() % 3) + 1;
    for (int d = 0; d < ndim; ++d) sizes.push_back(static_cast<int64_t>(rng() % 6) + 1);
    const int64_t dim = static_cast<int64_t>(rng() % static_cast<uint64_t>(ndim));
    const bool descending = trial % 2 == 1;
    for (ScalarType dtype : {kFloat64, kFloat32}) {
      Tensor x = tied(sizes, rng).to(dtype);
      if (trial % 3 == 0 && ndim > 1) x = x.transpose(0, ndim - 1);  // non-contiguous
      const DimVector shape(x.sizes());
      const auto [want_v, want_i] = naive_sort(values(x), shape, dim, descending);
      const auto [v, i] = mutagrad::sort(x, dim - (trial % 4 == 0 ? ndim : 0), descending);
      const std::string what = str("trial ", trial, " dtype ", dtype_name(dtype));
      EXPECT_EQ(v.dtype(), dtype);
      EXPECT_EQ(i.dtype(), kInt64);
      expect_same(values(v), want_v, what + " values");
      expect_same(values(i), want_i, what + " indices");
      expect_same(values(mutagrad::argsort(x, dim, descending)), want_i, what + " argsort");
    }
  }
}

// Enough lines for the CPU's parallel path and many device threads; both dims sorted.
TEST(SortOps, ManyLinesMatchStableSort) {
  std::mt19937_64 rng(11);
  const Tensor x = tied({3000, 23}, rng).to(kFloat32);
  const DimVector shape(x.sizes());
  for (int64_t dim : {0, 1}) {
    const auto [want_v, want_i] = naive_sort(values(x), shape, dim, dim == 1);
    const auto [v, i] = mutagrad::sort(x, dim, dim == 1);
    expect_same(values(v), want_v, str("dim ", dim, " values"));
    expect_same(values(i), want_i, str("dim ", dim, " indices"));
  }
}

TEST(SortOps, IntegerAndBoolLines) {
  const Tensor x = dev(from_vector<int64_t>({3, -1, 3, 0, -1, 7}, {6}));
  expect_same(values(mutagrad::sort(x).first), {-1, -1, 0, 3, 3, 7}, "int values");
  expect_same(values(mutagrad::sort(x).second), {1, 4, 3, 0, 2, 5}, "int indices");
  expect_same(values(mutagrad::sort(x, 0, true).second), {5, 0, 2, 3, 1, 4}, "int descending");
  const Tensor b = dev(from_vector<bool>({true, false, true}, {3}));
  expect_same(values(mutagrad::sort(b).second), {1, 0, 2}, "bool indices");
}

TEST(SortOps, NanLastAscendingFirstDescending) {
  const Tensor x = dev(from_vector<double>({3, 1, kNan, 1, 2}, {5}));
  expect_same(values(mutagrad::sort(x).first), {1, 1, 2, 3, kNan}, "ascending");
  expect_same(values(mutagrad::sort(x).second), {1, 3, 4, 0, 2}, "ascending indices");
  expect_same(values(mutagrad::sort(x, 0, true).first), {kNan, 3, 2, 1, 1}, "descending");
  expect_same(values(mutagrad::sort(x, 0, true).second), {2, 0, 4, 1, 3}, "descending indices");
}

TEST(SortOps, ZeroDimAndEmpty) {
  const Tensor s = dev(scalar_tensor(2.5, kFloat64));
  const auto [v, i] = mutagrad::sort(s);
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(i.dim(), 0);
  EXPECT_EQ(v.item<double>(), 2.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(mutagrad::topk(s, 1).first.item<double>(), 2.5);
  EXPECT_EQ(mutagrad::kthvalue(s, 1).second.item<int64_t>(), 0);
  const Tensor e = dev(zeros({2, 0}, kFloat32));
  EXPECT_EQ(mutagrad::sort(e, 1).first.sizes(), IntArrayRef({2, 0}));
  EXPECT_EQ(mutagrad::topk(e, 0).second.sizes(), IntArrayRef({2, 0}));
  EXPECT_EQ(mutagrad::sort(e, 0).second.sizes(), IntArrayRef({2, 0}));
}

TEST(SortOps, TopkAndKthvalueAreSlicesOfTheStableSort) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<int64_t> sizes = {static_cast<int64_t>(rng() % 4) + 1,
                                        static_cast<int64_t>(rng() % 6) + 1};
    const Tensor x = tied(sizes, rng);
    const int64_t dim = trial % 2;
    const int64_t n = sizes[dim];
    const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(n)) + 1;
    const bool largest = trial % 3 != 0;
    const auto [sv, si] = mutagrad::sort(x, dim, largest);
    const auto [tv, ti] = mutagrad::topk(x, k, dim, largest);
    expect_same(values(tv), values(sv.narrow(dim, 0, k)), str("topk values ", trial));
    expect_same(values(ti), values(si.narrow(dim, 0, k)), str("topk indices ", trial));
    const auto [av, ai] = mutagrad::sort(x, dim);
    const auto [kv, ki] = mutagrad::kthvalue(x, k, dim, trial % 2 == 0);
    Tensor want_v = av.narrow(dim, k - 1, 1), want_i = ai.narrow(dim, k - 1, 1);
    expect_same(values(kv), values(want_v), str("kthvalue values ", trial));
    expect_same(values(ki), values(want_i), str("kthvalue indices ", trial));
    EXPECT_EQ(kv.dim(), trial % 2 == 0 ? 2 : 1);
  }
}

TEST(SortOps, Gradients) {
  const Tensor x = leaf({3, 4}, 1);
  const Tensor y = strided_leaf({4, 3}, 2);
  CHECK_GRADS([](const VariableList& in) { return mutagrad::sort(in[0], 1).first; }, {x});
  CHECK_GRADS([](const VariableList& in) { return mutagrad::sort(in[0], 0, true).first; }, {y});
  CHECK_GRADS([](const VariableList& in) { return mutagrad::msort(in[0]); }, {x});
  CHECK_GRADS([](const VariableList& in) { return mutagrad::topk(in[0], 2).first; }, {x});
  CHECK_GRADS([](const VariableList& in) { return mutagrad::topk(in[0], 3, 0, false).first; }, {y});
  CHECK_GRADS([](const VariableList& in) { return mutagrad::kthvalue(in[0], 2, 1).first; }, {x});
  CHECK_GRADS([](const VariableList& in) { return mutagrad::kthvalue(in[0], 3, 0, true).first; },
              {y});
  const Tensor s = dev(scalar_tensor(0.5, kFloat64)).requires_grad_();
  CHECK_GRADS([](const VariableList& in) { return mutagrad::sort(in[0]).first; }, {s});
}

TEST(SortOps, NodeNamesAndErrors) {
  const Tensor x = leaf({3, 4}, 3);
  EXPECT_STREQ(mutagrad::sort(x, 0).first.grad_fn()->name(), "SortBackward0");
  EXPECT_STREQ(mutagrad::sort(x, 0, false, true).first.grad_fn()->name(), "SortBackward1");
  EXPECT_STREQ(mutagrad::msort(x).grad_fn()->name(), "SortBackward0");
  EXPECT_STREQ(mutagrad::topk(x, 2).first.grad_fn()->name(), "TopkBackward0");
  EXPECT_STREQ(mutagrad::kthvalue(x, 2).first.grad_fn()->name(), "KthvalueBackward0");
  EXPECT_FALSE(mutagrad::sort(x).second.requires_grad());
  EXPECT_FALSE(mutagrad::argsort(x).requires_grad());
  EXPECT_THROW(mutagrad::sort(x, 2), IndexError);
  EXPECT_THROW(mutagrad::topk(x, 5), ValueError);
  EXPECT_THROW(mutagrad::topk(x, -1), ValueError);
  EXPECT_THROW(mutagrad::kthvalue(x, 0), ValueError);
  EXPECT_THROW(mutagrad::kthvalue(x, 5), ValueError);
  EXPECT_THROW(mutagrad::kthvalue(x, 1, -3), IndexError);
  EXPECT_THROW(mutagrad::kthvalue(dev(zeros({2, 0}, kFloat64)), 1), IndexError);  // as torch
}

TEST(SortOps, Unique) {
  const Tensor x = dev(from_vector<int64_t>({3, 1, 2, 1, 3, 3}, {2, 3}));
  const auto [u, inverse, counts] = mutagrad::unique(x);
  expect_same(values(u), {1, 2, 3}, "values");
  expect_same(values(inverse), {2, 0, 1, 0, 2, 2}, "inverse");
  EXPECT_EQ(inverse.sizes(), IntArrayRef({2, 3}));
  expect_same(values(counts), {2, 1, 3}, "counts");
  const auto [e, ei, ec] = mutagrad::unique(dev(zeros({0}, kFloat32)));
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(ec.numel(), 0);
}

TEST(SortOps, Bincount) {
  const Tensor x = dev(from_vector<int64_t>({1, 3, 1, 0}, {4}));
  const Tensor c = mutagrad::bincount(x);
  EXPECT_EQ(c.dtype(), kInt64);
  expect_same(values(c), {1, 2, 0, 1}, "counts");
  expect_same(values(mutagrad::bincount(x, std::nullopt, 6)), {1, 2, 0, 1, 0, 0}, "minlength");
  const Tensor w = dev(from_vector<float>({0.5f, 1, 2, 4}, {4}));
  const Tensor cw = mutagrad::bincount(x, w);
  EXPECT_EQ(cw.dtype(), kFloat32);
  expect_same(values(cw), {4, 2.5, 0, 1}, "weighted");
  EXPECT_EQ(mutagrad::bincount(x, x).dtype(), kFloat64);
  EXPECT_EQ(mutagrad::bincount(dev(zeros({0}, kInt64))).numel(), 0);
  EXPECT_THROW(mutagrad::bincount(dev(from_vector<int64_t>({-1}, {1}))), ValueError);
  EXPECT_THROW(mutagrad::bincount(dev(zeros({2, 2}, kInt64))), ValueError);
  EXPECT_THROW(mutagrad::bincount(dev(zeros({2}, kFloat32))), ValueError);
  EXPECT_THROW(mutagrad::bincount(x, std::nullopt, -1), ValueError);
}

TEST(SortOps, SearchsortedIsTorchsBinarySearch) {
  const Tensor seq = dev(from_vector<double>({1, 2, 2, 3}, {4}));
  const Tensor v = dev(from_vector<double>({2, kNan, 0, 3.5, 1}, {5}));
  expect_same(values(mutagrad::searchsorted(seq, v)), {1, 4, 0, 4, 0}, "left");
  expect_same(values(mutagrad::searchsorted(seq, v, false, true)), {3, 4, 0, 4, 1}, "right");
  EXPECT_EQ(mutagrad::searchsorted(seq, v, true).dtype(), kInt32);
  // N-D: each row of values searches its own row of the sequence.
  const Tensor seq2 = dev(from_vector<double>({0, 1, 2, 10, 20, 30}, {2, 3}));
  const Tensor v2 = dev(from_vector<double>({1.5, 25, 15, 1.5}, {2, 2}));
  expect_same(values(mutagrad::searchsorted(seq2, v2)), {2, 3, 1, 0}, "rows");
  // A 1-D sequence serves every value of an N-D tensor; a 0-dim value gives a 0-dim result.
  expect_same(values(mutagrad::searchsorted(seq, v2)), {1, 4, 4, 1}, "shared");
  const Tensor one = mutagrad::searchsorted(seq, dev(scalar_tensor(2.0, kFloat64)));
  EXPECT_EQ(one.dim(), 0);
  EXPECT_EQ(one.item<int64_t>(), 1);
  // Mixed dtypes compare in the promoted dtype.
  expect_same(values(mutagrad::searchsorted(seq, dev(from_vector<int64_t>({2}, {1})))), {1},
              "promoted");
  // A non-contiguous sequence.
  const Tensor seq_t = seq2.t().contiguous().t();
  expect_same(values(mutagrad::searchsorted(seq_t, v2, false, true)), {2, 3, 1, 0}, "strided");
  EXPECT_THROW(mutagrad::searchsorted(seq2, dev(zeros({3, 2}, kFloat64))), ValueError);
}

}  // namespace
}  // namespace mutagrad
