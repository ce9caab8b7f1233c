// Hostile input against a real glintd: every model of the hardening issue
// that crashed, exhausted or hung the daemon, run-time shape errors, huge
// names and abandoned runs. After each case the daemon still answers and
// still computes.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/hostile_models.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

Tensor Floats(Shape shape, float value = 1.0f) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()), value);
  return Tensor::FromVector<float>(DType::kFloat32, std::move(shape), v);
}

Tensor Int64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<int64_t>(DType::kInt64, Shape({n}), v);
}

class HardeningTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Slow simulated devices (1 MFLOP/s): a 256x256 layer takes ~0.13 s,
    // so runs are still in flight when their clients give up.
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(
        {"--devices=sim*2:compute_gflops=0.001", "--import_memory_limit=2GiB"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
    ASSERT_TRUE(client().AddNetwork("add", testing::AddModel()).ok());
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(daemon_, nullptr); }

  // The daemon still answers and still computes.
  void TearDown() override {
    if (daemon_ == nullptr) return;
    ASSERT_TRUE(daemon_->CheckHealth(absl::Seconds(5)).ok()) << daemon_->Log();
    absl::StatusOr<std::vector<NamedTensor>> out = client().RunNetwork(
        "add", {{"x", Floats({2, 3})}, {"y", Floats({2, 3})}}, {},
        absl::Seconds(10));
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << daemon_->Log();
    EXPECT_EQ((*out)[0].tensor.data<float>()[5], 2.0f);
  }

  static GlintClient& client() { return daemon_->client(); }
  static GlintdProcess* daemon_;
};

GlintdProcess* HardeningTest::daemon_ = nullptr;

TEST_F(HardeningTest, HostileModelsAreRefusedWithTheirCause) {
  for (const testing::HostileModel& m : testing::HostileModels()) {
    absl::StatusOr<NetworkInfo> info = client().AddNetwork(m.name, m.bytes);
    ASSERT_FALSE(info.ok()) << m.name;
    EXPECT_EQ(info.status().code(), m.code) << m.name << ": " << info.status();
    EXPECT_THAT(Message(info.status()), HasSubstr(m.message)) << m.name;
    ASSERT_TRUE(daemon_->CheckHealth(absl::Seconds(5)).ok()) << m.name;
  }
}

TEST_F(HardeningTest, ACrashInsideOnnxCostsOneAddNetwork) {
  absl::StatusOr<NetworkInfo> info =
      client().AddNetwork("segv", testing::OnnxSegfaultModel());
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(info.status()), HasSubstr("crashed ONNX's checker"));
}

#ifndef GLINT_SANITIZER
TEST_F(HardeningTest, AMemoryBombInsideOnnxIsResourceExhausted) {
  absl::StatusOr<NetworkInfo> info =
      client().AddNetwork("bomb", testing::OnnxMemoryBombModel());
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kResourceExhausted)
      << info.status();
}
#endif

TEST_F(HardeningTest, ShapesComputedFromDataAreCheckedAtRunTime) {
  using testing::OnnxModelBuilder;
  constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
  constexpr int32_t kInt64 = onnx::TensorProto::INT64;
  OnnxModelBuilder expand;
  expand.Input("x", kFloat, {1, 4}).Input("s", kInt64, {2});
  expand.Node("Expand", {"x", "s"}, {"y"});
  testing::SetAttribute(expand.Node("ReduceSum", {"y"}, {"z"}), "keepdims",
                        int64_t{0});
  expand.Output("z", kFloat);
  OnnxModelBuilder resize;
  resize.Input("x", kFloat, {1, 1, 2, 2}).Input("sz", kInt64, {4});
  resize.Node("Resize", {"x", "", "", "sz"}, {"y"});
  resize.Output("y", kFloat);
  OnnxModelBuilder tile;
  tile.Input("x", kFloat, {2, 2}).Input("r", kInt64, {2});
  tile.Node("Tile", {"x", "r"}, {"y"});
  tile.Output("y", kFloat);
  ASSERT_TRUE(client().AddNetwork("expand", expand.Serialize()).ok());
  ASSERT_TRUE(client().AddNetwork("resize", resize.Serialize()).ok());
  ASSERT_TRUE(client().AddNetwork("tile", tile.Serialize()).ok());

  struct Case {
    std::string network;
    std::vector<NamedTensor> inputs;
  };
  const std::vector<Case> cases = {
      {"expand",
       {{"x", Floats({1, 4})}, {"s", Int64s({(int64_t{1} << 62) + 1, 4})}}},
      {"resize", {{"x", Floats({1, 1, 2, 2})}, {"sz", Int64s({1, 1, -3, 4})}}},
      {"tile",
       {{"x", Floats({2, 2})},
        {"r", Int64s({int64_t{1} << 40, int64_t{1} << 40})}}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<NamedTensor>> out =
        client().RunNetwork(c.network, c.inputs, {}, absl::Seconds(30));
    ASSERT_FALSE(out.ok()) << c.network;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << c.network << ": " << out.status();
  }
  // The same networks still compute on sane inputs.
  absl::StatusOr<std::vector<NamedTensor>> out = client().RunNetwork(
      "expand", {{"x", Floats({1, 4}, 0.5f)}, {"s", Int64s({3, 4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].tensor.data<float>()[0], 6.0f);
}

TEST_F(HardeningTest, UserStringsInErrorsAreClipped) {
  const std::string name(65536, 'n');
  absl::StatusOr<std::vector<NamedTensor>> out =
      client().RunNetwork(name, {{"x", Floats({2, 3})}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound) << out.status();
  EXPECT_THAT(Message(out.status()), HasSubstr("...(65536 bytes)"));
  EXPECT_LT(out.status().message().size(), 1024u);
}

// Runs whose clients give up (deadlines far shorter than the work) and runs
// of partition-free networks, 100 of each at once: none keeps a run slot,
// the other networks answer, and removal does not block.
TEST_F(HardeningTest, AbandonedRunsHoldNothing) {
  ASSERT_TRUE(
      client().AddNetwork("slow", testing::MakeMlpModel(1, 256, 256)).ok());
  testing::OnnxModelBuilder pass;
  pass.Input("x", onnx::TensorProto::FLOAT, {2, 3})
      .Output("x", onnx::TensorProto::FLOAT, {2, 3});
  ASSERT_TRUE(client().AddNetwork("pass", pass.Serialize()).ok());

  const std::string address = daemon_->address();
  std::atomic<int> abandoned{0};
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 10; ++t) {
    threads.emplace_back([&] {
      GlintClient c(GlintClient::CreateChannel(address), ClientOptions());
      for (int i = 0; i < 10; ++i) {
        absl::StatusOr<std::vector<NamedTensor>> slow = c.RunNetwork(
            "slow", {{"x", Floats({1, 256})}}, {}, absl::Milliseconds(20));
        if (!slow.ok() &&
            slow.status().code() == absl::StatusCode::kDeadlineExceeded) {
          ++abandoned;
        }
        absl::StatusOr<std::vector<NamedTensor>> p = c.RunNetwork(
            "pass", {{"x", Floats({2, 3}, 3.0f)}}, {}, absl::Seconds(30));
        if (p.ok() && (*p)[0].tensor.data<float>()[5] == 3.0f) ++passed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GE(abandoned.load(), 90);
  EXPECT_EQ(passed.load(), 100);
  // Other networks answer at once, not after the abandoned work.
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<NamedTensor>> out =
      client().RunNetwork("add", {{"x", Floats({2, 3})}, {"y", Floats({2, 3})}},
                          {}, absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(client().RemoveNetwork("slow").ok());
  EXPECT_TRUE(client().RemoveNetwork("pass").ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

}  // namespace
}  // namespace glint
