// out= forms (out_ops.h): write_outs' checks, resize and tracked copy, and the *_out functions.
#include "autograd/ops/out_ops.h"

#include <iostream>
#include <mutex>
#include <string>
#include <unordered_set>

#include "autograd/errors.h"
#include "autograd/ops.h"
#include "autograd/ops/index_family_ops.h"
#include "autograd/ops/inplace_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"

namespace mutagrad::autograd {
namespace {

// "<op>_out", kept for the process: a MutationSite's op outlives the call (the version
// counter's site history).
const char* out_op_name(const char* op) {
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return names->emplace(str(op, "_out")).first->c_str();
}

std::string shape_text(IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += str(i == 0 ? "" : ", ", sizes[i]);
  return s + "]";
}

// Note [Resizing an out]: torch resizes an out's storage in place, so every alias of it (a
// view's base, a detached twin) sees the new geometry's bytes. mutagrad gives the out a new
// storage instead (TensorImpl::set_data: same tensor, version counter and autograd metadata),
// which is only the same thing when nothing else shares the old one. So an out whose shape
// must change has to be a tensor that owns its storage alone: not a view, no other tensor on
// the same storage, and not memory wrapped from elsewhere (a NumPy array would stop seeing the
// tensor; torch refuses to grow such a storage). Otherwise ShapeError, before anything changes.
void check_resizable(const char* op, const Tensor& out, IntArrayRef sizes, size_t position) {
  const char* why = out.is_view() ? "is a view of another tensor"
                    : out.unsafe_impl()->storage().use_count() > 1
                        ? "shares its storage with another tensor"
                    : !out.unsafe_impl()->storage().is_resizable()
                        ? "wraps memory owned elsewhere (from_numpy, from_blob)"
                        : nullptr;
  if (why == nullptr) return;
  throw ShapeError(str(op, "(): out", position == 0 ? "" : str(" ", position), " of shape ",
                       shape_text(out.sizes()), " must be resized to the result's shape ",
                       shape_text(sizes), ", but it ", why,
                       ", and mutagrad resizes only a tensor that owns its storage alone; pass "
                       "an out of shape ",
                       shape_text(sizes), " or a fresh one (mutagrad.empty(0))"));
}

void check_write(const char* op, const OutWrite& w, size_t position) {
  if (!w.out.defined() || !w.result.defined()) {
    throw ValueError(str(op, "(): out= needs a defined tensor for every output"));
  }
  const Tensor& out = w.out;
  if (w.result.requires_grad() || out.requires_grad()) {
    throw AutogradError(str(op, kOutRequiresGradMessage));
  }
  if (out.device() != w.result.device()) {
    throw DeviceError(str(op, "(): out is on ", out.device(), " but the result is on ",
                          w.result.device(), "; pass an out on ", w.result.device()));
  }
  const ScalarType from = w.result.dtype();
  if (w.dtype == OutDType::kExact && from != out.dtype()) {
    throw DTypeError(str(op, "(): expected out tensor to have dtype ", legacy_type_name(from),
                         ", but got ", legacy_type_name(out.dtype()),
                         " instead; pass an out of that dtype"));
  }
  if (!can_cast(from, out.dtype())) {
    throw DTypeError(str("result type ", legacy_type_name(from),
                         " can't be cast to the desired output type ",
                         legacy_type_name(out.dtype()), " (", op,
                         "(), out=); pass an out of a dtype the result casts to"));
  }
  if (out.sizes() != w.result.sizes()) {
    check_resizable(op, out, w.result.sizes(), position);
  } else {
    native::assert_no_internal_overlap(out, op);
  }
}

}  // namespace

void warn_to_stderr(const std::string& message) { std::cerr << "Warning: " << message << "\n"; }

void write_outs(const char* op, const std::vector<OutWrite>& writes, CallSite site,
                const OutWarning& warn) {
  for (size_t i = 0; i < writes.size(); ++i) check_write(op, writes[i], writes.size() > 1 ? i : 0);
  for (size_t i = 0; i < writes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (writes[i].out.unsafe_impl() == writes[j].out.unsafe_impl()) {
        throw ValueError(str(op, "(): the same tensor is passed as out ", j, " and out ", i,
                             "; pass a different tensor for each output"));
      }
    }
  }
  for (const OutWrite& w : writes) {
    if (w.out.numel() != 0 && w.out.sizes() != w.result.sizes()) {
      warn(str("An output with one or more elements was resized since it had shape ",
               shape_text(w.out.sizes()), ", which does not match the required output shape ",
               shape_text(w.result.sizes()),
               ". This behavior is deprecated, and in a future PyTorch release outputs will not "
               "be resized unless they have zero elements. You can explicitly reuse an out "
               "tensor t by resizing it, inplace, to zero elements with t.resize_(0)."));
    }
  }
  const MutationSite mutation{out_op_name(op), site.file, site.line};
  for (const OutWrite& w : writes) {
    TensorImpl* impl = w.out.unsafe_impl();
    const bool resize = w.out.sizes() != w.result.sizes();
    // The old geometry, to put back if the write fails after the resize.
    const TensorImpl before(impl->storage(), DimVector(impl->sizes()), DimVector(impl->strides()),
                            impl->storage_offset(), impl->dtype(), VersionCounter());
    if (resize) {
      const Tensor fresh =
          empty(w.result.sizes(), TensorOptions(w.out.dtype()).device(w.out.device()));
      impl->set_data(*fresh.unsafe_impl());
    }
    try {
      copy_(w.out, w.result, mutation);
    } catch (...) {
      if (resize) impl->set_data(before);
      throw;
    }
  }
}

const Tensor& write_out(const char* op, const Tensor& out, const Tensor& result, CallSite site,
                        OutDType dtype, const OutWarning& warn) {
  write_outs(op, {OutWrite{out, result, dtype}}, site, warn);
  return out;
}

}  // namespace mutagrad::autograd

namespace mutagrad {

using autograd::OutDType;
using autograd::write_out;
using autograd::write_outs;

const Tensor& add_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      const Scalar& alpha, CallSite site) {
  return write_out("add", out, add(self, other, alpha), site);
}
const Tensor& sub_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      const Scalar& alpha, CallSite site) {
  return write_out("sub", out, sub(self, other, alpha), site);
}
const Tensor& mul_out(const Tensor& out, const Tensor& self, const Tensor& other, CallSite site) {
  return write_out("mul", out, mul(self, other), site);
}
const Tensor& div_out(const Tensor& out, const Tensor& self, const Tensor& other, CallSite site) {
  return write_out("div", out, div(self, other), site);
}
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Tensor& exponent,
                      CallSite site) {
  return write_out("pow", out, pow(self, exponent), site);
}
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Scalar& exponent,
                      CallSite site) {
  return write_out("pow", out, pow(self, exponent), site);
}

#define MUTAGRAD_UNARY_OUT(name)                                                   \
  const Tensor& name##_out(const Tensor& out, const Tensor& self, CallSite site) { \
    return write_out(#name, out, name(self), site);                                \
  }
MUTAGRAD_UNARY_OUT(neg)
MUTAGRAD_UNARY_OUT(abs)
MUTAGRAD_UNARY_OUT(exp)
MUTAGRAD_UNARY_OUT(log)
MUTAGRAD_UNARY_OUT(sqrt)
MUTAGRAD_UNARY_OUT(sin)
MUTAGRAD_UNARY_OUT(cos)
MUTAGRAD_UNARY_OUT(tanh)
MUTAGRAD_UNARY_OUT(sigmoid)
#undef MUTAGRAD_UNARY_OUT

const Tensor& clamp_out(const Tensor& out, const Tensor& self, std::optional<Scalar> min,
                        std::optional<Scalar> max, CallSite site) {
  return write_out("clamp", out, clamp(self, min, max), site);
}
const Tensor& where_out(const Tensor& out, const Tensor& condition, const Tensor& self,
                        const Tensor& other, CallSite site) {
  return write_out("where", out, where(condition, self, other), site);
}

const Tensor& sum_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim,
                      CallSite site) {
  return write_out("sum", out, sum(self, dims, keepdim), site);
}
const Tensor& mean_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim,
                       CallSite site) {
  return write_out("mean", out, mean(self, dims, keepdim), site);
}
const Tensor& prod_out(const Tensor& out, const Tensor& self, int64_t dim, bool keepdim,
                       CallSite site) {
  return write_out("prod", out, prod(self, {dim}, keepdim), site);
}
const Tensor& amax_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim,
                       CallSite site) {
  return write_out("amax", out, amax(self, dims, keepdim), site);
}
const Tensor& amin_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim,
                       CallSite site) {
  return write_out("amin", out, amin(self, dims, keepdim), site);
}
const Tensor& argmax_out(const Tensor& out, const Tensor& self, std::optional<int64_t> dim,
                         bool keepdim, CallSite site) {
  return write_out("argmax", out, argmax(self, dim, keepdim), site, OutDType::kExact);
}
void max_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
             bool keepdim, CallSite site) {
  auto [v, i] = max_dim(self, dim, keepdim);
  write_outs("max", {{values, v}, {indices, i, OutDType::kExact}}, site);
}
void min_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
             bool keepdim, CallSite site) {
  auto [v, i] = min_dim(self, dim, keepdim);
  write_outs("min", {{values, v}, {indices, i, OutDType::kExact}}, site);
}

const Tensor& mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2, CallSite site) {
  return write_out("mm", out, mm(self, mat2), site, OutDType::kExact);
}
const Tensor& bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2, CallSite site) {
  return write_out("bmm", out, bmm(self, mat2), site, OutDType::kExact);
}
const Tensor& matmul_out(const Tensor& out, const Tensor& self, const Tensor& other,
                         CallSite site) {
  return write_out("matmul", out, matmul(self, other), site, OutDType::kExact);
}
const Tensor& addmm_out(const Tensor& out, const Tensor& self, const Tensor& mat1,
                        const Tensor& mat2, const Scalar& beta, const Scalar& alpha,
                        CallSite site) {
  return write_out("addmm", out, addmm(self, mat1, mat2, beta, alpha), site, OutDType::kExact);
}

const Tensor& cat_out(const Tensor& out, TensorList tensors, int64_t dim, CallSite site) {
  return write_out("cat", out, cat(tensors, dim), site);
}
const Tensor& stack_out(const Tensor& out, TensorList tensors, int64_t dim, CallSite site) {
  return write_out("stack", out, stack(tensors, dim), site);
}
void sort_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
              bool descending, CallSite site) {
  auto [v, i] = sort(self, dim, descending);
  write_outs("sort", {{values, v}, {indices, i, OutDType::kExact}}, site);
}
void topk_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
              int64_t dim, bool largest, bool sorted, CallSite site) {
  auto [v, i] = topk(self, k, dim, largest, sorted);
  write_outs("topk", {{values, v}, {indices, i, OutDType::kExact}}, site);
}
const Tensor& index_select_out(const Tensor& out, const Tensor& self, int64_t dim,
                               const Tensor& index, CallSite site) {
  return write_out("index_select", out, autograd::index_select(self, dim, index), site,
                   OutDType::kExact);
}
const Tensor& gather_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                         CallSite site) {
  return write_out("gather", out, gather(self, dim, index), site, OutDType::kExact);
}

}  // namespace mutagrad
