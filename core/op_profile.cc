#include "core/op_profile.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace glint {
namespace {

// Op labels longer than this are cut in the table (with "..."): a kernel
// description may be long, and the figures should stay on one line. Long
// enough for a fused conv with all its traits and oneDNN's implementation
// ("glint.FusedConv[Relu, channels_last, bias, residual] oneDNN
// brgconv:avx512_core", 80).
constexpr size_t kMaxLabel = 96;

bool IsNodeCategory(absl::string_view category) {
  return category == kOpCategory || category == kReorderCategory;
}

// How the table names a row: the kernel when it starts with the op type
// (it then says everything the op type does, and more), else both.
std::string RowLabel(const OpProfileRow& row) {
  std::string label = row.kernel.empty() || row.kernel == row.op_type
                          ? row.op_type
                      : absl::StartsWith(row.kernel, row.op_type)
                          ? row.kernel
                          : absl::StrCat(row.op_type, " (", row.kernel, ")");
  if (row.reorder) label += " (reorder)";
  if (label.size() > kMaxLabel) label = label.substr(0, kMaxLabel - 3) + "...";
  return label;
}

}  // namespace

std::vector<OpSpan> OpSpansFromSlices(const std::vector<TraceSlice>& slices) {
  std::vector<OpSpan> spans;
  for (const TraceSlice& s : slices) {
    if (!IsNodeCategory(s.category)) continue;
    OpSpan span;
    span.reorder = s.category == kReorderCategory;
    for (const auto& [key, value] : s.args) {
      if (key == NodeSliceArgs::kOpType) span.op_type = value;
      if (key == NodeSliceArgs::kKernel) span.kernel = value;
    }
    if (span.kernel.empty()) span.kernel = span.op_type;
    span.duration_us =
        std::max(absl::ToDoubleMicroseconds(s.end - s.begin), 0.0);
    spans.push_back(std::move(span));
  }
  return spans;
}

absl::StatusOr<std::vector<OpSpan>> OpSpansFromChromeJson(
    absl::string_view text) {
  using nlohmann::json;
  // nlohmann::json reports type mismatches by throwing; none escapes here.
  try {
    const json trace = json::parse(text.begin(), text.end(), nullptr,
                                   /*allow_exceptions=*/false);
    if (trace.is_discarded()) {
      return absl::InvalidArgumentError("the trace is not JSON");
    }
    if (!trace.is_object() || !trace.contains("traceEvents") ||
        !trace["traceEvents"].is_array()) {
      return absl::InvalidArgumentError(
          "the trace has no \"traceEvents\" array");
    }
    std::vector<OpSpan> spans;
    for (const json& event : trace["traceEvents"]) {
      if (!event.is_object() || event.value("ph", "") != "X") continue;
      const std::string category = event.value("cat", "");
      if (!IsNodeCategory(category)) continue;
      if (!event.contains("dur") || !event["dur"].is_number()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node event '", event.value("name", ""), "' has no duration"));
      }
      OpSpan span;
      span.reorder = category == kReorderCategory;
      span.duration_us = std::max(event["dur"].get<double>(), 0.0);
      if (event.contains("args") && event["args"].is_object()) {
        const json& args = event["args"];
        span.op_type = args.value(NodeSliceArgs::kOpType, "");
        span.kernel = args.value(NodeSliceArgs::kKernel, "");
      }
      if (span.kernel.empty()) span.kernel = span.op_type;
      spans.push_back(std::move(span));
    }
    return spans;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed trace: ", e.what()));
  }
}

void OpProfileBuilder::Add(const OpSpan& span) {
  Sum& sum = sums_[{span.reorder, span.op_type, span.kernel}];
  ++sum.count;
  sum.total_us += span.duration_us;
}

void OpProfileBuilder::Add(const OpProfileBuilder& other) {
  for (const auto& [key, sum] : other.sums_) {
    Sum& mine = sums_[key];
    mine.count += sum.count;
    mine.total_us += sum.total_us;
  }
}

OpProfile OpProfileBuilder::Build() const {
  OpProfile profile;
  for (const auto& [key, sum] : sums_) {
    OpProfileRow row;
    std::tie(row.reorder, row.op_type, row.kernel) = key;
    row.count = sum.count;
    row.total_us = sum.total_us;
    profile.spans += sum.count;
    profile.total_us += sum.total_us;
    if (row.reorder) {
      profile.reorder_count += sum.count;
      profile.reorder_us += sum.total_us;
    }
    profile.rows.push_back(std::move(row));
  }
  for (OpProfileRow& row : profile.rows) {
    row.share = profile.total_us > 0 ? row.total_us / profile.total_us : 0;
  }
  profile.reorder_share =
      profile.total_us > 0 ? profile.reorder_us / profile.total_us : 0;
  std::sort(profile.rows.begin(), profile.rows.end(),
            [](const OpProfileRow& a, const OpProfileRow& b) {
              if (a.total_us != b.total_us) return a.total_us > b.total_us;
              if (a.op_type != b.op_type) return a.op_type < b.op_type;
              if (a.kernel != b.kernel) return a.kernel < b.kernel;
              return a.reorder < b.reorder;
            });
  return profile;
}

OpProfile AggregateOpProfile(const std::vector<OpSpan>& spans) {
  OpProfileBuilder builder;
  builder.Add(spans);
  return builder.Build();
}

std::string FormatOpProfile(const OpProfile& profile, int top) {
  const size_t shown =
      top > 0 ? std::min(profile.rows.size(), static_cast<size_t>(top))
              : profile.rows.size();
  std::vector<std::string> labels;
  size_t width = 2;
  for (size_t i = 0; i < shown; ++i) {
    labels.push_back(RowLabel(profile.rows[i]));
    width = std::max(width, labels.back().size());
  }
  std::string out =
      absl::StrFormat("%-*s %8s %11s %11s %7s\n", static_cast<int>(width), "op",
                      "count", "total_ms", "mean_us", "share");
  for (size_t i = 0; i < shown; ++i) {
    const OpProfileRow& row = profile.rows[i];
    absl::StrAppendFormat(&out, "%-*s %8d %11.3f %11.1f %6.1f%%\n",
                          static_cast<int>(width), labels[i], row.count,
                          row.total_us / 1000.0, row.mean_us(),
                          100.0 * row.share);
  }
  if (shown < profile.rows.size()) {
    absl::StrAppend(&out, "... and ", profile.rows.size() - shown,
                    " more op/kernel rows\n");
  }
  absl::StrAppendFormat(
      &out, "reorders: %d spans, %.3f ms, %.1f%% of %.3f ms in %d node spans\n",
      profile.reorder_count, profile.reorder_us / 1000.0,
      100.0 * profile.reorder_share, profile.total_us / 1000.0, profile.spans);
  return out;
}

}  // namespace glint
