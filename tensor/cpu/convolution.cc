// The CPU's convolution kernels: oneDNN (Debian's libdnnl-dev 2.6) for float32, the im2col + GEMM
// reference (tensor/native/convolution.cc) for float64, which oneDNN lacks.
//
// Note [Convolution on the CPU]
// The operands arrive contiguous (NCHW, weights OIHW) with exact geometry (Note [Convolution's
// backend contract]); they are handed to oneDNN as plain memory descriptors, groups as a
// [G, O / G, C / G, *k] weight, dilation as oneDNN's (torch's - 1). Plain layouts let oneDNN pick
// its GEMM-based kernels without reorders; blocked layouts (format_tag::any + reorders) are a
// later speed-up. Should oneDNN refuse a geometry (dnnl::error), the reference computes it.
#include "tensor/native/convolution.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {
namespace {

using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::dims dims_of(IntArrayRef v) { return memory::dims(v.begin(), v.end()); }

// A contiguous float32 tensor as plain oneDNN memory.
memory::desc plain(IntArrayRef sizes) {
  const memory::dims d = dims_of(sizes);
  memory::dims strides(d.size(), 1);
  for (size_t i = d.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, memory::data_type::f32, strides);
}

// The weight [O, C / G, *k]; with groups, [G, O / G, C / G, *k] (the same bytes).
memory::desc weight_desc(const Tensor& w, int64_t groups) {
  if (groups == 1) return plain(w.sizes());
  DimVector s{groups, w.size(0) / groups};
  for (int64_t i = 1; i < w.dim(); ++i) s.push_back(w.size(i));
  return plain(s);
}

memory mem(const memory::desc& d, const Tensor& t) { return memory(d, engine(), t.raw_data()); }

struct Geometry {
  memory::dims strides, dilates, padding_l, padding_r;
  explicit Geometry(const ConvParams& p)
      : strides(dims_of(p.stride)),
        dilates(dims_of(p.dilation)),
        padding_l(dims_of(p.padding_l)),
        padding_r(dims_of(p.padding_r)) {
    for (auto& d : dilates) d -= 1;
  }
};

dnnl::convolution_forward::primitive_desc forward_pd(const memory::desc& x, const memory::desc& w,
                                                     const memory::desc& y, const Geometry& g) {
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, x, w, y, g.strides,
                                          g.dilates, g.padding_l, g.padding_r);
  return dnnl::convolution_forward::primitive_desc(d, engine());
}

void run(dnnl::primitive prim, std::unordered_map<int, memory> args) {
  dnnl::stream s(engine());
  prim.execute(s, args);
  s.wait();
}

}  // namespace

void CpuBackend::conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                              const ConvParams& p) {
  if (x.dtype() != kFloat32) return Backend::conv_forward(y, x, w, p);
  try {
    const memory::desc xd = plain(x.sizes()), wd = weight_desc(w, p.groups), yd = plain(y.sizes());
    const auto pd = forward_pd(xd, wd, yd, Geometry(p));
    run(dnnl::convolution_forward(pd),
        {{DNNL_ARG_SRC, mem(xd, x)}, {DNNL_ARG_WEIGHTS, mem(wd, w)}, {DNNL_ARG_DST, mem(yd, y)}});
  } catch (const dnnl::error&) {
    Backend::conv_forward(y, x, w, p);
  }
}

void CpuBackend::conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                     const ConvParams& p) {
  if (gy.dtype() != kFloat32) return Backend::conv_backward_input(gx, gy, w, p);
  try {
    const memory::desc xd = plain(gx.sizes()), wd = weight_desc(w, p.groups),
                       yd = plain(gy.sizes());
    const Geometry g(p);
    const auto hint = forward_pd(xd, wd, yd, g);
    const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, xd, wd, yd,
                                                  g.strides, g.dilates, g.padding_l, g.padding_r);
    const dnnl::convolution_backward_data::primitive_desc pd(d, engine(), hint);
    run(dnnl::convolution_backward_data(pd), {{DNNL_ARG_DIFF_DST, mem(yd, gy)},
                                              {DNNL_ARG_WEIGHTS, mem(wd, w)},
                                              {DNNL_ARG_DIFF_SRC, mem(xd, gx)}});
  } catch (const dnnl::error&) {
    Backend::conv_backward_input(gx, gy, w, p);
  }
}

void CpuBackend::conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                      const ConvParams& p) {
  if (x.dtype() != kFloat32) return Backend::conv_backward_weight(gw, x, gy, p);
  try {
    const memory::desc xd = plain(x.sizes()), wd = weight_desc(gw, p.groups),
                       yd = plain(gy.sizes());
    const Geometry g(p);
    const auto hint = forward_pd(xd, wd, yd, g);
    const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, xd, wd,
                                                     yd, g.strides, g.dilates, g.padding_l,
                                                     g.padding_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(d, engine(), hint);
    run(dnnl::convolution_backward_weights(pd), {{DNNL_ARG_SRC, mem(xd, x)},
                                                 {DNNL_ARG_DIFF_DST, mem(yd, gy)},
                                                 {DNNL_ARG_DIFF_WEIGHTS, mem(wd, gw)}});
  } catch (const dnnl::error&) {
    Backend::conv_backward_weight(gw, x, gy, p);
  }
}

}  // namespace mutagrad::cpu
