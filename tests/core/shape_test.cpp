// wgml::Shape against std::vector<int64_t>: the same random edits give the same dims, in place up
// to kInlineDims and on the heap beyond, through copies, moves and edits of its own range.
#include "wgml/shape.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace wgml {
namespace {

void expect_same(const Shape& s, const std::vector<int64_t>& v, int step) {
  ASSERT_EQ(s.size(), v.size()) << "step " << step;
  EXPECT_TRUE(std::equal(s.begin(), s.end(), v.begin())) << "step " << step;
  EXPECT_EQ(std::vector<int64_t>(s), v) << "step " << step;
}

TEST(ShapeTest, RandomEditsMatchStdVector) {
  std::mt19937 rng(5);
  Shape s;
  std::vector<int64_t> v;
  for (int step = 0; step < 4000; ++step) {
    const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % (n + 1)); };
    const int64_t value = static_cast<int64_t>(rng() % 100) - 50;
    switch (rng() % 9) {
      case 0:
      case 1:
        s.push_back(value), v.push_back(value);
        break;
      case 2:
        if (!v.empty()) s.pop_back(), v.pop_back();
        break;
      case 3: {
        const size_t at = pick(v.size()), count = rng() % 4;
        s.insert(s.begin() + at, count, value), v.insert(v.begin() + static_cast<ptrdiff_t>(at), count, value);
        break;
      }
      case 4: {  // a range of its own dims, which the insertion moves
        const size_t first = pick(v.size()), last = first + pick(v.size() - first), at = pick(v.size());
        const std::vector<int64_t> range(v.begin() + static_cast<ptrdiff_t>(first), v.begin() + static_cast<ptrdiff_t>(last));
        s.insert(s.begin() + at, s.begin() + first, s.begin() + last);
        v.insert(v.begin() + static_cast<ptrdiff_t>(at), range.begin(), range.end());
        break;
      }
      case 5: {
        const size_t first = pick(v.size()), last = first + pick(v.size() - first);
        s.erase(s.begin() + first, s.begin() + last);
        v.erase(v.begin() + static_cast<ptrdiff_t>(first), v.begin() + static_cast<ptrdiff_t>(last));
        break;
      }
      case 6: {
        const size_t n = rng() % 12;
        s.resize(n, value), v.resize(n, value);
        break;
      }
      case 7: {  // assigned from its own tail
        const size_t first = pick(v.size());
        s.assign(s.begin() + first, s.end());
        v.assign(v.begin() + static_cast<ptrdiff_t>(first), v.end());
        break;
      }
      case 8: {
        Shape copy = s;
        Shape moved = std::move(copy);
        expect_same(moved, v, step);
        EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from Shape is empty
        s = moved;
        break;
      }
    }
    expect_same(s, v, step);
  }
}

TEST(ShapeTest, KeepsUpToEightDimsInPlaceAndGrowsPastThem) {
  Shape s = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(s.capacity(), Shape::kInlineDims);
  const int64_t* inline_dims = s.data();
  s.push_back(9);
  EXPECT_NE(s.data(), inline_dims);
  EXPECT_EQ(s, (Shape{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  Shape moved = std::move(s);  // a heap block changes hands
  EXPECT_EQ(moved.back(), 9);
  moved.swap(s);
  EXPECT_EQ(s.size(), 9u);
  EXPECT_TRUE(moved.empty());
}

TEST(ShapeTest, ComparesAndConvertsAsAVector) {
  const Shape a = {2, 3}, b = {2, 4}, c = {2, 3, 1};
  EXPECT_TRUE(a == Shape({2, 3}));
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(a < c);
  const std::vector<int64_t> v = c;
  EXPECT_EQ(Shape(v), c);
  EXPECT_EQ(Shape(3, 7), (Shape{7, 7, 7}));
  EXPECT_THROW((void)a.at(2), std::out_of_range);
}

}  // namespace
}  // namespace wgml
