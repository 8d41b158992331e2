#include "tensor/backend.h"

#include <algorithm>

#include "tensor/tensor.h"

namespace mutagrad {
namespace {

Backend*& slot(DeviceType type) {
  static Backend* backends[kNumDeviceTypes] = {};
  return backends[static_cast<int>(type)];
}

}  // namespace

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
      return "neg";
    case UnaryOp::kAbs:
      return "abs";
    case UnaryOp::kExp:
      return "exp";
    case UnaryOp::kLog:
      return "log";
    case UnaryOp::kSqrt:
      return "sqrt";
    case UnaryOp::kSin:
      return "sin";
    case UnaryOp::kCos:
      return "cos";
    case UnaryOp::kTanh:
      return "tanh";
    case UnaryOp::kSigmoid:
      return "sigmoid";
    case UnaryOp::kRelu:
      return "relu";
    case UnaryOp::kLogicalNot:
      return "logical_not";
    case UnaryOp::kPowScalar:
      return "pow";
    case UnaryOp::kClamp:
      return "clamp";
    case UnaryOp::kRsqrt:
      return "rsqrt";
    case UnaryOp::kExp2:
      return "exp2";
    case UnaryOp::kExpm1:
      return "expm1";
    case UnaryOp::kLog1p:
      return "log1p";
    case UnaryOp::kLog2:
      return "log2";
    case UnaryOp::kLog10:
      return "log10";
    case UnaryOp::kSign:
      return "sign";
    case UnaryOp::kFloor:
      return "floor";
    case UnaryOp::kCeil:
      return "ceil";
    case UnaryOp::kRound:
      return "round";
    case UnaryOp::kTrunc:
      return "trunc";
    case UnaryOp::kFrac:
      return "frac";
    case UnaryOp::kIsNan:
      return "isnan";
    case UnaryOp::kIsInf:
      return "isinf";
    case UnaryOp::kIsFinite:
      return "isfinite";
    case UnaryOp::kBitwiseNot:
      return "bitwise_not";
    case UnaryOp::kNanToNum:
      return "nan_to_num";
    case UnaryOp::kTan:
      return "tan";
    case UnaryOp::kErf:
      return "erf";
    case UnaryOp::kErfinv:
      return "erfinv";
    case UnaryOp::kLgamma:
      return "lgamma";
    case UnaryOp::kDigamma:
      return "digamma";
    case UnaryOp::kPolygamma:
      return "polygamma";
    case UnaryOp::kReciprocal:
      return "reciprocal";
  }
  return "unknown";
}

const char* fma_op_name(FmaOp op) {
  switch (op) {
    case FmaOp::kAddAlpha:
      return "add";
    case FmaOp::kAddcmul:
      return "addcmul";
    case FmaOp::kLerp:
      return "lerp";
  }
  return "unknown";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kPow:
      return "pow";
    case BinaryOp::kMaximum:
      return "maximum";
    case BinaryOp::kMinimum:
      return "minimum";
    case BinaryOp::kRemainder:
      return "remainder";
    case BinaryOp::kFmod:
      return "fmod";
    case BinaryOp::kFloorDivide:
      return "floor_divide";
    case BinaryOp::kTruncDivide:
      return "div";
    case BinaryOp::kBitwiseAnd:
      return "bitwise_and";
    case BinaryOp::kBitwiseOr:
      return "bitwise_or";
    case BinaryOp::kBitwiseXor:
      return "bitwise_xor";
    case BinaryOp::kShiftLeft:
      return "bitwise_left_shift";
    case BinaryOp::kShiftRight:
      return "bitwise_right_shift";
    case BinaryOp::kAtan2:
      return "atan2";
    case BinaryOp::kEq:
      return "eq";
    case BinaryOp::kNe:
      return "ne";
    case BinaryOp::kLt:
      return "lt";
    case BinaryOp::kLe:
      return "le";
    case BinaryOp::kGt:
      return "gt";
    case BinaryOp::kGe:
      return "ge";
    case BinaryOp::kLogicalAnd:
      return "logical_and";
    case BinaryOp::kLogicalXor:
      return "logical_xor";
    case BinaryOp::kLogicalOr:
      return "logical_or";
  }
  return "unknown";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "unknown";
}

void Backend::missing(const char* op) const {
  throw DeviceError(str(op, " has no ", device_type(), " implementation; move the tensors to the ",
                        "CPU with .to(kCPU) first, or use an op this backend supports"));
}

void Backend::scan(ReduceOp, const Tensor&, const Tensor&, int64_t) { missing("scan"); }

void Backend::sort(const Tensor&, const Tensor&, const Tensor&, int64_t, bool) { missing("sort"); }

void Backend::searchsorted(const Tensor&, const Tensor&, const Tensor&, bool) {
  missing("searchsorted");
}

void Backend::index(const Tensor&, const Tensor&, const std::vector<Tensor>&) { missing("index"); }

void Backend::index_put(const Tensor&, const std::vector<Tensor>&, const Tensor&,
                        const IndexPutDescriptor&) {
  missing("index_put_");
}

void Backend::random(const Tensor&, const RandomParams&) { missing("random"); }

void Backend::masked_fill(const Tensor&, const Tensor&, const Scalar&) { missing("masked_fill_"); }

void Backend::max_pool2d(const Tensor&, const Tensor&, const Tensor&, const PoolWindows&,
                         const PoolWindows&) {
  missing("max_pool2d");
}

void Backend::max_pool2d_backward(const Tensor&, const Tensor&, const Tensor&, const PoolWindows&,
                                  const PoolWindows&) {
  missing("max_pool2d_backward");
}

void Backend::avg_pool2d(const Tensor&, const Tensor&, const PoolWindows&, const PoolWindows&,
                         const Tensor&) {
  missing("avg_pool2d");
}

void Backend::avg_pool2d_backward(const Tensor&, const Tensor&, const PoolWindows&,
                                  const PoolWindows&, const Tensor&) {
  missing("avg_pool2d_backward");
}

void PoolWindows::set_ranges(int64_t in) {
  const auto n = static_cast<int64_t>(first.size());
  lo.assign(static_cast<size_t>(in), n);
  hi.assign(static_cast<size_t>(in), 0);
  for (int64_t o = 0; o < n; ++o) {
    const auto u = static_cast<size_t>(o);
    for (int64_t j = 0; j < count[u]; ++j) {
      const auto p = static_cast<size_t>(first[u] + j * step);
      lo[p] = std::min(lo[p], o);
      hi[p] = std::max(hi[p], o + 1);
    }
  }
  for (int64_t p = 0; p < in; ++p) {
    const auto u = static_cast<size_t>(p);
    if (hi[u] == 0) lo[u] = 0;
  }
}

std::vector<int64_t> padding_only_windows(const PoolWindows& rows, const PoolWindows& cols) {
  std::vector<int64_t> out;
  const auto oh = static_cast<int64_t>(rows.count.size());
  const auto ow = static_cast<int64_t>(cols.count.size());
  for (int64_t i = 0; i < oh; ++i) {
    for (int64_t j = 0; j < ow; ++j) {
      if (rows.count[static_cast<size_t>(i)] == 0 || cols.count[static_cast<size_t>(j)] == 0) {
        out.push_back(i * ow + j);
      }
    }
  }
  return out;
}

Backend& backend_for(DeviceType type) {
  Backend* b = slot(type);
  if (b == nullptr) {
    throw DeviceError(str(
        "no backend is registered for device type ", type,
        (type == DeviceType::CUDA ? "; build with --config=cuda (a GPU) or --config=cuda_host (the "
                                    "host-run device), see docs/cuda.md"
                                  : "; link //tensor/cpu:cpu_backend")));
  }
  return *b;
}

void register_backend(DeviceType type, Backend* backend) { slot(type) = backend; }

bool has_backend(DeviceType type) { return slot(type) != nullptr; }

}  // namespace mutagrad
