// MutationLog: records every in-place write (version bump) of every thread while it is alive.
//
//   autograd::MutationLog log;             // starts recording
//   Tensor h = a * 2.0;
//   Tensor loss = (h * h).sum();
//   log.watch({loss});                     // say which graphs' saved tensors to look for
//   h.add_(1.0);                           // recorded: add_, this file:line, version 0 -> 1,
//                                          // saved_by {"MulBackward0.self", ...}
//   log.stop();                            // (or the destructor)
//   std::cout << log.summary();            // "1 writes, 1 hit saved tensors, 0 bytes snapshotted"
//   log.write_jsonl("mutations.jsonl");    // one JSON object per write
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

// Note [Mutation log]
// - Cost: every bump already loads the pre-write hook (tensor/version_counter.h); a log, like
//   MutationPolicy::kSnapshot, installs autograd's hook there. With no log active and no
//   snapshot slot live the hook returns after two relaxed loads; a program that never makes a
//   log or uses kSnapshot pays the one null load it paid before.
// - What a write knows: the bump sees the storage's version counter, the MutationSite (op,
//   caller file:line, and for x[idx] = v / index_put_ the index expression, formatted only
//   while a log records) and the tensor written, whose shape and dtype a record keeps (for an
//   indexed write: the indexed tensor's, beside the expression). The storage is named by a
//   number (first seen in this log = 0); views share their base's.
// - Saved tensors hit: the tensors saved by the graphs of watch()ed roots (walked at each
//   write) that are on the written storage and current before the write, i.e. that the write
//   makes stale (or that kSnapshot copies: snapshot_bytes). The walk costs O(graph) per write
//   while a log is active, never otherwise.
// - Threads: a log records the writes of every thread, in the order they took the log's lock.
//   Logs nest; each active log records every write.
struct MutationRecord {
  int64_t index = 0;  // 0, 1, ... in this log
  std::string op;     // "add_", "set_item_", "AdamW.step", ...
  std::string file;   // the caller's file ("" if unknown)
  int line = 0;
  std::vector<int64_t> shape;    // the tensor written (for x[idx] = v: x)
  std::string dtype;             // its dtype, "float32", ...
  std::string index_expression;  // x[idx] = v, index_put_: "[0:2, None]"; else ""
  int64_t storage = 0;           // the written storage, numbered by first appearance in this log
  uint32_t version_before = 0;
  uint32_t version_after = 0;
  std::vector<std::string> saved_by;  // "<Node>.<field>" of watched graphs made stale
  int64_t snapshot_bytes = 0;         // copied by MutationPolicy::kSnapshot before the write

  // {"index": 0, "op": "add_", "file": "...", "line": 12, ...} on one line.
  std::string to_json() const;
};

class MutationLog {
 public:
  MutationLog();  // starts recording
  ~MutationLog();
  MutationLog(const MutationLog&) = delete;
  MutationLog& operator=(const MutationLog&) = delete;

  // Stops recording (idempotent); the records stay.
  void stop();
  bool active() const;
  // Looks for saved tensors in the graphs of `roots` at each later write (see the Note).
  void watch(TensorList roots);

  std::vector<MutationRecord> records() const;
  int64_t num_writes() const;
  // Writes that made a watched saved tensor stale or were snapshotted.
  int64_t num_hits() const;
  int64_t snapshot_bytes() const;
  // "N writes, K hit saved tensors, B bytes snapshotted".
  std::string summary() const;
  // JSON Lines: one record per line.
  std::string to_jsonl() const;
  // Writes to_jsonl() to `path`; throws ValueError naming the path if it cannot be written.
  void write_jsonl(const std::string& path) const;

 private:
  friend struct MutationLogAccess;  // mutation_log.cc
  mutable std::mutex mu_;
  bool active_ = false;
  std::vector<MutationRecord> records_;
  std::vector<Tensor> watched_;
  std::unordered_map<const void*, int64_t> storage_numbers_;
};

namespace detail {
// The pre-write hook autograd installs (kSnapshot slots, mutation logs, and the refusal of a
// pack hook's write into its input: Note [A pack hook must not write its input]).
void observe_write(const VersionCounter& counter, const MutationSite& site,
                   const TensorImpl* written);
// How many logs are recording now.
int num_active_mutation_logs();
}  // namespace detail

}  // namespace mutagrad::autograd
