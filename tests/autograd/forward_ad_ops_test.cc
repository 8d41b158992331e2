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
using testing_util::strided_leaf;
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
  autograd::FunctionalResult rev = autograd::jvp_by_double_vjp(
      autograd::TensorFunction([&](const VariableList& in) { return fn(in); }), grad_inputs,
      tangents);
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

// Note [Fused activation backward]: without a graph to record, tanh's and sigmoid's tangents
// come from one backend call; they must equal TanhBackward0's t * (1 - y * y) and
// SigmoidBackward0's t * (y * (1 - y)) bit for bit, in float32 and float64, for a strided
// tangent (the default's binary kernels) and a contiguous one (the CPU's loop), and with a graph
// (the node's formula) too.
TEST(ForwardAdOps, TanhAndSigmoidTangentsAreTheNodeFormulaBitForBit) {
  for (bool sigmoid : {false, true}) {
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      for (int mode = 0; mode < 3; ++mode) {  // strided, contiguous, recording
        const bool record = mode == 2;
        SCOPED_TRACE(str(sigmoid ? "sigmoid " : "tanh ", dtype_name(dtype), " mode ", mode));
        auto act = [sigmoid](const Tensor& v) { return sigmoid ? v.sigmoid() : v.tanh(); };
        const Tensor x = constant({5, 7}, 30, -2.0, 2.0).to(dtype);
        Tensor t = strided_leaf({5, 7}, 31).detach().to(dtype);
        if (mode == 1) t = t.contiguous();
        const Tensor y = act(x);
        const Tensor expected = sigmoid ? t * (y * (1 - y)) : t * (1 - y * y);
        dual_level level;
        Tensor p = record ? x.clone().requires_grad_() : x;
        Tensor out = act(make_dual(p, t));
        EXPECT_EQ(values(unpack_dual(out).tangent), values(expected));
      }
    }
  }
  // Nested levels: the inner tangent w (1 - y^2) is itself dual at the outer level, with
  // tangent -2 y (1 - y^2) u w (the fast path must not drop it).
  const Tensor x = constant({4}, 32);
  const Tensor u = constant({4}, 33);
  const Tensor w = constant({4}, 34);
  dual_level outer;
  Tensor xo = make_dual(x, u, outer.level());
  dual_level inner;
  Tensor out = make_dual(xo, w, inner.level()).tanh();
  Tensor ti = unpack_dual(out, inner.level()).tangent;
  const Tensor y = x.tanh();
  expect_close(ti, values(w * (1 - y * y)), 1e-12);
  const Tensor expected = y * -2 * (1 - y * y) * u * w;
  expect_close(unpack_dual(ti, outer.level()).tangent, values(expected), 1e-12);
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
  // Reductions and scans with their own tangent formulas; a zero makes prod and cumprod take
  // their zero-aware branches.
  const Tensor z =
      dev(tensor({{1.0, 1.0, 1.0, 1.0}, {1.0, 0.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}}, kFloat64));
  const Tensor b = constant({3, 4}, 12);
  const Tensor idx = dev(tensor({{2, 0, 1, 1}, {0, 2, 2, 0}}, kInt64));
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"prod", [](const VariableList& in) { return in[0].prod(); }},
      {"prod_dim", [](const VariableList& in) { return prod(in[0], {1}, true); }},
      {"prod_zero", [z](const VariableList& in) { return prod(in[0] * z, {0}); }},
      {"max", [](const VariableList& in) { return in[0].max(); }},
      {"min_dims", [](const VariableList& in) { return min(in[0], {0}, true); }},
      {"amax", [](const VariableList& in) { return amax(in[0], {1}); }},
      {"max_dim", [](const VariableList& in) { return max_dim(in[0], 1).first; }},
      {"min_dim", [](const VariableList& in) { return min_dim(in[0], 0, true).first; }},
      {"maximum", [](const VariableList& in) { return maximum(in[0], in[1]); }},
      {"minimum", [](const VariableList& in) { return minimum(in[0], in[1] * 2); }},
      {"where", [](const VariableList& in) { return where(in[1] > 0.0, in[0], in[1]); }},
      {"atan2", [](const VariableList& in) { return atan2(in[0], in[1]); }},
      {"fmod", [](const VariableList& in) { return fmod(in[0] * 3, in[1] + 2); }},
      {"var", [](const VariableList& in) { return var(in[0]); }},
      {"var_dim", [](const VariableList& in) { return var(in[0], {1}, 0, true); }},
      {"std", [](const VariableList& in) { return std(in[0], {0}); }},
      {"norm", [](const VariableList& in) { return norm(in[0], 2, {1}); }},
      {"norm3", [](const VariableList& in) { return norm(in[0], 3); }},
      {"logsumexp", [](const VariableList& in) { return logsumexp(in[0], {1}); }},
      {"cumsum", [](const VariableList& in) { return in[0].cumsum(1); }},
      {"cumprod", [](const VariableList& in) { return in[0].cumprod(1); }},
      {"cumprod_zero", [z](const VariableList& in) { return (in[0] * z).cumprod(0); }},
      {"cat",
       [](const VariableList& in) {
         return cat({in[0], in[1] * 2, in[0]}, 1);
       }},
      {"stack",
       [](const VariableList& in) {
         return stack({in[0], in[1]}, 1);
       }},
      {"sort", [](const VariableList& in) { return sort(in[0], 1, true).first; }},
      {"topk", [](const VariableList& in) { return topk(in[0], 2, 0).first; }},
      {"kthvalue", [](const VariableList& in) { return kthvalue(in[0], 2, 1).first; }},
      {"gather", [idx](const VariableList& in) { return in[0].gather(0, idx); }},
      {"index_select",
       [idx](const VariableList& in) { return in[0].index_select(1, idx.select(0, 0)); }},
      {"take", [idx](const VariableList& in) { return in[0].take(idx); }},
      {"masked_select", [](const VariableList& in) { return in[0].masked_select(in[1] > 0.0); }},
      {"flip",
       [](const VariableList& in) {
         return in[0].flip({0, 1});
       }},
      {"roll", [](const VariableList& in) { return in[0].roll({1}, {1}); }},
      {"repeat",
       [](const VariableList& in) {
         return in[0].repeat({2, 1, 2});
       }},
      {"tril", [](const VariableList& in) { return in[0].tril(1); }},
      {"diag", [](const VariableList& in) { return in[0].diag(1).diag(); }},
      {"trace", [](const VariableList& in) { return in[0].narrow(1, 0, 3).trace(); }},
      {"clamp_tensor",
       [](const VariableList& in) { return clamp(in[0], in[1] - 0.3, in[1] + 0.3); }},
      {"pow_scalar_base", [](const VariableList& in) { return pow(Scalar(2.5), in[0] * in[1]); }},
      {"addcmul", [](const VariableList& in) { return in[0].addcmul(in[1], in[0], 0.5); }},
      {"addcdiv", [](const VariableList& in) { return in[0].addcdiv(in[0], in[1] + 3, 2.0); }},
      {"lerp", [](const VariableList& in) { return in[0].lerp(in[1], 0.3); }},
      {"lerp_tensor", [](const VariableList& in) { return in[0].lerp(in[1], in[1].sigmoid()); }},
      {"scatter_reduce_sum",
       [idx](const VariableList& in) { return in[0].scatter_reduce(0, idx, in[1], "sum"); }},
      {"scatter_reduce_mean",
       [idx](const VariableList& in) {
         return in[0].scatter_reduce(0, idx, in[1], "mean", false);
       }},
      {"scatter_reduce_amax",
       [idx](const VariableList& in) { return in[0].scatter_reduce(0, idx, in[1], "amax"); }},
      {"scatter_reduce_prod",
       [idx](const VariableList& in) { return in[0].scatter_reduce(0, idx, in[1], "prod"); }},
      {"scatter_reduce_",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.scatter_reduce_(0, idx, in[1], "amin", false);
         return c;
       }},
  };
  for (const auto& [name, op] : ops) check_forward(name, op, {a, b});
}

// The nn functional ops: softmax family, activations, normalizations, embedding, padding,
// losses, convolution and pooling.
TEST(ForwardAdOps, NnFunctional) {
  const Tensor x = constant({2, 3, 5, 4}, 13);
  const Tensor w = constant({4, 3, 3, 2}, 14);
  const Tensor bias = constant({4}, 15);
  const Tensor target = dev(tensor({2, 0}, kInt64));
  const std::vector<std::pair<std::string, Fn>> unary = {
      {"softmax", [](const VariableList& in) { return in[0].softmax(1); }},
      {"log_softmax", [](const VariableList& in) { return in[0].log_softmax(-1); }},
      {"gelu", [](const VariableList& in) { return gelu(in[0]); }},
      {"gelu_tanh", [](const VariableList& in) { return gelu(in[0], "tanh"); }},
      {"silu", [](const VariableList& in) { return silu(in[0]); }},
      {"leaky_relu", [](const VariableList& in) { return leaky_relu(in[0], 0.2); }},
      {"elu", [](const VariableList& in) { return elu(in[0]); }},
      {"softplus", [](const VariableList& in) { return softplus(in[0], 2.0); }},
      {"leaky_relu_",
       [](const VariableList& in) {
         Tensor c = in[0] * 1.5;
         return leaky_relu_(c, 0.3) + 0;
       }},
      {"elu_",
       [](const VariableList& in) {
         Tensor c = in[0].clone();
         return elu_(c) * 2;
       }},
      {"layer_norm",
       [](const VariableList& in) {
         return layer_norm(in[0], {5, 4});
       }},
      {"group_norm", [](const VariableList& in) { return group_norm(in[0], 3); }},
      {"batch_norm",
       [](const VariableList& in) {
         return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), /*training=*/true);
       }},
      {"normalize", [](const VariableList& in) { return normalize(in[0]); }},
      {"pad_constant",
       [](const VariableList& in) {
         return pad(in[0], {1, 2, 0, 1});
       }},
      {"pad_reflect",
       [](const VariableList& in) {
         return pad(in[0], {2, 1, 1, 2}, "reflect");
       }},
      {"pad_replicate",
       [](const VariableList& in) {
         return pad(in[0], {1, 1, 2, 0}, "replicate");
       }},
      {"dropout_eval", [](const VariableList& in) { return dropout(in[0], 0.5, false) * 2; }},
      {"max_pool2d", [](const VariableList& in) { return max_pool2d(in[0], {2}, {2}, {1}); }},
      {"adaptive_max_pool2d",
       [](const VariableList& in) {
         return std::get<0>(adaptive_max_pool2d(in[0], {2, 3}));
       }},
      {"avg_pool2d",
       [](const VariableList& in) {
         return avg_pool2d(in[0], {3, 2}, {1}, {1});
       }},
      {"adaptive_avg_pool2d",
       [](const VariableList& in) {
         return adaptive_avg_pool2d(in[0], {2, 3});
       }},
      {"im2col",
       [](const VariableList& in) {
         return im2col(in[0], {2, 3}, {1}, {1}, {2});
       }},
      {"col2im",
       [](const VariableList& in) {
         return col2im(in[0].reshape({2, 12, 5}).narrow(2, 0, 4), {3, 4}, {2, 3}, {1}, {1}, {2});
       }},
      {"cross_entropy",
       [target](const VariableList& in) { return cross_entropy(in[0].flatten(1), target); }},
      {"nll_loss",
       [target](const VariableList& in) {
         return nll_loss(in[0].flatten(1).log_softmax(1), target, Tensor(), -100, "sum");
       }},
  };
  for (const auto& [name, op] : unary) check_forward(name, op, {x});
  const Tensor y = constant({2, 3, 5, 4}, 16);
  const std::vector<std::pair<std::string, Fn>> binary = {
      {"mse_loss", [](const VariableList& in) { return mse_loss(in[0], in[1]); }},
      {"smooth_l1_loss",
       [](const VariableList& in) { return smooth_l1_loss(in[0], in[1], "sum", 0.5); }},
      {"huber_loss", [](const VariableList& in) { return huber_loss(in[0], in[1], "none"); }},
      {"bce",
       [](const VariableList& in) {
         return binary_cross_entropy(in[0].sigmoid(), in[1].sigmoid());
       }},
      {"bce_with_logits",
       [](const VariableList& in) { return binary_cross_entropy_with_logits(in[0], in[1]); }},
      {"kl_div",
       [](const VariableList& in) {
         return kl_div(in[0].log_softmax(1), in[1].softmax(1), "batchmean");
       }},
      {"layer_norm_affine",
       [](const VariableList& in) {
         return layer_norm(in[0], {4}, in[1].select(0, 0).select(0, 0).select(0, 0),
                           in[1].select(0, 1).select(0, 0).select(0, 0));
       }},
      {"mul_then_max_pool",
       [](const VariableList& in) {
         return max_pool2d(in[0] * in[1], {3, 2}, {1, 2});
       }},
  };
  for (const auto& [name, op] : binary) check_forward(name, op, {x, y});
  // Convolutions: bilinear in (input, weight), plus the bias.
  check_forward("conv2d",
                [](const VariableList& in) { return conv2d(in[0], in[1], in[2], {1}, {1}); },
                {x, w, bias});
  check_forward("conv_transpose2d",
                [](const VariableList& in) {
                  return conv_transpose2d(in[0], in[1].transpose(0, 1).contiguous(), Tensor(), {2});
                },
                {x, w.narrow(1, 0, 3).narrow(0, 0, 3)});
  const Tensor table = constant({5, 3}, 17);
  const Tensor ids = dev(tensor({{1, 4}, {0, 1}}, kInt64));
  check_forward("embedding", [ids](const VariableList& in) { return embedding(ids, in[0]); },
                {table});
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
      {"as_strided",
       [](const VariableList& in) {
         return in[0].as_strided({2, 2}, {1, 2}, 1);
       }},
      {"as_strided_scatter",
       [](const VariableList& in) {
         return as_strided_scatter(in[0], in[0].select(0, 1).exp().narrow(0, 0, 2), {2}, {5}, 1);
       }},
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

// The last in-place ops of issue 40: each on a clone and through a view of it (the write reaches
// the base's tangent), against central differences and the double vjp.
TEST(ForwardAdOps, InPlaceFamily) {
  const Tensor a = constant({3, 4}, 24, 0.1, 0.9);
  const Tensor b = constant({3, 4}, 25, 0.1, 0.9);
  const Tensor idx = dev(tensor({1, 5, 1, 10}, kInt64));  // a duplicate
  const Tensor mask = dev(tensor(
      {{true, false, true, true}, {false, false, true, false}, {true, true, false, true}}, kBool));
  // f(c, b) applied to a clone of in[0], and to a view of it (the base is returned).
  using Write = std::function<void(Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Write>> writes = {
      {"clamp_tensor", [](Tensor& c, const Tensor& o) { clamp_(c, o - 0.2, o + 0.2); }},
      {"clamp_min_tensor", [](Tensor& c, const Tensor& o) { clamp_(c, o, Tensor()); }},
      {"clamp_scalar", [](Tensor& c, const Tensor&) { c.clamp_(0.3, 0.6); }},
      {"clamp_min_", [](Tensor& c, const Tensor&) { c.clamp_min_(0.4); }},
      {"clamp_max_", [](Tensor& c, const Tensor&) { c.clamp_max_(0.5); }},
      {"addcmul_", [](Tensor& c, const Tensor& o) { c.addcmul_(o, o.exp(), 0.5); }},
      {"addcdiv_", [](Tensor& c, const Tensor& o) { c.addcdiv_(c * 2, o + 1, -1.5); }},
      {"lerp_scalar", [](Tensor& c, const Tensor& o) { c.lerp_(o, 0.3); }},
      {"lerp_scalar_high", [](Tensor& c, const Tensor& o) { c.lerp_(o, 0.8); }},
      {"lerp_tensor", [](Tensor& c, const Tensor& o) { c.lerp_(o, o.sigmoid()); }},
      {"tril_", [](Tensor& c, const Tensor& o) { c.mul_(o).tril_(); }},
      {"triu_", [](Tensor& c, const Tensor& o) { c.mul_(o).triu_(-1); }},
      {"fill_diagonal_", [](Tensor& c, const Tensor& o) { c.mul_(o).fill_diagonal_(2.0); }},
  };
  for (const auto& [name, write] : writes) {
    check_forward(name,
                  [write = write](const VariableList& in) {
                    Tensor c = in[0].clone();
                    write(c, in[1]);
                    return c;
                  },
                  {a, b});
    check_forward(name + "_through_view",
                  [write = write](const VariableList& in) {
                    Tensor c = in[0].clone();
                    Tensor v = c.t().narrow(0, 1, 3);  // a strided view of c
                    write(v, in[1].t().narrow(0, 1, 3));
                    return c;
                  },
                  {a, b});
  }
  // An operand aliasing the written tensor is read before the write (reverse mode refuses it:
  // the write changes the saved operand).
  check_forward(
      "addcmul_self",
      [](const VariableList& in) {
        Tensor c = in[0].clone();
        return c.addcmul_(in[1], c, 0.5) * 1.0;
      },
      {a, b}, /*double_vjp=*/false);
  check_forward(
      "lerp_self_weight",
      [](const VariableList& in) {
        Tensor c = in[0].clone();
        return c.lerp_(in[1], c) * 1.0;
      },
      {a, b}, /*double_vjp=*/false);
  // Index-addressed writes: flat positions (put_), the mask's (masked_scatter_), on a clone and
  // on a transposed (non-contiguous) view, with plain and dual sources.
  const std::vector<std::pair<std::string, Fn>> indexed = {
      {"put_",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.put_(idx, in[1].narrow(0, 0, 1) * 2);
         return c;
       }},
      {"put_accumulate",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.put_(idx, in[1].select(0, 2), /*accumulate=*/true);
         return c;
       }},
      {"put_through_view",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.t().put_(idx, in[1].select(0, 1).exp());
         return c;
       }},
      {"put_plain_source",
       [idx](const VariableList& in) {
         Tensor c = in[0].clone();
         c.put_(idx, dev(full({4}, 0.5, kFloat64)), true);
         return c * in[1];
       }},
      {"put_into_plain",
       [idx](const VariableList& in) {
         Tensor c = dev(zeros({3, 4}, TensorOptions(kFloat64)));
         c.put_(idx, in[0].select(0, 0) * in[1].select(0, 1));
         return c;
       }},
      {"put", [idx](const VariableList& in) { return in[0].put(idx, in[1].select(0, 0), true); }},
      {"masked_scatter_",
       [mask](const VariableList& in) {
         Tensor c = in[0].clone();
         c.masked_scatter_(mask, in[1] * 3);
         return c;
       }},
      {"masked_scatter_through_view",
       [mask](const VariableList& in) {
         Tensor c = in[0].clone();
         c.t().masked_scatter_(mask.t(), in[1].sin());
         return c;
       }},
      {"masked_scatter",
       [mask](const VariableList& in) { return in[0].masked_scatter(mask, in[1]); }},
  };
  for (const auto& [name, op] : indexed) check_forward(name, op, {a, b});
  // fill_diagonal_ with wrap on a tall matrix: packed rows (a strided fill) and a transposed
  // layout (a masked fill).
  check_forward("fill_diagonal_wrap",
                [](const VariableList& in) {
                  Tensor c = (in[0] * in[1]).reshape({6, 2});
                  c.fill_diagonal_(1.0, true);
                  return c;
                },
                {a, b});
  check_forward("fill_diagonal_wrap_strided",
                [](const VariableList& in) {
                  Tensor c = (in[0] * in[1]).reshape({2, 6}).t();
                  c.fill_diagonal_(1.0, true);
                  return c;
                },
                {a, b});
}

// The in-place view ops change the tangent's geometry with the primal's (torch's self_t.t_()):
// later writes through the changed tensor reach its base's tangent.
TEST(ForwardAdOps, InPlaceViewOps) {
  const Tensor a = constant({3, 4}, 26);
  const Tensor b = constant({4, 3}, 27);
  using Write = std::function<Tensor(Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Write>> ops = {
      {"t_", [](Tensor& c, const Tensor& o) { return c.t_().mul_(o); }},
      {"transpose_", [](Tensor& c, const Tensor& o) { return c.transpose_(0, 1).mul_(o); }},
      {"unsqueeze_squeeze_",
       [](Tensor& c, const Tensor& o) {
         c.unsqueeze_(1).squeeze_(1);
         return c.t().mul_(o);
       }},
      {"squeeze_all_",
       [](Tensor& c, const Tensor& o) {
         c.unsqueeze_(0).squeeze_();
         return c.t().add_(o.exp());
       }},
      {"as_strided_",
       [](Tensor& c, const Tensor& o) {
         return c.as_strided_({4, 2}, {1, 4}, 2).mul_(o.narrow(1, 0, 2));
       }},
  };
  for (const auto& [name, op] : ops) {
    // On a clone (its tangent is its own) and on a view of one (its tangent a view of the
    // base's): the base, written through the changed view, is the output.
    check_forward(name,
                  [op = op](const VariableList& in) {
                    Tensor c = in[0].clone();
                    return op(c, in[1]) * 1.0;
                  },
                  {a, b});
    check_forward(name + "_of_view",
                  [op = op](const VariableList& in) {
                    Tensor base = in[0].clone();
                    Tensor v = base.view({3, 4});
                    op(v, in[1]);
                    return base;
                  },
                  {a, b});
  }
  // A tangent unpacked before is the same tensor: it changes geometry too (torch 1.13).
  dual_level level;
  Tensor y = make_dual(a, b.t().contiguous());
  Tensor before = unpack_dual(y).tangent;
  y.t_();
  EXPECT_EQ(before.size(0), 4);
  EXPECT_EQ(before.size(1), 3);
  expect_close(unpack_dual(y).tangent, values(b));
}

// Random writes give the region they wrote a zero tangent (torch's self_t.zero_()); a sampler's
// result gets a zero tangent; bernoulli_(p) with a dual p into a plain tensor gives it none.
TEST(ForwardAdOps, RandomWritesZeroTheirTangent) {
  const Tensor a = constant({3, 4}, 28, 0.1, 0.9);
  const Tensor t = constant({3, 4}, 29);
  const std::vector<std::pair<std::string, std::function<void(Tensor&)>>> fills = {
      {"uniform_", [](Tensor& v) { v.uniform_(); }},
      {"normal_", [](Tensor& v) { v.normal_(); }},
      {"exponential_", [](Tensor& v) { v.exponential_(); }},
      {"bernoulli_", [](Tensor& v) { v.bernoulli_(0.3); }},
      {"bernoulli_tensor", [](Tensor& v) { v.bernoulli_(v.detach() * 0.5); }},
      {"random_", [](Tensor& v) { v.random_(0, 5); }},
      {"random_to", [](Tensor& v) { v.random_(7); }},
  };
  for (const auto& [name, fill] : fills) {
    SCOPED_TRACE(name);
    dual_level level;
    Tensor c = make_dual(a.clone(), t);
    Tensor row = c.select(0, 1);
    fill(row);
    Tensor expected = t.clone();
    expected.select(0, 1).zero_();
    expect_close(unpack_dual(c).tangent, values(expected), 0.0);
  }
  dual_level level;
  Tensor p = make_dual(a, t);
  Tensor plain = dev(zeros({3, 4}, TensorOptions(kFloat64)));
  plain.bernoulli_(p);
  EXPECT_FALSE(unpack_dual(plain).tangent.defined());
  for (const Tensor& r : {bernoulli(p), normal(p, p), normal(p, 2.0), normal(1.0, p)}) {
    expect_close(unpack_dual(r).tangent, values(zeros_like(a)), 0.0);
  }
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
  const Tensor expected = autograd::hvp_by_double_vjp(f, {x}, {v}).result[0];
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

// ---- Custom Functions (autograd::Function<T>::jvp) ------------------------------------------

// y = x * k + s * other, with a hand-written jvp; forward sees the primals.
struct ScaleAdd : autograd::Function<ScaleAdd> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double k,
                        const Tensor& other) {
    EXPECT_FALSE(forward_ad::unpack_dual(x).tangent.defined());  // levels suspended in forward
    ctx->saved_data["k"] = k;
    ctx->saved_data["other"] = other;  // for jvp (saved tensors are backward's)
    ctx->save_for_backward({other});
    return x * k + other.sin();
  }
  static autograd::VariableList backward(autograd::AutogradContext* ctx,
                                         autograd::VariableList grads) {
    const Tensor other = ctx->get_saved_variables()[0];
    return {grads[0] * ctx->saved_data["k"].to_double(), Tensor(), grads[0] * other.cos()};
  }
  static autograd::VariableList jvp(autograd::AutogradContext* ctx,
                                    autograd::VariableList tangents) {
    const Tensor& other = ctx->saved_data["other"].to_tensor();
    return {tangents[0] * ctx->saved_data["k"].to_double() + tangents[1] * other.cos()};
  }
};

// A Function without jvp: a dual argument is refused, naming the Function.
struct NoJvp : autograd::Function<NoJvp> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2; }
  static autograd::VariableList backward(autograd::AutogradContext*, autograd::VariableList grads) {
    return {grads[0] * 2};
  }
};

TEST(ForwardAdOps, CustomFunctionJvp) {
  const Tensor a = constant({3, 4}, 19);
  const Tensor b = constant({3, 4}, 20);
  check_forward("custom_jvp",
                [](const VariableList& in) { return ScaleAdd::apply(in[0], 1.5, in[1]).tanh(); },
                {a, b});
  // A tangent on one argument only: the other's reaches jvp as zeros.
  dual_level level;
  const Tensor dx = constant({3, 4}, 21);
  Tensor y = ScaleAdd::apply(make_dual(a, dx), 2.0, b);
  expect_close(unpack_dual(y).tangent, values(dx * 2), 1e-12);
  const std::string msg =
      error_of<forward_ad::ForwardADNotImplementedError>([&] { NoJvp::apply(make_dual(a, dx)); });
  EXPECT_NE(msg.find("NoJvp"), std::string::npos) << msg;
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
  // An op without a tangent formula names itself (a loss's class weight: a constant).
  Tensor d = make_dual(x, x);
  const std::string missing = error_of<forward_ad::ForwardADNotImplementedError>(
      [&] { binary_cross_entropy(x.sigmoid(), x.sigmoid(), d); });
  EXPECT_NE(missing.find("forward-mode AD is not implemented"), std::string::npos) << missing;
  EXPECT_NE(missing.find("binary_cross_entropy"), std::string::npos) << missing;
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
