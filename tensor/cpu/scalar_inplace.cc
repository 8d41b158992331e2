// CpuBackend::binary_scalar_inplace: x op= value over contiguous float32/float64 memory (Note
// [Scalar in-place fast path] in tensor/native/scalar_inplace.h); other layouts take the
// default (the value wrapped in a 0-dim tensor, then binary()).
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

template <typename T>
void apply(BinaryOp op, T* p, int64_t n, T v) {
  // One loop per op, each vectorized by the compiler; the same operation as binary()'s.
  parallel_for(n, [&](int64_t begin, int64_t end) {
    if (op == BinaryOp::kAdd) {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] + v;
    } else if (op == BinaryOp::kSub) {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] - v;
    } else if (op == BinaryOp::kMul) {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] * v;
    } else {
      for (int64_t i = begin; i < end; ++i) p[i] = p[i] / v;
    }
  });
}

}  // namespace

void CpuBackend::binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value) {
  if (!out.is_contiguous()) {
    Backend::binary_scalar_inplace(op, out, value);
    return;
  }
  void* data = out.unsafe_impl()->data();
  if (out.dtype() == kFloat32) {
    apply(op, static_cast<float*>(data), out.numel(), value.to<float>());
  } else {
    MG_INTERNAL_ASSERT(out.dtype() == kFloat64, "binary_scalar_inplace: float32/float64 only");
    apply(op, static_cast<double*>(data), out.numel(), value.to<double>());
  }
}

}  // namespace mutagrad::cpu
