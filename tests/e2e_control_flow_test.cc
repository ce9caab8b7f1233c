// Control flow through a real glintd: a Loop whose trip count is a run-time
// input, run over gRPC; a trip count over the Loop's limit is the caller's
// error (INVALID_ARGUMENT) and the daemon keeps serving; and a Loop whose
// body reads a value produced on another device gets it across the
// partition boundary.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/types.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;

// devices/cpu/control_flow.h's kMaxLoopIterations, the documented limit.
constexpr int64_t kMaxLoopIterations = int64_t{1} << 20;

NamedTensor TripCount(int64_t n) {
  return {"trip_count",
          Tensor::FromVector(DType::kInt64, Shape(), std::vector<int64_t>{n})};
}

NamedTensor X(float a, float b) {
  return {"x", Tensor::FromVector(DType::kFloat32, Shape({2}),
                                  std::vector<float>{a, b})};
}

// What the Loop model computes (onnx/test_models.h): y_final = n · 2x and
// ys row i = (i + 1) · 2x.
std::vector<NamedTensor> Expected(int64_t n, float a, float b) {
  std::vector<float> ys;
  for (int64_t i = 1; i <= n; ++i) {
    ys.push_back(2 * a * i);
    ys.push_back(2 * b * i);
  }
  return {
      {"y_final", Tensor::FromVector(DType::kFloat32, Shape({2}),
                                     std::vector<float>{2 * a * n, 2 * b * n})},
      {"ys", Tensor::FromVector(DType::kFloat32, Shape({n, 2}), ys)}};
}

void ExpectOutputs(const absl::StatusOr<std::vector<NamedTensor>>& got,
                   const std::vector<NamedTensor>& want) {
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*got)[i].name, want[i].name);
    EXPECT_EQ(testing::CompareTensors((*got)[i].tensor, want[i].tensor), "")
        << want[i].name;
  }
}

TEST(E2eControlFlowTest, LoopRunsItsRunTimeTripCountAndRefusesOneOverTheLimit) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();
  absl::StatusOr<NetworkInfo> info =
      client.AddNetwork("loop", testing::MakeLoopModel());
  ASSERT_TRUE(info.ok()) << info.status();

  // The trip count, and so the scan output's first dimension, changes from
  // run to run.
  for (int64_t n : {3, 1, 7, 0}) {
    SCOPED_TRACE(absl::StrCat("trip count ", n));
    ExpectOutputs(client.RunNetwork("loop", {TripCount(n), X(1, -2)}, {},
                                    absl::Seconds(30)),
                  Expected(n, 1, -2));
  }

  absl::StatusOr<std::vector<NamedTensor>> over =
      client.RunNetwork("loop", {TripCount(kMaxLoopIterations + 1), X(1, 2)},
                        {}, absl::Seconds(30));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument)
      << over.status();
  EXPECT_NE(over.status().message().find("limit"), std::string::npos)
      << over.status();
  EXPECT_NE(over.status().message().find("loop"), std::string::npos)
      << over.status();

  // The daemon still serves, this network included.
  const absl::Status health = (*d)->CheckHealth(absl::Seconds(10));
  EXPECT_TRUE(health.ok()) << health;
  ExpectOutputs(client.RunNetwork("loop", {TripCount(2), X(0.5f, 4)}, {},
                                  absl::Seconds(30)),
                Expected(2, 0.5f, 4));
  absl::StatusOr<int> code = (*d)->Stop(SIGTERM, absl::Seconds(20));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*d)->Log();
}

TEST(E2eControlFlowTest, ACaptureProducedOnAnotherDeviceCrossesThePartition) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
      GlintdProcess::Start({"--devices=sim*2"});
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kUser;
  options.partition.plan_devices = 2;
  options.partition.user_plan = {{"double", 0}, {"loop", 1}};
  absl::StatusOr<NetworkInfo> info =
      client.AddNetwork("split", testing::MakeLoopModel(), options);
  ASSERT_TRUE(info.ok()) << info.status();
  // The Loop stays whole on its device; the value its body reads from the
  // outer graph is an input of its partition.
  ASSERT_EQ(info->partitions.size(), 2u);
  EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
  EXPECT_EQ(info->partitions[1].num_nodes, 1);
  EXPECT_EQ(info->partitions[1].inputs,
            (std::vector<std::string>{"trip_count", "d"}));
  ExpectOutputs(client.RunNetwork("split", {TripCount(4), X(3, 1)}, {},
                                  absl::Seconds(30)),
                Expected(4, 3, 1));
  absl::StatusOr<int> code = (*d)->Stop(SIGTERM, absl::Seconds(20));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*d)->Log();
}

}  // namespace
}  // namespace glint
