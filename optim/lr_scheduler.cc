// The LR schedulers: see lr_scheduler.h. The formulas (and their operation order, so the lrs
// are the same doubles) are torch.optim.lr_scheduler 1.13's.
#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "tensor/error.h"

namespace mutagrad::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<double> times(std::vector<double> lrs, double factor) {
  for (double& lr : lrs) lr *= factor;
  return lrs;
}

void check_factor(double factor, const char* what) {
  if (factor > 1.0 || factor < 0) {
    throw ValueError(
        str(what, " multiplicative factor expected to be between 0 and 1, got ", factor));
  }
}

}  // namespace

// ---- LRScheduler -------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch)
    : optimizer_(optimizer), last_epoch_(last_epoch) {
  auto& groups = optimizer.param_groups();
  if (last_epoch != -1) {
    for (size_t i = 0; i < groups.size(); ++i) {
      if (!groups[i].initial_lr()) {
        throw ValueError(str("param 'initial_lr' is not specified in param_groups[", i,
                             "] when resuming an optimizer (last_epoch=", last_epoch,
                             "); set param_groups()[", i,
                             "].initial_lr() or build the scheduler with last_epoch -1"));
      }
    }
  }
  for (ParamGroup& g : groups) {
    if (!g.initial_lr()) g.initial_lr() = g.options().get_lr();
    base_lrs_.push_back(*g.initial_lr());
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const ParamGroup& g : optimizer_.param_groups()) out.push_back(g.options().get_lr());
  return out;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  std::optional<std::vector<double>> closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

SchedulerState LRScheduler::state_dict() const {
  SchedulerState s;
  s.last_epoch = last_epoch_;
  s.step_count = step_count_;
  s.base_lrs = base_lrs_;
  s.last_lr = last_lr_;
  return s;
}

void LRScheduler::load_state_dict(const SchedulerState& state) {
  if (state.base_lrs.size() != base_lrs_.size()) {
    throw ValueError(str("load_state_dict: the state has base_lrs for ", state.base_lrs.size(),
                         " parameter groups but the optimizer has ", base_lrs_.size(),
                         "; load the state of a scheduler over the same groups"));
  }
  last_epoch_ = state.last_epoch;
  step_count_ = state.step_count;
  base_lrs_ = state.base_lrs;
  last_lr_ = state.last_lr;
}

// ---- the schedules ---------------------------------------------------------------------------

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lambda, int64_t last_epoch)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lambda),
               last_epoch) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lambdas, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), lambdas_(std::move(lambdas)) {
  if (lambdas_.size() != base_lrs_.size()) {
    throw ValueError(str("LambdaLR: expected ", base_lrs_.size(),
                         " lr_lambdas (one per group), but got ", lambdas_.size()));
  }
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> out;
  for (size_t i = 0; i < base_lrs_.size(); ++i)
    out.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return out;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) {
    throw ValueError(str("StepLR: step_size must be positive, got ", step_size));
  }
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return group_lrs();
  return times(group_lrs(), gamma_);
}

std::optional<std::vector<double>> StepLR::closed_form_lr() {
  const double f = std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_));
  return times(base_lrs_, f);
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma,
                         int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  const auto n = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (n == 0) return group_lrs();
  return times(group_lrs(), std::pow(gamma_, static_cast<double>(n)));
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  return times(base_lrs_, std::pow(gamma_, static_cast<double>(passed)));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  if (last_epoch_ == 0) return group_lrs();
  return times(group_lrs(), gamma_);
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  return times(base_lrs_, std::pow(gamma_, static_cast<double>(last_epoch_)));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min,
                                     int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), T_max_(T_max), eta_min_(eta_min) {
  if (T_max <= 0) throw ValueError(str("CosineAnnealingLR: T_max must be positive, got ", T_max));
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  const double e = static_cast<double>(last_epoch_);
  const double T = static_cast<double>(T_max_);
  const double lo = eta_min_;
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double base = base_lrs_[i];
    if (step_count_ == 1 && last_epoch_ > 0) {
      lrs[i] = lo + (base - lo) * (1 + std::cos(e * kPi / T)) / 2;
    } else if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
      lrs[i] = lrs[i] + (base - lo) * (1 - std::cos(kPi / T)) / 2;
    } else {
      lrs[i] = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lrs[i] - lo) + lo;
    }
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> out;
  for (double base : base_lrs_) {
    out.push_back(eta_min_ + (base - eta_min_) *
                                 (1 + std::cos(kPi * static_cast<double>(last_epoch_) /
                                               static_cast<double>(T_max_))) /
                                 2);
  }
  return out;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  check_factor(start_factor, "LinearLR: starting");
  check_factor(end_factor, "LinearLR: ending");
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  if (last_epoch_ == 0) return times(group_lrs(), start_factor_);
  if (last_epoch_ > total_iters_) return group_lrs();
  const double delta = end_factor_ - start_factor_;
  const double ratio = 1. + delta / (static_cast<double>(total_iters_) * start_factor_ +
                                     static_cast<double>(last_epoch_ - 1) * delta);
  return times(group_lrs(), ratio);
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  std::vector<double> out;
  const double delta = end_factor_ - start_factor_;
  for (double base : base_lrs_) {
    out.push_back(
        base * (start_factor_ + delta * static_cast<double>(std::min(total_iters_, last_epoch_)) /
                                    static_cast<double>(total_iters_)));
  }
  return out;
}

// ---- SequentialLR --------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  if (schedulers_.empty()) throw ValueError("SequentialLR: expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    if (&schedulers_[i]->optimizer_ != &optimizer) {
      throw ValueError(
          str("Sequential Schedulers expects all schedulers to belong to the same "
              "optimizer, but got schedulers at index ",
              i, " to be different than the optimizer passed in."));
    }
  }
  if (milestones_.size() != schedulers_.size() - 1) {
    throw ValueError(str(
        "Sequential Schedulers expects number of schedulers provided to be one "
        "more than the number of milestone points, but got number of "
        "schedulers ",
        schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size()));
  }
  last_epoch_ = last_epoch + 1;
  auto& groups = optimizer.param_groups();
  for (ParamGroup& g : groups) g.options().set_lr(*g.initial_lr());  // undo their first steps
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t i = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[i];
  if (i > 0 && milestones_[i - 1] == last_epoch_) {
    s.step(int64_t{0});
  } else {
    s.step();
  }
  last_lr_ = s.get_last_lr();
}

SchedulerState SequentialLR::state_dict() const {
  SchedulerState out = LRScheduler::state_dict();
  for (const auto& s : schedulers_) out.children.push_back(s->state_dict());
  return out;
}

void SequentialLR::load_state_dict(const SchedulerState& state) {
  if (state.children.size() != schedulers_.size()) {
    throw ValueError(str("SequentialLR.load_state_dict: the state has ", state.children.size(),
                         " schedulers but this SequentialLR has ", schedulers_.size()));
  }
  LRScheduler::load_state_dict(state);
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->load_state_dict(state.children[i]);
}

// ---- OneCycleLR ----------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
                       OneCycleOptions options, int64_t last_epoch)
    : OneCycleLR(optimizer, std::vector<double>(optimizer.param_groups().size(), max_lr),
                 total_steps, options, last_epoch) {}

namespace {

// OneCycleLR sets initial_lr itself (max_lr / div_factor) before the base constructor reads it.
Optimizer& with_one_cycle_initial_lrs(Optimizer& optimizer, const std::vector<double>& max_lrs,
                                      double div_factor, int64_t last_epoch) {
  auto& groups = optimizer.param_groups();
  if (max_lrs.size() != groups.size()) {
    throw ValueError(
        str("OneCycleLR: expected ", groups.size(), " values for max_lr, got ", max_lrs.size()));
  }
  if (last_epoch == -1) {
    for (size_t i = 0; i < groups.size(); ++i) groups[i].initial_lr() = max_lrs[i] / div_factor;
  }
  return optimizer;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
                       OneCycleOptions options, int64_t last_epoch)
    : LRScheduler(with_one_cycle_initial_lrs(optimizer, max_lrs, options.div_factor, last_epoch),
                  last_epoch),
      total_steps_(total_steps),
      options_(options) {
  if (total_steps <= 0) {
    throw ValueError(
        str("OneCycleLR: expected positive integer total_steps, but got ", total_steps));
  }
  if (options.pct_start < 0 || options.pct_start > 1) {
    throw ValueError(
        str("OneCycleLR: expected float between 0 and 1 pct_start, but got ", options.pct_start));
  }
  const double n = static_cast<double>(total_steps);
  const double up = options.pct_start * n - 1;
  enum { kInitial, kMax, kMin, kMaxMomentum, kBaseMomentum };
  if (options.three_phase) {
    phases_ = {{up, kInitial, kMax, kMaxMomentum, kBaseMomentum},
               {2 * options.pct_start * n - 2, kMax, kInitial, kBaseMomentum, kMaxMomentum},
               {n - 1, kInitial, kMin, kMaxMomentum, kMaxMomentum}};
  } else {
    phases_ = {{up, kInitial, kMax, kMaxMomentum, kBaseMomentum},
               {n - 1, kMax, kMin, kBaseMomentum, kMaxMomentum}};
  }
  auto& groups = optimizer.param_groups();
  if (options.cycle_momentum) {
    const auto names = groups[0].options().to_map();
    if (names.count("momentum") != 0) {
      momentum_name_ = "momentum";
    } else if (names.count("beta1") != 0) {
      momentum_name_ = "beta1";
    } else {
      throw ValueError(
          str("OneCycleLR: optimizer must support momentum with `cycle_momentum` "
              "option enabled (",
              optimizer.name(), " has neither momentum nor betas)"));
    }
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const double initial = *groups[i].initial_lr();
    groups_.push_back({initial, max_lrs[i], initial / options.final_div_factor,
                       options.max_momentum, options.base_momentum});
    if (momentum_name_ != nullptr && last_epoch == -1) {
      groups[i].options().set(momentum_name_, options.max_momentum);
    }
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.cos) return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  if (last_epoch_ > total_steps_) {
    throw ValueError(str("Tried to step ", last_epoch_ + 1,
                         " times. The specified number of total steps is ", total_steps_));
  }
  const double step = static_cast<double>(last_epoch_);
  std::vector<double> lrs;
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const GroupValues& v = groups_[g];
    double start = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& p = phases_[i];
      if (step <= p.end_step || i == phases_.size() - 1) {
        const double pct = (step - start) / (p.end_step - start);
        lrs.push_back(anneal(v[p.start_lr], v[p.end_lr], pct));
        if (momentum_name_ != nullptr) {
          groups[g].options().set(momentum_name_,
                                  anneal(v[p.start_momentum], v[p.end_momentum], pct));
        }
        break;
      }
      start = p.end_step;
    }
  }
  return lrs;
}

// ---- ReduceLROnPlateau ---------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  if (options_.factor >= 1.0) {
    throw ValueError(str("ReduceLROnPlateau: factor should be < 1.0, got ", options_.factor));
  }
  const size_t n = optimizer.param_groups().size();
  if (options_.min_lrs.empty()) options_.min_lrs = {0.0};
  if (options_.min_lrs.size() == 1) options_.min_lrs.resize(n, options_.min_lrs[0]);
  if (options_.min_lrs.size() != n) {
    throw ValueError(
        str("ReduceLROnPlateau: expected ", n, " min_lrs, got ", options_.min_lrs.size()));
  }
  best_ = options_.mode_max ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a) const {
  const double t = options_.threshold;
  if (!options_.mode_max) return options_.threshold_abs ? a < best_ - t : a < best_ * (1. - t);
  return options_.threshold_abs ? a > best_ + t : a > best_ * (t + 1.);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  auto& groups = optimizer_.param_groups();
  if (num_bad_epochs_ > options_.patience) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().get_lr();
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lrs[i]);
      if (old_lr - new_lr > options_.eps) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& g : groups) last_lr_.push_back(g.options().get_lr());
}

SchedulerState ReduceLROnPlateau::state_dict() const {
  SchedulerState s;
  s.last_epoch = last_epoch_;
  s.last_lr = last_lr_;
  s.values = {{"best", best_},
              {"num_bad_epochs", static_cast<double>(num_bad_epochs_)},
              {"cooldown_counter", static_cast<double>(cooldown_counter_)}};
  return s;
}

void ReduceLROnPlateau::load_state_dict(const SchedulerState& state) {
  for (const char* key : {"best", "num_bad_epochs", "cooldown_counter"}) {
    if (state.values.count(key) == 0) {
      throw ValueError(str("ReduceLROnPlateau.load_state_dict: the state has no '", key,
                           "'; load a state_dict() of a ReduceLROnPlateau"));
    }
  }
  last_epoch_ = state.last_epoch;
  last_lr_ = state.last_lr;
  best_ = state.values.at("best");
  num_bad_epochs_ = static_cast<int64_t>(state.values.at("num_bad_epochs"));
  cooldown_counter_ = static_cast<int64_t>(state.values.at("cooldown_counter"));
}

}  // namespace mutagrad::optim
