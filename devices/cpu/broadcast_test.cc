#include "devices/cpu/broadcast.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;

TEST(BroadcastShapesTest, MultidirectionalRules) {
  EXPECT_EQ(*BroadcastShapes({Shape({2, 3}), Shape({3})}), Shape({2, 3}));
  EXPECT_EQ(*BroadcastShapes({Shape({2, 1}), Shape({1, 3})}), Shape({2, 3}));
  EXPECT_EQ(*BroadcastShapes({Shape(), Shape({4})}), Shape({4}));
  EXPECT_EQ(*BroadcastShapes({Shape({5, 1, 4}), Shape({3, 1})}),
            Shape({5, 3, 4}));
  EXPECT_EQ(*BroadcastShapes({Shape({0, 1}), Shape({1, 3})}), Shape({0, 3}));
}

TEST(BroadcastShapesTest, IncompatibleIsInvalidArgument) {
  absl::StatusOr<Shape> s = BroadcastShapes({Shape({2, 3}), Shape({4})});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BroadcastPlanTest, MergesContiguousAxes) {
  // Same shapes: one row over everything.
  BroadcastPlan p = MakeBroadcastPlan(Shape({2, 3, 4}),
                                      {Shape({2, 3, 4}), Shape({2, 3, 4})});
  EXPECT_THAT(p.dims, ElementsAre(24));
  EXPECT_THAT(p.strides[0], ElementsAre(1));
  // Bias along the last axis: rows of 4, bias stride 0 across rows.
  p = MakeBroadcastPlan(Shape({2, 3, 4}), {Shape({2, 3, 4}), Shape({4})});
  EXPECT_THAT(p.dims, ElementsAre(6, 4));
  EXPECT_THAT(p.strides[1], ElementsAre(0, 1));
  // Per-channel: [2, 3, 1] against [2, 3, 4].
  p = MakeBroadcastPlan(Shape({2, 3, 4}), {Shape({2, 3, 4}), Shape({2, 3, 1})});
  EXPECT_THAT(p.dims, ElementsAre(6, 4));
  EXPECT_THAT(p.strides[1], ElementsAre(1, 0));
  // Scalar output.
  p = MakeBroadcastPlan(Shape(), {Shape(), Shape()});
  EXPECT_THAT(p.dims, ElementsAre(1));
  EXPECT_THAT(p.strides[1], ElementsAre(0));
}

TEST(BroadcastPlanTest, WalksEveryElementOnce) {
  const Shape out({2, 3, 4});
  const BroadcastPlan p = MakeBroadcastPlan(out, {Shape({3, 1}), Shape({4})});
  std::vector<int> seen(out.NumElements(), 0);
  ForEachBroadcastRow(p, [&](int64_t o, const std::vector<int64_t>& in) {
    for (int64_t i = 0; i < p.inner(); ++i) {
      const int64_t flat = o + i;
      ++seen[flat];
      const int64_t c = (flat / 4) % 3;
      const int64_t w = flat % 4;
      EXPECT_EQ(in[0] + i * p.strides[0].back(), c);
      EXPECT_EQ(in[1] + i * p.strides[1].back(), w);
    }
  });
  for (int s : seen) EXPECT_EQ(s, 1);
}

}  // namespace
}  // namespace glint::cpu
