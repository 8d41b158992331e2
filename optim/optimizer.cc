// The Optimizer base: groups, validation, step's frame, zero_grad, state_dict. See optimizer.h.
#include "optim/optimizer.h"

#include <unordered_set>

#include "optim/fused.h"

namespace mutagrad::optim {

std::map<std::string, double> OptimizerOptions::to_map() const {
  std::map<std::string, double> out;
  for (const Field& f : const_cast<OptimizerOptions*>(this)->fields()) {
    out[f.name] = f.number != nullptr ? *f.number : (*f.flag ? 1.0 : 0.0);
  }
  return out;
}

void OptimizerOptions::set(const std::string& name, double value) {
  std::string known;
  for (const Field& f : fields()) {
    if (name == f.name) {
      if (f.number != nullptr) {
        *f.number = value;
      } else {
        *f.flag = value != 0.0;
      }
      return;
    }
    known += known.empty() ? "" : ", ";
    known += f.name;
  }
  throw ValueError(str("optimizer options: unknown option '", name, "'; the options are ", known));
}

ParamGroup::ParamGroup(const ParamGroup& other)
    : params_(other.params_),
      options_(other.options_ ? other.options_->clone() : nullptr),
      initial_lr_(other.initial_lr_) {}

ParamGroup& ParamGroup::operator=(const ParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    initial_lr_ = other.initial_lr_;
  }
  return *this;
}

Optimizer::Optimizer(std::unique_ptr<OptimizerOptions> defaults)
    : fused_(std::make_unique<detail::FusedSteps>()), defaults_(std::move(defaults)) {}

Optimizer::~Optimizer() = default;

void Optimizer::add_groups(std::vector<ParamGroup> groups) {
  defaults_->validate(name());
  if (groups.empty()) {
    throw ValueError(str(name(),
                         ": optimizer got an empty parameter list; pass the parameters "
                         "to optimize"));
  }
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  if (!group.has_options()) {
    group.set_options(defaults_->clone());
  } else if (!accepts(group.options())) {
    throw ValueError(str(name(),
                         ": a parameter group has the options of another optimizer; "
                         "give it ",
                         name(), "Options"));
  }
  group.options().validate(name());
  std::unordered_set<const TensorImpl*> seen;
  for (const ParamGroup& g : groups_) {
    for (const Tensor& p : g.params()) seen.insert(p.unsafe_impl());
  }
  for (size_t i = 0; i < group.params().size(); ++i) {
    const Tensor& p = group.params()[i];
    if (!p.defined()) {
      throw ValueError(str(name(), ": parameter ", i, " of the group is an undefined tensor"));
    }
    if (!p.is_floating_point()) {
      throw DTypeError(str(name(), ": can only optimize floating tensors, but parameter ", i,
                           " of the group is ", dtype_name(p.dtype()),
                           "; convert it with .to(kFloat32)"));
    }
    if (!p.is_leaf()) {
      throw ValueError(str(name(), ": can't optimize a non-leaf Tensor (parameter ", i,
                           " of the group has grad_fn ", p.grad_fn()->name(),
                           "); optimize the leaf it was computed from, or detach() it and "
                           "call requires_grad_()"));
    }
    if (!seen.insert(p.unsafe_impl()).second) {
      throw ValueError(str(name(),
                           ": a parameter appears more than once in the parameter groups "
                           "(parameter ",
                           i, " of the new group); give each parameter to one group, once"));
    }
  }
  groups_.push_back(std::move(group));
  NoGradGuard no_grad;
  on_group_added(groups_.back());
}

void Optimizer::check_gradients() const {
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    groups_[gi].options().validate(name());
    const std::vector<Tensor>& params = groups_[gi].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor grad = params[i].grad();
      if (!grad.defined()) continue;
      const Tensor& p = params[i];
      if (!grad.sizes().equals(p.sizes()) || grad.dtype() != p.dtype() ||
          grad.device() != p.device()) {
        throw ValueError(str(name(), ".step(): the gradient of parameter ", i, " of group ", gi,
                             " is ", dtype_name(grad.dtype()), " ", grad.sizes(), " on ",
                             grad.device(), " but the parameter is ", dtype_name(p.dtype()), " ",
                             p.sizes(), " on ", p.device(),
                             "; a gradient must match its parameter (set it with set_grad)"));
      }
    }
  }
}

void Optimizer::step(CallSite site) {
  NoGradGuard no_grad;
  check_gradients();  // Note [Validate before the first write]
  const MutationSite ms{step_op(), site.file, site.line};
  for (ParamGroup& group : groups_) {
    try {
      for (const Tensor& p : group.params()) {
        const Tensor grad = p.grad();
        if (!grad.defined()) continue;
        update(p, grad, group.options(), state_[p.unsafe_impl()], ms);
      }
    } catch (...) {
      fused_
          ->run();  // the queued steps' tensors were bumped: write them (Note [One pass per group])
      throw;
    }
    fused_->run();
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& group : groups_) {
    for (const Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        if (grad.grad_fn()) {
          grad.detach_();
        } else {
          grad.requires_grad_(false);
        }
        grad.zero_();
      }
    }
  }
}

StateDict Optimizer::state_dict() const {
  StateDict out;
  int64_t index = 0;
  for (const ParamGroup& group : groups_) {
    StateDict::Group g;
    g.options = group.options().to_map();
    for (const Tensor& p : group.params()) {
      g.params.push_back(index);
      auto it = state_.find(p.unsafe_impl());
      if (it != state_.end() && !it->second.empty()) {
        ParamState& s = out.state[index];
        for (const auto& [key, value] : it->second) {
          s[key] = value.defined() ? value.detach().clone() : Tensor();
        }
      }
      ++index;
    }
    out.param_groups.push_back(std::move(g));
  }
  return out;
}

void Optimizer::load_state_dict(const StateDict& state_dict) {
  if (state_dict.param_groups.size() != groups_.size()) {
    throw ValueError(str(name(), ".load_state_dict(): loaded state dict has ",
                         state_dict.param_groups.size(), " parameter groups but the optimizer has ",
                         groups_.size(), "; load a state dict of an optimizer built the same way"));
  }
  std::map<int64_t, const Tensor*> by_index;
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const StateDict::Group& g = state_dict.param_groups[gi];
    const std::vector<Tensor>& params = groups_[gi].params();
    if (g.params.size() != params.size()) {
      throw ValueError(str(name(),
                           ".load_state_dict(): loaded state dict contains a parameter "
                           "group of ",
                           g.params.size(),
                           " parameters that doesn't match the size of the "
                           "optimizer's group ",
                           gi, " (", params.size(), " parameters)"));
    }
    std::unique_ptr<OptimizerOptions> o = groups_[gi].options().clone();
    for (const auto& [key, value] : g.options) o->set(key, value);
    o->validate(name());
    options.push_back(std::move(o));
    for (size_t i = 0; i < params.size(); ++i) by_index[g.params[i]] = &params[i];
  }
  std::unordered_map<const TensorImpl*, ParamState> state;
  for (const auto& [index, saved] : state_dict.state) {
    auto it = by_index.find(index);
    if (it == by_index.end()) {
      throw ValueError(str(name(), ".load_state_dict(): the state of parameter ", index,
                           " belongs to no parameter group; load a state dict of an optimizer "
                           "built the same way"));
    }
    const Tensor& p = *it->second;
    ParamState& s = state[p.unsafe_impl()];
    for (const auto& [key, value] : saved) {
      if (!value.defined()) {
        s[key] = Tensor();
        continue;
      }
      const bool like_param = value.is_floating_point() && key != "step";
      if (like_param && !value.sizes().equals(p.sizes())) {
        throw ValueError(str(name(), ".load_state_dict(): state '", key, "' of parameter ", index,
                             " has shape ", value.sizes(), " but the parameter has ", p.sizes(),
                             "; load a state dict of the same model"));
      }
      s[key] =
          like_param ? value.detach().to(p.device(), p.dtype()).clone() : value.detach().clone();
    }
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) groups_[gi].set_options(std::move(options[gi]));
  state_ = std::move(state);
}

}  // namespace mutagrad::optim
