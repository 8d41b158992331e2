// mutagrad._C._nn: the C++ behind mutagrad.nn.functional and mutagrad.nn.init (loss_ops.h,
// activation_ops.h, init_ops.h), plus softmax/log_softmax as module functions and Tensor
// methods with torch's (dim, dtype=None). The Python package (nn/functional.py) adds torch's
// argument handling (legacy size_average/reduce, the implicit softmax dim, ValueErrors); the
// init functions are these bindings themselves, so an init write records the caller's line.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

std::string reduction_of(py::handle r) { return py::cast<std::string>(r); }

}  // namespace

void bind_nn(py::module_& m) {
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  def_both(
      m, t, "softmax",
      [](const Tensor& x, int64_t dim, py::handle dtype) {
        return x.softmax(dim, to_dtype(dtype));
      },
      py::arg("dim"), py::arg("dtype") = py::none());
  def_both(
      m, t, "log_softmax",
      [](const Tensor& x, int64_t dim, py::handle dtype) {
        return x.log_softmax(dim, to_dtype(dtype));
      },
      py::arg("dim"), py::arg("dtype") = py::none());

  py::module_ nn = m.def_submodule("_nn", "the C++ behind mutagrad.nn");
  nn.def(
      "cross_entropy",
      [](const Tensor& input, const Tensor& target, py::handle weight, int64_t ignore_index,
         py::handle reduction, double label_smoothing) {
        return cross_entropy(input, target, optional_tensor(weight), ignore_index,
                             reduction_of(reduction), label_smoothing);
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduction") = "mean",
      py::arg("label_smoothing") = 0.0);
  nn.def(
      "nll_loss",
      [](const Tensor& input, const Tensor& target, py::handle weight, int64_t ignore_index,
         py::handle reduction) {
        return nll_loss(input, target, optional_tensor(weight), ignore_index,
                        reduction_of(reduction));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduction") = "mean");
  nn.def(
      "mse_loss",
      [](const Tensor& input, const Tensor& target, py::handle reduction) {
        return mse_loss(input, target, reduction_of(reduction));
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  nn.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& input, const Tensor& target, py::handle weight, py::handle reduction,
         py::handle pos_weight) {
        return binary_cross_entropy_with_logits(input, target, optional_tensor(weight),
                                                optional_tensor(pos_weight),
                                                reduction_of(reduction));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("reduction") = "mean", py::arg("pos_weight") = py::none());

  // nn.init: torch's names, signatures and defaults; the draws use mutagrad's default
  // generator of the tensor's device (mutagrad.manual_seed seeds it).
  namespace init = nn::init;
  nn.def(
      "uniform_",
      [](Tensor tensor, double a, double b) {
        return init::uniform_(tensor, default_generator(tensor.device()), a, b, python_call_site());
      },
      py::arg("tensor"), py::arg("a") = 0.0, py::arg("b") = 1.0);
  nn.def(
      "normal_",
      [](Tensor tensor, double mean, double std) {
        return init::normal_(tensor, default_generator(tensor.device()), mean, std,
                             python_call_site());
      },
      py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0);
  nn.def(
      "zeros_", [](Tensor tensor) { return init::zeros_(tensor, python_call_site()); },
      py::arg("tensor"));
  nn.def(
      "ones_", [](Tensor tensor) { return init::ones_(tensor, python_call_site()); },
      py::arg("tensor"));
  nn.def(
      "kaiming_uniform_",
      [](Tensor tensor, double a, const std::string& mode, const std::string& nonlinearity) {
        return init::kaiming_uniform_(tensor, default_generator(tensor.device()), a, mode,
                                      nonlinearity, python_call_site());
      },
      py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in",
      py::arg("nonlinearity") = "leaky_relu");
  nn.def(
      "xavier_uniform_",
      [](Tensor tensor, double gain) {
        return init::xavier_uniform_(tensor, default_generator(tensor.device()), gain,
                                     python_call_site());
      },
      py::arg("tensor"), py::arg("gain") = 1.0);
  nn.def(
      "calculate_gain",
      [](const std::string& nonlinearity, std::optional<double> param) {
        return init::calculate_gain(nonlinearity, param);
      },
      py::arg("nonlinearity"), py::arg("param") = py::none());
  nn.def("_calculate_fan_in_and_fan_out", &init::calculate_fan_in_and_fan_out, py::arg("tensor"));
}

}  // namespace mutagrad::python
