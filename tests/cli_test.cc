// The glint CLI binary against a real glintd: every command's output and
// exit code, files in both input formats, --output-dir, and the one-line
// errors. Ends with the README's example network, checked by its script.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/npy.h"
#include "client/tensor_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/test_models.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;
using testing::CommandResult;
using testing::GlintdProcess;

constexpr char kRelu[] = "/usr/share/libonnx-testdata/data/node/test_relu";

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start({});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(daemon_, nullptr); }

  // Runs `glint --server=<daemon> args...`.
  CommandResult Glint(std::vector<std::string> args,
                      bool with_server = true) {
    std::vector<std::string> argv = {testing::RunfilePath("client/glint")};
    if (with_server) argv.push_back("--server=" + daemon_->address());
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<CommandResult> r = testing::RunCommand(argv, absl::Seconds(30));
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->timed_out) << absl::StrJoin(args, " ");
    return r.ok() ? *r : CommandResult();
  }

  // A failing command: non-zero exit, nothing on stdout, and exactly one
  // line "glint: error: CODE: ..." on stderr.
  void ExpectError(const CommandResult& r, int exit_code,
                   const std::string& code, const std::string& needle) {
    EXPECT_EQ(r.exit_code, exit_code) << r.stderr_text;
    EXPECT_THAT(r.stderr_text, StartsWith("glint: error: " + code + ": "));
    EXPECT_THAT(r.stderr_text, HasSubstr(needle));
    EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1)
        << r.stderr_text;
  }

  static GlintdProcess* daemon_;
};

GlintdProcess* CliTest::daemon_ = nullptr;

TEST_F(CliTest, FullSession) {
  const std::string dir = testing::NewTempDir("cli");

  CommandResult r = Glint({"devices"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  // The default devices: two simulated ones of 2 GiB.
  EXPECT_EQ(std::count(r.stdout_text.begin(), r.stdout_text.end(), '\n'), 2)
      << r.stdout_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("type=sim"));
  EXPECT_THAT(r.stdout_text, HasSubstr("2 GiB"));

  r = Glint({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "no networks\n");

  r = Glint({"add", "relu", std::string(kRelu) + "/model.onnx"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("added network relu"));
  EXPECT_THAT(r.stdout_text, HasSubstr("input  x: float32[3, 4, 5]"));

  r = Glint({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("network relu"));

  r = Glint({"show", "relu"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("output y: float32[3, 4, 5]"));
  EXPECT_THAT(r.stdout_text, HasSubstr("partition "));
  EXPECT_THAT(r.stdout_text, HasSubstr("on device "));

  // .pb input, --output-dir: the written .npy equals the expected output.
  absl::StatusOr<NamedTensor> expected = ReadTensorProtoFile(
      std::string(kRelu) + "/test_data_set_0/output_0.pb");
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::string out_dir = dir + "/out";
  r = Glint({"run", "relu", "--input",
             std::string("x=") + kRelu + "/test_data_set_0/input_0.pb",
             "--output-dir", out_dir});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, StartsWith("y: float32[3, 4, 5]\n  ["));
  EXPECT_THAT(r.stdout_text, HasSubstr(", ..., "));  // 60 values abbreviated.
  absl::StatusOr<Tensor> written = ReadNpyFile(out_dir + "/y.npy");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(testing::CompareTensors(*written, expected->tensor), "");

  // .npy input, unnamed (the network has a single input), --output_dir
  // spelling and --output selection.
  absl::StatusOr<NamedTensor> input = ReadTensorProtoFile(
      std::string(kRelu) + "/test_data_set_0/input_0.pb");
  ASSERT_TRUE(input.ok());
  const std::string npy = dir + "/x.npy";
  ASSERT_TRUE(WriteNpyFile(npy, input->tensor).ok());
  r = Glint({"run", "relu", "--input=" + npy, "--output=y",
             "--output_dir=" + dir + "/out2"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  written = ReadNpyFile(dir + "/out2/y.npy");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(testing::CompareTensors(*written, expected->tensor), "");

  // --trace writes Chrome trace JSON with the partition on a device track.
  const std::string trace = dir + "/trace.json";
  r = Glint({"run", "relu", "--input=" + npy, "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::ifstream trace_file(trace);
  const nlohmann::json json = nlohmann::json::parse(trace_file);
  bool partition_on_device = false, copy_in = false;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] != "X") continue;
    partition_on_device |= e["name"] == "partition p0" && e["pid"] == 1;
    copy_in |= e["name"] == "copy x host->device";
  }
  EXPECT_TRUE(partition_on_device) << json.dump();
  EXPECT_TRUE(copy_in) << json.dump();

  // Statistics: the three runs above, the partition and the devices.
  r = Glint({"stats", "relu"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, StartsWith("network"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("\nrelu +3 +0 +3 +0 +0 "));
  EXPECT_THAT(r.stdout_text, ContainsRegex("\n  p0 +sim:[01] +3 "));
  EXPECT_THAT(r.stdout_text, HasSubstr("\ndevice "));
  ExpectError(Glint({"stats", "absent"}), 1, "NOT_FOUND", "absent");

  // Errors from the server.
  ExpectError(Glint({"add", "relu", std::string(kRelu) + "/model.onnx"}), 1,
              "ALREADY_EXISTS", "relu");
  ExpectError(Glint({"run", "relu", "--input", "wrong=" + npy}), 1,
              "INVALID_ARGUMENT", "wrong");

  r = Glint({"remove", "relu"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "removed network relu\n");
  ExpectError(Glint({"show", "relu"}), 1, "NOT_FOUND", "relu");
  ExpectError(Glint({"remove", "relu"}), 1, "NOT_FOUND", "relu");
}

TEST_F(CliTest, ClientSideErrorsAreOneLine) {
  const std::string dir = testing::NewTempDir("cli_err");
  ExpectError(Glint({"frobnicate"}), 2, "INVALID_ARGUMENT",
              "unknown command 'frobnicate'");
  ExpectError(Glint({}), 2, "INVALID_ARGUMENT", "no command");
  ExpectError(Glint({"show"}), 2, "INVALID_ARGUMENT", "glint show NAME");
  ExpectError(Glint({"add", "m", dir + "/missing.onnx"}), 1, "NOT_FOUND",
              "missing.onnx");
  ExpectError(Glint({"run", "m", "--input", "x=" + dir + "/missing.npy"}), 1,
              "NOT_FOUND", "missing.npy");

  const std::string bad_npy = dir + "/bad.npy";
  std::ofstream(bad_npy) << "definitely not numpy";
  ExpectError(Glint({"run", "m", "--input", "x=" + bad_npy}), 1,
              "INVALID_ARGUMENT", "bad .npy");
  ExpectError(Glint({"run", "m", "--input", "x=" + dir + "/x.csv"}), 1,
              "INVALID_ARGUMENT", "expected .npy or .pb");
}

TEST_F(CliTest, ServerDownIsUnavailableQuickly) {
  // A port nobody listens on: bind-and-release is racy, so use the
  // daemon's address after stopping a second, private daemon.
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string address = (*d)->address();
  ASSERT_TRUE((*d)->Stop(SIGTERM, absl::Seconds(15)).ok());
  const absl::Time start = absl::Now();
  CommandResult r = Glint({"--server=" + address, "--connect_timeout=2s",
                           "list"},
                          /*with_server=*/false);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  ExpectError(r, 1, "UNAVAILABLE", address);
}

// `glint health` asks what Kubernetes' gRPC probes ask: the overall status
// and the liveness service are SERVING; a service glintd does not know is
// NOT_FOUND (exit 1).
// --repeat runs the network again and again on one channel and holds every
// answer to the first.
TEST_F(CliTest, RepeatHoldsEveryAnswerToTheFirst) {
  ASSERT_EQ(
      Glint({"add", "relu_rep", std::string(kRelu) + "/model.onnx"}).exit_code,
      0);
  const std::string input =
      std::string("x=") + kRelu + "/test_data_set_0/input_0.pb";
  CommandResult r =
      Glint({"run", "relu_rep", "--input", input, "--repeat", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              HasSubstr("20 runs, every one answered as the first\n"));
  ExpectError(Glint({"run", "relu_rep", "--input", input, "--repeat", "0"}), 2,
              "INVALID_ARGUMENT", "bad --repeat '0'");
  EXPECT_EQ(Glint({"remove", "relu_rep"}).exit_code, 0);
}

TEST_F(CliTest, HealthAnswersAsTheProbes) {
  CommandResult r = Glint({"health"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "SERVING\n");
  r = Glint({"health", "--service", "liveness"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "SERVING\n");
  ExpectError(Glint({"health", "--service", "nope"}), 1, "NOT_FOUND", "");
  ExpectError(Glint({"health", "extra"}), 2, "INVALID_ARGUMENT",
              "expected: glint health [--service NAME]");
}

// The README's first command, in test form: generate the example network,
// add it, run it with --output-dir and check the output with its script.
TEST_F(CliTest, ReadmeExampleNetwork) {
  const std::string python = "/usr/bin/python3";
  ASSERT_TRUE(fs::exists(python));
  const std::string dir = testing::NewTempDir("example");
  absl::StatusOr<CommandResult> gen = testing::RunCommand(
      {python, testing::RunfilePath("client/example/make_example.py"),
       "--out", dir},
      absl::Seconds(60));
  ASSERT_TRUE(gen.ok()) << gen.status();
  ASSERT_EQ(gen->exit_code, 0) << gen->stderr_text;

  CommandResult r = Glint({"add", "mlp", dir + "/mlp.onnx"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  r = Glint({"run", "mlp", "--input", "x=" + dir + "/input_x.npy",
             "--output-dir", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, StartsWith("probs: float32[2, 10]\n"));

  absl::StatusOr<CommandResult> check = testing::RunCommand(
      {python, testing::RunfilePath("client/example/check_output.py"),
       dir + "/out/probs.npy", dir + "/expected_probs.npy"},
      absl::Seconds(60));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->exit_code, 0) << check->stdout_text << check->stderr_text;
  EXPECT_THAT(check->stdout_text, StartsWith("OK"));

  // The checker itself must be able to fail.
  check = testing::RunCommand(
      {python, testing::RunfilePath("client/example/check_output.py"),
       dir + "/input_x.npy", dir + "/expected_probs.npy"},
      absl::Seconds(60));
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->exit_code, 1);
  ASSERT_EQ(Glint({"remove", "mlp"}).exit_code, 0);
}

// --precision reaches glintd and `show` says it; a bad value is refused
// before the model is read or the server contacted.
TEST_F(CliTest, AddWithPrecision) {
  CommandResult r = Glint({"add", "relu_bf16",
                           std::string(kRelu) + "/model.onnx", "--precision",
                           "bf16"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("precision: bf16"));
  r = Glint({"show", "relu_bf16"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("precision: bf16"));
  ExpectError(Glint({"add", "relu_fp8", "/nonexistent/model.onnx",
                     "--precision", "fp8"}),
              2, "INVALID_ARGUMENT",
              "precision 'fp8' is not one of: fp32 (the default), bf16");
  ASSERT_EQ(Glint({"remove", "relu_bf16"}).exit_code, 0);
}

// A symbolic dim stays dynamic: --max_dim bounds it, show lists it, runs
// of two sizes answer with their own shapes, one over the bound is refused.
TEST_F(CliTest, AddWithDynamicDims) {
  const std::string dir = testing::NewTempDir("cli_dyn");
  glint::testing::OnnxModelBuilder b;
  b.Input("x", 1, {-1, 3}).Output("y", 1, {-1, 3});  // -1: the dim "N".
  b.Node("Relu", {"x"}, {"y"});
  {
    std::ofstream(dir + "/relu.onnx", std::ios::binary) << b.Serialize();
  }
  ExpectError(Glint({"add", "dyn", dir + "/relu.onnx", "--max_dim", "N=0"}), 2,
              "INVALID_ARGUMENT", "bad --max_dim 'N=0'");
  ExpectError(Glint({"add", "dyn", dir + "/relu.onnx", "--max_dim", "M=4"}), 1,
              "INVALID_ARGUMENT", "max_dims names 'M'");
  CommandResult r =
      Glint({"add", "dyn", dir + "/relu.onnx", "--max_dim", "N=4"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  // The dim by its name, in the output too (Relu keeps it).
  EXPECT_THAT(r.stdout_text, HasSubstr("input  x: float32[N, 3]"));
  EXPECT_THAT(r.stdout_text, HasSubstr("output y: float32[N, 3]"));
  EXPECT_THAT(r.stdout_text, HasSubstr("dynamic dims: N <= 4 (x:0)"));
  r = Glint({"show", "dyn"});
  EXPECT_THAT(r.stdout_text, HasSubstr("dynamic dims: N <= 4 (x:0)"));
  for (int64_t rows : {1, 4, 5}) {
    std::vector<float> x(rows * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 == 0 ? -1.0f : 2.0f;
    const std::string in = absl::StrCat(dir, "/x", rows, ".npy");
    ASSERT_TRUE(WriteNpyFile(in, Tensor::FromVector(DType::kFloat32,
                                                    Shape({rows, 3}), x))
                    .ok());
    const std::string out = absl::StrCat(dir, "/out", rows);
    r = Glint({"run", "dyn", "--input", "x=" + in, "--output-dir", out});
    if (rows > 4) {
      ExpectError(r, 1, "INVALID_ARGUMENT",
                  "input 'x' has shape [5, 3]: its dim 0 ('N') is 5, over its "
                  "bound 4");
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    absl::StatusOr<Tensor> y = ReadNpyFile(out + "/y.npy");
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), Shape({rows, 3}));
    for (int64_t i = 0; i < y->num_elements(); ++i) {
      EXPECT_EQ(y->data<float>()[i], std::max(x[i], 0.0f)) << i;
    }
  }
  // perf takes the dynamic dim's size by name, and wants one.
  r = Glint({"perf", "dyn", "--duration", "300ms", "--dim", "N=2"});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  ExpectError(Glint({"perf", "dyn", "--duration", "300ms"}), 1,
              "INVALID_ARGUMENT",
              "input 'x' dim 0 is dynamic: give its size with --dim N=SIZE (or "
              "--batch SIZE)");
  ASSERT_EQ(Glint({"remove", "dyn"}).exit_code, 0);
}

}  // namespace
}  // namespace glint

namespace glint {
namespace {

// run --profile writes the trace with its node slices and prints the top
// ops; perf --profile profiles every run and prints the top ops by total
// time with the reorders' total.
TEST_F(CliTest, ProfileRunAndPerf) {
  const std::string dir = testing::NewTempDir("cli_profile");
  const std::string model = dir + "/cnn.onnx";
  std::ofstream(model, std::ios::binary) << testing::MakeConvNetModel();
  const std::string npy = dir + "/x.npy";
  ASSERT_TRUE(WriteNpyFile(npy, Tensor::FromVector(
                                    DType::kFloat32, Shape({1, 3, 8, 8}),
                                    std::vector<float>(192, 0.25f)))
                  .ok());
  CommandResult r = Glint({"add", "cnn", model});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;

  const std::string trace = dir + "/profile.json";
  r = Glint({"run", "cnn", "--input", npy, "--profile", "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("trace written to " + trace));
  EXPECT_THAT(r.stdout_text, HasSubstr("y: float32[1, 10]"));
  EXPECT_THAT(r.stdout_text, HasSubstr("top ops by total time:\nop "));
  EXPECT_THAT(r.stdout_text,
              HasSubstr("glint.FusedConv[Relu, channels_last, bias] oneDNN"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("\nMatMul[^\n]* +1 +[0-9.]+ "));
  EXPECT_THAT(r.stdout_text, HasSubstr("Transpose (reorder)"));
  EXPECT_THAT(r.stdout_text,
              ContainsRegex("\nreorders: 2 spans, [0-9.]+ ms, [0-9.]+% of "
                            "[0-9.]+ ms in 5 node spans\n"));
  std::ifstream trace_file(trace);
  const nlohmann::json json = nlohmann::json::parse(trace_file);
  int ops = 0;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "X" && (e["cat"] == "op" || e["cat"] == "reorder")) {
      ++ops;
      EXPECT_TRUE(e["args"].contains("op_type")) << e.dump();
      EXPECT_TRUE(e["args"].contains("inputs")) << e.dump();
    }
  }
  EXPECT_EQ(ops, 5);

  r = Glint({"perf", "cnn", "--concurrency", "1,2", "--duration", "500ms",
             "--profile"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr(", profiled\n"));
  EXPECT_THAT(r.stdout_text,
              ContainsRegex("\nprofile of [1-9][0-9]* runs: [0-9.]+ ms of "
                            "node time per run; top 15 ops by total time:\n"
                            "op +count +total_ms +mean_us +share\n"));
  EXPECT_THAT(r.stdout_text, HasSubstr("glint.FusedConv[Relu"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("\nMatMul[^\n]*%\n"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("\nreorders: [1-9][0-9]* spans"));

  ExpectError(Glint({"perf", "cnn", "--profile", "--protocol", "oip"}), 2,
              "INVALID_ARGUMENT", "--profile needs --protocol glint");
  ASSERT_EQ(Glint({"remove", "cnn"}).exit_code, 0);
}

}  // namespace
}  // namespace glint
