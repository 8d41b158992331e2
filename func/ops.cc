// The ops of the IR, by name: what the interpreter runs. Each calls the public differentiable
// op, so a replayed graph has the eager program's autograd history.
#include <string>
#include <unordered_map>

#include "func/graph.h"

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

// <view>_scatter(base, src, view args...): base with the view's elements replaced by src, in a
// fresh tensor (Note [Functionalization] in func/functionalize.h).
template <OpFn View>
Tensor op_scatter(const Args& a) {
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
// <view>_copy(base, view args...): the view's elements in a fresh tensor.
template <OpFn View>
Tensor op_view_copy(const Args& a) {
  return View(a).clone();
}

// ---- functional ops ----------------------------------------------------------------------------
Tensor op_clone(const Args& a) { return T(a, 0).clone(); }
Tensor op_to(const Args& a) {
  if (!is_none(a, 2) && I(a, 2) == 0) {
    throw CaptureError("to", "to(): a copy to another device is not supported by func yet");
  }
  return mutagrad::to(T(a, 0), std::get<ScalarType>(a.at(1)));
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

const std::unordered_map<std::string, OpFn>& op_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, OpFn>();
    auto view = [&](const std::string& name, OpFn fn, OpFn scatter, OpFn copy) {
      (*t)[name] = fn;
      (*t)[name + "_scatter"] = scatter;
      (*t)[name + "_copy"] = copy;
    };
#define MUTAGRAD_FUNC_VIEW(name) \
  view(#name, &op_##name, &op_scatter<&op_##name>, &op_view_copy<&op_##name>)
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

}  // namespace mutagrad::func
