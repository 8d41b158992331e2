// Tensor factories: new tensors that own fresh storage.
//
//   Tensor a = zeros({2, 3});                     // float32
//   Tensor b = full({2}, 7, kInt64);
//   Tensor c = tensor({{1.0, 2.0}, {3.0, 4.0}});   // float32 [2, 2]
//   Generator gen(42);
//   Tensor r = randn({3, 3}, gen, kFloat64);
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace mutagrad {

// dtype and device of a new tensor. Implicit from either, so zeros({2}, kInt64) reads well.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}     // NOLINT: implicit by design
  TensorOptions(Device device) : device_(device) {}      // NOLINT: implicit by design
  TensorOptions(DeviceType device) : device_(device) {}  // NOLINT: implicit by design
  TensorOptions dtype(ScalarType dtype) const {
    TensorOptions o = *this;
    o.dtype_ = dtype;
    return o;
  }
  TensorOptions device(Device device) const {
    TensorOptions o = *this;
    o.device_ = device;
    return o;
  }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  ScalarType dtype_ = default_dtype();
  Device device_ = kCPU;
};

// A nested list of numbers: tensor({{1, 2}, {3, 4}}). Its dtype, unless given, is PyTorch's:
// float32 if any value is floating, else int64 if any is integral, else bool.
class TensorInit {
 public:
  TensorInit(const Scalar& value) : value_(value), is_scalar_(true) {}  // NOLINT: implicit
  TensorInit(double v) : TensorInit(Scalar(v)) {}                       // NOLINT
  TensorInit(float v) : TensorInit(Scalar(v)) {}                        // NOLINT
  TensorInit(int v) : TensorInit(Scalar(v)) {}                          // NOLINT
  TensorInit(int64_t v) : TensorInit(Scalar(v)) {}                      // NOLINT
  TensorInit(bool v) : TensorInit(Scalar(v)) {}                         // NOLINT
  TensorInit(std::initializer_list<TensorInit> children)                // NOLINT
      : children_(children), is_scalar_(false) {}

  bool is_scalar() const { return is_scalar_; }
  const Scalar& value() const { return value_; }
  const std::vector<TensorInit>& children() const { return children_; }

 private:
  Scalar value_;
  std::vector<TensorInit> children_;
  bool is_scalar_;
};

Tensor empty(IntArrayRef sizes, TensorOptions options = {});
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
// The dtype defaults to the value's: int64 for an integer, bool for a bool, float32 otherwise.
Tensor full(IntArrayRef sizes, const Scalar& value, std::optional<ScalarType> dtype = std::nullopt,
            Device device = kCPU);
// [start, end) by step; int64 when all of them are integers, float32 otherwise (as PyTorch).
Tensor arange(const Scalar& end, std::optional<ScalarType> dtype = std::nullopt,
              Device device = kCPU);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<ScalarType> dtype = std::nullopt, Device device = kCPU);
Tensor tensor(const TensorInit& values, std::optional<ScalarType> dtype = std::nullopt);
// A 0-dim tensor holding `value`, of the value's dtype unless given.
Tensor scalar_tensor(const Scalar& value, std::optional<ScalarType> dtype = std::nullopt);
// A tensor of shape `sizes` holding a copy of `values` (row-major).
template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes);
// A tensor viewing memory owned elsewhere; `owner` is kept alive as long as the storage is.
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 std::shared_ptr<void> owner, Device device = kCPU);

// Uniform in [0, 1) and standard normal, floating dtypes only, drawn on the options' device
// from a generator of that device type (Note [Counter-based generators] in tensor/generator.h).
// More random ops (fills, randperm, multinomial) are in tensor/native/random.h.
Tensor rand(IntArrayRef sizes, Generator& gen, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, Generator& gen, TensorOptions options = {});
// Integers uniform in [low, high), int64 unless given.
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, Generator& gen,
               TensorOptions options = kInt64);

// Same shape, dtype and device as `other` unless overridden (the result is contiguous).
Tensor empty_like(const Tensor& other, std::optional<ScalarType> dtype = std::nullopt);
Tensor zeros_like(const Tensor& other, std::optional<ScalarType> dtype = std::nullopt);
Tensor ones_like(const Tensor& other, std::optional<ScalarType> dtype = std::nullopt);
Tensor full_like(const Tensor& other, const Scalar& value,
                 std::optional<ScalarType> dtype = std::nullopt);
Tensor rand_like(const Tensor& other, Generator& gen);
Tensor randn_like(const Tensor& other, Generator& gen);

template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes) {
  Tensor t = empty(sizes, scalar_type_of<T>());
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw ShapeError(str("from_vector(): got ", values.size(), " values for shape ", sizes,
                         " which holds ", t.numel(), "; pass exactly numel values"));
  }
  std::copy(values.begin(), values.end(), t.data_ptr<T>());
  return t;
}

}  // namespace mutagrad
