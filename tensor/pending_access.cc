// The registry of pending accesses (tensor/pending.h): see Note [Pending collective] in
// docs/notes/version-counter.md.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "tensor/error.h"
#include "tensor/pending.h"
#include "tensor/read_hook.h"
#include "tensor/tensor_impl.h"

namespace mutagrad {
namespace {

struct Mark {
  uint64_t id;
  size_t slot;      // kSlots when spilled
  Storage storage;  // keeps the memory alive while marked
  PendingAccess access;
  const char* op;
  const char* file;
  int line;
};

// Note [Pending marks are found without a lock]
// Every data access checks the marks while any is set (DataParallel keeps a collective in
// flight during most of backward), so that check must not take a lock (hot paths take none).
// Each mark's byte range is published in a slot of a fixed table of atomics: the writer stores
// the range's end and its device and access, then its begin with release order; a reader scans
// the slots in use with acquire loads of begin. Only a refusal takes the mutex, to read the
// mark's op and site for the message (and to confirm it: a slot read while it was being reused
// by another mark may mix two ranges, which is a race between the access and the collective's
// start or end that either answer settles). More marks than slots spill into the mutex-guarded
// list alone, and the scan then takes the lock too.
constexpr size_t kSlots = 128;

struct Slot {
  std::atomic<uintptr_t> begin{0};  // 0: free
  std::atomic<uintptr_t> end{0};
  std::atomic<int32_t> key{0};  // device and access (slot_key)
};

int32_t slot_key(const Device& device, PendingAccess access) {
  return (static_cast<int32_t>(device.type()) << 16) |
         (static_cast<int32_t>(static_cast<uint8_t>(device.index())) << 8) |
         static_cast<int32_t>(access);
}

// Few marks at a time (one per tensor of each unfinished collective): a vector under a mutex,
// their ranges mirrored into the slots for the lock-free scan.
struct Registry {
  std::mutex mu;
  std::vector<Mark> marks;
  uint64_t next_id = 1;
  Slot slots[kSlots];
  std::atomic<size_t> slots_used{0};  // a bound on the slots ever taken (the scan's end)
  std::atomic<int> spilled{0};        // marks without a slot
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

bool refuses(PendingAccess mark, PendingAccess access) {
  return access == PendingAccess::kWrite || mark == PendingAccess::kWrite;
}

// Whether a published slot may refuse `access` to `storage`'s memory: the lock-free scan of
// Note [Pending marks are found without a lock].
bool any_slot_refuses(const Registry& r, const Storage& storage, PendingAccess access) {
  if (!storage.defined()) return false;
  const auto b = reinterpret_cast<uintptr_t>(storage.data());
  const uintptr_t e = b + static_cast<uintptr_t>(storage.nbytes());
  const size_t used = r.slots_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i) {
    const uintptr_t mb = r.slots[i].begin.load(std::memory_order_acquire);
    if (mb == 0) continue;
    const uintptr_t me = r.slots[i].end.load(std::memory_order_relaxed);
    const int32_t key = r.slots[i].key.load(std::memory_order_relaxed);
    const auto mark_access = static_cast<PendingAccess>(key & 0xff);
    if (mb < e && b < me && (key & ~0xff) == (slot_key(storage.device(), access) & ~0xff) &&
        refuses(mark_access, access)) {
      return true;
    }
  }
  return false;
}

// The first mark that refuses `access` to `storage`'s memory.
bool find_refusing(const Storage& storage, PendingAccess access, Refusal* out) {
  Registry& r = registry();
  if (r.spilled.load(std::memory_order_acquire) == 0 && !any_slot_refuses(r, storage, access)) {
    return false;
  }
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Mark& m : r.marks) {
    if (refuses(m.access, access) && overlaps(m.storage, storage)) {
      if (out != nullptr) *out = Refusal{m.access, m.op, m.file, m.line};
      return true;
    }
  }
  return false;
}

}  // namespace

namespace detail {

void check_pending_slow(const TensorImpl& impl, PendingAccess access, const char* what) {
  // Note [Read hook]: an access of the memory (a bump, PendingAccess::kWrite, has its own hook).
  if (ReadHook hook = g_read_hook.load(std::memory_order_acquire)) {
    if (access == PendingAccess::kRead) hook(impl, what, /*host_read=*/false);
  }
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

ReadHook set_read_hook(ReadHook hook) {
  // Note [Read hook]: a set hook counts as one pending mark, so data() takes the slow path.
  const ReadHook previous = detail::g_read_hook.exchange(hook, std::memory_order_acq_rel);
  if (previous == nullptr && hook != nullptr) {
    detail::g_num_pending_marks.fetch_add(1, std::memory_order_release);
  } else if (previous != nullptr && hook == nullptr) {
    detail::g_num_pending_marks.fetch_sub(1, std::memory_order_release);
  }
  return previous;
}

bool is_pending(const TensorImpl& impl, PendingAccess access) {
  return any_pending_marks() && find_refusing(impl.storage(), access, nullptr);
}

PendingMark::PendingMark(const Storage& storage, PendingAccess access, const MutationSite& site) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  id_ = r.next_id++;
  size_t slot = kSlots;
  const bool publish = storage.defined() && storage.nbytes() > 0;
  for (size_t i = 0; publish && i < kSlots; ++i) {
    if (r.slots[i].begin.load(std::memory_order_relaxed) != 0) continue;
    slot = i;
    break;
  }
  if (slot < kSlots) {  // Note [Pending marks are found without a lock]
    const auto b = reinterpret_cast<uintptr_t>(storage.data());
    r.slots[slot].end.store(b + static_cast<uintptr_t>(storage.nbytes()),
                            std::memory_order_relaxed);
    r.slots[slot].key.store(slot_key(storage.device(), access), std::memory_order_relaxed);
    r.slots[slot].begin.store(b, std::memory_order_release);
    if (slot >= r.slots_used.load(std::memory_order_relaxed)) {
      r.slots_used.store(slot + 1, std::memory_order_release);
    }
  } else if (publish) {
    r.spilled.fetch_add(1, std::memory_order_release);
  }
  r.marks.push_back(Mark{id_, publish ? slot : kSlots, storage, access,
                         site.op != nullptr ? site.op : "an asynchronous op", site.file,
                         site.line});
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
      if (r.marks[i].slot < kSlots) {
        r.slots[r.marks[i].slot].begin.store(0, std::memory_order_release);
      } else if (released.defined() && released.nbytes() > 0) {
        r.spilled.fetch_sub(1, std::memory_order_release);
      }
      r.marks.erase(r.marks.begin() + static_cast<std::ptrdiff_t>(i));
      detail::g_num_pending_marks.fetch_sub(1, std::memory_order_release);
      break;
    }
  }
  id_ = 0;
}

}  // namespace mutagrad
