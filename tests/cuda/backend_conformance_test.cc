// Backend conformance: every implemented Backend op, on every device, over random shapes and
// geometry (permuted, gappy, offset, expanded, zero-size, 0-dim), every dtype and special
// values, compared with the CPU backend on contiguous copies of the same inputs. Exact ops must
// agree bit for bit (Note [Bitwise equal to the CPU backend] in cuda/kernel_util.h); libm ops
// within kUlps, and in the host-run build the CUDA result is also bitwise std:: per element.
// An input the CPU refuses must be refused by the device too, with the same error text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "tensor/backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/views.h"
#include "tests/cuda/conformance_util.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using conformance::check_op;
using conformance::expect_identical;
using conformance::expect_same;
using conformance::host;
using conformance::host_run;
using conformance::input;
using conformance::kGpu;
using conformance::same_on;
using tensor_testing::kAllDtypes;
using tensor_testing::Random;

constexpr int64_t kUlps = conformance::kUlps;

bool exact(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kRsqrt:
    case UnaryOp::kExp2:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog1p:
    case UnaryOp::kLog2:
    case UnaryOp::kLog10:
    case UnaryOp::kTan:
    case UnaryOp::kErf:
      return false;
    default:
      return true;
  }
}

// The special functions of tensor/element_math.h (series over libm calls, and lgamma): one
// formula on both backends, so bitwise equal in the host-run build; on a GPU libdevice's libm
// differs by a few ulps, which cancellation near the functions' zeros (digamma at 1.46, lgamma
// at 1 and 2) magnifies.
bool special(UnaryOp op) {
  return op == UnaryOp::kErfinv || op == UnaryOp::kLgamma || op == UnaryOp::kDigamma ||
         op == UnaryOp::kPolygamma;
}

// The CPU's pow is std::pow (glibc): bitwise equal in the host-run build, not on a GPU.
int64_t ulps_of(UnaryOp op) {
  if (special(op)) return host_run() ? 0 : 1 << 12;
  return exact(op) && (op != UnaryOp::kPowScalar || host_run()) ? 0 : kUlps;
}
int64_t ulps_of(BinaryOp op) {
  return (op != BinaryOp::kPow && op != BinaryOp::kAtan2) || host_run() ? 0 : kUlps;
}

using BackendConformance = conformance::DeviceTest;

TEST_P(BackendConformance, Fill) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      for (Scalar value : {Scalar(true), Scalar(-7), Scalar(2.5), Scalar(-0.0)}) {
        if (!value.fits(dtype)) continue;
        Tensor t = input(rnd_, shape, dtype);
        check_op(
            GetParam(), {t},
            [&](const std::vector<Tensor>& x) {
              native::fill_(x[0], value);
              return x[0];
            },
            0, str("fill_ ", dtype, shape, " with ", value));
      }
    }
  }
}

TEST_P(BackendConformance, CopyConvertsAnyDtypeAndGeometry) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType to : kAllDtypes) {
      for (ScalarType from : kAllDtypes) {
        Tensor dst = input(rnd_, shape, to);
        Tensor src = input(rnd_, shape, from);
        check_op(
            GetParam(), {dst, src},
            [](const std::vector<Tensor>& x) {
              native::copy_(x[0], x[1]);
              return x[0];
            },
            0, str("copy_ ", from, " -> ", to, " ", shape));
      }
    }
  }
}

TEST_P(BackendConformance, CopyBroadcastsAnExpandedSource) {
  for (ScalarType dtype : kAllDtypes) {
    Tensor dst = input(rnd_, {4, 3, 2}, dtype);
    Tensor src = input(rnd_, {3, 1}, kFloat64);
    check_op(
        GetParam(), {dst, src},
        [](const std::vector<Tensor>& x) {
          native::copy_(x[0], x[1]);
          return x[0];
        },
        0, str("copy_ expanded into ", dtype));
  }
}

TEST_P(BackendConformance, CopyBetweenOverlappingViews) {
  Tensor base = input(rnd_, {10}, kFloat32);
  check_op(
      GetParam(), {base},
      [](const std::vector<Tensor>& x) {
        native::copy_(native::slice(x[0], 0, 1, 10, 1), native::slice(x[0], 0, 0, 9, 1));
        return x[0];
      },
      0, "x[1:] = x[:-1]");
}

TEST_P(BackendConformance, UnaryOps) {
  const UnaryOp ops[] = {
      UnaryOp::kNeg,       UnaryOp::kAbs,      UnaryOp::kExp,        UnaryOp::kLog,
      UnaryOp::kSqrt,      UnaryOp::kSin,      UnaryOp::kCos,        UnaryOp::kTanh,
      UnaryOp::kSigmoid,   UnaryOp::kRelu,     UnaryOp::kLogicalNot, UnaryOp::kRsqrt,
      UnaryOp::kExp2,      UnaryOp::kExpm1,    UnaryOp::kLog1p,      UnaryOp::kLog2,
      UnaryOp::kLog10,     UnaryOp::kSign,     UnaryOp::kFloor,      UnaryOp::kCeil,
      UnaryOp::kRound,     UnaryOp::kTrunc,    UnaryOp::kFrac,       UnaryOp::kIsNan,
      UnaryOp::kIsInf,     UnaryOp::kIsFinite, UnaryOp::kBitwiseNot, UnaryOp::kTan,
      UnaryOp::kErf,       UnaryOp::kErfinv,   UnaryOp::kLgamma,     UnaryOp::kDigamma,
      UnaryOp::kReciprocal};
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      for (UnaryOp op : ops) {
        Tensor x = input(rnd_, shape, dtype);
        check_op(
            GetParam(), {x}, [op](const std::vector<Tensor>& t) { return native::unary(op, t[0]); },
            ulps_of(op), str(unary_op_name(op), " ", dtype, shape));
        // In place, through a non-contiguous output.
        check_op(
            GetParam(), {x},
            [op](const std::vector<Tensor>& t) {
              native::unary_out(op, t[0], t[0]);
              return t[0];
            },
            ulps_of(op), str(unary_op_name(op), "_ ", dtype, shape));
      }
    }
  }
}

TEST_P(BackendConformance, PowAndClampWithScalars) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      for (Scalar e :
           {Scalar(2), Scalar(0.5), Scalar(-1.0), Scalar(3), Scalar(1.7), Scalar(true)}) {
        Tensor x = input(rnd_, shape, dtype);
        UnaryArgs args;
        args.arg = e;
        args.has_arg = true;
        check_op(
            GetParam(), {x},
            [&](const std::vector<Tensor>& t) {
              return native::unary(UnaryOp::kPowScalar, t[0], args);
            },
            ulps_of(UnaryOp::kPowScalar), str("pow ", dtype, shape, " ** ", e));
      }
      for (auto [lo, hi] : {std::pair<std::optional<Scalar>, std::optional<Scalar>>{-1, 2},
                            {std::nullopt, 0},
                            {Scalar(0.5), std::nullopt}}) {
        Tensor x = input(rnd_, shape, dtype);
        check_op(
            GetParam(), {x},
            [&](const std::vector<Tensor>& t) {
              return native::unary(UnaryOp::kClamp, t[0], native::clamp_args(lo, hi, "clamp"));
            },
            0, str("clamp ", dtype, shape));
      }
    }
  }
}

TEST_P(BackendConformance, Polygamma) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      for (int64_t n : {0, 1, 2, 5}) {
        Tensor x = input(rnd_, shape, dtype);
        check_op(
            GetParam(), {x},
            [n](const std::vector<Tensor>& t) {
              return native::unary(UnaryOp::kPolygamma, t[0], native::polygamma_args(n));
            },
            ulps_of(UnaryOp::kPolygamma), str("polygamma ", n, " ", dtype, shape));
      }
    }
  }
}

TEST_P(BackendConformance, RoundWithDecimalsAndNanToNum) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      Tensor x = input(rnd_, shape, dtype);
      for (int64_t decimals : {1, 3, -1}) {
        check_op(
            GetParam(), {x},
            [decimals](const std::vector<Tensor>& t) {
              return native::unary(UnaryOp::kRound, t[0], native::round_args(decimals));
            },
            host_run() ? 0 : kUlps, str("round ", dtype, shape, " decimals ", decimals));
      }
      check_op(
          GetParam(), {x},
          [dtype](const std::vector<Tensor>& t) {
            return native::unary(UnaryOp::kNanToNum, t[0],
                                 native::nan_to_num_args(dtype, 1.5, std::nullopt, -7.0));
          },
          0, str("nan_to_num ", dtype, shape));
    }
  }
}

TEST_P(BackendConformance, BinaryOpsBroadcastAndPromote) {
  const BinaryOp ops[] = {
      BinaryOp::kAdd,        BinaryOp::kSub,         BinaryOp::kMul,         BinaryOp::kDiv,
      BinaryOp::kPow,        BinaryOp::kMaximum,     BinaryOp::kMinimum,     BinaryOp::kRemainder,
      BinaryOp::kFmod,       BinaryOp::kFloorDivide, BinaryOp::kTruncDivide, BinaryOp::kBitwiseAnd,
      BinaryOp::kBitwiseOr,  BinaryOp::kBitwiseXor,  BinaryOp::kShiftLeft,   BinaryOp::kShiftRight,
      BinaryOp::kEq,         BinaryOp::kNe,          BinaryOp::kLt,          BinaryOp::kLe,
      BinaryOp::kGt,         BinaryOp::kGe,          BinaryOp::kLogicalAnd,  BinaryOp::kLogicalOr,
      BinaryOp::kLogicalXor, BinaryOp::kAtan2};
  for (const DimVector& shape : shapes()) {
    // b broadcasts: each dim of a's shape kept or set to 1, maybe fewer dims.
    DimVector bshape;
    for (int64_t s : shape) bshape.push_back(rnd_.uniform(0, 1) ? s : 1);
    if (!bshape.empty() && rnd_.uniform(0, 1)) bshape.erase(0);
    for (ScalarType da : kAllDtypes) {
      ScalarType db = kAllDtypes[rnd_.uniform(0, kNumScalarTypes - 1)];
      for (BinaryOp op : ops) {
        Tensor a = input(rnd_, shape, da);
        Tensor b = input(rnd_, bshape, db);
        const std::string what = str(binary_op_name(op), " ", da, shape, " ", db, bshape);
        check_op(
            GetParam(), {a, b},
            [op](const std::vector<Tensor>& t) { return native::binary(op, t[0], t[1]); },
            ulps_of(op), what);
        check_op(
            GetParam(), {a, b},
            [op](const std::vector<Tensor>& t) {
              native::binary_out(op, t[0], t[0], t[1]);
              return t[0];
            },
            ulps_of(op), what + " in place");
      }
    }
  }
}

TEST_P(BackendConformance, ZeroDimCpuOperandsJoinDeviceTensors) {
  // A 0-dim CPU tensor combines with a tensor on any device, as in torch.
  Tensor a = same_on(input(rnd_, {3, 2}, kFloat32), GetParam());
  Tensor s = full({}, 2.5, kFloat64);
  Tensor r = native::binary(BinaryOp::kMul, a, s);
  EXPECT_EQ(r.device(), GetParam());
  expect_same(r, native::binary(BinaryOp::kMul, host(a), s), 0, "a * cpu scalar");
}

TEST_P(BackendConformance, Where) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      Tensor cond = input(rnd_, shape, kBool);
      Tensor a = input(rnd_, shape, dtype);
      DimVector bshape = shape.empty() ? DimVector{} : DimVector{shape.back()};
      Tensor b = input(rnd_, bshape, dtype);
      check_op(
          GetParam(), {cond, a, b},
          [](const std::vector<Tensor>& t) { return native::where(t[0], t[1], t[2]); }, 0,
          str("where ", dtype, shape));
    }
  }
}

TEST_P(BackendConformance, TransfersRoundTripExactly) {
  for (const DimVector& shape : shapes()) {
    for (ScalarType dtype : kAllDtypes) {
      Tensor x = input(rnd_, shape, dtype);  // non-contiguous, offset
      Tensor there = native::to(x, GetParam());
      EXPECT_EQ(there.device(), GetParam());
      expect_identical(native::to(there, kCPU), x, str("round trip ", dtype, shape));
      // Into non-contiguous destinations of another dtype, in both directions.
      ScalarType other = kAllDtypes[rnd_.uniform(0, kNumScalarTypes - 1)];
      Tensor want = input(rnd_, shape, other);
      Tensor dst = same_on(want, GetParam());
      native::copy_(want, x);
      native::copy_(dst, x);
      expect_identical(dst, want, str("cpu -> device copy_ ", dtype, " -> ", other, shape));
      Tensor back = input(rnd_, shape, other);
      Tensor back_want = native::clone(back);
      native::copy_(back, there);
      native::copy_(back_want, x);
      expect_identical(back, back_want, str("device -> cpu copy_ ", dtype, " -> ", other, shape));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, BackendConformance, conformance::kDevices,
                         conformance::device_name);

// The libm ops on CUDA against std:: per element: bitwise in the host-run build (the CPU's
// contiguous runs use Eigen instead, see the file comment); within kUlps on a GPU, whose libm
// (CUDA's libdevice, at most 1-2 ulps from the exact value for these in double) is not glibc.
TEST(CudaKernels, TranscendentalsAreStdPerElement) {
  const int64_t ulps = host_run() ? 0 : kUlps;
  Random rnd(5);
  const std::pair<UnaryOp, double (*)(double)> ops[] = {
      {UnaryOp::kExp, [](double x) { return std::exp(x); }},
      {UnaryOp::kLog, [](double x) { return std::log(x); }},
      {UnaryOp::kSin, [](double x) { return std::sin(x); }},
      {UnaryOp::kCos, [](double x) { return std::cos(x); }},
      {UnaryOp::kTanh, [](double x) { return std::tanh(x); }},
      {UnaryOp::kSigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }}};
  for (auto [op, f] : ops) {
    Tensor x = input(rnd, {7, 33}, kFloat64);
    Tensor want = empty({7, 33}, kFloat64);
    Tensor xc = host(x);
    for (int64_t i = 0; i < xc.numel(); ++i)
      want.data_ptr<double>()[i] = f(xc.data_ptr<double>()[i]);
    expect_same(native::unary(op, same_on(x, kGpu)), want, ulps, unary_op_name(op));
  }
}

}  // namespace
}  // namespace mutagrad
