// CpuBackend: the kernels of DeviceType::CPU, registered with backend_for() at load time.
//
// Arguments arrive validated by mutagrad::native (see tensor/backend.h); the kernels only walk
// memory. Pointwise kernels run two threads above kParallelThreshold elements (parallel.h).
//
//   Backend& cpu = backend_for(kCPU);   // the one CpuBackend instance
//   cpu.fill(t, 1.5);
//   cpu.binary(BinaryOp::kAdd, out, a, b);
#pragma once

#include <vector>

#include "tensor/backend.h"

namespace mutagrad::cpu {

// Hands out 64-byte-aligned (kCpuAlignment) host memory.
class CpuAllocator : public Allocator {
 public:
  std::shared_ptr<void> allocate(size_t nbytes) override;
};

class CpuBackend : public Backend {
 public:
  DeviceType device_type() const override { return DeviceType::CPU; }
  Allocator& allocator() override { return allocator_; }

  void fill(const Tensor& dst, const Scalar& value) override;  // copy.cc
  void copy(const Tensor& dst, const Tensor& src) override;    // copy.cc
  void unary(UnaryOp op, const Tensor& out, const Tensor& in,
             const UnaryArgs& args) override;  // pointwise.cc
  void binary(BinaryOp op, const Tensor& out, const Tensor& a,
              const Tensor& b) override;  // pointwise.cc
  void where(const Tensor& out, const Tensor& cond, const Tensor& a,
             const Tensor& b) override;  // pointwise.cc
  void binary_scalar_inplace(BinaryOp op, const Tensor& out,
                             const Scalar& value) override;  // scalar_inplace.cc
  void fma(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
           double value) override;  // same
  void addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2,
                       double value) override;  // same
  void activation_backward(ActivationGrad op, const Tensor& out, const Tensor& grad,
                           const Tensor& y) override;  // activation_backward.cc
  void reduce(ReduceOp op, const Tensor& out, const Tensor& in,
              const std::vector<bool>& reduce_dim) override;                          // reduce.cc
  void argmax(const Tensor& out, const Tensor& in, int64_t dim) override;             // reduce.cc
  void scan(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim) override;  // reduce.cc
  void sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
            bool descending) override;  // sort.cc
  void searchsorted(const Tensor& out, const Tensor& sorted, const Tensor& values,
                    bool right) override;                                            // sort.cc
  void matmul(const Tensor& out, const Tensor& a, const Tensor& b) override;         // matmul.cc
  void arange(const Tensor& out, const Scalar& start, const Scalar& step) override;  // misc.cc
  Tensor nonzero(const Tensor& in) override;                                         // misc.cc
  void random(const Tensor& out, const RandomParams& params) override;               // random.cc

  void index(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices) override;
  bool index_checked(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices,
                     const std::vector<Tensor>& unexpanded, bool negative_wraps) override;
  bool index_in_range(const Tensor& idx, int64_t lower, int64_t size) override;
  void index_put(const Tensor& dst, const std::vector<Tensor>& indices, const Tensor& values,
                 const IndexPutDescriptor& desc) override;
  bool index_put_checked(const Tensor& dst, const std::vector<Tensor>& indices,
                         const Tensor& values, const std::vector<Tensor>& unexpanded,
                         const IndexPutDescriptor& desc, bool negative_wraps) override;
  void masked_fill(const Tensor& dst, const Tensor& mask, const Scalar& value) override;

  // pooling.cc: tensor/pool_math.h's formulas per plane.
  void max_pool2d(const Tensor& values, const Tensor& indices, const Tensor& x,
                  const PoolWindows& rows, const PoolWindows& cols) override;
  void max_pool2d_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                           const PoolWindows& rows, const PoolWindows& cols) override;
  void avg_pool2d(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                  const PoolWindows& cols, const Tensor& divisor) override;
  void avg_pool2d_backward(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                           const PoolWindows& cols, const Tensor& divisor) override;
  // convolution.cc: oneDNN for float32, the im2col reference otherwise.
  void conv_forward(const Tensor& y, const Tensor& x, const Tensor& w,
                    const ConvParams& params) override;
  void conv_backward_input(const Tensor& gx, const Tensor& gy, const Tensor& w,
                           const ConvParams& params) override;
  void conv_backward_weight(const Tensor& gw, const Tensor& x, const Tensor& gy,
                            const ConvParams& params) override;

 private:
  CpuAllocator allocator_;
};

// The registered instance.
CpuBackend& cpu_backend();

}  // namespace mutagrad::cpu
