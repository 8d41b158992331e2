// Shape and stride arithmetic (tensor/shape.h). View strides were derived with PyTorch 1.13
// (x.as_strided(sizes, strides).view(new).stride()).
#include "tensor/shape.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "tensor/error.h"

namespace mutagrad {
namespace {

using V = std::vector<int64_t>;

TEST(Shape, NumelAndContiguousStrides) {
  EXPECT_EQ(compute_numel({}), 1);
  EXPECT_EQ(compute_numel({2, 3, 4}), 24);
  EXPECT_EQ(compute_numel({2, 0, 4}), 0);
  EXPECT_EQ(contiguous_strides({2, 3, 4}).vec(), V({12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}).vec(), V({}));
  // A size-0 dim counts as 1 for the strides before it (as PyTorch).
  EXPECT_EQ(contiguous_strides({3, 0}).vec(), V({1, 1}));
  EXPECT_EQ(contiguous_strides({0, 3}).vec(), V({3, 1}));
}

TEST(Shape, IsContiguous) {
  EXPECT_TRUE(compute_is_contiguous({2, 3}, {3, 1}));
  EXPECT_FALSE(compute_is_contiguous({2, 3}, {1, 2}));
  EXPECT_TRUE(compute_is_contiguous({2, 1, 3}, {3, 99, 1}));  // size-1 dims: any stride
  EXPECT_TRUE(compute_is_contiguous({0, 3}, {7, 5}));         // empty: always
  EXPECT_TRUE(compute_is_contiguous({}, {}));
  EXPECT_FALSE(compute_is_contiguous({2, 3}, {4, 1}));  // gap between rows
  EXPECT_FALSE(compute_is_contiguous({3}, {0}));        // expanded
}

TEST(Shape, WrapDim) {
  EXPECT_EQ(wrap_dim(0, 3, "op"), 0);
  EXPECT_EQ(wrap_dim(-1, 3, "op"), 2);
  EXPECT_EQ(wrap_dim(-3, 3, "op"), 0);
  EXPECT_EQ(wrap_dim(0, 0, "op"), 0);  // a 0-dim tensor accepts 0 and -1
  EXPECT_EQ(wrap_dim(-1, 0, "op"), 0);
  EXPECT_THROW(wrap_dim(3, 3, "op"), IndexError);
  EXPECT_THROW(wrap_dim(-4, 3, "op"), IndexError);
  EXPECT_THROW(wrap_dim(1, 0, "op"), IndexError);
  try {
    wrap_dim(5, 2, "sum");
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("sum(): dimension out of range (expected to be in range "
                                         "of [-2, 1], but got 5)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Shape, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}).vec(), V({2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {3}).vec(), V({3}));
  EXPECT_EQ(broadcast_shapes({}, {}).vec(), V({}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 5}).vec(), V({0, 5}));
  EXPECT_EQ(broadcast_shapes({5, 1, 1}, {1, 1}).vec(), V({5, 1, 1}));
  EXPECT_EQ(broadcast_shapes({4}, {4}).vec(), V({4}));
  EXPECT_THROW(broadcast_shapes({2, 3}, {4, 3}), ShapeError);
  EXPECT_THROW(broadcast_shapes({0}, {2}), ShapeError);  // 0 does not broadcast to 2
  try {
    broadcast_shapes({2, 3}, {4, 3}, "add");
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("add()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
  }
}

struct ViewCase {
  V sizes, strides, new_sizes;
  std::optional<V> expected;
};

TEST(Shape, ComputeViewStridesMatchesPyTorch) {
  const std::vector<ViewCase> cases = {
      {{2, 3, 4}, {12, 4, 1}, {6, 4}, V{4, 1}},
      {{2, 3, 4}, {12, 4, 1}, {4, 6}, V{6, 1}},
      {{2, 3, 4}, {12, 4, 1}, {2, 1, 12}, V{12, 12, 1}},
      {{2, 3, 4}, {12, 4, 1}, {24}, V{1}},
      {{4, 3}, {1, 4}, {12}, std::nullopt},
      {{4, 3}, {1, 4}, {2, 2, 3}, V{2, 1, 4}},
      {{4, 3}, {1, 4}, {4, 3, 1}, V{1, 4, 4}},
      {{2, 3, 4}, {24, 8, 2}, {6, 4}, V{8, 2}},
      {{2, 3, 4}, {24, 8, 2}, {2, 12}, V{24, 2}},
      {{2, 3, 4}, {4, 8, 1}, {6, 4}, std::nullopt},
      {{2, 1, 4}, {4, 100, 1}, {8}, V{1}},
      {{3, 1}, {1, 1}, {1, 3}, V{3, 1}},
      {{0, 3}, {3, 1}, {3, 0}, V{1, 1}},
      {{0, 3}, {3, 1}, {0, 3}, V{3, 1}},
      {{}, {}, {1, 1}, V{1, 1}},
      {{6}, {2}, {2, 3}, V{6, 2}},
      {{6}, {2}, {3, 1, 2}, V{4, 4, 2}},
      {{2, 2}, {0, 1}, {4}, std::nullopt},
      {{2, 2}, {2, 0}, {4}, std::nullopt},
  };
  for (const ViewCase& c : cases) {
    std::optional<DimVector> got = compute_view_strides(c.sizes, c.strides, c.new_sizes);
    ASSERT_EQ(got.has_value(), c.expected.has_value())
        << IntArrayRef(c.sizes) << " " << IntArrayRef(c.strides) << " -> "
        << IntArrayRef(c.new_sizes);
    if (got) {
      EXPECT_EQ(got->vec(), *c.expected) << IntArrayRef(c.new_sizes);
    }
  }
}

TEST(Shape, InferSize) {
  EXPECT_EQ(infer_size({2, -1}, 12, "view").vec(), V({2, 6}));
  EXPECT_EQ(infer_size({-1}, 0, "view").vec(), V({0}));
  EXPECT_EQ(infer_size({3, 4}, 12, "view").vec(), V({3, 4}));
  EXPECT_EQ(infer_size({}, 1, "view").vec(), V({}));
  EXPECT_THROW(infer_size({5, -1}, 12, "view"), ShapeError);
  EXPECT_THROW(infer_size({-1, -1}, 12, "view"), ShapeError);
  EXPECT_THROW(infer_size({3, 5}, 12, "view"), ShapeError);
  EXPECT_THROW(infer_size({-2, 6}, 12, "view"), ShapeError);
  EXPECT_THROW(infer_size({0, -1}, 0, "view"), ShapeError);  // -1 is ambiguous with a 0
  try {
    infer_size({5, -1}, 12, "view");
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("shape '[5, -1]' is invalid for input of size 12"),
              std::string::npos)
        << e.what();
  }
}

TEST(Shape, HasInternalOverlap) {
  EXPECT_EQ(has_internal_overlap({2, 3}, {3, 1}), MemOverlap::kNo);
  EXPECT_EQ(has_internal_overlap({2, 3}, {1, 2}), MemOverlap::kNo);  // transposed
  EXPECT_EQ(has_internal_overlap({2, 3}, {8, 2}), MemOverlap::kNo);  // gappy
  EXPECT_EQ(has_internal_overlap({}, {}), MemOverlap::kNo);
  EXPECT_EQ(has_internal_overlap({1, 3}, {0, 1}), MemOverlap::kNo);   // size-1 dim, stride 0
  EXPECT_EQ(has_internal_overlap({2, 3}, {0, 1}), MemOverlap::kYes);  // expanded
  EXPECT_EQ(has_internal_overlap({4}, {0}), MemOverlap::kYes);
  EXPECT_EQ(has_internal_overlap({3, 0}, {0, 0}), MemOverlap::kNo);  // empty: no elements
  EXPECT_EQ(has_internal_overlap({0, 4}, {4, 0}), MemOverlap::kNo);
  // Strides that interleave cannot be proven either way by the sorted-span test.
  EXPECT_EQ(has_internal_overlap({2, 2}, {1, 1}), MemOverlap::kTooHard);
  EXPECT_EQ(has_internal_overlap({3, 2}, {2, 3}), MemOverlap::kTooHard);
}

}  // namespace
}  // namespace mutagrad
