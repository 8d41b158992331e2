// CudaBackend: its registration, transfers between the CPU and the device, and the kernels of
// cuda/kernels.h behind Backend's virtuals. Compiled into both builds (backend_device,
// backend_host).
#include "cuda/cuda_backend.h"

#include "cuda/allocator.h"
#include "cuda/cuda.h"
#include "cuda/host_allocator.h"
#include "cuda/kernels.h"
#include "cuda/runtime.h"
#include "tensor/native/factories.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace mutagrad::cuda {
namespace {

void* address(const Tensor& t) { return t.unsafe_impl()->data(); }

size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.numel() * t.element_size()); }

// Note [Transfers]
// A copy between the CPU and the device moves one contiguous block of the source's dtype with
// one memcpy; strides and dtype conversion are handled on the side that has the kernels for
// them: host -> device uploads src as it is (made contiguous on the CPU if needed) and converts
// and scatters on the device; device -> host gathers on the device (if src is not contiguous),
// downloads, and converts and scatters on the CPU. Both conversions are the same formula
// (convert_value), so the values do not depend on the direction. An expanded CPU source is
// materialized before the upload. When dst is contiguous and of src's dtype, the memcpy goes
// straight into it.
//
// Note [Non-blocking transfers]
// Inside a NonBlockingTransfer scope (to(..., non_blocking=true), copy_(src, true); Note
// [Non-blocking transfers scope] in tensor/storage.h), as in torch:
// - host -> device is queued on the stream (memcpy_async) and not waited for. Its host side is
//   pinned: the source itself when it is a contiguous pinned tensor, else a pinned staging
//   block the source is copied into on the CPU first. The block is marked used
//   (record_use), so it is not handed out again, to a later staging copy or a new pinned
//   tensor, until an event recorded on the stream after the copy completed.
// - device -> host straight into a contiguous pinned destination of src's dtype is queued too:
//   the values are there once the stream passed it (cuda::synchronize()), which the caller
//   must wait for before reading, as in torch; the destination block is marked used. Into
//   pageable memory, or when the CPU must convert or scatter the downloaded block, the copy
//   is synchronous: our own code never reads a host buffer a queued copy still writes.
// Without the scope every transfer returns when the copy is done. The host-run runtime runs
// memcpy_async to completion, so there the scope changes which path runs, not the values.
// A contiguous copy of a CPU tensor in a pinned block.
Tensor pinned_copy(const Tensor& src) {
  std::shared_ptr<void> block = host_allocator().allocate(nbytes(src));
  Tensor out =
      from_blob(block.get(), src.sizes(), contiguous_strides(src.sizes()), src.dtype(), block);
  backend_for(kCPU).copy(out, src);
  return out;
}

void upload(const Tensor& dst, const Tensor& src) {
  const bool direct = dst.is_contiguous() && dst.dtype() == src.dtype();
  Tensor staging =
      direct ? dst : empty(src.sizes(), TensorOptions(src.dtype()).device(dst.device()));
  const size_t n = nbytes(src);
  if (NonBlockingTransfer::active()) {
    Tensor host = src.is_contiguous() && is_pinned(src) ? src : pinned_copy(src);
    runtime().memcpy_async(address(staging), address(host), n, CopyKind::kHostToDevice);
    host_allocator().record_use(address(host));
  } else {
    Tensor host = src.is_contiguous() ? src : empty(src.sizes(), src.dtype());
    if (!src.is_contiguous()) backend_for(kCPU).copy(host, src);
    runtime().memcpy(address(staging), address(host), n, CopyKind::kHostToDevice);
  }
  if (!direct) copy_kernel(dst, staging);
}

void download(const Tensor& dst, const Tensor& src) {
  Tensor device = src;
  if (!src.is_contiguous()) {
    device = empty(src.sizes(), TensorOptions(src.dtype()).device(src.device()));
    copy_kernel(device, src);
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == src.dtype();
  if (direct && NonBlockingTransfer::active() && is_pinned(dst)) {
    runtime().memcpy_async(address(dst), address(device), nbytes(device), CopyKind::kDeviceToHost);
    host_allocator().record_use(address(dst));
    return;
  }
  Tensor host = direct ? dst : empty(src.sizes(), src.dtype());
  runtime().memcpy(address(host), address(device), nbytes(device), CopyKind::kDeviceToHost);
  if (!direct) backend_for(kCPU).copy(dst, host);
}

}  // namespace

Allocator& CudaBackend::allocator() { return caching_allocator(); }

void CudaBackend::check_device(Device device) {
  check_available();
  const int current = runtime().current_device();
  if (device.index() == current) return;
  const int count = device_count();
  if (device.index() >= count) {
    throw DeviceError(
        str("cannot create a tensor on ", device, ": CUDA device ",
            static_cast<int>(device.index()), " does not exist (this machine has ", count,
            "); mutagrad drives one CUDA device per process, here cuda:", current,
            ". Use \"cuda\" or cuda:", current, ", or select the GPU with CUDA_VISIBLE_DEVICES"));
  }
  throw DeviceError(str(
      "cannot create a tensor on ", device,
      ": mutagrad drives one CUDA device per process, and this one's is cuda:", current,
      " (chosen by ", runtime().device_source(), "; this machine has ", count,
      "). Use \"cuda\" or cuda:", current, "; to work on cuda:", static_cast<int>(device.index()),
      " call cuda::set_device(", static_cast<int>(device.index()),
      ") before the first CUDA tensor, or start one process per GPU with "
      "LOCAL_RANK (or CUDA_VISIBLE_DEVICES)"));
}

void CudaBackend::fill(const Tensor& dst, const Scalar& value) {
  if (dst.numel() > 0) fill_kernel(dst, value);
}

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (src.device().is_cpu()) return upload(dst, src);
  if (dst.device().is_cpu()) return download(dst, src);
  copy_kernel(dst, src);
}

void CudaBackend::unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  if (out.numel() > 0) unary_kernel(op, out, in, args);
}

void CudaBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() > 0) binary_kernel(op, out, a, b);
}

void CudaBackend::binary_scalar_inplace(BinaryOp op, const Tensor& out, const Scalar& value) {
  if (out.numel() > 0) binary_scalar_inplace_kernel(op, out, value);
}

void CudaBackend::fma(FmaOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                      const Tensor& c, double value) {
  if (out.numel() > 0) fma_kernel(op, out, a, b, c, value);
}

void CudaBackend::addcdiv_inplace(const Tensor& out, const Tensor& t1, const Tensor& t2,
                                  double value) {
  if (out.numel() > 0) addcdiv_inplace_kernel(out, t1, t2, value);
}

void CudaBackend::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (out.numel() > 0) where_kernel(out, cond, a, b);
}

void CudaBackend::reduce(ReduceOp op, const Tensor& out, const Tensor& in,
                         const std::vector<bool>& reduce_dim) {
  if (out.numel() > 0) reduce_kernel(op, out, in, reduce_dim);
}

void CudaBackend::argmax(const Tensor& out, const Tensor& in, int64_t dim) {
  if (out.numel() > 0) argmax_kernel(out, in, dim);
}

void CudaBackend::scan(ReduceOp op, const Tensor& out, const Tensor& in, int64_t dim) {
  if (out.numel() > 0) scan_kernel(op, out, in, dim);
}

void CudaBackend::sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                       bool descending) {
  if (values.numel() > 0) sort_kernel(values, indices, in, dim, descending);
}

void CudaBackend::searchsorted(const Tensor& out, const Tensor& sorted, const Tensor& values,
                               bool right) {
  if (out.numel() > 0) searchsorted_kernel(out, sorted, values, right);
}

void CudaBackend::matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() > 0) matmul_kernel(out, a, b);
}

void CudaBackend::arange(const Tensor& out, const Scalar& start, const Scalar& step) {
  if (out.numel() > 0) arange_kernel(out, start, step);
}

Tensor CudaBackend::nonzero(const Tensor& in) { return nonzero_kernel(in); }

void CudaBackend::index(const Tensor& out, const Tensor& self, const std::vector<Tensor>& indices) {
  if (out.numel() > 0) index_kernel(out, self, indices);
}

bool CudaBackend::index_checked(const Tensor& out, const Tensor& self,
                                const std::vector<Tensor>& indices,
                                const std::vector<Tensor>& /*unexpanded*/, bool negative_wraps) {
  return out.numel() == 0 || index_checked_kernel(out, self, indices, negative_wraps);
}

bool CudaBackend::index_in_range(const Tensor& idx, int64_t lower, int64_t size) {
  return index_in_range_kernel(idx, lower, size);
}

void CudaBackend::index_put(const Tensor& dst, const std::vector<Tensor>& indices,
                            const Tensor& values, const IndexPutDescriptor& desc) {
  if (dst.numel() > 0) index_put_kernel(dst, indices, values, desc);
}

void CudaBackend::masked_fill(const Tensor& dst, const Tensor& mask, const Scalar& value) {
  if (dst.numel() > 0) masked_fill_kernel(dst, mask, value);
}

void CudaBackend::random(const Tensor& out, const RandomParams& params) {
  if (out.numel() > 0) random_kernel(out, params);
}

void CudaBackend::max_pool2d(const Tensor& values, const Tensor& indices, const Tensor& x,
                             const PoolWindows& rows, const PoolWindows& cols) {
  if (values.numel() > 0) max_pool2d_kernel(values, indices, x, rows, cols);
}

void CudaBackend::max_pool2d_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices,
                                      const PoolWindows& rows, const PoolWindows& cols) {
  if (gx.numel() > 0) max_pool2d_backward_kernel(gx, gy, indices, rows, cols);
}

void CudaBackend::avg_pool2d(const Tensor& y, const Tensor& x, const PoolWindows& rows,
                             const PoolWindows& cols, const Tensor& divisor) {
  if (y.numel() > 0) avg_pool2d_kernel(y, x, rows, cols, divisor);
}

void CudaBackend::avg_pool2d_backward(const Tensor& gx, const Tensor& gy, const PoolWindows& rows,
                                      const PoolWindows& cols, const Tensor& divisor) {
  if (gx.numel() > 0) avg_pool2d_backward_kernel(gx, gy, rows, cols, divisor);
}

namespace {
const bool registered = [] {
  register_backend(DeviceType::CUDA, new CudaBackend());  // never destroyed, as the CPU's
  return true;
}();
}  // namespace

}  // namespace mutagrad::cuda
