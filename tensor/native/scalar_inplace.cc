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

namespace native {

void binary_scalar_inplace(BinaryOp op, const Tensor& self, const Scalar& value,
                           const MutationSite* bump) {
  MG_INTERNAL_ASSERT(is_scalar_inplace_fast(op, self, value),
                     "binary_scalar_inplace: ", binary_op_name(op), " of ",
                     dtype_name(self.dtype()), " is not a fast-path op");
  const char* name = bump != nullptr && bump->op != nullptr ? bump->op : binary_op_name(op);
  check_scalar_fits(value, self.dtype(), name);
  assert_no_internal_overlap(self, name);
  if (bump != nullptr) self.version_counter().bump(*bump);  // every check passed
  if (self.numel() == 0) return;
  backend_for(self.device()).binary_scalar_inplace(op, self, value);
}

}  // namespace native
}  // namespace mutagrad
