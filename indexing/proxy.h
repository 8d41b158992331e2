// TensorIndexProxy: what x[{...}] returns, so that it reads and writes like Python's x[...].
//
//   Tensor y = x[{Slice(), 0}];   // x.index({Slice(), 0})
//   x[{1, 2}] = 3.0;             // x.set_item_({1, 2}, 3.0): the fast single-element path
//   x[{mask}] = other;           // x.set_item_({mask}, other)
//
// The proxy refers to the index list of the expression it was made in, so it must be used in
// that expression: its members work on an rvalue only (`auto p = x[{0}]; p = 1;` does not
// compile). Writes record the caller's file:line, like the in-place ops.
#pragma once

#include <type_traits>
#include <utility>

#include "indexing/tensor_index.h"
#include "tensor/tensor.h"

namespace mutagrad::indexing {

// A value with the call site of the expression that converts it (taken by the converting
// constructor's default argument, so it names the user's line).
template <typename V>
struct ValueAt {
  template <typename U, std::enable_if_t<std::is_constructible_v<V, U&&>, int> = 0>
  ValueAt(U&& v, CallSite s = CallSite::current())  // NOLINT: implicit by design
      : value(std::forward<U>(v)), site(s) {}
  V value;
  CallSite site;
};

class TensorIndexProxy {
 public:
  TensorIndexProxy(Tensor* self, std::initializer_list<TensorIndex> indices)
      : self_(self), indices_(indices.begin(), indices.size()) {}
  TensorIndexProxy(const TensorIndexProxy&) = delete;
  // Lvalue-qualified so that `x[{0}] = y[{1}]` writes (through ValueAt<Tensor>) instead.
  TensorIndexProxy& operator=(const TensorIndexProxy&) & = delete;

  // x[{...}] = tensor (or another proxy's result) / scalar.
  TensorIndexProxy&& operator=(ValueAt<Tensor> v) &&;
  TensorIndexProxy&& operator=(ValueAt<Scalar> v) &&;

  // Tensor y = x[{...}];
  operator Tensor() && { return get(); }  // NOLINT: implicit by design
  Tensor get() const;

 private:
  Tensor* self_;
  ArrayRef<TensorIndex> indices_;
};

}  // namespace mutagrad::indexing
