// AutogradError and the autograd error texts (named constants, as PyTorch's messages).
//
//   try {
//     loss.backward();
//   } catch (const autograd::AutogradError& e) {
//     // "one of the variables needed for gradient computation has been modified by an ..."
//   }
#pragma once

#include "tensor/error.h"

namespace mutagrad::autograd {

// A misuse of autograd: a stale saved tensor, a second backward through a freed graph, an
// in-place write that autograd cannot track. Python sees it as RuntimeError.
class AutogradError : public Error {
  using Error::Error;
};

inline constexpr const char* kBackwardTwiceMessage =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.";

inline constexpr const char* kLeafInplaceMessage =
    "a leaf Variable that requires grad is being used in an in-place operation.";

// torch 1.13's first sentences; the error adds the refused write (Note [A pack hook must not
// write its input] in autograd/saved_tensor_hooks.h).
inline constexpr const char* kPackHookInplaceMessage =
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook can not be modified by in-place operations as this can lead to unexpected "
    "side-effects.";

inline constexpr const char* kViewOfLeafInplaceMessage =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

}  // namespace mutagrad::autograd
