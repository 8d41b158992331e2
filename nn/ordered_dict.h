// OrderedDict: name -> value in insertion order (torch's OrderedDict), the type of
// named_parameters(), named_modules() and state_dict().
//
//   for (const auto& [name, tensor] : model->state_dict()) ...
//   Tensor w = state["fc1.weight"];          // Error naming the key and the keys there are
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor/error.h"

namespace mutagrad::nn {

template <typename V>
class OrderedDict {
 public:
  using Item = std::pair<std::string, V>;

  // Appends (key, value); ValueError when the key is there already.
  V& insert(const std::string& key, V value) {
    if (index_.count(key) != 0) {
      throw ValueError(str("OrderedDict: key '", key, "' is already present; keys are unique"));
    }
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
  }
  // Inserts or replaces in place (keeping the key's position).
  V& insert_or_assign(const std::string& key, V value) {
    auto it = index_.find(key);
    if (it == index_.end()) return insert(key, std::move(value));
    items_[it->second].second = std::move(value);
    return items_[it->second].second;
  }

  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const V& operator[](const std::string& key) const { return at(key); }
  V& operator[](const std::string& key) {
    return const_cast<V&>(static_cast<const OrderedDict&>(*this).at(key));
  }
  const V& at(const std::string& key) const {
    const V* v = find(key);
    if (v == nullptr) throw Error(str("OrderedDict: no key '", key, "' (keys: ", joined(), ")"));
    return *v;
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<V> values() const {
    std::vector<V> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.second);
    return out;
  }
  const std::vector<Item>& items() const { return items_; }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  typename std::vector<Item>::iterator begin() { return items_.begin(); }
  typename std::vector<Item>::iterator end() { return items_.end(); }
  typename std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::string joined() const {
    std::string out;
    for (const Item& item : items_) out += (out.empty() ? "" : ", ") + item.first;
    return out.empty() ? "none" : out;
  }

  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace mutagrad::nn
