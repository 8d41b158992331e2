// StridedLoop: walks N same-shaped operands element by element, in memory order, as PyTorch's
// TensorIterator does: dims are reordered fastest-first, size-1 dims dropped, dims that are
// contiguous in every operand coalesced, and the innermost run handed to a 1-D loop.
//
//   StridedLoop<2> it({&out, &in});
//   it.run(0, it.numel(), [&](char** p, const int64_t* s, int64_t n) {
//     for (int64_t k = 0; k < n; ++k) *(float*)(p[0] + k * s[0]) = *(float*)(p[1] + k * s[1]);
//   });
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "tensor/small_vector.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

template <int N>
class StridedLoop {
 public:
  // Every operand has ops[0]'s shape (inputs already expanded). Byte strides throughout. Dims
  // are ordered by operand 0's strides first (ties and zero strides defer to the next operand),
  // so operand 0 is walked in memory order.
  explicit StridedLoop(const std::array<const Tensor*, N>& ops) {
    IntArrayRef shape = ops[0]->sizes();
    numel_ = ops[0]->numel();
    int64_t nd = static_cast<int64_t>(shape.size());
    for (int k = 0; k < N; ++k) {
      data_[k] = static_cast<char*>(ops[k]->raw_data());
      MG_INTERNAL_ASSERT(ops[k]->dim() == nd, "StridedLoop: operand ", k, " has ", ops[k]->dim(),
                         " dims, expected ", nd);
    }
    // perm[0] is the innermost dim; start from row-major order (last dim innermost).
    DimVector perm;
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (shape[d] != 1) perm.push_back(d);
    }
    auto byte_stride = [&](int k, int64_t d) {
      return ops[k]->strides()[d] * ops[k]->element_size();
    };
    // >0: dim a should be outside dim b. Ties (and zero strides) defer to the next operand.
    auto should_swap = [&](int64_t a, int64_t b) {
      for (int k = 0; k < N; ++k) {
        int64_t sa = byte_stride(k, a), sb = byte_stride(k, b);
        if (sa == 0 || sb == 0) continue;
        if (sa < sb) return -1;
        if (sa > sb) return 1;
      }
      return 0;
    };
    for (size_t i = 1; i < perm.size(); ++i) {
      size_t d1 = i;
      for (size_t d0 = i; d0-- > 0;) {
        int c = should_swap(perm[d0], perm[d1]);
        if (c > 0) {
          std::swap(perm[d0], perm[d1]);
          d1 = d0;
        } else if (c < 0) {
          break;
        }
      }
    }
    for (int64_t d : perm) {
      size_t last = sizes_.size();
      bool merge = last > 0;
      for (int k = 0; k < N && merge; ++k) {
        merge = byte_stride(k, d) == strides_[k][last - 1] * sizes_[last - 1];
      }
      if (merge) {
        sizes_[last - 1] *= shape[d];
      } else {
        sizes_.push_back(shape[d]);
        for (int k = 0; k < N; ++k) strides_[k].push_back(byte_stride(k, d));
      }
    }
  }

  int64_t numel() const { return numel_; }
  int64_t ndim() const { return static_cast<int64_t>(sizes_.size()); }
  // Coalesced geometry, innermost dim first.
  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides(int k) const { return strides_[k]; }
  char* data(int k) const { return data_[k]; }

  // Calls loop(char** ptrs, const int64_t* inner_strides, int64_t n) over the runs covering
  // the linear (memory-order) element range [begin, end).
  template <typename Loop>
  void run(int64_t begin, int64_t end, Loop&& loop) const {
    std::array<char*, N> ptrs;
    std::array<int64_t, N> inner{};
    if (begin >= end) return;
    if (sizes_.empty()) {
      for (int k = 0; k < N; ++k) ptrs[k] = data_[k];
      loop(ptrs.data(), inner.data(), end - begin);
      return;
    }
    for (int k = 0; k < N; ++k) inner[k] = strides_[k][0];
    const size_t nd = sizes_.size();
    DimVector counter(nd, 0);
    int64_t rem = begin;
    for (size_t d = 0; d < nd; ++d) {
      counter[d] = rem % sizes_[d];
      rem /= sizes_[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      for (int k = 0; k < N; ++k) {
        char* p = data_[k];
        for (size_t d = 0; d < nd; ++d) p += counter[d] * strides_[k][d];
        ptrs[k] = p;
      }
      int64_t n = std::min(sizes_[0] - counter[0], end - pos);
      loop(ptrs.data(), inner.data(), n);
      pos += n;
      counter[0] += n;
      for (size_t d = 0; d + 1 < nd && counter[d] == sizes_[d]; ++d) {
        counter[d] = 0;
        ++counter[d + 1];
      }
    }
  }

  // Like run(begin, end, loop), but the whole runs of the range go to
  // block(char** ptrs, const int64_t* inner_strides, const int64_t* outer_strides, int64_t n,
  // int64_t rows) a block at a time: `rows` runs of n elements along the second coalesced dim,
  // run r at ptrs[k] + r * outer_strides[k]. The runs cut at the range's ends go to loop. The
  // elements (and runs) come in run()'s order, so a kernel that handles a block as its runs one
  // after another gives run()'s results. A block saves the per-run set-up of run(): a 256 x 256
  // broadcast add is 256 runs of 256 (docs/performance/cpu-kernels.md, session 11).
  template <typename Loop, typename Block>
  void run_rows(int64_t begin, int64_t end, Loop&& loop, Block&& block) const {
    const int64_t n0 = ndim() >= 2 ? sizes_[0] : 0;
    const int64_t first = n0 > 0 ? (begin + n0 - 1) / n0 : 0;  // whole runs [first, last)
    const int64_t last = n0 > 0 ? end / n0 : 0;
    if (first >= last) {
      run(begin, end, loop);
      return;
    }
    run(begin, first * n0, loop);
    std::array<int64_t, N> inner, outer;
    for (int k = 0; k < N; ++k) {
      inner[k] = strides_[k][0];
      outer[k] = strides_[k][1];
    }
    for (int64_t r = first; r < last;) {
      std::array<char*, N> p = data_;  // run r's place: its index along each outer dim
      int64_t rem = r;
      for (size_t d = 1; d < sizes_.size(); ++d) {
        const int64_t i = rem % sizes_[d];
        rem /= sizes_[d];
        for (int k = 0; k < N; ++k) p[k] += i * strides_[k][d];
      }
      const int64_t rows = std::min(last - r, sizes_[1] - r % sizes_[1]);
      block(p.data(), inner.data(), outer.data(), n0, rows);
      r += rows;
    }
    run(last * n0, end, loop);
  }

 private:
  int64_t numel_ = 0;
  DimVector sizes_;
  std::array<DimVector, N> strides_;
  std::array<char*, N> data_{};
};

}  // namespace mutagrad::cpu
