// CpuBackend::binary_scalar_inplace (x op= value over contiguous float32/float64 memory: Note
// [Scalar in-place fast path] in tensor/native/scalar_inplace.h; other layouts take the
// default), addcdiv_inplace, and fma (Note [Torch's fused multiply-adds] in
// tensor/native/fma.h: the runs of any layout handed to the build's VecKernels::fma_*).
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
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

// out + (value * t1) / t2, each op rounded in T (a division: nothing to fuse).
template <typename T>
void addcdiv_loop(T* out, const T* t1, const T* t2, int64_t n, T value) {
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T term = (value * t1[i]) / t2[i];
      out[i] = out[i] + term;
    }
  });
}

template <typename T>
void fma_typed(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
               T value) {
  const VecKernels& vk = vec_kernels();
  const auto kernel = [&](char** p, const int64_t* bytes, int64_t n) {
    int64_t s[4];
    for (int k = 0; k < 4; ++k) s[k] = bytes[k] / static_cast<int64_t>(sizeof(T));
    const VecFmaOp vop = static_cast<VecFmaOp>(op);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    const T* z = c.defined() ? reinterpret_cast<const T*>(p[3]) : nullptr;
    if constexpr (std::is_same_v<T, float>)
      vk.fma_f32(vop, o, x, y, z, value, n, s);
    else
      vk.fma_f64(vop, o, x, y, z, value, n, s);
  };
  if (out.is_contiguous() && a.is_contiguous() && b.is_contiguous() &&
      (!c.defined() || c.is_contiguous())) {  // one flat run: no StridedLoop to set up
    const int64_t bytes[4] = {sizeof(T), sizeof(T), sizeof(T), sizeof(T)};
    char* const base[4] = {static_cast<char*>(out.raw_data()), static_cast<char*>(a.raw_data()),
                           static_cast<char*>(b.raw_data()),
                           c.defined() ? static_cast<char*>(c.raw_data()) : nullptr};
    return parallel_for(out.numel(), [&](int64_t begin, int64_t end) {
      const int64_t offset = begin * static_cast<int64_t>(sizeof(T));
      char* p[4] = {base[0] + offset, base[1] + offset, base[2] + offset,
                    base[3] != nullptr ? base[3] + offset : nullptr};
      kernel(p, bytes, end - begin);
    });
  }
  // c's place is a's when the op has no c: walked, never read.
  StridedLoop<4> it({&out, &a, &b, c.defined() ? &c : &a});
  parallel_for(it.numel(), [&](int64_t begin, int64_t end) { it.run(begin, end, kernel); });
}

}  // namespace

static_assert(static_cast<int>(FmaOp::kAddAlpha) == static_cast<int>(VecFmaOp::kAddAlpha) &&
                  static_cast<int>(FmaOp::kAddcmul) == static_cast<int>(VecFmaOp::kAddcmul) &&
                  static_cast<int>(FmaOp::kLerp) == static_cast<int>(VecFmaOp::kLerp),
              "VecFmaOp mirrors FmaOp");

void CpuBackend::fma(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                     double value) {
  if (out.numel() == 0) return;
  if (out.dtype() == kFloat32) {
    fma_typed<float>(op, out, a, b, c, static_cast<float>(value));
  } else {
    MG_INTERNAL_ASSERT(out.dtype() == kFloat64, "fma: float32/float64 only, not ",
                       dtype_name(out.dtype()));
    fma_typed<double>(op, out, a, b, c, value);
  }
}

void CpuBackend::addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2,
                                 double value) {
  if (!out.is_contiguous() || !t1.is_contiguous() || !t2.is_contiguous()) {
    Backend::addcdiv_inplace(out, t1, t2, value);
    return;
  }
  if (out.dtype() == kFloat32) {
    addcdiv_loop(static_cast<float*>(out.unsafe_impl()->data()),
                 static_cast<const float*>(t1.unsafe_impl()->data()),
                 static_cast<const float*>(t2.unsafe_impl()->data()), out.numel(),
                 static_cast<float>(value));
  } else {
    addcdiv_loop(static_cast<double*>(out.unsafe_impl()->data()),
                 static_cast<const double*>(t1.unsafe_impl()->data()),
                 static_cast<const double*>(t2.unsafe_impl()->data()), out.numel(), value);
  }
}

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
