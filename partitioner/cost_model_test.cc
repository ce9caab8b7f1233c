#include "partitioner/cost_model.h"

#include "gtest/gtest.h"

namespace glint {
namespace {

ValueInfo F32(const std::string& name, int64_t elements) {
  return {name, DType::kFloat32, Shape({elements})};
}

// x(100) → a: Relu → t1(100) → b: Add(w 10) → t2(100) → c: Add(t1) → y.
// t1 is consumed by b and c, so it stays live across b.
Graph Chain() {
  Graph g;
  g.inputs = {F32("x", 100)};
  g.outputs = {F32("y", 100)};
  g.initializers["w"] = *Tensor::Create(DType::kFloat32, Shape({100}));
  g.nodes = {Node{"a", "Relu", "", {"x"}, {"t1"}, {}},
             Node{"b", "Add", "", {"t1", "w"}, {"t2"}, {}},
             Node{"c", "Add", "", {"t2", "t1"}, {"y"}, {}}};
  for (const char* v : {"x", "w", "t1", "t2", "y"}) g.values[v] = F32(v, 100);
  return g;
}

// SegmentMemory is Segment's memory_bytes() on every segment.
TEST(GraphCostModelTest, SegmentMemoryMatchesSegment) {
  Graph g = Chain();
  // A node reading one value twice, and an initializer used twice.
  g.nodes.push_back(Node{"d", "Add", "", {"y", "y"}, {"z"}, {}});
  g.nodes.push_back(Node{"e", "Add", "", {"z", "w"}, {"u"}, {}});
  g.values["z"] = F32("z", 100);
  g.values["u"] = F32("u", 100);
  g.outputs = {F32("u", 100), F32("t2", 100)};
  GraphCostModel model(g);
  int checked = 0;
  for (int b = 0; b <= model.num_nodes(); ++b) {
    for (int e = b; e <= model.num_nodes(); ++e) {
      EXPECT_EQ(model.SegmentMemory(b, e), model.Segment(b, e).memory_bytes())
          << "[" << b << ", " << e << ")";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 21);
}

TEST(GraphCostModelTest, WholeGraphLiveness) {
  Graph g = Chain();
  GraphCostModel model(g);
  const SegmentCost all = model.Segment(0, 3);
  EXPECT_EQ(all.weight_bytes, 448u);  // 400 rounded up to 64.
  // The input x and the output y are held by the run through the whole
  // segment (800 bytes); t1 lives from a to c, t2 from b to c: the peak is
  // at c, x + y + t1 + t2 = 1600.
  EXPECT_EQ(all.peak_activation_bytes, 1600u);
  EXPECT_EQ(all.input_bytes, 400u);
  EXPECT_EQ(all.output_bytes, 400u);
  EXPECT_DOUBLE_EQ(all.flops, 300);
}

TEST(GraphCostModelTest, SegmentBordersAndCuts) {
  Graph g = Chain();
  GraphCostModel model(g);
  // Segment [b, c): t1 comes in; t2 leaves, and t1 leaves too (c uses it).
  const SegmentCost mid = model.Segment(1, 2);
  EXPECT_EQ(mid.input_bytes, 400u);
  EXPECT_EQ(mid.output_bytes, 400u);
  EXPECT_EQ(mid.weight_bytes, 448u);
  EXPECT_EQ(mid.peak_activation_bytes, 800u);
  // Cuts: before a nothing; before b t1; before c t1 and t2.
  EXPECT_EQ(model.cut_bytes(), (std::vector<uint64_t>{0, 400, 800, 0}));
}

}  // namespace
}  // namespace glint
