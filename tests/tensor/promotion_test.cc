// PyTorch's type promotion (native::result_type and the dtypes native ops produce), checked
// against a table generated with PyTorch 1.13's torch.result_type for every pair of dtypes,
// dimensioned (1) or 0-dim (0), and for a tensor with a Python bool, int or float.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/reduce.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

struct TensorPair {
  ScalarType a;
  int a_dims;
  ScalarType b;
  int b_dims;
  ScalarType want;
};

// torch.result_type(torch.ones([2] * a_dims, dtype=a), torch.ones([2] * b_dims, dtype=b))
const TensorPair kTensorTable[] = {
    {kBool, 1, kBool, 1, kBool},          {kBool, 1, kBool, 0, kBool},
    {kBool, 1, kInt32, 1, kInt32},        {kBool, 1, kInt32, 0, kInt32},
    {kBool, 1, kInt64, 1, kInt64},        {kBool, 1, kInt64, 0, kInt64},
    {kBool, 1, kFloat32, 1, kFloat32},    {kBool, 1, kFloat32, 0, kFloat32},
    {kBool, 1, kFloat64, 1, kFloat64},    {kBool, 1, kFloat64, 0, kFloat64},
    {kBool, 0, kBool, 1, kBool},          {kBool, 0, kBool, 0, kBool},
    {kBool, 0, kInt32, 1, kInt32},        {kBool, 0, kInt32, 0, kInt32},
    {kBool, 0, kInt64, 1, kInt64},        {kBool, 0, kInt64, 0, kInt64},
    {kBool, 0, kFloat32, 1, kFloat32},    {kBool, 0, kFloat32, 0, kFloat32},
    {kBool, 0, kFloat64, 1, kFloat64},    {kBool, 0, kFloat64, 0, kFloat64},
    {kInt32, 1, kBool, 1, kInt32},        {kInt32, 1, kBool, 0, kInt32},
    {kInt32, 1, kInt32, 1, kInt32},       {kInt32, 1, kInt32, 0, kInt32},
    {kInt32, 1, kInt64, 1, kInt64},       {kInt32, 1, kInt64, 0, kInt32},
    {kInt32, 1, kFloat32, 1, kFloat32},   {kInt32, 1, kFloat32, 0, kFloat32},
    {kInt32, 1, kFloat64, 1, kFloat64},   {kInt32, 1, kFloat64, 0, kFloat64},
    {kInt32, 0, kBool, 1, kInt32},        {kInt32, 0, kBool, 0, kInt32},
    {kInt32, 0, kInt32, 1, kInt32},       {kInt32, 0, kInt32, 0, kInt32},
    {kInt32, 0, kInt64, 1, kInt64},       {kInt32, 0, kInt64, 0, kInt64},
    {kInt32, 0, kFloat32, 1, kFloat32},   {kInt32, 0, kFloat32, 0, kFloat32},
    {kInt32, 0, kFloat64, 1, kFloat64},   {kInt32, 0, kFloat64, 0, kFloat64},
    {kInt64, 1, kBool, 1, kInt64},        {kInt64, 1, kBool, 0, kInt64},
    {kInt64, 1, kInt32, 1, kInt64},       {kInt64, 1, kInt32, 0, kInt64},
    {kInt64, 1, kInt64, 1, kInt64},       {kInt64, 1, kInt64, 0, kInt64},
    {kInt64, 1, kFloat32, 1, kFloat32},   {kInt64, 1, kFloat32, 0, kFloat32},
    {kInt64, 1, kFloat64, 1, kFloat64},   {kInt64, 1, kFloat64, 0, kFloat64},
    {kInt64, 0, kBool, 1, kInt64},        {kInt64, 0, kBool, 0, kInt64},
    {kInt64, 0, kInt32, 1, kInt32},       {kInt64, 0, kInt32, 0, kInt64},
    {kInt64, 0, kInt64, 1, kInt64},       {kInt64, 0, kInt64, 0, kInt64},
    {kInt64, 0, kFloat32, 1, kFloat32},   {kInt64, 0, kFloat32, 0, kFloat32},
    {kInt64, 0, kFloat64, 1, kFloat64},   {kInt64, 0, kFloat64, 0, kFloat64},
    {kFloat32, 1, kBool, 1, kFloat32},    {kFloat32, 1, kBool, 0, kFloat32},
    {kFloat32, 1, kInt32, 1, kFloat32},   {kFloat32, 1, kInt32, 0, kFloat32},
    {kFloat32, 1, kInt64, 1, kFloat32},   {kFloat32, 1, kInt64, 0, kFloat32},
    {kFloat32, 1, kFloat32, 1, kFloat32}, {kFloat32, 1, kFloat32, 0, kFloat32},
    {kFloat32, 1, kFloat64, 1, kFloat64}, {kFloat32, 1, kFloat64, 0, kFloat32},
    {kFloat32, 0, kBool, 1, kFloat32},    {kFloat32, 0, kBool, 0, kFloat32},
    {kFloat32, 0, kInt32, 1, kFloat32},   {kFloat32, 0, kInt32, 0, kFloat32},
    {kFloat32, 0, kInt64, 1, kFloat32},   {kFloat32, 0, kInt64, 0, kFloat32},
    {kFloat32, 0, kFloat32, 1, kFloat32}, {kFloat32, 0, kFloat32, 0, kFloat32},
    {kFloat32, 0, kFloat64, 1, kFloat64}, {kFloat32, 0, kFloat64, 0, kFloat64},
    {kFloat64, 1, kBool, 1, kFloat64},    {kFloat64, 1, kBool, 0, kFloat64},
    {kFloat64, 1, kInt32, 1, kFloat64},   {kFloat64, 1, kInt32, 0, kFloat64},
    {kFloat64, 1, kInt64, 1, kFloat64},   {kFloat64, 1, kInt64, 0, kFloat64},
    {kFloat64, 1, kFloat32, 1, kFloat64}, {kFloat64, 1, kFloat32, 0, kFloat64},
    {kFloat64, 1, kFloat64, 1, kFloat64}, {kFloat64, 1, kFloat64, 0, kFloat64},
    {kFloat64, 0, kBool, 1, kFloat64},    {kFloat64, 0, kBool, 0, kFloat64},
    {kFloat64, 0, kInt32, 1, kFloat64},   {kFloat64, 0, kInt32, 0, kFloat64},
    {kFloat64, 0, kInt64, 1, kFloat64},   {kFloat64, 0, kInt64, 0, kFloat64},
    {kFloat64, 0, kFloat32, 1, kFloat32}, {kFloat64, 0, kFloat32, 0, kFloat64},
    {kFloat64, 0, kFloat64, 1, kFloat64}, {kFloat64, 0, kFloat64, 0, kFloat64},
};

struct ScalarCase {
  ScalarType a;
  int a_dims;
  Scalar b;
  ScalarType want;
};

// torch.result_type(torch.ones([2] * a_dims, dtype=a), b) for b in (True, 2, 2.5)
const ScalarCase kScalarTable[] = {
    {kBool, 1, Scalar(true), kBool},
    {kBool, 1, Scalar(int64_t{2}), kInt64},
    {kBool, 1, Scalar(2.5), kFloat32},
    {kBool, 0, Scalar(true), kBool},
    {kBool, 0, Scalar(int64_t{2}), kInt64},
    {kBool, 0, Scalar(2.5), kFloat32},
    {kInt32, 1, Scalar(true), kInt32},
    {kInt32, 1, Scalar(int64_t{2}), kInt32},
    {kInt32, 1, Scalar(2.5), kFloat32},
    {kInt32, 0, Scalar(true), kInt32},
    {kInt32, 0, Scalar(int64_t{2}), kInt32},
    {kInt32, 0, Scalar(2.5), kFloat32},
    {kInt64, 1, Scalar(true), kInt64},
    {kInt64, 1, Scalar(int64_t{2}), kInt64},
    {kInt64, 1, Scalar(2.5), kFloat32},
    {kInt64, 0, Scalar(true), kInt64},
    {kInt64, 0, Scalar(int64_t{2}), kInt64},
    {kInt64, 0, Scalar(2.5), kFloat32},
    {kFloat32, 1, Scalar(true), kFloat32},
    {kFloat32, 1, Scalar(int64_t{2}), kFloat32},
    {kFloat32, 1, Scalar(2.5), kFloat32},
    {kFloat32, 0, Scalar(true), kFloat32},
    {kFloat32, 0, Scalar(int64_t{2}), kFloat32},
    {kFloat32, 0, Scalar(2.5), kFloat32},
    {kFloat64, 1, Scalar(true), kFloat64},
    {kFloat64, 1, Scalar(int64_t{2}), kFloat64},
    {kFloat64, 1, Scalar(2.5), kFloat64},
    {kFloat64, 0, Scalar(true), kFloat64},
    {kFloat64, 0, Scalar(int64_t{2}), kFloat64},
    {kFloat64, 0, Scalar(2.5), kFloat64},
};

Tensor ones_of(ScalarType dtype, int dims) {
  return ones(dims ? DimVector{2} : DimVector{}, dtype);
}

TEST(Promotion, TensorTensorMatchesPyTorch) {
  for (const TensorPair& c : kTensorTable) {
    Tensor a = ones_of(c.a, c.a_dims), b = ones_of(c.b, c.b_dims);
    EXPECT_EQ(native::result_type(a, b), c.want)
        << c.a << (c.a_dims ? " [2]" : " 0-dim") << " with " << c.b
        << (c.b_dims ? " [2]" : " 0-dim");
  }
}

TEST(Promotion, TensorScalarMatchesPyTorch) {
  for (const ScalarCase& c : kScalarTable) {
    EXPECT_EQ(native::result_type(ones_of(c.a, c.a_dims), c.b), c.want)
        << c.a << (c.a_dims ? " [2]" : " 0-dim") << " with " << c.b;
  }
}

TEST(Promotion, BriefExamples) {
  EXPECT_EQ(native::result_type(ones({3}, kInt64), Scalar(2.5)), kFloat32);
  EXPECT_EQ(native::result_type(ones({3}, kFloat32), scalar_tensor(1.0, kFloat64)), kFloat32);
  EXPECT_EQ(native::result_type(ones({3}, kInt32), scalar_tensor(1, kInt64)), kInt32);
  EXPECT_EQ(native::result_type(ones({3}, kBool), Scalar(1)), kInt64);
  // A 0-dim tensor of a higher category still wins over a dimensioned one.
  EXPECT_EQ(native::result_type(ones({3}, kInt32), scalar_tensor(1.0, kFloat64)), kFloat64);
}

TEST(Promotion, BinaryOpsProduceThePromotedDtype) {
  for (const TensorPair& c : kTensorTable) {
    if (c.want == kBool) continue;  // add of two bools stays bool: checked below
    Tensor r = native::binary(BinaryOp::kAdd, ones_of(c.a, c.a_dims), ones_of(c.b, c.b_dims));
    EXPECT_EQ(r.dtype(), c.want);
    EXPECT_EQ(native::binary(BinaryOp::kLt, ones_of(c.a, c.a_dims), ones_of(c.b, c.b_dims)).dtype(),
              kBool);
  }
  EXPECT_EQ(native::binary(BinaryOp::kAdd, ones({2}, kBool), ones({2}, kBool)).dtype(), kBool);
  for (const ScalarCase& c : kScalarTable) {
    if (c.a == kBool && c.b.is_bool()) continue;
    EXPECT_EQ(native::binary(BinaryOp::kMul, ones_of(c.a, c.a_dims), c.b).dtype(), c.want);
  }
}

TEST(Promotion, ValuesAreComputedInThePromotedDtype) {
  // int64 tensor + 2.5 computes in float32: [1, 2] + 2.5 = [3.5, 4.5], not [3, 4].
  Tensor r = native::binary(BinaryOp::kAdd, tensor({1, 2}), Scalar(2.5));
  ASSERT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(r.data_ptr<float>()[0], 3.5f);
  EXPECT_EQ(r.data_ptr<float>()[1], 4.5f);
  // int32 tensor * int64 0-dim stays int32.
  Tensor m = native::binary(BinaryOp::kMul, tensor({3, 4}, kInt32), scalar_tensor(5, kInt64));
  ASSERT_EQ(m.dtype(), kInt32);
  EXPECT_EQ(m.data_ptr<int32_t>()[1], 20);
  // Comparisons compare in the promoted dtype: 2 < 2.5 is true (not 2 < 2).
  Tensor lt = native::binary(BinaryOp::kLt, tensor({2, 3}), Scalar(2.5));
  ASSERT_EQ(lt.dtype(), kBool);
  EXPECT_TRUE(lt.data_ptr<bool>()[0]);
  EXPECT_FALSE(lt.data_ptr<bool>()[1]);
}

TEST(Promotion, TrueDivisionOfIntegersIsFloat32) {
  for (ScalarType a : {kBool, kInt32, kInt64}) {
    for (ScalarType b : {kBool, kInt32, kInt64}) {
      EXPECT_EQ(native::binary(BinaryOp::kDiv, ones({2}, a), ones({2}, b)).dtype(), kFloat32);
    }
  }
  Tensor q = native::binary(BinaryOp::kDiv, tensor({7, -7}), Scalar(2));
  ASSERT_EQ(q.dtype(), kFloat32);
  EXPECT_EQ(q.data_ptr<float>()[0], 3.5f);
  EXPECT_EQ(q.data_ptr<float>()[1], -3.5f);
  EXPECT_EQ(native::binary(BinaryOp::kDiv, ones({2}, kFloat64), ones({2}, kInt64)).dtype(),
            kFloat64);
}

TEST(Promotion, UnaryOps) {
  for (UnaryOp op : {UnaryOp::kExp, UnaryOp::kLog, UnaryOp::kSqrt, UnaryOp::kSin, UnaryOp::kCos,
                     UnaryOp::kTanh, UnaryOp::kSigmoid}) {
    EXPECT_EQ(native::unary(op, ones({2}, kInt64)).dtype(), kFloat32) << unary_op_name(op);
    EXPECT_EQ(native::unary(op, ones({2}, kBool)).dtype(), kFloat32) << unary_op_name(op);
    EXPECT_EQ(native::unary(op, ones({2}, kFloat64)).dtype(), kFloat64) << unary_op_name(op);
  }
  EXPECT_EQ(native::unary(UnaryOp::kNeg, ones({2}, kInt32)).dtype(), kInt32);
  EXPECT_EQ(native::unary(UnaryOp::kAbs, ones({2}, kInt64)).dtype(), kInt64);
  EXPECT_EQ(native::unary(UnaryOp::kLogicalNot, ones({2}, kFloat32)).dtype(), kBool);
  UnaryArgs sq;
  sq.arg = 2;
  sq.has_arg = true;
  EXPECT_EQ(native::unary(UnaryOp::kPowScalar, ones({2}, kInt32), sq).dtype(), kInt32);
  EXPECT_EQ(native::unary(UnaryOp::kPowScalar, ones({2}, kBool), sq).dtype(), kInt64);
  UnaryArgs half;
  half.arg = 0.5;
  half.has_arg = true;
  EXPECT_EQ(native::unary(UnaryOp::kPowScalar, ones({2}, kInt64), half).dtype(), kFloat32);
  EXPECT_EQ(native::unary(UnaryOp::kClamp, ones({2}, kInt64), half).dtype(), kFloat32);
  EXPECT_EQ(native::unary(UnaryOp::kClamp, ones({2}, kInt32), sq).dtype(), kInt32);
}

TEST(Promotion, WherePromotesItsBranches) {
  Tensor r = native::where(tensor({true, false}), tensor({1, 2}), tensor({0.5, 1.5}));
  ASSERT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(r.data_ptr<float>()[0], 1.0f);
  EXPECT_EQ(r.data_ptr<float>()[1], 1.5f);
  EXPECT_EQ(native::where(tensor({true}), ones({1}, kInt32), scalar_tensor(2, kInt64)).dtype(),
            kInt32);
}

TEST(Promotion, ReductionDtypes) {
  EXPECT_EQ(native::reduce(ReduceOp::kSum, ones({2}, kBool), {}, false).dtype(), kInt64);
  EXPECT_EQ(native::reduce(ReduceOp::kSum, ones({2}, kInt32), {}, false).dtype(), kInt64);
  EXPECT_EQ(native::reduce(ReduceOp::kProd, ones({2}, kInt32), {}, false).dtype(), kInt64);
  EXPECT_EQ(native::reduce(ReduceOp::kSum, ones({2}, kFloat32), {}, false).dtype(), kFloat32);
  EXPECT_EQ(native::reduce(ReduceOp::kMax, ones({2}, kInt32), {}, false).dtype(), kInt32);
  EXPECT_EQ(native::reduce(ReduceOp::kMin, ones({2}, kBool), {}, false).dtype(), kBool);
  EXPECT_EQ(native::reduce(ReduceOp::kMean, ones({2}, kFloat64), {}, false).dtype(), kFloat64);
}

}  // namespace
}  // namespace mutagrad
