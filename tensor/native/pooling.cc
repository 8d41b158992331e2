// Raw 2-d pooling: see pooling.h (Note [Pooling kernels]).
#include "tensor/native/pooling.h"

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"

namespace mutagrad::native {
namespace {

// t as a contiguous operand of dtype `dt` (t itself when it is one).
Tensor operand(const Tensor& t, ScalarType dt) {
  return t.dtype() == dt && t.is_contiguous() ? t : contiguous(to(t, dt));
}

TensorOptions options(ScalarType dt, Device device) { return TensorOptions(dt).device(device); }

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d(const Tensor& x, const PoolWindows& rows,
                                      const PoolWindows& cols) {
  const ScalarType dt = opmath_dtype(x.dtype());
  const DimVector shape{x.size(0), static_cast<int64_t>(rows.first.size()),
                        static_cast<int64_t>(cols.first.size())};
  Tensor values = empty(shape, options(dt, x.device()));
  Tensor indices = empty(shape, options(kInt64, x.device()));
  if (values.numel() > 0) {
    backend_for(x.device()).max_pool2d(values, indices, operand(x, dt), rows, cols);
  }
  return {dt == x.dtype() ? values : to(values, x.dtype()), indices};
}

Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const PoolWindows& rows,
                           const PoolWindows& cols, IntArrayRef input_size) {
  const ScalarType dt = opmath_dtype(gy.dtype());
  if (gy.numel() == 0) return zeros(input_size, options(gy.dtype(), gy.device()));
  Tensor gx = empty(input_size, options(dt, gy.device()));
  backend_for(gy.device())
      .max_pool2d_backward(gx, operand(gy, dt), operand(indices, kInt64), rows, cols);
  return dt == gy.dtype() ? gx : to(gx, gy.dtype());
}

Tensor avg_pool2d(const Tensor& x, const PoolWindows& rows, const PoolWindows& cols,
                  const Tensor& divisor) {
  const ScalarType dt = divisor.dtype();
  Tensor y = empty({x.size(0), divisor.size(0), divisor.size(1)}, options(dt, x.device()));
  if (y.numel() > 0) {
    backend_for(x.device()).avg_pool2d(y, operand(x, dt), rows, cols, operand(divisor, dt));
  }
  return dt == x.dtype() ? y : to(y, x.dtype());
}

Tensor avg_pool2d_backward(const Tensor& gy, const PoolWindows& rows, const PoolWindows& cols,
                           const Tensor& divisor, IntArrayRef input_size) {
  const ScalarType dt = divisor.dtype();
  if (gy.numel() == 0) return zeros(input_size, options(gy.dtype(), gy.device()));
  Tensor gx = empty(input_size, options(dt, gy.device()));
  backend_for(gy.device())
      .avg_pool2d_backward(gx, operand(gy, dt), rows, cols, operand(divisor, dt));
  return dt == gy.dtype() ? gx : to(gx, gy.dtype());
}

}  // namespace mutagrad::native
