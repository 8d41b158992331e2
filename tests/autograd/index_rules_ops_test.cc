// Negative and out-of-range index values in every op that takes them (the table of
// tensor/native/index_rules.h): each op follows its row, the row is PyTorch 1.13's rule, and
// every refused index raises IndexOutOfRangeError (an IndexError and a std::runtime_error)
// before anything is written: the tensor and its version unchanged. Python's twin, against
// torch itself: tests/python/index_rules_test.py. Runs on the CPU and, as
// index_rules_ops_test_cuda, on the CUDA device.
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "grad_test_util.h"
#include "tensor/native/index_rules.h"

namespace mutagrad {
namespace {

using indexing::None;
using indexing::Slice;
using native::IndexedOp;
using testing_util::dev;
using testing_util::values;

static_assert(std::is_base_of_v<IndexError, IndexOutOfRangeError>);
static_assert(std::is_base_of_v<std::runtime_error, IndexOutOfRangeError>);

Tensor idx(const std::vector<int64_t>& v, IntArrayRef sizes) { return dev(from_vector(v, sizes)); }
Tensor idx(const std::vector<int64_t>& v) { return idx(v, {static_cast<int64_t>(v.size())}); }

// x: 3 x 4, float64, 0 ... 11 (a fresh one per call).
Tensor make_x() { return dev(arange(12, kFloat64).view({3, 4})); }

// One call of an op with the index value `i` at one position of its index. `size` is the size
// the value indexes (of the dim, or x's element count for take/put_). The call returns its
// result, or x for an in-place write.
struct IndexedCall {
  IndexedOp op;
  std::string what;
  int64_t size;
  std::function<Tensor(const Tensor& x, int64_t i)> run;
};

std::vector<IndexedCall> calls() {
  const Tensor row = dev(full({1, 4}, 100.0, kFloat64));
  const Tensor col = dev(full({3, 1}, 100.0, kFloat64));
  const Tensor one = dev(full({1}, 100.0, kFloat64));
  std::vector<IndexedCall> out = {
      {IndexedOp::kIndex, "x[idx]", 3,
       [](const Tensor& x, int64_t i) {
         return x.index({idx({0, i})});
       }},
      {IndexedOp::kIndex, "x[:, idx]", 4,
       [](const Tensor& x, int64_t i) {
         return x.index({Slice(), idx({i, 1})});
       }},
      {IndexedOp::kIndex, "x[i]", 3, [](const Tensor& x, int64_t i) { return x.index({i}); }},
      {IndexedOp::kIndex, "x.select(1, i)", 4,
       [](const Tensor& x, int64_t i) { return x.select(1, i); }},
      {IndexedOp::kIndexPut, "x[idx] = v", 3,
       [row](const Tensor& x, int64_t i) {
         Tensor y = x;
         y[{idx({i})}] = row;
         return x;
       }},
      {IndexedOp::kIndexPut, "x[:, idx] = 5", 4,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         y[{Slice(), idx({i})}] = 5.0;
         return x;
       }},
      {IndexedOp::kIndexPut, "x[1, i] = 5", 4,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         y[{1, i}] = 5.0;  // the single-element fast path on the CPU
         return x;
       }},
      {IndexedOp::kIndexPut, "index_put_", 3,
       [row](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.index_put_({idx({i})}, row);
       }},
      {IndexedOp::kIndexPut, "index_put_ accumulate", 4,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.index_put_({Tensor(), idx({i, i})}, dev(full({}, 1.0, kFloat64)), true);
       }},
      {IndexedOp::kTake, "take", 12,
       [](const Tensor& x, int64_t i) {
         return x.take(idx({0, i}, {1, 2}));
       }},
      {IndexedOp::kTake, "take of a transpose", 12,
       [](const Tensor& x, int64_t i) { return x.t().take(idx({i})); }},
      {IndexedOp::kPut, "put_", 12,
       [one](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.put_(idx({i}), one);
       }},
      {IndexedOp::kPut, "put_ accumulate of a transpose", 12,
       [one](const Tensor& x, int64_t i) {
         Tensor y = x.t();
         y.put_(idx({i}), one, /*accumulate=*/true);
         return x;
       }},
      {IndexedOp::kPut, "put", 12,
       [one](const Tensor& x, int64_t i) { return x.put(idx({i}), one); }},
      {IndexedOp::kIndexSelect, "index_select(0)", 3,
       [](const Tensor& x, int64_t i) {
         return x.index_select(0, idx({0, i}));
       }},
      {IndexedOp::kIndexSelect, "index_select(1) of a 0-dim index", 4,
       [](const Tensor& x, int64_t i) { return x.index_select(1, idx({i}, {})); }},
      {IndexedOp::kIndexAdd, "index_add_", 3,
       [row](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.index_add_(0, idx({i}), row, 2);
       }},
      {IndexedOp::kIndexAdd, "index_add", 4,
       [col](const Tensor& x, int64_t i) { return x.index_add(1, idx({i}), col); }},
      {IndexedOp::kIndexCopy, "index_copy_", 4,
       [col](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.index_copy_(1, idx({i}), col);
       }},
      {IndexedOp::kIndexCopy, "index_copy", 3,
       [row](const Tensor& x, int64_t i) { return x.index_copy(0, idx({i}), row); }},
      {IndexedOp::kIndexFill, "index_fill_", 4,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.index_fill_(1, idx({i}), 5.0);
       }},
      {IndexedOp::kIndexFill, "index_fill_ of a 0-dim tensor", 3,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.index_fill_(0, idx({i}), dev(full({}, 5.0, kFloat64)));
       }},
      {IndexedOp::kIndexFill, "index_fill", 3,
       [](const Tensor& x, int64_t i) {
         return x.index_fill(0, idx({i, 0}), 5.0);
       }},
      {IndexedOp::kGather, "gather", 3,
       [](const Tensor& x, int64_t i) {
         return x.gather(0, idx({0, i, 1, 2}, {1, 4}));
       }},
      {IndexedOp::kScatter, "scatter_", 4,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.scatter_(1, idx({i}, {1, 1}), dev(full({1, 1}, 100.0, kFloat64)));
       }},
      {IndexedOp::kScatter, "scatter_ of a value", 3,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.scatter_(0, idx({0, i}, {1, 2}), Scalar(5.0));
       }},
      {IndexedOp::kScatter, "scatter_add_", 3,
       [](const Tensor& x, int64_t i) {
         Tensor y = x;
         return y.scatter_add_(0, idx({i}, {1, 1}), dev(full({1, 1}, 100.0, kFloat64)));
       }},
      {IndexedOp::kScatter, "scatter", 4,
       [](const Tensor& x, int64_t i) {
         return x.scatter(1, idx({i}, {1, 1}), dev(full({1, 1}, 100.0, kFloat64)));
       }},
      {IndexedOp::kScatter, "scatter_add", 4,
       [](const Tensor& x, int64_t i) {
         return x.scatter_add(1, idx({i}, {1, 1}), dev(full({1, 1}, 100.0, kFloat64)));
       }},
      {IndexedOp::kClassIndex, "nll_loss", 4,
       [](const Tensor& x, int64_t i) {
         return nll_loss(x, idx({0, i, 1}));
       }},
      {IndexedOp::kClassIndex, "cross_entropy", 4,
       [](const Tensor& x, int64_t i) {
         return cross_entropy(x, idx({i, 2, 1}));
       }},
  };
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      out.push_back({IndexedOp::kScatter,
                     str("scatter_reduce_ ", reduce, include_self ? "" : " without self"), 3,
                     [reduce, include_self](const Tensor& x, int64_t i) {
                       Tensor y = x;
                       return y.scatter_reduce_(0, idx({i, 0}, {1, 2}),
                                                dev(full({1, 2}, 100.0, kFloat64)), reduce,
                                                include_self);
                     }});
    }
  }
  out.push_back({IndexedOp::kScatter, "scatter_reduce", 4, [](const Tensor& x, int64_t i) {
                   return x.scatter_reduce(1, idx({i}, {1, 1}), dev(full({1, 1}, 9.0, kFloat64)),
                                           "amax", false);
                 }});
  return out;
}

// Runs `call` with index value i: the refusal must be an IndexOutOfRangeError that changed
// nothing. Returns the error's text.
std::string expect_refused(const IndexedCall& call, int64_t i) {
  Tensor x = make_x();
  Tensor view = x.index({Slice(1, None)});  // an alias: it must see no write either
  const std::vector<double> before = values(x);
  std::string message;
  try {
    call.run(x, i);
    ADD_FAILURE() << call.what << " accepted the index " << i;
  } catch (const IndexOutOfRangeError& e) {
    message = e.what();
  }
  EXPECT_EQ(values(x), before) << call.what << " with index " << i;
  EXPECT_EQ(values(view), std::vector<double>(before.begin() + 4, before.end())) << call.what;
  EXPECT_EQ(x.version(), 0u) << call.what << " with index " << i;
  return message;
}

TEST(IndexRules, TheTableIsTorchs) {
  // PyTorch 1.13 with -1: x[idx], index_put_, take, put_ and index_fill_ wrap; index_select
  // and index_add_ raise IndexError "index out of range in self", index_copy_ IndexError,
  // gather and the scatters RuntimeError, nll_loss IndexError "Target -1 is out of bounds".
  const std::vector<std::pair<IndexedOp, bool>> torch = {
      {IndexedOp::kIndex, true},        {IndexedOp::kIndexPut, true},
      {IndexedOp::kTake, true},         {IndexedOp::kPut, true},
      {IndexedOp::kIndexSelect, false}, {IndexedOp::kIndexAdd, false},
      {IndexedOp::kIndexCopy, false},   {IndexedOp::kIndexFill, true},
      {IndexedOp::kGather, false},      {IndexedOp::kScatter, false},
      {IndexedOp::kClassIndex, false},
  };
  for (const auto& [op, wraps] : torch) {
    EXPECT_EQ(native::negative_index_wraps(op), wraps) << native::index_rule(op).name;
  }
}

TEST(IndexRules, EveryOpReadsNegativeIndicesAsItsRowSays) {
  for (const IndexedCall& call : calls()) {
    SCOPED_TRACE(call.what);
    if (native::negative_index_wraps(call.op)) {
      // -1 is size - 1: the same result, the same writes.
      Tensor a = make_x();
      Tensor b = make_x();
      const Tensor got = call.run(a, -1);
      const Tensor want = call.run(b, call.size - 1);
      EXPECT_EQ(values(got), values(want));
      EXPECT_EQ(values(a), values(b));
      EXPECT_EQ(a.version(), b.version());
    } else {
      const std::string message = expect_refused(call, -1);
      EXPECT_NE(message.find("-1"), std::string::npos) << message;
    }
  }
}

TEST(IndexRules, EveryOutOfRangeIndexIsAnIndexOutOfRangeErrorThatChangesNothing) {
  for (const IndexedCall& call : calls()) {
    SCOPED_TRACE(call.what);
    const std::string message = expect_refused(call, call.size);
    EXPECT_NE(message.find(std::to_string(call.size)), std::string::npos) << message;
    expect_refused(call, -call.size - 1);
    expect_refused(call, std::numeric_limits<int64_t>::min());
  }
}

TEST(IndexRules, RefusedNegativesSayHowToCountFromTheEnd) {
  Tensor x = make_x();
  const std::string message = testing_util::error_of<IndexOutOfRangeError>([&] {
    x.index_select(1, idx({0, -2}));
  });
  EXPECT_NE(message.find("index -2 is out of bounds for dimension 1 with size 4; valid indices "
                         "are in [0, 3]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("index + 4"), std::string::npos) << message;
  const std::string wrapping = testing_util::error_of<IndexOutOfRangeError>([&] {
    x.index({Slice(), idx({-5})});
  });
  EXPECT_NE(wrapping.find("valid indices are in [-4, 3]"), std::string::npos) << wrapping;
}

// The other index errors keep their kind (torch's IndexError), without being out-of-range ones.
TEST(IndexRules, OtherIndexErrorsAreNotOutOfRange) {
  Tensor x = make_x();
  const std::vector<std::function<void()>> calls = {
      [&] {
        x.index({0, 0, idx({0})});
      },  // too many indices
      [&] {
        x.index({idx({0, 1}), idx({0, 1, 2})});
      },                                                  // shapes do not broadcast
      [&] { x.index({dev(full({2}, true, kBool))}); },    // the mask's shape
      [&] { x.index({dev(full({1}, 0.0, kFloat32))}); },  // a float index
      [&] { x.index_select(2, idx({0})); },               // the dim
      [&] { x.index_fill_(0, dev(full({1}, 0.0, kFloat32)), 1.0); },
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    try {
      calls[k]();
      ADD_FAILURE() << "call " << k << " was accepted";
    } catch (const IndexError& e) {
      EXPECT_EQ(dynamic_cast<const IndexOutOfRangeError*>(&e), nullptr) << k << ": " << e.what();
    }
  }
  EXPECT_EQ(x.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
