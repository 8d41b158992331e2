// Issue 35 in C++: a node's saved non-tensor arguments under torch's names
// (Node::visit_saved_attributes), the printer's options (set_print_options) and inference mode
// (tensor/inference_mode.h). Runs on the CPU and, as :introspection_test_cuda, on the host-run
// CUDA device.
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::SavedAttribute;
using testing_util::dev;
using testing_util::error_of;

std::map<std::string, SavedAttribute> attributes(const Tensor& t) {
  struct Collect final : autograd::SavedAttributeVisitor {
    std::map<std::string, SavedAttribute> out;
    void visit(const char* name, const SavedAttribute& value) override { out.emplace(name, value); }
  } collect;
  t.grad_fn()->visit_saved_attributes(collect);
  return collect.out;
}

Tensor matrix() { return dev(from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3})).requires_grad_(); }

TEST(SavedAttributes, HaveTorchsNamesAndValues) {
  Tensor x = matrix();
  auto sum = attributes(x.sum({1}, /*keepdim=*/true));
  EXPECT_EQ(std::get<DimVector>(sum.at("dim")), DimVector({1}));
  EXPECT_TRUE(std::get<bool>(sum.at("keepdim")));
  EXPECT_EQ(std::get<DimVector>(sum.at("self_sym_sizes")), DimVector({2, 3}));

  auto select = attributes(x.select(1, 2));
  EXPECT_EQ(std::get<int64_t>(select.at("dim")), 1);
  EXPECT_EQ(std::get<int64_t>(select.at("index")), 2);
  EXPECT_EQ(std::get<DimVector>(select.at("self_sizes")), DimVector({2, 3}));

  auto pow = attributes(x.pow(Scalar(3)));
  EXPECT_EQ(std::get<Scalar>(pow.at("exponent")).to<int64_t>(), 3);

  auto transpose = attributes(x.transpose(0, 1));
  EXPECT_EQ(std::get<int64_t>(transpose.at("dim0")), 0);
  EXPECT_EQ(std::get<int64_t>(transpose.at("dim1")), 1);

  // A node without such arguments visits nothing.
  EXPECT_TRUE(attributes(x.exp()).empty());
}

TEST(PrintOptions, PrecisionThresholdAndLineWidth) {
  const PrintOptions saved = print_options();
  Tensor x = from_vector<float>({1.0f / 3, 2.0f / 3}, {2});
  PrintOptions o;
  o.precision = 2;
  set_print_options(o);
  EXPECT_EQ(x.to_string(), "tensor([0.33, 0.67])");
  o.precision = 4;
  o.threshold = 3;
  o.edgeitems = 1;
  set_print_options(o);
  EXPECT_EQ(from_vector<int64_t>({1, 2, 3, 4, 5}, {5}).to_string(),
            "tensor([1,  ..., 5])");  // torch 1.13 pads " ..." too
  o.threshold = 1000;
  o.sci_mode = true;
  set_print_options(o);
  EXPECT_EQ(x.to_string(), "tensor([3.3333e-01, 6.6667e-01])");
  // A bad option is refused and changes nothing.
  PrintOptions bad;
  bad.linewidth = 0;
  EXPECT_THROW(set_print_options(bad), ValueError);
  EXPECT_EQ(x.to_string(), "tensor([3.3333e-01, 6.6667e-01])");
  set_print_options(saved);
  EXPECT_EQ(x.to_string(), "tensor([0.3333, 0.6667])");
}

TEST(InferenceMode, TensorsMadeInsideFollowTorchsRules) {
  Tensor normal = dev(from_vector<double>({1, 2, 3}, {3}));
  Tensor a, view_of_normal;
  {
    InferenceModeGuard guard;
    autograd::NoGradGuard no_grad;
    a = dev(from_vector<double>({1, 2}, {2})) * 2.0;
    a.add_(1.0);  // allowed inside, not counted
    view_of_normal = normal.narrow(0, 1, 2);
    normal.add_(1.0);  // a normal tensor's write is counted
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(a.version_counter().is_inference());
  EXPECT_TRUE(a.narrow(0, 0, 1).version_counter().is_inference());
  EXPECT_FALSE(view_of_normal.version_counter().is_inference());
  EXPECT_EQ(normal.version(), 1u);
  EXPECT_EQ(testing_util::values(a), std::vector<double>({3, 5}));

  // Outside: no in-place write (before anything changes), no save, no requires_grad_.
  EXPECT_NE(error_of<Error>([&] { a.mul_(2.0); }).find("Inplace update to inference tensor"),
            std::string::npos);
  EXPECT_EQ(testing_util::values(a), std::vector<double>({3, 5}));
  Tensor w = dev(from_vector<double>({1, 1}, {2})).requires_grad_();
  EXPECT_NE(error_of<Error>([&] { (void)(w * a); }).find("Inference tensors cannot be saved"),
            std::string::npos);
  EXPECT_NE(error_of<Error>([&] { a.requires_grad_(); }).find("on inference tensor outside"),
            std::string::npos);
  // What is made outside from it is normal, and differentiates.
  Tensor c = a.clone();
  EXPECT_FALSE(c.version_counter().is_inference());
  (w * c).sum().backward();
  EXPECT_EQ(testing_util::values(w.grad()), std::vector<double>({3, 5}));
}

// Note [Snapshot scopes]: values saved in a scope survive writes, and are refused once it closes.
TEST(SnapshotScope, BackwardAfterTheScopeClosedIsRefused) {
  Tensor a = dev(from_vector<double>({1, 2}, {2})).requires_grad_();
  Tensor inside, after;
  {
    autograd::MutationPolicyGuard policy(MutationPolicy::kSnapshot);
    auto scope = std::make_shared<autograd::SnapshotScope>();
    autograd::set_snapshot_scope(scope);
    Tensor h = a * 2.0;
    inside = (h * h).sum();
    after = (h * h).sum();
    h.mul_(10.0);
    inside.backward();  // the values as saved: d/da sum((2a)^2) = 8a
    scope->close();
    autograd::set_snapshot_scope(nullptr);
  }
  EXPECT_EQ(testing_util::values(a.grad()), std::vector<double>({8, 16}));
  EXPECT_NE(error_of<Error>([&] { after.backward(); }).find("allow_mutation_on_saved_tensors"),
            std::string::npos);
}

}  // namespace
}  // namespace mutagrad
