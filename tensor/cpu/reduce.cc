// CPU reductions (sum, mean, prod, max, min over any dims) and argmax.
//
// A reduction walks the input in its memory order together with an accumulator buffer that
// has stride 0 on the reduced dims: a run where the accumulator stride is 0 folds into one
// accumulator (several partial accumulators, so the loop vectorizes); any other run updates
// accumulators element-wise. sum/prod/mean accumulate floats in double and integers in int64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/strided_loop.h"
#include "tensor/cpu/vec_kernels.h"
#include "tensor/element_math.h"
#include "tensor/native/index_ops.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::cpu {

using math::max_propagate_nan;
using math::min_propagate_nan;
using math::wrapping_add;
using math::wrapping_mul;
namespace {

Tensor make_cpu_tensor(const Storage& storage, IntArrayRef sizes, IntArrayRef strides,
                       int64_t offset, ScalarType dtype) {
  return Tensor(make_pooled<TensorImpl>(storage, DimVector(sizes), DimVector(strides), offset,
                                        dtype, VersionCounter()));
}

template <typename A>
struct SumOp {
  static A identity() { return A(0); }
  static A combine(A a, A b) { return wrapping_add<A>(a, b); }
};
template <typename A>
struct ProdOp {
  static A identity() { return A(1); }
  static A combine(A a, A b) { return wrapping_mul<A>(a, b); }
};
template <typename A>
struct MaxOp {
  static A identity() {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::lowest();
  }
  static A combine(A a, A b) { return max_propagate_nan<A>(a, b); }
};
template <typename A>
struct MinOp {
  static A identity() {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::max();
  }
  static A combine(A a, A b) { return min_propagate_nan<A>(a, b); }
};

// Note [Reduction order]
// A run folded into one accumulator (s[1] == 0) is summed as 8 partial results: element k of
// the run into partial k % 8 while 8 remain, the rest into partial 0, then the partials
// combined pairwise (0 with 4, 1 with 5, ...; 0 with 2, 1 with 3; 0 with 1) and the result
// combined into the accumulator. The CPU builds all keep this order (float and double runs go
// through vec_kernels' sum/extremum folds: Note [Pointwise kernels per capability]), so a sum's
// bits do not depend on the CPU's vector width; they do depend on how the runs are cut (the
// dims' memory order, and the two halves of a large reduction below).

// Note [Reduction threads]
// A reduction of n >= kParallelThreshold elements (and at least 16 per output) is cut into two
// halves with two sets of accumulators, whatever runs them: the cut is part of the order (Note
// [Reduction order]). The halves run on two threads, as every element-wise op of that size
// does. (Until session 10 they ran on the calling thread below 4 x kParallelThreshold, from a
// measurement on a loaded machine; on a quiet one two threads save more than their start and
// join: a 256 x 256 float32 sum along dim 1 took 6.2 us on one thread and 4.7 us on two,
// docs/performance/cpu-kernels.md.) A team of one (inside another parallel region, or in a forked
// child) runs both halves in order: the same bits.

// Accumulates the elements [begin, end) (in memory order) of `in` (dtype T) into `acc` (dtype A,
// in's shape with stride 0 on reduced dims); `it` walks {in, acc}. Float and double sums and
// extrema of contiguous runs go to vec_kernels a block of runs at a time (Note [Reduction
// kernels over runs] in vec_reduce_impl.h: the bits of one run at a time).
template <typename T, typename A, typename Op>
void accumulate(const StridedLoop<2>& it, int64_t begin, int64_t end) {
  constexpr bool kFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;
  constexpr bool kSum = std::is_same_v<Op, SumOp<double>>;
  constexpr bool kMax = std::is_same_v<Op, MaxOp<T>>;
  constexpr bool kVec = kFloat && (kSum || kMax || std::is_same_v<Op, MinOp<T>>);
  const VecKernels& vk = vec_kernels();
  const VecBinaryOp extremum = kMax ? VecBinaryOp::kMaximum : VecBinaryOp::kMinimum;
  auto run = [&vk, extremum](char** p, const int64_t* s, int64_t n) {
    (void)vk;  // read only by the kVec instantiations (clang: unused lambda capture)
    (void)extremum;
    A* a = reinterpret_cast<A*>(p[1]);
    if constexpr (kVec) {
      const T* x = reinterpret_cast<const T*>(p[0]);
      if (s[1] == 0 && s[0] == sizeof(T)) {  // one accumulator: the fold of Note [Reduction order]
        if constexpr (kSum && std::is_same_v<T, float>)
          *a = Op::combine(*a, vk.sum_f32(x, n));
        else if constexpr (kSum)
          *a = Op::combine(*a, vk.sum_f64(x, n));
        else if constexpr (std::is_same_v<T, float>)
          *a = Op::combine(*a, vk.extremum_f32(extremum, x, n));
        else
          *a = Op::combine(*a, vk.extremum_f64(extremum, x, n));
        return;
      }
      if (s[1] == sizeof(A) && s[0] == sizeof(T)) {  // a row into a row of accumulators
        if constexpr (kSum && std::is_same_v<T, float>)
          vk.sum_cols_f32(a, x, 0, 1, n);
        else if constexpr (kSum)
          vk.sum_cols_f64(a, x, 0, 1, n);
        else if constexpr (std::is_same_v<T, float>)
          vk.extremum_cols_f32(extremum, a, x, 0, 1, n);
        else
          vk.extremum_cols_f64(extremum, a, x, 0, 1, n);
        return;
      }
    }
    if (s[1] == 0) {
      // kLanes independent partial results, combined in a fixed order: vectorizable and
      // deterministic.
      constexpr int kLanes = 8;
      A part[kLanes];
      for (int j = 0; j < kLanes; ++j) part[j] = Op::identity();
      int64_t k = 0;
      if (s[0] == sizeof(T)) {
        const T* x = reinterpret_cast<const T*>(p[0]);
        for (; k + kLanes <= n; k += kLanes) {
          for (int j = 0; j < kLanes; ++j) part[j] = Op::combine(part[j], static_cast<A>(x[k + j]));
        }
      }
      for (; k < n; ++k) {
        part[0] =
            Op::combine(part[0], static_cast<A>(*reinterpret_cast<const T*>(p[0] + k * s[0])));
      }
      for (int width = kLanes / 2; width > 0; width /= 2) {
        for (int j = 0; j < width; ++j) part[j] = Op::combine(part[j], part[j + width]);
      }
      *a = Op::combine(*a, part[0]);
    } else if (s[1] == sizeof(A) && s[0] == sizeof(T)) {
      const T* x = reinterpret_cast<const T*>(p[0]);
      for (int64_t k = 0; k < n; ++k) a[k] = Op::combine(a[k], static_cast<A>(x[k]));
    } else {
      for (int64_t k = 0; k < n; ++k) {
        A& dst = *reinterpret_cast<A*>(p[1] + k * s[1]);
        dst = Op::combine(dst, static_cast<A>(*reinterpret_cast<const T*>(p[0] + k * s[0])));
      }
    }
  };
  if constexpr (!kVec) {
    it.run(begin, end, run);
  } else {
    auto block = [&](char** p, const int64_t* s, const int64_t* outer, int64_t n, int64_t rows) {
      const T* x = reinterpret_cast<const T*>(p[0]);
      A* a = reinterpret_cast<A*>(p[1]);
      const int64_t xs = outer[0] / static_cast<int64_t>(sizeof(T));
      const int64_t as = outer[1] / static_cast<int64_t>(sizeof(A));
      if (s[0] == sizeof(T) && s[1] == 0) {  // each run folds into one accumulator
        if constexpr (kSum && std::is_same_v<T, float>)
          vk.sum_rows_f32(a, as, x, xs, rows, n);
        else if constexpr (kSum)
          vk.sum_rows_f64(a, as, x, xs, rows, n);
        else if constexpr (std::is_same_v<T, float>)
          vk.extremum_rows_f32(extremum, a, as, x, xs, rows, n);
        else
          vk.extremum_rows_f64(extremum, a, as, x, xs, rows, n);
        return;
      }
      if (s[0] == sizeof(T) && s[1] == sizeof(A) && outer[1] == 0) {  // runs into one row
        if constexpr (kSum && std::is_same_v<T, float>)
          vk.sum_cols_f32(a, x, xs, rows, n);
        else if constexpr (kSum)
          vk.sum_cols_f64(a, x, xs, rows, n);
        else if constexpr (std::is_same_v<T, float>)
          vk.extremum_cols_f32(extremum, a, x, xs, rows, n);
        else
          vk.extremum_cols_f64(extremum, a, x, xs, rows, n);
        return;
      }
      char* q[2] = {p[0], p[1]};
      for (int64_t r = 0; r < rows; ++r, q[0] += outer[0], q[1] += outer[1]) run(q, s, n);
    };
    it.run_rows(begin, end, run, block);
  }
}

template <typename A, typename Op>
void fill_identity(const Tensor& acc_buf) {
  A* a = static_cast<A*>(acc_buf.raw_data());
  for (int64_t i = 0; i < acc_buf.numel(); ++i) a[i] = Op::identity();
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& out, const Tensor& in,
                        const std::vector<bool>& reduce_dim) {
  if (out.numel() == 0) return;
  const bool float_acc = is_floating_point(out.dtype());
  ScalarType acc_dtype = (op == ReduceOp::kMax || op == ReduceOp::kMin) ? in.dtype()
                         : float_acc                                    ? kFloat64
                                                                        : kInt64;
  // The accumulators: contiguous over out's (keepdim) shape ...
  Storage buf = Storage::allocate(kCPU, static_cast<size_t>(out.numel() * element_size(acc_dtype)));
  DimVector buf_strides = contiguous_strides(out.sizes());
  Tensor acc_buf = make_cpu_tensor(buf, out.sizes(), buf_strides, 0, acc_dtype);
  // ... seen with in's shape, stride 0 on the reduced dims.
  DimVector acc_strides(buf_strides);
  int64_t count = 1;
  for (size_t d = 0; d < reduce_dim.size(); ++d) {
    if (reduce_dim[d]) {
      acc_strides[d] = 0;
      count *= in.sizes()[d];
    }
  }
  Tensor acc = make_cpu_tensor(buf, in.sizes(), acc_strides, 0, acc_dtype);

  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto run = [&](auto acc_tag, auto op_tag) {
      using A = typename decltype(acc_tag)::type;
      using Op = typename decltype(op_tag)::type;
      fill_identity<A, Op>(acc_buf);
      if (in.numel() == 0) return;
      StridedLoop<2> it({&in, &acc});
      const int64_t n = it.numel();
      if (n < kParallelThreshold || out.numel() * 16 > n) {
        accumulate<T, A, Op>(it, 0, n);
        return;
      }
      // Two halves into two accumulator sets, combined in a fixed order: the result depends
      // only on n, not on whether the worker thread was free.
      Storage buf2 = Storage::allocate(kCPU, buf.nbytes());
      Tensor acc_buf2 = make_cpu_tensor(buf2, out.sizes(), buf_strides, 0, acc_dtype);
      Tensor acc2 = make_cpu_tensor(buf2, in.sizes(), acc_strides, 0, acc_dtype);
      fill_identity<A, Op>(acc_buf2);
      StridedLoop<2> it2({&in, &acc2});
      const int64_t mid = n / 2;
      parallel_for(
          n,
          [&](int64_t b, int64_t e) {
            if (b < mid) accumulate<T, A, Op>(it, b, std::min(e, mid));
            if (e > mid) accumulate<T, A, Op>(it2, std::max(b, mid), e);
          },
          kParallelThreshold);
      A* a1 = static_cast<A*>(acc_buf.raw_data());
      const A* a2 = static_cast<const A*>(acc_buf2.raw_data());
      for (int64_t i = 0; i < acc_buf.numel(); ++i) a1[i] = Op::combine(a1[i], a2[i]);
    };
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        if (float_acc)
          run(TypeTag<double>{}, TypeTag<SumOp<double>>{});
        else
          run(TypeTag<int64_t>{}, TypeTag<SumOp<int64_t>>{});
        break;
      case ReduceOp::kProd:
        if (float_acc)
          run(TypeTag<double>{}, TypeTag<ProdOp<double>>{});
        else
          run(TypeTag<int64_t>{}, TypeTag<ProdOp<int64_t>>{});
        break;
      case ReduceOp::kMax:
        run(TypeTag<T>{}, TypeTag<MaxOp<T>>{});
        break;
      case ReduceOp::kMin:
        run(TypeTag<T>{}, TypeTag<MinOp<T>>{});
        break;
    }
  });
  if (op == ReduceOp::kMean) {
    double* a = static_cast<double*>(acc_buf.raw_data());
    const double n = static_cast<double>(count);
    for (int64_t i = 0; i < acc_buf.numel(); ++i) a[i] /= n;  // 0 / 0 is nan, as PyTorch
  }
  copy(out, acc_buf);
}

void CpuBackend::argmax(const Tensor& out, const Tensor& in, int64_t dim) {
  if (out.numel() == 0) return;
  const int64_t len = in.sizes()[static_cast<size_t>(dim)];
  const int64_t step = in.strides()[static_cast<size_t>(dim)] * in.element_size();
  // in, seen with out's shape: each element is the start of one scanned line.
  Tensor starts =
      make_cpu_tensor(in.storage(), out.sizes(), in.strides(), in.storage_offset(), in.dtype());
  StridedLoop<2> it({&out, &starts});
  dispatch_compute_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.run(0, it.numel(), [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        const char* line = p[1] + k * s[1];
        T best = *reinterpret_cast<const T*>(line);
        int64_t best_i = 0;
        for (int64_t i = 1; i < len; ++i) {
          T v = *reinterpret_cast<const T*>(line + i * step);
          bool better;
          if constexpr (std::is_floating_point_v<T>) {
            better = !std::isnan(best) && (std::isnan(v) || v > best);  // first nan wins
          } else {
            better = v > best;
          }
          if (better) {
            best = v;
            best_i = i;
          }
        }
        *reinterpret_cast<int64_t*>(p[0] + k * s[0]) = best_i;
      }
    });
  });
}

// CpuBackend::scan (cumsum/cumprod) is in scan.cc.

}  // namespace mutagrad::cpu
