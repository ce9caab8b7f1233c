#include "partitioner/hetero_split.h"

#include <algorithm>
#include <limits>
#include <map>

namespace glint {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();
// Reach tables above this many cells (states × positions) are not tried.
constexpr int64_t kMaxCells = int64_t{1} << 26;

class Solver {
 public:
  Solver(const HeteroProblem& p, int max_stages)
      : p_(p), n_(static_cast<int>(p.item_flops.size())) {
    prefix_.assign(n_ + 1, 0);
    for (int i = 0; i < n_; ++i) prefix_[i + 1] = prefix_[i] + p.item_flops[i];
    const int g_count = static_cast<int>(p.classes.size());
    limit_.resize(g_count);
    stride_.resize(g_count);
    int64_t states = 1;
    for (int g = 0; g < g_count; ++g) {
      limit_[g] = std::min<int>(static_cast<int>(p.classes[g].capacities.size()),
                                std::max(max_stages, 0));
      stride_[g] = static_cast<int>(states);
      states *= limit_[g] + 1;
      if (states * (n_ + 2) > kMaxCells) {
        too_large_ = true;
        return;
      }
    }
    states_ = static_cast<int>(states);
    support_end_.resize(g_count);
    for (int g = 0; g < g_count; ++g) {
      std::vector<int>& end = support_end_[g];
      end.assign(n_ + 1, n_);
      for (int i = n_ - 1; i >= 0; --i) {
        end[i] = p.classes[g].supported[i] ? end[i + 1] : i;
      }
    }
  }

  bool too_large() const { return too_large_; }
  int states() const { return states_; }

  int Digit(int state, int g) const {
    return (state / stride_[g]) % (limit_[g] + 1);
  }
  int Total(int state) const {
    int t = 0;
    for (size_t g = 0; g < limit_.size(); ++g) t += Digit(state, g);
    return t;
  }

  double Cost(int g, int i, int j) const {
    const DeviceClassSpec& c = p_.classes[g];
    return (prefix_[j] - prefix_[i]) * c.seconds_per_flop +
           (i > 0 ? p_.cut_bytes[i] * c.seconds_per_byte : 0.0);
  }

  // Per start i, the largest end j such that [i, j) fits in `capacity`.
  const std::vector<int>& MemoryEnds(uint64_t capacity) {
    auto it = memory_end_.find(capacity);
    if (it == memory_end_.end()) {
      std::vector<int> end(n_ + 1, n_);
      if (n_ > 0 && p_.segment_memory(0, n_) > capacity) {
        // Two pointers: the end cannot move left as the start moves right.
        int j = 0;
        for (int b = 0; b < n_; ++b) {
          j = std::max(j, b);
          while (j < n_ && p_.segment_memory(b, j + 1) <= capacity) ++j;
          end[b] = j;
        }
      }
      it = memory_end_.emplace(capacity, std::move(end)).first;
    }
    return it->second;
  }

  // The largest j in [i, hard] with Cost(g, i, j) <= bound (i if none).
  int CostEnd(int g, int i, int hard, double bound) const {
    if (bound == kUnbounded || Cost(g, i, hard) <= bound) return hard;
    int lo = i, hi = hard - 1;  // Answer in [lo, hi]; Cost(i, lo) "fits".
    while (lo < hi) {
      const int mid = lo + (hi - lo + 1) / 2;
      if (Cost(g, i, mid) <= bound) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  int End(int g, int k, int i, double bound) {
    return End(g, i, bound, MemoryEnds(p_.classes[g].capacities[k]));
  }
  int End(int g, int i, double bound, const std::vector<int>& memory_end) {
    const int hard = std::min(support_end_[g][i], memory_end[i]);
    if (hard <= i) return i;
    return CostEnd(g, i, hard, bound);
  }

  // Fills reach_ for stage costs at most `bound`; returns the state with
  // the fewest stages that covers the whole chain, or -1.
  int Probe(double bound, int max_total) {
    reach_.assign(states_, {});
    std::vector<std::vector<int>> diff(states_);
    int best = -1;
    for (int s = 0; s < states_; ++s) {
      std::vector<char>& reach = reach_[s];
      if (s == 0) {
        reach.assign(n_ + 1, 0);
        reach[0] = 1;
      } else if (diff[s].empty()) {
        continue;
      } else {
        reach.assign(n_ + 1, 0);
        int running = 0;
        for (int i = 0; i <= n_; ++i) {
          running += diff[s][i];
          reach[i] = running > 0;
        }
        diff[s].clear();
        diff[s].shrink_to_fit();
      }
      const int total = Total(s);
      if (reach[n_] && (best < 0 || total < Total(best))) best = s;
      if (total >= max_total) continue;
      for (size_t g = 0; g < limit_.size(); ++g) {
        const int k = Digit(s, g);
        if (k >= limit_[g]) continue;
        std::vector<int>& next = diff[s + stride_[g]];
        const std::vector<int>& memory_end =
            MemoryEnds(p_.classes[g].capacities[k]);
        for (int i = 0; i < n_; ++i) {
          if (!reach[i]) continue;
          const int end = End(g, i, bound, memory_end);
          if (end <= i) continue;
          if (next.empty()) next.assign(n_ + 2, 0);
          ++next[i + 1];
          --next[end + 1];
        }
      }
    }
    return best;
  }

  // The furthest prefix any state reaches (after a Probe).
  int Furthest() const {
    int far = 0;
    for (const std::vector<char>& reach : reach_) {
      for (int i = static_cast<int>(reach.size()) - 1; i > far; --i) {
        if (reach[i]) {
          far = i;
          break;
        }
      }
    }
    return far;
  }

  // The stages leading to `state` covering the chain (after a Probe).
  std::vector<HeteroStage> Stages(int state, double bound) {
    std::vector<HeteroStage> stages;
    int j = n_;
    while (j > 0) {
      bool found = false;
      for (size_t g = 0; g < limit_.size() && !found; ++g) {
        const int k = Digit(state, g) - 1;
        if (k < 0) continue;
        const int prev = state - stride_[g];
        if (reach_[prev].empty()) continue;
        for (int i = j - 1; i >= 0; --i) {
          if (reach_[prev][i] && End(g, k, i, bound) >= j) {
            stages.push_back({i, j, static_cast<int>(g), k, Cost(g, i, j)});
            state = prev;
            j = i;
            found = true;
            break;
          }
        }
      }
      if (!found) return {};  // Cannot happen after a successful Probe.
    }
    std::reverse(stages.begin(), stages.end());
    return stages;
  }

 private:
  const HeteroProblem& p_;
  const int n_;
  bool too_large_ = false;
  int states_ = 0;
  std::vector<double> prefix_;
  std::vector<int> limit_;   // Devices usable per class.
  std::vector<int> stride_;  // Mixed-radix state encoding.
  std::vector<std::vector<int>> support_end_;  // [g][i]: first unsupported.
  std::map<uint64_t, std::vector<int>> memory_end_;  // By capacity.
  std::vector<std::vector<char>> reach_;             // [state][prefix].
};

double Bottleneck(const std::vector<HeteroStage>& stages) {
  double worst = 0;
  for (const HeteroStage& s : stages) worst = std::max(worst, s.seconds);
  return worst;
}

HeteroSplit Search(const HeteroProblem& problem, Solver& solver,
                   int max_stages) {
  HeteroSplit split;
  int state = solver.Probe(kUnbounded, max_stages);
  if (state < 0) {
    split.reachable = solver.Furthest();
    return split;
  }
  std::vector<HeteroStage> stages = solver.Stages(state, kUnbounded);
  double lo = 0, hi = Bottleneck(stages);
  for (int iter = 0; iter < 200 && hi - lo > 1e-12 * std::max(hi, 1e-300);
       ++iter) {
    const double mid = lo + (hi - lo) / 2;
    if (solver.Probe(mid, max_stages) >= 0) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  state = solver.Probe(hi, max_stages);
  if (state >= 0) {
    std::vector<HeteroStage> best = solver.Stages(state, hi);
    if (!best.empty() && Bottleneck(best) <= Bottleneck(stages)) {
      stages = std::move(best);
    }
  }
  split.feasible = true;
  split.bottleneck_seconds = Bottleneck(stages);
  split.stages = std::move(stages);
  split.reachable = static_cast<int>(problem.item_flops.size());
  return split;
}

}  // namespace

HeteroSplit HeteroChainSplit(const HeteroProblem& problem,
                             HeteroObjective objective) {
  const int n = static_cast<int>(problem.item_flops.size());
  if (n == 0) {
    HeteroSplit split;
    split.feasible = true;
    return split;
  }
  Solver solver(problem, problem.max_stages);
  if (solver.too_large()) {
    HeteroSplit split;
    split.too_large = true;
    return split;
  }
  if (objective == HeteroObjective::kFastest) {
    return Search(problem, solver, problem.max_stages);
  }
  // The fewest stages first (no bound on cost), then the fastest with
  // that many at most.
  const int state = solver.Probe(kUnbounded, problem.max_stages);
  if (state < 0) {
    HeteroSplit split;
    split.reachable = solver.Furthest();
    return split;
  }
  return Search(problem, solver, solver.Total(state));
}

}  // namespace glint
