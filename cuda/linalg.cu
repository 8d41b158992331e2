// CUDA matmul; the CPU's is in tensor/cpu/matmul.cc.
//
//   matmul_kernel(out, a, b);   // out[..., m, n] = sum_k a[..., m, k] * b[..., k, n]
//
// Note [CUDA matmul: cuBLAS or the Thrust kernel]
// float32/float64 products go to the runtime's BLAS (cuBLAS in the device build, one strided
// batched GEMM; Note [cuBLAS from row-major tensors] in cuda/gemm.h) when every
// operand's matrices are row-major or transposed and its batch dims collapse to one stride;
// operands that do not are copied to contiguous first, as the CPU kernel does. Integer
// products, and every product in the host-run build (whose runtime has no BLAS), run the
// Thrust kernel below: one thread per output element, the k products summed in index order in
// the dtype (integers wrap, as on the CPU). So the host-run suite tests the Thrust kernel and
// the operand preparation (with MUTAGRAD_HOST_RUN_BLAS=1, against a reference of the cuBLAS
// call); the cuBLAS call itself runs only on a GPU (docs/cuda.md).
#include <algorithm>
#include <limits>

#include "cuda/kernel_util.h"
#include "cuda/kernels.h"
#include "tensor/element_math.h"
#include "tensor/native/linalg.h"

namespace mutagrad::cuda {
namespace {

template <typename T>
struct MatmulFunctor {
  char* out;
  const char* a;
  const char* b;
  OffsetCalc<3> batch;  // {out, a, b} over the batch dims
  int64_t m, n, k;
  int64_t out_rs, out_cs, a_rs, a_cs, b_rs, b_cs;  // bytes
  MG_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t mn = m * n;
    const int64_t r = i % mn / n, c = i % n;
    int64_t off[3];
    batch.get(i / mn, off);
    const char* pa = a + off[1] + r * a_rs;
    const char* pb = b + off[2] + c * b_cs;
    T acc = T(0);
    for (int64_t p = 0; p < k; ++p) {
      acc = math::wrapping_add<T>(acc,
                                  math::wrapping_mul<T>(at<T>(pa, p * a_cs), at<T>(pb, p * b_rs)));
    }
    at<T>(out, off[0] + r * out_rs + c * out_cs) = acc;
  }
};

// `t` restricted to its batch dims (every dim but the last two).
Tensor batch_view(const Tensor& t) {
  const size_t nb = static_cast<size_t>(t.dim() - 2);
  return restride(t, IntArrayRef(t.sizes().data(), nb), IntArrayRef(t.strides().data(), nb));
}

void thrust_matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t nd = out.dim();
  const int64_t m = out.size(nd - 2), n = out.size(nd - 1), k = a.size(nd - 1);
  const Tensor ob = batch_view(out), ab = batch_view(a), bb = batch_view(b);
  const OffsetCalc<3> batch = make_offset_calc<3>({&ob, &ab, &bb});
  const int64_t es = out.element_size();
  dispatch_compute_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch("matmul", out.numel(),
           MatmulFunctor<T>{device_data(out), device_data(a), device_data(b), batch, m, n, k,
                            out.stride(nd - 2) * es, out.stride(nd - 1) * es, a.stride(nd - 2) * es,
                            a.stride(nd - 1) * es, b.stride(nd - 2) * es, b.stride(nd - 1) * es});
  });
}

// The one stride (elements) between consecutive matrices when t's batch dims collapse to one
// dim (size-1 dims ignored; all-zero strides of an expanded operand collapse too).
bool batch_stride(const Tensor& t, int64_t* stride) {
  bool found = false;
  int64_t expected = 0;
  for (int64_t d = t.dim() - 3; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (!found) {
      *stride = t.stride(d);
      found = true;
    } else if (t.stride(d) != expected) {
      return false;
    }
    expected = t.stride(d) * t.size(d);
  }
  if (!found) *stride = 0;
  return true;
}

Tensor contiguous_on_device(const Tensor& t) {
  Tensor c = empty(t.sizes(), TensorOptions(t.dtype()).device(t.device()));
  copy_kernel(c, t);
  return c;
}

// An operand as GemmArgs wants it: its layout and batch stride, copied to contiguous first
// when it has neither (Note [CUDA matmul: cuBLAS or the Thrust kernel]).
Tensor blas_operand(const Tensor& t, native::MatrixLayout* layout, int64_t* stride) {
  if (native::matrix_layout(t, layout) && batch_stride(t, stride)) return t;
  Tensor c = contiguous_on_device(t);
  native::matrix_layout(c, layout);
  batch_stride(c, stride);
  return c;
}

// Whether the runtime's BLAS can take this product: a floating dtype, sizes within its int.
bool blas_can(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (!runtime().has_blas() || (out.dtype() != kFloat32 && out.dtype() != kFloat64)) return false;
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (const Tensor* t : {&out, &a, &b}) {
    if (t->numel() > kMax) return false;  // bounds every size and leading dimension
  }
  return true;
}

void blas_matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t nd = out.dim();
  native::MatrixLayout la, lb, lo;
  GemmArgs g;
  const Tensor ac = blas_operand(a, &la, &g.stride_a);
  const Tensor bc = blas_operand(b, &lb, &g.stride_b);
  // The output must be row-major (not transposed) with a collapsible batch.
  const bool out_ok =
      native::matrix_layout(out, &lo) && !lo.transposed && batch_stride(out, &g.stride_c);
  const Tensor target =
      out_ok ? out : empty(out.sizes(), TensorOptions(out.dtype()).device(out.device()));
  if (!out_ok) {
    native::matrix_layout(target, &lo);
    batch_stride(target, &g.stride_c);
  }
  g.f64 = out.dtype() == kFloat64;
  g.m = out.size(nd - 2);
  g.n = out.size(nd - 1);
  g.k = a.size(nd - 1);
  g.batch = out.numel() / (g.m * g.n);
  g.a = device_data(ac);
  g.lda = la.ld;
  g.trans_a = la.transposed;
  g.b = device_data(bc);
  g.ldb = lb.ld;
  g.trans_b = lb.transposed;
  g.c = device_data(target);
  g.ldc = lo.ld;
  runtime().gemm(g);
  if (!out_ok) copy_kernel(out, target);
}

}  // namespace

void matmul_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (a.size(a.dim() - 1) == 0) {  // empty sums
    fill_kernel(out, 0);
    return;
  }
  if (blas_can(out, a, b)) {
    blas_matmul(out, a, b);
  } else {
    thrust_matmul(out, a, b);
  }
}

}  // namespace mutagrad::cuda
