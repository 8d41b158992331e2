// out= forms: an op's result written into a caller's tensor, as PyTorch's *_out functions.
//
//   Tensor out = mutagrad::empty({0});
//   mutagrad::add_out(out, a, b);           // out is resized to a + b's shape, then written
//   mutagrad::sort_out(values, indices, x);  // tuple outs: one write each
//
// Every form computes its result out of place and hands it to autograd::write_outs, which
// applies torch's rules to each out, in this order, before changing anything:
//   - no autograd: a result that requires grad (an input requires grad in grad mode) or an out
//     that requires grad raises AutogradError (kOutRequiresGradMessage);
//   - the device: out's must be the result's (DeviceError);
//   - the dtype: the result's must cast to out's (can_cast; DTypeError, torch's message), or be
//     out's exactly for index outputs and the ops where torch demands it (OutDType::kExact);
//   - the shape: an out of another shape is resized to the result's (contiguous), with torch's
//     warning when it had elements; an out that is a view, or whose storage another tensor
//     shares, cannot be resized safely and raises ShapeError (Note [Resizing an out]).
// Then each out takes its result through copy_ (one version bump, the call site, op
// "<name>_out"; a view's write reaches its base; tensors saved from out become stale).
//
// Note [out= computes out of place]: the result is a fresh tensor before anything is written,
// so an out that aliases an input (add_out(a, a, b), or overlapping it partly) gives the values
// of the inputs before the call, as if they had been copied first (docs/indexing.md, "Operands
// that alias the written tensor"). It costs a temporary and a copy; speed is not the goal.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::autograd {

inline constexpr const char* kOutRequiresGradMessage =
    "(): functions with out=... arguments don't support automatic differentiation, but one of "
    "the arguments requires grad.";

// How an out's dtype must relate to its result's.
enum class OutDType { kCastable, kExact };

struct OutWrite {
  Tensor out;
  Tensor result;
  OutDType dtype = OutDType::kCastable;
};

// Called with each resize warning after every check passed and before any out changes; an
// exception it throws leaves every out unchanged. The default prints "Warning: ..." to stderr.
using OutWarning = std::function<void(const std::string&)>;
void warn_to_stderr(const std::string& message);

// Checks every write (the rules above), then resizes and writes each out in order. `op` is
// torch's name of the op ("add"); the writes' site is "<op>_out" at `site`.
void write_outs(const char* op, const std::vector<OutWrite>& writes, CallSite site,
                const OutWarning& warn = warn_to_stderr);
// One out: write_outs with a single write; returns out.
const Tensor& write_out(const char* op, const Tensor& out, const Tensor& result, CallSite site,
                        OutDType dtype = OutDType::kCastable,
                        const OutWarning& warn = warn_to_stderr);

}  // namespace mutagrad::autograd

namespace mutagrad {

// Element-wise.
const Tensor& add_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      const Scalar& alpha = 1, CallSite site = CallSite::current());
const Tensor& sub_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      const Scalar& alpha = 1, CallSite site = CallSite::current());
const Tensor& mul_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      CallSite site = CallSite::current());
const Tensor& div_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      CallSite site = CallSite::current());
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Tensor& exponent,
                      CallSite site = CallSite::current());
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Scalar& exponent,
                      CallSite site = CallSite::current());
const Tensor& neg_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& abs_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& exp_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& log_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& sqrt_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& sin_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& cos_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& tanh_out(const Tensor& out, const Tensor& self, CallSite site = CallSite::current());
const Tensor& sigmoid_out(const Tensor& out, const Tensor& self,
                          CallSite site = CallSite::current());
const Tensor& clamp_out(const Tensor& out, const Tensor& self, std::optional<Scalar> min,
                        std::optional<Scalar> max, CallSite site = CallSite::current());
const Tensor& where_out(const Tensor& out, const Tensor& condition, const Tensor& self,
                        const Tensor& other, CallSite site = CallSite::current());

// Reductions. max_out / min_out with a dim write (values, indices); indices must be int64.
const Tensor& sum_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim = false,
                      CallSite site = CallSite::current());
const Tensor& mean_out(const Tensor& out, const Tensor& self, IntArrayRef dims,
                       bool keepdim = false, CallSite site = CallSite::current());
const Tensor& prod_out(const Tensor& out, const Tensor& self, int64_t dim, bool keepdim = false,
                       CallSite site = CallSite::current());
const Tensor& amax_out(const Tensor& out, const Tensor& self, IntArrayRef dims,
                       bool keepdim = false, CallSite site = CallSite::current());
const Tensor& amin_out(const Tensor& out, const Tensor& self, IntArrayRef dims,
                       bool keepdim = false, CallSite site = CallSite::current());
const Tensor& argmax_out(const Tensor& out, const Tensor& self,
                         std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                         CallSite site = CallSite::current());
void max_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
             bool keepdim = false, CallSite site = CallSite::current());
void min_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
             bool keepdim = false, CallSite site = CallSite::current());

// Products (out's dtype must be the result's, as torch).
const Tensor& mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2,
                     CallSite site = CallSite::current());
const Tensor& bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2,
                      CallSite site = CallSite::current());
const Tensor& matmul_out(const Tensor& out, const Tensor& self, const Tensor& other,
                         CallSite site = CallSite::current());
const Tensor& addmm_out(const Tensor& out, const Tensor& self, const Tensor& mat1,
                        const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1,
                        CallSite site = CallSite::current());

// Joining, sorting and indexing.
const Tensor& cat_out(const Tensor& out, TensorList tensors, int64_t dim = 0,
                      CallSite site = CallSite::current());
const Tensor& stack_out(const Tensor& out, TensorList tensors, int64_t dim = 0,
                        CallSite site = CallSite::current());
void sort_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim = -1,
              bool descending = false, CallSite site = CallSite::current());
void topk_out(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
              int64_t dim = -1, bool largest = true, bool sorted = true,
              CallSite site = CallSite::current());
const Tensor& index_select_out(const Tensor& out, const Tensor& self, int64_t dim,
                               const Tensor& index, CallSite site = CallSite::current());
const Tensor& gather_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                         CallSite site = CallSite::current());

}  // namespace mutagrad
