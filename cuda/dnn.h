// Dnn: the convolution library behind CudaBackend's conv_* (cuDNN in the device build), one call
// per map in cuDNN's terms, and a reference of that call for the host-run build.
//
//   ConvArgs a;                           // filled by cuda/convolution.cc from the Backend call
//   a.kind = ConvKind::kForward;  ...
//   if (Dnn* lib = dnn()) lib->convolution(a);   // false: no deterministic algorithm for it
//   reference_convolution<float>(a);      // what the host-run "library" computes
//
// Note [The convolution library's call]
// A ConvArgs is what cuDNN's legacy API takes: contiguous NCHW (2 spatial dims) or NCDHW (3)
// tensors, the weight [O, C / groups, *k], padding symmetric per dim (`pad` zeros on both
// sides), and out == floor((in + 2 pad - dilation (k - 1) - 1) / stride) + 1. cuda/convolution.cc
// maps the Backend's exact geometry (padding per side, Note [Convolution's backend contract]) and
// 1-d convolutions onto it (Note [Convolution on the CUDA device]). The device build registers
// cuDNN (cuda/cudnn.cc); the host-run build registers reference_convolution when
// MUTAGRAD_HOST_RUN_DNN=1 (cuda/dnn_host.cc), so the suite checks that mapping on the CPU
// (//tests/cuda:convolution_conformance_test_host_dnn), as MUTAGRAD_HOST_RUN_BLAS does for GEMM.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/error.h"

namespace mutagrad::cuda {

enum class ConvKind {
  kForward,         // y = x (*) w
  kBackwardData,    // x = the adjoint in x applied to y (x is written)
  kBackwardFilter,  // w = the adjoint in w applied to y (w is written)
};

struct ConvArgs {
  ConvKind kind = ConvKind::kForward;
  bool f64 = false;  // elements are double, else float
  int spatial = 2;   // 2 or 3
  int64_t n = 0, c = 0, o = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  // Device addresses: x [n, c, *in], w [o, c / groups, *k], y [n, o, *out]. The one `kind`
  // writes is overwritten whole; the others are read.
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

class Dnn {
 public:
  virtual ~Dnn() = default;
  // "cuDNN 9.19.0" (the loaded library's version), or "host-run reference".
  virtual std::string name() const = 0;
  // Runs `args` on the runtime's stream with a deterministic algorithm. False when the library
  // has none for it (the caller then runs the im2col + GEMM reference); DeviceError when a
  // library call fails otherwise.
  virtual bool convolution(const ConvArgs& args) = 0;
};

// The registered library, or nullptr (the host-run build without MUTAGRAD_HOST_RUN_DNN=1).
Dnn* dnn();
// Called once at load time by cuda/cudnn.cc or cuda/dnn_host.cc.
void register_dnn(Dnn* library);

// How CudaBackend's convolutions ran in this process: through the library, or through the
// im2col + GEMM reference (no library, a geometry it does not take, or no deterministic
// algorithm). Each Backend call counts once.
struct ConvolutionCounters {
  int64_t library = 0;
  int64_t reference = 0;
};
ConvolutionCounters convolution_counters();

// The library call, element by element in host memory: each result element accumulates its
// terms in T, in (channel, kernel offset) order for the forward and (batch, output position)
// order for the adjoints.
template <typename T>
void reference_convolution(const ConvArgs& a) {
  // What cuda/convolution.cc guarantees: 16-byte aligned operands (Note [Convolution on the CUDA
  // device]), and an output size that is cuDNN's rounding's (else CUDNN_STATUS_BAD_PARAM).
  for (const void* p : {a.x, a.w, a.y}) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
      throw DeviceError(str("reference_convolution: operand ", p, " is not 16-byte aligned"));
    }
  }
  for (int i = 0; i < a.spatial; ++i) {
    const int64_t want =
        (a.in[i] + 2 * a.pad[i] - a.dilation[i] * (a.k[i] - 1) - 1) / a.stride[i] + 1;
    if (a.out[i] != want) {
      throw DeviceError(str("reference_convolution: output size ", a.out[i], " in spatial dim ", i,
                            " does not match input ", a.in[i], ", kernel ", a.k[i], ", padding ",
                            a.pad[i], ", stride ", a.stride[i], ", dilation ", a.dilation[i], " (",
                            want, ")"));
    }
  }
  const int64_t d = a.spatial == 3 ? 1 : 0;  // 2-d: depth 1
  const int64_t id = d ? a.in[0] : 1, ih = a.in[d], iw = a.in[d + 1];
  const int64_t kd = d ? a.k[0] : 1, kh = a.k[d], kw = a.k[d + 1];
  const int64_t od = d ? a.out[0] : 1, oh = a.out[d], ow = a.out[d + 1];
  const int64_t pd = d ? a.pad[0] : 0, ph = a.pad[d], pw = a.pad[d + 1];
  const int64_t sd = d ? a.stride[0] : 1, sh = a.stride[d], sw = a.stride[d + 1];
  const int64_t dd = d ? a.dilation[0] : 1, dh = a.dilation[d], dw = a.dilation[d + 1];
  const int64_t cg = a.c / a.groups, og = a.o / a.groups;
  const int64_t in_plane = id * ih * iw, k_plane = kd * kh * kw, out_plane = od * oh * ow;
  T* x = static_cast<T*>(a.x);
  T* w = static_cast<T*>(a.w);
  T* y = static_cast<T*>(a.y);
  // Calls f(x offset, w offset) for every term of output element (n, o, p), p its flat position.
  auto terms = [&](int64_t n, int64_t o, int64_t p, auto&& f) {
    const int64_t z = p / (oh * ow), r = p / ow % oh, s = p % ow;
    const int64_t g = o / og;
    for (int64_t cc = 0; cc < cg; ++cc) {
      const int64_t xc = (n * a.c + g * cg + cc) * in_plane, wc = (o * cg + cc) * k_plane;
      for (int64_t i = 0; i < kd; ++i) {
        const int64_t zi = z * sd - pd + i * dd;
        if (zi < 0 || zi >= id) continue;
        for (int64_t j = 0; j < kh; ++j) {
          const int64_t ri = r * sh - ph + j * dh;
          if (ri < 0 || ri >= ih) continue;
          for (int64_t l = 0; l < kw; ++l) {
            const int64_t si = s * sw - pw + l * dw;
            if (si < 0 || si >= iw) continue;
            f(xc + (zi * ih + ri) * iw + si, wc + (i * kh + j) * kw + l);
          }
        }
      }
    }
  };
  if (a.kind == ConvKind::kForward) {
    for (int64_t n = 0; n < a.n; ++n) {
      for (int64_t o = 0; o < a.o; ++o) {
        for (int64_t p = 0; p < out_plane; ++p) {
          T acc = T(0);
          terms(n, o, p, [&](int64_t xi, int64_t wi) { acc += x[xi] * w[wi]; });
          y[(n * a.o + o) * out_plane + p] = acc;
        }
      }
    }
    return;
  }
  T* written = a.kind == ConvKind::kBackwardData ? x : w;
  const int64_t count =
      a.kind == ConvKind::kBackwardData ? a.n * a.c * in_plane : a.o * cg * k_plane;
  for (int64_t i = 0; i < count; ++i) written[i] = T(0);
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t o = 0; o < a.o; ++o) {
      for (int64_t p = 0; p < out_plane; ++p) {
        const T gy = y[(n * a.o + o) * out_plane + p];
        if (a.kind == ConvKind::kBackwardData) {
          terms(n, o, p, [&](int64_t xi, int64_t wi) { x[xi] += gy * w[wi]; });
        } else {
          terms(n, o, p, [&](int64_t xi, int64_t wi) { w[wi] += x[xi] * gy; });
        }
      }
    }
  }
}

}  // namespace mutagrad::cuda
