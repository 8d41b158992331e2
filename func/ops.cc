// The ops of the IR, by name: what the interpreter runs. Each calls the public differentiable
// op, so a replayed graph has the eager program's autograd history.
#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>

#include "func/graph.h"
#include "tensor/native/factories.h"

namespace mutagrad::func {

namespace {

using autograd::capture::Arg;
using autograd::capture::Args;

const Tensor& T(const Args& a, size_t i) { return std::get<Tensor>(a.at(i)); }
bool is_tensor(const Args& a, size_t i) {
  return i < a.size() && std::holds_alternative<Tensor>(a[i]);
}
bool is_none(const Args& a, size_t i) {
  return i >= a.size() || std::holds_alternative<std::monostate>(a[i]);
}
Scalar S(const Args& a, size_t i) { return std::get<Scalar>(a.at(i)); }
int64_t I(const Args& a, size_t i) { return S(a, i).to<int64_t>(); }
std::optional<int64_t> OI(const Args& a, size_t i) {
  if (is_none(a, i)) return std::nullopt;
  return I(a, i);
}
const std::vector<int64_t>& L(const Args& a, size_t i) {
  return std::get<std::vector<int64_t>>(a.at(i));
}
const std::vector<Tensor>& TL(const Args& a, size_t i) {
  return std::get<std::vector<Tensor>>(a.at(i));
}
Scalar alpha(const Args& a, size_t i) { return is_none(a, i) ? Scalar(int64_t{1}) : S(a, i); }
bool B(const Args& a, size_t i) { return S(a, i).to<bool>(); }
std::optional<Scalar> OS(const Args& a, size_t i) {
  if (is_none(a, i)) return std::nullopt;
  return S(a, i);
}
const std::string& STR(const Args& a, size_t i) { return std::get<std::string>(a.at(i)); }

// ---- views -------------------------------------------------------------------------------------
Tensor op_select(const Args& a) { return mutagrad::select(T(a, 0), I(a, 1), I(a, 2)); }
Tensor op_slice(const Args& a) {
  return mutagrad::slice(T(a, 0), I(a, 1), OI(a, 2), OI(a, 3), I(a, 4));
}
Tensor op_narrow(const Args& a) { return mutagrad::narrow(T(a, 0), I(a, 1), I(a, 2), I(a, 3)); }
Tensor op_permute(const Args& a) { return mutagrad::permute(T(a, 0), L(a, 1)); }
Tensor op_transpose(const Args& a) { return mutagrad::transpose(T(a, 0), I(a, 1), I(a, 2)); }
Tensor op_t(const Args& a) { return mutagrad::t(T(a, 0)); }
Tensor op_expand(const Args& a) { return mutagrad::expand(T(a, 0), L(a, 1)); }
Tensor op_unsqueeze(const Args& a) { return mutagrad::unsqueeze(T(a, 0), I(a, 1)); }
Tensor op_squeeze(const Args& a) {
  return is_none(a, 1) ? mutagrad::squeeze(T(a, 0)) : mutagrad::squeeze(T(a, 0), I(a, 1));
}
Tensor op_view(const Args& a) { return mutagrad::view(T(a, 0), L(a, 1)); }
Tensor op_reshape(const Args& a) { return mutagrad::reshape(T(a, 0), L(a, 1)); }
Tensor op_alias(const Args& a) { return mutagrad::alias(T(a, 0)); }
Tensor op_diagonal(const Args& a) { return mutagrad::diagonal(T(a, 0), I(a, 1), I(a, 2), I(a, 3)); }
// Captured only on a contiguous tensor at storage offset 0 (func/capture.cc), where offsets into
// the storage are offsets into the tensor: replayed on the same layout.
Tensor op_as_strided(const Args& a) {
  const Tensor& self = T(a, 0);
  if (!self.is_contiguous() || self.storage_offset() != 0) {
    throw CaptureError("as_strided",
                       str("as_strided(): the graph replays as_strided on a contiguous tensor "
                           "at storage offset 0, but got one of strides ",
                           self.strides(), " at offset ", self.storage_offset(),
                           "; pass contiguous inputs (.contiguous())"));
  }
  return mutagrad::as_strided(self, L(a, 1), L(a, 2), OI(a, 3));
}

// <view>_scatter(base, src, view args...): base with the view's elements replaced by src, in a
// fresh tensor (Note [Functionalization] in func/functionalize.h).
template <OpFn View>
Tensor op_view_scatter(const Args& a) {
  Tensor out = T(a, 0).clone();
  Args view_args{out};
  view_args.insert(view_args.end(), a.begin() + 2, a.end());
  Tensor v = View(view_args);
  if (!v.is_alias_of(out)) {
    throw InternalError("a view op replayed on a fresh base made a copy: no scatter possible");
  }
  v.copy_(T(a, 1));
  return out;
}
// Note [Signed zeros of functionalized gradients]
// Eager backward through a write into a view (CopySlices) gives the base's gradient outside the
// view exactly as it arrives and, inside, exactly what the in-place op's backward gives. The
// functional form splits it in two: the scatter's gradient for its base (the view's elements
// zeroed) plus the gradient of the write's read of the view (the view's backward: zeros outside
// it); the engine adds them, and +0.0 + -0.0 is +0.0, so a -0.0 element of eager's came out
// +0.0. The nodes functionalize makes for a write (Node::write_path) fill those elements with
// -0.0 instead, the additive identity of IEEE arithmetic (x + -0.0 == x for every x, -0.0
// included): neg(view(neg(base))) and neg(view_scatter(neg(base), neg(src))) have the values of
// view(base) and view_scatter(base, src) (neg is exact) and the gradients of the standard ops
// with every zero they make negated. A write that reads nothing of the view (copy_, fill_) keeps
// the +0.0 of its innermost scatter, as eager's CopySlices zeroes that region; other dtypes have
// no signed zeros and keep the standard ops.
template <OpFn View>
Tensor op_write_read(const Args& a) {
  if (!T(a, 0).is_floating_point()) return View(a).clone();
  Args b = a;
  b[0] = mutagrad::neg(T(a, 0));
  return mutagrad::neg(View(b));
}
template <OpFn View>
Tensor op_write_scatter(const Args& a) {
  if (!T(a, 0).is_floating_point() || !T(a, 1).is_floating_point()) {
    return op_view_scatter<View>(a);
  }
  Args b = a;
  b[0] = mutagrad::neg(T(a, 0));
  b[1] = mutagrad::neg(T(a, 1));
  return mutagrad::neg(op_view_scatter<View>(b));
}

// Whether `v`'s elements fill a dense block in some order of its dims (a transpose, a
// permute), so that a fresh tensor can take its strides.
bool is_dense_permutation(const Tensor& v) {
  if (v.numel() == 0) return false;
  std::vector<int64_t> dims(static_cast<size_t>(v.dim()));
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int64_t x, int64_t y) { return v.stride(x) > v.stride(y); });
  int64_t expected = 1;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (v.size(*it) == 1) continue;
    if (v.stride(*it) != expected) return false;
    expected *= v.size(*it);
  }
  return true;
}

// <view>_copy(base, view args...): the view's elements in a fresh tensor.
// Note [Copies keep the view's layout]: a view that is a permutation of a dense block (t(x))
// is copied into a tensor of the same strides, so an op whose rounding depends on its
// operands' layout (matmul's GEMM) gives on the copy the bits it gives on the view: the
// mutations_and_views graph stays bitwise equal to eager.
template <OpFn View>
Tensor op_view_copy(const Args& a) {
  Tensor v = View(a);
  if (v.is_contiguous() || !is_dense_permutation(v)) return v.clone();
  Tensor out = empty_strided(v.sizes(), v.strides(), TensorOptions(v.dtype()).device(v.device()));
  out.copy_(v);  // differentiable: the copy's gradient flows to the view's base
  return out;
}

// ---- functional ops ----------------------------------------------------------------------------
Tensor op_clone(const Args& a) { return T(a, 0).clone(); }
// to(self, dtype, device): the device by name ("cpu", "cuda:0").
Tensor op_to(const Args& a) {
  const ScalarType dtype = std::get<ScalarType>(a.at(1));
  if (a.size() > 2 && std::holds_alternative<std::string>(a[2])) {
    return mutagrad::to(T(a, 0), parse_device(STR(a, 2)), dtype);
  }
  return mutagrad::to(T(a, 0), dtype);
}
Tensor op_masked_fill(const Args& a) {
  return is_tensor(a, 2) ? mutagrad::masked_fill(T(a, 0), T(a, 1), T(a, 2))
                         : mutagrad::masked_fill(T(a, 0), T(a, 1), S(a, 2));
}
Tensor op_index(const Args& a) { return autograd::index(T(a, 0), TL(a, 1)); }
Tensor op_index_put(const Args& a) {
  return autograd::index_put(T(a, 0), TL(a, 1), T(a, 2), S(a, 3).to<bool>());
}
// copy(self, src): what copy_ writes: src in self's dtype, device and shape.
Tensor op_copy(const Args& a) {
  const Tensor& self = T(a, 0);
  return mutagrad::to(T(a, 1), self.device(), self.dtype()).expand(self.sizes()).clone();
}
// fill(self, value): what fill_ writes.
Tensor op_fill(const Args& a) {
  const Tensor& self = T(a, 0);
  return full(self.sizes(), S(a, 1), self.dtype(), self.device());
}

Tensor op_add(const Args& a) {
  return is_tensor(a, 1) ? mutagrad::add(T(a, 0), T(a, 1), alpha(a, 2))
                         : mutagrad::add(T(a, 0), S(a, 1), alpha(a, 2));
}
Tensor op_sub(const Args& a) {
  return is_tensor(a, 1) ? mutagrad::sub(T(a, 0), T(a, 1), alpha(a, 2))
                         : mutagrad::sub(T(a, 0), S(a, 1), alpha(a, 2));
}
Tensor op_mul(const Args& a) {
  return is_tensor(a, 1) ? mutagrad::mul(T(a, 0), T(a, 1)) : mutagrad::mul(T(a, 0), S(a, 1));
}
Tensor op_div(const Args& a) {
  return is_tensor(a, 1) ? mutagrad::div(T(a, 0), T(a, 1)) : mutagrad::div(T(a, 0), S(a, 1));
}
Tensor op_maximum(const Args& a) { return mutagrad::maximum(T(a, 0), T(a, 1)); }
Tensor op_minimum(const Args& a) { return mutagrad::minimum(T(a, 0), T(a, 1)); }

#define MUTAGRAD_FUNC_COMPARE(name)                                                               \
  Tensor op_##name(const Args& a) {                                                               \
    return is_tensor(a, 1) ? mutagrad::name(T(a, 0), T(a, 1)) : mutagrad::name(T(a, 0), S(a, 1)); \
  }
MUTAGRAD_FUNC_COMPARE(eq)
MUTAGRAD_FUNC_COMPARE(ne)
MUTAGRAD_FUNC_COMPARE(lt)
MUTAGRAD_FUNC_COMPARE(le)
MUTAGRAD_FUNC_COMPARE(gt)
MUTAGRAD_FUNC_COMPARE(ge)
#undef MUTAGRAD_FUNC_COMPARE

// ---- reductions, products, selection -----------------------------------------------------------
// sum(self) or sum(self, dims, keepdim); the same for mean, prod, amax, amin.
template <Tensor (*All)(const Tensor&), Tensor (*Dims)(const Tensor&, IntArrayRef, bool)>
Tensor op_reduce(const Args& a) {
  return is_none(a, 1) ? All(T(a, 0)) : Dims(T(a, 0), L(a, 1), B(a, 2));
}
Tensor op_amax(const Args& a) { return mutagrad::amax(T(a, 0), L(a, 1), B(a, 2)); }
Tensor op_amin(const Args& a) { return mutagrad::amin(T(a, 0), L(a, 1), B(a, 2)); }
// max(self, dim, keepdim)'s two results, one op each.
Tensor op_max_values(const Args& a) { return mutagrad::max_dim(T(a, 0), I(a, 1), B(a, 2)).first; }
Tensor op_max_indices(const Args& a) { return mutagrad::max_dim(T(a, 0), I(a, 1), B(a, 2)).second; }
Tensor op_min_values(const Args& a) { return mutagrad::min_dim(T(a, 0), I(a, 1), B(a, 2)).first; }
Tensor op_min_indices(const Args& a) { return mutagrad::min_dim(T(a, 0), I(a, 1), B(a, 2)).second; }
Tensor op_mm(const Args& a) { return mutagrad::mm(T(a, 0), T(a, 1)); }
Tensor op_matmul(const Args& a) { return mutagrad::matmul(T(a, 0), T(a, 1)); }
Tensor op_bmm(const Args& a) { return mutagrad::bmm(T(a, 0), T(a, 1)); }
Tensor op_where(const Args& a) { return mutagrad::where(T(a, 0), T(a, 1), T(a, 2)); }
// pow(self, exponent) with a tensor or a number on either side.
Tensor op_pow(const Args& a) {
  if (!is_tensor(a, 0)) return mutagrad::pow(S(a, 0), T(a, 1));
  return is_tensor(a, 1) ? mutagrad::pow(T(a, 0), T(a, 1)) : mutagrad::pow(T(a, 0), S(a, 1));
}
Tensor op_pow_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 1) ? self.pow_(T(a, 1)) : self.pow_(S(a, 1));
}
// clamp(self, min, max): either bound may be None; the bounds are numbers or tensors.
bool tensor_bounds(const Args& a) { return is_tensor(a, 1) || is_tensor(a, 2); }
Tensor bound(const Args& a, size_t i) { return is_tensor(a, i) ? T(a, i) : Tensor(); }
Tensor op_clamp(const Args& a) {
  if (tensor_bounds(a)) return mutagrad::clamp(T(a, 0), bound(a, 1), bound(a, 2));
  return mutagrad::clamp(T(a, 0), OS(a, 1), OS(a, 2));
}
Tensor op_clamp_(const Args& a) {
  Tensor self = T(a, 0);
  if (tensor_bounds(a)) return mutagrad::clamp_(self, bound(a, 1), bound(a, 2));
  return self.clamp_(OS(a, 1), OS(a, 2));
}

// ---- the index_add/index_copy/index_fill and scatter families -----------------------------------
Tensor op_index_add(const Args& a) {
  return T(a, 0).index_add(I(a, 1), T(a, 2), T(a, 3), alpha(a, 4));
}
Tensor op_index_add_(const Args& a) {
  Tensor self = T(a, 0);
  return self.index_add_(I(a, 1), T(a, 2), T(a, 3), alpha(a, 4));
}
Tensor op_index_copy(const Args& a) { return T(a, 0).index_copy(I(a, 1), T(a, 2), T(a, 3)); }
Tensor op_index_copy_(const Args& a) {
  Tensor self = T(a, 0);
  return self.index_copy_(I(a, 1), T(a, 2), T(a, 3));
}
Tensor op_index_fill(const Args& a) {
  return is_tensor(a, 3) ? T(a, 0).index_fill(I(a, 1), T(a, 2), T(a, 3))
                         : T(a, 0).index_fill(I(a, 1), T(a, 2), S(a, 3));
}
Tensor op_index_fill_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 3) ? self.index_fill_(I(a, 1), T(a, 2), T(a, 3))
                         : self.index_fill_(I(a, 1), T(a, 2), S(a, 3));
}
Tensor op_scatter(const Args& a) {
  return is_tensor(a, 3) ? T(a, 0).scatter(I(a, 1), T(a, 2), T(a, 3))
                         : T(a, 0).scatter(I(a, 1), T(a, 2), S(a, 3));
}
Tensor op_scatter_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 3) ? self.scatter_(I(a, 1), T(a, 2), T(a, 3))
                         : self.scatter_(I(a, 1), T(a, 2), S(a, 3));
}
Tensor op_scatter_add(const Args& a) { return T(a, 0).scatter_add(I(a, 1), T(a, 2), T(a, 3)); }
Tensor op_scatter_add_(const Args& a) {
  Tensor self = T(a, 0);
  return self.scatter_add_(I(a, 1), T(a, 2), T(a, 3));
}
Tensor op_scatter_reduce(const Args& a) {
  return T(a, 0).scatter_reduce(I(a, 1), T(a, 2), T(a, 3), STR(a, 4), B(a, 5));
}
Tensor op_scatter_reduce_(const Args& a) {
  Tensor self = T(a, 0);
  return self.scatter_reduce_(I(a, 1), T(a, 2), T(a, 3), STR(a, 4), B(a, 5));
}

// Unary ops without arguments: the out-of-place function and the in-place member.
template <Tensor (*F)(const Tensor&)>
Tensor op_unary(const Args& a) {
  if (!is_none(a, 1) || !is_none(a, 2)) {
    throw CaptureError("unary", "a unary op with arguments is not supported by func yet");
  }
  return F(T(a, 0));
}
template <Tensor& (Tensor::*F)(CallSite)>
Tensor op_unary_(const Args& a) {
  if (!is_none(a, 1) || !is_none(a, 2)) {
    throw CaptureError("unary", "a unary op with arguments is not supported by func yet");
  }
  Tensor self = T(a, 0);
  return (self.*F)(CallSite::current());
}

// ---- in-place ops (the captured program's writes) -----------------------------------------------
Tensor op_copy_(const Args& a) {
  Tensor self = T(a, 0);
  return self.copy_(T(a, 1));
}
Tensor op_fill_(const Args& a) {
  Tensor self = T(a, 0);
  return self.fill_(S(a, 1));
}
Tensor op_masked_fill_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 2) ? self.masked_fill_(T(a, 1), T(a, 2))
                         : self.masked_fill_(T(a, 1), S(a, 2));
}
Tensor op_index_put_(const Args& a) {
  Tensor self = T(a, 0);
  return self.index_put_(TL(a, 1), T(a, 2), S(a, 3).to<bool>());
}
Tensor op_add_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 1) ? self.add_(T(a, 1), alpha(a, 2)) : self.add_(S(a, 1));
}
Tensor op_sub_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 1) ? self.sub_(T(a, 1), alpha(a, 2)) : self.sub_(S(a, 1));
}
Tensor op_mul_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 1) ? self.mul_(T(a, 1)) : self.mul_(S(a, 1));
}
Tensor op_div_(const Args& a) {
  Tensor self = T(a, 0);
  return is_tensor(a, 1) ? self.div_(T(a, 1)) : self.div_(S(a, 1));
}

const std::string kWritePath = "write_path:";

const std::unordered_map<std::string, OpFn>& op_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, OpFn>();
    auto view = [&](const std::string& name, OpFn fn, OpFn scatter, OpFn copy, OpFn read,
                    OpFn write_scatter) {
      (*t)[name] = fn;
      (*t)[name + "_scatter"] = scatter;
      (*t)[name + "_copy"] = copy;
      // Note [Signed zeros of functionalized gradients]: Node::write_path's forms.
      (*t)[kWritePath + name] = read;
      (*t)[kWritePath + name + "_copy"] = read;
      (*t)[kWritePath + name + "_scatter"] = write_scatter;
    };
#define MUTAGRAD_FUNC_VIEW(name)                                                   \
  view(#name, &op_##name, &op_view_scatter<&op_##name>, &op_view_copy<&op_##name>, \
       &op_write_read<&op_##name>, &op_write_scatter<&op_##name>)
    MUTAGRAD_FUNC_VIEW(select);
    MUTAGRAD_FUNC_VIEW(slice);
    MUTAGRAD_FUNC_VIEW(narrow);
    MUTAGRAD_FUNC_VIEW(permute);
    MUTAGRAD_FUNC_VIEW(transpose);
    MUTAGRAD_FUNC_VIEW(t);
    MUTAGRAD_FUNC_VIEW(expand);
    MUTAGRAD_FUNC_VIEW(unsqueeze);
    MUTAGRAD_FUNC_VIEW(squeeze);
    MUTAGRAD_FUNC_VIEW(view);
    MUTAGRAD_FUNC_VIEW(reshape);
    MUTAGRAD_FUNC_VIEW(alias);
    MUTAGRAD_FUNC_VIEW(diagonal);
    MUTAGRAD_FUNC_VIEW(as_strided);
#undef MUTAGRAD_FUNC_VIEW
    (*t)["clone"] = &op_clone;
    (*t)["to"] = &op_to;
    (*t)["masked_fill"] = &op_masked_fill;
    (*t)["index"] = &op_index;
    (*t)["index_put"] = &op_index_put;
    (*t)["copy"] = &op_copy;
    (*t)["fill"] = &op_fill;
    (*t)["add"] = &op_add;
    (*t)["sub"] = &op_sub;
    (*t)["mul"] = &op_mul;
    (*t)["div"] = &op_div;
    (*t)["maximum"] = &op_maximum;
    (*t)["minimum"] = &op_minimum;
    (*t)["eq"] = &op_eq;
    (*t)["ne"] = &op_ne;
    (*t)["lt"] = &op_lt;
    (*t)["le"] = &op_le;
    (*t)["gt"] = &op_gt;
    (*t)["ge"] = &op_ge;
    (*t)["copy_"] = &op_copy_;
    (*t)["fill_"] = &op_fill_;
    (*t)["masked_fill_"] = &op_masked_fill_;
    (*t)["index_put_"] = &op_index_put_;
    (*t)["add_"] = &op_add_;
    (*t)["sub_"] = &op_sub_;
    (*t)["mul_"] = &op_mul_;
    (*t)["div_"] = &op_div_;
    using TensorFn = Tensor (*)(const Tensor&);
    using DimsFn = Tensor (*)(const Tensor&, IntArrayRef, bool);
    (*t)["sum"] =
        &op_reduce<static_cast<TensorFn>(&mutagrad::sum), static_cast<DimsFn>(&mutagrad::sum)>;
    (*t)["mean"] =
        &op_reduce<static_cast<TensorFn>(&mutagrad::mean), static_cast<DimsFn>(&mutagrad::mean)>;
    (*t)["prod"] =
        &op_reduce<static_cast<TensorFn>(&mutagrad::prod), static_cast<DimsFn>(&mutagrad::prod)>;
    (*t)["max"] =
        &op_reduce<static_cast<TensorFn>(&mutagrad::max), static_cast<DimsFn>(&mutagrad::max)>;
    (*t)["min"] =
        &op_reduce<static_cast<TensorFn>(&mutagrad::min), static_cast<DimsFn>(&mutagrad::min)>;
    (*t)["amax"] = &op_amax;
    (*t)["amin"] = &op_amin;
    (*t)["max_values"] = &op_max_values;
    (*t)["max_indices"] = &op_max_indices;
    (*t)["min_values"] = &op_min_values;
    (*t)["min_indices"] = &op_min_indices;
    (*t)["mm"] = &op_mm;
    (*t)["matmul"] = &op_matmul;
    (*t)["bmm"] = &op_bmm;
    (*t)["where"] = &op_where;
    (*t)["pow"] = &op_pow;
    (*t)["pow_"] = &op_pow_;
    (*t)["clamp"] = &op_clamp;
    (*t)["clamp_"] = &op_clamp_;
    (*t)["index_add"] = &op_index_add;
    (*t)["index_add_"] = &op_index_add_;
    (*t)["index_copy"] = &op_index_copy;
    (*t)["index_copy_"] = &op_index_copy_;
    (*t)["index_fill"] = &op_index_fill;
    (*t)["index_fill_"] = &op_index_fill_;
    (*t)["scatter"] = &op_scatter;
    (*t)["scatter_"] = &op_scatter_;
    (*t)["scatter_add"] = &op_scatter_add;
    (*t)["scatter_add_"] = &op_scatter_add_;
    (*t)["scatter_reduce"] = &op_scatter_reduce;
    (*t)["scatter_reduce_"] = &op_scatter_reduce_;
#define MUTAGRAD_FUNC_UNARY(name)                                                   \
  (*t)[#name] = &op_unary<static_cast<Tensor (*)(const Tensor&)>(&mutagrad::name)>; \
  (*t)[#name "_"] = &op_unary_<&Tensor::name##_>
    MUTAGRAD_FUNC_UNARY(neg);
    MUTAGRAD_FUNC_UNARY(abs);
    MUTAGRAD_FUNC_UNARY(exp);
    MUTAGRAD_FUNC_UNARY(log);
    MUTAGRAD_FUNC_UNARY(sqrt);
    MUTAGRAD_FUNC_UNARY(sin);
    MUTAGRAD_FUNC_UNARY(cos);
    MUTAGRAD_FUNC_UNARY(tan);
    MUTAGRAD_FUNC_UNARY(tanh);
    MUTAGRAD_FUNC_UNARY(sigmoid);
    MUTAGRAD_FUNC_UNARY(relu);
    MUTAGRAD_FUNC_UNARY(sign);
    MUTAGRAD_FUNC_UNARY(rsqrt);
    MUTAGRAD_FUNC_UNARY(expm1);
    MUTAGRAD_FUNC_UNARY(log1p);
    MUTAGRAD_FUNC_UNARY(floor);
    MUTAGRAD_FUNC_UNARY(ceil);
    MUTAGRAD_FUNC_UNARY(trunc);
    MUTAGRAD_FUNC_UNARY(frac);
    MUTAGRAD_FUNC_UNARY(reciprocal);
    MUTAGRAD_FUNC_UNARY(erf);
#undef MUTAGRAD_FUNC_UNARY
    return t;
  }();
  return *table;
}

}  // namespace

OpFn find_op(const std::string& name) {
  const auto& table = op_table();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

OpFn find_op(const Node& node) {
  if (node.write_path) {
    if (OpFn fn = find_op(kWritePath + node.op)) return fn;
  }
  return find_op(node.op);
}

}  // namespace mutagrad::func
