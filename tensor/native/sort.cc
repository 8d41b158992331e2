#include "tensor/native/sort.h"

#include "tensor/backend.h"
#include "tensor/dtype.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {

std::pair<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  const int64_t d = wrap_dim(dim, self.dim(), "sort");
  const TensorOptions index_options = TensorOptions(kInt64).device(self.device());
  if (self.dim() == 0) return {clone(self), zeros({}, index_options)};
  Tensor values = empty(self.sizes(), TensorOptions(self.dtype()).device(self.device()));
  Tensor indices = empty(self.sizes(), index_options);
  if (self.numel() == 0) return {values, indices};
  OpmathOutput k(values);  // Note [Reduced dtypes]: the conversions are exact both ways
  backend_for(self.device()).sort(k.get(), indices, to_opmath(self), d, descending);
  k.finish();
  return {values, indices};
}

Tensor searchsorted(const Tensor& sorted, const Tensor& values, bool out_int32, bool right) {
  check_same_device("searchsorted", sorted.device(), values.device());
  if (sorted.dim() == 0) {
    throw ValueError(
        "searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
        "boundaries tensor and input value tensor must match, but we got a 0-dim boundaries "
        "tensor; pass a 1-D sorted sequence");
  }
  bool leading_match = sorted.dim() == 1 || values.dim() == sorted.dim();
  for (int64_t d = 0; leading_match && sorted.dim() > 1 && d < sorted.dim() - 1; ++d) {
    leading_match = values.size(d) == sorted.size(d);
  }
  if (!leading_match) {
    throw ValueError(
        str("searchsorted(): boundaries tensor should be 1 dimension or the first "
            "N-1 dimensions of boundaries tensor and input value tensor must match, "
            "but we got boundaries tensor ",
            sorted.sizes(), " and input value tensor ", values.sizes()));
  }
  const ScalarType dtype = result_type(sorted, values);
  const Tensor s = to_compute(sorted, dtype);  // Note [Reduced dtypes]
  Tensor v = to_compute(values, dtype);
  if (v.dim() == 0) v = view(v, {1});
  const TensorOptions out_options = TensorOptions(out_int32 ? kInt32 : kInt64).device(v.device());
  Tensor out = empty(v.sizes(), out_options);
  if (out.numel() > 0) {
    // A 1-D sequence is shared by every value: leading dims of stride 0.
    Tensor seq = s;
    if (s.dim() == 1 && v.dim() > 1) {
      DimVector sizes(v.sizes());
      sizes.back() = s.size(0);
      for (int64_t k = 1; k < v.dim(); ++k) seq = unsqueeze(seq, 0);
      seq = expand(seq, sizes);
    }
    backend_for(v.device()).searchsorted(out, seq, v, right);
  }
  return values.dim() == 0 ? view(out, {}) : out;
}

}  // namespace mutagrad::native
