#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/cli.h"
#include "client/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunCli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunGlintCli(args, out, err);
  return {code, out.str(), err.str()};
}

void ExpectOneLineError(const Result& r, int code, const std::string& needle) {
  EXPECT_EQ(r.code, code);
  EXPECT_THAT(r.err, StartsWith("glint: error: "));
  EXPECT_THAT(r.err, HasSubstr(needle));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// `glint devices`: the peak since start when glintd sends it (an older
// one does not: then nothing is said of it).
TEST(FormatTest, DevicePrintsItsPeakWhenKnown) {
  DeviceInfo d;
  d.id = 0;
  d.name = "sim:0";
  d.type = "sim";
  d.memory_bytes = uint64_t{2} << 30;
  d.available_memory_bytes = uint64_t{1} << 30;
  EXPECT_THAT(FormatDevice(d), Not(HasSubstr("since start")));
  d.peak_used_memory_bytes = uint64_t{3} << 20;
  EXPECT_THAT(FormatDevice(d), HasSubstr("at most 3 MiB in use since start"));
  EXPECT_THAT(FormatDevice(d), Not(HasSubstr("reserved")));
  d.launch_reserved_bytes = uint64_t{5} << 20;
  EXPECT_THAT(FormatDevice(d),
              HasSubstr("5 MiB of it reserved for launches' run-time values"));
}

TEST(CliTest, UsageErrorsExit2WithoutContactingAServer) {
  ExpectOneLineError(RunCli({}), 2, "INVALID_ARGUMENT: no command given");
  ExpectOneLineError(RunCli({"frobnicate"}), 2, "unknown command 'frobnicate'");
  ExpectOneLineError(RunCli({"show"}), 2, "expected: glint show NAME");
  ExpectOneLineError(RunCli({"run", "n", "--bogus", "1"}), 2,
                     "unknown option --bogus");
  ExpectOneLineError(RunCli({"add", "n", "m.onnx", "--input_shape", "x=1,a"}), 2,
                     "bad dimension 'a'");
  ExpectOneLineError(RunCli({"--timeout=soon", "list"}), 2, "bad duration");
  ExpectOneLineError(RunCli({"list", "--server"}), 2, "needs a value");
  // Batching options are checked before the model is read.
  ExpectOneLineError(
      RunCli({"add", "n", "m.onnx", "--max_batch_size", "eight"}), 2,
      "bad --max_batch_size 'eight'");
  ExpectOneLineError(RunCli({"add", "n", "m.onnx", "--max_batch_size", "8",
                             "--max_queue_delay_us", "-5"}),
                     2, "bad --max_queue_delay_us '-5'");
  ExpectOneLineError(RunCli({"add", "n", "m.onnx", "--max_batch_size", "8",
                             "--preferred_batch_sizes", "4,x"}),
                     2, "bad --preferred_batch_sizes '4,x'");
  ExpectOneLineError(RunCli({"add", "n", "m.onnx", "--max_batch_size", "8",
                             "--preferred_batch_sizes", "4,16"}),
                     2, "preferred batch size 16 is not in 1..max_batch_size");
  ExpectOneLineError(
      RunCli({"add", "n", "m.onnx", "--max_queue_delay_us", "100"}), 2,
      "need a max_batch_size");
  // So is the precision.
  ExpectOneLineError(RunCli({"add", "n", "m.onnx", "--precision", "fp16"}), 2,
                     "precision 'fp16' is not one of: fp32 (the default), "
                     "bf16");
}

TEST(FormatTest, NetworkShowsItsPrecisionWhenNotTheDefault) {
  NetworkInfo info;
  info.name = "cnn";
  EXPECT_THAT(FormatNetwork(info, false),
              ::testing::Not(HasSubstr("precision")));
  info.precision = Precision::kBFloat16;
  EXPECT_THAT(FormatNetwork(info, false), HasSubstr("  precision: bf16 "));
  EXPECT_THAT(FormatNetwork(info, true), HasSubstr("  precision: bf16 "));
}

TEST(FormatTest, PartitionsShowTheirDeviceClassAndWhy) {
  NetworkInfo info;
  info.name = "mlp";
  PartitionInfo p;
  p.name = "p1";
  p.device_class = "sim, 50 GFLOP/s";
  p.placement_reason = "capability: 'sim without Softmax' cannot run ...";
  info.partitions.push_back(p);
  const std::string shown = FormatNetwork(info, true);
  EXPECT_THAT(shown, HasSubstr("    device class: sim, 50 GFLOP/s\n"));
  EXPECT_THAT(shown, HasSubstr("    placed there: capability: 'sim without "
                               "Softmax' cannot run ...\n"));
  EXPECT_THAT(FormatNetwork(info, false),
              ::testing::Not(HasSubstr("placed there")));
}

TEST(FormatTest, PartitionsShowTheMemoryReservedPerExecution) {
  NetworkInfo info;
  info.name = "mlp";
  PartitionInfo p;
  p.name = "p0";
  p.execution_bytes = 3 << 20;
  p.executions = 2;
  info.partitions.push_back(p);
  EXPECT_THAT(FormatNetwork(info, true),
              HasSubstr("    per execution: 3 MiB (inputs and outputs held on "
                        "the device), 2 executions reserved\n"));
  info.partitions[0].executions = 1;
  EXPECT_THAT(FormatNetwork(info, true), HasSubstr(", 1 execution reserved\n"));
  // Static shapes: nothing at the bounds to show.
  EXPECT_THAT(FormatNetwork(info, true),
              ::testing::Not(HasSubstr("at the bounds")));
  info.partitions[0].launch_bytes = 12 << 20;
  EXPECT_THAT(FormatNetwork(info, true),
              HasSubstr("    at the bounds: 12 MiB of run-time values per "
                        "launch (reserved)\n"));
  info.partitions[0].unsized_values = 7;
  EXPECT_THAT(FormatNetwork(info, true),
              HasSubstr("(reserved), 7 values no bound sizes (allocated per "
                        "run)\n"));
}

TEST(FormatTest, NetworkShowsItsBatching) {
  NetworkInfo info;
  info.name = "cnn";
  EXPECT_THAT(FormatNetwork(info, false), ::testing::Not(HasSubstr("batching")));
  info.batching.max_batch_size = 8;
  info.batching.max_queue_delay = absl::Microseconds(500);
  info.batching.preferred_batch_sizes = {4, 8};
  EXPECT_THAT(FormatNetwork(info, false),
              HasSubstr("batching: up to 8 rows, queue delay 500us, "
                        "preferred sizes 4,8\n"));
}

TEST(CliTest, FileErrorsComeBeforeTheServer) {
  ExpectOneLineError(RunCli({"add", "n", "/nonexistent/m.onnx"}), 1,
                     "NOT_FOUND: cannot read '/nonexistent/m.onnx'");
  ExpectOneLineError(RunCli({"run", "n", "--input", "x=/nonexistent/x.npy"}), 1,
                     "NOT_FOUND");
}

TEST(CliTest, ServerDownIsUnavailableQuickly) {
  // Port 1 on loopback is essentially never listening.
  ExpectOneLineError(
      RunCli({"--server=127.0.0.1:1", "--connect_timeout=500ms", "list"}), 1,
      "UNAVAILABLE: cannot connect to glintd at 127.0.0.1:1");
}

TEST(CliTest, SecurityOptionErrorsComeBeforeTheServer) {
  ExpectOneLineError(RunCli({"--token_file=/nonexistent/token", "list"}), 1,
                     "NOT_FOUND: --token_file: cannot read '/nonexistent/token'");
  ExpectOneLineError(RunCli({"--tls_ca=/nonexistent/ca.pem", "list"}), 1,
                     "INVALID_ARGUMENT: --tls_ca: cannot read");
  ExpectOneLineError(RunCli({"--tls_cert=/nonexistent/c.pem", "list"}), 1,
                     "needs its key");
  ExpectOneLineError(RunCli({"--tls_ca=", "list"}), 2, "--tls_ca is empty");
  ExpectOneLineError(RunCli({"list", "--token_file"}), 2, "needs a value");
}

TEST(CliTest, TokenFileWithoutTokenIsRefused) {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/empty_token";
  std::ofstream(path) << "\nsecond line\n";
  ExpectOneLineError(RunCli({"--token_file=" + path, "list"}), 1,
                     "INVALID_ARGUMENT: --token_file: the token file");
}

TEST(CliTest, TlsToAPlaintextOrAbsentServerIsUnavailableWithAHint) {
  ExpectOneLineError(RunCli({"--server=127.0.0.1:1", "--connect_timeout=500ms",
                             "--tls", "list"}),
                     1, "does it serve TLS");
}

TEST(CliTest, Help) {
  Result r = RunCli({"help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: glint"));
}

TEST(CliTest, ErrorsAreOneLine) {
  EXPECT_EQ(FormatCliError(absl::InternalError("a\nb")),
            "glint: error: INTERNAL: a b");
}

TEST(CliTest, SafeFileName) {
  EXPECT_EQ(SafeFileName("probs"), "probs");
  EXPECT_EQ(SafeFileName("layer/1:out"), "layer_1_out");
  EXPECT_EQ(SafeFileName(".."), "_..");
  EXPECT_EQ(SafeFileName(""), "output");
}

TEST(FormatTest, Values) {
  Tensor small = Tensor::FromVector<float>(DType::kFloat32, Shape({3}),
                                           {1, 2.5f, -3});
  EXPECT_EQ(FormatTensorValues(small), "[1, 2.5, -3]");
  std::vector<int32_t> big(100);
  for (int i = 0; i < 100; ++i) big[i] = i;
  Tensor b = Tensor::FromVector<int32_t>(DType::kInt32, Shape({10, 10}), big);
  EXPECT_EQ(FormatTensorValues(b, 4), "[0, 1, ..., 98, 99]");
  Tensor h = Tensor::FromVector<uint16_t>(DType::kFloat16, Shape({2}),
                                          {0x3c00, 0xc000});
  EXPECT_EQ(FormatTensorValues(h), "[1, -2]");
  Tensor bf = Tensor::FromVector<uint16_t>(DType::kBFloat16, Shape({1}),
                                           {0x3fc0});
  EXPECT_EQ(FormatTensorValues(bf), "[1.5]");
  Tensor bo = Tensor::FromVector<uint8_t>(DType::kBool, Shape({2}), {0, 1});
  EXPECT_EQ(FormatTensorValues(bo), "[false, true]");
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(37), "37 B");
  EXPECT_EQ(FormatBytes(512 * 1024 * 1024), "512 MiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 29), "1.5 GiB");
}

TEST(FormatTest, Micros) {
  EXPECT_EQ(FormatMicros(0), "-");
  EXPECT_EQ(FormatMicros(850), "850us");
  EXPECT_EQ(FormatMicros(12345), "12.3ms");
  EXPECT_EQ(FormatMicros(4.2e6), "4.2s");
}

TEST(FormatTest, StatisticsTable) {
  NetworkStatistics n;
  n.name = "resnet";
  n.success_count = 12;
  n.failure_count = 3;
  n.execution_count = 12;
  n.queue_depth = 2;
  n.in_flight = 1;
  n.request = {12, 0, 1500, 25000};
  n.compute_infer = {12, 0, 900, 1200};
  n.partitions.push_back({"p0", "sim:0", {12, 10800000, 900, 1200}});
  DeviceStatistics d;
  d.device.name = "sim:0";
  d.device.memory_bytes = uint64_t{2} << 30;
  d.device.available_memory_bytes = (uint64_t{2} << 30) - (uint64_t{3} << 20);
  d.device.loaded_functions = 1;
  d.compute = {12, 10800000, 900, 1200};
  const std::string brief = FormatStatistics({n}, {d}, /*detailed=*/false);
  const std::vector<std::string> lines = absl::StrSplit(brief, '\n');
  ASSERT_GE(lines.size(), 5u) << brief;
  EXPECT_THAT(lines[0], StartsWith("network"));
  // Columns line up: "ok" sits above "12" in the data row.
  EXPECT_EQ(lines[0].find(" ok "), lines[1].find(" 12 ")) << brief;
  EXPECT_THAT(lines[1], HasSubstr("1.5ms/25ms"));
  EXPECT_THAT(lines[1], HasSubstr("900us/1.2ms"));
  EXPECT_THAT(brief, HasSubstr("3 MiB"));
  EXPECT_THAT(brief, HasSubstr("2 GiB"));
  EXPECT_THAT(brief, Not(HasSubstr("partition")));
  const std::string detailed = FormatStatistics({n}, {d}, /*detailed=*/true);
  EXPECT_THAT(detailed, HasSubstr("  p0"));
  EXPECT_THAT(detailed, HasSubstr("10.8ms"));  // The partition's total.
  EXPECT_THAT(brief, Not(HasSubstr("kernel builds")));
  n.shape_builds = 4;
  n.shape_build_time = absl::Microseconds(2500);
  EXPECT_THAT(FormatStatistics({n}, {d}, false),
              HasSubstr("resnet: 4 kernel builds for shapes first met at run "
                        "time, 2.5ms in all\n"));
  EXPECT_THAT(FormatStatistics({n}, {d}, false), Not(HasSubstr("slot")));
  n.slot_wait = {7, 3'000'000, 100, 900};
  EXPECT_THAT(FormatStatistics({n}, {d}, false),
              HasSubstr("resnet: 7 runs waited for an execution slot (every "
                        "execution its memory is reserved for was running), "
                        "3ms in all\n"));
  EXPECT_EQ(FormatStatistics({}, {}, false), "no networks\n");
}

}  // namespace
}  // namespace glint
