// Value: what a PyTorch checkpoint holds, in C++: None, bools, ints, doubles, strings, tensors,
// and lists, tuples and (ordered) dicts of them. Dict keys are Values too (an optimizer's
// state_dict keys its "state" by int).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad {
namespace serialize {

class Value {
 public:
  enum class Kind { None, Bool, Int, Double, String, Tensor, List, Tuple, Dict };

  Value() = default;
  Value(bool b) : kind_(Kind::Bool), int_(b) {}                              // NOLINT: implicit
  Value(int v) : kind_(Kind::Int), int_(v) {}                                // NOLINT: implicit
  Value(int64_t v) : kind_(Kind::Int), int_(v) {}                            // NOLINT: implicit
  Value(double v) : kind_(Kind::Double), double_(v) {}                       // NOLINT: implicit
  Value(std::string s) : kind_(Kind::String), string_(std::move(s)) {}       // NOLINT: implicit
  Value(const char* s) : Value(std::string(s)) {}                            // NOLINT: implicit
  Value(mutagrad::Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT

  static Value list(std::vector<Value> items = {}) { return Value(Kind::List, std::move(items)); }
  static Value tuple(std::vector<Value> items = {}) { return Value(Kind::Tuple, std::move(items)); }
  // `ordered`: a collections.OrderedDict (torch's state_dicts) rather than a dict.
  static Value dict(std::vector<std::pair<Value, Value>> entries = {}, bool ordered = false) {
    Value v;
    v.kind_ = Kind::Dict;
    v.entries_ = std::move(entries);
    v.ordered_ = ordered;
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool to_bool() const { return int_ != 0; }
  int64_t to_int() const { return int_; }
  double to_double() const { return double_; }
  const std::string& to_string() const { return string_; }
  const mutagrad::Tensor& to_tensor() const { return tensor_; }
  const std::vector<Value>& items() const { return items_; }  // a list's or tuple's
  std::vector<Value>& items() { return items_; }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  std::vector<std::pair<Value, Value>>& entries() { return entries_; }
  bool ordered() const { return ordered_; }
  // The instance attributes of an OrderedDict (a state_dict's {"_metadata": ...}), or null.
  const std::shared_ptr<Value>& attributes() const { return attributes_; }
  void set_attributes(std::shared_ptr<Value> a) { attributes_ = std::move(a); }

  // The entry whose key is the string `key`; IndexError if absent or not a dict.
  const Value& at(const std::string& key) const;

 private:
  Value(Kind kind, std::vector<Value> items) : kind_(kind), items_(std::move(items)) {}

  Kind kind_ = Kind::None;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  mutagrad::Tensor tensor_;
  std::vector<Value> items_;
  std::vector<std::pair<Value, Value>> entries_;
  bool ordered_ = false;
  std::shared_ptr<Value> attributes_;
};

}  // namespace serialize
}  // namespace mutagrad
