// Internal: the nodes of the element-wise families, for the in-place ops of inplace_ops.cc
// (mul_ records the MulBackward0 that mul records). Each factory sets the next edges from the
// given operands (call it before the write) and the saved state; the caller records history.
//
//   auto node = autograd::make_binary_node(BinaryOp::kMul, self, other, 1, self_before);
//   ... bump, write ...
//   autograd::rebase_history(self, node);
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "autograd/node.h"
#include "tensor/backend.h"

namespace mutagrad::autograd {

// NegBackward0, ExpBackward0, ..., ClampBackward1 for `op` applied to `self`. `self_value`:
// the input's value (a clone taken before an in-place write) for nodes that save it.
std::shared_ptr<Node> make_unary_node(UnaryOp op, const Tensor& self, const UnaryArgs& args,
                                      const Tensor& self_value);
// Whether the node of `op` saves its result (then call save_unary_result after history).
bool unary_saves_result(UnaryOp op);
void save_unary_result(Node& node, const Tensor& result);

// Add/Sub/Mul/Div/PowBackward0/1 for self op other (alpha for add/sub). `self_value`: self's value
// before the write (used by mul and div for other's gradient); `other_value`: what to save for
// other (other itself, or for an in-place op whose operand aliases self, a detached alias: it
// is stale after the write anyway, and holding the alias would be a reference cycle).
std::shared_ptr<Node> make_binary_node(BinaryOp op, const Tensor& self, const Tensor& other,
                                       const Scalar& alpha, const Tensor& self_value,
                                       const Tensor& other_value);
// div's rounding_mode: nullopt (true division: nullopt), "trunc" or "floor"; anything else is
// PyTorch's ValueError-kind error.
std::optional<BinaryOp> rounding_op(std::optional<std::string_view> mode);
// Whether `op` has a gradient (arithmetic; not the bit ops or comparisons), and whether its node
// needs self's value (an in-place op clones self before writing when so).
bool binary_is_differentiable(BinaryOp op);
bool binary_node_saves_self(BinaryOp op, bool other_requires_grad);
// Whether the node of a unary op saves its input (an in-place op then clones it first).
bool unary_saves_self(UnaryOp op);
// PowBackward1 of pow_ saves its result after the write: call after rebase_history.
void save_binary_result(Node& node, const Tensor& result);
// Add/Sub/Mul/DivBackward1 for self op scalar.
std::shared_ptr<Node> make_binary_scalar_node(BinaryOp op, const Tensor& self, const Scalar& other);

// Names t's ClampBackward1 (if that is its grad_fn) ClampMinBackward0 / ClampMaxBackward0.
void name_clamp_by_side(const Tensor& t);
// polygamma_ records PolygammaBackward1 (torch's node of the in-place form) on its tensor.
void name_polygamma_in_place(const Tensor& t);

// Forward mode: the tangent of self op other given the operands' tangents (either undefined),
// from the formulas beside the nodes' (AddBackward0::jvp, MulBackward0::jvp, ...). An op
// without one raises forward_ad::ForwardADNotImplementedError when a tangent is given.
Tensor binary_tangent(BinaryOp op, const Tensor& self, const Tensor& other, const Scalar& alpha,
                      const Tensor& result, const Tensor& ts, const Tensor& to);
Tensor binary_scalar_tangent(BinaryOp op, const Tensor& self, const Scalar& other,
                             const Tensor& ts);
// Note [Element-wise tangents] in unary_ops.cc. `result`: op(self).
Tensor unary_tangent(UnaryOp op, const Tensor& self, const UnaryArgs& args, const Tensor& result,
                     const Tensor& tangent);

// MaskedFillBackward0 (value undefined) or MaskedFillBackward1 (0-dim tensor value).
std::shared_ptr<Node> make_masked_fill_node(const Tensor& self, const Tensor& mask,
                                            const Tensor& value);

}  // namespace mutagrad::autograd
