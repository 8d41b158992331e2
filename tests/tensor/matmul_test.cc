// Tests of native::matmul (tensor/native/linalg.h): the 1-D and 2-D cases, batch broadcasting,
// transposed and strided operands, integer and promoted dtypes, the error paths, and seeded
// random shapes and layouts against a naive triple loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

TEST(Matmul, TwoByTwoDims) {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor b = tensor({{7.0, 8.0}, {9.0, 10.0}, {11.0, 12.0}});
  Tensor c = native::matmul(a, b);
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_EQ(elements(c), (std::vector<double>{58, 64, 139, 154}));
}

TEST(Matmul, OneDimensionalCases) {
  Tensor v = tensor({1.0, 2.0, 3.0});
  Tensor dot = native::matmul(v, v);
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_EQ(dot.item<double>(), 14);
  Tensor m = tensor({{1.0, 0.0, 1.0}, {0.0, 2.0, 0.0}});
  Tensor mv = native::matmul(m, v);
  EXPECT_EQ(mv.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(elements(mv), (std::vector<double>{4, 4}));
  Tensor vm = native::matmul(tensor({1.0, 1.0}), m);
  EXPECT_EQ(vm.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(elements(vm), (std::vector<double>{1, 2, 1}));
  // A batch of matrices times a vector, and a vector times a batch.
  Tensor batch = strided_view(native::contiguous(arange(12, kFloat64)), {2, 2, 3}, {6, 3, 1}, 0);
  Tensor bv = native::matmul(batch, tensor({1.0, 0.0, -1.0}, kFloat64));
  EXPECT_EQ(bv.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(elements(bv), (std::vector<double>{-2, -2, -2, -2}));
  Tensor vb = native::matmul(tensor({1.0, 1.0}, kFloat64), batch);
  EXPECT_EQ(vb.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements(vb), (std::vector<double>{3, 5, 7, 15, 17, 19}));
}

TEST(Matmul, BatchBroadcasting) {
  // [2, 1, 2, 3] @ [3, 3, 1] -> [2, 3, 2, 1]
  Tensor a = strided_view(native::contiguous(arange(12, kFloat64)), {2, 1, 2, 3}, {6, 6, 3, 1}, 0);
  Tensor b = strided_view(native::contiguous(arange(9, kFloat64)), {3, 3, 1}, {3, 1, 1}, 0);
  Tensor c = native::matmul(a, b);
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 3, 2, 1}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int r = 0; r < 2; ++r) {
        double s = 0;
        for (int k = 0; k < 3; ++k) s += (6 * i + 3 * r + k) * (3 * j + k);
        want.push_back(s);
      }
    }
  }
  EXPECT_EQ(elements(c), want);
}

TEST(Matmul, TransposedAndStridedOperands) {
  Tensor base = native::contiguous(arange(24, kFloat32));
  Tensor at = strided_view(base, {2, 3}, {1, 2}, 0);  // column-major 2x3
  Tensor bs = strided_view(base, {3, 2}, {8, 3}, 1);  // gaps, no unit stride
  Tensor c = native::matmul(at, bs);
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += (i + 2 * k) * (1 + 8 * k + 3 * j);
      want.push_back(s);
    }
  }
  EXPECT_EQ(elements(c), want);
}

TEST(Matmul, IntegerAndPromotedDtypes) {
  Tensor a = tensor({{1, 2}, {3, 4}});
  Tensor c = native::matmul(a, a);
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(elements(c), (std::vector<double>{7, 10, 15, 22}));
  Tensor i32 = native::matmul(tensor({{1, 2}}, kInt32), tensor({{3}, {4}}, kInt32));
  EXPECT_EQ(i32.dtype(), kInt32);
  EXPECT_EQ(i32.item<int64_t>(), 11);
  Tensor mixed = native::matmul(a, tensor({{0.5}, {0.25}}));
  EXPECT_EQ(mixed.dtype(), kFloat32);
  EXPECT_EQ(elements(mixed), (std::vector<double>{1, 2.5}));
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  Tensor c = native::matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements(c), std::vector<double>(6, 0.0));
  EXPECT_EQ(native::matmul(zeros({0, 4}), zeros({4, 3})).numel(), 0);
}

TEST(Matmul, Errors) {
  expect_error<ShapeError>(
      [] { native::matmul(scalar_tensor(1.0), tensor({1.0})); },
      "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  expect_error<ShapeError>(
      [] {
        native::matmul(ones({2, 3}), ones({4, 5}));
      },
      "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  expect_error<ShapeError>([] { native::matmul(ones({3}), ones({4})); },
                           "inconsistent tensor size, expected tensor [3] and src [4]");
  expect_error<ShapeError>(
      [] {
        native::matmul(ones({2, 2, 3}), ones({3, 3, 2}));
      },
      "must match the size of tensor b (3)");
  expect_error<DTypeError>(
      [] {
        native::matmul(ones({1, 1}, kBool), ones({1, 1}, kBool));
      },
      "not implemented for 'Bool'");
}

TEST(Matmul, LargeMatricesThroughBlockedGemm) {
  // ones(m, k) @ B with B[p, j] = p * n + j: c[i, j] = n * k * (k - 1) / 2 + k * j.
  const int64_t m = 150, k = 70, n = 130;
  Tensor b = strided_view(native::contiguous(arange(k * n, kFloat64)), {k, n}, {n, 1}, 0);
  Tensor c = native::matmul(ones({m, k}, kFloat64), b);
  // The same through a transposed view of B's transpose (column-major B).
  Tensor bt = native::clone(strided_view(b, {n, k}, {1, n}, 0));
  Tensor c2 = native::matmul(ones({m, k}, kFloat64), strided_view(bt, {k, n}, {1, k}, 0));
  for (int64_t i = 0; i < m; i += 7) {
    for (int64_t j = 0; j < n; ++j) {
      double want = static_cast<double>(n * k * (k - 1) / 2 + k * j);
      ASSERT_EQ(read(c, {i, j}), want);
      ASSERT_EQ(read(c2, {i, j}), want);
    }
  }
}

TEST(Matmul, RandomShapesAndLayoutsAgainstReference) {
  Random rnd(2024);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t m = rnd.uniform(1, 6), k = rnd.uniform(1, 6), n = rnd.uniform(1, 6);
    DimVector batch_a, batch_b;
    int64_t nb = rnd.uniform(0, 2);
    for (int64_t d = 0; d < nb; ++d) {
      int64_t s = rnd.uniform(1, 3);
      batch_a.push_back(rnd.uniform(0, 2) == 0 ? 1 : s);
      batch_b.push_back(rnd.uniform(0, 2) == 0 ? 1 : s);
    }
    if (rnd.uniform(0, 1) && !batch_b.empty()) batch_b.erase(0);
    DimVector sa(batch_a), sb(batch_b);
    sa.push_back(m);
    sa.push_back(k);
    sb.push_back(k);
    sb.push_back(n);
    ScalarType dt = rnd.uniform(0, 2) == 0 ? kInt64 : (rnd.uniform(0, 1) ? kFloat32 : kFloat64);
    Tensor a = rnd.tensor(sa, dt), b = rnd.tensor(sb, dt);
    Tensor c = native::matmul(a, b);
    DimVector batch = broadcast_shapes(batch_a, batch_b);
    DimVector sc(batch);
    sc.push_back(m);
    sc.push_back(n);
    ASSERT_EQ(c.sizes().vec(), sc.vec());
    for (const Index& idx : all_indices(sc)) {
      Index ia, ib;
      size_t lead_a = batch.size() - batch_a.size(), lead_b = batch.size() - batch_b.size();
      for (size_t d = 0; d < batch_a.size(); ++d)
        ia.push_back(batch_a[d] == 1 ? 0 : idx[d + lead_a]);
      for (size_t d = 0; d < batch_b.size(); ++d)
        ib.push_back(batch_b[d] == 1 ? 0 : idx[d + lead_b]);
      int64_t i = idx[batch.size()], j = idx[batch.size() + 1];
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        Index xa(ia), xb(ib);
        xa.push_back(i);
        xa.push_back(p);
        xb.push_back(p);
        xb.push_back(j);
        s += read(a, xa) * read(b, xb);
      }
      ASSERT_NEAR(read(c, idx), s, 1e-5 * std::max(1.0, std::abs(s))) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace mutagrad
