// Raw random ops (see tensor/native/random.h). Fills draw with the device's random kernel
// (Note [Random draws] in tensor/random_draw.h); the ops built from several draws (bernoulli_
// with a tensor p, randperm, multinomial, normal with tensors) compose them with the raw ops
// every backend has (comparison, sort, scan, searchsorted), so they give the same bits on
// every device too.
#include "tensor/native/random.h"

#include <cmath>
#include <limits>

#include "tensor/backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/index_ops.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/native/sort.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"

namespace mutagrad::native {
namespace {

// Significand bits (with the implicit one) of a floating dtype.
int significand_bits(ScalarType dtype) {
  switch (dtype) {
    case kFloat16:
      return 11;
    case kBFloat16:
      return 8;
    case kFloat32:
      return 24;
    default:
      return 53;
  }
}

// The largest finite value of a floating dtype.
double floating_max(ScalarType dtype) {
  switch (dtype) {
    case kFloat16:
      return 65504.0;
    case kBFloat16:
      return 3.38953138925153547590470800371487866880e38;
    case kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// [lowest, largest] of an integer or bool dtype.
std::pair<int64_t, int64_t> integer_bounds(ScalarType dtype) {
  switch (dtype) {
    case kBool:
      return {0, 1};
    case kUInt8:
      return {0, 255};
    case kInt8:
      return {-128, 127};
    case kInt16:
      return {-32768, 32767};
    case kInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

void check_floating(ScalarType dtype, const char* op, const char* hint) {
  if (!is_floating_point(dtype)) {
    throw DTypeError(str(op, "(): expected a floating point tensor (float16, bfloat16, float32 or ",
                         "float64) but got ", dtype_name(dtype), "; ", hint));
  }
}

// A contiguous float64 CPU copy of `t`, for validating its values before any write (the strong
// guarantee): on a device, one deliberate device-to-host copy, as torch's checks of p and std.
Tensor host_values(const Tensor& t) { return contiguous(to(t, kCPU, kFloat64)); }

}  // namespace

void check_generator(const Generator& gen, Device device, const char* op) {
  if (gen.device().type() != device.type()) {
    throw DeviceError(str(op, "(): Expected a '", device.type(),
                          "' device type for generator but found '", gen.device().type(),
                          "'; pass a generator of the tensor's device (Generator(seed, ", device,
                          ") or default_generator(", device, "))"));
  }
}

void random_fill_(const Tensor& self, Generator& gen, RandomParams params, const char* op,
                  const MutationSite* bump) {
  check_generator(gen, self.device(), op);
  assert_no_internal_overlap(self, op);
  // Drawn in row-major order, into self when it is contiguous and has kernels, else into a
  // contiguous tensor of the kernel dtype, allocated before the bump (Note [In-place writes
  // bump after validation]), then copied (and rounded, Note [Reduced dtypes]) into self.
  const bool direct = self.is_contiguous() && has_kernels(self.dtype());
  Tensor drawn =
      direct || self.numel() == 0
          ? self
          : empty(self.sizes(), TensorOptions(opmath_dtype(self.dtype())).device(self.device()));
  if (bump != nullptr) self.version_counter().bump(*bump, self.unsafe_impl());  // checks passed
  if (self.numel() == 0) return;
  const Generator::Counters c = gen.reserve(static_cast<uint64_t>(self.numel()));
  params.seed = c.seed;
  params.offset = c.offset;
  Backend& backend = backend_for(self.device());
  backend.random(drawn, params);
  if (!direct) backend.copy(self, drawn);
}

RandomParams uniform_params(ScalarType dtype, double from, double to, const char* op) {
  check_floating(dtype, op, "random_() draws integers");
  const double hi = floating_max(dtype);
  for (const auto& [name, v] : {std::pair{"from", from}, std::pair{"to", to}}) {
    if (!(v >= -hi && v <= hi)) {
      throw ValueError(str(op, "(): ", name, "=", v, " is out of bounds for ", dtype_name(dtype),
                           " (its finite values are [", -hi, ", ", hi, "]); pass finite bounds"));
    }
  }
  if (from > to) {
    throw ValueError(str(op, "(): expects to return a [from, to) range, but found from=", from,
                         " > to=", to, "; pass from <= to"));
  }
  if (!(to - from <= hi)) {
    throw ValueError(str(op, "(): expects to-from <= the largest ", dtype_name(dtype), " (", hi,
                         "), but found to=", to, " and from=", from,
                         " which result in to-from to exceed the limit; narrow the range"));
  }
  RandomParams p;
  p.dist = RandomDist::kUniform;
  p.a = from;
  p.b = to;
  p.uniform_bits = significand_bits(dtype);
  return p;
}

RandomParams normal_params(ScalarType dtype, double mean, double std, const char* op) {
  check_floating(dtype, op, "draw floats and convert them");
  if (!(std >= 0.0)) {
    throw ValueError(str(op, "(): expects std >= 0.0, but found std ", std,
                         "; pass a non-negative standard deviation"));
  }
  RandomParams p;
  p.dist = RandomDist::kNormal;
  p.a = mean;
  p.b = std;
  return p;
}

RandomParams exponential_params(ScalarType dtype, double lambd, const char* op) {
  check_floating(dtype, op, "draw floats and convert them");
  if (!(lambd >= 0.0)) {
    throw ValueError(str(op, "(): expects lambda >= 0.0, but found lambda=", lambd,
                         "; pass a non-negative rate"));
  }
  RandomParams p;
  p.dist = RandomDist::kExponential;
  p.a = lambd;
  return p;
}

RandomParams bernoulli_params(double prob, const char* op) {
  if (!(prob >= 0.0 && prob <= 1.0)) {
    throw ValueError(
        str(op, "(): expects p to be in [0, 1], but got p=", prob, "; pass a probability"));
  }
  RandomParams p;
  p.dist = RandomDist::kBernoulli;
  p.a = prob;
  return p;
}

RandomParams random_params(ScalarType dtype, int64_t from, std::optional<int64_t> to,
                           const char* op) {
  if (to && from >= *to) {
    throw ValueError(str(op, "(): random_ expects 'from' to be less than 'to', but got from=", from,
                         " >= to=", *to, "; the range is [from, to)"));
  }
  int64_t to_inc = 0;  // the largest value drawn
  if (is_floating_point(dtype)) {
    const int64_t largest = int64_t{1} << significand_bits(dtype);
    to_inc = to ? *to - 1 : largest;
    if (!to && from > largest) {
      throw ValueError(str(op, "(): random_ expects 'from' to be at most ", largest, " (2^",
                           significand_bits(dtype), ", the end of ", dtype_name(dtype),
                           "'s exact integers) when 'to' is not given, but got from=", from,
                           "; pass 'to' as well"));
    }
  } else {
    const auto [lo, hi] = integer_bounds(dtype);
    if (from < lo || from > hi) {
      throw ValueError(str(op, "(): from=", from, " is out of bounds for ", dtype_name(dtype),
                           " (values [", lo, ", ", hi, "]); pass a range the dtype holds"));
    }
    to_inc = to ? *to - 1 : hi;
    if (to_inc > hi) {
      throw ValueError(str(op, "(): to - 1=", to_inc, " is out of bounds for ", dtype_name(dtype),
                           " (values [", lo, ", ", hi, "]); pass a range the dtype holds"));
    }
  }
  RandomParams p;
  p.dist = RandomDist::kInteger;
  p.low = from;
  // The count of values; 2**64 wraps to 0, which random_value reads as all 64 bits.
  p.range = static_cast<uint64_t>(to_inc) - static_cast<uint64_t>(from) + 1;
  return p;
}

std::string random_precision_warning(ScalarType dtype, int64_t from, std::optional<int64_t> to) {
  if (!is_floating_point(dtype)) return "";
  const int bits = significand_bits(dtype);
  const int64_t bound = int64_t{1} << bits;
  const char* what = nullptr;
  if (from < -bound || from > bound) {
    what = "from";
  } else if (to && (*to - 1 < -bound || *to - 1 > bound)) {
    what = "to - 1";
  }
  if (what == nullptr) return "";
  return str(what, " is out of bounds [-(2^", bits, "), 2^", bits,
             "]. Due to precision limitations ", dtype_name(dtype),
             " can support discrete uniform distribution only within this range; values outside "
             "it are rounded");
}

void bernoulli_(const Tensor& self, const Tensor& p, Generator& gen, const MutationSite* bump) {
  const char* op = "bernoulli_";
  if (!p.defined() || !is_floating_point(p.dtype())) {
    throw DTypeError(str(op, "(): expected a floating point probability tensor p but got ",
                         p.defined() ? dtype_name(p.dtype()) : "an undefined tensor",
                         "; convert p with .to(kFloat32)"));
  }
  if (p.device() != self.device()) {
    throw DeviceError(str(op, "(): p is on ", p.device(), " but the tensor is on ", self.device(),
                          "; move p to the tensor's device"));
  }
  if (!is_expandable_to(p.sizes(), self.sizes())) {
    throw ShapeError(str(op, "(): p of shape ", p.sizes(), " does not broadcast to the tensor's ",
                         "shape ", self.sizes(), "; give p that shape or one that broadcasts"));
  }
  check_generator(gen, self.device(), op);
  assert_no_internal_overlap(self, op);
  const Tensor values = host_values(p);
  const double* v = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (!(v[i] >= 0.0 && v[i] <= 1.0)) {
      throw ValueError(str(op, "(): expects every element of p to be in [0, 1], but p has ", v[i],
                           " at flat index ", i, "; pass probabilities"));
    }
  }
  // Read before the write: p may alias self.
  const Tensor p64 = to(p, kFloat64);
  // A uniform u per element, 1 where u < p: the bits of bernoulli_ with a number p. Both
  // buffers before the bump (Note [In-place writes bump after validation]).
  const Tensor u = empty(self.sizes(), TensorOptions(kFloat64).device(self.device()));
  const Tensor below = empty(self.sizes(), TensorOptions(kBool).device(self.device()));
  if (bump != nullptr) self.version_counter().bump(*bump, self.unsafe_impl());  // checks passed
  if (self.numel() == 0) return;
  random_fill_(u, gen, RandomParams{}, op);
  binary_out(BinaryOp::kLt, below, u, p64);
  backend_for(self.device()).copy(self, below);
}

Tensor randperm(int64_t n, Generator& gen, TensorOptions options) {
  const char* op = "randperm";
  if (n < 0) {
    throw ValueError(str(op, "(): Trying to create tensor with negative dimension ", n, ": [", n,
                         "]; n must be non-negative"));
  }
  const ScalarType dtype = options.dtype();
  if (dtype == kBool) {
    throw DTypeError(str(op, "(): bool is not supported; pass an integer or floating dtype"));
  }
  const int64_t largest = is_floating_point(dtype) ? int64_t{1} << significand_bits(dtype)
                                                   : integer_bounds(dtype).second;
  if (n - 1 > largest) {
    throw ValueError(str(op, "(): n=", n, " needs values up to ", n - 1, " but ", dtype_name(dtype),
                         " holds exact integers up to ", largest,
                         " only; pass a wider dtype (int64)"));
  }
  check_generator(gen, options.device(), op);
  // Sorting n random 64-bit keys: a uniform permutation (ties, at odds of about n^2 / 2^65, keep
  // index order, so the result is still deterministic).
  Tensor keys = empty({n}, TensorOptions(kInt64).device(options.device()));
  RandomParams all_bits;
  all_bits.dist = RandomDist::kInteger;
  random_fill_(keys, gen, all_bits, op);
  return to(sort(keys, 0, /*descending=*/false).second, dtype);
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator& gen) {
  const char* op = "multinomial";
  if (!is_floating_point(probs.dtype())) {
    throw DTypeError(str(op, "(): only supports floating-point dtypes for input, got: ",
                         dtype_name(probs.dtype()), "; convert the weights with .to(kFloat32)"));
  }
  if (probs.dim() != 1 && probs.dim() != 2) {
    throw ShapeError(str(op, "(): prob_dist must be 1 or 2 dim, got shape ", probs.sizes(),
                         "; pass one row of weights or a matrix of rows"));
  }
  if (num_samples <= 0) {
    throw ValueError(str(op, "(): cannot sample n_sample <= 0 samples (num_samples=", num_samples,
                         "); pass num_samples >= 1"));
  }
  const int64_t n = probs.size(-1);
  if (!replacement && num_samples > n) {
    throw ValueError(str(op, "(): cannot sample n_sample > prob_dist.size(-1) samples without ",
                         "replacement (num_samples=", num_samples, ", ", n,
                         " categories); pass replacement=true or fewer samples"));
  }
  if (n > (int64_t{1} << 24)) {
    throw ValueError(str(op, "(): number of categories cannot exceed 2^24, got ", n));
  }
  check_generator(gen, probs.device(), op);
  const Tensor rows_of = probs.dim() == 1 ? unsqueeze(probs, 0) : probs;
  const int64_t rows = rows_of.size(0);
  const Tensor values = host_values(rows_of);
  const double* v = values.data_ptr<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double w = v[r * n + i];
      if (!(std::isfinite(w) && w >= 0.0)) {
        throw ValueError(str(op, "(): probability tensor contains either `inf`, `nan` or element ",
                             "< 0 (", w, " in row ", r, ", category ", i,
                             "); pass finite non-negative weights"));
      }
      sum += w;
    }
    if (!(sum > 0.0)) {
      throw ValueError(str(op, "(): invalid multinomial distribution (sum of probabilities <= 0) ",
                           "in row ", r, "; give every row a positive weight"));
    }
  }
  const Device device = probs.device();
  Tensor out;
  if (rows == 0) {
    out = empty({0, num_samples}, TensorOptions(kInt64).device(device));
  } else if (!replacement) {
    // Efraimidis-Spirakis: the categories of the num_samples smallest E_i / p_i, E_i ~ Exp(1),
    // are a draw without replacement with probabilities proportional to p.
    Tensor e = empty({rows, n}, TensorOptions(kFloat64).device(device));
    random_fill_(e, gen, exponential_params(kFloat64, 1.0, op), op);
    Tensor keys = binary(BinaryOp::kDiv, e, to(rows_of, kFloat64));
    out = narrow(sort(keys, 1, /*descending=*/false).second, 1, 0, num_samples);
  } else {
    // Inverse CDF: the first category whose running sum exceeds u * total, never past the last
    // category of positive weight (where rounding of u * total could otherwise land).
    Tensor u = empty({rows, num_samples}, TensorOptions(kFloat64).device(device));
    random_fill_(u, gen, RandomParams{}, op);
    const Tensor cdf = scan(ReduceOp::kSum, to(rows_of, kFloat64), 1, kFloat64);
    const Tensor total = contiguous(narrow(cdf, 1, n - 1, 1));
    const Tensor drawn = searchsorted(cdf, binary(BinaryOp::kMul, u, total), false, true);
    const Tensor last = searchsorted(cdf, total, false, false);
    out = binary(BinaryOp::kMinimum, drawn, last);
  }
  out = contiguous(out);
  return probs.dim() == 1 ? squeeze(out, 0) : out;
}

Tensor normal(const Tensor& mean, const Tensor& std, ScalarType dtype, Generator& gen) {
  const char* op = "normal";
  check_floating(dtype, op, "draw floats and convert them");
  if (std.device() != mean.device()) {
    throw DeviceError(str(op, "(): mean is on ", mean.device(), " but std is on ", std.device(),
                          "; put both on one device"));
  }
  const DimVector shape = broadcast_shapes(mean.sizes(), std.sizes(), op);
  const Tensor values = host_values(std);
  const double* v = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (!(v[i] >= 0.0)) {
      throw ValueError(str(op, "(): expects all elements of std >= 0.0, but std has ", v[i],
                           " at flat index ", i, "; pass non-negative standard deviations"));
    }
  }
  check_generator(gen, mean.device(), op);
  Tensor z = empty(shape, TensorOptions(kFloat64).device(mean.device()));
  random_fill_(z, gen, normal_params(kFloat64, 0.0, 1.0, op), op);
  // mean + std z in double, rounded once: normal_(mean, std)'s formula.
  const Tensor scaled = binary(BinaryOp::kMul, to(std, kFloat64), z);
  return contiguous(to(binary(BinaryOp::kAdd, to(mean, kFloat64), scaled), dtype));
}

}  // namespace mutagrad::native
