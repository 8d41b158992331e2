// Differential test against PyTorch 1.13: thousands of seeded random index expressions, for
// get (x[idx]), set (x[idx] = v) and x.index_put_(indices, v, accumulate), generated and evaluated
// by tests/indexing/torch_oracle.py in one Python run, then replayed here. Each case must give
// PyTorch's result (shape, values, view or copy) or PyTorch's kind of error; after an error our
// tensor must be bit-for-bit unchanged with its version unchanged (the strong guarantee); after a
// write the version moved by exactly one (by none for a lone {false}, as torch's C++ set_item).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "indexing/indexing.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using indexing::Slice;
using indexing::TensorIndex;
using testing::bytes;
using testing::doubles;

ScalarType parse_dtype(const std::string& name) {
  if (name == "float64") return kFloat64;
  if (name == "float32") return kFloat32;
  if (name == "int64") return kInt64;
  if (name == "int32") return kInt32;
  if (name == "bool") return kBool;
  throw std::runtime_error("unknown dtype " + name);
}

std::vector<int64_t> read_ints(std::istream& in, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) in >> x;
  return v;
}

// "<dtype> <ndim> <sizes...> <values...>", on the test's device (or the CPU: `host`).
Tensor read_tensor(std::istream& in, bool host = false) {
  std::string dtype;
  int64_t ndim = 0;
  in >> dtype >> ndim;
  std::vector<int64_t> sizes = read_ints(in, ndim);
  Tensor t = empty(sizes, parse_dtype(dtype));
  std::vector<int64_t> values = read_ints(in, t.numel());
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return host ? t : testing::on_test_device(t);
}

struct Case {
  int id = 0;
  bool is_set = false;
  bool is_put = false;  // x.index_put_(tensors, value, accumulate)
  bool accumulate = false;
  Tensor x;
  std::vector<TensorIndex> indices;
  std::string text;  // the case as read, for failure messages
  bool scalar_value = false;
  int64_t scalar = 0;
  Tensor value;
  std::string error;  // expected error kind, or empty
  bool is_view = false;
  std::vector<int64_t> sizes;
  std::vector<double> values;
};

std::optional<int64_t> read_bound(std::istream& in) {
  std::string tok;
  in >> tok;
  if (tok == "_") return std::nullopt;
  return std::stoll(tok);
}

bool read_case(std::istream& file, Case* c) {
  std::string line;
  std::ostringstream block;
  std::string tok;
  if (!std::getline(file, line)) return false;
  while (line.empty() && std::getline(file, line)) {
  }
  if (line.empty()) return false;
  block << line << "\n";
  std::string rest;
  while (std::getline(file, rest) && rest != "end") block << rest << "\n";
  c->text = block.str();
  std::istringstream in(c->text);
  std::string kind;
  in >> tok >> c->id >> kind;
  c->is_set = kind == "set";
  // x
  std::string dtype;
  int64_t ndim = 0;
  in >> tok >> dtype >> ndim;
  std::vector<int64_t> base = read_ints(in, ndim);
  std::vector<int64_t> perm = read_ints(in, ndim);
  c->x = native::permute(testing::iota(base, parse_dtype(dtype)), perm);
  // indices
  int64_t n = 0;
  in >> tok >> n;
  for (int64_t i = 0; i < n; ++i) {
    in >> tok;
    if (tok == "none") {
      c->indices.emplace_back(indexing::None);
    } else if (tok == "ellipsis") {
      c->indices.emplace_back(indexing::Ellipsis);
    } else if (tok == "int") {
      int64_t v = 0;
      in >> v;
      c->indices.emplace_back(v);
    } else if (tok == "bool") {
      int b = 0;
      in >> b;
      c->indices.emplace_back(b != 0);
    } else if (tok == "slice") {
      auto start = read_bound(in);
      auto stop = read_bound(in);
      auto step = read_bound(in);
      c->indices.emplace_back(Slice(start, stop, step));
    } else if (tok == "tensor") {
      c->indices.emplace_back(read_tensor(in));
    } else {
      throw std::runtime_error("bad index token " + tok);
    }
  }
  if (kind == "put") {
    int acc = 0;
    in >> tok >> acc;
    c->is_put = true;
    c->accumulate = acc != 0;
  }
  if (c->is_set || c->is_put) {
    std::string vkind;
    in >> tok >> vkind;
    if (vkind == "scalar") {
      c->scalar_value = true;
      in >> c->scalar;
    } else {
      // A one-element value stays on the CPU on every device: it is the oracle's CPU tensor,
      // and CPU values have special paths (a masked fill converting its dtype; moved to the
      // device) that a device tensor would not take.
      c->value = read_tensor(in, /*host=*/true);
      if (c->value.numel() != 1) c->value = testing::on_test_device(c->value);
    }
  }
  in >> tok;
  if (tok == "error") {
    in >> c->error;
  } else if (tok == "result") {
    int view = 0;
    in >> view >> ndim;
    c->is_view = view != 0;
    c->sizes = read_ints(in, ndim);
    int64_t count = 1;
    for (int64_t s : c->sizes) count *= s;
    for (int64_t v : read_ints(in, count)) c->values.push_back(static_cast<double>(v));
  } else if (tok == "after") {
    for (int64_t v : read_ints(in, c->x.numel())) c->values.push_back(static_cast<double>(v));
  }
  return true;
}

std::string kind_of(const Error& e) {
  if (dynamic_cast<const IndexError*>(&e) != nullptr) return "IndexError";
  if (dynamic_cast<const ValueError*>(&e) != nullptr) return "ValueError";
  return "RuntimeError";
}

// PyTorch's RuntimeError covers every mutagrad error that is not an IndexError; its
// ValueError (a slice step <= 0) is our ValueError.
bool same_kind(const std::string& expected, const std::string& got) {
  if (expected == "RuntimeError") return got != "IndexError";
  return expected == got;
}

// An empty string when the case behaves as PyTorch, else what differed.
std::string run_case(Case& c) {
  std::vector<unsigned char> before = bytes(c.x);
  uint32_t version = c.x.version();
  std::ostringstream why;
  try {
    if (c.is_put) {
      std::vector<Tensor> tensors;
      for (const TensorIndex& i : c.indices) tensors.push_back(i.tensor());
      c.x.index_put_(tensors, c.value, c.accumulate);
      if (!c.error.empty()) return "expected " + c.error + ", got no error";
      if (doubles(c.x) != c.values) return "wrong values after index_put_";
      if (c.x.version() != version + 1) return "index_put_ did not bump the version once";
      return "";
    }
    if (c.is_set) {
      if (c.scalar_value) {
        c.x.set_item_(c.indices, Scalar(c.scalar));
      } else {
        c.x.set_item_(c.indices, c.value);
      }
      if (!c.error.empty()) return "expected " + c.error + ", got no error";
      if (doubles(c.x) != c.values) return "wrong values after the write";
      // {false} alone is C++ torch's bare false: nothing written, no bump (the oracle's Python
      // tuple (False,) bumps, as does every other successful set).
      const bool bare_false =
          c.indices.size() == 1 && c.indices[0].is_boolean() && !c.indices[0].boolean();
      if (c.x.version() != version + (bare_false ? 0 : 1)) {
        why << "version moved from " << version << " to " << c.x.version();
        return why.str();
      }
      return "";
    }
    Tensor r = c.x.index(c.indices);
    if (!c.error.empty()) return "expected " + c.error + ", got no error";
    if (r.sizes().vec() != c.sizes) {
      why << "shape " << r.sizes() << " instead of " << IntArrayRef(c.sizes);
      return why.str();
    }
    if (doubles(r) != c.values) return "wrong values";
    if (r.is_view() != c.is_view) return c.is_view ? "a copy, expected a view" : "a view";
    if (c.x.version() != version) return "a read changed the version";
    return "";
  } catch (const Error& e) {
    std::string got = kind_of(e);
    if (c.error.empty()) return "unexpected " + got + ": " + e.what();
    if (!same_kind(c.error, got)) return "expected " + c.error + ", got " + got + ": " + e.what();
    if (bytes(c.x) != before) return std::string("the tensor changed on error: ") + e.what();
    if (c.x.version() != version) return std::string("the version moved on error: ") + e.what();
    return "";
  }
}

void run_seed(int seed, int count) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/indexing_cases_" +
                     std::to_string(seed) + ".txt";
  // Debian's PyTorch 1.13 (/usr/bin/python3); MUTAGRAD_TEST_PYTHON names another interpreter
  // with torch (a GPU machine's, tools/gpu/run_checks.sh), as tests/python/run_pytest.sh does.
  const char* python = std::getenv("MUTAGRAD_TEST_PYTHON");
  std::string cmd = std::string(python != nullptr ? python : "/usr/bin/python3") +
                    " -W ignore tests/indexing/torch_oracle.py --seed " + std::to_string(seed) +
                    " --count " + std::to_string(count) + " --out " + path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the PyTorch oracle failed: " << cmd;
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << path;
  int total = 0, failures = 0, errors = 0, sets = 0, puts = 0;
  Case c;
  while (true) {
    c = Case();
    if (!read_case(file, &c)) break;
    ++total;
    errors += c.error.empty() ? 0 : 1;
    sets += c.is_set ? 1 : 0;
    puts += c.is_put ? 1 : 0;
    std::string diff = run_case(c);
    if (!diff.empty() && ++failures <= 15) {
      ADD_FAILURE() << "case " << c.id << ": " << diff << "\n" << c.text;
    }
  }
  EXPECT_EQ(total, count);
  EXPECT_EQ(failures, 0) << "of " << total << " cases";
  // The generator must exercise both outcomes and both operations.
  EXPECT_GT(errors, count / 20);
  EXPECT_GT(sets, count / 4);
  EXPECT_GT(puts, count / 4);
}

TEST(TorchDifferential, RandomGetAndSetSeed1) { run_seed(1, 3000); }
// More seeds on demand: --test_env=INDEXING_ORACLE_SEEDS="3 4 5".
TEST(TorchDifferential, RandomGetAndSetSeed2AndExtraSeeds) {
  run_seed(2, 3000);
  const char* seeds = std::getenv("INDEXING_ORACLE_SEEDS");
  std::istringstream in(seeds != nullptr ? seeds : "");
  int seed = 0;
  while (in >> seed) run_seed(seed, 3000);
}

}  // namespace
}  // namespace mutagrad
