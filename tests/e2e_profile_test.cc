// Per-op profiles through a real glintd: RunNetwork with `profile` returns
// a trace with one slice per node executed (op type, kernel, run-time
// shapes in its args), nested in its partition's slice; `trace` alone
// returns none; a dynamically batched network's execution is profiled
// too.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "api/types.h"
#include "client/glint_client.h"
#include "core/op_profile.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;

NamedTensor ConvInput() {
  std::vector<float> x(3 * 8 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 11) * 0.1f - 0.5f;
  return {"x", Tensor::FromVector(DType::kFloat32, Shape({1, 3, 8, 8}), x)};
}

// The trace's complete events of category `category`.
std::vector<nlohmann::json> Events(const nlohmann::json& trace,
                                   const std::string& category) {
  std::vector<nlohmann::json> events;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == category) events.push_back(e);
  }
  return events;
}

TEST(E2eProfileTest, ProfiledRunsReturnASlicePerNode) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();
  ASSERT_TRUE(client.AddNetwork("cnn", testing::MakeConvNetModel()).ok());

  RunNetworkCall call;
  call.inputs = {ConvInput()};
  call.timeout = absl::Seconds(30);
  call.profile = true;
  absl::StatusOr<RunNetworkReply> reply = client.Run("cnn", call);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->outputs.size(), 1u);
  EXPECT_EQ(reply->outputs[0].tensor.shape(), Shape({1, 10}));
  const nlohmann::json trace = nlohmann::json::parse(reply->trace_json);

  // What the CPU backend runs: the channels-last conv with its Relu fused,
  // between the two layout reorders, then Flatten and MatMul.
  const std::vector<nlohmann::json> ops = Events(trace, "op");
  const std::vector<nlohmann::json> reorders = Events(trace, "reorder");
  ASSERT_EQ(ops.size(), 3u) << reply->trace_json;
  ASSERT_EQ(reorders.size(), 2u) << reply->trace_json;
  EXPECT_EQ(ops[0]["name"], "conv");
  EXPECT_EQ(ops[0]["args"]["op_type"], "glint.FusedConv");
  EXPECT_TRUE(absl::StartsWith(ops[0]["args"]["kernel"].get<std::string>(),
                               "glint.FusedConv[Relu, channels_last, bias]"))
      << ops[0].dump();
  EXPECT_EQ(ops[0]["args"]["inputs"],
            "float32[1,8,8,3], float32[4,3,3,3], float32[4]");
  EXPECT_EQ(ops[1]["name"], "flatten");
  EXPECT_EQ(ops[1]["args"]["outputs"], "float32[1,256]");
  EXPECT_EQ(ops[2]["name"], "matmul");
  EXPECT_EQ(ops[2]["args"]["op_type"], "MatMul");
  EXPECT_EQ(ops[2]["args"]["inputs"], "float32[1,256], float32[256,10]");
  EXPECT_EQ(ops[2]["args"]["outputs"], "float32[1,10]");
  for (const nlohmann::json& r : reorders) {
    EXPECT_EQ(r["args"]["op_type"], "Transpose");
  }
  // Every node slice lies inside the partition's slice, on its track.
  const std::vector<nlohmann::json> partitions = Events(trace, "compute");
  ASSERT_EQ(partitions.size(), 1u);
  const nlohmann::json& p = partitions[0];
  for (const auto* list : {&ops, &reorders}) {
    for (const nlohmann::json& e : *list) {
      EXPECT_EQ(e["pid"], p["pid"]);
      EXPECT_EQ(e["tid"], p["tid"]);
      EXPECT_GE(e["ts"].get<double>(), p["ts"].get<double>());
      EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(),
                p["ts"].get<double>() + p["dur"].get<double>() + 0.002);
    }
  }
  // The CLI's aggregation reads it: 5 spans, the reorders 2 of them.
  absl::StatusOr<std::vector<OpSpan>> spans =
      OpSpansFromChromeJson(reply->trace_json);
  ASSERT_TRUE(spans.ok()) << spans.status();
  const OpProfile profile = AggregateOpProfile(*spans);
  EXPECT_EQ(profile.spans, 5);
  EXPECT_EQ(profile.reorder_count, 2);

  // A trace without the profile has partitions but no nodes.
  call.profile = false;
  call.trace = true;
  reply = client.Run("cnn", call);
  ASSERT_TRUE(reply.ok()) << reply.status();
  const nlohmann::json plain = nlohmann::json::parse(reply->trace_json);
  EXPECT_EQ(Events(plain, "compute").size(), 1u);
  EXPECT_TRUE(Events(plain, "op").empty());
  EXPECT_TRUE(Events(plain, "reorder").empty());
  // And neither: no trace at all.
  call.trace = false;
  reply = client.Run("cnn", call);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->trace_json, "");

  // A dynamically batched network: its execution is profiled for the run.
  AddNetworkOptions batched;
  batched.batching.max_batch_size = 4;
  ASSERT_TRUE(
      client.AddNetwork("mlp", testing::MakeMlpModel(4, 16, 8), batched).ok());
  RunNetworkCall mlp;
  mlp.inputs = {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 16}),
                                         std::vector<float>(16, 0.5f))}};
  mlp.timeout = absl::Seconds(30);
  mlp.profile = true;
  reply = client.Run("mlp", mlp);
  ASSERT_TRUE(reply.ok()) << reply.status();
  const std::vector<nlohmann::json> mlp_ops =
      Events(nlohmann::json::parse(reply->trace_json), "op");
  ASSERT_EQ(mlp_ops.size(), 1u) << reply->trace_json;  // MatMul+Add+Relu.
  EXPECT_EQ(mlp_ops[0]["args"]["op_type"], "glint.FusedMatMul");
  // The batch ran at its compiled size.
  EXPECT_EQ(mlp_ops[0]["args"]["outputs"], "float32[4,8]");
}

}  // namespace
}  // namespace glint
