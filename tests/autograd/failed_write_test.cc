// A write that raises changes nothing: every in-place member of Tensor, with every kind of
// argument that makes it fail (dtype, shape, internal overlap, autograd refusal, value range),
// leaves the data and the version counter as they were (Note [In-place writes bump after
// validation]). And every path that stores a Scalar checks that it fits the destination dtype
// first (Note [Defined value conversions]): PyTorch's "value cannot be converted to type
// int32_t without overflow".
//
// The Python suite (tests/python/failed_write_test.py) runs the same check over the op list
// read from the module itself (every method ending in '_').
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::dev;

using indexing::Slice;
using testing_util::values;

// One in-place call that must raise; `self` is the tensor it writes.
struct FailingWrite {
  std::string what;
  std::function<Tensor()> make_self;
  std::function<void(Tensor&)> write;
};

Tensor bools() { return dev(from_vector(std::vector<double>{1, 0, 1}, {3})).to(kBool); }
Tensor ints() { return dev(from_vector(std::vector<int64_t>{1, 2, 3}, {3})); }
Tensor int32s() { return ints().to(kInt32); }
Tensor floats() { return dev(from_vector(std::vector<double>{0.5, -1.5, 2.0}, {3})).to(kFloat32); }
Tensor expanded() { return floats().narrow(0, 0, 1).expand({3}); }
Tensor mask() { return bools(); }
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<FailingWrite> failing_writes() {
  std::vector<FailingWrite> w;
  auto add = [&w](std::string what, std::function<Tensor()> self,
                  std::function<void(Tensor&)> write) {
    w.push_back({std::move(what), std::move(self), std::move(write)});
  };
  // dtype: ops a dtype does not support, results that cannot be cast back, bad alpha.
  add("bool.sub_(bool)", bools, [](Tensor& s) { s.sub_(bools()); });
  add("bool.sub_(True)", bools, [](Tensor& s) { s.sub_(Scalar(true)); });
  add("bool.neg_()", bools, [](Tensor& s) { s.neg_(); });
  add("bool.relu_()", bools, [](Tensor& s) { s.relu_(); });
  add("bool.pow_(bool)", bools, [](Tensor& s) { s.pow_(bools()); });
  add("int.sub_(t, alpha=0.5)", ints, [](Tensor& s) { s.sub_(ints(), 0.5); });
  add("int.add_(t, alpha=True)", ints, [](Tensor& s) { s.add_(ints(), true); });
  add("float.add_(t, alpha=True)", floats, [](Tensor& s) { s.add_(floats(), true); });
  add("int.add_(float)", ints, [](Tensor& s) { s.add_(floats()); });
  add("int.mul_(0.5)", ints, [](Tensor& s) { s.mul_(0.5); });
  add("int.div_(2)", ints, [](Tensor& s) { s.div_(2); });
  add("int.div_(t)", ints, [](Tensor& s) { s.div_(ints()); });
  add("int.exp_()", ints, [](Tensor& s) { s.exp_(); });
  add("int.sigmoid_()", ints, [](Tensor& s) { s.sigmoid_(); });
  add("int.tanh_()", ints, [](Tensor& s) { s.tanh_(); });
  add("int.pow_(0.5)", ints, [](Tensor& s) { s.pow_(0.5); });
  add("int.pow_(-1)", ints, [](Tensor& s) { s.pow_(-1); });
  add("int.clamp_(0.5)", ints, [](Tensor& s) { s.clamp_(0.5); });
  add("float.bitwise_or_(bool)", floats, [](Tensor& s) { s.bitwise_or_(bools()); });
  add("bool.bitwise_and_(int)", bools, [](Tensor& s) { s.bitwise_and_(ints()); });
  add("int.masked_fill_(int mask)", ints, [](Tensor& s) { s.masked_fill_(ints(), 0); });
  // shape: an in-place op cannot change its tensor's shape.
  add("add_ broadcasting up", floats, [](Tensor& s) { s.add_(dev(zeros({2, 3}))); });
  add("mul_ mismatched", floats, [](Tensor& s) { s.mul_(dev(zeros({2}))); });
  add("pow_ mismatched", floats, [](Tensor& s) { s.pow_(dev(zeros({4}))); });
  add("copy_ mismatched", floats, [](Tensor& s) { s.copy_(dev(zeros({2}))); });
  add("bitwise_xor_ mismatched", bools, [](Tensor& s) { s.bitwise_xor_(bools().narrow(0, 0, 2)); });
  add("masked_fill_ mask mismatched", floats,
      [](Tensor& s) { s.masked_fill_(mask().narrow(0, 0, 2), 0.0); });
  add("masked_fill_ 1-dim value", floats, [](Tensor& s) { s.masked_fill_(mask(), floats()); });
  add("fill_ 1-dim value", floats, [](Tensor& s) { s.fill_(floats()); });
  add("set_item_ value mismatched", floats,
      [](Tensor& s) { s.set_item_({Slice(0, 2)}, dev(zeros({3}))); });
  add("index_put_ out of range", floats, [](Tensor& s) {
    s.index_put_({dev(from_vector(std::vector<int64_t>{0, 5}, {2}))}, dev(zeros({2})));
  });
  add("set_item_ index out of range", floats, [](Tensor& s) { s.set_item_({7}, 1.0); });
  // internal overlap: writing into an expanded tensor.
  add("expanded.add_()", expanded, [](Tensor& s) { s.add_(1.0); });
  add("expanded.exp_()", expanded, [](Tensor& s) { s.exp_(); });
  add("expanded.fill_()", expanded, [](Tensor& s) { s.fill_(1.0); });
  add("expanded.copy_()", expanded, [](Tensor& s) { s.copy_(floats()); });
  add("expanded.masked_fill_()", expanded, [](Tensor& s) { s.masked_fill_(mask(), 1.0); });
  add("expanded.pow_(t)", expanded, [](Tensor& s) { s.pow_(floats()); });
  // autograd refusals: a leaf that requires grad, a view of one.
  auto leaf = [] { return floats().to(kFloat64).requires_grad_(); };
  add("leaf.mul_()", leaf, [](Tensor& s) { s.mul_(2.0); });
  add("leaf.sigmoid_()", leaf, [](Tensor& s) { s.sigmoid_(); });
  add("leaf.set_item_()", leaf, [](Tensor& s) { s.set_item_({0}, 1.0); });
  add("view of leaf.zero_()", leaf, [](Tensor& s) { s.narrow(0, 0, 2).zero_(); });
  // value range: a Scalar that does not fit the destination dtype.
  for (double v : {std::pow(2.0, 40), kNan, kInf, -kInf, 3e9}) {
    const std::string tag = "int32 <- " + std::to_string(v);
    add(tag + " fill_", int32s, [v](Tensor& s) { s.fill_(v); });
    add(tag + " masked_fill_", int32s, [v](Tensor& s) { s.masked_fill_(mask(), v); });
    add(tag + " set_item_ element", int32s, [v](Tensor& s) { s.set_item_({0}, v); });
    add(tag + " set_item_ slice", int32s, [v](Tensor& s) { s.set_item_({Slice(0, 1)}, v); });
    add(tag + " set_item_ mask", int32s, [v](Tensor& s) { s.set_item_({mask()}, v); });
    add(tag + " set_item_ index", int32s,
        [v](Tensor& s) { s.set_item_({dev(from_vector(std::vector<int64_t>{1}, {1}))}, v); });
    add(tag + " clamp_", int32s, [v](Tensor& s) { s.clamp_(v); });
  }
  for (int64_t v : {int64_t{1} << 40, -(int64_t{1} << 31) - 1, int64_t{1} << 31}) {
    const std::string tag = "int32 <- " + std::to_string(v);
    add(tag + " fill_", int32s, [v](Tensor& s) { s.fill_(v); });
    add(tag + " set_item_ element", int32s, [v](Tensor& s) { s.set_item_({0}, v); });
    add(tag + " add_", int32s, [v](Tensor& s) { s.add_(v); });
    add(tag + " mul_", int32s, [v](Tensor& s) { s.mul_(v); });
    add(tag + " sub_", int32s, [v](Tensor& s) { s.sub_(v); });
  }
  for (double v : {kNan, kInf, 1e19, -1e19}) {
    add("int64 <- " + std::to_string(v) + " fill_", ints, [v](Tensor& s) { s.fill_(v); });
  }
  add("float32 <- 1e300 fill_", floats, [](Tensor& s) { s.fill_(1e300); });
  add("float32 <- -1e300 set_item_", floats, [](Tensor& s) { s.set_item_({1}, -1e300); });
  return w;
}

TEST(FailedWrite, ChangesNeitherDataNorVersion) {
  for (const FailingWrite& f : failing_writes()) {
    SCOPED_TRACE(f.what);
    Tensor self = f.make_self();
    const std::vector<double> before = values(self);
    const uint32_t version = self.version();
    Tensor handle = self;
    EXPECT_THROW(f.write(handle), Error);
    EXPECT_EQ(values(self), before);
    EXPECT_EQ(self.version(), version);
  }
}

// Issue 20 item 7: a write that raised once made a saved tensor look stale.
TEST(FailedWrite, DoesNotMakeASavedTensorStale) {
  Tensor x = dev(from_vector(std::vector<double>{1, -2, 3}, {3})).requires_grad_();
  Tensor m = x.detach() > 0;
  Tensor y = x.masked_fill(m, 0.0);
  EXPECT_THROW(m.sub_(m), DTypeError);
  EXPECT_EQ(m.version(), 0u);
  y.sum().backward();
  testing_util::expect_close(x.grad(), {0, 1, 0});
}

// The values that do fit are written (truncation and bool conversion as PyTorch).
TEST(ScalarWrites, ValuesThatFitAreStored) {
  Tensor i = dev(zeros({2}, kInt32));
  i.fill_(2.9);
  EXPECT_EQ(values(i), (std::vector<double>{2, 2}));
  i.set_item_({0}, -2147483648.0);
  EXPECT_EQ(values(i), (std::vector<double>{-2147483648.0, 2}));
  i.set_item_({1}, int64_t{2147483647});
  EXPECT_EQ(values(i), (std::vector<double>{-2147483648.0, 2147483647.0}));
  Tensor b = dev(zeros({3}, kBool));
  b.fill_(kNan);  // nonzero is true, as in PyTorch
  EXPECT_EQ(values(b), (std::vector<double>{1, 1, 1}));
  b.set_item_({0}, 0.0);
  EXPECT_EQ(values(b), (std::vector<double>{0, 1, 1}));
  Tensor f = dev(zeros({1}, kFloat32));
  f.fill_(kInf);
  EXPECT_TRUE(std::isinf(values(f)[0]));
  f.fill_(kNan);
  EXPECT_TRUE(std::isnan(values(f)[0]));
}

TEST(ScalarWrites, FactoriesCheckTheValueToo) {
  EXPECT_THROW(dev(full({2}, int64_t{1} << 40, kInt32)), ValueError);
  EXPECT_THROW(dev(full({2}, kNan, kInt64)), ValueError);
  EXPECT_THROW(scalar_tensor(1e300, kFloat32), ValueError);
  const std::string msg =
      testing_util::error_of<ValueError>([] { dev(zeros({2}, kInt32)).fill_(1e10); });
  EXPECT_NE(msg.find("cannot be converted to type int32 without overflow"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace mutagrad
