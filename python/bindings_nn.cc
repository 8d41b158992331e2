// mutagrad._C._nn: the C++ behind mutagrad.nn.functional and mutagrad.nn.init (loss_ops.h,
// activation_ops.h, init_ops.h), plus softmax/log_softmax as module functions and Tensor
// methods with torch's (dim, dtype=None). The Python package (nn/functional.py) adds torch's
// argument handling (legacy size_average/reduce, the implicit softmax dim, ValueErrors); the
// init functions are these bindings themselves, so an init write records the caller's line.
// The convolutions (conv1d, conv2d, conv_transpose1d/2d, convolution) are module functions, as
// torch's; nn.functional names them.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

std::string reduction_of(py::handle r) { return py::cast<std::string>(r); }

std::optional<Generator> generator_of(py::handle g) {
  if (g.is_none()) return std::nullopt;
  return g.cast<Generator>();
}

// torch's int-or-tuple convolution arguments (stride=2, padding=(1, 0)) as a list.
std::vector<int64_t> int_list(py::handle h) {
  if (py::isinstance<py::int_>(h)) return {h.cast<int64_t>()};
  return h.cast<std::vector<int64_t>>();
}

// conv1d/conv2d: padding an int, a tuple, or "valid"/"same".
Tensor conv_any_padding(const char* op, int64_t dims, const Tensor& input, const Tensor& weight,
                        py::handle bias, py::handle stride, py::handle padding, py::handle dilation,
                        int64_t groups) {
  const Tensor b = optional_tensor(bias);
  const std::vector<int64_t> s = int_list(stride), d = int_list(dilation);
  if (py::isinstance<py::str>(padding)) {
    const ConvPadding mode = conv_padding_mode(op, padding.cast<std::string>());
    return dims == 1 ? conv1d(input, weight, b, s, mode, d, groups)
                     : conv2d(input, weight, b, s, mode, d, groups);
  }
  const std::vector<int64_t> p = int_list(padding);
  return dims == 1 ? conv1d(input, weight, b, s, p, d, groups)
                   : conv2d(input, weight, b, s, p, d, groups);
}

DimVector ints_of(py::handle seq) {
  DimVector out;
  if (py::isinstance<py::int_>(seq)) {
    out.push_back(seq.cast<int64_t>());
    return out;
  }
  for (py::handle h : seq) out.push_back(h.cast<int64_t>());
  return out;
}

// The other pooling ops and im2col/col2im (autograd/ops/pooling_ops.h); nn.functional adds
// torch's argument handling (return_indices, None in an adaptive output_size).
void bind_pooling(py::module_& nn) {
  auto stride_of = [](py::handle stride) {
    return stride.is_none() ? std::vector<int64_t>{} : int_list(stride);
  };
  nn.def(
      "max_pool1d_with_indices",
      [stride_of](const Tensor& input, py::handle kernel_size, py::handle stride,
                  py::handle padding, py::handle dilation, bool ceil_mode) {
        return max_pool1d_with_indices(input, int_list(kernel_size), stride_of(stride),
                                       int_list(padding), int_list(dilation), ceil_mode);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("ceil_mode") = false);
  nn.def(
      "avg_pool1d",
      [stride_of](const Tensor& input, py::handle kernel_size, py::handle stride,
                  py::handle padding, bool ceil_mode, bool count_include_pad) {
        return avg_pool1d(input, int_list(kernel_size), stride_of(stride), int_list(padding),
                          ceil_mode, count_include_pad);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  nn.def(
      "avg_pool2d",
      [stride_of](const Tensor& input, py::handle kernel_size, py::handle stride,
                  py::handle padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
        return avg_pool2d(input, int_list(kernel_size), stride_of(stride), int_list(padding),
                          ceil_mode, count_include_pad, divisor_override);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("count_include_pad") = true,
      py::arg("divisor_override") = py::none());
  nn.def(
      "adaptive_avg_pool1d",
      [](const Tensor& input, py::handle output_size) {
        return adaptive_avg_pool1d(input, int_list(output_size));
      },
      py::arg("input"), py::arg("output_size"));
  nn.def(
      "adaptive_avg_pool2d",
      [](const Tensor& input, py::handle output_size) {
        return adaptive_avg_pool2d(input, int_list(output_size));
      },
      py::arg("input"), py::arg("output_size"));
  nn.def(
      "adaptive_max_pool2d",
      [](const Tensor& input, py::handle output_size) {
        return adaptive_max_pool2d(input, int_list(output_size));
      },
      py::arg("input"), py::arg("output_size"));
  nn.def(
      "im2col",
      [](const Tensor& input, py::handle kernel_size, py::handle dilation, py::handle padding,
         py::handle stride) {
        return im2col(input, int_list(kernel_size), int_list(dilation), int_list(padding),
                      int_list(stride));
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("dilation") = 1, py::arg("padding") = 0,
      py::arg("stride") = 1);
  nn.def(
      "col2im",
      [](const Tensor& input, py::handle output_size, py::handle kernel_size, py::handle dilation,
         py::handle padding, py::handle stride) {
        return col2im(input, int_list(output_size), int_list(kernel_size), int_list(dilation),
                      int_list(padding), int_list(stride));
      },
      py::arg("input"), py::arg("output_size"), py::arg("kernel_size"), py::arg("dilation") = 1,
      py::arg("padding") = 0, py::arg("stride") = 1);
}

// The functional ops of nn_ops.h and loss_ops.h (torch.nn.functional's names; functional.py
// adds the Python-side argument handling). Writes record the caller's .py line.
void bind_functional(py::module_& nn) {
  nn.def(
      "gelu", [](const Tensor& x, const std::string& approximate) { return gelu(x, approximate); },
      py::arg("input"), py::arg("approximate") = "none");
  nn.def(
      "silu", [](const Tensor& x) { return silu(x); }, py::arg("input"));
  nn.def(
      "leaky_relu", [](const Tensor& x, double slope) { return leaky_relu(x, slope); },
      py::arg("input"), py::arg("negative_slope") = 0.01);
  nn.def(
      "leaky_relu_",
      [](Tensor x, double slope) { return leaky_relu_(x, slope, python_call_site()); },
      py::arg("input"), py::arg("negative_slope") = 0.01);
  nn.def(
      "elu", [](const Tensor& x, double alpha) { return elu(x, alpha); }, py::arg("input"),
      py::arg("alpha") = 1.0);
  nn.def(
      "elu_", [](Tensor x, double alpha) { return elu_(x, alpha, python_call_site()); },
      py::arg("input"), py::arg("alpha") = 1.0);
  nn.def(
      "softplus",
      [](const Tensor& x, double beta, double threshold) { return softplus(x, beta, threshold); },
      py::arg("input"), py::arg("beta") = 1.0, py::arg("threshold") = 20.0);
  nn.def(
      "layer_norm",
      [](const Tensor& x, py::handle shape, py::handle w, py::handle b, double eps) {
        return layer_norm(x, ints_of(shape), optional_tensor(w), optional_tensor(b), eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  nn.def(
      "group_norm",
      [](const Tensor& x, int64_t groups, py::handle w, py::handle b, double eps) {
        return group_norm(x, groups, optional_tensor(w), optional_tensor(b), eps);
      },
      py::arg("input"), py::arg("num_groups"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  nn.def(
      "batch_norm",
      [](const Tensor& x, py::handle rm, py::handle rv, py::handle w, py::handle b, bool training,
         double momentum, double eps) {
        return batch_norm(x, optional_tensor(rm), optional_tensor(rv), optional_tensor(w),
                          optional_tensor(b), training, momentum, eps, python_call_site());
      },
      py::arg("input"), py::arg("running_mean"), py::arg("running_var"),
      py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("training") = false,
      py::arg("momentum") = 0.1, py::arg("eps") = 1e-5);
  nn.def(
      "normalize",
      [](const Tensor& x, double p, int64_t dim, double eps) { return normalize(x, p, dim, eps); },
      py::arg("input"), py::arg("p") = 2.0, py::arg("dim") = 1, py::arg("eps") = 1e-12);
  nn.def(
      "embedding",
      [](const Tensor& ids, const Tensor& w, std::optional<int64_t> padding_idx,
         std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
        return embedding(ids, w, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                         python_call_site());
      },
      py::arg("input"), py::arg("weight"), py::arg("padding_idx") = py::none(),
      py::arg("max_norm") = py::none(), py::arg("norm_type") = 2.0,
      py::arg("scale_grad_by_freq") = false);
  nn.def(
      "embedding_renorm_",
      [](Tensor w, const Tensor& ids, double max_norm, double norm_type) {
        return embedding_renorm_(w, ids, max_norm, norm_type, python_call_site());
      },
      py::arg("weight"), py::arg("input"), py::arg("max_norm"), py::arg("norm_type"));
  nn.def(
      "one_hot", [](const Tensor& ids, int64_t n) { return one_hot(ids, n); }, py::arg("tensor"),
      py::arg("num_classes") = -1);
  nn.def(
      "pad",
      [](const Tensor& x, py::handle pad_, const std::string& mode, double value) {
        return pad(x, ints_of(pad_), mode, value);
      },
      py::arg("input"), py::arg("pad"), py::arg("mode") = "constant", py::arg("value") = 0.0);
  for (const char* name : {"dropout", "feature_dropout"}) {
    const bool feature = std::string(name) == "feature_dropout";
    nn.def(
        name,
        [feature](const Tensor& x, double p, bool train, bool inplace, py::handle g) {
          return feature
                     ? feature_dropout(x, p, train, inplace, generator_of(g), python_call_site())
                     : dropout(x, p, train, inplace, generator_of(g), python_call_site());
        },
        py::arg("input"), py::arg("p") = 0.5, py::arg("train") = true, py::arg("inplace") = false,
        py::arg("generator") = py::none());
  }
  nn.def(
      "bilinear",
      [](const Tensor& a, const Tensor& b, const Tensor& w, py::handle bias) {
        return bilinear(a, b, w, optional_tensor(bias));
      },
      py::arg("input1"), py::arg("input2"), py::arg("weight"), py::arg("bias") = py::none());
  nn.def(
      "l1_loss",
      [](const Tensor& x, const Tensor& t, py::handle r) { return l1_loss(x, t, reduction_of(r)); },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  nn.def(
      "smooth_l1_loss",
      [](const Tensor& x, const Tensor& t, py::handle r, double beta) {
        return smooth_l1_loss(x, t, reduction_of(r), beta);
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean", py::arg("beta") = 1.0);
  nn.def(
      "huber_loss",
      [](const Tensor& x, const Tensor& t, py::handle r, double delta) {
        return huber_loss(x, t, reduction_of(r), delta);
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean", py::arg("delta") = 1.0);
  nn.def(
      "binary_cross_entropy",
      [](const Tensor& x, const Tensor& t, py::handle w, py::handle r) {
        return binary_cross_entropy(x, t, optional_tensor(w), reduction_of(r));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("reduction") = "mean");
  nn.def(
      "kl_div",
      [](const Tensor& x, const Tensor& t, py::handle r, bool log_target) {
        return kl_div(x, t, reduction_of(r), log_target);
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean",
      py::arg("log_target") = false);
}

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

  // Convolution (autograd/ops/convolution_ops.h): torch.conv1d ... and nn.functional's forms.
  for (int64_t dims : {1, 2}) {
    const char* name = dims == 1 ? "conv1d" : "conv2d";
    m.def(
        name,
        [name, dims](const Tensor& input, const Tensor& weight, py::handle bias, py::handle stride,
                     py::handle padding, py::handle dilation, int64_t groups) {
          return conv_any_padding(name, dims, input, weight, bias, stride, padding, dilation,
                                  groups);
        },
        py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
        py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
    const char* tname = dims == 1 ? "conv_transpose1d" : "conv_transpose2d";
    m.def(
        tname,
        [dims](const Tensor& input, const Tensor& weight, py::handle bias, py::handle stride,
               py::handle padding, py::handle output_padding, int64_t groups, py::handle dilation) {
          const auto f = dims == 1 ? &conv_transpose1d : &conv_transpose2d;
          return f(input, weight, optional_tensor(bias), int_list(stride), int_list(padding),
                   int_list(output_padding), groups, int_list(dilation));
        },
        py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
        py::arg("padding") = 0, py::arg("output_padding") = 0, py::arg("groups") = 1,
        py::arg("dilation") = 1);
  }
  // Max pooling (autograd/ops/pooling_ops.h); nn.functional adds return_indices.
  nn.def(
      "max_pool2d_with_indices",
      [](const Tensor& input, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, bool ceil_mode) {
        const std::vector<int64_t> k = int_list(kernel_size);
        const std::vector<int64_t> s = stride.is_none() ? std::vector<int64_t>{} : int_list(stride);
        return max_pool2d_with_indices(input, k, s, int_list(padding), int_list(dilation),
                                       ceil_mode);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("ceil_mode") = false);
  bind_pooling(nn);
  m.def(
      "convolution",
      [](const Tensor& input, const Tensor& weight, py::handle bias, py::handle stride,
         py::handle padding, py::handle dilation, bool transposed, py::handle output_padding,
         int64_t groups) {
        return convolution(input, weight, optional_tensor(bias), int_list(stride),
                           int_list(padding), int_list(dilation), transposed,
                           int_list(output_padding), groups);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("transposed"), py::arg("output_padding"), py::arg("groups"));
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
  bind_functional(nn);

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
