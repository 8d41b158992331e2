// TensorIndex: each C++ spelling of a Python subscript builds the right kind of entry, and
// prints as Python writes it (used in messages).
#include <gtest/gtest.h>

#include <sstream>

#include "indexing/indexing.h"
#include "tests/indexing/test_util.h"

namespace mutagrad {
namespace {

using testing::dev;

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
using indexing::TensorIndex;
using indexing::TensorIndexType;

std::string text(const TensorIndex& index) {
  std::ostringstream os;
  os << index;
  return os.str();
}

TEST(TensorIndex, EachSpellingHasItsKind) {
  EXPECT_EQ(TensorIndex(None).type(), TensorIndexType::None);
  EXPECT_EQ(TensorIndex(Ellipsis).type(), TensorIndexType::Ellipsis);
  EXPECT_EQ(TensorIndex("...").type(), TensorIndexType::Ellipsis);
  EXPECT_EQ(TensorIndex(3).integer(), 3);
  EXPECT_EQ(TensorIndex(int64_t{-7}).integer(), -7);
  EXPECT_EQ(TensorIndex(size_t{4}).integer(), 4);
  EXPECT_TRUE(TensorIndex(true).is_boolean());
  EXPECT_TRUE(TensorIndex(true).boolean());
  EXPECT_FALSE(TensorIndex(false).boolean());
  EXPECT_TRUE(TensorIndex(Slice()).is_slice());
  EXPECT_TRUE(TensorIndex(testing::i64({1, 2})).is_tensor());
  EXPECT_THROW(TensorIndex("..").type(), ValueError);
  EXPECT_THROW(TensorIndex(Tensor()).type(), ValueError);
}

TEST(TensorIndex, SliceDefaults) {
  Slice all;
  EXPECT_FALSE(all.start().has_value());
  EXPECT_FALSE(all.stop().has_value());
  EXPECT_EQ(all.step(), 1);
  Slice s(1, None, 2);
  EXPECT_EQ(*s.start(), 1);
  EXPECT_FALSE(s.stop().has_value());
  EXPECT_EQ(s.step(), 2);
}

TEST(TensorIndex, PrintsAsPython) {
  EXPECT_EQ(text(None), "None");
  EXPECT_EQ(text(Ellipsis), "...");
  EXPECT_EQ(text(-1), "-1");
  EXPECT_EQ(text(true), "True");
  EXPECT_EQ(text(Slice()), ":");
  EXPECT_EQ(text(Slice(1, None)), "1:");
  EXPECT_EQ(text(Slice(None, 3)), ":3");
  EXPECT_EQ(text(Slice(1, 3, 2)), "1:3:2");
  EXPECT_EQ(text(testing::i64({1, 2})), "tensor(shape=[2], dtype=int64)");
  EXPECT_EQ(indexing::to_string({1, Slice(None, 2), None}), "[1, :2, None]");
}

}  // namespace
}  // namespace mutagrad
