// Forward-mode AD (autograd/forward_ad.h): each op's tangent against central differences and
// the double-vjp jvp (autograd::jvp), the mutation rules (views and bases carrying tangents
// after in-place writes, values hand-derived and checked against torch 1.13's forward AD),
// forward-over-reverse HVPs, and the typed errors. Runs on both devices (:_cuda twin).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "tests/autograd/grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using forward_ad::dual_level;
using forward_ad::make_dual;
using forward_ad::unpack_dual;
using testing_util::dev;
using testing_util::error_of;
using testing_util::expect_close;
using testing_util::leaf;
using testing_util::values;

using Fn = std::function<Tensor(const VariableList&)>;

Tensor constant(IntArrayRef sizes, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return leaf(sizes, seed, lo, hi).detach();
}

// The forward-mode jvp of fn at `inputs` along `tangents`.
Tensor forward_jvp(const Fn& fn, const VariableList& inputs, const VariableList& tangents) {
  dual_level level;
  VariableList duals;
  for (size_t i = 0; i < inputs.size(); ++i) duals.push_back(make_dual(inputs[i], tangents[i]));
  Tensor out = fn(duals);
  Tensor tangent = unpack_dual(out).tangent;
  return tangent.defined() ? tangent.detach().clone() : zeros_like(out.detach());
}

// Central differences along the tangents: (f(x + e v) - f(x - e v)) / 2e.
Tensor numeric_jvp(const Fn& fn, const VariableList& inputs, const VariableList& tangents) {
  const double eps = 1e-6;
  autograd::NoGradGuard no_grad;
  VariableList plus, minus;
  for (size_t i = 0; i < inputs.size(); ++i) {
    plus.push_back(inputs[i] + tangents[i] * eps);
    minus.push_back(inputs[i] - tangents[i] * eps);
  }
  return (fn(plus) - fn(minus)) / (2 * eps);
}

// Forward jvp == central differences == double-vjp jvp (autograd::jvp), float64.
void check_forward(const std::string& name, const Fn& fn, const VariableList& inputs,
                   bool double_vjp = true) {
  SCOPED_TRACE(name);
  VariableList tangents, primals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    primals.push_back(inputs[i].detach());
    tangents.push_back(constant(inputs[i].sizes(), 100 + i));
  }
  const Tensor fw = forward_jvp(fn, primals, tangents);
  const Tensor num = numeric_jvp(fn, primals, tangents);
  expect_close(fw, values(num), 1e-5);
  if (!double_vjp) return;
  VariableList grad_inputs;
  for (const Tensor& p : primals) grad_inputs.push_back(p.clone().requires_grad_());
  autograd::FunctionalResult rev =
      autograd::jvp(autograd::TensorFunction([&](const VariableList& in) { return fn(in); }),
                    grad_inputs, tangents);
  expect_close(fw, values(rev.result[0]), 1e-9);
}

TEST(ForwardAdOps, ElementwiseUnary) {
  const Tensor x = constant({3, 4}, 1, 0.2, 1.5);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"neg", [](const Tensor& t) { return t.neg(); }},
      {"exp", [](const Tensor& t) { return t.exp(); }},
      {"log", [](const Tensor& t) { return t.log(); }},
      {"sqrt", [](const Tensor& t) { return t.sqrt(); }},
      {"sin", [](const Tensor& t) { return t.sin(); }},
      {"cos", [](const Tensor& t) { return t.cos(); }},
      {"tanh", [](const Tensor& t) { return t.tanh(); }},
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }},
      {"relu", [](const Tensor& t) { return (t - 0.8).relu(); }},
      {"pow", [](const Tensor& t) { return t.pow(3); }},
      {"rsqrt", [](const Tensor& t) { return t.rsqrt(); }},
      {"reciprocal", [](const Tensor& t) { return t.reciprocal(); }},
      {"abs", [](const Tensor& t) { return (t - 0.8).abs(); }},
      {"clamp", [](const Tensor& t) { return t.clamp(0.5, 1.0); }},
      {"erf", [](const Tensor& t) { return t.erf(); }},
      {"log1p", [](const Tensor& t) { return t.log1p(); }},
      {"square", [](const Tensor& t) { return t.square(); }},
  };
  for (const auto& [name, op] : ops) {
    check_forward(name, [op = op](const VariableList& in) { return op(in[0]); }, {x});
  }
}

TEST(ForwardAdOps, InPlaceUnary) {
  const Tensor x = constant({5}, 2, 0.2, 1.5);
  const std::vector<std::pair<std::string, std::function<void(Tensor&)>>> ops = {
      {"exp_", [](Tensor& t) { t.exp_(); }},
      {"sin_", [](Tensor& t) { t.sin_(); }},
      {"tanh_", [](Tensor& t) { t.tanh_(); }},
      {"sigmoid_", [](Tensor& t) { t.sigmoid_(); }},
      {"neg_", [](Tensor& t) { t.neg_(); }},
      {"pow_", [](Tensor& t) { t.pow_(2.5); }},
      {"reciprocal_", [](Tensor& t) { t.reciprocal_(); }},
      {"mul_s", [](Tensor& t) { t.mul_(3.0); }},
      {"add_s", [](Tensor& t) { t.add_(1.5); }},
      {"div_s", [](Tensor& t) { t.div_(4.0); }},
  };
  for (const auto& [name, op] : ops) {
    check_forward(name,
                  [op = op](const VariableList& in) {
                    Tensor c = in[0].clone();
                    op(c);
                    return c;
                  },
                  {x});
  }
}

TEST(ForwardAdOps, Binary) {
  const Tensor a = constant({3, 4}, 3, 0.5, 1.5);
  const Tensor b = constant({4}, 4, 0.5, 1.5);  // broadcast
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"add", [](const VariableList& in) { return in[0].add(in[1], 2.0); }},
      {"sub", [](const VariableList& in) { return in[0].sub(in[1], 0.5); }},
      {"mul", [](const VariableList& in) { return in[0] * in[1]; }},
      {"div", [](const VariableList& in) { return in[0] / in[1]; }},
      {"pow", [](const VariableList& in) { return in[0].pow(in[1]); }},
      {"rsub", [](const VariableList& in) { return 2.0 - in[0] * in[1]; }},
      {"add_", [](const VariableList& in) { return in[0].clone().add_(in[1], 1.5); }},
      {"sub_", [](const VariableList& in) { return in[0].clone().sub_(in[1]); }},
      {"mul_", [](const VariableList& in) { return in[0].clone().mul_(in[1]); }},
      {"div_", [](const VariableList& in) { return in[0].clone().div_(in[1]); }},
      {"pow_", [](const VariableList& in) { return in[0].clone().pow_(in[1]); }},
  };
  for (const auto& [name, op] : ops) check_forward(name, op, {a, b});
  // Reverse mode refuses c.mul_(c) (mul_ changes the self that MulBackward0 saved); forward
  // mode computes its tangent before the write: 2 c dc.
  check_forward(
      "mul_self",
      [](const VariableList& in) {
        Tensor c = in[0].clone();
        return c.mul_(c);
      },
      {a}, /*double_vjp=*/false);
}

TEST(ForwardAdOps, ReductionsAndProducts) {
  const Tensor a = constant({3, 4}, 5);
  const Tensor m = constant({4, 2}, 6);
  const Tensor v = constant({4}, 7);
  check_forward("sum", [](const VariableList& in) { return in[0].sum(); }, {a});
  check_forward("sum_dim", [](const VariableList& in) { return in[0].sum({1}, true); }, {a});
  check_forward("mean", [](const VariableList& in) { return in[0].mean(); }, {a});
  check_forward("mean_dim", [](const VariableList& in) { return in[0].mean({0}); }, {a});
  check_forward("mm", [](const VariableList& in) { return in[0].mm(in[1]); }, {a, m});
  check_forward("matmul", [](const VariableList& in) { return in[0].matmul(in[1]); }, {a, v});
  check_forward("mv", [](const VariableList& in) { return mv(in[0], in[1]); }, {a, v});
  check_forward("dot", [](const VariableList& in) { return dot(in[1], in[1] * 2); }, {a, v});
  check_forward("clone", [](const VariableList& in) { return in[0].clone() * 2; }, {a});
  check_forward("mlp", [](const VariableList& in) { return (in[0].mm(in[1]).tanh() * 2).sum(); },
                {a, m});
}

TEST(ForwardAdOps, Views) {
  const Tensor a = constant({3, 4}, 8);
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"view",
       [](const VariableList& in) {
         return in[0].view({4, 3}) * 1.0;
       }},
      {"reshape_copy", [](const VariableList& in) { return in[0].t().reshape({12}); }},
      {"select", [](const VariableList& in) { return in[0].select(1, 2); }},
      {"slice", [](const VariableList& in) { return in[0].slice(1, 1, 3); }},
      {"narrow", [](const VariableList& in) { return in[0].narrow(0, 1, 2); }},
      {"transpose", [](const VariableList& in) { return in[0].transpose(0, 1); }},
      {"permute",
       [](const VariableList& in) {
         return in[0].unsqueeze(0).permute({2, 0, 1});
       }},
      {"expand",
       [](const VariableList& in) {
         return in[0].unsqueeze(0).expand({2, 3, 4});
       }},
      {"squeeze", [](const VariableList& in) { return in[0].unsqueeze(1).squeeze(1); }},
      {"chain", [](const VariableList& in) { return in[0].t().select(0, 1).exp(); }},
  };
  for (const auto& [name, op] : ops) check_forward(name, op, {a});
}

TEST(ForwardAdOps, WriteFamily) {
  const Tensor x = constant({4, 3}, 9);
  const Tensor src = constant({2, 3}, 10);
  const Tensor idx = dev(tensor({2, 0}, kInt64));
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"copy_view",
       [](const VariableList& in) {
         Tensor c = in[0].clone();
         c.narrow(0, 1, 2).copy_(in[1]);
         return c;
       }},
      {"index_put_",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.index_put_({idx}, in[1] * 3);
         return c;
       }},
      {"index_put_acc",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.index_put_({idx}, in[1], /*accumulate=*/true);
         return c;
       }},
      {"index_add_",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.index_add_(0, idx, in[1], 2.0);
         return c;
       }},
      {"masked_fill_",
       [](const VariableList& in) {
         Tensor c = in[0].clone();
         c.masked_fill_(in[0].detach() > 0, 1.5);
         return c + in[1].sum();
       }},
      {"scatter_",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         Tensor index = idx.unsqueeze(1).expand({2, 3});
         c.scatter_(0, index, in[1]);
         return c;
       }},
      {"scatter_add_",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         Tensor index = idx.unsqueeze(1).expand({2, 3});
         c.scatter_add_(0, index, in[1]);
         return c;
       }},
  };
  for (const auto& [name, op] : ops) check_forward(name, op, {x, src});
}

// ---- Mutation rules (values from torch 1.13's forward AD) -------------------------------------

TEST(ForwardAdMutation, WriteIntoViewOfPlainTensorGivesBaseATangent) {
  dual_level level;
  Tensor z = dev(zeros({4}, TensorOptions(kFloat64)));
  Tensor v = z.slice(0, 1, 3);
  Tensor other_view = z.slice(0, 2, 4);  // made before z had a tangent
  Tensor y =
      make_dual(dev(zeros({4}, TensorOptions(kFloat64))), dev(ones({4}, TensorOptions(kFloat64))));
  v.copy_(y.slice(0, 0, 2) * 2);
  expect_close(unpack_dual(z).tangent, {0, 2, 2, 0});
  expect_close(unpack_dual(v).tangent, {2, 2});
  expect_close(unpack_dual(other_view).tangent, {2, 0});
}

TEST(ForwardAdMutation, InPlaceOnDualAndOnItsView) {
  dual_level level;
  Tensor x = dev(zeros({4}, TensorOptions(kFloat64)));
  Tensor y = make_dual(x, dev(ones({4}, TensorOptions(kFloat64))));
  Tensor tangent = unpack_dual(y).tangent;
  y.mul_(3);
  expect_close(unpack_dual(y).tangent, {3, 3, 3, 3});
  expect_close(tangent, {3, 3, 3, 3});  // updated in place
  Tensor w = y.slice(0, 0, 2);
  w.add_(make_dual(dev(ones({2}, TensorOptions(kFloat64))), dev(full({2}, 5.0, kFloat64))));
  expect_close(unpack_dual(y).tangent, {8, 8, 3, 3});
  expect_close(unpack_dual(w).tangent, {8, 8});
  EXPECT_FALSE(unpack_dual(x).tangent.defined());  // make_dual's primal keeps none
}

TEST(ForwardAdMutation, IndexPutIntoPlainTensor) {
  dual_level level;
  Tensor z = dev(zeros({3, 2}, TensorOptions(kFloat64)));
  Tensor row = z.select(0, 2);
  Tensor val =
      make_dual(dev(ones({2}, TensorOptions(kFloat64))), dev(tensor({4.0, 5.0}, kFloat64)));
  z.index_put_({dev(tensor({1}, kInt64))}, val);
  expect_close(unpack_dual(z).tangent, {0, 0, 4, 5, 0, 0});
  expect_close(unpack_dual(row).tangent, {0, 0});
  row.copy_(val * 2);
  expect_close(unpack_dual(z).tangent, {0, 0, 4, 5, 8, 10});
  // Writing a plain value back zeroes that part of the tangent.
  z.select(0, 1).fill_(7);
  expect_close(unpack_dual(z).tangent, {0, 0, 0, 0, 8, 10});
}

TEST(ForwardAdMutation, LevelExitClearsTangentsAndNestedLevels) {
  Tensor y;
  Tensor x = constant({3}, 11);
  {
    dual_level level;
    y = make_dual(x, dev(ones({3}, TensorOptions(kFloat64))));
    EXPECT_TRUE(unpack_dual(y).tangent.defined());
  }
  {
    dual_level level;
    EXPECT_FALSE(unpack_dual(y).tangent.defined());
  }
  // Nested: d/dt d/ds (x + s u + t w)^3 = 6 (x) u w at s = t = 0.
  const Tensor u = constant({3}, 12);
  const Tensor w = constant({3}, 13);
  dual_level outer;
  Tensor xo = make_dual(x, u, outer.level());
  dual_level inner;
  Tensor xi = make_dual(xo, w, inner.level());
  Tensor out = xi * xi * xi;
  Tensor ti = unpack_dual(out, inner.level()).tangent;  // 3 x^2 w, dual at the outer level
  Tensor tio = unpack_dual(ti, outer.level()).tangent;
  expect_close(tio, values(x * u * w * 6));
  expect_close(unpack_dual(out, outer.level()).tangent, values(x * x * u * 3));
}

TEST(ForwardAdMutation, ForwardOverReverseHvp) {
  const Tensor x = constant({4}, 14);
  const Tensor v = constant({4}, 15);
  dual_level level;
  Tensor p = x.clone().requires_grad_();
  Tensor d = make_dual(p, v);
  Tensor y = (d * d * d).sum() + d.sin().sum();
  Tensor g = autograd::grad({y}, {p})[0];
  // H v = (6 x - sin x) v.
  expect_close(unpack_dual(g).tangent, values((x * 6 - x.sin()) * v), 1e-10);
}

// Nodes that save their output (TanhBackward0, ExpBackward0, SigmoidBackward0) and in-place
// ops that do (exp_): the saved output keeps its tangent, so H v matches the double vjp.
TEST(ForwardAdMutation, ForwardOverReverseHvpThroughSavedOutputs) {
  const Tensor x = constant({3, 4}, 20);
  const Tensor v = constant({3, 4}, 21);
  const Tensor w1 = constant({4, 5}, 22);
  const Tensor w2 = constant({5, 2}, 23);
  autograd::TensorFunction f([&](const VariableList& in) {
    Tensor h = in[0].mm(w1).tanh();
    Tensor e = h.sigmoid().clone();
    e.exp_();
    return (e.mm(w2) + h.exp().sum()).sum();
  });
  const Tensor expected = autograd::hvp(f, {x}, {v}).result[0];
  const Tensor got = autograd::forward_over_reverse_hvp(f, {x}, {v}).result[0];
  expect_close(got, values(expected), 1e-9);
}

TEST(ForwardAdMutation, SavedTangentIsVersionChecked) {
  dual_level level;
  Tensor p = constant({3}, 16).requires_grad_();
  Tensor t = constant({3}, 17);
  Tensor d = make_dual(p, t);
  Tensor y = (d * d).sum();
  unpack_dual(d).tangent.mul_(2);  // the tangent MulBackward0 saved changes
  const std::string msg = error_of([&] { autograd::grad({y}, {p}); });
  EXPECT_NE(msg.find("tangent"), std::string::npos) << msg;
}

// ---- Errors ----------------------------------------------------------------------------------

TEST(ForwardAdErrors, Refusals) {
  const Tensor x = constant({3}, 18);
  EXPECT_NE(error_of<forward_ad::ForwardADError>([&] { make_dual(x, x); }).find("no forward AD"),
            std::string::npos);
  dual_level level;
  const std::string shape = error_of<ShapeError>([&] { make_dual(x, constant({4}, 1)); });
  EXPECT_NE(shape.find("[4]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[3]"), std::string::npos) << shape;
  const std::string dtype = error_of<DTypeError>([&] { make_dual(x, x.to(kFloat32)); });
  EXPECT_NE(dtype.find("float32"), std::string::npos) << dtype;
  error_of<DTypeError>([&] { make_dual(dev(tensor({1, 2}, kInt64)), x); });
  // An op without a tangent formula names itself.
  Tensor d = make_dual(x, x);
  const std::string missing =
      error_of<forward_ad::ForwardADNotImplementedError>([&] { d.cumsum(0); });
  EXPECT_NE(missing.find("forward-mode AD is not implemented"), std::string::npos) << missing;
  // Exiting out of order.
  const int64_t inner = forward_ad::enter_dual_level();
  EXPECT_NE(error_of<forward_ad::ForwardADError>([&] {
              forward_ad::exit_dual_level(0);
            }).find("innermost"),
            std::string::npos);
  forward_ad::exit_dual_level(inner);
}

}  // namespace
}  // namespace mutagrad
