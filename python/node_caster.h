// Graph nodes in Python have a class per name, as torch's: type(y.grad_fn).__name__ is
// "MulBackward0", a subclass of mutagrad._C.Node made the first time a node of that name reaches
// Python (Note [A Python class per node name] in bindings_print.cc).
//
// Included by python/bindings.h, before any binding casts a std::shared_ptr<Node> (every
// translation unit must see this specialization, or the One Definition Rule breaks).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "autograd/node.h"

namespace mutagrad::python {
// Sets obj's class (a mutagrad._C.Node object wrapping `node`) to the class of node's Python name.
void set_node_class(pybind11::handle obj, const autograd::Node& node);
}  // namespace mutagrad::python

namespace pybind11::detail {

template <>
class type_caster<std::shared_ptr<mutagrad::autograd::Node>>
    : public copyable_holder_caster<mutagrad::autograd::Node,
                                    std::shared_ptr<mutagrad::autograd::Node>> {
  using Base =
      copyable_holder_caster<mutagrad::autograd::Node, std::shared_ptr<mutagrad::autograd::Node>>;

 public:
  static handle cast(const std::shared_ptr<mutagrad::autograd::Node>& src,
                     return_value_policy policy, handle parent) {
    handle obj = Base::cast(src, policy, parent);
    if (obj && src) mutagrad::python::set_node_class(obj, *src);
    return obj;
  }
};

}  // namespace pybind11::detail
