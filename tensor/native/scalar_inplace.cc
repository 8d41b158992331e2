// The in-place scalar fast path: see scalar_inplace.h.
#include "tensor/native/scalar_inplace.h"

#include "tensor/native/copy.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"

namespace mutagrad {

void Backend::binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value) {
  const Tensor v = native::wrap_scalar(value, out.dtype(), out.device(), binary_op_name(op));
  binary(op, out, out, out.dim() == 0 ? v : native::expand(v, out.sizes()));
}

void Backend::axpy_inplace(const Tensor& out, const Tensor& b, double alpha) {
  if (out.dtype() == kFloat32) {  // float alpha * b exact in double, the sum rounded once
    const Scalar a(static_cast<double>(static_cast<float>(alpha)));
    const Tensor product = native::binary(BinaryOp::kMul, native::to(b, kFloat64), a);
    copy(out, native::binary(BinaryOp::kAdd, native::to(out, kFloat64), product));
    return;
  }
  binary(BinaryOp::kAdd, out, out, native::binary(BinaryOp::kMul, b, Scalar(alpha)));
}

void Backend::addcmul_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2, double value) {
  const Tensor scaled = native::binary(BinaryOp::kMul, t1, value);
  if (out.dtype() == kFloat32) {  // the product and the sum in double: one rounding to float
    const Tensor product =
        native::binary(BinaryOp::kMul, native::to(scaled, kFloat64), native::to(t2, kFloat64));
    copy(out, native::binary(BinaryOp::kAdd, native::to(out, kFloat64), product));
    return;
  }
  binary(BinaryOp::kAdd, out, out, native::binary(BinaryOp::kMul, scaled, t2));
}

void Backend::addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2, double value) {
  const Tensor scaled = native::binary(BinaryOp::kMul, t1, value);
  binary(BinaryOp::kAdd, out, out, native::binary(BinaryOp::kDiv, scaled, t2));
}

namespace native {

bool is_addcmul_fast(const Tensor& self, const Tensor& t1, const Tensor& t2) {
  return is_axpy_fast(self, t1) && is_axpy_fast(self, t2);
}

void addcmul_inplace(const Tensor& self, const Tensor& t1, const Tensor& t2, double value,
                     const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_addcmul_fast(self, t1, t2), "addcmul_inplace: not a fused-path write");
  const char* name = bump != nullptr && bump->op != nullptr ? bump->op : "addcmul_";
  check_scalar_fits(Scalar(value), self.dtype(), name);
  assert_no_internal_overlap(self, name);
  if (bump != nullptr)
    self.version_counter().bump(*bump, self.unsafe_impl());  // every check passed
  if (self.numel() == 0) return;
  backend_for(self.device()).addcmul_inplace(self, t1, t2, value);
}

void addcdiv_inplace(const Tensor& self, const Tensor& t1, const Tensor& t2, double value,
                     const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_addcmul_fast(self, t1, t2), "addcdiv_inplace: not a fused-path write");
  const char* name = bump != nullptr && bump->op != nullptr ? bump->op : "addcdiv_";
  check_scalar_fits(Scalar(value), self.dtype(), name);
  assert_no_internal_overlap(self, name);
  if (bump != nullptr)
    self.version_counter().bump(*bump, self.unsafe_impl());  // every check passed
  if (self.numel() == 0) return;
  backend_for(self.device()).addcdiv_inplace(self, t1, t2, value);
}

bool is_axpy_fast(const Tensor& self, const Tensor& other) {
  const ScalarType t = self.dtype();
  if ((t != kFloat32 && t != kFloat64) || other.dtype() != t) return false;
  if (!other.sizes().equals(self.sizes()) || other.device() != self.device()) return false;
  if (!may_overlap(self, other)) return true;
  // The same elements (x.add_(x, alpha=2)): each is read before it is written.
  return other.unsafe_impl()->data() == self.unsafe_impl()->data() &&
         other.strides().equals(self.strides());
}

void axpy_inplace(const Tensor& self, const Tensor& other, double alpha, const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_axpy_fast(self, other), "axpy_inplace: not a fused-path write");
  const char* name = bump != nullptr && bump->op != nullptr ? bump->op : "add_";
  check_scalar_fits(Scalar(alpha), self.dtype(), name);
  assert_no_internal_overlap(self, name);
  if (bump != nullptr)
    self.version_counter().bump(*bump, self.unsafe_impl());  // every check passed
  if (self.numel() == 0) return;
  backend_for(self.device()).axpy_inplace(self, other, alpha);
}

void binary_scalar_inplace(BinaryOp op, const Tensor& self, const Scalar& value,
                           const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_scalar_inplace_fast(op, self, value),
                     "binary_scalar_inplace: ", binary_op_name(op), " of ",
                     dtype_name(self.dtype()), " is not a fast-path op");
  const char* name = bump != nullptr && bump->op != nullptr ? bump->op : binary_op_name(op);
  check_scalar_fits(value, self.dtype(), name);
  assert_no_internal_overlap(self, name);
  if (bump != nullptr)
    self.version_counter().bump(*bump, self.unsafe_impl());  // every check passed
  if (self.numel() == 0) return;
  backend_for(self.device()).binary_scalar_inplace(op, self, value);
}

}  // namespace native
}  // namespace mutagrad
