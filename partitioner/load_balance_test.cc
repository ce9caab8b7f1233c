#include "partitioner/load_balance.h"

#include <algorithm>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace glint {
namespace {

double StageCost(const std::vector<double>& item,
                 const std::vector<double>& cut, int b, int e) {
  double c = b == 0 ? 0 : cut[b];
  for (int i = b; i < e; ++i) c += item[i];
  return c;
}

// Every contiguous split into at most `stages` parts (2^(n-1) of them).
double BruteForce(const std::vector<double>& item,
                  const std::vector<double>& cut, int stages) {
  const int n = static_cast<int>(item.size());
  double best = std::numeric_limits<double>::infinity();
  for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
    if (__builtin_popcount(mask) + 1 > stages) continue;
    double worst = 0;
    int b = 0;
    for (int i = 1; i <= n; ++i) {
      if (i == n || (mask & (1u << (i - 1)))) {
        worst = std::max(worst, StageCost(item, cut, b, i));
        b = i;
      }
    }
    best = std::min(best, worst);
  }
  return best;
}

TEST(LoadBalanceTest, MatchesBruteForceOnRandomChains) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::uniform_int_distribution<int> length(1, 12);
  std::uniform_int_distribution<int> stages(1, 5);
  for (int trial = 0; trial < 500; ++trial) {
    const int n = length(rng);
    std::vector<double> item(n), cut(n);
    for (int i = 0; i < n; ++i) {
      item[i] = cost(rng);
      // Some cuts are cheap, some very expensive: greedy guesses fail here.
      cut[i] = (rng() % 3 == 0) ? 20 * cost(rng) : 0.2 * cost(rng);
    }
    const int k = stages(rng);
    const ChainSplit split = MinMaxContiguousSplit(item, cut, k);
    const double want = BruteForce(item, cut, k);
    EXPECT_NEAR(split.max_stage_cost, want, 1e-9 * std::max(1.0, want))
        << "trial " << trial << " n=" << n << " stages=" << k;
    ASSERT_FALSE(split.stage_starts.empty());
    EXPECT_EQ(split.stage_starts[0], 0);
    EXPECT_LE(static_cast<int>(split.stage_starts.size()), k);
    EXPECT_TRUE(std::is_sorted(split.stage_starts.begin(),
                               split.stage_starts.end()));
  }
}

TEST(LoadBalanceTest, EvenChainSplitsEvenly) {
  const std::vector<double> item(8, 1.0), cut(8, 0.0);
  const ChainSplit split = MinMaxContiguousSplit(item, cut, 4);
  EXPECT_DOUBLE_EQ(split.max_stage_cost, 2.0);
  EXPECT_EQ(split.stage_starts, (std::vector<int>{0, 2, 4, 6}));
}

TEST(LoadBalanceTest, AvoidsAnExpensiveCut) {
  // Cutting before item 2 costs 100: the best 2-stage split cuts elsewhere.
  const std::vector<double> item = {1, 1, 1, 1};
  const std::vector<double> cut = {0, 0, 100, 0};
  const ChainSplit split = MinMaxContiguousSplit(item, cut, 2);
  EXPECT_DOUBLE_EQ(split.max_stage_cost, 3.0);
}

TEST(LoadBalanceTest, OneStageAndEmptyChain) {
  EXPECT_DOUBLE_EQ(MinMaxContiguousSplit({1, 2, 3}, {0, 0, 0}, 1)
                       .max_stage_cost,
                   6.0);
  EXPECT_EQ(MinMaxContiguousSplit({}, {}, 3).stage_starts,
            (std::vector<int>{0}));
}

}  // namespace
}  // namespace glint
