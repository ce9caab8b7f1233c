#include "partitioner/hetero_split.h"

#include <algorithm>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace glint {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// Segment memory as the cost model's has it: additive weights plus the
// largest activation inside (not additive), so shrinking never grows it.
struct MemoryModel {
  std::vector<uint64_t> weights, activations;
  uint64_t operator()(int b, int e) const {
    uint64_t w = 0, a = 0;
    for (int i = b; i < e; ++i) {
      w += weights[i];
      a = std::max(a, activations[i]);
    }
    return w + a;
  }
};

// Every split into contiguous stages and every class for each stage, the
// k-th stage on a class using its k-th capacity. Returns the best value of
// the objective: (stages, bottleneck) for kFewestThenFastest, bottleneck
// for kFastest; stages = INT_MAX when nothing is feasible.
struct Best {
  int stages = std::numeric_limits<int>::max();
  double bottleneck = kNone;
};

void Enumerate(const HeteroProblem& p, const MemoryModel& mem, int i,
               std::vector<int>& used, int stages, double worst,
               HeteroObjective objective, Best& best) {
  const int n = static_cast<int>(p.item_flops.size());
  if (i == n) {
    const bool better =
        objective == HeteroObjective::kFastest
            ? worst < best.bottleneck
            : (stages < best.stages ||
               (stages == best.stages && worst < best.bottleneck));
    if (better) {
      best.stages = stages;
      best.bottleneck = worst;
    }
    return;
  }
  if (stages == p.max_stages) return;
  for (int j = i + 1; j <= n; ++j) {
    for (size_t g = 0; g < p.classes.size(); ++g) {
      const DeviceClassSpec& c = p.classes[g];
      const int k = used[g];
      if (k >= static_cast<int>(c.capacities.size())) continue;
      bool ok = mem(i, j) <= c.capacities[k];
      for (int x = i; x < j && ok; ++x) ok = c.supported[x];
      if (!ok) continue;
      double cost = i > 0 ? p.cut_bytes[i] * c.seconds_per_byte : 0;
      for (int x = i; x < j; ++x) cost += p.item_flops[x] * c.seconds_per_flop;
      ++used[g];
      Enumerate(p, mem, j, used, stages + 1, std::max(worst, cost), objective,
                best);
      --used[g];
    }
  }
}

// Checks a returned plan against the problem's constraints and returns
// its bottleneck recomputed from scratch.
double CheckPlan(const HeteroProblem& p, const MemoryModel& mem,
                 const HeteroSplit& split) {
  const int n = static_cast<int>(p.item_flops.size());
  std::vector<int> used(p.classes.size(), 0);
  int at = 0;
  double worst = 0;
  EXPECT_LE(static_cast<int>(split.stages.size()), p.max_stages);
  for (const HeteroStage& s : split.stages) {
    EXPECT_EQ(s.begin, at);
    EXPECT_LT(s.begin, s.end);
    const DeviceClassSpec& c = p.classes[s.device_class];
    EXPECT_EQ(s.index_in_class, used[s.device_class]++);
    EXPECT_LE(mem(s.begin, s.end), c.capacities[s.index_in_class]);
    double cost = s.begin > 0 ? p.cut_bytes[s.begin] * c.seconds_per_byte : 0;
    for (int x = s.begin; x < s.end; ++x) {
      EXPECT_TRUE(c.supported[x]) << "item " << x;
      cost += p.item_flops[x] * c.seconds_per_flop;
    }
    EXPECT_NEAR(s.seconds, cost, 1e-9 * std::max(1.0, cost));
    worst = std::max(worst, cost);
    at = s.end;
  }
  EXPECT_EQ(at, n);
  return worst;
}

HeteroProblem RandomProblem(std::mt19937& rng, MemoryModel& mem) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int n = 1 + static_cast<int>(rng() % 7);
  const int classes = 2 + static_cast<int>(rng() % 2);
  HeteroProblem p;
  mem.weights.assign(n, 0);
  mem.activations.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    p.item_flops.push_back(10 * unit(rng));
    // Some cuts cheap, some very expensive: greedy guesses fail here.
    p.cut_bytes.push_back(rng() % 3 == 0 ? 40 * unit(rng) : unit(rng));
    mem.weights[i] = 1 + rng() % 10;
    mem.activations[i] = rng() % 6;
  }
  for (int g = 0; g < classes; ++g) {
    DeviceClassSpec c;
    // Speeds differ by up to 8x between classes.
    c.seconds_per_flop = 0.125 + unit(rng);
    c.seconds_per_byte = 0.1 + unit(rng);
    const int devices = 1 + static_cast<int>(rng() % 3);
    const uint64_t capacity = 8 + rng() % 40;  // Some too small for it all.
    c.capacities.assign(devices, capacity);
    for (int i = 0; i < n; ++i) c.supported.push_back(rng() % 6 != 0);
    p.classes.push_back(std::move(c));
  }
  p.max_stages = 1 + static_cast<int>(rng() % 5);
  p.segment_memory = [&mem](int b, int e) { return mem(b, e); };
  return p;
}

TEST(HeteroSplitTest, MatchesBruteForceOnRandomChains) {
  std::mt19937 rng(20261126);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    MemoryModel mem;
    const HeteroProblem p = RandomProblem(rng, mem);
    for (HeteroObjective objective :
         {HeteroObjective::kFastest, HeteroObjective::kFewestThenFastest}) {
      Best want;
      std::vector<int> used(p.classes.size(), 0);
      Enumerate(p, mem, 0, used, 0, 0, objective, want);
      const HeteroSplit got = HeteroChainSplit(p, objective);
      ASSERT_FALSE(got.too_large);
      ASSERT_EQ(got.feasible, want.stages != std::numeric_limits<int>::max())
          << "trial " << trial;
      if (!got.feasible) {
        ++infeasible;
        // Nothing reaches past `reachable`, and something reaches it.
        EXPECT_LT(got.reachable, static_cast<int>(p.item_flops.size()));
        continue;
      }
      ++feasible;
      const double worst = CheckPlan(p, mem, got);
      EXPECT_NEAR(got.bottleneck_seconds, worst, 1e-9 * std::max(1.0, worst));
      EXPECT_NEAR(worst, want.bottleneck, 1e-9 * std::max(1.0, want.bottleneck))
          << "trial " << trial;
      if (objective == HeteroObjective::kFewestThenFastest) {
        EXPECT_EQ(static_cast<int>(got.stages.size()), want.stages)
            << "trial " << trial;
      }
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(feasible, 200);
  EXPECT_GT(infeasible, 20);
}

TEST(HeteroSplitTest, HeavyItemsGoToTheFastClass) {
  // Items 1 and 2 are heavy; class 0 is 10x faster but lacks item 3's op.
  HeteroProblem p;
  p.item_flops = {1, 100, 100, 1};
  p.cut_bytes = {0, 0, 0, 0};
  DeviceClassSpec fast{0.1, 0.1, {1000}, {true, true, true, false}};
  DeviceClassSpec slow{1.0, 0.1, {1000, 1000}, {true, true, true, true}};
  p.classes = {fast, slow};
  p.max_stages = 3;
  p.segment_memory = [](int b, int e) { return uint64_t(e - b); };
  const HeteroSplit split = HeteroChainSplit(p, HeteroObjective::kFastest);
  ASSERT_TRUE(split.feasible);
  // [0, 1) and [3, 4) on slow devices (1 s each), the heavy [1, 3) on the
  // fast one (20 s); at the slow rate they alone would take 100 s each.
  ASSERT_EQ(split.stages.size(), 3u);
  EXPECT_EQ(split.stages[1].device_class, 0);
  EXPECT_EQ(split.stages[1].begin, 1);
  EXPECT_EQ(split.stages[1].end, 3);
  EXPECT_EQ(split.stages[0].device_class, 1);
  EXPECT_EQ(split.stages[2].device_class, 1);
  EXPECT_NEAR(split.bottleneck_seconds, 20.0, 1e-9);
}

TEST(HeteroSplitTest, ReportsTheFirstItemNoPlanPlaces) {
  HeteroProblem p;
  p.item_flops = {1, 1, 1};
  p.cut_bytes = {0, 0, 0};
  // Item 2 is supported only by class 1, whose device is too small for it.
  DeviceClassSpec a{1, 1, {100}, {true, true, false}};
  DeviceClassSpec b{1, 1, {5}, {true, true, true}};
  p.classes = {a, b};
  p.max_stages = 2;
  p.segment_memory = [](int b, int e) { return uint64_t(10 * (e - b)); };
  const HeteroSplit split =
      HeteroChainSplit(p, HeteroObjective::kFewestThenFastest);
  EXPECT_FALSE(split.feasible);
  EXPECT_EQ(split.reachable, 2);
}

TEST(HeteroSplitTest, EmptyChainIsOneEmptyPlan) {
  HeteroProblem p;
  p.classes = {DeviceClassSpec{1, 1, {1}, {}}};
  p.segment_memory = [](int, int) { return uint64_t{0}; };
  const HeteroSplit split = HeteroChainSplit(p, HeteroObjective::kFastest);
  EXPECT_TRUE(split.feasible);
  EXPECT_TRUE(split.stages.empty());
}

}  // namespace
}  // namespace glint
