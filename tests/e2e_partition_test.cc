// A network too large for one device, over gRPC: split into the fewest
// partitions that fit, run, and compared with the unpartitioned run on a
// daemon whose single device is large enough.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint::testing {
namespace {

constexpr int64_t kWidth = 512;  // 1 MiB of weights per layer.
constexpr int kLayers = 6;

Tensor Input() {
  std::vector<float> x(2 * kWidth);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
  return Tensor::FromVector(DType::kFloat32, Shape({2, kWidth}), x);
}

TEST(E2ePartitionTest, TooLargeForOneDeviceSplitsRunsAndMatches) {
  // 3 MiB devices hold two layers each (plus activations): 3 partitions.
  auto small = GlintdProcess::Start({"--devices=sim*4:memory=3MiB"});
  ASSERT_TRUE(small.ok()) << small.status();
  auto large = GlintdProcess::Start({"--devices=sim:memory=64MiB"});
  ASSERT_TRUE(large.ok()) << large.status();
  const std::string model = MakeDeepMlpModel(2, kWidth, kLayers);

  absl::StatusOr<NetworkInfo> split =
      (*small)->client().AddNetwork("deep", model, {});
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->strategy, "memory");
  ASSERT_EQ(split->partitions.size(), 3u);
  std::vector<int> devices;
  for (const PartitionInfo& p : split->partitions) {
    EXPECT_LE(p.memory_bytes, 3 * kMiB);
    EXPECT_EQ(p.weight_bytes, 2 * kMiB);
    devices.push_back(p.device_id);
  }
  EXPECT_NE(devices[0], devices[1]);
  EXPECT_NE(devices[1], devices[2]);

  absl::StatusOr<NetworkInfo> whole =
      (*large)->client().AddNetwork("deep", model, {});
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->partitions.size(), 1u);

  auto got = (*small)->client().RunNetwork("deep", {{"x", Input()}}, {});
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = (*large)->client().RunNetwork("deep", {{"x", Input()}}, {});
  ASSERT_TRUE(want.ok()) << want.status();
  const Tensor& a = (*got)[0].tensor;
  const Tensor& b = (*want)[0].tensor;
  ASSERT_EQ(a.shape(), b.shape());
  double max_abs = 0;
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    max_abs = std::max(max_abs, std::abs(double(b.data<float>()[i])));
  }
  ASSERT_GT(max_abs, 0) << "a degenerate reference proves nothing";
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i],
                1e-5 * std::max(1.0, std::abs(double(b.data<float>()[i]))))
        << "element " << i;
  }
}

TEST(E2ePartitionTest, OptionsTravelAndShowRendersDot) {
  auto daemon = GlintdProcess::Start({"--devices=sim*4:memory=64MiB"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kLoadBalanced;
  options.partition.plan_devices = 2;
  options.partition.replicas = 2;
  absl::StatusOr<NetworkInfo> info = (*daemon)->client().AddNetwork(
      "deep", MakeDeepMlpModel(2, 64, 4), options);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->strategy, "load_balanced");
  EXPECT_EQ(info->replicas, 2);
  ASSERT_EQ(info->partitions.size(), 2u);
  ASSERT_EQ(info->partitions[0].replica_devices.size(), 1u);
  for (int r = 0; r < 4; ++r) {
    auto out = (*daemon)->client().RunNetwork(
        "deep",
        {{"x", Tensor::FromVector(DType::kFloat32, Shape({2, 64}),
                                  std::vector<float>(128, 0.25f))}},
        {});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  // Needing more devices than exist is RESOURCE_EXHAUSTED, saying how many.
  options.partition.replicas = 3;
  absl::Status s = (*daemon)->client()
                       .AddNetwork("too_many", MakeDeepMlpModel(2, 64, 4),
                                   options)
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("6 devices"), absl::string_view::npos) << s;

  // glint show --dot, rendered by Graphviz.
  const std::string dir = NewTempDir("dot");
  auto shown = RunCommand({RunfilePath("client/glint"),
                           "--server=" + (*daemon)->address(), "show", "deep",
                           "--dot"},
                          absl::Seconds(30));
  ASSERT_TRUE(shown.ok()) << shown.status();
  ASSERT_EQ(shown->exit_code, 0) << shown->stderr_text;
  EXPECT_NE(shown->stdout_text.find("cluster_p1"), std::string::npos);
  const std::string dot_path = dir + "/deep.dot";
  std::ofstream(dot_path) << shown->stdout_text;
  auto png = RunCommand({"/usr/bin/dot", "-Tpng", dot_path, "-o",
                         dir + "/deep.png"},
                        absl::Seconds(30));
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_EQ(png->exit_code, 0) << png->stderr_text;
  std::ifstream rendered(dir + "/deep.png", std::ios::binary);
  char magic[4] = {};
  rendered.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}

TEST(E2eDeadlineTest, GrpcDeadlineBecomesDeadlineExceededAndDaemonServes) {
  // A device of 40 FLOP/s makes each 512-wide MatMul take minutes of
  // simulated time: a 300 ms deadline must cut the run short, skip the
  // partitions not yet started, and leave the daemon serving.
  auto daemon = GlintdProcess::Start(
      {"--devices=sim:memory=64MiB:compute_gflops=0.00000004"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE((*daemon)->client()
                  .AddNetwork("slow", MakeDeepMlpModel(1, 8, 2), {})
                  .ok());
  const absl::Time start = absl::Now();
  auto out = (*daemon)->client().RunNetwork(
      "slow",
      {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 8}),
                                std::vector<float>(8, 1.0f))}},
      {}, absl::Milliseconds(300));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded)
      << out.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE((*daemon)->CheckHealth(absl::Seconds(5)).ok());
  EXPECT_TRUE((*daemon)->client().ListNetworks().ok());
}

}  // namespace
}  // namespace glint::testing
