// Anomaly mode: remember where each node's forward ran, so the stale-tensor error can say it.
//
//   autograd::DetectAnomalyGuard guard;              // or set_detect_anomaly(true)
//   Tensor h = a * 2.0;                              // MulBackward1's forward: recorded
//   ...                                              // a stale saved tensor then reports
//   // "... The forward of MulBackward0 ran at model.py:12."
//
// The site comes from a provider: Python installs one that reads the innermost Python frame
// (mutagrad.autograd.set_detect_anomaly); C++ code may install its own. Without one, the C++
// caller is found on the stack ("The forward of MulBackward0 ran in build_model() (train+0x4f2)":
// Note [Anomaly mode in C++]). A node an in-place write installs records the write's own site.
#pragma once

#include <optional>
#include <string>

#include "tensor/version_counter.h"

namespace mutagrad::autograd {

class Node;

// Note [Anomaly mode]
// Off (the default) it costs one relaxed load per recorded node. On, each node's forward site
// is kept in a table keyed by the node's sequence number (unique for the process, so a freed
// node's entry can never be taken for a new node's); the table grows while the mode is on and
// is cleared when it is turned off. torch's anomaly mode keeps a Python traceback per node; we
// keep the innermost frame, and the error also names the write (SavedVariable).
//
// Note [Anomaly mode in C++]
// C++ forward ops take no call site (only in-place ops do, for the version counter), so with no
// provider a node records the return addresses of its thread's stack (glibc's backtrace(), no
// lookup) and the error names the innermost frame outside namespace mutagrad and std::, read
// from the binary's own ELF symbol table: function names need neither debug info nor
// -rdynamic; the line is one `addr2line -Cfie <binary> <offset>` away, and the message says so.
// A node an in-place write installs (rebase_history) records that write's site: the op was
// called with one.
void set_detect_anomaly(bool enabled);
bool is_anomaly_enabled();

class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(is_anomaly_enabled()) { set_detect_anomaly(true); }
  ~DetectAnomalyGuard() { set_detect_anomaly(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

// Where the forward of a node ran (null provider: nothing is recorded).
using ForwardSiteProvider = CallSite (*)();
void set_forward_site_provider(ForwardSiteProvider provider);

namespace detail {
// Called when a node gets its first output (history.cc): records the provider's site, or the
// stack without a provider.
void record_forward_site(const Node& node);
// A node installed by an in-place write: records the write's site.
void record_forward_site(const Node& node, CallSite site);
}  // namespace detail

// The recorded site of `node`'s forward, if anomaly mode was on when it ran and the site was
// known (a provider's, or an in-place write's).
std::optional<CallSite> forward_site(const Node& node);
// Where `node`'s forward ran, for messages: "at model.py:12" or, from a C++ stack,
// "in build_model() (train+0x4f2d0)"; nullopt if nothing was recorded.
std::optional<std::string> describe_forward(const Node& node);

}  // namespace mutagrad::autograd
