#include "runtime/server/http/prometheus_metrics.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

// What promtool says of Triton's names, and nothing else may be said:
// they lack `_total`, abbreviate their unit, and two end in `_count` (see
// the header).
bool IsAcceptedLint(const std::string& line) {
  return absl::StartsWith(line, "nv_inference_") &&
         (absl::EndsWith(line,
                         "counter metrics should have \"_total\" suffix") ||
          absl::EndsWith(line,
                         "metric names should not contain abbreviated units") ||
          absl::EndsWith(line, "non-histogram and non-summary metrics should "
                               "not have \"_count\" suffix"));
}

struct PromtoolResult {
  int exit_code = -1;
  std::vector<std::string> lines;
};

// `promtool check metrics` (Debian's `prometheus` package) on `page`.
PromtoolResult Promtool(const std::string& page) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                        "/metrics_", ::getpid(), ".txt");
  std::ofstream(path) << page;
  PromtoolResult result;
  FILE* out =
      popen(absl::StrCat("/usr/bin/promtool check metrics < '", path,
                         "' 2>&1")
                .c_str(),
            "r");
  if (out == nullptr) return result;
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), out)) > 0;) {
    text.append(buf, n);
  }
  const int status = pclose(out);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    result.lines.emplace_back(line);
  }
  return result;
}

std::vector<NetworkStatistics> TwoNetworks() {
  NetworkStatistics mlp;
  mlp.name = "mlp";
  mlp.success_count = 5;
  mlp.failure_count = 2;
  mlp.inference_count = 7;
  mlp.execution_count = 4;
  mlp.request = {5, 2'500'999, 400, 900};  // 2500.999 us -> 2500.
  mlp.queue = {5, 10'000, 1, 3};
  mlp.compute_input = {5, 20'000, 2, 6};
  mlp.compute_infer = {5, 1'000'000, 150, 300};
  mlp.compute_output = {5, 30'000, 4, 9};
  mlp.queue_depth = 3;
  mlp.in_flight = 1;
  mlp.shape_builds = 6;
  mlp.shape_build_time = absl::Milliseconds(1250);
  mlp.slot_wait = {3, 750'000'000, 200'000, 300'000};
  mlp.partitions = {{"p0", "sim:0", {4, 600'000'000, 150, 160}},
                    {"p1", "sim:1", {4, 4'000, 100, 110}}};
  NetworkStatistics hostile;  // A user's name with every special byte.
  hostile.name = "a\"b\\c\nd \xff\xc3\xa9";
  hostile.success_count = 1;
  hostile.partitions = {{"p\"0", "sim:0", {1, 1500, 1, 1}}};
  return {mlp, hostile};
}

std::vector<DeviceStatistics> TwoDevices() {
  DeviceInfo a;
  a.id = 0;
  a.name = "sim:0";
  a.memory_bytes = 2 * kGiB;
  a.available_memory_bytes = 2 * kGiB - 3 * kMiB;
  a.peak_used_memory_bytes = 5 * kMiB;
  a.launch_reserved_bytes = 2 * kMiB;
  a.loaded_functions = 2;
  a.launches_running = 1;
  DeviceInfo b = a;
  b.id = 1;
  b.name = "sim:1";
  b.available_memory_bytes = 2 * kGiB;
  b.loaded_functions = 0;
  b.launches_running = 0;
  b.unhealthy_reason = "died at launch 100";
  return {{a, {8, 1'250'000'000, 150, 160}}, {b, {}}};
}

TEST(EscapeLabelValueTest, EscapesTheThreeSpecialCharacters) {
  EXPECT_EQ(EscapeLabelValue("plain-name_1.0"), "plain-name_1.0");
  EXPECT_EQ(EscapeLabelValue("a\"b"), "a\\\"b");
  EXPECT_EQ(EscapeLabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeLabelValue("a\nb"), "a\\nb");
  EXPECT_EQ(EscapeLabelValue(""), "");
}

TEST(EscapeLabelValueTest, KeepsUtf8AndReplacesWhatIsNot) {
  const std::string valid = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(EscapeLabelValue(valid), valid);
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(EscapeLabelValue("\xff"), fffd);
  EXPECT_EQ(EscapeLabelValue("a\xc0\x80z"), "a" + fffd + fffd + "z");  // Overlong.
  EXPECT_EQ(EscapeLabelValue("\xed\xa0\x80"), fffd + fffd + fffd);  // Surrogate.
  EXPECT_EQ(EscapeLabelValue("\xf4\x90\x80\x80"),
            fffd + fffd + fffd + fffd);  // Past U+10FFFF.
  EXPECT_EQ(EscapeLabelValue("x\xe2\x82"), "x" + fffd + fffd);  // Truncated.
}

TEST(PrometheusMetricsTest, TritonFamiliesPerModel) {
  const std::string page = PrometheusMetricsText(TwoNetworks(), TwoDevices());
  for (const char* line : {
           "nv_inference_request_success{model=\"mlp\",version=\"1\"} 5\n",
           "nv_inference_request_failure{model=\"mlp\",version=\"1\"} 2\n",
           // Successful inferences, as Triton counts (not the 7 answered).
           "nv_inference_count{model=\"mlp\",version=\"1\"} 5\n",
           "nv_inference_exec_count{model=\"mlp\",version=\"1\"} 4\n",
           "nv_inference_request_duration_us{model=\"mlp\",version=\"1\"} 2500\n",
           "nv_inference_queue_duration_us{model=\"mlp\",version=\"1\"} 10\n",
           "nv_inference_compute_input_duration_us{model=\"mlp\",version=\"1\"} 20\n",
           "nv_inference_compute_infer_duration_us{model=\"mlp\",version=\"1\"} 1000\n",
           "nv_inference_compute_output_duration_us{model=\"mlp\",version=\"1\"} 30\n",
           "glint_queue_depth{model=\"mlp\",version=\"1\"} 3\n",
           "glint_runs_in_flight{model=\"mlp\",version=\"1\"} 1\n",
           "glint_shape_builds_total{model=\"mlp\",version=\"1\"} 6\n",
           "glint_shape_build_seconds_total{model=\"mlp\",version=\"1\"} "
           "1.25\n",
           "glint_slot_waits_total{model=\"mlp\",version=\"1\"} 3\n",
           "glint_slot_wait_seconds_total{model=\"mlp\",version=\"1\"} "
           "0.75\n",
       }) {
    EXPECT_THAT(page, HasSubstr(line));
  }
  EXPECT_THAT(page, HasSubstr("# TYPE nv_inference_request_success counter\n"));
  EXPECT_THAT(page, HasSubstr("# TYPE glint_queue_depth gauge\n"));
}

TEST(PrometheusMetricsTest, PartitionsAndDevices) {
  const std::string page = PrometheusMetricsText(TwoNetworks(), TwoDevices());
  for (const char* line : {
           "glint_partition_executions_total{model=\"mlp\",partition=\"p0\","
           "device=\"sim:0\"} 4\n",
           "glint_partition_compute_seconds_total{model=\"mlp\",partition="
           "\"p0\",device=\"sim:0\"} 0.6\n",
           "glint_partition_compute_seconds_total{model=\"mlp\",partition="
           "\"p1\",device=\"sim:1\"} 4e-06\n",
           "glint_device_memory_total_bytes{device=\"sim:0\"} 2147483648\n",
           "glint_device_memory_used_bytes{device=\"sim:0\"} 3145728\n",
           "glint_device_memory_used_bytes{device=\"sim:1\"} 0\n",
           "glint_device_memory_peak_bytes{device=\"sim:0\"} 5242880\n",
           "glint_device_launch_reserved_bytes{device=\"sim:0\"} 2097152\n",
           "glint_device_loaded_partitions{device=\"sim:0\"} 2\n",
           "glint_device_launches_running{device=\"sim:0\"} 1\n",
           "glint_device_launches_running{device=\"sim:1\"} 0\n",
           "glint_device_healthy{device=\"sim:0\"} 1\n",
           "glint_device_healthy{device=\"sim:1\"} 0\n",
           "glint_device_executions_total{device=\"sim:0\"} 8\n",
           "glint_device_compute_seconds_total{device=\"sim:0\"} 1.25\n",
           "glint_device_compute_seconds_total{device=\"sim:1\"} 0\n",
       }) {
    EXPECT_THAT(page, HasSubstr(line));
  }
}

TEST(PrometheusMetricsTest, UserNamesAreEscaped) {
  const std::string page = PrometheusMetricsText(TwoNetworks(), TwoDevices());
  EXPECT_THAT(page, HasSubstr("nv_inference_request_success{model=\"a\\\"b\\\\"
                              "c\\nd \xef\xbf\xbd\xc3\xa9\",version=\"1\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("partition=\"p\\\"0\""));
  // No raw line break inside a sample: every line is a comment or a sample
  // of a known family.
  for (absl::string_view line : absl::StrSplit(page, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "# ") ||
                absl::StartsWith(line, "nv_inference_") ||
                absl::StartsWith(line, "glint_"))
        << line;
  }
}

TEST(PrometheusMetricsTest, EachFamilyDescribedOnceBeforeItsSamples) {
  const std::string page = PrometheusMetricsText(TwoNetworks(), TwoDevices());
  std::vector<std::string> typed;
  for (absl::string_view line : absl::StrSplit(page, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      const std::vector<std::string> parts = absl::StrSplit(line, ' ');
      ASSERT_EQ(parts.size(), 4u) << line;
      for (const std::string& t : typed) EXPECT_NE(t, parts[2]) << line;
      typed.push_back(parts[2]);
    } else if (!absl::StartsWith(line, "# HELP ")) {
      ASSERT_FALSE(typed.empty()) << line;
      // A sample belongs to the family most recently typed.
      EXPECT_TRUE(absl::StartsWith(line, typed.back() + "{")) << line;
    }
  }
  EXPECT_EQ(typed.size(), 26u);
}

TEST(PrometheusMetricsTest, PromtoolAcceptsThePage) {
  for (const auto& [networks, devices] :
       {std::make_pair(TwoNetworks(), TwoDevices()),
        std::make_pair(std::vector<NetworkStatistics>{},
                       std::vector<DeviceStatistics>{})}) {
    const PromtoolResult r = Promtool(PrometheusMetricsText(networks, devices));
    // 0: clean; 3: lint remarks only (1 would be a format error).
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.exit_code;
    for (const std::string& line : r.lines) {
      EXPECT_TRUE(IsAcceptedLint(line)) << line;
    }
  }
}

TEST(PrometheusMetricsTest, PromtoolCatchesABrokenPage) {
  // The check above can fail: an unescaped quote is a format error.
  const PromtoolResult r =
      Promtool("# TYPE glint_x gauge\nglint_x{model=\"a\"b\"} 1\n");
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace glint
