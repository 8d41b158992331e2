// Raw reductions: dim validation, output dtype and shape, then the device's backend.
// See tensor/native/reduce.h.
#include "tensor/native/reduce.h"

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

// A tensor over `t`'s storage with new contiguous geometry (t must be contiguous).
Tensor reshape_contiguous(const Tensor& t, IntArrayRef sizes) {
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector(sizes), contiguous_strides(sizes),
                                        t.storage_offset(), t.dtype(), t.version_counter()));
}

ScalarType reduce_dtype(ReduceOp op, ScalarType in) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd:
      return is_integral(in, /*include_bool=*/true) ? kInt64 : in;
    case ReduceOp::kMean:
      if (!is_floating_point(in)) {
        throw DTypeError(
            str("mean(): could not infer output dtype. Input dtype must be either a "
                "floating point or complex dtype. Got: ",
                legacy_type_name(in), "; convert with .to(kFloat32) first"));
      }
      return in;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      return in;
  }
  return in;
}

}  // namespace

Tensor scan(ReduceOp op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const char* name = op == ReduceOp::kProd ? "cumprod" : "cumsum";
  MG_INTERNAL_ASSERT(op == ReduceOp::kSum || op == ReduceOp::kProd, name, ": not a scan op");
  const int64_t d = wrap_dim(dim, self.dim(), name);
  const ScalarType out_dtype =
      dtype.value_or(is_floating_point(self.dtype()) ? self.dtype() : kInt64);
  if (self.dim() == 0) return clone(to(self, out_dtype));
  Tensor in = to(self, opmath_dtype(out_dtype));  // Note [Reduced dtypes]
  Tensor out = empty(self.sizes(), TensorOptions(out_dtype).device(self.device()));
  if (out.numel() == 0) return out;
  OpmathOutput k(out);
  backend_for(self.device()).scan(op, k.get(), in, d);
  k.finish();
  return out;
}

Tensor reduce(ReduceOp op, const Tensor& self, IntArrayRef dims, bool keepdim) {
  const char* name = reduce_op_name(op);
  const int64_t nd = self.dim();
  // The per-dim flags borrow this thread's spare vector and give it back at the end, so a tiny
  // reduction takes nothing from the heap (Note [Small-object pool]); a nested call or one that
  // threw leaves the spare empty, and the next call allocates once.
  thread_local std::vector<bool> spare;
  std::vector<bool> reduce_dim = std::move(spare);
  reduce_dim.assign(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd, name);
    if (nd == 0) continue;
    if (reduce_dim[w]) {
      throw ValueError(str(name, "(): dim ", w, " appears multiple times in the list of dims ",
                           dims, "; list each dim once"));
    }
    reduce_dim[w] = true;
  }
  ScalarType dtype = reduce_dtype(op, self.dtype());
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    if (dims.empty() && self.numel() == 0) {
      throw IndexError(str(name,
                           "(): Expected reduction dim to be specified for input.numel() == "
                           "0. Specify the reduction dim with the 'dim' argument."));
    }
    for (int64_t d = 0; d < nd; ++d) {
      if (reduce_dim[d] && self.sizes()[d] == 0) {
        throw IndexError(str(name, "(): Expected reduction dim ", d,
                             " to have non-zero size; the tensor has shape ", self.sizes()));
      }
    }
  }
  DimVector keep_sizes, out_sizes;
  for (int64_t d = 0; d < nd; ++d) {
    keep_sizes.push_back(reduce_dim[d] ? 1 : self.sizes()[d]);
    if (!reduce_dim[d]) out_sizes.push_back(self.sizes()[d]);
  }
  Tensor out = empty(keepdim ? keep_sizes : out_sizes, TensorOptions(dtype).device(self.device()));
  if (out.numel() == 0) {
    spare = std::move(reduce_dim);
    return out;
  }
  Tensor out_keep = keepdim ? out : reshape_contiguous(out, keep_sizes);
  OpmathOutput k(out_keep);  // Note [Reduced dtypes]
  backend_for(self.device()).reduce(op, k.get(), to_opmath(self), reduce_dim);
  k.finish();
  spare = std::move(reduce_dim);
  return out;
}

namespace {

// argmax of `values`, validated and reported as `op` on `self` (argmin passes the
// order-reversed values).
Tensor arg_extremum(const Tensor& self, const Tensor& values, std::optional<int64_t> dim,
                    bool keepdim, const char* op) {
  if (self.dtype() == kBool) {
    throw DTypeError(str(op, "(): \"", op,
                         "_cpu\" not implemented for 'Bool'; convert the tensor to an "
                         "integer or floating dtype first"));
  }
  TensorOptions options = TensorOptions(kInt64).device(self.device());
  if (!dim) {
    if (self.numel() == 0) {
      throw IndexError(
          str(op, "(): Expected reduction dim to be specified for input.numel() == 0."));
    }
    Tensor flat = reshape_contiguous(contiguous(to_opmath(values)), {self.numel()});
    Tensor out =
        empty(keepdim ? DimVector(static_cast<size_t>(self.dim()), 1) : DimVector(), options);
    backend_for(self.device()).argmax(reshape_contiguous(out, {1}), flat, 0);
    return out;
  }
  const int64_t nd = self.dim();
  const int64_t d = wrap_dim(*dim, nd, op);
  if (nd == 0) {
    Tensor out = empty({}, options);
    fill_(out, 0);
    return out;
  }
  if (self.sizes()[d] == 0) {
    throw IndexError(str(op, "(): Expected reduction dim ", d,
                         " to have non-zero size; the tensor has shape ", self.sizes()));
  }
  DimVector keep_sizes(self.sizes()), out_sizes(self.sizes());
  keep_sizes[d] = 1;
  out_sizes.erase(static_cast<size_t>(d));
  Tensor out = empty(keepdim ? keep_sizes : out_sizes, options);
  if (out.numel() == 0) return out;
  backend_for(self.device())
      .argmax(keepdim ? out : reshape_contiguous(out, keep_sizes), to_opmath(values), d);
  return out;
}

}  // namespace

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extremum(self, self, dim, keepdim, "argmax");
}

Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  // The first minimum is the first maximum of the order-reversed values: -x for floats,
  // -1 - x for integers (no overflow at the minimum).
  if (self.dtype() == kBool) return arg_extremum(self, self, dim, keepdim, "argmin");
  Tensor reversed =
      self.is_floating_point()
          ? unary(UnaryOp::kNeg, self)
          : binary(BinaryOp::kSub, wrap_scalar(-1, self.dtype(), self.device()), self);
  return arg_extremum(self, reversed, dim, keepdim, "argmin");
}

}  // namespace mutagrad::native
