// embedding, embedding_renorm_, one_hot, pad, dropout, feature_dropout, bilinear: see nn_ops.h.
//
// Note [Embedding and padding as index maps]
// embedding is index_select of rows; reflect and replicate padding are index_select along each
// padded dim with a map from output to input positions. Their nodes (EmbeddingBackward0,
// Reflection/ReplicationPad{1,2,3}DBackward0) add the gradient back with index_add (out of
// place, differentiable in the gradient), so they differentiate again. Constant padding's
// node is ConstantPadNdBackward0: the gradient padded by the negated pads, as PyTorch's.
// Circular padding is cat of slices (CatBackward0; torch 1.13 records CopySlices), and dropout,
// feature_dropout and bilinear are compositions (MulBackward0, ReshapeAliasBackward0 /
// AddBackward0 as torch's).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/history.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/formula_node.h"
#include "autograd/ops/index_family_ops.h"
#include "autograd/ops/join_ops.h"
#include "autograd/ops/linalg_ops.h"
#include "autograd/ops/nn_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/statistics_ops.h"
#include "autograd/ops/view_ops.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

using autograd::make_formula_node;
using autograd::SavedList;
using autograd::VariableList;

// The index values on the host, checked to lie in [0, bound).
std::vector<int64_t> host_indices(const Tensor& indices, const char* op) {
  if (indices.dtype() != kInt64 && indices.dtype() != kInt32) {
    throw DTypeError(str(op, "(): expected indices of dtype int64 or int32, got ",
                         dtype_name(indices.dtype()), "; convert them with .to(kInt64)"));
  }
  const Tensor host = native::contiguous(native::to(indices.detach(), kCPU, kInt64));
  const int64_t* p = host.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

Tensor index_tensor(const std::vector<int64_t>& v, Device device) {
  return native::to(from_vector(v, {static_cast<int64_t>(v.size())}), device);
}

}  // namespace

// ---- embedding ---------------------------------------------------------------------------------

Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type,
                          CallSite site) {
  const char* op = "embedding_renorm_";
  if (weight.dim() != 2) {
    throw ShapeError(str(op,
                         "(): expected a 2-D weight [num_embeddings, embedding_dim], got shape ",
                         weight.sizes()));
  }
  std::vector<int64_t> rows = host_indices(indices, op);
  for (int64_t r : rows) {
    if (r < 0 || r >= weight.size(0)) {
      throw IndexOutOfRangeError(str(op, "(): index ", r, " is out of range for a weight of ",
                                     weight.size(0), " rows; expected indices in [0, ",
                                     weight.size(0), ")"));
    }
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (rows.empty()) return weight;
  autograd::NoGradGuard no_grad;
  const Tensor idx = index_tensor(rows, weight.device());
  const Tensor picked = weight.index_select(0, idx);
  const Tensor norms = norm(picked, norm_type, {1}, /*keepdim=*/true);
  const Tensor scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0);
  const MutationSite ms{op, site.file, site.line};
  autograd::index_copy_(weight, 0, idx, picked * scale, ms);
  return weight;
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq,
                 CallSite site) {
  const char* op = "embedding";
  if (weight.dim() != 2) {
    throw ShapeError(str(op,
                         "(): expected a 2-D weight [num_embeddings, embedding_dim], got shape ",
                         weight.sizes(), "; pass a table with one row per index"));
  }
  const int64_t num = weight.size(0), width = weight.size(1);
  std::optional<int64_t> pad = padding_idx;
  if (pad) {
    if (*pad < -num || *pad >= num) {
      throw IndexError(str(op, "(): padding_idx ", *pad, " must be within num_embeddings (", num,
                           "): expected a value in [", -num, ", ", num, ")"));
    }
    if (*pad < 0) *pad += num;
  }
  const std::vector<int64_t> host = host_indices(indices, op);
  for (int64_t r : host) {
    if (r < 0 || r >= num) {
      throw IndexOutOfRangeError(str(op, "(): index ", r, " is out of range in self (", num,
                                     " embeddings); expected indices in [0, ", num, ")"));
    }
  }
  check_same_device(op, weight.device(), indices.device());
  if (max_norm) {
    Tensor w = weight;
    embedding_renorm_(w, indices, *max_norm, norm_type, site);
  }
  const Tensor flat = index_tensor(host, weight.device());
  DimVector out_shape(indices.sizes());
  out_shape.push_back(width);
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = reshape(weight.index_select(0, flat), out_shape);
  }
  // EmbeddingBackward0's tangent: the same rows of the weight's tangent (linear in weight).
  autograd::fwd::propagate(op, result, {weight}, [&](const auto& t) {
    return reshape(t[0].index_select(0, flat), out_shape);
  });
  if (autograd::compute_requires_grad_has_jvp(weight)) {
    // Per looked-up row: 0 at padding_idx, 1 / (count of its index) with scale_grad_by_freq.
    Tensor row_scale;
    if (pad || scale_grad_by_freq) {
      std::vector<double> counts(static_cast<size_t>(num), 0.0), s(host.size(), 1.0);
      for (int64_t r : host) counts[static_cast<size_t>(r)] += 1;
      for (size_t i = 0; i < host.size(); ++i) {
        if (scale_grad_by_freq) s[i] = 1.0 / counts[static_cast<size_t>(host[i])];
        if (pad && host[i] == *pad) s[i] = 0.0;
      }
      row_scale = native::to(from_vector(s, {static_cast<int64_t>(s.size()), 1}), weight.device(),
                             weight.dtype());
    }
    const int64_t n = static_cast<int64_t>(host.size());
    auto node = make_formula_node(
        "EmbeddingBackward0", {weight},
        [flat, row_scale, num, width, n](const Tensor& g, const SavedList&, const autograd::Node&) {
          Tensor rows = reshape(g, {n, width});
          if (row_scale.defined()) rows = rows * row_scale;
          const Tensor base = zeros({num, width}, TensorOptions(g.dtype()).device(g.device()));
          return VariableList{base.index_add(0, flat, rows)};
        });
    node->save("indices", indices);
    autograd::set_history(result, node);
  }
  return result;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  const char* op = "one_hot";
  if (indices.dtype() != kInt64) {
    throw DTypeError(str(op, "(): one_hot is only applicable to index tensor of dtype int64, got ",
                         dtype_name(indices.dtype()), "; convert it with .to(kInt64)"));
  }
  const std::vector<int64_t> host = host_indices(indices, op);
  if (num_classes == -1) {
    if (host.empty()) {
      throw ValueError(str(op,
                           "(): can not infer the total number of classes from an empty "
                           "tensor; pass num_classes"));
    }
    num_classes = *std::max_element(host.begin(), host.end()) + 1;
  } else if (num_classes < -1) {
    throw ValueError(str(op, "(): num_classes should be -1 or positive, got ", num_classes));
  }
  for (int64_t v : host) {
    if (v < 0) throw ValueError(str(op, "(): class values must be non-negative, got ", v));
    if (v >= num_classes) {
      throw ValueError(str(op, "(): class values must be smaller than num_classes (", num_classes,
                           "), got ", v));
    }
  }
  autograd::NoGradGuard no_grad;
  const Tensor classes = arange(num_classes, kInt64, indices.device());
  return eq(unsqueeze(indices.detach(), -1), classes).to(kInt64);
}

// ---- pad ---------------------------------------------------------------------------------------

namespace {

// Output position -> input position along one dim of `size` padded by (before, after).
std::vector<int64_t> pad_map(int64_t size, int64_t before, int64_t after, bool reflect) {
  std::vector<int64_t> m;
  for (int64_t i = -before; i < size + after; ++i) {
    int64_t j = i;
    if (reflect) {
      if (j < 0) j = -j;
      if (j >= size) j = 2 * (size - 1) - j;
    } else {
      j = std::min(std::max(j, int64_t{0}), size - 1);
    }
    m.push_back(j);
  }
  return m;
}

Tensor constant_pad(const Tensor& input, IntArrayRef pad, double value) {
  const int64_t nd = input.dim();
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  DimVector shape(input.sizes());
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = nd - 1 - i;
    shape[d] = input.size(d) + pad[2 * i] + pad[2 * i + 1];
    if (shape[d] < 0) {
      throw ShapeError(str("pad(): the input size ", input.size(d), " at dim ", d, " padded by (",
                           pad[2 * i], ", ", pad[2 * i + 1], ") gives a negative size ", shape[d],
                           "; crop less (negative pads remove elements)"));
    }
  }
  Tensor result;
  {
    autograd::NoGradGuard no_grad;
    result = full(shape, value, input.dtype(), input.device());
    Tensor dst = result, src = input.detach();
    bool empty = false;
    for (int64_t i = 0; i < k && !empty; ++i) {
      const int64_t d = nd - 1 - i;
      const int64_t lo = std::max(-pad[2 * i], int64_t{0});
      const int64_t hi = input.size(d) - std::max(-pad[2 * i + 1], int64_t{0});
      const int64_t len = hi - lo;
      if (len <= 0) {
        empty = true;
        break;
      }
      src = src.narrow(d, lo, len);
      dst = dst.narrow(d, std::max(pad[2 * i], int64_t{0}), len);
    }
    if (!empty) native::copy_(dst, src);
  }
  // ConstantPadNdBackward0's tangent: the tangent padded with zeros (linear).
  autograd::fwd::propagate("constant_pad_nd", result, {input}, [&](const auto& t) {
    return mutagrad::pad(t[0], pad, "constant", 0.0);
  });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    DimVector neg;
    for (int64_t p : pad) neg.push_back(-p);
    auto node = make_formula_node("ConstantPadNdBackward0", {input},
                                  [neg](const Tensor& g, const SavedList&, const autograd::Node&) {
                                    return VariableList{mutagrad::pad(g, neg, "constant", 0.0)};
                                  });
    autograd::set_history(result, node);
  }
  return result;
}

const char* pad_node_name(bool reflect, int64_t k) {
  static const char* const kReflect[] = {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0",
                                         "ReflectionPad3DBackward0"};
  static const char* const kReplicate[] = {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0",
                                           "ReplicationPad3DBackward0"};
  return reflect ? kReflect[k - 1] : kReplicate[k - 1];
}

}  // namespace

Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode, double value) {
  const char* op = "pad";
  if (pad.size() % 2 != 0) {
    throw ValueError(str(op, "(): padding length must be divisible by 2, got ", pad.size(),
                         " values ", pad, "; pass (before, after) pairs from the last dim"));
  }
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  const int64_t nd = input.dim();
  if (k > nd) {
    throw ValueError(str(op, "(): padding length ", pad.size(), " is too large for an input of ",
                         nd, " dims; pass at most ", 2 * nd, " values"));
  }
  if (mode == "constant") return constant_pad(input, pad, value);
  const bool reflect = mode == "reflect";
  if (!reflect && mode != "replicate" && mode != "circular") {
    throw ValueError(str(op, "(): unknown padding mode '", mode,
                         "'; expected 'constant', 'reflect', 'replicate' or 'circular'"));
  }
  if (k < 1 || k > 3 || (nd != k + 1 && nd != k + 2)) {
    throw ValueError(str(op, "(): mode '", mode, "' pads the last 1, 2 or 3 dims of an input of ",
                         "that many dims plus 1 or 2 (batch, channel), got ", pad.size(),
                         " pad values for an input of shape ", input.sizes(),
                         "; use mode='constant' for other shapes"));
  }
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = nd - 1 - i, size = input.size(d);
    const int64_t before = pad[2 * i], after = pad[2 * i + 1];
    const bool circular = mode == "circular";
    // Negative pads crop (reflect, replicate), as torch's.
    const bool bad = size + before + after < 0 ||
                     (circular && (before < 0 || after < 0 || before > size || after > size)) ||
                     (reflect && (before >= size || after >= size)) ||
                     (mode == "replicate" && size == 0 && before + after > 0);
    if (bad) {
      throw ValueError(str(op, "(): padding (", before, ", ", after, ") at dimension ", d,
                           " of input ", input.sizes(), " is not allowed for mode '", mode,
                           "': pads must be ", reflect ? "less than" : "at most",
                           " the dim's size (", size, ")", circular ? " and >= 0" : "",
                           ", and not crop more than the dim holds"));
    }
  }
  if (mode == "circular") {
    Tensor out = input;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = nd - 1 - i, size = out.size(d);
      out = cat(
          {out.narrow(d, size - pad[2 * i], pad[2 * i]), out, out.narrow(d, 0, pad[2 * i + 1])}, d);
    }
    return out;
  }
  std::vector<Tensor> maps;
  Tensor result = input.detach();
  {
    autograd::NoGradGuard no_grad;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = nd - 1 - i;
      maps.push_back(index_tensor(pad_map(input.size(d), pad[2 * i], pad[2 * i + 1], reflect),
                                  input.device()));
      result = result.index_select(d, maps.back());
    }
    if (k == 0) result = result.clone();
  }
  // Reflection/ReplicationPad*Backward0's tangent: the same gathers of the tangent (linear).
  autograd::fwd::propagate(pad_node_name(reflect, k), result, {input}, [&](const auto& t) {
    Tensor out = t[0];
    for (int64_t i = 0; i < k; ++i) out = out.index_select(nd - 1 - i, maps[i]);
    return out;
  });
  if (autograd::compute_requires_grad_has_jvp(input)) {
    const DimVector in_shape(input.sizes());
    auto node = make_formula_node(
        pad_node_name(reflect, k), {input},
        [maps, in_shape, nd, k](const Tensor& g, const SavedList&, const autograd::Node&) {
          Tensor out = g;
          for (int64_t i = k - 1; i >= 0; --i) {
            const int64_t d = nd - 1 - i;
            DimVector shape(out.sizes());
            shape[d] = in_shape[d];
            out = zeros(shape, TensorOptions(g.dtype()).device(g.device()))
                      .index_add(d, maps[i], out);
          }
          return VariableList{out};
        });
    autograd::set_history(result, node);
  }
  return result;
}

// ---- dropout -----------------------------------------------------------------------------------

namespace {

Tensor dropout_impl(const Tensor& input, double p, bool train, bool inplace,
                    std::optional<Generator> generator, CallSite site, bool feature) {
  const char* op = feature ? "feature_dropout" : "dropout";
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(str("dropout probability has to be between 0 and 1, but got ", p));
  }
  if (!input.is_floating_point()) {
    throw DTypeError(str(op, "(): expected a floating point input, got ", dtype_name(input.dtype()),
                         "; convert it with .to(kFloat32)"));
  }
  if (feature && input.dim() < 2) {
    throw ShapeError(
        str(op, "(): expected an input of at least 2 dims [N, C, *], got shape ", input.sizes()));
  }
  if (!train || p == 0.0) return input;
  Tensor self = input;
  // Tangent: through the mul / mul_ below.
  if (inplace) autograd::check_inplace(self, autograd::compute_requires_grad_has_jvp(self));
  Tensor noise;
  {
    autograd::NoGradGuard no_grad;
    DimVector shape(input.sizes());
    if (feature) std::fill(shape.begin() + 2, shape.end(), 1);
    noise = empty(shape, TensorOptions(input.dtype()).device(input.device()));
    if (p == 1.0) {
      noise.zero_();
    } else {
      noise.bernoulli_(1.0 - p, generator);
      noise.div_(1.0 - p);
    }
  }
  if (inplace) return self.mul_(noise, site);
  return input * noise;
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool train, bool inplace,
               std::optional<Generator> generator, CallSite site) {
  return dropout_impl(input, p, train, inplace, std::move(generator), site, false);
}

Tensor feature_dropout(const Tensor& input, double p, bool train, bool inplace,
                       std::optional<Generator> generator, CallSite site) {
  return dropout_impl(input, p, train, inplace, std::move(generator), site, true);
}

// ---- bilinear ----------------------------------------------------------------------------------

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias) {
  const char* op = "bilinear";
  if (weight.dim() != 3 || input1.dim() < 1 || input2.dim() != input1.dim()) {
    throw ShapeError(str(op, "(): expected weight [out, in1, in2] and inputs [*, in1], [*, in2] ",
                         "with the same leading dims, got weight ", weight.sizes(), ", input1 ",
                         input1.sizes(), ", input2 ", input2.sizes()));
  }
  const int64_t out = weight.size(0), i1 = weight.size(1), i2 = weight.size(2);
  bool ok = input1.size(-1) == i1 && input2.size(-1) == i2;
  for (int64_t d = 0; ok && d + 1 < input1.dim(); ++d) ok = input1.size(d) == input2.size(d);
  if (!ok) {
    throw ShapeError(str(op, "(): input1 ", input1.sizes(), " and input2 ", input2.sizes(),
                         " must share their leading dims and end in ", i1, " and ", i2, " (weight ",
                         weight.sizes(), ")"));
  }
  if (bias.defined() && !bias.sizes().equals(IntArrayRef{out})) {
    throw ShapeError(str(op, "(): expected bias of shape [", out, "], got ", bias.sizes()));
  }
  int64_t batch = 1;
  for (int64_t d = 0; d + 1 < input1.dim(); ++d) batch *= input1.size(d);
  DimVector out_shape(input1.sizes());
  out_shape.back() = out;
  const Tensor x1 = reshape(input1, {batch, i1});
  const Tensor x2 = reshape(input2, {batch, 1, i2});
  const Tensor w = reshape(permute(weight, {1, 0, 2}), {i1, out * i2});
  Tensor y = reshape(sum(reshape(matmul(x1, w), {batch, out, i2}) * x2, {2}), out_shape);
  return bias.defined() ? y + bias : y;
}

}  // namespace mutagrad
