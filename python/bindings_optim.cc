// The C++ behind mutagrad.optim and mutagrad.nn.utils (the _optim submodule: optim/'s
// optimizers and clip_grad_*), and the in-place math they use as Tensor methods with torch's
// signatures: addcmul(_), addcdiv(_), lerp(_).
//
//   opt = _C._optim.make("SGD", [(params, {"lr": 0.1, "momentum": 0.9})])
//   opt.step(__file__, 42)    # the bump of each parameter names "SGD.step" at that line
//
// mutagrad/optim/__init__.py keeps torch's param_groups dicts and pushes their options here
// before each step (a scheduler writes group["lr"]).
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "optim/optim.h"
#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

// File names handed to step(): interned, since a MutationSite keeps the pointer for good.
// Guarded by the GIL.
const char* intern(const std::string& s) {
  static auto* names = new std::unordered_set<std::string>();
  return names->insert(s).first->c_str();
}

std::unique_ptr<optim::OptimizerOptions> options_for(const std::string& kind) {
  if (kind == "SGD") return std::make_unique<optim::SGDOptions>(0.0);
  if (kind == "Adam") return std::make_unique<optim::AdamOptions>();
  if (kind == "AdamW") return std::make_unique<optim::AdamWOptions>();
  if (kind == "RMSprop") return std::make_unique<optim::RMSpropOptions>();
  if (kind == "Adagrad") return std::make_unique<optim::AdagradOptions>();
  throw ValueError(str("optim: unknown optimizer '", kind,
                       "'; the optimizers are SGD, Adam, AdamW, RMSprop and Adagrad"));
}

std::unique_ptr<optim::OptimizerOptions> options_from(const std::string& kind, py::dict values) {
  std::unique_ptr<optim::OptimizerOptions> o = options_for(kind);
  for (auto [key, value] : values) o->set(key.cast<std::string>(), value.cast<double>());
  return o;
}

using GroupArg = std::pair<std::vector<Tensor>, py::dict>;

std::unique_ptr<optim::Optimizer> make(const std::string& kind,
                                       const std::vector<GroupArg>& groups_arg) {
  if (groups_arg.empty()) {
    throw ValueError(str(kind, ": optimizer got an empty parameter list"));
  }
  std::vector<optim::ParamGroup> groups;
  for (const GroupArg& g : groups_arg) groups.emplace_back(g.first, options_from(kind, g.second));
  std::unique_ptr<optim::OptimizerOptions> defaults = groups.front().options().clone();
  if (kind == "SGD") {
    return std::make_unique<optim::SGD>(std::move(groups),
                                        static_cast<const optim::SGDOptions&>(*defaults));
  }
  if (kind == "Adam") {
    return std::make_unique<optim::Adam>(std::move(groups),
                                         static_cast<const optim::AdamOptions&>(*defaults));
  }
  if (kind == "AdamW") {
    return std::make_unique<optim::AdamW>(std::move(groups),
                                          static_cast<const optim::AdamWOptions&>(*defaults));
  }
  if (kind == "Adagrad") {
    return std::make_unique<optim::Adagrad>(std::move(groups),
                                            static_cast<const optim::AdagradOptions&>(*defaults));
  }
  return std::make_unique<optim::RMSprop>(std::move(groups),
                                          static_cast<const optim::RMSpropOptions&>(*defaults));
}

py::dict state_to_python(const optim::ParamState& state) {
  py::dict out;
  for (const auto& [key, value] : state) out[py::str(key)] = wrap_tensor(value);
  return out;
}

void bind_optimizers(py::module_& o) {
  py::class_<optim::Optimizer>(o, "Optimizer")
      .def_property_readonly("name", &optim::Optimizer::name)
      .def(
          "step",
          [](optim::Optimizer& self, const std::string& file, int line) {
            self.step(CallSite{intern(file), line});
          },
          py::arg("file"), py::arg("line"))
      .def("zero_grad", &optim::Optimizer::zero_grad, py::arg("set_to_none") = true)
      .def(
          "set_group_options",
          [](optim::Optimizer& self, size_t index, py::dict values) {
            auto& groups = self.param_groups();
            if (index >= groups.size()) throw ValueError("set_group_options: no such group");
            std::unique_ptr<optim::OptimizerOptions> o = groups[index].options().clone();
            for (auto [key, value] : values) o->set(key.cast<std::string>(), value.cast<double>());
            o->validate(self.name());
            groups[index].set_options(std::move(o));
          },
          py::arg("index"), py::arg("options"))
      .def(
          "add_param_group",
          [](optim::Optimizer& self, std::vector<Tensor> params, py::dict values) {
            self.add_param_group(
                optim::ParamGroup(std::move(params), options_from(self.name(), values)));
          },
          py::arg("params"), py::arg("options"))
      .def(
          "state_of",
          [](optim::Optimizer& self, const Tensor& param) {
            auto it = self.state().find(param.unsafe_impl());
            return it == self.state().end() ? py::dict() : state_to_python(it->second);
          },
          py::arg("param"))
      // (state: {index: {name: tensor}}, groups: [({option: number}, [index, ...])])
      .def("state_dict",
           [](const optim::Optimizer& self) {
             optim::StateDict sd = self.state_dict();
             py::dict state;
             for (const auto& [index, s] : sd.state) state[py::int_(index)] = state_to_python(s);
             py::list groups;
             for (const auto& g : sd.param_groups) {
               py::dict options;
               for (const auto& [key, value] : g.options) options[py::str(key)] = value;
               groups.append(py::make_tuple(options, py::cast(g.params)));
             }
             return py::make_tuple(state, groups);
           })
      .def(
          "load_state_dict",
          [](optim::Optimizer& self, py::dict state, py::list groups) {
            optim::StateDict sd;
            for (auto [index, s] : state) {
              optim::ParamState& ps = sd.state[index.cast<int64_t>()];
              for (auto [key, value] : s.cast<py::dict>()) {
                ps[key.cast<std::string>()] = optional_tensor(value);
              }
            }
            for (py::handle g : groups) {
              auto t = g.cast<py::tuple>();
              optim::StateDict::Group group;
              for (auto [key, value] : t[0].cast<py::dict>()) {
                group.options[key.cast<std::string>()] = value.cast<double>();
              }
              group.params = t[1].cast<std::vector<int64_t>>();
              sd.param_groups.push_back(std::move(group));
            }
            self.load_state_dict(sd);
          },
          py::arg("state"), py::arg("groups"));

  o.def("make", &make, py::arg("kind"), py::arg("groups"));
  o.def(
      "clip_grad_norm_",
      [](const std::vector<Tensor>& params, double max_norm, double norm_type,
         bool error_if_nonfinite) {
        return optim::clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite);
      },
      py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0,
      py::arg("error_if_nonfinite") = false);
  o.def("clip_grad_value_", &optim::clip_grad_value_, py::arg("parameters"), py::arg("clip_value"));
}

// lerp's weight: a number or a tensor.
template <typename S, typename T>
auto with_weight(py::handle weight, S on_scalar, T on_tensor) {
  if (py::isinstance<Tensor>(weight)) return on_tensor(weight.cast<Tensor>());
  return on_scalar(to_scalar(weight));
}

void bind_ternary(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  def_both(
      m, t, "addcmul",
      [](const Tensor& self, const Tensor& t1, const Tensor& t2, py::handle value) {
        return self.addcmul(t1, t2, to_scalar(value));
      },
      py::arg("tensor1"), py::arg("tensor2"), py::kw_only(), py::arg("value") = 1);
  def_both(
      m, t, "addcdiv",
      [](const Tensor& self, const Tensor& t1, const Tensor& t2, py::handle value) {
        return self.addcdiv(t1, t2, to_scalar(value));
      },
      py::arg("tensor1"), py::arg("tensor2"), py::kw_only(), py::arg("value") = 1);
  def_both(
      m, t, "lerp",
      [](const Tensor& self, const Tensor& end, py::handle weight) {
        return with_weight(
            weight, [&](const Scalar& w) { return self.lerp(end, w); },
            [&](const Tensor& w) { return self.lerp(end, w); });
      },
      py::arg("end"), py::arg("weight"));
  t.def(
      "addcmul_",
      [](py::object self, const Tensor& t1, const Tensor& t2, py::handle value) {
        self.cast<Tensor&>().addcmul_(t1, t2, to_scalar(value), python_call_site());
        return self;
      },
      py::arg("tensor1"), py::arg("tensor2"), py::kw_only(), py::arg("value") = 1);
  t.def(
      "addcdiv_",
      [](py::object self, const Tensor& t1, const Tensor& t2, py::handle value) {
        self.cast<Tensor&>().addcdiv_(t1, t2, to_scalar(value), python_call_site());
        return self;
      },
      py::arg("tensor1"), py::arg("tensor2"), py::kw_only(), py::arg("value") = 1);
  t.def(
      "lerp_",
      [](py::object self, const Tensor& end, py::handle weight) {
        Tensor& x = self.cast<Tensor&>();
        const CallSite site = python_call_site();
        with_weight(
            weight, [&](const Scalar& w) { return x.lerp_(end, w, site); },
            [&](const Tensor& w) { return x.lerp_(end, w, site); });
        return self;
      },
      py::arg("end"), py::arg("weight"));
}

}  // namespace

void bind_optim(py::module_& m) {
  bind_ternary(m);
  py::module_ o = m.def_submodule("_optim", "the C++ behind mutagrad.optim and nn.utils");
  bind_optimizers(o);
}

}  // namespace mutagrad::python
