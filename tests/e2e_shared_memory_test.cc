// Shared-memory tensors and `glint perf` through a real glintd: runs via
// shared memory give bit-identical outputs to runs via bytes (client
// library and CLI); every bad window is INVALID_ARGUMENT over gRPC and
// leaves the client's memory outside it untouched; a client that dies
// without unregistering leaves glintd serving (and its region usable until
// unregistered); `glint perf` (through glint.v1 and through the inference
// protocol, with and without --shm) prints its table and CSV with zero errors
// and counts failed runs as errors.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/npy.h"
#include "client/shared_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::CommandResult;
using testing::GlintdProcess;

constexpr int64_t kBatch = 4, kIn = 16, kOut = 8;

// a, b: float32[3, 5] -> s = a + b, m = a * b.
std::string TwoOutputModel() {
  testing::OnnxModelBuilder b;
  b.Input("a", 1, {3, 5}).Input("b", 1, {3, 5});
  b.Output("s", 1, {3, 5}).Output("m", 1, {3, 5});
  b.Node("Add", {"a", "b"}, {"s"});
  b.Node("Mul", {"a", "b"}, {"m"});
  return b.Serialize();
}

Tensor Floats(Shape shape, float scale) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = scale * (static_cast<float>(i % 13) - 6.0f);
  }
  return Tensor::FromVector<float>(DType::kFloat32, std::move(shape), v);
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         a.num_bytes() == b.num_bytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()) == 0;
}

class SharedMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start({});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
    ASSERT_TRUE(daemon_->client()
                    .AddNetwork("mlp", testing::MakeMlpModel(kBatch, kIn, kOut))
                    .ok());
    ASSERT_TRUE(daemon_->client().AddNetwork("two", TwoOutputModel()).ok());
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(daemon_, nullptr); }
  // Whatever a case did, glintd still answers and computes.
  void TearDown() override {
    if (daemon_ == nullptr) return;
    EXPECT_TRUE(daemon_->CheckHealth(absl::Seconds(5)).ok()) << daemon_->Log();
    absl::StatusOr<std::vector<NamedTensor>> out = client().RunNetwork(
        "two", {{"a", Floats({3, 5}, 1)}, {"b", Floats({3, 5}, 2)}});
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << daemon_->Log();
  }

  GlintClient& client() { return daemon_->client(); }

  CommandResult Glint(std::vector<std::string> args) {
    std::vector<std::string> argv = {testing::RunfilePath("client/glint"),
                                     "--server=" + daemon_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<CommandResult> r =
        testing::RunCommand(argv, absl::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->timed_out) << absl::StrJoin(args, " ");
    return r.ok() ? *r : CommandResult();
  }

  static GlintdProcess* daemon_;
};

GlintdProcess* SharedMemoryTest::daemon_ = nullptr;

TEST_F(SharedMemoryTest, OutputsAreBitIdenticalToRunsThroughBytes) {
  const Tensor x = Floats({kBatch, kIn}, 0.37f);
  absl::StatusOr<std::vector<NamedTensor>> bytes =
      client().RunNetwork("mlp", {{"x", x}});
  absl::StatusOr<std::vector<NamedTensor>> shm =
      RunNetworkInSharedMemory(client(), "mlp", {{"x", x}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_TRUE(shm.ok()) << shm.status();
  ASSERT_EQ(shm->size(), 1u);
  EXPECT_EQ((*shm)[0].name, "y");
  EXPECT_TRUE(SameBytes((*shm)[0].tensor, (*bytes)[0].tensor));
  // And right, not just equal.
  const std::vector<float> want = testing::MlpReference(
      std::vector<float>(x.data<float>(), x.data<float>() + kBatch * kIn),
      kBatch, kIn, kOut);
  for (int64_t i = 0; i < kBatch * kOut; ++i) {
    EXPECT_NEAR((*shm)[0].tensor.data<float>()[i], want[i], 1e-4) << i;
  }

  // Two inputs, two outputs, all outputs and a requested one.
  const std::vector<NamedTensor> ab = {{"a", Floats({3, 5}, 0.5f)},
                                       {"b", Floats({3, 5}, -1.25f)}};
  bytes = client().RunNetwork("two", ab);
  shm = RunNetworkInSharedMemory(client(), "two", ab);
  ASSERT_TRUE(bytes.ok() && shm.ok()) << shm.status();
  ASSERT_EQ(shm->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*shm)[i].name, (*bytes)[i].name);
    EXPECT_TRUE(SameBytes((*shm)[i].tensor, (*bytes)[i].tensor)) << i;
  }
  shm = RunNetworkInSharedMemory(client(), "two", ab, {"m"});
  ASSERT_TRUE(shm.ok()) << shm.status();
  ASSERT_EQ(shm->size(), 1u);
  EXPECT_TRUE(SameBytes((*shm)[0].tensor, (*bytes)[1].tensor));
  // Every region was unregistered on the way out.
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> left =
      client().SharedMemoryStatus();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(SharedMemoryTest, RegisterStatusUnregister) {
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::Create(8192);
  ASSERT_TRUE(region.ok());
  const std::string key = (*region)->key();
  ASSERT_TRUE(client().RegisterSharedMemory("reg", key, 4096, 4096).ok());
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> status =
      client().SharedMemoryStatus("reg");
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->size(), 1u);
  EXPECT_EQ((*status)[0].key, key);
  EXPECT_EQ((*status)[0].offset, 4096u);
  EXPECT_EQ((*status)[0].byte_size, 4096u);

  EXPECT_EQ(client().RegisterSharedMemory("reg", key, 0, 64).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(client().RegisterSharedMemory("bad name", key, 0, 64).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client().RegisterSharedMemory("r2", "../etc/passwd", 0, 64).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client().RegisterSharedMemory("r2", "/glint_no_such", 0, 64).code(),
            absl::StatusCode::kNotFound);
  // A region larger than its object.
  absl::Status too_big = client().RegisterSharedMemory("r2", key, 4096, 4097);
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_big.message(), HasSubstr("too small"));

  ASSERT_TRUE(client().UnregisterSharedMemory("reg").ok());
  EXPECT_EQ(client().UnregisterSharedMemory("reg").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client().SharedMemoryStatus("reg").status().code(),
            absl::StatusCode::kNotFound);
}

// Bad windows in runs: each INVALID_ARGUMENT naming the problem, and no
// byte of the client's object outside the windows is touched (nor, for a
// refused output, inside them).
TEST_F(SharedMemoryTest, BadWindowsAreInvalidArgumentAndTouchNothing) {
  constexpr size_t kBytes = 3 * 4096;
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::Create(kBytes);
  ASSERT_TRUE(region.ok());
  uint8_t* memory = (*region)->data();
  std::memset(memory, 0x5A, kBytes);
  // The region: the object's middle page only.
  ASSERT_TRUE(
      client().RegisterSharedMemory("win", (*region)->key(), 4096, 4096).ok());
  const Tensor a = Floats({3, 5}, 1);  // 60 bytes.
  std::memcpy(memory + 4096, a.raw_data(), 60);
  std::memcpy(memory + 4096 + 64, a.raw_data(), 60);
  std::vector<uint8_t> before(memory, memory + kBytes);

  auto run = [&](SharedMemoryRef a_window,
                 std::map<std::string, SharedMemoryRef> outputs) {
    RunNetworkCall call;
    call.shared_memory_inputs = {
        {"a", DType::kFloat32, Shape({3, 5}), std::move(a_window)},
        {"b", DType::kFloat32, Shape({3, 5}), {"win", 64, 60}}};
    call.output_shared_memory = std::move(outputs);
    return client().Run("two", call);
  };
  const std::vector<std::pair<absl::StatusOr<RunNetworkReply>, std::string>>
      cases = {
          {run({"nope", 0, 60}, {}), "no shared-memory region named 'nope'"},
          {run({"win", 4096, 60}, {}), "do not fit"},  // Offset at the end.
          {run({"win", 5000, 60}, {}), "do not fit"},  // Past it.
          {run({"win", 4050, 60}, {}), "do not fit"},  // Straddling it.
          {run({"win", 0, 56}, {}), "holds 56"},       // Not a's size.
          {run({"win", 0, 60}, {{"s", {"win", 4090, 60}}}), "do not fit"},
          {run({"win", 0, 60}, {{"s", {"nope", 0, 60}}}), "'nope'"},
          // Inside the region but 4 bytes short: refused after the run.
          {run({"win", 0, 60}, {{"s", {"win", 128, 56}}}), "more than"},
          {run({"win", 0, 60}, {{"zz", {"win", 128, 60}}}), "'zz'"},
      };
  for (const auto& [reply, message] : cases) {
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument)
        << message << ": " << reply.status();
    EXPECT_THAT(reply.status().message(), HasSubstr(message));
  }
  EXPECT_EQ(std::vector<uint8_t>(memory, memory + kBytes), before);

  // A good run writes exactly its output's bytes.
  absl::StatusOr<RunNetworkReply> good =
      run({"win", 0, 60}, {{"s", {"win", 128, 256}}});
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->shared_memory_outputs.size(), 1u);
  EXPECT_EQ(good->shared_memory_outputs[0].window.byte_size, 60u);
  ASSERT_EQ(good->outputs.size(), 1u);  // m came in the reply.
  for (size_t i = 0; i < kBytes; ++i) {
    if (i >= 4096 + 128 && i < 4096 + 128 + 60) continue;
    ASSERT_EQ(memory[i], before[i]) << i;
  }
  const float* s = reinterpret_cast<const float*>(memory + 4096 + 128);
  EXPECT_EQ(s[14], 2 * a.data<float>()[14]);
  ASSERT_TRUE(client().UnregisterSharedMemory("win").ok());
  // A name no longer registered.
  EXPECT_EQ(run({"win", 0, 60}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SharedMemoryTest, AClientDyingWithoutUnregisteringLeavesNoCrash) {
  absl::StatusOr<CommandResult> r = testing::RunCommand(
      {testing::RunfilePath("tests/shm_dying_client"), daemon_->address(),
       "mlp"},
      absl::Seconds(60));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->timed_out);
  ASSERT_EQ(r->exit_code, -1) << r->stderr_text;  // Killed by its signal.
  const std::string name(absl::StripAsciiWhitespace(r->stdout_text));
  ASSERT_FALSE(name.empty()) << r->stderr_text;

  // glintd serves on; the dead client's region stays registered (its
  // object already unlinked: nothing is left in /dev/shm)...
  EXPECT_TRUE(daemon_->CheckHealth(absl::Seconds(5)).ok()) << daemon_->Log();
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> status =
      client().SharedMemoryStatus(name);
  ASSERT_TRUE(status.ok()) << status.status();
  const int fd = shm_open((*status)[0].key.c_str(), O_RDONLY, 0);
  EXPECT_LT(fd, 0);
  if (fd >= 0) close(fd);
  // ...and still mapped: its input window (x at offset 0) runs.
  RunNetworkCall call;
  call.shared_memory_inputs = {
      {"x", DType::kFloat32, Shape({kBatch, kIn}), {name, 0, kBatch * kIn * 4}}};
  absl::StatusOr<RunNetworkReply> reply = client().Run("mlp", call);
  ASSERT_TRUE(reply.ok()) << reply.status();
  std::vector<float> x(kBatch * kIn);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) / 64;
  const std::vector<float> want = testing::MlpReference(x, kBatch, kIn, kOut);
  ASSERT_EQ(reply->outputs.size(), 1u);
  for (int64_t i = 0; i < kBatch * kOut; ++i) {
    EXPECT_NEAR(reply->outputs[0].tensor.data<float>()[i], want[i], 1e-4);
  }
  // An operator (or the next client) cleans up.
  EXPECT_TRUE(client().UnregisterSharedMemory(name).ok());
}

TEST_F(SharedMemoryTest, CliRunWithShmMatchesRunWithout) {
  const std::string dir = testing::NewTempDir("cli_shm");
  const std::string x_path = dir + "/x.npy";
  ASSERT_TRUE(WriteNpyFile(x_path, Floats({kBatch, kIn}, 0.11f)).ok());
  CommandResult bytes =
      Glint({"run", "mlp", "--input", "x=" + x_path, "--output-dir",
             dir + "/bytes"});
  CommandResult shm = Glint({"run", "mlp", "--input", "x=" + x_path,
                             "--shm", "--output-dir", dir + "/shm"});
  ASSERT_EQ(bytes.exit_code, 0) << bytes.stderr_text;
  ASSERT_EQ(shm.exit_code, 0) << shm.stderr_text;
  // The printed values are the same; only the written paths differ.
  EXPECT_EQ(shm.stdout_text.substr(0, shm.stdout_text.find("wrote")),
            bytes.stdout_text.substr(0, bytes.stdout_text.find("wrote")));
  absl::StatusOr<Tensor> a = ReadNpyFile(dir + "/bytes/y.npy");
  absl::StatusOr<Tensor> b = ReadNpyFile(dir + "/shm/y.npy");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(SameBytes(*a, *b));
}

// `glint perf` output: a title line, the header, one row per level.
struct PerfRow {
  int concurrency = 0;
  double runs = 0, errors = 0, throughput = 0, p50 = 0, p90 = 0, p99 = 0;
  // -1 for "-" (no statistics over the level).
  double queue_us = -1, compute_us = -1;
};

std::vector<PerfRow> ParsePerfTable(const std::string& text) {
  std::vector<PerfRow> rows;
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  bool header_seen = false;
  for (const std::string& line : lines) {
    std::vector<std::string> f =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (!header_seen) {
      header_seen = f.size() == 9 && f[0] == "concurrency" &&
                    f[3] == "runs/s" && f[4] == "p50_ms" &&
                    f[6] == "p99_ms" && f[7] == "server_queue_us";
      continue;
    }
    PerfRow row;
    if (f.size() != 9 || !absl::SimpleAtoi(f[0], &row.concurrency) ||
        !absl::SimpleAtod(f[1], &row.runs) ||
        !absl::SimpleAtod(f[2], &row.errors) ||
        !absl::SimpleAtod(f[3], &row.throughput) ||
        !absl::SimpleAtod(f[4], &row.p50) ||
        !absl::SimpleAtod(f[5], &row.p90) ||
        !absl::SimpleAtod(f[6], &row.p99) ||
        (f[7] != "-" && !absl::SimpleAtod(f[7], &row.queue_us)) ||
        (f[8] != "-" && !absl::SimpleAtod(f[8], &row.compute_us))) {
      continue;
    }
    rows.push_back(row);
  }
  return rows;
}

TEST_F(SharedMemoryTest, GlintPerfPrintsEveryLevelWithoutErrors) {
  const std::string dir = testing::NewTempDir("perf");
  for (const std::string protocol : {"glint", "oip"}) {
    for (bool shm : {false, true}) {
      SCOPED_TRACE(absl::StrCat(protocol, shm ? " --shm" : ""));
      const std::string csv = absl::StrCat(dir, "/perf", protocol, shm, ".csv");
      std::vector<std::string> args = {
          "perf",  "mlp", "--concurrency", "1,4",   "--duration", "1s",
          "--csv", csv,   "--protocol",    protocol};
      if (shm) args.push_back("--shm");
      CommandResult r = Glint(args);
      ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
      EXPECT_THAT(r.stdout_text, HasSubstr("glint perf mlp: 1s per level"));
      EXPECT_THAT(r.stdout_text, HasSubstr("protocol " + protocol));
      const std::vector<PerfRow> rows = ParsePerfTable(r.stdout_text);
      ASSERT_EQ(rows.size(), 2u) << r.stdout_text;
      EXPECT_EQ(rows[0].concurrency, 1);
      EXPECT_EQ(rows[1].concurrency, 4);
      for (const PerfRow& row : rows) {
        EXPECT_GT(row.runs, 0) << r.stdout_text;
        EXPECT_EQ(row.errors, 0) << r.stdout_text;
        EXPECT_GT(row.throughput, 0);
        EXPECT_LE(row.p50, row.p90);
        EXPECT_LE(row.p90, row.p99);
        // The server's split, from GetStatistics.
        EXPECT_GE(row.queue_us, 0) << r.stdout_text;
        EXPECT_GT(row.compute_us, 0) << r.stdout_text;
      }
      std::ifstream file(csv);
      std::stringstream content;
      content << file.rdbuf();
      const std::vector<std::string> lines =
          absl::StrSplit(content.str(), '\n', absl::SkipEmpty());
      ASSERT_EQ(lines.size(), 3u) << content.str();
      EXPECT_TRUE(absl::StartsWith(lines[0], "concurrency,runs,errors,"));
      EXPECT_TRUE(absl::StartsWith(lines[1], "1,"));
      EXPECT_TRUE(absl::StartsWith(lines[2], "4,"));
    }
  }
  // glint perf's own region is gone.
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> left =
      client().SharedMemoryStatus();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(SharedMemoryTest, GlintPerfCountsFailedRunsAsErrors) {
  for (const std::string protocol : {"glint", "oip"}) {
    SCOPED_TRACE(protocol);
    // The MLP is bound to batch 4: batch 2 inputs are refused by glintd.
    CommandResult r = Glint({"perf", "mlp", "--concurrency", "2", "--duration",
                             "300ms", "--batch", "2", "--protocol", protocol});
    EXPECT_EQ(r.exit_code, 1);
    const std::vector<PerfRow> rows = ParsePerfTable(r.stdout_text);
    ASSERT_EQ(rows.size(), 1u) << r.stdout_text;
    EXPECT_EQ(rows[0].runs, 0);
    EXPECT_GT(rows[0].errors, 0);
    EXPECT_EQ(rows[0].compute_us, -1);  // No successful run to split.
    EXPECT_THAT(r.stdout_text, HasSubstr("INVALID_ARGUMENT"));
    EXPECT_THAT(r.stderr_text, HasSubstr("glint: error: INVALID_ARGUMENT"));
  }
}

}  // namespace
}  // namespace glint
