// gather, scatter_, scatter_add_, scatter_reduce_ (and out-of-place forms), take, put_,
// masked_select, masked_scatter_: values against naive loops in index order over random
// geometries, gradcheck + gradgradcheck at every differentiable argument (also writes into
// views of non-leaves), PyTorch's node names, one version bump with the call site, and refused
// writes that change nothing. Runs on the CPU and, as scatter_ops_test_cuda, on the CUDA device.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
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

Tensor idx(const std::vector<int64_t>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }
Tensor idx(const std::vector<int64_t>& v) { return idx(v, {static_cast<int64_t>(v.size())}); }

// ---- The naive reference: row-major loops over index, in index order --------------------------

struct Dense {
  std::vector<int64_t> sizes;
  std::vector<double> v;
  int64_t offset(const std::vector<int64_t>& c) const {
    int64_t o = 0;
    for (size_t d = 0; d < sizes.size(); ++d) o = o * sizes[d] + c[d];
    return o;
  }
};

Dense dense(const Tensor& t) { return Dense{t.sizes().vec(), values(t)}; }

// Calls fn(coordinates) for every element of `sizes`, row-major.
void for_each_coord(const std::vector<int64_t>& sizes,
                    const std::function<void(const std::vector<int64_t>&)>& fn) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> c(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(c);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
  }
}

std::vector<double> naive_gather(const Dense& self, int64_t dim, const Dense& index) {
  std::vector<double> out;
  for_each_coord(index.sizes, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> s = c;
    s[static_cast<size_t>(dim)] = static_cast<int64_t>(index.v[index.offset(c)]);
    out.push_back(self.v[self.offset(s)]);
  });
  return out;
}

// reduce: "" (scatter_: assign), "sum", "prod", "mean", "amax", "amin".
std::vector<double> naive_scatter(Dense self, int64_t dim, const Dense& index, const Dense& src,
                                  const std::string& reduce, bool include_self) {
  std::vector<double> count(self.v.size(), include_self ? 1 : 0);
  std::vector<bool> touched(self.v.size(), false);
  for_each_coord(index.sizes, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> s = c;
    s[static_cast<size_t>(dim)] = static_cast<int64_t>(index.v[index.offset(c)]);
    const size_t o = static_cast<size_t>(self.offset(s));
    const double x = src.v[static_cast<size_t>(src.offset(c))];
    double& d = self.v[o];
    if (!include_self && !touched[o]) {
      d = reduce == "prod"   ? 1.0
          : reduce == "amax" ? -std::numeric_limits<double>::infinity()
          : reduce == "amin" ? std::numeric_limits<double>::infinity()
                             : 0.0;
    }
    touched[o] = true;
    count[o] += 1;
    if (reduce.empty()) d = x;
    if (reduce == "sum" || reduce == "mean") d = d + x;
    if (reduce == "prod") d = d * x;
    if (reduce == "amax") d = std::max(d, x);
    if (reduce == "amin") d = std::min(d, x);
  });
  if (reduce == "mean") {
    for (size_t i = 0; i < self.v.size(); ++i) self.v[i] /= std::max(count[i], 1.0);
  }
  return self.v;
}

// A random case: self's shape, dim, an index that fits (values in [0, size(dim))), a src at
// least as large as the index.
struct Case {
  std::vector<int64_t> self_sizes, index_sizes, src_sizes;
  int64_t dim = 0;
  std::vector<int64_t> index;
};

Case random_case(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Case c;
  const int64_t ndim = pick(1, 3);
  c.dim = pick(0, ndim - 1);
  for (int64_t d = 0; d < ndim; ++d) {
    c.self_sizes.push_back(pick(1, 4));
    // The index may be longer than self along dim (duplicates), shorter elsewhere.
    c.index_sizes.push_back(d == c.dim ? pick(1, 6) : pick(1, c.self_sizes.back()));
    c.src_sizes.push_back(c.index_sizes.back() + pick(0, 1));
  }
  int64_t n = 1;
  for (int64_t s : c.index_sizes) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    c.index.push_back(pick(0, c.self_sizes[static_cast<size_t>(c.dim)] - 1));
  }
  return c;
}

Tensor random_values(IntArrayRef sizes, uint64_t seed) {
  // Small integers in float64: sums, products and means are exact, so order is visible only
  // through assignment (tested with float32 below).
  Generator gen(seed);
  return dev(randint(-3, 4, sizes, gen, kInt64).to(kFloat64));
}

TEST(ScatterOps, RandomCasesMatchANaiveLoop) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 600; ++trial) {
    const Case c = random_case(rng);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " dim " << c.dim);
    const Tensor index = idx(c.index, c.index_sizes);
    const Tensor self = random_values(c.self_sizes, 100 + trial);
    const Tensor src = random_values(c.src_sizes, 200 + trial);
    const int64_t neg_dim = c.dim - static_cast<int64_t>(c.self_sizes.size());
    EXPECT_EQ(values(self.gather(neg_dim, index)), naive_gather(dense(self), c.dim, dense(index)));
    EXPECT_EQ(values(self.scatter(c.dim, index, src)),
              naive_scatter(dense(self), c.dim, dense(index), dense(src), "", true));
    EXPECT_EQ(values(self.scatter_add(c.dim, index, src)),
              naive_scatter(dense(self), c.dim, dense(index), dense(src), "sum", true));
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
      for (bool include_self : {true, false}) {
        EXPECT_EQ(values(self.scatter_reduce(c.dim, index, src, reduce, include_self)),
                  naive_scatter(dense(self), c.dim, dense(index), dense(src), reduce, include_self))
            << reduce << " include_self " << include_self;
      }
    }
    // In place through a non-contiguous view: the write reaches the base.
    std::vector<int64_t> reversed(c.self_sizes.rbegin(), c.self_sizes.rend());
    std::vector<int64_t> perm;
    for (int64_t d = static_cast<int64_t>(reversed.size()) - 1; d >= 0; --d) perm.push_back(d);
    Tensor base = random_values(reversed, 300 + trial);
    Tensor view = base.permute(perm);
    const std::vector<double> want =
        naive_scatter(dense(view), c.dim, dense(index), dense(src), "", true);
    view.scatter_(c.dim, index, src);
    EXPECT_EQ(values(view), want);
    EXPECT_EQ(base.version(), 1u);
  }
}

TEST(ScatterOps, DuplicatesResolveInIndexOrder) {
  // float32 values whose sum depends on the order: the kernel must add in index order.
  Generator gen(3);
  const std::vector<int64_t> where = {2, 0, 2, 2, 1, 0, 2, 2, 2};
  Tensor src = dev(randn({9}, gen, kFloat32) * 1e4);
  Tensor x = dev(randn({3}, gen, kFloat32));
  std::vector<double> start = values(x);
  std::vector<float> want(start.begin(), start.end());
  const std::vector<double> s = values(src);
  for (size_t i = 0; i < where.size(); ++i) {
    want[static_cast<size_t>(where[i])] += static_cast<float>(s[i]);
  }
  x.scatter_add_(0, idx(where), src);
  const std::vector<double> got = values(x);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(static_cast<float>(got[i]), want[i]) << i;
  // scatter_ keeps the last write of each destination; put_ too (negative indices wrap there).
  Tensor y = dev(zeros({3}, kFloat64));
  y.scatter_(0, idx({1, 2, 1, 1, 2}), dev(tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64)));
  EXPECT_EQ(values(y), (std::vector<double>{0, 4, 5}));
  y.put_(idx({0, -3, 0}), dev(tensor({7.0, 8.0, 9.0}, kFloat64)));
  EXPECT_EQ(values(y), (std::vector<double>{9, 4, 5}));
  y.put_(idx({-1, 2}), dev(tensor({1.0, 2.0}, kFloat64)), /*accumulate=*/true);
  EXPECT_EQ(values(y), (std::vector<double>{9, 4, 8}));
  // amax propagates NaN; integer mean rounds toward negative infinity.
  Tensor m = dev(tensor({1.0, 1.0}, kFloat64));
  m.scatter_reduce_(0, idx({0, 0}), dev(tensor({NAN, 5.0}, kFloat64)), "amax");
  EXPECT_TRUE(std::isnan(values(m)[0]));
  Tensor q = dev(tensor({0, 0}, kInt64));
  q.scatter_reduce_(0, idx({0, 0, 1}), dev(tensor({-3, -4, 7}, kInt64)), "mean", false);
  EXPECT_EQ(values(q), (std::vector<double>{-4, 7}));  // floor(-7 / 2), 7
}

TEST(ScatterOps, TakePutAndMaskedOpsMatchRowMajorLoops) {
  // A non-contiguous self: take and put_ number its elements in row-major order.
  Tensor base = dev(arange(12, kFloat64).view({3, 4}));
  Tensor x = base.t();  // [4, 3]
  const std::vector<double> xs = values(x);
  EXPECT_EQ(values(x.take(idx({0, 1, 5, -1}, {2, 2}))),
            (std::vector<double>{xs[0], xs[1], xs[5], xs[11]}));
  x.put_(idx({1, 4}), dev(tensor({-1.0, -2.0}, kFloat64)));
  std::vector<double> want = xs;
  want[1] = -1;
  want[4] = -2;
  EXPECT_EQ(values(x), want);
  EXPECT_EQ(base.version(), 1u);  // every alias sees the write
  Tensor mask = dev(tensor({true, false, true}, kBool));
  EXPECT_EQ(values(x.masked_select(mask)),
            (std::vector<double>{want[0], want[2], want[3], want[5], want[6], want[8], want[9],
                                 want[11]}));
  x.masked_scatter_(mask, dev(arange(100, 112, 1, kFloat64)));
  for (size_t i = 0, k = 100; i < want.size(); ++i) {
    if (i % 3 != 1) want[i] = static_cast<double>(k++);
  }
  EXPECT_EQ(values(x), want);
  EXPECT_EQ(base.version(), 2u);
}

TEST(ScatterOps, GradientsAtEveryArgument) {
  Tensor dup = idx({1, 0, 1, 2, 2, 2}, {3, 2});
  CHECK_GRADS([dup](const VariableList& in) { return in[0].gather(0, dup); },
              {strided_leaf({3, 2}, 1)});
  CHECK_GRADS([dup](const VariableList& in) { return in[0].scatter(0, dup, in[1]); },
              {leaf({3, 2}, 2), strided_leaf({3, 2}, 3)});
  CHECK_GRADS([dup](const VariableList& in) { return in[0].scatter(0, dup, 0.5); },
              {leaf({3, 3}, 4)});
  // src larger than index: the rest of src gets a zero gradient.
  CHECK_GRADS([dup](const VariableList& in) { return in[0].scatter_add(0, dup, in[1]); },
              {leaf({3, 2}, 5), leaf({4, 3}, 6)});
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      SCOPED_TRACE(::testing::Message() << reduce << " include_self " << include_self);
      CHECK_GRADS(
          [dup, reduce, include_self](const VariableList& in) {
            return in[0].scatter_reduce(0, dup, in[1], reduce, include_self);
          },
          {leaf({3, 2}, 7, 0.5, 2.0), leaf({3, 2}, 8, 0.5, 2.0)});
    }
  }
  Tensor flat = idx({5, -1, 0, 2}, {2, 2});
  CHECK_GRADS([flat](const VariableList& in) { return in[0].take(flat); },
              {strided_leaf({2, 3}, 9)});
  for (bool accumulate : {false, true}) {
    CHECK_GRADS(
        [accumulate](const VariableList& in) {
          return in[0].put(idx({4, 1, 4, -2}), in[1], accumulate);
        },
        {strided_leaf({2, 3}, 10), leaf({2, 2}, 11)});
  }
  Tensor mask = dev(tensor({{true, false, true}, {false, false, true}}, kBool));
  // Strided: torch 1.13's CPU backward of masked_select uses memory order there (wrong).
  CHECK_GRADS([mask](const VariableList& in) { return in[0].masked_select(mask); },
              {strided_leaf({2, 3}, 12)});
  CHECK_GRADS([mask](const VariableList& in) { return in[0].masked_select(mask.select(0, 0)); },
              {leaf({2, 3}, 13)});  // the mask broadcasts
  CHECK_GRADS([mask](const VariableList& in) { return in[0].masked_scatter(mask, in[1]); },
              {strided_leaf({2, 3}, 14), leaf({5}, 15)});
}

TEST(ScatterOps, InPlaceWritesIntoViewsOfNonLeavesAreDifferentiable) {
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.narrow(1, 1, 2).scatter_add_(1, idx({1, 1, 0, 1}, {2, 2}), in[1]);
        return h;
      },
      {leaf({2, 4}, 16), leaf({2, 2}, 17)});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.select(0, 1).scatter_reduce_(0, idx({0, 2, 0}), in[1], "prod", false);
        return h * h;
      },
      {leaf({2, 3}, 18, 0.5, 2.0), leaf({3}, 19, 0.5, 2.0)});
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.t().put_(idx({0, 3}), in[1]);
        h.masked_scatter_(h.gt(zeros_like(h)), in[1].reshape({2, 1}).expand({2, 2}));
        return h;
      },
      {leaf({2, 2}, 20), leaf({2}, 21)});
}

TEST(ScatterOps, ProdGradientWithZeros) {
  // One zero in a group: its gradient is the product of the others; two zeros: all zero.
  Tensor x = dev(tensor({2.0, 3.0}, kFloat64)).requires_grad_();
  Tensor src = dev(tensor({0.0, 5.0, 0.0, 0.0}, kFloat64)).requires_grad_();
  Tensor y = x.scatter_reduce(0, idx({0, 0, 1, 1}), src, "prod");
  y.sum().backward();
  EXPECT_EQ(values(src.grad()), (std::vector<double>{10, 0, 0, 0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0}));
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].scatter_reduce(0, idx({0, 0, 1}),
                                    in[1] * dev(tensor({0.0, 1.0, 1.0}, kFloat64)), "prod");
      },
      {leaf({2}, 22), leaf({3}, 23)});
}

TEST(ScatterOps, NodeNamesArePyTorchs) {
  Tensor x = leaf({3, 2}, 24);
  Tensor s = leaf({2, 2}, 25);
  Tensor i = idx({2, 0, 1, 1}, {2, 2});
  EXPECT_STREQ(x.gather(0, i).grad_fn()->name(), "GatherBackward0");
  EXPECT_STREQ(x.scatter(0, i, s).grad_fn()->name(), "ScatterBackward0");
  EXPECT_STREQ(x.scatter(0, i, 1.0).grad_fn()->name(), "ScatterBackward1");
  EXPECT_STREQ(x.scatter_add(0, i, s).grad_fn()->name(), "ScatterAddBackward0");
  EXPECT_STREQ(x.scatter_reduce(0, i, s, "amin").grad_fn()->name(), "ScatterReduceBackward0");
  EXPECT_STREQ(x.take(i).grad_fn()->name(), "TakeBackward0");
  EXPECT_STREQ(x.put(i, s).grad_fn()->name(), "PutBackward0");
  Tensor m = dev(tensor({true, false}, kBool));
  EXPECT_STREQ(x.masked_select(m).grad_fn()->name(), "MaskedSelectBackward0");
  EXPECT_STREQ(x.masked_scatter(m, s).grad_fn()->name(), "MaskedScatterBackward0");
  Tensor h = x * 2.0;
  h.scatter_add_(0, i, s);
  EXPECT_STREQ(h.grad_fn()->name(), "ScatterAddBackward0");
}

TEST(ScatterOps, StaleSavedTensorNamesTheWrite) {
  const std::vector<std::pair<const char*, std::function<void(Tensor&)>>> writes = {
      {"scatter_", [](Tensor& y) { y.scatter_(0, idx({0}), 1.0); }},
      {"scatter_add_", [](Tensor& y) { y.scatter_add_(0, idx({0}), y.detach().clone()); }},
      {"scatter_reduce_",
       [](Tensor& y) { y.scatter_reduce_(0, idx({1}), y.detach().clone(), "amax"); }},
      {"put_", [](Tensor& y) { y.put_(idx({2}), dev(tensor({1.0}, kFloat64))); }},
      {"masked_scatter_",
       [](Tensor& y) {
         y.masked_scatter_(dev(tensor({true, false, false}, kBool)), y.detach());
       }},
  };
  for (const auto& [op, write] : writes) {
    Tensor x = leaf({3}, 26);
    Tensor y = x.exp();
    Tensor z = y * y;  // saves y
    write(y);
    EXPECT_EQ(y.version(), 1u) << op;
    const std::string message = error_of([&] { z.sum().backward(); });
    EXPECT_NE(message.find(op), std::string::npos) << message;
    EXPECT_NE(message.find("scatter_ops_test.cc"), std::string::npos) << message;
  }
}

TEST(ScatterOps, RefusedWritesChangeNothing) {
  Tensor x = dev(arange(6, kFloat64).view({2, 3}));
  const std::vector<double> before = values(x);
  Tensor src = dev(ones({2, 3}, kFloat64));
  Tensor ok = idx({0, 1, 2}, {1, 3});
  EXPECT_THROW(x.scatter_(1, idx({0, 3, 1}, {1, 3}), src), IndexError);      // out of range
  EXPECT_THROW(x.scatter_(1, idx({0, -1, 1}, {1, 3}), src), IndexError);     // negatives too
  EXPECT_THROW(x.scatter_add_(0, idx({0, 1, 0}, {3, 1}), src), ShapeError);  // index > self
  EXPECT_THROW(x.scatter_add_(1, idx({0, 1}, {1, 1, 2}), src), ShapeError);  // ndim
  EXPECT_THROW(x.scatter_(1, ok, src.to(kFloat32)), DTypeError);
  EXPECT_THROW(x.scatter_(1, ok.to(kInt32), src), DTypeError);
  EXPECT_THROW(x.scatter_(2, ok, src), IndexError);  // dim
  EXPECT_THROW(x.scatter_reduce_(1, ok, src, "max"), ValueError);
  EXPECT_THROW(dev(zeros({2}, kInt32)).scatter_(0, idx({0}), 1e10), ValueError);
  EXPECT_THROW(x.put_(idx({6}), dev(ones({1}, kFloat64))), IndexError);
  EXPECT_THROW(x.put_(idx({0, 1}), dev(ones({3}, kFloat64))), IndexError);
  EXPECT_THROW(x.put_(idx({0}), dev(ones({1}, kFloat32))), DTypeError);
  EXPECT_THROW(x.masked_scatter_(dev(ones({2, 3}, kBool)), dev(ones({5}, kFloat64))), ShapeError);
  EXPECT_THROW(x.masked_scatter_(dev(ones({2, 3}, kFloat64)), src), DTypeError);
  EXPECT_THROW(x.masked_scatter_(dev(ones({4}, kBool)), src), ShapeError);
  EXPECT_THROW(x.gather(1, idx({3}, {1, 1})), IndexError);
  EXPECT_THROW(x.take(idx({-7})), IndexError);
  EXPECT_EQ(values(x), before);
  EXPECT_EQ(x.version(), 0u);
  // An expanded destination: its elements share memory.
  Tensor e = dev(zeros({1}, kFloat64)).expand({3});
  EXPECT_THROW(e.put_(idx({0}), dev(ones({1}, kFloat64))), ValueError);
  EXPECT_THROW(e.scatter_(0, idx({0}), 1.0), ValueError);
}

// Backend::index_put_checked on this device: the CPU's checking loop, and on the CUDA device
// the default (the screen, then index_put). In range: the bits of index_put in index order, with
// negatives wrapping only when asked; an offender: false (what was written is the caller's to
// drop; the default writes nothing).
TEST(ScatterOps, CheckedWriteKernelOnThisDevice) {
  Backend& backend = backend_for(dev(zeros({1})).device());
  const std::vector<double> v = {1.5, 2.5, 3.5, 4.5};
  const Tensor vals = dev(from_vector(v, {4}));
  const std::vector<Tensor> good = {idx({3, 9, 3, 0})};
  Tensor x = dev(arange(10, kFloat64));
  ASSERT_TRUE(backend.index_put_checked(x, good, vals, good, IndexPutDescriptor{true}, false));
  std::vector<double> added = {4.5, 1, 2, 3 + 1.5 + 3.5, 4, 5, 6, 7, 8, 9 + 2.5};
  EXPECT_EQ(values(x), added);
  const std::vector<Tensor> wrapping = {idx({3, -1, 3, 0})};
  Tensor y = dev(arange(10, kFloat64));
  ASSERT_TRUE(
      backend.index_put_checked(y, wrapping, vals, wrapping, IndexPutDescriptor{false}, true));
  EXPECT_EQ(values(y), (std::vector<double>{4.5, 1, 2, 3.5, 4, 5, 6, 7, 8, 2.5}));
  for (const std::vector<int64_t>& wrong :
       {std::vector<int64_t>{3, 10, 3, 0}, std::vector<int64_t>{3, 9, 3, -11}}) {
    const std::vector<Tensor> list = {idx(wrong)};
    Tensor z = dev(arange(10, kFloat64));
    EXPECT_FALSE(backend.index_put_checked(z, list, vals, list, IndexPutDescriptor{true}, true));
  }
  const std::vector<Tensor> negative = {idx({3, -1, 3, 0})};
  Tensor w = dev(arange(10, kFloat64));
  EXPECT_FALSE(
      backend.index_put_checked(w, negative, vals, negative, IndexPutDescriptor{false}, false));
}

// Many values into a small tensor are written into a copy first on the CPU (Note [Staged
// writes] in tensor/native/index_ops.cc): an offender anywhere still changes nothing and moves
// no version, and a good write is the naive loop's with one bump.
TEST(ScatterOps, ManyValuesIntoASmallTensor) {
  std::vector<int64_t> many(300);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>((i * 7) % 10);
  std::vector<double> src_values(many.size());
  for (size_t i = 0; i < many.size(); ++i) src_values[i] = 0.25 * static_cast<double>(i % 13);
  const Tensor src = dev(from_vector(src_values, {300}));
  Tensor x = dev(arange(10, kFloat64));
  const std::vector<double> before = values(x);
  for (size_t pos : {size_t{0}, size_t{150}, size_t{299}}) {
    std::vector<int64_t> wrong = many;
    wrong[pos] = 10;
    EXPECT_THROW(x.scatter_add_(0, idx(wrong), src), IndexError) << pos;
    EXPECT_THROW(x.scatter_(0, idx(wrong), src), IndexError) << pos;
    EXPECT_THROW(x.put_(idx(wrong), src, /*accumulate=*/true), IndexError) << pos;
    EXPECT_THROW(x.index_add_(0, idx(wrong), src), IndexError) << pos;
    EXPECT_THROW(x.index_copy_(0, idx(wrong), src), IndexError) << pos;
    EXPECT_THROW(x.index_put_({idx(wrong)}, src), IndexError) << pos;
  }
  EXPECT_EQ(values(x), before);
  EXPECT_EQ(x.version(), 0u);
  std::vector<double> added = before;
  std::vector<double> copied = before;
  for (size_t i = 0; i < many.size(); ++i) {
    added[static_cast<size_t>(many[i])] += src_values[i];
    copied[static_cast<size_t>(many[i])] = src_values[i];
  }
  x.scatter_add_(0, idx(many), src);
  EXPECT_EQ(values(x), added);
  EXPECT_EQ(x.version(), 1u);
  Tensor y = dev(arange(10, kFloat64));
  y.scatter_(0, idx(many), src);
  EXPECT_EQ(values(y), copied);
  EXPECT_EQ(y.version(), 1u);
}

}  // namespace
}  // namespace mutagrad
