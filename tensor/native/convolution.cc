// Raw convolution: argument checks, the exact geometry the backends get, and the im2col + GEMM
// reference kernels (the Backend defaults). See tensor/native/convolution.h.
#include "tensor/native/convolution.h"

#include <sstream>
#include <string>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

int64_t spatial_dims(const ConvParams& p) { return static_cast<int64_t>(p.stride.size()); }

// "(a x b)" as torch writes a spatial size.
std::string by(IntArrayRef v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? " x " : "") << v[i];
  os << ")";
  return os.str();
}

// The geometry the backend gets (Note [Convolution's backend contract]): params with padding_r
// cut to exact, and how many leading input positions per spatial dim take part (`used`).
struct Exact {
  ConvParams p;
  DimVector used;
  bool nothing_read = false;  // some spatial dim has no input position read by any output
};

Exact exact_geometry(IntArrayRef in, IntArrayRef k, IntArrayRef out, const ConvParams& p) {
  Exact e{p, DimVector(in), false};
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t need = (out[i] - 1) * p.stride[i] + p.dilation[i] * (k[i] - 1) + 1;
    const int64_t excess = in[i] + p.padding_l[i] + p.padding_r[i] - need;
    int64_t pr = p.padding_r[i] - excess;
    if (pr < 0) {
      e.used[i] = in[i] + pr;
      pr = 0;
    }
    e.p.padding_r[i] = pr;
    if (e.used[i] <= 0) e.nothing_read = true;
  }
  return e;
}

// The first `used` positions of each spatial dim of t.
Tensor crop(const Tensor& t, IntArrayRef used) {
  Tensor r = t;
  for (size_t i = 0; i < used.size(); ++i) {
    const int64_t d = static_cast<int64_t>(i) + 2;
    if (r.size(d) != used[i]) r = narrow(r, d, 0, used[i]);
  }
  return r;
}

// The spatial dims of a [N, C, *spatial] shape.
IntArrayRef tail2(IntArrayRef s) { return IntArrayRef(s.data() + 2, s.size() - 2); }
IntArrayRef spatial(const Tensor& t) { return tail2(t.sizes()); }

ScalarType compute_dtype(ScalarType t) { return opmath_dtype(t); }

// x contiguous, in the compute dtype.
Tensor operand(const Tensor& t, ScalarType cdt) { return contiguous(to(t, cdt)); }

// x zero-padded by the params (x itself when there is no padding).
Tensor padded(const Tensor& x, const ConvParams& p) {
  bool any = false;
  DimVector sizes(x.sizes());
  for (size_t i = 0; i < p.stride.size(); ++i) {
    sizes[i + 2] += p.padding_l[i] + p.padding_r[i];
    any = any || p.padding_l[i] != 0 || p.padding_r[i] != 0;
  }
  if (!any) return x;
  Tensor xp = zeros(sizes, TensorOptions(x.dtype()).device(x.device()));
  Tensor inner = xp;
  for (size_t i = 0; i < p.stride.size(); ++i) {
    inner = narrow(inner, static_cast<int64_t>(i) + 2, p.padding_l[i], x.size(i + 2));
  }
  copy_(inner, x);
  return xp;
}

// The columns of x (contiguous, exact geometry): [N, C, *k, *out], element (n, c, j, o) =
// padded x at (n, c, o stride + j dilation).
Tensor im2col(const Tensor& x, IntArrayRef k, IntArrayRef out, const ConvParams& p) {
  const Tensor xp = padded(x, p);
  DimVector sizes{xp.size(0), xp.size(1)}, strides{xp.stride(0), xp.stride(1)};
  for (size_t i = 0; i < k.size(); ++i) {
    sizes.push_back(k[i]);
    strides.push_back(p.dilation[i] * xp.stride(i + 2));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    sizes.push_back(out[i]);
    strides.push_back(p.stride[i] * xp.stride(i + 2));
  }
  return contiguous(as_strided(xp, sizes, strides, xp.storage_offset()));
}

// gy of the output's batch and channels, each spatial size at most the output's (the missing
// trailing outputs are zeros: a transposed convolution's output_padding >= stride).
void check_grad_output(const char* op, const Tensor& gy, const Tensor& other, IntArrayRef out,
                       IntArrayRef input_size, IntArrayRef weight_size) {
  if (gy.dtype() != other.dtype()) {
    throw DTypeError(str(op, ": grad_output type (", dtype_name(gy.dtype()), ") and operand type (",
                         dtype_name(other.dtype()), ") should be the same"));
  }
  check_same_device(op, gy.device(), other.device());
  bool ok =
      gy.dim() == static_cast<int64_t>(out.size()) && gy.size(0) == out[0] && gy.size(1) == out[1];
  for (size_t i = 2; ok && i < out.size(); ++i) ok = gy.size(i) <= out[i];
  if (!ok) {
    throw ShapeError(str(op, ": expected grad_output of size ", out, " (or smaller spatial sizes)",
                         " for input of size ", input_size, " and weight of size ", weight_size,
                         ", got ", gy.sizes()));
  }
}

}  // namespace

DimVector conv_output_size(IntArrayRef input_size, IntArrayRef weight_size, const ConvParams& p) {
  DimVector out{input_size[0], weight_size[0]};
  for (size_t i = 0; i < p.stride.size(); ++i) {
    const int64_t have = input_size[i + 2] + p.padding_l[i] + p.padding_r[i];
    const int64_t extent = p.dilation[i] * (weight_size[i + 2] - 1) + 1;
    out.push_back((have - extent) / p.stride[i] + 1);
  }
  return out;
}

void check_conv_operands(const char* op, const Tensor& x, const Tensor& w, const ConvParams& p) {
  const int64_t d = spatial_dims(p);
  if (d < 1 || p.padding_l.size() != p.stride.size() || p.padding_r.size() != p.stride.size() ||
      p.dilation.size() != p.stride.size()) {
    throw ValueError(str(op, ": stride, padding and dilation need one value per spatial dim, got ",
                         p.stride.size(), ", ", p.padding_l.size(), "/", p.padding_r.size(),
                         " and ", p.dilation.size()));
  }
  if (x.dim() != d + 2) {
    throw ShapeError(str(op, ": expected a ", d + 2, "-D input [batch, channels, ", d,
                         " spatial dims], got input of size ", x.sizes()));
  }
  if (w.dim() != d + 2) {
    throw ShapeError(str(op, ": expected a ", d + 2,
                         "-D weight [out_channels, in_channels / groups, ", d,
                         " kernel dims], got weight of size ", w.sizes()));
  }
  if (!x.is_floating_point()) {
    throw DTypeError(str(op, ": expected a floating-point input, got ", dtype_name(x.dtype()),
                         "; convert it with .to(kFloat32)"));
  }
  if (w.dtype() != x.dtype()) {
    throw DTypeError(str(op, ": input type (", dtype_name(x.dtype()), ") and weight type (",
                         dtype_name(w.dtype()), ") should be the same"));
  }
  check_same_device(op, x.device(), w.device());
  if (p.groups <= 0) {
    throw ValueError(str(op, ": non-positive groups is not supported, got groups=", p.groups));
  }
  for (int64_t i = 0; i < d; ++i) {
    if (p.stride[i] <= 0) {
      throw ValueError(str(op, ": non-positive stride is not supported, got stride ", p.stride));
    }
    if (p.dilation[i] <= 0) {
      throw ValueError(
          str(op, ": dilation should be greater than zero, got dilation ", p.dilation));
    }
    if (p.padding_l[i] < 0 || p.padding_r[i] < 0) {
      throw ValueError(str(op, ": negative padding is not supported, got padding ", p.padding_l,
                           " (left) and ", p.padding_r,
                           " (right); crop the input with narrow() instead"));
    }
  }
  if (w.size(0) % p.groups != 0) {
    throw ShapeError(str(op, ": given groups=", p.groups, ", expected weight to be divisible by ",
                         p.groups, " at dimension 0, but got weight of size ", w.sizes(),
                         " instead"));
  }
  if (x.size(1) != w.size(1) * p.groups) {
    throw ShapeError(str(op, ": given groups=", p.groups, ", weight of size ", w.sizes(),
                         ", expected input", x.sizes(), " to have ", w.size(1) * p.groups,
                         " channels, but got ", x.size(1), " channels instead"));
  }
  DimVector have, extent;
  bool too_large = false;
  for (int64_t i = 0; i < d; ++i) {
    have.push_back(x.size(i + 2) + p.padding_l[i] + p.padding_r[i]);
    extent.push_back(p.dilation[i] * (w.size(i + 2) - 1) + 1);
    too_large = too_large || extent[i] > have[i];
  }
  if (too_large) {
    throw ShapeError(str(
        op, ": calculated padded input size per channel: ", by(have), ". Kernel size: ", by(extent),
        ". Kernel size can't be greater than actual input size (input of size ", x.sizes(),
        ", weight of size ", w.sizes(), ", dilation ", p.dilation, ")"));
  }
}

Tensor conv_forward(const Tensor& x, const Tensor& w, const ConvParams& p) {
  check_conv_operands("conv_forward", x, w, p);
  const DimVector out_size = conv_output_size(x.sizes(), w.sizes(), p);
  const TensorOptions opts = TensorOptions(x.dtype()).device(x.device());
  if (compute_numel(out_size) == 0) return empty(out_size, opts);
  const Exact e = exact_geometry(spatial(x), spatial(w), tail2(out_size), p);
  if (e.nothing_read || x.numel() == 0 || w.numel() == 0) return zeros(out_size, opts);
  const ScalarType cdt = compute_dtype(x.dtype());
  Tensor y = empty(out_size, TensorOptions(cdt).device(x.device()));
  backend_for(x.device()).conv_forward(y, operand(crop(x, e.used), cdt), operand(w, cdt), e.p);
  return to(y, x.dtype());
}

Tensor conv_backward_input(const Tensor& gy, const Tensor& w, const ConvParams& p,
                           IntArrayRef input_size) {
  const TensorOptions opts = TensorOptions(gy.dtype()).device(gy.device());
  Tensor gx = zeros(input_size, opts);
  check_conv_operands("conv_backward_input", gx, w, p);
  check_grad_output("conv_backward_input", gy, w, conv_output_size(input_size, w.sizes(), p),
                    input_size, w.sizes());
  const Exact e = exact_geometry(tail2(input_size), spatial(w), spatial(gy), p);
  if (e.nothing_read || gy.numel() == 0 || w.numel() == 0 || gx.numel() == 0) return gx;
  const ScalarType cdt = compute_dtype(gy.dtype());
  const Tensor target = crop(gx, e.used);
  if (cdt == gx.dtype() && target.is_contiguous()) {
    backend_for(gy.device()).conv_backward_input(target, operand(gy, cdt), operand(w, cdt), e.p);
  } else {
    Tensor tmp = empty(target.sizes(), TensorOptions(cdt).device(gy.device()));
    backend_for(gy.device()).conv_backward_input(tmp, operand(gy, cdt), operand(w, cdt), e.p);
    copy_(target, tmp);
  }
  return gx;
}

Tensor conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvParams& p,
                            IntArrayRef weight_size) {
  const TensorOptions opts = TensorOptions(x.dtype()).device(x.device());
  Tensor gw = zeros(weight_size, opts);
  check_conv_operands("conv_backward_weight", x, gw, p);
  check_grad_output("conv_backward_weight", gy, x, conv_output_size(x.sizes(), weight_size, p),
                    x.sizes(), weight_size);
  const Exact e = exact_geometry(spatial(x), tail2(weight_size), spatial(gy), p);
  if (e.nothing_read || gy.numel() == 0 || x.numel() == 0 || gw.numel() == 0) return gw;
  const ScalarType cdt = compute_dtype(x.dtype());
  Tensor r = cdt == gw.dtype() ? gw : empty(weight_size, TensorOptions(cdt).device(x.device()));
  backend_for(x.device())
      .conv_backward_weight(r, operand(crop(x, e.used), cdt), operand(gy, cdt), e.p);
  return to(r, x.dtype());
}

// ---- The im2col + GEMM reference -------------------------------------------------------------
// With G groups, K = prod(k), L = prod(out), Cg = C / G, Og = O / G: cols [N, G, Cg K, L],
// w as [G, Og, Cg K]. forward: y[n, g] = w[g] cols[n, g]; backward_weight: gw[g] = sum_n
// gy[n, g] cols[n, g]^T; backward_input: cols'[n, g] = w[g]^T gy[n, g], then col2im adds each
// kernel offset's slab of cols' into the padded gradient (one strided add per offset).

void conv_reference_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                            const ConvParams& p) {
  const int64_t g = p.groups, n = x.size(0), o = w.size(0);
  const int64_t ck = w.numel() / o;
  const IntArrayRef out = spatial(y);
  const int64_t l = compute_numel(out);
  const Tensor cols = view(im2col(x, spatial(w), out, p), {n, g, ck, l});
  const Tensor r = matmul(view(w, {1, g, o / g, ck}), cols);  // [N, G, Og, L]
  copy_(y, view(r, y.sizes()));
}

void conv_reference_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                    const ConvParams& p) {
  const int64_t g = p.groups, n = x.size(0), o = gw.size(0);
  const int64_t ck = gw.numel() / o;
  const IntArrayRef out = spatial(gy);
  const int64_t l = compute_numel(out);
  const Tensor cols = view(im2col(x, spatial(gw), out, p), {n, g, ck, l});
  const Tensor a = reshape(permute(view(gy, {n, g, o / g, l}), {1, 2, 0, 3}), {g, o / g, n * l});
  const Tensor b = reshape(permute(cols, {1, 0, 3, 2}), {g, n * l, ck});
  copy_(gw, view(matmul(a, b), gw.sizes()));
}

void conv_reference_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                   const ConvParams& p) {
  const int64_t g = p.groups, n = gx.size(0), c = gx.size(1), o = w.size(0);
  const int64_t ck = w.numel() / o;
  const IntArrayRef out = spatial(gy), k = spatial(w);
  const int64_t l = compute_numel(out), d = spatial_dims(p);
  const Tensor cols = matmul(transpose(view(w, {1, g, o / g, ck}), 2, 3),
                             view(gy, {n, g, o / g, l}));  // [N, G, Cg K, L], contiguous
  DimVector col_sizes{n, c};
  for (int64_t v : k) col_sizes.push_back(v);
  for (int64_t v : out) col_sizes.push_back(v);
  const Tensor cv = view(cols, col_sizes);
  DimVector psizes(gx.sizes());
  for (int64_t i = 0; i < d; ++i) psizes[i + 2] += p.padding_l[i] + p.padding_r[i];
  Tensor gxp = zeros(psizes, TensorOptions(gx.dtype()).device(gx.device()));
  // Each kernel offset j: gxp[n, c, o stride + j dilation] += cols'[n, c, j, o].
  DimVector sizes{n, c}, dst_strides{gxp.stride(0), gxp.stride(1)},
      src_strides{cv.stride(0), cv.stride(1)};
  for (int64_t i = 0; i < d; ++i) {
    sizes.push_back(out[i]);
    dst_strides.push_back(p.stride[i] * gxp.stride(i + 2));
    src_strides.push_back(cv.stride(i + 2 + d));
  }
  DimVector j(static_cast<size_t>(d), 0);
  for (int64_t step = 0, total = compute_numel(k); step < total; ++step) {
    int64_t dst_off = gxp.storage_offset(), src_off = cv.storage_offset();
    for (int64_t i = 0; i < d; ++i) {
      dst_off += j[i] * p.dilation[i] * gxp.stride(i + 2);
      src_off += j[i] * cv.stride(i + 2);
    }
    const Tensor dst = as_strided(gxp, sizes, dst_strides, dst_off);
    binary_out(BinaryOp::kAdd, dst, dst, as_strided(cv, sizes, src_strides, src_off));
    for (int64_t i = d - 1; i >= 0; --i) {  // next offset, row-major
      if (++j[i] < k[i]) break;
      j[i] = 0;
    }
  }
  Tensor inner = gxp;
  for (int64_t i = 0; i < d; ++i) inner = narrow(inner, i + 2, p.padding_l[i], gx.size(i + 2));
  copy_(gx, inner);
}

}  // namespace mutagrad::native

namespace mutagrad {

void Backend::conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                           const ConvParams& params) {
  native::conv_reference_forward(y, x, w, params);
}

void Backend::conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                  const ConvParams& params) {
  native::conv_reference_backward_input(gx, gy, w, params);
}

void Backend::conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                   const ConvParams& params) {
  native::conv_reference_backward_weight(gw, x, gy, params);
}

}  // namespace mutagrad
