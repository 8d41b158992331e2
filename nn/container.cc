// Sequential and ModuleList (nn/container.h).
#include "nn/container.h"

namespace mutagrad::nn {

void ModuleListBase::push_back(std::shared_ptr<Module> module) {
  push_back_named(std::to_string(items_.size()), std::move(module));
}

void ModuleListBase::push_back_named(const std::string& name, std::shared_ptr<Module> module) {
  register_module(name, module);
  items_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleListBase::operator[](int64_t index) const {
  const auto n = static_cast<int64_t>(items_.size());
  if (index < -n || index >= n) {
    throw IndexOutOfRangeError(str(name(), ": index ", index, " is out of range for ", n,
                                   " modules (expected -", n, " <= index < ", n, ")"));
  }
  return items_[static_cast<size_t>(index < 0 ? index + n : index)];
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules)
    : ModuleListBase("Sequential") {
  for (auto& m : modules) push_back(std::move(m));
}

Sequential::Sequential(const OrderedDict<std::shared_ptr<Module>>& named)
    : ModuleListBase("Sequential") {
  for (const auto& [name, m] : named) push_back_named(name, m);
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : *this) x = (*m)(x);
  return x;
}

ModuleList::ModuleList(const std::vector<std::shared_ptr<Module>>& modules)
    : ModuleListBase("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

ModuleDict::ModuleDict(const OrderedDict<std::shared_ptr<Module>>& modules) : Module("ModuleDict") {
  for (const auto& [name, m] : modules) update(name, m);
}

void ModuleDict::update(const std::string& name, std::shared_ptr<Module> module) {
  if (contains(name)) {
    replace_module(name, std::move(module));
  } else {
    register_module(name, std::move(module));
  }
}

void ModuleListBase::rebind_cloned_items() {
  for (std::shared_ptr<Module>& item : items_) item = cloned(item);
}

std::shared_ptr<Module> Sequential::clone_module() const {
  auto copy = copy_module(*this);
  copy->rebind_cloned_items();
  return copy;
}

std::shared_ptr<Module> ModuleList::clone_module() const {
  auto copy = copy_module(*this);
  copy->rebind_cloned_items();
  return copy;
}

}  // namespace mutagrad::nn
