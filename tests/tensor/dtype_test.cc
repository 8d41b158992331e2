// Element types: sizes, names, categories, PyTorch's promotion lattice (derived with
// torch.promote_types on 1.13), dispatch, and typed access.
#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "tensor/native/factories.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

constexpr ScalarType kAll[] = {kBool, kInt32, kInt64, kFloat32, kFloat64};

TEST(DType, SizesAndNames) {
  EXPECT_EQ(element_size(kBool), 1);
  EXPECT_EQ(element_size(kInt32), 4);
  EXPECT_EQ(element_size(kInt64), 8);
  EXPECT_EQ(element_size(kFloat32), 4);
  EXPECT_EQ(element_size(kFloat64), 8);
  EXPECT_STREQ(dtype_name(kBool), "bool");
  EXPECT_STREQ(dtype_name(kInt32), "int32");
  EXPECT_STREQ(dtype_name(kInt64), "int64");
  EXPECT_STREQ(dtype_name(kFloat32), "float32");
  EXPECT_STREQ(dtype_name(kFloat64), "float64");
  EXPECT_STREQ(legacy_type_name(kFloat32), "Float");
  EXPECT_STREQ(legacy_type_name(kFloat64), "Double");
  EXPECT_STREQ(legacy_type_name(kInt64), "Long");
  EXPECT_STREQ(legacy_type_name(kInt32), "Int");
  EXPECT_STREQ(legacy_type_name(kBool), "Bool");
  std::ostringstream os;
  os << kFloat64;
  EXPECT_EQ(os.str(), "float64");
  // Aliases as in libtorch.
  EXPECT_EQ(kFloat, kFloat32);
  EXPECT_EQ(kDouble, kFloat64);
  EXPECT_EQ(kLong, kInt64);
  EXPECT_EQ(kInt, kInt32);
}

TEST(DType, Categories) {
  EXPECT_TRUE(is_floating_point(kFloat32));
  EXPECT_TRUE(is_floating_point(kFloat64));
  EXPECT_FALSE(is_floating_point(kInt64));
  EXPECT_FALSE(is_floating_point(kBool));
  EXPECT_TRUE(is_integral(kInt32, false));
  EXPECT_FALSE(is_integral(kBool, false));
  EXPECT_TRUE(is_integral(kBool, true));
  EXPECT_FALSE(is_integral(kFloat32, true));
  EXPECT_EQ(category(kBool), TypeCategory::Bool);
  EXPECT_EQ(category(kInt32), TypeCategory::Integral);
  EXPECT_EQ(category(kFloat64), TypeCategory::Floating);
}

TEST(DType, PromotionMatchesPyTorch) {
  // Row a, column b: torch.promote_types(a, b) on 1.13, in kAllScalarTypes order.
  const ScalarType table[kNumScalarTypes][kNumScalarTypes] = {
      {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kUInt8, kUInt8, kInt16, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt8, kInt16, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt16, kInt16, kInt16, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt32, kInt32, kInt32, kInt32, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt64, kInt64, kInt64, kInt64, kInt64, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat32, kFloat32,
       kFloat64},
      {kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kFloat32, kBFloat16,
       kFloat32, kFloat64},
      {kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32,
       kFloat64},
      {kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64,
       kFloat64},
  };
  for (int a = 0; a < kNumScalarTypes; ++a) {
    for (int b = 0; b < kNumScalarTypes; ++b) {
      EXPECT_EQ(promote_types(kAllScalarTypes[a], kAllScalarTypes[b]), table[a][b])
          << dtype_name(kAllScalarTypes[a]) << " with " << dtype_name(kAllScalarTypes[b]);
    }
  }
}

TEST(DType, ReducedDtypesComputeInTheirOpmathDtype) {
  for (ScalarType t : kAllScalarTypes) {
    const bool reduced =
        t == kUInt8 || t == kInt8 || t == kInt16 || t == kFloat16 || t == kBFloat16;
    EXPECT_EQ(has_kernels(t), !reduced) << t;
    EXPECT_EQ(opmath_dtype(t), !reduced ? t : is_floating_point(t) ? kFloat32 : kInt32) << t;
  }
  EXPECT_EQ(element_size(kUInt8), 1);
  EXPECT_EQ(element_size(kInt16), 2);
  EXPECT_EQ(element_size(kBFloat16), 2);
  EXPECT_STREQ(legacy_type_name(kUInt8), "Byte");
  EXPECT_STREQ(legacy_type_name(kInt8), "Char");
  EXPECT_STREQ(legacy_type_name(kFloat16), "Half");
  EXPECT_FALSE(is_signed(kUInt8));
  EXPECT_TRUE(is_signed(kInt8));
}

TEST(DType, ScalarsFitTheReducedDtypesAsPyTorchChecksThem) {
  // torch 1.13's fill_: uint8 takes -255..255 (negatives wrap), float16 +-65504, bfloat16
  // +-3.38953e38, and inf/nan for both floats.
  EXPECT_TRUE(Scalar(-255).fits(kUInt8));
  EXPECT_FALSE(Scalar(256).fits(kUInt8));
  EXPECT_FALSE(Scalar(255.9).fits(kUInt8));
  EXPECT_TRUE(Scalar(127).fits(kInt8));
  EXPECT_FALSE(Scalar(128).fits(kInt8));
  EXPECT_FALSE(Scalar(-129).fits(kInt8));
  EXPECT_FALSE(Scalar(40000).fits(kInt16));
  EXPECT_TRUE(Scalar(65504.0).fits(kFloat16));
  EXPECT_FALSE(Scalar(65519.0).fits(kFloat16));
  EXPECT_FALSE(Scalar(70000).fits(kFloat16));
  EXPECT_TRUE(Scalar(std::numeric_limits<double>::infinity()).fits(kFloat16));
  EXPECT_FALSE(Scalar(3.39e38).fits(kBFloat16));
  EXPECT_TRUE(Scalar(3.38e38).fits(kBFloat16));
  // Conversions of one value (Note [Defined value conversions]): truncate, then wrap.
  EXPECT_EQ(Scalar(-1.5).to<uint8_t>(), 255);
  EXPECT_EQ(Scalar(300.7).to<uint8_t>(), 44);
  EXPECT_EQ(Scalar(300.7).to<int8_t>(), 44);
  EXPECT_EQ(static_cast<float>(Scalar(70000.0).to<Half>()), std::numeric_limits<float>::infinity());
}

TEST(DType, DispatchCallsWithTheMatchingType) {
  for (ScalarType t : kAll) {
    int64_t size = dispatch_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      EXPECT_EQ(scalar_type_of<T>(), t);
      return static_cast<int64_t>(sizeof(T));
    });
    EXPECT_EQ(size, element_size(t));
  }
  bool called_double = dispatch_floating(kFloat64, "op", [](auto tag) {
    return std::is_same_v<typename decltype(tag)::type, double>;
  });
  EXPECT_TRUE(called_double);
  EXPECT_THROW(dispatch_floating(kInt64, "exp", [](auto) { return 0; }), DTypeError);
}

TEST(DType, ScalarTypes) {
  EXPECT_EQ(Scalar(true).type(), kBool);
  EXPECT_EQ(Scalar(3).type(), kInt64);
  EXPECT_EQ(Scalar(int64_t{3}).type(), kInt64);
  EXPECT_EQ(Scalar(2.5f).type(), kFloat64);
  EXPECT_EQ(Scalar(2.5).to<int64_t>(), 2);
  EXPECT_EQ(Scalar(-2.5).to<int32_t>(), -2);
  EXPECT_TRUE(Scalar(0.5).to<bool>());
  EXPECT_FALSE(Scalar(0).to<bool>());
  EXPECT_EQ((-Scalar(true)).to<int64_t>(), -1);
  std::ostringstream os;
  os << Scalar(true) << " " << Scalar(7) << " " << Scalar(0.5);
  EXPECT_EQ(os.str(), "True 7 0.5");
}

TEST(DType, TensorsCarryTheirDTypeAndCheckTypedAccess) {
  for (ScalarType t : kAll) {
    Tensor x = zeros({2}, t);
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(x.element_size(), element_size(t));
    EXPECT_EQ(x.is_floating_point(), is_floating_point(t));
  }
  Tensor f = zeros({2});
  EXPECT_NO_THROW(f.data_ptr<float>());
  EXPECT_THROW(f.data_ptr<double>(), DTypeError);
  try {
    f.data_ptr<int64_t>();
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("data_ptr<int64>(): the tensor's dtype is float32"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(full({}, 3, kInt32).item().type(), kInt64);  // item() widens to the category
  EXPECT_EQ(full({}, 1.5).item().type(), kFloat64);
  EXPECT_EQ(full({}, true).item().type(), kBool);
}

}  // namespace
}  // namespace mutagrad
