// The in-place scalar fast path: see scalar_inplace.h.
#include "tensor/native/scalar_inplace.h"

#include "tensor/native/copy.h"
#include "tensor/native/fma.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"

namespace mutagrad {

void Backend::binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value) {
  const Tensor v = native::wrap_scalar(value, out.dtype(), out.device(), binary_op_name(op));
  binary(op, out, out, out.dim() == 0 ? v : native::expand(v, out.sizes()));
}

void Backend::addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2, double value) {
  const Tensor scaled = native::binary(BinaryOp::kMul, t1, value);
  binary(BinaryOp::kAdd, out, out, native::binary(BinaryOp::kDiv, scaled, t2));
}

namespace native {

bool is_addcmul_fast(const Tensor& self, const Tensor& t1, const Tensor& t2) {
  return is_axpy_fast(self, t1) && is_axpy_fast(self, t2);
}

namespace {

// The checks of an in-place fast-path write (`value` fits self's dtype, no internal overlap),
// then the bump (when `bump` is not null): whether there is anything to write.
bool begin_write(const Tensor& self, const Scalar& value, const char* op,
                 const MutationSite* bump) {
  const char* name = bump != nullptr && bump->op != nullptr ? bump->op : op;
  check_scalar_fits(value, self.dtype(), name);
  assert_no_internal_overlap(self, name);
  if (bump != nullptr)
    self.version_counter().bump(*bump, self.unsafe_impl());  // every check passed
  return self.numel() > 0;
}

}  // namespace

void fma_inplace(FmaOp op, const Tensor& self, const Tensor& b, const Tensor& c, double value,
                 const MutationSite* bump) {
  MG_INTERNAL_ASSERT(c.defined() ? is_addcmul_fast(self, b, c) : is_axpy_fast(self, b),
                     fma_op_name(op), ": not a fused-path write");
  if (begin_write(self, Scalar(value), fma_op_name(op), bump))
    backend_for(self.device()).fma(op, self, self, b, c, value);
}

void addcdiv_inplace(const Tensor& self, const Tensor& t1, const Tensor& t2, double value,
                     const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_addcmul_fast(self, t1, t2), "addcdiv_inplace: not a fused-path write");
  if (begin_write(self, Scalar(value), "addcdiv_", bump))
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

void binary_scalar_inplace(BinaryOp op, const Tensor& self, const Scalar& value,
                           const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_scalar_inplace_fast(op, self, value),
                     "binary_scalar_inplace: ", binary_op_name(op), " of ",
                     dtype_name(self.dtype()), " is not a fast-path op");
  if (begin_write(self, value, binary_op_name(op), bump))
    backend_for(self.device()).binary_scalar_inplace(op, self, value);
}

}  // namespace native
}  // namespace mutagrad
