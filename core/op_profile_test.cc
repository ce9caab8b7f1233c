#include "core/op_profile.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/trace.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

// A finished node slice of `us` microseconds.
TraceSlice Node(const std::string& name, const std::string& op_type,
                const std::string& kernel, int us,
                const char* category = kOpCategory) {
  static absl::Time next = absl::UnixEpoch() + absl::Seconds(1);
  TraceSlice s;
  s.name = name;
  s.category = category;
  s.process = 1;
  s.process_name = "sim:0";
  s.thread_name = "stream 0";
  s.begin = next;
  s.end = next + absl::Microseconds(us);
  next = s.end + absl::Microseconds(1);
  s.args = {{NodeSliceArgs::kOpType, op_type},
            {NodeSliceArgs::kKernel, kernel},
            {NodeSliceArgs::kInputs, "float32[1,2]"},
            {NodeSliceArgs::kOutputs, "float32[1,2]"}};
  return s;
}

// Two runs' worth of a small conv net, plus slices that are not nodes.
std::vector<TraceSlice> TwoRuns() {
  std::vector<TraceSlice> slices;
  for (int run = 0; run < 2; ++run) {
    TraceSlice partition;
    partition.name = "partition p0";
    partition.category = "compute";
    partition.begin = absl::UnixEpoch();
    partition.end = absl::UnixEpoch() + absl::Seconds(1);
    slices.push_back(partition);
    slices.push_back(
        Node("x__to_nhwc", "Transpose", "Transpose", 10, kReorderCategory));
    slices.push_back(Node("conv", "glint.FusedConv",
                          "glint.FusedConv[Relu, channels_last] oneDNN jit",
                          300));
    slices.push_back(
        Node("y__to_nchw", "Transpose", "Transpose", 20, kReorderCategory));
    slices.push_back(Node("t", "Transpose", "Transpose", 40));
    slices.push_back(Node("mm", "MatMul", "MatMul RowGemm", 130));
  }
  return slices;
}

TEST(OpProfileTest, SumsByOpAndKernelKeepingReordersApart) {
  const OpProfile p = AggregateOpProfile(OpSpansFromSlices(TwoRuns()));
  EXPECT_EQ(p.spans, 10);
  EXPECT_DOUBLE_EQ(p.total_us, 2 * (10 + 300 + 20 + 40 + 130));
  ASSERT_EQ(p.rows.size(), 4u);
  EXPECT_EQ(p.rows[0].op_type, "glint.FusedConv");
  EXPECT_EQ(p.rows[0].kernel,
            "glint.FusedConv[Relu, channels_last] oneDNN jit");
  EXPECT_EQ(p.rows[0].count, 2);
  EXPECT_DOUBLE_EQ(p.rows[0].total_us, 600);
  EXPECT_DOUBLE_EQ(p.rows[0].mean_us(), 300);
  EXPECT_DOUBLE_EQ(p.rows[0].share, 600.0 / 1000.0);
  EXPECT_EQ(p.rows[1].kernel, "MatMul RowGemm");
  // The reorders are one row, apart from the model's own Transpose.
  EXPECT_EQ(p.rows[2].op_type, "Transpose");
  EXPECT_FALSE(p.rows[2].reorder);
  EXPECT_EQ(p.rows[2].count, 2);
  EXPECT_DOUBLE_EQ(p.rows[2].total_us, 80);
  EXPECT_EQ(p.rows[3].op_type, "Transpose");
  EXPECT_TRUE(p.rows[3].reorder);
  EXPECT_EQ(p.rows[3].count, 4);
  EXPECT_DOUBLE_EQ(p.rows[3].total_us, 60);
  EXPECT_EQ(p.reorder_count, 4);
  EXPECT_DOUBLE_EQ(p.reorder_us, 60);
  EXPECT_DOUBLE_EQ(p.reorder_share, 0.06);
}

TEST(OpProfileTest, ChromeJsonGivesWhatTheSlicesGive) {
  RunTrace trace;
  for (TraceSlice& s : TwoRuns()) trace.AddSlice(std::move(s));
  const std::string json = trace.ToChromeJson();
  EXPECT_TRUE(absl::StrContains(json, "\"args\": {\"op_type\": \"MatMul\""))
      << json;
  absl::StatusOr<std::vector<OpSpan>> spans = OpSpansFromChromeJson(json);
  ASSERT_TRUE(spans.ok()) << spans.status();
  const OpProfile from_json = AggregateOpProfile(*spans);
  const OpProfile from_slices =
      AggregateOpProfile(OpSpansFromSlices(trace.Slices()));
  ASSERT_EQ(from_json.rows.size(), from_slices.rows.size());
  for (size_t i = 0; i < from_json.rows.size(); ++i) {
    EXPECT_EQ(from_json.rows[i].kernel, from_slices.rows[i].kernel);
    EXPECT_EQ(from_json.rows[i].reorder, from_slices.rows[i].reorder);
    EXPECT_EQ(from_json.rows[i].count, from_slices.rows[i].count);
    EXPECT_NEAR(from_json.rows[i].total_us, from_slices.rows[i].total_us, 0.01);
  }
}

TEST(OpProfileTest, BuilderAddsRunByRun) {
  OpProfileBuilder builder;
  const std::vector<OpSpan> spans = OpSpansFromSlices(TwoRuns());
  builder.Add(std::vector<OpSpan>(spans.begin(), spans.begin() + 5));
  builder.Add(std::vector<OpSpan>(spans.begin() + 5, spans.end()));
  const OpProfile p = builder.Build();
  EXPECT_EQ(p.spans, 10);
  EXPECT_EQ(p.rows[0].count, 2);
}

TEST(OpProfileTest, TraceWithoutNodesIsAnEmptyProfile) {
  RunTrace trace;
  TraceSlice copy;
  copy.name = "copy x host->device";
  copy.category = "copy";
  copy.begin = absl::Now();
  copy.end = copy.begin + absl::Microseconds(5);
  trace.AddSlice(copy);
  absl::StatusOr<std::vector<OpSpan>> spans =
      OpSpansFromChromeJson(trace.ToChromeJson());
  ASSERT_TRUE(spans.ok()) << spans.status();
  EXPECT_TRUE(spans->empty());
  const OpProfile p = AggregateOpProfile(*spans);
  EXPECT_EQ(p.spans, 0);
  EXPECT_TRUE(absl::StrContains(FormatOpProfile(p, 15), "reorders: 0 spans"));
}

TEST(OpProfileTest, MalformedTracesAreInvalidArgument) {
  for (const char* bad :
       {"", "not json", "[1, 2]", "{\"traceEvents\": 3}",
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"op\", \"dur\": "
        "\"long\"}]}",
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"op\", \"dur\": 1, "
        "\"args\": {\"op_type\": 7}}]}"}) {
    absl::StatusOr<std::vector<OpSpan>> spans = OpSpansFromChromeJson(bad);
    EXPECT_EQ(spans.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(OpProfileTest, TableShowsTheTopRowsAndTheReorders) {
  const OpProfile p = AggregateOpProfile(OpSpansFromSlices(TwoRuns()));
  const std::string table = FormatOpProfile(p, 2);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n');
  ASSERT_GE(lines.size(), 5u) << table;
  EXPECT_TRUE(absl::StartsWith(lines[0], "op ")) << table;
  EXPECT_TRUE(absl::StrContains(lines[0], "share")) << table;
  // The kernel says more than the op type: it names the row.
  EXPECT_TRUE(absl::StartsWith(
      lines[1], "glint.FusedConv[Relu, channels_last] oneDNN jit"))
      << table;
  EXPECT_TRUE(absl::StrContains(lines[1], "0.600")) << table;  // total_ms
  EXPECT_TRUE(absl::StrContains(lines[1], "300.0")) << table;  // mean_us
  EXPECT_TRUE(absl::StrContains(lines[1], "60.0%")) << table;
  EXPECT_TRUE(absl::StartsWith(lines[2], "MatMul RowGemm")) << table;
  EXPECT_EQ(lines[3], "... and 2 more op/kernel rows") << table;
  EXPECT_EQ(lines[4],
            "reorders: 4 spans, 0.060 ms, 6.0% of 1.000 ms in 10 node spans")
      << table;
  // All rows: the reorder row is marked.
  EXPECT_TRUE(absl::StrContains(FormatOpProfile(p, 0), "Transpose (reorder)"));
}

// A kernel description longer than a line is cut, and says so.
TEST(OpProfileTest, LongLabelsAreCut) {
  OpSpan span;
  span.op_type = "glint.FusedConv";
  span.kernel = "glint.FusedConv" + std::string(200, 'x');
  span.duration_us = 5;
  const std::string table = FormatOpProfile(AggregateOpProfile({span}), 1);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n');
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(lines[1], span.kernel.substr(0, 93) + "... "))
      << table;
}

}  // namespace
}  // namespace glint
