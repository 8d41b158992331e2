// ArrayRef<T>: a non-owning view of a contiguous run of T (an initializer list, a vector).
//
//   void f(ArrayRef<Tensor> tensors);
//   f({a, b, c});
#pragma once

#include <cstddef>
#include <initializer_list>
#include <vector>

namespace mutagrad {

template <typename T>
class ArrayRef {
 public:
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  ArrayRef(std::initializer_list<T> list)  // NOLINT: implicit by design
      : data_(list.begin()), size_(list.size()) {}
#pragma GCC diagnostic pop
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  ArrayRef(const T& single) : data_(&single), size_(1) {}                  // NOLINT

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mutagrad
