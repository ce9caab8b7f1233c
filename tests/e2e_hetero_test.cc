// Heterogeneous plans through a real glintd (issue 19): a network no single
// device class can run plans, runs and matches a single device; a 3-stage
// pipeline over devices of different speed runs at the throughput the cost
// model estimates.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint::testing {
namespace {

// MakeDeepMlpModel with a Softmax after the last layer.
std::string MlpWithSoftmax(int64_t batch, int64_t width, int layers) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(MakeDeepMlpModel(batch, width, layers)));
  onnx::GraphProto* g = model.mutable_graph();
  onnx::NodeProto* last = g->mutable_node(g->node_size() - 1);
  last->set_output(0, "logits");
  onnx::NodeProto* softmax = g->add_node();
  softmax->set_op_type("Softmax");
  softmax->set_name("softmax");
  softmax->add_input("logits");
  softmax->add_output("y");
  // The logits are an output too: the test compares them as well.
  onnx::ValueInfoProto* logits = g->add_output();
  *logits = g->output(0);
  logits->set_name("logits");
  return model.SerializeAsString();
}

Tensor Input(int64_t width, float phase, float scale = 1) {
  std::vector<float> x(width);
  for (int64_t i = 0; i < width; ++i) x[i] = scale * std::sin(0.37f * i + phase);
  return Tensor::FromVector(DType::kFloat32, Shape({1, width}), x);
}

// The case: the 1 GiB device lacks Softmax, the 8 MiB one has it
// but cannot hold the 46 MB of weights. It used to fail with
// RESOURCE_EXHAUSTED "does not fit in 1 devices even split by memory".
TEST(E2eHeteroTest, BigDeviceWithoutSoftmaxAndSmallCompleteOneMatchOneDevice) {
  constexpr int64_t kWidth = 1024;  // 4 MiB per layer.
  constexpr int kLayers = 11;
  auto mixed = GlintdProcess::Start(
      {"--devices=sim:memory=1GiB:unsupported_ops=Softmax,sim:memory=8MiB"});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  auto single = GlintdProcess::Start({"--devices=sim:memory=1GiB"});
  ASSERT_TRUE(single.ok()) << single.status();
  const std::string model = MlpWithSoftmax(1, kWidth, kLayers);

  absl::StatusOr<NetworkInfo> info =
      (*mixed)->client().AddNetwork("mlp", model, {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 2u);
  EXPECT_EQ(info->partitions[0].device_name, "sim:0");
  EXPECT_EQ(info->partitions[1].device_name, "sim:1");
  const std::vector<std::string>& last = info->partitions[1].outputs;
  EXPECT_NE(std::find(last.begin(), last.end(), "y"), last.end());
  EXPECT_EQ(info->strategy, "memory");
  ASSERT_TRUE((*single)->client().AddNetwork("mlp", model, {}).ok());

  // The deep MLP shrinks its input a lot, leaving a flat softmax; with
  // Relu and MatMul only, logits scale with the input, so the input is
  // scaled to make the largest logit about 4.
  auto probe =
      (*single)->client().RunNetwork("mlp", {{"x", Input(kWidth, 0, 1)}});
  ASSERT_TRUE(probe.ok()) << probe.status();
  double largest = 0;
  for (const NamedTensor& t : *probe) {
    if (t.name != "logits") continue;
    for (int64_t i = 0; i < t.tensor.num_elements(); ++i) {
      largest = std::max(largest, std::abs(double(t.tensor.data<float>()[i])));
    }
  }
  ASSERT_GT(largest, 0);
  const float scale = static_cast<float>(4 / largest);
  for (float phase : {0.0f, 1.5f}) {
    auto got = (*mixed)->client().RunNetwork(
        "mlp", {{"x", Input(kWidth, phase, scale)}});
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = (*single)->client().RunNetwork(
        "mlp", {{"x", Input(kWidth, phase, scale)}});
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(got->size(), 2u);
    ASSERT_EQ(want->size(), 2u);
    for (int o = 0; o < 2; ++o) {
      const Tensor& a = (*got)[o].tensor;
      const Tensor& b = (*want)[o].tensor;
      ASSERT_EQ((*got)[o].name, (*want)[o].name);
      ASSERT_EQ(a.shape(), b.shape());
      double max_abs = 0;
      for (int64_t i = 0; i < b.num_elements(); ++i) {
        max_abs = std::max(max_abs, std::abs(double(b.data<float>()[i])));
      }
      // A degenerate reference proves nothing.
      ASSERT_GT(max_abs, 0) << (*want)[o].name;
      for (int64_t i = 0; i < b.num_elements(); ++i) {
        EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5 * max_abs)
            << (*want)[o].name << " element " << i;
      }
    }
    // y is a softmax of logits that are not all equal.
    const Tensor& y = (*want)[0].name == "y" ? (*want)[0].tensor
                                             : (*want)[1].tensor;
    float lo = 1, hi = 0, sum = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      lo = std::min(lo, y.data<float>()[i]);
      hi = std::max(hi, y.data<float>()[i]);
      sum += y.data<float>()[i];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-3);
    EXPECT_GT(hi, 2 * lo);
  }

  // glint show says where each partition went and why.
  auto shown = RunCommand({RunfilePath("client/glint"),
                           "--server=" + (*mixed)->address(), "show", "mlp"},
                          absl::Seconds(30));
  ASSERT_TRUE(shown.ok()) << shown.status();
  ASSERT_EQ(shown->exit_code, 0) << shown->stderr_text;
  const std::string& text = shown->stdout_text;
  EXPECT_NE(text.find("device class: sim without Softmax, no timing model"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("placed there: memory: needs"), std::string::npos)
      << text;
  EXPECT_NE(text.find("placed there: capability: 'sim without Softmax, no "
                      "timing model' cannot run node 'softmax' (Softmax)"),
            std::string::npos)
      << text;
}

TEST(E2eHeteroTest, NoPlanErrorNamesTheOpAndTheMissingBytes) {
  auto daemon = GlintdProcess::Start(
      {"--devices=sim:memory=1GiB:unsupported_ops=Softmax,sim:memory=4KiB"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  absl::Status s = (*daemon)
                       ->client()
                       .AddNetwork("mlp", MlpWithSoftmax(1, 1024, 2), {})
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("no plan places node 'softmax' (Softmax)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("does not run op 'Softmax'"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("4096 bytes (0 MiB) missing"), std::string::npos)
      << s;
}

// Three device classes, 4x / 2x / 1x in speed, the fastest without
// Softmax; 14 layers of 256 x 256 split into 3 load-balanced stages. The
// sim device makes each launch last its modelled time (2 · 256² FLOPs per
// layer at 10-40 MFLOP/s: 3.3-13 ms per layer, tens of ms per stage,
// against microseconds of host compute), so runs in flight pipeline at
// the slowest stage's pace, which the cost model estimates.
TEST(E2eHeteroTest, PipelineThroughputIsWithinAFifthOfTheEstimate) {
  constexpr int64_t kWidth = 256;
  auto daemon = GlintdProcess::Start(
      {"--devices="
       "sim:memory=64MiB:compute_gflops=0.04:link_gbps=1:unsupported_ops="
       "Softmax,"
       "sim:memory=64MiB:compute_gflops=0.02:link_gbps=1,"
       "sim:memory=64MiB:compute_gflops=0.01:link_gbps=1",
       "--log_level=warning"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kLoadBalanced;
  options.partition.plan_devices = 3;
  absl::StatusOr<NetworkInfo> info = (*daemon)->client().AddNetwork(
      "pipe", MlpWithSoftmax(1, kWidth, 14), options);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 3u);
  std::map<int, double> busy;  // Device → estimated seconds per run.
  double heaviest_flops = 0;
  std::string heaviest_class;
  for (const PartitionInfo& p : info->partitions) {
    busy[p.device_id] += p.estimated_seconds;
    if (p.flops > heaviest_flops) {
      heaviest_flops = p.flops;
      heaviest_class = p.device_class;
    }
  }
  ASSERT_EQ(busy.size(), 3u);
  // The heaviest stage is on the fastest class.
  EXPECT_NE(heaviest_class.find("0.04 GFLOP/s"), std::string::npos)
      << heaviest_class;
  double bottleneck = 0;
  for (const auto& [device, seconds] : busy) {
    bottleneck = std::max(bottleneck, seconds);
  }
  ASSERT_GT(bottleneck, 0.02);  // Modelled time dominates host noise.

  // 6 callers keep up to 6 runs in flight (more than the 3 stages); the
  // rate is taken between the 12th and the last completion, so the
  // pipeline's fill is not counted.
  constexpr int kCallers = 6, kRunsEach = 10;
  absl::Mutex mu;
  std::vector<absl::Time> done;
  std::vector<std::string> errors;
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      auto client = GlintClient::Connect((*daemon)->address());
      if (!client.ok()) {
        absl::MutexLock lock(&mu);
        errors.push_back(client.status().ToString());
        return;
      }
      for (int r = 0; r < kRunsEach; ++r) {
        auto out = (*client)->RunNetwork(
            "pipe", {{"x", Input(kWidth, static_cast<float>(c + r))}},
            {}, absl::Seconds(60));
        absl::MutexLock lock(&mu);
        if (!out.ok()) {
          errors.push_back(out.status().ToString());
          return;
        }
        done.push_back(absl::Now());
      }
    });
  }
  for (std::thread& t : callers) t.join();
  ASSERT_TRUE(errors.empty()) << errors[0];
  ASSERT_EQ(done.size(), size_t{kCallers * kRunsEach});
  std::sort(done.begin(), done.end());
  constexpr int kSkip = 12;
  const double seconds = absl::ToDoubleSeconds(done.back() - done[kSkip - 1]);
  const double measured = (done.size() - kSkip) / seconds;
  const double estimated = 1 / bottleneck;
  std::printf("3-stage heterogeneous pipeline: measured %.2f runs/s, "
              "estimated %.2f runs/s (bottleneck %.2f ms), ratio %.3f\n",
              measured, estimated, bottleneck * 1e3, measured / estimated);
  EXPECT_NEAR(measured / estimated, 1.0, 0.2);
}

}  // namespace
}  // namespace glint::testing
