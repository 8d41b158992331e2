// DimVector: sizes and strides without a heap allocation for up to 6 dims.
// IntArrayRef: a non-owning view of int64 values (an initializer list, a vector, a DimVector).
//
//   DimVector sizes{2, 3};
//   sizes.push_back(4);
//   IntArrayRef ref = sizes;   // ref.size() == 3, ref[2] == 4
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <vector>

namespace mutagrad {

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
  // The list must outlive the ref: fine for function arguments.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  IntArrayRef(std::initializer_list<int64_t> list)  // NOLINT: implicit by design
      : data_(list.begin()), size_(list.size()) {}
#pragma GCC diagnostic pop
  IntArrayRef(const std::vector<int64_t>& v)  // NOLINT: implicit by design
      : data_(v.data()), size_(v.size()) {}
  IntArrayRef(const int64_t& single) : data_(&single), size_(1) {}  // NOLINT

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr const int64_t& operator[](size_t i) const { return data_[i]; }
  const int64_t& back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool equals(IntArrayRef o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

inline bool operator==(IntArrayRef a, IntArrayRef b) { return a.equals(b); }
inline bool operator!=(IntArrayRef a, IntArrayRef b) { return !a.equals(b); }
// Prints like PyTorch's sizes: [2, 3, 4].
std::ostream& operator<<(std::ostream& os, IntArrayRef a);

// A vector of int64 with inline room for kInline values; spills to the heap beyond that.
class DimVector {
 public:
  static constexpr size_t kInline = 6;

  DimVector() = default;
  explicit DimVector(size_t n, int64_t value = 0) { assign(n, value); }
  DimVector(std::initializer_list<int64_t> list) { assign(list.begin(), list.end()); }
  DimVector(IntArrayRef ref) { assign(ref.begin(), ref.end()); }  // NOLINT: implicit by design
  DimVector(const std::vector<int64_t>& v) { assign(v.data(), v.data() + v.size()); }  // NOLINT
  DimVector(const DimVector& o) { assign(o.begin(), o.end()); }
  DimVector(DimVector&& o) noexcept { steal(std::move(o)); }
  DimVector& operator=(const DimVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) steal(std::move(o));
    return *this;
  }
  ~DimVector() = default;

  operator IntArrayRef() const { return IntArrayRef(data(), size_); }  // NOLINT: implicit

  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  const int64_t& operator[](size_t i) const { return data()[i]; }
  int64_t& back() { return data()[size_ - 1]; }
  const int64_t& back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    size_t cap = std::max(n, capacity_ * 2);
    std::unique_ptr<int64_t[]> grown(new int64_t[cap]);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = cap;
  }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = value;
    size_ = n;
  }
  void push_back(int64_t v) {
    reserve(size_ + 1);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(size_t pos, int64_t v) {
    reserve(size_ + 1);
    int64_t* d = data();
    std::copy_backward(d + pos, d + size_, d + size_ + 1);
    d[pos] = v;
    ++size_;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    std::copy(d + pos + 1, d + size_, d + pos);
    --size_;
  }
  void clear() { size_ = 0; }
  void assign(size_t n, int64_t value) {
    size_ = 0;
    resize(n, value);
  }
  void assign(const int64_t* first, const int64_t* last) {
    size_t n = static_cast<size_t>(last - first);
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = n;
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

 private:
  void steal(DimVector&& o) {
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      capacity_ = o.capacity_;
      size_ = o.size_;
    } else {
      heap_.reset();
      capacity_ = kInline;
      assign(o.begin(), o.end());
    }
    o.capacity_ = kInline;
    o.size_ = 0;
  }

  int64_t inline_[kInline];
  std::unique_ptr<int64_t[]> heap_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
};

inline bool operator==(const DimVector& a, const DimVector& b) {
  return IntArrayRef(a).equals(IntArrayRef(b));
}
inline bool operator!=(const DimVector& a, const DimVector& b) { return !(a == b); }

}  // namespace mutagrad
