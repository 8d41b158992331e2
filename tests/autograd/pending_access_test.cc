// Pending accesses (tensor/pending.h, Note [Pending collective] in
// docs/notes/version-counter.md): while an unfinished op writes a storage's memory, every alias
// of that memory refuses reads and writes; while it reads the memory, every alias refuses
// writes. The class test: every alias kind (the tensor, views, detach(), variable_data() — x.data,
// which has its own version counter — and tensors made by from_blob over the same bytes, as
// from_numpy does) x every in-place write family x both kinds of mark, each refused before
// anything changes (values and versions as before), on the CPU and the host-run CUDA device.
// The collectives that set the marks are tested under mpirun (tests/distributed).
#include <functional>
#include <string>
#include <vector>

#include "tests/autograd/grad_test_util.h"

namespace mutagrad {
namespace {

using testing_util::dev;
using testing_util::values;

const MutationSite kSite{"all_reduce_", "train.py", 42};
constexpr int64_t kN = 8;

// A float64 tensor of kN elements 0, 1, ..., on the test's device.
Tensor make_target() { return dev(arange(kN, kFloat64)); }

// A tensor over `t`'s elements [start, start + n) made from the raw address, as from_numpy
// makes one over a NumPy array: a Storage of its own, a version counter of its own.
Tensor blob_alias(const Tensor& t, int64_t start, int64_t n) {
  char* p = static_cast<char*>(t.unsafe_impl()->data()) + start * t.element_size();
  std::shared_ptr<void> keep(new Tensor(t), [](void* q) { delete static_cast<Tensor*>(q); });
  return from_blob(p, {n}, {1}, t.dtype(), keep, t.device());
}

struct Alias {
  std::string name;
  Tensor tensor;  // 1-D, at least 2 elements
};

// Every way user code reaches `t`'s memory (made before the mark is set).
std::vector<Alias> aliases_of(const Tensor& t) {
  return {
      {"the tensor", t},
      {"a view", t.narrow(0, 2, 4)},
      {"a view of a view", t.view({2, 4}).select(0, 1)},
      {"detach()", t.detach()},
      {"variable_data() (x.data)", t.variable_data()},
      {"a view of variable_data()", t.variable_data().narrow(0, 1, 3)},
      {"from_blob over the same bytes (from_numpy)", blob_alias(t, 0, kN)},
      {"from_blob over some of the bytes", blob_alias(t, 5, 3)},
  };
}

struct Write {
  const char* name;
  std::function<void(Tensor&)> run;
};

// One write of each in-place family (each reaches the version bump by its own path).
std::vector<Write> writes() {
  auto idx = [] { return dev(tensor({int64_t{0}, int64_t{1}})); };
  auto src = [](const Tensor& a) { return dev(full({a.numel()}, 7.0, kFloat64)); };
  auto mask = [](const Tensor& a) {
    Tensor m = dev(zeros({a.numel()}, kBool));
    m.set_item_({0}, true);
    return m;
  };
  return {
      {"add_", [](Tensor& a) { a.add_(1.0); }},
      {"mul_(tensor)", [&](Tensor& a) { a.mul_(src(a)); }},
      {"exp_", [](Tensor& a) { a.exp_(); }},
      {"clamp_", [](Tensor& a) { a.clamp_(1.0, 2.0); }},
      {"fill_", [](Tensor& a) { a.fill_(3.0); }},
      {"zero_", [](Tensor& a) { a.zero_(); }},
      {"copy_", [&](Tensor& a) { a.copy_(src(a)); }},
      {"set_item_ (basic)", [](Tensor& a) { a.set_item_({1}, 5.0); }},
      {"set_item_ (advanced)", [&](Tensor& a) { a.set_item_({idx()}, 5.0); }},
      {"index_put_", [&](Tensor& a) { a.index_put_({idx()}, dev(full({2}, 9.0, kFloat64))); }},
      {"index_put_ (many indices: the staged write)",
       [](Tensor& a) {
         a.index_put_({dev(zeros({64}, kInt64))}, dev(full({64}, 9.0, kFloat64)), true);
       }},
      {"index_add_", [&](Tensor& a) { a.index_add_(0, idx(), dev(ones({2}, kFloat64))); }},
      {"index_fill_", [&](Tensor& a) { a.index_fill_(0, idx(), 4.0); }},
      {"scatter_", [&](Tensor& a) { a.scatter_(0, idx(), src(a)); }},
      {"scatter_add_", [&](Tensor& a) { a.scatter_add_(0, idx(), src(a)); }},
      {"scatter_reduce_",
       [&](Tensor& a) { a.scatter_reduce_(0, idx(), src(a), "amax", /*include_self=*/false); }},
      {"masked_fill_", [&](Tensor& a) { a.masked_fill_(mask(a), 6.0); }},
      {"masked_scatter_", [&](Tensor& a) { a.masked_scatter_(mask(a), src(a)); }},
      {"put_", [&](Tensor& a) { a.put_(idx(), dev(full({2}, 8.0, kFloat64))); }},
  };
}

struct Read {
  const char* name;
  std::function<void(const Tensor&)> run;
};

std::vector<Read> reads() {
  return {
      {"sum()", [](const Tensor& a) { (void)a.sum(); }},
      {"a + 1", [](const Tensor& a) { (void)(a + 1.0); }},
      {"clone()", [](const Tensor& a) { (void)a.clone(); }},
      {"item()", [](const Tensor& a) { (void)a.index({0}).item(); }},
      {"TensorImpl::data() (every kernel's access; data_ptr on the CPU)",
       [](const Tensor& a) { (void)a.unsafe_impl()->data(); }},
  };
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const PendingWriteError& e) {
    return e.what();
  }
  return "";
}

std::vector<double> iota() {
  std::vector<double> v;
  for (int64_t i = 0; i < kN; ++i) v.push_back(static_cast<double>(i));
  return v;
}

TEST(PendingAccess, APendingWriteRefusesEveryWriteThroughEveryAlias) {
  for (const Write& w : writes()) {
    Tensor t = make_target();
    std::vector<Alias> aliases = aliases_of(t);
    PendingMark mark(t.storage(), PendingAccess::kWrite, kSite);
    for (Alias& a : aliases) {
      SCOPED_TRACE(std::string(w.name) + " through " + a.name);
      const uint32_t version = a.tensor.version();
      const std::string m = message_of([&] { w.run(a.tensor); });
      EXPECT_NE(m.find("still being written by all_reduce_ started at train.py:42"),
                std::string::npos)
          << (m.empty() ? "not refused" : m);
      EXPECT_NE(m.find("call wait()"), std::string::npos) << m;
      EXPECT_EQ(a.tensor.version(), version);  // refused before the bump
    }
    mark.clear();
    SCOPED_TRACE(w.name);
    EXPECT_EQ(values(t), iota());  // no write landed
    EXPECT_EQ(t.version(), 0u);
  }
}

TEST(PendingAccess, APendingWriteRefusesEveryReadThroughEveryAlias) {
  Tensor t = make_target();
  std::vector<Alias> aliases = aliases_of(t);
  PendingMark mark(t.storage(), PendingAccess::kWrite, kSite);
  for (const Read& r : reads()) {
    for (const Alias& a : aliases) {
      SCOPED_TRACE(std::string(r.name) + " through " + a.name);
      const std::string m = message_of([&] { r.run(a.tensor); });
      EXPECT_NE(m.find("a read or write of its data: the tensor is still being written by "
                       "all_reduce_"),
                std::string::npos)
          << (m.empty() ? "not refused" : m);
    }
  }
  mark.clear();
  for (const Alias& a : aliases) EXPECT_NO_THROW((void)a.tensor.sum()) << a.name;
}

TEST(PendingAccess, APendingReadRefusesWritesAndAllowsReads) {
  const MutationSite gather{"all_gather", "train.py", 7};
  for (const Write& w : writes()) {
    Tensor t = make_target();
    std::vector<Alias> aliases = aliases_of(t);
    PendingMark mark(t.storage(), PendingAccess::kRead, gather);
    for (Alias& a : aliases) {
      SCOPED_TRACE(std::string(w.name) + " through " + a.name);
      const uint32_t version = a.tensor.version();
      const std::string m = message_of([&] { w.run(a.tensor); });
      EXPECT_NE(m.find("still being read by all_gather started at train.py:7"), std::string::npos)
          << (m.empty() ? "not refused" : m);
      EXPECT_EQ(a.tensor.version(), version);
    }
    for (const Read& r : reads()) {
      for (const Alias& a : aliases) {
        EXPECT_NO_THROW(r.run(a.tensor)) << r.name << " through " << a.name;
      }
    }
    mark.clear();
    SCOPED_TRACE(w.name);
    EXPECT_EQ(values(t), iota());
    Tensor after = aliases.back().tensor;
    EXPECT_NO_THROW(w.run(after));  // free again once the op finished
  }
}

TEST(PendingAccess, OnlyOverlappingMemoryIsRefused) {
  Tensor t = make_target();
  Tensor head = blob_alias(t, 0, 4);  // its own storage: bytes [0, 4) of t
  Tensor tail = blob_alias(t, 4, 4);  // bytes [4, 8): disjoint from head's
  Tensor other = make_target();       // another allocation
  PendingMark mark(head.storage(), PendingAccess::kWrite, kSite);
  EXPECT_THROW(t.add_(1.0), PendingWriteError);  // t's storage covers head's bytes
  EXPECT_THROW((void)head.sum(), PendingWriteError);
  EXPECT_NO_THROW(tail.add_(1.0));
  EXPECT_NO_THROW(other.add_(1.0));
  EXPECT_NO_THROW((void)other.sum());
  mark.clear();
  EXPECT_EQ(values(t), (std::vector<double>{0, 1, 2, 3, 5, 6, 7, 8}));
}

TEST(PendingAccess, MarksAreIndependentAndMovable) {
  Tensor t = make_target();
  PendingMark read(t.storage(), PendingAccess::kRead, kSite);
  {
    PendingMark write(t.storage(), PendingAccess::kWrite, kSite);
    PendingMark moved = std::move(write);
    EXPECT_FALSE(write.active());  // NOLINT(bugprone-use-after-move): the moved-from state
    EXPECT_TRUE(moved.active());
    EXPECT_THROW((void)t.sum(), PendingWriteError);
  }  // `moved` clears the write mark; the read mark stays
  EXPECT_NO_THROW((void)t.sum());
  EXPECT_THROW(t.add_(1.0), PendingWriteError);
  read.clear();
  read.clear();  // idempotent
  EXPECT_FALSE(any_pending_marks());
  EXPECT_NO_THROW(t.add_(1.0));
}

// Note [Pending marks are found without a lock]: marks beyond the lock-free table's slots are
// still found, slots freed by cleared marks are reused, and marks set and cleared in any order
// leave none behind.
TEST(PendingAccess, ManyMarksSpillBeyondTheSlotsAndAreAllFound) {
  constexpr int kMarks = 300;  // more than the table's 128 slots
  std::vector<Tensor> targets;
  std::vector<PendingMark> marks;
  for (int i = 0; i < kMarks; ++i) {
    targets.push_back(make_target());
    marks.emplace_back(targets.back().storage(),
                       i % 2 == 0 ? PendingAccess::kWrite : PendingAccess::kRead, kSite);
  }
  for (int i = 0; i < kMarks; ++i) {
    Tensor& t = targets[static_cast<size_t>(i)];
    EXPECT_THROW(t.variable_data().add_(1.0), PendingWriteError) << "mark " << i;
    if (i % 2 == 0) {
      EXPECT_THROW((void)t.sum(), PendingWriteError) << "mark " << i;
    } else {
      EXPECT_NO_THROW((void)t.sum()) << "mark " << i;
    }
  }
  // Clear the first half (freeing slots), set new marks into them, then clear from the back.
  for (int i = 0; i < kMarks / 2; ++i) marks[static_cast<size_t>(i)].clear();
  for (int i = 0; i < kMarks / 2; ++i) EXPECT_NO_THROW(targets[static_cast<size_t>(i)].add_(1.0));
  Tensor fresh = make_target();
  PendingMark late(fresh.storage(), PendingAccess::kWrite, kSite);
  EXPECT_THROW(fresh.add_(1.0), PendingWriteError);
  EXPECT_THROW(targets[kMarks - 2].add_(1.0), PendingWriteError);  // a spilled mark
  late.clear();
  for (int i = kMarks - 1; i >= kMarks / 2; --i) marks[static_cast<size_t>(i)].clear();
  EXPECT_FALSE(any_pending_marks());
  for (Tensor& t : targets) EXPECT_NO_THROW(t.add_(1.0));
  EXPECT_NO_THROW(fresh.add_(1.0));
}

}  // namespace
}  // namespace mutagrad
