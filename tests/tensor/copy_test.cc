// Tests of native::copy_, fill_, clone, contiguous and to (tensor/native/copy.h) on the CPU:
// hand-derived values, seeded random geometries against a naive reference, memory overlap.
#include "tensor/native/copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/cpu/parallel.h"
#include "tensor/native/factories.h"
#include "tensor/native/views.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace mutagrad {
namespace {

using namespace tensor_testing;  // NOLINT: the shared test helpers

// What copying the double `v` into `dtype` gives (C++ conversion, as PyTorch's CPU cast).
double converted(double v, ScalarType dtype) { return stored_as(v, dtype); }

TEST(Fill, EveryDtypeContiguous) {
  for (ScalarType dt : kAllDtypes) {
    Tensor t = empty({2, 3}, dt);
    native::fill_(t, 3);
    EXPECT_EQ(elements(t), std::vector<double>(6, dt == kBool ? 1.0 : 3.0)) << dt;
  }
  Tensor f = empty({4}, kFloat32);
  native::fill_(f, 1.5);
  EXPECT_EQ(elements(f), std::vector<double>(4, 1.5));
  Tensor i = empty({4}, kInt32);
  native::fill_(i, 2.75);  // truncates toward zero, as a C++ cast
  EXPECT_EQ(elements(i), std::vector<double>(4, 2.0));
  Tensor b = empty({2}, kBool);
  native::fill_(b, 0.0);
  EXPECT_EQ(elements(b), std::vector<double>(2, 0.0));
}

TEST(Fill, StridedViewOnlyTouchesItsElements) {
  Tensor base = zeros({4, 5}, kInt64);
  Tensor col = strided_view(base, {4}, {5}, 2);  // base[:, 2]
  native::fill_(col, 9);
  std::vector<double> want(20, 0.0);
  for (int r = 0; r < 4; ++r) want[r * 5 + 2] = 9;
  EXPECT_EQ(elements(base), want);
}

TEST(Fill, ZeroDimAndEmpty) {
  Tensor s = empty({}, kFloat64);
  native::fill_(s, -2.5);
  EXPECT_EQ(s.item<double>(), -2.5);
  Tensor e = empty({0, 3}, kFloat32);
  native::fill_(e, 1);  // nothing to write, no error
  EXPECT_EQ(e.numel(), 0);
}

TEST(Fill, LargeTensorUsesEveryElement) {
  // Above the parallel threshold: both halves must be written.
  Tensor t = empty({300001}, kFloat32);
  native::fill_(t, 0.25);
  const float* p = t.data_ptr<float>();
  EXPECT_EQ(std::count(p, p + t.numel(), 0.25f), t.numel());
}

TEST(Fill, InternalOverlapIsAValueError) {
  Tensor x = zeros({1}, kFloat32);
  Tensor expanded = strided_view(x, {3}, {0}, 0);
  expect_error<ValueError>([&] { native::fill_(expanded, 1); },
                           "unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.");
  EXPECT_EQ(x.item<float>(), 0.0f);
}

TEST(Copy, ConvertsBetweenEveryPairOfDtypes) {
  const std::vector<double> src_vals = {-2.75, -1.0, 0.0, 0.5, 1.0, 3.25};
  for (ScalarType from : kAllDtypes) {
    Tensor src = empty({6}, from);
    dispatch_dtype(from, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int i = 0; i < 6; ++i) {
        src.data_ptr<T>()[i] = std::is_same_v<T, bool> ? T(src_vals[i] != 0)
                               : std::is_integral_v<T>
                                   ? static_cast<T>(static_cast<int64_t>(src_vals[i]))
                                   : static_cast<T>(src_vals[i]);
      }
    });
    for (ScalarType to : kAllDtypes) {
      Tensor dst = empty({6}, to);
      native::copy_(dst, src);
      std::vector<double> want;
      for (double v : elements(src)) want.push_back(converted(v, to));
      EXPECT_EQ(elements(dst), want) << from << " -> " << to;
    }
  }
}

TEST(Copy, HandDerivedConversions) {
  Tensor f = tensor({-1.5, 0.0, 2.9, std::nan("")}, kFloat32);
  Tensor i = empty({3}, kInt64);
  native::copy_(i, strided_view(f, {3}, {1}, 0));
  EXPECT_EQ(elements(i), (std::vector<double>{-1, 0, 2}));
  Tensor b = empty({4}, kBool);
  native::copy_(b, f);
  EXPECT_EQ(elements(b), (std::vector<double>{1, 0, 1, 1}));  // nan is truthy, as PyTorch
}

TEST(Copy, BroadcastsSourceToDestination) {
  Tensor dst = zeros({2, 3}, kFloat64);
  native::copy_(dst, tensor({1.0, 2.0, 3.0}, kFloat64));
  EXPECT_EQ(elements(dst), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  native::copy_(dst, tensor({{7.0}, {8.0}}, kFloat64));
  EXPECT_EQ(elements(dst), (std::vector<double>{7, 7, 7, 8, 8, 8}));
  native::copy_(dst, scalar_tensor(5, kInt64));
  EXPECT_EQ(elements(dst), std::vector<double>(6, 5.0));
}

TEST(Copy, ShapeErrors) {
  Tensor dst = zeros({2}, kFloat32);
  expect_error<ShapeError>([&] { native::copy_(dst, zeros({3}, kFloat32)); },
                           "must match the size of tensor b (3)");
  expect_error<ShapeError>(
      [&] {
        native::copy_(dst, zeros({2, 2}, kFloat32));
      },
      "cannot be broadcast to the destination's shape [2]");
  EXPECT_EQ(elements(dst), (std::vector<double>{0, 0}));
}

TEST(Copy, IntoExpandedIsAValueError) {
  Tensor x = zeros({3}, kFloat32);
  Tensor expanded = strided_view(x, {2, 3}, {0, 1}, 0);
  expect_error<ValueError>(
      [&] {
        native::copy_(expanded, ones({2, 3}, kFloat32));
      },
      "copy_(): unsupported operation: more than one element of the "
      "written-to tensor refers to a single memory location");
  EXPECT_EQ(elements(x), (std::vector<double>{0, 0, 0}));
}

TEST(Copy, TransposedSourceAndDestination) {
  Tensor src = arange(6, kFloat32);                                         // [0..5]
  Tensor src_t = strided_view(native::contiguous(src), {3, 2}, {1, 3}, 0);  // [[0,3],[1,4],[2,5]]
  Tensor dst = zeros({3, 2}, kFloat32);
  native::copy_(dst, src_t);
  EXPECT_EQ(elements(dst), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor storage = zeros({6}, kInt32);
  Tensor dst_t = strided_view(storage, {3, 2}, {1, 3}, 0);
  native::copy_(dst_t, dst);
  EXPECT_EQ(elements(storage), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Copy, OverlappingShiftRightReadsSourceFirst) {
  // x[1:] = x[:-1] on [0, 1, 2, 3, 4] gives [0, 0, 1, 2, 3] (not [0, 0, 0, 0, 0]).
  Tensor x = arange(5, kFloat32);
  native::copy_(strided_view(x, {4}, {1}, 1), strided_view(x, {4}, {1}, 0));
  EXPECT_EQ(elements(x), (std::vector<double>{0, 0, 1, 2, 3}));
}

TEST(Copy, OverlappingShiftLeftReadsSourceFirst) {
  Tensor x = arange(5, kInt64);
  native::copy_(strided_view(x, {4}, {1}, 0), strided_view(x, {4}, {1}, 1));
  EXPECT_EQ(elements(x), (std::vector<double>{1, 2, 3, 4, 4}));
}

TEST(Copy, OverlappingTransposeInPlace) {
  // x.copy_(x.t()) on a 3x3 matrix must give the transpose, not a half-overwritten mix.
  Tensor x = arange(9, kFloat64);
  Tensor m = strided_view(x, {3, 3}, {3, 1}, 0);
  native::copy_(m, strided_view(x, {3, 3}, {1, 3}, 0));
  EXPECT_EQ(elements(m), (std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(Copy, OntoItselfIsANoOp) {
  Tensor x = arange(4, kFloat32);
  native::copy_(x, x);
  EXPECT_EQ(elements(x), (std::vector<double>{0, 1, 2, 3}));
}

TEST(Copy, OverlapDetection) {
  Tensor x = zeros({10}, kFloat32);
  EXPECT_TRUE(native::may_overlap(x, strided_view(x, {2}, {1}, 3)));
  EXPECT_FALSE(native::may_overlap(strided_view(x, {5}, {1}, 0), strided_view(x, {5}, {1}, 5)));
  EXPECT_TRUE(native::may_overlap(strided_view(x, {5}, {1}, 0), strided_view(x, {5}, {1}, 4)));
  EXPECT_FALSE(native::may_overlap(x, zeros({10}, kFloat32)));
  EXPECT_FALSE(native::may_overlap(x, strided_view(x, {0}, {1}, 0)));
}

TEST(Copy, RandomGeometriesAgainstNaiveReference) {
  Random rnd(1234);
  for (int trial = 0; trial < 300; ++trial) {
    DimVector shape = rnd.shape();
    ScalarType from = kAllDtypes[rnd.uniform(0, kNumScalarTypes - 1)];
    ScalarType to = kAllDtypes[rnd.uniform(0, kNumScalarTypes - 1)];
    // src may have fewer dims and size-1 dims (broadcast).
    DimVector src_shape;
    int64_t drop = rnd.uniform(0, static_cast<int64_t>(shape.size()));
    for (size_t d = static_cast<size_t>(drop); d < shape.size(); ++d) {
      src_shape.push_back(rnd.uniform(0, 3) == 0 ? 1 : shape[d]);
    }
    Tensor src = rnd.tensor(src_shape, from);
    Tensor dst = rnd.tensor(shape, to);
    native::copy_(dst, src);
    for (const Index& idx : all_indices(shape)) {
      Index sidx;
      for (size_t d = 0; d < src_shape.size(); ++d) {
        sidx.push_back(src_shape[d] == 1 ? 0 : idx[d + static_cast<size_t>(drop)]);
      }
      ASSERT_EQ(read(dst, idx), converted(read(src, sidx), to))
          << "trial " << trial << " shape " << IntArrayRef(shape) << " " << from << "->" << to;
    }
  }
}

TEST(Copy, RandomOverlappingCopiesMatchCopyingASnapshot) {
  Random rnd(99);
  for (int trial = 0; trial < 200; ++trial) {
    Tensor storage = rnd.tensor({40}, kFloat64);
    storage = native::clone(storage);  // storage offset 0: views below index from 0
    int64_t rows = rnd.uniform(1, 4), cols = rnd.uniform(1, 4);
    DimVector sizes{rows, cols};
    auto geometry = [&](DimVector* strides, int64_t* offset) {
      // Row- or column-major, maybe with a gap after each row (column): no internal overlap.
      int64_t gap = rnd.uniform(0, 1);
      *strides = rnd.uniform(0, 1) ? DimVector{cols + gap, 1} : DimVector{1, rows + gap};
      *offset = rnd.uniform(0, 10);
    };
    DimVector ds, ss;
    int64_t doff, soff;
    geometry(&ds, &doff);
    geometry(&ss, &soff);
    Tensor dst = strided_view(storage, sizes, ds, doff);
    Tensor src = strided_view(storage, sizes, ss, soff);
    std::vector<double> want = elements(src);
    Tensor before = native::clone(storage);
    native::copy_(dst, src);
    EXPECT_EQ(elements(dst), want) << "trial " << trial;
    // Elements outside dst are untouched.
    std::vector<bool> in_dst(40, false);
    for (const Index& idx : all_indices(sizes))
      in_dst[doff + idx[0] * ds[0] + idx[1] * ds[1]] = true;
    for (int64_t i = 0; i < 40; ++i) {
      if (!in_dst[i]) {
        ASSERT_EQ(read(storage, {i}), read(before, {i}))
            << "trial " << trial << " element " << i << " dst strides " << IntArrayRef(ds)
            << " offset " << doff << " src strides " << IntArrayRef(ss) << " offset " << soff
            << " sizes " << IntArrayRef(sizes);
      }
    }
  }
}

TEST(Copy, LargeStridedCopyAcrossThreads) {
  // 512x300 transposed into contiguous: above the parallel threshold, odd row boundaries.
  Tensor src = native::contiguous(arange(512 * 300, kFloat32));
  Tensor src_t = strided_view(src, {300, 512}, {1, 300}, 0);
  Tensor dst = empty({300, 512}, kFloat64);
  native::copy_(dst, src_t);
  const double* p = dst.data_ptr<double>();
  for (int64_t i = 0; i < 300; ++i) {
    for (int64_t j = 0; j < 512; ++j) ASSERT_EQ(p[i * 512 + j], static_cast<double>(j * 300 + i));
  }
}

// Note [Streaming copies] (tensor/cpu/copy.cc): a copy into a destination larger than the shared
// cache writes its runs with non-temporal stores. With the cache's size set to one byte, every
// same-dtype copy takes that path: rows of every length from 0 to 80 elements of each element
// size, at every offset past a 16-byte boundary, in a wider storage whose other elements must
// stay as they were, plus a large copy split across threads; each against the bits memcpy gives
// with the path off (a cache of 0 bytes: unknown).
TEST(Copy, StreamingStoresWriteExactlyTheRuns) {
  struct SharedCache {
    explicit SharedCache(int64_t bytes) { cpu::set_shared_cache_bytes(bytes); }
    ~SharedCache() { cpu::set_shared_cache_bytes(-1); }
  };
  auto copy_with_cache = [](int64_t cache, const Tensor& storage, IntArrayRef sizes,
                            IntArrayRef strides, int64_t offset, const Tensor& src) {
    SharedCache scoped(cache);
    Tensor out = native::clone(storage);
    native::copy_(strided_view(out, sizes, strides, offset), src);
    return out;
  };
  auto same_bytes = [](const Tensor& a, const Tensor& b) {  // contiguous clones
    return a.numel() == b.numel() && a.dtype() == b.dtype() &&
           std::memcmp(a.raw_data(), b.raw_data(),
                       static_cast<size_t>(a.numel()) * a.element_size()) == 0;
  };
  Random rnd(77);
  for (ScalarType dt : {kBool, kBFloat16, kFloat32, kFloat64}) {
    for (int64_t n = 0; n <= 80; ++n) {
      for (int64_t offset = 0; offset < 9; ++offset) {
        const int64_t rows = 3, pitch = n + 5;
        Tensor storage = native::clone(rnd.tensor({offset + rows * pitch + 3}, dt));
        Tensor src = rnd.tensor({rows, n}, dt);
        const Tensor streamed = copy_with_cache(1, storage, {rows, n}, {pitch, 1}, offset, src);
        const Tensor plain = copy_with_cache(0, storage, {rows, n}, {pitch, 1}, offset, src);
        ASSERT_TRUE(same_bytes(streamed, plain)) << dt << " n=" << n << " offset=" << offset;
        ASSERT_EQ(elements(strided_view(streamed, {rows, n}, {pitch, 1}, offset)), elements(src))
            << dt << " n=" << n << " offset=" << offset;
      }
    }
  }
  // x[:, 1:-1] = y on a 700 x 300 float32 x, across threads.
  Tensor x = native::clone(rnd.tensor({700, 300}, kFloat32));
  Tensor y = rnd.tensor({700, 298}, kFloat32);
  const Tensor streamed = copy_with_cache(1, x, {700, 298}, {300, 1}, 1, y);
  const Tensor plain = copy_with_cache(0, x, {700, 298}, {300, 1}, 1, y);
  EXPECT_TRUE(same_bytes(streamed, plain));
}

TEST(Clone, ContiguousCopyWithSameValues) {
  Tensor x = arange(6, kInt32);
  Tensor xt = strided_view(x, {3, 2}, {1, 3}, 0);
  Tensor c = native::clone(xt);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(c.dtype(), kInt32);
  EXPECT_EQ(elements(c), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  native::fill_(c, 0);
  EXPECT_EQ(elements(x), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Contiguous, ReturnsSelfWhenAlreadyContiguous) {
  Tensor x = arange(6, kFloat32);
  EXPECT_TRUE(native::contiguous(x).is_same(x));
  Tensor xt = strided_view(x, {3, 2}, {1, 3}, 0);
  Tensor c = native::contiguous(xt);
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(elements(c), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(To, ConvertsOrReturnsSelf) {
  Tensor x = tensor({1.5, -2.5}, kFloat64);
  EXPECT_TRUE(native::to(x, kFloat64).is_same(x));
  Tensor i = native::to(x, kInt32);
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(elements(i), (std::vector<double>{1, -2}));
  Tensor b = native::to(x, kBool);
  EXPECT_EQ(elements(b), (std::vector<double>{1, 1}));
}

}  // namespace
}  // namespace mutagrad
