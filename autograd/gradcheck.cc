#include "autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <vector>

#include "autograd/custom_function.h"
#include "autograd/engine.h"
#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"

// Note [gradcheck's checks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// torch 1.13's gradcheck, check by check (the first failing one ends the run with its report):
//  1. Jacobians. Slow mode: every element, analytic (one backward per output element, one-hot
//     grad_output) against central differences; fast mode: for random unit vectors u (per
//     input) and v (per output), v^T J u from one backward against v . (f(x + eps u) -
//     f(x - eps u)) / 2 eps, with atol scaled by sum(u) sum(v) (|J - N| <= atol elementwise
//     bounds the projections' difference by atol sum(u) sum(v)). Each backward runs twice:
//     results further apart than nondet_tol fail ("not reentrant"), gradients of the wrong
//     size fail, and of the wrong dtype/device with check_grad_dtypes. Outputs that do not
//     require grad are not checked; with none, the numeric Jacobian must be zero.
//  2. check_batched_grad: torch compares vmap(vjp) over two random grad_outputs with a loop.
//     mutagrad has no vmap, so the "batch" is the same two vjps on a graph rebuilt by calling fn
//     again: a backward that depends on state other than (inputs, grad_output) fails.
//  3. Backward with zero grad_outputs gives zero gradients of the inputs' dtype, device, size.
//  4. check_undefined_grad: every output's gradient undefined, and with several outputs each
//     one undefined in turn, must give undefined or zero gradients without failing. mutagrad's
//     engine does not run a node whose incoming gradients are all undefined, so in the
//     all-undefined case the custom Function nodes the undefined gradients reach (through
//     built-in nodes, which pass them on as torch's do) are applied directly (torch's engine
//     runs them, materializing zeros unless set_materialize_grads(False)).

namespace mutagrad::autograd {
namespace {

// A failed check: caught in gradcheck() and returned as the report.
struct CheckFailed {
  std::string report;
};

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
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector{}, DimVector{}, offset, t.dtype(),
                                        t.version_counter()));
}

// The values of any tensor, row-major, as doubles (through a copy to the CPU).
std::vector<double> flat_values(const Tensor& t) {
  Tensor c = native::contiguous(native::to(t, kCPU, kFloat64));
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// `values` (row-major) as a tensor shaped, typed and placed like `like`.
Tensor tensor_like(const std::vector<double>& values, const Tensor& like) {
  Tensor cpu = from_vector(values, {static_cast<int64_t>(values.size())});
  return native::view(native::to(cpu, like.device(), like.dtype()), like.sizes());
}

// Writes `values` into t's memory (no version bump): see Note above element_alias.
void write_values(const Tensor& t, const std::vector<double>& values) {
  native::copy_(t, tensor_like(values, t));
}

std::string values_str(const std::vector<double>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t k = 0; k < v.size() && k < 20; ++k) os << (k ? ", " : "") << v[k];
  if (v.size() > 20) os << ", ... (" << v.size() << " values)";
  os << "]";
  return os.str();
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// torch.allclose for one pair: equal (infinities included), or within atol + rtol * |b|.
bool close(double a, double b, double atol, double rtol) {
  if (a == b) return true;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return false;
  return std::abs(a - b) <= atol + rtol * std::abs(b);
}

// Indices of the outputs that require grad (torch's differentiable outputs).
std::vector<size_t> differentiable_outputs(const VariableList& outputs) {
  std::vector<size_t> idx;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o].defined() && outputs[o].requires_grad()) idx.push_back(o);
  }
  return idx;
}

// Indices of the defined floating outputs (those a numeric Jacobian is taken of).
std::vector<size_t> floating_outputs(const VariableList& outputs) {
  std::vector<size_t> idx;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o].defined() && outputs[o].is_floating_point()) idx.push_back(o);
  }
  return idx;
}

// The values of outputs `which` of fn(inputs), copied.
std::vector<std::vector<double>> evaluate(const TensorFunction& fn, const VariableList& inputs,
                                          const std::vector<size_t>& which) {
  VariableList outputs = fn(inputs);
  std::vector<std::vector<double>> values;
  for (size_t o : which) values.push_back(flat_values(outputs[o]));
  return values;
}

const char* const kNondetNote =
    "\n\nNOTE: if the backward relies on non-deterministic operations this failure might be "
    "expected: call gradcheck/gradgradcheck with nondet_tol=<tol>.";

class Checker {
 public:
  Checker(const TensorFunction& fn, const VariableList& inputs, const GradcheckOptions& options)
      : fn_(fn), inputs_(inputs), options_(options) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
      if (options.require_float64 && inputs[i].dtype() != kFloat64) {
        throw ValueError(str("gradcheck(): input ", i, " requires grad but is ",
                             dtype_name(inputs[i].dtype()),
                             "; central differences need float64 inputs (use .to(kFloat64))"));
      }
      if (!inputs[i].is_floating_point()) {
        throw ValueError(str("gradcheck(): input ", i, " requires grad but is ",
                             dtype_name(inputs[i].dtype()),
                             "; only floating inputs can be checked"));
      }
      diff_inputs_.push_back(i);
      wrt_.push_back(inputs[i]);
    }
    if (diff_inputs_.empty()) {
      throw ValueError(
          "gradcheck(): no input requires grad; call requires_grad_() on the inputs "
          "to check");
    }
  }

  void run() {
    outputs_ = fn_(inputs_);
    diff_outputs_ = differentiable_outputs(outputs_);
    if (diff_outputs_.empty()) {
      check_numeric_zero();
    } else if (options_.fast_mode) {
      fast_jacobians();
    } else {
      slow_jacobians();
    }
    if (options_.check_forward_ad && !diff_outputs_.empty()) forward_jacobians();
    if (options_.check_batched_grad) check_batched();
    check_zero_grad_outputs();
    if (options_.check_undefined_grad) check_undefined();
  }

 private:
  VariableList vjp(const Tensor& out, const Tensor& grad_output) const {
    return run_backward({out}, {grad_output}, wrt_, /*keep_graph=*/true, /*create_graph=*/false,
                        /*accumulate_grad=*/false);
  }

  // Sizes, dtypes (with check_grad_dtypes) and reentrancy of two backwards of one grad_output.
  void check_attributes(const VariableList& g1, const VariableList& g2) const {
    bool types_ok = true, sizes_ok = true;
    double worst = 0;
    for (size_t n = 0; n < wrt_.size(); ++n) {
      const Tensor& x = wrt_[n];
      if (g1[n].defined()) {
        if (g1[n].sizes() != x.sizes()) {
          sizes_ok = false;
        } else if (g1[n].dtype() != x.dtype() || g1[n].device() != x.device()) {
          types_ok = false;
        }
      }
      std::vector<double> a = g1[n].defined() ? flat_values(g1[n]) : std::vector<double>();
      std::vector<double> b = g2[n].defined() ? flat_values(g2[n]) : std::vector<double>();
      a.resize(std::max(a.size(), b.size()), 0.0);
      b.resize(a.size(), 0.0);
      for (size_t k = 0; k < a.size(); ++k) {
        const double d = std::abs(a[k] - b[k]);
        if (d > worst) worst = d;
      }
    }
    if (!types_ok && options_.check_grad_dtypes) {
      throw CheckFailed{
          "Gradient has dtype mismatch: a gradient's dtype or device differs from "
          "its input's (check_grad_dtypes=True)"};
    }
    if (!sizes_ok) throw CheckFailed{"Analytical gradient has incorrect size"};
    if (worst > options_.nondet_tol) {
      throw CheckFailed{
          str("Backward is not reentrant, i.e., running backward with same input and grad_output "
              "multiple times gives different values, although analytical gradient matches "
              "numerical gradient. The tolerance for nondeterminism was ",
              options_.nondet_tol, "; the results differed by up to ", worst, ".", kNondetNote)};
    }
  }

  // analytic[n]: numel(out) x numel(wrt n), row-major, from one-hot backwards (each run twice).
  std::vector<std::vector<double>> analytic_jacobian(const Tensor& out) const {
    std::vector<std::vector<double>> jac(wrt_.size());
    for (size_t n = 0; n < wrt_.size(); ++n) jac[n].assign(out.numel() * wrt_[n].numel(), 0.0);
    for (int64_t k = 0; k < out.numel(); ++k) {
      std::vector<double> one_hot(static_cast<size_t>(out.numel()), 0.0);
      one_hot[static_cast<size_t>(k)] = 1.0;
      const Tensor go = tensor_like(one_hot, out);
      const VariableList g1 = vjp(out, go), g2 = vjp(out, go);
      check_attributes(g1, g2);
      for (size_t n = 0; n < wrt_.size(); ++n) {
        if (!g1[n].defined()) continue;
        const std::vector<double> row = flat_values(g1[n]);
        std::copy(row.begin(), row.end(), jac[n].begin() + k * wrt_[n].numel());
      }
    }
    return jac;
  }

  // numeric[o][n] (o over `which`): numel(out) x numel(wrt n), by perturbing each element.
  std::vector<std::vector<std::vector<double>>> numeric_jacobian(
      const std::vector<size_t>& which) const {
    std::vector<std::vector<std::vector<double>>> jac(
        which.size(), std::vector<std::vector<double>>(wrt_.size()));
    NoGradGuard no_grad;  // the function is only evaluated
    for (size_t n = 0; n < wrt_.size(); ++n) {
      const Tensor& x = wrt_[n];
      const int64_t n_in = x.numel();
      for (size_t w = 0; w < which.size(); ++w) {
        jac[w][n].assign(outputs_[which[w]].numel() * n_in, 0.0);
      }
      const std::vector<double> original = flat_values(x);
      for (int64_t j = 0; j < n_in; ++j) {
        // Written in place without a version bump (on any device): the perturbation is not a
        // mutation of the user's program. Outputs are read at once: one may alias the input.
        const Tensor element = element_alias(x, j);
        const double orig = original[static_cast<size_t>(j)];
        native::fill_(element, orig + options_.eps);
        const std::vector<std::vector<double>> plus = evaluate(fn_, inputs_, which);
        native::fill_(element, orig - options_.eps);
        const std::vector<std::vector<double>> minus = evaluate(fn_, inputs_, which);
        native::fill_(element, orig);
        for (size_t w = 0; w < which.size(); ++w) {
          for (size_t k = 0; k < plus[w].size(); ++k) {
            jac[w][n][k * n_in + j] = (plus[w][k] - minus[w][k]) / (2 * options_.eps);
          }
        }
      }
    }
    return jac;
  }

  void check_numeric_zero() const {
    const std::vector<size_t> which = floating_outputs(outputs_);
    const auto numeric = numeric_jacobian(which);
    for (const auto& per_output : numeric) {
      for (const auto& jac : per_output) {
        for (double d : jac) {
          if (d != 0) {
            throw CheckFailed{
                "Numerical gradient for function expected to be zero: no output requires grad, "
                "but the outputs change with the inputs"};
          }
        }
      }
    }
  }

  // The report for pair (output o, input n) when analytic a and numeric e differ; empty if not.
  std::string compare(size_t o, size_t n, const std::vector<double>& a,
                      const std::vector<double>& e) const {
    double worst_excess = -1;
    int64_t worst = -1;
    for (size_t k = 0; k < a.size(); ++k) {
      if (close(a[k], e[k], options_.atol, options_.rtol)) continue;
      double excess = std::abs(a[k] - e[k]) - (options_.atol + options_.rtol * std::abs(e[k]));
      if (std::isnan(excess)) excess = INFINITY;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = static_cast<int64_t>(k);
      }
    }
    if (worst < 0) return "";
    const size_t i = diff_inputs_[n];
    const int64_t n_in = inputs_[i].numel();
    std::ostringstream report;
    report << "Jacobian mismatch for output " << o << " with respect to input " << i
           << ": worst at d output" << multi_index(worst / n_in, outputs_[o].sizes())
           << " / d input" << multi_index(worst % n_in, inputs_[i].sizes()) << ": analytic "
           << a[worst] << ", numeric " << e[worst] << ", |difference| "
           << std::abs(a[worst] - e[worst]) << " > atol " << options_.atol << " + rtol "
           << options_.rtol << " * |numeric|"
           << " (output shape " << outputs_[o].sizes() << ", input shape " << inputs_[i].sizes()
           << ", eps " << options_.eps << ")\n";
    return report.str();
  }

  void slow_jacobians() const {
    const auto numeric = numeric_jacobian(diff_outputs_);
    std::string report;
    for (size_t w = 0; w < diff_outputs_.size(); ++w) {
      const size_t o = diff_outputs_[w];
      const auto analytic = analytic_jacobian(outputs_[o]);
      for (size_t n = 0; n < wrt_.size(); ++n) report += compare(o, n, analytic[n], numeric[w][n]);
    }
    if (!report.empty()) throw CheckFailed{report};
  }

  // check_forward_ad: the Jacobians column by column from forward-mode jvps (a one-hot tangent
  // per input element, autograd/forward_ad.h), against the numeric ones.
  void forward_jacobians() const {
    const auto numeric = numeric_jacobian(diff_outputs_);
    std::string report;
    for (size_t n = 0; n < wrt_.size(); ++n) {
      const size_t i = diff_inputs_[n];
      const int64_t n_in = inputs_[i].numel();
      std::vector<std::vector<double>> fw(diff_outputs_.size());
      for (size_t w = 0; w < diff_outputs_.size(); ++w) {
        fw[w].assign(outputs_[diff_outputs_[w]].numel() * n_in, 0.0);
      }
      for (int64_t j = 0; j < n_in; ++j) {
        forward_ad::dual_level level;
        Tensor one_hot = zeros_like(inputs_[i].detach());
        native::fill_(element_alias(one_hot, j), 1.0);
        // Detached primals, as torch's gradcheck: the forward-mode columns need no reverse
        // graph, and one would tie the nodes that save a tangent to that tangent's history.
        VariableList duals;
        duals.reserve(inputs_.size());
        for (const Tensor& x : inputs_) duals.push_back(x.defined() ? x.detach() : x);
        duals[i] = forward_ad::make_dual(duals[i], one_hot);
        const VariableList outs = fn_(duals);
        for (size_t w = 0; w < diff_outputs_.size(); ++w) {
          const Tensor tangent = forward_ad::unpack_dual(outs[diff_outputs_[w]]).tangent;
          if (!tangent.defined()) continue;  // zeros
          const std::vector<double> column = flat_values(tangent.detach());
          for (size_t k = 0; k < column.size(); ++k) fw[w][k * n_in + j] = column[k];
        }
      }
      for (size_t w = 0; w < diff_outputs_.size(); ++w) {
        const std::string r = compare(diff_outputs_[w], n, fw[w], numeric[w][n]);
        if (!r.empty()) report += "Forward-mode (check_forward_ad) " + r;
      }
    }
    if (!report.empty()) throw CheckFailed{report};
  }

  // A random unit vector of `numel` elements (torch: rand, divided by its norm).
  std::vector<double> unit_vector(int64_t numel, Generator& gen) const {
    std::vector<double> v = flat_values(rand({numel}, gen, TensorOptions(kFloat64)));
    const double norm = std::sqrt(dot(v, v));
    if (norm > 0) {
      for (double& x : v) x /= norm;
    }
    return v;
  }

  void fast_jacobians() const {
    Generator gen(options_.seed);
    std::vector<std::vector<double>> u, v;
    for (const Tensor& x : wrt_) u.push_back(unit_vector(x.numel(), gen));
    for (size_t o : diff_outputs_) v.push_back(unit_vector(outputs_[o].numel(), gen));

    // numeric[w][n] = v_w . (f_w(x + eps u_n) - f_w(x - eps u_n)) / 2 eps
    std::vector<std::vector<double>> numeric(diff_outputs_.size(),
                                             std::vector<double>(wrt_.size(), 0.0));
    {
      NoGradGuard no_grad;
      for (size_t n = 0; n < wrt_.size(); ++n) {
        const Tensor& x = wrt_[n];
        const std::vector<double> original = flat_values(x);
        std::vector<double> plus_x(original), minus_x(original);
        for (size_t k = 0; k < original.size(); ++k) {
          plus_x[k] += options_.eps * u[n][k];
          minus_x[k] -= options_.eps * u[n][k];
        }
        write_values(x, plus_x);
        const auto plus = evaluate(fn_, inputs_, diff_outputs_);
        write_values(x, minus_x);
        const auto minus = evaluate(fn_, inputs_, diff_outputs_);
        write_values(x, original);  // the values came from x: restored bit for bit
        for (size_t w = 0; w < diff_outputs_.size(); ++w) {
          for (size_t k = 0; k < plus[w].size(); ++k) {
            numeric[w][n] += v[w][k] * (plus[w][k] - minus[w][k]) / (2 * options_.eps);
          }
        }
      }
    }
    for (size_t w = 0; w < diff_outputs_.size(); ++w) {
      const Tensor& out = outputs_[diff_outputs_[w]];
      const Tensor go = tensor_like(v[w], out);
      const VariableList g1 = vjp(out, go), g2 = vjp(out, go);
      check_attributes(g1, g2);
      for (size_t n = 0; n < wrt_.size(); ++n) {
        const double analytic = g1[n].defined() ? dot(flat_values(g1[n]), u[n]) : 0.0;
        const double sum_u = std::accumulate(u[n].begin(), u[n].end(), 0.0);
        const double sum_v = std::accumulate(v[w].begin(), v[w].end(), 0.0);
        const double atol = options_.atol * sum_u * sum_v;
        if (close(analytic, numeric[w][n], atol, options_.rtol)) continue;
        throw CheckFailed{fast_failure(diff_outputs_[w], n, analytic, numeric[w][n])};
      }
    }
  }

  // The fast-mode report, with the pair's full Jacobians compared in slow mode.
  std::string fast_failure(size_t o, size_t n, double analytic, double numeric) const {
    std::ostringstream report;
    report << "Jacobian mismatch for output " << o << " with respect to input " << diff_inputs_[n]
           << " (fast mode, v^T J u for random unit u and v): numeric " << numeric << ", analytic "
           << analytic << "\n";
    const auto slow_analytic = analytic_jacobian(outputs_[o])[n];
    const auto slow_numeric = numeric_jacobian({o})[0][n];
    double max_diff = 0;
    for (size_t k = 0; k < slow_analytic.size(); ++k) {
      max_diff = std::max(max_diff, std::abs(slow_analytic[k] - slow_numeric[k]));
    }
    report << "Recomputed in slow mode: numeric " << values_str(slow_numeric) << ", analytic "
           << values_str(slow_analytic) << "; the max per-element difference is " << max_diff
           << ".\n";
    const std::string slow = compare(o, n, slow_analytic, slow_numeric);
    if (slow.empty()) {
      report << "Fast gradcheck failed but element-wise differences are small: the check "
                "might pass with fast_mode=False.\n";
    } else {
      report << slow;
    }
    return report.str();
  }

  void check_batched() const {
    Generator gen(options_.seed + 1);
    for (size_t w = 0; w < diff_outputs_.size(); ++w) {
      const size_t o = diff_outputs_[w];
      const Tensor& out = outputs_[o];
      VariableList gos;
      for (int b = 0; b < 2; ++b) {
        gos.push_back(native::to(randn(out.sizes(), gen, TensorOptions(kFloat64)), out.device(),
                                 out.dtype()));
      }
      VariableList fresh_outputs;
      {
        EnableGradGuard grad_on;
        fresh_outputs = fn_(inputs_);
      }
      for (int b = 0; b < 2; ++b) {
        const VariableList expected = vjp(out, gos[b]);
        const VariableList got = vjp(fresh_outputs[o], gos[b]);
        for (size_t n = 0; n < wrt_.size(); ++n) {
          std::vector<double> e = expected[n].defined() ? flat_values(expected[n])
                                                        : std::vector<double>(wrt_[n].numel());
          std::vector<double> g =
              got[n].defined() ? flat_values(got[n]) : std::vector<double>(wrt_[n].numel());
          bool same = e.size() == g.size();
          for (size_t k = 0; same && k < e.size(); ++k) same = close(g[k], e[k], 1e-8, 1e-5);
          if (same) continue;
          throw CheckFailed{
              str("For output ", o, " and input ", diff_inputs_[n],
                  ":\n\ngradcheck or gradgradcheck failed while testing batched gradient "
                  "computation: backward for the same inputs and grad_output (row ",
                  b,
                  " of the batch) gave different gradients on a rebuilt graph (mutagrad has no "
                  "vmap; the batch is computed by a loop).\n\nGot:\n",
                  values_str(g), "\n\nExpected:\n", values_str(e))};
        }
      }
    }
  }

  void check_zero_grad_outputs() const {
    VariableList roots, gos;
    for (size_t o : diff_outputs_) {
      roots.push_back(outputs_[o]);
      gos.push_back(zeros_like(outputs_[o]));
    }
    if (roots.empty()) return;
    const VariableList grads = run_backward(roots, gos, wrt_, /*keep_graph=*/true,
                                            /*create_graph=*/false, /*accumulate_grad=*/false);
    for (size_t n = 0; n < wrt_.size(); ++n) {
      if (!grads[n].defined()) continue;
      for (double d : flat_values(grads[n])) {
        if (d != 0) throw CheckFailed{"backward not multiplied by grad_output"};
      }
      if (grads[n].dtype() != wrt_[n].dtype() || grads[n].device() != wrt_[n].device()) {
        throw CheckFailed{"grad is incorrect type"};
      }
      if (grads[n].sizes() != wrt_[n].sizes()) throw CheckFailed{"grad is incorrect size"};
    }
  }

  // The all-undefined case. mutagrad's engine runs no node whose gradients are all undefined;
  // torch's runs them all: built-in nodes give undefined gradients, custom Functions get zeros
  // (or None without materialize_grads). This walks the nodes the undefined gradients reach,
  // through built-in nodes, applying each custom Function node once with undefined gradients;
  // a defined (zero) gradient it returns is ordinary input for the engine's nodes beyond.
  void apply_undefined_gradients(const VariableList& outputs,
                                 const std::vector<size_t>& diff) const {
    std::vector<Node*> stack, seen;
    auto push = [&](Node* node) {
      if (node == nullptr || std::find(seen.begin(), seen.end(), node) != seen.end()) return;
      seen.push_back(node);
      stack.push_back(node);
    };
    for (size_t o : diff) push(outputs[o].grad_fn().get());
    NoGradGuard no_grad;
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      auto* custom = dynamic_cast<CustomFunctionNode*>(node);
      if (custom == nullptr) {
        for (const Edge& edge : node->next_edges()) push(edge.function.get());
        continue;
      }
      const VariableList results = custom->apply(VariableList(custom->num_inputs()));
      for (size_t i = 0; i < results.size() && i < custom->num_outputs(); ++i) {
        if (!results[i].defined()) {
          push(custom->next_edge(i).function.get());
          continue;
        }
        for (double d : flat_values(results[i])) {
          if (d != 0) {
            throw CheckFailed{undefined_not_zero_message(
                " (mutagrad's rule: a backward receiving an undefined gradient (None in Python) "
                "treats it as zeros)")};
          }
        }
      }
    }
  }

  // Input gradients from backward through fn's outputs where `undefined[w]` marks the outputs
  // whose gradient is undefined (the others get zeros).
  void check_undefined_case(const std::vector<bool>& undefined) const {
    static const char* const kNote =
        " (mutagrad's rule: a backward receiving an undefined gradient (None in Python) treats "
        "it as zeros)";
    VariableList outputs;
    {
      EnableGradGuard grad_on;
      outputs = fn_(inputs_);
    }
    const std::vector<size_t> diff = differentiable_outputs(outputs);
    VariableList grads(wrt_.size());
    try {
      bool all_undefined = true;
      for (size_t w = 0; w < diff.size(); ++w) all_undefined = all_undefined && undefined[w];
      if (all_undefined) {
        apply_undefined_gradients(outputs, diff);
        return;
      }
      std::vector<Edge> roots;
      VariableList root_grads;
      for (size_t w = 0; w < diff.size(); ++w) {
        roots.push_back(gradient_edge(outputs[diff[w]]));
        root_grads.push_back(undefined[w] ? Tensor() : zeros_like(outputs[diff[w]]));
      }
      std::vector<Edge> wanted;
      for (const Tensor& x : wrt_) wanted.push_back(gradient_edge(x));
      grads = execute(roots, std::move(root_grads), /*keep_graph=*/false, /*create_graph=*/false,
                      /*accumulate_grad=*/false, wanted);
    } catch (const std::exception& e) {
      const bool failure = dynamic_cast<const Error*>(&e) != nullptr ||
                           (options_.is_backward_failure && options_.is_backward_failure(e));
      if (!failure) throw;
      throw CheckFailed{str("Expected backward function to handle undefined output grads", kNote,
                            "; backward raised: ", e.what(),
                            "\n(check_undefined_grad=False skips this check)")};
    }
    for (const Tensor& g : grads) {
      if (!g.defined()) continue;
      for (double d : flat_values(g)) {
        if (d != 0) throw CheckFailed{undefined_not_zero_message(kNote)};
      }
    }
  }

  static std::string undefined_not_zero_message(const char* note) {
    return str(
        "Expected all input grads to be undefined or zero when all output grads are undefined "
        "or zero",
        note, "\n(check_undefined_grad=False skips this check)");
  }

  void check_undefined() const {
    if (diff_outputs_.empty()) return;
    check_undefined_case(std::vector<bool>(diff_outputs_.size(), true));
    if (diff_outputs_.size() < 2) return;
    for (size_t w = 0; w < diff_outputs_.size(); ++w) {
      std::vector<bool> undefined(diff_outputs_.size(), false);
      undefined[w] = true;
      check_undefined_case(undefined);
    }
  }

  const TensorFunction& fn_;
  const VariableList& inputs_;
  const GradcheckOptions& options_;
  std::vector<size_t> diff_inputs_;
  VariableList wrt_;
  VariableList outputs_;
  std::vector<size_t> diff_outputs_;
};

}  // namespace

GradcheckResult gradcheck(const TensorFunction& fn, const VariableList& inputs,
                          const GradcheckOptions& options) {
  EnableGradGuard grad_on;
  Checker checker(fn, inputs, options);
  try {
    checker.run();
  } catch (const CheckFailed& failed) {
    return GradcheckResult(false, failed.report);
  }
  return GradcheckResult(true, "");
}

GradcheckResult gradgradcheck(const TensorFunction& fn, const VariableList& inputs,
                              const GradcheckOptions& options) {
  return gradgradcheck(fn, inputs, VariableList{}, options);
}

GradcheckResult gradgradcheck(const TensorFunction& fn, const VariableList& inputs,
                              const VariableList& given_grad_outputs,
                              const GradcheckOptions& options) {
  EnableGradGuard grad_on;
  VariableList grad_outputs = given_grad_outputs;
  if (grad_outputs.empty()) {
    const VariableList outputs = fn(inputs);
    Generator gen(options.seed);
    for (size_t o : differentiable_outputs(outputs)) {
      const Tensor& out = outputs[o];
      Tensor v;
      if (options.gen_non_contig_grad_outputs && out.dim() > 0 && out.numel() > 1) {
        // Every other element of a buffer twice as long in the last dimension.
        std::vector<int64_t> doubled(out.sizes().begin(), out.sizes().end());
        doubled.back() *= 2;
        v = native::slice(randn(doubled, gen, TensorOptions(kFloat64)), -1, 0, std::nullopt, 2);
      } else {
        v = randn(out.sizes(), gen, TensorOptions(kFloat64));
      }
      grad_outputs.push_back(native::to(v, out.device()).requires_grad_());
    }
  }
  std::vector<size_t> diff_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) diff_inputs.push_back(i);
  }
  const size_t n_inputs = inputs.size();
  const size_t n_grads = grad_outputs.size();
  // (inputs..., v...) -> the first-order gradients, kept differentiable.
  TensorFunction first_order = [fn, diff_inputs, n_inputs, n_grads](const VariableList& all) {
    EnableGradGuard grad_on;  // also during gradcheck's numeric evaluations
    VariableList in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_inputs));
    VariableList out = fn(in);
    VariableList roots, gos, wrt;
    for (size_t o : differentiable_outputs(out)) roots.push_back(out[o]);
    if (roots.size() != n_grads) {
      throw ValueError(str("gradgradcheck(): got ", n_grads, " grad_outputs for ", roots.size(),
                           " outputs that require grad; pass one per such output"));
    }
    gos.assign(all.begin() + static_cast<std::ptrdiff_t>(n_inputs), all.end());
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
