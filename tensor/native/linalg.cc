// Raw matmul: the 1-D cases, batch broadcasting and dtype checks, then the device's backend.
// See tensor/native/linalg.h.
#include "tensor/native/linalg.h"

#include <algorithm>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return Tensor(make_pooled<TensorImpl>(t.storage(), DimVector(sizes), DimVector(strides),
                                        t.storage_offset(), t.dtype(), t.version_counter()));
}

std::string matrix_str(IntArrayRef sizes) { return str(sizes[0], "x", sizes[1]); }

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) {
    throw ShapeError(str("matmul(): both arguments to matmul need to be at least 1D, but they are ",
                         a.dim(), "D and ", b.dim(), "D; use mul() for scalars"));
  }
  check_same_device("matmul", a.device(), b.device());
  ScalarType dtype = result_type(a, b);
  if (dtype == kBool) {
    throw DTypeError(
        "matmul(): \"addmm_impl_cpu_\" not implemented for 'Bool'; convert the "
        "tensors to an integer or floating dtype first");
  }
  // 1-D operands become matrices: a [k] -> [1, k], b [k] -> [k, 1].
  Tensor am =
      a.dim() == 1 ? restride(a, {1, a.size(0)}, {a.size(0) * a.stride(0), a.stride(0)}) : a;
  Tensor bm = b.dim() == 1 ? restride(b, {b.size(0), 1}, {b.stride(0), 1}) : b;
  const int64_t m = am.size(-2), k = am.size(-1), k2 = bm.size(-2), n = bm.size(-1);
  if (k != k2) {
    if (a.dim() == 1 && b.dim() == 1) {
      throw ShapeError(str("matmul(): inconsistent tensor size, expected tensor [", a.size(0),
                           "] and src [", b.size(0),
                           "] to have the same number of elements, but got ", a.size(0), " and ",
                           b.size(0), " elements respectively"));
    }
    throw ShapeError(str("matmul(): mat1 and mat2 shapes cannot be multiplied (",
                         matrix_str({m, k}), " and ", matrix_str({k2, n}), "); shapes ", a.sizes(),
                         " and ", b.sizes(), ": the last dim of the first must equal the ",
                         (b.dim() == 1 ? "size" : "second-to-last dim"), " of the second"));
  }
  IntArrayRef a_batch(am.sizes().data(), static_cast<size_t>(am.dim() - 2));
  IntArrayRef b_batch(bm.sizes().data(), static_cast<size_t>(bm.dim() - 2));
  DimVector batch = broadcast_shapes(a_batch, b_batch, "matmul");
  DimVector a_shape(batch), b_shape(batch), out_shape(batch);
  a_shape.push_back(m);
  a_shape.push_back(k);
  b_shape.push_back(k);
  b_shape.push_back(n);
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = empty(out_shape, TensorOptions(dtype).device(a.device()));
  if (out.numel() > 0) {
    // Note [Reduced dtypes]: float16/bfloat16 products accumulate in float32.
    Tensor ac = to(am, opmath_dtype(dtype)), bc = to(bm, opmath_dtype(dtype));
    if (!ac.sizes().equals(a_shape)) ac = expand(ac, a_shape);
    if (!bc.sizes().equals(b_shape)) bc = expand(bc, b_shape);
    OpmathOutput k(out);
    backend_for(out.device()).matmul(k.get(), ac, bc);
    k.finish();
  }
  // Drop the dims the 1-D operands gained.
  DimVector final_shape(batch);
  if (a.dim() > 1) final_shape.push_back(m);
  if (b.dim() > 1) final_shape.push_back(n);
  if (final_shape.size() == out_shape.size()) return out;
  return restride(out, final_shape, contiguous_strides(final_shape));
}

bool matrix_layout(const Tensor& t, MatrixLayout* layout) {
  const int64_t nd = t.dim();
  const int64_t r = t.sizes()[nd - 2], c = t.sizes()[nd - 1];
  const int64_t rs = t.strides()[nd - 2], cs = t.strides()[nd - 1];
  if ((cs == 1 || c <= 1) && (rs >= std::max<int64_t>(c, 1) || r <= 1)) {
    *layout = {false, r <= 1 ? std::max<int64_t>(c, 1) : rs};
    return true;
  }
  if ((rs == 1 || r <= 1) && (cs >= std::max<int64_t>(r, 1) || c <= 1)) {
    *layout = {true, c <= 1 ? std::max<int64_t>(r, 1) : cs};
    return true;
  }
  return false;
}

}  // namespace mutagrad::native
