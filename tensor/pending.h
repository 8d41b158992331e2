// Pending accesses: memory that an unfinished asynchronous op (a collective started by an
// *_async_ call of mutagrad::distributed) still reads or writes.
//
//   PendingMark mark(t.storage(), PendingAccess::kWrite, MutationSite{"all_reduce_", f, l});
//   t.data_ptr<float>();        // PendingWriteError: "... still being written by all_reduce_"
//   t.detach().add_(1);         // the same: every alias of the memory sees the mark
//   mark.clear();               // the op finished (Work::wait())
//
// See Note [Pending collective] in docs/notes/version-counter.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "tensor/storage.h"

namespace mutagrad {

class TensorImpl;
struct MutationSite;

// What an unfinished op does to a storage's memory, or what a caller is about to do to it. A
// pending write refuses every access; a pending read refuses writes only.
enum class PendingAccess : uint8_t { kRead, kWrite };

namespace detail {
// How many marks are set in the process; zero is the fast path of every check.
inline std::atomic<int> g_num_pending_marks{0};
// The slow paths: throw PendingWriteError when a mark on memory overlapping `impl`'s storage
// refuses `access`; `what` names the access ("add_", "a read or write of its data").
void check_pending_slow(const TensorImpl& impl, PendingAccess access, const char* what);
}  // namespace detail

inline bool any_pending_marks() {
  return detail::g_num_pending_marks.load(std::memory_order_relaxed) != 0;
}

// Raises PendingWriteError when an unfinished op refuses `access` to `impl`'s memory. One
// relaxed load when no mark is set anywhere.
inline void check_pending(const TensorImpl& impl, PendingAccess access, const char* what) {
  if (__builtin_expect(any_pending_marks(), 0)) detail::check_pending_slow(impl, access, what);
}

// Whether check_pending would raise.
bool is_pending(const TensorImpl& impl, PendingAccess access);

// One unfinished op's hold on one storage's memory: set while the object lives (or until
// clear()). The storage is kept alive meanwhile, so its memory cannot be reused. Movable.
class PendingMark {
 public:
  // `site`'s strings must outlive the mark (literals or interned, as MutationSite's).
  PendingMark(const Storage& storage, PendingAccess access, const MutationSite& site);
  PendingMark(PendingMark&& other) noexcept : id_(other.id_) { other.id_ = 0; }
  PendingMark& operator=(PendingMark&& other) noexcept;
  PendingMark(const PendingMark&) = delete;
  PendingMark& operator=(const PendingMark&) = delete;
  ~PendingMark() { clear(); }

  // The op finished: the memory is free to use. Idempotent.
  void clear();
  bool active() const { return id_ != 0; }

 private:
  uint64_t id_ = 0;  // the registry's key; 0 once cleared
};

}  // namespace mutagrad
