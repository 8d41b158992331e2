// The C++ pooling and im2col modules (nn/pooling.h): reprs equal to torch 1.13's for the same
// arguments (printed by torch, below), forward equal to the ops' with the same options, hand-
// derived values, return_indices through forward_with_indices, adaptive None sizes, clone, no
// parameters, and refused options. Runs on the CPU and, as pooling_test_cuda, the CUDA device.
#include <optional>
#include <vector>

#include "tests/nn/nn_test_util.h"

namespace mutagrad {
namespace {

using mutagrad_nn_test::pattern;
using mutagrad_nn_test::values;

// repr() of each module beside torch 1.13's repr of the same Python call.
TEST(PoolingModules, ReprIsTorchs) {
  EXPECT_EQ(nn::MaxPool1d(3).repr(),
            "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(
      nn::MaxPool2d(nn::MaxPoolOptions(3).stride({2}).padding({1}).dilation({2}).ceil_mode(true))
          .repr(),
      "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)");
  EXPECT_EQ(nn::MaxPool2d({2, 3}).repr(),
            "MaxPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, "
            "ceil_mode=False)");
  EXPECT_EQ(nn::AvgPool1d(3).repr(), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))");
  EXPECT_EQ(nn::AvgPool1d(nn::AvgPoolOptions(3).stride({2}).padding({1})).repr(),
            "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  EXPECT_EQ(nn::AvgPool2d(nn::AvgPoolOptions(3).divisor_override(2)).repr(),
            "AvgPool2d(kernel_size=3, stride=3, padding=0)");
  EXPECT_EQ(nn::AvgPool2d(nn::AvgPoolOptions({2, 3}).stride({1, 2}).padding({1})).repr(),
            "AvgPool2d(kernel_size=(2, 3), stride=(1, 2), padding=1)");
  EXPECT_EQ(nn::AdaptiveAvgPool1d(3).repr(), "AdaptiveAvgPool1d(output_size=3)");
  EXPECT_EQ(nn::AdaptiveAvgPool2d(nn::AdaptiveSize2d{std::nullopt, 3}).repr(),
            "AdaptiveAvgPool2d(output_size=(None, 3))");
  EXPECT_EQ(nn::AdaptiveAvgPool2d(4).repr(), "AdaptiveAvgPool2d(output_size=4)");
  EXPECT_EQ(nn::AdaptiveMaxPool2d(nn::AdaptiveSize2d{2, 3}).repr(),
            "AdaptiveMaxPool2d(output_size=(2, 3))");
  EXPECT_EQ(nn::Unfold(3).repr(), "Unfold(kernel_size=3, dilation=1, padding=0, stride=1)");
  EXPECT_EQ(nn::Unfold(nn::UnfoldOptions({2, 3}).dilation({2}).padding({1}).stride({1, 2})).repr(),
            "Unfold(kernel_size=(2, 3), dilation=2, padding=1, stride=(1, 2))");
  EXPECT_EQ(nn::Fold(nn::FoldOptions({4, 5}, {2})).repr(),
            "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)");
}

TEST(PoolingModules, ForwardIsTheOps) {
  const Tensor x = pattern({2, 3, 7, 8}, 0.37, 0.1);
  const Tensor x1 = pattern({2, 3, 9}, 0.53, 0.2);
  auto same = [](const Tensor& a, const Tensor& b) { EXPECT_EQ(values(a), values(b)); };
  nn::MaxPool2d mp(nn::MaxPoolOptions(3).stride({2}).padding({1}).ceil_mode(true));
  same(mp(x), max_pool2d(x, {3}, {2}, {1}, {1}, true));
  auto [y, idx] = mp.forward_with_indices(x);
  same(idx, std::get<1>(max_pool2d_with_indices(x, {3}, {2}, {1}, {1}, true)));
  nn::MaxPool1d mp1(nn::MaxPoolOptions(2).dilation({2}));
  same(mp1(x1), max_pool1d(x1, {2}, {}, {0}, {2}));
  nn::AvgPool2d ap(nn::AvgPoolOptions({3, 2}).padding({1}).count_include_pad(false));
  same(ap(x), avg_pool2d(x, {3, 2}, {}, {1}, false, false));
  nn::AvgPool1d ap1(nn::AvgPoolOptions(3).stride({2}).ceil_mode(true));
  same(ap1(x1), avg_pool1d(x1, {3}, {2}, {0}, true));
  same(nn::AdaptiveAvgPool1d(4)(x1), adaptive_avg_pool1d(x1, {4}));
  same(nn::AdaptiveAvgPool2d(nn::AdaptiveSize2d{std::nullopt, 3})(x),
       adaptive_avg_pool2d(x, {7, 3}));
  nn::AdaptiveMaxPool2d amp(nn::AdaptiveSize2d{3, 5});
  same(amp(x), std::get<0>(adaptive_max_pool2d(x, {3, 5})));
  same(std::get<1>(amp.forward_with_indices(x)), std::get<1>(adaptive_max_pool2d(x, {3, 5})));
  const Tensor cols = nn::Unfold(nn::UnfoldOptions(2).stride({2}))(x);
  same(cols, im2col(x, {2}, {1}, {0}, {2}));
  same(nn::Fold(nn::FoldOptions({7, 8}, {2}).stride({2}))(cols),
       col2im(cols, {7, 8}, {2}, {1}, {0}, {2}));
  EXPECT_TRUE(mp.parameters().empty());
  EXPECT_TRUE(amp.buffers().empty());
}

// 0..15 in a 4x4 plane: hand-derived results.
TEST(PoolingModules, HandDerivedValues) {
  const Tensor x = testing_device::on_test_device(native::view(arange(16, kFloat64), {1, 1, 4, 4}));
  EXPECT_EQ(values(nn::MaxPool2d(2)(x)), (std::vector<double>{5, 7, 13, 15}));
  EXPECT_EQ(values(nn::AvgPool2d(2)(x)), (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
  // padding 1, count_include_pad: the corner window holds x[0][0] = 0 and three zeros.
  EXPECT_EQ(values(nn::AvgPool2d(nn::AvgPoolOptions(2).padding({1}))(x))[1], (1 + 2) / 4.0);
  EXPECT_EQ(
      values(nn::AvgPool2d(nn::AvgPoolOptions(2).padding({1}).count_include_pad(false))(x))[1],
      (1 + 2) / 2.0);
  EXPECT_EQ(values(nn::AdaptiveAvgPool2d(1)(x)), (std::vector<double>{7.5}));
  EXPECT_EQ(values(nn::Fold(nn::FoldOptions({4, 4}, {2}))(nn::Unfold(2)(x)))[5], 4 * 5.0);
}

TEST(PoolingModules, CloneAndRefusedOptions) {
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::MaxPool2d>(2),
                                              std::make_shared<nn::AdaptiveAvgPool2d>(1));
  EXPECT_EQ(seq->clone()->repr(), seq->repr());
  EXPECT_THROW(nn::AvgPool1d(nn::AvgPoolOptions(2).divisor_override(2)), ValueError);
  const Tensor x = pattern({1, 2, 5, 5}, 0.1, 0.0);
  EXPECT_THROW(nn::MaxPool2d(nn::MaxPoolOptions(3).padding({2}))(x), ValueError);
  EXPECT_THROW(nn::AvgPool2d(6)(x), ShapeError);
  EXPECT_EQ(x.version(), 0u);
}

}  // namespace
}  // namespace mutagrad
