#include "autograd/functional.h"

#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/join_ops.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/factories.h"

namespace mutagrad::autograd {

VariableList grad(TensorList outputs, TensorList inputs, TensorList grad_outputs,
                  std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  VariableList grads =
      run_backward(outputs, grad_outputs, inputs, retain_graph.value_or(create_graph), create_graph,
                   /*accumulate=*/false);
  if (!allow_unused) {
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) {
        throw AutogradError(str("One of the differentiated Tensors (input ", i,
                                ") appears to not have been used in the graph. Set "
                                "allow_unused=True if this is the desired behavior."));
      }
    }
  }
  return grads;
}

namespace {

// Inputs as fresh leaves that require grad; with create_graph, differentiable aliases of the
// given tensors so that the result stays connected to them.
VariableList prepare_inputs(const VariableList& inputs, bool create_graph) {
  VariableList out;
  out.reserve(inputs.size());
  for (const Tensor& x : inputs) {
    if (create_graph && x.requires_grad()) {
      out.push_back(x.view(x.sizes()));
    } else {
      out.push_back(x.detach().requires_grad_());
    }
  }
  return out;
}

VariableList detach_unless(const VariableList& ts, bool create_graph) {
  if (create_graph) return ts;
  VariableList out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.defined() ? t.detach() : t);
  return out;
}

// PyTorch's _autograd_grad: outputs that do not require grad contribute nothing; inputs
// reached by nothing get zeros.
VariableList grad_or_zeros(const VariableList& outputs, const VariableList& inputs,
                           const VariableList& grad_outputs, bool create_graph) {
  VariableList outs, gos;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].defined() && outputs[i].requires_grad()) {
      outs.push_back(outputs[i]);
      gos.push_back(grad_outputs.empty() ? Tensor() : grad_outputs[i]);
    }
  }
  VariableList grads(inputs.size());
  if (!outs.empty()) {
    grads = run_backward(outs, gos, inputs, /*keep_graph=*/true, create_graph,
                         /*accumulate=*/false);
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) grads[i] = zeros_like(inputs[i]);
  }
  return grads;
}

void check_same_count(size_t got, size_t want, const char* what, const char* op) {
  if (got != want) {
    throw ValueError(str(op, "(): got ", got, " tensors in v but the function has ", want, " ",
                         what, "; pass one v per ",
                         what == std::string("inputs") ? "input" : "output"));
  }
}

Tensor scalar_output(const VariableList& outputs, const char* op) {
  if (outputs.size() != 1 || outputs[0].numel() != 1) {
    throw ValueError(str(op,
                         "(): the function must return a single Tensor with a single "
                         "element; got ",
                         outputs.size(), " outputs"));
  }
  return outputs[0];
}

}  // namespace

FunctionalResult vjp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph) {
  EnableGradGuard grad_on;
  VariableList x = prepare_inputs(inputs, create_graph);
  VariableList outputs = fn(x);
  check_same_count(v.size(), outputs.size(), "outputs", "vjp");
  VariableList result = grad_or_zeros(outputs, x, v, create_graph);
  return {detach_unless(outputs, create_graph), detach_unless(result, create_graph)};
}

FunctionalResult jvp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "jvp");
  return forward_jvp(fn, inputs, v, create_graph);
}

FunctionalResult jvp_by_double_vjp(const TensorFunction& fn, const VariableList& inputs,
                                   const VariableList& v, bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "jvp");
  EnableGradGuard grad_on;
  VariableList x = prepare_inputs(inputs, create_graph);
  VariableList outputs = fn(x);
  // g(u) = J^T u is linear in u; differentiating <g(u), v> by u gives J v.
  VariableList u;
  for (const Tensor& out : outputs) u.push_back(zeros_like(out).requires_grad_());
  VariableList g = grad_or_zeros(outputs, x, u, /*create_graph=*/true);
  VariableList result = grad_or_zeros(g, u, v, create_graph);
  return {detach_unless(outputs, create_graph), detach_unless(result, create_graph)};
}

FunctionalResult vhp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "vhp");
  EnableGradGuard grad_on;
  VariableList x = prepare_inputs(inputs, create_graph);
  VariableList outputs = fn(x);
  Tensor out = scalar_output(outputs, "vhp");
  VariableList jac = grad_or_zeros({out}, x, {}, /*create_graph=*/true);
  VariableList result = grad_or_zeros(jac, x, v, create_graph);
  return {detach_unless(outputs, create_graph), detach_unless(result, create_graph)};
}

// Note [hvp by forward-over-reverse]
// Without create_graph, H v is the tangent of the gradient (forward_over_reverse_hvp): one
// backward pass on dual inputs instead of the double vjp's three passes, with the same results
// (outputs detached, zeros for inputs fn does not use). With create_graph the double vjp stays:
// its H v is a graph of ordinary backward nodes, differentiable again like torch's.
FunctionalResult hvp(const TensorFunction& fn, const VariableList& inputs, const VariableList& v,
                     bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "hvp");
  if (create_graph) return hvp_by_double_vjp(fn, inputs, v, create_graph);
  return forward_over_reverse_hvp(fn, inputs, v, create_graph);
}

FunctionalResult hvp_by_double_vjp(const TensorFunction& fn, const VariableList& inputs,
                                   const VariableList& v, bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "hvp");
  EnableGradGuard grad_on;
  VariableList x = prepare_inputs(inputs, create_graph);
  VariableList outputs = fn(x);
  Tensor out = scalar_output(outputs, "hvp");
  VariableList jac = grad_or_zeros({out}, x, {}, /*create_graph=*/true);
  // Double vjp: u -> H^T u is linear in u; its vjp with v is H v.
  VariableList u;
  for (const Tensor& j : jac) u.push_back(zeros_like(j).requires_grad_());
  VariableList double_back = grad_or_zeros(jac, x, u, /*create_graph=*/true);
  VariableList result = grad_or_zeros(double_back, u, v, create_graph);
  return {detach_unless(outputs, create_graph), detach_unless(result, create_graph)};
}

namespace {

// The duals fn runs on. With create_graph, make_dual views of `xs` (the results stay connected
// to them); otherwise `xs` are fresh tensors no one else holds (new detaches) and get the
// tangents themselves: no view per input here and none per output in the two functions below
// (those views were a tenth of a small MLP's jvp).
VariableList make_duals(const VariableList& xs, const VariableList& v, bool create_graph,
                        int64_t level) {
  VariableList duals;
  duals.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (create_graph) {
      duals.push_back(forward_ad::make_dual(xs[i], v[i], level));
    } else {
      fwd::make_dual_in_place(xs[i], v[i], level);
      duals.push_back(xs[i]);
    }
  }
  return duals;
}

// The tangents at `level` (zeros where none): unpack_dual's with create_graph, else detached.
VariableList tangents_or_zeros(const VariableList& tensors, bool create_graph, int64_t level) {
  VariableList out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    Tensor tangent =
        create_graph ? forward_ad::unpack_dual(t, level).tangent : fwd::tangent(t, level);
    if (!tangent.defined()) tangent = zeros_like(t.detach());
    out.push_back(create_graph ? tangent : tangent.detach());
  }
  return out;
}

// The primals: unpack_dual's views with create_graph, else detaches (the same values).
VariableList primals_of(const VariableList& tensors, bool create_graph, int64_t level) {
  VariableList out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    out.push_back(create_graph ? forward_ad::unpack_dual(t, level).primal : t.detach());
  }
  return out;
}

VariableList detached(const VariableList& ts) {
  VariableList out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.detach());
  return out;
}

}  // namespace

FunctionalResult forward_jvp(const TensorFunction& fn, const VariableList& inputs,
                             const VariableList& v, bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "forward_jvp");
  forward_ad::dual_level level;
  const int64_t l = level.level();
  VariableList outputs =
      fn(make_duals(create_graph ? inputs : detached(inputs), v, create_graph, l));
  return {primals_of(outputs, create_graph, l), tangents_or_zeros(outputs, create_graph, l)};
}

FunctionalResult forward_over_reverse_hvp(const TensorFunction& fn, const VariableList& inputs,
                                          const VariableList& v, bool create_graph) {
  check_same_count(v.size(), inputs.size(), "inputs", "hvp");
  EnableGradGuard grad_on;
  forward_ad::dual_level level;
  const int64_t l = level.level();
  VariableList x = prepare_inputs(inputs, create_graph);
  VariableList duals = make_duals(x, v, create_graph, l);
  VariableList outputs = fn(duals);
  Tensor out = scalar_output(outputs, "hvp");
  VariableList g = grad_or_zeros({out}, x, {}, create_graph);
  return {primals_of(outputs, create_graph, l), tangents_or_zeros(g, create_graph, l)};
}

namespace {

// J[i][j] for outputs already computed from x.
std::vector<VariableList> jacobian_of(const VariableList& outputs, const VariableList& x,
                                      bool create_graph) {
  std::vector<VariableList> jac(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    std::vector<VariableList> rows(x.size());  // rows[j][k]: d out.flat[k] / d x[j]
    for (int64_t k = 0; k < out.numel(); ++k) {
      Tensor one_hot = zeros({out.numel()}, TensorOptions(out.dtype()).device(out.device()));
      one_hot.select(0, k).fill_(1);
      VariableList g = grad_or_zeros({out}, x, {one_hot.view(out.sizes())}, create_graph);
      for (size_t j = 0; j < x.size(); ++j) rows[j].push_back(g[j]);
    }
    for (size_t j = 0; j < x.size(); ++j) {
      DimVector shape(out.sizes());
      for (int64_t s : x[j].sizes()) shape.push_back(s);
      Tensor block = out.numel() == 0
                         ? zeros(shape, TensorOptions(x[j].dtype()).device(x[j].device()))
                         : stack(rows[j], 0).reshape(shape);
      jac[i].push_back(block);
    }
  }
  return jac;
}

}  // namespace

namespace {

// The one-hot tangents e_(j, k): zeros like every input, 1 at element k of input j.
VariableList one_hot_tangents(const VariableList& inputs, size_t j, int64_t k) {
  VariableList v;
  for (const Tensor& x : inputs)
    v.push_back(zeros(x.sizes(), TensorOptions(x.dtype()).device(x.device())));
  v[j].view({-1}).select(0, k).fill_(1);
  return v;
}

// Blocks [i][j] of shape lead[i].shape + inputs[j].shape from columns: cols[j][k][i], the
// derivative of block row i along element k of input j (of shape lead[i].shape).
std::vector<VariableList> from_columns(const std::vector<std::vector<VariableList>>& cols,
                                       const VariableList& lead, const VariableList& inputs) {
  std::vector<VariableList> out(lead.size());
  for (size_t i = 0; i < lead.size(); ++i) {
    for (size_t j = 0; j < inputs.size(); ++j) {
      DimVector shape(lead[i].sizes());
      for (int64_t s : inputs[j].sizes()) shape.push_back(s);
      if (cols[j].empty()) {
        out[i].push_back(zeros(shape, TensorOptions(lead[i].dtype()).device(lead[i].device())));
        continue;
      }
      VariableList column;
      for (const VariableList& c : cols[j]) column.push_back(c[i]);
      out[i].push_back(stack(column, lead[i].dim()).reshape(shape));
    }
  }
  return out;
}

}  // namespace

std::vector<VariableList> jacobian(const TensorFunction& fn, const VariableList& inputs,
                                   bool create_graph, JacobianStrategy strategy) {
  if (strategy == JacobianStrategy::kForwardMode) {
    // A forward-mode jvp per input element: column (j, k) of J is J e_(j, k).
    std::vector<std::vector<VariableList>> cols(inputs.size());
    VariableList outputs;
    for (size_t j = 0; j < inputs.size(); ++j) {
      for (int64_t k = 0; k < inputs[j].numel(); ++k) {
        FunctionalResult r = forward_jvp(fn, inputs, one_hot_tangents(inputs, j, k), create_graph);
        outputs = r.outputs;
        cols[j].push_back(std::move(r.result));
      }
    }
    if (outputs.empty() && !inputs.empty()) {  // no input element: fn's outputs for the shapes
      NoGradGuard no_grad;
      VariableList x;
      for (const Tensor& t : inputs) x.push_back(t.detach());
      outputs = fn(x);
    }
    return from_columns(cols, outputs, inputs);
  }
  EnableGradGuard grad_on;
  VariableList x = prepare_inputs(inputs, create_graph);
  VariableList outputs = fn(x);
  std::vector<VariableList> jac = jacobian_of(outputs, x, create_graph);
  for (VariableList& row : jac) row = detach_unless(row, create_graph);
  return jac;
}

std::vector<VariableList> hessian(const TensorFunction& fn, const VariableList& inputs,
                                  bool create_graph, JacobianStrategy outer_strategy) {
  if (outer_strategy == JacobianStrategy::kForwardMode) {
    // Forward-over-reverse: column (j, k) of H is H e_(j, k), the tangent of the gradient.
    std::vector<std::vector<VariableList>> cols(inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j) {
      for (int64_t k = 0; k < inputs[j].numel(); ++k) {
        cols[j].push_back(
            forward_over_reverse_hvp(fn, inputs, one_hot_tangents(inputs, j, k), create_graph)
                .result);
      }
    }
    return from_columns(cols, inputs, inputs);
  }
  EnableGradGuard grad_on;
  VariableList x = prepare_inputs(inputs, create_graph);
  Tensor out = scalar_output(fn(x), "hessian");
  VariableList gradient = grad_or_zeros({out}, x, {}, /*create_graph=*/true);
  std::vector<VariableList> hess = jacobian_of(gradient, x, create_graph);
  for (VariableList& row : hess) row = detach_unless(row, create_graph);
  return hess;
}

namespace {
TensorFunction lift(const UnaryTensorFunction& fn) {
  return [fn](const VariableList& x) { return fn(x[0]); };
}
std::pair<Tensor, Tensor> first(FunctionalResult r) {
  return {std::move(r.outputs[0]), std::move(r.result[0])};
}
}  // namespace

std::pair<Tensor, Tensor> vjp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph) {
  return first(vjp(lift(fn), VariableList{x}, VariableList{v}, create_graph));
}
std::pair<Tensor, Tensor> jvp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph) {
  return first(jvp(lift(fn), VariableList{x}, VariableList{v}, create_graph));
}
std::pair<Tensor, Tensor> vhp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph) {
  return first(vhp(lift(fn), VariableList{x}, VariableList{v}, create_graph));
}
std::pair<Tensor, Tensor> hvp(const UnaryTensorFunction& fn, const Tensor& x, const Tensor& v,
                              bool create_graph) {
  return first(hvp(lift(fn), VariableList{x}, VariableList{v}, create_graph));
}
Tensor jacobian(const UnaryTensorFunction& fn, const Tensor& x, bool create_graph) {
  return jacobian(lift(fn), VariableList{x}, create_graph)[0][0];
}
Tensor hessian(const UnaryTensorFunction& fn, const Tensor& x, bool create_graph) {
  return hessian(lift(fn), VariableList{x}, create_graph)[0][0];
}

}  // namespace mutagrad::autograd
