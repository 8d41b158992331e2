// Backend: the raw kernels of one device type, and the registry that finds them.
//
// Validation happens once, in mutagrad::native (the op boundary); a backend receives valid
// arguments: every tensor on its device, inputs already broadcast (expanded, stride 0) to the
// output's shape and converted to the dtype the kernel computes in. A backend that lacks a
// kernel throws DeviceError naming the op and the device (see Backend::missing()).
//
//   Backend& be = backend_for(t.device());
//   be.fill(t, 1.5);
//   register_backend(DeviceType::CUDA, &my_cuda_backend);   // done by cuda/ at load time
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/device.h"
#include "tensor/random_draw.h"
#include "tensor/scalar.h"
#include "tensor/small_vector.h"
#include "tensor/storage.h"
#include "tensor/version_counter.h"

namespace mutagrad {

class Tensor;

enum class UnaryOp : int8_t {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kRelu,
  kLogicalNot,
  kPowScalar,  // x ** arg
  kClamp,      // min(max(x, arg), arg2), each side optional (see UnaryArgs)
  kRsqrt,
  kExp2,
  kExpm1,
  kLog1p,
  kLog2,
  kLog10,
  kSign,
  kFloor,
  kCeil,
  kRound,  // half to even; arg: decimals (int), when has_arg
  kTrunc,
  kFrac,
  kIsNan,     // -> bool
  kIsInf,     // -> bool
  kIsFinite,  // -> bool
  kBitwiseNot,
  kNanToNum,  // nan -> arg, +inf -> arg2, -inf -> arg3 (all given)
  kTan,
  kErf,
  kErfinv,
  kLgamma,
  kDigamma,
  kPolygamma,  // arg: the order n >= 0 (int)
  kReciprocal,
};
// Unary ops whose result is bool whatever the input.
constexpr bool is_predicate(UnaryOp op) {
  return op == UnaryOp::kLogicalNot || op == UnaryOp::kIsNan || op == UnaryOp::kIsInf ||
         op == UnaryOp::kIsFinite;
}
const char* unary_op_name(UnaryOp op);

// Extra operands of the unary ops that take them (pow by scalar, clamp, round, nan_to_num).
struct UnaryArgs {
  Scalar arg;
  Scalar arg2;
  Scalar arg3;
  bool has_arg = false;
  bool has_arg2 = false;
};

enum class BinaryOp : int8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMaximum,
  kMinimum,
  kRemainder,    // Python's %: the sign of the divisor
  kFmod,         // C's fmod: the sign of the dividend
  kFloorDivide,  // Python's //
  kTruncDivide,  // div(rounding_mode="trunc")
  kBitwiseAnd,   // integers and bool
  kBitwiseOr,
  kBitwiseXor,
  kShiftLeft,   // integers; a count outside [0, bits) gives 0
  kShiftRight,  // integers, arithmetic; a count outside [0, bits) gives the sign fill
  kAtan2,       // floating (integers compute in the default dtype, as kDiv)
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
};
const char* binary_op_name(BinaryOp op);
// Comparisons and logical ops produce bool.
constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::kEq; }

// The backward formulas of tanh and sigmoid, from the op's output y: PyTorch's tanh_backward
// (grad * (1 - y * y)) and sigmoid_backward (grad * (y * (1 - y))).
enum class ActivationGrad : int8_t { kTanh, kSigmoid };

// The formulas PyTorch computes with a fused multiply-add (one rounding), float32 and float64
// only (Note [Torch's fused multiply-adds] in tensor/native/fma.h), with weight = c when c is
// defined, else `value`:
//   kAddAlpha  a + alpha * b           fma(value, b, a)            add/sub(other, alpha)
//   kAddcmul   a + (value * b) * c     fma(value * b, c, a)        addcmul
//   kLerp      a + weight * (b - a)    |weight| < 0.5 ? fma(weight, b - a, a)
//                                                     : fma(-(b - a), 1 - weight, b)
enum class FmaOp : int8_t { kAddAlpha, kAddcmul, kLerp };
const char* fma_op_name(FmaOp op);

enum class ReduceOp : int8_t { kSum, kMean, kProd, kMax, kMin };
const char* reduce_op_name(ReduceOp op);

// Options of an index_put kernel. accumulate=false: for duplicate indices the last occurrence
// in index order wins; accumulate=true: each destination combines its old value with its
// values in index order by `reduce` (kSum, kProd, kMax or kMin; max/min propagate NaN), bitwise
// reproducible (scatter_reduce_ uses the last three).
struct IndexPutDescriptor {
  bool accumulate = false;
  ReduceOp reduce = ReduceOp::kSum;
  // Every index value is known to lie in [0, size) (set by native::index_put_validated from
  // the bounds screen): the kernel may skip wrapping negatives. False is always correct.
  bool nonnegative = false;
  // The write's version bump (null: none), fired by the kernel once its temporaries exist and
  // before it writes dst (Note [Allocate before the bump] in tensor/version_counter.h).
  const PendingBump* bump = nullptr;
  // Accumulating only. Null: each written destination starts from its own value; else a 0-dim
  // tensor of dst's dtype and device that each written destination starts from instead
  // (scatter_reduce_ without include_self: the reduction's identity), in the same call, so no
  // temporary is allocated between the two (Note [Allocate before the bump]).
  const Tensor* start = nullptr;
  void before_write() const {
    if (bump != nullptr) bump->fire();
  }
};

// The geometry of an N-d convolution (tensor/native/convolution.h), one entry per spatial dim.
// dilation is torch's (1 = dense); padding is explicit per side.
struct ConvParams {
  DimVector stride;
  DimVector padding_l;
  DimVector padding_r;
  DimVector dilation;
  int64_t groups = 1;
};

// The windows of a pooling op along one spatial dim, clipped to the input (Note [Pooling windows
// clipped to the input] in autograd/ops/pooling_ops.h): window o reads first[o] + j step for
// j < count[o]; count[o] == 0 for a window of padding only (first[o] is then torch's index for
// it, possibly past the input). lo[p] <= o < hi[p] bounds the windows whose clipped span holds
// input position p (lo == hi: none). k = max(1, max count).
struct PoolWindows {
  std::vector<int64_t> first, count, lo, hi;
  int64_t step = 1, k = 1;
  // Fills lo and hi for an input of size `in` from first, count and step.
  void set_ranges(int64_t in);
};

// The output positions (i ow + j, ascending) of the windows rows x cols that read no element
// (a count of 0 along either dim).
std::vector<int64_t> padding_only_windows(const PoolWindows& rows, const PoolWindows& cols);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType device_type() const = 0;
  virtual Allocator& allocator() = 0;
  // DeviceError when tensors cannot be created on `device` (e.g. a CUDA index this build does
  // not drive); called before every allocation.
  virtual void check_device(Device device) {}

  // dst[...] = value.
  virtual void fill(const Tensor& dst, const Scalar& value) = 0;
  // dst = src, converting dtype; src has dst's shape (possibly expanded). The caller has made
  // sure src does not partially overlap dst.
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  // out = op(in); `in` has out's shape and dtype, except for ops producing bool.
  virtual void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) = 0;
  // out = a op b; a and b have out's shape and share one compute dtype (out is bool for
  // comparisons). out may be a or b (in-place), never a partial overlap.
  virtual void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) = 0;
  // out = out op value, for kAdd/kSub/kMul/kDiv on a float32/float64 `out` (the in-place
  // scalar fast path, Note [Scalar in-place fast path] in tensor/native/scalar_inplace.h): no
  // operand tensor. The default wraps the value in a 0-dim tensor and calls binary().
  virtual void binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value);
  // out = op(a, b, c, value) (FmaOp), each multiply-add rounded once; a, b and c (undefined
  // where the op takes `value` instead) have out's shape and dtype, float32 or float64, and
  // `value` is converted to it first. out may be a, b or c (in place), never a partial overlap.
  virtual void fma(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                   double value) = 0;
  // out = out + (value * t1) / t2, all three float32 or float64 of one shape (addcdiv_;
  // rounded per op, as PyTorch's kernel).
  virtual void addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2, double value);
  // out = the backward formula `op` of grad and y, all three float32 or float64 of one shape, each
  // step rounded in that dtype in the formula's order (Note [Fused activation backward] in
  // tensor/native/activation_backward.h). The default composes binary() into out.
  virtual void activation_backward(ActivationGrad op, const Tensor& out, const Tensor& grad,
                                   const Tensor& y);
  // out = cond ? a : b, all of out's shape; a, b of out's dtype.
  virtual void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) = 0;
  // out (keepdim shape: reduced dims have size 1) = op over the dims where `reduce_dim` is
  // true. An empty input gives the op's identity (sum 0, prod 1, mean nan).
  virtual void reduce(ReduceOp op, const Tensor& out, const Tensor& in,
                      const std::vector<bool>& reduce_dim) = 0;
  // out = the running sum (kSum) or product (kProd) of `in` along `dim`, inclusive; `in` has
  // out's shape and dtype. Floating values accumulate in double, integers wrap (PyTorch's CPU
  // cumsum/cumprod); each line is folded in the order of Note [Blocked association order]
  // (tensor/blocked_order.h: in order up to 1024 elements), so every backend gives the same bits.
  virtual void scan(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim);
  // values, indices (int64), both of in's shape = each line of `in` along `dim` sorted stably
  // (ties keep index order), ascending or descending, NaN greater than every number (last
  // ascending, first descending), as torch.sort(stable=True); same bits on every backend.
  virtual void sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                    bool descending);
  // out (int64 or int32, values' shape) = for each element of `values`, the insertion position
  // in the sorted last-dim line of `sorted` it belongs to: `sorted` has values' leading dims
  // (expanded, stride 0 where shared) and its own last dim; one dtype for both. right: the
  // position after equal elements (torch.searchsorted's binary search, NaN included).
  virtual void searchsorted(const Tensor& out, const Tensor& sorted, const Tensor& values,
                            bool right);
  // out (int64, keepdim shape) = index of the first maximum along `dim`.
  virtual void argmax(const Tensor& out, const Tensor& in, int64_t dim) = 0;
  // out[..., m, n] = sum_k a[..., m, k] * b[..., k, n]; batch dims already broadcast.
  virtual void matmul(const Tensor& out, const Tensor& a, const Tensor& b) = 0;
  // out[i] = start + i * step, for a 1-D out.
  virtual void arange(const Tensor& out, const Scalar& start, const Scalar& step) = 0;
  // The coordinates of the nonzero elements, int64 of shape [count, ndim], row-major order.
  virtual Tensor nonzero(const Tensor& in) = 0;
  // out (contiguous, a dtype with kernels) = random_value<T>(params, i) for element i
  // (row-major): Note [Random draws] in tensor/random_draw.h, the same bits on every backend.
  virtual void random(const Tensor& out, const RandomParams& params);

  // Advanced indexing (indexing/): out = self[indices], index tensors int64, broadcast to one
  // shape, in range, one per leading dim of self (undefined = that dim is sliced whole).
  // "In range" is [-size, size): negative values wrap (the kernel adds size), as validated by
  // native::check_index_bounds. Layout of out: see native::AdvancedIndex::result_shape.
  virtual void index(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices);
  // index() on values not checked yet: false when a value of indices lies outside [lower, size)
  // of its dim (lower = -size when negative_wraps, else 0), out then unspecified and no memory
  // outside self touched; the caller throws (native::index). `unexpanded` are the index
  // tensors before broadcasting. The default screens each with index_in_range, then calls
  // index(); the CPU checks inside its loop (Note [Bounds checked in the loop]).
  virtual bool index_checked(const Tensor& out, const Tensor& self,
                             const std::vector<Tensor>& indices,
                             const std::vector<Tensor>& unexpanded, bool negative_wraps);
  // Whether every value of idx (int64, on this device) lies in [lower, size): the screen every
  // advanced write passes before any kernel runs, and reads through the default index_checked
  // (native::check_index_bounds, which then locates the offender for the message). The default, in
  // tensor/native/index_ops.cc, composes element-wise ops and one reduction (Note [Index validation
  // on the device]).
  virtual bool index_in_range(const Tensor& idx, int64_t lower, int64_t size);
  // dst[indices] = values (or +=), same conventions as index(); values broadcast to the
  // indexed shape.
  virtual void index_put(const Tensor& dst, const std::vector<Tensor>& indices,
                         const Tensor& values, const IndexPutDescriptor& desc);
  // index_put() on values not checked yet, into a tensor the caller drops on failure (Note
  // [Staged writes] in tensor/native/index_ops.cc): false when a value of indices lies outside
  // [lower, size) of its dim (lower = -size when negative_wraps, else 0); dst is then partly
  // written and no memory outside it touched. `unexpanded` as in index_checked(). The default
  // screens each with index_in_range, then calls index_put(); the CPU checks inside its loop.
  virtual bool index_put_checked(const Tensor& dst, const std::vector<Tensor>& indices,
                                 const Tensor& values, const std::vector<Tensor>& unexpanded,
                                 const IndexPutDescriptor& desc, bool negative_wraps);
  // dst[mask] = value; mask (bool) broadcast to dst's shape.
  virtual void masked_fill(const Tensor& dst, const Tensor& mask, const Scalar& value);

  // Convolution (Note [Convolution's backend contract] in tensor/native/convolution.h): x
  // [N, C, *in], w [O, C / groups, *k], y [N, O, *out], all contiguous and of one dtype
  // (float32 or float64), the geometry exact: in + padding_l + padding_r == (out - 1) * stride +
  // dilation * (k - 1) + 1 in every spatial dim. Each writes its first argument whole. The
  // defaults are the im2col + GEMM reference (native::conv_reference_*), over this backend's
  // copy and matmul kernels.
  // y = x (*) w.
  virtual void conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                            const ConvParams& params);
  // gx = the adjoint of conv_forward in x, applied to gy.
  virtual void conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                                   const ConvParams& params);
  // gw = the adjoint of conv_forward in w, applied to gy.
  virtual void conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                                    const ConvParams& params);

  // Pooling (Note [Pooling kernels] in tensor/native/pooling.h): x [P, H, W], the results
  // [P, oh, ow] over windows rows x cols, gx [P, H, W]; all contiguous, float32 or float64
  // (indices int64, divisor [oh, ow] of the operands' dtype). Each writes its first arguments
  // whole with the formulas of tensor/pool_math.h. No defaults: DeviceError.
  // values, indices = each window's maximum and its flat position in the plane.
  virtual void max_pool2d(const Tensor& values, const Tensor& indices, const Tensor& x,
                          const PoolWindows& rows, const PoolWindows& cols);
  // gx = gy added at indices (values outside [0, H W) dropped): pool_math.h's order.
  virtual void max_pool2d_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                                   const PoolWindows& rows, const PoolWindows& cols);
  // y = each window's sum / divisor.
  virtual void avg_pool2d(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                          const PoolWindows& cols, const Tensor& divisor);
  // gx = avg_pool2d's adjoint applied to gy: gy / divisor added over each window.
  virtual void avg_pool2d_backward(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                                   const PoolWindows& cols, const Tensor& divisor);

 protected:
  // Throws DeviceError: "<op> has no <device> implementation".
  [[noreturn]] void missing(const char* op) const;
};

// The backend registered for a device type; DeviceError if none is (e.g. CUDA not built).
Backend& backend_for(DeviceType type);
inline Backend& backend_for(Device device) { return backend_for(device.type()); }
// Registers `backend` (not owned; must outlive its use) for its device type.
void register_backend(DeviceType type, Backend* backend);
bool has_backend(DeviceType type);

}  // namespace mutagrad
