// MutationPolicy: the same program raises under kError (PyTorch) and gives the gradients of the
// values as they were when saved under kSnapshot, while the write still reaches every alias.
// Expected values are hand-derived in each test.
#include "autograd/mutation_policy.h"

#include <cmath>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::MutationPolicyState;
using autograd::VariableList;
using testing_util::dev;
using testing_util::expect_close;

Tensor leaf_of(std::vector<double> v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}).requires_grad_();
}

// L = sum(x * b) + sum(exp(x)) with x = a * 1; then x's view is doubled in place; then
// L += sum(x * x). dL/da = b + exp(a) + 8a (x = 2a after the write), dL/db = a.
Tensor program(const Tensor& a, const Tensor& b, Tensor* x_out) {
  Tensor x = a * 1.0;
  Tensor x_alias = x.view({3});
  Tensor loss = (x * b).sum() + x.exp().sum();
  x_alias.mul_(2.0);
  loss = loss + (x * x).sum();
  *x_out = x;
  return loss;
}

TEST(MutationPolicy, DefaultIsErrorAndGuardRestores) {
  EXPECT_EQ(MutationPolicyState::current(), MutationPolicy::kError);
  {
    MutationPolicyGuard outer(MutationPolicy::kSnapshot);
    EXPECT_EQ(MutationPolicyState::current(), MutationPolicy::kSnapshot);
    {
      MutationPolicyGuard inner(MutationPolicy::kError);
      EXPECT_EQ(MutationPolicyState::current(), MutationPolicy::kError);
    }
    EXPECT_EQ(MutationPolicyState::current(), MutationPolicy::kSnapshot);
  }
  EXPECT_EQ(MutationPolicyState::current(), MutationPolicy::kError);
}

TEST(MutationPolicy, ErrorPolicyRaisesNamingTheWrite) {
  Tensor a = leaf_of({1, 2, 3});
  Tensor b = leaf_of({4, 5, 6});
  Tensor x;
  Tensor loss = program(a, b, &x);
  try {
    loss.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mul_ at "), std::string::npos) << msg;
    EXPECT_NE(msg.find("mutation_policy_test.cc:"), std::string::npos) << msg;
  }
}

TEST(MutationPolicy, SnapshotGivesGradientsOfTheSavedValues) {
  Tensor a = leaf_of({1, 2, 3});
  Tensor b = leaf_of({4, 5, 6});
  Tensor x;
  {
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    Tensor loss = program(a, b, &x);
    expect_close(x, {2, 4, 6});  // the write reached x through its view
    EXPECT_EQ(x.version(), 1u);
    loss.backward();
  }
  expect_close(a.grad(), {4 + std::exp(1.0) + 8, 5 + std::exp(2.0) + 16, 6 + std::exp(3.0) + 24});
  expect_close(b.grad(), {1, 2, 3});
}

TEST(MutationPolicy, SnapshotKeepsWritesVisibleThroughEveryAlias) {
  Tensor a = leaf_of({1, 2, 3, 4});
  MutationPolicyGuard guard(MutationPolicy::kSnapshot);
  Tensor x = a * 1.0;
  Tensor first = x.narrow(0, 0, 2);
  Tensor detached = x.detach();
  Tensor y = (x * x).sum();  // saves x
  first.add_(10.0);
  detached.select(0, 3).fill_(0.0);
  expect_close(x, {11, 12, 3, 0});
  expect_close(first, {11, 12});
  expect_close(detached, {11, 12, 3, 0});
  y.backward();
  expect_close(a.grad(), {2, 4, 6, 8});  // 2a: the saved x, not the written one
}

TEST(MutationPolicy, SnapshotOnlyProtectsValuesSavedUnderIt) {
  Tensor a = leaf_of({1, 2});
  Tensor x = a * 1.0;
  Tensor y = (x * x).sum();  // saved under kError
  {
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    x.add_(1.0);
  }
  EXPECT_THROW(y.backward(), AutogradError);
}

TEST(MutationPolicy, WritesAfterTheGuardExitsStillSnapshot) {
  Tensor a = leaf_of({1, 2});
  Tensor x = a * 1.0;
  Tensor y;
  {
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    y = (x * x).sum();
  }
  EXPECT_EQ(x.version(), 0u);
  x.add_(1.0);  // under kError, but the slot was registered under kSnapshot: still fine
  y.backward();
  expect_close(a.grad(), {2, 4});
}

TEST(MutationPolicy, SnapshotSupportsDoubleBackward) {
  Tensor a = leaf_of({1, 2, 3});
  MutationPolicyGuard guard(MutationPolicy::kSnapshot);
  Tensor x = a * a;          // x = a^2, saves a
  Tensor y = (x * x).sum();  // y = sum(a^4), saves x
  x.add_(5.0);
  VariableList g = autograd::grad({y}, {a}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  expect_close(g[0], {4, 32, 108});  // 4a^3
  VariableList h = autograd::grad({g[0].sum()}, {a});
  expect_close(h[0], {12, 48, 108});  // 12a^2
}

TEST(MutationPolicy, SlotsAreFreedWithTheGraph) {
  const int64_t before = autograd::num_snapshot_slots();
  Tensor a = leaf_of({1, 2});
  {
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    Tensor y = (a * 1.0 * a).sum();
    EXPECT_GT(autograd::num_snapshot_slots(), before);
  }
  EXPECT_EQ(autograd::num_snapshot_slots(), before);
}

TEST(MutationPolicy, LeafErrorsAreNotAffected) {
  Tensor a = leaf_of({1, 2});
  MutationPolicyGuard guard(MutationPolicy::kSnapshot);
  EXPECT_THROW(a.add_(1.0), AutogradError);
  EXPECT_EQ(a.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
