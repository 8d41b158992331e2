// The op-level capture hook: what func::capture (func/) listens to. Each public op it covers
// reports itself once, after it ran, with its arguments and its result:
//
//   Tensor select(const Tensor& self, int64_t dim, int64_t index) {
//     autograd::capture::OpScope cap("select", autograd::capture::OpKind::kView);
//     Tensor result = ...;
//     return cap.done(result, [&] { return autograd::capture::Args{self, dim, index}; });
//   }
//
// Nothing is recorded, and nothing built, unless a Tracer is installed on this thread.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::autograd::capture {

// Note [Capture hook]
// - One thread-local Tracer; ops of other threads are not seen.
// - Nesting: an op's OpScope suppresses the ops it calls, so a composite op that reports itself
//   appears once; one that does not report itself appears as the covered ops it is made of.
// - Writes: an in-place write that no covered op reported (the version bump reaches
//   observe_write at depth 0) is passed to Tracer::unrecorded_write, which refuses it when it
//   touches a tensor the trace knows: a captured program never silently loses a write.
// - Reads: a read of a tensor's memory outside every covered op (an uncovered op's kernel, or a
//   host read such as item()) reaches Tracer::unrecorded_read through tensor/read_hook.h, which
//   refuses it when the values vary from replay to replay (Note [Reads of traced values] in
//   func/capture.cc).
// - Views: a view op reads no data, so an uncovered one (unfold, detach, variable_data) would
//   reach neither hook. Every public view op reports its result through uncovered_view(); at
//   depth 0 (no covered op running, so this view op is not covered) the tracer learns the
//   view's op, and refuses the view by that name when the program uses it.
// - Changes without a version bump: x.data = y (set_data) and detach_() change what a tensor
//   is (its storage, its history) without writing it; on a tensor the trace knows they are
//   refused as unrecorded writes (uncovered_write), before the change.
// - requires_grad_() that changes the flag of a traced tensor (an input, or a leaf computed
//   from one): the graph records no flag, so a replay would follow its inputs' flags, not this
//   call. Refused (requires_grad_changing).
// - Custom Functions: capture would record the ops of a Function's forward, not the Function,
//   so a replay would differentiate those ops instead of its backward. Its apply reports it
//   (custom_function_applied) and the tracer refuses it when an argument is traced or
//   requires grad.
// - Several results: an op of several results (unbind, split, max(dim)) records each with
//   done_as, as the single-result op that makes it.
// - kAuto: the op is a view when its result shares its first argument's storage (reshape,
//   flatten, contiguous, to), else functional; the tracer decides from the result.
enum class OpKind : uint8_t { kFunctional, kView, kInPlace, kAuto };

// An argument: None, a tensor (undefined = None inside a list), a number, an int list, a tensor
// list (advanced indices), a dtype, a string (scatter_reduce's reduction, a device as "cuda:0").
using Arg = std::variant<std::monostate, Tensor, Scalar, std::vector<int64_t>, std::vector<Tensor>,
                         ScalarType, std::string>;
using Args = std::vector<Arg>;

class Tracer {
 public:
  virtual ~Tracer() = default;
  // `op` ran with `args` and returned `result` (for an in-place op: self).
  virtual void record(const char* op, OpKind kind, Args args, const Tensor& result) = 0;
  // An in-place write no covered op reported; `written` may be null.
  virtual void unrecorded_write(const MutationSite& site, const TensorImpl* written) = 0;
  // A read of `impl`'s memory outside every covered op (Note [Read hook] in tensor/read_hook.h):
  // a host read of its values named `what` ("item", "tolist"), or (host_read false) an access by
  // the kernel of an op the hook does not cover.
  virtual void unrecorded_read(const TensorImpl& impl, const char* what, bool host_read) = 0;
  // `view` was made by the view op `op`, which no covered op reported (Note [Capture hook]).
  virtual void unrecorded_view(const char* op, const Tensor& view) = 0;
  // requires_grad_() is about to change whether `impl` requires grad (Note [Capture hook]).
  virtual void requires_grad_changed(const TensorImpl& impl) = 0;
  // The custom Function `name` ("MyFnBackward") is applied to `args` (Note [Capture hook]).
  virtual void custom_function(const std::string& name, const std::vector<Tensor>& args) = 0;
};

namespace detail {
inline thread_local Tracer* t_tracer = nullptr;
inline thread_local int t_depth = 0;  // covered ops on this thread's stack
}  // namespace detail

// Installs `tracer` on this thread (null: removes it) and the pre-write observer; returns the
// previous one.
Tracer* set_tracer(Tracer* tracer);
inline Tracer* current_tracer() { return detail::t_tracer; }
// Whether a tracer listens and no covered op is running (an op entered now would be recorded).
inline bool capturing() { return detail::t_tracer != nullptr && detail::t_depth == 0; }

// Called by every public view op with its result: reaches the tracer only when no covered op
// is running (Note [Capture hook], views). Costs one thread-local load otherwise.
inline void uncovered_view(const char* op, const Tensor& view) {
  if (capturing()) detail::t_tracer->unrecorded_view(op, view);
}

// Called before a change no op records (x.data = y, detach_()) to `impl`: refused, named
// `op`, when the tensor is one the trace knows (Tracer::unrecorded_write).
inline void uncovered_write(const char* op, const TensorImpl* impl) {
  if (capturing()) detail::t_tracer->unrecorded_write(MutationSite{op, nullptr, 0}, impl);
}

// Called by requires_grad_() before it changes the flag (Note [Capture hook]).
inline void requires_grad_changing(const TensorImpl& impl) {
  if (capturing()) detail::t_tracer->requires_grad_changed(impl);
}

// Called by a custom Function's apply before its forward runs (Note [Capture hook]).
inline void custom_function_applied(const std::string& name, const std::vector<Tensor>& args) {
  if (capturing()) detail::t_tracer->custom_function(name, args);
}

class OpScope {
 public:
  OpScope(const char* op, OpKind kind)
      : op_(op), kind_(kind), tracer_(detail::t_depth == 0 ? detail::t_tracer : nullptr) {
    if (tracer_ != nullptr) ++detail::t_depth;
  }
  ~OpScope() {
    if (tracer_ != nullptr) --detail::t_depth;
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  explicit operator bool() const { return tracer_ != nullptr; }

  // Records the op (when listened to) and returns `result`.
  template <typename F>
  const Tensor& done(const Tensor& result, F&& make_args) {
    if (tracer_ != nullptr) tracer_->record(op_, kind_, make_args(), result);
    return result;
  }
  // An op of several results records each as the single-result op that makes it (unbind's
  // i-th result as select(self, dim, i)).
  template <typename F>
  void done_as(const char* op, OpKind kind, const Tensor& result, F&& make_args) {
    if (tracer_ != nullptr) tracer_->record(op, kind, make_args(), result);
  }

 private:
  const char* op_;
  OpKind kind_;
  Tracer* tracer_;
};

// An optional int as an Arg (None or the number).
inline Arg opt(const std::optional<int64_t>& v) {
  return v ? Arg(Scalar(*v)) : Arg(std::monostate{});
}
inline Arg ints(IntArrayRef v) { return Arg(std::vector<int64_t>(v.begin(), v.end())); }
inline Arg tensors(TensorList v) { return Arg(std::vector<Tensor>(v.begin(), v.end())); }

}  // namespace mutagrad::autograd::capture
