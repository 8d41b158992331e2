// TensorIndex: one entry of an index list, the C++ spelling of a Python subscript.
//
//   using namespace mutagrad::indexing;
//   Tensor y = x.index({Slice(1, None), 0});   // Python: x[1:, 0]
//   x.index({None, Ellipsis, mask});           // Python: x[None, ..., mask]
//   x[{Slice(None, None, 2), idx}] = 0.0;      // Python: x[::2, idx] = 0
//
// Python <-> C++:
//   | Python             | C++                              | path                          |
//   |--------------------|----------------------------------|-------------------------------|
//   | None               | None                             | A: unsqueeze                  |
//   | ...                | Ellipsis  or  "..."              | A: skips dims                 |
//   | 1, -1              | 1, -1                            | A: select (negatives wrap)    |
//   | True / False       | true / false                     | A: unsqueeze, B: index [0]/[] |
//   | :  ::              | Slice()                          | A: slice (a view)             |
//   | 1:  1::            | Slice(1, None)                   | A                             |
//   | :3  :3:            | Slice(None, 3)                   | A                             |
//   | ::2                | Slice(None, None, 2)             | A                             |
//   | 1:3  1:3:2         | Slice(1, 3)  Slice(1, 3, 2)      | A (step must be > 0)          |
//   | torch.tensor([1])  | a Tensor (int64 / int32)         | B: index_put_ / index         |
//   | mask (bool tensor) | a Tensor (bool)                  | B: its nonzero() indices      |
//   | torch.tensor(1)    | a 0-dim integer Tensor           | A: select, like an integer    |
// Path A entries become views; Path B entries are collected and applied as one advanced index
// (see docs/indexing.md). Slices clamp like Python's.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <type_traits>

#include "tensor/tensor.h"

namespace mutagrad::indexing {

// `None` (a new dim of size 1; also "no bound" in a Slice).
constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType final {
  constexpr EllipsisIndexType() = default;
};
// `...`: as many whole dims as the other entries leave unindexed.
constexpr EllipsisIndexType Ellipsis{};

// start:stop:step. A missing start/stop is the whole range; a missing step is 1. Negative
// start/stop count from the end; both clamp to [0, size]. A step <= 0 is a ValueError when
// the slice is applied ("step must be greater than zero").
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt,  // NOLINT: implicit by design
        std::optional<int64_t> stop = std::nullopt, std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}

  const std::optional<int64_t>& start() const { return start_; }
  const std::optional<int64_t>& stop() const { return stop_; }
  int64_t step() const { return step_.value_or(1); }
  bool has_step() const { return step_.has_value(); }

 private:
  std::optional<int64_t> start_;
  std::optional<int64_t> stop_;
  std::optional<int64_t> step_;
};

enum class TensorIndexType : int8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };

class TensorIndex {
 public:
  TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}  // NOLINT: implicit by design
  TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}  // NOLINT
  // Only "..." is accepted (ValueError otherwise), as libtorch.
  TensorIndex(const char* str);  // NOLINT
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T integer)  // NOLINT: implicit by design
      : integer_(static_cast<int64_t>(integer)), type_(TensorIndexType::Integer) {}
  TensorIndex(bool boolean)  // NOLINT: implicit by design
      : integer_(boolean ? 1 : 0), type_(TensorIndexType::Boolean) {}
  TensorIndex(Slice slice)  // NOLINT: implicit by design
      : slice_(slice), type_(TensorIndexType::Slice) {}
  // An index tensor (int64/int32), a mask (bool), or a 0-dim integer/bool tensor. An undefined
  // tensor is a ValueError.
  TensorIndex(Tensor tensor);  // NOLINT

  TensorIndexType type() const { return type_; }
  bool is_none() const { return type_ == TensorIndexType::None; }
  bool is_ellipsis() const { return type_ == TensorIndexType::Ellipsis; }
  bool is_integer() const { return type_ == TensorIndexType::Integer; }
  bool is_boolean() const { return type_ == TensorIndexType::Boolean; }
  bool is_slice() const { return type_ == TensorIndexType::Slice; }
  bool is_tensor() const { return type_ == TensorIndexType::Tensor; }

  int64_t integer() const { return integer_; }
  bool boolean() const { return integer_ != 0; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  int64_t integer_ = 0;
  Slice slice_;
  Tensor tensor_;
  TensorIndexType type_;
};

// Python spelling: None, ..., 1, True, 1:3:2, tensor(shape=[2], dtype=int64).
std::ostream& operator<<(std::ostream& os, const Slice& slice);
std::ostream& operator<<(std::ostream& os, const TensorIndex& index);
// The whole list as Python writes it: [1, 1:3, ...].
std::string to_string(ArrayRef<TensorIndex> indices);

}  // namespace mutagrad::indexing
