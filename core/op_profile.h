// Per-op profiles: the node slices of profiled runs (RunOptions::profile)
// summed by op type and kernel, as ONNX Runtime's profiler summary and
// Glow's traces give them. The one aggregation behind `glint run --profile`,
// `glint perf --profile`, the C API's profile and the tests; it reads the
// slices of a RunTrace or the Chrome trace JSON a client got back.
#ifndef GLINT_CORE_OP_PROFILE_H_
#define GLINT_CORE_OP_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/trace.h"

namespace glint {

// The slice categories of a profiled run's nodes (TraceSlice::category).
inline constexpr char kOpCategory[] = "op";
inline constexpr char kReorderCategory[] = "reorder";

// One executed node, as a profile counts it.
struct OpSpan {
  std::string op_type;
  // What ran it (NodeSliceArgs::kKernel); the op type when the slice
  // does not say.
  std::string kernel;
  bool reorder = false;  // A layout reorder (category "reorder").
  double duration_us = 0;
};

// The node slices among `slices` (categories "op" and "reorder"); the
// partition, copy, wait and host slices are not nodes and are left out.
std::vector<OpSpan> OpSpansFromSlices(const std::vector<TraceSlice>& slices);

// The same from Chrome trace JSON as RunTrace::ToChromeJson writes it:
// complete ("X") events of those categories, their "dur" and "args".
// INVALID_ARGUMENT for text that is not such a trace (not JSON, no
// "traceEvents" array, a node event without a numeric duration).
absl::StatusOr<std::vector<OpSpan>> OpSpansFromChromeJson(
    absl::string_view text);

// One (op type, kernel) of a profile. Reorders are rows of their own, never
// merged with a model's own Transposes.
struct OpProfileRow {
  std::string op_type;
  std::string kernel;
  bool reorder = false;
  int64_t count = 0;
  double total_us = 0;
  double mean_us() const { return count > 0 ? total_us / count : 0; }
  // Of the profile's total_us, in [0, 1].
  double share = 0;
};

struct OpProfile {
  // By total time, longest first (ties by op type, then kernel).
  std::vector<OpProfileRow> rows;
  int64_t spans = 0;    // Node spans summed.
  double total_us = 0;  // Their time.
  // The reorder rows together.
  int64_t reorder_count = 0;
  double reorder_us = 0;
  double reorder_share = 0;
};

// Sums spans as they come (several runs' traces into one profile).
// Thread-compatible.
class OpProfileBuilder {
 public:
  void Add(const OpSpan& span);
  void Add(const std::vector<OpSpan>& spans) {
    for (const OpSpan& span : spans) Add(span);
  }
  // Everything `other` summed (another level's, another thread's).
  void Add(const OpProfileBuilder& other);
  // The profile of everything added so far.
  OpProfile Build() const;

 private:
  struct Sum {
    int64_t count = 0;
    double total_us = 0;
  };
  // (reorder, op type, kernel) -> its sum.
  std::map<std::tuple<bool, std::string, std::string>, Sum> sums_;
};

// OpProfileBuilder over `spans` at once.
OpProfile AggregateOpProfile(const std::vector<OpSpan>& spans);

// The table the CLI prints: the `top` longest rows (all when top <= 0),
// one line each with the op (its kernel when that says more than the op
// type; "(reorder)" for reorders), count, total ms, mean µs and share,
// then a line with the reorders' total. No trailing summary of the rows
// left out beyond their number.
std::string FormatOpProfile(const OpProfile& profile, int top);

}  // namespace glint

#endif  // GLINT_CORE_OP_PROFILE_H_
