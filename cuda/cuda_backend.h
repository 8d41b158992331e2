// CudaBackend: the kernels of DeviceType::CUDA, registered with backend_for() at load time by
// whichever build is linked (device or host-run; see docs/cuda.md).
//
// Arguments arrive validated by mutagrad::native (tensor/backend.h). Same-device work runs the
// kernels of cuda/*.cu; copy() also moves data between the CPU and the device. Every Backend
// op has a kernel.
//
//   Backend& gpu = backend_for(Device(DeviceType::CUDA, 0));
//   gpu.fill(t, 1.5);
//   gpu.copy(cuda_dst, cpu_src);   // host -> device, any strides and dtypes
#pragma once

#include <vector>

#include "tensor/backend.h"

namespace mutagrad::cuda {

class CudaBackend : public Backend {
 public:
  DeviceType device_type() const override { return DeviceType::CUDA; }
  Allocator& allocator() override;
  // Only the process's device (Note [One device per process] in cuda/runtime.h).
  void check_device(Device device) override;

  void fill(const Tensor& dst, const Scalar& value) override;
  // Either operand may be on the CPU (a transfer); see Note [Transfers] in cuda_backend.cc.
  void copy(const Tensor& dst, const Tensor& src) override;
  void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) override;
  void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) override;
  // The CPU's formulas (Note [The CPU's bits for optimizer steps] in scalar_inplace.cu).
  void binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value) override;
  void fma(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
           double value) override;
  void addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2,
                       double value) override;
  void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) override;
  void reduce(ReduceOp op, const Tensor& out, const Tensor& in,
              const std::vector<bool>& reduce_dim) override;
  void argmax(const Tensor& out, const Tensor& in, int64_t dim) override;
  void scan(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim) override;
  void sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
            bool descending) override;
  void searchsorted(const Tensor& out, const Tensor& sorted, const Tensor& values,
                    bool right) override;
  void matmul(const Tensor& out, const Tensor& a, const Tensor& b) override;
  void arange(const Tensor& out, const Scalar& start, const Scalar& step) override;
  Tensor nonzero(const Tensor& in) override;
  void index(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices) override;
  // One kernel and one flag read each (Note [Checked reads and one flag] in indexing.cu).
  bool index_checked(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices,
                     const std::vector<Tensor>& unexpanded, bool negative_wraps) override;
  bool index_in_range(const Tensor& idx, int64_t lower, int64_t size) override;
  void index_put(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                 const IndexPutDescriptor& desc) override;
  void masked_fill(const Tensor& dst, const Tensor& mask, const Scalar& value) override;
  // Note [Random draws] in tensor/random_draw.h: the CPU's bits.
  void random(const Tensor& out, const RandomParams& params) override;
  // cuDNN when the build has it (deterministic algorithms), else the im2col + GEMM reference
  // (Note [Convolution on the CUDA device] in cuda/convolution.cc).
  void max_pool2d(const Tensor& values, const Tensor& indices, const Tensor& x,
                  const PoolWindows& rows, const PoolWindows& cols) override;
  void max_pool2d_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                           const PoolWindows& rows, const PoolWindows& cols) override;
  void avg_pool2d(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                  const PoolWindows& cols, const Tensor& divisor) override;
  void avg_pool2d_backward(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                           const PoolWindows& cols, const Tensor& divisor) override;
  void conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                    const ConvParams& params) override;
  void conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                           const ConvParams& params) override;
  void conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                            const ConvParams& params) override;
};

}  // namespace mutagrad::cuda
