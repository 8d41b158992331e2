// The CUDA kernels, one function per Backend op, all operands on the device (same-device work
// only: CudaBackend in cuda_backend.cc moves data across devices and calls these). Arguments
// are validated and broadcast by mutagrad::native, as for every backend (tensor/backend.h).
//
//   fill_kernel(t, 1.5);                       // copy.cu
//   binary_kernel(BinaryOp::kAdd, out, a, b);  // pointwise.cu
//   reduce_kernel(ReduceOp::kSum, out, in, {true, false});  // reduce.cu
#pragma once

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::cuda {

// copy.cu
void fill_kernel(const Tensor& dst, const Scalar& value);
// dst = src converted to dst's dtype; both on the device, src of dst's shape.
void copy_kernel(const Tensor& dst, const Tensor& src);
// dst[mask] = value; mask (bool) broadcasts to dst's shape.
void masked_fill_kernel(const Tensor& dst, const Tensor& mask, const Scalar& value);

// pointwise.cu
void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args);
void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);

// scalar_inplace.cu (Note [The CPU's bits for optimizer steps]): float32/float64 only.
void binary_scalar_inplace_kernel(BinaryOp op, const Tensor& out, const Scalar& value);
void fma_kernel(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                double value);
void addcdiv_inplace_kernel(const Tensor& out, const Tensor& t1, const Tensor& t2, double value);

// reduce.cu
void reduce_kernel(ReduceOp op, const Tensor& out, const Tensor& in,
                   const std::vector<bool>& reduce_dim);
void argmax_kernel(const Tensor& out, const Tensor& in, int64_t dim);
void scan_kernel(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim);

// sort.cu (Note [Sorting lines on the device])
void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                 bool descending);
void searchsorted_kernel(const Tensor& out, const Tensor& sorted, const Tensor& values, bool right);

// indexing.cu (Note [Deterministic index_put_ on the device])
void index_kernel(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices);
// Note [Checked reads and one flag]: false when an index value lies outside [lower, size) of
// its dim (lower = -size when negative_wraps, else 0); one synchronization.
bool index_checked_kernel(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices,
                          bool negative_wraps);
bool index_in_range_kernel(const Tensor& idx, int64_t lower, int64_t size);
void index_put_kernel(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                      const IndexPutDescriptor& desc);

// pooling.cu (Note [Pooling kernels] in tensor/native/pooling.h)
void max_pool2d_kernel(const Tensor& values, const Tensor& indices, const Tensor& x,
                       const PoolWindows& rows, const PoolWindows& cols);
void max_pool2d_backward_kernel(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                                const PoolWindows& rows, const PoolWindows& cols);
void avg_pool2d_kernel(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                       const PoolWindows& cols, const Tensor& divisor);
void avg_pool2d_backward_kernel(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                                const PoolWindows& cols, const Tensor& divisor);

// linalg.cu
void matmul_kernel(const Tensor& out, const Tensor& a, const Tensor& b);

// misc.cu
void arange_kernel(const Tensor& out, const Scalar& start, const Scalar& step);
Tensor nonzero_kernel(const Tensor& in);
// out (contiguous) = random_value<T>(params, i) (Note [Random draws] in tensor/random_draw.h).
void random_kernel(const Tensor& out, const RandomParams& params);

}  // namespace mutagrad::cuda
