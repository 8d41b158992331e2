// unfold and unflatten as views: values against a naive window loop, storage and version
// counter shared with the base, writes through them (refused where windows overlap), gradcheck
// + gradgradcheck (overlapping windows add their gradients), node names, CopySlices and the view
// replay after a write, and the refused arguments with nothing changed. Runs on the CPU and, as
// unfold_ops_test_cuda, on the CUDA device.
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace mutagrad {
namespace {

using autograd::VariableList;
using testing_util::dev;
using testing_util::error_of;
using testing_util::leaf;
using testing_util::strided_leaf;
using testing_util::values;

// 0, 1, 2, ... of `sizes` (float64) on the test's device.
Tensor iota(IntArrayRef sizes) {
  return dev(native::view(arange(compute_numel(sizes), kFloat64), sizes));
}

// The windows of x (row-major values of `sizes`) along dim, by index arithmetic.
std::vector<double> naive_unfold(const std::vector<double>& x, const DimVector& sizes, int64_t dim,
                                 int64_t size, int64_t step) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= sizes[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(dim) + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t n = sizes[static_cast<size_t>(dim)];
  const int64_t windows = (n - size) / step + 1;
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t w = 0; w < windows; ++w) {
      for (int64_t in = 0; in < inner; ++in) {
        for (int64_t j = 0; j < size; ++j) {
          out.push_back(x[static_cast<size_t>((o * n + w * step + j) * inner + in)]);
        }
      }
    }
  }
  return out;
}

TEST(UnfoldOps, WindowsMatchANaiveLoop) {
  const DimVector sizes = {3, 5, 4};
  for (int64_t dim = 0; dim < 3; ++dim) {
    for (int64_t size = 0; size <= sizes[static_cast<size_t>(dim)]; ++size) {
      for (int64_t step : {1, 2, 3}) {
        const Tensor x = iota(sizes);
        const Tensor u = x.unfold(dim, size, step);
        EXPECT_EQ(values(u), naive_unfold(values(x), sizes, dim, size, step))
            << "dim " << dim << " size " << size << " step " << step;
        // Negative dims wrap; a non-contiguous input gives its own values' windows.
        EXPECT_EQ(values(x.unfold(dim - 3, size, step)), values(u));
        const Tensor t = iota({4, 5, 3}).permute({2, 1, 0});
        EXPECT_EQ(values(t.unfold(dim, size, step)),
                  naive_unfold(values(t), DimVector(t.sizes()), dim, size, step));
      }
    }
  }
  // A 0-dim tensor unfolds as one element.
  const Tensor s = dev(full({}, 5.0, kFloat64));
  EXPECT_EQ(s.unfold(0, 1, 1).sizes(), IntArrayRef({1}));
  EXPECT_EQ(s.unfold(-1, 0, 2).sizes(), IntArrayRef({0}));
  EXPECT_EQ(values(s.unfold(0, 1, 1)), (std::vector<double>{5}));
}

TEST(UnfoldOps, IsAViewThatWritesThrough) {
  Tensor x = iota({2, 6});
  Tensor u = x.unfold(1, 2, 3);  // windows [0, 1] and [3, 4] of each row: no overlap
  EXPECT_TRUE(u.is_view());
  EXPECT_TRUE(u.is_alias_of(x));
  EXPECT_EQ(u.sizes(), IntArrayRef({2, 2, 2}));
  EXPECT_EQ(u.strides(), IntArrayRef({6, 3, 1}));
  u.mul_(-1.0);
  EXPECT_EQ(values(x), (std::vector<double>{-0, -1, 2, -3, -4, 5, -6, -7, 8, -9, -10, 11}));
  EXPECT_EQ(x.version(), 1u);
  EXPECT_EQ(u.version(), 1u);
  // Overlapping windows share elements without a zero stride: a fill writes each once, as torch
  // (which refuses only zero-stride overlap).
  Tensor y = iota({5});
  Tensor w = y.unfold(0, 3, 1);
  w.fill_(7.0);
  EXPECT_EQ(values(y), (std::vector<double>{7, 7, 7, 7, 7}));
  EXPECT_EQ(y.version(), 1u);
  // A write to the base is seen through the view.
  y.add_(10.0);
  EXPECT_EQ(values(w)[0], 17.0);
  // An expanded base (zero strides) is refused, nothing changed.
  Tensor e = iota({1}).expand({4});
  EXPECT_THROW(e.unfold(0, 2, 2).fill_(0.0), Error);
  EXPECT_EQ(e.version(), 0u);
}

TEST(UnfoldOps, GradientsAddOverOverlappingWindows) {
  CHECK_GRADS([](const VariableList& in) { return in[0].unfold(1, 3, 1); }, {leaf({2, 5}, 1)});
  CHECK_GRADS([](const VariableList& in) { return in[0].unfold(0, 2, 3); },
              {strided_leaf({7, 2}, 2)});
  CHECK_GRADS([](const VariableList& in) { return in[0].unfold(-1, 2, 1).unfold(0, 2, 1); },
              {leaf({3, 4}, 3)});
  CHECK_GRADS([](const VariableList& in) { return in[0].unfold(0, 1, 1) * in[0]; }, {leaf({}, 4)});
  // Each element's gradient counts the windows holding it: [1, 2, 3, 2, 1] for size 3, step 1.
  Tensor x = leaf({5}, 5);
  Tensor u = x.unfold(0, 3, 1);
  EXPECT_STREQ(u.grad_fn()->name(), "UnfoldBackward0");
  u.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 3, 2, 1}));
}

TEST(UnfoldOps, WriteThroughAWindowRebasesTheBase) {
  // A write through non-overlapping windows of a non-leaf: CopySlices on the base, and the
  // window's grad_fn replays unfold on it.
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        Tensor u = h.unfold(1, 2, 2);
        u.mul_(in[1]);
        return h * u.sum();
      },
      {leaf({2, 4}, 6), leaf({2}, 7)});
  Tensor h = leaf({2, 4}, 8) * 1.0;
  Tensor u = h.unfold(1, 2, 2);
  u.sin_();
  EXPECT_STREQ(h.grad_fn()->name(), "CopySlices");
  EXPECT_STREQ(u.grad_fn()->name(), "UnfoldBackward0");
  // A saved window goes stale with a write to the base, and the error names the write.
  Tensor g = leaf({6}, 9) * 1.0;
  Tensor z = g.unfold(0, 2, 2).pow(2);
  g.zero_();
  const std::string message = error_of([&] { z.sum().backward(); });
  EXPECT_NE(message.find("zero_"), std::string::npos) << message;
}

TEST(UnfoldOps, RefusedArgumentsChangeNothing) {
  const Tensor x = iota({3, 4});
  EXPECT_THROW(x.unfold(1, 5, 1), ValueError);
  EXPECT_THROW(x.unfold(1, 2, 0), ValueError);
  EXPECT_THROW(x.unfold(1, -1, 1), ValueError);
  EXPECT_THROW(x.unfold(2, 1, 1), IndexError);
  const std::string message = error_of<ValueError>([&] { x.unfold(1, 5, 1); });
  EXPECT_NE(message.find("maximum size for tensor at dimension 1 is 4 but size is 5"),
            std::string::npos)
      << message;
  EXPECT_EQ(x.version(), 0u);
}

TEST(UnflattenOps, SplitsADimAsAView) {
  Tensor x = iota({2, 12});
  Tensor u = x.unflatten(1, {3, 4});
  EXPECT_EQ(u.sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(values(u), values(x));
  EXPECT_TRUE(u.is_alias_of(x));
  EXPECT_EQ(x.unflatten(-1, {-1, 2, 3}).sizes(), IntArrayRef({2, 2, 2, 3}));
  EXPECT_EQ(x.unflatten(0, {1, 2}).sizes(), IntArrayRef({1, 2, 12}));
  EXPECT_EQ(dev(zeros({0, 6}, kFloat64)).unflatten(1, {2, 3}).sizes(), IntArrayRef({0, 2, 3}));
  u.select(1, 0).fill_(-1.0);  // writes reach x
  EXPECT_EQ(values(x)[0], -1.0);
  EXPECT_EQ(values(x)[4], 4.0);  // u[0, 1, 0]
  EXPECT_EQ(x.version(), 1u);
  // torch's errors: sizes that do not multiply to the dim, two -1, no sizes, a bad dim.
  EXPECT_THROW(x.unflatten(1, {5, 3}), ShapeError);
  EXPECT_THROW(x.unflatten(1, {-1, 5}), ShapeError);
  EXPECT_THROW(x.unflatten(1, {-1, -1}), ValueError);
  EXPECT_THROW(x.unflatten(1, {}), ValueError);
  EXPECT_THROW(x.unflatten(2, {3, 4}), IndexError);
  EXPECT_EQ(x.version(), 1u);
  // Splitting one dim is always a view, whatever the layout.
  const Tensor t = iota({12, 2}).t();
  EXPECT_EQ(t.unflatten(1, {3, 4}).strides(), IntArrayRef({1, 8, 2}));
}

TEST(UnflattenOps, Gradients) {
  CHECK_GRADS(
      [](const VariableList& in) {
        return in[0].unflatten(1, {2, -1});
      },
      {leaf({3, 6}, 10)});
  Tensor x = leaf({4}, 11);
  EXPECT_STREQ(x.unflatten(0, {2, 2}).grad_fn()->name(), "ViewBackward0");
  CHECK_GRADS(
      [](const VariableList& in) {
        Tensor h = in[0] * 1.0;
        h.unflatten(0, {2, 3}).select(1, 1).mul_(in[0].sum());
        return h;
      },
      {leaf({6}, 12)});
}

}  // namespace
}  // namespace mutagrad
