// nn::Module: traversal order and prefixes, state_dict keys and repr equal to torch 1.13's,
// load_state_dict's strong guarantee (values and versions unchanged on any mismatch; one bump
// per copied tensor), tied weights and shared modules, modes, zero_grad, to(), apply, forward
// hooks, and 20 SGD steps of an MLP with BatchNorm and Dropout through modules equal, bit for
// bit, to the same computation written with raw tensors. On the test's device (CPU, and the
// host-run CUDA device in module_test_cuda).
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops/nn_ops.h"
#include "optim/optim.h"
#include "tests/nn/nn_test_util.h"

namespace mutagrad {
namespace {

using mutagrad_nn_test::error_of;
using mutagrad_nn_test::pattern;
using mutagrad_nn_test::values;
using testing_device::on_test_device;
using testing_device::test_device;
using Keys = std::vector<std::string>;

template <typename M, typename... A>
std::shared_ptr<nn::Module> make(A&&... args) {
  return std::make_shared<M>(std::forward<A>(args)...);
}

std::shared_ptr<nn::Sequential> mlp() {
  auto m = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::BatchNorm1d>(8),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.5),
      std::make_shared<nn::Linear>(8, 3));
  m->to(test_device(), kFloat64);
  return m;
}

TEST(Module, TraversalOrderAndPrefixesAsTorch) {
  auto inner = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 2));
  nn::Sequential m(make<nn::Linear>(4, 2), make<nn::BatchNorm1d>(2), make<nn::ReLU>(), inner);
  EXPECT_EQ(m.named_parameters().keys(),
            (Keys{"0.weight", "0.bias", "1.weight", "1.bias", "3.0.weight", "3.0.bias"}));
  EXPECT_EQ(m.named_parameters(/*recurse=*/false).size(), 0u);
  EXPECT_EQ(m.named_buffers().keys(),
            (Keys{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(m.named_modules().keys(), (Keys{"", "0", "1", "2", "3", "3.0"}));
  EXPECT_EQ(m.named_modules("net").keys(),
            (Keys{"net", "net.0", "net.1", "net.2", "net.3", "net.3.0"}));
  EXPECT_EQ(m.children().size(), 4u);
  EXPECT_EQ(m.modules().size(), 6u);
  EXPECT_EQ(m.parameters().size(), 6u);
  EXPECT_EQ(m.buffers().size(), 3u);
  EXPECT_TRUE(m.parameters()[4].is_same(inner->at<nn::Linear>(0)->weight));
  EXPECT_TRUE(m[-1].get() == inner.get());
  EXPECT_THROW(m[4], IndexError);
}

TEST(Module, StateDictKeysAndReprEqualTorchs) {
  nn::Sequential m(
      make<nn::Linear>(4, 3), make<nn::BatchNorm1d>(3), make<nn::ReLU>(true),
      make<nn::Dropout>(0.25), make<nn::LeakyReLU>(0.2), make<nn::GELU>("tanh"), make<nn::SiLU>(),
      make<nn::Tanh>(), make<nn::Sigmoid>(), make<nn::Softmax>(1), make<nn::LogSoftmax>(-1),
      make<nn::Flatten>(), make<nn::Identity>(), make<nn::LayerNorm>(std::vector<int64_t>{2, 3}),
      make<nn::GroupNorm>(nn::GroupNormOptions(2, 4)),
      make<nn::Embedding>(nn::EmbeddingOptions(10, 3).padding_idx(0).max_norm(1.0)),
      make<nn::ModuleList>(std::vector<std::shared_ptr<nn::Module>>{
          make<nn::Linear>(nn::LinearOptions(2, 2).bias(false)),
          make<nn::Sequential>(make<nn::ReLU>())}),
      make<nn::CrossEntropyLoss>(), make<nn::MSELoss>(),
      make<nn::BatchNorm2d>(nn::BatchNormOptions(5).momentum(std::nullopt).affine(false)),
      make<nn::Embedding>(5, 2), make<nn::ELU>(), make<nn::ELU>(0.5, true), make<nn::Softplus>(),
      make<nn::Dropout2d>(0.3), make<nn::Unflatten>(1, std::vector<int64_t>{2, 3}),
      make<nn::Bilinear>(2, 3, 4),
      make<nn::ModuleDict>(nn::OrderedDict<std::shared_ptr<nn::Module>>()), make<nn::HuberLoss>(),
      make<nn::BCELoss>(), make<nn::KLDivLoss>());
  // print(model) and list(model.state_dict()) of the same torch.nn.Sequential, torch 1.13.
  const char* torch_repr = R"(Sequential(
  (0): Linear(in_features=4, out_features=3, bias=True)
  (1): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (2): ReLU(inplace=True)
  (3): Dropout(p=0.25, inplace=False)
  (4): LeakyReLU(negative_slope=0.2)
  (5): GELU(approximate='tanh')
  (6): SiLU()
  (7): Tanh()
  (8): Sigmoid()
  (9): Softmax(dim=1)
  (10): LogSoftmax(dim=-1)
  (11): Flatten(start_dim=1, end_dim=-1)
  (12): Identity()
  (13): LayerNorm((2, 3), eps=1e-05, elementwise_affine=True)
  (14): GroupNorm(2, 4, eps=1e-05, affine=True)
  (15): Embedding(10, 3, padding_idx=0, max_norm=1.0)
  (16): ModuleList(
    (0): Linear(in_features=2, out_features=2, bias=False)
    (1): Sequential(
      (0): ReLU()
    )
  )
  (17): CrossEntropyLoss()
  (18): MSELoss()
  (19): BatchNorm2d(5, eps=1e-05, momentum=None, affine=False, track_running_stats=True)
  (20): Embedding(5, 2)
  (21): ELU(alpha=1.0)
  (22): ELU(alpha=0.5, inplace=True)
  (23): Softplus(beta=1, threshold=20)
  (24): Dropout2d(p=0.3, inplace=False)
  (25): Unflatten(dim=1, unflattened_size=(2, 3))
  (26): Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)
  (27): ModuleDict()
  (28): HuberLoss()
  (29): BCELoss()
  (30): KLDivLoss()
))";
  std::ostringstream printed;
  printed << m;
  EXPECT_EQ(printed.str(), torch_repr);
  EXPECT_EQ(m.state_dict().keys(),
            (Keys{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                  "1.num_batches_tracked", "13.weight", "13.bias", "14.weight", "14.bias",
                  "15.weight", "16.0.weight", "19.running_mean", "19.running_var",
                  "19.num_batches_tracked", "20.weight", "26.weight", "26.bias"}));
  // state_dict's tensors are detached aliases.
  nn::StateDict sd = m.state_dict();
  EXPECT_FALSE(sd["0.weight"].requires_grad());
  EXPECT_TRUE(sd["0.weight"].is_alias_of(m.at<nn::Linear>(0)->weight));
}

// A module holding one given tensor as its parameter "weight" (tying by registration).
class Holder : public nn::Module {
 public:
  explicit Holder(const Tensor& w) : Module("Holder") { weight = register_parameter("weight", w); }
  Tensor weight;
};

TEST(Module, LoadStateDictRoundTripBumpsEachTensorOnce) {
  auto a = mlp(), b = mlp();
  std::vector<uint32_t> before;
  for (const Tensor& t : b->state_dict().values()) before.push_back(t.version());
  b->load_state_dict(a->state_dict());
  std::vector<Tensor> got = b->state_dict().values();
  std::vector<Tensor> want = a->state_dict().values();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(values(got[i]), values(want[i]));
    EXPECT_EQ(got[i].version(), before[i] + 1);
  }
  EXPECT_TRUE(b->at<nn::Linear>(0)->weight.requires_grad());
  EXPECT_TRUE(b->at<nn::Linear>(0)->weight.is_leaf());
}

TEST(Module, LoadStateDictMismatchChangesNothing) {
  auto a = mlp(), b = mlp();
  std::vector<std::vector<double>> vals;
  std::vector<uint32_t> versions;
  for (const Tensor& t : b->state_dict().values()) {
    vals.push_back(values(t));
    versions.push_back(t.version());
  }
  auto unchanged = [&] {
    std::vector<Tensor> now = b->state_dict().values();
    for (size_t i = 0; i < now.size(); ++i) {
      EXPECT_EQ(values(now[i]), vals[i]) << i;
      EXPECT_EQ(now[i].version(), versions[i]) << i;
    }
  };
  // Only the last parameter is wrong: nothing before it is copied either.
  nn::StateDict bad_shape = a->state_dict();
  bad_shape["4.bias"] = on_test_device(zeros({4}, kFloat64));
  std::string msg = error_of<ShapeError>([&] { b->load_state_dict(bad_shape); });
  EXPECT_NE(msg.find("size mismatch for 4.bias: copying a param with shape [4], the shape in the "
                     "current model is [3]"),
            std::string::npos)
      << msg;
  unchanged();
  nn::StateDict bad_dtype = a->state_dict();
  bad_dtype["4.weight"] = bad_dtype["4.weight"].to(kFloat32);
  EXPECT_THROW(b->load_state_dict(bad_dtype), DTypeError);
  unchanged();
  nn::StateDict missing;
  for (const auto& [k, t] : a->state_dict()) {
    if (k != "1.running_var") missing.insert(k, t);
  }
  missing.insert("5.weight", on_test_device(zeros({1}, kFloat64)));
  missing.insert_or_assign("0.bias", on_test_device(zeros({2}, kFloat64)));
  msg = error_of<ValueError>([&] { b->load_state_dict(missing); });
  // Every problem is listed.
  EXPECT_NE(msg.find("Missing key(s) in state_dict: \"1.running_var\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("Unexpected key(s) in state_dict: \"5.weight\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("size mismatch for 0.bias"), std::string::npos) << msg;
  unchanged();
  // Not strict: missing and unexpected keys are allowed, shapes still are not.
  EXPECT_THROW(b->load_state_dict(missing, /*strict=*/false), ShapeError);
  unchanged();
  missing.insert_or_assign("0.bias", a->state_dict()["0.bias"]);
  b->load_state_dict(missing, /*strict=*/false);
  EXPECT_EQ(values(b->state_dict()["0.bias"]), values(a->state_dict()["0.bias"]));
  EXPECT_EQ(b->state_dict()["1.running_var"].version(), versions[5]);
}

TEST(Module, TiedWeightsAreOneParameterWithTwoKeys) {
  Tensor w = on_test_device(zeros({2, 2}, kFloat64));
  nn::Sequential m(std::make_shared<Holder>(w), std::make_shared<Holder>(w));
  EXPECT_EQ(m.parameters().size(), 1u);
  EXPECT_EQ(m.named_parameters().keys(), Keys{"0.weight"});
  EXPECT_EQ(m.state_dict().keys(), (Keys{"0.weight", "1.weight"}));
  nn::StateDict sd;
  sd.insert("0.weight", on_test_device(ones({2, 2}, kFloat64)));
  sd.insert("1.weight", on_test_device(full({2, 2}, 2.0, kFloat64)));
  const uint32_t v = w.version();
  m.load_state_dict(sd);
  EXPECT_EQ(w.version(), v + 1);  // written once, from the last key (torch's final value)
  EXPECT_EQ(values(w), (std::vector<double>{2, 2, 2, 2}));
  // A module registered twice: one module, one set of parameters, keys under both names.
  auto fc = std::make_shared<nn::Linear>(2, 2);
  nn::Sequential twice(fc, fc);
  EXPECT_EQ(twice.modules().size(), 2u);
  EXPECT_EQ(twice.parameters().size(), 2u);
  EXPECT_EQ(twice.state_dict().keys(), (Keys{"0.weight", "0.bias", "1.weight", "1.bias"}));
}

TEST(Module, ModesZeroGradRequiresGradToAndApply) {
  auto m = mlp();
  m->eval();
  for (auto& mod : m->modules()) EXPECT_FALSE(mod->is_training());
  m->train();
  for (auto& mod : m->modules()) EXPECT_TRUE(mod->is_training());
  Tensor x = pattern({5, 4}, 0.37, 0.1);
  (*m)(x).sum().backward();
  Tensor g = m->at<nn::Linear>(0)->weight.grad();
  ASSERT_TRUE(g.defined());
  m->zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(m->at<nn::Linear>(0)->weight.grad().is_same(g));
  for (double e : values(g)) EXPECT_EQ(e, 0.0);
  m->zero_grad();
  EXPECT_FALSE(m->at<nn::Linear>(0)->weight.grad().defined());
  m->requires_grad_(false);
  for (const Tensor& p : m->parameters()) EXPECT_FALSE(p.requires_grad());
  m->requires_grad_(true);
  // to() keeps each tensor's identity; only floating tensors change dtype.
  Tensor w = m->at<nn::Linear>(0)->weight;
  (*m)(x).sum().backward();
  Tensor w_grad = w.grad();
  m->to(kFloat32);
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_TRUE(w.grad().is_same(w_grad));  // the gradient is converted too, keeping its identity
  EXPECT_EQ(w_grad.dtype(), kFloat32);
  EXPECT_TRUE(m->parameters()[0].is_same(w));
  EXPECT_EQ(m->at<nn::BatchNorm1d>(1)->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(m->at<nn::BatchNorm1d>(1)->running_mean.dtype(), kFloat32);
  EXPECT_EQ(w.device(), test_device());
  EXPECT_THROW(m->to(kInt32), DTypeError);
  std::vector<std::string> order;
  m->apply([&](nn::Module& mod) { order.push_back(mod.name()); });
  EXPECT_EQ(order, (Keys{"Linear", "BatchNorm1d", "ReLU", "Dropout", "Linear", "Sequential"}));
}

TEST(Module, RegistrationErrors) {
  nn::Linear fc(2, 2);
  EXPECT_THROW(fc.register_parameter("weight", zeros({1})), ValueError);
  EXPECT_THROW(fc.register_buffer("a.b", zeros({1})), ValueError);
  Tensor x = zeros({1}).requires_grad_();
  EXPECT_THROW(fc.register_parameter("nonleaf", (x * 2.0)), ValueError);
  fc.register_buffer("scratch", zeros({1}), /*persistent=*/false);
  EXPECT_EQ(fc.state_dict().keys(), (Keys{"weight", "bias"}));
  EXPECT_EQ(fc.named_buffers().keys(), Keys{"scratch"});
  EXPECT_THROW(fc.forward(zeros({3})), ShapeError);
  EXPECT_THROW(nn::ModuleList().forward(zeros({2})), ValueError);
}

TEST(Module, ForwardHooksAndPreHooks) {
  auto relu = std::make_shared<nn::ReLU>();
  nn::Sequential seq(relu);
  std::vector<std::string> calls;
  nn::HookHandle pre = relu->register_forward_pre_hook(
      [&](nn::Module& m, const Tensor& in) -> std::optional<Tensor> {
        calls.push_back("pre " + m.name());
        return in.neg();
      });
  nn::HookHandle post = relu->register_forward_hook(
      [&](nn::Module&, const Tensor& in, const Tensor& out) -> std::optional<Tensor> {
        calls.push_back("post");
        EXPECT_EQ(values(in), (std::vector<double>{1, -2}));  // the replaced input
        return out * 10.0;
      });
  Tensor x = on_test_device(tensor({-1.0, 2.0}, kFloat64));
  EXPECT_EQ(values(seq(x)), (std::vector<double>{10, 0}));
  EXPECT_EQ(calls, (Keys{"pre ReLU", "post"}));
  pre.remove();
  post.remove();
  post.remove();  // twice: nothing
  EXPECT_EQ(values(seq(x)), (std::vector<double>{0, 2}));
  EXPECT_EQ(calls.size(), 2u);
  // A loss runs the hooks with its input.
  nn::MSELoss mse;
  mse.register_forward_hook([](nn::Module&, const Tensor&, const Tensor& out) {
    return std::optional<Tensor>(out * 2.0);
  });
  EXPECT_EQ(values(mse(x, on_test_device(zeros({2}, kFloat64)))), std::vector<double>{5.0});
}

// Linear -> BatchNorm1d -> ReLU -> Dropout(0.5) -> Linear, cross entropy, SGD (lr 0.1), 20
// steps through modules and through raw tensors from the same start and the same dropout
// draws: every parameter and running statistic equal bit for bit, and the eval outputs too.
TEST(Module, TwentySgdStepsEqualTheRawTensorComputationBitForBit) {
  auto model = mlp();
  nn::StateDict start = model->state_dict();
  std::vector<Tensor> raw;  // w0 b0 g b rm rv nbt w1 b1
  for (const Tensor& t : start.values()) {
    Tensor c = t.clone();
    if (c.is_floating_point()) c.requires_grad_(true);
    raw.push_back(c);
  }
  raw[4].requires_grad_(false);
  raw[5].requires_grad_(false);
  Tensor x = pattern({6, 4}, 0.37, 0.1, 2.0);
  Tensor y = on_test_device(tensor({0, 1, 2, 2, 1, 0}));
  nn::CrossEntropyLoss criterion;
  auto sgd = [](const std::vector<Tensor>& params) {
    NoGradGuard no_grad;
    for (Tensor p : params) {
      if (p.grad().defined()) {
        p.add_(p.grad(), -0.1);
        p.set_grad(Tensor());
      }
    }
  };
  for (int step = 0; step < 20; ++step) {
    default_generator(test_device()).manual_seed(100 + step);
    criterion((*model)(x), y).backward();
    sgd(model->parameters());

    default_generator(test_device()).manual_seed(100 + step);
    Tensor h = raw[1].addmm(x, raw[0].t());
    raw[6].add_(1);
    h = batch_norm(h, raw[4], raw[5], raw[2], raw[3], true, 0.1, 1e-5).relu();
    h = dropout(h, 0.5, true);
    cross_entropy(raw[8].addmm(h, raw[7].t()), y).backward();
    sgd({raw[0], raw[1], raw[2], raw[3], raw[7], raw[8]});
  }
  std::vector<Tensor> got = model->state_dict().values();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(values(got[i]), values(raw[i])) << i;
  EXPECT_EQ(model->at<nn::BatchNorm1d>(1)->num_batches_tracked.item<int64_t>(), 20);
  model->eval();
  NoGradGuard no_grad;
  Tensor h = batch_norm(raw[1].addmm(x, raw[0].t()), raw[4], raw[5], raw[2], raw[3], false);
  Tensor want = raw[8].addmm(h.relu(), raw[7].t());
  EXPECT_EQ(values((*model)(x)), values(want));
}

}  // namespace
}  // namespace mutagrad

namespace mutagrad {
namespace {

// Note [Parameter names in errors]: a parameter written between forward and backward is
// named by its path from the module that was called.
TEST(Module, StaleTensorErrorNamesTheParameterByItsPath) {
  auto model = mlp();
  Tensor loss = (*model)(pattern({5, 4}, 0.37, 0.1)).sum();
  {
    NoGradGuard no_grad;
    model->at<nn::Linear>(4)->weight.add_(1.0);
  }
  std::string msg = error_of<autograd::AutogradError>([&] { loss.backward(); });
  EXPECT_NE(msg.find("4.weight"), std::string::npos) << msg;
  // The same layer called on its own is a root: its names are relative to it.
  auto fc = model->at<nn::Linear>(4);
  Tensor out = (*fc)(pattern({2, 8}, 0.3, 0.2).requires_grad_()).sum();
  {
    NoGradGuard no_grad;
    fc->weight.add_(1.0);
  }
  msg = error_of<autograd::AutogradError>([&] { out.backward(); });
  EXPECT_NE(msg.find("weight"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("4.weight"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mutagrad

namespace mutagrad {
namespace {

// A write a layer makes in its forward is reported with the layer's path and the line of the
// model's call (Note [Parameter names in errors]).
TEST(Module, InplaceLayerWriteNamesTheLayerPathAndTheCallersLine) {
  nn::Sequential model(std::make_shared<nn::Sigmoid>(), std::make_shared<nn::ReLU>(true));
  Tensor x = pattern({2, 3}, 0.37, 0.1).requires_grad_();
  // clang-format off
  Tensor y = model(x); const int line = __LINE__;
  // clang-format on
  std::string msg = error_of<autograd::AutogradError>([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("relu_ at module 1 (ReLU), called from "), std::string::npos) << msg;
  EXPECT_NE(msg.find("module_test.cc:" + std::to_string(line)), std::string::npos) << msg;
}

}  // namespace
}  // namespace mutagrad

namespace mutagrad {
namespace {

// Every layer that writes its input in place (ReLU, LeakyReLU, ELU, Dropout with inplace),
// nested in a submodule, after a layer that saved its output: the stale error names the
// layer's full path and the line of the root call.
TEST(Module, EveryInplaceLayerAfterASavedOutputNamesItsNestedPathAndTheLine) {
  const std::vector<std::shared_ptr<nn::Module>> acts{
      std::make_shared<nn::ReLU>(true), std::make_shared<nn::LeakyReLU>(0.1, true),
      std::make_shared<nn::ELU>(1.0, true), std::make_shared<nn::Dropout>(0.3, true)};
  for (const auto& act : acts) {
    auto features = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 3),
                                                     std::make_shared<nn::Tanh>(), act);
    nn::Sequential model;
    model.push_back("features", features);
    model.to(test_device(), kFloat64);
    // clang-format off
    Tensor y = model(pattern({4, 3}, 0.37, 0.1)); const int line = __LINE__;
    // clang-format on
    std::string msg = error_of<autograd::AutogradError>([&] { y.sum().backward(); });
    EXPECT_NE(msg.find("TanhBackward0"), std::string::npos) << msg;
    EXPECT_NE(msg.find(str(" at module features.2 (", act->name(), "), called from ")),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(str("module_test.cc:", line)), std::string::npos) << msg;
  }
}

// A tied parameter is one optimizer entry and one write per step (two keys in state_dict).
TEST(Module, TiedWeightIsOneOptimizerEntryWrittenOncePerStep) {
  Tensor w = on_test_device(full({2, 2}, 1.0, kFloat64));
  nn::Sequential m(std::make_shared<Holder>(w), std::make_shared<nn::Tanh>(),
                   std::make_shared<Holder>(w));
  optim::SGD opt(m.parameters(), optim::SGDOptions(0.5));
  ASSERT_EQ(opt.param_groups().size(), 1u);
  ASSERT_EQ(opt.param_groups()[0].params().size(), 1u);
  EXPECT_TRUE(opt.param_groups()[0].params()[0].is_same(w));
  EXPECT_EQ(m.state_dict().keys(), (Keys{"0.weight", "2.weight"}));
  w.set_grad(on_test_device(full({2, 2}, 2.0, kFloat64)));
  const uint32_t v = w.version();
  opt.step();
  EXPECT_EQ(w.version(), v + 1);
  EXPECT_EQ(values(w), std::vector<double>(4, 0.0));  // 1 - 0.5 * 2, once
}

}  // namespace
}  // namespace mutagrad
