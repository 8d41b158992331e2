// Optimizer: the base of optim/'s in-place optimizers (SGD, Adam, AdamW, RMSprop, Adagrad), with
// torch.optim's parameter groups, per-parameter state and state_dict.
//
//   optim::SGD opt(model_params, optim::SGDOptions(0.1).momentum(0.9));
//   for (...) {
//     opt.zero_grad();
//     loss(model_params).backward();
//     opt.step();                     // one in-place write per parameter, "SGD.step" here
//   }
//   optim::StateDict saved = opt.state_dict();   // plain data: tensors and numbers
//
// Note [One bump per parameter per step]
// step() is one logical in-place op on each parameter, so it moves each parameter's version
// counter exactly once, recorded with op "<Name>.step" and the caller's file:line (a default
// CallSite argument, or the Python caller's line from the bindings). If a parameter was saved
// by a forward whose backward has not run yet, the stale-tensor error then names the step and
// the user's line, not a line inside optim/. The optimizer's own state (momentum buffers,
// moments) are separate tensors; their writes bump their own counters. A step whose update is
// two torch ops on the parameter (AdamW's decay, then its addcdiv_) computes the new value
// aside and writes it with one copy_; the rounding is the same as torch's two ops.
//
// Note [Validate before the first write]
// step() checks every parameter's gradient (shape, dtype, device) and every group's options
// before it updates anything: a bad gradient raises and leaves every parameter, version and
// state as it was (PyTorch would have stepped the groups before the bad one).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mutagrad.h"

namespace mutagrad::optim {

// One optimizer's hyperparameters (SGDOptions, AdamOptions, ...). The typed builders are on the
// derived classes; this interface serves the generic code (param groups, state_dict, Python).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // ValueError naming `optimizer` and the bad option (e.g. a negative lr).
  virtual void validate(const char* optimizer) const = 0;

  // Every option by name, as numbers (flags are 0 or 1; Adam's betas are beta1 and beta2).
  std::map<std::string, double> to_map() const;
  // Sets one option by name; ValueError for a name this optimizer does not have.
  void set(const std::string& name, double value);

 protected:
  struct Field {
    const char* name;
    double* number;  // one of number / flag is set
    bool* flag;
  };
  virtual std::vector<Field> fields() = 0;
};

// A set of parameters optimized with the same options (torch's param_groups[i]). Without
// options the group takes the optimizer's defaults.
class ParamGroup {
 public:
  explicit ParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  template <typename Options,
            typename = std::enable_if_t<std::is_base_of_v<OptimizerOptions, Options>>>
  ParamGroup(std::vector<Tensor> params, const Options& options)
      : params_(std::move(params)), options_(options.clone()) {}
  ParamGroup(const ParamGroup& other);
  ParamGroup& operator=(const ParamGroup& other);
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() { return *options_; }
  const OptimizerOptions& options() const { return *options_; }
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  // torch's group["initial_lr"]: set by the first LR scheduler built on the group (the lr it
  // had then), read by every later one as its base lr.
  std::optional<double>& initial_lr() { return initial_lr_; }
  const std::optional<double>& initial_lr() const { return initial_lr_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::optional<double> initial_lr_;
};

// torch's optimizer.state[p]: named state tensors ("momentum_buffer", "exp_avg", "step", ...).
using ParamState = std::map<std::string, Tensor>;

// A snapshot of an optimizer (torch's state_dict() as plain C++): parameters are numbered in
// group order; `state` holds the parameters that have state, by number.
struct StateDict {
  struct Group {
    std::map<std::string, double> options;
    std::vector<int64_t> params;
  };
  std::map<int64_t, ParamState> state;
  std::vector<Group> param_groups;
};

namespace detail {
class FusedSteps;  // optim/fused.h
}

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "SGD", "Adam", ...
  virtual const char* name() const = 0;

  // One update of every parameter that has a gradient, in place under no-grad; see Note [One
  // bump per parameter per step] and Note [Validate before the first write].
  void step(CallSite site = CallSite::current());
  // set_to_none: grads become undefined (torch 2.x's default); else they are zeroed in place.
  void zero_grad(bool set_to_none = true);

  // Adds a group (options: the defaults when it has none). ValueError if a parameter is
  // already in a group, is not a leaf, or the options are of another optimizer.
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }

  // The state of `param` (empty before its first step).
  ParamState& state(const Tensor& param) { return state_[param.unsafe_impl()]; }
  const std::unordered_map<const TensorImpl*, ParamState>& state() const { return state_; }

  // A snapshot: the state tensors are clones, so later steps do not change it.
  StateDict state_dict() const;
  // Restores a snapshot taken from an optimizer of the same kind over parameters of the same
  // groups and shapes. State tensors are cloned (floating ones converted to the parameter's
  // dtype and device, as torch). ValueError (nothing changed) when the groups do not match.
  void load_state_dict(const StateDict& state_dict);

 protected:
  explicit Optimizer(std::unique_ptr<OptimizerOptions> defaults);
  // The constructor's groups (derived constructors call it: it needs accepts()). Validates the
  // defaults; ValueError for an empty list.
  void add_groups(std::vector<ParamGroup> groups);
  // Whether `options` are this optimizer's kind (dynamic_cast to its options class).
  virtual bool accepts(const OptimizerOptions& options) const = 0;
  // One parameter's update; runs under no-grad after every check. Writes `param` exactly once,
  // with `site` (see Note [One bump per parameter per step]).
  virtual void update(const Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                      ParamState& state, const MutationSite& site) = 0;
  // "SGD.step": the op name of the parameter's bump (a literal; the counter keeps the pointer).
  virtual const char* step_op() const = 0;
  // Called (under no-grad) once `group` has been added, its options set; Adagrad creates its
  // state here.
  virtual void on_group_added(ParamGroup& group) { (void)group; }
  // Where update() queues a one-pass step; step() runs the queue at the end of each group (Note
  // [One pass per group] in optim/fused.h).
  detail::FusedSteps& fused_steps() { return *fused_; }

 private:
  void check_gradients() const;

  std::unique_ptr<detail::FusedSteps> fused_;
  std::vector<ParamGroup> groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace mutagrad::optim
