// FuzzInput: turns a fuzzer's bytes into the values a fuzz target needs, and the helpers the
// targets share (element access by storage offset, invariant checks).
//
//   FuzzInput in(data, size);
//   ScalarType dtype = in.pick(kAllScalarTypes);
//   Tensor x = make_tensor(in, dtype, /*max_dim=*/5, /*views=*/true);
//   int64_t i = in.interesting_int();     // small, or an extreme value (INT64_MIN, 2^31, ...)
//   FUZZ_CHECK(x.version() == 0, "a new tensor is at version ", x.version());
//
// Every read past the end yields zeros, so any byte string decodes to a valid program: the
// fuzzer never wastes inputs on a parse error. Reads are cheap and decisions come first, so
// libFuzzer's mutations of the leading bytes change the structure, later bytes the values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mutagrad::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool exhausted() const { return pos_ >= size_; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool flag() { return byte() & 1; }
  // Uniform enough in [lo, hi] (inclusive); hi - lo < 2^16.
  int64_t range(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    uint64_t v = byte();
    if (span > 256) v = (v << 8) | byte();
    return lo + static_cast<int64_t>(v % span);
  }
  // True with probability about num/256.
  bool chance(int num) { return byte() < num; }
  template <typename T, size_t N>
  const T& pick(const T (&options)[N]) {
    return options[range(0, N - 1)];
  }
  // Mostly a small integer in [-6, 6]; sometimes a boundary of int8...int64 or of the index
  // arithmetic (INT64_MIN, INT64_MAX, 2^31, 2^62, ...).
  int64_t interesting_int();
  // Mostly a small multiple of 0.5; sometimes nan, +-inf, a huge or tiny value.
  double interesting_double();
  Scalar interesting_scalar();

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Prints the message and aborts: a finding. libFuzzer records the input; the regression test
// (fuzz_regression_test) fails.
[[noreturn]] void fail(const std::string& message);

#define FUZZ_CHECK(cond, ...)                                                      \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      ::mutagrad::fuzz::fail(                                                      \
          ::mutagrad::str(__FILE__, ":", __LINE__, ": " #cond ": ", __VA_ARGS__)); \
    }                                                                              \
  } while (0)

// A tensor of `dtype` with up to `max_dim` dims of sizes 0..4 (at most 256 elements) and values
// from the input; with `views`, then seen through up to three views (permute, transpose,
// slice with a step, select, expand, unsqueeze, diagonal): non-contiguous, expanded, views of
// views. Never requires grad.
Tensor make_tensor(FuzzInput& in, ScalarType dtype, int max_dim, bool views);
// An index tensor: int64/int32 (values mostly in [-5, 5], sometimes extreme), bool/uint8
// masks (shaped like `hint[first..]` half the time, any shape otherwise) or an invalid dtype.
Tensor make_index_tensor(FuzzInput& in, IntArrayRef hint);

// Elements addressed by storage offset (in elements), independent of every op under test.
int64_t storage_offset_of(const Tensor& t, const std::vector<int64_t>& coords);
const uint8_t* element_at(const Tensor& t, int64_t offset);
double element_as_double(const Tensor& t, int64_t offset);
int64_t element_as_int(const Tensor& t, int64_t offset);
// Calls fn(coords) for every multi-index of `sizes`, row-major; none if a size is 0.
template <typename Fn>
void for_each_coord(const std::vector<int64_t>& sizes, Fn&& fn) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> c(sizes.size(), 0);
  while (true) {
    fn(c);
    int64_t d = static_cast<int64_t>(sizes.size()) - 1;
    for (; d >= 0; --d) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
    if (d < 0) return;
  }
}
std::vector<int64_t> to_vector(IntArrayRef r);
// The bytes of t's whole storage (to compare before/after an op).
std::vector<uint8_t> storage_bytes(const Tensor& t);

}  // namespace mutagrad::fuzz
