// check_backward: the dry run of backward agrees with what backward does. Hand-built programs
// (stale, fresh, released, kSnapshot, views) and seeded random programs of views, saving ops
// and in-place writes; tests/python/check_backward_test.py runs the random programs of the
// differential suite (tests/python/differential_autograd_test.py) through both.
#include <any>
#include <random>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::AutogradError;
using autograd::BackwardCheck;
using autograd::BackwardProblem;
using autograd::check_backward;
using testing_util::leaf;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool ends_with(const char* s, const std::string& suffix) {
  const std::string str = s != nullptr ? s : "";
  return str.size() >= suffix.size() &&
         str.compare(str.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(CheckBackward, FreshGraphIsSafe) {
  Tensor a = leaf({3}, 1);
  Tensor loss = (a.sigmoid() * a).sum();
  const BackwardCheck check = check_backward({loss});
  EXPECT_TRUE(check.ok()) << check;
  EXPECT_EQ(check.nodes_checked, 4);  // Sum, Mul, Sigmoid, AccumulateGrad
  EXPECT_EQ(check.saved_checked, 3);  // Mul: self, other; Sigmoid: result
  EXPECT_TRUE(contains(autograd::to_string(check), "backward would succeed")) << check;
  loss.backward();
}

TEST(CheckBackward, StaleTensorNamesTheWriteAndTheNode) {
  Tensor a = leaf({3}, 2);
  Tensor h = a * 2.0;
  Tensor loss = (h * h).sum();
  const int line = __LINE__ + 1;
  h.add_(1.0);
  const BackwardCheck check = check_backward({loss});
  ASSERT_EQ(check.problems.size(), 2u) << check;
  for (const BackwardProblem& p : check.problems) {
    EXPECT_EQ(p.kind, BackwardProblem::Kind::kStale);
    EXPECT_EQ(p.node, "MulBackward0");
    EXPECT_EQ(p.saved_version, 0u);
    EXPECT_EQ(p.current_version, 1u);
    EXPECT_EQ(p.shape, DimVector({3}));
    EXPECT_EQ(p.dtype, kFloat64);
    ASSERT_TRUE(p.write.has_value());
    EXPECT_STREQ(p.write->op, "add_");
    EXPECT_TRUE(ends_with(p.write->file, "check_backward_test.cc")) << p.write->file;
    EXPECT_EQ(p.write->line, line);
  }
  EXPECT_EQ(check.problems[0].field, "self");
  EXPECT_EQ(check.problems[1].field, "other");
  EXPECT_TRUE(
      contains(check.problems[0].message(), "check_backward_test.cc:" + std::to_string(line)))
      << check;
  try {
    loss.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_TRUE(contains(e.what(), "MulBackward0 saved it")) << e.what();
  }
}

TEST(CheckBackward, ReportsInBackwardsOrder) {
  Tensor a = leaf({4}, 3);
  Tensor h = a * 1.0;
  Tensor e = h.exp();           // ExpBackward0 saves its result (e)
  Tensor loss = (e * h).sum();  // MulBackward0 saves e and h
  h.mul_(3.0);                  // h stale for MulBackward0
  e.fill_(0.0);                 // e stale for MulBackward0 and ExpBackward0
  const BackwardCheck check = check_backward({loss});
  ASSERT_EQ(check.problems.size(), 3u) << check;
  EXPECT_EQ(check.problems[0].node, "MulBackward0");
  EXPECT_EQ(check.problems[2].node, "ExpBackward0");
  EXPECT_LT(check.problems[0].order, check.problems[2].order);
  EXPECT_STREQ(check.problems[2].write->op, "fill_");
}

TEST(CheckBackward, ReleasedAfterBackwardWithoutRetainGraph) {
  Tensor a = leaf({3}, 4);
  Tensor loss = (a * a).sum();
  loss.backward();
  const BackwardCheck check = check_backward({loss});
  ASSERT_EQ(check.problems.size(), 2u) << check;
  EXPECT_EQ(check.problems[0].kind, BackwardProblem::Kind::kReleased);
  EXPECT_TRUE(contains(check.problems[0].message(), "retain_graph")) << check;
  EXPECT_THROW(loss.backward(), AutogradError);

  Tensor b = leaf({3}, 5);
  Tensor kept = (b * b).sum();
  kept.backward({}, /*retain_graph=*/true);
  EXPECT_TRUE(check_backward({kept}).ok());
}

TEST(CheckBackward, SnapshotPolicyMakesTheWriteSafe) {
  Tensor a = leaf({3}, 6);
  Tensor h = a * 2.0;
  Tensor loss;
  {
    MutationPolicyGuard guard(MutationPolicy::kSnapshot);
    loss = (h * h).sum();
    h.add_(1.0);
  }
  EXPECT_TRUE(check_backward({loss}).ok()) << check_backward({loss});
  loss.backward();
}

TEST(CheckBackward, WriteIntoAViewOfASavedTensor) {
  Tensor a = leaf({2, 3}, 7);
  Tensor h = a * 1.0;
  Tensor loss = h.sigmoid().sum();  // saves the result, not h
  h.select(0, 1).mul_(2.0);         // safe: nothing saved h
  EXPECT_TRUE(check_backward({loss}).ok());
  Tensor s = h.sigmoid();
  Tensor loss2 = s.sum();
  s.narrow(1, 0, 2).zero_();  // stale: SigmoidBackward0's result
  const BackwardCheck check = check_backward({loss2});
  ASSERT_EQ(check.problems.size(), 1u) << check;
  EXPECT_EQ(check.problems[0].node, "SigmoidBackward0");
  EXPECT_STREQ(check.problems[0].write->op, "zero_");
  EXPECT_THROW(loss2.backward(), AutogradError);
  loss.backward();
}

TEST(CheckBackward, DoubleBackwardThroughAGradientGraph) {
  Tensor x = leaf({3}, 8);
  Tensor h = x * 1.0;
  Tensor y = (h * h * h).sum();
  auto grads = autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  Tensor g = grads[0].sum();
  EXPECT_TRUE(check_backward({g}).ok()) << check_backward({g});
  h.add_(1.0);
  const BackwardCheck check = check_backward({g});
  EXPECT_FALSE(check.ok());
  EXPECT_THROW(g.backward(), AutogradError);
}

TEST(CheckBackward, InPlaceOnAViewNamesTheWrappedNode) {
  Tensor a = leaf({2, 3}, 9);
  Tensor h = a * 1.0;
  h.select(0, 0).sigmoid_();  // h's grad_fn: CopySlices(SigmoidBackward0), saving the result
  Tensor loss = h.sum();
  h.add_(1.0);
  const BackwardCheck check = check_backward({loss});
  ASSERT_EQ(check.problems.size(), 1u) << check;
  EXPECT_EQ(check.problems[0].wrapper, "CopySlices");
  EXPECT_TRUE(contains(check.problems[0].message(), "(in CopySlices)")) << check;
  try {
    loss.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_TRUE(contains(e.what(), check.problems[0].node + " saved it")) << e.what() << check;
  }
}

// Seeded random programs: a non-leaf h, views of it, saving ops on views and in-place writes.
// For every program: the report is empty iff backward succeeds, and the first reported node
// is the one named by backward's error.
TEST(CheckBackward, PackedTensorsAreCertainWhenPackKeptAnAlias) {
  // Note [Saved-tensor hooks]: a pack that kept an alias is checked by backward whatever unpack
  // returns (a certain problem, packed == false); a copying pack only if unpack returns an alias
  // (packed == true: a possible problem).
  for (const bool copy : {false, true}) {
    SCOPED_TRACE(copy ? "copying pack" : "aliasing pack");
    Tensor a = leaf({3}, 40);
    Tensor x = a * 1.0;
    Tensor loss;
    {
      autograd::SavedTensorHooksGuard guard(
          [copy](const Tensor& t) -> std::any { return copy ? t.clone() : t; },
          [](const std::any& p) { return std::any_cast<Tensor>(p).clone(); });
      loss = (x * x).sum();
    }
    x.mul_(2.0);
    const BackwardCheck check = check_backward({loss});
    ASSERT_EQ(check.problems.size(), 2u) << check;  // MulBackward0's self and other
    EXPECT_EQ(check.problems[0].packed, copy);
    if (copy) {
      loss.backward();
    } else {
      EXPECT_THROW(loss.backward(), AutogradError);
    }
  }
}

TEST(CheckBackward, AgreesWithBackwardOnRandomPrograms) {
  std::mt19937_64 rng(20261125);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  int failed = 0, succeeded = 0;
  for (int program = 0; program < 300; ++program) {
    Tensor a = leaf({3, 4}, static_cast<uint64_t>(program) + 100);
    Tensor h = a * 1.5;
    std::vector<Tensor> terms{h.sum()};
    auto view = [&](const Tensor& t) -> Tensor {
      switch (pick(4)) {
        case 0:
          return t.select(0, pick(3));
        case 1:
          return t.narrow(1, pick(2), 2);
        case 2:
          return t.t();
        default:
          return t;
      }
    };
    const int steps = 1 + pick(5);
    for (int s = 0; s < steps; ++s) {
      Tensor v = view(h);
      switch (pick(7)) {
        case 0:
          terms.push_back((v * v).sum());
          break;
        case 1:
          terms.push_back(v.sigmoid().sum());
          break;
        case 2:
          terms.push_back(v.exp().sum());
          break;
        case 3:
          v.add_(0.5);
          break;
        case 4:
          v.mul_(2.0);
          break;
        case 5:
          v.sigmoid_();  // on a view: CopySlices wraps the node that saves the result
          break;
        default: {
          Tensor e = v.exp();
          terms.push_back(e.sum());
          if (pick(2) == 0) e.sigmoid_();  // stale: ExpBackward0's result
          break;
        }
      }
    }
    Tensor loss = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) loss = loss + terms[i];
    const BackwardCheck check = check_backward({loss});
    try {
      loss.backward();
      ++succeeded;
      EXPECT_TRUE(check.ok()) << "program " << program << ": backward succeeded but\n" << check;
    } catch (const AutogradError& e) {
      ++failed;
      ASSERT_FALSE(check.ok()) << "program " << program << ": backward raised " << e.what();
      EXPECT_TRUE(contains(e.what(), check.problems[0].node + " saved it"))
          << "program " << program << ": " << e.what() << "\n"
          << check;
      const BackwardProblem& first = check.problems[0];
      EXPECT_TRUE(contains(e.what(), "is at version " + std::to_string(first.current_version) +
                                         "; expected version " +
                                         std::to_string(first.saved_version)))
          << e.what() << "\n"
          << check;
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(failed, 30);
  EXPECT_GT(succeeded, 30);
}

}  // namespace
}  // namespace mutagrad
