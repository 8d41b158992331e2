// The write family (index_put_, set_item_, scatter_*, scatter_reduce_, index_add_/copy_/fill_,
// masked_scatter_, put_, masked_fill_ with a tensor value) with operands that alias self: the
// rule of docs/indexing.md ("Operands that alias the written tensor") is that every operand is
// read as if copied before the write. Each case builds self as a view into a larger base (a
// guard region before, between and after self's elements), each operand as the same memory as
// self, a view overlapping it (from after or before), one interleaved with it, or a disjoint
// view of the base, and checks against the oracle (the same op on a copy of the base with every
// operand cloned first): the same bits in self, the guard untouched, one version bump. A new
// write op is one row of write_ops(). Runs on the CPU and, as aliasing_writes_test_cuda, on the
// CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "indexing/indexing.h"
#include "tensor/cpu/indexing.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using indexing::None;
using indexing::Slice;
using testing::bytes;
using testing::dev;

// ---- The table ------------------------------------------------------------------------------

enum class Role { kSrc, kIndex, kMask };  // dtype: self's, int64, bool
enum class Len { kLong, kSelf, kOne };    // M elements, self's N, one (0-dim)

struct OperandSpec {
  Role role;
  Len len;
};

struct WriteOp {
  std::string name;
  std::vector<ScalarType> dtypes;  // of self
  std::vector<OperandSpec> operands;
  std::function<void(Tensor& self, const std::vector<Tensor>& operands)> write;
};

const std::vector<ScalarType> kNumbers{kFloat64, kInt64};
const std::vector<ScalarType> kAll{kFloat64, kInt64, kBool};
const OperandSpec kIdx{Role::kIndex, Len::kLong};
const OperandSpec kSrc{Role::kSrc, Len::kLong};
const OperandSpec kMask{Role::kMask, Len::kSelf};
const OperandSpec kOne{Role::kSrc, Len::kOne};

std::vector<WriteOp> write_ops() {
  using Ops = const std::vector<Tensor>&;
  std::vector<WriteOp> ops{
      {"index_put_", kNumbers, {kIdx, kSrc}, [](Tensor& s, Ops o) { s.index_put_({o[0]}, o[1]); }},
      {"index_put_ accumulate",
       kNumbers,
       {kIdx, kSrc},
       [](Tensor& s, Ops o) { s.index_put_({o[0]}, o[1], true); }},
      {"set_item_ index",
       kNumbers,
       {kIdx, kSrc},
       [](Tensor& s, Ops o) { s.set_item_({o[0]}, o[1]); }},
      {"set_item_ mask", kAll, {kMask, kOne}, [](Tensor& s, Ops o) { s.set_item_({o[0]}, o[1]); }},
      {"set_item_ slice",
       kAll,
       {{Role::kSrc, Len::kSelf}},
       [](Tensor& s, Ops o) { s.set_item_({Slice()}, o[0]); }},
      {"scatter_", kAll, {kIdx, kSrc}, [](Tensor& s, Ops o) { s.scatter_(0, o[0], o[1]); }},
      {"scatter_ value", kAll, {kIdx}, [](Tensor& s, Ops o) { s.scatter_(0, o[0], Scalar(1)); }},
      {"scatter_add_",
       kNumbers,
       {kIdx, kSrc},
       [](Tensor& s, Ops o) { s.scatter_add_(0, o[0], o[1]); }},
      {"index_add_", kNumbers, {kIdx, kSrc}, [](Tensor& s, Ops o) { s.index_add_(0, o[0], o[1]); }},
      {"index_add_ alpha",
       kNumbers,
       {kIdx, kSrc},
       [](Tensor& s, Ops o) { s.index_add_(0, o[0], o[1], 2); }},
      {"index_copy_", kAll, {kIdx, kSrc}, [](Tensor& s, Ops o) { s.index_copy_(0, o[0], o[1]); }},
      {"index_fill_", kAll, {kIdx}, [](Tensor& s, Ops o) { s.index_fill_(0, o[0], Scalar(1)); }},
      {"index_fill_ tensor",
       kAll,
       {kIdx, kOne},
       [](Tensor& s, Ops o) { s.index_fill_(0, o[0], o[1]); }},
      {"masked_scatter_",
       kAll,
       {kMask, kSrc},
       [](Tensor& s, Ops o) { s.masked_scatter_(o[0], o[1]); }},
      {"put_", kNumbers, {kIdx, kSrc}, [](Tensor& s, Ops o) { s.put_(o[0], o[1]); }},
      {"put_ accumulate",
       kNumbers,
       {kIdx, kSrc},
       [](Tensor& s, Ops o) { s.put_(o[0], o[1], true); }},
      {"masked_fill_ tensor",
       kAll,
       {kMask, kOne},
       [](Tensor& s, Ops o) { s.masked_fill_(o[0], o[1]); }},
  };
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      ops.push_back({std::string("scatter_reduce_ ") + reduce + (include_self ? "" : " exclusive"),
                     kNumbers,
                     {kIdx, kSrc},
                     [reduce, include_self](Tensor& s, Ops o) {
                       s.scatter_reduce_(0, o[0], o[1], reduce, include_self);
                     }});
    }
  }
  return ops;
}

// ---- Geometry: where self and each operand sit in the base ------------------------------------

// How an operand aliases self.
enum class Alias { kNone, kSame, kOverlapAfter, kOverlapBefore, kInterleaved, kDisjoint };
const char* alias_name(Alias a) {
  switch (a) {
    case Alias::kNone:
      return "fresh";
    case Alias::kSame:
      return "same memory";
    case Alias::kOverlapAfter:
      return "overlapping from its middle on";
    case Alias::kOverlapBefore:
      return "overlapping up to its middle";
    case Alias::kInterleaved:
      return "interleaved";
    case Alias::kDisjoint:
      return "disjoint";
  }
  return "?";
}

struct Geometry {
  int64_t n;       // self's elements
  int64_t m;       // a long operand's elements
  int64_t step;    // self's stride in the base
  int64_t start;   // self's offset in the base
  int64_t length;  // the base's elements
};

Geometry geometry(int64_t n, int64_t m, int64_t step) {
  const int64_t start = step * (m + n) + 5;
  return Geometry{n, m, step, start, start + 2 * step * (n + m) + 7};
}

int64_t elements(const Geometry& g, Len len) {
  return len == Len::kLong ? g.m : len == Len::kSelf ? g.n : 1;
}

// The view of the base an operand of `len` elements takes for `alias` (undefined when that
// alias cannot be formed: the same memory as self needs self's length).
Tensor alias_view(const Tensor& base, const Geometry& g, Len len, Alias alias) {
  const int64_t k = elements(g, len);
  const int64_t mid = g.start + g.step * (g.n / 2);
  int64_t offset = 0;
  switch (alias) {
    case Alias::kNone:
      return Tensor();
    case Alias::kSame:
      if (k != g.n) return Tensor();
      offset = g.start;
      break;
    case Alias::kOverlapAfter:
      offset = mid;
      break;
    case Alias::kOverlapBefore:
      offset = mid - g.step * (k - 1);
      break;
    case Alias::kInterleaved:
      if (g.step < 2) return Tensor();
      offset = g.start + 1;
      break;
    case Alias::kDisjoint:
      offset = g.start + g.step * g.n + 3;
      break;
  }
  return len == Len::kOne ? base.as_strided({}, {}, offset)
                          : base.as_strided({k}, {g.step}, offset);
}

// Random contents: for int64 every value is a valid index into self (and into its elements
// for put_); floats are small integers and halves, so that amax/amin see ties and sums are
// exact in any order.
Tensor random_tensor(std::mt19937& rng, ScalarType dtype, int64_t numel, int64_t n) {
  Tensor t = empty({numel}, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.template data_ptr<T>();
    for (int64_t i = 0; i < numel; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = rng() % 2 == 0;
      } else if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(static_cast<double>(static_cast<int>(rng() % 13) - 6) / 2);
      } else {
        p[i] = static_cast<T>(rng() % static_cast<uint32_t>(n));
      }
    }
  });
  return t;
}

ScalarType dtype_of(Role role, ScalarType self) {
  return role == Role::kIndex ? kInt64 : role == Role::kMask ? kBool : self;
}

std::vector<double> values(const Tensor& t) { return testing::doubles(t); }

std::string case_name(const WriteOp& op, ScalarType dtype, const Geometry& g,
                      const std::vector<Alias>& aliases) {
  std::string s = op.name + " on " + dtype_name(dtype) + " self of " + std::to_string(g.n) +
                  " elements with step " + std::to_string(g.step) + ", operands of " +
                  std::to_string(g.m) + ":";
  for (size_t i = 0; i < aliases.size(); ++i) {
    s += std::string(" [") + std::to_string(i) + "] " + alias_name(aliases[i]);
  }
  return s;
}

// Runs `op` with the operands placed as `aliases` say; returns false when a placement cannot
// be formed (nothing run).
bool check_case(const WriteOp& op, ScalarType dtype, const Geometry& g,
                const std::vector<Alias>& aliases, std::mt19937& rng) {
  const Tensor base = dev(random_tensor(rng, dtype, g.length, g.n));
  Tensor self = base.as_strided({g.n}, {g.step}, g.start);
  std::vector<Tensor> operands;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const OperandSpec& spec = op.operands[i];
    const ScalarType type = dtype_of(spec.role, dtype);
    if (aliases[i] == Alias::kNone) {
      const Tensor t = dev(random_tensor(rng, type, elements(g, spec.len), g.n));
      operands.push_back(spec.len == Len::kOne ? t.reshape({}) : t);
      continue;
    }
    if (type != dtype) return false;  // only an operand of self's dtype can alias it
    operands.push_back(alias_view(base, g, spec.len, aliases[i]));
    if (!operands.back().defined()) return false;
  }
  SCOPED_TRACE(case_name(op, dtype, g, aliases));

  // The oracle: a copy of the base, every operand cloned before the write.
  const Tensor before = base.clone();
  const Tensor expected_base = base.clone();
  Tensor expected = expected_base.as_strided({g.n}, {g.step}, g.start);
  std::vector<Tensor> copies;
  for (const Tensor& t : operands) copies.push_back(t.clone());
  op.write(expected, copies);

  const uint32_t version = self.version();
  op.write(self, operands);
  EXPECT_EQ(self.version(), version + 1) << "one version bump";
  EXPECT_TRUE(bytes(self) == bytes(expected))
      << "self: " << ::testing::PrintToString(values(self))
      << ", expected (every operand cloned first): " << ::testing::PrintToString(values(expected));
  // Every element of the base outside self keeps its value.
  const std::vector<double> now = values(base);
  const std::vector<double> old = values(before);
  for (int64_t i = 0; i < g.length; ++i) {
    const bool in_self =
        i >= g.start && (i - g.start) % g.step == 0 && (i - g.start) / g.step < g.n;
    if (in_self) continue;
    EXPECT_EQ(now[static_cast<size_t>(i)], old[static_cast<size_t>(i)])
        << "the base outside self changed at " << i << " (self: offset " << g.start << ", step "
        << g.step << ")";
  }
  return true;
}

// Every self dtype and geometry of `op`; each operand aliasing alone (the others fresh), then
// all of those of self's dtype aliasing together, in every placement. Stops at the first case
// that fails (one report per op). Returns how many cases ran.
int check_op(const WriteOp& op, std::mt19937& rng) {
  const ::testing::TestResult& result =
      *::testing::UnitTest::GetInstance()->current_test_info()->result();
  const int failures = result.total_part_count();
  int checked = 0;
  for (ScalarType dtype : op.dtypes) {
    // n = 8; long operands of n (then the same memory as self is possible) or 4n (index bytes
    // that make index_put_ stage its write: Note [Staged writes]).
    for (const Geometry& g :
         {geometry(8, 8, 1), geometry(8, 8, 2), geometry(8, 32, 1), geometry(8, 32, 2)}) {
      const size_t k = op.operands.size();
      for (Alias a : {Alias::kSame, Alias::kOverlapAfter, Alias::kOverlapBefore,
                      Alias::kInterleaved, Alias::kDisjoint}) {
        for (size_t i = 0; i <= k; ++i) {  // i < k: operand i alone; i == k: all of them
          std::vector<Alias> aliases(k, Alias::kNone);
          for (size_t j = 0; j < k; ++j) {
            if (j == i || (i == k && dtype_of(op.operands[j].role, dtype) == dtype)) {
              aliases[j] = a;
            }
          }
          if (check_case(op, dtype, g, aliases, rng)) ++checked;
          if (result.total_part_count() > failures) return checked;
        }
      }
    }
  }
  return checked;
}

TEST(AliasingWrites, EveryOperandIsReadAsIfCopiedFirst) {
  std::mt19937 rng(34);
  int checked = 0;
  for (const WriteOp& op : write_ops()) checked += check_op(op, rng);
  EXPECT_GT(checked, 1000);
}

// The three repros of issue 34, with their values (torch refuses the first: overlap).
TEST(AliasingWrites, ScatterReduceWithoutSelfReadsItsOperandsFirst) {
  Tensor x = dev(from_vector<double>({1, 2, 3, 4}, {4}));
  x.scatter_reduce_(0, dev(from_vector<int64_t>({1, 0}, {2})), x.index({Slice(0, 2)}), "sum",
                    false);
  EXPECT_EQ(values(x), (std::vector<double>{2, 1, 3, 4}));

  Tensor y = dev(from_vector<int64_t>({1, 0, 5, 7}, {4}));
  y.scatter_reduce_(0, y.index({Slice(0, 2)}), dev(from_vector<int64_t>({10, 20}, {2})), "sum",
                    false);
  EXPECT_EQ(values(y), (std::vector<double>{20, 10, 5, 7}));

  Tensor base = dev(full({100}, 3, kInt64));
  Tensor z = base.index({Slice(40, 44)});
  z.copy_(dev(from_vector<int64_t>({1, 0, 5, 7}, {4})));
  z.scatter_reduce_(0, z.index({Slice(0, 2)}), dev(from_vector<int64_t>({-10, -20}, {2})), "amin",
                    false);
  EXPECT_EQ(values(z), (std::vector<double>{-20, -10, 5, 7}));
  std::vector<double> rest = values(base);
  rest.erase(rest.begin() + 40, rest.begin() + 44);
  EXPECT_EQ(rest, std::vector<double>(96, 3));
}

// ---- put_ on a strided self (issue 34, item 9) ------------------------------------------------

// While set, the pre-write hook fills this view (without a bump): a write by someone else to
// elements next to self's, between the checks of a write to self and the write itself.
Tensor* g_neighbours = nullptr;
void write_neighbours(const VersionCounter&, const MutationSite& site, const TensorImpl*) {
  if (g_neighbours != nullptr && std::string(site.op) == "put_") native::fill_(*g_neighbours, -7);
}

// put_ into base[::2] writes through a 1-D view of the span base[0:2n-1] (Note [put_ on a
// strided tensor]); a staged write (Note [Staged writes]: many indices into a small self) used
// to copy that whole span back, restoring base[1::2] to its values from before the bump.
TEST(AliasingWrites, PutIntoAStridedSelfWritesOnlyItsElements) {
  std::mt19937 rng(9);
  const int64_t n = 64;
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "accumulate" : "last write wins");
    const Tensor base = dev(random_tensor(rng, kFloat64, 2 * n, n));
    Tensor self = base.index({Slice(None, None, 2)});
    Tensor neighbours = base.index({Slice(1, None, 2)});
    const Tensor index = dev(random_tensor(rng, kInt64, 8 * n, n));  // staged: 8n >= 4 * 2n
    const Tensor source = dev(random_tensor(rng, kFloat64, 8 * n, n));
    Tensor expected = self.clone();
    expected.put_(index, source, accumulate);

    g_neighbours = &neighbours;
    const PreWriteHook saved = g_pre_write_hook.exchange(&write_neighbours);
    self.put_(index, source, accumulate);
    g_pre_write_hook.store(saved);
    g_neighbours = nullptr;
    EXPECT_EQ(values(neighbours), std::vector<double>(n, -7)) << "the write between was lost";
    EXPECT_TRUE(bytes(self) == bytes(expected)) << ::testing::PrintToString(values(self));
  }
}

// ---- A self whose elements share memory (issue 34, item 9) --------------------------------------

// base[i + k] for self = base.as_strided({rows, 2}, {1, 1}): rows overlap. Kernels write such
// a self in index order on one thread (Note [Self with overlapping strides]); threads split
// between its columns used to race on the shared elements, and a staged write (Note [Staged
// writes]) gave each shared element two slots and kept the last slot's.
// Integers in [0, 7), or doubles in [0, 1) whose sums depend on their order.
Tensor random_values(std::mt19937& rng, ScalarType dtype, int64_t numel) {
  if (dtype != kFloat64) return random_tensor(rng, dtype, numel, 7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> v(static_cast<size_t>(numel));
  for (double& x : v) x = u(rng);
  return from_vector<double>(v, {numel});
}

// Each memory location's values, in index order, folded into it in the order of Note [Blocked
// accumulation order] (tensor/blocked_order.h): the first 1024 in order, then each later block
// of 1024 folded from its first value and added.
std::vector<double> naive_sum_into_overlapping(const std::vector<double>& base,
                                               const std::vector<double>& index,
                                               const std::vector<double>& src, bool scatter) {
  std::vector<std::vector<double>> runs(base.size());
  const size_t m = index.size() / 2;
  for (size_t j = 0; j < m; ++j) {
    if (scatter) {  // self[index[j][k]][k] += src[j][k]
      for (size_t k = 0; k < 2; ++k) {
        runs[static_cast<size_t>(index[2 * j + k]) + k].push_back(src[2 * j + k]);
      }
    } else {  // self[index[j][0], index[j][1]] += src[j]
      runs[static_cast<size_t>(index[2 * j] + index[2 * j + 1])].push_back(src[j]);
    }
  }
  std::vector<double> out = base;
  for (size_t at = 0; at < out.size(); ++at) {
    const std::vector<double>& w = runs[at];
    for (size_t b = 0; b < w.size(); b += 1024) {
      const size_t e = std::min(w.size(), b + 1024);
      double l = b == 0 ? out[at] + w[0] : w[b];
      for (size_t k = b + 1; k < e; ++k) l += w[k];
      out[at] = b == 0 ? l : out[at] + l;
    }
  }
  return out;
}

TEST(AliasingWrites, SelfWithOverlappingStridesIsWrittenInIndexOrder) {
  const int saved_threads = cpu::indexing_num_threads();
  cpu::set_indexing_num_threads(2);
  std::mt19937 rng(91);
  for (ScalarType dtype : {kInt64, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // scatter_reduce_ "sum" along dim 0: the coordinate of dim 1 splits the columns between
    // threads (Note [Rows named by a coordinate]); never staged. 2 x 65536 writes into 3
    // elements.
    {
      const int64_t m = 65536;
      const Tensor base = dev(zeros({3}, dtype));
      Tensor self = base.as_strided({2, 2}, {1, 1});
      const Tensor index = dev(random_tensor(rng, kInt64, 2 * m, 2)).reshape({m, 2});
      const Tensor src = dev(random_values(rng, dtype, 2 * m)).reshape({m, 2});
      self.scatter_reduce_(0, index, src, "sum");
      EXPECT_EQ(values(base), naive_sum_into_overlapping(std::vector<double>(3, 0), values(index),
                                                         values(src), /*scatter=*/true));
    }
    // index_put_ accumulate: staged before (64 pairs of indices into 4 elements).
    {
      const int64_t m = 64;
      const Tensor base = dev(random_tensor(rng, dtype, 3, 7));
      const std::vector<double> before = values(base);
      Tensor self = base.as_strided({2, 2}, {1, 1});
      const Tensor i = dev(random_tensor(rng, kInt64, m, 2));
      const Tensor j = dev(random_tensor(rng, kInt64, m, 2));
      const Tensor v = dev(random_values(rng, dtype, m));
      self.index_put_({i, j}, v, /*accumulate=*/true);
      std::vector<double> ij;
      const std::vector<double> iv = values(i), jv = values(j);
      for (int64_t k = 0; k < m; ++k) {
        ij.push_back(iv[static_cast<size_t>(k)]);
        ij.push_back(jv[static_cast<size_t>(k)]);
      }
      EXPECT_EQ(values(base), naive_sum_into_overlapping(before, ij, values(v), false));
    }
  }
  cpu::set_indexing_num_threads(saved_threads);
}

}  // namespace
}  // namespace mutagrad
