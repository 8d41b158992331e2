// mm, bmm, mv, dot, inner, outer, addmm and einsum: values against naive loops over random
// shapes (including empty ones), gradcheck + gradgradcheck at every differentiable argument,
// PyTorch's node names and error types. Runs on the CPU and, as products_ops_test_cuda, on the
// CUDA device.
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

// Small integers as float64: every product and sum below is exact.
Tensor ints(IntArrayRef sizes, uint64_t seed, ScalarType dtype = kFloat64) {
  Generator gen(seed);
  return dev(randint(-4, 5, sizes, gen, kInt64).to(dtype));
}

// The naive einsum: for every assignment of the subscripts (letters only), the output element
// named by the output subscripts gets the product of the operands' elements.
std::vector<double> naive_einsum(const std::string& equation, const std::vector<Tensor>& ops) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms;
  std::string lhs = equation.substr(0, arrow), term;
  for (char c : lhs + ",") {
    if (c == ',') {
      terms.push_back(term);
      term.clear();
    } else {
      term += c;
    }
  }
  const std::string out = equation.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = ops[i].size(int64_t(d));
  }
  std::vector<std::vector<double>> vals;
  for (const Tensor& t : ops) vals.push_back(values(t));
  int64_t out_numel = 1;
  for (char c : out) out_numel *= size[c];
  std::vector<double> result(static_cast<size_t>(out_numel), 0.0);
  std::vector<char> labels;
  for (const auto& [c, s] : size) labels.push_back(c);
  std::map<char, int64_t> at;
  std::function<void(size_t)> visit = [&](size_t k) {
    if (k == labels.size()) {
      double p = 1.0;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t offset = 0;
        for (size_t d = 0; d < terms[i].size(); ++d) {
          offset = offset * ops[i].size(int64_t(d)) + at[terms[i][d]];
        }
        p *= vals[i][static_cast<size_t>(offset)];
      }
      int64_t o = 0;
      for (char c : out) o = o * size[c] + at[c];
      result[static_cast<size_t>(o)] += p;
      return;
    }
    for (int64_t v = 0; v < size[labels[k]]; ++v) {
      at[labels[k]] = v;
      visit(k + 1);
    }
  };
  visit(0);
  return result;
}

TEST(ProductsOps, MatchNaiveEinsumOnRandomShapes) {
  std::mt19937_64 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t b = pick(0, 3), n = pick(0, 4), k = pick(0, 4), m = pick(0, 4);
    SCOPED_TRACE(::testing::Message() << b << " " << n << " " << k << " " << m);
    Tensor a2 = ints({n, k}, trial), b2 = ints({k, m}, trial + 100);
    Tensor a3 = ints({b, n, k}, trial + 200), b3 = ints({b, k, m}, trial + 300);
    Tensor v = ints({k}, trial + 400), w = ints({k}, trial + 500), u = ints({m}, trial + 600);
    Tensor c = ints({n, m}, trial + 700), row = ints({m}, trial + 800);
    expect_close(a2.mm(b2), naive_einsum("nk,km->nm", {a2, b2}));
    expect_close(mm(a2.t().contiguous().t(), b2), naive_einsum("nk,km->nm", {a2, b2}));
    expect_close(a3.bmm(b3), naive_einsum("bnk,bkm->bnm", {a3, b3}));
    expect_close(a2.mv(v), naive_einsum("nk,k->n", {a2, v}));
    expect_close(v.dot(w), naive_einsum("k,k->", {v, w}));
    expect_close(v.outer(u), naive_einsum("k,m->km", {v, u}));
    expect_close(a2.inner(b2.t()), naive_einsum("nk,mk->nm", {a2, b2.t().contiguous()}));
    std::vector<double> want = naive_einsum("nk,km->nm", {a2, b2});
    const std::vector<double> cv = values(c), rv = values(row);
    for (size_t i = 0; i < want.size(); ++i) want[i] = 3 * cv[i] - 2 * want[i];
    expect_close(c.addmm(a2, b2, 3, -2), want);
    want = naive_einsum("nk,km->nm", {a2, b2});
    for (size_t i = 0; i < want.size(); ++i) want[i] += rv[i % static_cast<size_t>(m)];
    expect_close(addmm(row, a2, b2), want);
  }
}

TEST(ProductsOps, IntegerProductsAndBetaZeroIgnoresNan) {
  Tensor a = ints({2, 3}, 1, kInt64), b = ints({3, 2}, 2, kInt64);
  Tensor c = a.mm(b);
  EXPECT_EQ(c.dtype(), kInt64);
  expect_close(c, naive_einsum("nk,km->nm", {a, b}));
  EXPECT_EQ(ints({3}, 3, kInt32).dot(ints({3}, 4, kInt32)).dtype(), kInt32);
  // Integer addmm: beta and alpha in the integer type (0.5 is 0), as torch.
  Tensor self = ints({2, 2}, 5, kInt64);
  expect_close(self.addmm(a, b, 0.5, 2), values(c * 2));
  Tensor nan_self = dev(full({2, 2}, std::nan(""), kFloat64));
  Tensor af = a.to(kFloat64), bf = b.to(kFloat64);
  expect_close(nan_self.addmm(af, bf, 0, 1), values(c));
}

TEST(ProductsOps, EinsumMatchesTheNaiveSum) {
  Tensor a = ints({2, 3}, 11), b = ints({3, 4}, 12), c = ints({4, 2}, 13), sq = ints({3, 3}, 14);
  Tensor t3 = ints({2, 3, 3}, 15), v = ints({3}, 16), w = ints({2}, 17);
  struct Case {
    std::string equation;  // explicit, letters only: what the naive loop reads
    std::string given;     // what einsum is called with (implicit forms, spaces)
    std::vector<Tensor> ops;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", "ij,jk", {a, b}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {a, b, c}},
      {"ii->", "ii", {sq}},
      {"ii->i", "ii->i", {sq}},
      {"ij->ji", "ij->ji", {a}},
      {"ij->", "ij->", {a}},
      {"ij->j", "i j -> j", {a}},
      {"i,j->ij", "i,j", {v, w}},
      {"bii->b", "bii->b", {t3}},
      {"bij,j->bi", "bij,j->bi", {t3, v}},
      {"ij,ij->ij", "ij,ij->ij", {a, a}},
      {"ij,kj->ik", "ij,kj", {a, a}},
      {"ij,jk->", "ij,jk->", {a, b}},
      {"i,i,i->", "i,i,i->", {v, v, v}},
      {"ij,j->i", "ij,j", {a, v}},
      {"Ij,jk->Ik", "Ij,jk", {a, b}},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.given);
    Tensor got = einsum(cs.given, cs.ops);
    expect_close(got, naive_einsum(cs.equation, cs.ops));
  }
  // Implicit output order: subscripts seen once, A-Z before a-z; '...' first.
  EXPECT_EQ(einsum("ji", {a}).sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(einsum("bA", {a}).sizes(), IntArrayRef({3, 2}));
  // Ellipsis: broadcast batch dims, as matmul.
  Tensor x = ints({2, 1, 3, 2}, 18), y = ints({4, 2, 5}, 19);
  expect_close(einsum("...ij,...jk->...ik", {x, y}), values(x.matmul(y)));
  expect_close(einsum("...ij,...jk", {x, y}), values(x.matmul(y)));
  expect_close(einsum("...ij->...", {x}), values(x.sum({-2, -1})));
  expect_close(einsum("ij...->", {x}), values(x.sum()));
  // A size-1 subscript broadcasts.
  Tensor col = ints({2, 1}, 20);
  expect_close(einsum("ij,ij->ij", {col, a}), values(col * a));
}

const autograd::TensorFunction kMm = [](const VariableList& in) { return in[0].mm(in[1]); };
const autograd::TensorFunction kBmm = [](const VariableList& in) { return in[0].bmm(in[1]); };
const autograd::TensorFunction kMv = [](const VariableList& in) { return in[0].mv(in[1]); };
const autograd::TensorFunction kDot = [](const VariableList& in) { return in[0].dot(in[1]); };
const autograd::TensorFunction kOuter = [](const VariableList& in) { return in[0].outer(in[1]); };
const autograd::TensorFunction kInner = [](const VariableList& in) { return in[0].inner(in[1]); };

TEST(ProductsOps, GradientsAtEveryArgument) {
  CHECK_GRADS(kMm, {leaf({2, 3}, 1), strided_leaf({3, 4}, 2)});
  CHECK_GRADS(kBmm, {leaf({2, 2, 3}, 3), leaf({2, 3, 2}, 4)});
  CHECK_GRADS(kBmm, {strided_leaf({2, 2, 3}, 5), leaf({2, 3, 1}, 6).detach()});
  CHECK_GRADS(kMv, {leaf({2, 3}, 7), leaf({3}, 8)});
  CHECK_GRADS(kMv, {strided_leaf({3, 2}, 9).detach(), leaf({2}, 10)});
  CHECK_GRADS(kDot, {leaf({4}, 11), leaf({4}, 12)});
  CHECK_GRADS(kOuter, {leaf({3}, 13), leaf({2}, 14)});
  CHECK_GRADS(kInner, {leaf({2, 3}, 15), leaf({4, 3}, 16)});
  CHECK_GRADS(kInner, {leaf({3}, 17), leaf({2, 2, 3}, 18)});
  CHECK_GRADS(kInner, {leaf({}, 19), leaf({2, 3}, 20)});
  const autograd::TensorFunction addmm_fn = [](const VariableList& in) {
    return in[0].addmm(in[1], in[2], 0.5, -2.0);
  };
  CHECK_GRADS(addmm_fn, {leaf({2, 4}, 21), leaf({2, 3}, 22), leaf({3, 4}, 23)});
  CHECK_GRADS(addmm_fn, {leaf({4}, 24), strided_leaf({2, 3}, 25), leaf({3, 4}, 26)});
  CHECK_GRADS(addmm_fn, {leaf({1, 1}, 27), leaf({2, 3}, 28).detach(), leaf({3, 4}, 29)});
  const autograd::TensorFunction beta_zero = [](const VariableList& in) {
    return addmm(in[0], in[1], in[2], 0, 1);
  };
  CHECK_GRADS(beta_zero, {leaf({2, 4}, 30), leaf({2, 3}, 31), leaf({3, 4}, 32)});
  for (const char* eq : {"ij,jk->ik", "bij,bjk->bik", "ii->i", "ij->", "i,j->ij", "bij,j->bi",
                         "ij,ij->ij", "...ij,...jk->...ik", "bii->b", "ij,jk,kl->il"}) {
    SCOPED_TRACE(eq);
    const std::string equation = eq;
    const autograd::TensorFunction fn = [equation](const VariableList& in) {
      return einsum(equation, in);
    };
    if (equation == "ij,jk->ik") CHECK_GRADS(fn, {leaf({2, 3}, 40), strided_leaf({3, 2}, 41)});
    if (equation == "bij,bjk->bik") CHECK_GRADS(fn, {leaf({2, 2, 3}, 42), leaf({2, 3, 2}, 43)});
    if (equation == "ii->i") CHECK_GRADS(fn, {leaf({3, 3}, 44)});
    if (equation == "ij->") CHECK_GRADS(fn, {strided_leaf({3, 2}, 45)});
    if (equation == "i,j->ij") CHECK_GRADS(fn, {leaf({3}, 46), leaf({2}, 47)});
    if (equation == "bij,j->bi") CHECK_GRADS(fn, {leaf({2, 3, 2}, 48), leaf({2}, 49)});
    if (equation == "ij,ij->ij") CHECK_GRADS(fn, {leaf({2, 1}, 50), leaf({2, 3}, 51)});
    if (equation == "...ij,...jk->...ik") {
      CHECK_GRADS(fn, {leaf({2, 1, 2, 3}, 52), leaf({2, 3, 2}, 53)});
    }
    if (equation == "bii->b") CHECK_GRADS(fn, {leaf({2, 3, 3}, 54)});
    if (equation == "ij,jk,kl->il") {
      CHECK_GRADS(fn, {leaf({2, 3}, 55), leaf({3, 2}, 56), leaf({2, 2}, 57)});
    }
  }
}

TEST(ProductsOps, NodeNamesArePyTorchs) {
  Tensor a = leaf({2, 3}, 1), b = leaf({3, 2}, 2), v = leaf({3}, 3);
  EXPECT_STREQ(a.mm(b).grad_fn()->name(), "MmBackward0");
  EXPECT_STREQ(a.unsqueeze(0).bmm(b.unsqueeze(0)).grad_fn()->name(), "BmmBackward0");
  EXPECT_STREQ(a.mv(v).grad_fn()->name(), "MvBackward0");
  EXPECT_STREQ(v.dot(v).grad_fn()->name(), "DotBackward0");
  EXPECT_STREQ(v.outer(v).grad_fn()->name(), "MulBackward0");
  EXPECT_STREQ(leaf({2, 2}, 4).addmm(a, b).grad_fn()->name(), "AddmmBackward0");
  EXPECT_STREQ(einsum("i,j->ij", {v, v}).grad_fn()->name(), "MulBackward0");
}

TEST(ProductsOps, RefusedWithTorchsErrorKinds) {
  Tensor m = leaf({2, 3}, 1), m3 = leaf({2, 2, 3}, 2), v = leaf({3}, 3);
  Tensor f32 = dev(ones({3, 2}, kFloat32));
  EXPECT_THROW(m3.mm(m.t()), ShapeError);  // self must be a matrix
  EXPECT_THROW(m.mm(m3), ShapeError);
  EXPECT_THROW(m.mm(m), ShapeError);    // 2x3 and 2x3
  EXPECT_THROW(m.mm(f32), DTypeError);  // no promotion, as torch
  EXPECT_THROW(dev(ones({2, 2}, kBool)).mm(dev(ones({2, 2}, kBool))), DTypeError);
  EXPECT_THROW(m.bmm(m), ShapeError);
  EXPECT_THROW(m3.bmm(leaf({3, 3, 2}, 4)), ShapeError);  // batch sizes differ: no broadcast
  EXPECT_THROW(m3.bmm(leaf({2, 2, 2}, 5)), ShapeError);
  EXPECT_THROW(m.mv(m), ShapeError);
  EXPECT_THROW(m.mv(leaf({2}, 6)), ShapeError);
  EXPECT_THROW(m.mv(dev(ones({3}, kFloat32))), DTypeError);
  EXPECT_THROW(v.dot(m), ShapeError);
  EXPECT_THROW(v.dot(leaf({4}, 7)), ShapeError);
  EXPECT_THROW(v.dot(dev(ones({3}, kFloat32))), DTypeError);
  EXPECT_THROW(dev(ones({3}, kBool)).dot(dev(ones({3}, kBool))), DTypeError);
  EXPECT_THROW(m.outer(v), ShapeError);
  EXPECT_THROW(m.inner(m.t()), ShapeError);
  EXPECT_THROW(leaf({3}, 8).addmm(m, m.t()), ShapeError);  // [3] does not expand to [2, 2]
  EXPECT_THROW(leaf({2, 2}, 9).addmm(m3, m.t()), ShapeError);
  EXPECT_THROW(dev(ones({2, 2}, kFloat32)).addmm(m, m.t()), DTypeError);
  EXPECT_THROW(einsum("ij,jk", {m}), ValueError);       // fewer operands
  EXPECT_THROW(einsum("ij", {m, m}), ValueError);       // more operands
  EXPECT_THROW(einsum("i1", {m}), ValueError);          // invalid subscript
  EXPECT_THROW(einsum("ij->k", {m}), ValueError);       // unknown output subscript
  EXPECT_THROW(einsum("ij->ii", {m}), ValueError);      // repeated output subscript
  EXPECT_THROW(einsum("i.j", {m}), ValueError);         // a lone '.'
  EXPECT_THROW(einsum("ij", {v}), ShapeError);          // 2 subscripts for 1 dim
  EXPECT_THROW(einsum("ijk...", {m}), ShapeError);      // 3 subscripts for 2 dims
  EXPECT_THROW(einsum("ii", {m}), ShapeError);          // diagonal of 2 != 3
  EXPECT_THROW(einsum("ij,jk", {m, m}), ShapeError);    // j is 3 and 2
  EXPECT_THROW(einsum("ij,jk", {m, f32}), DTypeError);  // the contraction is a bmm
  EXPECT_THROW(einsum("", {}), ValueError);
}

}  // namespace
}  // namespace mutagrad
