// Tensor factories (see tensor/native/factories.h). Each allocates fresh storage through the
// device's allocator and fills it through the device's backend; random values come from the
// device's random kernel (tensor/native/random.h), so a seed gives the same tensor on every
// device.
#include "tensor/native/factories.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/random.h"
#include "tensor/shape.h"

namespace mutagrad {
namespace {

// Validates sizes and returns the bytes that many elements of `dtype` take (ShapeError when
// that count overflows: Note [Size overflow] in tensor/shape.h).
int64_t checked_nbytes(IntArrayRef sizes, ScalarType dtype, const char* op) {
  for (int64_t s : sizes) {
    if (s < 0) {
      throw ValueError(str(op, "(): Trying to create tensor with negative dimension ", s, ": ",
                           sizes, "; sizes must be non-negative"));
    }
  }
  return compute_storage_nbytes(sizes, element_size(dtype), op);
}

// Validates strides and returns the bytes a strided tensor of `dtype` reaches.
int64_t checked_nbytes(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, const char* op) {
  if (sizes.size() != strides.size()) {
    throw ShapeError(str(op, "(): mismatch in length of strides and shape: sizes ", sizes,
                         " and strides ", strides, "; pass one stride per dimension"));
  }
  // An empty tensor reaches no element: its strides are not checked (PyTorch accepts them).
  if (checked_nbytes(sizes, dtype, op) == 0) return 0;
  for (int64_t s : strides) {
    if (s < 0) {
      throw ValueError(str(op, "(): negative strides are not supported, got strides ", strides));
    }
  }
  return compute_storage_nbytes(sizes, strides, element_size(dtype), 0, op);
}

// The dtype of a tensor made from `value` when none is given: as PyTorch's default dtype rule.
ScalarType default_dtype_of(const Scalar& value) {
  if (value.is_bool()) return kBool;
  if (value.is_integral()) return kInt64;
  return default_dtype();
}

void check_floating(ScalarType dtype, const char* op) {
  if (!is_floating_point(dtype)) {
    throw DTypeError(str(op, "(): expected a floating point dtype (float32 or float64) but got ",
                         dtype_name(dtype), "; use randint() for integers or pass kFloat32"));
  }
}

void fill_value(const Tensor& t, const Scalar& value) {
  if (t.numel() > 0) backend_for(t.device()).fill(t, value);
}

// Shape of a nested list: follow the first element down to a number (or an empty list).
DimVector init_shape(const TensorInit& values) {
  DimVector shape;
  const TensorInit* p = &values;
  while (!p->is_scalar()) {
    shape.push_back(static_cast<int64_t>(p->children().size()));
    if (p->children().empty()) break;
    p = &p->children()[0];
  }
  return shape;
}

// ShapeError when the list is ragged or mixes numbers and lists at one depth.
void check_init_shape(const TensorInit& init, size_t depth, const DimVector& shape) {
  if (depth == shape.size()) {
    if (!init.is_scalar()) {
      throw ShapeError(str("tensor(): found a list at dim ", depth, " where a number was expected",
                           " (the first elements give shape ", IntArrayRef(shape),
                           "); nested lists must be rectangular"));
    }
    return;
  }
  if (init.is_scalar()) {
    throw ShapeError(str("tensor(): found a number at dim ", depth, " where a sequence of length ",
                         shape[depth], " was expected (shape ", IntArrayRef(shape),
                         "); nested lists must be rectangular"));
  }
  int64_t n = static_cast<int64_t>(init.children().size());
  if (n != shape[depth]) {
    throw ShapeError(str("tensor(): expected sequence of length ", shape[depth], " at dim ", depth,
                         " (got ", n, "); nested lists must be rectangular"));
  }
  for (const TensorInit& child : init.children()) check_init_shape(child, depth + 1, shape);
}

void infer_init_dtype(const TensorInit& init, bool& any_float, bool& any_int) {
  if (init.is_scalar()) {
    any_float |= init.value().is_floating_point();
    any_int |= init.value().is_integral();
    return;
  }
  for (const TensorInit& child : init.children()) infer_init_dtype(child, any_float, any_int);
}

void check_init_fits(const TensorInit& init, ScalarType dtype) {
  if (init.is_scalar()) {
    check_scalar_fits(init.value(), dtype, "tensor");
    return;
  }
  for (const TensorInit& child : init.children()) check_init_fits(child, dtype);
}

template <typename T>
void write_init(const TensorInit& init, T*& out) {
  if (init.is_scalar()) {
    *out++ = init.value().to<T>();
    return;
  }
  for (const TensorInit& child : init.children()) write_init(child, out);
}

int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step,
                      ScalarType dtype) {
  double s = start.to<double>();
  double e = end.to<double>();
  double st = step.to<double>();
  if (st == 0) {
    throw ValueError("arange(): step must be nonzero");
  }
  if (!std::isfinite(s) || !std::isfinite(e)) {
    throw ValueError(
        str("arange(): unsupported range: ", start, " -> ", end, "; start and end must be finite"));
  }
  if ((st > 0 && e < s) || (st < 0 && e > s)) {
    throw ValueError(
        str("arange(): upper bound and larger bound inconsistent with step sign (start ", start,
            ", end ", end, ", step ", step,
            "); use a positive step when end >= start and a negative one otherwise"));
  }
  if (dtype == kInt64) {
    // As PyTorch: integer arithmetic on the values converted to int64.
    int64_t is = start.to<int64_t>();
    int64_t ie = end.to<int64_t>();
    int64_t ist = step.to<int64_t>();
    if (ist == 0) {
      throw ValueError(str("arange(): step ", step, " is zero once converted to int64"));
    }
    int64_t sgn = (ist > 0) - (ist < 0);
    int64_t span = 0;  // ie - is + ist - sgn, checked (Note [Size overflow] in tensor/shape.h)
    if (__builtin_sub_overflow(ie, is, &span) || __builtin_add_overflow(span, ist - sgn, &span)) {
      throw ShapeError(str("arange(): the length of the range ", start, " -> ", end, " by ", step,
                           " overflows int64 (invalid size, possible overflow?); use a "
                           "shorter range or a larger step"));
    }
    return std::max<int64_t>(span / ist, 0);
  }
  double n = std::ceil((e - s) / st);
  if (!(n < static_cast<double>(std::numeric_limits<int64_t>::max()))) {
    throw ShapeError(str("arange(): the range ", start, " -> ", end, " by ", step, " has ", n,
                         " elements, more than int64 can count (invalid size, possible "
                         "overflow?); use a shorter range or a larger step"));
  }
  return static_cast<int64_t>(n);
}

}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  int64_t nbytes = checked_nbytes(sizes, options.dtype(), "empty");
  Storage storage = Storage::allocate(options.device(), static_cast<size_t>(nbytes));
  const TensorImpl::Contiguous layout{nbytes / element_size(options.dtype())};
  return Tensor(make_pooled<TensorImpl>(std::move(storage), DimVector(sizes),
                                        contiguous_strides(sizes), layout, options.dtype(),
                                        VersionCounter()));
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  int64_t nbytes = checked_nbytes(sizes, strides, options.dtype(), "empty_strided");
  Storage storage = Storage::allocate(options.device(), static_cast<size_t>(nbytes));
  return Tensor(make_pooled<TensorImpl>(std::move(storage), DimVector(sizes), DimVector(strides), 0,
                                        options.dtype(), VersionCounter()));
}

Tensor zeros(IntArrayRef sizes, TensorOptions options) {
  Tensor t = empty(sizes, options);
  fill_value(t, 0);
  return t;
}

Tensor ones(IntArrayRef sizes, TensorOptions options) {
  Tensor t = empty(sizes, options);
  fill_value(t, 1);
  return t;
}

Tensor full(IntArrayRef sizes, const Scalar& value, std::optional<ScalarType> dtype,
            Device device) {
  const ScalarType dt = dtype.value_or(default_dtype_of(value));
  check_scalar_fits(value, dt, "full");
  Tensor t = empty(sizes, TensorOptions(dt).device(device));
  fill_value(t, value);
  return t;
}

Tensor arange(const Scalar& end, std::optional<ScalarType> dtype, Device device) {
  return arange(0, end, 1, dtype, device);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<ScalarType> dtype, Device device) {
  bool any_float = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  ScalarType dt = dtype.value_or(any_float ? default_dtype() : kInt64);
  if (dt == kBool) {
    throw DTypeError("arange(): bool is not a supported dtype; use an integer or floating dtype");
  }
  int64_t n = arange_length(start, end, step, dt);
  compute_storage_nbytes({n}, element_size(dt), "arange");  // the op's name in the error
  Tensor t = empty({n}, TensorOptions(dt).device(device));
  if (n > 0) {
    native::OpmathOutput k(t);  // Note [Reduced dtypes]
    backend_for(t.device()).arange(k.get(), start, step);
    k.finish();
  }
  return t;
}

Tensor tensor(const TensorInit& values, std::optional<ScalarType> dtype) {
  DimVector shape = init_shape(values);
  check_init_shape(values, 0, shape);
  bool any_float = false;
  bool any_int = false;
  infer_init_dtype(values, any_float, any_int);
  bool empty_list = !values.is_scalar() && compute_numel(shape) == 0;
  ScalarType dt = dtype.value_or(any_float || empty_list ? default_dtype()
                                 : any_int               ? kInt64
                                                         : kBool);
  check_init_fits(values, dt);
  Tensor t = empty(shape, dt);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    write_init(values, p);
  });
  return t;
}

Tensor scalar_tensor(const Scalar& value, std::optional<ScalarType> dtype) {
  return full({}, value, dtype.value_or(default_dtype_of(value)));
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 std::shared_ptr<void> owner, Device device) {
  int64_t nbytes = checked_nbytes(sizes, strides, dtype, "from_blob");
  Storage storage = Storage::from_blob(data, static_cast<size_t>(nbytes), device, std::move(owner));
  return Tensor(make_pooled<TensorImpl>(std::move(storage), DimVector(sizes), DimVector(strides), 0,
                                        dtype, VersionCounter()));
}

Tensor rand(IntArrayRef sizes, Generator& gen, TensorOptions options) {
  check_floating(options.dtype(), "rand");
  native::check_generator(gen, options.device(), "rand");
  Tensor t = empty(sizes, options);
  native::random_fill_(t, gen, native::uniform_params(t.dtype(), 0.0, 1.0, "rand"), "rand");
  return t;
}

Tensor randn(IntArrayRef sizes, Generator& gen, TensorOptions options) {
  check_floating(options.dtype(), "randn");
  native::check_generator(gen, options.device(), "randn");
  Tensor t = empty(sizes, options);
  native::random_fill_(t, gen, native::normal_params(t.dtype(), 0.0, 1.0, "randn"), "randn");
  return t;
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, Generator& gen,
               TensorOptions options) {
  const RandomParams params = native::random_params(options.dtype(), low, high, "randint");
  native::check_generator(gen, options.device(), "randint");
  Tensor t = empty(sizes, options);
  native::random_fill_(t, gen, params, "randint");
  return t;
}

Tensor empty_like(const Tensor& other, std::optional<ScalarType> dtype) {
  return empty(other.sizes(), TensorOptions(dtype.value_or(other.dtype())).device(other.device()));
}

Tensor zeros_like(const Tensor& other, std::optional<ScalarType> dtype) {
  return zeros(other.sizes(), TensorOptions(dtype.value_or(other.dtype())).device(other.device()));
}

Tensor ones_like(const Tensor& other, std::optional<ScalarType> dtype) {
  return ones(other.sizes(), TensorOptions(dtype.value_or(other.dtype())).device(other.device()));
}

Tensor full_like(const Tensor& other, const Scalar& value, std::optional<ScalarType> dtype) {
  return full(other.sizes(), value, dtype.value_or(other.dtype()), other.device());
}

Tensor rand_like(const Tensor& other, Generator& gen) {
  return rand(other.sizes(), gen, TensorOptions(other.dtype()).device(other.device()));
}

Tensor randn_like(const Tensor& other, Generator& gen) {
  return randn(other.sizes(), gen, TensorOptions(other.dtype()).device(other.device()));
}

}  // namespace mutagrad
