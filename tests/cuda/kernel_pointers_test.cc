// Note [Host-run device arena] (cuda/runtime_host.cc): every entry of the CUDA backend refuses an
// operand whose memory is not the device's, whichever operand it is. Each case runs once with
// device tensors (it must work), then once per tensor operand with that operand replaced by its
// host twin: the same bytes, geometry and dtype in host memory, on a tensor that claims to live
// on the device (host code handing a CPU pointer to a kernel, which a GPU faults on). A kernel
// entry or operand that skips the check runs on the host memory and the case fails.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <list>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "mutagrad.h"
#include "tensor/native/copy.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using tensor_testing::error_of;

// A tensor of t's geometry and dtype whose storage is a host copy of t's storage, labelled as
// CUDA memory. The bytes live in `keep`.
Tensor host_twin(const Tensor& t, std::list<std::vector<unsigned char>>& keep) {
  const size_t nbytes = t.storage().nbytes();
  const int64_t n = static_cast<int64_t>(nbytes) / t.element_size();
  const Tensor flat(std::make_shared<TensorImpl>(t.storage(), DimVector{n}, DimVector{1}, 0,
                                                 t.dtype(), VersionCounter()));
  const Tensor cpu = native::to(flat, kCPU);
  std::vector<unsigned char>& bytes = keep.emplace_back(nbytes);
  std::memcpy(bytes.data(), cpu.raw_data(), nbytes);
  const Storage storage =
      Storage::from_blob(bytes.data(), nbytes, Device(DeviceType::CUDA), nullptr);
  return Tensor(std::make_shared<TensorImpl>(storage, DimVector(t.sizes()), DimVector(t.strides()),
                                             t.storage_offset(), t.dtype(), VersionCounter()));
}

struct KernelEntry {
  const char* name;
  std::vector<Tensor> operands;  // device tensors
  std::function<void(Backend&, const std::vector<Tensor>&)> call;
};

std::vector<KernelEntry> entries() {
  const auto d = [](const Tensor& t) { return t.to(kCUDA); };
  const auto f = [&](int64_t n) { return d(arange(n, kFloat32) / 4); };
  const Tensor i3 = d(tensor({2, 0, 2}, kInt64));
  const Tensor mask = d(arange(8) > 3);
  using Ops = const std::vector<Tensor>&;
  IndexPutDescriptor accumulate{true};
  ConvParams conv;
  conv.stride = {1};
  conv.padding_l = {0};
  conv.padding_r = {0};
  conv.dilation = {1};
  return {
      {"fill", {f(8)}, [](Backend& b, Ops t) { b.fill(t[0], 1.5); }},
      {"copy", {f(8), f(8)}, [](Backend& b, Ops t) { b.copy(t[0], t[1]); }},
      {"masked_fill", {f(8), mask}, [](Backend& b, Ops t) { b.masked_fill(t[0], t[1], 2.0); }},
      {"unary", {f(8), f(8)}, [](Backend& b, Ops t) { b.unary(UnaryOp::kNeg, t[0], t[1], {}); }},
      {"binary",
       {f(8), f(8), f(8)},
       [](Backend& b, Ops t) { b.binary(BinaryOp::kAdd, t[0], t[1], t[2]); }},
      {"where",
       {f(8), mask, f(8), f(8)},
       [](Backend& b, Ops t) { b.where(t[0], t[1], t[2], t[3]); }},
      {"binary_scalar_inplace",
       {f(8)},
       [](Backend& b, Ops t) { b.binary_scalar_inplace(BinaryOp::kMul, t[0], 2.0); }},
      {"fma",
       {f(8), f(8), f(8), f(8)},
       [](Backend& b, Ops t) { b.fma(FmaOp::kAddcmul, t[0], t[1], t[2], t[3], 0.5); }},
      {"fma without c",
       {f(8), f(8), f(8)},
       [](Backend& b, Ops t) { b.fma(FmaOp::kLerp, t[0], t[1], t[2], Tensor(), 0.25); }},
      {"addcdiv_inplace",
       {f(8), f(8), d(full({8}, 2.0))},
       [](Backend& b, Ops t) { b.addcdiv_inplace(t[0], t[1], t[2], 0.5); }},
      {"reduce",
       {d(zeros({2, 1})), d(arange(2000, kFloat32).reshape({2, 1000}))},
       [](Backend& b, Ops t) {
         b.reduce(ReduceOp::kSum, t[0], t[1], {false, true});
       }},
      {"argmax",
       {d(zeros({2, 1}, kInt64)), d(arange(2000, kFloat32).reshape({2, 1000}))},
       [](Backend& b, Ops t) { b.argmax(t[0], t[1], 1); }},
      {"scan", {f(8), f(8)}, [](Backend& b, Ops t) { b.scan(ReduceOp::kSum, t[0], t[1], 0); }},
      {"sort",
       {f(8), d(zeros({8}, kInt64)), f(8)},
       [](Backend& b, Ops t) { b.sort(t[0], t[1], t[2], 0, true); }},
      {"searchsorted",
       {d(zeros({3}, kInt64)), f(8), d(tensor({0.3f, 1.2f, 9.f}))},
       [](Backend& b, Ops t) { b.searchsorted(t[0], t[1], t[2], false); }},
      {"matmul",
       {d(zeros({2, 2})), f(6).reshape({2, 3}), f(6).reshape({3, 2})},
       [](Backend& b, Ops t) { b.matmul(t[0], t[1], t[2]); }},
      {"arange", {f(8)}, [](Backend& b, Ops t) { b.arange(t[0], 1, 2); }},
      {"nonzero", {mask}, [](Backend& b, Ops t) { b.nonzero(t[0]); }},
      {"random", {f(8)}, [](Backend& b, Ops t) { b.random(t[0], RandomParams{}); }},
      {"index", {f(3), f(8), i3}, [](Backend& b, Ops t) { b.index(t[0], t[1], {t[2]}); }},
      {"index_checked",
       {f(3), f(8), i3},
       [](Backend& b, Ops t) { b.index_checked(t[0], t[1], {t[2]}, {t[2]}, true); }},
      {"index_in_range", {i3}, [](Backend& b, Ops t) { b.index_in_range(t[0], 0, 8); }},
      {"index_put",
       {f(8), i3, f(3)},
       [](Backend& b, Ops t) { b.index_put(t[0], {t[1]}, t[2], IndexPutDescriptor{}); }},
      {"index_put accumulate",
       {f(8), i3, f(3)},
       [=](Backend& b, Ops t) { b.index_put(t[0], {t[1]}, t[2], accumulate); }},
      {"conv_forward",
       {d(zeros({1, 2, 3})), f(10).reshape({1, 2, 5}), f(6).reshape({2, 1, 3})},
       [=](Backend& b, Ops t) {
         ConvParams p = conv;
         p.groups = 2;
         b.conv_forward(t[0], t[1], t[2], p);
       }},
  };
}

TEST(KernelPointers, EveryEntryRefusesHostMemoryInEveryOperand) {
  Backend& gpu = backend_for(Device(DeviceType::CUDA));
  for (const KernelEntry& e : entries()) {
    SCOPED_TRACE(e.name);
    e.call(gpu, e.operands);  // device tensors: accepted
    for (size_t k = 0; k < e.operands.size(); ++k) {
      SCOPED_TRACE(testing::Message() << "operand " << k);
      std::list<std::vector<unsigned char>> keep;
      std::vector<Tensor> ops = e.operands;
      ops[k] = host_twin(ops[k], keep);
      const std::vector<unsigned char> before = keep.front();
      const std::string message = error_of<DeviceError>([&] { e.call(gpu, ops); });
      EXPECT_NE(message.find("which is not memory of the CUDA device"), std::string::npos)
          << message;
      EXPECT_EQ(keep.front(), before) << "a kernel wrote the host memory";
    }
  }
}

}  // namespace
}  // namespace mutagrad
