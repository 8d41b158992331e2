// CPU matmul through Eigen's GEMM (vec_kernels.h). Each batch's matrices are mapped in place when a
// row or a column is contiguous (Eigen then sees a row-major or transposed row-major matrix); other
// operand layouts are copied to contiguous first, as is an output that is not row-major.
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

using native::matrix_layout;
using native::MatrixLayout;

Tensor contiguous_copy(const Tensor& t) {
  Tensor c = empty(t.sizes(), TensorOptions(t.dtype()));
  cpu_backend().copy(c, t);
  return c;
}

template <typename T>
void matmul_typed(const Tensor& out, const Tensor& a, const Tensor& b, MatrixLayout la,
                  MatrixLayout lb) {
  // The CPU's build of Eigen's GEMM (Note [CPU capability dispatch] in vec_kernels.h).
  const VecKernels& vk = vec_kernels();
  auto gemm = [&vk](auto... args) {
    if constexpr (std::is_same_v<T, float>)
      vk.gemm_f32(args...);
    else if constexpr (std::is_same_v<T, double>)
      vk.gemm_f64(args...);
    else if constexpr (std::is_same_v<T, uint32_t>)
      vk.gemm_u32(args...);
    else
      vk.gemm_u64(args...);
  };
  const int64_t nd = out.dim();
  const int64_t m = out.sizes()[nd - 2], n = out.sizes()[nd - 1], k = a.sizes()[nd - 1];
  const int64_t batch_dims = nd - 2;
  int64_t batches = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batches *= out.sizes()[d];
  DimVector idx(static_cast<size_t>(batch_dims), 0);
  T* out_base = static_cast<T*>(out.raw_data());
  const T* a_base = static_cast<const T*>(a.raw_data());
  const T* b_base = static_cast<const T*>(b.raw_data());
  const int64_t out_ld = std::max<int64_t>(n, 1);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t oa = 0, ob = 0, oo = 0;
    for (int64_t d = 0; d < batch_dims; ++d) {
      oa += idx[d] * a.strides()[d];
      ob += idx[d] * b.strides()[d];
      oo += idx[d] * out.strides()[d];
    }
    gemm(m, n, k, a_base + oa, la.ld, la.transposed, b_base + ob, lb.ld, lb.transposed,
         out_base + oo, out_ld);
    for (int64_t d = batch_dims - 1; d >= 0; --d) {
      if (++idx[d] < out.sizes()[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void CpuBackend::matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  MatrixLayout la, lb;
  Tensor ac = a, bc = b;
  if (!matrix_layout(ac, &la)) {
    ac = contiguous_copy(a);
    matrix_layout(ac, &la);
  }
  if (!matrix_layout(bc, &lb)) {
    bc = contiguous_copy(b);
    matrix_layout(bc, &lb);
  }
  // The output is written as row-major matrices with leading dimension n.
  const int64_t nd = out.dim();
  const bool out_ok = out.strides()[nd - 1] == 1 || out.sizes()[nd - 1] <= 1;
  const bool out_rows_ok = out.sizes()[nd - 2] <= 1 ||
                           out.strides()[nd - 2] == std::max<int64_t>(out.sizes()[nd - 1], 1);
  Tensor target = out_ok && out_rows_ok ? out : empty(out.sizes(), TensorOptions(out.dtype()));
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    matmul_typed<T>(target, ac, bc, la, lb);
  };
  // Integer products wrap: Eigen computes them in the unsigned type of the same width (defined
  // overflow, the same bits as two's complement wrapping; int32 and uint32 may alias).
  switch (out.dtype()) {
    case kInt32:
      run(TypeTag<uint32_t>{});
      break;
    case kInt64:
      run(TypeTag<uint64_t>{});
      break;
    case kFloat32:
      run(TypeTag<float>{});
      break;
    case kFloat64:
      run(TypeTag<double>{});
      break;
    default:
      MG_INTERNAL_ASSERT(false, "cpu matmul on ", out.dtype());
  }
  if (!target.is_same(out)) copy(out, target);
}

}  // namespace mutagrad::cpu
