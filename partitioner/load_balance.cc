#include "partitioner/load_balance.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace glint {
namespace {

constexpr int kInfinity = std::numeric_limits<int>::max();

// Prefix minima of (stages, index) over ranks, with point updates.
class MinFenwick {
 public:
  explicit MinFenwick(int n) : tree_(n + 1, {kInfinity, -1}) {}
  void Update(int rank, std::pair<int, int> value) {
    for (int i = rank + 1; i < static_cast<int>(tree_.size()); i += i & -i) {
      tree_[i] = std::min(tree_[i], value);
    }
  }
  // Minimum over ranks [0, rank].
  std::pair<int, int> Query(int rank) const {
    std::pair<int, int> best{kInfinity, -1};
    for (int i = rank + 1; i > 0; i -= i & -i) best = std::min(best, tree_[i]);
    return best;
  }

 private:
  std::vector<std::pair<int, int>> tree_;
};

// Fewest stages covering the chain with every stage costing at most
// `bound`, and where each stage starts (back-pointers); kInfinity if none.
// A stage [i, j) fits when prefix[j] - prefix[i] + cut[i] <= bound, i.e.
// key(i) = prefix[i] - cut[i] >= prefix[j] - bound.
int FewestStages(const std::vector<double>& prefix,
                 const std::vector<double>& cut, double bound,
                 std::vector<int>* from) {
  const int n = static_cast<int>(prefix.size()) - 1;
  std::vector<double> key(n);
  for (int i = 0; i < n; ++i) key[i] = prefix[i] - cut[i];
  // Ranks by key, descending, so "key >= threshold" is a prefix of ranks.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return key[a] > key[b]; });
  std::vector<int> rank(n);
  std::vector<double> sorted_keys(n);
  for (int r = 0; r < n; ++r) {
    rank[order[r]] = r;
    sorted_keys[r] = key[order[r]];
  }
  MinFenwick fenwick(n);
  std::vector<int> stages(n + 1, kInfinity);
  from->assign(n + 1, -1);
  stages[0] = 0;
  fenwick.Update(rank[0], {0, 0});
  for (int j = 1; j <= n; ++j) {
    const double threshold = prefix[j] - bound;
    // Ranks whose key >= threshold: [0, last).
    const int last = static_cast<int>(
        std::upper_bound(sorted_keys.begin(), sorted_keys.end(), threshold,
                         [](double t, double k) { return t > k; }) -
        sorted_keys.begin());
    if (last > 0) {
      const std::pair<int, int> best = fenwick.Query(last - 1);
      if (best.first != kInfinity) {
        stages[j] = best.first + 1;
        (*from)[j] = best.second;
      }
    }
    if (j < n && stages[j] != kInfinity) {
      fenwick.Update(rank[j], {stages[j], j});
    }
  }
  return stages[n];
}

}  // namespace

ChainSplit MinMaxContiguousSplit(const std::vector<double>& item_cost,
                                 const std::vector<double>& cut_cost,
                                 int max_stages) {
  const int n = static_cast<int>(item_cost.size());
  ChainSplit split;
  if (n == 0 || max_stages <= 1) {
    split.stage_starts = {0};
    split.max_stage_cost = std::accumulate(item_cost.begin(), item_cost.end(),
                                           0.0);
    return split;
  }
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + item_cost[i];
  std::vector<double> cut(cut_cost.begin(), cut_cost.end());
  cut.resize(n, 0);
  cut[0] = 0;

  // One stage costs prefix[n]: always feasible. Search (lo, hi].
  double lo = 0, hi = prefix[n];
  std::vector<int> from;
  for (int iter = 0; iter < 200 && hi - lo > 1e-12 * std::max(hi, 1e-300);
       ++iter) {
    const double mid = lo + (hi - lo) / 2;
    if (FewestStages(prefix, cut, mid, &from) <= max_stages) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  FewestStages(prefix, cut, hi, &from);
  std::vector<int> starts;
  for (int j = n; j > 0; j = from[j]) starts.push_back(from[j]);
  std::reverse(starts.begin(), starts.end());
  split.stage_starts = starts;
  double worst = 0;
  for (size_t s = 0; s < starts.size(); ++s) {
    const int b = starts[s];
    const int e = s + 1 < starts.size() ? starts[s + 1] : n;
    worst = std::max(worst, prefix[e] - prefix[b] + cut[b]);
  }
  split.max_stage_cost = worst;
  return split;
}

}  // namespace glint
