#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"

namespace mutagrad::autograd {
namespace {

// Row-major multi-index of flat element `flat` in `sizes`, printed as [i, j, k].
std::string multi_index(int64_t flat, IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = sizes[d] == 0 ? 0 : flat % sizes[d];
    flat = sizes[d] == 0 ? 0 : flat / sizes[d];
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

// A 0-dim alias of the row-major flat element `flat` of `t` (on t's device), sharing its
// version counter: the numeric Jacobian writes the perturbed value through it.
Tensor element_alias(const Tensor& t, int64_t flat) {
  int64_t offset = t.storage_offset();
  for (int64_t d = t.dim(); d-- > 0;) {
    const int64_t size = t.size(d);
    offset += (flat % size) * t.stride(d);
    flat /= size;
  }
  return Tensor(std::make_shared<TensorImpl>(t.storage(), DimVector{}, DimVector{}, offset,
                                             t.dtype(), t.version_counter()));
}

// The values of any tensor, row-major, as doubles (through a copy to the CPU).
std::vector<double> flat_values(const Tensor& t) {
  Tensor c = native::contiguous(native::to(t, kCPU, kFloat64));
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Outputs that can have gradients: defined floating tensors.
std::vector<size_t> differentiable_outputs(const VariableList& outputs) {
  std::vector<size_t> idx;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o].defined() && outputs[o].is_floating_point()) idx.push_back(o);
  }
  return idx;
}

// The values of the differentiable outputs of fn(inputs), copied.
std::vector<std::vector<double>> evaluate(const TensorFunction& fn, const VariableList& inputs,
                                          const std::vector<size_t>& diff_outputs) {
  VariableList outputs = fn(inputs);
  std::vector<std::vector<double>> values;
  for (size_t o : diff_outputs) values.push_back(flat_values(outputs[o]));
  return values;
}

// jac[o][i]: numel(out o) x numel(in i), row-major.
using Jacobians = std::vector<std::vector<std::vector<double>>>;

}  // namespace

GradcheckResult gradcheck(const TensorFunction& fn, const VariableList& inputs,
                          const GradcheckOptions& options) {
  EnableGradGuard grad_on;
  std::vector<size_t> diff_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    if (inputs[i].dtype() != kFloat64) {
      throw ValueError(str("gradcheck(): input ", i, " requires grad but is ",
                           dtype_name(inputs[i].dtype()),
                           "; central differences need float64 inputs (use .to(kFloat64))"));
    }
    diff_inputs.push_back(i);
  }
  if (diff_inputs.empty()) {
    throw ValueError(
        "gradcheck(): no input requires grad; call requires_grad_() on the inputs "
        "to check");
  }
  VariableList outputs = fn(inputs);
  const std::vector<size_t> diff_outputs = differentiable_outputs(outputs);

  // Analytic: one backward per output element (one-hot grad_output), all inputs at once.
  VariableList wrt;
  for (size_t i : diff_inputs) wrt.push_back(inputs[i]);
  Jacobians analytic(outputs.size(), std::vector<std::vector<double>>(inputs.size()));
  for (size_t o : diff_outputs) {
    const Tensor& out = outputs[o];
    for (size_t i : diff_inputs) analytic[o][i].assign(out.numel() * inputs[i].numel(), 0.0);
    if (!out.requires_grad()) continue;  // constant output: zero Jacobian
    for (int64_t k = 0; k < out.numel(); ++k) {
      Tensor one_hot = zeros({out.numel()}, TensorOptions(out.dtype()).device(out.device()));
      native::fill_(native::narrow(one_hot, 0, k, 1), 1);
      VariableList g = run_backward({out}, {native::view(one_hot, out.sizes())}, wrt,
                                    /*keep_graph=*/true, /*create_graph=*/false,
                                    /*accumulate=*/false);
      for (size_t n = 0; n < diff_inputs.size(); ++n) {
        if (!g[n].defined()) continue;
        const size_t i = diff_inputs[n];
        std::vector<double> row = flat_values(g[n]);
        std::copy(row.begin(), row.end(), analytic[o][i].begin() + k * inputs[i].numel());
      }
    }
  }

  // Numeric: perturb each input element in memory, central differences.
  Jacobians numeric(outputs.size(), std::vector<std::vector<double>>(inputs.size()));
  NoGradGuard no_grad;  // the function is only evaluated
  for (size_t i : diff_inputs) {
    const Tensor& x = inputs[i];
    for (size_t o : diff_outputs) numeric[o][i].assign(outputs[o].numel() * x.numel(), 0.0);
    const std::vector<double> original = flat_values(x);
    for (int64_t j = 0; j < x.numel(); ++j) {
      // Written in place without a version bump (on any device): the perturbation is not a
      // mutation of the user's program. Outputs are read at once: one may alias the input.
      const Tensor element = element_alias(x, j);
      const double orig = original[static_cast<size_t>(j)];
      native::fill_(element, orig + options.eps);
      std::vector<std::vector<double>> plus = evaluate(fn, inputs, diff_outputs);
      native::fill_(element, orig - options.eps);
      std::vector<std::vector<double>> minus = evaluate(fn, inputs, diff_outputs);
      native::fill_(element, orig);
      for (size_t n = 0; n < diff_outputs.size(); ++n) {
        const size_t o = diff_outputs[n];
        const std::vector<double>& fp = plus[n];
        const std::vector<double>& fm = minus[n];
        const int64_t n_in = x.numel();
        for (size_t k = 0; k < fp.size(); ++k) {
          numeric[o][i][k * n_in + j] = (fp[k] - fm[k]) / (2 * options.eps);
        }
      }
    }
  }

  std::ostringstream report;
  bool ok = true;
  for (size_t o : diff_outputs) {
    for (size_t i : diff_inputs) {
      const std::vector<double>& a = analytic[o][i];
      const std::vector<double>& n = numeric[o][i];
      double worst_excess = 0;
      int64_t worst = -1;
      for (size_t e = 0; e < a.size(); ++e) {
        const double excess =
            std::abs(a[e] - n[e]) - (options.atol + options.rtol * std::abs(n[e]));
        if (excess > worst_excess || (std::isnan(a[e]) != std::isnan(n[e]))) {
          worst_excess = std::isnan(excess) ? INFINITY : excess;
          worst = static_cast<int64_t>(e);
        }
      }
      if (worst < 0) continue;
      ok = false;
      const int64_t n_in = inputs[i].numel();
      const int64_t k = worst / n_in;
      const int64_t j = worst % n_in;
      report << "Jacobian mismatch for output " << o << " with respect to input " << i
             << ": worst at d output" << multi_index(k, outputs[o].sizes()) << " / d input"
             << multi_index(j, inputs[i].sizes()) << ": analytic " << a[worst] << ", numeric "
             << n[worst] << ", |difference| " << std::abs(a[worst] - n[worst]) << " > atol "
             << options.atol << " + rtol " << options.rtol << " * |numeric|"
             << " (output shape " << outputs[o].sizes() << ", input shape " << inputs[i].sizes()
             << ", eps " << options.eps << ")\n";
    }
  }
  return GradcheckResult(ok, report.str());
}

GradcheckResult gradgradcheck(const TensorFunction& fn, const VariableList& inputs,
                              const GradcheckOptions& options) {
  EnableGradGuard grad_on;
  VariableList outputs = fn(inputs);
  const std::vector<size_t> diff_outputs = differentiable_outputs(outputs);
  Generator gen(options.seed);
  VariableList grad_outputs;
  for (size_t o : diff_outputs) {
    grad_outputs.push_back(
        native::to(randn(outputs[o].sizes(), gen, kFloat64), outputs[o].device()).requires_grad_());
  }
  std::vector<size_t> diff_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) diff_inputs.push_back(i);
  }
  const size_t n_inputs = inputs.size();
  // (inputs..., v...) -> the first-order gradients, kept differentiable.
  TensorFunction first_order = [fn, diff_outputs, diff_inputs, n_inputs](const VariableList& all) {
    EnableGradGuard grad_on;  // also during gradcheck's numeric evaluations
    VariableList in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_inputs));
    VariableList out = fn(in);
    VariableList roots, gos, wrt;
    for (size_t n = 0; n < diff_outputs.size(); ++n) {
      if (!out[diff_outputs[n]].requires_grad()) continue;
      roots.push_back(out[diff_outputs[n]]);
      gos.push_back(all[n_inputs + n]);
    }
    for (size_t i : diff_inputs) wrt.push_back(in[i]);
    VariableList grads(wrt.size());
    if (!roots.empty()) {
      grads = run_backward(roots, gos, wrt, /*keep_graph=*/true, /*create_graph=*/true,
                           /*accumulate=*/false);
    }
    VariableList result;
    for (Tensor& g : grads) {
      if (g.defined()) result.push_back(g);
    }
    return result;
  };
  VariableList all = inputs;
  all.insert(all.end(), grad_outputs.begin(), grad_outputs.end());
  GradcheckResult result = gradcheck(first_order, all, options);
  if (result.ok()) return result;
  return GradcheckResult(false, "gradgradcheck (inputs 0.." + std::to_string(n_inputs - 1) +
                                    " are the function's, the rest its grad_outputs):\n" +
                                    result.report());
}

}  // namespace mutagrad::autograd
