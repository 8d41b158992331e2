// Replays the checked-in fuzz corpora (tests/fuzz/corpus/<target>) and the reproducers of every
// finding (tests/fuzz/regressions/<target>) through the fuzz targets, in the normal build: a
// broken invariant aborts the test. Plus each finding as a plain test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"
#include "indexing/indexing.h"
#include "tensor/native/factories.h"
#include "tests/fuzz/targets.h"

namespace mutagrad::fuzz {
namespace {

namespace fs = std::filesystem;

// Runs `target` on every file under tests/fuzz/<dir>/<name>; returns how many.
int replay(const std::string& dir, const std::string& name,
           void (*target)(const uint8_t*, size_t)) {
  int n = 0;
  const fs::path root = fs::path("tests/fuzz") / dir / name;
  if (!fs::exists(root)) return 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
    SCOPED_TRACE(e.path().string());
    target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++n;
  }
  return n;
}

TEST(FuzzRegression, IndexExpressionCorpus) {
  EXPECT_GT(replay("corpus", "index_expression", &index_expression), 0);
  replay("regressions", "index_expression", &index_expression);
}

TEST(FuzzRegression, SafetensorsHeaderCorpus) {
  EXPECT_GT(replay("corpus", "safetensors_header", &safetensors_header), 0);
  replay("regressions", "safetensors_header", &safetensors_header);
}

TEST(FuzzRegression, CheckpointCorpus) {
  EXPECT_GT(replay("corpus", "checkpoint", &checkpoint), 0);
  replay("regressions", "checkpoint", &checkpoint);
}

TEST(FuzzRegression, AutogradProgramCorpus) {
  EXPECT_GT(replay("corpus", "autograd_program", &autograd_program), 0);
  replay("regressions", "autograd_program", &autograd_program);
}

// Finding 1 (index_expression_fuzzer, UBSan): the bounds check of an int64 index tensor
// subtracted the lower bound in int64_t, which overflows for an index near INT64_MAX.
TEST(FuzzRegression, IndexNearInt64MaxIsOutOfBounds) {
  using indexing::TensorIndex;
  Tensor x = zeros({3});
  for (int64_t v : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    const Tensor idx = full({1}, v, kInt64);
    EXPECT_THROW(x.index({TensorIndex(idx)}), IndexError);
    EXPECT_THROW(x.set_item_({TensorIndex(idx)}, 1.0), IndexError);
    EXPECT_EQ(x.version(), 0u);
  }
}

// Finding 2 (autograd_program_fuzzer, LeakSanitizer): a node that saved an input kept the
// input's handle; an in-place write of the input with a value computed from it rebased the
// input's history onto a node reaching the saving node, a reference cycle that leaked the graph
// (Note [Saved inputs do not own their history] in autograd/saved_variable.h).
TEST(FuzzRegression, SavedInputWrittenWithItsOwnHistoryDoesNotLeak) {
  std::weak_ptr<autograd::Node> saving_node;
  std::weak_ptr<TensorImpl> input;
  {
    Tensor x = from_vector(std::vector<double>{0.5, -0.25}, {2});
    x.requires_grad_(true);
    Tensor t = x.tanh();
    Tensor s = t.sin();  // SinBackward0 saves t
    saving_node = s.grad_fn();
    input = t.impl_ptr();
    t.add_(s.sum());  // t -> AddBackward0 -> SumBackward0 -> SinBackward0 -> t
    EXPECT_THROW(t.sum().backward(), autograd::AutogradError);  // t changed after the save
  }
  EXPECT_TRUE(saving_node.expired());
  EXPECT_TRUE(input.expired());
}

// The saved input is still the input itself while it is alive and unchanged, and an alias
// with the same value and gradient edge once the caller dropped it.
TEST(FuzzRegression, SavedInputUnpacksAsTheInputWhileAlive) {
  Tensor x = from_vector(std::vector<double>{0.5, -0.25}, {2});
  x.requires_grad_(true);
  Tensor t = x.tanh();
  std::optional<autograd::SavedVariable> saved;
  saved.emplace(t, /*is_output=*/false);
  EXPECT_TRUE(saved->unpack(nullptr).is_same(t));
  const std::shared_ptr<autograd::Node> fn = t.grad_fn();
  t = Tensor();
  const Tensor alias = saved->unpack(nullptr);
  EXPECT_EQ(alias.grad_fn(), fn);
  EXPECT_EQ(alias.data_ptr<double>()[0], std::tanh(0.5));
}

}  // namespace
}  // namespace mutagrad::fuzz
