// MUTAGRAD_ARG: one option of a layer's options struct, with a chaining setter and a getter,
// as libtorch's TORCH_ARG:
//
//   struct LinearOptions {
//     LinearOptions(int64_t in, int64_t out) : in_features_(in), out_features_(out) {}
//     MUTAGRAD_ARG(int64_t, in_features);
//     MUTAGRAD_ARG(bool, bias) = true;
//   };
//   LinearOptions(4, 3).bias(false).bias()   // false
#pragma once

#define MUTAGRAD_ARG(T, name)                        \
 public:                                             \
  auto& name(const T& new_value) {                   \
    name##_ = new_value;                             \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
                                                     \
 private:                                            \
  T name##_
