// Module::clone() for every layer type (Note [Cloning modules]) and AveragedModel / update_bn
// (nn/swa_utils.h) against hand-computed running means, EMAs and batch statistics.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "mutagrad.h"
#include "nn/nn.h"
#include "tests/nn/nn_test_util.h"
#include "tests/nn/torch_swa_expected.h"

namespace mutagrad {
namespace {

using mutagrad::testing_device::on_test_device;
using mutagrad::testing_device::test_device;
using mutagrad_nn_test::error_of;
using mutagrad_nn_test::pattern;
using mutagrad_nn_test::values;

// One of every C++ layer type (containers nested), on the test device, in float64.
std::shared_ptr<nn::Module> zoo() {
  auto layers = std::make_shared<nn::ModuleDict>();
  layers->update("linear", std::make_shared<nn::Linear>(3, 4));
  layers->update("bilinear", std::make_shared<nn::Bilinear>(2, 3, 4));
  layers->update("embedding",
                 std::make_shared<nn::Embedding>(nn::EmbeddingOptions(5, 3).padding_idx(1)));
  layers->update("bn1", std::make_shared<nn::BatchNorm1d>(4));
  layers->update("bn2",
                 std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(3).momentum(std::nullopt)));
  layers->update("ln", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{4}));
  layers->update("gn", std::make_shared<nn::GroupNorm>(nn::GroupNormOptions(2, 4)));
  layers->update("conv1", std::make_shared<nn::Conv1d>(nn::ConvOptions(2, 4, 3).bias(false)));
  layers->update("conv2", std::make_shared<nn::Conv2d>(
                              nn::ConvOptions(2, 4, 3).padding_mode("reflect").padding(1)));
  layers->update("convt1", std::make_shared<nn::ConvTranspose1d>(2, 3, 2));
  layers->update("convt2", std::make_shared<nn::ConvTranspose2d>(
                               nn::ConvTransposeOptions(4, 2, 3).stride({2}).output_padding({1})));
  auto acts = std::make_shared<nn::ModuleList>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::ReLU>(true), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Sigmoid>(), std::make_shared<nn::Softmax>(1),
      std::make_shared<nn::LogSoftmax>(1), std::make_shared<nn::LeakyReLU>(0.2),
      std::make_shared<nn::GELU>("tanh"), std::make_shared<nn::SiLU>(),
      std::make_shared<nn::ELU>(0.5), std::make_shared<nn::Softplus>(2.0),
      std::make_shared<nn::Identity>(), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Unflatten>(1, std::vector<int64_t>{2, 2}),
      std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Dropout2d>(0.2)});
  layers->update("acts", acts);
  Tensor w = pattern({3}, 0.3, 0.5, 0.1) + 1.0;
  auto losses = std::make_shared<nn::Sequential>();
  losses->push_back(std::make_shared<nn::CrossEntropyLoss>(
      nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.1)));
  losses->push_back(std::make_shared<nn::NLLLoss>(nn::NLLLossOptions().weight(w)));
  losses->push_back(std::make_shared<nn::MSELoss>());
  losses->push_back(std::make_shared<nn::BCEWithLogitsLoss>(
      nn::BCEWithLogitsLossOptions().weight(w).pos_weight(w * 2.0)));
  losses->push_back(std::make_shared<nn::BCELoss>(w));
  losses->push_back(std::make_shared<nn::L1Loss>());
  losses->push_back(std::make_shared<nn::SmoothL1Loss>("sum", 0.5));
  losses->push_back(std::make_shared<nn::HuberLoss>("none", 2.0));
  losses->push_back(std::make_shared<nn::KLDivLoss>("batchmean", true));
  layers->update("losses", losses);
  layers->to(test_device(), kFloat64);
  return layers;
}

// Same keys, values, dtypes and requires_grad; no tensor shared.
void expect_equal_not_aliased(nn::Module& a, nn::Module& b) {
  EXPECT_EQ(a.repr(), b.repr());
  const nn::StateDict sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.keys(), sb.keys());
  for (const auto& [key, t] : sa) {
    const Tensor& u = sb[key];
    EXPECT_EQ(values(t), values(u)) << key;
    EXPECT_EQ(t.dtype(), u.dtype()) << key;
    EXPECT_EQ(t.device(), u.device()) << key;
    EXPECT_NE(t.unsafe_impl()->data(), u.unsafe_impl()->data()) << key;
  }
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.keys(), pb.keys());
  for (const auto& [key, t] : pa) {
    EXPECT_EQ(t.requires_grad(), pb[key].requires_grad()) << key;
    EXPECT_NE(t.unsafe_impl(), pb[key].unsafe_impl()) << key;
  }
  const auto ma = a.named_modules(), mb = b.named_modules();
  ASSERT_EQ(ma.keys(), mb.keys());
  for (const auto& [key, m] : ma) {
    EXPECT_NE(m.get(), mb[key].get()) << key;
    EXPECT_EQ(m->is_training(), mb[key]->is_training()) << key;
    EXPECT_EQ(typeid(*m), typeid(*mb[key])) << key;
  }
}

TEST(Clone, EveryLayerTypeIsDeepCopiedWithItsStructureAndValues) {
  auto model = zoo();
  model->named_modules()["acts.2"]->eval();
  std::shared_ptr<nn::Module> copy = model->clone();
  expect_equal_not_aliased(*model, *copy);
  EXPECT_FALSE(copy->named_modules()["acts.2"]->is_training());

  // Each layer's member handles are its own registered copies.
  auto dict = std::dynamic_pointer_cast<nn::ModuleDict>(copy);
  ASSERT_TRUE(dict);
  auto fc = std::dynamic_pointer_cast<nn::Linear>((*dict)["linear"]);
  EXPECT_EQ(fc->weight.unsafe_impl(), fc->own_parameters()["weight"].unsafe_impl());
  EXPECT_EQ(fc->bias.unsafe_impl(), fc->own_parameters()["bias"].unsafe_impl());
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm1d>((*dict)["bn1"]);
  for (const char* b : {"running_mean", "running_var", "num_batches_tracked"}) {
    EXPECT_EQ(bn->own_buffers()[b].unsafe_impl(),
              (std::string(b) == "running_mean"  ? bn->running_mean
               : std::string(b) == "running_var" ? bn->running_var
                                                 : bn->num_batches_tracked)
                  .unsafe_impl());
  }
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>((*dict)["conv2"]);
  EXPECT_EQ(conv->weight.unsafe_impl(), conv->own_parameters()["weight"].unsafe_impl());
  EXPECT_EQ(conv->bias.unsafe_impl(), conv->own_parameters()["bias"].unsafe_impl());
  Tensor img = pattern({1, 2, 5, 5}, 0.21, 0.4);
  EXPECT_EQ(values((*conv)(img)),
            values((*(*std::dynamic_pointer_cast<nn::ModuleDict>(model))["conv2"])(img)));
  auto ce =
      std::dynamic_pointer_cast<nn::Sequential>((*dict)["losses"])->at<nn::CrossEntropyLoss>(0);
  EXPECT_EQ(ce->weight.unsafe_impl(), ce->own_buffers()["weight"].unsafe_impl());
  // The containers' items are the clones.
  auto acts = std::dynamic_pointer_cast<nn::ModuleList>((*dict)["acts"]);
  EXPECT_EQ((*acts)[0].get(), acts->named_children()["0"].get());

  // The copies compute what the originals do.
  Tensor x = pattern({5, 3}, 0.37, 0.1);
  auto fc0 = std::dynamic_pointer_cast<nn::Linear>(
      (*std::dynamic_pointer_cast<nn::ModuleDict>(model))["linear"]);
  EXPECT_EQ(values((*fc)(x)), values((*fc0)(x)));
  Tensor h = (*fc)(x);
  EXPECT_EQ(values((*bn)(h)), values((*std::dynamic_pointer_cast<nn::BatchNorm1d>(
                                  (*std::dynamic_pointer_cast<nn::ModuleDict>(model))["bn1"]))(h)));

  // Writing the copy leaves the original's values and versions alone.
  auto original = model->named_parameters();
  std::vector<uint32_t> versions;
  std::vector<std::vector<double>> before;
  for (const auto& [k, t] : original) {
    versions.push_back(t.version());
    before.push_back(values(t));
  }
  {
    NoGradGuard no_grad;
    for (Tensor p : copy->parameters()) p.add_(1.0);
  }
  size_t i = 0;
  for (const auto& [k, t] : original) {
    EXPECT_EQ(t.version(), versions[i]) << k;
    EXPECT_EQ(values(t), before[i]) << k;
    ++i;
  }
}

TEST(Clone, TiedWeightsAndSharedModulesStayTiedInTheCopy) {
  auto a = std::make_shared<nn::Linear>(4, 4);
  auto b = std::make_shared<nn::Linear>(4, 4);
  auto seq = std::make_shared<nn::Sequential>(a, std::make_shared<nn::ReLU>(), a, b);
  auto copy = std::dynamic_pointer_cast<nn::Sequential>(seq->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ((*copy)[0].get(), (*copy)[2].get());
  EXPECT_NE((*copy)[0].get(), a.get());
  EXPECT_EQ(copy->parameters().size(), seq->parameters().size());
  EXPECT_EQ(copy->state_dict().keys(), seq->state_dict().keys());
}

TEST(Clone, ATiedParameterIsCopiedOnce) {
  auto seq = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(3, 3),
      std::make_shared<nn::Linear>(nn::LinearOptions(3, 3).bias(false)));
  Tensor w = seq->at<nn::Linear>(0)->weight;
  auto tied = std::make_shared<nn::ModuleDict>();
  tied->update("seq", seq);
  tied->register_parameter("shared", w);
  auto copy = tied->clone();
  ASSERT_TRUE(copy);
  const auto p = copy->named_parameters();
  // named_parameters lists a tied tensor once, under its first path, as in the original.
  EXPECT_EQ(p.keys(), tied->named_parameters().keys());
  EXPECT_EQ(copy->own_parameters()["shared"].unsafe_impl(),
            copy->named_modules()["seq.0"]->own_parameters()["weight"].unsafe_impl());
}

struct NoClone : nn::Module {
  NoClone() : Module("NoClone") { register_module("fc", std::make_shared<nn::Linear>(2, 2)); }
};
struct LinearSubclass : nn::Linear {
  LinearSubclass() : Linear(2, 2) {}
};
// A user module that implements clone_module(), holding its child in a member.
struct Net : nn::Module {
  Net() : Module("Net") { fc = register_module("fc", std::make_shared<nn::Linear>(2, 3)); }
  Tensor forward(const Tensor& x) override { return (*fc)(x); }
  std::shared_ptr<nn::Linear> fc;

 protected:
  std::shared_ptr<nn::Module> clone_module() const override {
    auto copy = copy_module(*this);
    copy->fc = cloned(fc);
    return copy;
  }
};

TEST(Clone, ATypeWithoutCloneIsATypedErrorNamingItAndNothingChanges) {
  auto plain = std::make_shared<NoClone>();
  std::string msg = error_of<ValueError>([&] { plain->clone(); });
  EXPECT_NE(msg.find("NoClone does not implement clone()"), std::string::npos) << msg;
  auto base = std::make_shared<nn::Module>("Base");
  msg = error_of<ValueError>([&] { base->clone(); });
  EXPECT_NE(msg.find("mutagrad::nn::Module does not implement clone();"), std::string::npos) << msg;
  // Inside a container too; the base of a subclass does not stand in for it.
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>(),
                                              std::make_shared<LinearSubclass>());
  msg = error_of<ValueError>([&] { seq->clone(); });
  EXPECT_NE(msg.find("LinearSubclass does not implement clone() (its base mutagrad::nn::Linear "
                     "does)"),
            std::string::npos)
      << msg;
  // A module's copy constructor runs only inside clone().
  nn::Linear fc(2, 2);
  msg = error_of<ValueError>([&] { nn::Linear copy(fc); });
  EXPECT_NE(msg.find("clone()"), std::string::npos) << msg;
  // The user type with clone_module() copies, its member rebound.
  auto net = std::make_shared<Net>();
  net->to(test_device(), kFloat64);
  auto copy = std::dynamic_pointer_cast<Net>(net->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->fc.get(), copy->named_children()["fc"].get());
  EXPECT_NE(copy->fc.get(), net->fc.get());
  Tensor x = pattern({1, 2}, 0.3, 0.2);
  EXPECT_EQ(values((*copy)(x)), values((*net)(x)));
}

// ---- AveragedModel ----

std::shared_ptr<nn::Sequential> small_model() {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4),
                                            std::make_shared<nn::BatchNorm1d>(4));
  m->to(test_device(), kFloat64);
  return m;
}

// Sets every parameter (and buffer) of `m` to a pattern depending on `k`.
void set_state(nn::Module& m, int k) {
  NoGradGuard no_grad;
  int i = 0;
  for (Tensor t : m.parameters()) t.copy_(pattern(t.sizes(), 0.7 + 0.1 * k, 0.3 * i++, 1.0 + k));
  for (Tensor t : m.buffers()) {
    if (t.is_floating_point()) {
      t.copy_(pattern(t.sizes(), 0.2 * k, 0.1 * i++, 2.0).abs());
    } else {
      t.fill_(10 * k + 3);
    }
  }
}

TEST(AveragedModel, DefaultIsTheRunningMeanWithOneWritePerUpdate) {
  auto model = small_model();
  nn::AveragedModel swa(model);
  std::vector<std::vector<std::vector<double>>> seen;  // [update][param] values
  const std::vector<Tensor> mine = swa.module->parameters();
  const std::vector<Tensor> buffers_before = swa.module->buffers();
  std::vector<std::vector<double>> buffer_values;
  for (const Tensor& b : buffers_before) buffer_values.push_back(values(b));
  for (int k = 0; k < 4; ++k) {
    set_state(*model, k);
    std::vector<uint32_t> theirs;
    for (const Tensor& p : model->parameters()) theirs.push_back(p.version());
    std::vector<uint32_t> before;
    for (const Tensor& p : mine) before.push_back(p.version());
    swa.update_parameters(*model);
    seen.emplace_back();
    size_t i = 0;
    for (const Tensor& p : model->parameters()) {
      seen.back().push_back(values(p));
      EXPECT_EQ(p.version(), theirs[i]);  // the model is only read
      EXPECT_EQ(mine[i].version(), before[i] + 1);
      ++i;
    }
    // The plain mean of the updates so far.
    for (size_t j = 0; j < mine.size(); ++j) {
      std::vector<double> got = values(mine[j]);
      for (size_t e = 0; e < got.size(); ++e) {
        double sum = 0;
        for (const auto& u : seen) sum += u[j][e];
        EXPECT_NEAR(got[e], sum / seen.size(), 1e-14) << k << " " << j << " " << e;
      }
    }
    EXPECT_EQ(swa.n_averaged.item<int64_t>(), k + 1);
  }
  // Without use_buffers the buffers stay as copied at construction.
  for (size_t j = 0; j < buffers_before.size(); ++j) {
    EXPECT_EQ(values(swa.module->buffers()[j]), buffer_values[j]);
  }
}

// torch 1.13's AveragedModel after the same four updates (torch_swa_expected.h, from
// gen_torch_swa_expected.py): parameters and buffers, num_batches_tracked included.
TEST(AveragedModel, MatchesTorchsAveragedModelWithBuffers) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (const std::string avg : {"swa", "ema"}) {
      auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4),
                                                    std::make_shared<nn::BatchNorm1d>(4));
      model->to(test_device(), dtype);
      nn::AveragedModelOptions options;
      options.use_buffers(true);
      if (avg == "ema") options.avg_fn(nn::get_ema_avg_fn(0.75));
      nn::AveragedModel swa(model, options);
      for (int k = 0; k < 4; ++k) {
        set_state(*model, k);
        swa.update_parameters(*model);
      }
      const std::string prefix = avg + (dtype == kFloat32 ? "_float32_" : "_float64_");
      const double tol = dtype == kFloat32 ? 1e-6 : 1e-12;
      for (const auto& [key, t] : swa.module->state_dict()) {
        const std::vector<double>& expect = mutagrad_nn_test::torch_swa_expected().at(prefix + key);
        const std::vector<double> got = values(t);
        ASSERT_EQ(got.size(), expect.size()) << prefix << key;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_NEAR(got[i], expect[i], tol * (1 + std::abs(expect[i]))) << prefix << key << i;
        }
      }
    }
  }
}

TEST(AveragedModel, EmaAvgFnMultiAvgFnAndBuffersMatchTheFormulas) {
  const double decay = 0.75;
  for (int variant = 0; variant < 2; ++variant) {
    auto model = small_model();
    nn::AveragedModelOptions options;
    options.use_buffers(true);
    if (variant == 0) {
      options.avg_fn(nn::get_ema_avg_fn(decay));
    } else {
      options.multi_avg_fn(nn::get_ema_multi_avg_fn(decay));
    }
    nn::AveragedModel ema(model, options);
    std::vector<std::vector<double>> expect;
    for (int k = 0; k < 3; ++k) {
      set_state(*model, k);
      ema.update_parameters(*model);
      std::vector<Tensor> cur = model->parameters();
      for (const Tensor& b : model->buffers()) cur.push_back(b);
      for (size_t j = 0; j < cur.size(); ++j) {
        std::vector<double> c = values(cur[j]);
        if (k == 0) {
          expect.push_back(c);
          continue;
        }
        for (size_t e = 0; e < c.size(); ++e) {
          double& a = expect[j][e];
          if (!cur[j].is_floating_point()) {
            // num_batches_tracked: int64, decay * a + (1 - decay) * p truncated by copy_.
            a = static_cast<double>(static_cast<int64_t>(a * decay + c[e] * (1 - decay)));
          } else {
            a = a * decay + c[e] * (1 - decay);
          }
        }
      }
    }
    std::vector<Tensor> got = ema.module->parameters();
    for (const Tensor& b : ema.module->buffers()) got.push_back(b);
    ASSERT_EQ(got.size(), expect.size());
    for (size_t j = 0; j < got.size(); ++j) {
      std::vector<double> g = values(got[j]);
      for (size_t e = 0; e < g.size(); ++e) {
        EXPECT_NEAR(g[e], expect[j][e], 1e-13) << variant << " " << j << " " << e;
      }
    }
  }
}

TEST(AveragedModel, AnotherArchitectureIsRefusedAndChangesNothing) {
  auto model = small_model();
  nn::AveragedModel swa(model);
  swa.update_parameters(*model);
  auto other = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 5),
                                                std::make_shared<nn::BatchNorm1d>(5));
  other->to(test_device(), kFloat64);
  std::vector<uint32_t> versions;
  for (const Tensor& p : swa.parameters()) versions.push_back(p.version());
  std::string msg = error_of<ValueError>([&] { swa.update_parameters(*other); });
  EXPECT_NE(msg.find("has shape [5, 3] but the averaged one has [4, 3]"), std::string::npos) << msg;
  auto fewer = std::make_shared<nn::Linear>(3, 4);
  msg = error_of<ValueError>([&] { swa.update_parameters(*fewer); });
  EXPECT_NE(msg.find("the model has 2 parameters but the averaged copy has 4"), std::string::npos)
      << msg;
  size_t i = 0;
  for (const Tensor& p : swa.parameters()) EXPECT_EQ(p.version(), versions[i++]);
  EXPECT_EQ(swa.n_averaged.item<int64_t>(), 1);
}

TEST(AveragedModel, AnUpdateBetweenForwardAndBackwardIsNamedInTheStaleError) {
  auto model = small_model();
  auto swa = std::make_shared<nn::AveragedModel>(model);
  swa->update_parameters(*model);
  Tensor loss = (*swa)(pattern({5, 3}, 0.37, 0.1)).pow(2).sum();
  set_state(*model, 2);
  // clang-format off
  swa->update_parameters(*model); const int line = __LINE__;
  // clang-format on
  std::string msg = error_of<autograd::AutogradError>([&] { loss.backward(); });
  // The first stale tensor backward meets (BatchNorm's weight), by its path in the root call.
  EXPECT_NE(msg.find("(module.1.weight)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("copy_ at "), std::string::npos) << msg;
  EXPECT_NE(msg.find("clone_swa_test.cc:" + std::to_string(line)), std::string::npos) << msg;
  // The averaged model is itself cloneable (an EMA of an EMA, a checkpoint copy).
  auto copy = std::dynamic_pointer_cast<nn::AveragedModel>(swa->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->module.get(), copy->named_children()["module"].get());
  EXPECT_EQ(copy->n_averaged.unsafe_impl(), copy->own_buffers()["n_averaged"].unsafe_impl());
  EXPECT_EQ(copy->n_averaged.item<int64_t>(), 2);
}

TEST(UpdateBn, RecomputesRunningStatisticsAsCumulativeAveragesAndRestoresModes) {
  auto model = small_model();
  model->eval();
  auto bn = model->at<nn::BatchNorm1d>(1);
  auto fc = model->at<nn::Linear>(0);
  std::vector<std::array<Tensor, 2>> batches;
  for (int k = 0; k < 3; ++k) {
    batches.push_back({pattern({6, 3}, 0.3 + 0.2 * k, 0.1 * k, 1.0 + k), Tensor()});
  }
  nn::update_bn(batches, *model);
  // Expected: the mean over batches of each batch's mean and unbiased variance of fc(x).
  std::vector<double> mean(4, 0.0), var(4, 0.0);
  for (const auto& b : batches) {
    NoGradGuard no_grad;
    Tensor h = (*fc)(b[0]);
    std::vector<double> m = values(h.mean({0})), v = values(h.var({0}, 1));
    for (int c = 0; c < 4; ++c) {
      mean[c] += m[c] / 3;
      var[c] += v[c] / 3;
    }
  }
  std::vector<double> got_mean = values(bn->running_mean), got_var = values(bn->running_var);
  for (int c = 0; c < 4; ++c) {
    EXPECT_NEAR(got_mean[c], mean[c], 1e-12) << c;
    EXPECT_NEAR(got_var[c], var[c], 1e-12) << c;
  }
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 3);
  EXPECT_FALSE(model->is_training());
  EXPECT_FALSE(bn->is_training());
  ASSERT_TRUE(bn->options().momentum().has_value());
  EXPECT_EQ(*bn->options().momentum(), 0.1);
  // A plain range of tensors works too; a model without BatchNorm is not run.
  std::vector<Tensor> xs{pattern({2, 3}, 0.1, 0.2)};
  nn::update_bn(xs, *model);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  auto lin = std::make_shared<nn::Linear>(3, 4);
  nn::update_bn(xs, *lin);  // float32 Linear, float64 input: would throw if it ran
}

}  // namespace
}  // namespace mutagrad
