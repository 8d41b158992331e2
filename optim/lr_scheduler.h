// Learning-rate schedulers over an Optimizer's parameter groups: torch.optim.lr_scheduler
// 1.13's schedules with its chainable formulas (each step from the group's current lr, so
// they compose with other writers of the lr), the closed forms step(epoch) uses, last_epoch,
// get_last_lr() and a state_dict.
//
//   optim::SGD opt(params, optim::SGDOptions(0.1));
//   optim::StepLR sched(opt, /*step_size=*/10, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 30; ++epoch) {
//     train(opt);      // opt.step() inside
//     sched.step();    // after opt.step(), as in torch
//   }
//
// Note [Schedulers write the group's lr]
// A scheduler keeps no lr of its own: it reads and writes options().get_lr()/set_lr() of each
// group (torch's group["lr"]); base_lrs are the groups' initial_lr (ParamGroup::initial_lr(),
// set by the first scheduler built on the group, as torch's setdefault("initial_lr")). Constructing
// a scheduler makes its initial step (last_epoch -1 -> 0), as torch. Python's
// mutagrad.optim.lr_scheduler is a separate, pure-Python port (it writes the Python param_groups
// dicts); this header is for C++ callers. torch warns when a scheduler steps before the optimizer;
// C++ has no warning channel, so the C++ schedulers do not.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace mutagrad::optim {

// A scheduler's state as plain data (torch's scheduler.state_dict()).
struct SchedulerState {
  int64_t last_epoch = 0;
  int64_t step_count = 0;
  std::vector<double> base_lrs;
  std::vector<double> last_lr;
  std::map<std::string, double> values;  // a scheduler's own counters (ReduceLROnPlateau's)
  std::vector<SchedulerState> children;  // SequentialLR's schedulers
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // One epoch: last_epoch += 1 and each group's lr from the chainable formula.
  virtual void step();
  // torch's deprecated step(epoch): last_epoch = epoch and the closed form (where the schedule
  // has one, else the chainable formula).
  void step(int64_t epoch);

  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() { return optimizer_; }

  virtual SchedulerState state_dict() const;
  // ValueError (nothing changed) when the number of groups differs.
  virtual void load_state_dict(const SchedulerState& state);

 protected:
  // last_epoch -1 starts the schedule (a group without initial_lr gets its lr as initial_lr);
  // another value resumes it: every group must have initial_lr (ValueError otherwise).
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  // The constructor's step; derived constructors call it once their fields are set.
  void initial_step();
  // The lrs for last_epoch_ (already advanced), from the groups' current lrs.
  virtual std::vector<double> get_lr() = 0;
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }

  std::vector<double> group_lrs() const;
  void apply(const std::vector<double>& lrs);

  Optimizer& optimizer_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;

 private:
  friend class SequentialLR;
};

// lr = base_lr * lambda(epoch) (one function for every group, or one per group).
class LambdaLR final : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& optimizer, Lambda lambda, int64_t last_epoch = -1);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lambdas, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<Lambda> lambdas_;
};

// lr *= gamma every step_size epochs.
class StepLR final : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone (gamma^k at a milestone listed k times).
class MultiStepLR final : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1,
              int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  std::vector<int64_t> milestones_;  // sorted, with repeats
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR final : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double gamma_;
};

// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, by torch's recurrence.
class CosineAnnealingLR final : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0,
                    int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// From base_lr * start_factor to base_lr * end_factor over total_iters epochs. ValueError for a
// factor outside [0, 1].
class LinearLR final : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

// schedulers[i] runs from milestones[i - 1] on (restarted there with step(0)). The schedulers
// must be built on `optimizer`; SequentialLR undoes their initial steps, as torch.
class SequentialLR final : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  void step() override;
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& state) override;

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

struct OneCycleOptions {
  double pct_start = 0.3;
  bool cos = true;  // anneal_strategy: "cos" (true) or "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

// The 1cycle policy of torch's OneCycleLR (total_steps steps; step total_steps + 1 raises
// ValueError). cycle_momentum writes the groups' "momentum" (SGD, RMSprop) or "beta1" (Adam).
class OneCycleLR final : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
             OneCycleOptions options = {}, int64_t last_epoch = -1);
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, OneCycleOptions options = {},
             int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_momentum, end_momentum;  // indices into GroupValues
  };
  // initial_lr, max_lr, min_lr, max_momentum, base_momentum of one group.
  using GroupValues = std::array<double, 5>;
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_;
  OneCycleOptions options_;
  std::vector<Phase> phases_;
  std::vector<GroupValues> groups_;
  const char* momentum_name_ = nullptr;
};

struct PlateauOptions {
  bool mode_max = false;  // mode "max": a larger metric is better
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  bool threshold_abs = false;  // threshold_mode "abs" (else "rel")
  int64_t cooldown = 0;
  std::vector<double> min_lrs;  // one per group, or one for all; empty: 0
  double eps = 1e-8;
};

// Reduces each group's lr by `factor` (not below its min_lr) once step(metric) has seen no
// improvement for more than `patience` epochs. Not an LRScheduler in torch either.
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  SchedulerState state_dict() const;
  void load_state_dict(const SchedulerState& state);

 private:
  bool is_better(double a) const;

  Optimizer& optimizer_;
  PlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace mutagrad::optim
