// Sequential, ModuleList and ModuleDict: containers whose children are named "0", "1", ... (or
// given names, for Sequential), as torch.nn's.
//
//   auto mlp = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>());
//   mlp->push_back(std::make_shared<nn::Linear>(8, 2));
//   Tensor y = (*mlp)(x);                    // each child through operator(): hooks run
//   auto blocks = std::make_shared<nn::ModuleList>();
//   for (auto& m : *blocks) ...               // std::shared_ptr<Module>
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace mutagrad::nn {

// A Module-derived container with an indexable list of children.
class ModuleListBase : public Module {
 public:
  using Module::Module;
  // Appends under the name str(size()).
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  // Negative indices count from the end; IndexError outside [-size, size).
  const std::shared_ptr<Module>& operator[](int64_t index) const;
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    return std::dynamic_pointer_cast<M>((*this)[index]);
  }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return items_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return items_.end(); }

 protected:
  void push_back_named(const std::string& name, std::shared_ptr<Module> module);
  // In a clone (Note [Cloning modules]): the items become the cloned children.
  void rebind_cloned_items();

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

// Calls its children in order, each output the next input.
class Sequential : public ModuleListBase {
 public:
  Sequential() : ModuleListBase("Sequential") {}
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  template <typename... Ms>
  explicit Sequential(std::shared_ptr<Ms>... modules)
      : Sequential(std::vector<std::shared_ptr<Module>>{std::move(modules)...}) {}
  // Children with the given names (torch's Sequential(OrderedDict)).
  explicit Sequential(const OrderedDict<std::shared_ptr<Module>>& named);

  using ModuleListBase::push_back;
  void push_back(const std::string& name, std::shared_ptr<Module> module) {
    push_back_named(name, std::move(module));
  }
  Tensor forward(const Tensor& input) override;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

// Holds modules (registered, so their parameters are the list's); no forward of its own.
class ModuleList : public ModuleListBase {
 public:
  ModuleList() : ModuleListBase("ModuleList") {}
  explicit ModuleList(const std::vector<std::shared_ptr<Module>>& modules);

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

// Modules by name, in insertion order (torch's ModuleDict); no forward of its own.
class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  explicit ModuleDict(const OrderedDict<std::shared_ptr<Module>>& modules);
  // Adds `name`, or replaces the module registered under it.
  void update(const std::string& name, std::shared_ptr<Module> module);
  bool contains(const std::string& name) const { return named_children().contains(name); }
  // Error naming the key and the keys there are.
  std::shared_ptr<Module> operator[](const std::string& name) const {
    return named_children()[name];
  }
  size_t size() const { return named_children().size(); }
  std::vector<std::string> keys() const { return named_children().keys(); }

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

}  // namespace mutagrad::nn
