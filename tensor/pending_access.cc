// The registry of pending accesses (tensor/pending.h): see Note [Pending collective] in
// docs/notes/version-counter.md.
#include <mutex>
#include <utility>
#include <vector>

#include "tensor/error.h"
#include "tensor/pending.h"
#include "tensor/tensor_impl.h"

namespace mutagrad {
namespace {

struct Mark {
  uint64_t id;
  Storage storage;  // keeps the memory alive while marked
  PendingAccess access;
  const char* op;
  const char* file;
  int line;
};

// Few marks at a time (one per tensor of each unfinished collective): a vector under a mutex.
struct Registry {
  std::mutex mu;
  std::vector<Mark> marks;
  uint64_t next_id = 1;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed (Works may finish during static exit)
  return *r;
}

bool overlaps(const Storage& a, const Storage& b) {
  if (!a.defined() || !b.defined() || a.device() != b.device()) return false;
  const char* a0 = static_cast<const char*>(a.data());
  const char* b0 = static_cast<const char*>(b.data());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// What the error names of a refusing mark.
struct Refusal {
  PendingAccess access;
  const char* op;
  const char* file;
  int line;
};

// The first mark that refuses `access` to `storage`'s memory.
bool find_refusing(const Storage& storage, PendingAccess access, Refusal* out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Mark& m : r.marks) {
    if ((access == PendingAccess::kWrite || m.access == PendingAccess::kWrite) &&
        overlaps(m.storage, storage)) {
      if (out != nullptr) *out = Refusal{m.access, m.op, m.file, m.line};
      return true;
    }
  }
  return false;
}

}  // namespace

namespace detail {

void check_pending_slow(const TensorImpl& impl, PendingAccess access, const char* what) {
  Refusal m{};
  if (!find_refusing(impl.storage(), access, &m)) return;
  const char* file = m.file != nullptr ? m.file : "?";
  if (m.access == PendingAccess::kWrite) {
    throw PendingWriteError(str(what, ": the tensor is still being written by ", m.op,
                                " started at ", file, ":", m.line,
                                ", which has not finished (its data would be torn); call wait() "
                                "on the Work that ",
                                m.op, " returned before using the tensor or any alias of it"));
  }
  throw PendingWriteError(str(what, ": the tensor is still being read by ", m.op, " started at ",
                              file, ":", m.line,
                              ", which has not finished (a write now would change what it "
                              "sends); call wait() on the Work that ",
                              m.op, " returned before writing the tensor or any alias of it"));
}

}  // namespace detail

bool is_pending(const TensorImpl& impl, PendingAccess access) {
  return any_pending_marks() && find_refusing(impl.storage(), access, nullptr);
}

PendingMark::PendingMark(const Storage& storage, PendingAccess access, const MutationSite& site) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  id_ = r.next_id++;
  r.marks.push_back(Mark{id_, storage, access, site.op != nullptr ? site.op : "an asynchronous op",
                         site.file, site.line});
  detail::g_num_pending_marks.fetch_add(1, std::memory_order_release);
}

PendingMark& PendingMark::operator=(PendingMark&& other) noexcept {
  if (this != &other) {
    clear();
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void PendingMark::clear() {
  if (id_ == 0) return;
  Storage released;  // freed outside the lock (a from_numpy owner takes the GIL)
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (size_t i = 0; i < r.marks.size(); ++i) {
      if (r.marks[i].id != id_) continue;
      released = std::move(r.marks[i].storage);
      r.marks.erase(r.marks.begin() + static_cast<std::ptrdiff_t>(i));
      detail::g_num_pending_marks.fetch_sub(1, std::memory_order_release);
      break;
    }
  }
  id_ = 0;
}

}  // namespace mutagrad
