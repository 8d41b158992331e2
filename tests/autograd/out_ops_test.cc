// out= forms (autograd/ops/out_ops.h): for a table of ops, the values are the out-of-place op's,
// the write is one version bump with the call site ("<op>_out"), a view out writes its base,
// torch's resize / dtype / device / autograd rules refuse before changing anything, and an out
// aliasing an input gives the values of the inputs before the call.
#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::test_device;
using testing_util::values;

// A float64 tensor of the given sizes with distinct values in (-1, 1), not requiring grad.
Tensor data(IntArrayRef sizes, uint64_t seed) { return leaf(sizes, seed).detach(); }

struct OutCase {
  const char* name;
  std::function<Tensor()> expected;              // the out-of-place result
  std::function<void(const Tensor& out)> write;  // the *_out call
  ScalarType dtype = kFloat64;                   // the result's dtype
};

std::vector<OutCase> cases() {
  const Tensor a = data({2, 3}, 1), b = data({2, 3}, 2), pos = abs(data({2, 3}, 3)) + 0.5;
  const Tensor m = data({3, 4}, 4), batch = data({2, 3, 3}, 5), c = data({2, 1}, 6);
  const Tensor index = dev(tensor({2, 0}));
  const Tensor gather_index = dev(tensor({0, 2, 1, 1, 0, 0})).reshape({2, 3});
  const Tensor condition = a > b;
  return {
      {"add", [=] { return add(a, b, 2); }, [=](const Tensor& o) { add_out(o, a, b, 2); }},
      {"sub", [=] { return sub(a, c); }, [=](const Tensor& o) { sub_out(o, a, c); }},
      {"mul", [=] { return mul(a, b); }, [=](const Tensor& o) { mul_out(o, a, b); }},
      {"div", [=] { return div(a, pos); }, [=](const Tensor& o) { div_out(o, a, pos); }},
      {"pow", [=] { return pow(pos, b); }, [=](const Tensor& o) { pow_out(o, pos, b); }},
      {"pow scalar", [=] { return pow(a, 3); }, [=](const Tensor& o) { pow_out(o, a, 3); }},
      {"neg", [=] { return neg(a); }, [=](const Tensor& o) { neg_out(o, a); }},
      {"abs", [=] { return abs(a); }, [=](const Tensor& o) { abs_out(o, a); }},
      {"exp", [=] { return exp(a); }, [=](const Tensor& o) { exp_out(o, a); }},
      {"log", [=] { return log(pos); }, [=](const Tensor& o) { log_out(o, pos); }},
      {"sqrt", [=] { return sqrt(pos); }, [=](const Tensor& o) { sqrt_out(o, pos); }},
      {"sin", [=] { return sin(a); }, [=](const Tensor& o) { sin_out(o, a); }},
      {"cos", [=] { return cos(a); }, [=](const Tensor& o) { cos_out(o, a); }},
      {"tanh", [=] { return tanh(a); }, [=](const Tensor& o) { tanh_out(o, a); }},
      {"sigmoid", [=] { return sigmoid(a); }, [=](const Tensor& o) { sigmoid_out(o, a); }},
      {"clamp", [=] { return clamp(a, -0.5, 0.5); },
       [=](const Tensor& o) { clamp_out(o, a, -0.5, 0.5); }},
      {"where", [=] { return where(condition, a, b); },
       [=](const Tensor& o) { where_out(o, condition, a, b); }},
      {"sum", [=] { return sum(a, {1}); }, [=](const Tensor& o) { sum_out(o, a, {1}); }},
      {"mean", [=] { return mean(a, {0}, true); },
       [=](const Tensor& o) { mean_out(o, a, {0}, true); }},
      {"prod", [=] { return prod(a, {1}); }, [=](const Tensor& o) { prod_out(o, a, 1); }},
      {"amax", [=] { return amax(a, {0}); }, [=](const Tensor& o) { amax_out(o, a, {0}); }},
      {"amin", [=] { return amin(a, {1}); }, [=](const Tensor& o) { amin_out(o, a, {1}); }},
      {"argmax", [=] { return argmax(a, 1); }, [=](const Tensor& o) { argmax_out(o, a, 1); },
       kInt64},
      {"mm", [=] { return mm(a, m); }, [=](const Tensor& o) { mm_out(o, a, m); }},
      {"matmul", [=] { return matmul(a, m); }, [=](const Tensor& o) { matmul_out(o, a, m); }},
      {"bmm", [=] { return bmm(batch, batch); },
       [=](const Tensor& o) { bmm_out(o, batch, batch); }},
      {"addmm", [=] { return addmm(a, a, m.narrow(1, 0, 3), 0.5, 2); },
       [=](const Tensor& o) { addmm_out(o, a, a, m.narrow(1, 0, 3), 0.5, 2); }},
      {"cat",
       [=] {
         return cat({a, b}, 1);
       },
       [=](const Tensor& o) {
         cat_out(o, {a, b}, 1);
       }},
      {"stack",
       [=] {
         return stack({a, b});
       },
       [=](const Tensor& o) {
         stack_out(o, {a, b});
       }},
      {"index_select", [=] { return a.index_select(1, index); },
       [=](const Tensor& o) { index_select_out(o, a, 1, index); }},
      {"gather", [=] { return gather(a, 1, gather_index); },
       [=](const Tensor& o) { gather_out(o, a, 1, gather_index); }},
  };
}

Tensor empty_out(ScalarType dtype = kFloat64) {
  return empty({0}, TensorOptions(dtype).device(test_device()));
}

// An out with zero elements takes the result's shape; the write is one bump at this file.
TEST(OutOps, EveryOpWritesItsResultIntoAnEmptyOut) {
  for (const OutCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Tensor expected = c.expected();
    Tensor out = empty_out(c.dtype);
    c.write(out);
    EXPECT_EQ(out.sizes(), expected.sizes());
    EXPECT_EQ(out.dtype(), c.dtype);
    EXPECT_EQ(values(out), values(expected));
    EXPECT_EQ(out.version(), 1u);
    const auto site = out.unsafe_impl()->version_counter().site_of_bump(0);
    ASSERT_TRUE(site.has_value());
    EXPECT_EQ(std::string(site->op).substr(std::string(site->op).size() - 4), "_out");
    EXPECT_EQ(std::string(site->file), __FILE__);
  }
}

// An out of the right shape that is a view (here a transposed slice of a base): the write goes
// through to the base, which is bumped once (views share the counter), and out keeps its strides.
TEST(OutOps, AViewOutWritesItsBase) {
  for (const OutCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Tensor expected = c.expected();
    DimVector sizes;
    sizes.push_back(2);
    for (int64_t s : expected.sizes()) sizes.push_back(s);
    const Tensor base = zeros(sizes, TensorOptions(c.dtype).device(test_device()));
    const Tensor out = base.select(0, 1);
    c.write(out);
    EXPECT_EQ(base.version(), 1u);
    EXPECT_EQ(values(base.select(0, 1)), values(expected));
    EXPECT_EQ(values(base.select(0, 0)), std::vector<double>(expected.numel(), 0.0));
  }
}

TEST(OutOps, ANonEmptyOutOfAnotherShapeIsResizedWithTorchsWarning) {
  const Tensor a = data({2, 3}, 1), b = data({2, 3}, 2);
  Tensor out = dev(zeros({4}, kFloat64));
  std::vector<std::string> warnings;
  autograd::write_out("add", out, add(a, b), CallSite::current(), autograd::OutDType::kCastable,
                      [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("An output with one or more elements was resized since it had shape "
                             "[4], which does not match the required output shape [2, 3]"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(values(out), values(add(a, b)));
  EXPECT_EQ(out.version(), 1u);
  // A warning that throws (Python's warnings-as-errors) leaves out as it was.
  Tensor other = dev(zeros({5}, kFloat64));
  EXPECT_THROW(autograd::write_out("add", other, add(a, b), CallSite::current(),
                                   autograd::OutDType::kCastable,
                                   [](const std::string& w) { throw ValueError(w); }),
               ValueError);
  EXPECT_EQ(other.sizes(), IntArrayRef({5}));
  EXPECT_EQ(other.version(), 0u);
}

// What a refused call must leave: out's values, shape and version, and those of its base.
struct Snapshot {
  explicit Snapshot(const Tensor& t)
      : t(t), sizes(t.sizes()), vals(values(t)), version(t.version()) {}
  void expect_unchanged() const {
    EXPECT_EQ(t.sizes(), IntArrayRef(sizes));
    EXPECT_EQ(values(t), vals);
    EXPECT_EQ(t.version(), version);
  }
  Tensor t;
  DimVector sizes;
  std::vector<double> vals;
  uint32_t version;
};

TEST(OutOps, AnOutThatCannotBeResizedSafelyIsRefused) {
  const Tensor a = data({2, 3}, 1);
  // A view of another shape, with and without elements.
  const Tensor base = dev(zeros({8}, kFloat64));
  for (const Tensor& out : {base.narrow(0, 0, 4), base.narrow(0, 2, 0)}) {
    const Snapshot before(base);
    const std::string m = error_of<ShapeError>([&] { neg_out(out, a); });
    EXPECT_NE(m.find("is a view of another tensor"), std::string::npos) << m;
    before.expect_unchanged();
    EXPECT_EQ(out.dim(), 1);
  }
  // A tensor sharing its storage with another (a detached twin).
  const Tensor owner = dev(zeros({4}, kFloat64));
  const Tensor twin = owner.detach();
  const Snapshot before(owner);
  const std::string m = error_of<ShapeError>([&] { neg_out(owner, a); });
  EXPECT_NE(m.find("shares its storage with another tensor"), std::string::npos) << m;
  before.expect_unchanged();
  // Memory wrapped from elsewhere: its owner would stop seeing the tensor. Of the right shape,
  // the write reaches the memory.
  if (test_device().is_cpu()) {
    std::vector<double> memory(4, 1.0);
    const Tensor wrapped = from_blob(memory.data(), {4}, {1}, kFloat64, nullptr);
    const std::string w = error_of<ShapeError>([&] { neg_out(wrapped, a); });
    EXPECT_NE(w.find("wraps memory owned elsewhere"), std::string::npos) << w;
    EXPECT_EQ(wrapped.sizes(), IntArrayRef({4}));
    EXPECT_EQ(memory, std::vector<double>(4, 1.0));
    const Tensor src = data({4}, 9);
    neg_out(wrapped, src);
    EXPECT_EQ(memory, values(neg(src)));
  }
}

TEST(OutOps, DTypesFollowCanCast) {
  const Tensor a = data({2, 3}, 1), b = data({2, 3}, 2);
  // Float into an integer out: torch's message, nothing changed.
  const Tensor long_out = dev(zeros({2, 3}, kInt64));
  const Snapshot before(long_out);
  const std::string m = error_of<DTypeError>([&] { add_out(long_out, a, b); });
  EXPECT_NE(m.find("result type Double can't be cast to the desired output type Long"),
            std::string::npos)
      << m;
  before.expect_unchanged();
  // Integers into a float out, float64 into float32: cast.
  const Tensor ints = dev(arange(6)).reshape({2, 3});
  Tensor float_out = empty_out(kFloat32);
  add_out(float_out, ints, ints);
  EXPECT_EQ(values(float_out), std::vector<double>({0, 2, 4, 6, 8, 10}));
  Tensor narrow_out = empty_out(kFloat32);
  mul_out(narrow_out, a, b);
  EXPECT_EQ(values(narrow_out), values(mul(a, b).to(kFloat32)));
  // Index outputs and products want the result's dtype exactly.
  const Tensor int_out = dev(zeros({2}, kInt32));
  const Snapshot int_before(int_out);
  error_of<DTypeError>([&] { argmax_out(int_out, a, 1); });
  int_before.expect_unchanged();
  const Tensor float_mm = empty_out(kFloat32);
  error_of<DTypeError>([&] { mm_out(float_mm, a, a.t()); });
  EXPECT_EQ(float_mm.numel(), 0);
}

TEST(OutOps, AutogradIsRefusedBeforeAnyWrite) {
  const Tensor x = leaf({2, 3}, 1), b = data({2, 3}, 2);
  const Tensor out = dev(zeros({2, 3}, kFloat64));
  const Snapshot before(out);
  const std::string m = error_of([&] { add_out(out, x, b); });
  EXPECT_EQ(m, std::string("add") + autograd::kOutRequiresGradMessage);
  before.expect_unchanged();
  // Tuple outs: both untouched.
  const Tensor values_out = dev(zeros({2, 3}, kFloat64)), indices_out = dev(zeros({2, 3}, kInt64));
  const Snapshot v_before(values_out), i_before(indices_out);
  error_of([&] { sort_out(values_out, indices_out, x, 1); });
  v_before.expect_unchanged();
  i_before.expect_unchanged();
  // An out that requires grad.
  const Tensor grad_out = leaf({2, 3}, 3);
  error_of([&] { add_out(grad_out, b, b); });
  // In no-grad mode, and for a non-differentiable result, inputs may require grad.
  {
    NoGradGuard no_grad;
    add_out(out, x, b);
    EXPECT_EQ(values(out), values(add(x.detach(), b)));
    EXPECT_EQ(out.version(), 1u);
  }
  Tensor indices = empty_out(kInt64);
  argmax_out(indices, x, 1);
  EXPECT_EQ(values(indices), values(argmax(x.detach(), 1)));
}

TEST(OutOps, TupleOutsAreWrittenOnceEach) {
  const Tensor a = data({3, 4}, 7);
  const auto [sv, si] = sort(a, 1, true);
  Tensor v = empty_out(), i = empty_out(kInt64);
  sort_out(v, i, a, 1, true);
  EXPECT_EQ(values(v), values(sv));
  EXPECT_EQ(values(i), values(si));
  EXPECT_EQ(v.version(), 1u);
  EXPECT_EQ(i.version(), 1u);
  const auto [tv, ti] = topk(a, 2, 0);
  topk_out(v, i, a, 2, 0);
  EXPECT_EQ(values(v), values(tv));
  EXPECT_EQ(values(i), values(ti));
  const auto [mv, mi] = max_dim(a, 1, true);
  max_out(v, i, a, 1, true);
  EXPECT_EQ(values(v), values(mv));
  EXPECT_EQ(values(i), values(mi));
  const auto [nv, ni] = min_dim(a, 0);
  min_out(v, i, a, 0);
  EXPECT_EQ(values(v), values(nv));
  EXPECT_EQ(values(i), values(ni));
  // A float indices out is refused; the values out is left as it was too.
  const Snapshot before(v);
  const Tensor float_indices = empty_out();
  error_of<DTypeError>([&] { sort_out(v, float_indices, a); });
  before.expect_unchanged();
  EXPECT_EQ(float_indices.numel(), 0);
}

// Note [out= computes out of place]: out aliasing an input, whole or in part.
TEST(OutOps, AnOutAliasingAnInputSeesTheInputsBeforeTheCall) {
  Tensor a = data({2, 3}, 1);
  const Tensor b = data({2, 3}, 2);
  const Tensor expected = add(a, b);
  add_out(a, a, b);
  EXPECT_EQ(values(a), values(expected));
  EXPECT_EQ(a.version(), 1u);
  // out = x[1:5] and the inputs x[0:4], x[2:6].
  const Tensor x = dev(arange(8, kFloat64));
  const Tensor lhs = x.narrow(0, 0, 4), rhs = x.narrow(0, 2, 4);
  const Tensor want = mul(lhs.clone(), rhs.clone());
  mul_out(x.narrow(0, 1, 4), lhs, rhs);
  EXPECT_EQ(values(x.narrow(0, 1, 4)), values(want));
  EXPECT_EQ(values(x), std::vector<double>({0, 0, 3, 8, 15, 5, 6, 7}));
  // matmul into one of its operands.
  Tensor sq = data({3, 3}, 9);
  const Tensor product = mm(sq, sq);
  mm_out(sq, sq, sq);
  EXPECT_EQ(values(sq), values(product));
}

// The write is a tracked in-place write: a tensor saved from out is stale afterwards.
TEST(OutOps, SavedTensorsOfOutBecomeStale) {
  const Tensor w = leaf({3}, 1);
  const Tensor out = data({3}, 2);
  const Tensor y = (w * out).sum();  // MulBackward0 saves out
  exp_out(out, data({3}, 3));
  const std::string m = error_of([&] { y.backward(); });
  EXPECT_NE(m.find("modified by an inplace operation"), std::string::npos) << m;
  EXPECT_NE(m.find("exp_out"), std::string::npos) << m;
}

TEST(OutOps, AnOutOnAnotherDeviceIsRefused) {
  if (test_device().is_cpu()) GTEST_SKIP() << "needs a second device: the _cuda twin runs it";
  const Tensor a = data({2, 3}, 1);
  const Tensor cpu_out = zeros({2, 3}, kFloat64);
  const Snapshot before(cpu_out);
  error_of<DeviceError>([&] { neg_out(cpu_out, a); });
  before.expect_unchanged();
}

}  // namespace
}  // namespace mutagrad
