// Raw element-wise ops: PyTorch's type promotion, broadcasting, validation and output
// allocation, then the device's backend. See tensor/native/pointwise.h.
#include "tensor/native/pointwise.h"

#include <initializer_list>
#include <limits>
#include <optional>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/fma.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

// PyTorch's ResultTypeState: the promoted dtype of the dimensioned tensors, of the 0-dim
// tensors and of the Python scalars (wrapped numbers), combined by category.
struct ResultTypeState {
  std::optional<ScalarType> dim, zero, wrapped;

  static void update(std::optional<ScalarType>& slot, ScalarType t) {
    slot = slot ? promote_types(*slot, t) : t;
  }
  void add(const Tensor& t) { update(t.dim() > 0 ? dim : zero, t.dtype()); }
  // A floating scalar counts as the default dtype (float32), as in PyTorch.
  void add(const Scalar& s) { update(wrapped, s.is_floating_point() ? default_dtype() : s.type()); }

  // The lower slot only matters when it is of a higher category than the higher slot.
  static std::optional<ScalarType> combine(std::optional<ScalarType> higher,
                                           std::optional<ScalarType> lower) {
    if (!higher) return lower;
    if (!lower || is_floating_point(*higher)) return higher;
    if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
    return higher;
  }
  ScalarType result() const {
    std::optional<ScalarType> r = combine(dim, combine(zero, wrapped));
    MG_INTERNAL_ASSERT(r.has_value(), "result_type of no operands");
    return *r;
  }
};

// As PyTorch's canCast: no floating -> integral, no non-bool -> bool.
bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && is_integral(to, /*include_bool=*/true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

void check_can_cast(ScalarType result, const Tensor& out, const char* op) {
  if (!can_cast(result, out.dtype())) {
    throw DTypeError(str(op, "(): result type ", legacy_type_name(result),
                         " can't be cast to the desired output type ",
                         legacy_type_name(out.dtype()),
                         "; write into a tensor of a wider dtype or convert the inputs first"));
  }
}

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.unsafe_impl()->data() == b.unsafe_impl()->data() && a.dtype() == b.dtype() &&
         a.sizes() == b.sizes() && a.strides() == b.strides();
}

// An input of an op writing into `out`: a partial overlap is read first (cloned); the exact
// same elements (in place) are fine, each is read before it is written.
Tensor guard_overlap(const Tensor& out, const Tensor& in) {
  if (may_overlap(out, in) && !same_geometry(out, in)) return clone(in);
  return in;
}

MaybeOwned expand_to_maybe(const Tensor& t, IntArrayRef shape) {
  return t.sizes().equals(shape) ? MaybeOwned::borrowed(t) : MaybeOwned::owned(expand(t, shape));
}
MaybeOwned expand_to_maybe(const Tensor&& t, IntArrayRef shape) = delete;
Tensor expand_to(const Tensor& t, IntArrayRef shape) { return *expand_to_maybe(t, shape); }

Tensor new_tensor(IntArrayRef sizes, ScalarType dtype, Device device) {
  return empty(sizes, TensorOptions(dtype).device(device));
}

// `t` on `device`: a 0-dim CPU tensor moves (as PyTorch lets CPU scalars meet CUDA tensors);
// anything else on another device is a DeviceError.
Tensor on_device(const Tensor& t, Device device, const char* op) {
  if (t.device() == device) return t;
  if (t.dim() == 0 && t.device().is_cpu()) {
    Tensor moved = new_tensor({}, t.dtype(), device);
    copy_(moved, t);
    return moved;
  }
  check_same_device(op, device, t.device());
  return t;  // not reached
}
MaybeOwned on_device_maybe(const Tensor& t, Device device, const char* op) {
  return t.device() == device ? MaybeOwned::borrowed(t)
                              : MaybeOwned::owned(on_device(t, device, op));
}
MaybeOwned on_device_maybe(const Tensor&& t, Device device, const char* op) = delete;

// Where an op over `ts` runs: the device of the first tensor that is not a 0-dim CPU tensor
// (those follow the others, as in PyTorch), else the CPU.
Device common_device(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (!(t->dim() == 0 && t->device().is_cpu())) return t->device();
  }
  return kCPU;
}

// Validates a unary op and returns the dtype it computes in (its input dtype).
ScalarType unary_compute_dtype(UnaryOp op, const Tensor& self, const UnaryArgs& args) {
  const ScalarType t = self.dtype();
  switch (op) {
    case UnaryOp::kNeg:
      if (t == kBool) {
        throw DTypeError(
            "neg(): Negation, the `-` operator, on a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      }
      return t;
    case UnaryOp::kAbs:
      if (t == kBool) {
        throw DTypeError(
            "abs(): \"abs_cpu\" not implemented for 'Bool'; convert the tensor to "
            "an integer or floating dtype first");
      }
      return t;
    case UnaryOp::kRelu:
      if (t == kBool) {
        throw DTypeError(
            "relu(): Boolean inputs not supported for relu; convert the tensor to "
            "an integer or floating dtype first");
      }
      return t;
    case UnaryOp::kLogicalNot:
      return t;
    case UnaryOp::kPowScalar: {
      if (!args.has_arg) throw ValueError("pow(): the exponent is missing (UnaryArgs::arg)");
      ResultTypeState s;
      s.add(self);
      s.add(args.arg);
      ScalarType r = s.result();
      if (r == kBool) {
        throw DTypeError(
            "pow(): \"pow\" not implemented for 'Bool'; convert the tensor to an "
            "integer or floating dtype first");
      }
      if (is_integral(r, false) && args.arg.is_integral() && args.arg.to<int64_t>() < 0) {
        throw ValueError(str("pow(): Integers to negative integer powers are not allowed (",
                             dtype_name(r), " tensor to the power ", args.arg,
                             "); convert the tensor to a floating dtype first"));
      }
      check_scalar_fits(args.arg, r, "pow");
      return r;
    }
    case UnaryOp::kClamp: {
      if (!args.has_arg && !args.has_arg2) {
        throw ValueError("clamp(): At least one of 'min' or 'max' must not be None");
      }
      ResultTypeState s;
      s.add(self);
      if (args.has_arg) s.add(args.arg);
      if (args.has_arg2) s.add(args.arg2);
      const ScalarType r = s.result();
      if (args.has_arg) check_scalar_fits(args.arg, r, "clamp");
      if (args.has_arg2) check_scalar_fits(args.arg2, r, "clamp");
      return r;
    }
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kTrunc:
    case UnaryOp::kRound:
      if (t == kBool) {
        throw DTypeError(str(unary_op_name(op), "(): \"", unary_op_name(op),
                             "\" not implemented for 'Bool'; convert the tensor to an integer or "
                             "floating dtype first"));
      }
      if (op == UnaryOp::kRound && args.has_arg && !is_floating_point(t)) {
        throw DTypeError(str("round(): decimals=", args.arg, " is not implemented for ",
                             legacy_type_name(t),
                             " tensors (only floating ones); convert with .to(kFloat64)"));
      }
      return t;
    case UnaryOp::kFrac:
      if (!is_floating_point(t)) {
        throw DTypeError(str("frac(): \"frac\" not implemented for '", legacy_type_name(t),
                             "'; convert the tensor to a floating dtype first"));
      }
      return t;
    case UnaryOp::kBitwiseNot:
      if (is_floating_point(t)) {
        throw DTypeError(str("bitwise_not(): \"bitwise_not\" not implemented for '",
                             legacy_type_name(t),
                             "'; it takes integer or bool tensors (use logical_not for masks)"));
      }
      return t;
    case UnaryOp::kPolygamma:
      if (!args.has_arg || !args.arg.is_integral() || args.arg.to<int64_t>() < 0) {
        throw ValueError(str("polygamma(n, x) does not support negative n (n = ", args.arg,
                             "); pass an order n >= 0"));
      }
      return is_floating_point(t) ? t : default_dtype();
    case UnaryOp::kSign:
    case UnaryOp::kNanToNum:
    case UnaryOp::kIsNan:
    case UnaryOp::kIsInf:
    case UnaryOp::kIsFinite:
      return t;
    default:
      MG_INTERNAL_ASSERT(is_float_only(op), "unknown unary op ", static_cast<int>(op));
      return is_floating_point(t) ? t : default_dtype();
  }
}

ScalarType unary_result_dtype(UnaryOp op, ScalarType compute) {
  return is_predicate(op) ? kBool : compute;
}

}  // namespace

void check_binary_dtypes(BinaryOp op, ScalarType a, ScalarType b) {
  const char* name = binary_op_name(op);
  const bool any_float = is_floating_point(a) || is_floating_point(b);
  const bool both_bool = a == kBool && b == kBool;
  switch (op) {
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod:
    case BinaryOp::kFloorDivide:
    case BinaryOp::kTruncDivide:
      if (both_bool) {
        throw DTypeError(str(name, "(): \"", name,
                             "\" not implemented for 'Bool'; convert the tensors to an integer "
                             "or floating dtype first"));
      }
      break;
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRight:
    case BinaryOp::kBitwiseAnd:
    case BinaryOp::kBitwiseOr:
    case BinaryOp::kBitwiseXor: {
      const bool is_shift = op == BinaryOp::kShiftLeft || op == BinaryOp::kShiftRight;
      if (any_float || (is_shift && both_bool)) {
        throw DTypeError(str(name, "(): \"", name, "\" not implemented for '",
                             legacy_type_name(any_float ? (is_floating_point(a) ? a : b) : a),
                             "'; it takes integer", is_shift ? "" : " or bool",
                             " tensors (convert with .to(kInt64))"));
      }
      break;
    }
    default:
      break;
  }
  if (op == BinaryOp::kSub && (a == kBool || b == kBool)) {
    if (a == kBool && b == kBool) {
      throw DTypeError(
          "sub(): Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
          "`^` or `logical_xor()` operator instead.");
    }
    throw DTypeError(
        "sub(): Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
        "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
}

namespace {

ScalarType binary_result_dtype(BinaryOp op, ScalarType compute) {
  return is_comparison(op) ? kBool : compute;
}

// Integer %, fmod, // and trunc division by zero: PyTorch's "ZeroDivisionError", before any
// write (one reduction; on a GPU one device-to-host copy of the verdict).
void check_integer_divisor(BinaryOp op, const Tensor& divisor, ScalarType compute) {
  const bool divides = op == BinaryOp::kRemainder || op == BinaryOp::kFmod ||
                       op == BinaryOp::kFloorDivide || op == BinaryOp::kTruncDivide;
  if (!divides || is_floating_point(compute) || divisor.numel() == 0) return;
  Tensor zero = new_tensor(divisor.sizes(), kBool, divisor.device());
  backend_for(divisor.device())
      .binary(BinaryOp::kEq, zero, to_compute(divisor, compute),
              expand_to(wrap_scalar(0, opmath_dtype(compute), divisor.device()), divisor.sizes()));
  if (!reduce(ReduceOp::kMax, zero, {}, false).item<bool>()) return;
  throw ValueError(str(binary_op_name(op),
                       "(): ZeroDivisionError: integer division by zero (a divisor is 0); "
                       "compute in a floating dtype, or mask the zero divisors first"));
}

// a op b computed in `compute`, into a new tensor.
Tensor binary_impl(BinaryOp op, const Tensor& a, const Tensor& b, ScalarType compute) {
  const char* name = binary_op_name(op);
  Device device = common_device({&a, &b});
  // Note [Borrowed operands] in copy.h: each step below borrows when it changes nothing.
  const MaybeOwned aa = on_device_maybe(a, device, name);
  const MaybeOwned bb = on_device_maybe(b, device, name);
  DimVector shape = broadcast_shapes(aa->sizes(), bb->sizes(), name);
  Tensor out = new_tensor(shape, binary_result_dtype(op, compute), device);
  if (out.numel() == 0) return out;
  check_integer_divisor(op, *bb, compute);
  const MaybeOwned a_compute = to_compute_maybe(*aa, compute);  // Note [Reduced dtypes]
  const MaybeOwned b_compute = to_compute_maybe(*bb, compute);
  const MaybeOwned ac = expand_to_maybe(*a_compute, shape);
  const MaybeOwned bc = expand_to_maybe(*b_compute, shape);
  OpmathOutput k(out);
  backend_for(device).binary(op, k.get(), *ac, *bc);
  k.finish();
  return out;
}

}  // namespace

bool is_float_only(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kSqrt:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kRsqrt:
    case UnaryOp::kExp2:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog1p:
    case UnaryOp::kLog2:
    case UnaryOp::kLog10:
    case UnaryOp::kTan:
    case UnaryOp::kErf:
    case UnaryOp::kErfinv:
    case UnaryOp::kLgamma:
    case UnaryOp::kDigamma:
    case UnaryOp::kPolygamma:
    case UnaryOp::kReciprocal:
      return true;
    default:
      return false;
  }
}

UnaryArgs round_args(int64_t decimals) {
  UnaryArgs args;
  if (decimals != 0) {
    args.arg = Scalar(decimals);
    args.has_arg = true;
  }
  return args;
}

UnaryArgs polygamma_args(int64_t n) {
  UnaryArgs args;
  args.arg = Scalar(n);
  args.has_arg = true;
  return args;
}

UnaryArgs nan_to_num_args(ScalarType dtype, std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) {
  UnaryArgs args;
  double hi = 0.0;
  double lo = 0.0;
  if (dtype == kFloat32) {
    hi = std::numeric_limits<float>::max();
    lo = std::numeric_limits<float>::lowest();
  } else if (dtype == kFloat16 || dtype == kBFloat16) {
    hi = dtype == kFloat16 ? 65504.0
                           : static_cast<double>(static_cast<float>(BFloat16::from_bits(0x7f7f)));
    lo = -hi;
  } else if (dtype == kFloat64) {
    hi = std::numeric_limits<double>::max();
    lo = std::numeric_limits<double>::lowest();
  }
  args.arg = Scalar(nan.value_or(0.0));
  args.arg2 = Scalar(posinf.value_or(hi));
  args.arg3 = Scalar(neginf.value_or(lo));
  args.has_arg = args.has_arg2 = true;
  return args;
}

UnaryArgs clamp_args(const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                     const char* op) {
  if (!min && !max) {
    throw ValueError(str(op, "(): at least one of 'min' or 'max' must not be None; pass a bound"));
  }
  UnaryArgs args;
  if (min) {
    args.arg = *min;
    args.has_arg = true;
  }
  if (max) {
    args.arg2 = *max;
    args.has_arg2 = true;
  }
  return args;
}

ScalarType binary_compute_dtype(BinaryOp op, ScalarType promoted) {
  if ((op == BinaryOp::kDiv || op == BinaryOp::kAtan2) && !is_floating_point(promoted)) {
    return default_dtype();  // true division; atan2 is float-only
  }
  if (op == BinaryOp::kPow && promoted == kBool) {
    throw DTypeError(
        "pow(): \"pow\" not implemented for 'Bool'; convert the tensors to an "
        "integer or floating dtype first");
  }
  return promoted;
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}

ScalarType result_type(const Tensor& a, const Scalar& b) {
  ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}

Tensor unary(UnaryOp op, const Tensor& self, const UnaryArgs& args) {
  ScalarType compute = unary_compute_dtype(op, self, args);
  Tensor out = new_tensor(self.sizes(), unary_result_dtype(op, compute), self.device());
  if (out.numel() == 0) return out;
  OpmathOutput k(out);  // Note [Reduced dtypes]
  backend_for(self.device()).unary(op, k.get(), *to_maybe(self, opmath_dtype(compute)), args);
  k.finish();
  return out;
}

void unary_out(UnaryOp op, const Tensor& out, const Tensor& self, const UnaryArgs& args,
               const MutationSite* bump) {
  const char* name = unary_op_name(op);
  ScalarType compute = unary_compute_dtype(op, self, args);
  ScalarType result = unary_result_dtype(op, compute);
  if (!out.sizes().equals(self.sizes())) {
    throw ShapeError(str(name, "(): output with shape ", out.sizes(),
                         " doesn't match the input shape ", self.sizes(),
                         "; pass an output of the input's shape"));
  }
  Tensor in_dev = on_device(self, out.device(), name);
  check_can_cast(result, out, name);
  assert_no_internal_overlap(out, name);
  // The result in another dtype, or an input that overlaps out, exists before the bump (Note
  // [In-place writes bump after validation]).
  const bool direct = result == out.dtype() && has_kernels(result);
  Tensor in;
  if (out.numel() > 0)
    in = direct ? guard_overlap(out, to_compute(in_dev, compute)) : unary(op, in_dev, args);
  if (bump != nullptr) out.version_counter().bump(*bump, out.unsafe_impl());  // every check passed
  if (out.numel() == 0) return;
  if (direct) {
    backend_for(out.device()).unary(op, out, in, args);
  } else {
    backend_for(out.device()).copy(out, in);
  }
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  check_binary_dtypes(op, a.dtype(), b.dtype());
  return binary_impl(op, a, b, binary_compute_dtype(op, result_type(a, b)));
}

Tensor binary(BinaryOp op, const Tensor& a, const Scalar& b) {
  check_binary_dtypes(op, a.dtype(), b.type());
  ScalarType compute = binary_compute_dtype(op, result_type(a, b));
  Tensor number = wrap_scalar(b, compute, a.device(), binary_op_name(op));
  // Note [A number as one tensor]
  // A floating number is read through a's shape with zero strides, set on its own fresh 0-dim
  // tensor (nothing else holds it) rather than through an expand view of it: one tensor per
  // scalar operand instead of two, and the kernel's flat path (Note [Flat operands] in
  // tensor/cpu/pointwise.cc) sees a broadcast number. The same values as the view's. An
  // integer divisor stays 0-dim: check_integer_divisor then reads one element, not numel.
  if (is_floating_point(compute) && a.dim() > 0) {
    number.impl_ptr()->set_geometry(DimVector(a.sizes()), DimVector(a.sizes().size(), 0), 0);
  }
  return binary_impl(op, a, number, compute);
}

void check_alpha(ScalarType dtype, const Scalar& alpha, const char* op) {
  if (alpha.is_bool() && dtype != kBool) {
    throw DTypeError(str(op, "(): a bool alpha (", alpha,
                         ") is only supported for bool results, "
                         "but the result is ",
                         dtype_name(dtype), "; pass an integer alpha"));
  }
  if (alpha.is_floating_point() && !is_floating_point(dtype)) {
    throw DTypeError(str(op,
                         "(): for integral input tensors, argument alpha must not be a "
                         "floating point number (got alpha=",
                         alpha, " for ", dtype_name(dtype),
                         " tensors); pass an integer alpha or convert the tensors to a floating "
                         "dtype"));
  }
  check_scalar_fits(alpha, dtype, op);
}

Tensor scale_by_alpha(const Tensor& other, const Scalar& alpha, ScalarType dtype) {
  if (alpha.to<double>() == 1.0 && !alpha.is_bool()) return other;
  return to(binary(BinaryOp::kMul, other, alpha), dtype);
}

void binary_out(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                const MutationSite* bump) {
  const char* name = binary_op_name(op);
  check_binary_dtypes(op, a.dtype(), b.dtype());
  ScalarType compute = binary_compute_dtype(op, result_type(a, b));
  ScalarType result = binary_result_dtype(op, compute);
  Tensor aa = on_device(a, out.device(), name);
  Tensor bb = on_device(b, out.device(), name);
  DimVector shape = broadcast_shapes(aa.sizes(), bb.sizes(), name);
  if (!out.sizes().equals(shape)) {
    throw ShapeError(str(name, "(): output with shape ", out.sizes(),
                         " doesn't match the broadcast shape ", IntArrayRef(shape),
                         "; an in-place op cannot change the shape of its output"));
  }
  check_can_cast(result, out, name);
  assert_no_internal_overlap(out, name);
  if (compute_numel(shape) > 0) check_integer_divisor(op, bb, compute);
  // The result in another dtype, or inputs that overlap out, exist before the bump (Note
  // [In-place writes bump after validation]).
  const bool direct = result == out.dtype() && has_kernels(result);
  Tensor ac, bc;
  if (out.numel() > 0 && direct) {
    ac = guard_overlap(out, expand_to(to_compute(aa, compute), shape));
    bc = guard_overlap(out, expand_to(to_compute(bb, compute), shape));
  } else if (out.numel() > 0) {
    ac = binary_impl(op, aa, bb, compute);
  }
  if (bump != nullptr) out.version_counter().bump(*bump, out.unsafe_impl());  // every check passed
  if (out.numel() == 0) return;
  if (direct) {
    backend_for(out.device()).binary(op, out, ac, bc);
  } else {
    backend_for(out.device()).copy(out, ac);
  }
}

Tensor fma(FmaOp op, const Tensor& a, const Tensor& b, const Tensor& c, double value,
           ScalarType compute) {
  const char* name = fma_op_name(op);
  MG_INTERNAL_ASSERT(has_fma(compute), name, ": fma kernels are float32/float64 only, not ",
                     dtype_name(compute));
  const Device device = c.defined() ? common_device({&a, &b, &c}) : common_device({&a, &b});
  const MaybeOwned aa = on_device_maybe(a, device, name);
  const MaybeOwned bb = on_device_maybe(b, device, name);
  // Without c, c's steps borrow the undefined tensor: nothing is converted twice.
  const MaybeOwned cc = c.defined() ? on_device_maybe(c, device, name) : MaybeOwned::borrowed(c);
  DimVector shape = broadcast_shapes(aa->sizes(), bb->sizes(), name);
  if (c.defined()) shape = broadcast_shapes(shape, cc->sizes(), name);
  Tensor out = new_tensor(shape, compute, device);
  if (out.numel() == 0) return out;
  const MaybeOwned a_compute = to_maybe(*aa, compute);
  const MaybeOwned b_compute = to_maybe(*bb, compute);
  const MaybeOwned c_compute = c.defined() ? to_maybe(*cc, compute) : MaybeOwned::borrowed(c);
  const MaybeOwned ae = expand_to_maybe(*a_compute, shape);
  const MaybeOwned be = expand_to_maybe(*b_compute, shape);
  const MaybeOwned ce = c.defined() ? expand_to_maybe(*c_compute, shape) : MaybeOwned::borrowed(c);
  backend_for(device).fma(op, out, *ae, *be, *ce, value);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (cond.dtype() != kBool) {
    throw DTypeError(str(
        "where(): expected condition to be a boolean tensor, but got a tensor "
        "with dtype ",
        legacy_type_name(cond.dtype()), "; compare it (e.g. x != 0) or convert with .to(kBool)"));
  }
  Device device = common_device({&cond, &a, &b});
  Tensor aa = on_device(a, device, "where");
  Tensor bb = on_device(b, device, "where");
  Tensor cc = on_device(cond, device, "where");
  DimVector shape =
      broadcast_shapes(broadcast_shapes(cc.sizes(), aa.sizes(), "where"), bb.sizes(), "where");
  ScalarType dtype = result_type(aa, bb);
  Tensor out = new_tensor(shape, dtype, aa.device());
  if (out.numel() == 0) return out;
  backend_for(out.device())
      .where(out, expand_to(cc, shape), expand_to(to(aa, dtype), shape),
             expand_to(to(bb, dtype), shape));
  return out;
}

Tensor nonzero(const Tensor& self) { return backend_for(self.device()).nonzero(to_opmath(self)); }

Tensor wrap_scalar(const Scalar& value, ScalarType dtype, Device device, const char* op) {
  check_scalar_fits(value, dtype, op);
  Tensor t = new_tensor({}, dtype, device);
  backend_for(device).fill(t, value);
  return t;
}

}  // namespace mutagrad::native
