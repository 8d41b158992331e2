// CudaBackend's convolutions: the device's convolution library (cuDNN, cuda/cudnn.cc) when it
// takes the call, else the im2col + GEMM reference over the device's kernels (the Backend
// default). Compiled into both builds; the library registry and counters of cuda/dnn.h.
//
// Note [Convolution on the CUDA device]
// The Backend hands over exact geometry with padding per side (Note [Convolution's backend
// contract]); cuDNN pads symmetrically and rounds the output size down. Per spatial dim, with
// left/right padding pl/pr and stride s:
//   - pl >= pr and pl - pr < s (symmetric padding, and torch's usual cut of padding_r): the
//     library pads pl on both sides; the extra pl - pr zeros on the right are read by no output
//     (its rounding drops them), so nothing is copied;
//   - otherwise ("same" padding with an even kernel, a cropped input): the library pads
//     min(pl, pr), and x is zero-padded explicitly by the rest on each side first (for the
//     input gradient, the library writes the padded gradient and its inner part is copied out).
// A 1-d convolution is a 2-d one of height 1 (the same memory). Operands at a storage offset
// that is not a multiple of 16 bytes are copied first. The library is used for float32
// and float64 with 1 to 3 spatial dims and every tensor under 2^31 elements (cuDNN's legacy API
// takes int sizes); anything else, and a call for which the library has no deterministic
// algorithm, runs the reference. convolution_counters() says which ran.
#include "tensor/native/convolution.h"

#include <atomic>
#include <climits>
#include <cstdint>

#include "cuda/cuda_backend.h"
#include "cuda/dnn.h"
#include "cuda/runtime.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/tensor.h"

namespace mutagrad::cuda {
namespace {

Dnn*& dnn_slot() {
  static Dnn* library = nullptr;
  return library;
}

std::atomic<int64_t> library_calls{0}, reference_calls{0};

// How one call maps onto the library (Note [Convolution on the CUDA device]).
struct Plan {
  bool library = false;
  DimVector pad;               // symmetric padding the library applies, per spatial dim
  DimVector extra_l, extra_r;  // zeros added explicitly around x first
  bool extra = false;
  DimVector padded_x;  // x's sizes with the explicit padding
};

// x, w, y: the call's operand sizes ([N, C, *in], [O, C / G, *k], [N, O, *out]).
Plan plan_for(IntArrayRef x, IntArrayRef w, IntArrayRef y, const ConvParams& p, ScalarType dtype) {
  Plan plan;
  const size_t d = p.stride.size();
  if (dnn() == nullptr || (dtype != kFloat32 && dtype != kFloat64) || d < 1 || d > 3) return plan;
  plan.padded_x = DimVector(x);
  for (size_t i = 0; i < d; ++i) {
    const int64_t pl = p.padding_l[i], pr = p.padding_r[i], s = p.stride[i];
    if (pl >= pr && pl - pr < s) {
      plan.pad.push_back(pl);
      plan.extra_l.push_back(0);
      plan.extra_r.push_back(0);
    } else {
      const int64_t m = std::min(pl, pr);
      plan.pad.push_back(m);
      plan.extra_l.push_back(pl - m);
      plan.extra_r.push_back(pr - m);
      plan.extra = true;
    }
    plan.padded_x[i + 2] += plan.extra_l[i] + plan.extra_r[i];
  }
  // Every size, parameter and element count in int.
  auto fits = [](IntArrayRef v) {
    int64_t numel = 1;
    for (int64_t e : v) {
      if (e > INT_MAX) return false;
      numel *= e;
      if (numel > INT_MAX) return false;
    }
    return true;
  };
  plan.library = fits(plan.padded_x) && fits(w) && fits(y) && fits(plan.pad) && fits(p.stride) &&
                 fits(p.dilation) && p.groups <= INT_MAX;
  return plan;
}

// An operand's address for the library; the host-run build checks that it is device memory
// (Note [Host-run device arena] in cuda/runtime_host.cc; the device runtime checks nothing).
void* address(const Tensor& t) {
  runtime().check_device_pointer(t.storage().data(), t.storage().nbytes(), "a cuDNN operand");
  return t.unsafe_impl()->data();
}

// The library call for x, w, y of the plan's geometry (1-d as 2-d of height 1).
ConvArgs args_for(ConvKind kind, const Tensor& x, const Tensor& w, const Tensor& y,
                  const ConvParams& p, const Plan& plan) {
  ConvArgs a;
  a.kind = kind;
  a.f64 = x.dtype() == kFloat64;
  const int64_t d = static_cast<int64_t>(p.stride.size());
  a.spatial = d == 3 ? 3 : 2;
  const int64_t lead = a.spatial - d;  // 1 for a 1-d convolution: height 1
  a.n = x.size(0);
  a.c = x.size(1);
  a.o = w.size(0);
  a.groups = p.groups;
  for (int64_t i = 0; i < d; ++i) {
    a.in[lead + i] = x.size(i + 2);
    a.k[lead + i] = w.size(i + 2);
    a.out[lead + i] = y.size(i + 2);
    a.pad[lead + i] = plan.pad[static_cast<size_t>(i)];
    a.stride[lead + i] = p.stride[static_cast<size_t>(i)];
    a.dilation[lead + i] = p.dilation[static_cast<size_t>(i)];
  }
  a.x = address(x);
  a.w = address(w);
  a.y = address(y);
  return a;
}

// The part of a padded tensor that is x (the inverse of padded()).
Tensor inner(const Tensor& xp, const Plan& plan, IntArrayRef x_sizes) {
  Tensor r = xp;
  for (size_t i = 0; i < plan.extra_l.size(); ++i) {
    r = native::narrow(r, static_cast<int64_t>(i) + 2, plan.extra_l[i], x_sizes[i + 2]);
  }
  return r;
}

// Operands start on a 16-byte boundary, as cuDNN's vectorized kernels may need: a contiguous
// view at an odd storage offset is copied (fresh blocks are aligned to 256 bytes).
bool aligned(const Tensor& t) { return reinterpret_cast<uintptr_t>(address(t)) % 16 == 0; }

Tensor fresh(IntArrayRef sizes, const Tensor& like) {
  return empty(sizes, TensorOptions(like.dtype()).device(like.device()));
}

Tensor aligned_input(const Tensor& t) {
  if (aligned(t)) return t;
  Tensor c = fresh(t.sizes(), t);
  native::copy_(c, t);
  return c;
}

// x zero-padded by the plan's explicit padding (contiguous).
Tensor padded(const Tensor& x, const Plan& plan) {
  Tensor xp = zeros(plan.padded_x, TensorOptions(x.dtype()).device(x.device()));
  native::copy_(inner(xp, plan, x.sizes()), x);
  return xp;
}

}  // namespace

Dnn* dnn() { return dnn_slot(); }

void register_dnn(Dnn* library) { dnn_slot() = library; }

ConvolutionCounters convolution_counters() {
  return ConvolutionCounters{library_calls.load(), reference_calls.load()};
}

void CudaBackend::conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                               const ConvParams& params) {
  const Plan plan = plan_for(x.sizes(), w.sizes(), y.sizes(), params, x.dtype());
  if (plan.library) {
    const Tensor xp = plan.extra ? padded(x, plan) : aligned_input(x);
    const bool direct = aligned(y);
    const Tensor out = direct ? y : fresh(y.sizes(), y);
    if (dnn()->convolution(args_for(ConvKind::kForward, xp, aligned_input(w), out, params, plan))) {
      if (!direct) native::copy_(y, out);
      ++library_calls;
      return;
    }
  }
  ++reference_calls;
  Backend::conv_forward(y, x, w, params);
}

void CudaBackend::conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                      const ConvParams& params) {
  const Plan plan = plan_for(gx.sizes(), w.sizes(), gy.sizes(), params, gx.dtype());
  if (plan.library) {
    const bool direct = !plan.extra && aligned(gx);
    const Tensor gxp = direct ? gx : fresh(plan.padded_x, gx);
    if (dnn()->convolution(args_for(ConvKind::kBackwardData, gxp, aligned_input(w),
                                    aligned_input(gy), params, plan))) {
      if (!direct) native::copy_(gx, inner(gxp, plan, gx.sizes()));
      ++library_calls;
      return;
    }
  }
  ++reference_calls;
  Backend::conv_backward_input(gx, gy, w, params);
}

void CudaBackend::conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                       const ConvParams& params) {
  const Plan plan = plan_for(x.sizes(), gw.sizes(), gy.sizes(), params, x.dtype());
  if (plan.library) {
    const Tensor xp = plan.extra ? padded(x, plan) : aligned_input(x);
    const bool direct = aligned(gw);
    const Tensor out = direct ? gw : fresh(gw.sizes(), gw);
    if (dnn()->convolution(
            args_for(ConvKind::kBackwardFilter, xp, out, aligned_input(gy), params, plan))) {
      if (!direct) native::copy_(gw, out);
      ++library_calls;
      return;
    }
  }
  ++reference_calls;
  Backend::conv_backward_weight(gw, x, gy, params);
}

}  // namespace mutagrad::cuda
