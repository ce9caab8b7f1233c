// The plan cache through HostManager, with an in-memory journal: which
// policy replays what (counted by how often ONNX inference runs), that a
// replayed plan computes the same and lands on the same devices, and that
// MATCH refuses a plan made for something else.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "devices/cpu/isa.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "runtime/host_manager.h"
#include "runtime/plan_cache.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

// Keeps everything in memory; thread-safe. Record fails as told (a full
// disk, say).
class MemoryJournal : public NetworkJournal {
 public:
  absl::Status Record(absl::string_view name, const ModelBytes&,
                      const AddNetworkOptions&) override {
    absl::MutexLock lock(&mu_);
    if (!record_error_.ok()) return record_error_;
    recorded_.insert(std::string(name));
    return absl::OkStatus();
  }
  void FailRecords(absl::Status error) {
    absl::MutexLock lock(&mu_);
    record_error_ = std::move(error);
  }
  bool recorded(const std::string& name) {
    absl::MutexLock lock(&mu_);
    return recorded_.count(name) > 0;
  }
  absl::Status Erase(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    recorded_.erase(std::string(name));
    plans_.erase(std::string(name));
    return absl::OkStatus();
  }
  absl::StatusOr<CachedPlan> LoadPlan(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(std::string(name));
    if (it == plans_.end()) return absl::NotFoundError("no plan");
    return it->second;
  }
  absl::Status SavePlan(absl::string_view name,
                        const CachedPlan& plan) override {
    absl::MutexLock lock(&mu_);
    plans_[std::string(name)] = plan;
    ++saves_;
    return absl::OkStatus();
  }
  int saves() {
    absl::MutexLock lock(&mu_);
    return saves_;
  }
  CachedPlan plan(const std::string& name) {
    absl::MutexLock lock(&mu_);
    return plans_.at(name);
  }

 private:
  absl::Mutex mu_;
  std::set<std::string> recorded_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, CachedPlan> plans_ ABSL_GUARDED_BY(mu_);
  int saves_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status record_error_ ABSL_GUARDED_BY(mu_);
};

class PlanCacheTest : public ::testing::Test {
 protected:
  // A host over `devices` sims of 64 MiB sharing the journal, counting how
  // often ONNX inference runs.
  std::unique_ptr<HostManager> MakeHost(int devices = 2) {
    HostManagerOptions options;
    options.journal = &journal_;
    options.run_onnx_inference = [this](const std::string& request) {
      ++inferences_;
      return RunOnnxInference(request);
    };
    std::vector<DeviceConfig> configs(devices);
    for (DeviceConfig& c : configs) c.memory_bytes = 64 * kMiB;
    auto host = HostManager::CreateFromConfigs(options, configs);
    EXPECT_TRUE(host.ok()) << host.status();
    return *std::move(host);
  }

  std::vector<float> Run(HostManager& host, const std::string& name) {
    std::vector<float> x(16);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * i - 0.7f;
    absl::StatusOr<std::vector<NamedTensor>> out = host.RunNetwork(
        name, {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 16}), x)}});
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    const Tensor& y = (*out)[0].tensor;
    return std::vector<float>(y.data<float>(),
                              y.data<float>() + y.num_elements());
  }

  MemoryJournal journal_;
  std::atomic<int> inferences_{0};
  const std::string model_ = testing::MakeDeepMlpModel(1, 16, 6);
};

TEST_F(PlanCacheTest, AnAddKeepsItsPlanAndARestoreReplaysIt) {
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kLoadBalanced;
  options.partition.plan_devices = 2;
  std::vector<float> first;
  std::vector<int> devices;
  {
    std::unique_ptr<HostManager> host = MakeHost();
    absl::StatusOr<NetworkInfo> info = host->AddNetwork("n", model_, options);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(inferences_.load(), 1);
    for (const PartitionInfo& p : info->partitions)
      devices.push_back(p.device_id);
    first = Run(*host, "n");
  }
  const CachedPlan kept = journal_.plan("n");
  EXPECT_FALSE(kept.key.empty());
  EXPECT_FALSE(kept.inferred_types.empty());
  EXPECT_EQ(kept.strategy, "load_balanced");
  EXPECT_EQ(kept.assignment.size(), 11u);  // 6 MatMuls and 5 Relus.
  ASSERT_EQ(kept.placement.size(), 1u);

  // A new host restores it without running inference, the same plan on the
  // same devices, computing the same.
  std::unique_ptr<HostManager> host = MakeHost();
  absl::StatusOr<NetworkInfo> info = host->RestoreNetwork("n", model_, options);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(inferences_.load(), 1);
  EXPECT_EQ(info->strategy, "load_balanced");
  std::vector<int> restored;
  for (const PartitionInfo& p : info->partitions)
    restored.push_back(p.device_id);
  EXPECT_EQ(restored, devices);
  EXPECT_EQ(Run(*host, "n"), first);
  EXPECT_EQ(journal_.saves(), 1);  // A replayed plan is not written again.
}

// The kept inference reply carries the types inside subgraphs: a Loop
// model restores without inference and computes the same.
TEST_F(PlanCacheTest, AControlFlowModelReplaysItsSubgraphTypes) {
  const std::string loop = testing::MakeLoopModel();
  const std::vector<NamedTensor> inputs = {
      {"trip_count", Tensor::FromVector(DType::kInt64, Shape(),
                                        std::vector<int64_t>{3})},
      {"x", Tensor::FromVector(DType::kFloat32, Shape({2}),
                               std::vector<float>{1, 2})}};
  {
    std::unique_ptr<HostManager> host = MakeHost();
    ASSERT_TRUE(host->AddNetwork("loop", loop, {}).ok());
  }
  EXPECT_EQ(inferences_.load(), 1);
  std::unique_ptr<HostManager> host = MakeHost();
  absl::StatusOr<NetworkInfo> info = host->RestoreNetwork("loop", loop, {});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(inferences_.load(), 1);
  absl::StatusOr<std::vector<NamedTensor>> out =
      host->RunNetwork("loop", inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  const Tensor& ys = (*out)[1].tensor;
  EXPECT_EQ(ys.shape(), Shape({3, 2}));
  EXPECT_EQ(std::vector<float>(ys.data<float>(), ys.data<float>() + 6),
            (std::vector<float>{2, 4, 4, 8, 6, 12}));
}

TEST_F(PlanCacheTest, PoliciesDecideWhatIsReused) {
  AddNetworkOptions options;
  {
    std::unique_ptr<HostManager> host = MakeHost();
    ASSERT_TRUE(host->AddNetwork("n", model_, options).ok());
  }
  ASSERT_EQ(inferences_.load(), 1);
  auto restore = [&](PlanReuse reuse, const std::string& user_config) {
    std::unique_ptr<HostManager> host = MakeHost();
    AddNetworkOptions o = options;
    o.reuse = reuse;
    o.user_config = user_config;
    return host->RestoreNetwork("n", model_, o).status();
  };
  // Matching: MATCH, MOO and GRAPH skip inference; OVERRIDE does not.
  EXPECT_TRUE(restore(PlanReuse::kMatch, "").ok());
  EXPECT_TRUE(restore(PlanReuse::kMatchOrOverride, "").ok());
  EXPECT_TRUE(restore(PlanReuse::kGraph, "").ok());
  EXPECT_EQ(inferences_.load(), 1);
  EXPECT_TRUE(restore(PlanReuse::kOverride, "").ok());
  EXPECT_EQ(inferences_.load(), 2);

  // Another user_config: MATCH refuses, MOO plans anew and keeps that plan.
  const std::string old_key = journal_.plan("n").key;
  absl::Status refused = restore(PlanReuse::kMatch, "v2");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("reuse is MATCH"));
  EXPECT_EQ(inferences_.load(), 2);
  EXPECT_TRUE(restore(PlanReuse::kMatchOrOverride, "v2").ok());
  EXPECT_EQ(inferences_.load(), 3);
  EXPECT_NE(journal_.plan("n").key, old_key);
  EXPECT_TRUE(restore(PlanReuse::kMatch, "v2").ok());
  EXPECT_EQ(inferences_.load(), 3);

  // Other devices make another key as well.
  {
    std::unique_ptr<HostManager> host = MakeHost(3);
    AddNetworkOptions o = options;
    o.user_config = "v2";
    ASSERT_TRUE(host->RestoreNetwork("n", model_, o).ok());
    EXPECT_EQ(inferences_.load(), 4);
  }
}

// The precision is compiled into the network: a plan made at float32 does
// not match a bf16 add (MATCH refuses, MOO plans anew), and the bf16
// network computes in bfloat16 (close to float32, not equal) and says so.
TEST_F(PlanCacheTest, PrecisionIsPartOfThePlan) {
  std::vector<float> f32;
  {
    std::unique_ptr<HostManager> host = MakeHost();
    absl::StatusOr<NetworkInfo> info =
        host->AddNetwork("n", model_, AddNetworkOptions());
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->precision, Precision::kFloat32);
    f32 = Run(*host, "n");
  }
  const std::string f32_key = journal_.plan("n").key;
  AddNetworkOptions bf16;
  bf16.precision = Precision::kBFloat16;
  bf16.reuse = PlanReuse::kMatch;
  {
    std::unique_ptr<HostManager> host = MakeHost();
    EXPECT_EQ(host->RestoreNetwork("n", model_, bf16).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  bf16.reuse = PlanReuse::kMatchOrOverride;
  std::unique_ptr<HostManager> host = MakeHost();
  absl::StatusOr<NetworkInfo> info = host->RestoreNetwork("n", model_, bf16);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->precision, Precision::kBFloat16);
  EXPECT_NE(journal_.plan("n").key, f32_key);
  absl::StatusOr<NetworkInfo> shown = host->GetNetwork("n");
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(shown->precision, Precision::kBFloat16);
  const std::vector<float> got = Run(*host, "n");
  ASSERT_EQ(got.size(), f32.size());
  // Without bfloat16 kernels (an AVX2 CPU) bf16 computes float32's bits
  // (devices/cpu/isa.h); with them, the results differ.
  EXPECT_EQ(got != f32, CpuComputesBFloat16());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], f32[i], 0.05 * std::max(1.0f, std::fabs(f32[i])));
  }
}

TEST_F(PlanCacheTest, RemovingANetworkForgetsItsPlan) {
  std::unique_ptr<HostManager> host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("n", model_, {}).ok());
  ASSERT_TRUE(host->RemoveNetwork("n").ok());
  EXPECT_EQ(journal_.LoadPlan("n").status().code(),
            absl::StatusCode::kNotFound);
  // A different model under the old name plans afresh, even under MATCH.
  AddNetworkOptions match;
  match.reuse = PlanReuse::kMatch;
  ASSERT_TRUE(
      host->AddNetwork("n", testing::MakeMlpModel(1, 16, 4), match).ok());
  EXPECT_EQ(inferences_.load(), 2);
}

TEST_F(PlanCacheTest, ACachedReplyThatDoesNotFitTheModelIsRefused) {
  {
    std::unique_ptr<HostManager> host = MakeHost();
    ASSERT_TRUE(host->AddNetwork("n", model_, {}).ok());
  }
  CachedPlan tampered = journal_.plan("n");
  tampered.inferred_types = "not a GraphProto";
  ASSERT_TRUE(journal_.SavePlan("n", tampered).ok());
  std::unique_ptr<HostManager> host = MakeHost();
  absl::StatusOr<NetworkInfo> info = host->RestoreNetwork("n", model_, {});
  EXPECT_FALSE(info.ok());
  // Listed with the reason rather than lost; OVERRIDE repairs it.
  EXPECT_FALSE(host->GetNetwork("n")->unavailable_reason.empty());
}

// The journal as it was: a plan is kept only for a recorded network.
TEST_F(PlanCacheTest, AnAddThatCannotBeRecordedKeepsNoPlan) {
  std::unique_ptr<HostManager> host = MakeHost();
  journal_.FailRecords(absl::ResourceExhaustedError("disk full"));
  absl::StatusOr<NetworkInfo> info = host->AddNetwork("n", model_, {});
  EXPECT_TRUE(absl::IsResourceExhausted(info.status())) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("disk full"));
  EXPECT_TRUE(absl::IsNotFound(journal_.LoadPlan("n").status()));
  EXPECT_EQ(journal_.saves(), 0);
  EXPECT_TRUE(absl::IsNotFound(host->GetNetwork("n").status()));

  journal_.FailRecords(absl::OkStatus());
  ASSERT_TRUE(host->AddNetwork("n", model_, {}).ok());
  EXPECT_TRUE(journal_.recorded("n"));
  EXPECT_TRUE(journal_.LoadPlan("n").ok());
}

// A corrupt record (glintd's restore): listed with its reason, its runs
// UNAVAILABLE, until removed; then the name is free again.
TEST_F(PlanCacheTest, ANetworkThatCannotBeRestoredIsListedUntilRemoved) {
  ASSERT_TRUE(journal_.Record("n", model_, {}).ok());
  std::unique_ptr<HostManager> host = MakeHost();
  ASSERT_TRUE(host->RestoreUnavailable("n", "its record is corrupt").ok());

  absl::StatusOr<NetworkInfo> info = host->GetNetwork("n");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->unavailable_reason, "its record is corrupt");
  std::vector<NetworkInfo> listed = host->ListNetworks();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "n");
  std::vector<float> x(16, 0.5f);
  absl::StatusOr<std::vector<NamedTensor>> out = host->RunNetwork(
      "n", {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 16}), x)}});
  EXPECT_TRUE(absl::IsUnavailable(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("its record is corrupt"));
  EXPECT_TRUE(
      absl::IsAlreadyExists(host->AddNetwork("n", model_, {}).status()));
  EXPECT_TRUE(absl::IsAlreadyExists(host->RestoreUnavailable("n", "again")));
  EXPECT_TRUE(absl::IsInvalidArgument(host->RestoreUnavailable("", "why")));
  EXPECT_TRUE(
      absl::IsInvalidArgument(host->RestoreUnavailable("bad\xFF", "why")));

  ASSERT_TRUE(host->RemoveNetwork("n").ok());
  EXPECT_FALSE(journal_.recorded("n"));
  EXPECT_TRUE(host->ListNetworks().empty());
  ASSERT_TRUE(host->AddNetwork("n", model_, {}).ok());
  EXPECT_FALSE(Run(*host, "n").empty());
}

TEST(PlanReuseTest, NamesRoundTrip) {
  for (PlanReuse r : {PlanReuse::kMatch, PlanReuse::kOverride,
                      PlanReuse::kMatchOrOverride, PlanReuse::kGraph}) {
    absl::StatusOr<PlanReuse> parsed = ParsePlanReuse(PlanReuseName(r));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_EQ(*ParsePlanReuse("MOO"), PlanReuse::kMatchOrOverride);
  EXPECT_EQ(ParsePlanReuse("sometimes").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A journal that keeps models, as glintd's store does: HostManager then
// holds no copy of its own and reads the model back only to re-provision.
class ModelKeepingJournal : public NetworkJournal {
 public:
  absl::Status Record(absl::string_view name, const ModelBytes& model,
                      const AddNetworkOptions&) override {
    absl::MutexLock lock(&mu_);
    models_[std::string(name)] = std::string(model.view());
    return absl::OkStatus();
  }
  absl::Status Erase(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    models_.erase(std::string(name));
    return absl::OkStatus();
  }
  bool KeepsModels() const override { return true; }
  absl::StatusOr<std::string> LoadModel(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    ++loads_;
    if (!loaded_.HasBeenNotified()) loaded_.Notify();
    auto it = models_.find(std::string(name));
    if (it == models_.end()) return absl::NotFoundError("not kept");
    return it->second;
  }
  int loads() {
    absl::MutexLock lock(&mu_);
    return loads_;
  }
  absl::Notification& loaded() { return loaded_; }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string> models_ ABSL_GUARDED_BY(mu_);
  int loads_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Notification loaded_;
};

TEST(ModelKeepingJournalTest, ADeadDevicesNetworkIsRebuiltFromTheJournal) {
  ModelKeepingJournal journal;
  HostManagerOptions options;
  options.journal = &journal;
  DeviceConfig sim, faulty;
  sim.memory_bytes = 64 * kMiB;
  faulty.memory_bytes = 128 * kMiB;  // The most free memory: placed there.
  faulty.type = "faulty";
  faulty.params["kill_at_launch"] = "1";
  auto host = HostManager::CreateFromConfigs(options, {sim, faulty});
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetwork("n", testing::MakeMlpModel(1, 8, 4), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 1u);
  ASSERT_EQ(info->partitions[0].device_id, 1);
  EXPECT_EQ(journal.loads(), 0);

  std::vector<float> x(8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * i - 1.0f;
  const std::vector<float> want = testing::MlpReference(x, 1, 8, 4);
  auto run = [&] {
    return (*host)->RunNetwork(
        "n", {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 8}), x)}});
  };
  // The faulty device's first launch kills it, and the run with it.
  EXPECT_TRUE(absl::IsUnavailable(run().status()));
  ASSERT_TRUE(journal.loaded().WaitForNotificationWithTimeout(
      absl::Seconds(30)));
  absl::StatusOr<std::vector<NamedTensor>> out = run();
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0].tensor;
  ASSERT_EQ(y.num_elements(), 4);
  for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(y.data<float>()[j], want[j]);
  EXPECT_EQ(journal.loads(), 1);
}

// The key and the reuse decision on their own, without a HostManager.

std::vector<DeviceInfo> TwoDevices() {
  std::vector<DeviceInfo> devices(2);
  for (int i = 0; i < 2; ++i) {
    devices[i].id = i;
    devices[i].type = "sim";
    devices[i].memory_bytes = 1 << 30;
  }
  return devices;
}

TEST(PlanKeyTest, SaysEverythingAPlanDependsOn) {
  const std::string model = testing::MakeMlpModel(1, 4, 4);
  const AddNetworkOptions options;
  const std::string key = PlanKey(model, options, TwoDevices());
  EXPECT_EQ(key.size(), 64u);  // SHA-256, hex.
  EXPECT_EQ(PlanKey(model, options, TwoDevices()), key);
  EXPECT_NE(PlanKey(testing::MakeMlpModel(1, 4, 5), options, TwoDevices()),
            key);
  AddNetworkOptions replicas = options;
  replicas.partition.replicas = 2;
  EXPECT_NE(PlanKey(model, replicas, TwoDevices()), key);
  AddNetworkOptions config = options;
  config.user_config = "x";
  EXPECT_NE(PlanKey(model, config, TwoDevices()), key);
  AddNetworkOptions bf16 = options;
  bf16.precision = Precision::kBFloat16;
  EXPECT_NE(PlanKey(model, bf16, TwoDevices()), key);
  std::vector<DeviceInfo> one = TwoDevices();
  one.pop_back();
  EXPECT_NE(PlanKey(model, options, one), key);
  std::vector<DeviceInfo> smaller = TwoDevices();
  smaller[1].memory_bytes /= 2;
  EXPECT_NE(PlanKey(model, options, smaller), key);
}

TEST(ChoosePlanTest, NothingKeptPlansAnew) {
  for (PlanReuse reuse : {PlanReuse::kMatch, PlanReuse::kOverride,
                          PlanReuse::kMatchOrOverride, PlanReuse::kGraph}) {
    absl::StatusOr<PlanChoice> choice =
        ChoosePlan("n", "k", reuse, absl::NotFoundError("none"));
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_FALSE(choice->cached.has_value());
    EXPECT_FALSE(choice->reuse_types || choice->reuse_plan);
  }
  // An unreadable plan is planned anew too (and logged), whatever reuse.
  absl::StatusOr<PlanChoice> corrupt = ChoosePlan(
      "n", "k", PlanReuse::kMatch, absl::DataLossError("bad checksum"));
  ASSERT_TRUE(corrupt.ok()) << corrupt.status();
  EXPECT_FALSE(corrupt->reuse_types || corrupt->reuse_plan);
}

TEST(ChoosePlanTest, AMatchingPlanIsReusedAsThePolicySays) {
  CachedPlan kept;
  kept.key = "k";
  struct Case {
    PlanReuse reuse;
    bool types, plan;
  };
  for (const Case& c : {Case{PlanReuse::kMatch, true, true},
                        Case{PlanReuse::kMatchOrOverride, true, true},
                        Case{PlanReuse::kGraph, true, false},
                        Case{PlanReuse::kOverride, false, false}}) {
    absl::StatusOr<PlanChoice> choice = ChoosePlan("n", "k", c.reuse, kept);
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->reuse_types, c.types) << PlanReuseName(c.reuse);
    EXPECT_EQ(choice->reuse_plan, c.plan) << PlanReuseName(c.reuse);
  }
}

TEST(ChoosePlanTest, AStalePlanFailsMatchAndIsReplacedOtherwise) {
  CachedPlan kept;
  kept.key = "old";
  absl::StatusOr<PlanChoice> match =
      ChoosePlan("n", "new", PlanReuse::kMatch, kept);
  EXPECT_EQ(match.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(match.status().message().find("reuse is MATCH"),
            absl::string_view::npos);
  for (PlanReuse reuse : {PlanReuse::kMatchOrOverride, PlanReuse::kGraph,
                          PlanReuse::kOverride}) {
    absl::StatusOr<PlanChoice> choice = ChoosePlan("n", "new", reuse, kept);
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_FALSE(choice->reuse_types || choice->reuse_plan);
  }
}

}  // namespace
}  // namespace glint
