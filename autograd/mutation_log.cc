#include "autograd/mutation_log.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "autograd/capture_hook.h"
#include "autograd/copy_slices.h"
#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/history.h"
#include "autograd/mutation_policy.h"
#include "autograd/node.h"
#include "autograd/saved_tensor_hooks.h"
#include "autograd/saved_variable.h"

namespace mutagrad::autograd {

// The active logs. A write takes this lock only while a log is active.
struct MutationLogAccess {
  static std::mutex& mu() {
    static std::mutex* m = new std::mutex();  // never destroyed (writes during static exit)
    return *m;
  }
  static std::vector<MutationLog*>& logs() {
    static auto* v = new std::vector<MutationLog*>();
    return *v;
  }
  static inline std::atomic<int> active{0};
  static inline thread_local bool inside = false;  // a write made while recording one

  static std::vector<std::string> saved_by(const MutationLog& log, const VersionCounter& counter);
  static void set_snapshot_bytes(MutationLog& log, size_t i, int64_t bytes) {
    std::lock_guard<std::mutex> lock(log.mu_);
    log.records_[i].snapshot_bytes = bytes;
  }
  static size_t record(MutationLog& log, const VersionCounter& counter, const MutationSite& site,
                       const TensorImpl* written, uint32_t before);
};

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

// The saved tensors of a graph that are on `counter`'s storage and current (a write makes them
// stale).
class StorageMatcher final : public SavedVisitor {
 public:
  StorageMatcher(const Node& node, const VersionCounter& counter, std::vector<std::string>& out)
      : node_(node), counter_(counter), out_(out) {}
  void visit(const char* name, SavedVariable& saved) override {
    if (!saved.was_saved() || saved.is_released()) return;
    const VersionCounter* c = saved.checked_counter();
    if (c == nullptr || !c->is_same(counter_) || saved.saved_version() != c->current()) return;
    const auto* slices = dynamic_cast<const CopySlices*>(&node_);
    std::string entry = (slices != nullptr ? slices->fn()->name() : node_.name());
    entry += ".";
    entry += name;
    if (std::find(out_.begin(), out_.end(), entry) == out_.end()) out_.push_back(entry);
  }

 private:
  const Node& node_;
  const VersionCounter& counter_;
  std::vector<std::string>& out_;
};

}  // namespace

std::vector<std::string> MutationLogAccess::saved_by(const MutationLog& log,
                                                     const VersionCounter& counter) {
  std::vector<std::string> out;
  if (log.watched_.empty()) return out;
  std::vector<Edge> edges;
  for (const Tensor& root : log.watched_) {
    Edge edge = observed_gradient_edge(root);  // Note [Observers change nothing]
    if (edge.is_valid()) edges.push_back(std::move(edge));
  }
  for (Node* node : execution_order(edges)) {
    StorageMatcher matcher(*node, counter, out);
    node->visit_saved(matcher);
  }
  return out;
}

size_t MutationLogAccess::record(MutationLog& log, const VersionCounter& counter,
                                 const MutationSite& site, const TensorImpl* written,
                                 uint32_t before) {
  std::lock_guard<std::mutex> lock(log.mu_);
  MutationRecord r;
  // x[idx] = v: x's shape and the expression; any other write: the tensor written.
  const TensorImpl* shown = site.index != nullptr ? site.index->indexed : written;
  if (shown != nullptr) {
    r.shape.assign(shown->sizes().begin(), shown->sizes().end());
    r.dtype = dtype_name(shown->dtype());
  }
  if (site.index != nullptr) r.index_expression = site.index->str();
  r.index = static_cast<int64_t>(log.records_.size());
  r.op = site.op != nullptr ? site.op : "";
  r.file = site.file != nullptr ? site.file : "";
  r.line = site.line;
  auto [it, inserted] =
      log.storage_numbers_.emplace(counter.id(), static_cast<int64_t>(log.storage_numbers_.size()));
  r.storage = it->second;
  r.version_before = before;
  r.version_after = before + 1;
  r.saved_by = saved_by(log, counter);
  log.records_.push_back(std::move(r));
  return log.records_.size() - 1;
}

namespace detail {

void observe_write(const VersionCounter& counter, const MutationSite& site,
                   const TensorImpl* written) {
  // Note [Capture hook]: a write no covered op reported, refused when it touches a traced tensor.
  if (capture::capturing()) capture::current_tracer()->unrecorded_write(site, written);
  check_write_during_pack(counter, site, written);  // may refuse the write: first
  if (MutationLogAccess::active.load(std::memory_order_relaxed) == 0 || MutationLogAccess::inside) {
    snapshot_before_write(counter);
    return;
  }
  struct Inside {
    Inside() { MutationLogAccess::inside = true; }
    ~Inside() { MutationLogAccess::inside = false; }
  } inside;
  std::lock_guard<std::mutex> lock(MutationLogAccess::mu());
  const uint32_t before = counter.current();
  std::vector<std::pair<MutationLog*, size_t>> added;
  for (MutationLog* log : MutationLogAccess::logs()) {
    added.emplace_back(log, MutationLogAccess::record(*log, counter, site, written, before));
  }
  const int64_t bytes = snapshot_before_write(counter);  // after: it replaces the saved values
  if (bytes == 0) return;
  for (auto& [log, i] : added) MutationLogAccess::set_snapshot_bytes(*log, i, bytes);
}

int num_active_mutation_logs() { return MutationLogAccess::active.load(std::memory_order_relaxed); }

}  // namespace detail

std::string MutationRecord::to_json() const {
  std::ostringstream os;
  os << "{\"index\": " << index << ", \"op\": " << json_string(op)
     << ", \"file\": " << json_string(file) << ", \"line\": " << line << ", \"shape\": [";
  for (size_t i = 0; i < shape.size(); ++i) os << (i == 0 ? "" : ", ") << shape[i];
  os << "], \"dtype\": " << json_string(dtype) << ", \"index_expression\": ";
  if (index_expression.empty()) {
    os << "null";
  } else {
    os << json_string(index_expression);
  }
  os << ", \"storage\": " << storage << ", \"version_before\": " << version_before
     << ", \"version_after\": " << version_after << ", \"saved_by\": [";
  for (size_t i = 0; i < saved_by.size(); ++i) {
    os << (i == 0 ? "" : ", ") << json_string(saved_by[i]);
  }
  os << "], \"snapshot_bytes\": " << snapshot_bytes << "}";
  return os.str();
}

MutationLog::MutationLog() {
  std::lock_guard<std::mutex> lock(MutationLogAccess::mu());
  MutationLogAccess::logs().push_back(this);
  active_ = true;
  MutationLogAccess::active.fetch_add(1, std::memory_order_relaxed);
  g_pre_write_hook.store(&detail::observe_write, std::memory_order_relaxed);
}

MutationLog::~MutationLog() { stop(); }

void MutationLog::stop() {
  std::lock_guard<std::mutex> lock(MutationLogAccess::mu());
  if (!active_) return;
  auto& logs = MutationLogAccess::logs();
  logs.erase(std::find(logs.begin(), logs.end(), this));
  active_ = false;
  MutationLogAccess::active.fetch_sub(1, std::memory_order_relaxed);
}

bool MutationLog::active() const {
  std::lock_guard<std::mutex> lock(MutationLogAccess::mu());
  return active_;
}

void MutationLog::watch(TensorList roots) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Tensor& t : roots) {
    if (t.defined()) watched_.push_back(t);
  }
}

std::vector<MutationRecord> MutationLog::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

int64_t MutationLog::num_writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(records_.size());
}

int64_t MutationLog::num_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(records_.begin(), records_.end(), [](const MutationRecord& r) {
    return !r.saved_by.empty() || r.snapshot_bytes > 0;
  });
}

int64_t MutationLog::snapshot_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t total = 0;
  for (const MutationRecord& r : records_) total += r.snapshot_bytes;
  return total;
}

std::string MutationLog::summary() const {
  return str(num_writes(), " writes, ", num_hits(), " hit saved tensors, ", snapshot_bytes(),
             " bytes snapshotted");
}

std::string MutationLog::to_jsonl() const {
  std::string out;
  for (const MutationRecord& r : records()) out += r.to_json() + "\n";
  return out;
}

void MutationLog::write_jsonl(const std::string& path) const {
  std::ofstream f(path);
  if (f) f << to_jsonl();
  if (!f) {
    throw ValueError(str("MutationLog::write_jsonl: cannot write '", path,
                         "'; pass a path in an existing, writable directory"));
  }
}

}  // namespace mutagrad::autograd
